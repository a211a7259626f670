//! Narrow entry points into `apply_patch`'s V4A parser and chunk matcher for the fuzz targets in
//! `fuzz-targets/` (issue 16). Hidden and not a supported API: they forward to the code the tool runs.

use crate::edit_io::TextFile;

pub use crate::apply::{ChunkError, FileLines};
pub use crate::parse::{parse, Action, Chunk, Line};

/// An update's chunks applied to a file's bytes, as the tool computes them before writing: decode, apply,
/// encode with the file's byte-order mark. `Err` says why the file would be left alone.
pub fn update(bytes: &[u8], chunks: &[Chunk]) -> Result<(Vec<u8>, u32), String> {
    let file = TextFile::decode(bytes)?;
    let (text, fuzz) =
        crate::apply::apply(&file.text, chunks, &|| false, &mut { u64::MAX }).map_err(|e| format!("{e:?}"))?;
    Ok((file.encode(&text)?, fuzz))
}

/// A file's text as the tool matches chunks against it (byte-order mark dropped, line breaks kept).
pub fn text(bytes: &[u8]) -> Result<String, String> {
    TextFile::decode(bytes).map(|file| file.text)
}

/// The file headers the streaming UI reports for a patch text: (card kind, path, end of its line).
pub fn headers(text: &str, final_pass: bool) -> Vec<(&'static str, String, usize)> {
    crate::headers(text, final_pass)
}

/// Whether two texts are similar enough for the last matching pass (the banded Levenshtein test).
pub fn similar(a: &str, b: &str, threshold: f64) -> bool {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    crate::apply::similar(&a, &b, threshold)
}
