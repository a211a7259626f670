//! Issue 22: hostile content never takes the host down. One module per class, plus the cross-cutting suites.

mod fixtures;
mod isolation;
mod one_process;
mod serve;
mod peers;
mod hooks;
mod skills;
mod documents;
mod output;
mod peers_http;
mod redteam;
mod edits;
