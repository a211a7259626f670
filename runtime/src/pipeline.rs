//! The call pipeline: one tool use from the model to the result it reads, in stages (resolve, validate,
//! prepare, authorize, execute, finish), with the approval policy and hooks that authorize it and the
//! message-level rules of one assistant turn.

pub(crate) mod executor;
pub(crate) mod hooks;
pub(crate) mod policy;
pub(crate) mod turn;
