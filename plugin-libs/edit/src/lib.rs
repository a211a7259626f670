//! File access shared by the edit tools (write_to_file and its aliases, apply_patch): where a model-given path
//! really leads ([`target`]), text in its own encoding ([`text`]), and the one write path every
//! edit takes ([`transaction`]). A write goes through a temporary file in the same directory and a rename, so
//! no reader ever sees a half-written file and a failure changes nothing — unless the rename would change the
//! file in more than its bytes (its owner or group, another hard link, an ACL or other extended attribute,
//! set-id bits): then it goes through the existing inode, after a backup of the old bytes, which a failure
//! puts back (`replace`).
//!
//! A library crate both plugins link: plugins are separate `cdylib`s that each export a root module, so one
//! cannot link another, and one crate keeps one implementation of the rules every write must follow.

mod replace;
pub mod target;
pub mod text;
pub mod transaction;

pub use target::{locate, read, Target, TargetError, MAX_EDIT_BYTES};
pub use text::{final_content, is_js_space, LineEndings, TextFile};
pub use toolshed_encoding::TextEncoding;
pub use transaction::{Change, Transaction};
