//! Toolshed: a runtime that gives AI coding agents their tools.
//!
//! Every tool is a separately compiled plugin library (see `toolshed-plugin-api`). The runtime loads the
//! plugins in its plugin directories, runs each tool as an actor behind one coordinator actor, and runs
//! tool calls through Cline's pipeline: input checks, the tool's own validation, the approval policy,
//! then execution, with timeouts, cancellation and panic containment.
//!
//! ```no_run
//! use toolshed::{Runtime, TaskContext, ToolUse};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let runtime = Runtime::builder().plugin_dir("target/plugins").build()?;
//! let task = runtime.task(TaskContext::new("."));
//! let result = task.execute(ToolUse::new("1", "read_file", serde_json::json!({"path": "README.md"}))).await;
//! println!("{}", result.to_model_text());
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

mod clineignore;
pub mod config;
mod coordinator;
mod executor;
mod host;
mod loader;
mod messages;
mod policy;
mod pool;
mod process;
mod runtime;
mod spec;
mod task;
mod tool_actor;
mod tool_id;
mod workspace;

pub use config::{Config, ConfigError, ConfigLoader, LoadedConfig};
pub use coordinator::RegisterEvent;
pub use executor::{ResultStatus, ToolInput, ToolResult, ToolUse};
pub use loader::{load as load_plugin, LoadError, LoadedPlugin, PluginIdentity};
pub use policy::{
    Answer, ApprovalPrompt, Approver, BoxFuture, Decision, Policy, PolicyRequest, Reply, Source, TerminalApprover,
};
pub use runtime::{Runtime, RuntimeBuilder, RuntimeError, TaskHandle, ToolInfo};
pub use spec::{
    provider_tool_name, AgentConfig, McpServerInfo, McpToolInfo, PromptVariant, Provider, Spec, SpecContext, SpecParam,
    SpecRegistry, ToolSchemas, UnknownProvider, GENERIC, MCP_TOOL_SEPARATOR, MULTI_ROOT_HINT,
};
pub use task::{Mode, TaskContext, UiEvent};
pub use tool_id::{check_plugin_tool_name, NameError, ToolId};
pub use toolshed_plugin_api::Block;
