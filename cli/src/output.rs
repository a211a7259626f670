//! Our own output: stdout and stderr lines that never panic, and errors told as one line.

/// `println!` for our own output, whose reader may go away early (`toolshed tools | head -1`): a write to
/// the closed pipe is `EPIPE` (SIGPIPE is ignored), and the output simply ends there, quietly, where
/// `println!` would panic. Other write errors are returned.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        match writeln!(std::io::stdout().lock(), $($arg)*) {
            Err(e) if !$crate::output::is_closed(&e) => Err(e),
            _ => Ok(()),
        }
    }};
}

/// `eprintln!` that cannot panic: with standard error closed, there is nowhere left to say anything.
macro_rules! err {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

/// Whether a write failed because its reader is gone.
pub fn is_closed(error: &std::io::Error) -> bool {
    error.kind() == std::io::ErrorKind::BrokenPipe
}

/// The error and its causes, each after a colon (anyhow's `{:#}`), down to the first error whose text
/// already ends with its cause's: the library's errors say their cause in their own text and also return
/// it as their `source()`, for programs that walk the chain, and the line says it once.
pub fn describe(error: &anyhow::Error) -> String {
    let mut text = error.to_string();
    for cause in error.chain().skip(1) {
        let cause = cause.to_string();
        if text.ends_with(&cause) {
            break;
        }
        text.push_str(": ");
        text.push_str(&cause);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::describe;

    /// An error that names its cause in its text and returns it as its source, as the library's do.
    #[derive(Debug, thiserror::Error)]
    #[error("cannot start: {0}")]
    struct Naming(#[source] std::io::Error);

    #[test]
    fn context_and_causes_are_joined_and_a_named_cause_is_said_once() {
        let io = || std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let context = anyhow::Error::new(io()).context("--cwd /nowhere");
        assert_eq!(describe(&context), "--cwd /nowhere: no such file");
        let named = anyhow::Error::new(Naming(io())).context("serving");
        assert_eq!(describe(&named), "serving: cannot start: no such file");
    }
}
