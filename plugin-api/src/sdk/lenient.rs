//! Serde helpers that read model input the lenient way Cline does: models send `"10"` as often as `10`.

use serde::{Deserialize, Deserializer};

/// Deserialises an optional integer the lenient way Cline does: numbers, numeric strings, and anything
/// else (non-numeric text, NaN, null) as absent. Models send `"10"` as often as `10`.
pub fn lenient_int<'de, D: Deserializer<'de>>(de: D) -> Result<Option<i64>, D::Error> {
    let value = serde_json::Value::deserialize(de)?;
    Ok(match value {
        serde_json::Value::Number(n) => n.as_i64().or_else(|| n.as_f64().filter(|f| f.is_finite()).map(|f| f as i64)),
        serde_json::Value::String(s) => {
            let t = s.trim();
            t.parse::<i64>().ok().or_else(|| t.parse::<f64>().ok().filter(|f| f.is_finite()).map(|f| f as i64))
        }
        _ => None,
    })
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
