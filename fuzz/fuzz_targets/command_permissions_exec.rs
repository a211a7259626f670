//! libFuzzer entry for the differential `command_permissions_exec` target; the invariants live in
//! `fuzz-targets`.
#![no_main]

libfuzzer_sys::fuzz_target!(
    init: {
        // `CommandPermissions::check` parses on its own thread because brush-parser 0.3 panics on some
        // malformed input (an `unwrap` on a redirect's fd number that overflows, a here-document); the join
        // turns that into a `parse_error` denial. libFuzzer's panic hook aborts on any panic, so panics on that
        // thread are let through to the join, as in production; every other panic still aborts.
        let abort = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current().name() != Some("command-permissions") {
                abort(info);
            }
        }));
    },
    |data: &[u8]| toolshed_fuzz_targets::command_permissions_exec(data)
);
