//! The coordinator actor: the enum-to-factory registry (tool id → the factory a plugin exported), names and
//! shared-handler aliases, and the routing table every call reads.
//!
//! The coordinator is the registry's only writer. After every change it publishes an immutable routing
//! snapshot, so a call resolves its tool without a message hop and keeps the generation it started on.

use crate::loader::{LoadedPlugin, PluginIdentity};
use crate::tool_actor::{ToolActor, ToolHealth};
use crate::tool_id::{check_plugin_tool_name, ToolId};
use actix::prelude::*;
use std::collections::{BTreeMap, BTreeSet, HashMap};
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
    /// The plugin that serves it.
    pub plugin: Arc<PluginIdentity>,
}

/// A callable name's route: its metadata and the actor serving it.
#[derive(Debug, Clone)]
pub(crate) struct Route {
    pub meta: Arc<ToolMeta>,
    pub actor: Addr<ToolActor>,
    pub health: Arc<ToolHealth>,
}

/// The immutable routing snapshot: name → route.
#[derive(Debug, Default)]
pub(crate) struct Routing {
    pub routes: HashMap<String, Route>,
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
    pub workers_per_tool: usize,
    pub max_abandoned: usize,
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
    routing: RoutingCell,
}

impl Coordinator {
    pub fn new(settings: CoordinatorSettings, routing: RoutingCell) -> Self {
        Self { settings, entries: BTreeMap::new(), names: HashMap::new(), routing }
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

    fn register_tool(&mut self, plugin: &LoadedPlugin, decl: &ToolDeclaration) -> RegisterEvent {
        let file = &plugin.identity.file;
        let refuse = |reason: String| RegisterEvent::Refused { name: decl.name.clone(), reason };
        let names: Vec<String> =
            std::iter::once(decl.name.clone()).chain(decl.aliases.iter().map(|a| a.name.clone())).collect();
        for name in &names {
            if let Err(e) = check_plugin_tool_name(name) {
                return refuse(format!("{}: {e}", file.display()));
            }
        }
        if let Some((_, dup)) = names.iter().enumerate().find(|(i, n)| names[..*i].contains(n)) {
            return refuse(format!("{}: declares the name '{dup}' twice", file.display()));
        }
        // A taken name is refused unless the user's config lets a later plugin override that built-in name.
        let mut replaced = BTreeSet::new();
        for name in &names {
            if let Some(owner_id) = self.names.get(name) {
                let owner = &self.entries[owner_id].plugin;
                let overridable = ToolId::from_name(name).is_builtin() && self.settings.overrides.contains(name);
                if !overridable {
                    return refuse(format!(
                        "tool name '{name}' is already registered by {}; {} cannot register it too (to replace a built-in tool, list '{name}' in [plugins] overrides of your user config)",
                        owner.file.display(),
                        file.display()
                    ));
                }
                replaced.insert(owner_id.clone());
            }
        }
        let config = self.settings.plugin_config.get(&plugin.identity.name).map_or("{}", String::as_str);
        let handler = match plugin.new_handler(&decl.name, config) {
            Ok(Some(handler)) => handler,
            Ok(None) => return RegisterEvent::Declined { name: decl.name.clone(), file: file.clone() },
            Err(message) => {
                return refuse(format!(
                    "{}: constructing the handler of '{}' failed: {message}",
                    file.display(),
                    decl.name
                ))
            }
        };
        for id in replaced {
            if let Some(old) = self.entries.remove(&id) {
                tracing::info!(tool = %id, old = %old.plugin.file.display(), new = %file.display(), "built-in tool overridden");
                for route in &old.routes {
                    self.names.remove(&route.meta.name);
                }
            }
        }
        let inline = decl.capabilities.iter().any(|c| c == capability::INLINE);
        let actor =
            ToolActor::new(&decl.name, handler, self.settings.workers_per_tool, inline, self.settings.max_abandoned);
        let health = actor.health();
        let addr = actor.start();
        let id = ToolId::from_name(&decl.name);
        let per_name = std::iter::once((&decl.name, &decl.display, &decl.specs)).chain(
            decl.aliases.iter().map(|a| (&a.name, a.display.as_ref().map_or(&decl.display, |_| &a.display), &a.specs)),
        );
        let routes = per_name
            .map(|(name, display, specs)| Route {
                meta: Arc::new(ToolMeta {
                    id: id.clone(),
                    name: name.clone(),
                    primary: decl.name.clone(),
                    aliases: names.iter().filter(|n| *n != name).cloned().collect(),
                    display: display.clone(),
                    capabilities: decl.capabilities.clone(),
                    required: required_params(specs),
                    specs: specs.clone(),
                    plugin: Arc::clone(&plugin.identity),
                }),
                actor: addr.clone(),
                health: Arc::clone(&health),
            })
            .collect();
        for name in &names {
            self.names.insert(name.clone(), id.clone());
        }
        self.entries.insert(id, Registered { plugin: Arc::clone(&plugin.identity), routes });
        RegisterEvent::Registered { names, file: file.clone() }
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

/// Registers every tool a loaded plugin declares.
#[derive(Message)]
#[rtype(result = "Vec<RegisterEvent>")]
pub(crate) struct Register(pub LoadedPlugin);

impl Handler<Register> for Coordinator {
    type Result = MessageResult<Register>;

    fn handle(&mut self, Register(plugin): Register, _ctx: &mut Self::Context) -> Self::Result {
        let events = plugin.declaration.tools.iter().map(|decl| self.register_tool(&plugin, decl)).collect();
        self.publish();
        MessageResult(events)
    }
}
