//! execute_command's specs per model family, Cline's `execute_command_variants` (`tools/execute_command.ts`):
//! the generic one, the native one of gpt-5-native and native-next-gen, and gemini3's. Other families fall
//! back to the generic one, as Cline's do. None has `task_progress`: Cline's execute_command never declares it.

use std::collections::BTreeMap;
use toolshed_plugin_api::{ParamSpec, ToolSpec};

const DESCRIPTION: &str = "Request to execute a CLI command on the system. Use this when you need to perform system operations or run specific commands to accomplish any step in the user's task. You must tailor your command to the user's system and provide a clear explanation of what the command does. For command chaining, use the appropriate chaining syntax for the user's shell. Prefer to execute complex CLI commands over creating executable scripts, as they are more flexible and easier to run. Commands will be executed in the current working directory: {{CWD}}{{MULTI_ROOT_HINT}}";
const COMMAND: &str = "The CLI command to execute. This should be valid for the current operating system. Ensure the command is properly formatted and does not contain any harmful instructions.";
const REQUIRES_APPROVAL: &str = "A boolean indicating whether this command requires explicit user approval before execution in case the user has auto-approve mode enabled. Set to 'true' for potentially impactful operations like installing/uninstalling packages, deleting/overwriting files, system configuration changes, network operations, or any commands that could have unintended side effects. Set to 'false' for safe operations like reading files/directories, running development servers, building projects, and other non-destructive operations.";
const TIMEOUT: &str = "Integer representing the timeout in seconds for how long to run the terminal command, before timing out and continuing the task.";

const NATIVE_DESCRIPTION: &str = "Request to execute a CLI command on the system. Use this when you need to perform system operations or run specific commands to accomplish any step in the user's task.";
const NATIVE_COMMAND: &str = "The CLI command to execute. This should be valid for the current operating system. Do not use the ~ character or $HOME to refer to the home directory. Always use absolute paths. The command will be executed from the current workspace, you do not need to cd to the workspace.";
const NATIVE_REQUIRES_APPROVAL: &str = "To indicate whether this command requires explicit user approval or interaction before it should be executed. For system/file altering operations like installing/uninstalling packages, removing/overwriting files, system configuration changes, network operations, or any commands that are considered potentially dangerous must be set to true. False for safe operations like running development servers, building projects, and other non-destructive operations.";

const GEMINI3_DESCRIPTION: &str = "Request to execute a CLI command on the system. Use this when you need to perform system operations or run specific commands to accomplish any step in the user's task. When chaining commands, use the shell operator && (not the HTML entity &amp;&amp;). If using search/grep commands, be careful to not use vague search terms that may return thousands of results. When in PLAN MODE, you may use the execute_command tool, but only in a non-destructive manner and in a way that does not alter any files.";
const GEMINI3_COMMAND: &str = "The CLI command to execute. This should be valid for the current operating system. For command chaining, use proper shell operators like && to chain commands (e.g., 'cd path && command'). Do not use the ~ character or $HOME to refer to the home directory. Always use absolute paths. Do not run search/grep commands that may return thousands of results.";

fn spec(description: &str, parameters: Vec<ParamSpec>) -> ToolSpec {
    ToolSpec {
        id: "execute_command".to_owned(),
        name: "execute_command".to_owned(),
        description: description.to_owned(),
        parameters,
        context_requirements: Vec::new(),
    }
}

/// The native and gemini3 specs: no usage examples, and no timeout.
fn native(description: &str, command: &str) -> ToolSpec {
    spec(
        description,
        vec![
            ParamSpec::new("command", true, command),
            ParamSpec::new("requires_approval", true, NATIVE_REQUIRES_APPROVAL).kind("boolean"),
        ],
    )
}

/// Every family's spec.
pub fn specs() -> BTreeMap<String, ToolSpec> {
    let generic = spec(
        DESCRIPTION,
        vec![
            ParamSpec::new("command", true, COMMAND).usage("Your command here"),
            ParamSpec::new("requires_approval", true, REQUIRES_APPROVAL).kind("boolean").usage("true or false"),
            // Cline offers the timeout only in YOLO mode.
            ParamSpec::new("timeout", false, TIMEOUT).kind("integer").usage("30").requires("yolo"),
        ],
    );
    let native_spec = native(NATIVE_DESCRIPTION, NATIVE_COMMAND);
    [
        ("generic", generic),
        ("gpt-5-native", native_spec.clone()),
        ("native-next-gen", native_spec),
        ("gemini3", native(GEMINI3_DESCRIPTION, GEMINI3_COMMAND)),
    ]
    .into_iter()
    .map(|(family, spec)| (family.to_owned(), spec))
    .collect()
}
