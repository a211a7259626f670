//! A tolerant parser for JSON that is still arriving: every prefix of a valid document gives the best value
//! so far (open strings, arrays and objects closed, a number cut mid-way kept as far as it reads, a cut
//! escape dropped, a key without its value left out), and a complete document gives exactly what
//! `serde_json` gives. Text that no continuation could make valid is an error naming its byte offset.

use serde_json::{Map, Number, Value};

/// Text that is not a prefix of any JSON document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid JSON at byte {offset}: {message}")]
pub struct PartialJsonError {
    /// Where the text stops being a JSON prefix.
    pub offset: usize,
    /// What was expected there.
    pub message: String,
}

/// Parses a prefix of a JSON document. Empty or blank text is `Value::Null` (nothing yet).
///
/// ```
/// use serde_json::json;
/// use toolshed::stream::parse_partial;
///
/// assert_eq!(parse_partial(r#"{"paths": ["a", "b"#).unwrap(), json!({"paths": ["a", "b"]}));
/// assert_eq!(parse_partial(r#"{"n": 12.5e"#).unwrap(), json!({"n": 12.5}));
/// assert_eq!(parse_partial(r#"{"text": "tab\"#).unwrap(), json!({"text": "tab"}));
/// assert_eq!(parse_partial(r#"{"pa"#).unwrap(), json!({}));
/// assert!(parse_partial(r#"{"a" 1"#).is_err());
/// ```
pub fn parse_partial(text: &str) -> Result<Value, PartialJsonError> {
    let mut parser = Parser { text: text.as_bytes(), src: text, at: 0, depth: 0 };
    let value = match parser.value()? {
        Step::Done(value) => value,
        Step::Eof(value) => return Ok(value.unwrap_or(Value::Null)),
    };
    parser.skip_ws();
    if parser.at < parser.text.len() {
        return Err(parser.error("trailing characters after the value"));
    }
    Ok(value)
}

/// Accumulates streamed argument text and parses what has arrived so far.
#[derive(Debug, Clone, Default)]
pub struct PartialJson {
    text: String,
}

impl PartialJson {
    /// An empty buffer.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a chunk and returns the best value so far.
    pub fn push(&mut self, chunk: &str) -> Result<Value, PartialJsonError> {
        self.text.push_str(chunk);
        parse_partial(&self.text)
    }

    /// The text received so far.
    pub fn text(&self) -> &str {
        &self.text
    }
}

/// A value that ended, or the input that ran out inside one (with what it holds so far).
enum Step {
    Done(Value),
    Eof(Option<Value>),
}

/// How deeply arrays and objects may nest: serde_json's limit (it reads 127 levels), so whatever serde_json
/// reads whole is read the same. The
/// parser recurses once per level, and a model's `[[[[…` must be an error, not a stack overflow that aborts
/// the host (found writing the `partial_json` fuzz target: fuzz/regressions/partial_json/review-deep-nesting).
const MAX_DEPTH: usize = 128;

struct Parser<'a> {
    text: &'a [u8],
    src: &'a str,
    at: usize,
    /// Arrays and objects open around the current position.
    depth: usize,
}

impl Parser<'_> {
    fn error(&self, message: &str) -> PartialJsonError {
        PartialJsonError { offset: self.at, message: message.to_owned() }
    }

    fn skip_ws(&mut self) {
        while self.at < self.text.len() && matches!(self.text[self.at], b' ' | b'\t' | b'\n' | b'\r') {
            self.at += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn value(&mut self) -> Result<Step, PartialJsonError> {
        self.skip_ws();
        match self.peek() {
            None => Ok(Step::Eof(None)),
            Some(b'{' | b'[') if self.depth >= MAX_DEPTH => Err(self.error("nested too deeply")),
            Some(open @ (b'{' | b'[')) => {
                self.depth += 1;
                let step = if open == b'{' { self.object() } else { self.array() };
                self.depth -= 1;
                step
            }
            Some(b'"') => Ok(match self.string()? {
                (text, true) => Step::Done(Value::String(text)),
                (text, false) => Step::Eof(Some(Value::String(text))),
            }),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'n') => self.literal("null", Value::Null),
            Some(_) => Err(self.error("expected a value")),
        }
    }

    fn literal(&mut self, word: &str, value: Value) -> Result<Step, PartialJsonError> {
        let rest = &self.text[self.at..];
        let n = rest.len().min(word.len());
        if rest[..n] != word.as_bytes()[..n] {
            return Err(self.error(&format!("expected `{word}`")));
        }
        self.at += n;
        // A cut literal can only become this one.
        Ok(if n == word.len() { Step::Done(value) } else { Step::Eof(Some(value)) })
    }

    fn number(&mut self) -> Result<Step, PartialJsonError> {
        let start = self.at;
        while self.at < self.text.len() && matches!(self.text[self.at], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
        {
            self.at += 1;
        }
        let slice = &self.src[start..self.at];
        if self.at < self.text.len() {
            // Something follows: the number is complete and must be valid; serde_json reads it, so a complete
            // document gives exactly its numbers.
            return match serde_json::from_str::<Number>(slice) {
                Ok(number) => Ok(Step::Done(Value::Number(number))),
                Err(_) => Err(PartialJsonError { offset: start, message: format!("invalid number `{slice}`") }),
            };
        }
        // Cut at the end: keep the longest prefix that reads as a number.
        if !is_number_prefix(slice) {
            return Err(PartialJsonError { offset: start, message: format!("invalid number `{slice}`") });
        }
        let readable = slice.trim_end_matches(['.', 'e', 'E', '+', '-']);
        Ok(Step::Eof(serde_json::from_str::<Number>(readable).ok().map(Value::Number)))
    }

    /// A string starting at the opening quote: its text and whether it closed.
    fn string(&mut self) -> Result<(String, bool), PartialJsonError> {
        self.at += 1;
        let mut out = String::new();
        loop {
            let run_start = self.at;
            while self.at < self.text.len() && !matches!(self.text[self.at], b'"' | b'\\') {
                self.at += 1;
            }
            out.push_str(&self.src[run_start..self.at]);
            match self.peek() {
                None => return Ok((out, false)),
                Some(b'"') => {
                    self.at += 1;
                    return Ok((out, true));
                }
                Some(_) => {
                    let Some(escaped) = self.text.get(self.at + 1).copied() else {
                        self.at = self.text.len();
                        return Ok((out, false));
                    };
                    let simple = match escaped {
                        b'"' => Some('"'),
                        b'\\' => Some('\\'),
                        b'/' => Some('/'),
                        b'b' => Some('\u{8}'),
                        b'f' => Some('\u{c}'),
                        b'n' => Some('\n'),
                        b'r' => Some('\r'),
                        b't' => Some('\t'),
                        b'u' => None,
                        _ => return Err(self.error("invalid escape")),
                    };
                    if let Some(c) = simple {
                        out.push(c);
                        self.at += 2;
                        continue;
                    }
                    match self.unicode_escape()? {
                        Some(c) => out.push(c),
                        None => return Ok((out, false)),
                    }
                }
            }
        }
    }

    /// A `\uXXXX` escape (and its low surrogate); `None` when the input ends inside it.
    fn unicode_escape(&mut self) -> Result<Option<char>, PartialJsonError> {
        let first = match self.hex4(self.at + 2)? {
            Some(unit) => unit,
            None => return Ok(self.cut()),
        };
        if (0xDC00..0xE000).contains(&first) {
            return Err(self.error("lone trailing surrogate in \\u escape"));
        }
        if !(0xD800..0xDC00).contains(&first) {
            self.at += 6;
            return Ok(char::from_u32(u32::from(first)));
        }
        let low_at = self.at + 6;
        match (self.text.get(low_at), self.text.get(low_at + 1)) {
            (None, _) | (Some(b'\\'), None) => return Ok(self.cut()),
            (Some(b'\\'), Some(b'u')) => {}
            _ => return Err(self.error("lone leading surrogate in \\u escape")),
        }
        let second = match self.hex4(low_at + 2)? {
            Some(unit) => unit,
            None => return Ok(self.cut()),
        };
        if !(0xDC00..0xE000).contains(&second) {
            return Err(self.error("lone leading surrogate in \\u escape"));
        }
        self.at += 12;
        let code = 0x10000 + ((u32::from(first) - 0xD800) << 10) + (u32::from(second) - 0xDC00);
        Ok(char::from_u32(code))
    }

    fn cut(&mut self) -> Option<char> {
        self.at = self.text.len();
        None
    }

    /// Four hex digits at `at`; `None` when the input ends first.
    fn hex4(&self, at: usize) -> Result<Option<u16>, PartialJsonError> {
        let mut unit: u16 = 0;
        for i in 0..4 {
            let Some(&b) = self.text.get(at + i) else {
                return Ok(None);
            };
            let digit = (b as char).to_digit(16).ok_or_else(|| PartialJsonError {
                offset: at + i,
                message: "invalid hex digit in \\u escape".to_owned(),
            })?;
            unit = unit * 16 + digit as u16;
        }
        Ok(Some(unit))
    }

    fn object(&mut self) -> Result<Step, PartialJsonError> {
        self.at += 1;
        let mut map = Map::new();
        let mut first = true;
        loop {
            self.skip_ws();
            match self.peek() {
                None => return Ok(Step::Eof(Some(Value::Object(map)))),
                Some(b'}') if first => {
                    self.at += 1;
                    return Ok(Step::Done(Value::Object(map)));
                }
                Some(b'"') => {}
                Some(_) => return Err(self.error("expected a string key")),
            }
            first = false;
            let (key, closed) = self.string()?;
            if !closed {
                return Ok(Step::Eof(Some(Value::Object(map))));
            }
            self.skip_ws();
            match self.peek() {
                None => return Ok(Step::Eof(Some(Value::Object(map)))),
                Some(b':') => self.at += 1,
                Some(_) => return Err(self.error("expected `:` after the key")),
            }
            match self.value()? {
                Step::Done(value) => {
                    map.insert(key, value);
                }
                Step::Eof(value) => {
                    if let Some(value) = value {
                        map.insert(key, value);
                    }
                    return Ok(Step::Eof(Some(Value::Object(map))));
                }
            }
            self.skip_ws();
            match self.peek() {
                None => return Ok(Step::Eof(Some(Value::Object(map)))),
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return Ok(Step::Done(Value::Object(map)));
                }
                Some(_) => return Err(self.error("expected `,` or `}`")),
            }
        }
    }

    fn array(&mut self) -> Result<Step, PartialJsonError> {
        self.at += 1;
        let mut items = Vec::new();
        let mut first = true;
        loop {
            self.skip_ws();
            if first && self.peek() == Some(b']') {
                self.at += 1;
                return Ok(Step::Done(Value::Array(items)));
            }
            first = false;
            match self.value()? {
                Step::Done(value) => items.push(value),
                Step::Eof(value) => {
                    items.extend(value);
                    return Ok(Step::Eof(Some(Value::Array(items))));
                }
            }
            self.skip_ws();
            match self.peek() {
                None => return Ok(Step::Eof(Some(Value::Array(items)))),
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    return Ok(Step::Done(Value::Array(items)));
                }
                Some(_) => return Err(self.error("expected `,` or `]`")),
            }
        }
    }
}

/// Whether `s` can still become a JSON number: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, read
/// as a prefix.
fn is_number_prefix(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    match b.get(i) {
        None => return true,
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            while matches!(b.get(i), Some(b'0'..=b'9')) {
                i += 1;
            }
        }
        Some(_) => return false,
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        while matches!(b.get(i), Some(b'0'..=b'9')) {
            i += 1;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        while matches!(b.get(i), Some(b'0'..=b'9')) {
            i += 1;
        }
    }
    i == b.len()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn cut_values_give_the_best_so_far() {
        let cases = [
            ("", json!(null)),
            ("  ", json!(null)),
            ("{", json!({})),
            (r#"{"path""#, json!({})),
            (r#"{"path":"#, json!({})),
            (r#"{"path": "src/a"#, json!({"path": "src/a"})),
            (r#"{"a": ["x", "y"#, json!({"a": ["x", "y"]})),
            (r#"{"a": ["x", "#, json!({"a": ["x"]})),
            (r#"{"a": {"b": {"c": 1"#, json!({"a": {"b": {"c": 1}}})),
            (r#"{"n": -"#, json!({})),
            (r#"{"n": 1"#, json!({"n": 1})),
            (r#"{"n": 1."#, json!({"n": 1})),
            (r#"{"n": 1.5e+"#, json!({"n": 1.5})),
            (r#"{"s": "a\"#, json!({"s": "a"})),
            (r#"{"s": "a\u00"#, json!({"s": "a"})),
            (r#"{"s": "a\u00e9"#, json!({"s": "aé"})),
            (r#"{"s": "\ud83d"#, json!({"s": ""})),
            (r#"{"s": "\ud83d\ude00"#, json!({"s": "😀"})),
            (r#"{"b": tr"#, json!({"b": true})),
            (r#"{"b": nu"#, json!({"b": null})),
            (r#"{"b": false}"#, json!({"b": false})),
            (r#"{"x": 1, "#, json!({"x": 1})),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_partial(text).unwrap(), expected, "{text}");
        }
    }

    #[test]
    fn impossible_prefixes_are_errors() {
        for text in [r#"{"a" 1"#, r#"{"a": 1 2"#, "{,", r#"{"a": tx"#, r#"{"a": 01"#, "[1,]", "{} x", r#""\x""#, "-a"] {
            assert!(parse_partial(text).is_err(), "{text}");
        }
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        // Found writing the partial_json fuzz target: 50,000 open brackets overflowed the stack.
        let deep = format!("{{\"a\":{}", "[".repeat(50_000));
        assert_eq!(parse_partial(&deep).unwrap_err().message, "nested too deeply");
        let nested = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        assert_eq!(parse_partial(&nested(100)).unwrap(), serde_json::from_str::<Value>(&nested(100)).unwrap());
        assert!(parse_partial(&nested(MAX_DEPTH)).is_ok());
        assert!(parse_partial(&nested(MAX_DEPTH + 1)).is_err());
    }

    #[test]
    fn streaming_buffer() {
        let mut stream = PartialJson::new();
        assert_eq!(stream.push(r#"{"command": "ec"#).unwrap(), json!({"command": "ec"}));
        assert_eq!(stream.push(r#"ho hi", "requires_approval": fa"#).unwrap()["requires_approval"], json!(false));
        assert_eq!(stream.push("lse}").unwrap(), json!({"command": "echo hi", "requires_approval": false}));
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
            "\\PC*".prop_map(Value::String),
            "[a\"\\\\\n\t\u{1}é😀<>/]*".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map("[a-z_\"\\\\]{0,8}", inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn arb_object() -> impl Strategy<Value = Value> {
        prop::collection::btree_map("[a-z_]{1,10}", arb_json(), 0..6)
            .prop_map(|m| Value::Object(m.into_iter().collect()))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn every_prefix_parses_and_the_whole_parses_exactly(value in arb_object(), pretty in any::<bool>()) {
            let text = if pretty {
                serde_json::to_string_pretty(&value).unwrap()
            } else {
                serde_json::to_string(&value).unwrap()
            };
            for (cut, _) in text.char_indices() {
                let prefix = &text[..cut];
                let parsed = parse_partial(prefix);
                prop_assert!(parsed.is_ok(), "prefix {:?} failed: {:?}", prefix, parsed);
            }
            let whole = parse_partial(&text).unwrap();
            // serde_json's own reading is the reference (its float parsing need not round-trip every f64).
            prop_assert_eq!(whole, serde_json::from_str::<Value>(&text).unwrap());
        }
    }
}
