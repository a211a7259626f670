//! The search engine: ripgrep's crates linked in. The `ignore` crate walks with ripgrep's default filters,
//! and `grep-searcher` with a `grep-regex` matcher searches each file with one line of context, incrementally
//! in 64 KiB buffers (never a whole file in memory), giving up on a file at its first NUL byte as ripgrep
//! does for files it finds by walking. A file in a legacy encoding is searched in its decoded text.
//!
//! Results are the first `limit` matches in sorted-walk order (by file name within each directory, which is
//! `rg --sort path`'s order, and `Path`'s own order), whatever the threads' timing, in two phases:
//! - Inline: the calling thread walks in sorted order and searches, starting no thread at all. It goes on
//!   while within a small budget, or while the matches so far promise the limit soon; then it has done the
//!   least work possible (nothing after the last needed file). Small and broad searches end here.
//! - Parallel passes over the rest: ripgrep's own parallel walker, each thread searching what it finds, as
//!   `rg` does. Once `limit` matches are kept, every file or directory that sorts after the one completing
//!   them is skipped, and the kept files are sorted at the end.
//!
//! The `.clineignore` check is the caller's `gate`, asked in batches for files with matches only, before
//! their results count: once for what the inline phase found, once per pass. Denied files never count
//! toward the limit; if they leave it short, another pass searches what the first one skipped.

use grep_regex::RegexMatcher;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch};
use ignore::overrides::Override;
use ignore::{DirEntry, WalkBuilder, WalkState};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant};
use toolshed_encoding::Sniff;

/// How long the calling thread searches alone before it starts worker threads. Starting threads and waking
/// them costs tens of microseconds each on these machines; a search that ends within this budget (a small
/// tree, or a capped search whose first results come early) is faster without them.
const INLINE_BUDGET: Duration = Duration::from_millis(1);
/// How long an inline search may take in all when the matches found so far predict the limit: a capped
/// search whose results come steadily stays on one thread in walk order.
const INLINE_PROJECTED: Duration = Duration::from_millis(40);
/// How often the calling thread looks at cancellation while a parallel pass runs.
const CANCEL_POLL: Duration = Duration::from_millis(10);
/// The longest line the searcher will hold; a file with a longer line is skipped rather than read whole.
const HEAP_LIMIT: usize = 16 * 1024 * 1024;
/// Kept bytes of one line: Cline's whole output budget, so a longer line could never be shown anyway.
const MAX_LINE_BYTES: usize = 256 * 1024;

/// One match: the matching line and its context lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hit {
    /// The 1-based line number of the match.
    pub(crate) line: u64,
    /// The context line before it, unless that line belongs to the previous match.
    pub(crate) before: Vec<String>,
    /// The matching line, without its line terminator and trailing whitespace.
    pub(crate) text: String,
    /// The context line after it.
    pub(crate) after: Vec<String>,
}

/// The matches in one file, in line order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileHits {
    /// The file's path (the search root joined with its relative path).
    pub(crate) path: PathBuf,
    /// Its matches.
    pub(crate) hits: Vec<Hit>,
}

/// What a search found.
#[derive(Debug, Default)]
pub(crate) struct Found {
    /// Files with matches, in walk order; their matches total at most the limit.
    pub(crate) files: Vec<FileHits>,
    /// The number of matches in `files`; the limit when it was reached (there may be more).
    pub(crate) count: usize,
    /// The search was stopped (cancelled) before it finished.
    pub(crate) interrupted: bool,
    /// Files and directories that could not be read, with why; they were skipped.
    pub(crate) skipped: Vec<String>,
    /// The gate failed: nothing could be checked, so nothing is shown.
    pub(crate) failed: Option<String>,
}

/// What to search for, and where.
pub(crate) struct Query<'a> {
    /// The directory (or single file) to search.
    pub(crate) root: &'a Path,
    /// The compiled regex.
    pub(crate) matcher: &'a RegexMatcher,
    /// The `file_pattern` filter; `None` searches every file the ignore rules let through.
    pub(crate) file_pattern: Option<&'a Override>,
    /// How many matches to collect at most.
    pub(crate) limit: usize,
    /// How many worker threads a big search may use.
    pub(crate) threads: usize,
}

/// Asked with the paths of files that have matches; answers, per path, whether they may be shown.
pub(crate) type Gate<'a> = dyn FnMut(&[&Path]) -> Result<Vec<bool>, String> + 'a;

/// Builds the regex matcher as ripgrep does by default: Rust regex syntax, case-sensitive, and never
/// matching across a line terminator (a literal `\n` in the pattern is an error, as in ripgrep).
pub(crate) fn matcher(regex: &str) -> Result<RegexMatcher, grep_regex::Error> {
    grep_regex::RegexMatcherBuilder::new().line_terminator(Some(b'\n')).build(regex)
}

/// Builds the `file_pattern` matcher: one glob, relative to the search root, as ripgrep's `--glob`.
pub(crate) fn file_pattern(root: &Path, glob: &str) -> Result<Override, ignore::Error> {
    let mut builder = ignore::overrides::OverrideBuilder::new(root);
    builder.add(glob)?;
    builder.build()
}

/// Runs a search. `gate` and `should_stop` are only ever called on the calling thread.
pub(crate) fn search(query: &Query<'_>, gate: &mut Gate<'_>, should_stop: &dyn Fn() -> bool) -> Found {
    let mut commit = Committer::new(query.limit, gate);
    let mut skipped = Vec::new();
    let mut interrupted = false;
    let mut lower = match inline(query, &mut commit, &mut skipped, should_stop) {
        Inline::Stopped(last) => Some(last),
        Inline::Finished => None,
        Inline::Interrupted => {
            interrupted = true;
            None
        }
    };
    while let Some(after) = lower.take() {
        commit.flush();
        if commit.is_done() {
            break;
        }
        let pass = parallel_pass(query, after.as_deref(), query.limit - commit.shown_count, should_stop);
        skipped.extend(pass.skipped);
        if pass.interrupted {
            interrupted = true;
            break;
        }
        commit.take_all(pass.files);
        // Short of the limit although the pass skipped files: the gate refused some; search after them.
        lower = pass.threshold.filter(|_| !commit.is_done()).map(Some);
    }
    let (files, count, failed) = commit.finish();
    Found { files, count, interrupted, skipped, failed }
}

/// How the inline phase ended.
enum Inline {
    /// The whole tree was searched, or the limit was reached.
    Finished,
    /// The call was cancelled.
    Interrupted,
    /// The budget ran out; every file up to and including this one (none when `None`) was searched.
    Stopped(Option<PathBuf>),
}

/// The calling thread alone, in sorted walk order, until the budget is spent.
fn inline(
    query: &Query<'_>,
    commit: &mut Committer<'_, '_>,
    skipped: &mut Vec<String>,
    should_stop: &dyn Fn() -> bool,
) -> Inline {
    let mut walk = walker(query).sort_by_file_name(std::cmp::Ord::cmp).build();
    let mut searcher = searcher();
    let started = Instant::now();
    let mut last = None;
    while keep_inline(started.elapsed(), commit.found(), query.limit) {
        if should_stop() {
            return Inline::Interrupted;
        }
        match walk.next() {
            None => return Inline::Finished,
            Some(Err(error)) => skipped.push(error.to_string()),
            Some(Ok(entry)) if is_file(&entry) => {
                let path = entry.into_path();
                match search_file(&mut searcher, query.matcher, &path, query.limit, should_stop) {
                    Ok(hits) => {
                        if commit.take(FileHits { path: path.clone(), hits }) {
                            return Inline::Finished;
                        }
                    }
                    Err(error) => skipped.push(format!("{}: {error}", path.display())),
                }
                last = Some(path);
            }
            Some(Ok(_)) => {}
        }
    }
    Inline::Stopped(last)
}

/// Whether the inline phase should go on: within its budget, or while the matches found so far promise the
/// limit soon. Then one thread in walk order does the least work (nothing past the last needed file is
/// searched), which beats parallel threads that cannot know what comes first.
fn keep_inline(elapsed: Duration, found: usize, limit: usize) -> bool {
    elapsed < INLINE_BUDGET
        || (found > 0 && elapsed.as_secs_f64() * limit as f64 / found as f64 <= INLINE_PROJECTED.as_secs_f64())
}

/// Whether `dir` is a proper ancestor of `path`, both spelled from the same root: a byte prefix ending at a
/// separator.
fn is_ancestor(dir: &Path, path: &Path) -> bool {
    let (dir, path) = (dir.as_os_str().as_encoded_bytes(), path.as_os_str().as_encoded_bytes());
    path.len() > dir.len()
        && path.starts_with(dir)
        && (dir.last().is_some_and(|&b| std::path::is_separator(b as char))
            || std::path::is_separator(path[dir.len()] as char))
}

/// What one parallel pass found.
struct Pass {
    /// Files with matches, in walk order, holding at least `need` matches unless the tree ran out.
    files: Vec<FileHits>,
    /// The last of `files` when the pass pruned the files after it; a later pass starts there.
    threshold: Option<PathBuf>,
    skipped: Vec<String>,
    interrupted: bool,
}

/// What the threads of a pass share.
struct PassState {
    /// The files with matches kept so far, in walk order (`Path`'s order compares component by component,
    /// which is the sorted walk's order), and their total number of matches.
    found: Mutex<(BTreeMap<PathBuf, Vec<Hit>>, usize)>,
    /// The file that completes `need` matches among those kept: nothing after it can be shown.
    threshold: RwLock<Option<PathBuf>>,
    /// Whether `threshold` is set, so a walk that never finds enough matches never takes its lock.
    pruning: AtomicBool,
    /// Set on cancellation.
    stop: AtomicBool,
    errors: Mutex<Vec<String>>,
}

impl PassState {
    /// One walk entry: prune what cannot matter, search files.
    fn visit(
        &self,
        item: Result<DirEntry, ignore::Error>,
        query: &Query<'_>,
        lower: Option<&Path>,
        need: usize,
        searcher: &mut Searcher,
    ) -> WalkState {
        if self.stop.load(Ordering::Relaxed) {
            return WalkState::Quit;
        }
        let entry = match item {
            Ok(entry) => entry,
            Err(error) => {
                self.note(error.to_string());
                return WalkState::Continue;
            }
        };
        let path = entry.path();
        let is_dir = entry.file_type().is_some_and(|kind| kind.is_dir());
        // Skipping a directory skips all it holds, which sorts right after it and before its next sibling.
        let skip = if is_dir { WalkState::Skip } else { WalkState::Continue };
        // Only the children of `lower`'s ancestors need comparing: any other entry lies in a directory that
        // was already found to sort after `lower` (a cheap byte test spares the component-wise comparison).
        if let Some(lower) = lower.filter(|lower| path.parent().is_some_and(|parent| is_ancestor(parent, lower))) {
            let done = if is_dir { path < lower && !is_ancestor(path, lower) } else { path <= lower };
            if done {
                return skip;
            }
        }
        if self.pruning.load(Ordering::Relaxed) && self.beyond_threshold(path) {
            return skip;
        }
        if !is_file(&entry) {
            return WalkState::Continue;
        }
        match search_file(searcher, query.matcher, path, need, &|| self.stop.load(Ordering::Relaxed)) {
            Ok(hits) if hits.is_empty() => {}
            Ok(hits) => self.keep(path.to_owned(), hits, need),
            Err(error) => self.note(format!("{}: {error}", path.display())),
        }
        WalkState::Continue
    }

    fn beyond_threshold(&self, path: &Path) -> bool {
        self.threshold.read().map(|threshold| threshold.as_deref().is_some_and(|t| path > t)).unwrap_or(false)
    }

    /// Keeps a file's matches, drops the files no longer needed, and moves the threshold.
    fn keep(&self, path: PathBuf, hits: Vec<Hit>, need: usize) {
        let Ok(mut found) = self.found.lock() else {
            return;
        };
        if self.beyond_threshold(&path) {
            return;
        }
        let (files, total) = &mut *found;
        *total += hits.len();
        files.insert(path, hits);
        while let Some((_, last)) = files.last_key_value() {
            if *total - last.len() < need {
                break;
            }
            *total -= last.len();
            files.pop_last();
        }
        if *total >= need
            && let (Some((last, _)), Ok(mut threshold)) = (files.last_key_value(), self.threshold.write())
        {
            *threshold = Some(last.clone());
            self.pruning.store(true, Ordering::Relaxed);
        }
    }

    fn note(&self, error: String) {
        if let Ok(mut errors) = self.errors.lock() {
            errors.push(error);
        }
    }
}

/// Searches the files after `lower` (all when `None`) with ripgrep's parallel walker, each thread searching
/// what it finds, until the first `need` matches in walk order are known: once `need` matches are kept, any
/// file or directory that sorts after the one completing them is skipped.
fn parallel_pass(query: &Query<'_>, lower: Option<&Path>, need: usize, should_stop: &dyn Fn() -> bool) -> Pass {
    let state = PassState {
        found: Mutex::new((BTreeMap::new(), 0)),
        threshold: RwLock::new(None),
        pruning: AtomicBool::new(false),
        stop: AtomicBool::new(false),
        errors: Mutex::new(Vec::new()),
    };
    let walk = walker(query).threads(query.threads.max(1)).build_parallel();
    let mut interrupted = false;
    std::thread::scope(|scope| {
        let (done, finished) = std::sync::mpsc::channel::<()>();
        let state = &state;
        scope.spawn(move || {
            walk.run(|| {
                let mut searcher = searcher();
                Box::new(move |item| state.visit(item, query, lower, need, &mut searcher))
            });
            let _ = done.send(());
        });
        // The walk runs on its own threads; this one only watches for cancellation until it ends.
        while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = finished.recv_timeout(CANCEL_POLL) {
            if should_stop() {
                interrupted = true;
                state.stop.store(true, Ordering::Relaxed);
            }
        }
    });
    let threshold = state.threshold.into_inner().unwrap_or(None);
    let files = match state.found.into_inner() {
        Ok((files, _)) => files.into_iter().map(|(path, hits)| FileHits { path, hits }).collect(),
        Err(_) => Vec::new(),
    };
    Pass { files, threshold, skipped: state.errors.into_inner().unwrap_or_default(), interrupted }
}

/// Commits files in walk order, asking the gate in batches, until the limit is reached.
struct Committer<'g, 'a> {
    limit: usize,
    gate: &'g mut Gate<'a>,
    shown: Vec<FileHits>,
    shown_count: usize,
    pending: Vec<FileHits>,
    pending_count: usize,
    error: Option<String>,
}

impl<'g, 'a> Committer<'g, 'a> {
    fn new(limit: usize, gate: &'g mut Gate<'a>) -> Self {
        Self { limit, gate, shown: Vec::new(), shown_count: 0, pending: Vec::new(), pending_count: 0, error: None }
    }

    /// Takes the next file in walk order; `true` once the first `limit` results are known (or the gate
    /// failed, which ends the search).
    fn take(&mut self, file: FileHits) -> bool {
        if file.hits.is_empty() {
            return false;
        }
        self.pending_count += file.hits.len();
        self.pending.push(file);
        // Ask only when the files waiting could complete the limit: one question for most searches.
        if self.shown_count + self.pending_count >= self.limit {
            self.flush();
        }
        self.is_done()
    }

    /// Matches taken so far, checked or not.
    fn found(&self) -> usize {
        self.shown_count + self.pending_count
    }

    /// Takes a pass's files, in walk order, asking the gate about them at once.
    fn take_all(&mut self, files: Vec<FileHits>) {
        for file in files {
            self.pending_count += file.hits.len();
            self.pending.push(file);
        }
        self.flush();
    }

    /// Whether no more results can be shown: the limit is reached, or the gate failed.
    fn is_done(&self) -> bool {
        self.shown_count >= self.limit || self.error.is_some()
    }

    fn flush(&mut self) {
        if self.pending.is_empty() || self.error.is_some() {
            return;
        }
        let pending = std::mem::take(&mut self.pending);
        self.pending_count = 0;
        let paths: Vec<&Path> = pending.iter().map(|file| file.path.as_path()).collect();
        let allowed = match (self.gate)(&paths) {
            Ok(allowed) => allowed,
            Err(error) => {
                // Results that could not be checked are never shown.
                self.error = Some(error);
                return;
            }
        };
        for (index, mut file) in pending.into_iter().enumerate() {
            // A missing answer counts as a refusal: fail closed.
            if !allowed.get(index).copied().unwrap_or(false) || self.shown_count >= self.limit {
                continue;
            }
            file.hits.truncate(self.limit - self.shown_count);
            self.shown_count += file.hits.len();
            self.shown.push(file);
        }
    }

    /// The committed files, their match count, and the gate's error if it failed.
    fn finish(mut self) -> (Vec<FileHits>, usize, Option<String>) {
        self.flush();
        (self.shown, self.shown_count, self.error)
    }
}

/// The walk: ripgrep's default filters (`.gitignore` inside git repositories, `.ignore`, `.rgignore`, git's
/// global and repository excludes, hidden files), symbolic links not followed. The `file_pattern` only ever
/// narrows what those filters let through (ripgrep's `--glob` would override them; see the crate docs).
fn walker(query: &Query<'_>) -> WalkBuilder {
    walk_builder(query.root, query.file_pattern)
}

fn walk_builder(root: &Path, file_pattern: Option<&Override>) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder.follow_links(false).add_custom_ignore_filename(".rgignore");
    if let Some(pattern) = file_pattern {
        let pattern = pattern.clone();
        builder.filter_entry(move |entry| {
            let is_dir = entry.file_type().is_some_and(|kind| kind.is_dir());
            entry.depth() == 0 || !pattern.matched(entry.path(), is_dir).is_ignore()
        });
    }
    builder
}

/// Every file a search of `root` would look at, found by ripgrep's parallel walker on `threads` threads, in
/// no particular order.
pub(crate) fn files(root: &Path, threads: usize) -> Vec<PathBuf> {
    let found = Mutex::new(Vec::new());
    walk_builder(root, None).threads(threads.max(1)).build_parallel().visit(&mut Lister { found: &found });
    found.into_inner().unwrap_or_default()
}

/// Hands each walker thread a [`ListVisitor`].
struct Lister<'a> {
    found: &'a Mutex<Vec<PathBuf>>,
}

impl<'s> ignore::ParallelVisitorBuilder<'s> for Lister<'s> {
    fn build(&mut self) -> Box<dyn ignore::ParallelVisitor + 's> {
        Box::new(ListVisitor { found: self.found, local: Vec::new() })
    }
}

/// Collects one thread's files locally and hands them over once, when the walk drops it.
struct ListVisitor<'a> {
    found: &'a Mutex<Vec<PathBuf>>,
    local: Vec<PathBuf>,
}

impl ignore::ParallelVisitor for ListVisitor<'_> {
    fn visit(&mut self, item: Result<DirEntry, ignore::Error>) -> WalkState {
        if let Ok(entry) = item
            && is_file(&entry)
        {
            self.local.push(entry.into_path());
        }
        WalkState::Continue
    }
}

impl Drop for ListVisitor<'_> {
    fn drop(&mut self) {
        if let Ok(mut found) = self.found.lock() {
            found.append(&mut self.local);
        }
    }
}

/// Whether the walk entry is a regular file to search; symbolic links are never followed, as in ripgrep.
fn is_file(entry: &DirEntry) -> bool {
    entry.file_type().is_some_and(|kind| kind.is_file())
}

/// ripgrep's searcher settings for files found by walking: line numbers, one line of context either side,
/// stop at the first NUL byte (a binary file), never hold a line longer than the heap limit.
fn searcher() -> Searcher {
    SearcherBuilder::new()
        .line_number(true)
        .before_context(1)
        .after_context(1)
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .heap_limit(Some(HEAP_LIMIT))
        .build()
}

/// Searches one file, keeping at most `limit` matches (more could never be shown), in the text of its own
/// encoding.
///
/// The file's first [`SNIFF_LEN`](toolshed_encoding::SNIFF_LEN) bytes are read once: they decide the encoding
/// (toolshed-encoding, as read_file and the edits decide it, so a search sees the text they see) and are then
/// searched as the start of the file. A file that fits in them (most do) is searched as that slice, with the
/// same reads as before; UTF-8, binary files and files with a byte-order mark (grep-searcher's own BOM
/// sniffing transcodes UTF-16) are searched as bytes, exactly as before. Only a file in a legacy encoding, or in
/// UTF-16 without a mark, goes through a decoding reader, so a regex with `é` finds it in a Latin-1 file and its
/// lines are shown decoded.
fn search_file(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    path: &Path,
    limit: usize,
    should_stop: &dyn Fn() -> bool,
) -> io::Result<Vec<Hit>> {
    let mut file = File::open(path)?;
    let mut sink = Collect { limit, hits: Vec::new(), before: Vec::new() };
    let (sample, complete) = toolshed_encoding::read_sample(&mut file)?;
    let legacy = match toolshed_encoding::sniff(&sample, complete) {
        Sniff::Text(found) if !found.is_utf8() && !found.has_bom() => Some(found),
        Sniff::Text(_) | Sniff::Binary => None,
    };
    match (legacy, complete) {
        (None, true) => searcher.search_slice(matcher, &sample, &mut sink)?,
        (None, false) => {
            let reader = io::Cursor::new(sample).chain(file);
            searcher.search_reader(matcher, Interruptible { inner: reader, should_stop }, &mut sink)?
        }
        (Some(found), _) => {
            let reader = Interruptible { inner: io::Cursor::new(sample).chain(file), should_stop };
            searcher.search_reader(matcher, found.decoding_reader(reader), &mut sink)?
        }
    }
    Ok(sink.hits)
}

/// A reader that ends early when the search should stop, so one huge file cannot hold a cancelled or
/// finished search (the searcher reads 64 KiB at a time).
struct Interruptible<'s, R> {
    inner: R,
    should_stop: &'s dyn Fn() -> bool,
}

impl<R: Read> Read for Interruptible<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if (self.should_stop)() {
            return Ok(0);
        }
        self.inner.read(buf)
    }
}

/// Collects a file's matches. Each context line is attached to the match it belongs to: a line before a
/// match to that match, a line after one to that one (the searcher reports each line once, so a line
/// between two close matches goes to the earlier one). This is our fix of Cline, which attaches every
/// context line to the most recent match in the stream.
struct Collect {
    limit: usize,
    hits: Vec<Hit>,
    before: Vec<String>,
}

impl Sink for Collect {
    type Error = io::Error;

    fn matched(&mut self, _searcher: &Searcher, found: &SinkMatch<'_>) -> Result<bool, io::Error> {
        if self.hits.len() >= self.limit {
            return Ok(false);
        }
        self.hits.push(Hit {
            line: found.line_number().unwrap_or(0),
            before: std::mem::take(&mut self.before),
            text: line_text(found.bytes()),
            after: Vec::new(),
        });
        Ok(true)
    }

    fn context(&mut self, _searcher: &Searcher, context: &SinkContext<'_>) -> Result<bool, io::Error> {
        match context.kind() {
            SinkContextKind::Before => self.before.push(line_text(context.bytes())),
            SinkContextKind::After => {
                if let Some(last) = self.hits.last_mut() {
                    last.after.push(line_text(context.bytes()));
                }
                // The last match we can use has its context now.
                if self.hits.len() >= self.limit {
                    return Ok(false);
                }
            }
            SinkContextKind::Other => {}
        }
        Ok(true)
    }
}

/// A line as Cline shows it: decoded (invalid UTF-8 replaced), trailing whitespace and the terminator
/// trimmed, and cut at [`MAX_LINE_BYTES`].
fn line_text(bytes: &[u8]) -> String {
    let bytes = &bytes[..bytes.len().min(MAX_LINE_BYTES + 4)];
    let text = String::from_utf8_lossy(bytes);
    let mut text = text.trim_end().to_owned();
    if text.len() > MAX_LINE_BYTES {
        let mut cut = MAX_LINE_BYTES;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::fs;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        // tempfile's default prefix `.tmp` is a hidden name; the walk would still search it (it is the root),
        // but a visible name keeps the tests honest.
        let dir = tempfile::Builder::new().prefix("search-").tempdir().unwrap();
        for (path, body) in files {
            let full = dir.path().join(path);
            fs::create_dir_all(full.parent().unwrap()).unwrap();
            fs::write(full, body).unwrap();
        }
        dir
    }

    fn run(root: &Path, regex: &str, pattern: Option<&str>, limit: usize, threads: usize) -> Found {
        let matcher = matcher(regex).unwrap();
        let pattern = pattern.map(|glob| file_pattern(root, glob).unwrap());
        let query = Query { root, matcher: &matcher, file_pattern: pattern.as_ref(), limit, threads };
        search(&query, &mut |paths: &[&Path]| Ok(vec![true; paths.len()]), &|| false)
    }

    /// `relative/path:line` of every match, in order.
    fn places(root: &Path, found: &Found) -> Vec<String> {
        found
            .files
            .iter()
            .flat_map(|file| {
                let rel = file.path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                file.hits.iter().map(move |hit| format!("{rel}:{}", hit.line))
            })
            .collect()
    }

    #[test]
    fn context_lines_belong_to_their_own_match() {
        let body = "l1\nl2 TODO a\nl3\nl4\nl5\nl6\nl7 TODO b\nl8\n";
        let dir = tree(&[("a.txt", body)]);
        let found = run(dir.path(), "TODO", None, 300, 2);
        let hits = &found.files[0].hits;
        assert_eq!(
            hits,
            &[
                Hit { line: 2, before: vec!["l1".into()], text: "l2 TODO a".into(), after: vec!["l3".into()] },
                Hit { line: 7, before: vec!["l6".into()], text: "l7 TODO b".into(), after: vec!["l8".into()] },
            ]
        );
        // Two lines apart: the line between them is shown once, after the first.
        let dir = tree(&[("b.txt", "x\nhit 1\nmid\nhit 2\nend\n")]);
        let found = run(dir.path(), "hit", None, 300, 2);
        let shapes: Vec<(usize, usize)> = found.files[0].hits.iter().map(|h| (h.before.len(), h.after.len())).collect();
        assert_eq!(shapes, [(1, 1), (0, 1)]);
    }

    #[test]
    fn results_come_in_sorted_walk_order_whatever_the_threads() {
        let mut files = Vec::new();
        for dir in ["b", "a", "a/z", "c.d", "c"] {
            for name in ["2.txt", "10.txt", "1.txt"] {
                files.push((format!("{dir}/{name}"), "one match\n".to_owned()));
            }
        }
        files.push(("c.txt".to_owned(), "match\n".to_owned()));
        let borrowed: Vec<(&str, &str)> = files.iter().map(|(p, b)| (p.as_str(), b.as_str())).collect();
        let dir = tree(&borrowed);
        let expected = [
            "a/1.txt:1",
            "a/10.txt:1",
            "a/2.txt:1",
            "a/z/1.txt:1",
            "a/z/10.txt:1",
            "a/z/2.txt:1",
            "b/1.txt:1",
            "b/10.txt:1",
            "b/2.txt:1",
            "c/1.txt:1",
            "c/10.txt:1",
            "c/2.txt:1",
            "c.d/1.txt:1",
            "c.d/10.txt:1",
            "c.d/2.txt:1",
            "c.txt:1",
        ];
        for threads in [1, 2, 4] {
            assert_eq!(places(dir.path(), &run(dir.path(), "match", None, 300, threads)), expected);
            // The limit keeps the first matches in that order.
            let found = run(dir.path(), "match", None, 5, threads);
            assert_eq!(places(dir.path(), &found), expected[..5]);
            assert_eq!(found.count, 5);
        }
    }

    #[test]
    fn parallel_passes_keep_the_first_matches_in_walk_order() {
        let files: Vec<(String, String)> =
            (0..500).map(|i| (format!("d{}/f{i:03}.txt", i % 7), format!("x\nneedle {i}\ny\n"))).collect();
        let borrowed: Vec<(&str, &str)> = files.iter().map(|(p, b)| (p.as_str(), b.as_str())).collect();
        let dir = tree(&borrowed);
        let mut all: Vec<String> = files.iter().map(|(p, _)| p.clone()).collect();
        all.sort_by(|a, b| Path::new(a).cmp(Path::new(b)));
        let matcher = matcher("needle").unwrap();
        let query = Query { root: dir.path(), matcher: &matcher, file_pattern: None, limit: 300, threads: 3 };
        let names = |files: &[FileHits]| -> Vec<String> {
            files.iter().map(|f| f.path.strip_prefix(dir.path()).unwrap().to_string_lossy().into_owned()).collect()
        };
        let pass = parallel_pass(&query, None, 300, &|| false);
        assert_eq!(names(&pass.files), all[..300]);
        assert_eq!(pass.threshold, Some(dir.path().join(&all[299])));
        // After a lower bound, the next ones.
        let pass = parallel_pass(&query, Some(&dir.path().join(&all[99])), 100, &|| false);
        assert_eq!(names(&pass.files), all[100..200]);
        // Fewer matches than needed: everything, and no threshold.
        let pass = parallel_pass(&query, Some(&dir.path().join(&all[449])), 100, &|| false);
        assert_eq!(names(&pass.files), all[450..]);
        assert_eq!(pass.threshold, None);
        // The gate refuses a whole directory among the first results: later files fill in, with few questions.
        let mut asked = 0;
        let mut gate = |paths: &[&Path]| {
            asked += 1;
            Ok(paths.iter().map(|p| !p.starts_with(dir.path().join("d1"))).collect())
        };
        let found = search(&query, &mut gate, &|| false);
        let expected: Vec<String> = all.iter().filter(|p| !p.starts_with("d1/")).take(300).cloned().collect();
        assert_eq!(names(&found.files), expected);
        assert_eq!(found.count, 300);
        assert!(asked <= 4, "the gate was asked {asked} times");
    }

    #[test]
    fn ancestors_by_bytes() {
        assert!(is_ancestor(Path::new("/w"), Path::new("/w/a/b.rs")));
        assert!(is_ancestor(Path::new("/w/a"), Path::new("/w/a/b.rs")));
        assert!(is_ancestor(Path::new("/"), Path::new("/w")));
        assert!(!is_ancestor(Path::new("/w/a"), Path::new("/w/a")));
        assert!(!is_ancestor(Path::new("/w/a"), Path::new("/w/ab/c")));
        assert!(!is_ancestor(Path::new("/w/a/b.rs"), Path::new("/w/a")));
    }

    #[test]
    fn one_file_stops_at_the_limit_with_the_last_context_line() {
        let body: String = (1..=10).map(|i| format!("hit {i}\nctx {i}\n")).collect();
        let dir = tree(&[("a.txt", &body)]);
        let found = run(dir.path(), "hit", None, 3, 1);
        let hits = &found.files[0].hits;
        assert_eq!(hits.len(), 3);
        assert_eq!(hits[2].after, ["ctx 3"]);
        assert_eq!(found.count, 3);
    }

    #[test]
    fn hidden_ignored_binary_and_linked_files_are_skipped_as_ripgrep_does() {
        let dir = tree(&[
            (".git/HEAD", "ref: needle\n"),
            (".gitignore", "ignored/\n*.log\n"),
            (".hidden.txt", "needle\n"),
            ("ignored/a.txt", "needle\n"),
            ("debug.log", "needle\n"),
            ("bin.dat", "\0needle\n"),
            ("late-binary.dat", "needle first\n\0needle after\n"),
            (".rgignore", "skip.txt\n"),
            ("skip.txt", "needle\n"),
            ("src/ok.txt", "needle\n"),
        ]);
        #[cfg(unix)]
        std::os::unix::fs::symlink(dir.path().join("src/ok.txt"), dir.path().join("link.txt")).unwrap();
        let found = run(dir.path(), "needle", None, 300, 2);
        // A NUL anywhere in the first buffer (64 KiB) means nothing of the file is searched, as in ripgrep.
        assert_eq!(places(dir.path(), &found), ["src/ok.txt:1"]);
    }

    #[test]
    fn file_pattern_narrows_but_never_widens() {
        let dir = tree(&[
            (".git/config", ""),
            (".gitignore", "gen/\n"),
            ("a.rs", "needle\n"),
            ("b.ts", "needle\n"),
            ("gen/c.rs", "needle\n"),
            (".hidden.rs", "needle\n"),
            ("src/d.rs", "needle\n"),
            ("tests/e.rs", "needle\n"),
        ]);
        assert_eq!(
            places(dir.path(), &run(dir.path(), "needle", Some("*.rs"), 300, 1)),
            ["a.rs:1", "src/d.rs:1", "tests/e.rs:1"]
        );
        assert_eq!(places(dir.path(), &run(dir.path(), "needle", Some("src/*.rs"), 300, 1)), ["src/d.rs:1"]);
        assert_eq!(
            places(dir.path(), &run(dir.path(), "needle", Some("!tests"), 300, 1)),
            ["a.rs:1", "b.ts:1", "src/d.rs:1"]
        );
        assert_eq!(places(dir.path(), &run(dir.path(), "needle", Some("*"), 300, 1)).len(), 4);
    }

    #[test]
    fn long_lines_are_cut_and_bytes_that_are_not_utf8_are_decoded() {
        let long = format!("needle {}\n", "x".repeat(MAX_LINE_BYTES * 2));
        let dir = tree(&[("a.txt", &long)]);
        std::fs::write(dir.path().join("b.txt"), b"needle \xff\xfe end  \r\n").unwrap();
        let found = run(dir.path(), "needle", None, 300, 1);
        assert_eq!(found.files[0].hits[0].text.len(), MAX_LINE_BYTES);
        // Not UTF-8: chardetng's guess for two stray high bytes (read_file shows the same text).
        assert_eq!(found.files[1].hits[0].text, "needle \u{ff}\u{15f} end");
    }

    #[test]
    fn legacy_encodings_are_searched_decoded() {
        let dir = tree(&[("utf8.txt", "un caf\u{e9} noir\n")]);
        std::fs::write(dir.path().join("latin1.txt"), b"ligne un\nun caf\xe9 cr\xe8me\nfin\n").unwrap();
        let le: Vec<u8> = "other\ncaf\u{e9} au lait\n".encode_utf16().flat_map(u16::to_le_bytes).collect();
        std::fs::write(dir.path().join("utf16.txt"), le).unwrap();
        let found = run(dir.path(), "caf\u{e9}", None, 300, 1);
        assert_eq!(places(dir.path(), &found), ["latin1.txt:2", "utf16.txt:2", "utf8.txt:1"]);
        assert_eq!(found.files[0].hits[0].text, "un caf\u{e9} cr\u{e8}me");
        assert_eq!(found.files[0].hits[0].before, ["ligne un"]);
        assert_eq!(found.files[1].hits[0].text, "caf\u{e9} au lait");
    }

    #[test]
    fn a_cancelled_search_stops() {
        let dir = tree(&[("a.txt", "needle\n")]);
        let matcher = matcher("needle").unwrap();
        let query = Query { root: dir.path(), matcher: &matcher, file_pattern: None, limit: 300, threads: 1 };
        let found = search(&query, &mut |paths: &[&Path]| Ok(vec![true; paths.len()]), &|| true);
        assert!(found.interrupted);
        assert!(found.files.is_empty());
    }

    #[test]
    fn a_failing_gate_shows_nothing() {
        let dir = tree(&[("a.txt", "needle\n")]);
        let matcher = matcher("needle").unwrap();
        let query = Query { root: dir.path(), matcher: &matcher, file_pattern: None, limit: 300, threads: 1 };
        let found = search(&query, &mut |_: &[&Path]| Err("host gone".to_owned()), &|| false);
        assert!(found.files.is_empty());
        assert_eq!(found.failed.as_deref(), Some("host gone"));
    }
}
