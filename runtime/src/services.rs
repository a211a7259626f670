//! The host services plugins call during a call (`path.*`, `process.*`, `http.request`, `mcp.*`, the
//! conversation, subagents, child-process jobs) and the router that dispatches them by name. Services that
//! run tools reach back into the pipeline through [`runner::ToolRunner`], which the pipeline implements.

pub(crate) mod browser;
pub(crate) mod commit_gate;
mod core;
pub(crate) mod host;
pub(crate) mod http;
pub(crate) mod interaction;
pub mod isolate;
pub(crate) mod mcp;
pub(crate) mod process;
pub(crate) mod runner;
pub(crate) mod skills;
pub(crate) mod subagents;

use browser::BrowserHost;
use host::Router;
use http::HttpService;
use interaction::InteractionHost;
use mcp::McpHub;
use process::ProcessManager;
use runner::{NameRoute, ToolRunner};
use std::sync::{Arc, Weak};
use subagents::SubagentHost;
use toolshed_plugin_api::services::{CommandsSettings, HttpRequestService, WebSettingsService};

/// Everything the services are built from.
pub(crate) struct ServiceParts {
    pub processes: Arc<ProcessManager>,
    pub commands: CommandsSettings,
    pub web: HttpService,
    pub mcp: Option<Arc<McpHub>>,
    pub interaction: Arc<InteractionHost>,
    pub subagents: Arc<SubagentHost>,
    pub isolation: crate::config::IsolationConfig,
    pub browser: crate::config::BrowserConfig,
    /// What of the host's environment children that keep the user's get.
    pub child_env: crate::child_process::clean::EnvRule,
}

/// The runtime's services: the router every call's host answers from, and the parts the runtime itself
/// uses (processes to kill at a task's end, the MCP hub and agents for the tool list, the focus chain).
pub(crate) struct HostServices {
    pub router: Arc<Router>,
    /// The tool names services answer for without a plugin of that name, in the order the pipeline asks
    /// them: the MCP servers' native tool names, the configured agents' tools.
    pub name_routes: Vec<Box<dyn NameRoute>>,
    pub processes: Arc<ProcessManager>,
    pub mcp: Option<Arc<McpHub>>,
    pub interaction: Arc<InteractionHost>,
    pub subagents: Arc<SubagentHost>,
    /// The tasks' browsers (browser_action).
    pub browser: Arc<BrowserHost>,
    /// The user's setting that turns the web tools on (Cline's `clineWebToolsEnabled`): the specs offer
    /// web_fetch and web_search only then.
    pub web_tools: bool,
}

impl HostServices {
    /// Registers every service. `runner` is the pipeline, for the services that run tools.
    pub fn new(parts: ServiceParts, runner: Weak<dyn ToolRunner>) -> Self {
        let mut router = Router::default();
        core::register(&mut router);
        process::register(&mut router, &parts.processes, parts.commands);
        let web = Arc::new(parts.web);
        let web_tools = web.web_settings().enabled;
        let settings = Arc::clone(&web);
        router.register::<WebSettingsService>(move |_, _| Ok(settings.web_settings()));
        router.register::<HttpRequestService>(move |call, req| web.request(req, &call.cancels()));
        mcp::register(&mut router, parts.mcp.clone());
        interaction::register(&mut router, &parts.interaction, runner.clone());
        subagents::register(&mut router, &parts.subagents, &parts.interaction, runner);
        isolate::register(&mut router, parts.isolation);
        let browser = Arc::new(BrowserHost::new(parts.browser, parts.child_env.clone()));
        browser::register(&mut router, &browser);
        let mut name_routes: Vec<Box<dyn NameRoute>> = Vec::new();
        if let Some(hub) = &parts.mcp {
            name_routes.push(Box::new(mcp::NativeTools(Arc::clone(hub))));
        }
        name_routes.push(Box::new(subagents::AgentTools(Arc::clone(&parts.subagents))));
        Self {
            router: Arc::new(router),
            name_routes,
            processes: parts.processes,
            mcp: parts.mcp,
            interaction: parts.interaction,
            web_tools,
            subagents: parts.subagents,
            browser,
        }
    }

    /// What a task's end or cancellation stops: its processes and its browser.
    pub fn end_task(&self, task_id: &str) {
        self.processes.kill_task(task_id);
        self.browser.close_task(task_id);
    }
}
