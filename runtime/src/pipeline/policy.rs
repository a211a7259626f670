//! The approval policy: ranked rule sources decide whether a prepared call runs, asks, or is denied.
//!
//! Ranks, highest first: CLI flags (`--yes`) > the user config's per-tool rules > an MCP server's
//! `autoApprove` list > the session's "always allow" answers > defaults. Defaults: read-only built-in tools
//! inside the workspace run; everything else asks. Nothing here can override `.clineignore` or the
//! command permission rules: those refuse in `prepare`, before the policy is consulted.

use crate::config::{ApprovalConfig, Rule, SandboxMode};
use crate::types::BoxFuture;
use std::collections::BTreeMap;
use toolshed_plugin_api::{capability, Risk};

/// Which rule source decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `--yes` on the command line.
    CliFlag,
    /// A per-tool rule in the user's configuration.
    UserRule,
    /// The MCP server's `autoApprove` list.
    McpAutoApprove,
    /// An "always allow" answer earlier in this session.
    Session,
    /// `yolo` or `auto_approve_all` in the configuration.
    AutoApproveAll,
    /// A shipped command tool whose commands run inside the kernel sandbox (`auto_approve_sandboxed`).
    Sandboxed,
    /// A read-only built-in tool inside the workspace (`auto_approve_safe`).
    SafeDefault,
    /// The default for everything else.
    Default,
}

/// What the policy decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Run without asking.
    Allow(Source),
    /// Ask the user.
    Ask(Source),
    /// Refuse.
    Deny(Source),
}

/// The facts about one call the policy decides on.
#[derive(Debug, Clone)]
pub struct PolicyRequest<'a> {
    /// The name called.
    pub tool: &'a str,
    /// Other names the same call goes by (the handler's primary name for an alias, the native name of the MCP
    /// tool a use_mcp_tool call reaches); the strictest rule of all the names applies.
    pub also: &'a [String],
    /// Whether it is one of the built-in (shipped) tool names, as opposed to a third-party tool.
    pub builtin: bool,
    /// The tool's declared capabilities.
    pub capabilities: &'a [String],
    /// Whether every path of the request lies inside the workspace.
    pub inside_workspace: bool,
    /// Whether an MCP server's `autoApprove` lists the tool.
    pub mcp_auto_approve: bool,
    /// Whether the user answered "always allow" for this tool in this session.
    pub session_allowed: bool,
    /// Whether the tool itself rates the call high risk (a command the model marked `requires_approval`).
    pub high_risk: bool,
}

/// The policy, built from configuration and flags.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    yes: bool,
    rules: BTreeMap<String, Rule>,
    auto_approve_safe: bool,
    auto_approve_all: bool,
    /// `auto_approve_sandboxed` with a sandbox that is on.
    auto_approve_sandboxed: bool,
}

impl Policy {
    /// The policy of an approval configuration and the `--yes` flag.
    pub fn new(config: &ApprovalConfig, yes: bool) -> Self {
        Self {
            yes,
            rules: config.tools.clone(),
            auto_approve_safe: config.auto_approve_safe,
            auto_approve_all: config.auto_approve_all || config.yolo,
            auto_approve_sandboxed: false,
        }
    }

    /// Lets `auto_approve_sandboxed` approve the shipped command tools when `sandbox` confines their commands.
    pub fn with_sandbox(mut self, config: &ApprovalConfig, sandbox: SandboxMode) -> Self {
        self.auto_approve_sandboxed = config.auto_approve_sandboxed && sandbox != SandboxMode::Off;
        self
    }

    /// Decides one call.
    pub fn decide(&self, req: &PolicyRequest<'_>) -> Decision {
        if self.yes {
            return Decision::Allow(Source::CliFlag);
        }
        let rule = std::iter::once(req.tool)
            .chain(req.also.iter().map(String::as_str))
            .filter_map(|n| self.rules.get(n))
            .max();
        match rule {
            Some(Rule::Allow) => return Decision::Allow(Source::UserRule),
            Some(Rule::Deny) => return Decision::Deny(Source::UserRule),
            Some(Rule::Ask) => return Decision::Ask(Source::UserRule),
            None => {}
        }
        if req.mcp_auto_approve {
            return Decision::Allow(Source::McpAutoApprove);
        }
        if req.session_allowed {
            return Decision::Allow(Source::Session);
        }
        if self.auto_approve_all {
            return Decision::Allow(Source::AutoApproveAll);
        }
        // Only a shipped tool is known to run its commands through `process.spawn`, which applies the sandbox;
        // a third-party plugin may start processes of its own. A call the model itself flagged still asks.
        let runs_commands = req.capabilities.iter().any(|c| c == capability::RUNS_COMMANDS);
        if self.auto_approve_sandboxed && runs_commands && req.builtin && !req.high_risk {
            return Decision::Allow(Source::Sandboxed);
        }
        let read_only = req.capabilities.iter().any(|c| c == capability::READ_ONLY);
        if self.auto_approve_safe && read_only && req.builtin && req.inside_workspace {
            return Decision::Allow(Source::SafeDefault);
        }
        Decision::Ask(Source::Default)
    }
}

/// What the user is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalPrompt {
    /// The tool called.
    pub tool: String,
    /// The kind of operation (`read`, `write`, `command`, …).
    pub kind: String,
    /// The tool's own question.
    pub message: String,
    /// The paths involved.
    pub paths: Vec<String>,
    /// How risky it is.
    pub risk: Risk,
}

/// The user's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Run it this once.
    Approve,
    /// Run it, and do not ask again for this tool in this session.
    AlwaysAllow,
    /// Do not run it.
    Deny,
}

/// The user's answer and any text they typed with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The decision.
    pub answer: Answer,
    /// Feedback typed with the answer; it reaches the model before the tool result.
    pub feedback: Option<String>,
}

/// The host's way of asking its user. Implementations must not block: return a future.
pub trait Approver: Send + Sync + 'static {
    /// Asks; the future resolves with the user's reply.
    fn ask(&self, prompt: ApprovalPrompt) -> BoxFuture<Reply>;
}

/// Asks on the terminal: the question on stderr, the answer from stdin (`y`, `n`, `a` for always, or text,
/// which denies and becomes feedback).
#[derive(Debug, Clone, Copy, Default)]
pub struct TerminalApprover;

impl TerminalApprover {
    /// The terminal approver when stdin and stderr are terminals, else `None` (asks are then denied).
    pub fn detect() -> Option<Self> {
        use std::io::IsTerminal;
        (std::io::stdin().is_terminal() && std::io::stderr().is_terminal()).then_some(TerminalApprover)
    }
}

impl Approver for TerminalApprover {
    fn ask(&self, prompt: ApprovalPrompt) -> BoxFuture<Reply> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        // Reading stdin blocks; do it on a thread of its own so no executor stalls.
        let spawned = std::thread::Builder::new().name("toolshed-ask".to_owned()).spawn(move || {
            use std::io::Write;
            let mut err = std::io::stderr().lock();
            // Escaped again: a host may build its own prompt and hand it to this approver.
            let _ = write!(err, "{} [y]es / [n]o / [a]lways: ", crate::shown::escape_line(&prompt.message));
            let _ = err.flush();
            let mut line = String::new();
            let reply = match std::io::stdin().read_line(&mut line) {
                Ok(_) => parse_answer(line.trim()),
                Err(_) => Reply { answer: Answer::Deny, feedback: None },
            };
            let _ = tx.send(reply);
        });
        Box::pin(async move {
            match spawned {
                Ok(_) => rx.await.unwrap_or(Reply { answer: Answer::Deny, feedback: None }),
                Err(_) => Reply { answer: Answer::Deny, feedback: None },
            }
        })
    }
}

fn parse_answer(line: &str) -> Reply {
    let answer = match line.to_ascii_lowercase().as_str() {
        "y" | "yes" => Answer::Approve,
        "a" | "always" => Answer::AlwaysAllow,
        "" | "n" | "no" => Answer::Deny,
        _ => return Reply { answer: Answer::Deny, feedback: Some(line.to_owned()) },
    };
    Reply { answer, feedback: None }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(rules: &[(&str, Rule)], safe: bool, all: bool, yolo: bool) -> ApprovalConfig {
        ApprovalConfig {
            auto_approve_safe: safe,
            auto_approve_all: all,
            yolo,
            auto_approve_sandboxed: false,
            tools: rules.iter().map(|(n, r)| ((*n).to_owned(), *r)).collect(),
        }
    }

    struct Case {
        what: &'static str,
        yes: bool,
        rules: &'static [(&'static str, Rule)],
        safe: bool,
        all: bool,
        builtin: bool,
        read_only: bool,
        inside: bool,
        mcp: bool,
        session: bool,
        expect: Decision,
    }

    const BASE: Case = Case {
        what: "",
        yes: false,
        rules: &[],
        safe: true,
        all: false,
        builtin: true,
        read_only: true,
        inside: true,
        mcp: false,
        session: false,
        expect: Decision::Allow(Source::SafeDefault),
    };

    #[test]
    fn each_source_in_rank_order() {
        use Decision::*;
        let cases = [
            Case { what: "read-only built-in inside the workspace runs", ..BASE },
            Case { what: "outside the workspace asks", inside: false, expect: Ask(Source::Default), ..BASE },
            Case { what: "a write asks", read_only: false, expect: Ask(Source::Default), ..BASE },
            Case { what: "a third-party read-only tool asks", builtin: false, expect: Ask(Source::Default), ..BASE },
            Case { what: "auto_approve_safe off asks", safe: false, expect: Ask(Source::Default), ..BASE },
            Case {
                what: "auto_approve_all runs a write",
                read_only: false,
                all: true,
                expect: Allow(Source::AutoApproveAll),
                ..BASE
            },
            Case {
                what: "session always-allow beats defaults",
                read_only: false,
                session: true,
                expect: Allow(Source::Session),
                ..BASE
            },
            Case {
                what: "mcp autoApprove beats session",
                read_only: false,
                mcp: true,
                session: true,
                expect: Allow(Source::McpAutoApprove),
                ..BASE
            },
            Case {
                what: "a user deny rule beats mcp, session and auto-approve",
                rules: &[("t", Rule::Deny)],
                all: true,
                mcp: true,
                session: true,
                expect: Deny(Source::UserRule),
                ..BASE
            },
            Case {
                what: "a user ask rule beats the safe default",
                rules: &[("t", Rule::Ask)],
                expect: Ask(Source::UserRule),
                ..BASE
            },
            Case {
                what: "a user allow rule runs a third-party write outside",
                rules: &[("t", Rule::Allow)],
                builtin: false,
                read_only: false,
                inside: false,
                expect: Allow(Source::UserRule),
                ..BASE
            },
            Case {
                what: "--yes beats a deny rule",
                yes: true,
                rules: &[("t", Rule::Deny)],
                expect: Allow(Source::CliFlag),
                ..BASE
            },
            Case { what: "rules of other tools do not apply", rules: &[("other", Rule::Deny)], ..BASE },
        ];
        for case in cases {
            let policy = Policy::new(&config(case.rules, case.safe, case.all, false), case.yes);
            let caps = if case.read_only {
                vec![capability::READ_ONLY.to_owned()]
            } else {
                vec![capability::WRITES_FILES.to_owned()]
            };
            let req = PolicyRequest {
                tool: "t",
                also: &[],
                builtin: case.builtin,
                capabilities: &caps,
                inside_workspace: case.inside,
                mcp_auto_approve: case.mcp,
                session_allowed: case.session,
                high_risk: false,
            };
            assert_eq!(policy.decide(&req), case.expect, "{}", case.what);
        }
    }

    #[test]
    fn yolo_counts_as_auto_approve_all() {
        let policy = Policy::new(&config(&[], true, false, true), false);
        let caps = [capability::RUNS_COMMANDS.to_owned()];
        let req = PolicyRequest {
            tool: "x",
            also: &[],
            builtin: true,
            capabilities: &caps,
            inside_workspace: false,
            mcp_auto_approve: false,
            session_allowed: false,
            high_risk: false,
        };
        assert_eq!(policy.decide(&req), Decision::Allow(Source::AutoApproveAll));
    }

    #[test]
    fn the_strictest_rule_of_every_name_of_the_call_applies() {
        let policy = Policy::new(
            &config(
                &[("write_to_file", Rule::Deny), ("fs__mcp__write_file", Rule::Ask), ("use_mcp_tool", Rule::Allow)],
                true,
                true,
                false,
            ),
            false,
        );
        let caps = [capability::WRITES_FILES.to_owned()];
        let decide = |tool: &str, also: &[String]| {
            policy.decide(&PolicyRequest {
                tool,
                also,
                builtin: true,
                capabilities: &caps,
                inside_workspace: true,
                mcp_auto_approve: true,
                session_allowed: true,
                high_risk: false,
            })
        };
        assert_eq!(decide("replace_in_file", &["write_to_file".to_owned()]), Decision::Deny(Source::UserRule));
        assert_eq!(decide("use_mcp_tool", &["fs__mcp__write_file".to_owned()]), Decision::Ask(Source::UserRule));
        assert_eq!(decide("use_mcp_tool", &[]), Decision::Allow(Source::UserRule));
        assert_eq!(decide("other", &[]), Decision::Allow(Source::McpAutoApprove));
    }

    #[test]
    fn sandboxed_commands_run_without_asking_only_when_the_rule_is_on_and_the_sandbox_is() {
        let caps = [capability::RUNS_COMMANDS.to_owned()];
        let decide = |on: bool, sandbox: SandboxMode, builtin: bool, high_risk: bool| {
            let mut approval = config(&[], true, false, false);
            approval.auto_approve_sandboxed = on;
            Policy::new(&approval, false).with_sandbox(&approval, sandbox).decide(&PolicyRequest {
                tool: "execute_command",
                also: &[],
                builtin,
                capabilities: &caps,
                inside_workspace: true,
                mcp_auto_approve: false,
                session_allowed: false,
                high_risk,
            })
        };
        let ask = Decision::Ask(Source::Default);
        assert_eq!(decide(true, SandboxMode::WorkspaceWrite, true, false), Decision::Allow(Source::Sandboxed));
        assert_eq!(decide(true, SandboxMode::ReadOnly, true, false), Decision::Allow(Source::Sandboxed));
        assert_eq!(decide(false, SandboxMode::WorkspaceWrite, true, false), ask, "off by default");
        assert_eq!(decide(true, SandboxMode::Off, true, false), ask, "no sandbox, no auto-approval");
        assert_eq!(decide(true, SandboxMode::WorkspaceWrite, false, false), ask, "a third-party tool");
        assert_eq!(decide(true, SandboxMode::WorkspaceWrite, true, true), ask, "requires_approval still asks");
    }

    #[test]
    fn terminal_answers() {
        assert_eq!(parse_answer("y").answer, Answer::Approve);
        assert_eq!(parse_answer("Always").answer, Answer::AlwaysAllow);
        assert_eq!(parse_answer("").answer, Answer::Deny);
        assert_eq!(
            parse_answer("use the other file"),
            Reply { answer: Answer::Deny, feedback: Some("use the other file".into()) }
        );
    }
}
