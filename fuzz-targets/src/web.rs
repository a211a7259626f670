//! web_fetch's direct-mode conversion (issue 22): a page's bytes in, read as UTF-8 lossily, through the
//! HTML→Markdown conversion (html5ever, the depth flattening, htmd) and, as a JSON body, the pretty-printer.
//! The invariants: no panic, no hang, no stack overflow (deep nesting is flattened before htmd walks it),
//! and both outputs stay within their cap whatever the input.

/// Small, so the fuzzer reaches the cut with inputs of a few kilobytes.
const CAP: usize = 4096;

/// The most the pretty-printer may pass its cap by: one line's newline and indentation at the deepest level.
const JSON_SLACK: usize = 2 * web_fetch::MAX_JSON_DEPTH + 8;

/// The `html_to_markdown` target.
pub fn html_to_markdown(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (markdown, truncated) = web_fetch::html_to_markdown(&text, CAP);
    assert!(markdown.len() <= CAP, "{} bytes of Markdown, over the cap of {CAP}", markdown.len());
    assert!(!truncated || markdown.len() + 3 >= CAP, "cut {} bytes short of the cap", CAP - markdown.len());
    if let Some(pretty) = web_fetch::pretty_json(&text, CAP) {
        assert!(pretty.len() <= CAP + JSON_SLACK, "{} bytes of JSON, over the cap of {CAP}", pretty.len());
    }
}
