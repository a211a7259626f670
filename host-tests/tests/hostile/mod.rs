//! Issue 22: hostile content never takes the host down. One module per class, plus the cross-cutting suites.

mod documents;
mod edits;
mod fixtures;
mod hooks;
mod isolation;
mod one_process;
mod output;
mod peers;
mod peers_http;
mod redteam;
mod rest;
mod serve;
mod serve_sessions;
mod skills;
