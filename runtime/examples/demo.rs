//! `cargo xtask demo`: a scripted agent session over the shipped plugins on a scratch copy of this repository,
//! printing every call and result and checking each one. It fails when a loaded tool goes unexercised.
//!
//! MCP runs against a real server: the pinned `@modelcontextprotocol/server-everything` when `cargo xtask
//! test` has installed it (`target/test-peers/node`), else this very binary started again as a small stdio
//! MCP server (`demo --mcp-server`, below), so a clean clone with only a Rust toolchain shows MCP working.

use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use toolshed::{
    Answer, ApprovalPrompt, Approver, BoxFuture, Reply, ResultStatus, Runtime, TaskContext, ToolResult, ToolUse,
};

/// Plays the user: approves every ask and says so.
struct ScriptedUser;

impl Approver for ScriptedUser {
    fn ask(&self, prompt: ApprovalPrompt) -> BoxFuture<Reply> {
        println!("  ? {} -> approved by the scripted user", prompt.message);
        Box::pin(async { Reply { answer: Answer::Approve, feedback: None } })
    }
}

/// Plays the user of the conversational tools: answers questions, accepts the result, creates the new task,
/// accepts the summary and files the bug report; this host does not summarize tasks or explain diffs.
struct ScriptedHost;

impl toolshed::Interaction for ScriptedHost {
    fn ask(&self, question: toolshed::Question) -> BoxFuture<Option<toolshed::UserReply>> {
        let answer = match question.kind.as_str() {
            "followup" => toolshed::UserReply::text(question.options.first().cloned().unwrap_or_default()),
            _ => toolshed::UserReply::accepted(),
        };
        println!("  ? [{}] {} -> {:?}", question.kind, question.text, answer.text);
        Box::pin(async move { Some(answer) })
    }

    fn new_task(&self, _task_id: &str, _context: &str) -> BoxFuture<toolshed::HostAction> {
        Box::pin(async { toolshed::HostAction::Answered(toolshed::UserReply::accepted()) })
    }

    fn condense(&self, _task_id: &str, _summary: &str) -> BoxFuture<toolshed::HostAction> {
        Box::pin(async { toolshed::HostAction::Answered(toolshed::UserReply::accepted()) })
    }

    fn report_bug(&self, _task_id: &str, _report: &toolshed::BugReport) -> BoxFuture<toolshed::HostAction> {
        Box::pin(async { toolshed::HostAction::Answered(toolshed::UserReply::accepted()) })
    }
}

/// Plays the model of use_subagents' runs: reads the README, then reports it with attempt_completion.
struct ScriptedModel;

impl toolshed::AgentDriver for ScriptedModel {
    fn next_message(
        &self,
        request: toolshed::AgentRequest,
    ) -> BoxFuture<Result<toolshed::AgentReply, toolshed::DriverError>> {
        let read = request.messages.iter().any(|m| matches!(m, toolshed::AgentMessage::ToolResults { .. }));
        let (id, name, arguments) = if read {
            ("call-2", "attempt_completion", json!({"result": "Relevant file paths\nREADME.md"}))
        } else {
            ("call-1", "read_file", json!({"path": "README.md"}))
        };
        let call =
            toolshed::AgentToolCall { id: id.to_owned(), name: name.to_owned(), arguments: arguments.to_string() };
        Box::pin(async move { Ok(toolshed::AgentReply { text: String::new(), tool_calls: vec![call], usage: None }) })
    }
}

/// One scripted step: a tool use, what its result must show, and what it must not.
struct Step {
    tool: &'static str,
    input: Value,
    status: ResultStatus,
    expect: Vec<String>,
    absent: Vec<String>,
}

fn step(tool: &'static str, input: Value, status: ResultStatus, expect: &[&str]) -> Step {
    Step { tool, input, status, expect: expect.iter().map(|s| (*s).to_owned()).collect(), absent: Vec::new() }
}

/// `demo --mcp-server`: the MCP server the demo connects when server-everything is not installed. It
/// offers a few of server-everything's tools and resources under the same names and URIs, so the script's
/// MCP steps read the same against either: `echo`, `get-sum` (an `isError` result for arguments that are not
/// numbers), `get-resource-links`, a text document and a binary blob.
mod mcp_server {
    use rmcp::model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, InitializeResult, ListResourcesResult,
        ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
        ServerCapabilities, ServerConfig,
    };
    use rmcp::service::{RequestContext, RoleServer};
    use rmcp::{ErrorData, ServerHandler, ServiceExt as _};
    use serde_json::{json, Value};

    pub const DOCUMENT: &str = "demo://resource/static/document/architecture.md";
    pub const BLOB: &str = "demo://resource/dynamic/blob/1";

    struct DemoServer;

    /// An rmcp result type from its MCP JSON, the shape the specification shows.
    fn from_json<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, ErrorData> {
        serde_json::from_value(value).map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    impl ServerHandler for DemoServer {
        fn get_info(&self) -> ServerConfig {
            let capabilities = ServerCapabilities::builder().enable_tools().enable_resources().build();
            let mut info = InitializeResult::new(capabilities);
            info.server_info = Implementation::new("toolshed-demo", env!("CARGO_PKG_VERSION"));
            info
        }

        async fn list_tools(
            &self,
            _request: Option<PaginatedRequestParams>,
            _context: RequestContext<RoleServer>,
        ) -> Result<ListToolsResult, ErrorData> {
            let number = json!({"type": "number"});
            from_json(json!({"tools": [
                {"name": "echo", "description": "Echoes back the input", "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}},
                {"name": "get-sum", "description": "Returns the sum of two numbers", "inputSchema": {"type": "object", "properties": {"a": number, "b": number}, "required": ["a", "b"]}},
                {"name": "get-resource-links", "description": "Returns links to this server's resources", "inputSchema": {"type": "object", "properties": {"count": {"type": "number"}}}}
            ]}))
        }

        async fn call_tool(
            &self,
            request: CallToolRequestParams,
            _context: RequestContext<RoleServer>,
        ) -> Result<CallToolResponse, ErrorData> {
            let args = Value::Object(request.arguments.unwrap_or_default());
            let text = |text: String| json!({"type": "text", "text": text});
            let result = match request.name.as_ref() {
                "echo" => json!({"content": [text(format!("Echo: {}", args["message"].as_str().unwrap_or_default()))]}),
                "get-sum" => match (args["a"].as_f64(), args["b"].as_f64()) {
                    (Some(a), Some(b)) => json!({"content": [text(format!("The sum of {a} and {b} is {}.", a + b))]}),
                    _ => {
                        json!({"content": [text("Invalid arguments for tool get-sum: a and b must be numbers".to_owned())], "isError": true})
                    }
                },
                "get-resource-links" => {
                    let count = args["count"].as_u64().unwrap_or(2).clamp(1, 2);
                    let mut content =
                        vec![text(format!("Here are {count} resource links to resources available in this server:"))];
                    let links = [
                        (BLOB, "Blob Resource 1", "application/octet-stream"),
                        (DOCUMENT, "architecture.md", "text/markdown"),
                    ];
                    content.extend(links.iter().take(count as usize).map(|(uri, name, mime)| {
                        json!({"type": "resource_link", "uri": uri, "name": name, "mimeType": mime})
                    }));
                    json!({"content": content})
                }
                other => return Err(ErrorData::invalid_params(format!("Tool {other} not found"), None)),
            };
            Ok(CallToolResponse::Complete(from_json::<CallToolResult>(result)?))
        }

        async fn list_resources(
            &self,
            _request: Option<PaginatedRequestParams>,
            _context: RequestContext<RoleServer>,
        ) -> Result<ListResourcesResult, ErrorData> {
            from_json(json!({"resources": [
                {"uri": DOCUMENT, "name": "architecture.md", "mimeType": "text/markdown"},
                {"uri": BLOB, "name": "Blob Resource 1", "mimeType": "application/octet-stream"}
            ]}))
        }

        async fn read_resource(
            &self,
            request: ReadResourceRequestParams,
            _context: RequestContext<RoleServer>,
        ) -> Result<ReadResourceResponse, ErrorData> {
            let contents = match request.uri.as_str() {
                DOCUMENT => {
                    json!([{"uri": DOCUMENT, "mimeType": "text/markdown", "text": "# Architecture\n\nEvery tool is a plugin; the runtime loads them.\n"}])
                }
                BLOB => json!([{"uri": BLOB, "mimeType": "application/octet-stream", "blob": "AAECAw=="}]),
                uri => return Err(ErrorData::invalid_params(format!("Resource {uri} not found"), None)),
            };
            Ok(ReadResourceResponse::Complete(from_json::<ReadResourceResult>(json!({"contents": contents}))?))
        }
    }

    /// Serves over stdio until the client goes.
    pub fn run() -> anyhow::Result<()> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        runtime.block_on(async {
            let running = DemoServer.serve(rmcp::transport::stdio()).await?;
            running.waiting().await?;
            Ok(())
        })
    }
}

fn copy_tree(from: &Path, to: &Path, depth: usize) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        if name == "target" || name == ".git" {
            continue;
        }
        let path = entry.path();
        if path.is_dir() && depth > 0 {
            copy_tree(&path, &to.join(&name), depth - 1)?;
        } else if path.is_file() {
            std::fs::copy(&path, to.join(&name))?;
        }
    }
    Ok(())
}

fn shown(result: &ToolResult) -> String {
    let text = result.to_model_text();
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= 14 {
        return text;
    }
    format!("{}\n  … ({} more lines)", lines[..12].join("\n"), lines.len() - 12)
}

/// A tiny HTTP server on 127.0.0.1 for the web tools: the Cline search API and one HTML page. Each
/// connection gets one answer and is closed.
fn serve_demo_site() -> std::io::Result<std::net::SocketAddr> {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let Ok(clone) = stream.try_clone() else { continue };
            let mut reader = BufReader::new(clone);
            let (mut line, mut length) = (String::new(), 0usize);
            let _ = reader.read_line(&mut line);
            let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
                    break;
                }
                if let Some((name, value)) = header.split_once(':')
                    && name.eq_ignore_ascii_case("content-length")
                {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let (content_type, answer) = match path.as_str() {
                "/api/v1/search/websearch" => (
                    "application/json",
                    r#"{"data":{"results":[{"title":"Toolshed on docs.rs","url":"https://docs.rs/toolshed"}]}}"#.to_owned(),
                ),
                "/app" => (
                    "text/html",
                    r#"<html><body style="margin:0"><button style="position:absolute;left:100px;top:100px;width:200px;height:80px" onclick="this.textContent='Clicked'; console.log('the demo button was clicked')">Click me</button></body></html>"#
                        .to_owned(),
                ),
                _ => (
                    "text/html",
                    "<html><head><title>Guide</title></head><body><h1>Getting started</h1><p>Run <b>cargo xtask demo</b>.</p></body></html>"
                        .to_owned(),
                ),
            };
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
                answer.len()
            );
        }
    });
    Ok(addr)
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--mcp-server") {
        return mcp_server::run();
    }
    let plugins = match args.iter().position(|a| a == "--plugins") {
        Some(i) => PathBuf::from(args.get(i + 1).ok_or_else(|| anyhow::anyhow!("--plugins needs a directory"))?),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/plugins-debug"),
    };
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let scratch = tempfile::tempdir()?;
    let ws = scratch.path().join("workspace");
    copy_tree(&repo, &ws, 3)?;
    // A few files an agent meets in real trees: a fenced-off secret and a binary.
    std::fs::write(ws.join(".clineignore"), "secrets/\n")?;
    std::fs::create_dir_all(ws.join("secrets"))?;
    std::fs::write(ws.join("secrets/token.txt"), "hunter2\n")?;
    std::fs::write(ws.join("logo.bin"), [0u8, 159, 146, 150, 0, 0])?;
    let big: String = (1..=2500).map(|i| format!("entry {i}\n")).collect();
    std::fs::write(ws.join("journal.log"), big)?;
    // A notebook with an output, which read_file strips.
    std::fs::write(
        ws.join("analysis.ipynb"),
        r#"{"cells":[{"cell_type":"code","execution_count":1,"metadata":{},"outputs":[{"output_type":"stream","name":"stdout","text":["2\n"]}],"source":["print(1 + 1)"]}],"metadata":{},"nbformat":4,"nbformat_minor":5}"#,
    )?;

    println!("Toolshed demo: plugins from {}, scratch workspace {}", plugins.display(), ws.display());
    // One skill for use_skill, in a skills directory of the demo's own.
    let skills = scratch.path().join("skills");
    std::fs::create_dir_all(skills.join("release-notes"))?;
    std::fs::write(
        skills.join("release-notes/SKILL.md"),
        "---\nname: release-notes\ndescription: Write release notes from the git log\n---\n\nList the commits since the last tag, grouped by area.\n",
    )?;
    // The web tools talk to a small site on 127.0.0.1 that plays the Cline API and a documentation page;
    // web_fetch fetches directly, and 127.0.0.1 is explicitly allowed.
    let site = serve_demo_site()?;
    // MCP: the reference server `cargo xtask test` installs (npm's server-everything), when it is there
    // (and `--builtin-mcp` does not ask otherwise), else this binary as a small MCP server of its own.
    let everything =
        repo.join("target/test-peers/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let mcp_settings = scratch.path().join("cline_mcp_settings.json");
    let use_everything = everything.is_file() && !args.iter().any(|a| a == "--builtin-mcp");
    let (mcp, server) = if use_everything {
        ("everything", json!({"command": "node", "args": [everything, "stdio"], "autoApprove": ["echo"]}))
    } else {
        let me = std::env::current_exe()?;
        ("demo", json!({"command": me, "args": ["--mcp-server"], "autoApprove": ["echo"]}))
    };
    println!(
        "MCP server \"{mcp}\": {}",
        if use_everything { "the pinned server-everything" } else { "the demo's own (demo --mcp-server)" }
    );
    std::fs::write(&mcp_settings, json!({"mcpServers": {mcp: server}}).to_string())?;
    let config = toolshed::Config::from_toml_str(&format!(
        "[skills]\ndirs = [{skills:?}]\n[web]\nprovider = \"cline\"\nenabled = true\nfeature_flag = true\nbackend = \"direct\"\n\
         api_base_url = \"http://{site}\"\nallowed_hosts = [\"127.0.0.1\"]\nfetch_timeout_ms = 5000\n\
         [mcp]\nsettings = {mcp_settings:?}\n[browser]\nstable_interval_ms = 100\nlog_quiet_ms = 200\n"
    ))?;
    let runtime = Runtime::builder()
        .plugin_dir(&plugins)
        .config(config)
        .web_token(Some("demo-token".to_owned()))
        .approver(ScriptedUser)
        .interaction(ScriptedHost)
        .agent_driver(ScriptedModel)
        .build()?;
    if let Some(error) = runtime.load_errors().first() {
        anyhow::bail!("plugin not loaded: {error}");
    }
    let loaded: BTreeSet<String> = runtime.tools().into_iter().map(|t| t.name).collect();
    println!("Loaded tools: {}\n", loaded.iter().cloned().collect::<Vec<_>>().join(", "));

    use ResultStatus::{Error, Success};
    let script = vec![
        // The README's footer says `(File has N lines total.)` or, past the first window, `(Showing lines 1-1000 of
        // N total. …)`, whichever its length gives.
        step("read_file", json!({"path": "README.md"}), Success, &["1 | # Toolshed", " total."]),
        step("read_file", json!({"path": "journal.log", "start_line": 2001}), Success, &["2001 | entry 2001", "(File has 2500 lines total.)"]),
        step("read_file", json!({"path": "journal.log", "start_line": 10, "end_line": 12}), Success, &["[File already read]", "10 | entry 10\n11 | entry 11\n12 | entry 12\n\n(Showing lines 10-12 of 2500 total. Use start_line=13 to continue reading.)"]),
        step("read_file", json!({"path": "secrets/token.txt"}), Error, &["is blocked by the .clineignore file settings"]),
        step("read_file", json!({"path": "logo.bin"}), Error, &["Cannot read text for file type: .bin"]),
        step("read_file", json!({"path": "no/such/file.rs"}), Error, &["Error reading file: File not found: "]),
        step("read_file", json!({}), Error, &["Missing value for required parameter 'path'"]),
        step("list_files", json!({"path": "."}), Success, &["🔒 .clineignore", "README.md", "plugins/"]),
        step("list_files", json!({"path": "runtime", "recursive": "true"}), Success, &["src/", "src/lib.rs"]),
        step("list_files", json!({"path": "secrets", "recursive": true}), Success, &["🔒 token.txt"]),
        step("list_files", json!({"path": "does-not-exist"}), Success, &["No files found."]),
        step("list_code_definition_names", json!({"path": "cli/src"}), Success, &["main.rs\n|----\n│", "│fn main() "]),
        step("list_code_definition_names", json!({"path": "README.md"}), Error, &["The provided path is a file, not a directory."]),
        step("read_file", json!({"path": "analysis.ipynb"}), Success, &["4 |    \"cell_type\": \"code\",", "\"outputs\": [],", "(File has "]),
        step("search_files", json!({"path": ".", "regex": "fn main\\(", "file_pattern": "*.rs"}), Success, &["results.\n\n", "cli/src/main.rs\n│----\n"]),
        step("search_files", json!({"path": "runtime/src", "regex": "pub struct Workspace\\b"}), Success, &["Found 1 result.\n\nruntime/src/workspace.rs\n│----\n"]),
        step("search_files", json!({"path": ".", "regex": "^entry \\d+$", "file_pattern": "*.log"}), Success, &["Showing first 300 of 300+ results. Use a more specific search if necessary.\n\njournal.log\n│----\n│entry 1\n│----\n│entry 2\n│----\n"]),
        // The secret's own file is fenced off by .clineignore; only the demo's source, which mentions it, is found.
        step("search_files", json!({"path": ".", "regex": "hunter2"}), Success, &["runtime/examples/demo.rs\n│----\n"]),
        step("search_files", json!({"path": ".", "regex": "(unclosed"}), Error, &["The regex '(unclosed' is not valid Rust regex syntax", "unclosed group"]),
        step("search_files", json!({"path": "no/such/dir", "regex": "x"}), Error, &["Directory not found"]),
        step(
            "execute_command",
            json!({"command": "echo built && wc -l README.md", "requires_approval": false}),
            Success,
            &["Command executed successfully (exit code 0).\nOutput:\nbuilt\n", "README.md"],
        ),
        step(
            "execute_command",
            json!({"command": "echo oops >&2; exit 4", "requires_approval": "false"}),
            Success,
            &["Command failed with exit code 4.\nOutput:\noops"],
        ),
        step("execute_command", json!({"command": "cat secrets/token.txt", "requires_approval": false}), Error, &[".clineignore"]),
        // The edit tools: one handler behind write_to_file, replace_in_file and new_rule, and apply_patch.
        step("write_to_file", json!({"path": "notes/todo.md", "content": "# TODO\n\n- ship the edit tools\n"}), Success, &["The content was successfully saved to notes/todo.md.", "<final_file_content path=\"notes/todo.md\">\n# TODO\n\n- ship the edit tools\n\n</final_file_content>"]),
        step("replace_in_file", json!({"path": "notes/todo.md", "diff": "------- SEARCH\n- ship the edit tools\n=======\n- ship the edit tools\n- celebrate\n+++++++ REPLACE"}), Success, &["- ship the edit tools\n- celebrate\n\n</final_file_content>"]),
        step("replace_in_file", json!({"path": "notes/todo.md", "diff": "------- SEARCH\n- nothing like this\n=======\nx\n+++++++ REPLACE"}), Error, &["...does not match anything in the file.", "The file was reverted to its original state:\n\n<file_content path=\"notes/todo.md\">"]),
        step("write_to_file", json!({"path": "secrets/token.txt", "content": "stolen"}), Error, &["is blocked by the .clineignore file settings"]),
        step("new_rule", json!({"path": ".clinerules/demo-style.md", "content": "## Brief overview\n- Keep demos short.\n"}), Success, &["The content was successfully saved to .clinerules/demo-style.md."]),
        step("new_rule", json!({"path": "demo-style.md", "content": "x"}), Error, &["new_rule only creates Cline rule files inside the .clinerules/ directory"]),
        step("apply_patch", json!({"input": "*** Begin Patch\n*** Update File: notes/todo.md\n@@\n-- celebrate\n+- celebrate twice\n*** Add File: notes/done.md\n+- edit tools\n*** End Patch"}), Success, &["Successfully applied patch to the following files:", "<final_file_content path=\"notes/done.md\">\n- edit tools\n"]),
        step("apply_patch", json!({"input": "*** Begin Patch\n*** Update File: notes/todo.md\n@@\n-- no such line\n+x\n*** End Patch"}), Error, &["notes/todo.md: chunk 1 of 1 did not match", "No file was changed."]),
        // The conversational tools, answered by the scripted host.
        step("ask_followup_question", json!({"question": "Which file first?", "options": "[\"README.md\", \"Cargo.toml\"]"}), Success, &["<answer>\nREADME.md\n</answer>"]),
        step("ask_followup_question", json!({"question": "Which?", "options": "[\"only one\"]"}), Error, &["Provide a JSON array of 2-5 strings"]),
        step("act_mode_respond", json!({"response": "Reading the README next."}), Success, &["[Message displayed. Now proceed with your next tool call"]),
        step("plan_mode_respond", json!({"response": "The plan"}), Error, &["The plan_mode_respond tool is only available in PLAN MODE. You are currently in ACT MODE."]),
        step("focus_chain", json!({}), Error, &["focus_chain is not a tool to call"]),
        step("use_skill", json!({"skill_name": "release-notes"}), Success, &["# Skill \"release-notes\" is now active\n\nList the commits since the last tag"]),
        step("use_skill", json!({"skill_name": "changelog"}), Success, &["Error: Skill \"changelog\" not found. Available skills: release-notes"]),
        step("new_task", json!({"context": "Continue with the release notes."}), Success, &["The user has created a new task with the provided context."]),
        step("condense", json!({"context": "We read the README and loaded a skill."}), Success, &["The user has accepted the condensed conversation summary you generated."]),
        step("summarize_task", json!({"context": "1. Primary Request: a demo"}), Error, &["This host does not support summarize_task: it offers no 'task.summarize' service."]),
        step("report_bug", json!({"title": "Demo bug", "what_happened": "Nothing", "steps_to_reproduce": "Run the demo", "api_request_output": "none", "additional_context": "none"}), Success, &["The user accepted the creation of the Github issue."]),
        step("generate_explanation", json!({"title": "Last commit", "from_ref": "HEAD~1"}), Error, &["This host does not support generate_explanation: it offers no 'task.explain' service."]),
        step("web_fetch", json!({"url": format!("http://{site}/docs"), "prompt": "What does the guide say?"}), Success, &["Prompt: What does the guide say?", "# Getting started\n\nRun **cargo xtask demo**."]),
        step("web_fetch", json!({"url": "http://169.254.169.254/latest/meta-data", "prompt": "p"}), Success, &["Error fetching web content: 169.254.169.254 is a link-local address, which web requests may not reach"]),
        step("web_search", json!({"query": "toolshed plugins", "allowed_domains": "[\"docs.rs\"]"}), Success, &["Search completed (1 results found):\n\n1. Toolshed on docs.rs\n   https://docs.rs/toolshed\n\n"]),
        step("web_search", json!({"query": "x", "allowed_domains": "[\"a.com\"]", "blocked_domains": "[\"b.com\"]"}), Error, &["Cannot specify both allowed_domains and blocked_domains"]),
        // The browser: a headless Chromium on the demo site, a screenshot after every action.
        step("browser_action", json!({"action": "click", "coordinate": "200,140"}), Error, &["Browser is not launched."]),
        step("browser_action", json!({"action": "launch", "url": format!("http://{site}/app")}), Success, &["The browser action has been executed.", "Console logs:\n(No new logs)"]),
        step("browser_action", json!({"action": "click", "coordinate": "200,140"}), Success, &["Console logs:\nthe demo button was clicked"]),
        step("browser_action", json!({"action": "close"}), Success, &["The browser has been closed. You may now proceed to using other tools."]),
        // MCP, through the host's hub (see the MCP section of the README), against a real server.
        step("use_mcp_tool", json!({"server_name": mcp, "tool_name": "echo", "arguments": "{\"message\": \"hi from the demo\"}"}), Success, &[&format!("[use_mcp_tool for '{mcp}'] Result:\nEcho: hi from the demo")]),
        // Resource links read as nothing in Cline, so only the server's text is shown.
        step("use_mcp_tool", json!({"server_name": mcp, "tool_name": "get-resource-links", "arguments": "{\"count\": 2}"}), Success, &["Here are 2 resource links to resources available in this server:"]),
        // An `isError` result: Cline's text, a tool error for the host.
        step("use_mcp_tool", json!({"server_name": mcp, "tool_name": "get-sum", "arguments": "{\"a\": \"two\", \"b\": 1}"}), Error, &[&format!("[use_mcp_tool for '{mcp}'] Result:\nError:\n"), "get-sum"]),
        step("use_mcp_tool", json!({"server_name": mcp, "tool_name": "echo", "arguments": "{message: oops"}), Error, &[&format!("Invalid JSON argument used with {mcp} for echo.")]),
        step("access_mcp_resource", json!({"server_name": mcp, "uri": mcp_server::DOCUMENT}), Success, &[&format!("[access_mcp_resource for '{mcp}'] Result:\n# ")]),
        // A binary resource reads as Cline reads it: its blob is not text, so `(Empty response)`.
        step("access_mcp_resource", json!({"server_name": mcp, "uri": mcp_server::BLOB}), Success, &["Result:\n(Empty response)"]),
        // A server's error, its code once (a TypeScript server's message already carries the prefix).
        Step {
            absent: vec!["MCP error -32602: MCP error".to_owned()],
            ..step("access_mcp_resource", json!({"server_name": mcp, "uri": "demo://nope"}), Error, &["Error executing access_mcp_resource: MCP error -32602: Resource demo://nope not found"])
        },
        step("load_mcp_documentation", json!({}), Success, &["## Creating an MCP Server", "Connected MCP servers: "]),
        // A subagent (a child task with read-only tools) driven by the scripted model above.
        step("use_subagents", json!({"prompt_1": "Where is the README?"}), Success, &["Subagent results:\nTotal: 1\nSucceeded: 1\nFailed: 0\nTool calls: 2", "[1] COMPLETED - Where is the README?\nRelevant file paths\nREADME.md"]),
        step("attempt_completion", json!({"result": "The demo ran every tool."}), Success, &["[attempt_completion] Result: Done"]),
    ];

    // The scripted model reads images and may drive a browser (browser_action is offered then).
    let task = runtime.task(TaskContext::new(&ws).with_images(true).with_browser(true));
    let executor = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let mut failures = Vec::new();
    let mut exercised = BTreeSet::new();
    let mut calls = 0;
    for (i, step) in script.into_iter().enumerate() {
        if !loaded.contains(step.tool) {
            failures.push(format!("step {}: tool {} is not loaded", i + 1, step.tool));
            continue;
        }
        calls += 1;
        exercised.insert(step.tool.to_owned());
        println!("> {} {}", step.tool, step.input);
        let result = executor.block_on(task.execute(ToolUse::new(format!("call-{}", i + 1), step.tool, step.input)));
        println!("{}\n", shown(&result));
        let text = result.to_model_text();
        if result.status != step.status {
            failures.push(format!(
                "step {}: {} ended {:?}, expected {:?}",
                i + 1,
                step.tool,
                result.status,
                step.status
            ));
        }
        for expect in &step.expect {
            if !text.contains(expect.as_str()) {
                failures.push(format!("step {}: {} result lacks {expect:?}", i + 1, step.tool));
            }
        }
        for absent in &step.absent {
            if text.contains(absent.as_str()) {
                failures.push(format!("step {}: {} result has {absent:?}", i + 1, step.tool));
            }
        }
    }
    for tool in loaded.difference(&exercised) {
        failures.push(format!("tool {tool} is loaded but the demo never calls it; add it to the script"));
    }

    println!(
        "Summary: {calls} calls, {} tools exercised ({}), {} failed checks.",
        exercised.len(),
        exercised.iter().cloned().collect::<Vec<_>>().join(", "),
        failures.len()
    );
    if !failures.is_empty() {
        for failure in &failures {
            eprintln!("demo: {failure}");
        }
        anyhow::bail!("{} demo checks failed", failures.len());
    }
    Ok(())
}
