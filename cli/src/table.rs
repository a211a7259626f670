//! Aligned text tables for people: a header, then one row a line, each column as wide as its widest cell.

use toolshed::shown::escape_line;

/// Prints `header` and `rows` with every cell escaped for one line and the columns aligned. A width is counted
/// in characters (no Unicode width table is in the dependency tree; the names and versions shown are ASCII
/// in practice); the last column is not padded, so no line ends in spaces.
pub fn print(header: &[&str], rows: &[Vec<String>]) -> std::io::Result<()> {
    for line in render(header, rows) {
        out!("{line}")?;
    }
    Ok(())
}

fn render(header: &[&str], rows: &[Vec<String>]) -> Vec<String> {
    let shown: Vec<Vec<String>> = std::iter::once(header.iter().map(|cell| (*cell).to_owned()).collect())
        .chain(rows.iter().map(|row| row.iter().map(|cell| escape_line(cell).into_owned()).collect()))
        .collect();
    let mut widths = vec![0; header.len()];
    for row in &shown {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    shown
        .iter()
        .map(|row| {
            let mut line = String::new();
            for (i, (cell, width)) in row.iter().zip(&widths).enumerate() {
                if i + 1 == row.len() {
                    line.push_str(cell);
                } else {
                    line.push_str(cell);
                    line.extend(std::iter::repeat_n(' ', width - cell.chars().count() + 2));
                }
            }
            line
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::render;

    #[test]
    fn columns_are_as_wide_as_their_widest_cell_and_cells_are_escaped() {
        let rows = vec![
            vec!["read_file".to_owned(), "ünï".to_owned(), "0.1.0".to_owned()],
            vec!["x\u{1b}[2K".to_owned(), "p".to_owned(), "-".to_owned()],
        ];
        let lines = render(&["TOOL", "PLUGIN", "VERSION"], &rows);
        pretty_assertions::assert_eq!(
            lines,
            ["TOOL        PLUGIN  VERSION", "read_file   ünï     0.1.0", "x\\u{1b}[2K  p       -",]
        );
    }
}
