//! The command line: global options, the subcommands and their options (clap's derive).

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use toolshed::config::Profile;
use toolshed::Provider;

#[derive(Parser, Debug)]
#[command(name = "toolshed", version, about = "Runs AI coding agents' tools from native plugins.")]
pub struct Cli {
    /// A plugin directory (repeatable); default $TOOLSHED_PLUGINS, else ~/.toolshed/plugins and
    /// <exe>/../lib/toolshed/plugins (with [plugins] dirs of the configuration between).
    #[arg(long = "plugins", global = true, value_name = "DIR")]
    pub plugins: Vec<PathBuf>,
    /// A configuration file, layered over the user's ~/.toolshed/config.toml.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The workspace (primary root); default the current directory.
    #[arg(long, global = true, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// A further workspace root for multi-root workspaces (repeatable).
    #[arg(long = "root", global = true, value_name = "NAME=DIR", value_parser = parse_root)]
    pub roots: Vec<(String, PathBuf)>,
    /// More output on stderr (-v debug, -vv trace).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Lists the loaded tools: name, plugin, version, aliases, capabilities.
    Tools {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Runs one tool call and prints the result exactly as the model would see it.
    Call {
        /// The tool name.
        tool: String,
        /// The input as a JSON object, or `-` to read it from stdin; default `{}`.
        input: Option<String>,
        /// Approve every ask.
        #[arg(long, short = 'y')]
        yes: bool,
        /// The model reads images (read_file returns image blocks).
        #[arg(long)]
        images: bool,
    },
    /// Serves the loaded tools as an MCP server over stdio, or streamable HTTP with --http.
    Serve(ServeArgs),
    /// Prints the loaded tools' schemas: JSON for a provider's `tools` field, or the XML tool-use section of
    /// the system prompt. A Cline model family offers the tools its prompt variant lists, in its order, then
    /// third-party tools by name; any other family offers every tool by name.
    Schema(SchemaArgs),
    /// Installs, lists and removes plugin libraries in the user plugin directory (--plugins DIR, else
    /// $TOOLSHED_PLUGINS, else ~/.toolshed/plugins).
    #[command(subcommand)]
    Plugins(PluginsCommand),
    /// Loads the plugins, then watches the plugin directories and hot-reloads libraries added, changed or
    /// removed, printing one line per event, until Ctrl-C, SIGTERM or the end of standard input.
    Watch,
}

/// `toolshed schema`'s options: the provider, the family, and the few context flags of Cline's prompt tests.
#[derive(clap::Args, Debug)]
pub struct SchemaArgs {
    /// anthropic, openai, openai-responses, gemini or xml.
    #[arg(long)]
    pub provider: Provider,
    /// The model family (Cline's: generic, next-gen, xs, native-next-gen, gpt-5, gpt-5-native, gpt-5-1-native,
    /// gemini3, glm, hermes, devstral, trinity); others fall back to generic specs in name order.
    #[arg(long, default_value = toolshed::GENERIC)]
    pub family: String,
    /// cline (every tool, as Cline offers them) or mcp (what `toolshed serve` offers by default).
    #[arg(long, default_value = "cline", value_name = "PROFILE")]
    pub profile: Profile,
    /// act or plan.
    #[arg(long, default_value = "act", value_parser = ["act", "plan"])]
    pub mode: String,
    /// Offer task_progress (the focus chain), as `[tasks] focus_chain = true` does.
    #[arg(long)]
    pub focus_chain: bool,
    /// Offer the web tools, as `[web] enabled = true` does.
    #[arg(long)]
    pub web_tools: bool,
    /// The model can drive a browser (browser_action is offered, where a plugin declares it).
    #[arg(long)]
    pub browser: bool,
    /// The browser viewport for the specs' texts, WIDTHxHEIGHT.
    #[arg(long, default_value = "900x600", value_parser = parse_viewport, value_name = "WxH")]
    pub viewport: (u32, u32),
}

/// `1280x720` as (1280, 720).
fn parse_viewport(text: &str) -> Result<(u32, u32), String> {
    let parse = |part: &str| part.trim().parse::<u32>().ok();
    match text.split_once('x') {
        Some((width, height)) => match (parse(width), parse(height)) {
            (Some(width), Some(height)) => Ok((width, height)),
            _ => Err(format!("expected WIDTHxHEIGHT, e.g. 1280x720, not '{text}'")),
        },
        None => Err(format!("expected WIDTHxHEIGHT, e.g. 1280x720, not '{text}'")),
    }
}

/// `toolshed plugins`' subcommands.
#[derive(Subcommand, Debug)]
pub enum PluginsCommand {
    /// Checks that a library (or each library in a directory) is a loadable Toolshed plugin, then puts it in
    /// place by a rename; a plugin already installed under the same name is replaced.
    Install {
        /// A plugin library, or a directory whose libraries to install (not recursive).
        path: PathBuf,
        /// Replace a file of the same name that holds a different plugin.
        #[arg(long)]
        force: bool,
    },
    /// Lists the installed libraries: file, plugin, version, tools.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Removes a plugin, by its plugin name or its file name.
    Remove {
        /// The plugin's name (as `list` shows it) or its file name.
        name: String,
    },
}

/// `toolshed serve`'s options (a struct of its own: the subcommand enum stays small).
#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// Serve streamable HTTP on PORT or HOST:PORT (loopback unless --public) instead of stdio.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
    /// A file holding the bearer token HTTP clients must send (required with --http unless
    /// TOOLSHED_SERVE_TOKEN is set): owned by you and readable by nobody else. The token itself is never an
    /// argument, which every process on the machine can read.
    #[arg(long, value_name = "PATH")]
    pub token_file: Option<std::path::PathBuf>,
    /// Refused: a token on the command line is in every process listing. Use --token-file.
    #[arg(long, hide = true, value_name = "TOKEN")]
    pub token: Option<String>,
    /// Allow a non-loopback --http address.
    #[arg(long)]
    pub public: bool,
    /// Approve every ask (when the client cannot be asked through elicitation).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Run this tool without asking (repeatable), as `[approval] tools = { TOOL = "allow" }`.
    #[arg(long = "allow", value_name = "TOOL")]
    pub allow: Vec<String>,
    /// mcp (the default: no Cline agent-loop tools, no XML reminder in errors) or cline (everything, as
    /// Cline offers it); overrides `[serve] profile`.
    #[arg(long, value_name = "PROFILE")]
    pub profile: Option<Profile>,
    /// Offer browser_action (a headless Chromium per session, see `[browser]`) to a client that reads images.
    #[arg(long)]
    pub browser: bool,
}

fn parse_root(text: &str) -> Result<(String, PathBuf), String> {
    let (name, dir) = text.split_once('=').ok_or("expected NAME=DIR")?;
    if name.is_empty() || dir.is_empty() {
        return Err("expected NAME=DIR".to_owned());
    }
    Ok((name.to_owned(), PathBuf::from(dir)))
}
