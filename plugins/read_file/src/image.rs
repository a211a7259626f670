//! Images for models that accept them: Cline's `extractImageContent`, with its size limit and messages.

use base64::Engine as _;
use toolshed_plugin_api::{result, Block};

/// The largest width or height Cline sends, in pixels.
const MAX_SIDE: usize = 7500;
/// The largest image read: Cline's 20 MB limit for a file attached to a message (20 × 1000 × 1024 bytes).
/// The dimensions are read from the bytes, so the file is read first; a sparse 1 GB `.png` is refused
/// before that.
pub const MAX_IMAGE_BYTES: u64 = 20 * 1000 * 1024;

/// The media type of an image extension (lower-cased, with its dot), or `None` when it is not an image Cline
/// reads.
pub fn media_type(extension: &str) -> Option<&'static str> {
    match extension {
        ".png" => Some("image/png"),
        ".jpg" | ".jpeg" => Some("image/jpeg"),
        ".webp" => Some("image/webp"),
        _ => None,
    }
}

/// Reads an opened image file as a base64 image block, after checking its dimensions.
pub fn read_image(file: std::fs::File, media_type: &str) -> Result<Block, String> {
    let bytes = toolshed_plugin_api::sdk::read_capped(file, MAX_IMAGE_BYTES).map_err(|e| match e {
        toolshed_plugin_api::sdk::ReadError::TooLarge { size, cap } => format!(
            "Error reading image: the image is {}, over the {} limit.",
            result::format_bytes(size),
            result::format_bytes(cap)
        ),
        other => format!("Error reading image: {}", other.describe("the image")),
    })?;
    image_block(&bytes, media_type)
}

fn image_block(bytes: &[u8], media_type: &str) -> Result<Block, String> {
    let size = imagesize::blob_size(bytes)
        .ok()
        .filter(|size| size.width > 0 && size.height > 0)
        .ok_or("Could not determine image dimensions, so image could not be read")?;
    if size.width > MAX_SIDE || size.height > MAX_SIDE {
        return Err("Image dimensions exceed 7500px by 7500px, so image could not be read".to_owned());
    }
    Ok(result::image(media_type, base64::engine::general_purpose::STANDARD.encode(bytes)))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// The signature and IHDR chunk of a PNG: enough for its dimensions to be read.
    pub(crate) fn png_header(width: u32, height: u32) -> Vec<u8> {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        png.extend_from_slice(&width.to_be_bytes());
        png.extend_from_slice(&height.to_be_bytes());
        png.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
        png
    }

    #[test]
    fn media_types() {
        assert_eq!(media_type(".png"), Some("image/png"));
        assert_eq!(media_type(".jpg"), Some("image/jpeg"));
        assert_eq!(media_type(".jpeg"), Some("image/jpeg"));
        assert_eq!(media_type(".webp"), Some("image/webp"));
        assert_eq!(media_type(".gif"), None);
        assert_eq!(media_type(""), None);
    }

    #[test]
    fn a_small_png_becomes_an_image_block() {
        let png = png_header(2, 3);
        let expected = base64::engine::general_purpose::STANDARD.encode(&png);
        assert_eq!(image_block(&png, "image/png"), Ok(result::image("image/png", expected)));
    }

    #[test]
    fn oversized_images_are_refused() {
        assert_eq!(
            image_block(&png_header(7501, 10), "image/png"),
            Err("Image dimensions exceed 7500px by 7500px, so image could not be read".to_owned())
        );
        assert!(image_block(&png_header(7500, 7500), "image/png").is_ok());
    }

    #[test]
    fn unknown_data_has_no_dimensions() {
        let expected = Err("Could not determine image dimensions, so image could not be read".to_owned());
        assert_eq!(image_block(b"not an image at all", "image/png"), expected);
        assert_eq!(image_block(&png_header(0, 5), "image/png"), expected);
    }

    #[test]
    fn unreadable_files_say_so() {
        // A directory opens on Linux but does not read.
        let dir = std::fs::File::open(std::env::temp_dir()).unwrap();
        let unreadable = read_image(dir, "image/png");
        assert!(matches!(&unreadable, Err(m) if m.starts_with("Error reading image: ")), "{unreadable:?}");
    }
}
