//! Cline's notebook sanitiser: code cells lose their outputs, and the notebook is written back as one-space
//! JSON, with objects in their key order. The pretty-print is held to the text cap as it is written.

use super::limits::{CappedText, DocumentLimits};
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

/// Cline's `sanitizeNotebookForLLM(text, true)`: every code cell's `outputs` becomes `[]`, and the notebook is
/// written back as `JSON.stringify(nb, null, 1)`. Text that is not a notebook (not JSON, or no `cells` array) is
/// returned as it is (up to the text cap, like any text).
pub(crate) fn notebook_text(bytes: &[u8], limits: &DocumentLimits) -> String {
    let as_it_is = |text: &str| {
        let mut capped = CappedText::new(limits.max_document_text_bytes);
        capped.push_str(text);
        capped.finish()
    };
    let text = String::from_utf8_lossy(bytes);
    // iconv-lite drops a UTF-8 byte order mark when it decodes.
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let Ok(Json::Object(mut notebook)) = serde_json::from_str::<Json>(text) else {
        return as_it_is(text);
    };
    let Some((_, Json::Array(cells))) = notebook.iter_mut().find(|(key, _)| key == "cells") else {
        return as_it_is(text);
    };
    for cell in cells.iter_mut() {
        let Json::Object(fields) = cell else { continue };
        let is_code = fields.iter().any(|(key, value)| key == "cell_type" && *value == Json::String("code".into()));
        if !is_code {
            continue;
        }
        // `{...cell, outputs: []}`: the key keeps its place when it exists, and is added last otherwise.
        match fields.iter_mut().find(|(key, _)| key == "outputs") {
            Some((_, outputs)) => *outputs = Json::Array(Vec::new()),
            None => fields.push(("outputs".to_owned(), Json::Array(Vec::new()))),
        }
    }
    // The pretty-print grows with the notebook's depth times its size: it writes into capped text, which
    // stops the serializer at the cap instead of letting it build more.
    let mut out = CappedText::new(limits.max_document_text_bytes);
    let mut serializer =
        serde_json::Serializer::with_formatter(&mut out, serde_json::ser::PrettyFormatter::with_indent(b" "));
    match Json::Object(notebook).serialize(&mut serializer) {
        Ok(()) => out.finish(),
        Err(_) if out.is_cut() => out.finish(),
        Err(_) => as_it_is(text),
    }
}

/// A JSON value that keeps its objects' key order, as JavaScript objects do (serde_json's own map sorts keys
/// unless a workspace-wide feature is switched on).
#[derive(Debug, Clone, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct JsonVisitor;
        impl<'de> Visitor<'de> for JsonVisitor {
            type Value = Json;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E>(self) -> Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
                Ok(Json::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
                Ok(Json::Number(v.into()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
                Ok(Json::Number(v.into()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Json, E> {
                // JavaScript has one number type: `1.0` prints as `1`.
                if v.fract() == 0.0 && v.abs() < 1e15 {
                    return Ok(Json::Number((v as i64).into()));
                }
                Ok(serde_json::Number::from_f64(v).map_or(Json::Null, Json::Number))
            }
            fn visit_str<E>(self, v: &str) -> Result<Json, E> {
                Ok(Json::String(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> Result<Json, E> {
                Ok(Json::String(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Json::Array(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
                let mut fields: Vec<(String, Json)> = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, Json>()? {
                    // `JSON.parse` keeps the last value of a repeated key, in the first one's place.
                    match fields.iter_mut().find(|(k, _)| *k == key) {
                        Some((_, old)) => *old = value,
                        None => fields.push((key, value)),
                    }
                }
                Ok(Json::Object(fields))
            }
        }
        deserializer.deserialize_any(JsonVisitor)
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => serializer.serialize_unit(),
            Json::Bool(b) => serializer.serialize_bool(*b),
            Json::Number(n) => n.serialize(serializer),
            Json::String(s) => serializer.serialize_str(s),
            Json::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Json::Object(fields) => {
                let mut map = serializer.serialize_map(Some(fields.len()))?;
                for (key, value) in fields {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn notebook(bytes: &[u8]) -> String {
        notebook_text(bytes, &DocumentLimits::default())
    }

    #[test]
    fn notebooks_lose_code_outputs_and_keep_key_order() {
        let nb = br#"{"cells":[{"cell_type":"code","execution_count":1.0,"outputs":[{"text":"hi"}],"source":["print('hi')"]},{"cell_type":"markdown","source":["T"]},{"source":[],"cell_type":"code"}],"nbformat":4}"#;
        assert_eq!(
            notebook(nb),
            "{\n \"cells\": [\n  {\n   \"cell_type\": \"code\",\n   \"execution_count\": 1,\n   \"outputs\": [],\n   \"source\": [\n    \"print('hi')\"\n   ]\n  },\n  {\n   \"cell_type\": \"markdown\",\n   \"source\": [\n    \"T\"\n   ]\n  },\n  {\n   \"source\": [],\n   \"cell_type\": \"code\",\n   \"outputs\": []\n  }\n ],\n \"nbformat\": 4\n}"
        );
        assert_eq!(notebook(b"not json {"), "not json {");
        assert_eq!(notebook(br#"{"a": 1}"#), r#"{"a": 1}"#);
    }

    #[test]
    fn a_deep_notebook_pretty_prints_no_further_than_the_cap() {
        // 100 levels of one-element arrays in a cell: each level indents every line below it once more,
        // so the pretty-print is quadratic in the depth.
        let depth = 100;
        let mut nb = String::from(r#"{"cells":[{"cell_type":"markdown","source":"#);
        nb.push_str(&"[".repeat(depth));
        nb.push_str(&"\"xxxxxxxxxx\",".repeat(1000));
        nb.push('0');
        nb.push_str(&"]".repeat(depth));
        nb.push_str("}]}");
        let unbounded = notebook(nb.as_bytes());
        assert!(unbounded.len() > 100 * 1000, "{}", unbounded.len());
        let limits = DocumentLimits { max_document_text_bytes: 10_000, ..DocumentLimits::default() };
        let capped = notebook_text(nb.as_bytes(), &limits);
        assert!(capped.len() < 10_200, "{}", capped.len());
        assert!(capped.ends_with("max_document_text_bytes) ...]"), "{}", &capped[capped.len() - 200..]);
    }

    #[test]
    fn nesting_past_the_parser_depth_is_text_as_it_is() {
        let nb = format!(r#"{{"cells":[{}]}}"#, "[".repeat(10_000));
        assert_eq!(notebook(nb.as_bytes()), nb);
    }
}
