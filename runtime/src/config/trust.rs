//! The workspace-trust merge: an untrusted workspace's config is applied one key at a time, and each key
//! only through its own tighten-only operation.
//!
//! The workspace file has already been read into the typed schema (so it has the schema's shapes and
//! types, or it was an error naming the file and key). Each section is destructured field by field without
//! `..`, so a key added to the schema does not compile until it is given an operation here:
//!
//! - **shrink**: limits and timeouts take the smaller value (`ask_ms`, where 0 waits forever, too);
//! - **off**: a switch that loosens when on may only be turned off;
//! - **intersect**: allow lists keep only what both sides allow;
//! - **grow**: deny lists take the union;
//! - **stricter**: per-tool rules and the command sandbox take the stricter of the two (`allow` and a
//!   sandbox `off` are never taken);
//! - **free**: how a conversation goes, not what may run (`[tasks]`);
//! - **never**: paths, plugin dirs and plugin config, MCP settings, hooks (and their timeout: a shorter one
//!   would let a refusing hook time out and be skipped), URLs, proxies, certificate authorities, models and
//!   keys, and the watcher's and MCP hub's polling intervals.
//!
//! Every value of the workspace that was not taken (in whole or in part) is reported as a warning naming the
//! key.

use std::path::Path;

use serde::{Deserialize, Serialize};
use toml::Table;

use super::{
    ApprovalConfig, BrowserConfig, CommandsConfig, Config, ConfigError, HooksConfig, IsolationConfig, LimitsConfig,
    McpConfig, PluginsConfig, Rule, ServeConfig, SkillsConfig, SubagentsConfig, TasksConfig, TimeoutsConfig, WebConfig,
};

/// Tightens `base` (what the user alone decided) with an untrusted workspace's `workspace` config, whose
/// parsed file is `layer` (only the keys it sets are looked at). Returns the keys that were not taken, in
/// the file's order of sections and keys.
pub(super) fn tighten(
    base: &mut Config,
    workspace: Config,
    layer: &Table,
    file: &Path,
) -> Result<Vec<String>, ConfigError> {
    let Config {
        web,
        mcp,
        commands,
        approval,
        plugins,
        timeouts,
        hooks,
        tasks,
        skills,
        subagents,
        serve,
        limits,
        isolation,
        browser,
    } = workspace;
    let section = |name| Section { name, keys: layer.get(name).and_then(toml::Value::as_table), ignored: Vec::new() };
    let mut sections = [
        "approval",
        "browser",
        "commands",
        "hooks",
        "isolation",
        "limits",
        "mcp",
        "plugins",
        "serve",
        "skills",
        "subagents",
        "tasks",
        "timeouts",
        "web",
    ]
    .map(section);
    let [s_approval, s_browser, s_commands, s_hooks, s_isolation, s_limits, s_mcp, s_plugins, s_serve, s_skills, s_subagents, s_tasks, s_timeouts, s_web] =
        &mut sections;
    approval_section(s_approval, &mut base.approval, approval);
    browser_section(s_browser, &mut base.browser, browser);
    commands_section(s_commands, &mut base.commands, commands, file)?;
    hooks_section(s_hooks, hooks);
    isolation_section(s_isolation, &mut base.isolation, isolation);
    limits_section(s_limits, &mut base.limits, limits);
    mcp_section(s_mcp, &mut base.mcp, mcp);
    plugins_section(s_plugins, &mut base.plugins, plugins);
    serve_section(s_serve, &mut base.serve, serve);
    skills_section(s_skills, &mut base.skills, skills);
    subagents_section(s_subagents, &mut base.subagents, subagents);
    tasks_section(s_tasks, &mut base.tasks, tasks);
    timeouts_section(s_timeouts, &mut base.timeouts, timeouts);
    web_section(s_web, &mut base.web, web);
    Ok(sections.into_iter().flat_map(|section| section.ignored).collect())
}

fn approval_section(s: &mut Section<'_>, base: &mut ApprovalConfig, ws: ApprovalConfig) {
    let ApprovalConfig { auto_approve_safe, auto_approve_all, yolo, auto_approve_sandboxed, tools } = ws;
    s.off("auto_approve_safe", &mut base.auto_approve_safe, auto_approve_safe);
    s.off("auto_approve_all", &mut base.auto_approve_all, auto_approve_all);
    s.off("yolo", &mut base.yolo, yolo);
    s.off("auto_approve_sandboxed", &mut base.auto_approve_sandboxed, auto_approve_sandboxed);
    if s.has("tools") {
        for (tool, rule) in tools {
            // A tool without a rule of the user's is decided by the defaults, which `allow` could loosen.
            let current = base.tools.get(&tool).copied().unwrap_or(Rule::Allow);
            if rule != Rule::Allow && rule >= current {
                base.tools.insert(tool, rule);
            } else {
                s.ignore(&format!("tools.{tool}"));
            }
        }
    }
}

fn browser_section(s: &mut Section<'_>, base: &mut BrowserConfig, ws: BrowserConfig) {
    let BrowserConfig {
        executable: _,
        remote_url: _,
        args: _,
        profile_dir: _,
        viewport_width: _,
        viewport_height: _,
        screenshot_format,
        launch_timeout_ms,
        navigation_timeout_ms,
        stable_timeout_ms,
        stable_interval_ms,
        log_quiet_ms,
        log_wait_ms,
        network_probe_ms,
        scroll_delay_ms,
        command_timeout_ms,
    } = ws;
    // The program, its arguments, its profile and the browser attached to are the user's; the viewport is
    // what the user's prompt promises the model.
    s.never("executable");
    s.never("remote_url");
    s.never("args");
    s.never("profile_dir");
    s.never("viewport_width");
    s.never("viewport_height");
    s.free("screenshot_format", &mut base.screenshot_format, screenshot_format);
    s.shrink("launch_timeout_ms", &mut base.launch_timeout_ms, launch_timeout_ms);
    s.shrink("navigation_timeout_ms", &mut base.navigation_timeout_ms, navigation_timeout_ms);
    s.shrink("stable_timeout_ms", &mut base.stable_timeout_ms, stable_timeout_ms);
    s.shrink("stable_interval_ms", &mut base.stable_interval_ms, stable_interval_ms);
    s.shrink("log_quiet_ms", &mut base.log_quiet_ms, log_quiet_ms);
    s.shrink("log_wait_ms", &mut base.log_wait_ms, log_wait_ms);
    s.shrink("network_probe_ms", &mut base.network_probe_ms, network_probe_ms);
    s.shrink("scroll_delay_ms", &mut base.scroll_delay_ms, scroll_delay_ms);
    s.shrink("command_timeout_ms", &mut base.command_timeout_ms, command_timeout_ms);
}

fn commands_section(
    s: &mut Section<'_>,
    base: &mut CommandsConfig,
    ws: CommandsConfig,
    file: &Path,
) -> Result<(), ConfigError> {
    let CommandsConfig {
        permissions,
        default_timeout_ms,
        long_timeout_ms,
        keep_background,
        sandbox,
        network,
        sandbox_assume_unsupported,
        withhold_env,
        pass_env: _,
    } = ws;
    // A workspace may keep more from its commands, never hand them the user's secrets.
    s.grow("withhold_env", &mut base.withhold_env, withhold_env);
    s.never("pass_env");
    s.shrink("default_timeout_ms", &mut base.default_timeout_ms, default_timeout_ms);
    s.shrink("long_timeout_ms", &mut base.long_timeout_ms, long_timeout_ms);
    // Keeping background jobs lets a command's processes outlive it.
    s.off("keep_background", &mut base.keep_background, keep_background);
    // A workspace may confine its commands further, never free them: `off` and the network are the user's.
    s.raise("sandbox", &mut base.sandbox, sandbox);
    s.off("network", &mut base.network, network);
    // Pretending the kernel lacks Landlock only refuses more commands.
    s.on("sandbox_assume_unsupported", &mut base.sandbox_assume_unsupported, sandbox_assume_unsupported);
    if let (true, Some(text)) = (s.has("permissions"), permissions) {
        let workspace = Permissions::parse(&text).map_err(|message| ConfigError::Invalid {
            origin: file.display().to_string(),
            message: format!("`commands.permissions`: {message}"),
        })?;
        let (merged, loosened) = match base.permissions.as_deref().map(Permissions::parse) {
            // No setting checks nothing: every command, redirects included, so the workspace's setting alone.
            None => (workspace, false),
            Some(Ok(user)) => user.intersect(workspace),
            // The user's own setting is malformed, so every command is denied already; keep it that way.
            Some(Err(_)) => {
                s.ignore("permissions");
                return Ok(());
            }
        };
        if loosened {
            s.ignore("permissions");
        }
        base.permissions = Some(merged.to_json());
    }
    Ok(())
}

fn hooks_section(s: &mut Section<'_>, ws: HooksConfig) {
    let HooksConfig { timeout_ms: _, max_output_bytes: _, pre_tool_use: _, post_tool_use: _ } = ws;
    s.never("timeout_ms");
    s.never("max_output_bytes");
    s.never("pre_tool_use");
    s.never("post_tool_use");
}

fn isolation_section(s: &mut Section<'_>, base: &mut IsolationConfig, ws: IsolationConfig) {
    let IsolationConfig { enabled, memory_mb, cpu_ms, stack_mb, timeout_ms, max_output_bytes, max_children } = ws;
    // Running parsers inside the host is the loose setting here.
    s.on("enabled", &mut base.enabled, enabled);
    s.shrink("memory_mb", &mut base.memory_mb, memory_mb);
    s.shrink("cpu_ms", &mut base.cpu_ms, cpu_ms);
    s.shrink("stack_mb", &mut base.stack_mb, stack_mb);
    s.shrink("timeout_ms", &mut base.timeout_ms, timeout_ms);
    s.shrink("max_output_bytes", &mut base.max_output_bytes, max_output_bytes);
    s.shrink("max_children", &mut base.max_children, max_children);
}

fn limits_section(s: &mut Section<'_>, base: &mut LimitsConfig, ws: LimitsConfig) {
    let LimitsConfig { max_result_bytes } = ws;
    s.shrink("max_result_bytes", &mut base.max_result_bytes, max_result_bytes);
}

fn mcp_section(s: &mut Section<'_>, base: &mut McpConfig, ws: McpConfig) {
    let McpConfig {
        settings: _,
        startup_timeout_ms,
        call_timeout_ms,
        poll_ms: _,
        max_list_pages,
        max_list_bytes,
        max_message_bytes,
    } = ws;
    s.never("settings");
    s.shrink("startup_timeout_ms", &mut base.startup_timeout_ms, startup_timeout_ms);
    s.shrink("call_timeout_ms", &mut base.call_timeout_ms, call_timeout_ms);
    s.never("poll_ms");
    s.shrink("max_list_pages", &mut base.max_list_pages, max_list_pages);
    s.shrink("max_list_bytes", &mut base.max_list_bytes, max_list_bytes);
    s.shrink("max_message_bytes", &mut base.max_message_bytes, max_message_bytes);
}

fn plugins_section(s: &mut Section<'_>, base: &mut PluginsConfig, ws: PluginsConfig) {
    let PluginsConfig {
        dirs: _,
        overrides,
        trusted_workspaces: _,
        max_abandoned,
        unload: _,
        lease_poll_ms: _,
        bulk_priority: _,
        worker_spin_us: _,
        isolation: _,
        isolation_per_plugin: _,
        process: _,
        config: _,
    } = ws;
    s.never("dirs");
    s.intersect("overrides", &mut base.overrides, overrides);
    s.never("trusted_workspaces");
    s.shrink("max_abandoned", &mut base.max_abandoned, max_abandoned);
    s.never("unload");
    s.never("lease_poll_ms");
    s.never("bulk_priority");
    s.never("worker_spin_us");
    // Where the user's plugins run, and their limits, are the user's: a repository cannot move a plugin
    // into the host or loosen a child's limits.
    s.never("isolation");
    s.never("isolation_per_plugin");
    s.never("process");
    s.never("config");
}

fn serve_section(s: &mut Section<'_>, base: &mut ServeConfig, ws: ServeConfig) {
    let ServeConfig {
        max_connections,
        auth_timeout_ms,
        max_body_bytes,
        accept_backoff_ms,
        profile: _,
        mcp_startup_ms,
        session_idle_ms,
        roots_timeout_ms,
        max_sessions,
    } = ws;
    s.shrink("max_connections", &mut base.max_connections, max_connections);
    s.shrink("auth_timeout_ms", &mut base.auth_timeout_ms, auth_timeout_ms);
    s.shrink("max_body_bytes", &mut base.max_body_bytes, max_body_bytes);
    s.shrink("accept_backoff_ms", &mut base.accept_backoff_ms, accept_backoff_ms);
    // Which tools the user's MCP host is offered is the user's choice, not the project's.
    s.never("profile");
    s.shrink("mcp_startup_ms", &mut base.mcp_startup_ms, mcp_startup_ms);
    s.shrink("session_idle_ms", &mut base.session_idle_ms, session_idle_ms);
    s.shrink("roots_timeout_ms", &mut base.roots_timeout_ms, roots_timeout_ms);
    s.shrink("max_sessions", &mut base.max_sessions, max_sessions);
}

fn skills_section(s: &mut Section<'_>, base: &mut SkillsConfig, ws: SkillsConfig) {
    let SkillsConfig { enabled, dirs: _ } = ws;
    s.off("enabled", &mut base.enabled, enabled);
    s.never("dirs");
}

fn subagents_section(s: &mut Section<'_>, base: &mut SubagentsConfig, ws: SubagentsConfig) {
    let SubagentsConfig {
        enabled,
        agents_dir: _,
        max_turns,
        request_timeout_ms,
        base_url: _,
        model: _,
        api_key_env: _,
        context_window: _,
        max_response_bytes,
    } = ws;
    s.off("enabled", &mut base.enabled, enabled);
    s.never("agents_dir");
    s.shrink("max_turns", &mut base.max_turns, max_turns);
    s.shrink("request_timeout_ms", &mut base.request_timeout_ms, request_timeout_ms);
    s.never("base_url");
    s.never("model");
    s.never("api_key_env");
    s.never("context_window");
    s.shrink("max_response_bytes", &mut base.max_response_bytes, max_response_bytes);
}

fn tasks_section(s: &mut Section<'_>, base: &mut TasksConfig, ws: TasksConfig) {
    let TasksConfig { focus_chain, remind_interval, double_check_completion } = ws;
    s.free("focus_chain", &mut base.focus_chain, focus_chain);
    s.free("remind_interval", &mut base.remind_interval, remind_interval);
    s.free("double_check_completion", &mut base.double_check_completion, double_check_completion);
}

fn timeouts_section(s: &mut Section<'_>, base: &mut TimeoutsConfig, ws: TimeoutsConfig) {
    let TimeoutsConfig {
        call_ms,
        prepare_ms,
        shutdown_ms,
        list_files_ms,
        ask_ms,
        watch_debounce_ms: _,
        kill_grace_ms,
        command_notice_ms,
        cancel_grace_ms,
        commit_ms,
    } = ws;
    s.shrink("commit_ms", &mut base.commit_ms, commit_ms);
    s.shrink("call_ms", &mut base.call_ms, call_ms);
    s.shrink("prepare_ms", &mut base.prepare_ms, prepare_ms);
    s.shrink("shutdown_ms", &mut base.shutdown_ms, shutdown_ms);
    s.shrink("list_files_ms", &mut base.list_files_ms, list_files_ms);
    // 0 waits forever, the loosest value of all.
    if s.has("ask_ms") {
        if base.ask_ms == 0 || (ask_ms != 0 && ask_ms <= base.ask_ms) {
            base.ask_ms = ask_ms;
        } else if ask_ms != base.ask_ms {
            s.ignore("ask_ms");
        }
    }
    // How long the watcher lets a library settle before loading it: not the workspace's to shorten.
    s.never("watch_debounce_ms");
    s.shrink("kill_grace_ms", &mut base.kill_grace_ms, kill_grace_ms);
    s.shrink("command_notice_ms", &mut base.command_notice_ms, command_notice_ms);
    s.shrink("cancel_grace_ms", &mut base.cancel_grace_ms, cancel_grace_ms);
}

fn web_section(s: &mut Section<'_>, base: &mut WebConfig, ws: WebConfig) {
    let WebConfig {
        provider: _,
        enabled,
        feature_flag,
        api_base_url: _,
        backend: _,
        fetch_timeout_ms,
        allowed_hosts,
        denied_hosts,
        allow_private_addresses,
        max_redirects,
        max_response_bytes,
        proxy: _,
        ca_file: _,
    } = ws;
    s.never("provider");
    s.off("enabled", &mut base.enabled, enabled);
    s.off("feature_flag", &mut base.feature_flag, feature_flag);
    s.never("api_base_url");
    s.never("backend");
    s.shrink("fetch_timeout_ms", &mut base.fetch_timeout_ms, fetch_timeout_ms);
    s.intersect("allowed_hosts", &mut base.allowed_hosts, allowed_hosts);
    s.grow("denied_hosts", &mut base.denied_hosts, denied_hosts);
    s.off("allow_private_addresses", &mut base.allow_private_addresses, allow_private_addresses);
    s.shrink("max_redirects", &mut base.max_redirects, max_redirects);
    s.shrink("max_response_bytes", &mut base.max_response_bytes, max_response_bytes);
    s.never("proxy");
    s.never("ca_file");
}

/// One section of the workspace file, and the operations its keys are merged by.
struct Section<'a> {
    name: &'static str,
    /// The keys the workspace file sets in this section; `None` when it has no such section.
    keys: Option<&'a Table>,
    /// The keys of this section not taken, as `section.key`.
    ignored: Vec<String>,
}

impl Section<'_> {
    fn has(&self, key: &str) -> bool {
        self.keys.is_some_and(|keys| keys.contains_key(key))
    }

    fn ignore(&mut self, key: &str) {
        self.ignored.push(format!("{}.{key}", self.name));
    }

    /// A key the workspace never sets.
    fn never(&mut self, key: &str) {
        if self.has(key) {
            self.ignore(key);
        }
    }

    /// A key that is not policy, taken as written.
    fn free<T>(&mut self, key: &str, base: &mut T, ws: T) {
        if self.has(key) {
            *base = ws;
        }
    }

    /// A switch that loosens when on: it may only be turned off.
    fn off(&mut self, key: &str, base: &mut bool, ws: bool) {
        if !self.has(key) {
            return;
        }
        if !ws {
            *base = false;
        } else if !*base {
            self.ignore(key);
        }
    }

    /// A switch that loosens when off: it may only be turned on.
    fn on(&mut self, key: &str, base: &mut bool, ws: bool) {
        if !self.has(key) {
            return;
        }
        if ws {
            *base = true;
        } else if *base {
            self.ignore(key);
        }
    }

    /// A level ordered from loosest to strictest: it may only rise.
    fn raise<T: Ord + Copy>(&mut self, key: &str, base: &mut T, ws: T) {
        if !self.has(key) {
            return;
        }
        if ws >= *base {
            *base = ws;
        } else {
            self.ignore(key);
        }
    }

    /// A limit or timeout: it may only shrink.
    fn shrink<T: Ord + Copy>(&mut self, key: &str, base: &mut T, ws: T) {
        if !self.has(key) {
            return;
        }
        if ws <= *base {
            *base = ws;
        } else {
            self.ignore(key);
        }
    }

    /// An allow list: only what both allow stays. An empty list allows nothing here, so the result is never
    /// looser than either side.
    fn intersect<T: PartialEq>(&mut self, key: &str, base: &mut Vec<T>, ws: Vec<T>) {
        if !self.has(key) {
            return;
        }
        if ws.iter().any(|entry| !base.contains(entry)) {
            self.ignore(key);
        }
        base.retain(|entry| ws.contains(entry));
    }

    /// A deny list: the union.
    fn grow<T: PartialEq>(&mut self, key: &str, base: &mut Vec<T>, ws: Vec<T>) {
        if !self.has(key) {
            return;
        }
        for entry in ws {
            if !base.contains(&entry) {
                base.push(entry);
            }
        }
    }
}

/// `[commands] permissions` (Cline's `CLINE_COMMAND_PERMISSIONS` JSON) as the merge sees it; unknown keys are
/// ignored and `null` is absent, as execute_command reads it.
#[derive(Debug, Default, Deserialize, Serialize)]
struct Permissions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    allow: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    deny: Option<Vec<String>>,
    #[serde(default, rename = "allowRedirects", skip_serializing_if = "Option::is_none")]
    allow_redirects: Option<bool>,
}

impl Permissions {
    fn parse(text: &str) -> Result<Self, String> {
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        serde_json::from_str(text).map_err(|e| {
            format!(
                "{e}; expected JSON such as {{\"allow\": [\"npm *\"], \"deny\": [\"rm *\"], \"allowRedirects\": false}}"
            )
        })
    }

    /// The setting that allows a command only when both allow it, and whether `other` asked for more than
    /// that (an allow pattern or redirects `self` does not grant).
    fn intersect(self, other: Self) -> (Self, bool) {
        let (mine, theirs) = (self.allow.unwrap_or_default(), other.allow.unwrap_or_default());
        let mut deny = self.deny.unwrap_or_default();
        for pattern in other.deny.unwrap_or_default() {
            if !deny.contains(&pattern) {
                deny.push(pattern);
            }
        }
        let mut loosened = self.allow_redirects != Some(true) && other.allow_redirects == Some(true);
        // An empty allow list allows every command.
        let allow = match (mine.is_empty(), theirs.is_empty()) {
            (true, _) => theirs,
            (false, true) => mine,
            (false, false) => {
                let both: Vec<String> = theirs
                    .iter()
                    .flat_map(|w| mine.iter().filter_map(move |m| narrower(m, w)))
                    .fold(Vec::new(), |mut kept, pattern| {
                        if !kept.contains(&pattern) {
                            kept.push(pattern);
                        }
                        kept
                    });
                loosened |= theirs.iter().any(|w| !both.contains(w));
                if both.is_empty() {
                    // Nothing is allowed by both; an empty list would allow everything.
                    deny.push("*".to_owned());
                }
                both
            }
        };
        let merged = Self {
            allow: Some(allow),
            deny: Some(deny),
            allow_redirects: Some(self.allow_redirects == Some(true) && other.allow_redirects == Some(true)),
        };
        (merged, loosened)
    }

    fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// The one of two allow patterns that every command it matches the other also matches, when that can be
/// shown simply: equal patterns, a literal the other matches, or two `prefix*` patterns where one prefix
/// extends the other. `None` when neither is provably inside the other (the pair then allows nothing).
fn narrower(a: &str, b: &str) -> Option<String> {
    let literal = |p: &str| !p.contains(['*', '?']);
    let prefix = |p: &str| p.strip_suffix('*').filter(|rest| literal(rest)).map(str::to_owned);
    if a == b {
        return Some(a.to_owned());
    }
    if literal(b) && glob_matches(a, b) {
        return Some(b.to_owned());
    }
    if literal(a) && glob_matches(b, a) {
        return Some(a.to_owned());
    }
    match (prefix(a), prefix(b)) {
        (Some(pa), Some(pb)) if pb.starts_with(&pa) => Some(b.to_owned()),
        (Some(pa), Some(pb)) if pa.starts_with(&pb) => Some(a.to_owned()),
        _ => None,
    }
}

/// execute_command's pattern match: the whole text, `*` any run of characters, `?` one character.
fn glob_matches(pattern: &str, text: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    // The classic two-pointer wildcard match with backtracking to the last `*`: linear in practice.
    let (mut p, mut t, mut star, mut mark) = (0, 0, None, 0);
    while t < text.len() {
        if p < pattern.len() && (pattern[p] == '?' || (pattern[p] != '*' && pattern[p] == text[t])) {
            p += 1;
            t += 1;
        } else if p < pattern.len() && pattern[p] == '*' {
            star = Some(p);
            mark = t;
            p += 1;
        } else if let Some(s) = star {
            p = s + 1;
            mark += 1;
            t = mark;
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn glob_matches_like_execute_command() {
        assert!(glob_matches("npm *", "npm test"));
        assert!(glob_matches("*", ""));
        assert!(glob_matches("a?c", "abc"));
        assert!(!glob_matches("npm *", "npx test"));
        assert!(!glob_matches("a*b", "a"));
    }

    #[test]
    fn permissions_intersect_to_what_both_allow() {
        let both = |a: &str, b: &str| {
            let (merged, loosened) = Permissions::parse(a).unwrap().intersect(Permissions::parse(b).unwrap());
            (merged.to_json(), loosened)
        };
        assert_eq!(
            both(r#"{"allow":["npm *"]}"#, r#"{"allow":["npm test","rm *"],"deny":["npm run x*"]}"#),
            (r#"{"allow":["npm test"],"deny":["npm run x*"],"allowRedirects":false}"#.to_owned(), true)
        );
        // Nothing in common: everything is denied, never everything allowed.
        assert_eq!(
            both(r#"{"allow":["git *"]}"#, r#"{"allow":["rm *"]}"#),
            (r#"{"allow":[],"deny":["*"],"allowRedirects":false}"#.to_owned(), true)
        );
        assert_eq!(
            both(r#"{"allow":["git *"],"allowRedirects":true}"#, r#"{"deny":["git push*"]}"#),
            (r#"{"allow":["git *"],"deny":["git push*"],"allowRedirects":false}"#.to_owned(), false)
        );
        assert_eq!(
            both(r#"{"allow":["g*"]}"#, r#"{"allow":["git *"]}"#).0,
            r#"{"allow":["git *"],"deny":[],"allowRedirects":false}"#
        );
        assert!(both("{}", r#"{"allowRedirects":true}"#).1);
    }
}
