//! Loading: shipped plugins, corrupt and foreign libraries refused cleanly while the others load.

use crate::util::*;
use serde_json::json;
use toolshed::{RegisterEvent, Runtime, ToolId};

#[test]
fn shipped_plugins_load_and_list_with_versions() {
    let runtime = shipped().build().unwrap();
    assert_eq!(runtime.load_errors(), &[]);
    let tools = runtime.tools();
    let read_file = tools.iter().find(|t| t.name == "read_file").expect("read_file is listed");
    assert_eq!(read_file.plugin, "read_file");
    assert_eq!(read_file.version, env!("CARGO_PKG_VERSION"));
    assert!(read_file.capabilities.contains(&"read_only".to_owned()));
    // Every shipped tool carries one of Cline's built-in names.
    for tool in &tools {
        assert!(ToolId::from_name(&tool.name).is_builtin(), "{} is not a built-in name", tool.name);
    }
}

#[test]
fn bad_libraries_are_refused_and_the_others_still_serve() {
    let dir = workspace();
    std::fs::copy(plugins().join(lib("read_file")), dir.path().join(lib("read_file"))).unwrap();
    // Random bytes, a text file with a library's name, and two plugins built against foreign interfaces.
    let noise: Vec<u8> = (0..4096u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    std::fs::write(dir.path().join(lib("corrupt")), noise).unwrap();
    std::fs::write(dir.path().join(lib("empty")), b"").unwrap();
    std::fs::copy(foreign().join(lib("fixture_api_v2")), dir.path().join(lib("fixture_api_v2"))).unwrap();
    std::fs::copy(foreign().join(lib("fixture_old_layout")), dir.path().join(lib("fixture_old_layout"))).unwrap();

    let runtime = Runtime::builder().plugin_dir(dir.path()).build().unwrap();
    let errors = runtime.load_errors();
    let reason = |name: &str| {
        errors
            .iter()
            .find(|e| e.file == dir.path().join(lib(name)))
            .unwrap_or_else(|| panic!("no load error for {name}: {errors:?}"))
            .reason
            .clone()
    };
    assert_eq!(errors.len(), 4, "{errors:?}");
    assert!(reason("corrupt").starts_with("not a loadable library"), "{}", reason("corrupt"));
    assert!(reason("empty").starts_with("not a loadable library"), "{}", reason("empty"));
    let version = reason("fixture_api_v2");
    assert_eq!(
        version,
        "incompatible plugin interface layout (incompatible package versions: expected 0.1.0, found 0.2.0); rebuild the plugin against toolshed-plugin-api 0.1.0"
    );
    let layout = reason("fixture_old_layout");
    assert!(layout.starts_with("incompatible plugin interface layout"), "{layout}");
    assert!(layout.ends_with("rebuild the plugin against toolshed-plugin-api 0.1.0"), "{layout}");
    for error in errors {
        assert!(!error.reason.contains('\n') && error.reason.len() < 600, "not one short line: {}", error.reason);
    }

    let names: Vec<String> = runtime.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names, vec!["read_file"]);
    let ws = workspace();
    std::fs::write(ws.path().join("a.txt"), "one\ntwo\n").unwrap();
    let result = call(&task_in(&runtime, ws.path()), "read_file", json!({"path": "a.txt"}));
    assert_eq!(text(&result), "1 | one\n2 | two\n\n(File has 2 lines total.)");
}

#[test]
fn constructor_panics_and_declines_leave_the_rest_registered() {
    let runtime = Runtime::builder().plugin_file(fixture("fixture_tools")).build().unwrap();
    let events = runtime.register_events();
    let refused: Vec<&String> = events
        .iter()
        .filter_map(|e| match e {
            RegisterEvent::Refused { reason, .. } => Some(reason),
            _ => None,
        })
        .collect();
    assert_eq!(refused.len(), 1, "{events:?}");
    assert!(
        refused[0].contains("constructing the handler of 'panic_constructor' failed: panicked at"),
        "{}",
        refused[0]
    );
    assert!(refused[0].contains("fixture panic in the constructor"), "{}", refused[0]);
    assert!(events.iter().any(|e| matches!(e, RegisterEvent::Declined { name, .. } if name == "declined_tool")));
    let names: Vec<String> = runtime.tools().into_iter().map(|t| t.name).collect();
    assert!(!names.contains(&"panic_constructor".to_owned()) && !names.contains(&"declined_tool".to_owned()));
    assert!(names.contains(&"sleep".to_owned()) && names.contains(&"echo_a".to_owned()));
}

#[test]
fn many_runtimes_live_in_one_process() {
    let runtimes: Vec<_> = (0..3).map(|_| shipped().build().unwrap()).collect();
    let ws = workspace();
    std::fs::write(ws.path().join("x.txt"), "x\n").unwrap();
    for runtime in &runtimes {
        let result = call(&task_in(runtime, ws.path()), "read_file", json!({"path": "x.txt"}));
        assert_eq!(text(&result), "1 | x\n\n(File has 1 lines total.)");
    }
    drop(runtimes);
}

#[test]
fn a_host_loop_can_run_on_the_runtime_thread() {
    let runtime = Runtime::builder().plugin_file(fixture("fixture_tools")).build().unwrap();
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    let done = block_on(runtime.run_on_runtime(move || async move {
        let mut ok = 0;
        for i in 0..100 {
            let result = task.execute(toolshed::ToolUse::new(format!("n{i}"), "noop", json!({}))).await;
            ok += usize::from(result.status == toolshed::ResultStatus::Success);
        }
        ok
    }));
    assert_eq!(done, Some(100));
}

#[test]
fn plugins_built_against_the_first_released_interface_still_load_and_serve() {
    // host-tests/fixtures-foreign/previous holds a frozen copy of plugin-api 0.1.0; every later plugin-api must
    // keep serving plugins built against it (the ABI grows only through JSON fields and service names).
    let runtime =
        Runtime::builder().plugin_file(foreign().join(lib("fixture_previous_api"))).yes(true).build().unwrap();
    assert_eq!(runtime.load_errors(), &[]);
    let ws = workspace();
    let result = call(&task_in(&runtime, ws.path()), "greet_v0_1", json!({"name": "old friend"}));
    assert_eq!(text(&result), "hello old friend from .");
}
