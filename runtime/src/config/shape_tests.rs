//! Every key of the schema, in every TOML shape, through an untrusted workspace: shapes that fit merge by
//! the key's tighten-only rule; every other shape is an error naming the file and the key.

use std::cell::Cell;
use std::collections::BTreeSet;

use serde::de::{self, Deserialize, Deserializer, Visitor};
use toml::Value;

use super::tests::Scratch;
use super::*;

/// One key: the user's value (empty: the default), the workspace's, the merged result (`-` for absent), and
/// whether the workspace's value is (at least partly) ignored with a warning.
struct Row {
    section: &'static str,
    key: &'static str,
    user: &'static str,
    workspace: &'static str,
    merged: &'static str,
    ignored: bool,
}

const fn row(
    section: &'static str,
    key: &'static str,
    user: &'static str,
    workspace: &'static str,
    merged: &'static str,
    ignored: bool,
) -> Row {
    Row { section, key, user, workspace, merged, ignored }
}

#[rustfmt::skip]
const ROWS: &[Row] = &[
    row("approval", "auto_approve_safe", "", "false", "false", false),
    row("approval", "auto_approve_safe", "false", "true", "false", true),
    row("approval", "auto_approve_all", "true", "false", "false", false),
    row("approval", "auto_approve_all", "", "true", "false", true),
    row("approval", "yolo", "true", "false", "false", false),
    row("approval", "yolo", "", "true", "false", true),
    row("approval", "auto_approve_sandboxed", "true", "false", "false", false),
    row("approval", "auto_approve_sandboxed", "", "true", "false", true),
    row("approval", "tools", r#"{ execute_command = "ask", write_to_file = "deny" }"#,
        r#"{ execute_command = "deny", read_file = "allow", write_to_file = "ask" }"#,
        r#"{ execute_command = "deny", write_to_file = "deny" }"#, true),
    row("approval", "tools", "", r#"{ read_file = "ask" }"#, r#"{ read_file = "ask" }"#, false),
    row("browser", "executable", "", r#""/tmp/evil""#, "-", true),
    row("browser", "remote_url", "", r#""http://127.0.0.1:9222""#, "-", true),
    row("browser", "args", "", r#"["--remote-allow-origins=*"]"#, "[]", true),
    row("browser", "profile_dir", "", r#""/tmp""#, "-", true),
    row("browser", "viewport_width", "", "1280", "900", true),
    row("browser", "viewport_height", "", "720", "600", true),
    row("browser", "screenshot_format", "", r#""png""#, r#""png""#, false),
    row("browser", "launch_timeout_ms", "", "5", "5", false),
    row("browser", "launch_timeout_ms", "", "99999999", "20000", true),
    row("browser", "navigation_timeout_ms", "", "5", "5", false),
    row("browser", "navigation_timeout_ms", "", "99999999", "7000", true),
    row("browser", "stable_timeout_ms", "", "5", "5", false),
    row("browser", "stable_timeout_ms", "", "99999999", "5000", true),
    row("browser", "stable_interval_ms", "", "5", "5", false),
    row("browser", "stable_interval_ms", "", "99999999", "500", true),
    row("browser", "log_quiet_ms", "", "5", "5", false),
    row("browser", "log_quiet_ms", "", "99999999", "500", true),
    row("browser", "log_wait_ms", "", "5", "5", false),
    row("browser", "log_wait_ms", "", "99999999", "3000", true),
    row("browser", "network_probe_ms", "", "5", "5", false),
    row("browser", "network_probe_ms", "", "99999999", "100", true),
    row("browser", "scroll_delay_ms", "", "5", "5", false),
    row("browser", "scroll_delay_ms", "", "99999999", "300", true),
    row("browser", "command_timeout_ms", "", "5", "5", false),
    row("browser", "command_timeout_ms", "", "99999999", "30000", true),
    row("commands", "permissions", r#"'{"allow":["npm *"]}'"#, r#"'{"allow":["npm test","curl *"],"deny":["npm run x*"]}'"#,
        r#"'{"allow":["npm test"],"deny":["npm run x*"],"allowRedirects":false}'"#, true),
    row("commands", "permissions", "", r#"'{"deny":["rm *"]}'"#, r#"'{"deny":["rm *"]}'"#, false),
    row("commands", "permissions", r#"'{"allow":["ls *"],"allowRedirects":true}'"#, r#"'{"allowRedirects":true}'"#,
        r#"'{"allow":["ls *"],"deny":[],"allowRedirects":true}'"#, false),
    row("commands", "default_timeout_ms", "", "10", "10", false),
    row("commands", "default_timeout_ms", "", "99999999", "30000", true),
    row("commands", "long_timeout_ms", "", "10", "10", false),
    row("commands", "long_timeout_ms", "", "99999999", "300000", true),
    row("commands", "keep_background", "true", "false", "false", false),
    row("commands", "keep_background", "", "true", "false", true),
    row("commands", "sandbox", "", r#""workspace-write""#, r#""workspace-write""#, false),
    row("commands", "sandbox", r#""workspace-write""#, r#""read-only""#, r#""read-only""#, false),
    row("commands", "sandbox", r#""read-only""#, r#""workspace-write""#, r#""read-only""#, true),
    row("commands", "sandbox", r#""workspace-write""#, r#""off""#, r#""workspace-write""#, true),
    row("commands", "network", "", "false", "false", false),
    row("commands", "network", "false", "true", "false", true),
    row("commands", "sandbox_assume_unsupported", "", "true", "true", false),
    row("commands", "sandbox_assume_unsupported", "true", "false", "true", true),
    row("commands", "withhold_env", r#"["A"]"#, r#"["B*"]"#, r#"["A", "B*"]"#, false),
    row("commands", "pass_env", r#"["A"]"#, r#"["OPENAI_API_KEY"]"#, r#"["A"]"#, true),
    row("hooks", "timeout_ms", "", "5", "60000", true),
    row("hooks", "pre_tool_use", "", r#"[{ command = "./x.sh" }]"#, "[]", true),
    row("hooks", "post_tool_use", "", r#"[{ command = "./x.sh" }]"#, "[]", true),
    row("hooks", "max_output_bytes", "", "5", "1048576", true),
    row("isolation", "enabled", "false", "true", "true", false),
    row("isolation", "enabled", "", "false", "true", true),
    row("isolation", "memory_mb", "", "64", "64", false),
    row("isolation", "memory_mb", "", "99999999", "2048", true),
    row("isolation", "cpu_ms", "", "5", "5", false),
    row("isolation", "cpu_ms", "", "99999999", "30000", true),
    row("isolation", "stack_mb", "", "2", "2", false),
    row("isolation", "stack_mb", "", "99999", "64", true),
    row("isolation", "timeout_ms", "", "5", "5", false),
    row("isolation", "timeout_ms", "", "99999999", "30000", true),
    row("isolation", "max_output_bytes", "", "5", "5", false),
    row("isolation", "max_output_bytes", "", "99999999999", "67108864", true),
    row("isolation", "max_children", "", "1", "1", false),
    row("isolation", "max_children", "", "999", "4", true),
    row("limits", "max_result_bytes", "", "5", "5", false),
    row("limits", "max_result_bytes", "", "99999999999", "1048576", true),
    row("mcp", "settings", "", r#""/tmp/mcp.json""#, "-", true),
    row("mcp", "startup_timeout_ms", "", "5", "5", false),
    row("mcp", "startup_timeout_ms", "", "99999999", "30000", true),
    row("mcp", "call_timeout_ms", "", "5", "5", false),
    row("mcp", "call_timeout_ms", "", "99999999", "60000", true),
    row("mcp", "poll_ms", "", "1", "1000", true),
    row("mcp", "max_list_pages", "", "2", "2", false),
    row("mcp", "max_list_pages", "", "99999", "100", true),
    row("mcp", "max_list_bytes", "", "5", "5", false),
    row("mcp", "max_list_bytes", "", "99999999999", "16777216", true),
    row("mcp", "max_message_bytes", "", "5", "5", false),
    row("mcp", "max_message_bytes", "", "99999999999", "16777216", true),
    row("plugins", "dirs", "", r#"["/x"]"#, "[]", true),
    row("plugins", "overrides", r#"["read_file", "list_files"]"#, r#"["read_file", "search_files"]"#, r#"["read_file"]"#, true),
    row("plugins", "overrides", r#"["read_file", "list_files"]"#, r#"["list_files"]"#, r#"["list_files"]"#, false),
    row("plugins", "trusted_workspaces", "", r#"["/"]"#, "[]", true),
    row("plugins", "max_abandoned", "", "1", "1", false),
    row("plugins", "max_abandoned", "", "100", "4", true),
    row("plugins", "unload", "", "false", "true", true),
    row("plugins", "lease_poll_ms", "", "0", "100", true),
    row("plugins", "bulk_priority", "", r#""normal""#, r#""idle""#, true),
    row("plugins", "worker_spin_us", "", "10000", "200", true),
    row("plugins", "isolation", r#""process""#, r#""in-process""#, r#""process""#, true),
    row("plugins", "isolation_per_plugin", "", r#"{ evil = "in-process" }"#, "{}", true),
    row("plugins", "process", "", "{ memory_mb = 0 }", "{ cpu_ms = 0, kill_grace_ms = 250, max_message_bytes = 268435456, memory_mb = 4096, poll_ms = 20, quarantine_after = 5, quarantine_window_ms = 60000, restart_backoff_max_ms = 10000, restart_backoff_ms = 100, stall_ms = 10000, start_timeout_ms = 10000 }", true),
    row("plugins", "config", "", "{ my_tool = { token = \"x\" } }", "{}", true),
    row("skills", "enabled", "", "false", "false", false),
    row("skills", "enabled", "false", "true", "false", true),
    row("skills", "dirs", "", r#"["/x"]"#, "-", true),
    row("subagents", "enabled", "", "false", "false", false),
    row("subagents", "enabled", "false", "true", "false", true),
    row("subagents", "agents_dir", "", r#""/x""#, "-", true),
    row("subagents", "max_turns", "", "3", "3", false),
    row("subagents", "max_turns", "", "3000", "50", true),
    row("subagents", "request_timeout_ms", "", "5", "5", false),
    row("subagents", "request_timeout_ms", "", "99999999", "120000", true),
    row("subagents", "base_url", "", r#""http://127.0.0.1:1""#, "-", true),
    row("subagents", "model", "", r#""m""#, "-", true),
    row("subagents", "api_key_env", "", r#""HOME""#, r#""OPENAI_API_KEY""#, true),
    row("subagents", "context_window", "", "7", "0", true),
    row("subagents", "max_response_bytes", "", "5", "5", false),
    row("subagents", "max_response_bytes", "", "99999999999", "16777216", true),
    row("tasks", "focus_chain", "", "true", "true", false),
    row("tasks", "remind_interval", "", "2", "2", false),
    row("tasks", "double_check_completion", "", "true", "true", false),
    row("timeouts", "commit_ms", "", "5", "5", false),
    row("timeouts", "commit_ms", "", "99999999", "60000", true),
    row("timeouts", "call_ms", "", "5", "5", false),
    row("timeouts", "call_ms", "", "99999999", "600000", true),
    row("timeouts", "prepare_ms", "", "5", "5", false),
    row("timeouts", "prepare_ms", "", "99999999", "30000", true),
    row("serve", "max_connections", "", "4", "4", false),
    row("serve", "max_connections", "", "100000", "64", true),
    row("serve", "auth_timeout_ms", "", "5", "5", false),
    row("serve", "auth_timeout_ms", "", "99999999", "10000", true),
    row("serve", "max_body_bytes", "", "10", "10", false),
    row("serve", "max_body_bytes", "", "99999999999", "4194304", true),
    row("serve", "accept_backoff_ms", "", "5", "5", false),
    row("serve", "accept_backoff_ms", "", "99999999", "50", true),
    row("serve", "profile", "", r#""cline""#, r#""mcp""#, true),
    row("serve", "mcp_startup_ms", "", "5", "5", false),
    row("serve", "mcp_startup_ms", "", "99999999", "5000", true),
    row("serve", "session_idle_ms", "", "5", "5", false),
    row("serve", "session_idle_ms", "", "999999999", "1800000", true),
    row("serve", "roots_timeout_ms", "", "5", "5", false),
    row("serve", "roots_timeout_ms", "", "99999999", "5000", true),
    row("serve", "max_sessions", "", "4", "4", false),
    row("serve", "max_sessions", "", "100000", "256", true),
    row("timeouts", "shutdown_ms", "", "5", "5", false),
    row("timeouts", "shutdown_ms", "", "99999999", "2000", true),
    row("timeouts", "list_files_ms", "", "5", "5", false),
    row("timeouts", "list_files_ms", "", "99999999", "10000", true),
    row("timeouts", "ask_ms", "", "10", "10", false),
    row("timeouts", "ask_ms", "10", "0", "10", true),
    row("timeouts", "ask_ms", "10", "20", "10", true),
    row("timeouts", "watch_debounce_ms", "", "1", "300", true),
    row("timeouts", "kill_grace_ms", "", "5", "5", false),
    row("timeouts", "kill_grace_ms", "", "99999999", "2000", true),
    row("timeouts", "command_notice_ms", "", "5", "5", false),
    row("timeouts", "command_notice_ms", "", "99999999", "15000", true),
    row("timeouts", "cancel_grace_ms", "", "5", "5", false),
    row("timeouts", "cancel_grace_ms", "", "99999999", "500", true),
    row("web", "provider", "", r#""cline""#, "-", true),
    row("web", "enabled", "true", "false", "false", false),
    row("web", "enabled", "", "true", "false", true),
    row("web", "feature_flag", "true", "false", "false", false),
    row("web", "feature_flag", "", "true", "false", true),
    row("web", "api_base_url", "", r#""http://127.0.0.1:9""#, r#""https://api.cline.bot""#, true),
    row("web", "backend", "", r#""direct""#, r#""cline""#, true),
    row("web", "fetch_timeout_ms", "", "5", "5", false),
    row("web", "fetch_timeout_ms", "", "99999999", "15000", true),
    row("web", "allowed_hosts", r#"["a.example", "b.example"]"#, r#"["b.example", "127.0.0.1"]"#, r#"["b.example"]"#, true),
    row("web", "allowed_hosts", "", r#"["127.0.0.1"]"#, "[]", true),
    row("web", "denied_hosts", r#"["a.example"]"#, r#"["b.example"]"#, r#"["a.example", "b.example"]"#, false),
    row("web", "allow_private_addresses", "true", "false", "false", false),
    row("web", "allow_private_addresses", "", "true", "false", true),
    row("web", "max_redirects", "", "1", "1", false),
    row("web", "max_redirects", "", "50", "5", true),
    row("web", "max_response_bytes", "", "10", "10", false),
    row("web", "max_response_bytes", "", "99999999999", "10485760", true),
    row("web", "proxy", "", r#""http://127.0.0.1:9""#, "-", true),
    row("web", "ca_file", "", r#""/tmp/evil.pem""#, "-", true),
];

/// The field names serde's derive declares for a struct, read by a deserializer that only listens.
fn fields<T: for<'de> Deserialize<'de>>() -> &'static [&'static str] {
    struct Listen<'a>(&'a Cell<&'static [&'static str]>);
    impl<'de> Deserializer<'de> for Listen<'_> {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("listening only"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            self.0.set(fields);
            Err(de::Error::custom("listening only"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
            unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
        }
    }
    let heard = Cell::new(&[][..]);
    let _ = T::deserialize(Listen(&heard));
    heard.get()
}

/// Every (section, key) of the schema.
fn schema_keys() -> BTreeSet<(&'static str, &'static str)> {
    let sections: [(&str, &[&str]); 14] = [
        ("approval", fields::<ApprovalConfig>()),
        ("browser", fields::<BrowserConfig>()),
        ("commands", fields::<CommandsConfig>()),
        ("hooks", fields::<HooksConfig>()),
        ("isolation", fields::<IsolationConfig>()),
        ("limits", fields::<LimitsConfig>()),
        ("mcp", fields::<McpConfig>()),
        ("plugins", fields::<PluginsConfig>()),
        ("serve", fields::<ServeConfig>()),
        ("skills", fields::<SkillsConfig>()),
        ("subagents", fields::<SubagentsConfig>()),
        ("tasks", fields::<TasksConfig>()),
        ("timeouts", fields::<TimeoutsConfig>()),
        ("web", fields::<WebConfig>()),
    ];
    let names: BTreeSet<&str> = sections.iter().map(|(name, _)| *name).collect();
    assert_eq!(names, fields::<Config>().iter().copied().collect(), "a section of Config is missing here");
    sections.iter().flat_map(|(section, keys)| keys.iter().map(move |key| (*section, *key))).collect()
}

/// Loads the user file `user` and the workspace file `workspace` of `scratch`, with no environment.
fn load(scratch: &Scratch, user: &str, workspace: &str) -> Result<LoadedConfig, ConfigError> {
    scratch.write_user(user);
    scratch.write_workspace(workspace);
    scratch.loader().load()
}

fn value(text: &str) -> Value {
    format!("v = {text}").parse::<toml::Table>().unwrap().remove("v").unwrap()
}

/// The shapes in which a key fits the schema: all three spell the same table.
fn fitting(section: &str, key: &str, value: &str) -> [String; 3] {
    [
        format!("[{section}]\n{key} = {value}\n"),
        format!("{section}.{key} = {value}\n"),
        format!("{section} = {{ {key} = {value} }}\n"),
    ]
}

/// Shapes that do not fit, with the key path the error must name.
fn misfits(section: &str, key: &str, value: &str) -> Vec<(String, String)> {
    let mut shapes = vec![
        (format!("{section} = [{{ {key} = {value} }}]\n"), section.to_owned()),
        (format!("[[{section}]]\n{key} = {value}\n"), section.to_owned()),
        (format!("{section} = [{value}]\n"), section.to_owned()),
        (format!("{section} = {value}\n"), section.to_owned()),
        (format!("[{section}]\n{key} = [{value}]\n"), format!("{section}.{key}")),
        (format!("{section} = {{ {key} = [[{value}]] }}\n"), format!("{section}.{key}")),
    ];
    // An array of tables is the shape of the hook lists; for every other key it does not fit.
    if !(section == "hooks" && key.ends_with("_tool_use")) {
        shapes.push((format!("[[{section}.{key}]]\nx = 1\n"), format!("{section}.{key}")));
    } else {
        shapes.push((format!("[[{section}.{key}]]\nx = 1\n"), format!("{section}.{key}[0]")));
        shapes.push((format!("{section}.{key} = [[\"matcher\", \"./x.sh\"]]\n"), format!("{section}.{key}[0]")));
    }
    shapes
}

#[test]
fn every_key_is_tested() {
    let tested: BTreeSet<(&str, &str)> = ROWS.iter().map(|row| (row.section, row.key)).collect();
    assert_eq!(tested, schema_keys(), "every key of the schema needs a row in ROWS");
}

#[test]
fn every_key_in_every_fitting_shape_only_tightens() {
    let scratch = Scratch::new();
    for row in ROWS {
        let user = if row.user.is_empty() {
            String::new()
        } else {
            format!("[{}]\n{} = {}\n", row.section, row.key, row.user)
        };
        for text in fitting(row.section, row.key, row.workspace) {
            let what = format!("{}.{} in {text:?} over {user:?}", row.section, row.key);
            let loaded = load(&scratch, &user, &text).unwrap_or_else(|err| panic!("{what}: {err}"));
            let merged = Value::try_from(&loaded.config).unwrap();
            let got = merged.get(row.section).and_then(|section| section.get(row.key));
            if row.merged == "-" {
                assert_eq!(got, None, "{what}");
            } else {
                assert_eq!(got, Some(&value(row.merged)), "{what}");
            }
            let named = format!("`{}.{}", row.section, row.key);
            assert_eq!(!loaded.warnings.is_empty(), row.ignored, "{what}: {:?}", loaded.warnings);
            assert!(loaded.warnings.iter().all(|w| w.contains(&named)), "{what}: {:?}", loaded.warnings);
        }
    }
}

#[test]
fn every_key_in_every_other_shape_is_an_error_naming_file_and_key() {
    let scratch = Scratch::new();
    let file = scratch.workspace.join(".toolshed/config.toml");
    for row in ROWS {
        for (text, key) in misfits(row.section, row.key, row.workspace) {
            let err = match load(&scratch, "", &text) {
                Ok(loaded) => panic!("{text:?} was accepted: {:?}", loaded.config),
                Err(err) => err,
            };
            let shown = err.to_string();
            assert!(shown.contains(&file.display().to_string()), "{text:?}: {shown}");
            assert!(shown.contains(&format!("`{key}")), "{text:?} must name `{key}`: {shown}");
            assert!(!shown.contains('\n'), "{shown}");
        }
    }
}

#[test]
fn the_review_payloads_are_errors() {
    let scratch = Scratch::new();
    for text in [
        "approval = [true, true, true]\n",
        "plugins = [[\".toolshed/plugins\"]]\n",
        "mcp = [\".toolshed/mcp.json\"]\n",
        "hooks = [60000, [[\"\", \"id\"]]]\n",
        "[[approval]]\nyolo = true\n",
        "web = [\"cline\", true, true, \"http://127.0.0.1:1\"]\n",
    ] {
        let err = load(&scratch, "", text).unwrap_err();
        assert!(matches!(err, ConfigError::Parse { .. }), "{text:?}: {err}");
    }
}
