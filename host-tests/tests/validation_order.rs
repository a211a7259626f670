//! Issue 25, classes 2 and 5, through the real plugins: the order of the checks a call meets (Cline's executor,
//! then each handler's own checks in its own order, never a generic check in front of them), and the small
//! format rules (JavaScript's `parseInt` for line numbers and timeouts). Each case comes natively (JSON) and,
//! where the XML format can carry it, as Cline's XML tool use, with its variants: absent, null, empty, blank.

use crate::util::{block_on, call, shipped, task_in, text, workspace};
use serde_json::{json, Value};
use toolshed::stream::XmlEvent;
use toolshed::{Mode, ResultStatus, TaskHandle, ToolResult};

fn tool_error(text: &str) -> String {
    format!("The tool execution failed with the following error:\n<error>\n{text}\n</error>")
}

/// Cline's `missingToolParameterError(p)`, as the model reads it.
fn missing(param: &str) -> String {
    tool_error(&toolshed_plugin_api::result::missing_parameter_text(param))
}

/// Runs one XML tool use the way a text-mode model sends it.
fn xml(task: &TaskHandle, message: &str) -> ToolResult {
    let mut parser = task.xml_parser();
    let mut events = parser.push(message);
    events.extend(parser.finish());
    let tool_use = events
        .into_iter()
        .find_map(|event| match event {
            XmlEvent::ToolUse(tool_use) => Some(tool_use),
            XmlEvent::Text(_) | XmlEvent::Partial(_) => None,
        })
        .expect("one tool use");
    block_on(task.execute(tool_use))
}

const EMPTY_COMMAND: &str = "The 'command' parameter was empty. Provide the shell command to execute.\n\nExample:\n<execute_command>\n<command>cd /path && python -m pytest tests/</command>\n<requires_approval>false</requires_approval>\n</execute_command>";

#[test]
fn execute_command_without_a_command_gets_its_own_text_before_requires_approval() {
    let runtime = shipped().yes(true).build().unwrap();
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    // Absent, null, empty and blank, with or without `requires_approval` (Cline checks `command` first).
    for input in [
        json!({}),
        json!({"command": null}),
        json!({"command": ""}),
        json!({"command": " \n\t"}),
        json!({"command": "", "requires_approval": "false"}),
    ] {
        let result = call(&task, "execute_command", input.clone());
        assert_eq!(text(&result), tool_error(EMPTY_COMMAND), "{input}");
        assert_eq!(result.status, ResultStatus::Error);
    }
    for message in [
        "<execute_command>\n<requires_approval>false</requires_approval>\n</execute_command>",
        "<execute_command>\n<command>   </command>\n<requires_approval>false</requires_approval>\n</execute_command>",
    ] {
        assert_eq!(text(&xml(&task, message)), tool_error(EMPTY_COMMAND), "{message}");
    }
    // With a command, Cline's generic text for `requires_approval`: absent, null or empty; `false` is a value.
    for input in [json!({"command": "true"}), json!({"command": "true", "requires_approval": ""})] {
        assert_eq!(text(&call(&task, "execute_command", input.clone())), missing("requires_approval"), "{input}");
    }
    let xml_flagless = xml(&task, "<execute_command>\n<command>true</command>\n</execute_command>");
    assert_eq!(text(&xml_flagless), missing("requires_approval"));
    let ran = call(&task, "execute_command", json!({"command": "true", "requires_approval": false}));
    assert_eq!(text(&ran), "Command executed successfully (exit code 0).");
}

#[test]
fn write_to_file_without_content_gets_clines_guidance_counted_by_the_tasks_mistakes() {
    let runtime = shipped().yes(true).build().unwrap();
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    let base = "Failed to write to 'a.txt': The 'content' parameter was empty. This typically happens when the file content is too large to generate in a single response, or when output token limits are reached before the content parameter is fully written.";
    let first = text(&call(&task, "write_to_file", json!({"path": "a.txt"})));
    assert!(first.starts_with(&format!("{}{base}", &tool_error("")[..60])), "{first}");
    assert!(first.contains("\n\nSuggestions:\n"), "{first}");
    // Cline's count is the task's consecutive mistakes, whatever tool made the earlier ones: a read_file
    // without a path makes this the third.
    assert_eq!(text(&call(&task, "read_file", json!({}))), missing("path"));
    let third = text(&call(&task, "write_to_file", json!({"path": "a.txt", "content": null})));
    assert!(third.contains("CRITICAL: You have failed to write this file 3 times in a row."), "{third}");
    assert_eq!(task.consecutive_mistakes(), 3);
    // A success starts the count over; the XML form without `<content>` is the first failure again.
    let written = call(&task, "write_to_file", json!({"path": "b.txt", "content": "x"}));
    assert_eq!(written.status, ResultStatus::Success, "{}", text(&written));
    let again = text(&xml(&task, "<write_to_file>\n<path>a.txt</path>\n</write_to_file>"));
    assert!(again.contains("\n\nSuggestions:\n"), "{again}");
    let second = text(&call(&task, "write_to_file", json!({"path": "a.txt"})));
    assert!(second.contains("This is your 2nd failed attempt."), "{second}");
    // An empty content is a value: the empty file.
    let empty = call(&task, "write_to_file", json!({"path": "a.txt", "content": ""}));
    assert_eq!(empty.status, ResultStatus::Success, "{}", text(&empty));
}

#[test]
fn replace_in_file_without_a_diff_gets_its_own_text() {
    let runtime = shipped().yes(true).build().unwrap();
    let ws = workspace();
    std::fs::write(ws.path().join("a.txt"), "alpha\n").unwrap();
    let task = task_in(&runtime, ws.path());
    let expected = "Failed to edit 'a.txt': The 'diff' parameter was empty.\n\nThe diff parameter must contain SEARCH/REPLACE blocks in this format:\n<<<<<<< SEARCH\nexact lines to find\n=======\nreplacement lines\n>>>>>>> REPLACE\n\nRules:\n- The SEARCH block must match existing file content exactly (including whitespace and indentation)\n- You can include multiple SEARCH/REPLACE blocks in a single diff parameter\n- If you're unsure of the exact content, use read_file first to see the current file";
    for input in
        [json!({"path": "a.txt"}), json!({"path": "a.txt", "diff": null}), json!({"path": "a.txt", "diff": ""})]
    {
        assert_eq!(text(&call(&task, "replace_in_file", input.clone())), tool_error(expected), "{input}");
    }
    for message in [
        "<replace_in_file>\n<path>a.txt</path>\n</replace_in_file>",
        "<replace_in_file>\n<path>a.txt</path>\n<diff>\n\n</diff>\n</replace_in_file>",
    ] {
        assert_eq!(text(&xml(&task, message)), tool_error(expected), "{message}");
    }
    // The path comes first, with Cline's generic text.
    assert_eq!(text(&call(&task, "replace_in_file", json!({"path": " "}))), missing("path"));
    assert_eq!(std::fs::read_to_string(ws.path().join("a.txt")).unwrap(), "alpha\n");
}

#[test]
fn the_web_tools_check_their_gate_before_their_parameters() {
    // The default configuration: Cline's web tools are off.
    let runtime = shipped().yes(true).build().unwrap();
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    for (tool, input) in [
        ("web_fetch", json!({})),
        ("web_fetch", json!({"url": ""})),
        ("web_fetch", json!({"url": "https://a.example"})),
        ("web_search", json!({})),
        ("web_search", json!({"query": null})),
    ] {
        let result = call(&task, tool, input.clone());
        assert_eq!(text(&result), tool_error("Cline web tools are currently disabled."), "{tool} {input}");
        assert_eq!(task.consecutive_mistakes(), 0);
    }
    assert_eq!(text(&xml(&task, "<web_fetch>\n</web_fetch>")), tool_error("Cline web tools are currently disabled."));
}

#[test]
fn plan_mode_refuses_a_file_edit_before_its_parameters_and_act_mode_respond_checks_its_mode_first() {
    let runtime = shipped().yes(true).build().unwrap();
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    task.set_mode(Mode::Plan);
    let refusal = tool_error("Tool 'write_to_file' is not available in PLAN MODE. This tool is restricted to ACT MODE for file modifications. Only use tools available for PLAN MODE when in that mode.");
    assert_eq!(text(&call(&task, "write_to_file", json!({}))), refusal);
    assert_eq!(task.consecutive_mistakes(), 0);
    let act = call(&task, "act_mode_respond", json!({}));
    assert_eq!(
        text(&act),
        tool_error("The act_mode_respond tool is only available in ACT MODE. You are currently in PLAN MODE. Please use the appropriate tool for your current mode.")
    );
    task.set_mode(Mode::Act);
    // The call before was act_mode_respond (its failure too, as in Cline): another tool first.
    assert_eq!(call(&task, "list_files", json!({"path": "."})).status, ResultStatus::Success);
    assert_eq!(text(&call(&task, "act_mode_respond", json!({"response": ""}))), missing("response"));
}

#[test]
fn the_tools_own_missing_parameter_checks_follow_clines_falsy_and_blank_rules() {
    let runtime = shipped().yes(true).build().unwrap();
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    // `assertRequiredParams` (absent, null, blank) for paths; `!regex` (absent, empty) for the regex.
    for (tool, input, param) in [
        ("read_file", json!({"path": "  "}), "path"),
        ("list_files", json!({"path": null}), "path"),
        ("list_code_definition_names", json!({}), "path"),
        ("search_files", json!({"regex": "x"}), "path"),
        ("search_files", json!({"path": ".", "regex": ""}), "regex"),
        ("apply_patch", json!({}), "input"),
        ("new_rule", json!({"path": ".clinerules/a.md", "content": ""}), "content"),
    ] {
        assert_eq!(text(&call(&task, tool, input.clone())), missing(param), "{tool} {input}");
    }
    // A blank regex is a regex in Cline (`!regex` is false): it matches, here as there.
    std::fs::write(ws.path().join("a.txt"), "a b\n").unwrap();
    let blank = call(&task, "search_files", json!({"path": ".", "regex": " "}));
    assert_eq!(blank.status, ResultStatus::Success, "{}", text(&blank));
}

/// A file of five numbered lines and the lines read_file shows for `start_line`/`end_line` values.
#[test]
fn read_file_reads_line_numbers_as_javascripts_parse_int() {
    let runtime = shipped().yes(true).build().unwrap();
    let ws = workspace();
    std::fs::write(ws.path().join("f.txt"), "one\ntwo\nthree\nfour\nfive\n").unwrap();
    let task = task_in(&runtime, ws.path());
    let shown = |start: Value, end: Value| {
        let mut input = json!({"path": "f.txt"});
        if !start.is_null() {
            input["start_line"] = start;
        }
        if !end.is_null() {
            input["end_line"] = end;
        }
        let out = text(&call(&task, "read_file", input));
        out.lines().filter_map(|l| l.split_once(" | ").map(|(n, _)| n.parse::<u32>().unwrap())).collect::<Vec<_>>()
    };
    let all = vec![1, 2, 3, 4, 5];
    let table: Vec<(Value, Value, Vec<u32>)> = vec![
        (json!("2abc"), Value::Null, vec![2, 3, 4, 5]),
        (json!(" 3"), Value::Null, vec![3, 4, 5]),
        (json!("0x10"), Value::Null, all.clone()),
        (json!("-1"), Value::Null, all.clone()),
        (json!("1e3"), Value::Null, all.clone()),
        (json!(""), Value::Null, all.clone()),
        (json!("abc"), Value::Null, all.clone()),
        (json!(2.9), Value::Null, vec![2, 3, 4, 5]),
        (json!(true), Value::Null, all.clone()),
        (json!("2"), json!("3rd"), vec![2, 3]),
        (json!("4"), json!("2"), vec![2, 3, 4]),
        (Value::Null, json!("0"), vec![1]),
        (Value::Null, json!("-5"), vec![1]),
        (Value::Null, json!(" 2 lines"), vec![1, 2]),
        (Value::Null, json!("x"), all),
        (json!("+4"), json!("1e1"), vec![1, 2, 3, 4]),
    ];
    for (start, end, lines) in table {
        assert_eq!(shown(start.clone(), end.clone()), lines, "start_line {start}, end_line {end}");
    }
}

#[test]
fn execute_command_reads_its_timeout_as_javascripts_parse_int() {
    let runtime = shipped().yes(true).build().unwrap();
    let ws = workspace();
    let task = task_in(&runtime, ws.path());
    // `"1s"` is 1: the command is stopped at one second (a 30-second sleep otherwise).
    let result =
        call(&task, "execute_command", json!({"command": "sleep 30", "requires_approval": false, "timeout": "1s"}));
    assert_eq!(text(&result), "Command execution timed out after 1 seconds. ");
    // `"0x5"` is 0, not positive: no timeout, the command runs to its end.
    let result =
        call(&task, "execute_command", json!({"command": "echo ok", "requires_approval": false, "timeout": "0x5"}));
    assert_eq!(text(&result), "Command executed successfully (exit code 0).\nOutput:\nok");
}
