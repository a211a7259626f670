//! The call pipeline: one tool use from the model to the result it reads, in stages, as Cline orders them:
//!
//! 1. **resolve** ([`resolve`]): the name to its tool's route, through the services' name routes for names no
//!    plugin has (`{server}__mcp__{tool}`, `use_subagent_<name>`);
//! 2. **validate** ([`validate`]): the input parsed once and checked (an object, the declared parameter aliases,
//!    PLAN mode, then the required parameters unless the tool checks its own);
//! 3. **prepare**: the tool's own validation, on its actor, answering `proceed`, an approval request or an error;
//! 4. **authorize** ([`authorize`]): the approval policy, the PreToolUse hooks and, when either says so, the user;
//! 5. **execute**: the tool's work; when nobody has to be asked it runs in the same job as `prepare`;
//! 6. **finish** ([`finish`]): the answer as a result, mistakes and loop detection, the PostToolUse hooks.
//!
//! Every failure on the way is a tool result, never an error of the host's. The [`Engine`] holds what every call
//! shares; it is the [`ToolRunner`] the services that run tools call back into.

mod authorize;
mod finish;
pub(crate) mod hooks;
mod listing;
pub(crate) mod policy;
mod resolve;
mod validate;

pub(crate) use validate::{describe, is_missing, json_kind, signature};

use crate::actors::tool_actor::{AnswerText, CallJson, Phase, PhaseAnswer, PhaseError, RunPhase, ThenExecute};
use crate::config::Profile;
use crate::messages;
use crate::registry::coordinator::{Route, Routing, RoutingCell};
use crate::registry::on_demand::OnDemand;
use crate::services::runner::ToolRunner;
use crate::services::HostServices;
use crate::spec::{self, Provider, Spec, SpecContext, ToolSchemas};
use crate::task::{CallCancel, CancelToken, TaskContext, TaskEnd, TaskShared};
use crate::types::{BoxFuture, EventSink, ResultStatus, ToolInput, ToolResult, ToolUse};
use hooks::{HookDecision, HookEvent, HookInput, Hooks, Verdict};
use policy::{Approver, Policy};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;
use toolshed_plugin_api::{Block, Outcome, Prepared};

/// Timeouts the pipeline applies.
#[derive(Debug, Clone)]
pub(crate) struct Timeouts {
    pub prepare: Duration,
    pub call: Duration,
    pub ask: Option<Duration>,
    pub cancel_grace: Duration,
    /// `[timeouts] commit_ms`: how long a call past its commit gate is waited for after a timeout.
    pub commit: Duration,
}

/// What the engine is built from, besides the services.
pub(crate) struct EngineParts {
    pub routing: RoutingCell,
    pub policy: Policy,
    pub approver: Option<Arc<dyn Approver>>,
    pub timeouts: Timeouts,
    pub plugin_timeouts: BTreeMap<String, u64>,
    pub events: Option<EventSink>,
    pub hooks: Hooks,
    pub max_result_bytes: usize,
    pub mcp_list_wait: Duration,
    /// A one-shot runtime's libraries not loaded yet.
    pub on_demand: Option<Arc<OnDemand>>,
}

/// What every call of every task shares.
pub(crate) struct Engine {
    routing: RoutingCell,
    pub policy: Policy,
    pub approver: Option<Arc<dyn Approver>>,
    pub timeouts: Timeouts,
    /// Timeouts plugins honour themselves, handed to them in every call's task info.
    plugin_timeouts: BTreeMap<String, u64>,
    events: Option<EventSink>,
    pub services: HostServices,
    /// PreToolUse and PostToolUse hooks: the host's callbacks, then the configured commands.
    hooks: Hooks,
    /// `[limits] max_result_bytes`: the most text any tool result carries.
    max_result_bytes: usize,
    /// What a task's end does: its processes are killed.
    task_end: TaskEnd,
    /// `[serve] mcp_startup_ms`: how long a listing waits for MCP servers still starting.
    mcp_list_wait: Duration,
    /// A one-shot runtime's libraries not loaded yet.
    on_demand: Option<Arc<OnDemand>>,
}

impl Engine {
    /// Builds the engine and its services; `services` gets the engine as the runner of its tool-running
    /// services (a weak link, so the runtime still drops).
    pub fn new(parts: EngineParts, services: impl FnOnce(Weak<dyn ToolRunner>) -> HostServices) -> Arc<Self> {
        Arc::new_cyclic(|engine: &Weak<Engine>| {
            let runner: Weak<dyn ToolRunner> = engine.clone();
            let services = services(runner);
            let (processes, browser) = (Arc::clone(&services.processes), Arc::clone(&services.browser));
            Engine {
                routing: parts.routing,
                policy: parts.policy,
                approver: parts.approver,
                timeouts: parts.timeouts,
                plugin_timeouts: parts.plugin_timeouts,
                events: parts.events,
                services,
                hooks: parts.hooks,
                max_result_bytes: parts.max_result_bytes,
                mcp_list_wait: parts.mcp_list_wait,
                task_end: Arc::new(move |task_id: &str| {
                    processes.kill_task(task_id);
                    browser.close_task(task_id);
                }),
                on_demand: parts.on_demand,
            }
        })
    }

    /// The routing snapshot now.
    pub fn snapshot(&self) -> Arc<Routing> {
        match self.routing.read() {
            Ok(cell) => Arc::clone(&cell),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    pub fn route(&self, name: &str) -> Option<Route> {
        // Read under the lock: no copy of the snapshot's `Arc` for one lookup on every call.
        let routing = self.routing.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        routing.routes.get(name).cloned()
    }

    pub fn tool_names(&self) -> Vec<String> {
        self.snapshot().routes.keys().cloned().collect()
    }

    /// In a one-shot runtime, loads the library that declares `name` when no loaded tool has it; whether a
    /// library was loaded (look again).
    pub async fn load_declaring(&self, name: &str) -> bool {
        match &self.on_demand {
            Some(on_demand) if self.route(name).is_none() => on_demand.load_declaring(name).await,
            _ => false,
        }
    }

    /// In a one-shot runtime, loads every library not loaded yet; whether there were any.
    pub async fn load_everything(&self) -> bool {
        match &self.on_demand {
            Some(on_demand) => on_demand.load_everything().await,
            None => false,
        }
    }

    /// Opens a task.
    pub fn open_task(&self, context: TaskContext) -> Arc<TaskShared> {
        let mut task = TaskShared::new(
            context,
            self.plugin_timeouts.clone(),
            self.events.clone(),
            Some(Arc::clone(&self.task_end)),
        );
        task.browser_viewport = self.services.browser.viewport();
        Arc::new(task)
    }

    /// Every loaded tool by name with its spec for `family`, those whose requirements `context` meets and
    /// that its profile serves, resolved for it; then, when the host calls natively, the connected MCP
    /// servers' tools as they are now; converted for `provider`. One snapshot, so a reload never mixes
    /// generations.
    pub fn schema(&self, provider: Provider, family: &str, context: &SpecContext) -> ToolSchemas {
        // Cline offers use_mcp_tool and access_mcp_resource when it has an MCP hub (`context.mcpHub`): here,
        // when `[mcp] settings` configured one.
        let mut context = context.clone();
        if self.services.mcp.is_some() {
            context.flags.insert("mcp".to_owned());
        }
        // Cline offers its web tools when the user turned them on (an MCP listing has them whatever the
        // setting, their gate answering a call), and task_progress (through the focus_chain placeholder its
        // parameters depend on) when the focus chain is on.
        if self.services.web_tools || context.every_tool {
            context.flags.insert("web_tools".to_owned());
        }
        if self.services.interaction.tasks.focus_chain {
            context.flags.insert("focus_chain".to_owned());
        }
        let context = &context;
        let snapshot = self.snapshot();
        let mut metas: Vec<_> = snapshot.routes.values().map(|route| &route.meta).collect();
        metas.sort_by(|a, b| a.name.cmp(&b.name));
        let mut specs: Vec<Spec> = metas
            .into_iter()
            .filter_map(|meta| spec::family_spec(&meta.specs, family).map(|tool_spec| (meta, tool_spec)))
            .map(|(meta, tool_spec)| Spec::for_route(&meta.name, tool_spec.clone()))
            .filter(|spec| context.meets_all(&spec.context_requirements) && context.profile.serves(&spec.name))
            .map(|spec| spec.for_context(context))
            .collect();
        // A Cline family offers what its prompt variant lists, in its order, as Cline would; the MCP profile,
        // an MCP listing and families Cline does not have keep every tool in name order.
        let variant = spec::cline_variant(family).filter(|_| context.profile == Profile::Cline && !context.every_tool);
        if let Some(variant) = &variant {
            specs = spec::in_variant_order(specs, variant);
        }
        self.services.subagents.adjust_specs(&mut specs, context, variant.is_some());
        // Native tool calling leaves out tools without a description (the focus_chain placeholder), as Cline's
        // `getNativeTools` does; the XML section skips them itself.
        if provider != Provider::Xml {
            specs.retain(|spec| !spec.description.trim().is_empty());
        }
        if let (Some(hub), true) = (&self.services.mcp, context.native_tool_calls && provider != Provider::Xml) {
            let taken = snapshot.routes.keys().chain(specs.iter().map(|spec| &spec.name)).cloned().collect();
            specs.extend(listing::mcp_specs(hub.server_infos(), &taken, context));
        }
        provider.render(&specs)
    }

    /// Waits until no MCP server is still starting, at most `[serve] mcp_startup_ms`, so a listing made next
    /// has the servers' tools; at once without MCP settings.
    pub async fn mcp_listable(&self) {
        if let Some(hub) = &self.services.mcp {
            let _ = tokio::time::timeout(self.mcp_list_wait, hub.settled()).await;
        }
    }

    /// The result header Cline shows for a tool use (`[read_file for 'a.rs']`).
    pub fn description(&self, tool_use: &ToolUse) -> String {
        let display = self.route(&tool_use.name).and_then(|route| route.meta.display.clone());
        let input = match &tool_use.input {
            ToolInput::Json(value) => value.clone(),
            ToolInput::Text(text) => serde_json::from_str(text).unwrap_or(Value::Null),
        };
        describe(display.as_deref(), &tool_use.name, &input)
    }

    /// Runs a tool use as the host runs its model's: the focus chain's `task_progress` leaves the input before
    /// any check and is stored, with Cline's reminders added to the result, once the call is done.
    pub fn execute_for_host<'a>(self: &'a Arc<Self>, task: &'a Arc<TaskShared>, tool_use: ToolUse) -> ForHost<'a> {
        ForHost { engine: self, task, state: ForHostState::Start(tool_use), started: false }
    }

    /// What the host's call does once its result is in: the focus chain's bookkeeping and reminders, and the
    /// profile's wording.
    fn for_host(&self, task: &TaskShared, progress: Option<String>, result: &mut ToolResult) {
        crate::services::interaction::after_call(&self.services.interaction, task, progress, result);
        if !task.profile.tool_use_reminder() {
            for block in &mut result.blocks {
                if let Block::Text { text } = block
                    && let Some(plain) = messages::without_tool_use_reminder(text)
                {
                    *text = plain;
                }
            }
        }
    }

    /// Runs one tool use for a task through every stage, then Cline's loop detection on it.
    pub async fn execute(self: &Arc<Self>, task: &Arc<TaskShared>, mut tool_use: ToolUse) -> ToolResult {
        match self.execute_inline(task, &mut tool_use) {
            Ok(result) => result,
            // Boxed: the staged path's state (hooks, approvals, actor messages) is kilobytes, which every call's
            // future would otherwise carry, and move, from caller to caller.
            Err(found) => Box::pin(self.execute_staged(task, tool_use, found)).await,
        }
    }

    /// The common case, on this thread and without a future: a loaded `inline` tool whose `prepare` always
    /// proceeds, with no hooks to run, is executed at once. Anything else is handed back, the tool use as it
    /// came, with the route found for it (a streamed call's pinned route is taken when found).
    ///
    /// The tool use is borrowed where it lies, and the result is the only thing returned: on this path, moves
    /// of a tool use and of a result through each layer were a tenth of a call's time.
    fn execute_inline(&self, task: &Arc<TaskShared>, tool_use: &mut ToolUse) -> Result<ToolResult, Option<Route>> {
        if task.cancel.is_cancelled() {
            return Err(None);
        }
        let Some(route) = resolve::found(self, task, tool_use) else {
            return Err(None);
        };
        // Borrowed from the route, which outlives the call here: no count taken and given back on every call.
        let inline = match &route.inline {
            Some(inline)
                if route.meta.proceeds
                    && !self.hooks.has(HookEvent::PreToolUse)
                    && !self.hooks.has(HookEvent::PostToolUse) =>
            {
                inline
            }
            _ => return Err(Some(route)),
        };
        if let Err(refused) = resolve::admit(task, &route, tool_use) {
            return Ok(refused);
        }
        self.close_browser_for(task, &route);
        let valid = match validate::validate(&route, task, tool_use) {
            Ok(valid) => valid,
            Err(invalid) => {
                // An input that did not pass still counts towards a loop when it was readable.
                let (mut result, signature) = Self::refused(task, *invalid);
                if let Some(signature) = signature {
                    finish::detect_loop(task, &mut result, signature);
                }
                return Ok(result);
            }
        };
        let call =
            CallJson::new(&tool_use.name, &tool_use.id, &valid.input, task, route.meta.task_by_ref, CallCancel::Never);
        let executed =
            PhaseAnswer::executed(inline.run(Phase::Execute, (&call, false), task, &self.services.router, None));
        let mut result = self.answer(task, &route, tool_use, valid.description, executed);
        finish::detect_loop(task, &mut result, valid.signature);
        Ok(result)
    }

    /// Every stage, for a call [`Engine::execute_inline`] did not take; `found` is the route it found.
    async fn execute_staged(
        self: &Arc<Self>,
        task: &Arc<TaskShared>,
        tool_use: ToolUse,
        found: Option<Route>,
    ) -> ToolResult {
        if task.cancel.is_cancelled() {
            let description = format!("[{}]", tool_use.name);
            let text = messages::tool_error(&format!("Error executing {}: the task was cancelled.", tool_use.name));
            return ToolResult::plain(&tool_use, description, ResultStatus::Error, text);
        }
        let resolved = resolve::resolve(self, task, tool_use, found).await;
        let mut result = match resolved.outcome {
            Ok((route, tool_use)) => {
                // The call's own cancellation: cancelled when this future is dropped before it finishes (an
                // MCP client's `notifications/cancelled`, a client gone), so the plugin and the host services
                // it waits in stop for this call only, as they do for a task's cancellation.
                let cancel = CancelOnDrop::for_route(&route);
                let token = cancel.token();
                let (mut result, signature) = self.run(task, route, tool_use, &token).await;
                cancel.finished();
                if let Some(signature) = signature {
                    finish::detect_loop(task, &mut result, signature);
                }
                result
            }
            Err(result) => result,
        };
        if let Some(rename) = resolved.rename {
            result.name = rename.name;
            if let Some(description) = rename.description {
                result.description = description;
            }
        }
        result
    }

    /// Cline's executor closes the browser before any other tool runs (the model was told to close it first; a
    /// later browser action then reads that it is no longer launched).
    fn close_browser_for(&self, task: &TaskShared, route: &Route) {
        if route.meta.primary != crate::services::browser::BROWSER_TOOL {
            self.services.browser.close_task(&task.info.task_id);
        }
    }

    /// The result of a call whose input failed validation, and its loop-detection signature.
    fn refused(task: &TaskShared, invalid: validate::Invalid) -> (ToolResult, Option<u128>) {
        let result = if invalid.mistake { finish::mistake(task, invalid.result) } else { invalid.result };
        (result, invalid.signature)
    }

    /// `execute`'s answer (or why there is none) as the result the model reads.
    fn answer(
        &self,
        task: &TaskShared,
        route: &Route,
        tool_use: &mut ToolUse,
        description: String,
        executed: Result<AnswerText<'_>, PhaseError>,
    ) -> ToolResult {
        let outcome = match executed {
            Ok(text) => crate::result_limit::parse_outcome(&text, self.max_result_bytes).unwrap_or_else(|e| {
                Outcome::Error(finish::boundary_error(
                    &tool_use.name,
                    &format!("unreadable answer from execute: {}", toolshed_plugin_api::sdk::json_error(&e)),
                ))
            }),
            Err(error) => Outcome::Error(crate::result_limit::cap_error(
                finish::phase_error(route, &error),
                self.max_result_bytes,
            )),
        };
        match outcome {
            // A result reporting the tool's own failure (MCP's `isError`) is read as a result, but ends as a
            // tool error; like Cline, it is not the model's mistake (Cline reset the count before the call).
            Outcome::Success { blocks, is_error } => {
                task.mistakes.store(0, Ordering::Relaxed);
                ToolResult {
                    // Moved, not copied: the tool use is not read after this.
                    tool_use_id: std::mem::take(&mut tool_use.id),
                    name: std::mem::take(&mut tool_use.name),
                    description,
                    blocks,
                    status: if is_error { ResultStatus::Error } else { ResultStatus::Success },
                    feedback: None,
                    note: None,
                    context_before: Vec::new(),
                    context_after: Vec::new(),
                }
            }
            Outcome::Error(error) => finish::tool_error(task, tool_use, description, error),
            Outcome::Denied => finish::denied(tool_use, description, None),
        }
    }

    /// The stages after resolve; also returns the loop-detection signature when the call reached its tool.
    async fn run(
        self: &Arc<Self>,
        task: &Arc<TaskShared>,
        route: Route,
        mut tool_use: ToolUse,
        cancel: &Arc<CancelToken>,
    ) -> (ToolResult, Option<u128>) {
        self.close_browser_for(task, &route);
        let valid = match validate::validate(&route, task, &mut tool_use) {
            Ok(valid) => valid,
            Err(invalid) => return Self::refused(task, *invalid),
        };
        let validate::Valid { input, description, signature } = valid;
        let pre_hooks = self.hooks.has(HookEvent::PreToolUse);
        let hook_input = |event: HookEvent| HookInput {
            hook_event_name: event,
            session_id: task.info.task_id.clone(),
            task_id: task.info.task_id.clone(),
            cwd: task.info.cwd.clone(),
            tool_name: tool_use.name.clone(),
            tool_input: input.clone(),
            tool_use_id: tool_use.id.clone(),
            tool_response: None,
        };
        let pre_input = pre_hooks.then(|| hook_input(HookEvent::PreToolUse));
        let post_input = self.hooks.has(HookEvent::PostToolUse).then(|| hook_input(HookEvent::PostToolUse));

        // Prepare, and when nobody has to be asked, execute in the same job: one round trip instead of two.
        // Made once a decision may be needed: a call whose `prepare` is skipped and has no hooks needs none.
        let authorizer = std::sync::OnceLock::new();
        let authorizer = || {
            authorizer.get_or_init(|| Arc::new(authorize::Authorizer::new(self, task, &route, &tool_use.name, &input)))
        };
        let by_ref = route.meta.task_by_ref;
        let call = Arc::new(CallJson::new(
            &tool_use.name,
            &tool_use.id,
            &input,
            task,
            by_ref,
            CallCancel::Own(Arc::clone(cancel)),
        ));
        let first = match (route.meta.proceeds, pre_hooks) {
            // `prepare` would answer `Proceed`, which needs nobody: straight to `execute`, one call instead of two.
            (true, false) => {
                self.run_phase(&route, Phase::Execute, (&call, false), task, self.timeouts.call, None).await
            }
            // PreToolUse hooks still see the call between the two phases.
            (true, true) => Ok(PhaseAnswer::Prepared(Box::new(Ok(Prepared::Proceed)))),
            (false, _) => {
                // PreToolUse hooks run between prepare and execute, so the two cannot share a job when there
                // are any.
                let then =
                    (!pre_hooks).then(|| ThenExecute { approve: authorizer().clone(), timeout: self.timeouts.call });
                self.run_phase(&route, Phase::Prepare, (&call, false), task, self.timeouts.prepare, then).await
            }
        };
        let mut feedback = None;
        let mut verdict = Verdict::default();
        let executed = match first {
            Ok(PhaseAnswer::Executed(text) | PhaseAnswer::Text(text)) => Ok(text),
            Ok(PhaseAnswer::Prepared(prepared)) => {
                let prepared = (*prepared).unwrap_or_else(|e| {
                    Prepared::Error(finish::boundary_error(
                        &tool_use.name,
                        &format!("unreadable answer from prepare: {e}"),
                    ))
                });
                let request = match prepared {
                    Prepared::Error(error) => {
                        let error = crate::result_limit::cap_error(error, self.max_result_bytes);
                        return (finish::tool_error(task, &tool_use, description, error), Some(signature));
                    }
                    Prepared::Proceed => None,
                    Prepared::Approval(request) => Some(request),
                };
                if let Some(pre_input) = pre_input {
                    verdict = self.hooks.run(pre_input, task.workspace.primary().to_path_buf()).await;
                    if verdict.decision == Some(HookDecision::Deny) {
                        let message = request.as_ref().and_then(|r| r.denied_message.as_deref());
                        let mut result = finish::denied(&tool_use, description, message);
                        let reason = verdict.reason.clone().unwrap_or_default();
                        result.context_before = verdict.context;
                        result.context_before.extend(hooks::hook_context("PreToolUse", &reason));
                        result.note = Some(format!("denied by a PreToolUse hook: {reason}"));
                        return (result, Some(signature));
                    }
                }
                match authorize::authorize(authorizer(), request, &verdict).await {
                    Ok(authorized) => {
                        feedback = authorized.feedback;
                        let limit = self.timeouts.call;
                        PhaseAnswer::executed(
                            self.run_phase(&route, Phase::Execute, (&call, authorized.explicit), task, limit, None)
                                .await,
                        )
                    }
                    Err(refused) => {
                        let mut result = finish::denied(&tool_use, description, refused.message.as_deref());
                        result.note = refused.note;
                        result.feedback = refused.feedback;
                        result.context_before = verdict.context;
                        return (result, Some(signature));
                    }
                }
            }
            Err(error) => Err(error),
        };
        let mut result = self.answer(task, &route, &mut tool_use, description, executed);
        result.feedback = feedback;
        result.context_before = verdict.context;
        if let Some(mut post_input) = post_input {
            let content: Vec<Value> = result
                .blocks
                .iter()
                .map(|block| match block {
                    Block::Text { text } => json!({"type": "text", "text": text}),
                    Block::Image { media_type, .. } => json!({"type": "image", "media_type": media_type}),
                })
                .collect();
            post_input.tool_response = Some(json!({"status": result.status.as_str(), "content": content}));
            let post = self.hooks.run(post_input, task.workspace.primary().to_path_buf()).await;
            result.context_after.extend(post.context);
        }
        (result, Some(signature))
    }

    /// Hands a streamed, incomplete tool use to its tool (UI only). Unknown tools and failures are ignored:
    /// the complete tool use that follows reports them.
    pub async fn partial(&self, task: &Arc<TaskShared>, id: &str, name: &str, input: Value) {
        let Some(route) = resolve::pin_streamed(self, task, id, name) else {
            return;
        };
        let cancel = CancelOnDrop::for_route(&route);
        let call =
            Arc::new(CallJson::new(name, id, &input, task, route.meta.task_by_ref, CallCancel::Own(cancel.token())));
        let _ = self.run_phase(&route, Phase::Partial, (&call, false), task, self.timeouts.prepare, None).await;
    }

    async fn run_phase<'r>(
        &self,
        route: &'r Route,
        phase: Phase,
        (call, approved): (&Arc<CallJson>, bool),
        task: &Arc<TaskShared>,
        timeout: Duration,
        then_execute: Option<ThenExecute>,
    ) -> Result<PhaseAnswer<'r>, PhaseError> {
        if let Some(inline) = &route.inline {
            return inline.run(phase, (call, approved), task, &self.services.router, then_execute.as_ref());
        }
        let message = RunPhase {
            phase,
            call: Arc::clone(call),
            approved,
            task: Arc::clone(task),
            router: Arc::clone(&self.services.router),
            commit_wait: self.timeouts.commit,
            timeout,
            cancel_grace: self.timeouts.cancel_grace,
            then_execute,
        };
        match route.actor.send(message).await {
            Ok(answer) => answer,
            Err(_) => Err(PhaseError::Failed("the tool's actor has stopped".to_owned())),
        }
    }
}

/// Cancels a call's token when the call's future is dropped before [`CancelOnDrop::finished`].
struct CancelOnDrop(Option<Arc<CancelToken>>);

impl CancelOnDrop {
    /// The cancellation of a call on `route`. An `inline` tool's phases run to their end on the caller's
    /// thread, so nothing of such a call is left running when its future is dropped, and nothing needs
    /// telling: its calls share the token nobody can cancel ([`CancelToken::never`]), sparing an allocation
    /// per call.
    fn for_route(route: &Route) -> Self {
        Self(route.inline.is_none().then(|| Arc::new(CancelToken::default())))
    }

    fn token(&self) -> Arc<CancelToken> {
        self.0.as_ref().map_or_else(CancelToken::never, Arc::clone)
    }

    /// The call ended on its own: nothing to cancel.
    fn finished(mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(token) = self.0.take() {
            token.cancel();
        }
    }
}

/// The future of a host's tool use ([`Engine::execute_for_host`]). Written out rather than an `async fn`: the
/// common call (an inline tool that proceeds) runs whole at the first poll, and its future is the tool use and
/// two references. The `async fn` it replaces was 536 bytes, built and moved into every caller's own future, and
/// its result moved out through two layers (a no-op call spent a seventh of its time in `memmove`). Any other
/// call continues as the staged pipeline's boxed future.
pub(crate) struct ForHost<'a> {
    engine: &'a Arc<Engine>,
    task: &'a Arc<TaskShared>,
    state: ForHostState<'a>,
    /// Whether the inline path has run, which it does on the tool use still in `Start`: a poll after a panic
    /// there finds it set and does not run the call a second time.
    started: bool,
}

enum ForHostState<'a> {
    /// Not polled yet.
    Start(ToolUse),
    /// On the staged path, with the focus chain's list the input carried.
    Staged {
        progress: Option<String>,
        future: std::pin::Pin<Box<dyn std::future::Future<Output = ToolResult> + Send + 'a>>,
    },
    Done,
}

impl std::future::Future for ForHost<'_> {
    type Output = ToolResult;

    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<ToolResult> {
        use std::task::Poll;
        // Every field is `Unpin` (the staged future is boxed).
        let this = self.get_mut();
        let (engine, task) = (this.engine, this.task);
        // The inline path runs on the tool use where it lies: it is moved out only for the staged path.
        if let ForHostState::Start(tool_use) = &mut this.state {
            assert!(!std::mem::replace(&mut this.started, true), "a tool use's future polled after it panicked");
            let interaction = &engine.services.interaction;
            let progress = crate::services::interaction::take_progress(interaction, tool_use);
            match engine.execute_inline(task, tool_use) {
                Ok(mut result) => {
                    this.state = ForHostState::Done;
                    engine.for_host(task, progress, &mut result);
                    return Poll::Ready(result);
                }
                Err(found) => {
                    let ForHostState::Start(tool_use) = std::mem::replace(&mut this.state, ForHostState::Done) else {
                        unreachable!("matched above")
                    };
                    let future = Box::pin(engine.execute_staged(task, tool_use, found));
                    // Polled at once, below, with this poll's waker.
                    this.state = ForHostState::Staged { progress, future };
                }
            }
        }
        match &mut this.state {
            ForHostState::Staged { progress, future } => match future.as_mut().poll(cx) {
                Poll::Ready(mut result) => {
                    engine.for_host(task, progress.take(), &mut result);
                    this.state = ForHostState::Done;
                    Poll::Ready(result)
                }
                Poll::Pending => Poll::Pending,
            },
            ForHostState::Start(_) | ForHostState::Done => panic!("a tool use's future polled after it finished"),
        }
    }
}

impl ToolRunner for Engine {
    fn call(self: Arc<Self>, task: Arc<TaskShared>, tool_use: ToolUse) -> BoxFuture<ToolResult> {
        Box::pin(async move { Engine::execute(&self, &task, tool_use).await })
    }

    fn execute(self: Arc<Self>, task: Arc<TaskShared>, tool_use: ToolUse) -> BoxFuture<ToolResult> {
        Box::pin(async move { Engine::execute_for_host(&self, &task, tool_use).await })
    }

    fn open_task(&self, context: TaskContext) -> Arc<TaskShared> {
        Engine::open_task(self, context)
    }

    fn cancel_task(&self, task: &TaskShared) {
        task.cancel.cancel();
        self.services.end_task(&task.info.task_id);
    }

    fn spec(&self, tool: &str, family: &str) -> Option<Spec> {
        self.route(tool).and_then(|route| spec::family_spec(&route.meta.specs, family).map(|s| Spec::from(s.clone())))
    }

    fn load_declaring(self: Arc<Self>, names: Vec<String>) -> BoxFuture<()> {
        Box::pin(async move {
            for name in &names {
                Engine::load_declaring(&self, name).await;
            }
        })
    }
}
