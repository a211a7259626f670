//! Child-process jobs: the work a tool hands to [`HostClient::isolated`], and how a job call is recognised
//! and answered.

use super::{HostClient, Tool};
use crate::services;

/// Why [`HostClient::isolated`] produced no answer of the job's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IsolatedError {
    /// The job ran and returned this error text.
    Job(String),
    /// The child failed: a crash, a limit, a timeout, a cancellation. One line for the model.
    Failed(String),
}

impl std::fmt::Display for IsolatedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Job(message) | Self::Failed(message) => f.write_str(message),
        }
    }
}

impl HostClient<'_> {
    /// Runs `tool`'s [`Tool::job`] named `job` in a child process through `isolate.run`, so a parser of hostile
    /// content that overflows its stack, runs out of memory or loops ends the child, not the host. A host
    /// without the service (an older host, a test host, or inside a job already) runs the job here instead.
    pub fn isolated<T: Tool>(
        &self,
        tool: &T,
        job: &str,
        input: serde_json::Value,
    ) -> Result<serde_json::Value, IsolatedError> {
        if !self.offers::<services::IsolateRun>() {
            return tool.job(job, input, self).map_err(IsolatedError::Job);
        }
        let request = crate::services::IsolateRequest { job: job.to_owned(), input };
        match self.call::<services::IsolateRun>(&request) {
            Ok(crate::services::IsolateResponse::Ok(value)) => Ok(value),
            Ok(crate::services::IsolateResponse::Error(message)) => Err(IsolatedError::Job(message)),
            Err(e) => Err(IsolatedError::Failed(e.message)),
        }
    }
}

/// The envelope a job call's answer travels in through `execute` (see [`crate::services::IsolateResponse`]).
pub use crate::services::IsolateResponse as JobAnswer;

/// Runs the job a job call names; `None` for an ordinary call. The cheap look for the `job` key keeps the
/// ordinary path from parsing its call twice.
pub(super) fn run_job<T: Tool>(tool: &T, call: &str, host: &HostClient<'_>) -> Option<JobAnswer> {
    if !call.contains("\"job\"") {
        return None;
    }
    #[derive(serde::Deserialize)]
    struct JobCall {
        job: Option<String>,
        #[serde(default)]
        input: serde_json::Value,
    }
    let parsed: JobCall = serde_json::from_str(call).ok()?;
    let name = parsed.job?;
    Some(match tool.job(&name, parsed.input, host) {
        Ok(value) => JobAnswer::Ok(value),
        Err(message) => JobAnswer::Error(message),
    })
}
