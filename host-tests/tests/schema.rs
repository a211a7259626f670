//! Provider schemas against expectations written by hand from Cline's own code: the tool files
//! (`apps/vscode/src/core/prompts/system-prompt/tools/*.ts`), the converters of `spec.ts`
//! (`toolSpecInputSchema`, `toolSpecFunctionDefinition`, `toolSpecFunctionDeclarations`), the Responses mapping
//! of `providers/openai-native.ts`, and `PromptBuilder.tool` for the XML section, whose expectations match
//! Cline's own prompt snapshots. Every generated schema must also pass the JSON Schema meta-schema and each
//! provider's documented constraints.
//!
//! read_file is loaded from the real plugin, with Cline's `task_progress` (shown in the XML section only while
//! `focus_chain` is offered, and natively always, as Cline's converters ignore dependencies).
//! execute_command and replace_in_file are written here as data exactly as Cline's tool files declare them,
//! so these expectations check the converters against Cline whatever those plugins declare; the plugins
//! themselves are checked against Cline's own snapshots by cline_snapshots.rs.

use crate::util::*;
use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use toolshed::{
    AgentConfig, McpServerInfo, McpToolInfo, PromptVariant, Provider, Runtime, Spec, SpecContext, SpecParam,
    SpecRegistry, ToolSchemas,
};

const CWD: &str = "/test/project";

// Cline's texts (tools/read_file.ts).
const READ_FILE: &str = "Request to read the contents of a file at the specified path. Use this when you need to examine the contents of an existing file you do not know the contents of, for example to analyze code, review text files, or extract information from configuration files. Returned text lines are prefixed with line labels (e.g. `1 |`, `2 |`). These labels are metadata, not part of the file content. For large files, output is automatically limited to 1000 lines. Use start_line and end_line to read specific sections. Automatically extracts raw text from PDF and DOCX files. May not be suitable for other types of binary files, as it returns the raw content as a string. Do NOT use this tool to list the contents of a directory. Only use this tool on files.";
const START_LINE: &str = "The 1-based line number to start reading from (inclusive). Defaults to 1.";
const END_LINE: &str = "The 1-based line number to stop reading at (inclusive). Defaults to start_line + 1000. Use with start_line to read specific sections of large files.";

// Cline's texts (tools/execute_command.ts).
const EXECUTE_COMMAND: &str = "Request to execute a CLI command on the system. Use this when you need to perform system operations or run specific commands to accomplish any step in the user's task. You must tailor your command to the user's system and provide a clear explanation of what the command does. For command chaining, use the appropriate chaining syntax for the user's shell. Prefer to execute complex CLI commands over creating executable scripts, as they are more flexible and easier to run. Commands will be executed in the current working directory: ";
const COMMAND: &str = "The CLI command to execute. This should be valid for the current operating system. Ensure the command is properly formatted and does not contain any harmful instructions.";
const REQUIRES_APPROVAL: &str = "A boolean indicating whether this command requires explicit user approval before execution in case the user has auto-approve mode enabled. Set to 'true' for potentially impactful operations like installing/uninstalling packages, deleting/overwriting files, system configuration changes, network operations, or any commands that could have unintended side effects. Set to 'false' for safe operations like reading files/directories, running development servers, building projects, and other non-destructive operations.";
const TIMEOUT: &str = "Integer representing the timeout in seconds for how long to run the terminal command, before timing out and continuing the task.";
const NATIVE_EXECUTE_COMMAND: &str = "Request to execute a CLI command on the system. Use this when you need to perform system operations or run specific commands to accomplish any step in the user's task.";
const NATIVE_COMMAND: &str = "The CLI command to execute. This should be valid for the current operating system. Do not use the ~ character or $HOME to refer to the home directory. Always use absolute paths. The command will be executed from the current workspace, you do not need to cd to the workspace.";
const NATIVE_REQUIRES_APPROVAL: &str = "To indicate whether this command requires explicit user approval or interaction before it should be executed. For system/file altering operations like installing/uninstalling packages, removing/overwriting files, system configuration changes, network operations, or any commands that are considered potentially dangerous must be set to true. False for safe operations like running development servers, building projects, and other non-destructive operations.";
const GEMINI3_EXECUTE_COMMAND: &str = "Request to execute a CLI command on the system. Use this when you need to perform system operations or run specific commands to accomplish any step in the user's task. When chaining commands, use the shell operator && (not the HTML entity &amp;&amp;). If using search/grep commands, be careful to not use vague search terms that may return thousands of results. When in PLAN MODE, you may use the execute_command tool, but only in a non-destructive manner and in a way that does not alter any files.";
const GEMINI3_COMMAND: &str = "The CLI command to execute. This should be valid for the current operating system. For command chaining, use proper shell operators like && to chain commands (e.g., 'cd path && command'). Do not use the ~ character or $HOME to refer to the home directory. Always use absolute paths. Do not run search/grep commands that may return thousands of results.";

// Cline's texts (tools/replace_in_file.ts, types.ts).
const REPLACE_IN_FILE: &str = "Request to replace sections of content in an existing file using SEARCH/REPLACE blocks that define exact changes to specific parts of the file. This tool should be used when you need to make targeted changes to specific parts of a file.";
const DIFF: &str = r#"One or more SEARCH/REPLACE blocks following this exact format:
  ```
  ------- SEARCH
  [exact content to find]
  =======
  [new content to replace with]
  +++++++ REPLACE
  ```
  Critical rules:
  1. SEARCH content must match the associated file section to find EXACTLY:
     * Match character-for-character including whitespace, indentation, line endings
     * Include all comments, docstrings, etc.
  2. SEARCH/REPLACE blocks will ONLY replace the first match occurrence.
     * Including multiple unique SEARCH/REPLACE blocks if you need to make multiple changes.
     * Include *just* enough lines in each SEARCH section to uniquely match each set of lines that need to change.
     * When using multiple SEARCH/REPLACE blocks, list them in the order they appear in the file.
  3. Keep SEARCH/REPLACE blocks concise:
     * Break large SEARCH/REPLACE blocks into a series of smaller blocks that each change a small portion of the file.
     * Include just the changing lines, and a few surrounding lines if needed for uniqueness.
     * Do not include long runs of unchanging lines in SEARCH/REPLACE blocks.
     * Each line must be complete. Never truncate lines mid-way through as this can cause matching failures.
  4. Special operations:
     * To move code: Use two SEARCH/REPLACE blocks (one to delete from original + one to insert at new location)
     * To delete code: Use empty REPLACE section
  5. If your source context came from read_file and includes line labels (for example, "42 | const x = 1"), do NOT include the "42 | " prefix in SEARCH or REPLACE content. Match only the raw file text."#;
const TASK_PROGRESS: &str = "A checklist showing task progress after this tool use is completed. The task_progress parameter must be included as a separate parameter inside of the parent tool call, it must be separate from other parameters such as content, arguments, etc. (See 'UPDATING TASK PROGRESS' section for more details)";

/// Cline's `execute_command_variants`, as data: (family, spec).
fn execute_command_specs() -> Vec<(&'static str, Spec)> {
    let native = |description: &str, command: &str| {
        Spec::new("execute_command", "execute_command", description)
            .param(SpecParam::new("command", "string", command).required())
            .param(SpecParam::new("requires_approval", "boolean", NATIVE_REQUIRES_APPROVAL).required())
    };
    vec![
        (
            "generic",
            Spec::new(
                "execute_command",
                "execute_command",
                format!("{EXECUTE_COMMAND}{{{{CWD}}}}{{{{MULTI_ROOT_HINT}}}}"),
            )
            .param(SpecParam::new("command", "string", COMMAND).required().usage("Your command here"))
            .param(SpecParam::new("requires_approval", "boolean", REQUIRES_APPROVAL).required().usage("true or false"))
            .param(SpecParam::new("timeout", "integer", TIMEOUT).requires("yolo").usage("30")),
        ),
        ("gpt-5-native", native(NATIVE_EXECUTE_COMMAND, NATIVE_COMMAND)),
        ("native-next-gen", native(NATIVE_EXECUTE_COMMAND, NATIVE_COMMAND)),
        ("gemini3", native(GEMINI3_EXECUTE_COMMAND, GEMINI3_COMMAND)),
    ]
}

/// Cline's `replace_in_file_variants` (without the notebook instructions, which Cline adds only when a
/// `.ipynb` tab is open), and its `focus_chain` placeholder that `task_progress` depends on.
fn replace_in_file_specs() -> Vec<(&'static str, Spec)> {
    let task_progress = || {
        SpecParam::new("task_progress", "string", TASK_PROGRESS)
            .usage("Checklist here (optional)")
            .depends_on("focus_chain")
    };
    let native = Spec::new(
        "replace_in_file",
        "replace_in_file",
        format!("[IMPORTANT: Always output the absolutePath first] {REPLACE_IN_FILE}"),
    )
    .param(SpecParam::new("absolutePath", "string", "The absolute path to the file to write to.").required())
    .param(SpecParam::new("diff", "string", DIFF).required())
    .param(task_progress());
    vec![
        (
            "generic",
            Spec::new("replace_in_file", "replace_in_file", REPLACE_IN_FILE)
                .param(
                    SpecParam::new(
                        "path",
                        "string",
                        "The path of the file to modify (relative to the current working directory {{CWD}})",
                    )
                    .required()
                    .usage("File path here"),
                )
                .param(SpecParam::new("diff", "string", DIFF).required().usage("Search and replace blocks here"))
                .param(task_progress()),
        ),
        ("native-next-gen", native.clone()),
        ("gpt-5-native", native),
        ("generic", Spec::new("focus_chain", "focus_chain", "").requires("focus_chain")),
    ]
}

/// A runtime with only the real read_file plugin.
fn read_file_runtime() -> Runtime {
    Runtime::builder().plugin_file(plugins().join(lib("read_file"))).build().expect("runtime")
}

/// The registry of the loaded read_file plus the hand-written specs.
fn registry(runtime: &Runtime) -> SpecRegistry {
    let mut registry = runtime.specs();
    for (family, spec) in execute_command_specs().into_iter().chain(replace_in_file_specs()) {
        assert!(registry.register(family, spec));
    }
    registry
}

fn context() -> SpecContext {
    SpecContext::new(CWD)
}

// The envelopes, by hand from Cline's converters.

fn anthropic(name: &str, description: &str, properties: Value, required: &[&str]) -> Value {
    json!({"name": name, "description": description, "input_schema": {"type": "object", "properties": properties, "required": required}})
}

fn openai(name: &str, description: &str, properties: Value, required: &[&str]) -> Value {
    json!({"type": "function", "function": {
        "name": name, "description": description, "strict": false,
        "parameters": {"type": "object", "properties": properties, "required": required, "additionalProperties": false}
    }})
}

fn openai_responses(name: &str, description: &str, properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "function", "name": name, "description": description, "strict": false,
        "parameters": {"type": "object", "properties": properties, "required": required, "additionalProperties": false}
    })
}

fn gemini(name: &str, description: &str, properties: Value, required: &[&str]) -> Value {
    json!([{"functionDeclarations": [
        {"name": name, "description": description, "parameters": {"type": "OBJECT", "properties": properties, "required": required}}
    ]}])
}

/// What one tool is expected to look like in every format.
struct Expected<'a> {
    name: &'a str,
    description: &'a str,
    required: &'a [&'a str],
    /// The properties for Anthropic and both OpenAI formats.
    json: Value,
    /// The properties for Gemini.
    gemini: Value,
    xml: String,
}

fn render_json(provider: Provider, specs: &[Spec]) -> Value {
    match provider.render(specs) {
        ToolSchemas::Json(value) => value,
        ToolSchemas::Text(text) => panic!("{provider}: expected JSON, got {text}"),
    }
}

fn assert_every_format(specs: &[Spec], expected: &Expected<'_>) {
    let Expected { name, description, required, .. } = *expected;
    assert_eq!(
        render_json(Provider::Anthropic, specs),
        json!([anthropic(name, description, expected.json.clone(), required)])
    );
    assert_eq!(
        render_json(Provider::OpenAi, specs),
        json!([openai(name, description, expected.json.clone(), required)])
    );
    assert_eq!(
        render_json(Provider::OpenAiResponses, specs),
        json!([openai_responses(name, description, expected.json.clone(), required)])
    );
    assert_eq!(render_json(Provider::Gemini, specs), gemini(name, description, expected.gemini.clone(), required));
    assert_eq!(Provider::Xml.render(specs).to_string(), expected.xml);
}

fn read_file_expected(cwd: &str) -> Expected<'static> {
    let path = format!("The path of the file to read (relative to the current working directory {cwd})");
    Expected {
        name: "read_file",
        description: READ_FILE,
        required: &["path"],
        json: json!({
            "path": {"type": "string", "description": path},
            "start_line": {"type": "integer", "description": START_LINE},
            "end_line": {"type": "integer", "description": END_LINE},
            // Native tool calling ignores `dependencies`, so task_progress is there without the focus chain.
            "task_progress": {"type": "string", "description": TASK_PROGRESS},
        }),
        // Cline maps `integer` to NUMBER for Gemini.
        gemini: json!({
            "path": {"type": "STRING", "description": path},
            "start_line": {"type": "NUMBER", "description": START_LINE},
            "end_line": {"type": "NUMBER", "description": END_LINE},
            "task_progress": {"type": "STRING", "description": TASK_PROGRESS},
        }),
        xml: format!(
            "# Tools\n\n## read_file\nDescription: {READ_FILE}\nParameters:\n- path: (required) {path}\n- start_line: (optional) {START_LINE}\n- end_line: (optional) {END_LINE}\nUsage:\n<read_file>\n<path>File path here</path>\n<start_line>1</start_line>\n<end_line>1000</end_line>\n</read_file>"
        ),
    }
}

#[test]
fn read_file_from_the_plugin_in_every_format() {
    let runtime = read_file_runtime();
    let specs = runtime.specs().enabled(&PromptVariant::new("generic", ["read_file"]), &context());
    assert_every_format(&specs, &read_file_expected(CWD));
    // The runtime's all-tools path (what `toolshed schema` prints) gives the same bytes.
    for provider in Provider::ALL {
        assert_eq!(runtime.schema(provider, "generic", &context()).to_string(), provider.render(&specs).to_string());
    }
}

#[test]
fn read_file_in_a_multi_root_workspace_carries_the_hint() {
    let runtime = read_file_runtime();
    let multi = SpecContext { multi_root: true, ..context() };
    let specs = runtime.specs().enabled(&PromptVariant::new("generic", ["read_file"]), &multi);
    let tools = render_json(Provider::Anthropic, &specs);
    assert_eq!(
        tools[0]["input_schema"]["properties"]["path"]["description"],
        "The path of the file to read (relative to the current working directory /test/project) Use @workspace:path syntax (e.g., @frontend:src/index.ts) to specify a workspace."
    );
}

#[test]
fn execute_command_in_every_format() {
    let runtime = read_file_runtime();
    let registry = registry(&runtime);
    let variant = PromptVariant::new("generic", ["execute_command"]);
    let description = format!("{EXECUTE_COMMAND}/test/project");
    // Without YOLO mode Cline leaves `timeout` out (its contextRequirements).
    let expected = Expected {
        name: "execute_command",
        description: &description,
        required: &["command", "requires_approval"],
        json: json!({
            "command": {"type": "string", "description": COMMAND},
            "requires_approval": {"type": "boolean", "description": REQUIRES_APPROVAL},
        }),
        gemini: json!({
            "command": {"type": "STRING", "description": COMMAND},
            "requires_approval": {"type": "BOOLEAN", "description": REQUIRES_APPROVAL},
        }),
        // As in Cline's prompt snapshots (e.g. openai_gpt_3-no-mcp.snap).
        xml: format!(
            "# Tools\n\n## execute_command\nDescription: {description}\nParameters:\n- command: (required) {COMMAND}\n- requires_approval: (required) {REQUIRES_APPROVAL}\nUsage:\n<execute_command>\n<command>Your command here</command>\n<requires_approval>true or false</requires_approval>\n</execute_command>"
        ),
    };
    assert_every_format(&registry.enabled(&variant, &context()), &expected);

    let yolo = SpecContext { yolo: true, ..context() };
    let expected = Expected {
        json: json!({
            "command": {"type": "string", "description": COMMAND},
            "requires_approval": {"type": "boolean", "description": REQUIRES_APPROVAL},
            "timeout": {"type": "integer", "description": TIMEOUT},
        }),
        gemini: json!({
            "command": {"type": "STRING", "description": COMMAND},
            "requires_approval": {"type": "BOOLEAN", "description": REQUIRES_APPROVAL},
            "timeout": {"type": "NUMBER", "description": TIMEOUT},
        }),
        xml: format!(
            "# Tools\n\n## execute_command\nDescription: {description}\nParameters:\n- command: (required) {COMMAND}\n- requires_approval: (required) {REQUIRES_APPROVAL}\n- timeout: (optional) {TIMEOUT}\nUsage:\n<execute_command>\n<command>Your command here</command>\n<requires_approval>true or false</requires_approval>\n<timeout>30</timeout>\n</execute_command>"
        ),
        ..expected
    };
    assert_every_format(&registry.enabled(&variant, &yolo), &expected);

    // The gemini3 family has its own spec; claude has none and falls back to generic.
    let gemini3 = registry.enabled(&PromptVariant::new("gemini3", ["execute_command"]), &context());
    assert_eq!(
        render_json(Provider::Gemini, &gemini3),
        gemini(
            "execute_command",
            GEMINI3_EXECUTE_COMMAND,
            json!({
                "command": {"type": "STRING", "description": GEMINI3_COMMAND},
                "requires_approval": {"type": "BOOLEAN", "description": NATIVE_REQUIRES_APPROVAL},
            }),
            &["command", "requires_approval"],
        )
    );
    let claude = registry.enabled(&PromptVariant::new("claude", ["execute_command"]), &context());
    assert_eq!(claude[0].description, description);
}

#[test]
fn replace_in_file_in_every_format() {
    let runtime = read_file_runtime();
    let registry = registry(&runtime);
    let path = "The path of the file to modify (relative to the current working directory /test/project)";
    // Cline's native converters check no dependencies, so task_progress is always a native parameter; the XML
    // section shows it only with the focus chain on.
    let expected = Expected {
        name: "replace_in_file",
        description: REPLACE_IN_FILE,
        required: &["path", "diff"],
        json: json!({
            "path": {"type": "string", "description": path},
            "diff": {"type": "string", "description": DIFF},
            "task_progress": {"type": "string", "description": TASK_PROGRESS},
        }),
        gemini: json!({
            "path": {"type": "STRING", "description": path},
            "diff": {"type": "STRING", "description": DIFF},
            "task_progress": {"type": "STRING", "description": TASK_PROGRESS},
        }),
        // As in Cline's prompt snapshots (e.g. openai_gpt_3-no-focus-chain.snap).
        xml: format!(
            "# Tools\n\n## replace_in_file\nDescription: {REPLACE_IN_FILE}\nParameters:\n- path: (required) {path}\n- diff: (required) {DIFF}\nUsage:\n<replace_in_file>\n<path>File path here</path>\n<diff>Search and replace blocks here</diff>\n</replace_in_file>"
        ),
    };
    let variant = PromptVariant::new("generic", ["replace_in_file", "focus_chain"]);
    assert_every_format(&registry.enabled(&variant, &context()), &expected);

    // The focus chain on: the placeholder tool enables task_progress in the XML section and is itself skipped
    // (no parameters, no description).
    let mut focus = context();
    focus.flags.insert("focus_chain".to_owned());
    let specs = registry.enabled(&variant, &focus);
    assert_eq!(specs.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["replace_in_file", "focus_chain"]);
    assert_eq!(
        Provider::Xml.render(&specs).to_string(),
        format!(
            "# Tools\n\n## replace_in_file\nDescription: {REPLACE_IN_FILE}\nParameters:\n- path: (required) {path}\n- diff: (required) {DIFF}\n- task_progress: (optional) {TASK_PROGRESS}\nUsage:\n<replace_in_file>\n<path>File path here</path>\n<diff>Search and replace blocks here</diff>\n<task_progress>Checklist here (optional)</task_progress>\n</replace_in_file>"
        )
    );
    // Natively the placeholder is dropped for its empty description.
    let native = registry
        .native(&variant.native_tools(true), &SpecContext { native_tool_calls: true, ..focus })
        .expect("native tools");
    assert_eq!(
        render_json(Provider::Anthropic, &native),
        json!([anthropic("replace_in_file", REPLACE_IN_FILE, expected.json, &["path", "diff"])])
    );

    // The next-gen families write absolute paths.
    let next_gen = registry.enabled(&PromptVariant::new("native-next-gen", ["replace_in_file"]), &context());
    assert_eq!(
        render_json(Provider::Anthropic, &next_gen),
        json!([anthropic(
            "replace_in_file",
            &format!("[IMPORTANT: Always output the absolutePath first] {REPLACE_IN_FILE}"),
            json!({
                "absolutePath": {"type": "string", "description": "The absolute path to the file to write to."},
                "diff": {"type": "string", "description": DIFF},
                "task_progress": {"type": "string", "description": TASK_PROGRESS},
            }),
            &["absolutePath", "diff"],
        )])
    );
}

/// MCP servers as the hub will report them: an issue tracker whose schema has enums, formats and items, a
/// tool whose full name is over 64 characters, a name with a dot, and a disabled server.
fn mcp_servers() -> Vec<McpServerInfo> {
    let create_issue = json!({
        "type": "object",
        "properties": {
            "title": {"type": "string", "description": "Issue title", "minLength": 1},
            "state": {"type": "string", "description": "State", "enum": ["open", "closed"]},
            "labels": {"type": "array", "description": "Labels", "items": {"type": "string"}},
            "due": {"type": "string", "format": "date"}
        },
        "required": ["title"]
    });
    vec![
        McpServerInfo::new(
            "github",
            vec![
                McpToolInfo::new("create_issue", "Creates an issue", Some(create_issue)),
                McpToolInfo::new("a_tool_name_long_enough_to_push_the_whole_name_past_the_limit", "Long.", None),
                McpToolInfo::new(
                    "repos.list",
                    "Lists repositories.",
                    Some(json!({"type": "object", "properties": {}})),
                ),
            ],
        ),
        McpServerInfo { disabled: true, ..McpServerInfo::new("off", vec![McpToolInfo::new("never", "Never.", None)]) },
    ]
}

#[test]
fn mcp_tools_and_subagents_as_native_tools() {
    let runtime = read_file_runtime();
    let mut registry = registry(&runtime);
    registry.set_mcp_servers(&mcp_servers());
    registry.set_agents(&[AgentConfig::new("Researcher", "Finds things.")]);
    registry
        .register("generic", Spec::new("use_subagents", "use_subagents", "Runs subagents.").requires("!subagent_run"));
    let variant = PromptVariant::new("generic", ["read_file", "use_subagents"]).native_tools(true);
    let native = SpecContext { native_tool_calls: true, ..context() };
    let specs = registry.native(&variant, &native).expect("native tools");
    let long = "github__mcp__a_tool_name_long_enough_to_push_the_whole_name_past_the_limit";
    let short = toolshed::provider_tool_name(long);
    assert_eq!(short.len(), 64);
    assert!(short.starts_with(&long[..55]));
    let dotted = toolshed::provider_tool_name("github__mcp__repos.list");
    assert_eq!(
        specs.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
        ["read_file", "use_subagent_researcher", "github__mcp__create_issue", short.as_str(), dotted.as_str()]
    );
    assert_eq!(
        registry.mcp_tool(&short),
        Some(("github", "a_tool_name_long_enough_to_push_the_whole_name_past_the_limit"))
    );
    assert_eq!(registry.mcp_tool(&dotted), Some(("github", "repos.list")));

    let tools = render_json(Provider::Anthropic, &specs);
    assert_eq!(
        tools[1],
        anthropic(
            "use_subagent_researcher",
            r#"Use the "Researcher" subagent: Finds things."#,
            json!({"prompt": {"type": "string", "description": "Helpful instruction for the task that the subagent will perform."}}),
            &["prompt"],
        )
    );
    // Cline keeps every extra keyword of an MCP property (enum, format, minLength) and the items of arrays.
    assert_eq!(
        tools[2],
        anthropic(
            "github__mcp__create_issue",
            "github: Creates an issue",
            json!({
                "title": {"type": "string", "description": "Issue title", "minLength": 1},
                "state": {"type": "string", "description": "State", "enum": ["open", "closed"]},
                "labels": {"type": "array", "description": "Labels", "items": {"type": "string"}},
                "due": {"type": "string", "description": "", "format": "date"}
            }),
            &["title"],
        )
    );
    // Gemini keeps type, description, enum and items only.
    let declarations = &render_json(Provider::Gemini, &specs)[0]["functionDeclarations"];
    assert_eq!(
        declarations[2]["parameters"]["properties"],
        json!({
            "title": {"type": "STRING", "description": "Issue title"},
            "state": {"type": "STRING", "description": "State", "enum": ["open", "closed"]},
            "labels": {"type": "ARRAY", "description": "Labels", "items": {"type": "STRING"}},
            "due": {"type": "STRING"}
        })
    );

    // A subagent run gets neither the generated tools nor use_subagents (its requirement fails).
    let run = SpecContext { subagent_run: true, ..native };
    let names: Vec<String> = registry.native(&variant, &run).expect("native").into_iter().map(|s| s.name).collect();
    assert!(!names.iter().any(|n| n.starts_with("use_subagent")), "{names:?}");
}

/// Checks one rendered output against the meta-schema and the provider's rules; returns the tools seen.
fn check_provider(provider: Provider, output: &ToolSchemas) -> usize {
    let name_ok = |name: &str| {
        !name.is_empty() && name.len() <= 64 && name.chars().all(|c| c.is_ascii_alphanumeric() || "_-".contains(c))
    };
    let meta = |schema: &Value, what: &str| {
        if let Err(error) = jsonschema::meta::validate(schema) {
            panic!("{provider} {what}: not a valid JSON Schema: {error}\n{schema:#}");
        }
        jsonschema::validator_for(schema).unwrap_or_else(|e| panic!("{provider} {what}: {e}"));
    };
    let tools = match (provider, output) {
        (Provider::Xml, ToolSchemas::Text(text)) => {
            assert!(text.starts_with("# Tools"), "{text}");
            return text.matches("\n## ").count();
        }
        (Provider::Gemini, ToolSchemas::Json(value)) => value[0]["functionDeclarations"].as_array().cloned(),
        (_, ToolSchemas::Json(value)) => value.as_array().cloned(),
        (_, ToolSchemas::Text(text)) => panic!("{provider} gave text: {text}"),
    };
    let tools = tools.expect("a list of tools");
    for tool in &tools {
        let (name, schema) = match provider {
            Provider::Anthropic => (&tool["name"], &tool["input_schema"]),
            Provider::OpenAi => (&tool["function"]["name"], &tool["function"]["parameters"]),
            Provider::OpenAiResponses | Provider::Gemini => (&tool["name"], &tool["parameters"]),
            Provider::Xml => unreachable!("handled above"),
        };
        let name = name.as_str().expect("a name");
        assert!(name_ok(name), "{provider}: invalid tool name {name:?}");
        match provider {
            Provider::Anthropic => meta(schema, name),
            Provider::OpenAi | Provider::OpenAiResponses => {
                meta(schema, name);
                assert_eq!(schema["additionalProperties"], false, "{provider} {name}");
                let strict = if provider == Provider::OpenAi { &tool["function"]["strict"] } else { &tool["strict"] };
                assert_eq!((&tool["type"], strict), (&json!("function"), &json!(false)), "{provider} {name}");
            }
            Provider::Gemini => check_gemini_types(schema, name),
            Provider::Xml => unreachable!("handled above"),
        }
        assert_eq!(schema["type"].as_str().map(str::to_lowercase).as_deref(), Some("object"), "{provider} {name}");
    }
    tools.len()
}

/// Gemini's `Type` values are upper-case, at every depth.
fn check_gemini_types(node: &Value, path: &str) {
    let kind = node["type"].as_str().unwrap_or_else(|| panic!("gemini {path}: no type in {node}"));
    assert!(
        ["STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT"].contains(&kind),
        "gemini {path}: type {kind}"
    );
    if let Some(items) = node.get("items") {
        check_gemini_types(items, &format!("{path}.items"));
    }
    for (key, child) in node.get("properties").and_then(Value::as_object).into_iter().flatten() {
        check_gemini_types(child, &format!("{path}.{key}"));
    }
}

#[test]
fn every_schema_passes_the_meta_schema_and_the_provider_rules() {
    let runtime = read_file_runtime();
    let mut registry = registry(&runtime);
    registry.set_mcp_servers(&mcp_servers());
    registry
        .set_agents(&[AgentConfig::new("Researcher", "Finds things."), AgentConfig::new("Code Reviewer", "Reviews.")]);
    let mut context = SpecContext { native_tool_calls: true, yolo: true, ..context() };
    context.flags.insert("focus_chain".to_owned());
    let tools = ["read_file", "execute_command", "replace_in_file", "focus_chain", "use_subagents"];
    for family in ["generic", "native-next-gen", "gpt-5-native", "gemini3"] {
        let specs = registry.native(&PromptVariant::new(family, tools).native_tools(true), &context).expect("native");
        // read_file, execute_command, replace_in_file, two subagents, three MCP tools (the disabled server's
        // tool never appears); the focus_chain placeholder has no description.
        assert_eq!(specs.len(), 8, "{family}");
        assert!(!specs.iter().any(|spec| spec.name.contains("never")), "{family}");
        for provider in Provider::ALL {
            let output = provider.render(&specs);
            assert_eq!(check_provider(provider, &output), 8, "{family} {provider}");
            assert_eq!(output.to_string(), provider.render(&specs).to_string(), "{family} {provider}: bytes differ");
        }
    }

    // A schema is usable, not only well-formed: a real call validates and a call without `path` does not.
    let specs = registry.enabled(&PromptVariant::new("generic", ["read_file"]), &context);
    let tools = render_json(Provider::Anthropic, &specs);
    let validator = jsonschema::validator_for(&tools[0]["input_schema"]).expect("validator");
    assert!(validator.is_valid(&json!({"path": "src/main.rs", "start_line": 10})));
    assert!(!validator.is_valid(&json!({"start_line": 10})));
    assert!(!validator.is_valid(&json!({"path": "a", "start_line": "ten"})));
}

#[test]
fn the_cli_prints_the_schema() {
    let home = workspace();
    let ws = workspace();
    let cwd = ws.path().canonicalize().expect("canonical workspace");
    let plugins = plugins();
    let args = [
        "--plugins",
        plugins.to_str().expect("utf-8"),
        "--cwd",
        cwd.to_str().expect("utf-8"),
        "schema",
        "--provider",
        "anthropic",
    ];
    let out = toolshed(home.path(), home.path(), &args, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let tools: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let names: Vec<&str> = tools.as_array().expect("a list").iter().filter_map(|t| t["name"].as_str()).collect();
    // The generic family (the default) offers Cline's generic variant, in its order.
    let variant = toolshed::cline_variant("generic").expect("generic");
    let listed: Vec<&str> = variant.tools.iter().map(String::as_str).filter(|id| names.contains(id)).collect();
    assert_eq!(names, listed);
    assert_eq!(&names[..3], ["execute_command", "read_file", "write_to_file"]);
    let read_file = tools.as_array().expect("a list").iter().find(|t| t["name"] == "read_file").expect("read_file");
    let expected = read_file_expected(cwd.to_str().expect("utf-8"));
    assert_eq!(read_file, &anthropic(expected.name, expected.description, expected.json, expected.required));

    let bad = toolshed(
        home.path(),
        home.path(),
        &["--plugins", plugins.to_str().expect("utf-8"), "schema", "--provider", "claude"],
        &[],
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("unknown provider 'claude'"), "{}", stderr(&bad));
}
