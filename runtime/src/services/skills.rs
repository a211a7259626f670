//! Skills for use_skill: folders holding a `SKILL.md` whose front matter names the skill and describes it, in
//! the user's skill directories and, for a trusted workspace only, the workspace's (a cloned repository must
//! not put instructions in front of the model that the user never chose).
//!
//! As Cline's discovery: a skill's `name` must equal its folder's name and both `name` and `description` must
//! be present; on a name found twice the user's skill wins over the workspace's. The front matter is read as
//! flat `key: value` YAML (plain, quoted, or `|` / `>` block values), which is all a skill header holds.

use std::path::{Path, PathBuf};
use toolshed_plugin_api::services::SkillInfo;

/// The workspace's skill directories, relative to its primary root: ours, then Cline's.
const WORKSPACE_DIRS: [&str; 5] =
    [".toolshed/skills", ".clinerules/skills", ".cline/skills", ".claude/skills", ".agents/skills"];

/// Where the runtime looks for skills.
#[derive(Debug, Clone, Default)]
pub(crate) struct SkillDirs {
    /// Whether skills are offered at all.
    pub enabled: bool,
    /// The user's directories.
    pub user: Vec<PathBuf>,
    /// The workspaces the user trusts, canonical.
    pub trusted: Vec<PathBuf>,
}

impl SkillDirs {
    /// From the `[skills]` and `[plugins] trusted_workspaces` configuration.
    pub fn new(config: &crate::config::Config) -> Self {
        let user = match &config.skills.dirs {
            Some(dirs) => dirs.clone(),
            None => match std::env::var_os("HOME").filter(|h| Path::new(h).is_absolute()) {
                Some(home) => {
                    let home = PathBuf::from(home);
                    vec![home.join(".cline").join("skills"), home.join(".agents").join("skills")]
                }
                None => Vec::new(),
            },
        };
        let trusted = config.plugins.trusted_workspaces.iter().map(|p| canonical(p)).collect();
        Self { enabled: config.skills.enabled, user, trusted }
    }

    /// The skills available to a task working in `root`: the user's first, then (trusted workspaces only)
    /// the workspace's, each name once.
    pub fn list(&self, root: &Path) -> Vec<SkillInfo> {
        self.scan(root).0
    }

    /// [`Self::list`], and the skill folders refused (by folder name, with why).
    fn scan(&self, root: &Path) -> (Vec<SkillInfo>, Vec<(String, String)>) {
        let (mut skills, mut refused): (Vec<SkillInfo>, Vec<(String, String)>) = (Vec::new(), Vec::new());
        if !self.enabled {
            return (skills, refused);
        }
        let mut add = |dir: &Path, source: &str, within: Option<&Path>| {
            for found in scan(dir, source, within) {
                match found {
                    Ok(skill) if !skills.iter().any(|s| s.name == skill.name) => skills.push(skill),
                    Ok(_) => {}
                    Err(why) => refused.push(why),
                }
            }
        };
        for dir in &self.user {
            add(dir, "global", None);
        }
        let root = canonical(root);
        if self.trusted.contains(&root) {
            for dir in WORKSPACE_DIRS {
                add(&root.join(dir), "project", Some(&root));
            }
        }
        (skills, refused)
    }

    /// One available skill and its instructions (the body of its `SKILL.md`, trimmed). A skill whose folder
    /// was refused (a `SKILL.md` that is a FIFO, a link out of its folder, too large…) is an error saying why.
    pub fn load(&self, root: &Path, name: &str) -> std::io::Result<Option<(SkillInfo, String)>> {
        let (skills, refused) = self.scan(root);
        let Some(skill) = skills.into_iter().find(|s| s.name == name) else {
            return match refused.into_iter().find(|(folder, _)| folder == name) {
                Some((_, why)) => Err(std::io::Error::other(why)),
                None => Ok(None),
            };
        };
        let text = read_skill_file(Path::new(&skill.path))?;
        let body = front_matter(&text).map_or(text.as_str(), |(_, body)| body).trim().to_owned();
        Ok(Some((skill, body)))
    }
}

/// The largest `SKILL.md` read: instructions for a model, far below this; a bigger file is refused.
const MAX_SKILL_BYTES: u64 = 1024 * 1024;

/// A `SKILL.md`'s text: a regular file (a FIFO would block the listing forever, a device never end) of at
/// most [`MAX_SKILL_BYTES`], inside its skill's folder whatever links lead to it (a link to `~/.ssh/…` or
/// a hard link would put any file in front of the model), with no other hard link. Every read of a skill's
/// file, listing or loading, comes here.
fn read_skill_file(path: &Path) -> std::io::Result<String> {
    let folder = path.parent().unwrap_or(path);
    crate::small_file::read_text_within(path, folder, MAX_SKILL_BYTES)
        .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())
}

/// The skills of one directory, sorted by name (directory order differs between file systems), and the
/// folders refused: with `within` (a workspace's skills), a folder that resolves outside it; any folder
/// whose `SKILL.md` cannot be read safely. Each refusal is logged as a warning naming the skill; the other
/// skills load. Folders that are not skills (no `SKILL.md`, no front matter, a name that differs) are left
/// out as Cline leaves them out.
fn scan(dir: &Path, source: &str, within: Option<&Path>) -> Vec<Result<SkillInfo, (String, String)>> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<Result<SkillInfo, (String, String)>> = entries
        .flatten()
        .filter(|entry| entry.path().is_dir())
        .filter_map(|entry| {
            let folder = entry.file_name().to_string_lossy().into_owned();
            let refuse = |why: String| {
                warn_once(format!("skill \"{folder}\" skipped: {why}"));
                Some(Err((folder.clone(), why)))
            };
            if let Some(root) = within.filter(|root| !canonical(&entry.path()).starts_with(root)) {
                return refuse(format!("its folder leads out of the workspace {}", root.display()));
            }
            let path = entry.path().join("SKILL.md");
            // A folder without a SKILL.md is simply not a skill; one whose SKILL.md is there but cannot be
            // read (a dangling link included) is refused.
            if std::fs::symlink_metadata(&path).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound) {
                return None;
            }
            let text = match read_skill_file(&path) {
                Ok(text) => text,
                Err(e) => return refuse(e.to_string()),
            };
            let (fields, _) = front_matter(&text)?;
            let name = field(&fields, "name")?;
            let description = field(&fields, "description")?;
            if name != folder {
                warn_once(format!("skill name \"{name}\" does not match its directory \"{folder}\"; skipped"));
                return None;
            }
            let path = path.to_string_lossy().into_owned();
            Some(Ok(SkillInfo { name, description, path, source: source.to_owned() }))
        })
        .collect();
    found.sort_by(|a, b| key(a).cmp(key(b)));
    found
}

/// Logs a warning the first time it is seen: every listing scans again (a use_skill call lists twice), and
/// a bad skill would otherwise be reported on every call of a long-running host.
fn warn_once(message: String) {
    static SEEN: std::sync::Mutex<std::collections::BTreeSet<String>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    let mut seen = SEEN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if !seen.contains(&message) {
        tracing::warn!("{message}");
        seen.insert(message);
    }
}

fn key(found: &Result<SkillInfo, (String, String)>) -> &str {
    match found {
        Ok(skill) => &skill.name,
        Err((folder, _)) => folder,
    }
}

fn field(fields: &[(String, String)], key: &str) -> Option<String> {
    fields.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone()).filter(|v| !v.is_empty())
}

/// Splits `---`-fenced front matter from the body; `None` without front matter.
fn front_matter(text: &str) -> Option<(Vec<(String, String)>, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text.strip_prefix("---")?.strip_prefix('\n').or_else(|| text.strip_prefix("---\r\n"))?;
    let mut offset = 0;
    let mut header_end = None;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            header_end = Some((offset, offset + line.len()));
            break;
        }
        offset += line.len();
    }
    let (end, body_start) = header_end?;
    Some((parse_fields(&rest[..end]), &rest[body_start..]))
}

/// Flat YAML mappings: `key: value`, quoted values, and `|` / `>` block values.
fn parse_fields(header: &str) -> Vec<(String, String)> {
    let mut fields = Vec::new();
    let lines: Vec<&str> = header.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        if line.starts_with([' ', '\t', '#']) || line.trim().is_empty() {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        let value = if value.starts_with('|') || value.starts_with('>') {
            let mut block = Vec::new();
            while i < lines.len() && (lines[i].starts_with([' ', '\t']) || lines[i].trim().is_empty()) {
                block.push(lines[i].trim());
                i += 1;
            }
            let joiner = if value.starts_with('|') { "\n" } else { " " };
            block.join(joiner).trim().to_owned()
        } else if let Some(inner) = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
            inner.replace("\\\"", "\"").replace("\\n", "\n")
        } else if let Some(inner) = value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')) {
            inner.replace("''", "'")
        } else {
            value.to_owned()
        };
        fields.push((key.trim().to_owned(), value));
    }
    fields
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_fields_and_body() {
        let text = "---\nname: pdf\ndescription: \"Reads \\\"PDFs\\\"\"\nlong: >\n  one\n  two\n---\n\n# Body\n";
        let (fields, body) = front_matter(text).unwrap();
        assert_eq!(field(&fields, "name").as_deref(), Some("pdf"));
        assert_eq!(field(&fields, "description").as_deref(), Some("Reads \"PDFs\""));
        assert_eq!(field(&fields, "long").as_deref(), Some("one two"));
        assert_eq!(body, "\n# Body\n");
        assert!(front_matter("# no header\n").is_none());
        assert!(front_matter("---\nname: x\n").is_none());
    }
}
