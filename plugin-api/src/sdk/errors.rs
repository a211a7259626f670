//! serde's errors in words a model (or a plugin author reading a tool result) can act on: serde derives
//! name the Rust type it wanted (`expected struct UseMcpToolArgs`, `untagged enum Value`), and serde_json
//! adds a line and column of JSON text the host built, not the model. One renderer for every place such an
//! error reaches model-visible text, here and in the runtime.

/// What a serde derive names, and what the model reads instead. Longest first, so `tuple struct` wins over
/// `struct`.
const TYPE_WORDS: [(&str, &str); 11] = [
    ("internally tagged enum ", "one of the accepted shapes"),
    ("adjacently tagged enum ", "one of the accepted shapes"),
    ("untagged enum ", "one of the accepted shapes"),
    ("newtype struct ", "a value"),
    ("tuple struct ", "a JSON array"),
    ("unit struct ", "null"),
    ("struct variant ", "a JSON object"),
    ("tuple variant ", "a JSON array"),
    ("newtype variant ", "a value"),
    ("struct ", "a JSON object"),
    ("enum ", "one of the accepted values"),
];

/// A serde_json error without Rust type names, and without the position when the error is about the data
/// (the position is in JSON the host serialised, which the model never saw); syntax errors keep it.
pub fn json_error(error: &serde_json::Error) -> String {
    let mut text = error.to_string();
    if error.is_data() && error.line() > 0 {
        let suffix = format!(" at line {} column {}", error.line(), error.column());
        if let Some(stripped) = text.strip_suffix(&suffix) {
            text = stripped.to_owned();
        }
    }
    without_type_names(&text)
}

/// `text` with every serde type phrase (`struct FooArgs`, `enum Mode`, `variant Outcome::Success`) put in
/// JSON's words. The spans where serde echoes the input back are left alone: a string as serde quotes it
/// (`"…"`, with `\"` and `\\` escaped inside, so an escaped quote does not end it) and a name in backticks
/// (`` unknown variant `…` ``, `` unknown field `…` ``). Only a capitalised name counts as a type name, so
/// prose that happens to say "struct" is kept.
pub fn without_type_names(text: &str) -> String {
    const UNTAGGED: &str = "did not match any variant of untagged enum ";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let (mut quoted, mut ticked) = (false, false);
    while let Some(c) = rest.chars().next() {
        let echoed = quoted || ticked;
        if !echoed && out.chars().next_back().is_none_or(|p| !p.is_alphanumeric() && p != '_') {
            if let Some(after) = rest.strip_prefix(UNTAGGED) {
                out.push_str("did not match any of the accepted shapes");
                rest = &after[type_name_len(after)..];
                continue;
            }
            if let Some((name_len, words)) = type_phrase(rest) {
                out.push_str(words);
                rest = &rest[name_len..];
                continue;
            }
        }
        match c {
            // Inside a quoted string a backslash escapes the next character, which is copied with it.
            '\\' if quoted => {
                out.push(c);
                rest = &rest[1..];
                if let Some(next) = rest.chars().next() {
                    out.push(next);
                    rest = &rest[next.len_utf8()..];
                }
                continue;
            }
            '"' if !ticked => quoted = !quoted,
            '`' if !quoted => ticked = !ticked,
            _ => {}
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// The length of a serde type phrase at the start of `text` (keyword and type name), and its replacement.
fn type_phrase(text: &str) -> Option<(usize, &'static str)> {
    TYPE_WORDS.iter().find_map(|(word, words)| {
        let name = text.strip_prefix(word)?;
        let len = type_name_len(name);
        (len > 0).then_some((word.len() + len, *words))
    })
}

/// The length of a Rust type name (`FooArgs`, `Outcome::Success`, `Wrapper<T>`) at the start of `text`, 0
/// when it does not start with one.
fn type_name_len(text: &str) -> usize {
    if !text.starts_with(|c: char| c.is_ascii_uppercase()) {
        return 0;
    }
    text.find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | ':' | '<' | '>'))).unwrap_or(text.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[allow(dead_code)]
    #[derive(Debug, Deserialize)]
    struct FooRequest {
        server: String,
        mode: Mode,
    }

    #[allow(dead_code)]
    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum Mode {
        Fast,
        Slow,
    }

    #[allow(dead_code)]
    #[derive(Debug, Deserialize)]
    #[serde(untagged)]
    enum Either {
        Text(String),
        Pair(u8, u8),
    }

    fn error<T: for<'de> Deserialize<'de> + std::fmt::Debug>(json: &str) -> String {
        json_error(&serde_json::from_str::<T>(json).unwrap_err())
    }

    #[test]
    fn type_names_and_data_positions_go() {
        assert_eq!(error::<FooRequest>("\"x\""), "invalid type: string \"x\", expected a JSON object");
        assert_eq!(error::<FooRequest>("{\"mode\": \"fast\"}"), "missing field `server`");
        assert_eq!(
            error::<FooRequest>("{\"server\": \"s\", \"mode\": \"warp\"}"),
            "unknown variant `warp`, expected `fast` or `slow`"
        );
        let from_value = serde_json::from_value::<Mode>(serde_json::json!(3)).unwrap_err();
        assert_eq!(json_error(&from_value), "invalid type: integer `3`, expected string or map");
        assert_eq!(error::<Either>("true"), "data did not match any of the accepted shapes");
        // A syntax error keeps its position: it points into the text that was sent.
        assert_eq!(error::<FooRequest>("{\"server\": "), "EOF while parsing a value at line 1 column 11");
    }

    #[test]
    fn quoted_text_and_prose_are_kept() {
        assert_eq!(
            without_type_names("invalid type: string \"struct Foo\", expected struct Bar"),
            "invalid type: string \"struct Foo\", expected a JSON object"
        );
        assert_eq!(without_type_names("the struct keyword, enum values"), "the struct keyword, enum values");
        assert_eq!(without_type_names("expected tuple struct Pair<T>"), "expected a JSON array");
        assert_eq!(
            without_type_names("invalid type: integer `3`, expected enum Mode"),
            "invalid type: integer `3`, expected one of the accepted values"
        );
        assert_eq!(
            without_type_names("unknown variant of enum Outcome::Success"),
            "unknown variant of one of the accepted values"
        );
    }

    #[test]
    fn the_input_serde_echoes_back_is_kept_whole() {
        // The model's own variant or field name, in backticks.
        assert_eq!(
            error::<FooRequest>("{\"server\": \"s\", \"mode\": \"struct Foo\"}"),
            "unknown variant `struct Foo`, expected `fast` or `slow`"
        );
        assert_eq!(
            without_type_names("unknown field `enum Mode`, expected struct Bar"),
            "unknown field `enum Mode`, expected a JSON object"
        );
        // A quoted string holding an escaped quote stays one string.
        assert_eq!(
            error::<FooRequest>(r#""say \"struct Foo\" twice""#),
            "invalid type: string \"say \\\"struct Foo\\\" twice\", expected a JSON object"
        );
        assert_eq!(
            error::<FooRequest>(r#""ends in a backslash \\ then struct Foo""#),
            "invalid type: string \"ends in a backslash \\\\ then struct Foo\", expected a JSON object"
        );
        // The untagged phrase is rewritten only where serde puts it, not inside the model's string.
        assert_eq!(
            without_type_names("invalid type: string \"accepted shapes; Kept\", expected struct Bar"),
            "invalid type: string \"accepted shapes; Kept\", expected a JSON object"
        );
        assert_eq!(
            without_type_names("data did not match any variant of untagged enum Either at the top"),
            "data did not match any of the accepted shapes at the top"
        );
    }
}
