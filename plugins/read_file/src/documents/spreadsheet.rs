//! Cline's `extractTextFromExcel` over calamine's streaming cell reader: no sheet is ever held as a dense
//! range, so a file naming cell XFD1048576 costs what its cells cost, not 16384 × 1048576 of them.
//!
//! The archive is inflated once, counting, before calamine opens it (calamine unpacks entries with no limit
//! of its own). Rows are built sparsely from the cells the file has, and written as Cline writes them — the
//! cells from column A to the row's last one, empty ones included, joined by tabs — up to
//! `max_sheet_row_cells` cells and `max_sheet_row_chars` characters a row, with a note where a row is cut.
//!
//! Where this differs from Cline on purpose: a row longer than the caps ends in that note instead of running
//! on (Cline writes 16,384 cells for one value in column XFD); past row 50,000 the truncation line is written
//! once and the sheet ends (ExcelJS's `eachRow` ignores the callback's `false`, so Cline writes the line for
//! every later row); and rows a damaged file lists out of order come in the file's order.

use super::archive::{self, Inflate};
use super::limits::{Amount, CappedText, DocumentLimits, Failure};
use calamine::{DataRef, Reader as _, SheetVisible, Xlsx, XlsxFormulaMetadata};
use std::collections::{BTreeMap, HashMap};

/// Cline stops a sheet at this row number.
const MAX_ROWS: u32 = 50_000;

/// The bytes of the smallest cell element, `<c/>`.
const SMALLEST_CELL: u64 = 4;

/// For each visible sheet, `--- Sheet: {name} ---`, then each row with content, a blank line between sheets,
/// the whole trimmed. Formulas show their cached result, or `[Formula: …]` when the file has none.
pub(crate) fn spreadsheet_text(bytes: &[u8], limits: &DocumentLimits) -> Result<String, Failure> {
    archive::open_checked(bytes, limits, Inflate::Everything)?;
    let mut workbook: Xlsx<_> = Xlsx::new(std::io::Cursor::new(bytes)).map_err(Failure::damaged)?;
    let sheets: Vec<String> = workbook
        .sheets_metadata()
        .iter()
        .filter(|sheet| sheet.visible == SheetVisible::Visible)
        .map(|sheet| sheet.name.clone())
        .collect();
    let mut text = CappedText::new(limits.max_document_text_bytes);
    // Two sheets may name the same part, so the parts' sizes do not bound what is streamed: the cells do. The
    // smallest cell, `<c/>`, takes four bytes.
    let max_cells = limits.max_document_unpacked_bytes / SMALLEST_CELL;
    let mut streamed = 0u64;
    'sheets: for name in sheets {
        if !text.push_str(&format!("--- Sheet: {name} ---\n")) {
            break;
        }
        let mut cells = workbook.worksheet_cells_reader(&name).map_err(Failure::damaged)?;
        // Shared formulas by index: the anchor's formula and the cell its references are relative to.
        let mut shared: HashMap<usize, (String, (u32, u32))> = HashMap::new();
        let mut row = Row::new(limits);
        while let Some(cell) = cells.next_cell_with_formula_metadata().map_err(Failure::damaged)? {
            streamed += 1;
            if streamed > max_cells {
                return Err(Failure::over(
                    "the workbook's sheets are read as",
                    Amount::Count(max_cells, "cells (a quarter of the unpacked-bytes limit)"),
                    "max_document_unpacked_bytes",
                ));
            }
            let (row_index, col) = cell.pos;
            let formula = match cell.formula {
                Some(XlsxFormulaMetadata::Normal { formula }) => Some(formula),
                Some(XlsxFormulaMetadata::Shared { shared_index, range, formula }) => {
                    let start = range.map_or(cell.pos, |range| range.start);
                    shared.insert(shared_index, (formula.clone(), start));
                    Some(formula)
                }
                Some(XlsxFormulaMetadata::SharedDerived { shared_index }) if cell.value == DataRef::Empty => shared
                    .get(&shared_index)
                    .and_then(|(formula, start)| calamine::expand_shared_formula(formula, *start, cell.pos).ok()),
                // A derived formula with a cached result shows the result; metadata calamine may add later has
                // no text to show.
                Some(_) | None => None,
            };
            let text_of_cell = match (&cell.value, formula.filter(|f| !f.is_empty())) {
                (DataRef::Empty, Some(formula)) => format!("[Formula: {formula}]"),
                (DataRef::Empty, None) => continue,
                (value, _) => cell_text(value),
            };
            if row_index != row.index {
                if !row.flush(&mut text) {
                    break 'sheets;
                }
                if row_index >= MAX_ROWS {
                    if !text.push_str(&format!("[... truncated at row {} ...]\n", u64::from(row_index) + 1)) {
                        break 'sheets;
                    }
                    break;
                }
                row.index = row_index;
            }
            row.add(col, text_of_cell);
        }
        if !row.flush(&mut text) || !text.push_str("\n") {
            break;
        }
    }
    let cut = text.is_cut();
    if !cut {
        text.trim_end();
    }
    let text = text.finish();
    // `.trim()`: the start too.
    Ok(if cut { text } else { text.trim_start().to_owned() })
}

/// One row's cells, kept sparsely: only the cells the file has, and only those that will be written.
struct Row {
    index: u32,
    cells: BTreeMap<u32, String>,
    /// Cells at or past `max_cells`: how many, the last column, and whether one has visible text.
    beyond: (u64, u32, bool),
    max_cells: u32,
    max_chars: u64,
}

impl Row {
    fn new(limits: &DocumentLimits) -> Self {
        Self {
            index: 0,
            cells: BTreeMap::new(),
            beyond: (0, 0, false),
            max_cells: limits.max_sheet_row_cells,
            max_chars: limits.max_sheet_row_chars,
        }
    }

    fn add(&mut self, col: u32, mut text: String) {
        if col >= self.max_cells {
            let (count, last, visible) = &mut self.beyond;
            *count += 1;
            *last = (*last).max(col);
            *visible |= !text.trim().is_empty();
            return;
        }
        // No cell is written past the row's character cap, so none needs to be kept longer.
        truncate_chars(&mut text, self.max_chars.saturating_add(1));
        self.cells.insert(col, text);
    }

    /// Writes the row when one of its cells has visible text, and empties it; `false` once the text is cut.
    fn flush(&mut self, text: &mut CappedText) -> bool {
        let cells = std::mem::take(&mut self.cells);
        let (beyond, last, beyond_visible) = std::mem::take(&mut self.beyond);
        if !beyond_visible && !cells.values().any(|cell| !cell.trim().is_empty()) {
            return true;
        }
        let mut line = String::new();
        let mut written = 0u32;
        let mut cut_at_chars = false;
        for (col, cell) in cells {
            // One tab between neighbours: the empty cells between two values are empty strings.
            let tabs = (col - written) as usize + usize::from(written > 0);
            line.extend(std::iter::repeat_n('\t', tabs));
            line.push_str(&cell);
            written = col + 1;
            if line.len() as u64 > self.max_chars {
                truncate_chars(&mut line, self.max_chars);
                line.push_str(&format!(
                    " [... the row is cut at {} ([plugins.config.read_file] max_sheet_row_chars) ...]",
                    Amount::Count(self.max_chars, "characters")
                ));
                cut_at_chars = true;
                break;
            }
        }
        if beyond > 0 && !cut_at_chars {
            if written > 0 {
                line.push('\t');
            }
            line.push_str(&format!(
                "[... {beyond} more {} up to column {}: rows are cut at {} ([plugins.config.read_file] max_sheet_row_cells) ...]",
                if beyond == 1 { "cell" } else { "cells" },
                column_name(last),
                Amount::Count(u64::from(self.max_cells), "cells"),
            ));
        }
        line.push('\n');
        text.push_str(&line)
    }
}

/// Cuts `text` to at most `max` bytes, at a character boundary.
fn truncate_chars(text: &mut String, max: u64) {
    let Ok(max) = usize::try_from(max) else { return };
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
}

/// A column's letters, as Excel names them: 0 is `A`, 16383 is `XFD`.
fn column_name(col: u32) -> String {
    let mut name = Vec::new();
    let mut n = u64::from(col) + 1;
    while n > 0 {
        let digit = ((n - 1) % 26) as u8;
        name.push(b'A' + digit);
        n = (n - 1) / 26;
    }
    name.reverse();
    String::from_utf8_lossy(&name).into_owned()
}

/// Cline's `formatCellValue` for one value.
fn cell_text(value: &DataRef<'_>) -> String {
    match value {
        DataRef::Empty => String::new(),
        DataRef::String(s) | DataRef::DateTimeIso(s) | DataRef::DurationIso(s) => s.clone(),
        DataRef::SharedString(s) => (*s).to_owned(),
        DataRef::Int(i) => i.to_string(),
        DataRef::Float(f) => js_number(*f),
        DataRef::Bool(b) => b.to_string(),
        DataRef::Error(e) => format!("[Error: {e}]"),
        // `date.toISOString().split("T")[0]`.
        DataRef::DateTime(date) => {
            let (year, month, day, ..) = date.to_ymd_hms_milli();
            format!("{year:04}-{month:02}-{day:02}")
        }
    }
}

/// A number as JavaScript's `toString` writes it for the values spreadsheets hold: integers without a
/// fraction, others in their shortest round-trip form.
fn js_number(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e21 {
        format!("{f:.0}")
    } else {
        f.to_string()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::documents::archive::tests::zip_of;
    use pretty_assertions::assert_eq;

    /// A workbook of one sheet whose `<sheetData>` is `rows`, written as raw XML: the shapes a spreadsheet
    /// program would never write (a dimension of the whole grid, cells far apart).
    pub(crate) fn raw_xlsx(dimension: &str, rows: &str) -> Vec<u8> {
        let sheet = format!(
            r#"<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><dimension ref="{dimension}"/><sheetData>{rows}</sheetData></worksheet>"#
        );
        zip_of(&[
            ("[Content_Types].xml", br#"<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>"#),
            ("_rels/.rels", br#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>"#),
            ("xl/workbook.xml", br#"<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>"#),
            ("xl/_rels/workbook.xml.rels", br#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>"#),
            ("xl/worksheets/sheet1.xml", sheet.as_bytes()),
        ])
    }

    fn sheet(bytes: &[u8]) -> Result<String, Failure> {
        spreadsheet_text(bytes, &DocumentLimits::default())
    }

    #[test]
    fn formula_errors_read_as_errors() -> Result<(), rust_xlsxwriter::XlsxError> {
        use rust_xlsxwriter::{Formula, Workbook};
        let mut workbook = Workbook::new();
        let sheet1 = workbook.add_worksheet();
        sheet1.write_number(0, 0, 1)?;
        sheet1.write_formula(0, 1, Formula::new("=A1/0").set_result("#DIV/0!"))?;
        let bytes = workbook.save_to_buffer()?;
        assert_eq!(sheet(&bytes).as_deref(), Ok("--- Sheet: Sheet1 ---\n1\t[Error: #DIV/0!]"));
        Ok(())
    }

    #[test]
    fn rows_keep_cline_shape_with_empty_cells_between() -> Result<(), rust_xlsxwriter::XlsxError> {
        use rust_xlsxwriter::{Formula, Workbook};
        let mut workbook = Workbook::new();
        let sheet1 = workbook.add_worksheet();
        sheet1.write_string(0, 1, "b1")?;
        sheet1.write_string(0, 3, "d1")?;
        sheet1.write_string(2, 0, "a3")?;
        sheet1.write_string(3, 0, " ")?;
        sheet1.write_formula(4, 2, Formula::new("=A3&B1"))?;
        let bytes = workbook.save_to_buffer()?;
        // rust_xlsxwriter caches 0 as the formula's result.
        assert_eq!(sheet(&bytes).as_deref(), Ok("--- Sheet: Sheet1 ---\n\tb1\t\td1\na3\n\t\t0"));
        // Without a cached result, the formula shows.
        let rows = r#"<row r="1"><c r="B1"><f>A1*2</f></c></row>"#;
        assert_eq!(sheet(&raw_xlsx("B1", rows)).as_deref(), Ok("--- Sheet: Sheet1 ---\n\t[Formula: A1*2]"));
        Ok(())
    }

    #[test]
    fn corners_of_the_grid_cost_two_cells() {
        // A1 and XFD1048576: calamine's range would be 16384 × 1048576 cells (512 GiB).
        let rows = r#"<row r="1"><c r="A1" t="inlineStr"><is><t>first</t></is></c></row><row r="1048576"><c r="XFD1048576" t="inlineStr"><is><t>last</t></is></c></row>"#;
        assert_eq!(
            sheet(&raw_xlsx("A1:XFD1048576", rows)).as_deref(),
            Ok("--- Sheet: Sheet1 ---\nfirst\n[... truncated at row 1048576 ...]")
        );
    }

    #[test]
    fn a_cell_far_right_on_every_row_is_cut_per_row() {
        let rows: String =
            (1..=50_000).map(|r| format!(r#"<row r="{r}"><c r="XFD{r}"><v>{r}</v></c></row>"#)).collect();
        let text = sheet(&raw_xlsx("A1:XFD50000", &rows)).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 50_001);
        assert_eq!(
            lines[1],
            "[... 1 more cell up to column XFD: rows are cut at 1000 cells ([plugins.config.read_file] max_sheet_row_cells) ...]"
        );
        // Far less than 16384 tabs a row.
        assert!(text.len() < 50_000 * 200, "{}", text.len());
        let limits = DocumentLimits { max_sheet_row_cells: 16_384, ..DocumentLimits::default() };
        let rows = r#"<row r="1"><c r="C1"><v>3</v></c></row>"#;
        assert_eq!(spreadsheet_text(&raw_xlsx("C1", rows), &limits).as_deref(), Ok("--- Sheet: Sheet1 ---\n\t\t3"));
    }

    #[test]
    fn a_long_row_is_cut_at_its_characters() {
        let cells: String = (0..100)
            .map(|c| format!(r#"<c r="{}1" t="inlineStr"><is><t>{}</t></is></c>"#, column_name(c), "x".repeat(50)))
            .collect();
        let limits = DocumentLimits { max_sheet_row_chars: 120, ..DocumentLimits::default() };
        let text =
            spreadsheet_text(&raw_xlsx("A1:CV1", &format!(r#"<row r="1">{cells}</row>"#)), &limits).unwrap_or_default();
        assert_eq!(
            text,
            format!(
                "--- Sheet: Sheet1 ---\n{0}\t{0}\t{1} [... the row is cut at 120 characters ([plugins.config.read_file] max_sheet_row_chars) ...]",
                "x".repeat(50),
                "x".repeat(18)
            )
        );
    }

    #[test]
    fn a_huge_shared_formula_index_costs_nothing() {
        let rows = r#"<row r="1"><c r="A1"><f t="shared" ref="A1:A2" si="4000000000">B1+1</f></c></row><row r="2"><c r="A2"><f t="shared" si="4000000000"/></c></row>"#;
        assert_eq!(
            sheet(&raw_xlsx("A1:A2", rows)).as_deref(),
            Ok("--- Sheet: Sheet1 ---\n[Formula: B1+1]\n[Formula: B2+1]")
        );
    }

    #[test]
    fn sheets_naming_one_part_are_held_to_the_cells_it_could_hold() {
        // A hundred sheets over the same worksheet part of 100 cells: 10,000 cells streamed from a few KiB.
        let rows: String = (1..=100).map(|r| format!(r#"<row r="{r}"><c r="A{r}"><v>{r}</v></c></row>"#)).collect();
        let from = r#"<sheet name="Sheet1" sheetId="1" r:id="rId1"/>"#;
        let to: String = (1..=100).map(|n| format!(r#"<sheet name="S{n}" sheetId="{n}" r:id="rId1"/>"#)).collect();
        let bytes = rezip_replacing(&raw_xlsx("A1:A100", &rows), "xl/workbook.xml", from.as_bytes(), to.as_bytes());
        assert!(sheet(&bytes).is_ok_and(|t| t.contains("--- Sheet: S100 ---\n1\n")));
        let limits = DocumentLimits { max_document_unpacked_bytes: 16 * 1024, ..DocumentLimits::default() };
        assert_eq!(
            spreadsheet_text(&bytes, &limits),
            Err(Failure::Limit("the workbook's sheets are read as more than 4096 cells (a quarter of the unpacked-bytes limit) ([plugins.config.read_file] max_document_unpacked_bytes)".to_owned()))
        );
    }

    /// `zip` with `from` replaced by `to` in the entry `name`.
    fn rezip_replacing(zip: &[u8], name: &str, from: &[u8], to: &[u8]) -> Vec<u8> {
        use std::io::Read;
        let mut archive = zip::ZipArchive::new(std::io::Cursor::new(zip)).unwrap_or_else(|e| panic!("{e}"));
        let mut entries = Vec::new();
        for index in 0..archive.len() {
            let mut entry = archive.by_index(index).unwrap_or_else(|e| panic!("{e}"));
            let entry_name = entry.name().map(std::borrow::Cow::into_owned).unwrap_or_default();
            let mut bytes = Vec::new();
            entry.read_to_end(&mut bytes).unwrap_or_else(|e| panic!("{e}"));
            if entry_name == name {
                let at = memchr::memmem::find(&bytes, from).unwrap_or_else(|| panic!("{name} lacks the text"));
                bytes.splice(at..at + from.len(), to.iter().copied());
            }
            entries.push((entry_name, bytes));
        }
        let borrowed: Vec<(&str, &[u8])> = entries.iter().map(|(n, b)| (n.as_str(), b.as_slice())).collect();
        zip_of(&borrowed)
    }

    #[test]
    fn columns_are_named_as_excel_names_them() {
        assert_eq!(column_name(0), "A");
        assert_eq!(column_name(25), "Z");
        assert_eq!(column_name(26), "AA");
        assert_eq!(column_name(16_383), "XFD");
    }

    #[test]
    fn numbers_read_as_javascript_writes_them() {
        assert_eq!(js_number(3.0), "3");
        assert_eq!(js_number(2.5), "2.5");
        assert_eq!(js_number(-0.125), "-0.125");
    }
}
