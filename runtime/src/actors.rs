//! Where plugin code runs: one actor per registered tool, and the worker pool it runs call phases on.

pub(crate) mod pool;
pub(crate) mod tool_actor;
