//! The OpenAI driver of a build without the `openai` feature: a type with no values, so the runtime's
//! builder compiles unchanged. `[subagents] base_url` then gets a warning naming the feature, and subagents
//! run only with a driver the host gives (`RuntimeBuilder::agent_driver`).

use super::{AgentDriver, AgentReply, AgentRequest, DriverError};
use crate::config::SubagentsConfig;
use crate::types::BoxFuture;

/// No OpenAI driver: there is none to have.
pub(crate) enum OpenAiDriver {}

impl OpenAiDriver {
    /// No driver without `[subagents] base_url`; with it, the error the runtime warns with.
    pub fn from_config(config: &SubagentsConfig) -> Result<Option<Self>, DriverError> {
        match config.base_url {
            None => Ok(None),
            Some(_) => Err(DriverError(
                "this build has no OpenAI driver (the toolshed library was built without its `openai` feature); \
                 give the runtime a driver with RuntimeBuilder::agent_driver"
                    .to_owned(),
            )),
        }
    }
}

impl AgentDriver for OpenAiDriver {
    fn next_message(&self, _request: AgentRequest) -> BoxFuture<Result<AgentReply, DriverError>> {
        match *self {}
    }
}
