//! Host tests: every module loads real plugin libraries from disk through Toolshed's public API or CLI.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod util;

mod aliases;
mod cli;
mod cline_snapshots;
mod conversation;
mod documents;
mod edit;
mod embedding;
mod execute_command;
mod hostile;
mod install;
mod list_files;
mod loading;
mod mcp;
mod oneshot;
mod outline;
mod panics;
mod path_escape;
mod policy;
mod read_file;
mod reload;
mod schema;
mod search_files;
mod security;
mod serve;
mod serve_listing;
mod serve_sessions;
mod subagents;
mod timeouts;
mod web;
