//! libFuzzer entry for the `xml_tool_use` target; the invariants live in `fuzz-targets`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolshed_fuzz_targets::xml_tool_use(data));
