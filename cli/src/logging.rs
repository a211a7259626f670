//! Log lines on standard error (`-v`, `RUST_LOG`, `TOOLSHED_LOG`): every message and field escaped, colour only
//! on a terminal.

use std::io::IsTerminal as _;
use toolshed::shown::escape_line;
use tracing_subscriber::field::MakeExt as _;
use tracing_subscriber::EnvFilter;

/// Starts the log subscriber. The filter is `TOOLSHED_LOG`, else `RUST_LOG` (both in `EnvFilter`'s syntax,
/// `debug` or `toolshed=trace,warn`), else `-v` (debug) or `-vv` (trace), else warnings.
pub fn init(verbose: u8) {
    let level = match verbose {
        0 => "warn",
        1 => "debug",
        _ => "trace",
    };
    // Log lines carry text from hooks, plugins, MCP servers and paths, so each message and field value is escaped
    // as it is formatted (tracing's own escaping leaves CR, LF and bidi characters, and none of a `%` value's):
    // what such text holds can neither forge a line nor redraw the terminal. The formatter's own colour codes
    // (the level) are written around the escaped text, and only when standard error is a terminal.
    let fields = tracing_subscriber::fmt::format::debug_fn(|writer, field, value| {
        let value = format!("{value:?}");
        match field.name() {
            "message" => write!(writer, "{}", escape_line(&value)),
            name => write!(writer, "{name}={}", escape_line(&value)),
        }
    })
    .delimited(" ");
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        // With standard error closed its own report of the failed write would panic in `eprintln!`.
        .log_internal_errors(false)
        // `NO_COLOR` (no-color.org) turns colour off on a terminal too, as tracing-subscriber's default would.
        .with_ansi(std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty()))
        .fmt_fields(fields)
        .with_env_filter(filter(level))
        .with_target(false)
        .without_time()
        .init();
}

/// The first of `TOOLSHED_LOG` and `RUST_LOG` that is set and not empty, else `level`. A filter that does not parse is said
/// once and `level` used, rather than silently logging nothing.
fn filter(level: &str) -> EnvFilter {
    for var in ["TOOLSHED_LOG", "RUST_LOG"] {
        let Some(value) = std::env::var_os(var).filter(|value| !value.is_empty()) else {
            continue;
        };
        let value = value.to_string_lossy();
        match EnvFilter::builder().parse(&*value) {
            Ok(filter) => return filter,
            Err(e) => {
                err!("toolshed: {var}={}: {}; logging at {level}", escape_line(&value), escape_line(&e.to_string()));
                break;
            }
        }
    }
    EnvFilter::new(level)
}
