//! Security: one module per class of hole from the security review, each trying variants of its own.

mod checked_command_is_run_command;
mod command_checks_see_what_bash_runs;
mod denied_hosts_judge_addresses;
mod edits_keep_file_identity;
mod http_serve_survives_floods;
mod path_tools_stay_confined;
mod processes_end_with_call;
mod shown_text_is_escaped;
mod untrusted_workspace_config;
