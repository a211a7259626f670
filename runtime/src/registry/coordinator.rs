//! The coordinator actor: the enum-to-factory registry (tool id → the factory a plugin exported), names and
//! shared-handler aliases, and the routing table every call reads.
//!
//! The coordinator is the registry's only writer. After every change it publishes an immutable routing
//! snapshot, so a call resolves its tool without a message hop and keeps the generation it started on.

use crate::actors::pool::{PoolSettings, Priority};
use crate::actors::tool_actor::{InlineLane, Lane, ToolActor, ToolHealth};
use crate::registry::loader::{LoadedPlugin, PluginHandler, PluginIdentity};
use crate::registry::tool_id::{check_plugin_tool_name, ToolId};
use actix::prelude::*;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use toolshed_plugin_api::{capability, ToolDeclaration, ToolSpec};

/// What the registry knows about one callable name (a primary name or an alias).
#[derive(Debug)]
pub struct ToolMeta {
    /// The registry key of the handler serving this name.
    pub id: ToolId,
    /// This name.
    pub name: String,
    /// The primary name of the handler (equal to `name` unless this is an alias).
    pub primary: String,
    /// The other names the same handler serves.
    pub aliases: Vec<String>,
    /// The result header template.
    pub display: Option<String>,
    /// Declared capabilities (shared by a tool and its aliases).
    pub capabilities: Vec<String>,
    /// Specs per model family.
    pub specs: BTreeMap<String, ToolSpec>,
    /// Required parameters, from the generic spec, each with whether an empty string counts as a value.
    pub required: Vec<(String, bool)>,
    /// The tool checks its parameters itself: the runtime's required-parameter check gives way.
    pub checks_parameters: bool,
    /// The tool declared that its `prepare` always proceeds ([`capability::PROCEEDS`]): it is not called.
    pub proceeds: bool,
    /// The tool takes its task by reference ([`capability::TASK_BY_REF`]): calls carry the task's key only.
    pub task_by_ref: bool,
    /// Parameter aliases, alias → parameter, applied before any check.
    pub param_aliases: BTreeMap<String, String>,
    /// The plugin that serves it.
    pub plugin: Arc<PluginIdentity>,
}

/// A callable name's route: its metadata and the actor serving it. One reference count: every call takes a
/// route, and an actix address's clone allocates (a sender task of its own).
#[derive(Debug, Clone)]
pub(crate) struct Route(Arc<RouteEntry>);

impl Route {
    pub fn new(entry: RouteEntry) -> Self {
        Self(Arc::new(entry))
    }

    /// The route without its type, for a layer below this one that holds routes (a task's stream pins):
    /// the same reference count, not a second allocation around it.
    pub fn erased(&self) -> Arc<dyn std::any::Any + Send + Sync> {
        Arc::clone(&self.0) as Arc<dyn std::any::Any + Send + Sync>
    }

    /// A route [`Route::erased`] gave, back with its type.
    pub fn from_erased(erased: Arc<dyn std::any::Any + Send + Sync>) -> Option<Self> {
        erased.downcast::<RouteEntry>().ok().map(Self)
    }
}

impl std::ops::Deref for Route {
    type Target = RouteEntry;

    fn deref(&self) -> &RouteEntry {
        &self.0
    }
}

/// What a [`Route`] holds.
#[derive(Debug)]
pub(crate) struct RouteEntry {
    pub meta: Arc<ToolMeta>,
    pub actor: Addr<ToolActor>,
    /// An `inline` tool's handler, called on the caller's thread without the hop to the actor.
    pub inline: Option<Arc<InlineLane>>,
    pub health: Arc<ToolHealth>,
}

/// The immutable routing snapshot: name → route.
#[derive(Debug, Default)]
pub(crate) struct Routing {
    /// Hashed with foldhash, seeded per process: every call looks its tool's name up here, and SipHash cost
    /// more than the rest of the lookup on a short name. Names come from plugins and models, so the seed stays.
    pub routes: HashMap<String, Route, foldhash::fast::RandomState>,
}

impl Routing {
    /// The specs of every loaded tool, registered in name order so dedup is stable.
    pub fn spec_registry(&self) -> crate::spec::SpecRegistry {
        let mut metas: Vec<_> = self.routes.values().map(|route| &route.meta).collect();
        metas.sort_by(|a, b| a.name.cmp(&b.name));
        metas
            .into_iter()
            .flat_map(|meta| meta.specs.iter().map(|(family, spec)| (family.clone(), spec.clone())))
            .collect()
    }
}

/// Where the coordinator publishes snapshots and callers read them.
pub(crate) type RoutingCell = Arc<RwLock<Arc<Routing>>>;

/// What happened to one declared tool during registration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegisterEvent {
    /// Registered under these names (primary first).
    Registered {
        /// The names.
        names: Vec<String>,
        /// The plugin file.
        file: std::path::PathBuf,
    },
    /// The plugin's factory declined the tool.
    Declined {
        /// The tool.
        name: String,
        /// The plugin file.
        file: std::path::PathBuf,
    },
    /// Refused, with the reason (naming the files involved).
    Refused {
        /// The tool.
        name: String,
        /// Why, in one line.
        reason: String,
    },
}

/// Settings the coordinator applies to every tool.
#[derive(Debug, Clone)]
pub(crate) struct CoordinatorSettings {
    /// Built-in names a later plugin may take over.
    pub overrides: BTreeSet<String>,
    /// Per-plugin configuration JSON, by plugin name.
    pub plugin_config: BTreeMap<String, String>,
    /// Each tool's worker pool: `Runtime::builder().workers_per_tool` and `[plugins] worker_spin_us`.
    pub workers: PoolSettings,
    pub max_abandoned: usize,
    /// `[plugins] bulk_priority`: the priority of `bulk` tools' workers.
    pub bulk_priority: Priority,
}

struct Registered {
    plugin: Arc<PluginIdentity>,
    /// One route per callable name, the primary first; all share one actor and handler instance.
    routes: Vec<Route>,
}

/// The coordinator actor.
pub(crate) struct Coordinator {
    settings: CoordinatorSettings,
    entries: BTreeMap<ToolId, Registered>,
    /// Every callable name → the id of the entry serving it.
    names: HashMap<String, ToolId>,
    /// Every library file with a version registered → the tools that version declared but could not
    /// register. A reload may fail those again without being refused; it may not fail any other.
    versions: HashMap<PathBuf, BTreeSet<String>>,
    routing: RoutingCell,
}

/// One declared tool that passed every check, ready to be started.
struct Planned<'a> {
    decl: &'a ToolDeclaration,
    handler: PluginHandler,
    names: Vec<String>,
    /// Entries of other files it overrides (built-in names listed in `[plugins] overrides`).
    overrides: BTreeSet<ToolId>,
}

/// Each declared tool's handler from a plugin's factory, in declaration order: `Ok(None)` when the factory
/// declines the tool, `Err` when constructing it failed (a constructor panic arrives here as an error: the
/// SDK catches it). Run before anything changes, so a reload constructs its handlers off the coordinator.
pub(crate) fn build_handlers(
    plugin: &LoadedPlugin,
    plugin_config: &BTreeMap<String, String>,
) -> Vec<Result<Option<PluginHandler>, String>> {
    let config = plugin_config.get(&plugin.identity.name).map_or("{}", String::as_str);
    plugin.declaration.tools.iter().map(|decl| plugin.new_handler(&decl.name, config)).collect()
}

/// What a registration or a swap did.
#[derive(Debug, Default)]
pub(crate) struct SwapReport {
    /// Per declared tool: registered, declined or refused.
    pub events: Vec<RegisterEvent>,
    /// Names the file's previous version served that this version does not.
    pub removed: Vec<String>,
    /// Whether a previous version of the file was replaced.
    pub replaced: bool,
}

impl Coordinator {
    pub fn new(settings: CoordinatorSettings, routing: RoutingCell) -> Self {
        Self { settings, entries: BTreeMap::new(), names: HashMap::new(), versions: HashMap::new(), routing }
    }

    fn publish(&self) {
        let routes = self
            .entries
            .values()
            .flat_map(|entry| entry.routes.iter().map(|route| (route.meta.name.clone(), route.clone())))
            .collect();
        let snapshot = Arc::new(Routing { routes });
        match self.routing.write() {
            Ok(mut cell) => *cell = snapshot,
            Err(poisoned) => *poisoned.into_inner() = snapshot,
        }
    }

    /// Checks one declared tool against the registry as it will be once the file's previous version is gone.
    fn plan<'a>(
        &self,
        plugin: &LoadedPlugin,
        decl: &'a ToolDeclaration,
        handler: Result<Option<PluginHandler>, String>,
        taken_here: &BTreeSet<String>,
    ) -> Result<Planned<'a>, RegisterEvent> {
        let file = &plugin.identity.file;
        let refuse = |reason: String| RegisterEvent::Refused { name: decl.name.clone(), reason };
        let names: Vec<String> =
            std::iter::once(decl.name.clone()).chain(decl.aliases.iter().map(|a| a.name.clone())).collect();
        for name in &names {
            if let Err(e) = check_plugin_tool_name(name) {
                return Err(refuse(format!("{}: {e}", file.display())));
            }
        }
        if let Some((_, dup)) =
            names.iter().enumerate().find(|(i, n)| names[..*i].contains(n) || taken_here.contains(*n))
        {
            return Err(refuse(format!("{}: declares the name '{dup}' twice", file.display())));
        }
        // A name taken by another file is refused unless the user's config lets a later plugin override that
        // built-in name. Names of this file's previous version are being replaced, not taken.
        let mut overrides = BTreeSet::new();
        for name in &names {
            let Some(owner_id) = self.names.get(name) else {
                continue;
            };
            let owner = &self.entries[owner_id].plugin;
            if owner.file == *file {
                continue;
            }
            let overridable = ToolId::from_name(name).is_builtin() && self.settings.overrides.contains(name);
            if !overridable {
                return Err(refuse(format!(
                    "tool name '{name}' is already registered by {}; {} cannot register it too (to replace a built-in tool, list '{name}' in [plugins] overrides of your user config)",
                    owner.file.display(),
                    file.display()
                )));
            }
            overrides.insert(owner_id.clone());
        }
        match handler {
            Ok(Some(handler)) => Ok(Planned { decl, handler, names, overrides }),
            Ok(None) => Err(RegisterEvent::Declined { name: decl.name.clone(), file: file.clone() }),
            Err(message) => Err(refuse(format!(
                "{}: constructing the handler of '{}' failed: {message}",
                file.display(),
                decl.name
            ))),
        }
    }

    /// Registers a version of a library file, replacing the tools of its previous version in one published
    /// snapshot. With `strict`, a version that cannot register a tool its previous version could changes
    /// nothing and returns the reasons: a broken build never replaces a working one.
    fn apply(
        &mut self,
        plugin: &LoadedPlugin,
        handlers: Vec<Result<Option<PluginHandler>, String>>,
        strict: bool,
    ) -> Result<SwapReport, Vec<String>> {
        let file = plugin.identity.file.clone();
        let previous_refused = self.versions.get(&file).cloned();
        let mut events = Vec::new();
        let mut planned = Vec::new();
        let mut taken_here = BTreeSet::new();
        let mut refused = BTreeSet::new();
        let mut failures = Vec::new();
        for (decl, handler) in plugin.declaration.tools.iter().zip(handlers) {
            match self.plan(plugin, decl, handler, &taken_here) {
                Ok(plan) => {
                    taken_here.extend(plan.names.iter().cloned());
                    planned.push(plan);
                }
                Err(event) => {
                    if let RegisterEvent::Refused { name, reason } = &event {
                        if previous_refused.as_ref().is_some_and(|before| !before.contains(name)) {
                            failures.push(reason.clone());
                        }
                        refused.insert(name.clone());
                    }
                    events.push(event);
                }
            }
        }
        if strict && !failures.is_empty() {
            // The planned handlers drop here, never having served a call; the old version keeps serving.
            return Err(failures);
        }

        let old_ids: Vec<ToolId> =
            self.entries.iter().filter(|(_, entry)| entry.plugin.file == file).map(|(id, _)| id.clone()).collect();
        let mut old_names = BTreeSet::new();
        for id in &old_ids {
            if let Some(old) = self.entries.remove(id) {
                for route in &old.routes {
                    self.names.remove(&route.meta.name);
                    old_names.insert(route.meta.name.clone());
                }
            }
        }
        for plan in planned {
            events.push(self.start(plugin, plan));
        }
        let removed = old_names.into_iter().filter(|name| !self.names.contains_key(name)).collect();
        self.versions.insert(file, refused);
        self.publish();
        Ok(SwapReport { events, removed, replaced: previous_refused.is_some() })
    }

    /// Starts the actor of a planned tool and registers its names.
    fn start(&mut self, plugin: &LoadedPlugin, plan: Planned<'_>) -> RegisterEvent {
        let Planned { decl, handler, names, overrides } = plan;
        let file = &plugin.identity.file;
        for id in overrides {
            if let Some(old) = self.entries.remove(&id) {
                tracing::info!(tool = %id, old = %old.plugin.file.display(), new = %file.display(), "built-in tool overridden");
                for route in &old.routes {
                    self.names.remove(&route.meta.name);
                }
            }
        }
        let declares = |name: &str| decl.capabilities.iter().any(|c| c == name);
        // A handler in a child process may block on its socket: never on an async caller's thread.
        let lane = if declares(capability::INLINE) && !handler.out_of_process() {
            Lane::Inline
        } else if declares(capability::BULK) {
            Lane::Workers(self.settings.bulk_priority)
        } else {
            Lane::Workers(Priority::Normal)
        };
        let actor = ToolActor::new(&decl.name, handler, self.settings.workers, lane, self.settings.max_abandoned);
        let health = actor.health();
        let inline = actor.inline_lane();
        let addr = actor.start();
        let id = ToolId::from_name(&decl.name);
        let per_name = std::iter::once((&decl.name, &decl.display, &decl.specs)).chain(
            decl.aliases.iter().map(|a| (&a.name, a.display.as_ref().map_or(&decl.display, |_| &a.display), &a.specs)),
        );
        let routes = per_name
            .map(|(name, display, specs)| {
                Route::new(RouteEntry {
                    meta: Arc::new(ToolMeta {
                        id: id.clone(),
                        name: name.clone(),
                        primary: decl.name.clone(),
                        aliases: names.iter().filter(|n| *n != name).cloned().collect(),
                        display: display.clone(),
                        capabilities: decl.capabilities.clone(),
                        required: required_params(specs),
                        checks_parameters: decl.checks_parameters,
                        proceeds: declares(capability::PROCEEDS),
                        task_by_ref: declares(capability::TASK_BY_REF),
                        param_aliases: decl.param_aliases.clone(),
                        specs: specs.clone(),
                        plugin: Arc::clone(&plugin.identity),
                    }),
                    actor: addr.clone(),
                    inline: inline.clone(),
                    health: Arc::clone(&health),
                })
            })
            .collect();
        for name in &names {
            self.names.insert(name.clone(), id.clone());
        }
        self.entries.insert(id, Registered { plugin: Arc::clone(&plugin.identity), routes });
        RegisterEvent::Registered { names, file: file.clone() }
    }

    /// Unregisters every tool of a library file; returns the names it served, sorted.
    fn unregister(&mut self, file: &Path) -> Vec<String> {
        self.versions.remove(file);
        let ids: Vec<ToolId> =
            self.entries.iter().filter(|(_, entry)| entry.plugin.file == file).map(|(id, _)| id.clone()).collect();
        let mut names = Vec::new();
        for id in ids {
            if let Some(old) = self.entries.remove(&id) {
                for route in &old.routes {
                    self.names.remove(&route.meta.name);
                    names.push(route.meta.name.clone());
                }
            }
        }
        names.sort();
        self.publish();
        names
    }
}

/// The required parameters of a tool: from its generic spec, else from any spec.
fn required_params(specs: &BTreeMap<String, ToolSpec>) -> Vec<(String, bool)> {
    specs
        .get("generic")
        .or_else(|| specs.values().next())
        .map(|spec| spec.parameters.iter().filter(|p| p.required).map(|p| (p.name.clone(), p.allow_empty)).collect())
        .unwrap_or_default()
}

impl Actor for Coordinator {
    type Context = Context<Self>;
}

/// Registers every tool a loaded plugin declares (start-up: each tool on its own, refusals reported).
#[derive(Message)]
#[rtype(result = "Vec<RegisterEvent>")]
pub(crate) struct Register(pub LoadedPlugin);

impl Handler<Register> for Coordinator {
    type Result = MessageResult<Register>;

    fn handle(&mut self, Register(plugin): Register, _ctx: &mut Self::Context) -> Self::Result {
        let handlers = build_handlers(&plugin, &self.settings.plugin_config);
        match self.apply(&plugin, handlers, false) {
            Ok(report) => MessageResult(report.events),
            Err(reasons) => MessageResult(
                reasons.into_iter().map(|reason| RegisterEvent::Refused { name: String::new(), reason }).collect(),
            ),
        }
    }
}

/// Puts a new version of a library file in place of its previous one (or registers a new file), with the
/// handlers already constructed by [`build_handlers`]. Every route changes in one published snapshot: calls
/// that resolved the old routes finish on the old actors, new calls reach the new ones. Refused, with the
/// reasons, when the new version would lose a tool the previous one served.
#[derive(Message)]
#[rtype(result = "Result<SwapReport, Vec<String>>")]
pub(crate) struct Swap {
    pub plugin: LoadedPlugin,
    pub handlers: Vec<Result<Option<PluginHandler>, String>>,
}

impl Handler<Swap> for Coordinator {
    type Result = MessageResult<Swap>;

    fn handle(&mut self, Swap { plugin, handlers }: Swap, _ctx: &mut Self::Context) -> Self::Result {
        MessageResult(self.apply(&plugin, handlers, true))
    }
}

/// Unregisters every tool a library file registered (the file was removed); answers the names it served.
#[derive(Message)]
#[rtype(result = "Vec<String>")]
pub(crate) struct Unregister(pub PathBuf);

impl Handler<Unregister> for Coordinator {
    type Result = MessageResult<Unregister>;

    fn handle(&mut self, Unregister(file): Unregister, _ctx: &mut Self::Context) -> Self::Result {
        MessageResult(self.unregister(&file))
    }
}
