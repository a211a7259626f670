//! The `toolshed` command as a user runs it: listing, calls, exit codes, and the timeout fixture.

use crate::util::*;

#[test]
fn tools_lists_read_file_with_its_version() {
    let home = workspace();
    let plugins = plugins();
    let out = toolshed(home.path(), home.path(), &["--plugins", plugins.to_str().unwrap(), "tools"], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let line = stdout(&out).lines().find(|l| l.starts_with("read_file ")).map(str::to_owned).expect("read_file listed");
    assert!(line.contains(" read_file ") && line.contains(env!("CARGO_PKG_VERSION")), "{line}");

    let out = toolshed(home.path(), home.path(), &["--plugins", plugins.to_str().unwrap(), "tools", "--json"], &[]);
    let tools: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let read_file = tools.as_array().unwrap().iter().find(|t| t["name"] == "read_file").unwrap();
    assert_eq!(read_file["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(read_file["plugin"], "read_file");
}

#[test]
fn call_prints_the_result_and_exits_by_status() {
    let home = workspace();
    let ws = workspace();
    std::fs::write(ws.path().join("README.md"), "# Title\n\nText.\n").unwrap();
    std::fs::create_dir(ws.path().join("sub")).unwrap();
    std::fs::write(ws.path().join("bin.dat"), [0u8, 1, 2, 0, 255]).unwrap();
    let plugins = plugins();
    let p = plugins.to_str().unwrap();
    let cwd = ws.path().to_str().unwrap();
    let run = |args: &[&str]| {
        let mut all = vec!["--plugins", p, "--cwd", cwd, "call"];
        all.extend_from_slice(args);
        toolshed(home.path(), home.path(), &all, &[])
    };

    let ok = run(&["read_file", r#"{"path":"README.md"}"#]);
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    assert_eq!(
        stdout(&ok),
        "[read_file for 'README.md'] Result:\n1 | # Title\n2 | \n3 | Text.\n\n(File has 3 lines total.)\n"
    );

    for (args, expect) in [
        (vec!["read_file", "{not json"], "Invalid JSON input for read_file"),
        (vec!["read_file", "{}"], "Missing value for required parameter 'path'"),
        (vec!["nope", "{}"], "Tool 'nope' does not exist"),
        (vec!["read_file", r#"{"path":"sub"}"#], "is a directory"),
        (vec!["read_file", r#"{"path":"missing.md"}"#], "Error reading file: File not found: "),
        (vec!["read_file", r#"{"path":"bin.dat"}"#], "Cannot read text for file type: .dat"),
        (vec!["read_file", "[1,2]"], "expected a JSON object of parameters"),
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        assert!(stdout(&out).contains("The tool execution failed with the following error:"), "{args:?}");
        assert!(stdout(&out).contains(expect), "{args:?}: {}", stdout(&out));
        assert!(!stderr(&out).contains("panicked"), "{args:?}: {}", stderr(&out));
    }

    let usage = toolshed(home.path(), home.path(), &["call"], &[]);
    assert_eq!(usage.status.code(), Some(2));
    let bad_config =
        toolshed(home.path(), home.path(), &["--plugins", p, "--config", "/nonexistent.toml", "tools"], &[]);
    assert_eq!(bad_config.status.code(), Some(2));
    assert!(stderr(&bad_config).contains("/nonexistent.toml"), "{}", stderr(&bad_config));
}

#[test]
fn a_timed_out_call_exits_promptly_without_waiting_for_the_plugin() {
    let home = workspace();
    let dir = workspace();
    std::fs::copy(fixture("fixture_tools"), dir.path().join(lib("fixture_tools"))).unwrap();
    let started = std::time::Instant::now();
    let out = toolshed(
        home.path(),
        home.path(),
        &["--plugins", dir.path().to_str().unwrap(), "call", "sleep", r#"{"ms":20000}"#],
        &[("TOOLSHED_TIMEOUTS_CALL_MS", "200")],
    );
    // One generous bound: the plugin sleeps 20 s; the command must be long gone before that.
    assert!(started.elapsed() < std::time::Duration::from_secs(15), "took {:?}", started.elapsed());
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out)
            .contains("Error executing sleep: the tool did not finish within 200 ms and was stopped waiting for."),
        "{}",
        stdout(&out)
    );
}
