//! libFuzzer entry for the `html_to_markdown` target; the invariants live in `fuzz-targets`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolshed_fuzz_targets::html_to_markdown(data));
