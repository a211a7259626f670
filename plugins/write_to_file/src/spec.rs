//! The model-facing specs of the three names (Cline's `write_to_file.ts`, `replace_in_file.ts`, and the
//! `new_rule` definition of its `/newrule` command in `commands.ts`), texts kept byte for byte.

use toolshed_plugin_api::{capability, AliasDeclaration, ParamSpec, ToolDeclaration, ToolSpec};

/// The result header every name shares: Cline's `[{tool} for '{path}']`.
const DISPLAY: &str = "[{tool} for '{path}']";

/// The families with Cline's native-tool-calling variants, which name the path `absolutePath`.
const NATIVE_FAMILIES: [&str; 2] = ["gpt-5-native", "native-next-gen"];

const WRITE_DESCRIPTION: &str = "Request to write content to a file at the specified path. If the file exists, it will be overwritten with the provided content. If the file doesn't exist, it will be created. This tool will automatically create any directories needed to write the file.";
const WRITE_PATH: &str =
    "The path of the file to write to (relative to the current working directory {{CWD}}){{MULTI_ROOT_HINT}}";
const WRITE_CONTENT: &str = "The content to write to the file. ALWAYS provide the COMPLETE intended content of the file, without any truncation or omissions. You MUST include ALL parts of the file, even if they haven't been modified.";
const NATIVE_WRITE_CONTENT: &str =
    "After providing the path so a file can be created, then use this to provide the content to write to the file.";
const REPLACE_DESCRIPTION: &str = "Request to replace sections of content in an existing file using SEARCH/REPLACE blocks that define exact changes to specific parts of the file. This tool should be used when you need to make targeted changes to specific parts of a file.";
const REPLACE_PATH: &str = "The path of the file to modify (relative to the current working directory {{CWD}})";
const NATIVE_PATH: &str = "The absolute path to the file to write to.";
/// Cline's native variants put this in front of the description.
const NATIVE_PREFIX: &str = "[IMPORTANT: Always output the absolutePath first] ";
const DIFF_INSTRUCTIONS: &str = "One or more SEARCH/REPLACE blocks following this exact format:\n  ```\n  ------- SEARCH\n  [exact content to find]\n  =======\n  [new content to replace with]\n  +++++++ REPLACE\n  ```\n  Critical rules:\n  1. SEARCH content must match the associated file section to find EXACTLY:\n     * Match character-for-character including whitespace, indentation, line endings\n     * Include all comments, docstrings, etc.\n  2. SEARCH/REPLACE blocks will ONLY replace the first match occurrence.\n     * Including multiple unique SEARCH/REPLACE blocks if you need to make multiple changes.\n     * Include *just* enough lines in each SEARCH section to uniquely match each set of lines that need to change.\n     * When using multiple SEARCH/REPLACE blocks, list them in the order they appear in the file.\n  3. Keep SEARCH/REPLACE blocks concise:\n     * Break large SEARCH/REPLACE blocks into a series of smaller blocks that each change a small portion of the file.\n     * Include just the changing lines, and a few surrounding lines if needed for uniqueness.\n     * Do not include long runs of unchanging lines in SEARCH/REPLACE blocks.\n     * Each line must be complete. Never truncate lines mid-way through as this can cause matching failures.\n  4. Special operations:\n     * To move code: Use two SEARCH/REPLACE blocks (one to delete from original + one to insert at new location)\n     * To delete code: Use empty REPLACE section\n  5. If your source context came from read_file and includes line labels (for example, \"42 | const x = 1\"), do NOT include the \"42 | \" prefix in SEARCH or REPLACE content. Match only the raw file text.";
const NEW_RULE_DESCRIPTION: &str = "Your task is to create a new Cline rule file which includes guidelines on how to approach developing code in tandem with the user, which can be either project specific or cover more global rules. This includes but is not limited to: desired conversational style, favorite project dependencies, coding styles, naming conventions, architectural choices, ui/ux preferences, etc.\nThe Cline rule file must be formatted as markdown and be a '.md' file. The name of the file you generate must be as succinct as possible and be encompassing the main overarching concept of the rules you added to the file (e.g., 'memory-bank.md' or 'project-overview.md').";
const NEW_RULE_PATH: &str = "The path of the file to write to (relative to the current working directory). This will be the Cline rule file you create, and it must be placed inside the .clinerules top-level directory (create this if it doesn't exist). The filename created CANNOT be \"default-clineignore.md\". For filenames, use hyphens (\"-\") instead of underscores (\"_\") to separate words.";
const NEW_RULE_CONTENT: &str = "The content to write to the file. ALWAYS provide the COMPLETE intended content of the file, without any truncation or omissions. You MUST include ALL parts of the file, even if they haven't been modified. The content for the Cline rule file MUST be created according to the following instructions:\n  1. Format the Cline rule file to have distinct guideline sections, each with their own markdown heading, starting with \"## Brief overview\". Under each of these headings, include bullet points fully fleshing out the details, with examples and/or trigger cases ONLY when applicable.\n  2. These guidelines can be specific to the task(s) or project worked on thus far, or cover more high-level concepts. Guidelines can include coding conventions, general design patterns, preferred tech stack including favorite libraries and language, communication style with Cline (verbose vs concise), prompting strategies, naming conventions, testing strategies, comment verbosity, time spent on architecting prior to development, and other preferences.\n  3. When creating guidelines, you should not invent preferences or make assumptions based on what you think a typical user might want. These should be specific to the conversation you had with the user. Your guidelines / rules should not be overly verbose.\n  4. Your guidelines should NOT be a recollection of the conversation up to this point in time, meaning you should NOT be including arbitrary details of the conversation.";

fn param(name: &str, description: &str, usage: Option<&str>) -> ParamSpec {
    let param = ParamSpec::new(name, true, description).usage(usage);
    // An empty `content` is an empty file and an empty `diff` gets Cline's own message from the handler, so
    // only an absent value is a missing parameter.
    if name == "content" || name == "diff" {
        param.allow_empty()
    } else {
        param
    }
}

fn spec(name: &str, description: String, parameters: Vec<ParamSpec>) -> ToolSpec {
    ToolSpec { id: name.to_owned(), name: name.to_owned(), description, parameters, context_requirements: Vec::new() }
}

/// The generic spec and the native ones of a file tool whose second parameter is `second`.
fn file_tool_specs(
    name: &str,
    description: &str,
    path: &str,
    second: (&str, &str, &str),
    native_second: &str,
) -> Vec<(String, ToolSpec)> {
    let (second_name, second_description, second_usage) = second;
    let generic = spec(
        name,
        description.to_owned(),
        vec![
            param("path", path, Some("File path here")),
            param(second_name, second_description, Some(second_usage)),
            ParamSpec::task_progress(),
        ],
    );
    let native = spec(
        name,
        format!("{NATIVE_PREFIX}{description}"),
        vec![
            param("absolutePath", NATIVE_PATH, None),
            param(second_name, native_second, None),
            ParamSpec::task_progress(),
        ],
    );
    std::iter::once(("generic".to_owned(), generic))
        .chain(NATIVE_FAMILIES.iter().map(|family| ((*family).to_owned(), native.clone())))
        .collect()
}

/// `write_to_file` with its aliases `replace_in_file` and `new_rule`.
pub fn declaration() -> ToolDeclaration {
    let write = file_tool_specs(
        "write_to_file",
        WRITE_DESCRIPTION,
        WRITE_PATH,
        ("content", WRITE_CONTENT, "Your file content here"),
        NATIVE_WRITE_CONTENT,
    );
    let replace = file_tool_specs(
        "replace_in_file",
        REPLACE_DESCRIPTION,
        REPLACE_PATH,
        ("diff", DIFF_INSTRUCTIONS, "Search and replace blocks here"),
        DIFF_INSTRUCTIONS,
    );
    // Cline defines new_rule only inside its `/newrule` instructions, with one form for every model.
    let new_rule = spec(
        "new_rule",
        NEW_RULE_DESCRIPTION.to_owned(),
        vec![
            param("path", NEW_RULE_PATH, Some(".clinerules/{file name}.md")),
            param("content", NEW_RULE_CONTENT, Some("Cline rule file content here")),
        ],
    );
    ToolDeclaration {
        name: "write_to_file".to_owned(),
        aliases: vec![
            AliasDeclaration {
                name: "replace_in_file".to_owned(),
                display: None,
                specs: replace.into_iter().collect(),
            },
            AliasDeclaration {
                name: "new_rule".to_owned(),
                display: None,
                specs: [("generic".to_owned(), new_rule)].into_iter().collect(),
            },
        ],
        capabilities: vec![capability::WRITES_FILES.to_owned(), capability::COMMITS_WRITES.to_owned()],
        display: Some(DISPLAY.to_owned()),
        specs: write.into_iter().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn three_names_with_their_own_specs() {
        let declaration = declaration();
        assert_eq!(declaration.name, "write_to_file");
        let aliases: Vec<_> = declaration.aliases.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(aliases, ["replace_in_file", "new_rule"]);
        let params = |spec: &ToolSpec| spec.parameters.iter().map(|p| (p.name.clone(), p.required)).collect::<Vec<_>>();
        let task_progress = ("task_progress".to_owned(), false);
        assert_eq!(
            params(&declaration.specs["generic"]),
            [("path".to_owned(), true), ("content".to_owned(), true), task_progress.clone()]
        );
        assert_eq!(
            params(&declaration.specs["gpt-5-native"]),
            [("absolutePath".to_owned(), true), ("content".to_owned(), true), task_progress]
        );
        let replace = &declaration.aliases[0].specs["generic"];
        assert_eq!(replace.name, "replace_in_file");
        assert!(replace.parameters[1].description.starts_with("One or more SEARCH/REPLACE blocks"));
        assert_eq!(
            declaration.aliases[1].specs["generic"].parameters[0].usage.as_deref(),
            Some(".clinerules/{file name}.md")
        );
        assert_eq!(declaration.capabilities, [capability::WRITES_FILES, capability::COMMITS_WRITES]);
    }
}
