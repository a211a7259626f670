//! Everyday use: `cargo xtask install` from a fresh HOME as the README says, `toolshed plugins`, the error of a
//! run with no plugins, the `tools` table, and the log's filter and colours.

use crate::util::*;
use std::io::BufRead as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// `cargo xtask install ARGS` as a user runs it, with HOME set to `home` and nothing else of ours in the
/// environment; `--debug --no-build` installs what `cargo xtask test` built, so the suite takes no release
/// build (and runs no cargo inside the test run).
fn xtask_install(home: &Path, args: &[&str]) -> Output {
    let xtask = repo_root().join("target/debug/xtask");
    assert!(xtask.is_file(), "{} not found: run `cargo xtask test`", xtask.display());
    Command::new(xtask)
        .arg("install")
        .args(["--debug", "--no-build"])
        .args(args)
        .current_dir(repo_root())
        .env("HOME", home)
        .env_remove("CARGO_HOME")
        .env_remove("CARGO_INSTALL_ROOT")
        .env_remove("TOOLSHED_PLUGINS")
        .output()
        .unwrap()
}

/// Runs an installed `toolshed` with HOME `home` and no `--plugins` or `$TOOLSHED_PLUGINS`.
fn run_installed(bin: &Path, home: &Path, cwd: &Path, args: &[&str]) -> Output {
    Command::new(bin).args(args).current_dir(cwd).env("HOME", home).env_remove("TOOLSHED_PLUGINS").output().unwrap()
}

/// The file names in `dir`, sorted: hidden temporary files would show here.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn cargo_xtask_install_into_a_fresh_home_gives_a_toolshed_that_works_with_nothing_else_set_up() {
    let home = workspace();
    let out = xtask_install(home.path(), &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let bin = home.path().join(".cargo/bin/toolshed");
    assert!(bin.metadata().unwrap().mode() & 0o111 != 0, "the binary is executable");
    let installed = home.path().join(".toolshed/plugins");
    assert_eq!(names_in(&installed), names_in(&plugins()), "every shipped plugin, and nothing else");

    let ws = workspace();
    std::fs::write(ws.path().join("README.md"), "# Title\n").unwrap();
    let tools = run_installed(&bin, home.path(), ws.path(), &["tools"]);
    assert!(tools.status.success(), "{}", stderr(&tools));
    assert_eq!(stderr(&tools), "", "every plugin loads");
    let listing = stdout(&tools);
    let lines: Vec<&str> = listing.lines().collect();
    assert!(lines[0].starts_with("TOOL ") && lines[0].ends_with("CAPABILITIES"), "{}", lines[0]);
    // Aligned: each column starts where its header does, on every line.
    let columns: Vec<usize> =
        ["PLUGIN", "VERSION", "ALIASES", "CAPABILITIES"].iter().map(|h| lines[0].find(h).unwrap()).collect();
    for line in &lines[1..] {
        for &at in &columns {
            assert!(line[..at].ends_with("  ") && !line[at..].starts_with(' '), "misaligned at {at}: {line:?}");
        }
    }
    let read_file = lines.iter().find(|line| line.starts_with("read_file ")).expect("read_file listed");
    assert!(read_file.split_whitespace().eq(["read_file", "read_file", env!("CARGO_PKG_VERSION"), "-", "read_only"]));

    let call = run_installed(&bin, home.path(), ws.path(), &["call", "read_file", r#"{"path":"README.md"}"#]);
    assert_eq!(call.status.code(), Some(0), "{}", stderr(&call));
    assert_eq!(stdout(&call), "[read_file for 'README.md'] Result:\n1 | # Title\n\n(File has 1 lines total.)\n");
}

#[test]
fn a_prefix_install_replaces_what_was_there_and_the_binary_finds_its_plugins_beside_it() {
    let home = workspace();
    let prefix = workspace();
    // A stale library from an earlier install: replaced by the rename, not written into.
    let plugin_dir = prefix.path().join("lib/toolshed/plugins");
    std::fs::create_dir_all(&plugin_dir).unwrap();
    let stale = plugin_dir.join(lib("read_file"));
    std::fs::write(&stale, b"an old build").unwrap();
    let held = std::fs::File::open(&stale).unwrap();
    let out = xtask_install(home.path(), &["--prefix", &prefix.path().to_string_lossy()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::io::read_to_string(held).unwrap(), "an old build", "the old file was replaced, not rewritten");
    assert_eq!(std::fs::read(&stale).unwrap(), std::fs::read(plugins().join(lib("read_file"))).unwrap());
    assert_eq!(names_in(&plugin_dir), names_in(&plugins()));
    assert!(!home.path().join(".toolshed").exists() && !home.path().join(".cargo").exists());

    // Another user, whose HOME has no plugins: the binary finds them in its prefix.
    let other = workspace();
    let tools = run_installed(&prefix.path().join("bin/toolshed"), other.path(), other.path(), &["tools", "--json"]);
    assert!(tools.status.success(), "{}", stderr(&tools));
    let listed: serde_json::Value = serde_json::from_slice(&tools.stdout).unwrap();
    let read_file = listed.as_array().unwrap().iter().find(|tool| tool["name"] == "read_file").unwrap();
    assert_eq!(read_file["file"], stale.to_string_lossy().as_ref());
}

#[test]
fn plugins_install_list_and_remove_place_and_take_away_whole_libraries() {
    let home = workspace();
    let dir = home.path().join(".toolshed/plugins");
    std::fs::create_dir_all(&dir).unwrap();
    let run = |args: &[&str]| toolshed(home.path(), home.path(), args, &[]);
    // A watcher on the (empty) directory sees every change as a whole library: loaded, reloaded, unloaded,
    // never a failure to load a file seen half-written.
    let mut watch = Command::new(toolshed_bin())
        .arg("watch")
        .env("HOME", home.path())
        .env_remove("TOOLSHED_PLUGINS")
        .env("TOOLSHED_TIMEOUTS_WATCH_DEBOUNCE_MS", "30")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, lines) = std::sync::mpsc::channel();
    let watch_out = watch.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(watch_out).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let next = |prefix: &str| loop {
        let line = lines.recv_timeout(Duration::from_secs(60)).expect("a line from toolshed watch");
        assert!(!line.starts_with("failed"), "{line}");
        if line.starts_with(prefix) {
            return line;
        }
    };
    assert_eq!(next("watching"), format!("watching {}", dir.display()), "watch waits in an empty directory");

    // What a killed install left behind (a pid no process has) is cleared; a live one's is not touched.
    let dead = dir.join(format!(".{}.partial-{}", lib("fixture_reload"), i32::MAX));
    std::fs::write(&dead, b"half").unwrap();
    let live = dir.join(format!(".{}.partial-{}", lib("other"), std::process::id()));
    std::fs::write(&live, b"half").unwrap();
    let installed = dir.join(lib("fixture_reload"));
    let out = run(&["plugins", "install", &fixture("fixture_reload").to_string_lossy()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!("installed fixture_reload 0.0.1 as {} (tools: reload_probe)\n", installed.display())
    );
    assert!(next("loaded").starts_with(&format!("loaded {} plugin=fixture_reload", installed.display())));
    assert!(!dead.exists() && live.exists());
    std::fs::remove_file(&live).unwrap();
    assert_eq!(names_in(&dir), [lib("fixture_reload")], "no temporary file left");

    // Another build of the same plugin replaces it by a rename: a reader of the old file keeps the old bytes.
    let held = std::fs::File::open(&installed).unwrap();
    let variant = fixtures().join("variants").join(lib("fixture_reload"));
    let out = run(&["plugins", "install", &variant.to_string_lossy()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).ends_with("\n  replaced fixture_reload 0.0.1\n"), "{}", stdout(&out));
    assert!(next("reloaded").starts_with(&format!("reloaded {}", installed.display())));
    let held_bytes = std::io::Read::bytes(held).map(Result::unwrap).collect::<Vec<u8>>();
    assert_eq!(held_bytes, std::fs::read(fixture("fixture_reload")).unwrap());
    assert_eq!(std::fs::read(&installed).unwrap(), std::fs::read(&variant).unwrap());

    // Removed by plugin name: gone whole, as the watcher says.
    let out = run(&["plugins", "remove", "fixture_reload"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("removed fixture_reload 0.0.1 ({})\n", installed.display()));
    assert!(next("unloaded").starts_with(&format!("unloaded {}", installed.display())));
    assert!(names_in(&dir).is_empty(), "{:?}", names_in(&dir));
    drop(watch.stdin.take());
    assert!(watch.wait().unwrap().success());

    for fixture_name in ["fixture_reload", "fixture_tools"] {
        let out = run(&["plugins", "install", &fixture(fixture_name).to_string_lossy()]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    let list = run(&["plugins", "list"]);
    assert_eq!(list.status.code(), Some(0), "{}", stderr(&list));
    let rows: Vec<Vec<String>> =
        stdout(&list).lines().map(|line| line.split_whitespace().map(str::to_owned).collect()).collect();
    assert_eq!(rows[0], ["FILE", "PLUGIN", "VERSION", "TOOLS"]);
    assert_eq!(
        rows[1],
        [lib("fixture_reload"), "fixture_reload".to_owned(), "0.0.1".to_owned(), "reload_probe".to_owned()]
    );
    assert_eq!(rows[2][..3], [lib("fixture_tools"), "fixture_tools".to_owned(), "0.0.1".to_owned()]);
    let json = run(&["plugins", "list", "--json"]);
    let listed: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(
        listed[0],
        serde_json::json!({"file": lib("fixture_reload"), "plugin": "fixture_reload", "version": "0.0.1", "tools": ["reload_probe"]})
    );
    assert!(listed[1]["tools"].as_array().unwrap().contains(&"echo_a".into()));
    // The plugins serve with nothing else set up.
    let tools = run(&["tools"]);
    assert!(stdout(&tools).lines().any(|line| line.starts_with("reload_probe ")), "{}", stdout(&tools));

    let out = run(&["plugins", "remove", &lib("fixture_tools")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(names_in(&dir), [lib("fixture_reload")]);
    let again = run(&["plugins", "remove", "fixture_tools"]);
    assert_eq!(again.status.code(), Some(1));
    assert!(stderr(&again).contains("no plugin or library named fixture_tools"), "{}", stderr(&again));
    assert!(stderr(&again).ends_with(&format!("installed: fixture_reload ({})\n", lib("fixture_reload"))));
}

#[test]
fn plugins_install_refuses_what_is_not_a_plugin_and_places_nothing() {
    let home = workspace();
    let src = workspace();
    let dir = home.path().join(".toolshed/plugins");
    let run = |args: &[&str]| toolshed(home.path(), home.path(), args, &[]);
    let refused = |path: &Path, why: &str| {
        let out = run(&["plugins", "install", &path.to_string_lossy()]);
        assert_eq!(out.status.code(), Some(1), "{why}: {}", stderr(&out));
        assert!(stderr(&out).contains(why), "{why}: {}", stderr(&out));
        assert!(stderr(&out).ends_with("toolshed: nothing was installed\n"), "{}", stderr(&out));
        assert!(!stderr(&out).contains('\u{1b}'), "{}", stderr(&out));
        assert_eq!(stdout(&out), "");
        assert!(names_in(&dir).is_empty(), "{why}: {:?}", names_in(&dir));
    };
    let junk = src.path().join(lib("junk"));
    std::fs::write(&junk, b"\x7fELF not a library at all").unwrap();
    refused(&junk, "not a loadable Toolshed plugin: not a loadable library");
    let text = src.path().join("notes.txt");
    std::fs::write(&text, b"notes").unwrap();
    refused(&text, "its name must end in .so");
    // A shared library that is not a Toolshed plugin.
    let libc = Path::new("/lib/x86_64-linux-gnu/libc.so.6");
    if libc.is_file() {
        let copy = src.path().join("libc-copy.so");
        std::fs::copy(libc, &copy).unwrap();
        refused(&copy, "not a Toolshed plugin: it exports no abi_stable root module");
    }

    // A directory: every library in it is checked first, and one bad one means none is placed.
    let mixed = workspace();
    std::fs::copy(fixture("fixture_tools"), mixed.path().join(lib("fixture_tools"))).unwrap();
    std::fs::write(mixed.path().join("README.md"), b"left alone").unwrap();
    std::os::unix::fs::symlink(fixture("fixture_reload"), mixed.path().join(lib("linked"))).unwrap();
    refused(mixed.path(), "a symbolic link");
    std::fs::remove_file(mixed.path().join(lib("linked"))).unwrap();
    assert!(Command::new("mkfifo").arg(mixed.path().join(lib("fifo"))).status().unwrap().success());
    refused(mixed.path(), "not a regular file");
    std::fs::remove_file(mixed.path().join(lib("fifo"))).unwrap();
    std::fs::write(mixed.path().join("lib\u{1b}[2Kx.so"), b"").unwrap();
    refused(mixed.path(), "its name lib\\u{1b}[2Kx.so holds control or invisible characters");
    std::fs::remove_file(mixed.path().join("lib\u{1b}[2Kx.so")).unwrap();
    let out = run(&["plugins", "install", &mixed.path().to_string_lossy()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(names_in(&dir), [lib("fixture_tools")]);

    // A file of that name holding another plugin is replaced only with --force, and the output says so.
    let clash = workspace();
    std::fs::copy(fixture("fixture_clash"), clash.path().join(lib("fixture_tools"))).unwrap();
    let clash_file = clash.path().join(lib("fixture_tools"));
    let out = run(&["plugins", "install", &clash_file.to_string_lossy()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("holds plugin fixture_tools 0.0.1"), "{}", stderr(&out));
    assert_eq!(
        std::fs::read(dir.join(lib("fixture_tools"))).unwrap(),
        std::fs::read(fixture("fixture_tools")).unwrap()
    );
    let out = run(&["plugins", "install", "--force", &clash_file.to_string_lossy()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("\n  replaced plugin fixture_tools 0.0.1, by --force\n"), "{}", stdout(&out));
    assert_eq!(names_in(&dir), [lib("fixture_tools")]);

    // Hostile names to remove, and a directory of thousands of libraries to install.
    for name in ["../x", "a/b", "..", "x\u{1b}[2K"] {
        let out = run(&["plugins", "remove", name]);
        assert_eq!(out.status.code(), Some(2), "{name:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("is not a plugin or file name") && !stderr(&out).contains('\u{1b}'));
    }
    let many = workspace();
    for i in 0..2000 {
        std::fs::write(many.path().join(format!("lib{i}.so")), b"").unwrap();
    }
    let out = run(&["plugins", "install", &many.path().to_string_lossy()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("holds more than 256 libraries"), "{}", stderr(&out));
    assert_eq!(names_in(&dir), [lib("fixture_tools")]);
}

#[test]
fn with_no_plugins_every_command_says_where_it_looked_and_what_to_run() {
    let home = workspace();
    let looked = format!("  {} (does not exist)", home.path().join(".toolshed/plugins").display());
    for args in [
        &["tools"][..],
        &["tools", "--json"],
        &["call", "read_file", r#"{"path":"README.md"}"#],
        &["schema", "--provider", "anthropic"],
        &["serve"],
    ] {
        let out = toolshed(home.path(), home.path(), args, &[]);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert_eq!(stdout(&out), "", "{args:?}");
        let err = stderr(&out);
        assert!(err.starts_with("toolshed: no plugins loaded; looked in:\n"), "{args:?}: {err}");
        assert!(err.lines().any(|line| line == looked), "{args:?}: {err}");
        assert!(err.contains("`cargo xtask install`") && err.contains("`--plugins DIR`"), "{args:?}: {err}");
    }
    // A directory that is there but holds no plugin, or only libraries that do not load.
    let empty = workspace();
    let p = empty.path().to_string_lossy().into_owned();
    let out = toolshed(home.path(), home.path(), &["--plugins", &p, "tools"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains(&format!("  {p} (no plugin libraries)\n")), "{}", stderr(&out));
    std::fs::write(empty.path().join(lib("junk")), b"junk").unwrap();
    let out = toolshed(home.path(), home.path(), &["--plugins", &p, "tools"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("toolshed: plugin not loaded: "), "{}", stderr(&out));
    assert!(stderr(&out).contains(&format!("  {p} (1 library, which did not load)\n")), "{}", stderr(&out));
    // `watch` waits in an empty directory (see the plugins test), but needs one.
    let out = toolshed(home.path(), home.path(), &["watch"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).starts_with("toolshed: no plugin directory to watch; looked in:\n"), "{}", stderr(&out));
}

/// An MCP client that starts `toolshed serve` over stdio and initialises; prints one JSON line of what happened.
const CLIENT: &str = r#"
import asyncio, json, os, sys
from mcp import ClientSession
from mcp.client.stdio import stdio_client, StdioServerParameters

async def main():
    params = StdioServerParameters(command=sys.argv[1], args=["serve"],
                                   env={"HOME": sys.argv[2], "PATH": os.environ.get("PATH", "")})
    async with stdio_client(params) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await asyncio.wait_for(session.initialize(), 60)

try:
    asyncio.run(main())
    print(json.dumps({"initialized": True}), flush=True)
except BaseException as e:
    print(json.dumps({"initialized": False, "error": repr(e)}), flush=True)
"#;

#[test]
fn an_mcp_client_that_starts_serve_with_no_plugins_gets_the_reason_on_stderr() {
    let home = workspace();
    let dir = workspace();
    let script = dir.path().join("client.py");
    std::fs::write(&script, CLIENT).unwrap();
    let out = Command::new(crate::serve::python())
        .arg(&script)
        .arg(toolshed_bin())
        .arg(home.path())
        .current_dir(home.path())
        .output()
        .unwrap();
    let result: serde_json::Value = serde_json::from_str(stdout(&out).lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(&out), stderr(&out)));
    assert_eq!(result["initialized"], false, "{result}");
    // The client passes the server's stderr through: the host's log shows why and what to run.
    let err = stderr(&out);
    assert!(err.contains("toolshed: no plugins loaded; looked in:"), "{err}");
    assert!(err.contains("`cargo xtask install`"), "{err}");
}

#[test]
fn rust_log_is_honoured_toolshed_log_wins_and_a_pipe_gets_no_colour() {
    let home = workspace();
    let p = plugins().to_string_lossy().into_owned();
    let debug = toolshed(home.path(), home.path(), &["--plugins", &p, "tools"], &[("RUST_LOG", "debug")]);
    assert!(debug.status.success());
    let err = stderr(&debug);
    assert!(err.lines().any(|line| line.starts_with("DEBUG ")), "{err}");
    assert!(!err.contains('\u{1b}'), "no colour codes on a pipe: {err:?}");
    let quiet = toolshed(
        home.path(),
        home.path(),
        &["--plugins", &p, "tools"],
        &[("RUST_LOG", "debug"), ("TOOLSHED_LOG", "warn")],
    );
    assert_eq!(stderr(&quiet), "");
    let bad = toolshed(home.path(), home.path(), &["--plugins", &p, "tools"], &[("RUST_LOG", "toolshed=loud")]);
    assert!(bad.status.success());
    assert!(stderr(&bad).starts_with("toolshed: RUST_LOG=toolshed=loud: "), "{}", stderr(&bad));

    // Text in a log line is escaped: a workspace whose name redraws the line, with plugins it may not load.
    let parent = workspace();
    let ws = parent.path().join("ws-\u{1b}[2K\rred");
    std::fs::create_dir_all(ws.join(".toolshed/plugins")).unwrap();
    let out = toolshed(home.path(), &ws, &["--plugins", &p, "tools"], &[]);
    let err = stderr(&out);
    assert!(err.contains("WARN not loading ") && err.contains("ws-\\u{1b}[2K\\rred"), "{err}");
    assert!(!err.contains('\u{1b}') && !err.contains('\r'), "{err:?}");

    // On a terminal (`script` gives the command one), the level is coloured and the message still escaped.
    let script = Path::new("/usr/bin/script");
    if script.is_file() {
        let command = format!(
            "cd '{}' && HOME='{}' '{}' --plugins '{p}' tools >/dev/null",
            ws.display(),
            home.path().display(),
            toolshed_bin().display()
        );
        let out =
            Command::new(script).args(["-qec", &command, "/dev/null"]).env_remove("TOOLSHED_PLUGINS").output().unwrap();
        let shown = stdout(&out);
        assert!(shown.contains("\u{1b}[33m WARN\u{1b}[0m") || shown.contains("\u{1b}[33mWARN"), "{shown:?}");
        assert!(shown.contains("ws-\\u{1b}[2K\\rred"), "{shown:?}");
    }
}
