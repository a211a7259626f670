//! Texts shared by the conversational tools.

use crate::protocol::{Block, ServiceError, ServiceErrorKind};
use crate::services::Service;

/// The tool error for a host that does not offer the service `S` the tool needs (or another failure of it).
pub fn service_error<S: Service>(tool: &str, error: &ServiceError) -> crate::Outcome {
    match error.kind {
        ServiceErrorKind::UnknownService => super::result::error(format!(
            "This host does not support {tool}: it offers no '{}' service. Continue the task without this tool.",
            S::NAME
        )),
        _ => super::result::error(format!("Error executing {tool}: {}", error.message)),
    }
}

/// Cline's `toolResult(text, images)`: the text alone, or the text followed by the images.
pub fn with_images(text: String, images: &[crate::services::AttachedImage]) -> crate::Outcome {
    let mut blocks = vec![Block::Text { text }];
    blocks.extend(images.iter().map(|i| Block::Image { media_type: i.media_type.clone(), data: i.data.clone() }));
    crate::result::blocks(blocks)
}

/// Parses an `options` parameter the lenient way Cline's `parsePartialArrayString` does for display:
/// a JSON array of strings, else nothing.
pub fn parse_options(raw: Option<&str>) -> Vec<String> {
    raw.and_then(|raw| serde_json::from_str::<Vec<serde_json::Value>>(raw.trim()).ok())
        .map(|items| {
            items
                .into_iter()
                .map(|v| match v {
                    serde_json::Value::String(s) => s,
                    other => other.to_string(),
                })
                .collect()
        })
        .unwrap_or_default()
}
