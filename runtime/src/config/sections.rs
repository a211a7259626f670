//! The configuration's sections other than `[web]`: one struct per `[section]` table, with its defaults and
//! the typed accessors the runtime reads them through.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use toml::{Table, Value};

use super::shape;

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

/// `[serve]`: what `toolshed serve` lists and `--http`'s limits. A workspace may only lower the limits; the
/// profile is the user's alone.
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
    /// Which tools serve offers and how their errors read (`--profile` wins).
    pub profile: Profile,
    /// How long `tools/list` (and `toolshed schema`) waits for MCP servers still starting before listing
    /// what is connected, in milliseconds.
    pub mcp_startup_ms: u64,
    /// How long an HTTP session may stay without a message before it ends (its task cancelled, its
    /// processes killed), in milliseconds. A call running silently counts as no message (rmcp's keep-alive),
    /// so this is longer than `[timeouts] call_ms`.
    pub session_idle_ms: u64,
    /// How long a client's answer to `roots/list` is waited for before the session works in the current
    /// directory instead, in milliseconds.
    pub roots_timeout_ms: u64,
    /// HTTP sessions open at once; a new one past them is answered 503 until one ends (`DELETE`, or
    /// `session_idle_ms` without a message). Each holds a task until then, so a client opening sessions
    /// in a loop would otherwise grow the server without bound.
    pub max_sessions: u32,
}

impl Default for ServeConfig {
    fn default() -> Self {
        Self {
            max_connections: 64,
            auth_timeout_ms: 10_000,
            max_body_bytes: 4 * 1024 * 1024,
            accept_backoff_ms: 50,
            profile: Profile::Mcp,
            mcp_startup_ms: 5_000,
            session_idle_ms: 1_800_000,
            roots_timeout_ms: 5_000,
            max_sessions: 256,
        }
    }
}

/// Whom the tools are served to: a generic MCP client, or a host running Cline's agent loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// A generic MCP client (`toolshed serve`'s default): Cline's agent-loop tools are not offered, and
    /// errors leave out the reminder of Cline's XML tool-use format (the client calls with JSON).
    Mcp,
    /// Everything exactly as Cline offers it (a task's default, and `toolshed schema`'s).
    #[default]
    Cline,
}

/// The tools that only mean something inside Cline's own agent loop, which the `mcp` profile does not serve.
/// Each needs the loop's other half: a user in Cline's chat to answer or read (ask_followup_question,
/// plan_mode_respond, act_mode_respond, attempt_completion, generate_explanation), Cline's task and context
/// management (new_task, condense, summarize_task, focus_chain's checklist), or Cline's bug reporter
/// (report_bug). An MCP client is the agent loop itself: it talks to its user and keeps its own context.
/// use_subagents and the `use_subagent_*` tools are not here: they run a model loop of their own and are
/// offered only when the host has an agent driver (`SubagentHost::adjust_specs`), which a client can use.
pub const AGENT_LOOP_TOOLS: [&str; 10] = [
    "ask_followup_question",
    "attempt_completion",
    "plan_mode_respond",
    "act_mode_respond",
    "new_task",
    "condense",
    "summarize_task",
    "report_bug",
    "generate_explanation",
    "focus_chain",
];

impl Profile {
    /// Whether this profile serves the tool of this name.
    pub fn serves(self, tool: &str) -> bool {
        match self {
            Profile::Cline => true,
            Profile::Mcp => !AGENT_LOOP_TOOLS.contains(&tool),
        }
    }

    /// The error for a call of a tool this profile does not serve, whoever made it (an MCP client, a plugin
    /// through `tool.call`, a name route).
    pub fn refusal(self, tool: &str) -> String {
        format!(
            "Tool `{tool}` belongs to Cline's own agent loop and is not served with `--profile {}`; \
             run `toolshed serve --profile cline` (or set `[serve] profile = \"cline\"`) to serve it.",
            self.name()
        )
    }

    /// Whether errors carry Cline's XML tool-use reminder (only a model that writes XML tool uses needs it).
    pub fn tool_use_reminder(self) -> bool {
        match self {
            Profile::Cline => true,
            Profile::Mcp => false,
        }
    }

    /// The profile's name, as `--profile` and `[serve] profile` spell it.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Mcp => "mcp",
            Profile::Cline => "cline",
        }
    }
}

impl std::str::FromStr for Profile {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "mcp" => Ok(Profile::Mcp),
            "cline" => Ok(Profile::Cline),
            other => Err(format!("unknown profile `{other}`: expected `mcp` or `cline`")),
        }
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
    /// Where a command may write, enforced by the kernel (Landlock on Linux).
    pub sandbox: SandboxMode,
    /// Whether a command may open network sockets; `false` leaves it Unix sockets only, enforced by the
    /// kernel (seccomp, plus Landlock's TCP rules where the kernel has them).
    pub network: bool,
    /// A test switch: behave as if the kernel had no Landlock, so every command that needs it is refused.
    pub sandbox_assume_unsupported: bool,
    /// Variables of the host's environment no child (command, hook, browser) gets, besides the host's own
    /// secrets: names, or prefixes ending in `*`.
    pub withhold_env: Vec<String>,
    /// Variables children get although the rule withholds them (a `TOOLSHED_*` one, `[subagents]
    /// api_key_env`): exact names.
    pub pass_env: Vec<String>,
}

impl Default for CommandsConfig {
    fn default() -> Self {
        Self {
            permissions: None,
            default_timeout_ms: 30_000,
            long_timeout_ms: 300_000,
            keep_background: false,
            sandbox: SandboxMode::Off,
            network: true,
            sandbox_assume_unsupported: false,
            withhold_env: Vec::new(),
            pass_env: Vec::new(),
        }
    }
}

/// `[commands] sandbox`: what a command may write, written in kebab case (`sandbox = "workspace-write"`).
///
/// The variants are ordered from loosest to strictest, so `a < b` means `b` tightens `a`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// No sandbox: the command has the user's full rights.
    Off,
    /// Reads anywhere; writes only inside the workspace roots and the temporary directories.
    WorkspaceWrite,
    /// Reads anywhere; writes nowhere but the terminal and null devices.
    ReadOnly,
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
    /// Commands that run inside the kernel sandbox (`[commands] sandbox` is not `off`) run without asking,
    /// unless the model itself marked them as needing approval (codex's `on-request`).
    pub auto_approve_sandboxed: bool,
    /// Per-tool rules, by tool name.
    pub tools: BTreeMap<String, Rule>,
}

impl Default for ApprovalConfig {
    fn default() -> Self {
        Self {
            auto_approve_safe: true,
            auto_approve_all: false,
            yolo: false,
            auto_approve_sandboxed: false,
            tools: BTreeMap::new(),
        }
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

/// `[plugins] lease_poll_ms`'s default: a writer that opens a leased library waits about this long while it moves
/// to a private copy; 0 turns leasing off (every writable library is copied).
pub(crate) const DEFAULT_LEASE_POLL_MS: u64 = 100;

/// `[plugins] worker_spin_us`'s default: longer than a sequential caller's turnaround when its core has to be
/// woken on a VM (measured 20–30 µs on 2 × EPYC vCPUs; see `actors::pool`).
pub(crate) const DEFAULT_WORKER_SPIN_US: u64 = 200;
/// The most `[plugins] worker_spin_us` may be: past this, a worker would burn a core's time between calls
/// that no wake-up costs.
pub const MAX_WORKER_SPIN_US: u64 = 10_000;

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
    /// How often, in milliseconds, the read leases of libraries mapped in place are checked: a writable
    /// library is loaded with no copy under a lease, and a writer that opens its file waits up to this long
    /// while the library moves to a private copy. 0 copies every writable library when it loads instead.
    pub lease_poll_ms: u64,
    /// The CPU priority of `bulk` tools' calls (searches, walks, outlines) and of every thread they start, so
    /// short calls never wait behind them for a core.
    pub bulk_priority: BulkPriority,
    /// How long, in microseconds, a worker thread that has just finished a call looks for its next one
    /// before it parks (at most [`MAX_WORKER_SPIN_US`]; one worker per tool at a time; 0: no spin of its own). A parked worker costs the next
    /// call a wake-up, tens of µs on a VM whose idle cores halt; the spin costs at most this much CPU per call.
    pub worker_spin_us: u64,
    /// Where plugins outside the shipped set run: `in-process` (the default: fastest, but a crash of the
    /// plugin is a crash of the host) or `process` (each library in a child process of its own).
    pub isolation: PluginIsolation,
    /// Per plugin, by the library's name (its file name without `lib` and the extension, as
    /// `fixture_crash` for `libfixture_crash.so`): where it runs, whatever `isolation` says.
    pub isolation_per_plugin: BTreeMap<String, PluginIsolation>,
    /// The limits and the crash handling of the child processes of `process` plugins.
    pub process: ProcessLimits,
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
            lease_poll_ms: DEFAULT_LEASE_POLL_MS,
            bulk_priority: BulkPriority::default(),
            worker_spin_us: DEFAULT_WORKER_SPIN_US,
            isolation: PluginIsolation::default(),
            isolation_per_plugin: BTreeMap::new(),
            process: ProcessLimits::default(),
            config: BTreeMap::new(),
        }
    }
}

/// `[plugins] isolation`: where a plugin library runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PluginIsolation {
    /// Mapped into the host: a call costs a function call, and a crash of the plugin ends the host.
    #[default]
    InProcess,
    /// In a child process (the `toolshed` binary in a hidden mode) that speaks to the host over a socket: a
    /// segfault, an abort, an `exit` or a hang ends the child, the calls in flight get a tool error, and the
    /// child restarts for the next call.
    Process,
}

/// `[plugins.process]`: the child processes of plugins that run out of process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProcessLimits {
    /// The child's address-space limit (`RLIMIT_AS`), in MiB; 0 for none.
    pub memory_mb: u64,
    /// The child's CPU-time limit over its whole life (`RLIMIT_CPU`, rounded up to whole seconds), in
    /// milliseconds; 0 for none. A child that reaches it is killed and restarts like any crash.
    pub cpu_ms: u64,
    /// The wait before the first restart after a crash, in milliseconds; each further crash within
    /// `quarantine_window_ms` doubles it, up to `restart_backoff_max_ms`.
    pub restart_backoff_ms: u64,
    /// The longest wait before a restart, in milliseconds.
    pub restart_backoff_max_ms: u64,
    /// This many crashes within `quarantine_window_ms` quarantine the plugin: its calls fail at once until
    /// its library changes (a `quarantined` plugin event says so).
    pub quarantine_after: u32,
    /// The window `quarantine_after` counts crashes in, in milliseconds.
    pub quarantine_window_ms: u64,
    /// How often a call waiting for the child looks whether it was cancelled, in milliseconds.
    pub poll_ms: u64,
    /// How long a cancelled call's child may take to answer before it is killed (and restarted), in
    /// milliseconds: a plugin that ignores cancellation cannot keep a worker forever. It also bounds how long a
    /// call waits for a dying child's death to be reported and counted: three times this, plus this or a
    /// second, whichever is longer.
    pub kill_grace_ms: u64,
    /// How long a child may take to load its library and build its handlers, in milliseconds.
    pub start_timeout_ms: u64,
    /// How long the host waits for a child to take a message it stopped reading (its socket full) before it
    /// kills it, in milliseconds: a child that stops reading cannot hold a host thread.
    pub stall_ms: u64,
    /// The largest message (a call, an answer, a host-service request) either side accepts, in bytes.
    pub max_message_bytes: u64,
}

impl Default for ProcessLimits {
    fn default() -> Self {
        Self {
            memory_mb: 4096,
            cpu_ms: 0,
            restart_backoff_ms: 100,
            restart_backoff_max_ms: 10_000,
            quarantine_after: 5,
            quarantine_window_ms: 60_000,
            poll_ms: 20,
            kill_grace_ms: 250,
            start_timeout_ms: 10_000,
            stall_ms: 10_000,
            max_message_bytes: 256 * 1024 * 1024,
        }
    }
}

/// `[plugins] bulk_priority`: the CPU priority of a bulk tool's worker threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BulkPriority {
    /// The process's own.
    Normal,
    /// Nice 19: when a normal thread wants the same core, it gets ~1/70th of the share the normal one gets.
    Low,
    /// `SCHED_IDLE`: a core only when no normal thread wants it, and a normal thread that wakes takes the core
    /// at once. Nice values and this policy weigh threads within the process's scheduling group (autogroup:
    /// its session), so other programs still share the machine with the runtime as a whole.
    #[default]
    Idle,
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

/// `[browser]`: browser_action's headless Chromium (issue 26). Every wait is a key, so tests run it fast; Cline's
/// values are the defaults. A workspace may only shorten the waits and pick the screenshot format: which
/// program runs, with which arguments, where its profile lives and which browser it attaches to are the user's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BrowserConfig {
    /// The Chrome or Chromium to start; else `CHROME_PATH`, then `google-chrome-stable`, `google-chrome`,
    /// `chromium-browser` and `chromium` on `PATH` (Cline's discovery on Linux), then `/usr/bin/chromium`.
    pub executable: Option<PathBuf>,
    /// A running Chrome's DevTools endpoint (`http://localhost:9222` or a `ws://` URL): launch opens a tab
    /// there instead of starting a browser (Cline's remote browser), and close closes only that tab.
    pub remote_url: Option<String>,
    /// Extra command-line arguments for the started browser (Cline's `customArgs`).
    pub args: Vec<String>,
    /// Where each session's fresh profile directory is made; the system's temporary directory when unset.
    pub profile_dir: Option<PathBuf>,
    /// The viewport width in CSS pixels (Cline's 900), 16 to 4096.
    pub viewport_width: u32,
    /// The viewport height in CSS pixels (Cline's 600), 16 to 4096.
    pub viewport_height: u32,
    /// `webp` (Cline's) or `png`; the `glm` and `devstral` families always get PNG (their servers cannot
    /// read WebP, as Cline's `modelDoesntSupportWebp` says).
    pub screenshot_format: String,
    /// How long the browser may take to start and offer its DevTools endpoint.
    pub launch_timeout_ms: u64,
    /// How long a navigation (launch, or a click that starts one) is waited for: Cline's 7 s. A page that is
    /// still loading then is shown as it is, without an error, as Cline does.
    pub navigation_timeout_ms: u64,
    /// The longest wait for the page's HTML to stop changing after a navigation (Cline's 5 s).
    pub stable_timeout_ms: u64,
    /// How often the HTML's size is compared while waiting for it to settle (Cline's 500 ms).
    pub stable_interval_ms: u64,
    /// After an action, how long the console must be quiet before the screenshot (Cline's 500 ms).
    pub log_quiet_ms: u64,
    /// The longest wait for a quiet console (Cline's 3 s).
    pub log_wait_ms: u64,
    /// After a click, how long requests are watched for to tell whether it started a navigation (100 ms).
    pub network_probe_ms: u64,
    /// The pause after a scroll, for the page to draw (Cline's 300 ms).
    pub scroll_delay_ms: u64,
    /// The longest any one DevTools command may take (a screenshot, a click) before the action fails.
    pub command_timeout_ms: u64,
}

impl Default for BrowserConfig {
    fn default() -> Self {
        Self {
            executable: None,
            remote_url: None,
            args: Vec::new(),
            profile_dir: None,
            viewport_width: 900,
            viewport_height: 600,
            screenshot_format: "webp".to_owned(),
            launch_timeout_ms: 20_000,
            navigation_timeout_ms: 7_000,
            stable_timeout_ms: 5_000,
            stable_interval_ms: 500,
            log_quiet_ms: 500,
            log_wait_ms: 3_000,
            network_probe_ms: 100,
            scroll_delay_ms: 300,
            command_timeout_ms: 30_000,
        }
    }
}
