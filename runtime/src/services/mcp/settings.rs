//! The MCP settings file, in the shape of Cline's `cline_mcp_settings.json`:
//! `{"mcpServers": {name: {command, args, env, cwd, url, headers, type, disabled, timeout, autoApprove}}}`.
//!
//! Each server is parsed on its own, so one malformed entry is reported against its name while the others
//! start; a file that is not JSON at all is one error for the whole file.

use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// How the hub reaches one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking JSON-RPC on its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables.
        env: BTreeMap<String, String>,
        /// Its working directory, when set.
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP at a URL.
    Http {
        /// The endpoint.
        url: String,
        /// Extra request headers.
        headers: BTreeMap<String, String>,
    },
}

/// One server's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSettings {
    /// How to reach it.
    pub transport: Transport,
    /// A disabled server is never started and its tools are never offered.
    pub disabled: bool,
    /// Its tool-call timeout; `None` uses the host's default.
    pub timeout: Option<Duration>,
    /// Tools that run without asking.
    pub auto_approve: Vec<String>,
}

/// The parsed file: each server's settings, or why its entry is unusable.
pub type Servers = BTreeMap<String, Result<ServerSettings, String>>;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawServer {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    cwd: Option<PathBuf>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    disabled: bool,
    #[serde(default)]
    timeout: Option<u64>,
    #[serde(default)]
    auto_approve: Vec<String>,
}

/// Parses the settings text.
pub fn parse(text: &str) -> Result<Servers, String> {
    let root: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let Some(root) = root.as_object() else {
        return Err("expected a JSON object with an \"mcpServers\" object".to_owned());
    };
    let servers = match root.get("mcpServers") {
        None => return Ok(Servers::new()),
        Some(Value::Object(servers)) => servers,
        Some(_) => return Err("\"mcpServers\" must be an object of servers by name".to_owned()),
    };
    Ok(servers.iter().map(|(name, value)| (name.clone(), server(name, value))).collect())
}

fn server(name: &str, value: &Value) -> Result<ServerSettings, String> {
    let invalid = |why: String| format!("invalid settings for MCP server \"{name}\": {why}");
    let raw = RawServer::deserialize(value).map_err(|e| invalid(e.to_string()))?;
    let transport = match (raw.kind.as_deref(), raw.command, raw.url) {
        (Some("stdio") | None, Some(command), None) => {
            Transport::Stdio { command, args: raw.args, env: raw.env, cwd: raw.cwd }
        }
        (Some("streamableHttp" | "http") | None, None, Some(url)) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(invalid(format!("url {url:?} is not an http:// or https:// URL")));
            }
            Transport::Http { url, headers: raw.headers }
        }
        (Some("sse"), _, _) => {
            return Err(invalid(
                "the legacy SSE transport is not supported; use \"type\": \"streamableHttp\"".to_owned(),
            ))
        }
        (_, Some(_), Some(_)) => return Err(invalid("give either \"command\" or \"url\", not both".to_owned())),
        (_, None, None) => return Err(invalid("give \"command\" (stdio) or \"url\" (streamableHttp)".to_owned())),
        (Some(kind), _, _) => {
            return Err(invalid(format!(
                "\"type\": {kind:?} does not fit the server's fields; use \"stdio\" with \"command\" or \"streamableHttp\" with \"url\""
            )))
        }
    };
    // Cline's schema: seconds, at least 1.
    let timeout = match raw.timeout {
        Some(0) => return Err(invalid("\"timeout\" is in seconds and must be at least 1".to_owned())),
        Some(seconds) => Some(Duration::from_secs(seconds)),
        None => None,
    };
    Ok(ServerSettings { transport, disabled: raw.disabled, timeout, auto_approve: raw.auto_approve })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_server_parses_on_its_own() {
        let servers = parse(
            r#"{"mcpServers": {
                "fs": {"command": "npx", "args": ["-y", "x"], "env": {"A": "1"}, "autoApprove": ["read"], "timeout": 5},
                "web": {"type": "streamableHttp", "url": "http://127.0.0.1:1/mcp", "disabled": true},
                "broken": {"args": []},
                "typo": {"command": "x", "comand": "y"},
                "old": {"type": "sse", "url": "http://h/sse"}
            }}"#,
        )
        .unwrap();
        let fs = servers["fs"].as_ref().unwrap();
        assert_eq!(fs.timeout, Some(Duration::from_secs(5)));
        assert_eq!(fs.auto_approve, ["read"]);
        assert!(matches!(&fs.transport, Transport::Stdio { command, .. } if command == "npx"));
        assert!(servers["web"].as_ref().unwrap().disabled);
        assert!(servers["broken"].as_ref().unwrap_err().contains("\"broken\": give \"command\""));
        assert!(servers["typo"].as_ref().unwrap_err().contains("unknown field `comand`"));
        assert!(servers["old"].as_ref().unwrap_err().contains("SSE"));
    }

    #[test]
    fn a_file_that_is_not_json_is_one_error() {
        assert!(parse("{\"mcpServers\": ").unwrap_err().starts_with("not JSON"));
        assert!(parse("[]").unwrap_err().contains("mcpServers"));
        assert!(parse("{}").unwrap().is_empty());
    }
}
