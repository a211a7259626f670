//! libFuzzer entry for the `replace_in_file` target; the invariants live in `fuzz-targets`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolshed_fuzz_targets::replace_in_file(data));
