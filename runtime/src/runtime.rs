//! The embeddable runtime: loads plugins, owns the actor system on threads of its own, and hands out
//! `Send` task handles whose futures any executor can await.

use crate::actors::pool::PoolSettings;
use crate::config::Config;
mod handle;
pub(crate) mod turn;

pub use handle::TaskHandle;

use crate::pipeline::hooks::{HookEvent, HookFn, HookInput, HookOutcome, Hooks};
use crate::pipeline::policy::{Approver, Policy};
use crate::pipeline::{Engine, EngineParts, Timeouts};
use crate::registry::coordinator::{Coordinator, CoordinatorSettings, RegisterEvent, Routing, RoutingCell};
use crate::registry::loader::{self, LoadError, LoadedPlugin};
use crate::registry::on_demand::{self, LoadSet};
use crate::registry::watch::{PluginEvent, PluginEvents, ReloadStats, Reloader, Watcher};
use crate::services::http::{HttpService, HttpSettings};
use crate::services::interaction::InteractionHost;
use crate::services::process::ProcessManager;
use crate::services::subagents::SubagentHost;
use crate::services::{HostServices, ServiceParts};
use crate::spec::{self, Provider, SpecContext, SpecRegistry, ToolSchemas};
use crate::task::TaskContext;
use crate::types::{EventSink, UiEvent};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;
use toolshed_plugin_api::services::CommandsSettings;

/// Why the runtime could not start.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The actor system thread could not start.
    #[error("cannot start the actor system: {0}")]
    System(#[source] std::io::Error),
    /// The actor system thread ended before it handed over its coordinator.
    #[error("cannot start the actor system: the actor thread ended during start-up")]
    SystemEnded(#[source] std::sync::mpsc::RecvError),
    /// A hook's matcher is not a valid regex.
    #[error("invalid hook: {0}")]
    Hook(#[from] crate::pipeline::hooks::HookMatcherError),
    /// Hot reload was asked for and the plugin directories cannot be watched.
    #[error(transparent)]
    Watch(#[from] crate::registry::watch::WatchError),
}

/// One loaded tool, as `toolshed tools` lists it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ToolInfo {
    /// The tool's name.
    pub name: String,
    /// The handler's primary name (the tool's own unless it is an alias).
    pub primary: String,
    /// The other names its handler serves.
    pub aliases: Vec<String>,
    /// The plugin's name.
    pub plugin: String,
    /// The plugin's version.
    pub version: String,
    /// The plugin library file.
    pub file: PathBuf,
    /// Declared capabilities (but `task_by_ref`, a calling convention every SDK tool declares).
    pub capabilities: Vec<String>,
    /// Calls abandoned after a timeout whose threads have not returned.
    pub abandoned: usize,
    /// Whether the tool refuses calls until they return.
    pub quarantined: bool,
}

/// Builds a [`Runtime`].
pub struct RuntimeBuilder {
    plugin_dirs: Vec<PathBuf>,
    plugin_files: Vec<PathBuf>,
    config: Config,
    yes: bool,
    approver: Option<Arc<dyn Approver>>,
    interaction: Option<Arc<dyn crate::services::interaction::Interaction>>,
    workers_per_tool: usize,
    events: Option<EventSink>,
    /// The web API token; `None` reads `TOOLSHED_WEB_TOKEN`.
    web_token: Option<Option<String>>,
    /// Host callback hooks: event, tool-name matcher, callback.
    hooks: Vec<(HookEvent, Option<String>, HookFn)>,
    /// Hot reload from the start (see [`Runtime::watch`]).
    watch: bool,
    /// The model side of subagent runs.
    agent_driver: Option<Arc<dyn crate::driver::AgentDriver>>,
    /// Load only the libraries declaring these names (see [`RuntimeBuilder::only_tools`]).
    only_tools: Option<Vec<String>>,
    declaration_index: Option<PathBuf>,
}

impl RuntimeBuilder {
    /// Adds a plugin directory; every library in it is loaded.
    pub fn plugin_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.plugin_dirs.push(dir.into());
        self
    }

    /// Adds plugin directories.
    pub fn plugin_dirs(mut self, dirs: impl IntoIterator<Item = PathBuf>) -> Self {
        self.plugin_dirs.extend(dirs);
        self
    }

    /// Adds one plugin library file.
    pub fn plugin_file(mut self, file: impl Into<PathBuf>) -> Self {
        self.plugin_files.push(file.into());
        self
    }

    /// Uses this configuration (defaults otherwise).
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// Approves every ask, as `--yes` does.
    pub fn yes(mut self, yes: bool) -> Self {
        self.yes = yes;
        self
    }

    /// How the conversational tools reach the host's user and task machinery (questions, plans, completion,
    /// new tasks, condensing); without one, questions go unanswered and the host actions are unsupported.
    pub fn interaction(mut self, interaction: impl crate::services::interaction::Interaction) -> Self {
        self.interaction = Some(Arc::new(interaction));
        self
    }

    /// The model side of subagent runs: with a driver (and `[subagents] enabled`), use_subagents and the
    /// configured agents' tools run child tasks against it; without one they answer that subagents are
    /// disabled. When none is given and `[subagents] base_url` is set, an [`crate::OpenAiDriver`] for that
    /// endpoint is used.
    pub fn agent_driver(mut self, driver: impl crate::driver::AgentDriver) -> Self {
        self.agent_driver = Some(Arc::new(driver));
        self
    }

    /// How the runtime asks its user; without one, calls that need asking are denied.
    pub fn approver(mut self, approver: impl Approver) -> Self {
        self.approver = Some(Arc::new(approver));
        self
    }

    /// Receives the UI messages tools send with `say` (progress, streamed diffs, command output).
    pub fn on_event(mut self, sink: impl Fn(&UiEvent) + Send + Sync + 'static) -> Self {
        self.events = Some(Arc::new(sink));
        self
    }

    /// The bearer token of the web API (`None`: no token), instead of the `TOOLSHED_WEB_TOKEN` environment
    /// variable. The host adds it to requests under `[web] api_base_url` only; plugins never see it.
    pub fn web_token(mut self, token: Option<String>) -> Self {
        self.web_token = Some(token);
        self
    }

    /// Adds a PreToolUse hook: called after a tool's validation and before approval, for every tool; it may
    /// refuse the call ([`HookOutcome::deny`], the model reads Cline's `toolDenied()`), ask, allow, or add
    /// context. Host callbacks run before the `[hooks]` commands of the configuration.
    pub fn pre_tool_use<F, Fut>(self, hook: F) -> Self
    where
        F: Fn(HookInput) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = HookOutcome> + Send + 'static,
    {
        self.hook(HookEvent::PreToolUse, None, hook)
    }

    /// Adds a PostToolUse hook: called after a tool ran, with its result in `tool_response`; context it adds
    /// reaches the model after the result as Cline's `<hook_context source="PostToolUse" …>` block.
    pub fn post_tool_use<F, Fut>(self, hook: F) -> Self
    where
        F: Fn(HookInput) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = HookOutcome> + Send + 'static,
    {
        self.hook(HookEvent::PostToolUse, None, hook)
    }

    /// Adds a hook for the tools whose whole name matches `matcher` (a regex, as Claude Code's matchers;
    /// `None` or `*` for every tool). An invalid regex makes [`RuntimeBuilder::build`] fail.
    pub fn hook<F, Fut>(mut self, event: HookEvent, matcher: Option<&str>, hook: F) -> Self
    where
        F: Fn(HookInput) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = HookOutcome> + Send + 'static,
    {
        self.hooks.push((event, matcher.map(str::to_owned), crate::pipeline::hooks::callback(hook)));
        self
    }

    /// Watches the plugin directories from the start: libraries added, changed or removed are loaded,
    /// reloaded or unloaded while the runtime runs (see [`Runtime::watch`]).
    pub fn watch(mut self, watch: bool) -> Self {
        self.watch = watch;
        self
    }

    /// Starts as a one-shot runtime: loads only the plugin libraries that declare these tool names (primary
    /// names or aliases), found through the declaration index, and any other library when a call first needs
    /// one of its tools (attempt_completion's command, `{server}__mcp__{tool}` names, subagents, an unknown
    /// name, whose error lists every tool). The index is a cache of what each library declares, keyed by its
    /// content hash, at [`RuntimeBuilder::declaration_index`]; it only picks the file to open: the library
    /// loaded must have the hash the index gave and declare the name, or everything is loaded and the index
    /// rewritten. [`Runtime::tools`] and the schemas list what is loaded so far.
    pub fn only_tools<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.only_tools = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Where [`RuntimeBuilder::only_tools`] keeps its declaration index (default
    /// `$XDG_CACHE_HOME/toolshed/index.json`, else `~/.cache/toolshed/index.json`); `None` keeps none, so a
    /// one-shot start loads everything.
    pub fn declaration_index(mut self, path: Option<PathBuf>) -> Self {
        self.declaration_index = path;
        self
    }

    /// Worker threads per tool (default 8).
    pub fn workers_per_tool(mut self, workers: usize) -> Self {
        self.workers_per_tool = workers.max(1);
        self
    }

    /// Loads the plugins and starts the actor system.
    pub fn build(self) -> Result<Runtime, RuntimeError> {
        let mut hooks = Hooks::new(
            std::time::Duration::from_millis(self.config.hooks.timeout_ms),
            self.config.hooks.max_output_bytes,
        )
        .with_env(crate::child_process::clean::EnvRule::of(&self.config));
        for (event, matcher, hook) in &self.hooks {
            hooks.add_callback(*event, matcher.as_deref(), Arc::clone(hook))?;
        }
        for (event, commands) in [
            (HookEvent::PreToolUse, &self.config.hooks.pre_tool_use),
            (HookEvent::PostToolUse, &self.config.hooks.post_tool_use),
        ] {
            for command in commands {
                hooks.add_command(event, command.matcher.as_deref(), &command.command)?;
            }
        }
        let (mut files, mut load_errors) = loader::discover(&self.plugin_dirs);
        files.extend(self.plugin_files.iter().cloned());
        // `[plugins] overrides` let a later library take a built-in name: only the whole load order decides.
        let overrides = (!self.config.plugins.overrides.is_empty()).then_some("[plugins] overrides are set");
        let set = match &self.only_tools {
            Some(names) => LoadSet::Declaring { names: names.clone(), index: self.declaration_index.clone() },
            None => LoadSet::All,
        };
        let hub = Arc::new(crate::registry::watch::EventHub::default());
        let quarantined: crate::registry::remote::OnQuarantine = {
            let hub = Arc::clone(&hub);
            Arc::new(move |file: &std::path::Path, plugin: &str, reason: &str| {
                hub.emit(&crate::registry::watch::PluginEvent::Quarantined {
                    file: file.to_owned(),
                    plugin: plugin.to_owned(),
                    reason: reason.to_owned(),
                })
            })
        };
        let policy = Arc::new(crate::registry::remote::Policy::new(&self.config.plugins, quarantined));
        let first = on_demand::first_load(&files, &set, overrides, &policy);
        load_errors.extend(first.errors);
        let plugins = first.plugins;
        if !self.config.plugins.unload {
            plugins.iter().for_each(|plugin| plugin.library().keep_mapped());
        }

        let config = &self.config;
        let plugin_config = config
            .plugins
            .config
            .keys()
            .filter_map(|name| Some((name.clone(), config.plugins.config_json(name)?.to_string())))
            .collect();
        let reload_config: BTreeMap<String, String> = plugin_config;
        let loaded = plugins.clone();
        let settings = CoordinatorSettings {
            overrides: config.plugins.overrides.iter().cloned().collect::<BTreeSet<_>>(),
            plugin_config: reload_config.clone(),
            workers: PoolSettings {
                max: self.workers_per_tool,
                // Bounded here too: a host may build its `Config` without the loader's validation.
                spin: std::time::Duration::from_micros(
                    config.plugins.worker_spin_us.min(crate::config::MAX_WORKER_SPIN_US),
                ),
            },
            max_abandoned: config.plugins.max_abandoned as usize,
            bulk_priority: config.plugins.bulk_priority,
        };
        let routing: RoutingCell = Arc::new(RwLock::new(Arc::new(Routing::default())));
        let (system, thread, stopped, events, coordinator) = start_system(settings, Arc::clone(&routing), plugins)?;
        let reloader = Arc::new(Reloader::new(
            self.plugin_dirs.clone(),
            coordinator,
            reload_config,
            &loaded,
            config.plugins.unload,
            policy,
            hub,
        ));
        let on_demand = first.pending.map(|pending| Arc::new(on_demand::OnDemand::new(pending, Arc::clone(&reloader))));
        for event in &events {
            match event {
                RegisterEvent::Refused { reason, .. } => tracing::info!("{reason}"),
                RegisterEvent::Declined { name, file } => {
                    tracing::info!(tool = %name, file = %file.display(), "the plugin declined the tool")
                }
                RegisterEvent::Registered { names, file } => {
                    tracing::debug!(tools = ?names, file = %file.display(), "registered")
                }
            }
        }
        let plugin_timeouts = [("list_files".to_owned(), config.timeouts.list_files_ms)].into_iter().collect();
        // The MCP servers start in the background; calls that need one wait for it (at most the start-up
        // timeout).
        let mcp = match &config.mcp.settings {
            None => None,
            Some(_) => match crate::services::mcp::McpHub::start(&config.mcp) {
                Ok(hub) => Some(Arc::new(hub)),
                Err(e) => {
                    tracing::warn!("cannot start the MCP hub: {e}");
                    None
                }
            },
        };
        let processes = Arc::new(
            ProcessManager::new(config.timeouts.kill_grace(), config.commands.keep_background).configured(config),
        );
        let parts = ServiceParts {
            processes,
            commands: CommandsSettings {
                // The config loader reads Cline's variable as the user's setting (so a workspace can tighten
                // it); a host that builds its config by hand still gets the variable when it set nothing.
                permissions: config
                    .commands
                    .permissions
                    .clone()
                    .or_else(|| std::env::var("CLINE_COMMAND_PERMISSIONS").ok().filter(|v| !v.trim().is_empty())),
                default_timeout_ms: config.commands.default_timeout_ms,
                long_timeout_ms: config.commands.long_timeout_ms,
                yolo: config.approval.yolo,
                notice_ms: config.timeouts.command_notice_ms,
                // Each task's own, filled in per call.
                scratch_dir: None,
            },
            web: HttpService::new(HttpSettings::new(
                &config.web,
                self.web_token.unwrap_or_else(|| std::env::var("TOOLSHED_WEB_TOKEN").ok()),
            )),
            mcp,
            interaction: Arc::new(InteractionHost {
                interaction: self.interaction,
                tasks: config.tasks.clone(),
                yolo: config.approval.yolo,
                ask_timeout: config.timeouts.ask(),
                arbiter: system.arbiter().clone(),
                skills: Arc::new(crate::services::skills::SkillDirs::new(config)),
            }),
            subagents: Arc::new(SubagentHost::new(
                self.agent_driver.or_else(|| match crate::driver::OpenAiDriver::from_config(&config.subagents) {
                    Ok(driver) => driver.map(|d| Arc::new(d) as Arc<dyn crate::driver::AgentDriver>),
                    Err(e) => {
                        tracing::warn!("cannot start the [subagents] driver: {e}");
                        None
                    }
                }),
                config,
            )),
            browser: config.browser.clone(),
            child_env: crate::child_process::clean::EnvRule::of(config),
            isolation: config.isolation.clone(),
        };
        let engine_parts = EngineParts {
            routing,
            policy: Policy::new(&config.approval, self.yes).with_sandbox(&config.approval, config.commands.sandbox),
            approver: self.approver,
            timeouts: Timeouts {
                prepare: config.timeouts.prepare(),
                call: config.timeouts.call(),
                ask: config.timeouts.ask(),
                cancel_grace: Duration::from_millis(config.timeouts.cancel_grace_ms),
                commit: Duration::from_millis(config.timeouts.commit_ms),
            },
            plugin_timeouts,
            events: self.events,
            hooks,
            max_result_bytes: usize::try_from(config.limits.max_result_bytes).unwrap_or(usize::MAX),
            mcp_list_wait: Duration::from_millis(config.serve.mcp_startup_ms),
            on_demand,
        };
        let shared = Engine::new(engine_parts, |runner| HostServices::new(parts, runner));
        let runtime = Runtime {
            shared,
            system,
            thread: Some(thread),
            stopped,
            shutdown: config.timeouts.shutdown(),
            load_errors,
            events,
            reloader,
            watcher: std::sync::Mutex::new(None),
            debounce: config.timeouts.watch_debounce(),
        };
        if self.watch {
            runtime.watch()?;
        }
        Ok(runtime)
    }
}

/// The running actor system: the system, its thread, a receiver that disconnects when the thread ends, the
/// start-up registrations and the coordinator.
type Started = (actix::System, JoinHandle<()>, Stopped, Vec<RegisterEvent>, actix::Addr<Coordinator>);

/// Disconnects when the actor thread ends, so shutdown waits for it without polling.
type Stopped = std::sync::Mutex<std::sync::mpsc::Receiver<()>>;

fn start_system(
    settings: CoordinatorSettings,
    routing: RoutingCell,
    plugins: Vec<LoadedPlugin>,
) -> Result<Started, RuntimeError> {
    let (tx, rx) = std::sync::mpsc::channel();
    let (ended, stopped) = std::sync::mpsc::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("toolshed-actors".to_owned())
        .spawn(move || {
            // Dropped however the thread ends.
            let _ended = ended;
            let system = actix::System::new();
            let events = system.block_on(async move {
                use actix::Actor;
                let coordinator = Coordinator::new(settings, routing).start();
                let mut events = Vec::new();
                for plugin in plugins {
                    match coordinator.send(crate::registry::coordinator::Register(plugin)).await {
                        Ok(mut more) => events.append(&mut more),
                        Err(e) => tracing::error!("the coordinator stopped during start-up: {e}"),
                    }
                }
                // Keep the coordinator alive for the system's lifetime.
                std::mem::forget(coordinator.clone());
                (events, coordinator)
            });
            if tx.send((actix::System::current(), events)).is_err() {
                return;
            }
            if let Err(e) = system.run() {
                tracing::error!("the actor system ended with an error: {e}");
            }
        })
        .map_err(RuntimeError::System)?;
    let (system, (events, coordinator)) = rx.recv().map_err(RuntimeError::SystemEnded)?;
    Ok((system, thread, std::sync::Mutex::new(stopped), events, coordinator))
}

/// A running Toolshed: its plugins, actors and policy. Dropping it stops the actors and joins their thread
/// within the `[timeouts] shutdown_ms` bound; threads still inside a plugin call are left to finish alone.
pub struct Runtime {
    shared: Arc<Engine>,
    system: actix::System,
    thread: Option<JoinHandle<()>>,
    stopped: Stopped,
    shutdown: Duration,
    load_errors: Vec<LoadError>,
    events: Vec<RegisterEvent>,
    /// Loads, reloads and unloads plugin libraries while the runtime runs.
    reloader: Arc<Reloader>,
    /// The plugin directories' watcher, once [`Runtime::watch`] started it.
    watcher: std::sync::Mutex<Option<Watcher>>,
    debounce: Duration,
}

impl Runtime {
    /// A builder with default configuration and no plugins.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder {
            plugin_dirs: Vec::new(),
            plugin_files: Vec::new(),
            config: Config::default(),
            yes: false,
            approver: None,
            interaction: None,
            workers_per_tool: 8,
            events: None,
            web_token: None,
            hooks: Vec::new(),
            watch: false,
            agent_driver: None,
            only_tools: None,
            declaration_index: crate::registry::index::default_path(),
        }
    }

    /// Subscribes to plugin events (loaded, reloaded, unloaded, failed) from now on. Any number of
    /// subscribers each get every event, in order. Events come from [`Runtime::watch`] and [`Runtime::rescan`].
    pub fn events(&self) -> PluginEvents {
        self.reloader.hub.subscribe()
    }

    /// Starts hot reload: the plugin directories are watched, and a library added, changed or removed is
    /// loaded, swapped in or unloaded once no change has touched it for `[timeouts] watch_debounce_ms`.
    /// Calls in flight finish on the code they started on; a broken build never replaces a working one.
    /// Starting it again does nothing.
    pub fn watch(&self) -> Result<(), crate::registry::watch::WatchError> {
        let mut watcher = self.watcher.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if watcher.is_none() {
            *watcher = Some(Watcher::start(Arc::clone(&self.reloader), self.debounce)?);
        }
        Ok(())
    }

    /// Brings the plugin directories up to date now, without waiting for a watcher: new and changed
    /// libraries are loaded or swapped in, removed ones unloaded. Resolves with what happened (subscribers of
    /// [`Runtime::events`] get the same events).
    pub fn rescan(&self) -> impl std::future::Future<Output = Vec<PluginEvent>> + Send + 'static + use<> {
        let reloader = Arc::clone(&self.reloader);
        async move { reloader.rescan().await }
    }

    /// What hot reload has cost so far: reloads, replaced copies still held, copies unloaded and mapped.
    pub fn reload_stats(&self) -> ReloadStats {
        self.reloader.stats()
    }

    /// Opens a task: the handle through which a host runs one agent task's tool calls.
    pub fn task(&self, context: TaskContext) -> TaskHandle {
        TaskHandle { task: self.shared.open_task(context), shared: Arc::clone(&self.shared) }
    }

    /// The libraries that failed to load, each with its file and reason.
    pub fn load_errors(&self) -> &[LoadError] {
        &self.load_errors
    }

    /// What happened to each declared tool at start-up (registered, declined, refused).
    pub fn register_events(&self) -> &[RegisterEvent] {
        &self.events
    }

    /// Runs a future on the runtime's own actor thread and resolves with its output (`None` if the runtime
    /// stopped first). A host loop that makes many calls one at a time pays a cross-thread wake-up per call
    /// when it awaits from its own threads (~80 µs on idle VMs); run there, it pays the actor hop alone.
    pub fn run_on_runtime<F, Fut, T>(
        &self,
        make: F,
    ) -> impl std::future::Future<Output = Option<T>> + Send + 'static + use<F, Fut, T>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: std::future::Future<Output = T> + 'static,
        T: Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let spawned = self.system.arbiter().spawn_fn(move || {
            actix::spawn(async move {
                let _ = tx.send(make().await);
            });
        });
        async move {
            if !spawned {
                return None;
            }
            rx.await.ok()
        }
    }

    /// The spec of a tool for a model family: that family's, else the generic one, else any.
    pub fn spec(&self, name: &str, family: &str) -> Option<toolshed_plugin_api::ToolSpec> {
        spec::family_spec(&self.shared.route(name)?.meta.specs, family).cloned()
    }

    /// A spec registry of the tools loaded now, every family's specs registered in tool-name order; add the
    /// subagents and MCP servers, then pick a prompt variant's tools with [`SpecRegistry::enabled`]. A hot
    /// reload swaps the routing snapshot whole, so a registry never mixes two generations.
    pub fn specs(&self) -> SpecRegistry {
        let mut registry = self.shared.snapshot().spec_registry();
        registry.set_agents(&self.shared.services.subagents.agent_configs());
        if let Some(hub) = &self.shared.services.mcp {
            registry.set_mcp_servers(&hub.server_infos());
        }
        registry
    }

    /// Resolves once every configured MCP server has connected or failed (at most `[mcp]
    /// startup_timeout_ms`); at once without MCP settings.
    pub async fn mcp_settled(&self) {
        if let Some(hub) = &self.shared.services.mcp {
            hub.settled().await;
        }
    }

    /// Resolves once no configured MCP server is still starting, or after `[serve] mcp_startup_ms`: what
    /// `toolshed serve` and `toolshed schema` wait for before they list the servers' tools.
    pub async fn mcp_listable(&self) {
        self.shared.mcp_listable().await;
    }

    /// A generation counter of the MCP servers, bumped whenever one connects, disconnects, or changes its
    /// tools or resources (a `list_changed` notification followed): watch it to refresh tool lists built
    /// from [`Runtime::specs`] or [`Runtime::mcp_servers`]. Without `[mcp] settings` the counter stays 0
    /// and its sender is gone, so `changed()` answers an error at once.
    pub fn mcp_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        match &self.shared.services.mcp {
            Some(hub) => hub.changes(),
            None => tokio::sync::watch::channel(0).1,
        }
    }

    /// The configured MCP servers now: state, tools, resources, auto-approved tools, and any settings-file
    /// error. `None` without `[mcp] settings`.
    pub fn mcp_servers(&self) -> Option<toolshed_plugin_api::services::McpServersResponse> {
        self.shared.services.mcp.as_ref().map(|hub| hub.report())
    }

    /// Every loaded tool's schema for `provider`, each with its spec for `family` (else the generic one, else
    /// any), tools whose requirements `context` does not meet or that its profile does not serve left out,
    /// templates filled. For a Cline family (see [`crate::cline_variant`]) under the `cline` profile, the tools
    /// its prompt variant lists in that order, then the third-party tools (ids none of Cline's) by name; else
    /// every tool by name. The JSON formats leave out tools without a description (the `focus_chain`
    /// placeholder), as Cline does; then, when `context.native_tool_calls` and an MCP hub is configured, the
    /// connected servers' tools as `{server}__mcp__{tool}`. This is what `toolshed schema` prints.
    pub fn schema(&self, provider: Provider, family: &str, context: &SpecContext) -> ToolSchemas {
        self.shared.schema(provider, family, context)
    }

    /// The loaded tools, sorted by name.
    pub fn tools(&self) -> Vec<ToolInfo> {
        let snapshot = self.shared.snapshot();
        let mut tools: Vec<ToolInfo> = snapshot
            .routes
            .values()
            .map(|route| {
                let meta = &route.meta;
                ToolInfo {
                    name: meta.name.clone(),
                    primary: meta.primary.clone(),
                    aliases: meta.aliases.clone(),
                    plugin: meta.plugin.name.clone(),
                    version: meta.plugin.version.clone(),
                    file: meta.plugin.file.clone(),
                    // How the SDK takes a call's task says nothing about the tool, and every SDK tool declares it.
                    capabilities: meta
                        .capabilities
                        .iter()
                        .filter(|c| *c != toolshed_plugin_api::capability::TASK_BY_REF)
                        .cloned()
                        .collect(),
                    abandoned: route.health.abandoned(),
                    quarantined: route.health.quarantined(),
                }
            })
            .collect();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        tools
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        // No reload may start while the actors stop.
        drop(self.watcher.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take());
        // Commands still running when the runtime goes are killed, not orphaned.
        self.shared.services.processes.kill_all();
        self.system.stop();
        if let Some(thread) = self.thread.take() {
            let stopped = self.stopped.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            match stopped.recv_timeout(self.shutdown) {
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    let _ = thread.join();
                }
                _ => tracing::warn!(
                    "the actor system did not stop within {} ms; leaving it behind",
                    self.shutdown.as_millis()
                ),
            }
        }
    }
}
