//! The registry: which tool names exist and what serves them. The loader checks and maps plugin libraries,
//! tool ids name the registry's keys, the coordinator actor registers tools and publishes the routing
//! snapshot every call reads, and the watcher reloads libraries that change on disk. The declaration index
//! and the on-demand loader let a one-shot runtime open only the libraries its calls need.

pub(crate) mod coordinator;
pub(crate) mod index;
pub(crate) mod loader;
pub(crate) mod on_demand;
pub(crate) mod remote;
pub(crate) mod tool_id;
pub(crate) mod watch;
