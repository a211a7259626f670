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
/// JSON's words. Quoted spans (the model's own strings, as serde quotes them) are left alone, and only a
/// capitalised name counts as a type name, so prose that happens to say "struct" is kept.
pub fn without_type_names(text: &str) -> String {
    let text = text.replace("did not match any variant of untagged enum", "did not match any of the accepted shapes;");
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    let mut quoted = false;
    while let Some(c) = rest.chars().next() {
        if c == '"' {
            quoted = !quoted;
        }
        let at_word = !quoted && out.chars().next_back().is_none_or(|p| !p.is_alphanumeric() && p != '_');
        if at_word && let Some((name_len, words)) = type_phrase(rest) {
            out.push_str(words);
            rest = &rest[name_len..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    // The untagged case above leaves its own type name behind it; drop the dangling `; Name`.
    match out.find("accepted shapes; ") {
        Some(at) => {
            let after = &out[at + "accepted shapes; ".len()..];
            let name_len = type_name_len(after);
            if name_len > 0 {
                let tail = after[name_len..].to_owned();
                out.truncate(at + "accepted shapes".len());
                out.push_str(&tail);
            }
            out
        }
        None => out,
    }
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
}
