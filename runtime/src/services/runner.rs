//! How services that run tools reach back into the pipeline above them: the pipeline implements
//! [`ToolRunner`], and the services hold it (weakly: the runtime owns the services). This is the layering's one
//! upward call, made through a trait this layer defines, as a searcher defines the sink it writes to.

use crate::spec::Spec;
use crate::task::{TaskContext, TaskShared};
use crate::types::{BoxFuture, ToolResult, ToolUse};
use std::sync::{Arc, Weak};
use toolshed_plugin_api::ServiceError;

/// The pipeline, as the services that run tools see it.
pub(crate) trait ToolRunner: Send + Sync {
    /// Runs a tool use of a task through the whole pipeline, as a tool calling another tool does
    /// (`tool.call`): no focus chain around it.
    fn call(self: Arc<Self>, task: Arc<TaskShared>, tool_use: ToolUse) -> BoxFuture<ToolResult>;

    /// Runs a tool use as the host runs one of its model's ([`crate::TaskHandle::execute`]): a subagent run's
    /// calls.
    fn execute(self: Arc<Self>, task: Arc<TaskShared>, tool_use: ToolUse) -> BoxFuture<ToolResult>;

    /// Opens a task of this runtime (a subagent run).
    fn open_task(&self, context: TaskContext) -> Arc<TaskShared>;

    /// Cancels a task and kills its processes.
    fn cancel_task(&self, task: &TaskShared);

    /// The spec a loaded tool has for a model family.
    fn spec(&self, tool: &str, family: &str) -> Option<Spec>;

    /// Loads, in a one-shot runtime, the libraries declaring these tools that are not loaded yet (before
    /// their specs are read); nothing otherwise.
    fn load_declaring(self: Arc<Self>, names: Vec<String>) -> BoxFuture<()>;
}

/// The runner behind a weak link, or the error a call gets while the runtime shuts down.
pub(crate) fn upgrade(runner: &Weak<dyn ToolRunner>) -> Result<Arc<dyn ToolRunner>, ServiceError> {
    runner.upgrade().ok_or_else(|| crate::services::host::failed("the runtime is shutting down"))
}

/// A family of tool names a service answers for without a plugin of that name (`{server}__mcp__{tool}`,
/// `use_subagent_<name>`): when no loaded tool has a call's name, the resolve stage asks each route.
pub(crate) trait NameRoute: Send + Sync {
    /// Whether `name` may be this route's (cheap: a prefix, a separator).
    fn claims(&self, name: &str) -> bool;

    /// The tool the route's calls run as, which must be loaded for the route to apply (`None`: no such rule).
    fn target(&self) -> Option<&'static str>;

    /// What `tool_use` stands for, or the tool use back when it is not this route's after all.
    fn route(&self, task: &Arc<TaskShared>, tool_use: ToolUse) -> BoxFuture<Result<Routed, ToolUse>>;
}

/// Where a route sends a call.
pub(crate) enum Routed {
    /// Run this call instead; its result keeps the name called and, when given, takes this description.
    Call {
        /// The call to run.
        tool_use: ToolUse,
        /// The result header to show instead of the routed call's.
        description: Option<String>,
    },
    /// The name is the route's but the call cannot run; this is its result.
    Refused(ToolResult),
}
