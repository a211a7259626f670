//! Child-process jobs (issue 22): a plugin's parser of hostile content runs in a child process.

use serde::{Deserialize, Serialize};

services! {
    /// `isolate.run`: runs the calling plugin's [`crate::sdk::Tool::job`] named `job` in a child process (the host
    /// binary in a hidden mode, the same library loaded again) under the host's `[isolation]` limits: address
    /// space, CPU time, stack and wall-clock time. A stack overflow, an allocation failure, an abort or a loop
    /// there ends the child, not the host, and comes back as a [`crate::ServiceError`] of kind `Failed` whose
    /// message says which limit was hit. Host services the job calls are forwarded to the host and run there
    /// under the calling call's checks. Not offered inside a job (no nesting).
    IsolateRun(ISOLATE_RUN) = "isolate.run": IsolateRequest => IsolateResponse;
}

/// Request of [`IsolateRun`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IsolateRequest {
    /// The job's name, as the plugin's `job` knows it.
    pub job: String,
    /// The job's input.
    #[serde(default)]
    pub input: serde_json::Value,
}

/// Response of [`IsolateRun`]: the job's own answer, `Ok` or its `Err` text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IsolateResponse {
    /// What the job returned.
    Ok(serde_json::Value),
    /// The job's own error text (not a failure of the child: that is a service error).
    Error(String),
}
