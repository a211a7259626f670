//! The resolve stage: a tool use's name to the route of the tool that serves it. A streamed tool use keeps the
//! generation its first `partial` resolved; a name no loaded tool has goes to the services' name routes
//! (`{server}__mcp__{tool}` as use_mcp_tool, `use_subagent_<name>` as use_subagents), and the result keeps the
//! name called.

use super::{finish, Engine};
use crate::messages;
use crate::registry::coordinator::Route;
use crate::services::runner::Routed;
use crate::task::TaskShared;
use crate::types::{ResultStatus, ToolResult, ToolUse};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The most name routes one call passes through (a route's call could name another route's tool).
const MAX_HOPS: usize = 4;

/// The name and header a routed call's result shows.
pub(super) struct Rename {
    pub name: String,
    pub description: Option<String>,
}

/// Where a tool use goes: its route and the call to run there, or its result when it cannot run.
pub(super) struct Resolved {
    pub outcome: Result<(Route, ToolUse), ToolResult>,
    pub rename: Option<Rename>,
}

/// Resolves a tool use for a task; `found` is the route [`found`] already gave it, if any.
pub(super) async fn resolve(
    engine: &Engine,
    task: &Arc<TaskShared>,
    mut tool_use: ToolUse,
    mut found: Option<Route>,
) -> Resolved {
    let mut rename = None;
    let mut hops = 0;
    let route = loop {
        if let Some(route) = found.take().or_else(|| self::found(engine, task, &tool_use)) {
            break Some(route);
        }
        // A one-shot runtime loads the library declaring the name, then looks again.
        if engine.load_declaring(&tool_use.name).await {
            continue;
        }
        if hops == MAX_HOPS {
            break None;
        }
        hops += 1;
        let called = tool_use.name.clone();
        match by_name(engine, task, tool_use).await {
            Ok(Routed::Call { tool_use: call, description }) => {
                rename.get_or_insert(Rename { name: called, description });
                tool_use = call;
            }
            Ok(Routed::Refused(result)) => return Resolved { outcome: Err(result), rename },
            Err(unrouted) => {
                tool_use = unrouted;
                // The answer to an unknown name lists every tool: a one-shot runtime loads them all first.
                if engine.load_everything().await {
                    continue;
                }
                break None;
            }
        }
    };
    let outcome = match route {
        Some(route) => admit(task, &route, &tool_use).map(|()| (route, tool_use)),
        None => {
            task.calls.fetch_add(1, Ordering::Relaxed);
            Err(unknown(engine, task, &tool_use))
        }
    };
    Resolved { outcome, rename }
}

/// The route a tool use's name has now, without loading or routing anything: the one its stream was pinned to,
/// else the loaded tool of that name. A pinned route is taken: hand it on to [`resolve`].
pub(super) fn found(engine: &Engine, task: &TaskShared, tool_use: &ToolUse) -> Option<Route> {
    streamed(task, tool_use).or_else(|| engine.route(&tool_use.name))
}

/// Counts a call that reached a route and checks the task's profile serves its tool: the call to run there, or
/// the refusal.
// The refusal is a few hundred bytes, moved once into the caller's result: boxing it would only add an
// allocation to it.
#[allow(clippy::result_large_err)]
pub(super) fn admit(task: &TaskShared, route: &Route, tool_use: &ToolUse) -> Result<(), ToolResult> {
    task.calls.fetch_add(1, Ordering::Relaxed);
    // The profile holds for every call of the task, not only for what its host lists: a plugin's `tool.call` or
    // a name route reaching a tool the profile hides is refused here too.
    if task.profile.serves(&route.meta.name) {
        Ok(())
    } else {
        Err(not_served(task, tool_use, &route.meta.name))
    }
}

/// The first name route that takes the tool use, asked in order; the tool use back when none does.
async fn by_name(engine: &Engine, task: &Arc<TaskShared>, mut tool_use: ToolUse) -> Result<Routed, ToolUse> {
    for route in &engine.services.name_routes {
        if let Some(target) = route.target().filter(|_| route.claims(&tool_use.name)) {
            engine.load_declaring(target).await;
        }
        let applies =
            route.claims(&tool_use.name) && route.target().is_none_or(|target| engine.route(target).is_some());
        if applies {
            match route.route(task, tool_use).await {
                Ok(routed) => return Ok(routed),
                Err(unrouted) => tool_use = unrouted,
            }
        }
    }
    Err(tool_use)
}

/// The route a streamed tool use was pinned to, when it is still for this name (taken: the call ends its
/// stream).
fn streamed(task: &TaskShared, tool_use: &ToolUse) -> Option<Route> {
    let pinned = task.streamed.take(&tool_use.id)?;
    Route::from_erased(pinned).filter(|route| route.meta.name == tool_use.name)
}

/// The route of a streamed tool use, pinned at its first `partial` so the complete tool use runs on the same
/// generation even when a hot reload swapped the tool in between. None for a tool the task's profile does not
/// serve: its partial phase runs none of its code (the complete call is refused by [`resolve`]).
pub(super) fn pin_streamed(engine: &Engine, task: &TaskShared, id: &str, name: &str) -> Option<Route> {
    let pinned = task.streamed.get(id).and_then(Route::from_erased).filter(|route| route.meta.name == name);
    let route = pinned.or_else(|| engine.route(name)).filter(|route| task.profile.serves(&route.meta.name))?;
    if !id.is_empty() {
        task.streamed.pin(id, || route.erased());
    }
    Some(route)
}

/// The error for a tool the task's profile does not serve.
fn not_served(task: &TaskShared, tool_use: &ToolUse, name: &str) -> ToolResult {
    let text = messages::tool_error(&task.profile.refusal(name));
    ToolResult::plain(tool_use, format!("[{}]", tool_use.name), ResultStatus::Error, text)
}

/// Cline's error for a tool that does not exist, naming the ones that do (and that the task's profile
/// serves: a hidden tool named here would only be refused when called).
fn unknown(engine: &Engine, task: &TaskShared, tool_use: &ToolUse) -> ToolResult {
    let mut names = engine.tool_names();
    names.retain(|name| task.profile.serves(name));
    names.sort();
    let text = messages::tool_error(&format!(
        "Tool '{}' does not exist. Available tools: {}.",
        tool_use.name,
        names.join(", ")
    ));
    finish::mistake(task, ToolResult::plain(tool_use, format!("[{}]", tool_use.name), ResultStatus::Error, text))
}
