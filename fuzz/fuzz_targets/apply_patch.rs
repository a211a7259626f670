//! libFuzzer entry for the `apply_patch` target; the invariants live in `fuzz-targets`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolshed_fuzz_targets::apply_patch(data));
