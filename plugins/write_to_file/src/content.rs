//! What Cline does to a model's text before it is written: code fences around `content` come off, and for
//! models other than Claude, HTML entities are unescaped (except in XML files) and U+FFFD is removed, in
//! `content` and in `diff` alike.

/// Cline's fence stripping for `write_to_file` content: a first line starting with three backticks goes
/// (a language tag may follow them), and so does a last line when the content ends with three backticks.
/// Each removal also trims the content.
pub fn strip_fences(content: &str) -> String {
    let mut text = content.to_owned();
    if text.starts_with("```") {
        text = text.split('\n').skip(1).collect::<Vec<_>>().join("\n");
        text = crate::diff::js_trim(&text).to_owned();
    }
    if text.ends_with("```") {
        let lines: Vec<&str> = text.split('\n').collect();
        text = lines[..lines.len() - 1].join("\n");
        text = crate::diff::js_trim(&text).to_owned();
    }
    text
}

/// Whether the task's model needs Cline's fixes: every family but Claude's.
pub fn needs_model_fixes(model_family: &str) -> bool {
    !model_family.to_ascii_lowercase().contains("claude")
}

/// Cline's `applyModelContentFixes`: entities unescaped (not in `.xml` files, where they are syntax) and
/// replacement characters removed.
pub fn model_fixes(text: &str, path: &str) -> String {
    let fixed = if path.to_ascii_lowercase().ends_with(".xml") {
        text.to_owned()
    } else {
        // Cline's order: `&amp;` last but one, so `&amp;lt;` becomes `&lt;`, not `<`.
        text.replace("&gt;", ">")
            .replace("&lt;", "<")
            .replace("&quot;", "\"")
            .replace("&amp;", "&")
            .replace("&apos;", "'")
    };
    fixed.replace('\u{FFFD}', "")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn fences() {
        assert_eq!(strip_fences("```rust\nfn main() {}\n```"), "fn main() {}");
        assert_eq!(strip_fences("```\n  a\n```\n"), "a");
        assert_eq!(strip_fences("plain\ntext\n"), "plain\ntext\n");
        assert_eq!(strip_fences("```"), "");
    }

    #[test]
    fn fixes() {
        assert_eq!(model_fixes("a &lt;b&gt; &amp;lt; &quot;&apos;\u{FFFD}", "x.rs"), "a <b> &lt; \"'");
        assert_eq!(model_fixes("&lt;tag/&gt;\u{FFFD}", "DATA.XML"), "&lt;tag/&gt;");
        assert!(needs_model_fixes("generic") && needs_model_fixes("gpt-5") && !needs_model_fixes("claude"));
    }
}
