//! The coordinator's third job: subagents. `use_subagents` asks, through the `subagents.spawn` service, for up
//! to five child tasks run in parallel, each a fresh task marked as a subagent run (Cline's `SubagentRunner`):
//!
//! - its own task state (read cache, mistakes), the parent's workspace roots, no UI events;
//! - a restricted tool set — read_file, list_files, search_files, list_code_definition_names,
//!   execute_command, use_skill, attempt_completion, or a configured agent's `tools` — and never a subagent
//!   tool; anything else is answered with Cline's "not available inside subagent runs" error;
//! - commands in background mode (execute_command applies the managed 30/300 s timeouts to subagent runs);
//! - the model is the host's [`AgentDriver`]; the run ends at attempt_completion, whose `result` is the
//!   outcome (nobody is asked to accept it); more than three turns in a row without a tool call fail it with
//!   `Subagent did not call attempt_completion.`, and `[subagents] max_turns` caps the turns;
//! - cancelled with its parent (or when the use_subagents call times out): `Subagent run cancelled.`
//!
//! Configured agents (one TOML file each in `[subagents] agents_dir`) become `use_subagent_<name>` tools,
//! a route of names ([`AgentTools`]) that runs each as the use_subagents call with one prompt it stands for.

use crate::driver::{AgentDriver, AgentMessage, AgentRequest, AgentToolCall};
use crate::services::host::{failed, race, CallHost, Router};
use crate::services::interaction::InteractionHost;
use crate::services::runner::{NameRoute, Routed, ToolRunner};
use crate::spec::{AgentConfig, Spec, SpecContext, SpecParam, SpecRegistry};
use crate::task::{CancelToken, TaskContext, TaskShared};
use crate::types::{BoxFuture, ResultStatus, ToolInput, ToolResult, ToolUse};
use serde::Deserialize;
use serde_json::Value;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;
use toolshed_plugin_api::services::{
    Service, SubagentOutcome, SubagentsSpawn, SubagentsSpawnRequest, SubagentsSpawnResponse,
};
use toolshed_plugin_api::{ServiceError, ServiceErrorKind};

/// Cline's texts.
pub(crate) const CANCELLED: &str = "Subagent run cancelled.";
pub(crate) const NO_COMPLETION: &str = "Subagent did not call attempt_completion.";

/// The prefix of configured agents' tools.
pub(crate) const TOOL_PREFIX: &str = "use_subagent_";

/// The tool a subagent ends its run with.
const ATTEMPT_COMPLETION: &str = "attempt_completion";

/// Cline's `SUBAGENT_DEFAULT_ALLOWED_TOOLS`.
const DEFAULT_TOOLS: [&str; 7] = [
    "read_file",
    "list_files",
    "search_files",
    "list_code_definition_names",
    "execute_command",
    "use_skill",
    ATTEMPT_COMPLETION,
];

/// Cline's `MAX_EMPTY_ASSISTANT_RETRIES`: turns without a tool call tolerated in a row.
const MAX_EMPTY_TURNS: u32 = 3;

/// The most prompts one spawn runs.
const MAX_PROMPTS: usize = 5;

/// The first line of Cline's system prompt, the base of a subagent's when its agent gives none.
const AGENT_ROLE: &str = "You are Cline, a highly skilled software engineer with extensive knowledge in many programming languages, frameworks, design patterns, and best practices.";

/// Cline's `SUBAGENT_SYSTEM_SUFFIX`.
pub const SUBAGENT_SYSTEM_SUFFIX: &str = "\n\n# Subagent Execution Mode
You are running as a research subagent. Your job is to explore the codebase and gather information to answer the question.
Explore, read related files, trace through call chains, and build a complete picture before reporting back.
You can read files, list directories, search for patterns, list code definitions, and run commands.
Only use execute_command for readonly operations like ls, grep, git log, git diff, gh, etc.
When it makes sense, be clever about chaining commands or in-command scripting in execute_command to quickly get relevant context - and using pipes / filters to help narrow results.
Do not run commands that modify files or system state.
When you have a comprehensive answer, call the attempt_completion tool.
The attempt_completion result field is sent directly to the main agent, so put your full final findings there.
Unless the subagent prompt explicitly asks for detailed analysis, keep the result concise and focus on the files the main agent should read next.
Include a section titled \"Relevant file paths\" and list only file paths, one per line.
Do not include line numbers, summaries, or per-file explanations unless explicitly requested.
";

/// Cline's `noToolsUsed(true)` (native tool calling: no XML reminder).
const NO_TOOLS_USED: &str = "[ERROR] You did not use a tool in your previous response! Please retry with a tool use.\n\n\n\n# Next Steps\n\nIf you have completed the user's task, use the attempt_completion tool. \nIf you require additional information from the user, use the ask_followup_question tool. \nOtherwise, if you have not completed the task and do not need additional information, then proceed with the next step of the task. \n(This is an automated message, so do not respond to it conversationally.)";

/// One agent config file (`[subagents] agents_dir/*.toml`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentFile {
    name: String,
    #[serde(default)]
    description: String,
    /// The model the driver should ask for.
    #[serde(default)]
    model: Option<String>,
    /// The tools it may use (attempt_completion is always added); Cline's defaults when empty.
    #[serde(default)]
    tools: Vec<String>,
    /// Replaces the base of the system prompt.
    #[serde(default)]
    system_prompt: Option<String>,
}

/// The runtime's subagent side: the host's driver, the configured agents and `[subagents]`.
pub(crate) struct SubagentHost {
    driver: Option<Arc<dyn AgentDriver>>,
    agents: Vec<AgentFile>,
    config: crate::config::SubagentsConfig,
    /// After a cancellation, how long the runs get to report before the service gives up on them.
    cancel_grace: Duration,
}

impl SubagentHost {
    /// Reads the agent configs; a file that cannot be read is skipped with a warning naming it.
    pub fn new(driver: Option<Arc<dyn AgentDriver>>, config: &crate::config::Config) -> Self {
        let agents = config.subagents.agents_dir.as_deref().map(load_agents).unwrap_or_default();
        Self {
            driver,
            agents,
            config: config.subagents.clone(),
            cancel_grace: Duration::from_millis(config.timeouts.cancel_grace_ms),
        }
    }

    /// Whether subagents can run: a driver is registered and `[subagents] enabled` is on.
    pub fn available(&self) -> bool {
        self.driver.is_some() && self.config.enabled
    }

    /// The configured agents, as the spec registry takes them.
    pub fn agent_configs(&self) -> Vec<AgentConfig> {
        self.agents.iter().map(|a| AgentConfig::new(a.name.clone(), a.description.clone())).collect()
    }

    fn registry(&self) -> SpecRegistry {
        let mut registry = SpecRegistry::new();
        registry.set_agents(&self.agent_configs());
        registry
    }

    /// The agent a `use_subagent_<name>` tool runs.
    fn agent_for_tool(&self, tool: &str) -> Option<String> {
        self.registry().subagent(tool).map(str::to_owned)
    }

    /// Adjusts a task's tool list: without subagents use_subagents is left out (it could only answer that
    /// they are disabled); with configured agents their tools replace it, as the spec registry does, outside
    /// subagent runs: after the others in a Cline variant's order (`in_order`, as Cline appends them), else all
    /// in name order.
    pub fn adjust_specs(&self, specs: &mut Vec<Spec>, context: &SpecContext, in_order: bool) {
        if !self.available() {
            specs.retain(|spec| spec.id != "use_subagents");
            return;
        }
        if self.agents.is_empty() || context.subagent_run || !specs.iter().any(|s| s.id == "use_subagents") {
            return;
        }
        let variant = crate::spec::PromptVariant::new(crate::spec::GENERIC, ["use_subagents"]);
        let generated = self.registry().enabled(&variant, context);
        specs.retain(|spec| spec.id != "use_subagents");
        specs.extend(generated);
        if !in_order {
            specs.sort_by(|a, b| a.name.cmp(&b.name));
        }
    }
}

/// Reads every `*.toml` agent file of a directory, in name order.
fn load_agents(dir: &Path) -> Vec<AgentFile> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        tracing::warn!("cannot read [subagents] agents_dir {}", dir.display());
        return Vec::new();
    };
    let mut files: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
        .into_iter()
        .filter_map(|file| {
            let parsed = std::fs::read_to_string(&file)
                .map_err(|e| e.to_string())
                .and_then(|text| toml::from_str::<AgentFile>(&text).map_err(|e| e.to_string()));
            match parsed {
                Ok(agent) if !agent.name.trim().is_empty() => Some(agent),
                Ok(_) => {
                    tracing::warn!("agent config {} has an empty name; skipped", file.display());
                    None
                }
                Err(e) => {
                    tracing::warn!("agent config {} is invalid, skipped: {e}", file.display());
                    None
                }
            }
        })
        .collect()
}

/// The `use_subagent_<name>` tools of the configured agents: each call runs as the use_subagents call it stands
/// for (`prompt_1` and `agent`), or, without a prompt, gets Cline's missing-parameter error for `prompt`.
pub(crate) struct AgentTools(pub Arc<SubagentHost>);

impl NameRoute for AgentTools {
    fn claims(&self, name: &str) -> bool {
        name.starts_with(TOOL_PREFIX)
    }

    fn target(&self) -> Option<&'static str> {
        None
    }

    fn route(&self, task: &Arc<TaskShared>, tool_use: ToolUse) -> BoxFuture<Result<Routed, ToolUse>> {
        let routed = self.route_now(task, tool_use);
        Box::pin(std::future::ready(routed))
    }
}

impl AgentTools {
    fn route_now(&self, task: &TaskShared, tool_use: ToolUse) -> Result<Routed, ToolUse> {
        let Some(agent) = self.0.agent_for_tool(&tool_use.name) else {
            return Err(tool_use);
        };
        let input = match &tool_use.input {
            ToolInput::Json(value) => value.clone(),
            ToolInput::Text(text) => serde_json::from_str(text).unwrap_or(Value::Null),
        };
        let prompt = input.get("prompt").or_else(|| input.get("prompt_1")).and_then(Value::as_str).map(str::trim);
        let description = format!("[subagent: {agent}]");
        let Some(prompt) = prompt.filter(|p| !p.is_empty()) else {
            task.mistakes.fetch_add(1, Ordering::Relaxed);
            let text = crate::messages::tool_error(&crate::messages::missing_parameter("prompt"));
            return Ok(Routed::Refused(ToolResult::plain(&tool_use, description, ResultStatus::Error, text)));
        };
        let input = serde_json::json!({"prompt_1": prompt, "agent": agent});
        let call = ToolUse::new(tool_use.id, "use_subagents", input);
        Ok(Routed::Call { tool_use: call, description: Some(description) })
    }
}

/// Registers `subagents.spawn`, offered only when a driver can run them (so use_subagents can tell).
pub(crate) fn register(
    router: &mut Router,
    host: &Arc<SubagentHost>,
    interaction: &Arc<InteractionHost>,
    runner: Weak<dyn ToolRunner>,
) {
    let available = host.available();
    let (host, interaction) = (Arc::clone(host), Arc::clone(interaction));
    router
        .register::<SubagentsSpawn>(move |call, request| spawn(&host, &interaction, &runner, call, request))
        .offered_when(move |_| available);
}

/// `subagents.spawn`: starts the runs on the runtime's thread and waits for them on this plugin thread. A
/// cancelled call (its task cancelled, or its timeout) cancels the runs and returns what they report within
/// `[timeouts] cancel_grace_ms`.
fn spawn(
    host: &SubagentHost,
    interaction: &InteractionHost,
    runner: &Weak<dyn ToolRunner>,
    call: &CallHost,
    request: SubagentsSpawnRequest,
) -> Result<SubagentsSpawnResponse, ServiceError> {
    let Some(driver) = host.driver.clone().filter(|_| host.config.enabled) else {
        return Err(crate::services::host::unknown_service(SubagentsSpawn::NAME));
    };
    let prompts: Vec<String> = request.prompts.iter().map(|p| p.trim().to_owned()).filter(|p| !p.is_empty()).collect();
    if prompts.is_empty() || prompts.len() > MAX_PROMPTS {
        return Err(ServiceError::new(
            ServiceErrorKind::InvalidRequest,
            format!("between 1 and {MAX_PROMPTS} prompts are required, got {}", prompts.len()),
        ));
    }
    if call.task.info.subagent {
        return Err(ServiceError::new(ServiceErrorKind::Denied, "subagents cannot start subagents"));
    }
    let agent = match &request.agent {
        Some(name) => {
            Some(host.agents.iter().find(|a| a.name.trim() == name.trim()).cloned().ok_or_else(|| {
                ServiceError::new(ServiceErrorKind::InvalidRequest, format!("no agent named '{name}'"))
            })?)
        }
        None => None,
    };
    let batch = Arc::new(CancelToken::default());
    let plan = Arc::new(Plan {
        runner: crate::services::runner::upgrade(runner)?,
        parent: Arc::clone(call.task),
        driver,
        agent,
        skills: Arc::clone(&interaction.skills),
        batch: Arc::clone(&batch),
        max_turns: host.config.max_turns.max(1),
        request_timeout: Duration::from_millis(host.config.request_timeout_ms),
    });
    let grace = host.cancel_grace;
    let runs = move || async move {
        let runs: Vec<_> = prompts.into_iter().map(|prompt| run(Arc::clone(&plan), prompt)).collect();
        join_all(runs).await
    };
    race(&interaction.arbiter, call, runs, move |mut work, cancellation| async move {
        let dropped = |_| failed("the subagent runs were dropped");
        tokio::select! {
            biased;
            outcomes = &mut work => return outcomes.map(|outcomes| SubagentsSpawnResponse { outcomes }).map_err(dropped),
            () = cancellation => {}
        }
        // Cancelled: the runs stop and report what they had, within the grace.
        batch.cancel();
        match tokio::time::timeout(grace, work).await {
            Ok(outcomes) => outcomes.map(|outcomes| SubagentsSpawnResponse { outcomes }).map_err(dropped),
            Err(_) => Err(crate::services::host::cancelled()),
        }
    })?
}

/// What every run of one spawn shares.
struct Plan {
    runner: Arc<dyn ToolRunner>,
    parent: Arc<TaskShared>,
    driver: Arc<dyn AgentDriver>,
    agent: Option<AgentFile>,
    /// The skills directories, for the `skills` spec flag.
    skills: Arc<crate::services::skills::SkillDirs>,
    /// Cancelled when the use_subagents call is.
    batch: Arc<CancelToken>,
    max_turns: u32,
    request_timeout: Duration,
}

impl Plan {
    fn allowed(&self) -> Vec<String> {
        allowed_tools(self.agent.as_ref())
    }

    /// Cline's `buildSystemPrompt`: the agent's prompt (else the base), its profile, then the subagent suffix.
    fn system_prompt(&self) -> String {
        let agent = self.agent.as_ref();
        let base = agent.and_then(|a| a.system_prompt.as_deref()).map(str::trim).filter(|p| !p.is_empty());
        let mut prompt = base.unwrap_or(AGENT_ROLE).to_owned();
        if let Some(agent) = agent {
            let mut lines = vec!["# Agent Profile".to_owned()];
            if !agent.name.trim().is_empty() {
                lines.push(format!("Name: {}", agent.name.trim()));
            }
            if !agent.description.trim().is_empty() {
                lines.push(format!("Description: {}", agent.description.trim()));
            }
            prompt.push_str(&format!("{}\n\n", lines.join("\n")));
        }
        prompt.push_str(SUBAGENT_SYSTEM_SUFFIX);
        prompt
    }
}

/// The tools a run may call: the agent's (plus attempt_completion) or Cline's defaults, never a subagent tool.
fn allowed_tools(agent: Option<&AgentFile>) -> Vec<String> {
    let configured = agent.map(|a| a.tools.as_slice()).filter(|t| !t.is_empty());
    let mut tools: Vec<String> = match configured {
        Some(tools) => tools.iter().map(|t| t.trim().to_owned()).collect(),
        None => DEFAULT_TOOLS.iter().map(|t| (*t).to_owned()).collect(),
    };
    tools.push(ATTEMPT_COMPLETION.to_owned());
    tools.retain(|t| t != "use_subagents" && !t.starts_with(TOOL_PREFIX));
    let mut seen = std::collections::BTreeSet::new();
    tools.retain(|t| seen.insert(t.clone()));
    tools
}

/// The tool specs a run offers its model, resolved for the child task.
fn tool_specs(plan: &Plan, child: &TaskShared, allowed: &[String]) -> Vec<Spec> {
    let family = child.info.model_family.clone();
    let mut context = child.spec_context();
    context.native_tool_calls = true;
    if !plan.skills.list(child.workspace.primary()).is_empty() {
        context.flags.insert("skills".to_owned());
    }
    allowed
        .iter()
        .filter_map(|name| match plan.runner.spec(name, &family) {
            Some(spec) => Some(spec),
            // The run ends at attempt_completion whether or not its plugin is loaded.
            None if name == ATTEMPT_COMPLETION => Some(
                Spec::new(ATTEMPT_COMPLETION, ATTEMPT_COMPLETION, "Present the result of your work to the main agent.")
                    .param(SpecParam::new("result", "string", "The final findings.").required()),
            ),
            None => None,
        })
        .filter(|spec| context.meets_all(&spec.context_requirements))
        .map(|spec| spec.for_context(&context))
        .collect()
}

/// Cline's environment block of a subagent's first message: the workspace roots and their hints.
fn environment(parent: &TaskShared) -> String {
    let mut workspaces = serde_json::Map::new();
    for root in &parent.info.roots {
        let hint =
            Path::new(&root.path).file_name().map_or_else(|| root.path.clone(), |n| n.to_string_lossy().into_owned());
        workspaces.insert(root.path.clone(), serde_json::json!({"hint": hint}));
    }
    let json = serde_json::to_string_pretty(&serde_json::json!({"workspaces": workspaces})).unwrap_or_default();
    format!("<environment_details>\n# Workspace Configuration\n{json}\n</environment_details>")
}

/// A run's counters, as the summary reports them.
#[derive(Default)]
struct Stats {
    tool_calls: u64,
    context_tokens: u64,
    context_window: u64,
}

fn outcome(prompt: String, stats: &Stats, result: Result<String, String>) -> SubagentOutcome {
    let (status, result, error) = match result {
        Ok(text) => ("completed", Some(text), None),
        Err(error) => ("failed", None, Some(error)),
    };
    SubagentOutcome {
        prompt,
        status: status.to_owned(),
        result,
        error,
        tool_calls: stats.tool_calls,
        context_tokens: stats.context_tokens,
        context_window: stats.context_window,
    }
}

/// One subagent run, from its prompt to its outcome.
async fn run(plan: Arc<Plan>, prompt: String) -> SubagentOutcome {
    let parent = &plan.parent;
    let mut context = TaskContext::new(parent.workspace.primary())
        .with_subagent(true)
        .with_model_family(parent.info.model_family.clone())
        .with_images(parent.info.supports_images);
    context.roots = parent.info.roots.iter().map(|r| (r.name.clone(), r.path.clone().into())).collect();
    let child = plan.runner.open_task(context);
    let mut stats = Stats::default();
    let result = tokio::select! {
        biased;
        () = parent.cancel.cancelled() => Err(CANCELLED.to_owned()),
        () = plan.batch.cancelled() => Err(CANCELLED.to_owned()),
        result = converse(&plan, &child, &prompt, &mut stats) => result,
    };
    if result.as_ref().is_err_and(|e| e == CANCELLED) {
        // Stops whatever the run still has going: a tool call in flight, a command's process group.
        plan.runner.cancel_task(&child);
    }
    outcome(prompt, &stats, result)
}

/// The conversation of one run: model turns and tool calls until attempt_completion or a failure.
async fn converse(plan: &Plan, child: &Arc<TaskShared>, prompt: &str, stats: &mut Stats) -> Result<String, String> {
    let allowed = plan.allowed();
    // A one-shot runtime (`toolshed call use_subagents`) has loaded only use_subagents so far.
    Arc::clone(&plan.runner).load_declaring(allowed.clone()).await;
    let tools = tool_specs(plan, child, &allowed);
    let system_prompt = plan.system_prompt();
    let mut messages = vec![AgentMessage::User { text: vec![prompt.to_owned(), environment(&plan.parent)] }];
    let mut empty_turns = 0;
    for _ in 0..plan.max_turns {
        let request = AgentRequest {
            model: plan.agent.as_ref().and_then(|a| a.model.clone()),
            system_prompt: system_prompt.clone(),
            messages: messages.clone(),
            tools: tools.clone(),
        };
        let reply = match tokio::time::timeout(plan.request_timeout, plan.driver.next_message(request)).await {
            Ok(Ok(reply)) => reply,
            Ok(Err(error)) => return Err(error.0),
            Err(_) => {
                return Err(format!(
                    "The model did not answer within {} ms ([subagents] request_timeout_ms).",
                    plan.request_timeout.as_millis()
                ))
            }
        };
        if let Some(usage) = reply.usage {
            stats.context_tokens = usage.input_tokens + usage.output_tokens;
            stats.context_window = stats.context_window.max(usage.context_window);
        }
        let calls = reply.tool_calls;
        if !reply.text.trim().is_empty() || !calls.is_empty() {
            messages.push(AgentMessage::Assistant { text: reply.text.clone(), tool_calls: calls.clone() });
        }
        if calls.is_empty() {
            empty_turns += 1;
            if empty_turns > MAX_EMPTY_TURNS {
                return Err(NO_COMPLETION.to_owned());
            }
            if reply.text.trim().is_empty() {
                messages.push(AgentMessage::Assistant {
                    text: "Failure: I did not provide a response.".to_owned(),
                    tool_calls: Vec::new(),
                });
            }
            messages.push(AgentMessage::User { text: vec![NO_TOOLS_USED.to_owned()] });
            continue;
        }
        empty_turns = 0;
        let mut results = Vec::with_capacity(calls.len());
        for call in calls {
            match run_call(plan, child, &allowed, call, stats).await {
                CallEnd::Completed(result) => return Ok(result),
                CallEnd::Result(result) => results.push(*result),
            }
        }
        messages.push(AgentMessage::ToolResults { results });
    }
    Err(format!(
        "Subagent reached the limit of {} model requests ([subagents] max_turns) without calling attempt_completion.",
        plan.max_turns
    ))
}

enum CallEnd {
    Completed(String),
    Result(Box<ToolResult>),
}

/// One tool call of a run: attempt_completion ends it, a tool outside the run's set is refused, anything
/// else runs through the child task's pipeline.
async fn run_call(
    plan: &Plan,
    child: &Arc<TaskShared>,
    allowed: &[String],
    call: AgentToolCall,
    stats: &mut Stats,
) -> CallEnd {
    let use_of = |call: &AgentToolCall| ToolUse::new(call.id.clone(), call.name.clone(), Value::Null);
    let refuse = |call: &AgentToolCall, text: String| {
        child.mistakes.fetch_add(1, Ordering::Relaxed);
        let description = format!("[{}]", call.name);
        CallEnd::Result(Box::new(ToolResult::plain(&use_of(call), description, ResultStatus::Error, text)))
    };
    if call.name.trim().is_empty() {
        let text = "Invalid tool call: it has no tool name. Please retry with one of the tools you were given.";
        return refuse(&call, crate::messages::tool_error(text));
    }
    if call.name == ATTEMPT_COMPLETION {
        let input =
            if call.arguments.trim().is_empty() { Ok(Value::Null) } else { serde_json::from_str(&call.arguments) };
        let input = match input {
            Ok(input) => input,
            Err(e) => {
                let text = format!(
                    "Invalid JSON input for {ATTEMPT_COMPLETION}: {e}. Please retry with the parameters as one JSON object."
                );
                return refuse(&call, crate::messages::tool_error(&text));
            }
        };
        let result = match input.get("result") {
            Some(Value::String(s)) => s.trim().to_owned(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        };
        if result.is_empty() {
            // Cline answers with the bare missing-parameter text here.
            let text = crate::messages::missing_parameter("result");
            return CallEnd::Result(Box::new(ToolResult::plain(
                &use_of(&call),
                format!("[{ATTEMPT_COMPLETION}]"),
                ResultStatus::Error,
                text,
            )));
        }
        stats.tool_calls += 1;
        return CallEnd::Completed(result);
    }
    if !allowed.contains(&call.name) {
        let text = format!("Tool '{}' is not available inside subagent runs.", call.name);
        return refuse(&call, crate::messages::tool_error(&text));
    }
    let tool_use = ToolUse::from_text(call.id, call.name, call.arguments);
    let result = Arc::clone(&plan.runner).execute(Arc::clone(child), tool_use).await;
    stats.tool_calls += 1;
    CallEnd::Result(Box::new(result))
}

/// Awaits every future concurrently on the current task; outputs in input order.
async fn join_all<F: std::future::Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut futures: Vec<std::pin::Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(move |cx| {
        let mut all = true;
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    std::task::Poll::Ready(value) => *output = Some(value),
                    std::task::Poll::Pending => all = false,
                }
            }
        }
        if all {
            std::task::Poll::Ready(outputs.iter_mut().filter_map(Option::take).collect())
        } else {
            std::task::Poll::Pending
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subagent_tools_never_include_subagents() {
        let agent = AgentFile {
            name: "Reviewer".into(),
            description: "Reviews.".into(),
            model: None,
            tools: vec!["read_file".into(), "use_subagents".into(), "use_subagent_x".into(), "read_file".into()],
            system_prompt: None,
        };
        assert_eq!(allowed_tools(Some(&agent)), ["read_file", "attempt_completion"]);
        assert_eq!(allowed_tools(None), DEFAULT_TOOLS);
    }

    #[test]
    fn agent_files_are_toml_with_known_keys() {
        let agent: AgentFile = toml::from_str(
            "name = \"Code Reviewer\"\ndescription = \"Reviews diffs.\"\nmodel = \"gpt-4o-mini\"\ntools = [\"read_file\"]\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(agent.model.as_deref(), Some("gpt-4o-mini"));
        assert!(toml::from_str::<AgentFile>("name = \"x\"\ncolour = \"red\"\n").is_err());
    }
}
