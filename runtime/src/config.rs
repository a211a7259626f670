//! The configuration: one TOML schema read from the user's file, --config, and the workspace, with environment overrides.
//!
//! [`ConfigLoader`] reads up to four layers, lowest precedence first:
//!
//! 1. the user's file, `$HOME/.toolshed/config.toml` (or the path given to
//!    [`ConfigLoader::user_file`]);
//! 2. the file given with `--config`;
//! 3. the workspace's `{cwd}/.toolshed/config.toml`;
//! 4. environment variables `TOOLSHED_<SECTION>_<KEY>`, one key each.
//!
//! The layers are merged as TOML tables (tables merge key by key, a later
//! scalar or array replaces the earlier one) and the result is deserialized
//! once into [`Config`]. Every layer is first checked on its own, so an
//! unknown key or a value of the wrong type is reported against the file or
//! variable that holds it.
//!
//! A cloned repository must not be able to loosen the user's policy, so the
//! workspace file of a workspace the user has not trusted (in
//! `[plugins] trusted_workspaces` of the user-side layers) may only tighten:
//! keys that would loosen are dropped and reported in
//! [`LoadedConfig::warnings`].
//!
//! Relative paths in `[mcp] settings`, `[plugins] dirs` and
//! `[plugins] trusted_workspaces` are resolved against the directory of the
//! file that sets them, and a leading `~/` against `$HOME`.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

mod loader;
mod sections;
mod shape;
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod shape_tests;
#[cfg(test)]
// Tests fail loudly on purpose; the workspace denies these lints for library code.
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;
mod trust;
mod web;

pub use loader::ConfigLoader;
pub(crate) use sections::DEFAULT_LEASE_POLL_MS;
pub use sections::{
    ApprovalConfig, BrowserConfig, BulkPriority, CommandsConfig, HookCommand, HooksConfig, IsolationConfig,
    LimitsConfig, McpConfig, PluginIsolation, PluginsConfig, ProcessLimits, Profile, Rule, SandboxMode, ServeConfig,
    SkillsConfig, SubagentsConfig, TasksConfig, TimeoutsConfig, AGENT_LOOP_TOOLS, MAX_WORKER_SPIN_US,
};
#[cfg(feature = "web")]
pub(crate) use web::HostRule;
pub use web::WebConfig;

/// The section names; `TOOLSHED_<SECTION>_<KEY>` uses them upper-cased.
const SECTIONS: [&str; 14] = [
    "web",
    "mcp",
    "commands",
    "approval",
    "plugins",
    "timeouts",
    "hooks",
    "tasks",
    "skills",
    "subagents",
    "serve",
    "limits",
    "isolation",
    "browser",
];

/// Variables that share the `TOOLSHED_<SECTION>` prefix but are not config
/// keys: the web and `serve --http` bearer tokens (secrets, read where they
/// are used) and the plugin directory.
const NOT_CONFIG_VARS: [&str; 3] = ["TOOLSHED_WEB_TOKEN", "TOOLSHED_SERVE_TOKEN", "TOOLSHED_PLUGINS"];

/// Cline's command-permission variable, read as the user's `[commands] permissions`.
const PERMISSIONS_VAR: &str = "CLINE_COMMAND_PERMISSIONS";

/// The hint every "ignored because untrusted" warning ends with.
const TRUST_HINT: &str = "add it to [plugins] trusted_workspaces in your user config";

/// The whole configuration, after all layers are merged.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// `[web]`: the web tools and the Cline API they talk to.
    #[serde(deserialize_with = "shape::table")]
    pub web: WebConfig,
    /// `[mcp]`: where the MCP server settings live.
    #[serde(deserialize_with = "shape::table")]
    pub mcp: McpConfig,
    /// `[commands]`: command permissions and timeouts.
    #[serde(deserialize_with = "shape::table")]
    pub commands: CommandsConfig,
    /// `[approval]`: what runs without asking.
    #[serde(deserialize_with = "shape::table")]
    pub approval: ApprovalConfig,
    /// `[plugins]`: plugin directories, overrides and trust.
    #[serde(deserialize_with = "shape::table")]
    pub plugins: PluginsConfig,
    /// `[timeouts]`: every duration the runtime uses.
    #[serde(deserialize_with = "shape::table")]
    pub timeouts: TimeoutsConfig,
    /// `[hooks]`: commands run before and after tool calls (Claude Code's hook protocol). A workspace config
    /// sets none unless the workspace is trusted: a hook is a command the user did not write.
    #[serde(deserialize_with = "shape::table")]
    pub hooks: HooksConfig,
    /// `[tasks]`: the conversational tools' settings (the focus chain, double-check completion).
    #[serde(deserialize_with = "shape::table")]
    pub tasks: TasksConfig,
    /// `[skills]`: where use_skill finds skills.
    #[serde(deserialize_with = "shape::table")]
    pub skills: SkillsConfig,
    /// `[subagents]`: use_subagents' child tasks, the agent configs, and the OpenAI-compatible driver.
    #[serde(deserialize_with = "shape::table")]
    pub subagents: SubagentsConfig,
    /// `[serve]`: `toolshed serve --http`'s limits against floods of connections and large bodies.
    #[serde(deserialize_with = "shape::table")]
    pub serve: ServeConfig,
    /// `[limits]`: caps the runtime puts on every tool's result.
    #[serde(deserialize_with = "shape::table")]
    pub limits: LimitsConfig,
    /// `[isolation]`: the child processes that run parsers of hostile content.
    #[serde(deserialize_with = "shape::table")]
    pub isolation: IsolationConfig,
    /// `[browser]`: browser_action's headless Chromium.
    #[serde(deserialize_with = "shape::table")]
    pub browser: BrowserConfig,
}

impl Config {
    /// Parses and checks one TOML document, with no other layers and no
    /// environment: a convenience for tests and embedding hosts.
    pub fn from_toml_str(text: &str) -> Result<Config, ConfigError> {
        loader::parse_layer(text, Path::new("<string>")).map(|(config, _)| config)
    }

    /// Checks what the types cannot: the values of string-typed choices.
    fn validate(&self) -> Result<(), String> {
        if !matches!(self.web.backend.as_str(), "cline" | "direct") {
            return Err(format!("[web] backend is {:?}; use \"cline\" or \"direct\"", self.web.backend));
        }
        let url = &self.web.api_base_url;
        if !(url.starts_with("https://") || url.starts_with("http://")) {
            return Err(format!("[web] api_base_url is {url:?}; use an http:// or https:// URL"));
        }
        for (key, entries) in [("allowed_hosts", &self.web.allowed_hosts), ("denied_hosts", &self.web.denied_hosts)] {
            if let Some(problem) = entries.iter().find_map(|entry| web::host_entry_problem(entry)) {
                return Err(format!("[web] {key}: {problem}"));
            }
        }
        if let Some(proxy) = &self.web.proxy
            && !(proxy.starts_with("https://") || proxy.starts_with("http://"))
        {
            return Err(format!("[web] proxy is {proxy:?}; use an http:// or https:// URL"));
        }
        let spin = self.plugins.worker_spin_us;
        if spin > sections::MAX_WORKER_SPIN_US {
            return Err(format!(
                "[plugins] worker_spin_us is {spin}; use 0 to {} microseconds",
                sections::MAX_WORKER_SPIN_US
            ));
        }
        let browser = &self.browser;
        for (key, value) in [("viewport_width", browser.viewport_width), ("viewport_height", browser.viewport_height)] {
            if !(16..=4096).contains(&value) {
                return Err(format!("[browser] {key} is {value}; use 16 to 4096 pixels"));
            }
        }
        if !matches!(browser.screenshot_format.as_str(), "webp" | "png") {
            return Err(format!(
                "[browser] screenshot_format is {:?}; use \"webp\" or \"png\"",
                browser.screenshot_format
            ));
        }
        if let Some(url) = &browser.remote_url
            && !["http://", "https://", "ws://", "wss://"].iter().any(|scheme| url.starts_with(scheme))
        {
            return Err(format!(
                "[browser] remote_url is {url:?}; use Chrome's DevTools endpoint, an http:// or ws:// URL"
            ));
        }
        Ok(())
    }
}

/// An error reading the configuration. Each names the file or variable at
/// fault.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A config file exists (or was named with `--config`) but cannot be read.
    #[error("cannot read config file {}: {source}; check the path and its permissions", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why it cannot be read.
        #[source]
        source: io::Error,
    },
    /// A config file is not valid TOML, or does not fit the schema (an
    /// unknown key, a value of the wrong type).
    #[error("invalid config file {}: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong and where, on one line.
        message: String,
    },
    /// A `TOOLSHED_<SECTION>_<KEY>` variable names no key of its section or
    /// holds a value of the wrong type.
    #[error("invalid environment variable {var}: {message}; fix or unset it")]
    Env {
        /// The variable.
        var: String,
        /// What is wrong, on one line.
        message: String,
    },
    /// A value fits its type but not its meaning (such as an unknown
    /// `[web] backend`).
    #[error("invalid config in {origin}: {message}")]
    Invalid {
        /// The file or variable that set the value.
        origin: String,
        /// What is wrong and what to use instead.
        message: String,
    },
}

/// The merged configuration and what the loader had to say about it.
#[derive(Debug, Clone)]
pub struct LoadedConfig {
    /// The configuration.
    pub config: Config,
    /// Whether the workspace is one the user trusts, so its own config and
    /// plugins apply in full.
    pub workspace_trusted: bool,
    /// Settings that were ignored, one line each, naming the key and file.
    pub warnings: Vec<String>,
}
