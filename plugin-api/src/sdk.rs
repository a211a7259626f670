//! The plugin author's safe surface, one file per concept: the typed [`Tool`] trait and its [`Failure`], the
//! typed [`HostClient`], confirmed file access, result builders, the conversational texts, lenient serde
//! helpers, child-process jobs and serde errors in the model's words. The plumbing [`crate::export_plugin!`] expands to lives in a hidden module
//! of its own.

pub mod conversation;
mod errors;
mod export;
mod files;
mod host;
mod jobs;
mod lenient;
pub mod result;
mod tool;

pub use errors::{json_error, without_type_names};
#[doc(hidden)]
pub use export::{construct, declarations_json, exported_declarations_json, guard, install_panic_hook, into_abi};
pub use files::{open_real, read_capped, OpenError, ReadError};
pub use host::HostClient;
pub use jobs::IsolatedError;
#[doc(hidden)]
pub use jobs::JobAnswer;
pub use lenient::{lenient_bool, lenient_int, lenient_string};
pub use tool::{Failure, Tool, ToolInit};
