//! codex's apply-patch tests, ported as data (inputs and expected outputs only; see NOTICE), with a map from
//! every upstream test name to the case here that covers it or to the reason it is not run.
//!
//! The upstream files, from openai/codex `codex-rs/apply-patch` (one stored version each, not one commit):
//! `src/lib.rs` (04f399d4), `src/parser.rs` (0e0fb63d), `src/seek_sequence.rs`, `tests/suite/cli.rs`,
//! `tests/suite/scenarios.rs` and `tests/fixtures/scenarios/*` (71163530), `tests/suite/tool.rs` (3de0e18b).
//!
//! Each case runs the whole tool in a temporary workspace holding `files`, and compares every file and
//! directory afterwards. An error case must leave the workspace exactly as it was. Where our result differs
//! from codex's, the case says why in `note`: those are deliberate (Cline's behaviour, or our all-or-nothing
//! rule).

use crate::tests::{snapshot, workspace};
use pretty_assertions::assert_eq;

/// What a case expects.
enum Expect {
    /// Success, and then exactly these files (path, content).
    Files(&'static [(&'static str, &'static [u8])]),
    /// An error whose text contains this, and nothing changed.
    Error(&'static str),
}

struct Case {
    name: &'static str,
    files: &'static [(&'static str, &'static [u8])],
    patch: &'static str,
    expect: Expect,
    /// Why the expectation differs from codex's, if it does.
    note: &'static str,
}

use Expect::{Error, Files};

const CASES: &[Case] = &[
    Case { name: "literal add", files: &[], patch: "*** Begin Patch\n*** Add File: foo\n+hi\n*** End Patch\n", expect: Files(&[("foo", b"hi\n")]), note: "" },
    Case { name: "heredoc wrapper", files: &[], patch: "apply_patch <<'PATCH'\n*** Begin Patch\n*** Add File: foo\n+hi\n*** End Patch\nPATCH", expect: Files(&[("foo", b"hi\n")]), note: "" },
    Case { name: "heredoc markers around the patch", files: &[("file2.py", b"import foo\n")], patch: "<<'EOF'\n*** Begin Patch\n*** Update File: file2.py\n import foo\n+bar\n*** End Patch\nEOF\n", expect: Files(&[("file2.py", b"import foo\nbar\n")]), note: "codex also refuses mismatched quotes around EOF; Cline's wrapper stripping, which we keep, ignores them" },
    Case { name: "add file", files: &[], patch: "*** Begin Patch\n*** Add File: add.txt\n+ab\n+cd\n*** End Patch", expect: Files(&[("add.txt", b"ab\ncd\n")]), note: "" },
    Case { name: "delete file", files: &[("del.txt", b"x")], patch: "*** Begin Patch\n*** Delete File: del.txt\n*** End Patch", expect: Files(&[]), note: "" },
    Case { name: "update file", files: &[("update.txt", b"foo\nbar\n")], patch: "*** Begin Patch\n*** Update File: update.txt\n@@\n foo\n-bar\n+baz\n*** End Patch", expect: Files(&[("update.txt", b"foo\nbaz\n")]), note: "" },
    Case { name: "move file", files: &[("src.txt", b"line\n")], patch: "*** Begin Patch\n*** Update File: src.txt\n*** Move to: dst.txt\n@@\n-line\n+line2\n*** End Patch", expect: Files(&[("dst.txt", b"line2\n")]), note: "" },
    Case { name: "several chunks in one file", files: &[("multi.txt", b"foo\nbar\nbaz\nqux\n")], patch: "*** Begin Patch\n*** Update File: multi.txt\n@@\n foo\n-bar\n+BAR\n@@\n baz\n-qux\n+QUX\n*** End Patch", expect: Files(&[("multi.txt", b"foo\nBAR\nbaz\nQUX\n")]), note: "" },
    Case { name: "interleaved changes", files: &[("interleaved.txt", b"a\nb\nc\nd\ne\nf\n")], patch: "*** Begin Patch\n*** Update File: interleaved.txt\n@@\n a\n-b\n+B\n@@\n c\n d\n-e\n+E\n@@\n f\n+g\n*** End of File\n*** End Patch", expect: Files(&[("interleaved.txt", b"a\nB\nc\nd\nE\nf\ng\n")]), note: "" },
    Case { name: "crlf kept on update", files: &[("crlf.txt", b"a\r\nb\r\nc\r\n")], patch: "*** Begin Patch\n*** Update File: crlf.txt\n@@\n a\n-b\n+B\n@@\n c\n+d\n*** End of File\n*** End Patch", expect: Files(&[("crlf.txt", b"a\r\nB\r\nc\r\nd\r\n")]), note: "" },
    Case { name: "embedded carriage return kept on append", files: &[("crlf_cr_content.txt", b"foo\r\r\nbar\r\n")], patch: "*** Begin Patch\n*** Update File: crlf_cr_content.txt\n@@\n+BAZ\n*** End of File\n*** End Patch", expect: Files(&[("crlf_cr_content.txt", b"foo\r\r\nbar\r\nBAZ\r\n")]), note: "" },
    Case { name: "pure addition then removal", files: &[("panic.txt", b"line1\nline2\nline3\n")], patch: "*** Begin Patch\n*** Update File: panic.txt\n@@\n+after-context\n+second-line\n@@\n line1\n-line2\n-line3\n+line2-replacement\n*** End Patch", expect: Files(&[("panic.txt", b"line1\nline2-replacement\nafter-context\nsecond-line\n")]), note: "" },
    Case { name: "unicode dash in the file", files: &[("unicode.py", "import asyncio  # local import \u{2013} avoids top\u{2011}level dep\n".as_bytes())], patch: "*** Begin Patch\n*** Update File: unicode.py\n@@\n-import asyncio  # local import - avoids top-level dep\n+import asyncio  # HELLO\n*** End Patch", expect: Files(&[("unicode.py", b"import asyncio  # HELLO\n")]), note: "" },
    Case { name: "first line replaced", files: &[("first.txt", b"foo\nbar\nbaz\n")], patch: "*** Begin Patch\n*** Update File: first.txt\n@@\n-foo\n+FOO\n bar\n*** End Patch", expect: Files(&[("first.txt", b"FOO\nbar\nbaz\n")]), note: "the unified diff codex also returns is not part of Cline's result" },
    Case { name: "last line replaced", files: &[("last.txt", b"foo\nbar\nbaz\n")], patch: "*** Begin Patch\n*** Update File: last.txt\n@@\n foo\n bar\n-baz\n+BAZ\n*** End Patch", expect: Files(&[("last.txt", b"foo\nbar\nBAZ\n")]), note: "" },
    Case { name: "insert at end of file", files: &[("insert.txt", b"foo\nbar\nbaz\n")], patch: "*** Begin Patch\n*** Update File: insert.txt\n@@\n+quux\n*** End of File\n*** End Patch", expect: Files(&[("insert.txt", b"foo\nbar\nbaz\nquux\n")]), note: "" },
    Case { name: "relative path resolves in the workspace", files: &[("source.txt", b"session directory content\n")], patch: "*** Begin Patch\n*** Update File: source.txt\n@@\n-session directory content\n+updated session directory content\n*** End Patch", expect: Files(&[("source.txt", b"updated session directory content\n")]), note: "" },
    Case { name: "read-only file", files: &[("readonly.txt", b"before\n")], patch: "*** Begin Patch\n*** Update File: readonly.txt\n@@\n-before\n+after\n*** End Patch", expect: Error("is read-only"), note: "" },
    Case { name: "no sentinels", files: &[], patch: "bad", expect: Error("Unknown line while parsing: bad"), note: "Cline adds both missing sentinels, so the first line is what fails" },
    Case { name: "only one sentinel", files: &[], patch: "*** Begin Patch\nbad", expect: Error("incomplete sentinels"), note: "" },
    Case { name: "padded sentinels", files: &[], patch: "*** Begin Patch \n*** Add File: foo\n+hi\n *** End Patch", expect: Files(&[("foo", b"hi\n")]), note: "" },
    Case { name: "empty update", files: &[("test.py", b"x\n")], patch: "*** Begin Patch\n*** Update File: test.py\n*** End Patch", expect: Error("Update file hunk for path 'test.py' is empty"), note: "" },
    Case { name: "empty patch", files: &[], patch: "*** Begin Patch\n*** End Patch", expect: Error("no file operations"), note: "" },
    Case { name: "every operation at once", files: &[("path/delete.py", b"gone\n"), ("path/update.py", b"def f():\n    pass\n")], patch: "*** Begin Patch\n*** Add File: path/add.py\n+abc\n+def\n*** Delete File: path/delete.py\n*** Update File: path/update.py\n*** Move to: path/update2.py\n@@ def f():\n-    pass\n+    return 123\n*** End Patch", expect: Files(&[("path/add.py", b"abc\ndef\n"), ("path/update2.py", b"def f():\n    return 123\n")]), note: "" },
    Case { name: "update then add", files: &[("file.py", b"x\n")], patch: "*** Begin Patch\n*** Update File: file.py\n@@\n+line\n*** Add File: other.py\n+content\n*** End Patch", expect: Files(&[("file.py", b"x\nline\n"), ("other.py", b"content\n")]), note: "" },
    Case { name: "update without @@", files: &[("file2.py", b"import foo\n")], patch: "*** Begin Patch\n*** Update File: file2.py\n import foo\n+bar\n*** End Patch", expect: Files(&[("file2.py", b"import foo\nbar\n")]), note: "" },
    Case { name: "absolute paths inside the workspace", files: &[("absolute-update.py", b"old\n")], patch: "*** Begin Patch\n*** Add File: relative-add.py\n+content\n*** Update File: {root}/absolute-update.py\n@@\n-old\n+new\n*** End Patch", expect: Files(&[("absolute-update.py", b"new\n"), ("relative-add.py", b"content\n")]), note: "" },
    Case { name: "invalid hunk header", files: &[("foo.txt", b"x\n")], patch: "*** Begin Patch\n*** Frobnicate File: foo\n*** End Patch", expect: Error("Unknown line while parsing: *** Frobnicate File: foo"), note: "" },
    Case { name: "unprefixed line is context", files: &[("f.txt", b"bad\nx\n")], patch: "*** Begin Patch\n*** Update File: f.txt\n@@\nbad\n-x\n+y\n*** End Patch", expect: Files(&[("f.txt", b"bad\ny\n")]), note: "codex rejects a line without prefix; Cline takes it as context, and so do we" },
    Case { name: "blank line is context", files: &[("f.txt", b"change_context\n\ncontext\nremove\ncontext2\n")], patch: "*** Begin Patch\n*** Update File: f.txt\n@@ change_context\n\n context\n-remove\n+add\n context2\n*** End Patch", expect: Files(&[("f.txt", b"change_context\n\ncontext\nadd\ncontext2\n")]), note: "" },
    Case { name: "end-of-file chunk with only an insertion", files: &[("f.txt", b"a\n")], patch: "*** Begin Patch\n*** Update File: f.txt\n@@\n+line\n*** End of File\n*** End Patch", expect: Files(&[("f.txt", b"a\nline\n")]), note: "" },
    Case { name: "exact match", files: &[("f.txt", b"foo\nbar\nbaz\n")], patch: "*** Begin Patch\n*** Update File: f.txt\n@@\n bar\n-baz\n+BAZ\n*** End Patch", expect: Files(&[("f.txt", b"foo\nbar\nBAZ\n")]), note: "" },
    Case { name: "trailing whitespace ignored", files: &[("f.txt", b"foo   \nbar\t\t\n")], patch: "*** Begin Patch\n*** Update File: f.txt\n@@\n foo\n-bar\n+BAR\n*** End Patch", expect: Files(&[("f.txt", b"foo   \nBAR\n")]), note: "" },
    Case { name: "surrounding whitespace ignored", files: &[("f.txt", b"    foo   \n   bar\t\n")], patch: "*** Begin Patch\n*** Update File: f.txt\n@@\n foo\n-bar\n+BAR\n*** End Patch", expect: Files(&[("f.txt", b"    foo   \nBAR\n")]), note: "" },
    Case { name: "context longer than the file", files: &[("f.txt", b"just one line\n")], patch: "*** Begin Patch\n*** Update File: f.txt\n@@\n too\n many\n-lines\n*** End Patch", expect: Error("chunk 1 of 1 did not match"), note: "" },
    Case { name: "multiple operations", files: &[("modify.txt", b"line1\nline2\n"), ("delete.txt", b"obsolete\n")], patch: "*** Begin Patch\n*** Add File: nested/new.txt\n+created\n*** Delete File: delete.txt\n*** Update File: modify.txt\n@@\n-line2\n+changed\n*** End Patch", expect: Files(&[("modify.txt", b"line1\nchanged\n"), ("nested/new.txt", b"created\n")]), note: "" },
    Case { name: "multiple chunks", files: &[("multi.txt", b"line1\nline2\nline3\nline4\n")], patch: "*** Begin Patch\n*** Update File: multi.txt\n@@\n-line2\n+changed2\n@@\n-line4\n+changed4\n*** End Patch", expect: Files(&[("multi.txt", b"line1\nchanged2\nline3\nchanged4\n")]), note: "" },
    Case { name: "crlf kept from the target file", files: &[("crlf.txt", b"one\r\ntwo\r\nthree\r\n")], patch: "*** Begin Patch\n*** Update File: crlf.txt\n@@\n-one\n+uno\n@@\n two\n+\n+between\n three\n*** End Patch", expect: Files(&[("crlf.txt", b"uno\r\ntwo\r\n\r\nbetween\r\nthree\r\n")]), note: "" },
    Case { name: "change order with repeated lines", files: &[("repeated.txt", b"a\nb\n")], patch: "*** Begin Patch\n*** Update File: repeated.txt\n@@\n-a\n-b\n+b\n+b\n+a\n*** End Patch", expect: Files(&[("repeated.txt", b"b\nb\na\n")]), note: "" },
    Case { name: "repeated context keeps its line ending", files: &[("repeated_context.txt", b"same\r\nsame\n")], patch: "*** Begin Patch\n*** Update File: repeated_context.txt\n@@\n-same\n same\n*** End Patch", expect: Files(&[("repeated_context.txt", b"same\n")]), note: "" },
    Case { name: "untouched mixed line endings", files: &[("mixed.txt", b"one\r\ntwo\nthree\r\nfour\n")], patch: "*** Begin Patch\n*** Update File: mixed.txt\n@@\n one\n two\n-three\n+THREE\n four\n*** End Patch", expect: Files(&[("mixed.txt", b"one\r\ntwo\nTHREE\r\nfour\n")]), note: "" },
    Case { name: "no final line break stays so (crlf)", files: &[("no_trailing_newline.txt", b"one\r\ntwo")], patch: "*** Begin Patch\n*** Update File: no_trailing_newline.txt\n@@\n-one\n+ONE\n*** End Patch", expect: Files(&[("no_trailing_newline.txt", b"ONE\r\ntwo")]), note: "codex adds a final line break; Cline keeps the file's last line as it was, and so do we" },
    Case { name: "move to a new directory", files: &[("old/name.txt", b"old content\n"), ("old/other.txt", b"other\n")], patch: "*** Begin Patch\n*** Update File: old/name.txt\n*** Move to: renamed/dir/name.txt\n@@\n-old content\n+new content\n*** End Patch", expect: Files(&[("old/other.txt", b"other\n"), ("renamed/dir/name.txt", b"new content\n")]), note: "" },
    Case { name: "missing context", files: &[("modify.txt", b"line1\nline2\n")], patch: "*** Begin Patch\n*** Update File: modify.txt\n@@\n-missing\n+changed\n*** End Patch", expect: Error("modify.txt: chunk 1 of 1 did not match"), note: "" },
    Case { name: "delete a missing file", files: &[], patch: "*** Begin Patch\n*** Delete File: missing.txt\n*** End Patch", expect: Error("File not found: missing.txt"), note: "" },
    Case { name: "update a missing file", files: &[], patch: "*** Begin Patch\n*** Update File: missing.txt\n@@\n-old\n+new\n*** End Patch", expect: Error("File not found: missing.txt"), note: "" },
    Case { name: "move overwrites the destination", files: &[("old/name.txt", b"from\n"), ("old/other.txt", b"other\n"), ("renamed/dir/name.txt", b"existing\n")], patch: "*** Begin Patch\n*** Update File: old/name.txt\n*** Move to: renamed/dir/name.txt\n@@\n-from\n+new\n*** End Patch", expect: Files(&[("old/other.txt", b"other\n"), ("renamed/dir/name.txt", b"new\n")]), note: "" },
    Case { name: "add overwrites an existing file", files: &[("duplicate.txt", b"old content\n")], patch: "*** Begin Patch\n*** Add File: duplicate.txt\n+new content\n*** End Patch", expect: Files(&[("duplicate.txt", b"new content\n")]), note: "" },
    Case { name: "delete a directory", files: &[("dir/foo.txt", b"x\n")], patch: "*** Begin Patch\n*** Delete File: dir\n*** End Patch", expect: Error("is a directory"), note: "" },
    Case { name: "no final line break stays so", files: &[("no_newline.txt", b"no newline at end")], patch: "*** Begin Patch\n*** Update File: no_newline.txt\n@@\n-no newline at end\n+first line\n+second line\n*** End Patch", expect: Files(&[("no_newline.txt", b"first line\nsecond line")]), note: "codex adds a final line break; Cline keeps the file's last line as it was, and so do we" },
    Case { name: "a failure after a success changes nothing", files: &[], patch: "*** Begin Patch\n*** Add File: created.txt\n+hello\n*** Update File: missing.txt\n@@\n-old\n+new\n*** End Patch", expect: Error("File not found: missing.txt"), note: "codex keeps created.txt; our patches apply all together or not at all" },
    Case { name: "scenario: add file", files: &[], patch: "*** Begin Patch\n*** Add File: bar.md\n+This is a new file\n*** End Patch\n", expect: Files(&[("bar.md", b"This is a new file\n")]), note: "" },
    Case { name: "scenario: pure addition chunk", files: &[("input.txt", b"line1\nline2\n")], patch: "*** Begin Patch\n*** Update File: input.txt\n@@\n+added line 1\n+added line 2\n*** End Patch\n", expect: Files(&[("input.txt", b"line1\nline2\nadded line 1\nadded line 2\n")]), note: "" },
    Case { name: "scenario: padded hunk header", files: &[("foo.txt", b"old\n")], patch: "*** Begin Patch\n  *** Update File: foo.txt\n@@\n-old\n+new\n*** End Patch\n", expect: Files(&[("foo.txt", b"new\n")]), note: "" },
    Case { name: "scenario: padded patch markers", files: &[("file.txt", b"one\n")], patch: " *** Begin Patch\n*** Update File: file.txt\n@@\n-one\n+two\n*** End Patch \n", expect: Files(&[("file.txt", b"two\n")]), note: "" },
    Case { name: "scenario: padded patch marker lines", files: &[("file.txt", b"one\n")], patch: "*** Begin Patch \n*** Update File: file.txt\n@@\n-one\n+two\n *** End Patch\n", expect: Files(&[("file.txt", b"two\n")]), note: "" },
    Case { name: "scenario: unicode", files: &[("foo.txt", "line1\nnaïve café\nline3\n".as_bytes())], patch: "*** Begin Patch\n*** Update File: foo.txt\n@@\n line1\n-naïve café\n+naïve café ✅\n*** End Patch \n", expect: Files(&[("foo.txt", "line1\nnaïve café ✅\nline3\n".as_bytes())]), note: "" },
    Case { name: "scenario: delete file", files: &[("keep.txt", b"keep\n"), ("obsolete.txt", b"obsolete\n")], patch: "*** Begin Patch\n*** Delete File: obsolete.txt\n*** End Patch\n", expect: Files(&[("keep.txt", b"keep\n")]), note: "" },
    Case { name: "scenario: deletion only", files: &[("lines.txt", b"line1\nline2\nline3\n")], patch: "*** Begin Patch\n*** Update File: lines.txt\n@@\n line1\n-line2\n line3\n*** End Patch\n", expect: Files(&[("lines.txt", b"line1\nline3\n")]), note: "" },
    Case { name: "scenario: end of file marker", files: &[("tail.txt", b"first\nsecond\n")], patch: "*** Begin Patch\n*** Update File: tail.txt\n@@\n first\n-second\n+second updated\n*** End of File\n*** End Patch\n", expect: Files(&[("tail.txt", b"first\nsecond updated\n")]), note: "" },
];

/// A reason a test is not run.
const SHELL: &str = "recognises apply_patch inside a shell command line (argv, heredocs, `cd dir &&`); this tool receives the patch itself as `input`, and the wrapper text is covered by \"heredoc wrapper\"";

/// Where each upstream test went: `(file, test, our case or why it is not run)`.
const MAPPING: &[(&str, &str, Result<&str, &str>)] = &[
    ("src/lib.rs", "test_implicit_patch_single_arg_is_error", Err(SHELL)),
    ("src/lib.rs", "test_implicit_patch_bash_script_is_error", Err(SHELL)),
    ("src/lib.rs", "test_literal", Ok("literal add")),
    ("src/lib.rs", "test_literal_applypatch", Err(SHELL)),
    ("src/lib.rs", "test_heredoc", Ok("heredoc wrapper")),
    ("src/lib.rs", "test_heredoc_non_login_shell", Err(SHELL)),
    ("src/lib.rs", "test_heredoc_wrapped_with_shell_snapshot", Err(SHELL)),
    ("src/lib.rs", "test_heredoc_wrapped_with_shell_snapshot_mismatched_shells", Err(SHELL)),
    ("src/lib.rs", "test_heredoc_applypatch", Err(SHELL)),
    ("src/lib.rs", "test_powershell_heredoc", Err(SHELL)),
    ("src/lib.rs", "test_powershell_heredoc_no_profile", Err(SHELL)),
    ("src/lib.rs", "test_pwsh_heredoc", Err(SHELL)),
    ("src/lib.rs", "test_cmd_heredoc_with_cd", Err(SHELL)),
    ("src/lib.rs", "test_heredoc_with_leading_cd", Err(SHELL)),
    ("src/lib.rs", "test_cd_with_semicolon_is_ignored", Err(SHELL)),
    ("src/lib.rs", "test_cd_or_apply_patch_is_ignored", Err(SHELL)),
    ("src/lib.rs", "test_cd_pipe_apply_patch_is_ignored", Err(SHELL)),
    ("src/lib.rs", "test_cd_single_quoted_path_with_spaces", Err(SHELL)),
    ("src/lib.rs", "test_cd_double_quoted_path_with_spaces", Err(SHELL)),
    ("src/lib.rs", "test_echo_and_apply_patch_is_ignored", Err(SHELL)),
    ("src/lib.rs", "test_apply_patch_with_arg_is_ignored", Err(SHELL)),
    ("src/lib.rs", "test_double_cd_then_apply_patch_is_ignored", Err(SHELL)),
    ("src/lib.rs", "test_cd_two_args_is_ignored", Err(SHELL)),
    ("src/lib.rs", "test_cd_then_apply_patch_then_extra_is_ignored", Err(SHELL)),
    ("src/lib.rs", "test_echo_then_cd_and_apply_patch_is_ignored", Err(SHELL)),
    ("src/lib.rs", "test_add_file_hunk_creates_file_with_contents", Ok("add file")),
    ("src/lib.rs", "test_delete_file_hunk_removes_file", Ok("delete file")),
    ("src/lib.rs", "test_update_file_hunk_modifies_content", Ok("update file")),
    ("src/lib.rs", "test_update_file_hunk_can_move_file", Ok("move file")),
    ("src/lib.rs", "test_multiple_update_chunks_apply_to_single_file", Ok("several chunks in one file")),
    ("src/lib.rs", "test_update_file_hunk_interleaved_changes", Ok("interleaved changes")),
    ("src/lib.rs", "test_preserve_crlf_line_endings_on_update", Ok("crlf kept on update")),
    ("src/lib.rs", "test_preserve_crlf_embedded_carriage_returns_on_append", Ok("embedded carriage return kept on append")),
    ("src/lib.rs", "test_pure_addition_chunk_followed_by_removal", Ok("pure addition then removal")),
    ("src/lib.rs", "test_update_line_with_unicode_dash", Ok("unicode dash in the file")),
    ("src/lib.rs", "test_unified_diff", Ok("several chunks in one file")),
    ("src/lib.rs", "test_unified_diff_first_line_replacement", Ok("first line replaced")),
    ("src/lib.rs", "test_unified_diff_last_line_replacement", Ok("last line replaced")),
    ("src/lib.rs", "test_derive_new_contents_lf_trailing_newline", Ok("update file")),
    ("src/lib.rs", "test_unified_diff_insert_at_eof", Ok("insert at end of file")),
    ("src/lib.rs", "test_unified_diff_interleaved_changes", Ok("interleaved changes")),
    ("src/lib.rs", "test_apply_patch_should_resolve_absolute_paths_in_cwd", Ok("relative path resolves in the workspace")),
    ("src/lib.rs", "test_apply_patch_resolves_move_path_with_effective_cwd", Err(SHELL)),
    ("src/lib.rs", "test_apply_patch_fails_on_write_error", Ok("read-only file")),
    ("src/parser.rs", "test_parse_patch_streaming", Err("codex's streaming parser feeds its progress events; ours reports file cards, tested by tests::streamed_headers_are_split_invariant")),
    ("src/parser.rs", "test_parse_patch_streaming_large_patch_by_character", Err("as test_parse_patch_streaming: tests::streamed_headers_are_split_invariant cuts a patch at many points")),
    ("src/parser.rs", "test_parse_patch", Ok("no sentinels")),
    ("src/parser.rs", "test_parse_patch", Ok("only one sentinel")),
    ("src/parser.rs", "test_parse_patch", Ok("padded sentinels")),
    ("src/parser.rs", "test_parse_patch", Ok("empty update")),
    ("src/parser.rs", "test_parse_patch", Ok("empty patch")),
    ("src/parser.rs", "test_parse_patch", Ok("every operation at once")),
    ("src/parser.rs", "test_parse_patch", Ok("update then add")),
    ("src/parser.rs", "test_parse_patch", Ok("update without @@")),
    ("src/parser.rs", "test_parse_patch_accepts_relative_and_absolute_hunk_paths", Ok("absolute paths inside the workspace")),
    ("src/parser.rs", "test_hunk_resolve_path_accepts_relative_and_absolute_paths", Ok("absolute paths inside the workspace")),
    ("src/parser.rs", "test_parse_patch_lenient", Ok("heredoc markers around the patch")),
    ("src/parser.rs", "test_parse_one_hunk", Ok("invalid hunk header")),
    ("src/parser.rs", "test_update_file_chunk", Ok("unprefixed line is context")),
    ("src/parser.rs", "test_update_file_chunk", Ok("blank line is context")),
    ("src/parser.rs", "test_update_file_chunk", Ok("end-of-file chunk with only an insertion")),
    ("src/parser.rs", "test_update_file_chunk", Ok("empty update")),
    ("src/seek_sequence.rs", "test_exact_match_finds_sequence", Ok("exact match")),
    ("src/seek_sequence.rs", "test_rstrip_match_ignores_trailing_whitespace", Ok("trailing whitespace ignored")),
    ("src/seek_sequence.rs", "test_trim_match_ignores_leading_and_trailing_whitespace", Ok("surrounding whitespace ignored")),
    ("src/seek_sequence.rs", "test_pattern_longer_than_input_returns_none", Ok("context longer than the file")),
    ("tests/suite/tool.rs", "test_apply_patch_cli_applies_multiple_operations", Ok("multiple operations")),
    ("tests/suite/tool.rs", "test_apply_patch_cli_applies_multiple_chunks", Ok("multiple chunks")),
    ("tests/suite/tool.rs", "test_apply_patch_cli_preserves_crlf_from_target_file", Ok("crlf kept from the target file")),
    ("tests/suite/tool.rs", "test_apply_patch_cli_preserves_change_order_with_repeated_lines", Ok("change order with repeated lines")),
    ("tests/suite/tool.rs", "test_apply_patch_cli_preserves_repeated_context_line_ending", Ok("repeated context keeps its line ending")),
    ("tests/suite/tool.rs", "test_apply_patch_cli_preserves_untouched_mixed_line_endings", Ok("untouched mixed line endings")),
    ("tests/suite/tool.rs", "test_apply_patch_cli_uses_crlf_for_new_trailing_newline", Ok("no final line break stays so (crlf)")),
    ("tests/suite/tool.rs", "test_apply_patch_cli_moves_file_to_new_directory", Ok("move to a new directory")),
    ("tests/suite/tool.rs", "test_apply_patch_cli_rejects_empty_patch", Ok("empty patch")),
    ("tests/suite/tool.rs", "test_apply_patch_cli_reports_missing_context", Ok("missing context")),
    ("tests/suite/tool.rs", "test_apply_patch_cli_rejects_missing_file_delete", Ok("delete a missing file")),
    ("tests/suite/tool.rs", "test_apply_patch_cli_rejects_empty_update_hunk", Ok("empty update")),
    ("tests/suite/tool.rs", "test_apply_patch_cli_requires_existing_file_for_update", Ok("update a missing file")),
    ("tests/suite/tool.rs", "test_apply_patch_cli_move_overwrites_existing_destination", Ok("move overwrites the destination")),
    ("tests/suite/tool.rs", "test_apply_patch_cli_add_overwrites_existing_file", Ok("add overwrites an existing file")),
    ("tests/suite/tool.rs", "test_apply_patch_cli_delete_directory_fails", Ok("delete a directory")),
    ("tests/suite/tool.rs", "test_apply_patch_cli_rejects_invalid_hunk_header", Ok("invalid hunk header")),
    ("tests/suite/tool.rs", "test_apply_patch_cli_updates_file_appends_trailing_newline", Ok("no final line break stays so")),
    ("tests/suite/tool.rs", "test_apply_patch_cli_failure_after_partial_success_leaves_changes", Ok("a failure after a success changes nothing")),
    ("tests/suite/cli.rs", "test_apply_patch_cli_add_and_update", Ok("literal add")),
    ("tests/suite/cli.rs", "test_apply_patch_cli_add_and_update", Ok("update file")),
    ("tests/suite/cli.rs", "test_apply_patch_cli_stdin_add_and_update", Err("the patch arrives on the standalone binary's stdin; the same add and update are \"literal add\" and \"update file\"")),
    ("tests/suite/scenarios.rs", "test_apply_patch_scenario_add_file: 001_add_file", Ok("scenario: add file")),
    ("tests/suite/scenarios.rs", "test_apply_patch_scenario_add_file: 002_multiple_operations", Ok("multiple operations")),
    ("tests/suite/scenarios.rs", "test_apply_patch_scenario_add_file: 003_multiple_chunks", Ok("multiple chunks")),
    ("tests/suite/scenarios.rs", "test_apply_patch_scenario_add_file: 004_move_to_new_directory", Ok("move to a new directory")),
    ("tests/suite/scenarios.rs", "test_apply_patch_scenario_add_file: 005_rejects_empty_patch", Ok("empty patch")),
    ("tests/suite/scenarios.rs", "test_apply_patch_scenario_add_file: 006_rejects_missing_context", Ok("missing context")),
    ("tests/suite/scenarios.rs", "test_apply_patch_scenario_add_file: 007_rejects_missing_file_delete", Ok("delete a missing file")),
    ("tests/suite/scenarios.rs", "test_apply_patch_scenario_add_file: 008_rejects_empty_update_hunk", Ok("empty update")),
    ("tests/suite/scenarios.rs", "test_apply_patch_scenario_add_file: 009_requires_existing_file_for_update", Ok("update a missing file")),
    ("tests/suite/scenarios.rs", "test_apply_patch_scenario_add_file: 010_move_overwrites_existing_destination", Ok("move overwrites the destination")),
    ("tests/suite/scenarios.rs", "test_apply_patch_scenario_add_file: 011_add_overwrites_existing_file", Ok("add overwrites an existing file")),
    ("tests/suite/scenarios.rs", "test_apply_patch_scenario_add_file: 012_delete_directory_fails", Ok("delete a directory")),
    ("tests/suite/scenarios.rs", "test_apply_patch_scenario_add_file: 013_rejects_invalid_hunk_header", Ok("invalid hunk header")),
    ("tests/suite/scenarios.rs", "test_apply_patch_scenario_add_file: 014_update_file_appends_trailing_newline", Ok("no final line break stays so")),
    ("tests/suite/scenarios.rs", "test_apply_patch_scenario_add_file: 015_failure_after_partial_success_leaves_changes", Ok("a failure after a success changes nothing")),
    ("tests/suite/scenarios.rs", "test_apply_patch_scenario_add_file: 016_pure_addition_update_chunk", Ok("scenario: pure addition chunk")),
    ("tests/suite/scenarios.rs", "test_apply_patch_scenario_add_file: 017_whitespace_padded_hunk_header", Ok("scenario: padded hunk header")),
    ("tests/suite/scenarios.rs", "test_apply_patch_scenario_add_file: 018_whitespace_padded_patch_markers", Ok("scenario: padded patch markers")),
    ("tests/suite/scenarios.rs", "test_apply_patch_scenario_add_file: 019_unicode_simple", Ok("scenario: unicode")),
    ("tests/suite/scenarios.rs", "test_apply_patch_scenario_add_file: 020_delete_file_success", Ok("scenario: delete file")),
    ("tests/suite/scenarios.rs", "test_apply_patch_scenario_add_file: 020_whitespace_padded_patch_marker_lines", Ok("scenario: padded patch marker lines")),
    ("tests/suite/scenarios.rs", "test_apply_patch_scenario_add_file: 021_update_file_deletion_only", Ok("scenario: deletion only")),
    ("tests/suite/scenarios.rs", "test_apply_patch_scenario_add_file: 022_update_file_end_of_file_marker", Ok("scenario: end of file marker")),
];

/// The files a case expects afterwards, with every directory that holds them.
fn expected(files: &[(&str, &[u8])]) -> std::collections::BTreeMap<String, Option<Vec<u8>>> {
    let mut all = std::collections::BTreeMap::new();
    for (path, bytes) in files {
        let mut dir = std::path::Path::new(path).parent();
        while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
            all.insert(d.to_string_lossy().into_owned(), None);
            dir = d.parent();
        }
        all.insert((*path).to_owned(), Some(bytes.to_vec()));
    }
    all
}

#[test]
fn codex_cases() {
    for case in CASES {
        let (_dir, host) = workspace(case.files);
        if case.name == "read-only file" {
            let path = host.root.join("readonly.txt");
            let mut permissions = std::fs::metadata(&path).unwrap().permissions();
            permissions.set_readonly(true);
            std::fs::set_permissions(&path, permissions).unwrap();
        }
        let before = snapshot(&host.root);
        let patch = case.patch.replace("{root}", &host.root.to_string_lossy());
        match (&case.expect, host.run(&patch)) {
            (Files(files), Ok(_)) => {
                assert_eq!(snapshot(&host.root), expected(files), "case {:?} ({})", case.name, case.note)
            }
            (Error(fragment), Err(message)) => {
                assert!(message.contains(fragment), "case {:?}: {message}", case.name);
                assert_eq!(snapshot(&host.root), before, "case {:?} changed files", case.name);
            }
            (Files(_), Err(message)) => panic!("case {:?} failed: {message}", case.name),
            (Error(_), Ok(text)) => panic!("case {:?} should fail, gave {text}", case.name),
        }
    }
}

#[test]
fn every_upstream_test_is_mapped_to_a_case() {
    for (file, test, target) in MAPPING {
        if let Ok(case) = target {
            assert!(CASES.iter().any(|c| c.name == *case), "{file}: {test} maps to a missing case {case:?}");
        }
    }
    for case in CASES {
        assert!(MAPPING.iter().any(|(_, _, t)| *t == Ok(case.name)), "case {:?} has no upstream test", case.name);
    }
}
