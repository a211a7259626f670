//! The hidden child modes: `__isolated-job` runs a plugin's job (a document parse, say) and `__plugin-host` a
//! whole out-of-process plugin, each in a child process started from this binary (`toolshed::isolate`), and
//! nothing of the CLI runs there.

/// Becomes the child when the first argument asks for it (never returns then); otherwise tells the library
/// that its children run this binary.
pub fn enter_if_asked() {
    if std::env::args_os().nth(1).is_some_and(|arg| arg == toolshed::isolate::CHILD_ARG) {
        toolshed::isolate::child_main();
    }
    if std::env::args_os().nth(1).is_some_and(|arg| arg == toolshed::isolate::PLUGIN_HOST_ARG) {
        toolshed::isolate::plugin_host_main();
    }
    if let Ok(exe) = std::env::current_exe() {
        toolshed::isolate::set_executable(exe);
    }
}
