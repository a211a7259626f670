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

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use toml::{Table, Value};

mod shape;
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod shape_tests;
mod trust;

/// The section names; `TOOLSHED_<SECTION>_<KEY>` uses them upper-cased.
const SECTIONS: [&str; 13] = [
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
}

/// `[limits]`: what the runtime lets through from any tool, whatever the tool built. A workspace may only
/// lower them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsConfig {
    /// The most text a tool result may carry, in bytes (every text block together); the rest is cut with a
    /// note. Cline's tools cap themselves at 400 KB where they cap at all: this is the backstop above them.
    pub max_result_bytes: u64,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self { max_result_bytes: 1024 * 1024 }
    }
}

/// `[isolation]`: the limits of the child processes (the `toolshed` binary in a hidden mode) that run a
/// plugin's parsers of hostile content (documents, web pages), so a stack overflow, an allocation failure or
/// an endless loop there ends the child, not the host. A workspace may only lower the limits or turn it on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IsolationConfig {
    /// Whether jobs run in a child process at all; off, they run inside the host (faster, unprotected).
    pub enabled: bool,
    /// The child's address-space limit (`RLIMIT_AS`), in MiB.
    pub memory_mb: u64,
    /// The child's CPU-time limit (`RLIMIT_CPU`, rounded up to whole seconds), in milliseconds.
    pub cpu_ms: u64,
    /// The stack of the thread that runs the job, in MiB: deep but honest nesting still parses.
    pub stack_mb: u64,
    /// How long a job may take, in milliseconds of wall-clock time, before the child is killed.
    pub timeout_ms: u64,
    /// The largest answer (or host-service request) a child may send, in bytes.
    pub max_output_bytes: u64,
    /// How many children may run at once (each may take `memory_mb`); more wait their turn within
    /// `timeout_ms`.
    pub max_children: u64,
}

impl Default for IsolationConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            memory_mb: 2048,
            cpu_ms: 30_000,
            stack_mb: 64,
            timeout_ms: 30_000,
            max_output_bytes: 64 * 1024 * 1024,
            max_children: 4,
        }
    }
}

/// `[serve]`: `toolshed serve --http`'s limits. A workspace may only lower them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServeConfig {
    /// Connections served at once; one more is answered 503 and closed.
    pub max_connections: u32,
    /// How long a connection may stay open without a request that carries the token, in milliseconds.
    pub auth_timeout_ms: u64,
    /// The largest request body, in bytes; a larger one is answered 413.
    pub max_body_bytes: u64,
    /// After a failed accept (out of descriptors, say), how long to wait before the next, in milliseconds;
    /// it doubles while accepts keep failing, up to 1 s or this value if larger.
    pub accept_backoff_ms: u64,
}

impl Default for ServeConfig {
    fn default() -> Self {
        Self { max_connections: 64, auth_timeout_ms: 10_000, max_body_bytes: 4 * 1024 * 1024, accept_backoff_ms: 50 }
    }
}

/// `[subagents]`: use_subagents' child tasks, the configured agents, and the OpenAI-compatible driver.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SubagentsConfig {
    /// Whether use_subagents may run (it also needs the host's agent driver).
    pub enabled: bool,
    /// A directory of agent configs, one `.toml` file per agent (`name`, `description`, `model`, `tools`,
    /// `system_prompt`); each becomes a `use_subagent_<name>` tool.
    pub agents_dir: Option<PathBuf>,
    /// The most model requests one subagent run may make before it fails.
    pub max_turns: u32,
    /// The longest one model request may take, in milliseconds.
    pub request_timeout_ms: u64,
    /// The OpenAI-compatible endpoint of the built-in driver (`{base_url}/chat/completions`).
    pub base_url: Option<String>,
    /// The model the built-in driver asks for (an agent's `model` wins).
    pub model: Option<String>,
    /// The environment variable holding the driver's bearer key.
    pub api_key_env: String,
    /// The model's context window, for the summary's "Peak context usage" (0: unknown).
    pub context_window: u64,
    /// The most one model response may stream, in bytes (every event together); a longer one fails the run.
    pub max_response_bytes: u64,
}

impl Default for SubagentsConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            agents_dir: None,
            max_turns: 50,
            request_timeout_ms: 120_000,
            base_url: None,
            model: None,
            api_key_env: "OPENAI_API_KEY".to_owned(),
            context_window: 0,
            max_response_bytes: 16 * 1024 * 1024,
        }
    }
}

/// `[tasks]`: the conversational tools' settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TasksConfig {
    /// Cline's Focus Chain: every tool accepts `task_progress`, the runtime stores the checklist per task
    /// and adds Cline's reminders to results. Off by default, so results stay exactly as the tools wrote them.
    pub focus_chain: bool,
    /// Cline's `remindClineInterval`: remind after this many calls without a `task_progress` update.
    pub remind_interval: u32,
    /// Cline's `doubleCheckCompletionEnabled`: the first attempt_completion of each pair asks the model to
    /// re-verify its work.
    pub double_check_completion: bool,
}

impl Default for TasksConfig {
    fn default() -> Self {
        Self { focus_chain: false, remind_interval: 6, double_check_completion: false }
    }
}

/// `[skills]`: where use_skill finds skills (folders with a `SKILL.md`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SkillsConfig {
    /// Whether skills are offered at all.
    pub enabled: bool,
    /// The user's skill directories; Cline's `~/.cline/skills` and `~/.agents/skills` when unset. The
    /// workspace's (`.toolshed/skills`, `.clinerules/skills`, `.cline/skills`, `.claude/skills`,
    /// `.agents/skills`) are added only for a workspace in `[plugins] trusted_workspaces`.
    pub dirs: Option<Vec<PathBuf>>,
}

impl Default for SkillsConfig {
    fn default() -> Self {
        Self { enabled: true, dirs: None }
    }
}

/// `[hooks]`: commands run before and after tool calls, speaking Claude Code's hook protocol.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HooksConfig {
    /// How long a hook command may run before it is killed and ignored, in milliseconds: the whole exchange,
    /// writing its input and reading its output.
    pub timeout_ms: u64,
    /// The most a hook may print (stdout and stderr each), in bytes; a hook printing more is killed and ignored.
    pub max_output_bytes: u64,
    /// Run after a tool's validation, before approval; may refuse the call or add context.
    #[serde(deserialize_with = "shape::tables")]
    pub pre_tool_use: Vec<HookCommand>,
    /// Run after a tool ran; may add context for the model.
    #[serde(deserialize_with = "shape::tables")]
    pub post_tool_use: Vec<HookCommand>,
}

impl Default for HooksConfig {
    fn default() -> Self {
        // Claude Code's default hook timeout.
        Self { timeout_ms: 60_000, max_output_bytes: 1024 * 1024, pre_tool_use: Vec::new(), post_tool_use: Vec::new() }
    }
}

/// One configured hook command: `{ matcher = "write_to_file|execute_command", command = "…" }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookCommand {
    /// A regex the whole tool name must match; absent, empty or `*` matches every tool.
    #[serde(default)]
    pub matcher: Option<String>,
    /// The command, run with `/bin/sh -c` in the task's workspace.
    pub command: String,
}

/// `[web]`: the web tools and the Cline API they talk to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WebConfig {
    /// The provider; `"cline"` enables the Cline API contract.
    pub provider: Option<String>,
    /// The user's setting that turns the web tools on.
    pub enabled: bool,
    /// The feature flag that must also be on for the web tools.
    pub feature_flag: bool,
    /// The base URL of the Cline API.
    pub api_base_url: String,
    /// `"cline"` (through the Cline API) or `"direct"`.
    pub backend: String,
    /// The timeout of one web tool request (Cline's 15 s), in milliseconds.
    pub fetch_timeout_ms: u64,
    /// Hosts a direct fetch may reach even at private, loopback or link-local addresses: `name`,
    /// `name:port`, an IP address, or `*.domain` for its subdomains.
    pub allowed_hosts: Vec<String>,
    /// Hosts a direct fetch never reaches, in the same forms.
    pub denied_hosts: Vec<String>,
    /// Lets direct fetches reach private, loopback and link-local addresses.
    pub allow_private_addresses: bool,
    /// The most redirects one request follows; each target is checked again.
    pub max_redirects: u32,
    /// The largest response body the host reads, in bytes.
    pub max_response_bytes: u64,
    /// A proxy for every web request (`http://` or `https://` URL); none reads no proxy variables.
    pub proxy: Option<String>,
    /// A PEM file of extra certificate authorities to trust.
    pub ca_file: Option<PathBuf>,
}

impl Default for WebConfig {
    fn default() -> Self {
        Self {
            provider: None,
            enabled: false,
            feature_flag: false,
            api_base_url: "https://api.cline.bot".to_owned(),
            backend: "cline".to_owned(),
            fetch_timeout_ms: 15_000,
            allowed_hosts: Vec::new(),
            denied_hosts: Vec::new(),
            allow_private_addresses: false,
            max_redirects: 5,
            max_response_bytes: 10 * 1024 * 1024,
            proxy: None,
            ca_file: None,
        }
    }
}

/// `[mcp]`: where the MCP server settings live, and the hub's timeouts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct McpConfig {
    /// The path of a `cline_mcp_settings.json`-shaped file.
    pub settings: Option<PathBuf>,
    /// How long one server may take to start and answer `initialize` and the first listings.
    pub startup_timeout_ms: u64,
    /// A tool call's timeout for servers whose settings give no `timeout` (Cline's 60 s).
    pub call_timeout_ms: u64,
    /// How often the settings file is checked for changes (changed servers restart).
    pub poll_ms: u64,
    /// The most pages one listing (tools, resources, templates, prompts) may take from a server.
    pub max_list_pages: u32,
    /// The most bytes one listing may take from a server, all pages together.
    pub max_list_bytes: u64,
    /// The largest single message a server may send, in bytes; a larger one fails the server's calls at once.
    pub max_message_bytes: u64,
}

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            settings: None,
            startup_timeout_ms: 30_000,
            call_timeout_ms: 60_000,
            poll_ms: 1_000,
            max_list_pages: 100,
            max_list_bytes: 16 * 1024 * 1024,
            max_message_bytes: 16 * 1024 * 1024,
        }
    }
}

/// `[commands]`: command permissions and timeouts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CommandsConfig {
    /// The JSON text of `CLINE_COMMAND_PERMISSIONS` (that variable wins).
    pub permissions: Option<String>,
    /// How long a command may run by default, in milliseconds.
    pub default_timeout_ms: u64,
    /// How long a command marked long-running may run, in milliseconds.
    pub long_timeout_ms: u64,
    /// Keep a command's background jobs running after its main process exits, until the task ends; by
    /// default they are killed with the rest of its process tree then.
    pub keep_background: bool,
}

impl Default for CommandsConfig {
    fn default() -> Self {
        Self { permissions: None, default_timeout_ms: 30_000, long_timeout_ms: 300_000, keep_background: false }
    }
}

impl CommandsConfig {
    /// How long a command may run by default.
    pub fn default_timeout(&self) -> Duration {
        Duration::from_millis(self.default_timeout_ms)
    }

    /// How long a command marked long-running may run.
    pub fn long_timeout(&self) -> Duration {
        Duration::from_millis(self.long_timeout_ms)
    }
}

/// `[approval]`: what runs without asking.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ApprovalConfig {
    /// Read-only tools inside the workspace run without asking.
    pub auto_approve_safe: bool,
    /// Every tool runs without asking.
    pub auto_approve_all: bool,
    /// YOLO mode: approve every call without asking.
    pub yolo: bool,
    /// Per-tool rules, by tool name.
    pub tools: BTreeMap<String, Rule>,
}

impl Default for ApprovalConfig {
    fn default() -> Self {
        Self { auto_approve_safe: true, auto_approve_all: false, yolo: false, tools: BTreeMap::new() }
    }
}

/// A per-tool approval rule, written in lower case (`read_file = "deny"`).
///
/// The variants are ordered from loosest to strictest, so `a < b` means `b`
/// tightens `a`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Rule {
    /// Run without asking.
    Allow,
    /// Ask before running.
    Ask,
    /// Never run.
    Deny,
}

/// `[plugins]`: plugin directories, overrides and trust.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PluginsConfig {
    /// More directories to load plugins from.
    pub dirs: Vec<PathBuf>,
    /// Built-in tool names that a third-party plugin may replace.
    pub overrides: Vec<String>,
    /// Workspaces whose own config and plugins apply in full. Only the
    /// user-side layers (user file, `--config`, environment) can set it.
    pub trusted_workspaces: Vec<PathBuf>,
    /// How many abandoned worker threads a tool may leave behind before it is
    /// quarantined.
    pub max_abandoned: u32,
    /// Unload library copies nobody uses any more: a replaced or removed version once its last call has
    /// finished, and every copy of a runtime that stops. Off, every copy stays mapped until the process ends
    /// (what `abi_stable` itself does), for plugins that leave threads or pointers behind.
    pub unload: bool,
    /// Per-plugin config tables, by plugin name; see
    /// [`PluginsConfig::config_json`].
    pub config: BTreeMap<String, Table>,
}

impl Default for PluginsConfig {
    fn default() -> Self {
        Self {
            dirs: Vec::new(),
            overrides: Vec::new(),
            trusted_workspaces: Vec::new(),
            max_abandoned: 4,
            unload: true,
            config: BTreeMap::new(),
        }
    }
}

impl PluginsConfig {
    /// The config table of one plugin as JSON, the form plugins receive it
    /// in; `None` when the plugin has none. Datetimes become strings.
    pub fn config_json(&self, plugin: &str) -> Option<serde_json::Value> {
        fn to_json(value: &Value) -> serde_json::Value {
            match value {
                Value::String(s) => serde_json::Value::String(s.clone()),
                Value::Integer(i) => serde_json::Value::from(*i),
                // JSON has no NaN or infinity; they become null.
                Value::Float(f) => serde_json::Value::from(*f),
                Value::Boolean(b) => serde_json::Value::Bool(*b),
                Value::Datetime(d) => serde_json::Value::String(d.to_string()),
                Value::Array(items) => items.iter().map(to_json).collect(),
                Value::Table(table) => {
                    table.iter().map(|(k, v)| (k.clone(), to_json(v))).collect::<serde_json::Map<_, _>>().into()
                }
            }
        }
        self.config.get(plugin).map(|table| to_json(&Value::Table(table.clone())))
    }
}

/// `[timeouts]`: every duration the runtime uses, in milliseconds, so tests
/// can set them small.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TimeoutsConfig {
    /// The longest one tool call may take.
    pub call_ms: u64,
    /// The longest a tool's prepare phase may take.
    pub prepare_ms: u64,
    /// How long shutdown waits for calls in flight.
    pub shutdown_ms: u64,
    /// The longest a file listing may take.
    pub list_files_ms: u64,
    /// How long to wait for a terminal answer to an approval question; 0
    /// waits forever.
    pub ask_ms: u64,
    /// How long the plugin watcher waits for file events to settle.
    pub watch_debounce_ms: u64,
    /// Between SIGTERM and SIGKILL when a command's process group is stopped.
    pub kill_grace_ms: u64,
    /// How long a command runs before its "still running" notice is said to the user.
    pub command_notice_ms: u64,
    /// After a task is cancelled, how long a running call gets to answer in its own words before it is
    /// abandoned.
    pub cancel_grace_ms: u64,
    /// After a timeout or cancellation, how long a call that already began writing (it passed its commit
    /// gate, `call.commit`) is waited for, so its answer says what it wrote, in milliseconds.
    pub commit_ms: u64,
}

impl Default for TimeoutsConfig {
    fn default() -> Self {
        Self {
            call_ms: 600_000,
            prepare_ms: 30_000,
            shutdown_ms: 2_000,
            list_files_ms: 10_000,
            ask_ms: 0,
            watch_debounce_ms: 300,
            kill_grace_ms: 2_000,
            command_notice_ms: 15_000,
            cancel_grace_ms: 500,
            commit_ms: 60_000,
        }
    }
}

impl TimeoutsConfig {
    /// The longest one tool call may take.
    pub fn call(&self) -> Duration {
        Duration::from_millis(self.call_ms)
    }

    /// The longest a tool's prepare phase may take.
    pub fn prepare(&self) -> Duration {
        Duration::from_millis(self.prepare_ms)
    }

    /// How long shutdown waits for calls in flight.
    pub fn shutdown(&self) -> Duration {
        Duration::from_millis(self.shutdown_ms)
    }

    /// The longest a file listing may take.
    pub fn list_files(&self) -> Duration {
        Duration::from_millis(self.list_files_ms)
    }

    /// Between SIGTERM and SIGKILL.
    pub fn kill_grace(&self) -> Duration {
        Duration::from_millis(self.kill_grace_ms)
    }

    /// How long the plugin watcher waits for file events to settle.
    pub fn watch_debounce(&self) -> Duration {
        Duration::from_millis(self.watch_debounce_ms)
    }

    /// How long to wait for a terminal answer; `None` waits forever.
    pub fn ask(&self) -> Option<Duration> {
        (self.ask_ms != 0).then(|| Duration::from_millis(self.ask_ms))
    }
}

impl Config {
    /// Parses and checks one TOML document, with no other layers and no
    /// environment: a convenience for tests and embedding hosts.
    pub fn from_toml_str(text: &str) -> Result<Config, ConfigError> {
        parse_layer(text, Path::new("<string>")).map(|(config, _)| config)
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
            if let Some(problem) = entries.iter().find_map(|entry| crate::http::host_entry_problem(entry)) {
                return Err(format!("[web] {key}: {problem}"));
            }
        }
        if let Some(proxy) = &self.web.proxy {
            if !(proxy.starts_with("https://") || proxy.starts_with("http://")) {
                return Err(format!("[web] proxy is {proxy:?}; use an http:// or https:// URL"));
            }
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

/// Finds, reads and merges the configuration layers: set the sources,
/// then [`ConfigLoader::load`].
#[derive(Debug, Clone)]
pub struct ConfigLoader {
    user_file: Option<PathBuf>,
    config_file: Option<PathBuf>,
    workspace: Option<PathBuf>,
    /// Only the `TOOLSHED_` variables that may be config keys, so the loader
    /// holds no unrelated secrets.
    env: Vec<(String, String)>,
    home: Option<PathBuf>,
}

impl Default for ConfigLoader {
    fn default() -> Self {
        Self::new()
    }
}

impl ConfigLoader {
    /// A loader with the user file `$HOME/.toolshed/config.toml` (none when
    /// `$HOME` is unset), no `--config` file, no workspace, and the process
    /// environment.
    pub fn new() -> Self {
        let home = std::env::var_os("HOME").filter(|home| !home.is_empty()).map(PathBuf::from);
        let user_file = home.as_ref().map(|home| home.join(".toolshed").join("config.toml"));
        Self { user_file, config_file: None, workspace: None, env: Vec::new(), home }.env(std::env::vars())
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
            if !already_read {
                if let Some(text) = read_optional(&path)? {
                    workspace_layer = Some((parse_layer(&text, &path)?, path, cwd));
                }
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
fn parse_layer(text: &str, path: &Path) -> Result<(Config, Table), ConfigError> {
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
    if let Some(Value::Table(mcp)) = table.get_mut("mcp") {
        if let Some(settings) = mcp.get_mut("settings") {
            resolve(settings);
        }
    }
    if let Some(Value::Table(web)) = table.get_mut("web") {
        if let Some(ca_file) = web.get_mut("ca_file") {
            resolve(ca_file);
        }
    }
    if let Some(Value::Table(subagents)) = table.get_mut("subagents") {
        if let Some(dir) = subagents.get_mut("agents_dir") {
            resolve(dir);
        }
    }
    if let Some(Value::Table(skills)) = table.get_mut("skills") {
        if let Some(Value::Array(paths)) = skills.get_mut("dirs") {
            paths.iter_mut().for_each(resolve);
        }
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

#[cfg(test)]
// Tests fail loudly on purpose; the workspace denies these lints for library code.
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::fs;

    /// A scratch home with a user file, and a workspace beside it.
    /// Shared with `shape_tests`.
    pub(super) struct Scratch {
        _dir: tempfile::TempDir,
        pub(super) home: PathBuf,
        pub(super) workspace: PathBuf,
    }

    impl Scratch {
        pub(super) fn new() -> Self {
            let dir = tempfile::tempdir().unwrap();
            let root = fs::canonicalize(dir.path()).unwrap();
            let home = root.join("home");
            let workspace = root.join("ws");
            fs::create_dir_all(home.join(".toolshed")).unwrap();
            fs::create_dir_all(workspace.join(".toolshed")).unwrap();
            Self { _dir: dir, home, workspace }
        }

        pub(super) fn user_path(&self) -> PathBuf {
            self.home.join(".toolshed/config.toml")
        }

        pub(super) fn workspace_path(&self) -> PathBuf {
            self.workspace.join(".toolshed/config.toml")
        }

        pub(super) fn write_user(&self, text: &str) {
            fs::write(self.user_path(), text).unwrap();
        }

        pub(super) fn write_workspace(&self, text: &str) {
            fs::write(self.workspace_path(), text).unwrap();
        }

        fn trust_workspace(&self, extra: &str) {
            self.write_user(&format!(
                "[plugins]\ntrusted_workspaces = [{:?}]\n{extra}",
                self.workspace.display().to_string()
            ));
        }

        /// A loader over this scratch home and workspace, with an empty
        /// environment.
        pub(super) fn loader(&self) -> ConfigLoader {
            ConfigLoader {
                user_file: Some(self.user_path()),
                config_file: None,
                workspace: Some(self.workspace.clone()),
                env: Vec::new(),
                home: Some(self.home.clone()),
            }
        }
    }

    fn env(vars: &[(&str, &str)]) -> Vec<(String, String)> {
        vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn defaults() {
        let config = Config::default();
        assert_eq!(config.web.api_base_url, "https://api.cline.bot");
        assert_eq!(config.web.backend, "cline");
        assert!(!config.web.enabled && !config.web.feature_flag);
        assert_eq!(config.commands.default_timeout(), Duration::from_secs(30));
        assert_eq!(config.commands.long_timeout(), Duration::from_secs(300));
        assert!(config.approval.auto_approve_safe);
        assert!(!config.approval.auto_approve_all && !config.approval.yolo);
        assert_eq!(config.plugins.max_abandoned, 4);
        assert_eq!(config.timeouts.call(), Duration::from_secs(600));
        assert_eq!(config.timeouts.prepare(), Duration::from_secs(30));
        assert_eq!(config.timeouts.shutdown(), Duration::from_secs(2));
        assert_eq!(config.timeouts.list_files(), Duration::from_secs(10));
        assert_eq!(config.timeouts.ask(), None);
        assert_eq!(config.timeouts.watch_debounce(), Duration::from_millis(300));
        assert_eq!(Config::from_toml_str("").unwrap(), config);
        assert_eq!(Config::from_toml_str("[web]\n[timeouts]\n").unwrap(), config);

        let scratch = Scratch::new();
        let loaded = scratch.loader().load().unwrap();
        assert_eq!(loaded.config, config);
        assert!(!loaded.workspace_trusted);
        assert_eq!(loaded.warnings, Vec::<String>::new());
    }

    #[test]
    fn ask_is_some_when_set() {
        let config = Config::from_toml_str("[timeouts]\nask_ms = 250").unwrap();
        assert_eq!(config.timeouts.ask(), Some(Duration::from_millis(250)));
    }

    #[test]
    fn layers_take_precedence_in_order() {
        let scratch = Scratch::new();
        scratch.trust_workspace("[timeouts]\ncall_ms = 1\nprepare_ms = 1\nshutdown_ms = 1\nlist_files_ms = 1\n");
        let config_path = scratch.home.join("cli.toml");
        fs::write(&config_path, "[timeouts]\ncall_ms = 2\nprepare_ms = 2\nshutdown_ms = 2\n").unwrap();
        scratch.write_workspace("[timeouts]\ncall_ms = 3\nprepare_ms = 3\n");
        let loaded = scratch
            .loader()
            .config_file(Some(config_path))
            .env(env(&[("TOOLSHED_TIMEOUTS_CALL_MS", "4")]))
            .load()
            .unwrap();
        assert!(loaded.workspace_trusted);
        let t = &loaded.config.timeouts;
        assert_eq!((t.call_ms, t.prepare_ms, t.shutdown_ms, t.list_files_ms), (4, 3, 2, 1));
        assert_eq!(t.ask_ms, 0, "untouched keys keep their defaults");
    }

    #[test]
    fn tables_merge_and_arrays_replace() {
        let scratch = Scratch::new();
        scratch.write_user("[approval.tools]\nread_file = \"deny\"\n[plugins]\noverrides = [\"a\", \"b\"]\n");
        let config_path = scratch.home.join("cli.toml");
        fs::write(&config_path, "[approval.tools]\nwrite_to_file = \"ask\"\n[plugins]\noverrides = [\"c\"]\n").unwrap();
        let config = scratch.loader().config_file(Some(config_path)).load().unwrap().config;
        let expected: BTreeMap<String, Rule> =
            [("read_file".to_owned(), Rule::Deny), ("write_to_file".to_owned(), Rule::Ask)].into();
        assert_eq!(config.approval.tools, expected);
        assert_eq!(config.plugins.overrides, vec!["c".to_owned()]);
    }

    #[test]
    fn missing_files() {
        let scratch = Scratch::new();
        // A missing user or workspace file is fine...
        assert!(scratch.loader().load().is_ok());
        // ...a missing --config file is not.
        let missing = scratch.home.join("nope.toml");
        let err = scratch.loader().config_file(Some(missing.clone())).load().unwrap_err();
        assert!(matches!(&err, ConfigError::Read { path, .. } if *path == missing), "{err:?}");
        assert!(err.to_string().contains("nope.toml"), "{err}");
    }

    #[test]
    fn unknown_key_in_each_file_names_key_and_file() {
        let scratch = Scratch::new();
        let config_path = scratch.home.join("cli.toml");
        let cases = [
            (scratch.user_path(), "[web]\nprovder = \"cline\"\n", "provder"),
            (config_path.clone(), "[timeouts]\ncall = 5\n", "call"),
            (scratch.workspace_path(), "[approval]\nyollo = false\n", "yollo"),
            (scratch.user_path(), "[webb]\nenabled = true\n", "webb"),
        ];
        for (path, text, key) in cases {
            fs::write(&path, text).unwrap();
            let err = scratch.loader().config_file(Some(config_path.clone())).load().unwrap_err();
            let ConfigError::Parse { path: at, message } = &err else {
                panic!("{key}: expected a parse error, got {err:?}");
            };
            assert_eq!(at, &path, "{key}");
            assert!(message.starts_with("line ") && message.contains(&format!("`{key}`")), "{message}");
            let shown = err.to_string();
            assert!(shown.contains(&path.display().to_string()) && !shown.contains('\n'), "{shown}");
            // Leave the layer valid for the next case.
            fs::write(&path, "").unwrap();
        }
    }

    #[test]
    fn unknown_env_key_names_the_variable() {
        let scratch = Scratch::new();
        let err = scratch.loader().env(env(&[("TOOLSHED_TIMEOUTS_CALL", "5")])).load().unwrap_err();
        let ConfigError::Env { var, message } = &err else {
            panic!("expected an env error, got {err:?}");
        };
        assert_eq!(var, "TOOLSHED_TIMEOUTS_CALL");
        assert!(message.contains("`call`"), "{message}");
        assert!(err.to_string().contains("TOOLSHED_TIMEOUTS_CALL"), "{err}");

        let err = scratch.loader().env(env(&[("TOOLSHED_MCP", "x")])).load().unwrap_err();
        assert!(matches!(&err, ConfigError::Env { var, .. } if var == "TOOLSHED_MCP"), "{err:?}");
    }

    #[test]
    fn env_ignores_non_keys_and_other_sections() {
        let scratch = Scratch::new();
        let loaded = scratch
            .loader()
            .env(env(&[
                ("TOOLSHED_WEB_TOKEN", "secret"),
                ("TOOLSHED_SERVE_TOKEN", "secret"),
                ("TOOLSHED_PLUGINS", "/plugins"),
                ("TOOLSHED_LOG", "debug"),
                ("TOOLSHED_OTHER_THING", "1"),
                ("PATH", "/bin"),
            ]))
            .load()
            .unwrap();
        assert_eq!(loaded.config, Config::default());
    }

    #[test]
    fn env_values_are_typed() {
        let scratch = Scratch::new();
        let config = scratch
            .loader()
            .env(env(&[
                ("TOOLSHED_APPROVAL_YOLO", "true"),
                ("TOOLSHED_TIMEOUTS_CALL_MS", "200"),
                ("TOOLSHED_WEB_API_BASE_URL", "http://127.0.0.1:9/api"),
                ("TOOLSHED_WEB_PROVIDER", "123"),
                ("TOOLSHED_COMMANDS_PERMISSIONS", r#"{"allow":["npm *"]}"#),
                ("TOOLSHED_PLUGINS_OVERRIDES", r#"["read_file", "search_files"]"#),
                ("TOOLSHED_APPROVAL_TOOLS", r#"{ read_file = "deny" }"#),
            ]))
            .load()
            .unwrap()
            .config;
        assert!(config.approval.yolo);
        assert_eq!(config.timeouts.call_ms, 200);
        assert_eq!(config.web.api_base_url, "http://127.0.0.1:9/api");
        assert_eq!(config.web.provider.as_deref(), Some("123"));
        assert_eq!(config.commands.permissions.as_deref(), Some(r#"{"allow":["npm *"]}"#));
        assert_eq!(config.plugins.overrides, vec!["read_file".to_owned(), "search_files".to_owned()]);
        assert_eq!(config.approval.tools.get("read_file"), Some(&Rule::Deny));

        for (var, value) in [
            ("TOOLSHED_APPROVAL_YOLO", "yes"),
            ("TOOLSHED_TIMEOUTS_CALL_MS", "soon"),
            ("TOOLSHED_TIMEOUTS_CALL_MS", "-1"),
        ] {
            let err = scratch.loader().env(env(&[(var, value)])).load().unwrap_err();
            assert!(matches!(&err, ConfigError::Env { var: v, .. } if v == var), "{var}={value}: {err:?}");
        }
    }

    #[test]
    fn backend_is_validated() {
        let err = Config::from_toml_str("[web]\nbackend = \"proxy\"\n").unwrap_err();
        assert!(matches!(&err, ConfigError::Invalid { message, .. } if message.contains("\"direct\"")), "{err:?}");
        assert_eq!(Config::from_toml_str("[web]\nbackend = \"direct\"\n").unwrap().web.backend, "direct");

        let scratch = Scratch::new();
        scratch.write_user("[web]\nbackend = \"proxy\"\n");
        let err = scratch.loader().load().unwrap_err();
        assert!(
            matches!(&err, ConfigError::Invalid { origin, .. } if *origin == scratch.user_path().display().to_string()),
            "{err:?}"
        );
        let _ = fs::remove_file(scratch.user_path());
        let err = scratch.loader().env(env(&[("TOOLSHED_WEB_BACKEND", "proxy")])).load().unwrap_err();
        assert!(matches!(&err, ConfigError::Env { var, .. } if var == "TOOLSHED_WEB_BACKEND"), "{err:?}");
    }

    #[test]
    fn untrusted_workspace_may_tighten() {
        let scratch = Scratch::new();
        scratch.write_user("[approval.tools]\nwrite_to_file = \"ask\"\n");
        scratch.write_workspace(
            "[approval]\nauto_approve_safe = false\nauto_approve_all = false\nyolo = false\n\
             [approval.tools]\nread_file = \"ask\"\nexecute_command = \"deny\"\nwrite_to_file = \"deny\"\n\
             [timeouts]\ncall_ms = 5000\nask_ms = 10\n\
             [commands]\ndefault_timeout_ms = 7\n\
             [web]\nenabled = false\n\
             [plugins]\nmax_abandoned = 2\n",
        );
        let loaded = scratch.loader().load().unwrap();
        assert!(!loaded.workspace_trusted);
        assert_eq!(loaded.warnings, Vec::<String>::new());
        let config = loaded.config;
        assert!(!config.approval.auto_approve_safe);
        let expected: BTreeMap<String, Rule> = [
            ("execute_command".to_owned(), Rule::Deny),
            ("read_file".to_owned(), Rule::Ask),
            ("write_to_file".to_owned(), Rule::Deny),
        ]
        .into();
        assert_eq!(config.approval.tools, expected);
        assert_eq!((config.timeouts.call_ms, config.timeouts.ask_ms), (5000, 10));
        assert_eq!(config.commands.default_timeout_ms, 7);
        assert_eq!(config.plugins.max_abandoned, 2);
    }

    #[test]
    fn untrusted_workspace_cannot_loosen() {
        let scratch = Scratch::new();
        scratch.write_user("[approval]\nauto_approve_safe = false\n[approval.tools]\nexecute_command = \"deny\"\n");
        let user_side = scratch.loader().load().unwrap().config;
        let cases = [
            ("approval.tools.read_file", "[approval.tools]\nread_file = \"allow\"\n"),
            ("approval.tools.execute_command", "[approval.tools]\nexecute_command = \"ask\"\n"),
            ("approval.auto_approve_all", "[approval]\nauto_approve_all = true\n"),
            ("approval.auto_approve_safe", "[approval]\nauto_approve_safe = true\n"),
            ("approval.yolo", "[approval]\nyolo = true\n"),
            ("mcp.settings", "[mcp]\nsettings = \"/tmp/mcp.json\"\n"),
            ("web.api_base_url", "[web]\napi_base_url = \"https://evil.example\"\n"),
            ("web.enabled", "[web]\nenabled = true\n"),
            ("web.feature_flag", "[web]\nfeature_flag = true\n"),
            ("web.provider", "[web]\nprovider = \"cline\"\n"),
            ("web.backend", "[web]\nbackend = \"direct\"\n"),
            ("web.allowed_hosts", "[web]\nallowed_hosts = [\"127.0.0.1\"]\n"),
            ("web.allow_private_addresses", "[web]\nallow_private_addresses = true\n"),
            ("web.proxy", "[web]\nproxy = \"http://evil.example:8080\"\n"),
            ("web.ca_file", "[web]\nca_file = \"/tmp/evil.pem\"\n"),
            ("web.max_redirects", "[web]\nmax_redirects = 50\n"),
            ("web.max_response_bytes", "[web]\nmax_response_bytes = 99999999999\n"),
            ("plugins.dirs", "[plugins]\ndirs = [\"plugins\"]\n"),
            ("plugins.overrides", "[plugins]\noverrides = [\"read_file\"]\n"),
            ("plugins.trusted_workspaces", "[plugins]\ntrusted_workspaces = [\"/\"]\n"),
            ("plugins.max_abandoned", "[plugins]\nmax_abandoned = 100\n"),
            ("plugins.config", "[plugins.config.my_tool]\ntoken = \"x\"\n"),
            ("hooks.timeout_ms", "[hooks]\ntimeout_ms = 1\n"),
            ("timeouts.watch_debounce_ms", "[timeouts]\nwatch_debounce_ms = 0\n"),
            ("timeouts.call_ms", "[timeouts]\ncall_ms = 99999999\n"),
        ];
        for (key, text) in cases {
            scratch.write_workspace(text);
            let loaded = scratch.loader().load().unwrap();
            assert_eq!(loaded.config, user_side, "{key}");
            let file = scratch.workspace_path().display().to_string();
            let expected = format!(
                "ignored `{key}` in {file}: workspace {} is not trusted; {TRUST_HINT}",
                scratch.workspace.display()
            );
            assert_eq!(loaded.warnings, vec![expected], "{key}");
        }
    }

    #[test]
    fn untrusted_workspace_may_tighten_web() {
        let scratch = Scratch::new();
        scratch.write_user("[web]\ndenied_hosts = [\"a.example\"]\nmax_redirects = 4\n");
        scratch.write_workspace(
            "[web]\nfetch_timeout_ms = 50\nallow_private_addresses = false\nmax_redirects = 2\n\
             max_response_bytes = 1000\ndenied_hosts = [\"a.example\", \"b.example\"]\n",
        );
        let loaded = scratch.loader().load().unwrap();
        assert_eq!(loaded.warnings, Vec::<String>::new());
        let web = loaded.config.web;
        assert_eq!((web.fetch_timeout_ms, web.max_redirects, web.max_response_bytes), (50, 2, 1000));
        assert_eq!(web.denied_hosts, vec!["a.example".to_owned(), "b.example".to_owned()]);

        // Deny lists only grow: leaving out a host the user denied keeps it denied.
        scratch.write_workspace("[web]\ndenied_hosts = [\"b.example\"]\n");
        let loaded = scratch.loader().load().unwrap();
        assert_eq!(loaded.config.web.denied_hosts, vec!["a.example".to_owned(), "b.example".to_owned()]);
        assert_eq!(loaded.warnings, Vec::<String>::new());
    }

    #[test]
    fn web_proxy_is_validated_and_ca_file_resolved() {
        let err = Config::from_toml_str("[web]\nproxy = \"socks5://x\"\n").unwrap_err();
        assert!(matches!(&err, ConfigError::Invalid { message, .. } if message.contains("[web] proxy")), "{err:?}");
        let err = Config::from_toml_str("[web]\nallowed_hosts = [\"127.0.0.1:8080\"]\n").unwrap_err();
        assert!(matches!(&err, ConfigError::Invalid { message, .. } if message.contains("allowed_hosts")), "{err:?}");
        let scratch = Scratch::new();
        scratch.write_user("[web]\nca_file = \"ca.pem\"\n");
        let config = scratch.loader().load().unwrap().config;
        assert_eq!(config.web.ca_file, Some(scratch.home.join(".toolshed/ca.pem")));
    }

    #[test]
    fn trusted_workspace_applies_fully() {
        let scratch = Scratch::new();
        scratch.trust_workspace("");
        scratch.write_workspace(
            "[approval.tools]\nexecute_command = \"allow\"\n\
             [web]\napi_base_url = \"http://localhost:8080\"\n\
             [plugins]\ndirs = [\"plugins\"]\n",
        );
        let loaded = scratch.loader().load().unwrap();
        assert!(loaded.workspace_trusted);
        assert_eq!(loaded.warnings, Vec::<String>::new());
        let config = loaded.config;
        assert_eq!(config.approval.tools.get("execute_command"), Some(&Rule::Allow));
        assert_eq!(config.web.api_base_url, "http://localhost:8080");
        assert_eq!(config.plugins.dirs, vec![scratch.workspace.join(".toolshed/plugins")]);
    }

    #[test]
    fn trust_is_granted_only_from_the_user_side() {
        let scratch = Scratch::new();
        let listing_itself = format!(
            "[plugins]\ntrusted_workspaces = [{:?}]\n[approval]\nyolo = true\n",
            scratch.workspace.display().to_string()
        );
        scratch.write_workspace(&listing_itself);
        let loaded = scratch.loader().load().unwrap();
        assert!(!loaded.workspace_trusted);
        assert!(!loaded.config.approval.yolo);
        assert_eq!(loaded.config.plugins.trusted_workspaces, Vec::<PathBuf>::new());
        assert_eq!(loaded.warnings.len(), 2, "{:?}", loaded.warnings);
        assert!(loaded.warnings[1].contains("`plugins.trusted_workspaces`"), "{:?}", loaded.warnings);

        // A trusted workspace still cannot extend the list.
        scratch.trust_workspace("");
        scratch.write_workspace("[plugins]\ntrusted_workspaces = [\"/elsewhere\"]\n");
        let loaded = scratch.loader().load().unwrap();
        assert!(loaded.workspace_trusted);
        assert_eq!(loaded.config.plugins.trusted_workspaces, vec![scratch.workspace.clone()]);
        assert_eq!(loaded.warnings.len(), 1);
        assert!(loaded.warnings[0].contains("cannot grant trust"), "{:?}", loaded.warnings);

        // Trust may also come from --config or the environment.
        let _ = fs::remove_file(scratch.user_path());
        let var = format!("[{:?}]", scratch.workspace.display().to_string());
        let loaded = scratch.loader().env(env(&[("TOOLSHED_PLUGINS_TRUSTED_WORKSPACES", &var)])).load().unwrap();
        assert!(loaded.workspace_trusted);
    }

    #[test]
    fn relative_paths_resolve_against_their_file() {
        let scratch = Scratch::new();
        scratch.write_user("[mcp]\nsettings = \"mcp.json\"\n[plugins]\ndirs = [\"plugins\", \"~/more\", \"/abs\"]\n");
        let config = scratch.loader().load().unwrap().config;
        assert_eq!(config.mcp.settings, Some(scratch.home.join(".toolshed/mcp.json")));
        assert_eq!(
            config.plugins.dirs,
            vec![scratch.home.join(".toolshed/plugins"), scratch.home.join("more"), PathBuf::from("/abs")]
        );
    }

    #[test]
    fn home_as_workspace_reads_the_user_file_once() {
        let scratch = Scratch::new();
        scratch.write_user("[approval]\nyolo = true\n");
        let loaded = scratch.loader().workspace(Some(scratch.home.clone())).load().unwrap();
        assert!(loaded.config.approval.yolo);
        assert_eq!(loaded.warnings, Vec::<String>::new());
    }

    #[test]
    fn parse_errors_are_one_line_with_a_position() {
        let err = Config::from_toml_str("[web]\nenabled = tru\n").unwrap_err();
        let ConfigError::Parse { message, .. } = &err else {
            panic!("expected a parse error, got {err:?}");
        };
        assert!(message.starts_with("line 2, column "), "{message}");
        assert!(!err.to_string().contains('\n'), "{err}");
    }

    #[test]
    fn serializes_back_to_the_same_config() {
        let config = Config::from_toml_str(
            "[web]\nprovider = \"cline\"\n[approval.tools]\nread_file = \"deny\"\n\
             [plugins.config.my_tool]\nlimit = 3\n",
        )
        .unwrap();
        let text = toml::to_string(&config).unwrap();
        assert_eq!(Config::from_toml_str(&text).unwrap(), config);
        assert_eq!(Config::from_toml_str(&toml::to_string(&Config::default()).unwrap()).unwrap(), Config::default());
    }

    #[test]
    fn plugin_config_becomes_json() {
        let config =
            Config::from_toml_str("[plugins.config.my_tool]\nlimit = 3\nnames = [\"a\"]\nnested = { on = true }\n")
                .unwrap();
        assert_eq!(
            config.plugins.config_json("my_tool"),
            Some(serde_json::json!({ "limit": 3, "names": ["a"], "nested": { "on": true } }))
        );
        assert_eq!(config.plugins.config_json("other"), None);
    }

    #[test]
    fn clines_permission_variable_is_the_users_setting_and_a_workspace_tightens_it() {
        let scratch = Scratch::new();
        scratch.write_user("[commands]\npermissions = '{\"allow\":[\"ls *\"]}'\n");
        scratch.write_workspace("[commands]\npermissions = '{\"deny\":[\"git push*\"]}'\n");
        let var = env(&[("CLINE_COMMAND_PERMISSIONS", r#"{"allow":["git *"]}"#)]);
        let loaded = scratch.loader().env(var).load().unwrap();
        assert_eq!(
            loaded.config.commands.permissions.as_deref(),
            Some(r#"{"allow":["git *"],"deny":["git push*"],"allowRedirects":false}"#)
        );
        // Blank is unset, as in Cline: the files decide.
        let loaded = scratch.loader().env(env(&[("CLINE_COMMAND_PERMISSIONS", " ")])).load().unwrap();
        assert_eq!(
            loaded.config.commands.permissions.as_deref(),
            Some(r#"{"allow":["ls *"],"deny":["git push*"],"allowRedirects":false}"#)
        );
    }

    #[test]
    fn a_workspace_config_that_is_not_a_small_regular_file_is_an_error_not_a_hang() {
        let scratch = Scratch::new();
        let path = scratch.workspace_path();
        let fifo = scratch.workspace.join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let huge = scratch.workspace.join("huge.toml");
        fs::write(&huge, format!("# {}\n", "x".repeat(2 * 1024 * 1024))).unwrap();
        for (target, why) in [
            (PathBuf::from("/dev/zero"), "not a regular file"),
            (fifo, "not a regular file"),
            (scratch.workspace.clone(), "not a regular file"),
            (huge, "larger than"),
        ] {
            let _ = fs::remove_file(&path);
            std::os::unix::fs::symlink(&target, &path).unwrap();
            let err = scratch.loader().load().unwrap_err();
            assert!(matches!(&err, ConfigError::Read { path: at, .. } if at == &path), "{err:?}");
            assert!(err.to_string().contains(why), "{target:?}: {err}");
        }
    }

    #[test]
    fn workspace_hooks_need_trust() {
        let scratch = Scratch::new();
        let hooks =
            "[hooks]\ntimeout_ms = 5\npre_tool_use = [{ matcher = \"write_to_file\", command = \"./check.sh\" }]\n";
        scratch.write_workspace(hooks);
        let loaded = scratch.loader().load().unwrap();
        assert!(loaded.config.hooks.pre_tool_use.is_empty());
        assert!(loaded.warnings.iter().any(|w| w.contains("hooks.pre_tool_use")), "{:?}", loaded.warnings);
        scratch.trust_workspace("");
        let loaded = scratch.loader().load().unwrap();
        assert_eq!(loaded.config.hooks.pre_tool_use[0].command, "./check.sh");
        assert_eq!(loaded.config.hooks.pre_tool_use[0].matcher.as_deref(), Some("write_to_file"));
        assert_eq!(loaded.config.hooks.timeout_ms, 5);
    }
}
