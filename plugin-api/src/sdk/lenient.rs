//! Serde helpers that read model input the lenient way Cline does: models send `"10"` as often as `10`.

use serde::{Deserialize, Deserializer};

/// Deserialises an optional integer as Cline reads one: every parameter reaches its handlers as a string (a
/// native call's number is `JSON.stringify`-ed first), read with `Number.parseInt(value, 10)`, and a `NaN`
/// is absent. So `"2abc"` is 2, `" 3"` is 3, `"0x10"` is 0, `"1e3"` is 1, `2.9` is 2, `"-1"` is -1, and
/// `""`, `"abc"`, `true`, `null` are absent. See [`parse_int`].
pub fn lenient_int<'de, D: Deserializer<'de>>(de: D) -> Result<Option<i64>, D::Error> {
    let value = serde_json::Value::deserialize(de)?;
    Ok(match value {
        serde_json::Value::String(s) => parse_int(&s),
        serde_json::Value::Number(n) => n.as_i64().or_else(|| n.as_f64().and_then(stringified_int)),
        // `null` is `"null"` in Cline (NaN), booleans, arrays and objects stringify to no leading digits.
        _ => None,
    })
}

/// `parseInt(JSON.stringify(f), 10)`: JavaScript writes a number of at least 1e21, or below 1e-6, in exponent
/// form (`1e+21`, `1.5e-7`), of which parseInt takes the mantissa's leading digit; any other is its integer
/// part.
fn stringified_int(f: f64) -> Option<i64> {
    let magnitude = f.abs();
    if !f.is_finite() {
        return None;
    }
    if magnitude >= 1e21 || (magnitude != 0.0 && magnitude < 1e-6) {
        let lead = format!("{magnitude:e}").bytes().next().filter(u8::is_ascii_digit).map(|d| i64::from(d - b'0'))?;
        return Some(if f < 0.0 { -lead } else { lead });
    }
    // `as` saturates, as `parse_int` does past `i64`.
    Some(f.trunc() as i64)
}

/// JavaScript's `Number.parseInt(text, 10)` where its answer is a number, `None` where it is `NaN`: leading
/// white space (JavaScript's: Unicode spaces, line terminators, the byte-order mark, not U+0085) skipped, an
/// optional sign, then the longest run of ASCII digits; no digits is `NaN`. A value past `i64` saturates
/// (JavaScript would answer an imprecise float).
pub fn parse_int(text: &str) -> Option<i64> {
    let rest = text.trim_start_matches(|c: char| (c.is_whitespace() && c != '\u{85}') || c == '\u{FEFF}');
    let (negative, rest) = match rest.as_bytes().first() {
        Some(b'-') => (true, &rest[1..]),
        Some(b'+') => (false, &rest[1..]),
        _ => (false, rest),
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit);
    let mut value: Option<i64> = None;
    for digit in digits {
        let digit = i64::from(digit - b'0');
        let so_far = value.unwrap_or(0);
        value = Some(so_far.saturating_mul(10).saturating_add(digit));
    }
    value.map(|v| if negative { v.saturating_neg() } else { v })
}

/// Deserialises an optional boolean the lenient way Cline does: `true`, or a string equal to `"true"`
/// ignoring case; everything else is `false`.
pub fn lenient_bool<'de, D: Deserializer<'de>>(de: D) -> Result<bool, D::Error> {
    let value = serde_json::Value::deserialize(de)?;
    Ok(match value {
        serde_json::Value::Bool(b) => b,
        serde_json::Value::String(s) => s.trim().eq_ignore_ascii_case("true"),
        _ => false,
    })
}

/// Deserialises a parameter that should be a string but may arrive as any JSON value (Cline stringifies
/// non-string native arguments).
pub fn lenient_string<'de, D: Deserializer<'de>>(de: D) -> Result<Option<String>, D::Error> {
    let value = serde_json::Value::deserialize(de)?;
    Ok(match value {
        serde_json::Value::Null => None,
        serde_json::Value::String(s) => Some(s),
        other => Some(other.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Number.parseInt(text, 10)` as node answers it (`None`: `NaN`).
    #[test]
    fn parse_int_is_javascripts() {
        let table: &[(&str, Option<i64>)] = &[
            ("2", Some(2)),
            ("2abc", Some(2)),
            (" 3", Some(3)),
            ("\t\n 3 ", Some(3)),
            ("\u{a0}\u{2003}\u{feff}7", Some(7)),
            ("0x10", Some(0)),
            ("-1", Some(-1)),
            ("+5", Some(5)),
            ("-0", Some(0)),
            ("1e3", Some(1)),
            ("1.9", Some(1)),
            (".5", None),
            ("", None),
            ("   ", None),
            ("abc", None),
            ("-", None),
            ("+-1", None),
            ("- 1", None),
            ("NaN", None),
            ("Infinity", None),
            ("null", None),
            ("true", None),
            ("[1]", None),
            ("\u{0663}", None),
            // U+0085 is white space to Rust, not to JavaScript.
            ("\u{85}1", None),
            ("007", Some(7)),
            ("1_000", Some(1)),
            ("0b1", Some(0)),
            ("\u{2028}5", Some(5)),
            ("\u{3000}5", Some(5)),
            // Not white space to either (U+180E left Unicode's White_Space in 6.3).
            ("\u{180e}5", None),
            ("\u{200b}5", None),
            ("99999999999999999999", Some(i64::MAX)),
            ("-99999999999999999999", Some(-i64::MAX)),
        ];
        for &(text, expected) in table {
            assert_eq!(parse_int(text), expected, "parseInt({text:?})");
        }
    }

    #[derive(serde::Deserialize)]
    struct Args {
        #[serde(default, deserialize_with = "lenient_int")]
        n: Option<i64>,
    }

    /// A native call's non-string values are `JSON.stringify`-ed, then parsed.
    #[test]
    fn json_values_read_as_their_stringified_text() {
        let read = |json: &str| serde_json::from_str::<Args>(json).map(|a| a.n).ok().flatten();
        assert_eq!(read(r#"{"n": 2}"#), Some(2));
        assert_eq!(read(r#"{"n": 2.9}"#), Some(2));
        assert_eq!(read(r#"{"n": -3.5}"#), Some(-3));
        assert_eq!(read(r#"{"n": 1e3}"#), Some(1000));
        assert_eq!(read(r#"{"n": "1e3"}"#), Some(1));
        assert_eq!(read(r#"{"n": "2abc"}"#), Some(2));
        assert_eq!(read(r#"{"n": 1e21}"#), Some(1));
        assert_eq!(read(r#"{"n": -2.5e22}"#), Some(-2));
        assert_eq!(read(r#"{"n": 1.5e-7}"#), Some(1));
        assert_eq!(read(r#"{"n": 0.000001}"#), Some(0));
        assert_eq!(read(r#"{"n": 123456789012345680000}"#), Some(i64::MAX));
        assert_eq!(read(r#"{"n": 18446744073709551615}"#), Some(i64::MAX));
        assert_eq!(read(r#"{"n": -0.0}"#), Some(0));
        assert_eq!(read(r#"{"n": null}"#), None);
        assert_eq!(read(r#"{"n": true}"#), None);
        assert_eq!(read(r#"{"n": [1]}"#), None);
        assert_eq!(read(r#"{}"#), None);
    }
}
