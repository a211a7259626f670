//! Row 10, what isolation costs: read_file on a small PDF and a small spreadsheet, whose text is extracted in a
//! child-process job (`[isolation]`), against the same call with isolation off (the extraction inside the
//! host, as before issue 22). A plain small text read, which never starts a child, is measured both ways
//! too: the common path must not get slower. (The read_file crate's extraction function cannot be called
//! here directly: two plugin rlibs in one binary export the same root-module symbol, and the release link
//! refuses the duplicate.)
//!
//! The documents are realistic and small: a one-page PDF of a few lines of Helvetica text (written object
//! by object here) and a 100-row sheet written by rust_xlsxwriter. Every pair is checked to give the same
//! text before anything is timed.

use crate::stats::{Figure, Row, Target, Unit};
use anyhow::{bail, ensure, Context, Result};
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};
use toolshed::{Block, Config, ResultStatus, Runtime, TaskContext, ToolUse};

/// Untimed rounds, then interleaved timed rounds (a child-process read costs milliseconds).
const WARMUP: usize = 3;
const ROUNDS: usize = 31;
/// Reads of the small text file per round and side: the two sides differ by tens of microseconds on a few
/// hundred, which 31 samples did not tell apart (10c read 0.87–1.13× over runs of one build).
const TEXT_READS: usize = 5;
/// The pause after each read: long enough for what the read leaves behind to end (see `rows`).
const QUIET: Duration = Duration::from_millis(10);
/// The sheet's data rows.
const SHEET_ROWS: u32 = 100;

/// The files read, by name inside the row's directory.
const PDF: &str = "small.pdf";
const XLSX: &str = "small.xlsx";
const TEXT: &str = "small.txt";

/// Runs row 10 with the shipped plugins in `plugins` and the `toolshed` binary the children run.
pub fn rows(plugins: &Path, toolshed: &Path, work: &Path) -> Result<Vec<Row>> {
    let dir = work.join("documents");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join(PDF), one_page_pdf())?;
    write_sheet(&dir.join(XLSX))?;
    std::fs::write(dir.join(TEXT), "a small text file\nof three lines\nread whole\n")?;
    // Absolute: the child is started from the task's workspace.
    let binary = toolshed.canonicalize().with_context(|| format!("the toolshed binary {}", toolshed.display()))?;
    toolshed::isolate::set_executable(binary);

    let runtime = |isolation: bool| -> Result<Runtime> {
        let config = Config::from_toml_str(&format!("[isolation]\nenabled = {isolation}\n"))?;
        let runtime = Runtime::builder().plugin_dir(plugins).config(config).build()?;
        if let Some(error) = runtime.load_errors().first() {
            bail!("{error}");
        }
        Ok(runtime)
    };
    let (isolated, inside) = (runtime(true)?, runtime(false)?);
    let driver = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    // Each read in a fresh task, so none is answered by the dedup notice of a repeated read.
    let read = |runtime: &Runtime, path: &'static str| -> Result<(Duration, String)> {
        let task = runtime.task(TaskContext::new(&dir));
        let timed = driver.block_on(runtime.run_on_runtime(move || async move {
            let start = Instant::now();
            let result = task.execute(ToolUse::new("bench", "read_file", json!({ "path": path }))).await;
            (start.elapsed(), result)
        }));
        let (elapsed, result) = timed.context("the runtime stopped")?;
        match (result.status, result.blocks.as_slice()) {
            (ResultStatus::Success, [Block::Text { text }]) => Ok((elapsed, text.clone())),
            _ => bail!("read_file {path} failed: {}", result.to_model_text()),
        }
    };

    // The same answer every way before anything is timed.
    for (path, expected) in [(PDF, "Quarterly report"), (XLSX, "item 101")] {
        let (ours, theirs) = (read(&isolated, path)?.1, read(&inside, path)?.1);
        ensure!(ours == theirs, "{path}: the isolated read differs from the in-process one");
        ensure!(ours.contains(expected), "{path}: {expected:?} is not in its text");
    }
    ensure!(read(&isolated, TEXT)?.1 == read(&inside, TEXT)?.1, "the text read differs with isolation");

    let mut samples: [Vec<f64>; 6] = Default::default();
    for round in 0..WARMUP + ROUNDS {
        let mut order: Vec<usize> = (0..samples.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for which in order {
            let reads = if which >= 4 { TEXT_READS } else { 1 };
            for _ in 0..reads {
                let (elapsed, _) = match which {
                    0 => read(&isolated, PDF)?,
                    1 => read(&inside, PDF)?,
                    2 => read(&isolated, XLSX)?,
                    3 => read(&inside, XLSX)?,
                    4 => read(&isolated, TEXT)?,
                    _ => read(&inside, TEXT)?,
                };
                if round >= WARMUP {
                    samples[which].push(elapsed.as_nanos() as f64);
                }
                // Every read starts from a quiet machine, as a model's reads do: nothing left over from the read
                // before (a worker still looking for its next job, `[plugins] worker_spin_us`; a document read's
                // child process ending). Without the pause the order of the reads decided which side ran beside
                // that: 10c read 1.23–1.27× with no pause, 1.08–1.21× with 2 ms, 0.92–0.99× with 10 ms.
                std::thread::sleep(QUIET);
            }
        }
    }
    let [pdf, pdf_inside, xlsx, xlsx_inside, text, text_inside] = samples.map(|mut s| Figure::with_p99(&mut s));
    let row = |id: &str, what: &str, ours: Figure, name: &str, reference: Figure, target: Target, note: &str| Row {
        id: id.to_owned(),
        what: what.to_owned(),
        unit: Unit::Nanos,
        ours,
        reference_name: name.to_owned(),
        reference,
        target,
        higher_is_better: false,
        note: (!note.is_empty()).then(|| note.to_owned()),
    };
    let child = "a child process per call: spawn, load the plugin copy, extract, answer over a pipe";
    Ok(vec![
        row(
            "10a",
            "read_file: one-page PDF, isolated",
            pdf,
            "the same with isolation off",
            pdf_inside,
            Target::Report,
            child,
        ),
        row(
            "10b",
            &format!("read_file: {SHEET_ROWS}-row .xlsx, isolated"),
            xlsx,
            "the same with isolation off",
            xlsx_inside,
            Target::Report,
            child,
        ),
        row(
            "10c",
            "read_file: a small text file, isolation on",
            text,
            "the same with isolation off",
            text_inside,
            Target::RatioAtMost(1.1),
            "text never starts a child: the common path must not get slower",
        ),
    ])
}

/// A one-page PDF with a title and a few lines of text in Helvetica, its cross-reference table exact.
fn one_page_pdf() -> Vec<u8> {
    let mut content = String::from("BT /F1 18 Tf 72 720 Td (Quarterly report) Tj /F1 11 Tf 0 -28 Td 14 TL\n");
    for n in 1..=12 {
        content.push_str(&format!("(Line {n}: revenue grew by {n} percent over the previous quarter.) Tj T*\n"));
    }
    content.push_str("ET");
    let objects = [
        "<< /Type /Catalog /Pages 2 0 R >>".to_owned(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_owned(),
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R \
         /Resources << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >> >>"
            .to_owned(),
        format!("<< /Length {} >>\nstream\n{content}\nendstream", content.len()),
    ];
    let mut out = String::from("%PDF-1.4\n");
    let mut offsets = Vec::new();
    for (n, object) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.push_str(&format!("{} 0 obj\n{object}\nendobj\n", n + 1));
    }
    let xref = out.len();
    out.push_str(&format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1));
    for offset in offsets {
        out.push_str(&format!("{offset:010} 00000 n \n"));
    }
    out.push_str(&format!("trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n", objects.len() + 1));
    out.into_bytes()
}

/// A sheet of a header and [`SHEET_ROWS`] rows: an id, a name, a price and a quantity.
fn write_sheet(path: &Path) -> Result<()> {
    let mut book = rust_xlsxwriter::Workbook::new();
    let sheet = book.add_worksheet();
    for (col, title) in ["id", "name", "price", "quantity"].into_iter().enumerate() {
        sheet.write_string(0, col as u16, title)?;
    }
    for row in 1..=SHEET_ROWS {
        sheet.write_number(row, 0, f64::from(row))?;
        sheet.write_string(row, 1, format!("item {}", row + 1))?;
        sheet.write_number(row, 2, f64::from(row) * 3.25)?;
        sheet.write_number(row, 3, f64::from(row % 17))?;
    }
    book.save(path)?;
    Ok(())
}
