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
            None => match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
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
        if !self.enabled {
            return Vec::new();
        }
        let mut skills: Vec<SkillInfo> = Vec::new();
        let mut add = |dir: &Path, source: &str| {
            for skill in scan(dir, source) {
                if !skills.iter().any(|s| s.name == skill.name) {
                    skills.push(skill);
                }
            }
        };
        for dir in &self.user {
            add(dir, "global");
        }
        if self.trusted.contains(&canonical(root)) {
            for dir in WORKSPACE_DIRS {
                add(&root.join(dir), "project");
            }
        }
        skills
    }

    /// One available skill and its instructions (the body of its `SKILL.md`, trimmed).
    pub fn load(&self, root: &Path, name: &str) -> std::io::Result<Option<(SkillInfo, String)>> {
        let Some(skill) = self.list(root).into_iter().find(|s| s.name == name) else {
            return Ok(None);
        };
        let text = read_skill_file(Path::new(&skill.path))?;
        let body = front_matter(&text).map_or(text.as_str(), |(_, body)| body).trim().to_owned();
        Ok(Some((skill, body)))
    }
}

/// The largest `SKILL.md` read: instructions for a model, far below this; a bigger file is refused.
const MAX_SKILL_BYTES: u64 = 1024 * 1024;

/// A `SKILL.md`'s text: a regular file (a FIFO would block the listing forever, a device never end) of at
/// most [`MAX_SKILL_BYTES`].
fn read_skill_file(path: &Path) -> std::io::Result<String> {
    crate::small_file::read_text(path, MAX_SKILL_BYTES)
        .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())
}

/// The valid skills of one directory, sorted by name (directory order differs between file systems).
fn scan(dir: &Path, source: &str) -> Vec<SkillInfo> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut skills: Vec<SkillInfo> = entries
        .flatten()
        .filter(|entry| entry.path().is_dir())
        .filter_map(|entry| {
            let folder = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path().join("SKILL.md");
            let text = read_skill_file(&path).ok()?;
            let (fields, _) = front_matter(&text)?;
            let name = field(&fields, "name")?;
            let description = field(&fields, "description")?;
            if name != folder {
                tracing::warn!("skill name \"{name}\" does not match its directory \"{folder}\"; skipped");
                return None;
            }
            Some(SkillInfo { name, description, path: path.to_string_lossy().into_owned(), source: source.to_owned() })
        })
        .collect();
    skills.sort_by(|a, b| a.name.cmp(&b.name));
    skills
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
