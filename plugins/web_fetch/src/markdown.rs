//! What the direct backend makes of a page's body, bounded however hostile the page: HTML to Markdown
//! (htmd on html5ever) over a tree whose depth is capped first, JSON pretty-printed by a printer that stops
//! at the output cap, and the cut to that cap on a character boundary.
//!
//! htmd walks the tree recursively, about a kilobyte of stack per level, so a page of a few thousand nested
//! tags overflowed a worker thread's stack and took the host down. html5ever nests without limit (unclosed
//! `<b>`, `<div>`, `<ul><li>` …, and its formatting-element reconstruction re-opens every unclosed inline
//! tag in each new block), and htmd offers no depth option, so the tree is flattened below [`MAX_DEPTH`]
//! between parsing and walking, as browsers do (Blink stops nesting at 512): the deeper descendants become
//! children of the last node kept, in document order, so their text is still read. The conversion also runs
//! in a child process (see the plugin's `job`), so what remains unbounded in either crate ends the child,
//! not the host.

use std::rc::Rc;

/// The deepest node htmd walks; deeper ones are hoisted to this depth. Real pages stay far below it (a
/// hundred levels is already unusual), and at about a kilobyte of stack per level htmd stays well inside a
/// 2 MiB thread stack.
pub const MAX_DEPTH: usize = 512;

/// JSON nested deeper than this is shown as it came, not pretty-printed: every level indents each line it
/// holds by two more spaces, so the printed size grows with depth times length. Matches serde_json's own
/// recursion limit, which does not apply here: the validity check reads into `IgnoredAny`, and serde_json
/// skips ignored values with an iterative loop that has no depth limit, so a 20,000-deep `[[[…]]]` passed
/// and printed to 824 MB.
pub const MAX_JSON_DEPTH: usize = 128;

/// The page as Markdown, trimmed, cut to at most `max` bytes, and whether it was cut. The head and scripts
/// are not content; what a reader sees is.
pub fn html_to_markdown(html: &str, max: usize) -> (String, bool) {
    let converter =
        htmd::HtmlToMarkdown::builder().skip_tags(vec!["head", "script", "style", "noscript", "template"]).build();
    // htmd fails only on I/O errors, which a string cannot give; fall back to the text all the same.
    let Ok(tree) = converter.html_to_tree(html) else {
        let (text, cut) = cap(html.trim(), max);
        return (text.to_owned(), cut);
    };
    flatten_below(&tree, MAX_DEPTH);
    let markdown = converter.tree_to_markdown(&tree);
    let (text, cut) = cap(markdown.trim(), max);
    (text.to_owned(), cut)
}

/// Makes every node deeper than `max_depth` a child of its ancestor at that depth, in document order,
/// with no children of its own: the tree keeps its nodes and text but is never deeper than `max_depth + 1`.
/// Iterative, like everything here that sees the tree's depth.
fn flatten_below(root: &Rc<htmd::Node>, max_depth: usize) {
    let mut stack = vec![(Rc::clone(root), 0usize)];
    while let Some((node, depth)) = stack.pop() {
        if depth < max_depth {
            stack.extend(node.children.borrow().iter().map(|child| (Rc::clone(child), depth + 1)));
            continue;
        }
        let mut hoisted = Vec::new();
        let mut pending: Vec<Rc<htmd::Node>> = std::mem::take(&mut *node.children.borrow_mut());
        pending.reverse();
        while let Some(descendant) = pending.pop() {
            let children = std::mem::take(&mut *descendant.children.borrow_mut());
            pending.extend(children.into_iter().rev());
            descendant.parent.set(Some(Rc::downgrade(&node)));
            hoisted.push(descendant);
        }
        *node.children.borrow_mut() = hoisted;
    }
}

/// Pretty-prints JSON text with two-space indents, keeping its key order; `None` if it is not JSON or is
/// nested deeper than [`MAX_JSON_DEPTH`]. Printing stops once the output passes `max` bytes (by less than
/// one line), so what is built is bounded by the cap, not by the input.
pub fn pretty_json(text: &str, max: usize) -> Option<String> {
    serde_json::from_str::<serde::de::IgnoredAny>(text).ok()?;
    if json_depth(text) > MAX_JSON_DEPTH {
        return None;
    }
    let mut out = String::with_capacity(text.len().saturating_mul(2).min(max.saturating_add(1)));
    let mut depth = 0usize;
    let (mut in_string, mut escaped) = (false, false);
    let mut chars = text.chars().peekable();
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        out.extend(std::iter::repeat_n("  ", depth));
    };
    while let Some(c) = chars.next() {
        if out.len() > max {
            // The rest would be cut anyway.
            break;
        }
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '{' | '[' => {
                out.push(c);
                while chars.peek().is_some_and(|n| n.is_whitespace()) {
                    chars.next();
                }
                if matches!(chars.peek(), Some('}' | ']')) {
                    if let Some(close) = chars.next() {
                        out.push(close);
                    }
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(c);
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            c if c.is_whitespace() => {}
            c => out.push(c),
        }
    }
    Some(out)
}

/// How deep a valid JSON text nests.
fn json_depth(text: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for c in text.bytes() {
        match (in_string, escaped, c) {
            (true, true, _) => escaped = false,
            (true, false, b'\\') => escaped = true,
            (true, false, b'"') => in_string = false,
            (true, ..) => {}
            (false, _, b'"') => in_string = true,
            (false, _, b'{' | b'[') => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            (false, _, b'}' | b']') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// The text cut to at most `max` bytes on a character boundary, and whether it was cut.
pub fn cap(text: &str, max: usize) -> (&str, bool) {
    if text.len() <= max {
        return (text, false);
    }
    (&text[..floor_char_boundary(text, max)], true)
}

/// The largest character boundary of `text` at or below `index`.
fn floor_char_boundary(text: &str, index: usize) -> usize {
    let mut end = index.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    end
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// Far more than any test prints.
    const BIG: usize = 1 << 30;

    #[test]
    fn json_is_pretty_printed_in_its_own_order() {
        let text = r#"{"b":1,"a":[1, {"x":"y, z: {"}],"e":{},"f":[ ]}"#;
        assert_eq!(
            pretty_json(text, BIG).unwrap(),
            "{\n  \"b\": 1,\n  \"a\": [\n    1,\n    {\n      \"x\": \"y, z: {\"\n    }\n  ],\n  \"e\": {},\n  \"f\": []\n}"
        );
        assert_eq!(pretty_json(r#""a\"b""#, BIG).unwrap(), r#""a\"b""#);
        assert_eq!(pretty_json("{nope", BIG), None);
    }

    #[test]
    fn deep_json_is_left_as_it_came() {
        let nested = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        // 20,000 levels: valid JSON that serde_json's skipping accepts; printed, it was 824 MB.
        assert_eq!(pretty_json(&nested(20_000), BIG), None);
        assert_eq!(pretty_json(&nested(MAX_JSON_DEPTH + 1), BIG), None);
        // Brackets inside strings are not nesting.
        let quoted = format!("[\"{}\"]", "[".repeat(1000));
        assert_eq!(pretty_json(&quoted, BIG).unwrap(), format!("[\n  \"{}\"\n]", "[".repeat(1000)));
        let deepest = pretty_json(&nested(MAX_JSON_DEPTH), BIG).unwrap();
        assert!(deepest.len() < 40_000, "{}", deepest.len());
    }

    #[test]
    fn printing_stops_at_the_cap() {
        // 127 levels, then 200,000 small items: each prints 255 bytes, 50 MB in all without the cap.
        let depth = MAX_JSON_DEPTH - 1;
        let items = vec!["0"; 200_000].join(",");
        let text = format!("{}{items}{}", "[".repeat(depth), "]".repeat(depth));
        let printed = pretty_json(&text, 1000).unwrap();
        assert!(printed.len() > 1000 && printed.len() < 1000 + 2 * depth + 2, "{}", printed.len());
        assert!(printed.starts_with("[\n  [\n    [\n"));
    }

    #[test]
    fn content_is_capped_on_a_character_boundary() {
        let text = "é".repeat(10);
        let (cut, truncated) = cap(&text, 5);
        assert_eq!((cut, truncated), ("éé", true));
        assert_eq!(cap("short", 400), ("short", false));
    }

    /// Nesting `depth` levels of `open`, some text at the bottom, closed again when `close` is given.
    fn nested(open: &str, close: Option<&str>, depth: usize) -> String {
        let mut html = open.repeat(depth);
        html.push_str("deep text");
        if let Some(close) = close {
            html.push_str(&close.repeat(depth));
        }
        html
    }

    /// Converts on a thread with a 2 MiB stack, a worker thread's default, so a regression overflows here.
    fn converted(html: String) -> (String, bool) {
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || html_to_markdown(&html, 400 * 1024))
            .unwrap()
            .join()
            .unwrap()
    }

    #[test]
    fn deep_pages_convert_in_a_small_stack() {
        let shapes: [(&str, Option<&str>); 16] = [
            ("<b>", Some("</b>")),
            ("<b>", None),
            ("<div>", Some("</div>")),
            ("<div>", None),
            ("<ul><li>", Some("</li></ul>")),
            ("<ol><li>", None),
            ("<blockquote>", Some("</blockquote>")),
            ("<table><tr><td>", Some("</td></tr></table>")),
            ("<span>", None),
            ("<a href=\"x\">", None),
            ("<i>", Some("</i>")),
            ("<pre>", None),
            ("<svg><g>", None),
            ("<font color=red>", None),
            ("<div><b><ul><li><i><blockquote>", None),
            ("<p><em id=1><strong>", None),
        ];
        for (open, close) in shapes {
            // 2,000 nested `<b>` overflowed a worker thread before; html5ever's parse takes time quadratic in
            // the depth of its open elements (40 s in release for 120,000), so the test stays near 4,000.
            let (markdown, truncated) = converted(nested(open, close, 4000 / open.matches('<').count()));
            // Indented shapes (lists, quotes) fill the cap before the bottom is reached.
            assert!(
                markdown.contains("deep text") || truncated,
                "{open}: {}",
                &markdown[markdown.len().saturating_sub(200)..]
            );
        }
    }

    #[test]
    fn flattening_keeps_the_text_in_order() {
        let html = format!("{}<p>one</p><p>two <b>three</b></p>", "<div>".repeat(MAX_DEPTH + 50));
        let (markdown, truncated) = converted(html);
        assert!(!truncated);
        let words: Vec<&str> = markdown.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
        assert_eq!(words, ["one", "two", "three"]);
        // A page within the depth converts exactly as before.
        let shallow = format!("{}<p>one</p>{}", "<div>".repeat(100), "</div>".repeat(100));
        assert_eq!(converted(shallow).0, "one");
    }

    #[test]
    fn html_output_is_cut_to_the_cap() {
        let html = "<p>word</p>".repeat(100_000);
        let (markdown, truncated) = html_to_markdown(&html, 1000);
        assert!(truncated);
        assert_eq!(markdown.len(), 1000);
    }
}
