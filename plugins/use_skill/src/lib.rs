//! Cline's `use_skill`: loads a skill's instructions (the body of its `SKILL.md`) through the host's
//! `skills.list` / `skills.load` services, which know the user's skill directories and, in a trusted workspace
//! only, the workspace's. An unknown name lists the available skills.

use serde::Deserialize;
use toolshed_plugin_api::sdk::conversation;
use toolshed_plugin_api::services::{self, SkillContent, SkillList, SkillLoadRequest};
use toolshed_plugin_api::{
    export_plugin, result, Failure, HostClient, Outcome, Tool, ToolCall, ToolDeclaration, ToolInit,
};

mod spec;

/// The tool's input.
#[derive(Debug, Deserialize)]
pub struct UseSkillArgs {
    #[serde(default, deserialize_with = "toolshed_plugin_api::sdk::lenient_string")]
    skill_name: Option<String>,
}

/// The handler.
pub struct UseSkill;

/// Cline's answer for a loaded skill.
pub fn loaded_text(name: &str, instructions: &str, path: &str) -> String {
    let dir = path.strip_suffix("SKILL.md").unwrap_or(path);
    format!(
        "# Skill \"{name}\" is now active\n\n{instructions}\n\n---\nIMPORTANT: The skill is now loaded. Do NOT call use_skill again for this task. Simply follow the instructions above to complete the user's request. You may access other files in the skill directory at: {dir}"
    )
}

impl Tool for UseSkill {
    type Args = UseSkillArgs;

    fn declaration() -> ToolDeclaration {
        let mut declaration = toolshed_plugin_api::declare("use_skill", spec::DESCRIPTION, spec::PARAMS);
        // `prepare` always proceeds: the runtime skips it and runs `execute` at once.
        declaration.capabilities.push(toolshed_plugin_api::capability::PROCEEDS.to_owned());
        declaration.checks_parameters = true;
        declaration.display = Some("[{tool}{?skill_name: for \"{skill_name}\"}]".to_owned());
        for spec in declaration.specs.values_mut() {
            // Offered when the host says skills are available, as Cline's `context.skills.length > 0`.
            spec.context_requirements = vec!["skills".to_owned()];
        }
        declaration
    }

    fn new(_: &ToolInit<'_>) -> Result<Option<Self>, String> {
        Ok(Some(UseSkill))
    }

    fn execute(&self, call: &ToolCall<UseSkillArgs>, host: &HostClient<'_>) -> Result<Outcome, Failure> {
        let Some(name) = call.input.skill_name.as_deref().filter(|n| !n.is_empty()) else {
            // Cline's UseSkillToolHandler returns this plain string, without the `toolError` wrapper.
            let text =
                "Error: Missing required parameter 'skill_name'. Please provide the name of the skill to activate.";
            return Ok(result::failed_blocks(vec![toolshed_plugin_api::Block::Text { text: text.to_owned() }]));
        };
        let list: SkillList = match host.call::<services::SkillsList>(&services::Empty {}) {
            Ok(list) => list,
            Err(e) => return Ok(conversation::service_error::<services::SkillsList>(&call.tool, &e)),
        };
        if list.skills.is_empty() {
            return Ok(result::text("Error: No skills are available. Skills may be disabled or not configured."));
        }
        host.say("tool", &serde_json::json!({ "tool": "useSkill", "path": name }).to_string(), false);
        let content: SkillContent = match host.call::<services::SkillsLoad>(&SkillLoadRequest { name: name.to_owned() })
        {
            Ok(content) => content,
            Err(e) => return Ok(result::text(format!("Error loading skill \"{name}\": {}", e.message))),
        };
        Ok(match content.skill {
            Some(skill) => result::text(loaded_text(&skill.name, &content.instructions, &skill.path)),
            None => {
                let names: Vec<&str> = list.skills.iter().map(|s| s.name.as_str()).collect();
                let names = if names.is_empty() { "none".to_owned() } else { names.join(", ") };
                result::text(format!("Error: Skill \"{name}\" not found. Available skills: {names}"))
            }
        })
    }
}

mod export {
    use super::{export_plugin, UseSkill};

    export_plugin! { name: "use_skill", version: env!("CARGO_PKG_VERSION"), tools: [UseSkill] }
}
