//! Cline's `read_file` tool as a Toolshed plugin: numbered line windows of text files, images for models that
//! accept them, and the per-task dedup notices.
//!
//! Names, parameters, output format and message texts are Cline's. Where Cline has a bug we keep the format and
//! fix the behaviour: Cline cuts a file at 400 KB before it applies `start_line`/`end_line` and refuses text files
//! over 20 MB, so most of a large file can never be read. This plugin applies the window to the whole file,
//! streams it (memory stays bounded by the window, whatever the file's size), and applies the 400 KB cap to the
//! text it returns, with Cline's footers and truncation marker.
//!
//! ```
//! use toolshed_plugin_api::Tool;
//!
//! let declaration = read_file::ReadFile::declaration();
//! assert_eq!(declaration.name, "read_file");
//! assert_eq!(declaration.specs["generic"].parameters.len(), 4);
//! ```
#![deny(missing_docs)]

mod documents;
mod image;
mod line_cache;
mod window;

use serde::Deserialize;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;
use std::time::UNIX_EPOCH;
use toolshed_encoding::{read_sample, sniff, Sniff, TextEncoding};
use toolshed_plugin_api::sdk::{lenient_int, lenient_string, IsolatedError, OpenError};
use toolshed_plugin_api::{
    capability, export_plugin, log_level, result, services, Block, Failure, HostClient, Outcome, ParamSpec, Prepared,
    Risk, Tool, ToolCall, ToolDeclaration, ToolInit, ToolSpec,
};
use window::{read_window, read_window_from, LineRange, Resume};

pub use documents::{Document, DocumentJob, DocumentLimits, DocumentWindow, JOB as DOCUMENT_JOB};

/// Cline's description of the tool (apps/vscode/src/core/prompts/system-prompt/tools/read_file.ts).
const DESCRIPTION: &str = "Request to read the contents of a file at the specified path. Use this when you need to examine the contents of an existing file you do not know the contents of, for example to analyze code, review text files, or extract information from configuration files. Returned text lines are prefixed with line labels (e.g. `1 |`, `2 |`). These labels are metadata, not part of the file content. For large files, output is automatically limited to 1000 lines. Use start_line and end_line to read specific sections. Automatically extracts raw text from PDF and DOCX files. May not be suitable for other types of binary files, as it returns the raw content as a string. Do NOT use this tool to list the contents of a directory. Only use this tool on files.";

/// Cline's parameters: name, required, JSON type, description, usage example.
const PARAMETERS: [(&str, bool, &str, &str, &str); 3] = [
    (
        "path",
        true,
        "string",
        "The path of the file to read (relative to the current working directory {{CWD}}){{MULTI_ROOT_HINT}}",
        "File path here",
    ),
    ("start_line", false, "integer", "The 1-based line number to start reading from (inclusive). Defaults to 1.", "1"),
    (
        "end_line",
        false,
        "integer",
        "The 1-based line number to stop reading at (inclusive). Defaults to start_line + 1000. Use with start_line to read specific sections of large files.",
        "1000",
    ),
];

/// Cline prefixes every extraction error with this, unless the message already starts with it.
const ERROR_PREFIX: &str = "Error reading file:";

/// The model's input. Numbers may arrive as strings and anything unparsable counts as absent, as in Cline.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct ReadFileArgs {
    /// The file, as the model wrote it: relative to the workspace, absolute, or `@root:path`.
    #[serde(deserialize_with = "lenient_string")]
    pub path: Option<String>,
    /// The first line to show, 1-based.
    #[serde(deserialize_with = "lenient_int")]
    pub start_line: Option<i64>,
    /// The last line to show, 1-based and inclusive.
    #[serde(deserialize_with = "lenient_int")]
    pub end_line: Option<i64>,
}

impl ReadFileArgs {
    /// The path, unless it is missing or blank.
    fn requested_path(&self) -> Option<&str> {
        self.path.as_deref().filter(|path| !path.trim().is_empty())
    }
}

/// The `read_file` tool. It holds no state but its config: the dedup cache lives in the host, per task.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadFile {
    /// The document limits of `[plugins.config.read_file]`.
    limits: DocumentLimits,
}

impl Tool for ReadFile {
    type Args = ReadFileArgs;

    fn declaration() -> ToolDeclaration {
        let parameters = PARAMETERS
            .iter()
            .map(|&(name, required, kind, description, usage)| {
                ParamSpec::new(name, required, description).kind(kind).usage(usage)
            })
            .chain([ParamSpec::task_progress()])
            .collect();
        let spec = ToolSpec {
            id: "read_file".to_owned(),
            name: "read_file".to_owned(),
            description: DESCRIPTION.to_owned(),
            parameters,
            context_requirements: Vec::new(),
        };
        ToolDeclaration {
            name: "read_file".to_owned(),
            aliases: Vec::new(),
            capabilities: vec![capability::READ_ONLY.to_owned()],
            display: Some("[{tool} for '{path}']".to_owned()),
            specs: [("generic".to_owned(), spec)].into_iter().collect(),
            checks_parameters: true,
            param_aliases: Default::default(),
        }
    }

    fn new(init: &ToolInit<'_>) -> Result<Option<Self>, String> {
        Ok(Some(ReadFile { limits: DocumentLimits::from_config(init.config)? }))
    }

    fn prepare(&self, call: &ToolCall<ReadFileArgs>, host: &HostClient<'_>) -> Result<Prepared, Failure> {
        // The runtime refuses a call without a path before it gets here; should one slip through, `execute`
        // reports it with Cline's missing-parameter text.
        let Some(raw) = call.input.requested_path() else {
            return Ok(Prepared::Proceed);
        };
        match host.path_allowed(raw) {
            Ok(true) => {}
            Ok(false) => return Ok(result::refuse(result::clineignore_error(raw))),
            Err(e) => return Ok(result::refuse(e.message)),
        }
        Ok(match host.resolve_path(raw) {
            Ok(resolved) => result::approval(
                "read",
                format!("Cline wants to read {}", resolved.display),
                vec![resolved.absolute],
                Risk::Low,
            ),
            Err(e) => result::refuse(e.message),
        })
    }

    fn execute(&self, call: &ToolCall<ReadFileArgs>, host: &HostClient<'_>) -> Result<Outcome, Failure> {
        let Some(raw) = call.input.requested_path() else {
            return Ok(result::missing_parameter("path"));
        };
        let resolved = match host.resolve_path(raw) {
            Ok(resolved) => resolved,
            Err(e) => return Ok(result::mistake(e.message)),
        };
        let (content, mtime_ns) =
            match extract(&resolved.absolute, call.approved, &call.input, call.task.supports_images, self, host) {
                Ok(read) => read,
                Err(message) if message.starts_with(ERROR_PREFIX) => return Ok(result::mistake(message)),
                Err(message) => return Ok(result::mistake(format!("{ERROR_PREFIX} {message}"))),
            };
        let notice = duplicate_notice(host, &resolved.absolute, mtime_ns, &resolved.display);
        let with_notice = |text: String| match &notice {
            Some(notice) => format!("{notice}\n{text}"),
            None => text,
        };
        Ok(match content {
            Content::Text(text) => result::text(with_notice(text)),
            // Cline puts the image before the tool result's text, and sends it again on cached re-reads.
            Content::Image(image) => {
                result::blocks(vec![image, Block::Text { text: with_notice("Successfully read image".to_owned()) }])
            }
        })
    }

    fn job(&self, name: &str, input: serde_json::Value, host: &HostClient<'_>) -> Result<serde_json::Value, String> {
        if name != DOCUMENT_JOB {
            return Err(format!("read_file has no job named `{name}`"));
        }
        let job: DocumentJob = serde_json::from_value(input)
            .map_err(|e| format!("bad document_text input: {}", toolshed_plugin_api::sdk::json_error(&e)))?;
        serde_json::to_value(self.document_job(&job, host)?).map_err(|e| e.to_string())
    }
}

/// The exported root module. It sits in a private module because the items `export_plugin!` generates carry no
/// docs; the loader finds them by symbol, not by path.
mod export {
    use super::{export_plugin, ReadFile};

    export_plugin! { name: "read_file", version: env!("CARGO_PKG_VERSION"), tools: [ReadFile] }
}

/// What a successful read produced.
#[derive(Debug)]
enum Content {
    /// The rendered line window.
    Text(String),
    /// An image block.
    Image(Block),
}

/// Cline's `extractFileContent` with our text path: the content and the file's modification time.
fn extract(
    absolute: &str,
    approved: bool,
    args: &ReadFileArgs,
    supports_images: bool,
    tool: &ReadFile,
    host: &HostClient<'_>,
) -> Result<(Content, u128), String> {
    let path = Path::new(absolute);
    // Cline checks existence with `fs.access`, so every failure to reach the file reads "File not found".
    // Everything below reads through this one descriptor, confirmed to be the file the checks allowed.
    let file = host.open_confirmed(absolute, approved).map_err(|e| match e {
        OpenError::Io(_) => format!("File not found: {absolute}"),
        OpenError::Refused(message) => message,
    })?;
    let metadata = file.metadata().map_err(|_| format!("File not found: {absolute}"))?;
    if metadata.is_dir() {
        return Err(format!("{absolute} is a directory. Use list_files to see its contents."));
    }
    // A FIFO or a device could block or never end; Cline would hang on it.
    if !metadata.is_file() {
        return Err(format!("{absolute} is not a regular file."));
    }
    let mtime_ns = metadata.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos());
    // `path.extname(...).toLowerCase()`: the dot included, empty when there is none.
    let extension = path.extension().map(|ext| format!(".{}", ext.to_string_lossy().to_lowercase()));
    if let Some(media_type) = extension.as_deref().and_then(image::media_type) {
        if !supports_images {
            return Err("Current model does not support image input".to_owned());
        }
        return Ok((Content::Image(image::read_image(file, media_type)?), mtime_ns));
    }
    let range = LineRange::new(args.start_line, args.end_line);
    // PDF, Word, notebook and Excel files: their extracted text gets the same window, footers and cap. The
    // extraction runs as a job, which opens the file again through the same confirmed read.
    if let Some(format) = extension.as_deref().and_then(Document::for_extension) {
        drop(file);
        let job = DocumentJob {
            path: absolute.to_owned(),
            approved,
            format,
            start_line: args.start_line,
            end_line: args.end_line,
        };
        return Ok((Content::Text(tool.run_document_job(&job, host)?.text), mtime_ns));
    }
    Ok((Content::Text(read_text(file, path, extension.as_deref(), range, host)?), mtime_ns))
}

impl ReadFile {
    /// Runs the `document_text` job in a child process (inline when the host does not offer that): a parser's
    /// crash, overrun or endless loop ends the child and comes back as a tool error naming the limit.
    fn run_document_job(&self, job: &DocumentJob, host: &HostClient<'_>) -> Result<DocumentWindow, String> {
        let input = serde_json::to_value(job).map_err(|e| e.to_string())?;
        let output = host.isolated(self, DOCUMENT_JOB, input).map_err(|e| match e {
            IsolatedError::Job(message) | IsolatedError::Failed(message) => message,
        })?;
        serde_json::from_value(output)
            .map_err(|e| format!("the document reader answered oddly: {}", toolshed_plugin_api::sdk::json_error(&e)))
    }

    /// The `document_text` job: the document's text, read through the confirmed read, rendered as its window.
    fn document_job(&self, job: &DocumentJob, host: &HostClient<'_>) -> Result<DocumentWindow, String> {
        let text = job.format.read(host, &job.path, job.approved, &self.limits)?;
        let range = LineRange::new(job.start_line, job.end_line);
        let window = read_window(text.as_bytes(), range).map_err(|e| format!("{}: {e}", job.path))?;
        Ok(DocumentWindow { text: window.render(range) })
    }
}

/// Reads and renders the window `range` of a text file in its own encoding, refusing binary files that have an
/// extension. The encoding is decided on the file's first bytes (toolshed-encoding, shared with the edit and
/// search tools, so all three see the same text); the rest is decoded as it streams through the window.
fn read_text(
    mut file: File,
    path: &Path,
    extension: Option<&str>,
    range: LineRange,
    host: &HostClient<'_>,
) -> Result<String, String> {
    let io_error = |e: io::Error| format!("{}: {e}", path.display());
    let (sample, complete) = read_sample(&mut file).map_err(io_error)?;
    let found = match (sniff(&sample, complete), extension) {
        (Sniff::Text(found), _) => found,
        (Sniff::Binary, Some(extension)) => return Err(format!("Cannot read text for file type: {extension}")),
        // Cline decodes extension-less binaries as UTF-8 all the same, so only files with an extension are refused.
        (Sniff::Binary, None) => TextEncoding::UTF8,
    };
    // UTF-8 is read past its mark; a decoder reads from the start and drops the mark itself (encoding_rs drops
    // one mark at the start, so a U+FEFF just past it must not be there for it to drop).
    let start = if found.is_utf8() { found.bom_len() as u64 } else { 0 };
    if found.is_utf8() {
        return read_utf8(file, start, range, host).map(|window| window.render(range)).map_err(io_error);
    }
    file.seek(SeekFrom::Start(start)).map_err(io_error)?;
    // Anything but UTF-8 is transcoded to UTF-8 on the way.
    let window = read_window(found.decoding_reader(Cancellable { inner: file, host }), range).map_err(io_error)?;
    Ok(window.render(range))
}

/// Reads the window of a UTF-8 file whose text begins at byte `start` (past its mark): from the nearest
/// checkpoint of the index kept for the file's current state when there is one (`line_cache`), else the whole
/// file, keeping its index when the file is large and settled.
fn read_utf8(mut file: File, start: u64, range: LineRange, host: &HostClient<'_>) -> io::Result<window::Window> {
    let began = std::time::SystemTime::now();
    let stamp = line_cache::Stamp::of(&file.metadata()?);
    if let Some(index) = line_cache::lookup(&stamp) {
        let checkpoint = index.before_line(range.start);
        file.seek(SeekFrom::Start(start + checkpoint.offset))?;
        let resume = Resume::At { checkpoint, index: &index };
        return read_window_from(Cancellable { inner: &file, host }, range, resume).map(|(window, _)| window);
    }
    file.seek(SeekFrom::Start(start))?;
    let record = stamp.worth_keeping(began);
    let (window, index) = read_window_from(Cancellable { inner: &file, host }, range, Resume::Start { record })?;
    // Kept only when the file did not change while it was read.
    if let Some(index) = index.filter(|_| file.metadata().is_ok_and(|meta| line_cache::Stamp::of(&meta) == stamp)) {
        line_cache::store(stamp, index);
    }
    Ok(window)
}

/// Stops a long read once the call is cancelled or has timed out, instead of reading a huge file to its end.
struct Cancellable<'h, 'c, R> {
    inner: R,
    host: &'h HostClient<'c>,
}

impl<R: Read> Read for Cancellable<'_, '_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.host.is_cancelled() {
            return Err(io::Error::other("the read was cancelled"));
        }
        self.inner.read(buf)
    }
}

/// Records the read in the task's cache and returns Cline's notice for a repeated read of an unchanged file.
/// A host without the cache service gets no notices.
fn duplicate_notice(host: &HostClient<'_>, absolute: &str, mtime_ns: u128, display: &str) -> Option<String> {
    if !host.offers::<services::ReadCacheRecord>() {
        return None;
    }
    let request = services::RecordReadRequest { path: absolute.to_owned(), mtime_ns };
    match host.call::<services::ReadCacheRecord>(&request) {
        Ok(response) => match response.read_count {
            0 | 1 => None,
            2 => Some(format!(
                "[File already read] The file '{display}' was already read earlier in this conversation. Returning content:"
            )),
            count => Some(format!(
                "[DUPLICATE READ] You have already read '{display}' {count} times in this conversation. The content has not changed since your last read. Please use the information you already have and proceed with your task."
            )),
        },
        Err(e) => {
            // The read itself succeeded; a broken cache must not turn it into an error.
            host.log(log_level::WARN, &format!("{}: {e}", <services::ReadCacheRecord as services::Service>::NAME));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use std::collections::HashMap;
    use std::sync::Mutex;
    use std::time::{Duration, SystemTime};
    use toolshed_plugin_api::testing::FakeHost;
    use toolshed_plugin_api::{ServiceError, ServiceErrorKind};

    /// A host with a workspace root, a list of blocked paths and the read cache (a test that wants none
    /// takes it away with `without`).
    fn fake_host(root: &Path, blocked: &[&str]) -> FakeHost {
        let root = root.to_owned();
        let blocked: Vec<String> = blocked.iter().map(|b| (*b).to_owned()).collect();
        let cache: Mutex<HashMap<String, (u128, u32)>> = Mutex::default();
        FakeHost::new()
            .on::<services::PathResolve>(move |request| {
                Ok(services::ResolvedPath {
                    absolute: root.join(&request.path).to_string_lossy().into_owned(),
                    display: request.path,
                    root: "root".to_owned(),
                    inside_workspace: true,
                })
            })
            .on::<services::PathCheck>(move |request| {
                Ok(services::CheckResponse { allowed: request.paths.iter().map(|p| !blocked.contains(p)).collect() })
            })
            .on::<services::ReadCacheRecord>(move |request| {
                let Ok(mut cache) = cache.lock() else {
                    return Err(ServiceError::new(ServiceErrorKind::Failed, "poisoned"));
                };
                let entry = cache.entry(request.path.to_lowercase()).or_insert((request.mtime_ns, 0));
                if entry.0 != request.mtime_ns {
                    *entry = (request.mtime_ns, 0);
                }
                entry.1 += 1;
                Ok(services::RecordReadResponse { read_count: entry.1 })
            })
    }

    fn call(input: serde_json::Value, supports_images: bool) -> ToolCall<ReadFileArgs> {
        let call = json!({ "tool": "read_file", "input": input, "task": { "supports_images": supports_images } });
        match serde_json::from_value(call) {
            Ok(call) => call,
            Err(e) => panic!("bad test call: {e}"),
        }
    }

    fn execute(host: &FakeHost, input: serde_json::Value) -> Outcome {
        host.execute(&ReadFile::default(), &call(input, false))
    }

    fn execute_with_images(host: &FakeHost, input: serde_json::Value) -> Outcome {
        host.execute(&ReadFile::default(), &call(input, true))
    }

    fn prepare(host: &FakeHost, input: serde_json::Value) -> Prepared {
        host.prepare(&ReadFile::default(), &call(input, false))
    }

    fn workspace() -> io::Result<tempfile::TempDir> {
        let dir = tempfile::tempdir()?;
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\nthree\n")?;
        Ok(dir)
    }

    #[test]
    fn declaration_matches_cline() {
        let declaration = ReadFile::declaration();
        assert_eq!(declaration.capabilities, vec![capability::READ_ONLY.to_owned()]);
        assert_eq!(declaration.display.as_deref(), Some("[{tool} for '{path}']"));
        let spec = &declaration.specs["generic"];
        assert_eq!(spec.description, DESCRIPTION);
        let params: Vec<_> = spec
            .parameters
            .iter()
            .map(|p| (p.name.as_str(), p.required, p.kind.as_str(), p.usage.as_deref()))
            .collect();
        assert_eq!(
            params,
            vec![
                ("path", true, "string", Some("File path here")),
                ("start_line", false, "integer", Some("1")),
                ("end_line", false, "integer", Some("1000")),
                ("task_progress", false, "string", Some("Checklist here (optional)")),
            ]
        );
    }

    #[test]
    fn arguments_are_lenient() {
        let strings = call(json!({ "path": "a.txt", "start_line": "3", "end_line": "oops" }), false);
        assert_eq!(strings.input, ReadFileArgs { path: Some("a.txt".to_owned()), start_line: Some(3), end_line: None });
        let numbers = call(json!({ "path": 12, "end_line": 7.0 }), false);
        assert_eq!(numbers.input, ReadFileArgs { path: Some("12".to_owned()), start_line: None, end_line: Some(7) });
    }

    #[test]
    fn prepare_asks_to_read() -> io::Result<()> {
        let dir = workspace()?;
        let host = fake_host(dir.path(), &[]);
        let absolute = dir.path().join("a.txt").to_string_lossy().into_owned();
        assert_eq!(
            prepare(&host, json!({ "path": "a.txt" })),
            result::approval("read", "Cline wants to read a.txt", vec![absolute], Risk::Low)
        );
        Ok(())
    }

    #[test]
    fn prepare_refuses_ignored_paths() -> io::Result<()> {
        let dir = workspace()?;
        let host = fake_host(dir.path(), &["secret.env"]);
        assert_eq!(
            prepare(&host, json!({ "path": "secret.env" })),
            result::refuse("Access to secret.env is blocked by the .clineignore file settings. You must try to continue in the task without using this file, or ask the user to update the .clineignore file.")
        );
        Ok(())
    }

    #[test]
    fn missing_path() -> io::Result<()> {
        let dir = workspace()?;
        let host = fake_host(dir.path(), &[]);
        assert_eq!(execute(&host, json!({})), result::missing_parameter("path"));
        assert_eq!(execute(&host, json!({ "path": "  " })), result::missing_parameter("path"));
        assert_eq!(prepare(&host, json!({})), Prepared::Proceed);
        Ok(())
    }

    #[test]
    fn reads_a_window() -> io::Result<()> {
        let dir = workspace()?;
        let host = fake_host(dir.path(), &[]).without::<services::ReadCacheRecord>();
        assert_eq!(
            execute(&host, json!({ "path": "a.txt", "start_line": 2, "end_line": "2" })),
            result::text("2 | two\n\n(Showing lines 2-2 of 3 total. Use start_line=3 to continue reading.)")
        );
        assert_eq!(
            execute(&host, json!({ "path": "a.txt" })),
            result::text("1 | one\n2 | two\n3 | three\n\n(File has 3 lines total.)")
        );
        Ok(())
    }

    #[test]
    fn repeated_reads_get_cline_notices() -> io::Result<()> {
        let dir = workspace()?;
        let host = fake_host(dir.path(), &[]);
        let body = "1 | one\n2 | two\n3 | three\n\n(File has 3 lines total.)";
        assert_eq!(execute(&host, json!({ "path": "a.txt" })), result::text(body));
        assert_eq!(
            execute(&host, json!({ "path": "a.txt" })),
            result::text(format!("[File already read] The file 'a.txt' was already read earlier in this conversation. Returning content:\n{body}"))
        );
        assert_eq!(
            execute(&host, json!({ "path": "a.txt" })),
            result::text(format!("[DUPLICATE READ] You have already read 'a.txt' 3 times in this conversation. The content has not changed since your last read. Please use the information you already have and proceed with your task.\n{body}"))
        );
        // A changed modification time starts the count again.
        let file = File::options().write(true).open(dir.path().join("a.txt"))?;
        file.set_modified(SystemTime::now() + Duration::from_secs(5))?;
        assert_eq!(execute(&host, json!({ "path": "a.txt" })), result::text(body));
        Ok(())
    }

    #[test]
    fn missing_file() -> io::Result<()> {
        let dir = workspace()?;
        let host = fake_host(dir.path(), &[]);
        let absolute = dir.path().join("nope.txt");
        assert_eq!(
            execute(&host, json!({ "path": "nope.txt" })),
            result::mistake(format!("Error reading file: File not found: {}", absolute.display()))
        );
        Ok(())
    }

    #[test]
    fn directory() -> io::Result<()> {
        let dir = workspace()?;
        std::fs::create_dir(dir.path().join("src"))?;
        let host = fake_host(dir.path(), &[]);
        let absolute = dir.path().join("src");
        assert_eq!(
            execute(&host, json!({ "path": "src" })),
            result::mistake(format!(
                "Error reading file: {} is a directory. Use list_files to see its contents.",
                absolute.display()
            ))
        );
        Ok(())
    }

    #[test]
    fn binary_files_with_an_extension_are_refused() -> io::Result<()> {
        let dir = workspace()?;
        std::fs::write(dir.path().join("lib.SO"), b"\x7fELF\x02\x01\x01\0\0\0\0")?;
        let host = fake_host(dir.path(), &[]);
        assert_eq!(
            execute(&host, json!({ "path": "lib.SO" })),
            result::mistake("Error reading file: Cannot read text for file type: .so")
        );
        Ok(())
    }

    #[test]
    fn binary_files_without_an_extension_are_decoded_lossily() -> io::Result<()> {
        let dir = workspace()?;
        std::fs::write(dir.path().join("blob"), b"\x7fELF\0\xff\n")?;
        let host = fake_host(dir.path(), &[]);
        assert_eq!(
            execute(&host, json!({ "path": "blob" })),
            result::text("1 | \u{7f}ELF\0\u{FFFD}\n\n(File has 1 lines total.)")
        );
        Ok(())
    }

    #[test]
    fn empty_files_return_nothing() -> io::Result<()> {
        let dir = workspace()?;
        std::fs::write(dir.path().join("empty.txt"), "")?;
        std::fs::write(dir.path().join("bom.txt"), "\u{FEFF}")?;
        let host = fake_host(dir.path(), &[]).without::<services::ReadCacheRecord>();
        assert_eq!(execute(&host, json!({ "path": "empty.txt" })), result::text(""));
        assert_eq!(execute(&host, json!({ "path": "bom.txt" })), result::text(""));
        Ok(())
    }

    #[test]
    fn byte_order_marks() -> io::Result<()> {
        let dir = workspace()?;
        std::fs::write(dir.path().join("utf8.txt"), "\u{FEFF}first\r\nsecond")?;
        let mut utf16 = vec![0xFF, 0xFE];
        utf16.extend("first\r\nsecond".encode_utf16().flat_map(u16::to_le_bytes));
        std::fs::write(dir.path().join("utf16.txt"), utf16)?;
        let host = fake_host(dir.path(), &[]).without::<services::ReadCacheRecord>();
        let expected = result::text("1 | first\n2 | second\n\n(File has 2 lines total.)");
        assert_eq!(execute(&host, json!({ "path": "utf8.txt" })), expected);
        assert_eq!(execute(&host, json!({ "path": "utf16.txt" })), expected);
        Ok(())
    }

    #[test]
    fn legacy_encodings_are_decoded() -> io::Result<()> {
        let dir = workspace()?;
        std::fs::write(dir.path().join("fr.txt"), b"Le caf\xe9 co\xfbte \x80 2,\r\nm\xeame l'\xe9t\xe9.\r\n")?;
        let mut utf16 = Vec::new();
        utf16.extend("première\nligne".encode_utf16().flat_map(u16::to_be_bytes));
        std::fs::write(dir.path().join("be.txt"), utf16)?;
        let host = fake_host(dir.path(), &[]).without::<services::ReadCacheRecord>();
        assert_eq!(
            execute(&host, json!({ "path": "fr.txt" })),
            result::text("1 | Le café coûte € 2,\n2 | même l'été.\n\n(File has 2 lines total.)")
        );
        assert_eq!(
            execute(&host, json!({ "path": "be.txt" })),
            result::text("1 | première\n2 | ligne\n\n(File has 2 lines total.)")
        );
        Ok(())
    }

    #[test]
    fn a_second_mark_is_text_as_the_edits_see_it() -> io::Result<()> {
        // A UTF-16 mark, then U+FEFF as the first character: the edit tools' text starts with it, so the read
        // shows it (the decoder drops the file's own mark, and only that one).
        let dir = workspace()?;
        let mut twice = vec![0xFF, 0xFE, 0xFF, 0xFE];
        twice.extend("x\ny".encode_utf16().flat_map(u16::to_le_bytes));
        std::fs::write(dir.path().join("twice.txt"), twice)?;
        let host = fake_host(dir.path(), &[]).without::<services::ReadCacheRecord>();
        assert_eq!(
            execute(&host, json!({ "path": "twice.txt" })),
            result::text("1 | \u{feff}x\n2 | y\n\n(File has 2 lines total.)")
        );
        Ok(())
    }

    #[test]
    fn images() -> io::Result<()> {
        let dir = workspace()?;
        let png = image::tests::png_header(4, 4);
        std::fs::write(dir.path().join("pic.PNG"), &png)?;
        std::fs::write(dir.path().join("huge.webp"), image::tests::png_header(8000, 10))?;
        std::fs::write(dir.path().join("fake.jpg"), "not a jpeg")?;
        let host = fake_host(dir.path(), &[]);
        assert_eq!(
            execute(&host, json!({ "path": "pic.PNG" })),
            result::mistake("Error reading file: Current model does not support image input")
        );
        let data = {
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD.encode(&png)
        };
        assert_eq!(
            execute_with_images(&host, json!({ "path": "pic.PNG" })),
            result::blocks(vec![
                result::image("image/png", data.clone()),
                Block::Text { text: "Successfully read image".to_owned() }
            ])
        );
        assert_eq!(
            execute_with_images(&host, json!({ "path": "pic.PNG" })),
            result::blocks(vec![
                result::image("image/png", data),
                Block::Text {
                    text: "[File already read] The file 'pic.PNG' was already read earlier in this conversation. Returning content:\nSuccessfully read image".to_owned()
                }
            ])
        );
        assert_eq!(
            execute_with_images(&host, json!({ "path": "huge.webp" })),
            result::mistake("Error reading file: Image dimensions exceed 7500px by 7500px, so image could not be read")
        );
        assert_eq!(
            execute_with_images(&host, json!({ "path": "fake.jpg" })),
            result::mistake("Error reading file: Could not determine image dimensions, so image could not be read")
        );
        Ok(())
    }

    #[test]
    fn documents_run_as_the_document_text_job() -> io::Result<()> {
        let dir = workspace()?;
        // A notebook that is not JSON reads as its text; a PDF over a limit names it.
        std::fs::write(dir.path().join("draft.ipynb"), "one\ntwo\n")?;
        std::fs::write(dir.path().join("big.pdf"), vec![b' '; 2048])?;
        let host = fake_host(dir.path(), &[]).without::<services::ReadCacheRecord>();
        assert_eq!(
            execute(&host, json!({ "path": "draft.ipynb", "start_line": 2 })),
            result::text("2 | two\n\n(File has 2 lines total.)")
        );
        let config = r#"{"max_document_bytes": 1024}"#;
        let tool = match ReadFile::new(&ToolInit { name: "read_file", config }) {
            Ok(Some(tool)) => tool,
            other => panic!("{other:?}"),
        };
        let client = host.client();
        assert_eq!(
            host.execute(&tool, &call(json!({ "path": "big.pdf" }), false)),
            result::mistake("Error reading file: File is too large to read into context. (Documents are read up to 1 KiB: [plugins.config.read_file] max_document_bytes.)")
        );
        // The job is the same code the child process runs.
        let input = json!({ "path": dir.path().join("draft.ipynb"), "approved": false, "format": "ipynb", "start_line": null, "end_line": 1 });
        assert_eq!(
            tool.job(DOCUMENT_JOB, input, &client),
            Ok(json!({ "text": "1 | one\n\n(Showing lines 1-1 of 2 total. Use start_line=2 to continue reading.)" }))
        );
        assert!(tool.job("other", json!({}), &client).is_err_and(|e| e.contains("no job named `other`")));
        Ok(())
    }

    #[test]
    fn a_large_file_is_windowed_not_refused() -> io::Result<()> {
        let dir = workspace()?;
        // Over Cline's 20 MB refusal threshold: 21 MB of 100-byte lines.
        let line = format!("{}\n", "y".repeat(99));
        std::fs::write(dir.path().join("big.log"), line.repeat(210_000))?;
        let host = fake_host(dir.path(), &[]).without::<services::ReadCacheRecord>();
        let expected = format!("209999 | {0}\n210000 | {0}\n\n(File has 210000 lines total.)", "y".repeat(99));
        assert_eq!(execute(&host, json!({ "path": "big.log", "start_line": 209_999 })), result::text(expected));
        Ok(())
    }
}
