//! Names and shared-handler aliases: one instance serves several names; taken and reserved names refused.

use crate::util::*;
use serde_json::json;
use toolshed::{Config, RegisterEvent, Runtime};

#[test]
fn one_handler_instance_serves_every_alias_with_its_own_spec() {
    let runtime = Runtime::builder().plugin_file(fixture("fixture_tools")).yes(true).build().unwrap();
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    for name in ["echo_a", "echo_b", "echo_c", "echo_a"] {
        let result = call(&task, name, json!({"text": "hi"}));
        assert_eq!(result.description, format!("[{name} for 'hi']"));
        assert_eq!(text(&result), format!("{name} says hi (instance 1 of 1)"));
    }
    let tools = runtime.tools();
    let b = tools.iter().find(|t| t.name == "echo_b").unwrap();
    assert_eq!(b.primary, "echo_a");
    assert_eq!(b.aliases, vec!["echo_a", "echo_c"]);
    assert_eq!(runtime.spec("echo_c", "generic").unwrap().description, "Echoes its text (echo_c).");
    assert_eq!(runtime.spec("echo_a", "some-family").unwrap().description, "Echoes its text (echo_a).");
}

fn refusals(runtime: &Runtime) -> Vec<String> {
    runtime
        .register_events()
        .iter()
        .filter_map(|e| match e {
            RegisterEvent::Refused { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_taken_name_is_refused_naming_both_files_and_reserved_names_are_refused() {
    let shipped_file = plugins().join(lib("read_file"));
    let clash = fixture("fixture_clash");
    let runtime = Runtime::builder().plugin_file(&shipped_file).plugin_file(&clash).build().unwrap();
    let refused = refusals(&runtime);
    assert_eq!(refused.len(), 4, "{refused:?}");
    assert_eq!(
        refused[0],
        format!(
            "tool name 'read_file' is already registered by {}; {} cannot register it too (to replace a built-in tool, list 'read_file' in [plugins] overrides of your user config)",
            shipped_file.display(),
            clash.display()
        )
    );
    assert!(refused[1]
        .ends_with("tool name 'bad name!' is invalid: names are 1 to 64 characters of a-z, A-Z, 0-9, '_' and '-'"));
    assert!(refused[2].contains("tool name 'srv__mcp__tool' is reserved"));
    assert!(refused[3].contains("tool name 'use_subagent_x' is reserved"));
    let ws = workspace();
    std::fs::write(ws.path().join("f.txt"), "shipped\n").unwrap();
    let result = call(&task_in(&runtime, ws.path()), "read_file", json!({"path": "f.txt"}));
    assert_eq!(text(&result), "1 | shipped\n\n(File has 1 lines total.)");
}

#[test]
fn the_user_config_can_let_a_plugin_override_a_built_in_name() {
    let mut config = Config::default();
    config.plugins.overrides = vec!["read_file".to_owned()];
    let runtime = Runtime::builder()
        .plugin_file(plugins().join(lib("read_file")))
        .plugin_file(fixture("fixture_clash"))
        .config(config)
        .yes(true)
        .build()
        .unwrap();
    assert_eq!(refusals(&runtime).len(), 3);
    let ws = workspace();
    let result = call(&task_in(&runtime, ws.path()), "read_file", json!({"path": "f.txt"}));
    assert_eq!(text(&result), "the fixture_clash read_file");
    let info = runtime.tools().into_iter().find(|t| t.name == "read_file").unwrap();
    assert_eq!(info.plugin, "fixture_clash");
}
