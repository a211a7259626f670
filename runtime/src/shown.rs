//! Text shown to a person, made safe: control characters, escape sequences, carriage returns and
//! bidirectional or invisible formatting characters are shown visibly escaped, never sent to the terminal.
//!
//! A command, a path or a plugin's message comes from a model or a repository. Printed raw, `ESC[2K` and
//! `\r` redraw the line, so the person approves `ls -la` while something else runs; a right-to-left override
//! (U+202E) shows `rm -rf ~/gnp.txt` reversed; a zero-width or tag character hides text. Every place that
//! shows such text to a person (approval prompts on the terminal and in MCP elicitations, `say` events,
//! questions, `watch` lines, errors and warnings) passes it through [`escape`] or [`escape_line`].
//!
//! The escaped form is Rust's (`\u{1b}`, `\r`, `\0`, `\u{202e}`), so what is shown names the exact
//! character. Tabs stay; line feeds stay in [`escape`] (a multi-line command is shown on several
//! lines, all of it visible) and are escaped by [`escape_line`].

use std::borrow::Cow;

/// `text` with every dangerous character escaped; line feeds and tabs kept.
pub fn escape(text: &str) -> Cow<'_, str> {
    escape_with(text, false)
}

/// [`escape`] of an owned text, which is handed back as it is when nothing needs escaping (the common case
/// for streamed output: no copy).
pub fn escape_owned(text: String) -> String {
    match escape(&text) {
        Cow::Borrowed(_) => text,
        Cow::Owned(shown) => shown,
    }
}

/// `text` for a one-line display: as [`escape`], and line feeds escaped too.
pub fn escape_line(text: &str) -> Cow<'_, str> {
    escape_with(text, true)
}

fn escape_with(text: &str, one_line: bool) -> Cow<'_, str> {
    let unsafe_char = |c: char| dangerous(c) || (one_line && c == '\n');
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if unsafe_char(c) {
            match c {
                '\r' => shown.push_str("\\r"),
                '\n' => shown.push_str("\\n"),
                '\0' => shown.push_str("\\0"),
                _ => shown.extend(c.escape_unicode()),
            }
        } else {
            shown.push(c);
        }
    }
    Cow::Owned(shown)
}

/// Characters a terminal or a text renderer acts on instead of showing, or shows as nothing: every C0 and C1
/// control but tab and line feed, DEL, the format characters (Unicode category Cf) that reorder or hide text,
/// the separators and spaces other than U+0020 (two paths that differ by one must not look alike), and the
/// blank or invisible letters and marks (fillers, variation selectors, the combining grapheme joiner).
fn dangerous(c: char) -> bool {
    match c {
        '\t' | '\n' => false,
        // C0 controls (ESC, CR, BS, BEL, …), DEL, and C1 controls (CSI U+009B is an escape of its own).
        '\0'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
        // No-break space, soft hyphen, combining grapheme joiner.
        '\u{a0}' | '\u{ad}' | '\u{34f}' => true,
        // Arabic and Syriac format marks, Hangul fillers, Khmer inherent vowels, Mongolian selectors.
        '\u{600}'..='\u{605}' | '\u{61c}' | '\u{6dd}' | '\u{70f}' | '\u{890}' | '\u{891}' | '\u{8e2}' => true,
        '\u{115f}' | '\u{1160}' | '\u{1680}' | '\u{17b4}' | '\u{17b5}' | '\u{180b}'..='\u{180f}' => true,
        // The typographic spaces, zero-width space, joiners, LRM/RLM.
        '\u{2000}'..='\u{200f}' => true,
        // Line and paragraph separators, bidi embeddings and overrides (LRE…RLO), narrow no-break space, the
        // word joiner and invisible operators, bidi isolates (LRI…PDI) and the deprecated format characters.
        '\u{2028}'..='\u{202f}' | '\u{205f}'..='\u{2064}' | '\u{2066}'..='\u{206f}' => true,
        // Braille blank, ideographic space, Hangul filler, variation selectors, byte-order mark, halfwidth
        // filler, interlinear annotations, the object replacement character.
        '\u{2800}' | '\u{3000}' | '\u{3164}' | '\u{fe00}'..='\u{fe0f}' | '\u{feff}' | '\u{ffa0}' => true,
        '\u{fff9}'..='\u{fffc}' => true,
        // Format characters outside the BMP, the tag characters that can hide whole words, and the
        // supplementary variation selectors.
        '\u{110bd}' | '\u{110cd}' | '\u{13430}'..='\u{1343f}' | '\u{1bca0}'..='\u{1bca3}' => true,
        '\u{1d173}'..='\u{1d17a}' | '\u{e0001}' | '\u{e0020}'..='\u{e007f}' | '\u{e0100}'..='\u{e01ef}' => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        let text = "Cline wants to execute this command: ls -la\n\tcargo test 🦀 é ü 日本";
        assert!(matches!(escape(text), Cow::Borrowed(t) if t == text));
    }

    #[test]
    fn terminal_controls_are_visible() {
        assert_eq!(escape("rm -rf ~\u{1b}[2K\rls -la"), "rm -rf ~\\u{1b}[2K\\rls -la");
        assert_eq!(escape("a\u{9b}2Kb\u{7}\u{8}\0"), "a\\u{9b}2Kb\\u{7}\\u{8}\\0");
        assert_eq!(escape_line("a\nb\r\n"), "a\\nb\\r\\n");
        assert_eq!(escape("a\nb"), "a\nb");
    }

    #[test]
    fn bidi_and_invisible_characters_are_visible() {
        assert_eq!(escape("cat \u{202e}txt.hs"), "cat \\u{202e}txt.hs");
        for c in [
            '\u{2066}',
            '\u{2069}',
            '\u{200f}',
            '\u{200b}',
            '\u{200d}',
            '\u{feff}',
            '\u{e0041}',
            '\u{2028}',
            '\u{61c}',
            '\u{a0}',
            '\u{3164}',
            '\u{fe0f}',
            '\u{34f}',
            '\u{890}',
            '\u{2800}',
            '\u{fffc}',
            '\u{e0100}',
        ] {
            let text = format!("x{c}y");
            assert_eq!(escape(&text), format!("x{}y", c.escape_unicode()), "{:?}", c);
            assert_ne!(escape(&text), text);
        }
    }

    #[test]
    fn escaping_is_idempotent() {
        let once = escape("\u{1b}]0;title\u{7}\r\u{202e}").into_owned();
        assert_eq!(escape(&once), once);
    }
}
