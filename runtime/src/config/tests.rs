//! The configuration's tests: every layer, the trust rules and the checks, through [`ConfigLoader`].

use super::*;
use pretty_assertions::assert_eq;
use std::collections::BTreeMap;
use std::fs;
use std::time::Duration;

/// A scratch home with a user file, and a workspace beside it.
/// Shared with `shape_tests`.
pub(super) struct Scratch {
    _dir: tempfile::TempDir,
    pub(super) home: PathBuf,
    pub(super) workspace: PathBuf,
}

impl Scratch {
    pub(super) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        let home = root.join("home");
        let workspace = root.join("ws");
        fs::create_dir_all(home.join(".toolshed")).unwrap();
        fs::create_dir_all(workspace.join(".toolshed")).unwrap();
        Self { _dir: dir, home, workspace }
    }

    pub(super) fn user_path(&self) -> PathBuf {
        self.home.join(".toolshed/config.toml")
    }

    pub(super) fn workspace_path(&self) -> PathBuf {
        self.workspace.join(".toolshed/config.toml")
    }

    pub(super) fn write_user(&self, text: &str) {
        fs::write(self.user_path(), text).unwrap();
    }

    pub(super) fn write_workspace(&self, text: &str) {
        fs::write(self.workspace_path(), text).unwrap();
    }

    fn trust_workspace(&self, extra: &str) {
        self.write_user(&format!(
            "[plugins]\ntrusted_workspaces = [{:?}]\n{extra}",
            self.workspace.display().to_string()
        ));
    }

    /// A loader over this scratch home and workspace, with an empty
    /// environment.
    pub(super) fn loader(&self) -> ConfigLoader {
        ConfigLoader {
            user_file: Some(self.user_path()),
            config_file: None,
            workspace: Some(self.workspace.clone()),
            env: Vec::new(),
            home: Some(self.home.clone()),
        }
    }
}

fn env(vars: &[(&str, &str)]) -> Vec<(String, String)> {
    vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

#[test]
fn defaults() {
    let config = Config::default();
    assert_eq!(config.web.api_base_url, "https://api.cline.bot");
    assert_eq!(config.web.backend, "cline");
    assert!(!config.web.enabled && !config.web.feature_flag);
    assert_eq!(config.commands.default_timeout(), Duration::from_secs(30));
    assert_eq!(config.commands.long_timeout(), Duration::from_secs(300));
    assert!(config.approval.auto_approve_safe);
    assert!(!config.approval.auto_approve_all && !config.approval.yolo);
    assert_eq!(config.plugins.max_abandoned, 4);
    assert_eq!(config.timeouts.call(), Duration::from_secs(600));
    assert_eq!(config.timeouts.prepare(), Duration::from_secs(30));
    assert_eq!(config.timeouts.shutdown(), Duration::from_secs(2));
    assert_eq!(config.timeouts.list_files(), Duration::from_secs(10));
    assert_eq!(config.timeouts.ask(), None);
    assert_eq!(config.timeouts.watch_debounce(), Duration::from_millis(300));
    assert_eq!(Config::from_toml_str("").unwrap(), config);
    assert_eq!(Config::from_toml_str("[web]\n[timeouts]\n").unwrap(), config);

    let scratch = Scratch::new();
    let loaded = scratch.loader().load().unwrap();
    assert_eq!(loaded.config, config);
    assert!(!loaded.workspace_trusted);
    assert_eq!(loaded.warnings, Vec::<String>::new());
}

#[test]
fn ask_is_some_when_set() {
    let config = Config::from_toml_str("[timeouts]\nask_ms = 250").unwrap();
    assert_eq!(config.timeouts.ask(), Some(Duration::from_millis(250)));
}

#[test]
fn layers_take_precedence_in_order() {
    let scratch = Scratch::new();
    scratch.trust_workspace("[timeouts]\ncall_ms = 1\nprepare_ms = 1\nshutdown_ms = 1\nlist_files_ms = 1\n");
    let config_path = scratch.home.join("cli.toml");
    fs::write(&config_path, "[timeouts]\ncall_ms = 2\nprepare_ms = 2\nshutdown_ms = 2\n").unwrap();
    scratch.write_workspace("[timeouts]\ncall_ms = 3\nprepare_ms = 3\n");
    let loaded =
        scratch.loader().config_file(Some(config_path)).env(env(&[("TOOLSHED_TIMEOUTS_CALL_MS", "4")])).load().unwrap();
    assert!(loaded.workspace_trusted);
    let t = &loaded.config.timeouts;
    assert_eq!((t.call_ms, t.prepare_ms, t.shutdown_ms, t.list_files_ms), (4, 3, 2, 1));
    assert_eq!(t.ask_ms, 0, "untouched keys keep their defaults");
}

#[test]
fn tables_merge_and_arrays_replace() {
    let scratch = Scratch::new();
    scratch.write_user("[approval.tools]\nread_file = \"deny\"\n[plugins]\noverrides = [\"a\", \"b\"]\n");
    let config_path = scratch.home.join("cli.toml");
    fs::write(&config_path, "[approval.tools]\nwrite_to_file = \"ask\"\n[plugins]\noverrides = [\"c\"]\n").unwrap();
    let config = scratch.loader().config_file(Some(config_path)).load().unwrap().config;
    let expected: BTreeMap<String, Rule> =
        [("read_file".to_owned(), Rule::Deny), ("write_to_file".to_owned(), Rule::Ask)].into();
    assert_eq!(config.approval.tools, expected);
    assert_eq!(config.plugins.overrides, vec!["c".to_owned()]);
}

#[test]
fn missing_files() {
    let scratch = Scratch::new();
    // A missing user or workspace file is fine...
    assert!(scratch.loader().load().is_ok());
    // ...a missing --config file is not.
    let missing = scratch.home.join("nope.toml");
    let err = scratch.loader().config_file(Some(missing.clone())).load().unwrap_err();
    assert!(matches!(&err, ConfigError::Read { path, .. } if *path == missing), "{err:?}");
    assert!(err.to_string().contains("nope.toml"), "{err}");
}

#[test]
fn unknown_key_in_each_file_names_key_and_file() {
    let scratch = Scratch::new();
    let config_path = scratch.home.join("cli.toml");
    let cases = [
        (scratch.user_path(), "[web]\nprovder = \"cline\"\n", "provder"),
        (config_path.clone(), "[timeouts]\ncall = 5\n", "call"),
        (scratch.workspace_path(), "[approval]\nyollo = false\n", "yollo"),
        (scratch.user_path(), "[webb]\nenabled = true\n", "webb"),
    ];
    for (path, text, key) in cases {
        fs::write(&path, text).unwrap();
        let err = scratch.loader().config_file(Some(config_path.clone())).load().unwrap_err();
        let ConfigError::Parse { path: at, message } = &err else {
            panic!("{key}: expected a parse error, got {err:?}");
        };
        assert_eq!(at, &path, "{key}");
        assert!(message.starts_with("line ") && message.contains(&format!("`{key}`")), "{message}");
        let shown = err.to_string();
        assert!(shown.contains(&path.display().to_string()) && !shown.contains('\n'), "{shown}");
        // Leave the layer valid for the next case.
        fs::write(&path, "").unwrap();
    }
}

#[test]
fn unknown_env_key_names_the_variable() {
    let scratch = Scratch::new();
    let err = scratch.loader().env(env(&[("TOOLSHED_TIMEOUTS_CALL", "5")])).load().unwrap_err();
    let ConfigError::Env { var, message } = &err else {
        panic!("expected an env error, got {err:?}");
    };
    assert_eq!(var, "TOOLSHED_TIMEOUTS_CALL");
    assert!(message.contains("`call`"), "{message}");
    assert!(err.to_string().contains("TOOLSHED_TIMEOUTS_CALL"), "{err}");

    let err = scratch.loader().env(env(&[("TOOLSHED_MCP", "x")])).load().unwrap_err();
    assert!(matches!(&err, ConfigError::Env { var, .. } if var == "TOOLSHED_MCP"), "{err:?}");
}

#[test]
fn env_ignores_non_keys_and_other_sections() {
    let scratch = Scratch::new();
    let loaded = scratch
        .loader()
        .env(env(&[
            ("TOOLSHED_WEB_TOKEN", "secret"),
            ("TOOLSHED_SERVE_TOKEN", "secret"),
            ("TOOLSHED_PLUGINS", "/plugins"),
            ("TOOLSHED_LOG", "debug"),
            ("TOOLSHED_OTHER_THING", "1"),
            ("PATH", "/bin"),
        ]))
        .load()
        .unwrap();
    assert_eq!(loaded.config, Config::default());
}

#[test]
fn env_values_are_typed() {
    let scratch = Scratch::new();
    let config = scratch
        .loader()
        .env(env(&[
            ("TOOLSHED_APPROVAL_YOLO", "true"),
            ("TOOLSHED_TIMEOUTS_CALL_MS", "200"),
            ("TOOLSHED_WEB_API_BASE_URL", "http://127.0.0.1:9/api"),
            ("TOOLSHED_WEB_PROVIDER", "123"),
            ("TOOLSHED_COMMANDS_PERMISSIONS", r#"{"allow":["npm *"]}"#),
            ("TOOLSHED_PLUGINS_OVERRIDES", r#"["read_file", "search_files"]"#),
            ("TOOLSHED_APPROVAL_TOOLS", r#"{ read_file = "deny" }"#),
        ]))
        .load()
        .unwrap()
        .config;
    assert!(config.approval.yolo);
    assert_eq!(config.timeouts.call_ms, 200);
    assert_eq!(config.web.api_base_url, "http://127.0.0.1:9/api");
    assert_eq!(config.web.provider.as_deref(), Some("123"));
    assert_eq!(config.commands.permissions.as_deref(), Some(r#"{"allow":["npm *"]}"#));
    assert_eq!(config.plugins.overrides, vec!["read_file".to_owned(), "search_files".to_owned()]);
    assert_eq!(config.approval.tools.get("read_file"), Some(&Rule::Deny));

    for (var, value) in
        [("TOOLSHED_APPROVAL_YOLO", "yes"), ("TOOLSHED_TIMEOUTS_CALL_MS", "soon"), ("TOOLSHED_TIMEOUTS_CALL_MS", "-1")]
    {
        let err = scratch.loader().env(env(&[(var, value)])).load().unwrap_err();
        assert!(matches!(&err, ConfigError::Env { var: v, .. } if v == var), "{var}={value}: {err:?}");
    }
}

#[test]
fn backend_is_validated() {
    let err = Config::from_toml_str("[web]\nbackend = \"proxy\"\n").unwrap_err();
    assert!(matches!(&err, ConfigError::Invalid { message, .. } if message.contains("\"direct\"")), "{err:?}");
    assert_eq!(Config::from_toml_str("[web]\nbackend = \"direct\"\n").unwrap().web.backend, "direct");

    let scratch = Scratch::new();
    scratch.write_user("[web]\nbackend = \"proxy\"\n");
    let err = scratch.loader().load().unwrap_err();
    assert!(
        matches!(&err, ConfigError::Invalid { origin, .. } if *origin == scratch.user_path().display().to_string()),
        "{err:?}"
    );
    let _ = fs::remove_file(scratch.user_path());
    let err = scratch.loader().env(env(&[("TOOLSHED_WEB_BACKEND", "proxy")])).load().unwrap_err();
    assert!(matches!(&err, ConfigError::Env { var, .. } if var == "TOOLSHED_WEB_BACKEND"), "{err:?}");
}

#[test]
fn untrusted_workspace_may_tighten() {
    let scratch = Scratch::new();
    scratch.write_user("[approval.tools]\nwrite_to_file = \"ask\"\n");
    scratch.write_workspace(
        "[approval]\nauto_approve_safe = false\nauto_approve_all = false\nyolo = false\n\
         [approval.tools]\nread_file = \"ask\"\nexecute_command = \"deny\"\nwrite_to_file = \"deny\"\n\
         [timeouts]\ncall_ms = 5000\nask_ms = 10\n\
         [commands]\ndefault_timeout_ms = 7\n\
         [web]\nenabled = false\n\
         [plugins]\nmax_abandoned = 2\n",
    );
    let loaded = scratch.loader().load().unwrap();
    assert!(!loaded.workspace_trusted);
    assert_eq!(loaded.warnings, Vec::<String>::new());
    let config = loaded.config;
    assert!(!config.approval.auto_approve_safe);
    let expected: BTreeMap<String, Rule> = [
        ("execute_command".to_owned(), Rule::Deny),
        ("read_file".to_owned(), Rule::Ask),
        ("write_to_file".to_owned(), Rule::Deny),
    ]
    .into();
    assert_eq!(config.approval.tools, expected);
    assert_eq!((config.timeouts.call_ms, config.timeouts.ask_ms), (5000, 10));
    assert_eq!(config.commands.default_timeout_ms, 7);
    assert_eq!(config.plugins.max_abandoned, 2);
}

#[test]
fn untrusted_workspace_cannot_loosen() {
    let scratch = Scratch::new();
    scratch.write_user("[approval]\nauto_approve_safe = false\n[approval.tools]\nexecute_command = \"deny\"\n");
    let user_side = scratch.loader().load().unwrap().config;
    let cases = [
        ("approval.tools.read_file", "[approval.tools]\nread_file = \"allow\"\n"),
        ("approval.tools.execute_command", "[approval.tools]\nexecute_command = \"ask\"\n"),
        ("approval.auto_approve_all", "[approval]\nauto_approve_all = true\n"),
        ("approval.auto_approve_safe", "[approval]\nauto_approve_safe = true\n"),
        ("approval.yolo", "[approval]\nyolo = true\n"),
        ("mcp.settings", "[mcp]\nsettings = \"/tmp/mcp.json\"\n"),
        ("web.api_base_url", "[web]\napi_base_url = \"https://evil.example\"\n"),
        ("web.enabled", "[web]\nenabled = true\n"),
        ("web.feature_flag", "[web]\nfeature_flag = true\n"),
        ("web.provider", "[web]\nprovider = \"cline\"\n"),
        ("web.backend", "[web]\nbackend = \"direct\"\n"),
        ("web.allowed_hosts", "[web]\nallowed_hosts = [\"127.0.0.1\"]\n"),
        ("web.allow_private_addresses", "[web]\nallow_private_addresses = true\n"),
        ("web.proxy", "[web]\nproxy = \"http://evil.example:8080\"\n"),
        ("web.ca_file", "[web]\nca_file = \"/tmp/evil.pem\"\n"),
        ("web.max_redirects", "[web]\nmax_redirects = 50\n"),
        ("web.max_response_bytes", "[web]\nmax_response_bytes = 99999999999\n"),
        ("plugins.dirs", "[plugins]\ndirs = [\"plugins\"]\n"),
        ("plugins.overrides", "[plugins]\noverrides = [\"read_file\"]\n"),
        ("plugins.trusted_workspaces", "[plugins]\ntrusted_workspaces = [\"/\"]\n"),
        ("plugins.max_abandoned", "[plugins]\nmax_abandoned = 100\n"),
        ("plugins.config", "[plugins.config.my_tool]\ntoken = \"x\"\n"),
        ("hooks.timeout_ms", "[hooks]\ntimeout_ms = 1\n"),
        ("timeouts.watch_debounce_ms", "[timeouts]\nwatch_debounce_ms = 0\n"),
        ("timeouts.call_ms", "[timeouts]\ncall_ms = 99999999\n"),
    ];
    for (key, text) in cases {
        scratch.write_workspace(text);
        let loaded = scratch.loader().load().unwrap();
        assert_eq!(loaded.config, user_side, "{key}");
        let file = scratch.workspace_path().display().to_string();
        let expected = format!(
            "ignored `{key}` in {file}: workspace {} is not trusted; {TRUST_HINT}",
            scratch.workspace.display()
        );
        assert_eq!(loaded.warnings, vec![expected], "{key}");
    }
}

#[test]
fn untrusted_workspace_may_tighten_web() {
    let scratch = Scratch::new();
    scratch.write_user("[web]\ndenied_hosts = [\"a.example\"]\nmax_redirects = 4\n");
    scratch.write_workspace(
        "[web]\nfetch_timeout_ms = 50\nallow_private_addresses = false\nmax_redirects = 2\n\
         max_response_bytes = 1000\ndenied_hosts = [\"a.example\", \"b.example\"]\n",
    );
    let loaded = scratch.loader().load().unwrap();
    assert_eq!(loaded.warnings, Vec::<String>::new());
    let web = loaded.config.web;
    assert_eq!((web.fetch_timeout_ms, web.max_redirects, web.max_response_bytes), (50, 2, 1000));
    assert_eq!(web.denied_hosts, vec!["a.example".to_owned(), "b.example".to_owned()]);

    // Deny lists only grow: leaving out a host the user denied keeps it denied.
    scratch.write_workspace("[web]\ndenied_hosts = [\"b.example\"]\n");
    let loaded = scratch.loader().load().unwrap();
    assert_eq!(loaded.config.web.denied_hosts, vec!["a.example".to_owned(), "b.example".to_owned()]);
    assert_eq!(loaded.warnings, Vec::<String>::new());
}

#[test]
fn web_proxy_is_validated_and_ca_file_resolved() {
    let err = Config::from_toml_str("[web]\nproxy = \"socks5://x\"\n").unwrap_err();
    assert!(matches!(&err, ConfigError::Invalid { message, .. } if message.contains("[web] proxy")), "{err:?}");
    let err = Config::from_toml_str("[web]\nallowed_hosts = [\"127.0.0.1:8080\"]\n").unwrap_err();
    assert!(matches!(&err, ConfigError::Invalid { message, .. } if message.contains("allowed_hosts")), "{err:?}");
    let scratch = Scratch::new();
    scratch.write_user("[web]\nca_file = \"ca.pem\"\n");
    let config = scratch.loader().load().unwrap().config;
    assert_eq!(config.web.ca_file, Some(scratch.home.join(".toolshed/ca.pem")));
}

#[test]
fn trusted_workspace_applies_fully() {
    let scratch = Scratch::new();
    scratch.trust_workspace("");
    scratch.write_workspace(
        "[approval.tools]\nexecute_command = \"allow\"\n\
         [web]\napi_base_url = \"http://localhost:8080\"\n\
         [plugins]\ndirs = [\"plugins\"]\n",
    );
    let loaded = scratch.loader().load().unwrap();
    assert!(loaded.workspace_trusted);
    assert_eq!(loaded.warnings, Vec::<String>::new());
    let config = loaded.config;
    assert_eq!(config.approval.tools.get("execute_command"), Some(&Rule::Allow));
    assert_eq!(config.web.api_base_url, "http://localhost:8080");
    assert_eq!(config.plugins.dirs, vec![scratch.workspace.join(".toolshed/plugins")]);
}

#[test]
fn trust_is_granted_only_from_the_user_side() {
    let scratch = Scratch::new();
    let listing_itself = format!(
        "[plugins]\ntrusted_workspaces = [{:?}]\n[approval]\nyolo = true\n",
        scratch.workspace.display().to_string()
    );
    scratch.write_workspace(&listing_itself);
    let loaded = scratch.loader().load().unwrap();
    assert!(!loaded.workspace_trusted);
    assert!(!loaded.config.approval.yolo);
    assert_eq!(loaded.config.plugins.trusted_workspaces, Vec::<PathBuf>::new());
    assert_eq!(loaded.warnings.len(), 2, "{:?}", loaded.warnings);
    assert!(loaded.warnings[1].contains("`plugins.trusted_workspaces`"), "{:?}", loaded.warnings);

    // A trusted workspace still cannot extend the list.
    scratch.trust_workspace("");
    scratch.write_workspace("[plugins]\ntrusted_workspaces = [\"/elsewhere\"]\n");
    let loaded = scratch.loader().load().unwrap();
    assert!(loaded.workspace_trusted);
    assert_eq!(loaded.config.plugins.trusted_workspaces, vec![scratch.workspace.clone()]);
    assert_eq!(loaded.warnings.len(), 1);
    assert!(loaded.warnings[0].contains("cannot grant trust"), "{:?}", loaded.warnings);

    // Trust may also come from --config or the environment.
    let _ = fs::remove_file(scratch.user_path());
    let var = format!("[{:?}]", scratch.workspace.display().to_string());
    let loaded = scratch.loader().env(env(&[("TOOLSHED_PLUGINS_TRUSTED_WORKSPACES", &var)])).load().unwrap();
    assert!(loaded.workspace_trusted);
}

#[test]
fn relative_paths_resolve_against_their_file() {
    let scratch = Scratch::new();
    scratch.write_user("[mcp]\nsettings = \"mcp.json\"\n[plugins]\ndirs = [\"plugins\", \"~/more\", \"/abs\"]\n");
    let config = scratch.loader().load().unwrap().config;
    assert_eq!(config.mcp.settings, Some(scratch.home.join(".toolshed/mcp.json")));
    assert_eq!(
        config.plugins.dirs,
        vec![scratch.home.join(".toolshed/plugins"), scratch.home.join("more"), PathBuf::from("/abs")]
    );
}

#[test]
fn home_as_workspace_reads_the_user_file_once() {
    let scratch = Scratch::new();
    scratch.write_user("[approval]\nyolo = true\n");
    let loaded = scratch.loader().workspace(Some(scratch.home)).load().unwrap();
    assert!(loaded.config.approval.yolo);
    assert_eq!(loaded.warnings, Vec::<String>::new());
}

#[test]
fn parse_errors_are_one_line_with_a_position() {
    let err = Config::from_toml_str("[web]\nenabled = tru\n").unwrap_err();
    let ConfigError::Parse { message, .. } = &err else {
        panic!("expected a parse error, got {err:?}");
    };
    assert!(message.starts_with("line 2, column "), "{message}");
    assert!(!err.to_string().contains('\n'), "{err}");
}

#[test]
fn serializes_back_to_the_same_config() {
    let config = Config::from_toml_str(
        "[web]\nprovider = \"cline\"\n[approval.tools]\nread_file = \"deny\"\n\
         [plugins.config.my_tool]\nlimit = 3\n",
    )
    .unwrap();
    let text = toml::to_string(&config).unwrap();
    assert_eq!(Config::from_toml_str(&text).unwrap(), config);
    assert_eq!(Config::from_toml_str(&toml::to_string(&Config::default()).unwrap()).unwrap(), Config::default());
}

#[test]
fn plugin_config_becomes_json() {
    let config =
        Config::from_toml_str("[plugins.config.my_tool]\nlimit = 3\nnames = [\"a\"]\nnested = { on = true }\n")
            .unwrap();
    assert_eq!(
        config.plugins.config_json("my_tool"),
        Some(serde_json::json!({ "limit": 3, "names": ["a"], "nested": { "on": true } }))
    );
    assert_eq!(config.plugins.config_json("other"), None);
}

#[test]
fn clines_permission_variable_is_the_users_setting_and_a_workspace_tightens_it() {
    let scratch = Scratch::new();
    scratch.write_user("[commands]\npermissions = '{\"allow\":[\"ls *\"]}'\n");
    scratch.write_workspace("[commands]\npermissions = '{\"deny\":[\"git push*\"]}'\n");
    let var = env(&[("CLINE_COMMAND_PERMISSIONS", r#"{"allow":["git *"]}"#)]);
    let loaded = scratch.loader().env(var).load().unwrap();
    assert_eq!(
        loaded.config.commands.permissions.as_deref(),
        Some(r#"{"allow":["git *"],"deny":["git push*"],"allowRedirects":false}"#)
    );
    // Blank is unset, as in Cline: the files decide.
    let loaded = scratch.loader().env(env(&[("CLINE_COMMAND_PERMISSIONS", " ")])).load().unwrap();
    assert_eq!(
        loaded.config.commands.permissions.as_deref(),
        Some(r#"{"allow":["ls *"],"deny":["git push*"],"allowRedirects":false}"#)
    );
}

#[test]
fn a_workspace_config_that_is_not_a_small_regular_file_is_an_error_not_a_hang() {
    let scratch = Scratch::new();
    let path = scratch.workspace_path();
    let fifo = scratch.workspace.join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let huge = scratch.workspace.join("huge.toml");
    fs::write(&huge, format!("# {}\n", "x".repeat(2 * 1024 * 1024))).unwrap();
    for (target, why) in [
        (PathBuf::from("/dev/zero"), "not a regular file"),
        (fifo, "not a regular file"),
        (scratch.workspace.clone(), "not a regular file"),
        (huge, "larger than"),
    ] {
        let _ = fs::remove_file(&path);
        std::os::unix::fs::symlink(&target, &path).unwrap();
        let err = scratch.loader().load().unwrap_err();
        assert!(matches!(&err, ConfigError::Read { path: at, .. } if at == &path), "{err:?}");
        assert!(err.to_string().contains(why), "{target:?}: {err}");
    }
}

#[test]
fn workspace_hooks_need_trust() {
    let scratch = Scratch::new();
    let hooks = "[hooks]\ntimeout_ms = 5\npre_tool_use = [{ matcher = \"write_to_file\", command = \"./check.sh\" }]\n";
    scratch.write_workspace(hooks);
    let loaded = scratch.loader().load().unwrap();
    assert!(loaded.config.hooks.pre_tool_use.is_empty());
    assert!(loaded.warnings.iter().any(|w| w.contains("hooks.pre_tool_use")), "{:?}", loaded.warnings);
    scratch.trust_workspace("");
    let loaded = scratch.loader().load().unwrap();
    assert_eq!(loaded.config.hooks.pre_tool_use[0].command, "./check.sh");
    assert_eq!(loaded.config.hooks.pre_tool_use[0].matcher.as_deref(), Some("write_to_file"));
    assert_eq!(loaded.config.hooks.timeout_ms, 5);
}

#[test]
fn a_worker_spin_past_its_bound_is_refused_and_the_bound_is_accepted() {
    let err = Config::from_toml_str("[plugins]\nworker_spin_us = 10001\n").unwrap_err();
    assert!(
        matches!(&err, ConfigError::Invalid { message, .. } if message.contains("worker_spin_us is 10001; use 0 to 10000")),
        "{err:?}"
    );
    for spin in [0, 200, 10_000] {
        let config = Config::from_toml_str(&format!("[plugins]\nworker_spin_us = {spin}\n")).unwrap();
        assert_eq!(config.plugins.worker_spin_us, spin);
    }
    assert_eq!(Config::default().plugins.worker_spin_us, 200);
}
