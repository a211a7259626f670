//! Subagents (issue 15): the coordinator spawns child tasks for use_subagents.

use serde::{Deserialize, Serialize};

services! {
    /// `subagents.spawn`: runs up to five subagents in parallel, each a child task of the calling task (restricted
    /// tools, no UI, its own state, cancelled with the parent), and answers when every one has finished. Offered
    /// only when the host registered an agent driver and `[subagents] enabled` is on.
    SubagentsSpawn(SUBAGENTS_SPAWN) = "subagents.spawn": SubagentsSpawnRequest => SubagentsSpawnResponse;
}

/// Request of [`SubagentsSpawn`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubagentsSpawnRequest {
    /// One prompt per subagent, trimmed and non-empty.
    pub prompts: Vec<String>,
    /// The configured agent to run (its model, tools and profile); the default subagent when absent.
    #[serde(default)]
    pub agent: Option<String>,
}

/// How one subagent run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubagentOutcome {
    /// Its prompt.
    pub prompt: String,
    /// `completed` or `failed`.
    pub status: String,
    /// attempt_completion's `result`, when completed.
    #[serde(default)]
    pub result: Option<String>,
    /// Why it failed, when failed.
    #[serde(default)]
    pub error: Option<String>,
    /// Tool calls it made (attempt_completion included).
    #[serde(default)]
    pub tool_calls: u64,
    /// The largest context (prompt plus completion tokens) one of its requests used.
    #[serde(default)]
    pub context_tokens: u64,
    /// The model's context window, when the driver knows it (else 0).
    #[serde(default)]
    pub context_window: u64,
}

/// Response of [`SubagentsSpawn`]: one outcome per prompt, in the request's order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubagentsSpawnResponse {
    /// The outcomes.
    pub outcomes: Vec<SubagentOutcome>,
}
