//! Narrow entry points into `replace_in_file`'s SEARCH/REPLACE parser for the fuzz targets in `fuzz-targets/`
//! (issue 16). Hidden and not a supported API: they forward to the code the tool runs.

use crate::edit_io::TextFile;
use toolshed_plugin_api::TaskInfo;

pub use crate::diff::{apply, is_any_marker, parse, DiffError, Edit};

/// `replace_in_file`'s computation on a file's bytes, without the file system: decode (the file's own
/// encoding), the CRLF working text, the diff as the model family's fixes leave it, the blocks
/// located, the edits applied, the line breaks and the mark restored. `Err` is the tool's error text.
pub fn replace_in_file(bytes: &[u8], diff: &str, model_family: &str) -> Result<Vec<u8>, String> {
    let file = TextFile::decode(bytes)?;
    let task = TaskInfo { model_family: model_family.to_owned(), ..TaskInfo::default() };
    let diff = crate::prepared_diff(diff, "fuzz.txt", &task);
    let (working, style) = crate::working_text(&file);
    let edits = crate::diff::parse(&diff, &working, true).map_err(|error| error.message)?;
    file.encode(&crate::edited_text(&working, style, &edits))
}

/// The file's text as the diff sees it (byte-order mark dropped, CRLF as LF when every break is CRLF), or
/// why the file is not edited.
pub fn working_text(bytes: &[u8]) -> Result<String, String> {
    TextFile::decode(bytes).map(|file| crate::working_text(&file).0)
}
