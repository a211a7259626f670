//! Host tests: every module loads real plugin libraries from disk through Toolshed's public API or CLI.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod util;

mod aliases;
mod cli;
mod edit;
mod execute_command;
mod list_files;
mod loading;
mod panics;
mod policy;
mod read_file;
mod schema;
mod search_files;
mod timeouts;
