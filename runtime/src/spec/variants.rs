//! Cline's prompt variants as data (`core/prompts/system-prompt/variants/*/config.ts` at v4.0.10): per model
//! family the tool ids its `.tools(…)` call lists, in that order, and whether its labels carry
//! `use_native_tools: 1`. [`cline_variant`] turns one into a [`PromptVariant`]; a family Cline does not have
//! gets `None`, and callers keep their own order for it.

use super::PromptVariant;

/// Cline's `ClineDefaultTool` ids (`shared/tools.ts`): a spec with one of these ids is a Cline tool, offered
/// only where a variant lists it; any other id is a third-party tool, offered after the variant's.
pub const CLINE_TOOL_IDS: [&str; 27] = [
    "ask_followup_question",
    "attempt_completion",
    "execute_command",
    "replace_in_file",
    "read_file",
    "write_to_file",
    "search_files",
    "list_files",
    "list_code_definition_names",
    "browser_action",
    "use_mcp_tool",
    "access_mcp_resource",
    "load_mcp_documentation",
    "new_task",
    "plan_mode_respond",
    "act_mode_respond",
    "focus_chain",
    "web_fetch",
    "web_search",
    "condense",
    "summarize_task",
    "report_bug",
    "new_rule",
    "apply_patch",
    "generate_explanation",
    "use_skill",
    "use_subagents",
];

/// One of Cline's variants: its family (the `ModelFamily` value), its native label, and its tool ids in order,
/// separated by spaces.
struct ClineVariant {
    family: &'static str,
    native_tools: bool,
    tools: &'static str,
}

impl ClineVariant {
    fn ids(&self) -> impl Iterator<Item = &'static str> {
        self.tools.split_whitespace()
    }
}

/// The generic variant's list, which glm's and trinity's config.ts repeat exactly.
const GENERIC_TOOLS: &str = "execute_command read_file write_to_file replace_in_file search_files list_files \
                list_code_definition_names browser_action use_mcp_tool access_mcp_resource \
                ask_followup_question attempt_completion plan_mode_respond load_mcp_documentation \
                focus_chain generate_explanation use_skill use_subagents";

/// The next-gen variant's list, which gpt-5's config.ts repeats exactly.
const NEXT_GEN_TOOLS: &str = "execute_command read_file write_to_file replace_in_file search_files list_files \
                list_code_definition_names browser_action web_fetch web_search use_mcp_tool \
                access_mcp_resource ask_followup_question attempt_completion plan_mode_respond \
                load_mcp_documentation focus_chain generate_explanation use_skill use_subagents";

/// Every variant Cline v4.0.10 ships, each list exactly as its `config.ts` has it.
const CLINE_VARIANTS: [ClineVariant; 12] = [
    ClineVariant { family: "generic", native_tools: false, tools: GENERIC_TOOLS },
    ClineVariant { family: "next-gen", native_tools: false, tools: NEXT_GEN_TOOLS },
    ClineVariant {
        family: "xs",
        native_tools: true,
        tools: "execute_command read_file write_to_file replace_in_file search_files \
                ask_followup_question attempt_completion plan_mode_respond use_subagents",
    },
    ClineVariant {
        family: "native-next-gen",
        native_tools: true,
        tools: "ask_followup_question execute_command read_file write_to_file replace_in_file \
                search_files list_files list_code_definition_names browser_action web_fetch web_search \
                access_mcp_resource attempt_completion plan_mode_respond load_mcp_documentation \
                focus_chain generate_explanation use_skill use_subagents",
    },
    ClineVariant { family: "gpt-5", native_tools: false, tools: NEXT_GEN_TOOLS },
    ClineVariant {
        family: "gpt-5-native",
        native_tools: true,
        tools: "execute_command read_file apply_patch search_files list_files list_code_definition_names \
                browser_action web_fetch web_search access_mcp_resource ask_followup_question \
                attempt_completion plan_mode_respond load_mcp_documentation focus_chain \
                generate_explanation use_skill use_subagents",
    },
    ClineVariant {
        family: "gpt-5-1-native",
        native_tools: true,
        tools: "execute_command read_file apply_patch search_files list_files list_code_definition_names \
                browser_action web_fetch web_search access_mcp_resource ask_followup_question \
                attempt_completion new_task plan_mode_respond act_mode_respond load_mcp_documentation \
                focus_chain generate_explanation use_skill use_subagents",
    },
    ClineVariant {
        family: "gemini3",
        native_tools: true,
        tools: "execute_command read_file write_to_file replace_in_file search_files list_files \
                list_code_definition_names browser_action web_fetch use_mcp_tool access_mcp_resource \
                ask_followup_question attempt_completion new_task plan_mode_respond act_mode_respond \
                load_mcp_documentation focus_chain generate_explanation use_skill use_subagents",
    },
    ClineVariant { family: "glm", native_tools: false, tools: GENERIC_TOOLS },
    ClineVariant {
        family: "hermes",
        native_tools: false,
        tools: "execute_command read_file write_to_file replace_in_file search_files list_files \
                list_code_definition_names browser_action use_mcp_tool access_mcp_resource \
                ask_followup_question attempt_completion new_task plan_mode_respond \
                load_mcp_documentation focus_chain generate_explanation use_skill use_subagents",
    },
    ClineVariant {
        family: "devstral",
        native_tools: false,
        tools: "execute_command read_file write_to_file replace_in_file search_files list_files \
                list_code_definition_names browser_action web_fetch web_search use_mcp_tool \
                access_mcp_resource ask_followup_question attempt_completion plan_mode_respond \
                load_mcp_documentation focus_chain use_skill use_subagents",
    },
    ClineVariant { family: "trinity", native_tools: false, tools: GENERIC_TOOLS },
];

/// The families Cline has a variant for, in its `variants/` order.
pub fn cline_families() -> impl Iterator<Item = &'static str> {
    CLINE_VARIANTS.iter().map(|variant| variant.family)
}

/// Cline's variant for a model family (its `ModelFamily` value: `generic`, `next-gen`, `xs`,
/// `native-next-gen`, `gpt-5`, `gpt-5-native`, `gpt-5-1-native`, `gemini3`, `glm`, `hermes`, `devstral`,
/// `trinity`), or `None` for a family Cline has no variant for.
pub fn cline_variant(family: &str) -> Option<PromptVariant> {
    CLINE_VARIANTS
        .iter()
        .find(|variant| variant.family == family)
        .map(|variant| PromptVariant::new(variant.family, variant.ids()).native_tools(variant.native_tools))
}

/// Whether `id` is one of Cline's own tool ids.
pub fn is_cline_tool(id: &str) -> bool {
    CLINE_TOOL_IDS.contains(&id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_id_is_a_cline_tool_and_listed_once() {
        for variant in &CLINE_VARIANTS {
            let ids: Vec<&str> = variant.ids().collect();
            for (i, id) in ids.iter().enumerate() {
                assert!(is_cline_tool(id), "{}: {id}", variant.family);
                assert!(!ids[..i].contains(id), "{}: {id} twice", variant.family);
            }
        }
        assert_eq!(cline_families().count(), 12);
    }

    #[test]
    fn variants_carry_their_native_label() {
        let native: Vec<&str> = cline_families().filter(|f| cline_variant(f).is_some_and(|v| v.native_tools)).collect();
        assert_eq!(native, ["xs", "native-next-gen", "gpt-5-native", "gpt-5-1-native", "gemini3"]);
        assert_eq!(cline_variant("claude"), None);
        assert_eq!(cline_variant("generic").map(|v| v.tools.len()), Some(18));
    }
}
