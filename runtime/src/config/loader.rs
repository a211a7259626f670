//! [`ConfigLoader`]: finds the layers, reads each file (small regular files only), checks every layer on its
//! own, and merges them, tightening an untrusted workspace's layer through [`super::trust`].

use std::io;
use std::path::{Path, PathBuf};

use toml::{Table, Value};

use super::{trust, Config, ConfigError, LoadedConfig, NOT_CONFIG_VARS, PERMISSIONS_VAR, SECTIONS, TRUST_HINT};

/// Finds, reads and merges the configuration layers: set the sources,
/// then [`ConfigLoader::load`].
#[derive(Debug, Clone)]
// The fields are visible to the config module so its tests can build a loader over a scratch home.
pub struct ConfigLoader {
    pub(super) user_file: Option<PathBuf>,
    pub(super) config_file: Option<PathBuf>,
    pub(super) workspace: Option<PathBuf>,
    /// Only the `TOOLSHED_` variables that may be config keys, so the loader
    /// holds no unrelated secrets.
    pub(super) env: Vec<(String, String)>,
    pub(super) home: Option<PathBuf>,
}

impl Default for ConfigLoader {
    fn default() -> Self {
        Self::new()
    }
}

impl ConfigLoader {
    /// A loader with the user file `$HOME/.toolshed/config.toml` (none when
    /// `$HOME` is unset or not absolute), no `--config` file, no workspace, and the process
    /// environment.
    pub fn new() -> Self {
        // A relative `HOME` would resolve in the current directory: a workspace's own `.toolshed/config.toml`
        // read as the user's (which decides what the workspace is trusted with).
        let home = std::env::var_os("HOME").map(PathBuf::from).filter(|home| home.is_absolute());
        let user_file = home.as_ref().map(|home| home.join(".toolshed").join("config.toml"));
        // `vars` panics on a variable that is not UTF-8, which the user's environment may hold; none of those
        // is one of ours (our names and values are UTF-8), so they are passed over.
        let vars = std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)));
        Self { user_file, config_file: None, workspace: None, env: Vec::new(), home }.env(vars)
    }

    /// The user's file; `None` reads no user file. A missing file is not an
    /// error.
    pub fn user_file(mut self, path: Option<PathBuf>) -> Self {
        self.user_file = path;
        self
    }

    /// The `--config` file; unlike the user and workspace files, it must
    /// exist.
    pub fn config_file(mut self, path: Option<PathBuf>) -> Self {
        self.config_file = path;
        self
    }

    /// The workspace directory, whose `.toolshed/config.toml` is read if it
    /// exists; `None` reads no workspace file.
    pub fn workspace(mut self, cwd: Option<PathBuf>) -> Self {
        self.workspace = cwd;
        self
    }

    /// The environment to take `TOOLSHED_<SECTION>_<KEY>` overrides from,
    /// replacing the process environment.
    pub fn env(mut self, vars: impl IntoIterator<Item = (String, String)>) -> Self {
        self.env = vars
            .into_iter()
            .filter(|(var, _)| {
                (var.starts_with("TOOLSHED_") && !NOT_CONFIG_VARS.contains(&var.as_str())) || var == PERMISSIONS_VAR
            })
            .collect();
        // Sorted, so that which bad variable is reported first does not
        // depend on the order the environment happens to list them in.
        self.env.sort();
        self
    }

    /// Reads, checks and merges every layer.
    pub fn load(self) -> Result<LoadedConfig, ConfigError> {
        let home = self.home.as_deref();

        let user = match &self.user_file {
            Some(path) => read_optional(path)?.map(|text| file_layer(&text, path, home)).transpose()?,
            None => None,
        };

        let config_layer = match &self.config_file {
            Some(path) => {
                let text = read_config(path).map_err(|source| ConfigError::Read { path: path.clone(), source })?;
                Some(file_layer(&text, path, home)?)
            }
            None => None,
        };

        let env = env_layer(&self.env, home)?;

        // What the user alone decided: the reference for trust and for what
        // counts as tightening.
        let mut user_side = Table::new();
        for layer in [&user, &config_layer].into_iter().flatten() {
            merge(&mut user_side, layer.clone());
        }
        merge(&mut user_side, env.clone());
        let user_side = deserialize_merged(user_side)?;

        let mut warnings = Vec::new();
        let mut workspace_trusted = false;
        let mut workspace_layer = None;
        if let Some(cwd) = &self.workspace {
            let cwd = canonical(cwd);
            workspace_trusted = user_side.plugins.trusted_workspaces.iter().any(|trusted| canonical(trusted) == cwd);
            let path = cwd.join(".toolshed").join("config.toml");
            // When the workspace is the home directory, its file is the
            // user's file, already read with full authority.
            let already_read = [&self.user_file, &self.config_file]
                .into_iter()
                .flatten()
                .any(|read| canonical(read) == canonical(&path));
            if !already_read && let Some(text) = read_optional(&path)? {
                workspace_layer = Some((parse_layer(&text, &path)?, path, cwd));
            }
        }

        let config = match workspace_layer {
            // An untrusted workspace: its typed config tightens what the user decided, key by key.
            Some(((workspace, layer), path, cwd)) if !workspace_trusted => {
                let mut config = user_side;
                let ignored = trust::tighten(&mut config, workspace, &layer, &path)?;
                warnings.extend(ignored.iter().map(|key| {
                    format!(
                        "ignored `{key}` in {}: workspace {} is not trusted; {TRUST_HINT}",
                        path.display(),
                        cwd.display()
                    )
                }));
                config
            }
            workspace => {
                let mut merged = Table::new();
                let workspace = workspace.map(|((_, mut layer), path, _)| {
                    // Trust is granted only from the user side.
                    let granted = layer
                        .get_mut("plugins")
                        .and_then(Value::as_table_mut)
                        .and_then(|plugins| plugins.remove("trusted_workspaces"));
                    if granted.is_some() {
                        warnings.push(format!(
                            "ignored `plugins.trusted_workspaces` in {}: a workspace cannot grant trust; set it in \
                             your user config",
                            path.display()
                        ));
                    }
                    resolve_paths(&mut layer, path.parent(), home);
                    layer
                });
                for layer in [user, config_layer, workspace, Some(env)].into_iter().flatten() {
                    merge(&mut merged, layer);
                }
                deserialize_merged(merged)?
            }
        };
        Ok(LoadedConfig { config, workspace_trusted, warnings })
    }
}

/// Reads a file that may be absent; any other failure is an error.
fn read_optional(path: &Path) -> Result<Option<String>, ConfigError> {
    match read_config(path) {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ConfigError::Read { path: path.to_owned(), source }),
    }
}

/// The largest config file read; a real one is a few kilobytes.
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// Reads a config file: a regular file of at most [`MAX_CONFIG_BYTES`]. A cloned repository can make its
/// `.toolshed/config.toml` a link to `/dev/zero`, `/dev/stdin` or a FIFO; none of them can take the memory
/// or hang the start.
fn read_config(path: &Path) -> io::Result<String> {
    crate::small_file::read_text(path, MAX_CONFIG_BYTES)
}

/// Parses one file against the schema, returning it both typed and as a
/// table.
pub(super) fn parse_layer(text: &str, path: &Path) -> Result<(Config, Table), ConfigError> {
    let position = |err: &toml::de::Error| {
        err.span().map(|span| {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            format!("line {line}, column {column}")
        })
    };
    let parse_error = |err: toml::de::Error| {
        let message = match position(&err) {
            Some(at) => format!("{at}: {}", one_line(err.message())),
            None => one_line(&err.to_string()),
        };
        ConfigError::Parse { path: path.to_owned(), message }
    };
    let document = toml::Deserializer::parse(text).map_err(parse_error)?;
    let config: Config = serde_path_to_error::deserialize(document).map_err(|err| {
        let key = err.path().to_string();
        let err = err.into_inner();
        // serde's "expected a map" is what a table is called in TOML.
        let what = one_line(err.message()).replace("expected a map", "expected a table");
        let message = match (key.as_str(), position(&err)) {
            (".", Some(at)) => format!("{at}: {what}"),
            (".", None) => what,
            (key, Some(at)) => format!("{at}: `{key}`: {what}"),
            (key, None) => format!("`{key}`: {what}"),
        };
        ConfigError::Parse { path: path.to_owned(), message }
    })?;
    config.validate().map_err(|message| ConfigError::Invalid { origin: path.display().to_string(), message })?;
    let table: Table = toml::from_str(text).map_err(parse_error)?;
    Ok((config, table))
}

/// Parses one file into a checked table with its paths resolved.
fn file_layer(text: &str, path: &Path, home: Option<&Path>) -> Result<Table, ConfigError> {
    let (_, mut table) = parse_layer(text, path)?;
    resolve_paths(&mut table, path.parent(), home);
    Ok(table)
}

/// Builds the environment layer, checking each variable on its own so an
/// error names it.
fn env_layer(vars: &[(String, String)], home: Option<&Path>) -> Result<Table, ConfigError> {
    let mut layer = Table::new();
    for (var, raw) in vars {
        // Cline's variable is the user's `[commands] permissions`, above every file (blank is unset, as in
        // Cline), so an untrusted workspace's tightening applies to it too.
        if var == PERMISSIONS_VAR {
            if !raw.trim().is_empty() {
                let mut commands = Table::new();
                commands.insert("permissions".to_owned(), Value::String(raw.clone()));
                merge(&mut layer, Table::from_iter([("commands".to_owned(), Value::Table(commands))]));
            }
            continue;
        }
        let Some(rest) = var.strip_prefix("TOOLSHED_") else {
            continue;
        };
        let (section, key) = rest.split_once('_').unwrap_or((rest, ""));
        let Some(section) = SECTIONS.iter().find(|s| s.to_ascii_uppercase() == section) else {
            continue;
        };
        let env_error = |message: String| ConfigError::Env { var: var.clone(), message };
        if key.is_empty() {
            return Err(env_error(format!("names no key; use TOOLSHED_{}_<KEY>", section.to_ascii_uppercase())));
        }
        let key = key.to_ascii_lowercase();
        let single = |value: Value| {
            let mut section_table = Table::new();
            section_table.insert(key.clone(), value);
            let mut table = Table::new();
            table.insert((*section).to_owned(), Value::Table(section_table));
            table
        };
        let parsed = format!("v = {raw}").parse::<Table>().ok().and_then(|mut table| table.remove("v"));
        let string = Value::String(raw.clone());
        let mut table = match parsed {
            // A value that parses as TOML but has the wrong type may still
            // be meant as text (`TOOLSHED_WEB_PROVIDER=123`); the first
            // error is the one reported.
            Some(value) => match check(single(value.clone())) {
                Ok(()) => single(value),
                Err(message) => match check(single(string.clone())) {
                    Ok(()) => single(string),
                    Err(_) => return Err(env_error(message)),
                },
            },
            None => {
                check(single(string.clone())).map_err(env_error)?;
                single(string)
            }
        };
        resolve_paths(&mut table, None, home);
        merge(&mut layer, table);
    }
    Ok(layer)
}

/// Checks a layer against the schema and [`Config::validate`].
fn check(table: Table) -> Result<(), String> {
    let config: Config = table.try_into().map_err(|err| one_line(&err.to_string()))?;
    config.validate()
}

/// Deserializes merged layers. Every layer was checked on its own, so this
/// fails only if merging itself produced something invalid.
fn deserialize_merged(table: Table) -> Result<Config, ConfigError> {
    let invalid = |message: String| ConfigError::Invalid { origin: "the merged configuration".to_owned(), message };
    let config: Config = table.try_into().map_err(|err| invalid(one_line(&err.to_string())))?;
    config.validate().map_err(invalid)?;
    Ok(config)
}

/// Joins a multi-line message into one line.
fn one_line(message: &str) -> String {
    message.lines().map(str::trim).filter(|line| !line.is_empty()).collect::<Vec<_>>().join("; ")
}

/// Merges `later` into `base`: tables merge key by key, anything else in
/// `later` replaces what `base` had.
fn merge(base: &mut Table, later: Table) {
    for (key, value) in later {
        match (base.get_mut(&key), value) {
            (Some(Value::Table(base_table)), Value::Table(later_table)) => {
                merge(base_table, later_table);
            }
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

/// Resolves the path-valued keys of a checked layer: `~/` against `home`,
/// other relative paths against `base` (the directory of the file).
fn resolve_paths(table: &mut Table, base: Option<&Path>, home: Option<&Path>) {
    let resolve = |value: &mut Value| {
        if let Value::String(text) = value {
            let path = Path::new(text.as_str());
            let resolved = match (path.strip_prefix("~"), home) {
                (Ok(rest), Some(home)) => home.join(rest),
                _ => match base {
                    Some(base) if path.is_relative() => base.join(path),
                    _ => return,
                },
            };
            *value = Value::String(resolved.to_string_lossy().into_owned());
        }
    };
    if let Some(Value::Table(mcp)) = table.get_mut("mcp")
        && let Some(settings) = mcp.get_mut("settings")
    {
        resolve(settings);
    }
    if let Some(Value::Table(web)) = table.get_mut("web")
        && let Some(ca_file) = web.get_mut("ca_file")
    {
        resolve(ca_file);
    }
    if let Some(Value::Table(subagents)) = table.get_mut("subagents")
        && let Some(dir) = subagents.get_mut("agents_dir")
    {
        resolve(dir);
    }
    if let Some(Value::Table(skills)) = table.get_mut("skills")
        && let Some(Value::Array(paths)) = skills.get_mut("dirs")
    {
        paths.iter_mut().for_each(resolve);
    }
    if let Some(Value::Table(plugins)) = table.get_mut("plugins") {
        for key in ["dirs", "trusted_workspaces"] {
            if let Some(Value::Array(paths)) = plugins.get_mut(key) {
                paths.iter_mut().for_each(resolve);
            }
        }
    }
}

/// The canonical form of a path, or the path itself when it cannot be
/// canonicalized (it does not exist).
fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())
}
