//! Breaks found by red-teaming `toolshed serve`'s sessions, profiles and roots (issue 24), each kept as the
//! test that failed.
//!
//! - The `mcp` profile was enforced only where serve answers `tools/call`: any other way into the task's
//!   pipeline (a plugin's `tool.call`, a host calling `execute`) ran the hidden agent-loop tools, and the
//!   unknown-tool error named them as available, inviting the model to call what is then refused.

use crate::util::*;
use serde_json::json;
use toolshed::config::Profile;
use toolshed::{ResultStatus, TaskContext, ToolUse};

#[test]
fn the_mcp_profile_refuses_agent_loop_tools_on_every_path_and_never_names_them() {
    let ws = workspace();
    let runtime = shipped().yes(true).build().unwrap();
    assert!(runtime.load_errors().is_empty(), "{:?}", runtime.load_errors());
    let task = runtime.task(TaskContext::new(ws.path()).with_profile(Profile::Mcp));
    let marker = ws.path().join("demo-ran");
    let command = format!("touch {}", marker.display());
    let result =
        block_on(task.execute(ToolUse::new("c1", "attempt_completion", json!({"result": "done", "command": command}))));
    assert_eq!(result.status, ResultStatus::Error);
    let refused = result.to_model_text();
    assert!(refused.contains("not served with `--profile mcp`"), "{refused}");
    assert!(!marker.exists(), "attempt_completion's demo command ran in an `mcp` task");
    for name in ["Attempt_Completion", "attempt_completion ", "nope"] {
        let result = block_on(task.execute(ToolUse::new("c2", name, json!({}))));
        let text = result.to_model_text();
        assert!(text.contains("does not exist"), "{text}");
        assert!(text.contains("read_file"), "{text}");
        for hidden in toolshed::config::AGENT_LOOP_TOOLS {
            assert!(
                !text.contains(&format!(" {hidden},")) && !text.contains(&format!(" {hidden}.")),
                "{hidden} named: {text}"
            );
        }
    }
    // The `cline` profile still has them.
    let cline = runtime.task(TaskContext::new(ws.path()));
    let text = block_on(cline.execute(ToolUse::new("c3", "nope", json!({})))).to_model_text();
    assert!(text.contains("attempt_completion"), "{text}");
}
