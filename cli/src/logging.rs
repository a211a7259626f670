//! Log lines on standard error (`-v`, `TOOLSHED_LOG`), each escaped as it is written.

use toolshed::shown::escape_line;

/// Starts the log subscriber: warnings by default, `-v` debug, `-vv` trace; `TOOLSHED_LOG` overrides.
pub fn init(verbose: u8) {
    let filter = match verbose {
        0 => "warn",
        1 => "debug",
        _ => "trace",
    };
    // Log lines carry text from hooks, plugins, MCP servers and paths; each is escaped as it is written
    // (tracing's own escaping leaves CR, LF and bidi characters), and so carries no colour codes either.
    tracing_subscriber::fmt()
        .with_writer(|| ShownStderr)
        // With standard error closed its own report of the failed write would panic in `eprintln!`.
        .log_internal_errors(false)
        .with_ansi(false)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("TOOLSHED_LOG").unwrap_or_else(|_| filter.into()))
        .with_target(false)
        .without_time()
        .init();
}

/// Standard error for log lines: each written line goes through `shown::escape_line`, so a message cannot
/// forge a second line or redraw the terminal.
struct ShownStderr;

impl std::io::Write for ShownStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        let (body, end) = match text.strip_suffix('\n') {
            Some(body) => (body, "\n"),
            None => (&*text, ""),
        };
        let mut err = std::io::stderr().lock();
        err.write_all(escape_line(body).as_bytes())?;
        err.write_all(end.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}
