//! libFuzzer entry for the `tool_input` target; the invariants live in `fuzz-targets`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolshed_fuzz_targets::tool_input(data));
