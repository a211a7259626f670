//! Files in legacy encodings through the real plugins (issue 25, class 1): read_file decodes them as Cline's
//! jschardet + iconv-lite does, an edit writes the file back in its own encoding (or refuses and leaves it
//! untouched), and search_files matches in the decoded text. Plus the hostile cases: UTF-16 with and without a
//! mark, bytes that do not decode cleanly, characters the encoding lacks, binary that looks like text, a file
//! far larger than the detection prefix.

use crate::util::*;
use pretty_assertions::assert_eq;
use serde_json::json;
use std::path::Path;
use toolshed::{ResultStatus, TaskContext};

fn bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

fn utf16le(text: &str) -> Vec<u8> {
    text.encode_utf16().flat_map(u16::to_le_bytes).collect()
}

/// What read_file shows of a whole file, without the dedup notices (a fresh task each time).
fn read(runtime: &toolshed::Runtime, root: &Path, path: &str) -> String {
    let task = task_in(runtime, root);
    text(&call(&task, "read_file", json!({"path": path})))
}

/// Cline's success text for a write of `path` whose final content is `content`.
fn saved(path: &str, content: &str) -> String {
    format!("The content was successfully saved to {path}.\n\nHere is the full, updated content of the file that was saved:\n\n<final_file_content path=\"{path}\">\n{content}\n</final_file_content>\n\nIMPORTANT: For any future changes to this file, use the final_file_content shown above as your reference. This content reflects the current state of the file, including any auto-formatting (e.g., if you used single quotes but the formatter converted them to double quotes). Always base your SEARCH/REPLACE operations on this final version to ensure accuracy.\n\n")
}

#[test]
fn read_file_decodes_legacy_encodings_and_utf16() {
    let runtime = shipped().build().unwrap();
    let ws = workspace();
    let root = ws.path();
    // Windows-1252 with its own characters (€, curly quotes), and Latin-1 (iconv-lite's and WHATWG's
    // ISO-8859-1 are windows-1252 for these bytes).
    std::fs::write(root.join("w1252.txt"), b"Prix : 5 \x80 \x93net\x94\r\nCaf\xe9 cr\xe8me br\xfbl\xe9e\r\n").unwrap();
    std::fs::write(root.join("latin1.c"), b"/* r\xe9sum\xe9 des donn\xe9es */\nint x;\n").unwrap();
    std::fs::write(root.join("ru.txt"), encoding_rs::WINDOWS_1251.encode("Привет, мир! Это текст.\n").0).unwrap();
    std::fs::write(root.join("ja.txt"), encoding_rs::SHIFT_JIS.encode("日本語のテキストです。\n二行目\n").0).unwrap();
    let mut with_bom = vec![0xFF, 0xFE];
    with_bom.extend(utf16le("première\r\nligne"));
    std::fs::write(root.join("bom16.txt"), with_bom).unwrap();
    std::fs::write(root.join("nobom16.txt"), utf16le("première\nligne\n")).unwrap();

    assert_eq!(
        read(&runtime, root, "w1252.txt"),
        "1 | Prix : 5 € “net”\n2 | Café crème brûlée\n\n(File has 2 lines total.)"
    );
    assert_eq!(
        read(&runtime, root, "latin1.c"),
        "1 | /* résumé des données */\n2 | int x;\n\n(File has 2 lines total.)"
    );
    assert_eq!(read(&runtime, root, "ru.txt"), "1 | Привет, мир! Это текст.\n\n(File has 1 lines total.)");
    assert_eq!(read(&runtime, root, "ja.txt"), "1 | 日本語のテキストです。\n2 | 二行目\n\n(File has 2 lines total.)");
    let both = "1 | première\n2 | ligne\n\n(File has 2 lines total.)";
    assert_eq!(read(&runtime, root, "bom16.txt"), both);
    assert_eq!(read(&runtime, root, "nobom16.txt"), both);
}

#[test]
fn read_file_streams_a_large_legacy_file_by_line() {
    let runtime = shipped().build().unwrap();
    let ws = workspace();
    // 4 MB, far past the 64 KiB the encoding is decided on, accented on every line.
    let body: Vec<u8> = (1..=100_000u32)
        .flat_map(|i| format!("ligne {i:06} \u{0} caf\u{0}\n").into_bytes())
        .map(|b| if b == 0 { 0xE9 } else { b })
        .collect();
    std::fs::write(ws.path().join("big.txt"), &body).unwrap();
    let task = task_in(&runtime, ws.path());
    assert_eq!(
        text(&call(&task, "read_file", json!({"path": "big.txt", "start_line": 99_999}))),
        "99999 | ligne 099999 é café\n100000 | ligne 100000 é café\n\n(File has 100000 lines total.)"
    );
}

#[test]
fn binary_is_refused_with_clines_text_whatever_it_looks_like() {
    let runtime = shipped().build().unwrap();
    let ws = workspace();
    let root = ws.path();
    // NUL bytes; a PDF header; no NUL but control characters in any encoding (binary that looks like text).
    std::fs::write(root.join("a.dat"), b"header\0\x01\x02\xff\xfe").unwrap();
    std::fs::write(root.join("b.txt"), b"%PDF-1.4 plain words\n").unwrap();
    let noisy: Vec<u8> = (0..4000u32).map(|i| [0x01, 0x02, 0x90, 0x03, b'a', 0x7f][i as usize % 6]).collect();
    std::fs::write(root.join("c.txt"), noisy).unwrap();
    for (file, ext) in [("a.dat", ".dat"), ("b.txt", ".txt"), ("c.txt", ".txt")] {
        let task = task_in(&runtime, root);
        let result = call(&task, "read_file", json!({"path": file}));
        assert_eq!(result.status, ResultStatus::Error, "{file}");
        assert_eq!(
            text(&result),
            format!("The tool execution failed with the following error:\n<error>\nError reading file: Cannot read text for file type: {ext}\n</error>")
        );
    }
}

#[test]
fn replace_in_file_edits_a_legacy_file_in_its_own_encoding() {
    let runtime = shipped().yes(true).build().unwrap();
    let ws = workspace();
    let root = ws.path();
    let path = root.join("menu.txt");
    std::fs::write(&path, b"Entr\xe9e : soupe\r\nPlat : cassoulet\r\nDessert : cr\xe8me br\xfbl\xe9e\r\n").unwrap();
    let task = task_in(&runtime, root);
    // The SEARCH text is the decoded text read_file shows.
    let diff = "------- SEARCH\nDessert : crème brûlée\n=======\nDessert : tarte à la crème, 5 €\n+++++++ REPLACE";
    let result = call(&task, "replace_in_file", json!({"path": "menu.txt", "diff": diff}));
    assert_eq!(result.status, ResultStatus::Success, "{}", result.to_model_text());
    assert_eq!(
        text(&result),
        saved("menu.txt", "Entrée : soupe\r\nPlat : cassoulet\r\nDessert : tarte à la crème, 5 €\r\n")
    );
    assert_eq!(bytes(&path), b"Entr\xe9e : soupe\r\nPlat : cassoulet\r\nDessert : tarte \xe0 la cr\xe8me, 5 \x80\r\n");

    // UTF-16 keeps its form: with a mark and CRLF, and without a mark.
    let marked = root.join("marked.txt");
    let mut with_bom = vec![0xFF, 0xFE];
    with_bom.extend(utf16le("clé = 1\r\nautre = 2\r\n"));
    std::fs::write(&marked, with_bom).unwrap();
    let diff = "------- SEARCH\nclé = 1\n=======\nclé = 3\n+++++++ REPLACE";
    let result = call(&task, "replace_in_file", json!({"path": "marked.txt", "diff": diff}));
    assert_eq!(result.status, ResultStatus::Success, "{}", result.to_model_text());
    let mut expected = vec![0xFF, 0xFE];
    expected.extend(utf16le("clé = 3\r\nautre = 2\r\n"));
    assert_eq!(bytes(&marked), expected);
    let unmarked = root.join("unmarked.txt");
    std::fs::write(&unmarked, utf16le("a = 1\nb = 2\n")).unwrap();
    let diff = "------- SEARCH\nb = 2\n=======\nb = ✓\n+++++++ REPLACE";
    let result = call(&task, "replace_in_file", json!({"path": "unmarked.txt", "diff": diff}));
    assert_eq!(result.status, ResultStatus::Success, "{}", result.to_model_text());
    assert_eq!(bytes(&unmarked), utf16le("a = 1\nb = ✓\n"));
}

#[test]
fn a_character_the_encoding_lacks_is_refused_and_the_file_left_alone() {
    let runtime = shipped().yes(true).build().unwrap();
    let ws = workspace();
    let path = ws.path().join("notes.txt");
    let original = b"premi\xe8re ligne\nseconde ligne\n".to_vec();
    std::fs::write(&path, &original).unwrap();
    let task = task_in(&runtime, ws.path());
    let diff = "------- SEARCH\nseconde ligne\n=======\nseconde ligne → suite\n+++++++ REPLACE";
    let result = call(&task, "replace_in_file", json!({"path": "notes.txt", "diff": diff}));
    assert_eq!(result.status, ResultStatus::Error);
    assert!(text(&result).contains(
        "Failed to edit 'notes.txt': the file is encoded in windows-1252, which has no '→' (U+2192, line 2 of the new text). The file was left unchanged: write that character another way (for example as an escape sequence the file's language understands), or leave it out."
    ), "{}", text(&result));
    assert_eq!(bytes(&path), original);
    // A whole-file overwrite keeps the encoding too, and is refused the same way.
    let result = call(&task, "write_to_file", json!({"path": "notes.txt", "content": "tout neuf 😀\n"}));
    assert_eq!(result.status, ResultStatus::Error);
    assert!(text(&result).contains("Failed to write to 'notes.txt': the file is encoded in windows-1252, which has no '😀' (U+1F600, line 1 of the new text)."), "{}", text(&result));
    assert_eq!(bytes(&path), original);
}

#[test]
fn write_to_file_writes_new_files_in_utf8_and_keeps_an_existing_files_encoding() {
    let runtime = shipped().yes(true).build().unwrap();
    let ws = workspace();
    let root = ws.path();
    let task = task_in(&runtime, root);
    let result = call(&task, "write_to_file", json!({"path": "neu.txt", "content": "Grüße, €\n"}));
    assert_eq!(result.status, ResultStatus::Success, "{}", result.to_model_text());
    assert_eq!(bytes(&root.join("neu.txt")), "Grüße, €\n".as_bytes());

    std::fs::write(root.join("alt.txt"), b"Gr\xfc\xdfe\r\nzwei\r\n").unwrap();
    let result = call(&task, "write_to_file", json!({"path": "alt.txt", "content": "Straße\nMüller\n"}));
    assert_eq!(result.status, ResultStatus::Success, "{}", result.to_model_text());
    assert_eq!(text(&result), saved("alt.txt", "Straße\r\nMüller\r\n"));
    assert_eq!(bytes(&root.join("alt.txt")), b"Stra\xdfe\r\nM\xfcller\r\n");
    // read_file shows what was written.
    assert_eq!(read(&runtime, root, "alt.txt"), "1 | Straße\n2 | Müller\n\n(File has 2 lines total.)");
}

#[test]
fn an_edit_never_writes_replacement_characters_over_bytes_that_do_not_decode() {
    let runtime = shipped().yes(true).build().unwrap();
    let ws = workspace();
    let root = ws.path();
    // UTF-8 for the whole detection prefix, then a stray Latin-1 byte: read_file shows U+FFFD there, and an
    // edit, which would write U+FFFD in its place, is refused.
    let mut late = "ok\n".repeat(30_000).into_bytes();
    late.extend_from_slice(b"caf\xe9\nfin\n");
    std::fs::write(root.join("late.txt"), &late).unwrap();
    let task = task_in(&runtime, root);
    let shown = text(&call(&task, "read_file", json!({"path": "late.txt", "start_line": 30_001})));
    assert_eq!(shown, "30001 | caf\u{FFFD}\n30002 | fin\n\n(File has 30002 lines total.)");
    let diff = "------- SEARCH\nfin\n=======\nend\n+++++++ REPLACE";
    let result = call(&task, "replace_in_file", json!({"path": "late.txt", "diff": diff}));
    assert_eq!(result.status, ResultStatus::Error);
    assert!(text(&result).contains("it does not decode cleanly as UTF-8 (invalid bytes at offset 90003), and writing it back would destroy the bytes that do not decode."), "{}", text(&result));
    assert_eq!(bytes(&root.join("late.txt")), late);

    // Shift_JIS text with a lead byte cut off at the end: chardetng rules Shift_JIS out and guesses another
    // encoding. Whatever it guesses, read_file and the edit see the same text, and an edit of the ASCII line
    // either keeps every other byte or is refused with the file untouched.
    let mut sjis = encoding_rs::SHIFT_JIS.encode("日本語のテキストです。よろしく。\nascii line\n").0.into_owned();
    sjis.push(0x81);
    std::fs::write(root.join("cut.txt"), &sjis).unwrap();
    let diff = "------- SEARCH\nascii line\n=======\nASCII LINE\n+++++++ REPLACE";
    let result = call(&task, "replace_in_file", json!({"path": "cut.txt", "diff": diff}));
    let after = bytes(&root.join("cut.txt"));
    match result.status {
        ResultStatus::Success => {
            let mut expected =
                encoding_rs::SHIFT_JIS.encode("日本語のテキストです。よろしく。\nASCII LINE\n").0.into_owned();
            expected.push(0x81);
            assert_eq!(after, expected);
        }
        _ => {
            assert!(text(&result).contains("does not decode cleanly as"), "{}", text(&result));
            assert_eq!(after, sjis);
        }
    }

    // A binary file is not edited at all; a whole-file write replaces it (UTF-8), as before.
    std::fs::write(root.join("blob.bin"), b"\x7fELF\0\0\x01").unwrap();
    let diff = "------- SEARCH\nELF\n=======\nFLE\n+++++++ REPLACE";
    let result = call(&task, "replace_in_file", json!({"path": "blob.bin", "diff": diff}));
    assert!(text(&result).contains("it is not a text file (binary files are not edited)."), "{}", text(&result));
    let result = call(&task, "write_to_file", json!({"path": "blob.bin", "content": "texte\n"}));
    assert_eq!(result.status, ResultStatus::Success, "{}", result.to_model_text());
    assert_eq!(bytes(&root.join("blob.bin")), b"texte\n");
}

#[test]
fn search_files_matches_in_decoded_text() {
    let runtime = shipped().build().unwrap();
    let ws = workspace();
    let root = ws.path();
    std::fs::write(root.join("latin1.txt"), b"avant\nun caf\xe9 cr\xe8me\napr\xe8s\n").unwrap();
    std::fs::write(root.join("utf16.txt"), utf16le("rien\ncafé noir\n")).unwrap();
    std::fs::write(root.join("utf8.txt"), "café au lait\n").unwrap();
    let task = runtime.task(TaskContext::new(root));
    let result = call(&task, "search_files", json!({"path": ".", "regex": "café"}));
    assert_eq!(result.status, ResultStatus::Success, "{}", result.to_model_text());
    assert_eq!(
        text(&result),
        "Found 3 results.\n\nlatin1.txt\n│----\n│avant\n│un café crème\n│après\n│----\n\nutf16.txt\n│----\n│rien\n│café noir\n│----\n\nutf8.txt\n│----\n│café au lait\n│----"
    );
}

#[test]
fn an_edit_whose_bytes_would_read_back_as_other_text_is_refused() {
    let original = b"Le caf\xe9 est tr\xe8s cher \xe0 Paris, m\xeame en \xe9t\xe9.\n".to_vec();
    let runtime = shipped().yes(true).build().unwrap();
    let ws = workspace();
    let root = ws.path();
    let path = root.join("fr.txt");
    std::fs::write(&path, &original).unwrap();
    let task = task_in(&runtime, root);
    // Cut down to one accented word, the bytes would be guessed as ISO-8859-4: read_file would show "naīve".
    let result = call(&task, "write_to_file", json!({"path": "fr.txt", "content": "naïve\n"}));
    assert_eq!(result.status, ResultStatus::Error, "{}", result.to_model_text());
    assert!(text(&result).contains("Failed to write to 'fr.txt': the file is encoded in windows-1252, which is recognised from its bytes alone, and its new bytes would be read as ISO-8859-4: \"naīve\". The file was left unchanged"), "{}", text(&result));
    assert_eq!(bytes(&path), original);
    // The same through replace_in_file: every other accented word removed.
    let diff = "------- SEARCH\nLe café est très cher à Paris, même en été.\n=======\nnaïve\n+++++++ REPLACE";
    let result = call(&task, "replace_in_file", json!({"path": "fr.txt", "diff": diff}));
    assert_eq!(result.status, ResultStatus::Error, "{}", result.to_model_text());
    assert_eq!(bytes(&path), original);
    // An edit that keeps enough of the text is written, and reads back as written.
    let diff = "------- SEARCH\nen été.\n=======\nen été, naïve.\n+++++++ REPLACE";
    let result = call(&task, "replace_in_file", json!({"path": "fr.txt", "diff": diff}));
    assert_eq!(result.status, ResultStatus::Success, "{}", result.to_model_text());
    assert_eq!(
        read(&runtime, root, "fr.txt"),
        "1 | Le café est très cher à Paris, même en été, naïve.\n\n(File has 1 lines total.)"
    );

    // UTF-16 without a mark gains a character whose low byte is zero (一): the file stays text.
    let unmarked = root.join("jp.txt");
    std::fs::write(&unmarked, utf16le("name = value\nother = thing\n")).unwrap();
    let diff = "------- SEARCH\nother = thing\n=======\nother = 一\n+++++++ REPLACE";
    let result = call(&task, "replace_in_file", json!({"path": "jp.txt", "diff": diff}));
    assert_eq!(result.status, ResultStatus::Success, "{}", result.to_model_text());
    assert_eq!(bytes(&unmarked), utf16le("name = value\nother = 一\n"));
    assert_eq!(read(&runtime, root, "jp.txt"), "1 | name = value\n2 | other = 一\n\n(File has 2 lines total.)");
}
