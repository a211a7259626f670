//! The host services plugins call during a call (`path.*`, `process.*`, `http.request`, `mcp.*`, the
//! conversation, subagents, child-process jobs), the router that dispatches them by name, and the
//! [`runner::ToolRunner`] through which the services that run tools reach back into the pipeline.

pub(crate) mod commit_gate;
pub(crate) mod host;
pub(crate) mod interaction;
pub mod isolate;
pub(crate) mod mcp;
pub(crate) mod process;
pub(crate) mod skills;
pub(crate) mod subagents;
