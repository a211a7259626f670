//! Toolshed: a runtime that gives AI coding agents their tools.
//!
//! Every tool is a separately compiled plugin library (see `toolshed-plugin-api`). The runtime loads the
//! plugins in its plugin directories, runs each tool as an actor behind one coordinator actor, and runs
//! tool calls through Cline's pipeline: input checks, the tool's own validation, the approval policy,
//! then execution, with timeouts, cancellation and panic containment.
//!
//! Embedding: build a [`Runtime`] over plugin directories, open a task, and run the model's tool uses. This
//! example runs as a doc test against the built plugins (`TOOLSHED_TEST_PLUGINS`, else
//! `target/plugins-debug`, which `cargo xtask test` fills first):
//!
//! ```
//! use toolshed::{HookOutcome, Mode, Provider, ResultStatus, Runtime, TaskContext, ToolUse};
//! use toolshed::stream::XmlEvent;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let plugins = std::env::var("TOOLSHED_TEST_PLUGINS")
//! #     .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../target/plugins-debug").to_owned());
//! let workspace = tempfile::tempdir()?;
//! std::fs::write(workspace.path().join("README.md"), "# Hello\n")?;
//! let runtime = Runtime::builder()
//!     .plugin_dir(&plugins)
//!     // A PreToolUse hook: refuse anything under secrets/.
//!     .pre_tool_use(|call| async move {
//!         match call.tool_input["path"].as_str() {
//!             Some(path) if path.starts_with("secrets/") => HookOutcome::deny("secrets stay private"),
//!             _ => HookOutcome::pass(),
//!         }
//!     })
//!     .build()?;
//! let task = runtime.task(TaskContext::new(workspace.path()).with_model_family("claude"));
//! let schemas = task.tools(Provider::Anthropic); // the request's `tools`
//! # assert!(schemas.to_string().contains("read_file"));
//!
//! // The host's futures run on any executor; here a plain current-thread one.
//! let host = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! let result = host.block_on(task.execute(ToolUse::new("toolu_1", "read_file", serde_json::json!({"path": "README.md"}))));
//! assert_eq!(result.status, ResultStatus::Success);
//! assert!(result.to_model_text().starts_with("[read_file for 'README.md'] Result:"));
//! let _block = result.to_anthropic(); // {"type": "tool_result", "tool_use_id": "toolu_1", "content": [...]}
//!
//! // A text-mode model: stream its message through the XML parser, run the complete tool uses as one message.
//! let mut parser = task.xml_parser();
//! let mut uses = Vec::new();
//! for chunk in ["Checking.\n<read_file><path>secr", "ets/key</path></read_file>"] {
//!     for event in parser.push(chunk) {
//!         match event {
//!             XmlEvent::Partial(block) => host.block_on(task.partial_use(&block)),
//!             XmlEvent::ToolUse(tool_use) => uses.push(tool_use),
//!             XmlEvent::Text(_) => {}
//!         }
//!     }
//! }
//! let turn = host.block_on(task.execute_message(uses));
//! assert_eq!(turn.results[0].status, ResultStatus::Denied);
//! assert!(turn.to_model_text().contains("The user denied this operation."));
//!
//! task.set_mode(Mode::Plan); // plan mode refuses file modifications from now on
//! # Ok(()) }
//! ```
//!
//! The host hooks in at three points: an [`Approver`] answers approval questions (with feedback the model
//! reads), PreToolUse/PostToolUse hooks ([`RuntimeBuilder::pre_tool_use`], `[hooks]` in the configuration)
//! see every call, and [`TurnResult::mistake_limit`] tells it when to ask its user for guidance.
#![deny(missing_docs)]

mod actors;
mod clineignore;
pub mod config;
mod driver;
/// Entry points for the fuzz targets in `fuzz-targets/` (issue 16); not a supported API.
#[doc(hidden)]
pub mod fuzzing;
mod messages;
mod paths;
mod pipeline;
mod registry;
mod result_limit;
mod runtime;
// The MCP server is the `serve` feature: an embedder that serves no MCP compiles no server.
#[cfg(feature = "serve")]
pub mod serve;
mod services;
pub mod shown;
mod small_file;
mod spec;
pub mod stream;
mod task;
mod types;
mod workspace;

/// Child-process jobs: where the runtime finds the `toolshed` binary that runs them.
mod child_process;
mod scratch;
/// What every child process of the runtime starts with, and the keeper that ends them with the host.
pub mod children {
    pub use crate::child_process::clean::hide as hide_from_sandbox;
    pub use crate::child_process::clean::EnvRule;
    pub use crate::child_process::keeper::{cgroup, running as keeper};
}
pub use services::isolate;

pub use config::{Config, ConfigError, ConfigLoader, LoadedConfig};
#[cfg(feature = "openai")]
pub use driver::OpenAiDriver;
pub use driver::{AgentDriver, AgentMessage, AgentReply, AgentRequest, AgentToolCall, AgentUsage, DriverError};
pub use pipeline::hooks::{HookDecision, HookEvent, HookInput, HookMatcherError, HookOutcome};
pub use pipeline::policy::{
    Answer, ApprovalPrompt, Approver, Decision, Policy, PolicyRequest, Reply, Source, TerminalApprover,
};
pub use registry::coordinator::RegisterEvent;
pub use registry::loader::{load as load_plugin, LoadError, LoadedPlugin, PluginIdentity};
pub use registry::tool_id::{check_plugin_tool_name, NameError, ToolId};
pub use registry::watch::{PluginEvent, PluginEvents, ReloadStats, WatchError};
pub use runtime::turn::{interrupted, MistakeLimit, TurnResult};
pub use runtime::{Runtime, RuntimeBuilder, RuntimeError, TaskHandle, ToolInfo};
#[cfg(feature = "browser")]
pub use services::browser::{CHROMIUM_FLAGS, CHROMIUM_USER_AGENT};
pub use services::interaction::{HostAction, Interaction, Question, UserReply};
pub use services::process::kill_descendants;
pub use services::subagents::SUBAGENT_SYSTEM_SUFFIX;
pub use spec::{
    cline_families, cline_variant, in_variant_order, is_cline_tool, provider_tool_name, AgentConfig, McpServerInfo,
    McpToolInfo, PromptVariant, Provider, Spec, SpecContext, SpecParam, SpecRegistry, ToolSchemas, UnknownProvider,
    CLINE_TOOL_IDS, GENERIC, MCP_TOOL_SEPARATOR, MULTI_ROOT_HINT,
};
pub use task::TaskContext;
/// The request types of the host actions an [`Interaction`] carries out.
pub use toolshed_plugin_api::services::{AttachedImage, BugReport, ExplainRequest};
pub use toolshed_plugin_api::Block;
pub use types::{BoxFuture, Mode, PartialToolUse, ResultStatus, ToolInput, ToolResult, ToolUse, UiEvent};
