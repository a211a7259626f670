//! Class 3, the host's secrets: commands keep the user's environment (their `PATH`, `JAVA_HOME`,
//! `SSH_AUTH_SOCK`) minus the host's own secrets, by one rule (`TOOLSHED_*`, `[subagents] api_key_env`,
//! `[commands] withhold_env`, less `pass_env`); nothing reads them from the host either (its environment, its
//! memory, its command line); MCP stdio servers get the MCP SDK's default environment and their own `env`.

use super::{cli, command_text, user_config, user_dir};
use std::process::Stdio;

/// The host's environment in these tests: secrets and ordinary settings side by side.
const HOST_ENV: &[(&str, &str)] = &[
    ("TOOLSHED_SERVE_TOKEN", "serve-secret-1"),
    ("TOOLSHED_WEB_TOKEN", "web-secret-2"),
    ("OPENAI_API_KEY", "api-secret-3"),
    ("TOOLSHED_APPROVAL_TOOLS", "{}"),
    ("MY_DEPLOY_KEY", "deploy-secret-4"),
    ("AWS_SECRET_ACCESS_KEY", "aws-secret-5"),
    ("JAVA_HOME", "/opt/java-home-kept"),
    ("SSH_AUTH_SOCK", "/tmp/ssh-kept/agent.1"),
    ("ANTHROPIC_API_KEY", "passed-on-purpose-6"),
];

/// The first of the host's own secrets (its tokens, the API key `[subagents] api_key_env` names) in `text`.
fn has_secret(text: &str) -> Option<&'static str> {
    ["serve-secret-1", "web-secret-2", "api-secret-3"].into_iter().find(|secret| text.contains(secret))
}

#[test]
fn commands_keep_the_users_environment_without_the_hosts_secrets() {
    let (ws, home) = (user_dir(), user_dir());
    let out = command_text(ws.path(), home.path(), "env; echo \"path=$PATH\"", HOST_ENV);
    assert_eq!(has_secret(&out), None, "a secret reached the command: {out}");
    // Other keys are the user's until the user's config says otherwise (the next test).
    assert!(out.contains("MY_DEPLOY_KEY=deploy-secret-4"), "{out}");
    assert!(!out.contains("TOOLSHED_APPROVAL_TOOLS"), "the runtime's configuration reached the command: {out}");
    for kept in ["JAVA_HOME=/opt/java-home-kept", "SSH_AUTH_SOCK=/tmp/ssh-kept/agent.1", "path=/"] {
        assert!(out.contains(kept), "{kept} is the user's and stays: {out}");
    }
    // The runtime's own marker is the one TOOLSHED_ variable a command carries.
    let names: Vec<&str> =
        out.lines().filter_map(|l| l.split_once('=').map(|(k, _)| k)).filter(|k| k.starts_with("TOOLSHED_")).collect();
    assert_eq!(names, ["TOOLSHED_PROCESS"], "{out}");
}

#[test]
fn the_config_withholds_more_and_passes_what_the_user_names() {
    let (ws, home) = (user_dir(), user_dir());
    user_config(
        home.path(),
        "[commands]\nwithhold_env = [\"MY_DEPLOY_KEY\", \"AWS_*\", \"ANTHROPIC_*\"]\npass_env = [\"ANTHROPIC_API_KEY\", \
         \"TOOLSHED_WEB_TOKEN\"]\n[subagents]\napi_key_env = \"OPENAI_API_KEY\"\n",
    );
    let out = command_text(ws.path(), home.path(), "env", HOST_ENV);
    for secret in ["serve-secret-1", "api-secret-3", "deploy-secret-4", "aws-secret-5"] {
        assert!(!out.contains(secret), "{secret} reached the command: {out}");
    }
    assert!(out.contains("ANTHROPIC_API_KEY=passed-on-purpose-6"), "pass_env wins over a withheld prefix: {out}");
    assert!(out.contains("TOOLSHED_WEB_TOKEN=web-secret-2"), "the user passed it on purpose: {out}");
    // A workspace's config may withhold more, never pass a secret on.
    std::fs::create_dir_all(ws.path().join(".toolshed")).unwrap();
    std::fs::write(ws.path().join(".toolshed/config.toml"), "[commands]\npass_env = [\"OPENAI_API_KEY\"]\n").unwrap();
    super::give_to_user(&ws.path().join(".toolshed"));
    let out = command_text(ws.path(), home.path(), "env", HOST_ENV);
    assert!(!out.contains("api-secret-3"), "a workspace passed the API key on: {out}");
}

#[test]
fn hooks_get_the_same_rule() {
    let (ws, home) = (user_dir(), user_dir());
    let report = ws.path().join("hook-env");
    user_config(home.path(), &format!("[[hooks.pre_tool_use]]\ncommand = \"env > {}\"\n", report.display()));
    let out = command_text(ws.path(), home.path(), "echo ran", HOST_ENV);
    assert!(out.contains("ran"), "{out}");
    let env = std::fs::read_to_string(&report).unwrap();
    assert_eq!(has_secret(&env), None, "a secret reached the hook: {env}");
    assert!(env.contains("JAVA_HOME=/opt/java-home-kept"), "{env}");
}

#[test]
fn nothing_of_the_host_is_readable_from_a_command() {
    let (ws, home) = (user_dir(), user_dir());
    // Its parent is the host: its initial environment, its memory, its command line.
    let out = command_text(
        ws.path(),
        home.path(),
        "tr '\\0' '\\n' < /proc/$PPID/environ; head -c 100000 /proc/$PPID/mem; tr '\\0' ' ' < /proc/$PPID/cmdline; \
         grep -a -o 'secret-[0-9]' /proc/$PPID/environ; true",
        HOST_ENV,
    );
    assert_eq!(has_secret(&out), None, "the host's secrets are readable from its command: {out}");
    assert!(out.contains("Permission denied"), "{out}");
}

#[test]
fn serve_takes_its_token_from_an_owner_only_file_never_from_argv() {
    let (ws, home) = (user_dir(), user_dir());
    let refused = cli(ws.path(), home.path(), &["serve", "--http", "127.0.0.1:0", "--token", "argv-secret"])
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && said.contains("--token-file"), "{said}");
    // A token file others may read is refused, and says how to fix it.
    let file = home.path().join("token");
    std::fs::write(&file, "file-secret-7\n").unwrap();
    super::give_to_user(&file);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let file_arg = file.to_str().unwrap();
    let refused = cli(ws.path(), home.path(), &["serve", "--http", "127.0.0.1:0", "--token-file", file_arg])
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && said.contains("chmod 600"), "{said}");
    // Owner-only: it serves, and neither its command line nor a command it runs shows the token.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    // Beneath `/tmp`, which the workspace-write sandbox grants whole (the file could not be hidden there).
    user_config(home.path(), "[commands]\nsandbox = \"workspace-write\"\n");
    let refused = cli(ws.path(), home.path(), &["serve", "--http", "127.0.0.1:0", "--token-file", file_arg])
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && said.contains("workspace-write sandbox"), "{said}");
    user_config(home.path(), "[commands]\nsandbox = \"read-only\"\n");
    let mut server =
        cli(ws.path(), home.path(), &["serve", "--yes", "--http", "127.0.0.1:0", "--token-file", file_arg])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(server.stderr.take().unwrap()));
    let authority = crate::util::served_authority(&mut lines);
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", server.id())).unwrap_or_default();
    assert!(!String::from_utf8_lossy(&cmdline).contains("file-secret-7"));
    let _server = crate::util::Killed(server);
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    .to_string();
    let answer = post(&authority, "file-secret-7", None, &body);
    assert!(answer.contains("200 OK") && answer.contains("toolshed"), "{answer}");
    let refused = post(&authority, "wrong", None, &body);
    assert!(refused.contains("401"), "{refused}");
    // A sandboxed command the server runs reads everywhere, but not the token's file, whose path anyone can
    // read in the server's command line: with the token it could call the host's tools outside the sandbox.
    let session = answer
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("mcp-session-id:").map(|v| v.trim().to_owned()))
        .unwrap_or_else(|| panic!("no session id: {answer}"));
    let initialized = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    post(&authority, "file-secret-7", Some(&session), &initialized);
    let command = format!("tr ' ' '\\n' < /proc/$PPID/cmdline | tail -c 300; cat {file_arg}; echo rc=$?");
    let call = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "execute_command", "arguments": {"command": command, "requires_approval": false}}})
    .to_string();
    let answer = post(&authority, "file-secret-7", Some(&session), &call);
    assert!(answer.contains("Permission denied") && answer.contains("rc=1"), "{answer}");
    assert!(!answer.contains("file-secret-7"), "a sandboxed command read the serve token: {answer}");
}

/// One HTTP POST of `body` to the MCP endpoint with `token` (and a session); the whole answer.
fn post(authority: &str, token: &str, session: Option<&str>, body: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(authority).unwrap();
    stream.set_read_timeout(Some(super::BOUND)).unwrap();
    let session = session.map(|id| format!("Mcp-Session-Id: {id}\r\n")).unwrap_or_default();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{session}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

#[test]
fn mcp_stdio_servers_get_the_sdks_default_environment_and_their_own() {
    let (ws, home) = (user_dir(), user_dir());
    let report = ws.path().join("server-env");
    let settings = home.path().join("mcp.json");
    let server = serde_json::json!({"mcpServers": {"dump": {
        "command": "/bin/sh",
        "args": ["-c", format!("env > {}; sleep 5", report.display())],
        "env": {"SERVER_OWN": "configured", "OPENAI_API_KEY": "given-by-its-settings"}
    }}});
    std::fs::write(&settings, server.to_string()).unwrap();
    super::give_to_user(&settings);
    user_config(home.path(), &format!("[mcp]\nsettings = \"{}\"\nstartup_timeout_ms = 2000\n", settings.display()));
    // A listed variable whose value is a shell function is code, not a setting: the SDK drops it.
    let env = [("SHELL", "() { echo pwned; }"), ("TERM", "xterm"), ("USER", "someone"), ("LOGNAME", "someone")];
    let all: Vec<(&str, &str)> = HOST_ENV.iter().copied().chain(env).collect();
    // A call that waits for the server (it never answers `initialize`: the start-up timeout ends it).
    let input = serde_json::json!({"server_name": "dump", "tool_name": "x", "arguments": "{}"}).to_string();
    let _ = cli(ws.path(), home.path(), &["call", "--yes", "use_mcp_tool", &input]).envs(all).output().unwrap();
    let deadline = std::time::Instant::now() + super::BOUND;
    while !report.is_file() || std::fs::read_to_string(&report).unwrap_or_default().is_empty() {
        assert!(std::time::Instant::now() < deadline, "the server never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let dumped = std::fs::read_to_string(&report).unwrap();
    let mut names: Vec<&str> = dumped.lines().filter_map(|l| l.split_once('=').map(|(k, _)| k)).collect();
    names.sort_unstable();
    // dash adds PWD of its own; everything else is the SDK's list and the server's settings.
    names.retain(|n| *n != "PWD");
    let expected = ["HOME", "LOGNAME", "OPENAI_API_KEY", "PATH", "SERVER_OWN", "TERM", "TOOLSHED_PROCESS", "USER"];
    assert_eq!(names, expected, "{dumped}");
    assert!(dumped.contains("OPENAI_API_KEY=given-by-its-settings"), "{dumped}");
    assert_eq!(has_secret(&dumped), None, "{dumped}");
}

#[test]
fn a_variable_that_is_not_utf8_is_the_users_and_crashes_nothing() {
    use std::os::unix::ffi::OsStrExt;
    let (ws, home) = (user_dir(), user_dir());
    let input = serde_json::json!({"command": "printenv ODD_BYTES | od -An -tx1", "requires_approval": false});
    let output = cli(ws.path(), home.path(), &["call", "--yes", "execute_command", &input.to_string()])
        .env("ODD_BYTES", std::ffi::OsStr::from_bytes(b"caf\xe9"))
        .env(std::ffi::OsStr::from_bytes(b"ODD_\xffNAME"), "x")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{out}{}", String::from_utf8_lossy(&output.stderr));
    assert!(out.contains("63 61 66 e9 0a"), "the bytes reach the command as they are: {out}");
}
