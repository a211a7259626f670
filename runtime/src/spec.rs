//! Tool specs as the model sees them, Cline's `ClineToolSet` in Rust: a registry of specs per model family,
//! the pick of a prompt variant's tools filtered by the task's context, template variables, MCP server tools
//! and subagents as specs, and the conversion to every provider's schema format (see [`Provider`]).
//!
//! A spec is data: requirements are declarative strings a [`SpecContext`] checks, not closures, so plugins can
//! declare them across the ABI and hosts can cache the output. Everything here is deterministic: the same
//! registry, variant and context give the same bytes.
//!
//! ```
//! use toolshed::{PromptVariant, Provider, Spec, SpecContext, SpecParam, SpecRegistry};
//!
//! let mut registry = SpecRegistry::new();
//! registry.register(
//!     "generic",
//!     Spec::new("read_file", "read_file", "Reads a file.")
//!         .param(SpecParam::new("path", "string", "The path (relative to {{CWD}})").required()),
//! );
//! let specs = registry.enabled(&PromptVariant::new("generic", ["read_file"]), &SpecContext::new("/ws"));
//! let schema = Provider::Anthropic.render(&specs).to_string();
//! assert!(schema.contains(r#""description": "The path (relative to /ws)""#));
//! ```

mod convert;
mod dynamic;
mod variants;

pub use convert::{Provider, ToolSchemas, UnknownProvider};
pub use dynamic::{provider_tool_name, AgentConfig, McpServerInfo, McpToolInfo, MCP_TOOL_SEPARATOR};
pub use variants::{cline_families, cline_variant, is_cline_tool, CLINE_TOOL_IDS};

use crate::config::Profile;
use crate::types::Mode;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use toolshed_plugin_api::ToolSpec;

/// The model family every tool should declare a spec for; the fallback of every other family.
pub const GENERIC: &str = "generic";

/// What `{{MULTI_ROOT_HINT}}` becomes in a multi-root workspace (Cline's text; empty otherwise).
pub const MULTI_ROOT_HINT: &str = " Use @workspace:path syntax (e.g., @frontend:src/index.ts) to specify a workspace.";

/// The id of the subagent tool; configured agents replace it with one tool each.
const USE_SUBAGENTS: &str = "use_subagents";

/// One tool as the model sees it: Cline's `ClineToolSpec`, with declarative context requirements.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// The tool id a prompt variant lists (the built-in tool it implements, or its own name).
    pub id: String,
    /// The name the model calls.
    pub name: String,
    /// The description; may contain template variables such as `{{CWD}}`.
    pub description: String,
    /// The parameters in prompt order.
    pub parameters: Vec<SpecParam>,
    /// Requirements that must all hold for the tool to be offered (see [`SpecContext::meets`]).
    pub context_requirements: Vec<String>,
}

/// One parameter of a [`Spec`].
#[derive(Debug, Clone, PartialEq)]
pub struct SpecParam {
    /// The parameter's name.
    pub name: String,
    /// Whether the model must pass it.
    pub required: bool,
    /// What it means, for the model (Cline's `instruction`); may contain template variables.
    pub description: String,
    /// The example value of the XML prompt section.
    pub usage: Option<String>,
    /// The JSON Schema `type`: a name such as `"string"`, or a list such as `["string", "null"]` from MCP.
    pub kind: Value,
    /// The item schema of an array parameter.
    pub items: Option<Value>,
    /// The property schemas of an object parameter.
    pub properties: Option<Value>,
    /// Further JSON Schema keywords kept as they are: `enum`, `format`, `minimum`, `default`, …
    pub extra: BTreeMap<String, Value>,
    /// Requirements that must all hold for the parameter to be offered.
    pub context_requirements: Vec<String>,
    /// Tool ids that must all be enabled for the XML section to show the parameter (Cline's
    /// `dependencies`: `task_progress` needs `focus_chain`). Native tool calling ignores them, as Cline does.
    pub dependencies: Vec<String>,
    /// A line the XML section appends to the tool's description while it shows this parameter (Cline's
    /// parameter `description`); may contain template variables.
    pub description_note: Option<String>,
}

impl Spec {
    /// A spec without parameters or requirements.
    pub fn new(id: impl Into<String>, name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            description: description.into(),
            parameters: Vec::new(),
            context_requirements: Vec::new(),
        }
    }

    /// Appends a parameter.
    pub fn param(mut self, param: SpecParam) -> Self {
        self.parameters.push(param);
        self
    }

    /// Adds a context requirement.
    pub fn requires(mut self, requirement: impl Into<String>) -> Self {
        self.context_requirements.push(requirement.into());
        self
    }

    /// This spec for one context: parameters whose requirements fail dropped, template variables replaced.
    pub fn for_context(&self, context: &SpecContext) -> Spec {
        Spec {
            id: self.id.clone(),
            name: self.name.clone(),
            description: context.fill(&self.description),
            parameters: self
                .parameters
                .iter()
                .filter(|param| context.meets_all(&param.context_requirements))
                .map(|param| SpecParam {
                    description: context.fill(&param.description),
                    usage: param.usage.as_deref().map(|usage| context.fill(usage)),
                    description_note: param.description_note.as_deref().map(|note| context.fill(note)),
                    ..param.clone()
                })
                .collect(),
            context_requirements: self.context_requirements.clone(),
        }
    }
}

impl SpecParam {
    /// An optional parameter of a JSON Schema type (`string`, `integer`, `boolean`, `array`, `object`, …).
    pub fn new(name: impl Into<String>, kind: &str, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            required: false,
            description: description.into(),
            usage: None,
            kind: Value::from(kind),
            items: None,
            properties: None,
            extra: BTreeMap::new(),
            context_requirements: Vec::new(),
            dependencies: Vec::new(),
            description_note: None,
        }
    }

    /// Makes it required.
    pub fn required(mut self) -> Self {
        self.required = true;
        self
    }

    /// Sets the XML section's example value.
    pub fn usage(mut self, usage: impl Into<String>) -> Self {
        self.usage = Some(usage.into());
        self
    }

    /// Adds a context requirement.
    pub fn requires(mut self, requirement: impl Into<String>) -> Self {
        self.context_requirements.push(requirement.into());
        self
    }

    /// Shows it in the XML section only when this tool id is enabled too.
    pub fn depends_on(mut self, tool_id: impl Into<String>) -> Self {
        self.dependencies.push(tool_id.into());
        self
    }
}

impl Spec {
    /// A declared spec as offered for a route: under the route's name whatever name the spec gives, so a
    /// plugin's spec cannot offer a name another tool answers, nor two tools one name.
    pub(crate) fn for_route(name: &str, tool_spec: ToolSpec) -> Spec {
        Spec { name: name.to_owned(), ..Spec::from(tool_spec) }
    }
}

impl From<ToolSpec> for Spec {
    fn from(spec: ToolSpec) -> Self {
        Spec {
            id: spec.id,
            name: spec.name,
            description: spec.description,
            parameters: spec
                .parameters
                .into_iter()
                .map(|param| SpecParam {
                    name: param.name,
                    required: param.required,
                    description: param.description,
                    usage: param.usage,
                    kind: Value::String(param.kind),
                    items: param.items,
                    properties: None,
                    extra: param
                        .enum_values
                        .map(|values| ("enum".to_owned(), Value::from(values)))
                        .into_iter()
                        .collect(),
                    context_requirements: param.context_requirements,
                    dependencies: param.dependencies,
                    description_note: param.description_note,
                })
                .collect(),
            context_requirements: spec.context_requirements,
        }
    }
}

/// The task as the spec registry sees it: what requirements check and template variables read.
///
/// A requirement is a name, or `!name` for its negation: `browser` (the model can drive a browser),
/// `multi_root` (more than one workspace root), `images` (the model reads images), `subagent_run` (this task
/// is a subagent), `yolo` (every ask auto-approved), `mode:act` and `mode:plan`; any other name holds when
/// it is in [`flags`](Self::flags). A tool needing something the host never set is therefore not offered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecContext {
    /// The primary workspace root, for `{{CWD}}`.
    pub cwd: String,
    /// Whether the workspace has several roots (`{{MULTI_ROOT_HINT}}`, requirement `multi_root`).
    pub multi_root: bool,
    /// Plan or act mode (`mode:plan`, `mode:act`).
    pub mode: Mode,
    /// Whether this task is a subagent run: no subagent tools then.
    pub subagent_run: bool,
    /// Whether the model can drive a browser (`browser`).
    pub supports_browser: bool,
    /// Whether the model reads images (`images`).
    pub supports_images: bool,
    /// Whether every ask is auto-approved (`yolo`).
    pub yolo: bool,
    /// Whether the host calls the model with native tool calling (see [`SpecRegistry::native`]).
    pub native_tool_calls: bool,
    /// The browser viewport (width, height) for `{{BROWSER_VIEWPORT_WIDTH}}` and `{{BROWSER_VIEWPORT_HEIGHT}}`.
    pub browser_viewport: (u32, u32),
    /// Further requirement names that hold, set by the host (`mcp`, `focus_chain`, `web_tools`, …).
    pub flags: BTreeSet<String>,
    /// Further template variables, by name without braces.
    pub vars: BTreeMap<String, String>,
    /// Whom the tools are offered to: the `mcp` profile leaves Cline's agent-loop tools out.
    pub profile: Profile,
    /// Every tool the profile serves, in name order, whatever the model family: what an MCP server lists
    /// (its client, not a model family's prompt variant, picks the tools), and the web tools whatever
    /// `[web] enabled` says (their gate answers a call).
    pub every_tool: bool,
}

impl Default for SpecContext {
    fn default() -> Self {
        Self {
            cwd: String::new(),
            multi_root: false,
            mode: Mode::Act,
            subagent_run: false,
            supports_browser: false,
            supports_images: false,
            yolo: false,
            native_tool_calls: false,
            // Cline's default viewport.
            browser_viewport: (900, 600),
            flags: BTreeSet::new(),
            vars: BTreeMap::new(),
            profile: Profile::Cline,
            every_tool: false,
        }
    }
}

impl SpecContext {
    /// A single-root act-mode context working in `cwd`.
    pub fn new(cwd: impl Into<String>) -> Self {
        Self { cwd: cwd.into(), ..Self::default() }
    }

    /// Whether one requirement holds.
    pub fn meets(&self, requirement: &str) -> bool {
        let (negated, name) = match requirement.strip_prefix('!') {
            Some(name) => (true, name),
            None => (false, requirement),
        };
        let holds = match name {
            "browser" => self.supports_browser,
            "multi_root" => self.multi_root,
            "images" => self.supports_images,
            "subagent_run" => self.subagent_run,
            "yolo" => self.yolo,
            "mode:act" => self.mode == Mode::Act,
            "mode:plan" => self.mode == Mode::Plan,
            other => self.flags.contains(other),
        };
        holds != negated
    }

    /// Whether all requirements hold.
    pub fn meets_all(&self, requirements: &[String]) -> bool {
        requirements.iter().all(|requirement| self.meets(requirement))
    }

    /// Replaces the template variables in `text` in one pass, so a value that itself contains braces is
    /// left alone; unknown variables stay as they are, as Cline's template engine leaves them.
    pub fn fill(&self, text: &str) -> String {
        let value = |name: &str| -> Option<String> {
            Some(match name {
                "CWD" => self.cwd.clone(),
                "MULTI_ROOT_HINT" => if self.multi_root { MULTI_ROOT_HINT } else { "" }.to_owned(),
                "BROWSER_VIEWPORT_WIDTH" => self.browser_viewport.0.to_string(),
                "BROWSER_VIEWPORT_HEIGHT" => self.browser_viewport.1.to_string(),
                other => return self.vars.get(other).cloned(),
            })
        };
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = rest.find("{{") {
            let Some(len) = rest[start + 2..].find("}}") else { break };
            out.push_str(&rest[..start]);
            match value(rest[start + 2..start + 2 + len].trim()) {
                Some(value) => out.push_str(&value),
                None => out.push_str(&rest[start..start + len + 4]),
            }
            rest = &rest[start + len + 4..];
        }
        out.push_str(rest);
        out
    }
}

/// A prompt variant: the model family whose specs it prefers and the tool ids it offers, in prompt order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptVariant {
    /// The model family (`generic`, `native-next-gen`, `gemini3`, …).
    pub family: String,
    /// The tool ids offered, in order; empty means no tools at all.
    pub tools: Vec<String>,
    /// Whether the variant is built for native tool calling (Cline's `use_native_tools` label).
    pub native_tools: bool,
}

impl PromptVariant {
    /// A variant for the XML prompt section.
    pub fn new(family: impl Into<String>, tools: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self { family: family.into(), tools: tools.into_iter().map(Into::into).collect(), native_tools: false }
    }

    /// Opts the variant in to native tool calling.
    pub fn native_tools(mut self, native: bool) -> Self {
        self.native_tools = native;
        self
    }
}

/// A subagent or MCP tool generated from configuration, with what a call of it routes to.
#[derive(Debug, Clone)]
struct Generated {
    spec: Spec,
    /// The agent's name, or the server and tool names.
    target: (String, Option<String>),
}

/// The specs per model family, plus the tools generated from subagent and MCP configuration.
///
/// Registration dedups by id within a family (the first stays). Lookups fall back from the exact family to
/// `generic`, then to every family in name order.
#[derive(Debug, Clone, Default)]
pub struct SpecRegistry {
    families: BTreeMap<String, Vec<Spec>>,
    subagents: Vec<Generated>,
    mcp: Vec<Generated>,
}

impl SpecRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a spec for a family; `false` (and no change) when the family already has that id.
    pub fn register(&mut self, family: impl Into<String>, spec: impl Into<Spec>) -> bool {
        let spec = spec.into();
        let specs = self.families.entry(family.into()).or_default();
        if specs.iter().any(|known| known.id == spec.id) {
            return false;
        }
        specs.push(spec);
        true
    }

    /// The families that have specs, in name order.
    pub fn families(&self) -> impl Iterator<Item = &str> {
        self.families.keys().map(String::as_str)
    }

    /// The spec of a tool id for a family: that family's, else the generic one, else the first family's
    /// that has it.
    pub fn resolve(&self, id: &str, family: &str) -> Option<&Spec> {
        let find = |family: &str| self.families.get(family)?.iter().find(|spec| spec.id == id);
        find(family)
            .or_else(|| find(GENERIC))
            .or_else(|| self.families.values().find_map(|specs| specs.iter().find(|spec| spec.id == id)))
    }

    /// Sets the configured subagents: one `use_subagent_<name>` tool each, in name order, replacing
    /// `use_subagents` for variants that list it (outside subagent runs).
    pub fn set_agents(&mut self, agents: &[AgentConfig]) {
        self.subagents = dynamic::subagent_specs(agents)
            .into_iter()
            .map(|(spec, agent)| Generated { spec, target: (agent, None) })
            .collect();
    }

    /// Sets the MCP servers whose tools native tool calling offers as `{server}__mcp__{tool}`; disabled
    /// servers are left out.
    pub fn set_mcp_servers(&mut self, servers: &[McpServerInfo]) {
        self.mcp = dynamic::mcp_specs(servers)
            .into_iter()
            .map(|(spec, server, tool)| Generated { spec, target: (server, Some(tool)) })
            .collect();
    }

    /// The agent a subagent tool name runs.
    pub fn subagent(&self, name: &str) -> Option<&str> {
        self.subagents.iter().find(|tool| tool.spec.name == name).map(|tool| tool.target.0.as_str())
    }

    /// The (server, tool) an MCP tool name calls, also for shortened names.
    pub fn mcp_tool(&self, name: &str) -> Option<(&str, &str)> {
        self.mcp
            .iter()
            .find(|tool| tool.spec.name == name)
            .and_then(|tool| Some((tool.target.0.as_str(), tool.target.1.as_deref()?)))
    }

    /// The tools a variant offers in this context, in the variant's order and resolved for the context:
    /// each listed id through the family fallback, duplicates dropped, tools whose requirements fail left
    /// out, then the configured subagents in place of `use_subagents`.
    pub fn enabled(&self, variant: &PromptVariant, context: &SpecContext) -> Vec<Spec> {
        let mut picked: Vec<&Spec> = Vec::new();
        for id in &variant.tools {
            if let Some(spec) = self.resolve(id, &variant.family)
                && !picked.iter().any(|known| known.id == spec.id)
            {
                picked.push(spec);
            }
        }
        picked.retain(|spec| context.meets_all(&spec.context_requirements));
        let subagents = variant.tools.iter().any(|id| id == USE_SUBAGENTS) && !context.subagent_run;
        let generated: Vec<&Spec> = if subagents {
            self.subagents
                .iter()
                .map(|tool| &tool.spec)
                .filter(|s| context.meets_all(&s.context_requirements))
                .collect()
        } else {
            Vec::new()
        };
        if !generated.is_empty() {
            picked.retain(|spec| spec.id != USE_SUBAGENTS);
        }
        picked.into_iter().chain(generated).map(|spec| spec.for_context(context)).collect()
    }

    /// The tools for native tool calling: `None` unless the variant opts in and the host calls natively
    /// (then the XML section carries the tools); else the enabled tools, then the MCP servers' tools, those
    /// without a description left out as Cline leaves them out.
    pub fn native(&self, variant: &PromptVariant, context: &SpecContext) -> Option<Vec<Spec>> {
        if !variant.native_tools || !context.native_tool_calls {
            return None;
        }
        let mcp = self.mcp.iter().map(|tool| tool.spec.for_context(context));
        Some(
            self.enabled(variant, context)
                .into_iter()
                .chain(mcp)
                .filter(|spec| !spec.description.trim().is_empty())
                .collect(),
        )
    }
}

impl<F: Into<String>, S: Into<Spec>> FromIterator<(F, S)> for SpecRegistry {
    fn from_iter<I: IntoIterator<Item = (F, S)>>(iter: I) -> Self {
        let mut registry = SpecRegistry::new();
        for (family, spec) in iter {
            registry.register(family, spec);
        }
        registry
    }
}

/// The specs a Cline variant offers, in its order: for each id it lists the first spec with that id, then
/// every spec whose id is no Cline tool id (third-party plugins) in the order given. Specs of Cline tools the
/// variant does not list are left out, as Cline leaves them out.
pub fn in_variant_order(specs: Vec<Spec>, variant: &PromptVariant) -> Vec<Spec> {
    let mut listed: Vec<Option<Spec>> = vec![None; variant.tools.len()];
    let mut others = Vec::new();
    for spec in specs {
        match variant.tools.iter().position(|id| *id == spec.id) {
            // The spec named as the id (the tool Cline calls by it) holds the slot over one that only claims
            // the id under a name of its own (a third-party plugin sorted before it), which is offered after.
            Some(at) => match listed[at].take() {
                None => listed[at] = Some(spec),
                Some(held) => {
                    let (keep, other) =
                        if spec.name == spec.id && held.name != held.id { (spec, held) } else { (held, spec) };
                    if other.name != other.id {
                        others.push(other);
                    }
                    listed[at] = Some(keep);
                }
            },
            None if !is_cline_tool(&spec.id) => others.push(spec),
            None => {}
        }
    }
    listed.into_iter().flatten().chain(others).collect()
}

/// A tool's spec for a family from its declared specs: that family's, else the generic one, else any.
pub(crate) fn family_spec<'a>(specs: &'a BTreeMap<String, ToolSpec>, family: &str) -> Option<&'a ToolSpec> {
    specs.get(family).or_else(|| specs.get(GENERIC)).or_else(|| specs.values().next())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn spec(id: &str, description: &str) -> Spec {
        Spec::new(id, id, description).param(SpecParam::new("path", "string", "A path in {{CWD}}").required())
    }

    fn names(specs: &[Spec]) -> Vec<&str> {
        specs.iter().map(|spec| spec.name.as_str()).collect()
    }

    #[test]
    fn resolve_falls_back_from_the_family_to_generic_to_any() {
        let mut registry = SpecRegistry::new();
        registry.register("generic", spec("read_file", "generic read"));
        registry.register("native-next-gen", spec("read_file", "next-gen read"));
        registry.register("native-next-gen", spec("apply_patch", "only next-gen"));
        registry.register("gemini3", spec("apply_patch", "gemini patch"));

        let description = |id: &str, family: &str| registry.resolve(id, family).map(|s| s.description.as_str());
        assert_eq!(description("read_file", "native-next-gen"), Some("next-gen read"));
        assert_eq!(description("read_file", "claude"), Some("generic read"));
        // Not in the family nor in generic: the first family in name order that has it.
        assert_eq!(description("apply_patch", "generic"), Some("gemini patch"));
        assert_eq!(description("apply_patch", "native-next-gen"), Some("only next-gen"));
        assert_eq!(description("nope", "generic"), None);
    }

    #[test]
    fn register_dedups_by_id_within_a_family() {
        let mut registry = SpecRegistry::new();
        assert!(registry.register("generic", spec("read_file", "first")));
        assert!(!registry.register("generic", spec("read_file", "second")));
        assert!(registry.register("claude", spec("read_file", "claude's")));
        assert_eq!(registry.resolve("read_file", "generic").map(|s| s.description.as_str()), Some("first"));
        assert_eq!(registry.families().collect::<Vec<_>>(), ["claude", "generic"]);
    }

    #[test]
    fn enabled_keeps_the_variant_order_and_drops_duplicates_and_unknown_ids() {
        let registry: SpecRegistry =
            ["list_files", "read_file", "execute_command"].map(|id| ("generic", spec(id, id))).into_iter().collect();
        let variant =
            PromptVariant::new("generic", ["read_file", "nope", "execute_command", "read_file", "list_files"]);
        assert_eq!(
            names(&registry.enabled(&variant, &SpecContext::default())),
            ["read_file", "execute_command", "list_files"]
        );
    }

    #[test]
    fn an_empty_variant_offers_no_tools() {
        let mut registry: SpecRegistry = [("generic", spec("read_file", "r"))].into_iter().collect();
        registry.set_agents(&[AgentConfig::new("Researcher", "Finds things.")]);
        let variant = PromptVariant::new("generic", Vec::<String>::new()).native_tools(true);
        let context = SpecContext { native_tool_calls: true, ..SpecContext::default() };
        assert_eq!(registry.enabled(&variant, &context), Vec::<Spec>::new());
        assert_eq!(registry.native(&variant, &context), Some(Vec::new()));
    }

    #[test]
    fn context_requirements_filter_tools_and_parameters() {
        let browser = spec("browser_action", "b").requires("browser");
        let ask = spec("ask_followup_question", "a").requires("!yolo");
        let plan = spec("plan_mode_respond", "p").requires("mode:plan");
        let mcp = spec("use_mcp_tool", "m").requires("mcp");
        let command =
            spec("execute_command", "c").param(SpecParam::new("timeout", "integer", "Seconds.").requires("yolo"));
        let registry: SpecRegistry =
            [browser, ask, plan, mcp, command].into_iter().map(|spec| ("generic", spec)).collect();
        let variant = PromptVariant::new(
            "generic",
            ["browser_action", "ask_followup_question", "plan_mode_respond", "use_mcp_tool", "execute_command"],
        );

        let plain = registry.enabled(&variant, &SpecContext::default());
        assert_eq!(names(&plain), ["ask_followup_question", "execute_command"]);
        let params: Vec<&str> = plain[1].parameters.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(params, ["path"]);

        let mut rich = SpecContext { supports_browser: true, yolo: true, mode: Mode::Plan, ..SpecContext::default() };
        rich.flags.insert("mcp".to_owned());
        let all = registry.enabled(&variant, &rich);
        assert_eq!(names(&all), ["browser_action", "plan_mode_respond", "use_mcp_tool", "execute_command"]);
        let params: Vec<&str> = all[3].parameters.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(params, ["path", "timeout"]);
    }

    #[test]
    fn template_variables_are_replaced_from_the_context() {
        let mut context = SpecContext::new("/ws/app");
        context.vars.insert("SHELL".to_owned(), "bash".to_owned());
        assert_eq!(
            context.fill("in {{CWD}}{{MULTI_ROOT_HINT}} with {{ SHELL }}, {{BROWSER_VIEWPORT_WIDTH}}x{{BROWSER_VIEWPORT_HEIGHT}} {{UNKNOWN}} {{open"),
            "in /ws/app with bash, 900x600 {{UNKNOWN}} {{open"
        );
        context.multi_root = true;
        context.cwd = "/ws/{{CWD}}".to_owned();
        assert_eq!(context.fill("{{CWD}}{{MULTI_ROOT_HINT}}"), format!("/ws/{{{{CWD}}}}{MULTI_ROOT_HINT}"));

        let registry: SpecRegistry = [(
            "generic",
            spec("read_file", "Reads in {{CWD}}.").param(SpecParam::new("x", "string", "d").usage("{{CWD}}/x")),
        )]
        .into_iter()
        .collect();
        let resolved = registry.enabled(&PromptVariant::new("generic", ["read_file"]), &SpecContext::new("/r"));
        assert_eq!(resolved[0].description, "Reads in /r.");
        assert_eq!(resolved[0].parameters[0].description, "A path in /r");
        assert_eq!(resolved[0].parameters[1].usage.as_deref(), Some("/r/x"));
    }

    #[test]
    fn subagents_replace_use_subagents_except_in_a_subagent_run() {
        let mut registry: SpecRegistry =
            [spec("read_file", "r"), spec("use_subagents", "u")].into_iter().map(|s| ("generic", s)).collect();
        let variant = PromptVariant::new("generic", ["read_file", "use_subagents"]);
        assert_eq!(names(&registry.enabled(&variant, &SpecContext::default())), ["read_file", "use_subagents"]);

        registry.set_agents(&[
            AgentConfig::new("Researcher", "Finds things."),
            AgentConfig::new("Code Reviewer", "Reviews."),
        ]);
        let enabled = registry.enabled(&variant, &SpecContext::default());
        assert_eq!(names(&enabled), ["read_file", "use_subagent_code_reviewer", "use_subagent_researcher"]);
        assert_eq!(enabled[2].description, r#"Use the "Researcher" subagent: Finds things."#);
        assert_eq!(registry.subagent("use_subagent_code_reviewer"), Some("Code Reviewer"));

        let run = SpecContext { subagent_run: true, ..SpecContext::default() };
        assert_eq!(names(&registry.enabled(&variant, &run)), ["read_file", "use_subagents"]);
        // A variant that does not list use_subagents gets no subagent tools.
        assert_eq!(
            names(&registry.enabled(&PromptVariant::new("generic", ["read_file"]), &SpecContext::default())),
            ["read_file"]
        );
    }

    #[test]
    fn native_tools_need_the_variant_label_and_the_host_and_add_mcp_tools() {
        let mut registry: SpecRegistry =
            [spec("read_file", "r"), spec("blank", "  ")].into_iter().map(|s| ("generic", s)).collect();
        registry
            .set_mcp_servers(&[McpServerInfo::new("github", vec![McpToolInfo::new("create_issue", "Creates.", None)])]);
        let variant = PromptVariant::new("generic", ["read_file", "blank"]);
        let native = SpecContext { native_tool_calls: true, ..SpecContext::default() };
        assert_eq!(registry.native(&variant, &native), None);
        assert_eq!(registry.native(&variant.clone().native_tools(true), &SpecContext::default()), None);
        let specs = registry.native(&variant.clone().native_tools(true), &native).unwrap_or_default();
        assert_eq!(names(&specs), ["read_file", "github__mcp__create_issue"]);
        // The XML path carries neither MCP tools nor a filter on descriptions.
        assert_eq!(names(&registry.enabled(&variant, &native)), ["read_file", "blank"]);
        assert_eq!(registry.mcp_tool("github__mcp__create_issue"), Some(("github", "create_issue")));
    }

    #[test]
    fn a_cline_variant_orders_its_tools_and_keeps_third_party_ones_after_them() {
        let specs: Vec<Spec> =
            ["a_plugin", "attempt_completion", "condense", "execute_command", "read_file", "z_plugin"]
                .into_iter()
                .map(|id| spec(id, id))
                .collect();
        let variant =
            PromptVariant::new("generic", ["read_file", "execute_command", "attempt_completion", "read_file"]);
        // condense is a Cline tool the variant does not list: left out, as Cline leaves it out.
        assert_eq!(
            names(&in_variant_order(specs, &variant)),
            ["read_file", "execute_command", "attempt_completion", "a_plugin", "z_plugin"]
        );
    }

    /// A third-party spec that claims a Cline tool's id under a name of its own (sorted before the shipped
    /// tool) must not take that tool's place: the slot is the spec named as the id, the other offered after.
    #[test]
    fn a_spec_claiming_a_cline_id_under_another_name_does_not_hide_the_shipped_tool() {
        let specs = vec![Spec::new("read_file", "a_reader", "d"), spec("read_file", "r"), spec("x", "x")];
        let variant = PromptVariant::new("generic", ["read_file"]);
        assert_eq!(names(&in_variant_order(specs, &variant)), ["read_file", "a_reader", "x"]);
    }

    /// The name offered is the route's: a spec naming another tool is offered under the name that calls it.
    #[test]
    fn a_spec_is_offered_under_its_routes_name() {
        let tool_spec = ToolSpec {
            id: "read_file".to_owned(),
            name: "read_file".to_owned(),
            description: "d".to_owned(),
            parameters: Vec::new(),
            context_requirements: Vec::new(),
        };
        assert_eq!(Spec::for_route("evil", tool_spec).name, "evil");
    }

    #[test]
    fn tool_specs_convert_with_their_enum_and_items() {
        let tool_spec: ToolSpec = match serde_json::from_value(serde_json::json!({
            "id": "t", "name": "t", "description": "d", "context_requirements": ["browser"],
            "parameters": [{"name": "mode", "required": true, "type": "string", "description": "m", "enum": ["a", "b"]},
                           {"name": "paths", "type": "array", "description": "p", "items": {"type": "string"}, "usage": "x"}]
        })) {
            Ok(spec) => spec,
            Err(e) => panic!("{e}"),
        };
        let spec = Spec::from(tool_spec);
        let expected = Spec::new("t", "t", "d")
            .requires("browser")
            .param(SpecParam {
                extra: [("enum".to_owned(), serde_json::json!(["a", "b"]))].into_iter().collect(),
                ..SpecParam::new("mode", "string", "m").required()
            })
            .param(SpecParam {
                items: Some(serde_json::json!({"type": "string"})),
                ..SpecParam::new("paths", "array", "p").usage("x")
            });
        assert_eq!(spec, expected);
    }
}
