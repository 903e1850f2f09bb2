//! The one table renderer of the crate: a [`Table`] is filled once and rendered as aligned
//! text for a terminal ([`Table::render`]), as Markdown ([`Table::markdown`]) or as CSV
//! ([`Table::csv`]), so every report lines its columns up the same way.

use super::formats::csv_field;
use std::fmt::Write as _;

/// Where the cells of a column sit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Align {
    /// Padded on the right, for text; Markdown `---`.
    Left,
    /// Padded on the left, so that the digits of numbers line up; Markdown `---:`.
    #[default]
    Right,
}

/// A row of a table as a type with named fields, in place of a list of cells in header order:
/// the type states its columns once, and [`Table::from_rows`] builds the table, so that no
/// report can put a cell under another column's header.
pub trait Row {
    /// The columns, in the order of [`Row::cells`]: each one's name and alignment.
    fn header() -> Vec<(&'static str, Align)>;

    /// The row's cells as text, one per column of [`Row::header`].
    fn cells(&self) -> Vec<String>;
}

/// A table: a header, one alignment per column, and rows of cells.
#[derive(Debug, Clone, Default)]
pub struct Table {
    header: Vec<String>,
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column names; `left` marks left-aligned (text) columns, and the
    /// columns past its end are right-aligned.
    pub fn new(header: &[&str], left: &[bool]) -> Table {
        let mut t = Table::default();
        for (i, name) in header.iter().enumerate() {
            let align = match left.get(i) {
                Some(true) => Align::Left,
                _ => Align::Right,
            };
            t.column(*name, align);
        }
        t
    }

    /// The table of `rows`, under the columns of their type ([`Row::header`]).
    pub fn from_rows<R: Row>(rows: &[R]) -> Table {
        let mut t = Table::default();
        for (name, align) in R::header() {
            t.column(name, align);
        }
        for r in rows {
            t.row(r.cells());
        }
        t
    }

    /// Renames the column `from` to `to`, for a header that depends on the report (the unit
    /// of the op).
    ///
    /// # Panics
    ///
    /// When the table has no column `from`.
    pub fn rename(&mut self, from: &str, to: impl Into<String>) -> &mut Table {
        let i = self
            .header
            .iter()
            .position(|h| h == from)
            .unwrap_or_else(|| panic!("no column {from:?} in {:?}", self.header));
        self.header[i] = to.into();
        self
    }

    /// Adds a column on the right, for headers built at run time (one group per GPU).
    pub fn column(&mut self, name: impl Into<String>, align: Align) -> &mut Table {
        self.header.push(name.into());
        self.align.push(align);
        self
    }

    /// Adds a row: one cell per column.
    ///
    /// # Panics
    ///
    /// When the row has another number of cells than the table has columns: a report that
    /// builds its rows out of step with its header is a bug, which a cell silently dropped
    /// (a whole column of numbers never printed) would hide.
    pub fn row(&mut self, cells: Vec<String>) {
        assert_eq!(
            cells.len(),
            self.header.len(),
            "a row of {} cells for the {} columns {:?}",
            cells.len(),
            self.header.len(),
            self.header
        );
        self.rows.push(cells);
    }

    /// The header and the rows (every row has a cell per column).
    fn lines(&self) -> impl Iterator<Item = Vec<&str>> + '_ {
        std::iter::once(&self.header).chain(&self.rows).map(|r| {
            (0..self.header.len())
                .map(|i| r.get(i).map_or("", String::as_str))
                .collect()
        })
    }

    /// Aligned text for a terminal: each column padded to its widest cell, two spaces between
    /// columns, no trailing spaces.
    pub fn render(&self) -> String {
        let mut width = vec![0; self.header.len()];
        for line in self.lines() {
            for (w, c) in width.iter_mut().zip(line) {
                *w = (*w).max(c.chars().count());
            }
        }
        let mut out = String::new();
        for line in self.lines() {
            let cells: Vec<String> = line
                .iter()
                .zip(&width)
                .zip(&self.align)
                .map(|((c, &w), align)| match align {
                    Align::Left => format!("{c:<w$}"),
                    Align::Right => format!("{c:>w$}"),
                })
                .collect();
            let _ = writeln!(out, "{}", cells.join("  ").trim_end());
        }
        out
    }

    /// A Markdown (GFM) table: `| a | b |`, then `|---|---:|` (left or right), then the rows.
    /// A `|` inside a cell is escaped, since it would end the cell.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let mut lines = self.lines();
        if let Some(header) = lines.next() {
            markdown_line(&mut out, &header);
        }
        let rule: Vec<&str> = self
            .align
            .iter()
            .map(|a| match a {
                Align::Left => "---",
                Align::Right => "---:",
            })
            .collect();
        let _ = writeln!(out, "|{}|", rule.join("|"));
        for line in lines {
            markdown_line(&mut out, &line);
        }
        out
    }

    /// CSV (RFC 4180): the header line, then [`Table::csv_rows`].
    pub fn csv(&self) -> String {
        let mut out = String::new();
        csv_line(&mut out, self.header.iter().map(String::as_str));
        out.push_str(&self.csv_rows());
        out
    }

    /// The rows as CSV lines without the header, for files that put several tables under one
    /// header.
    pub fn csv_rows(&self) -> String {
        let mut out = String::new();
        for line in self.lines().skip(1) {
            csv_line(&mut out, line);
        }
        out
    }
}

fn markdown_line(out: &mut String, cells: &[&str]) {
    let cells: Vec<String> = cells.iter().map(|c| c.replace('|', "\\|")).collect();
    let _ = writeln!(out, "| {} |", cells.join(" | "));
}

fn csv_line<'a>(out: &mut String, cells: impl IntoIterator<Item = &'a str>) {
    let fields: Vec<String> = cells.into_iter().map(csv_field).collect();
    let _ = writeln!(out, "{}", fields.join(","));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Table {
        let mut t = Table::new(&["name", "ms"], &[true, false]);
        t.row(vec!["a".into(), "1.5".into()]);
        t.row(vec!["longer".into(), "10.25".into()]);
        t
    }

    #[test]
    #[should_panic(expected = "a row of 3 cells for the 2 columns")]
    fn a_row_with_a_cell_too_many_is_rejected() {
        let mut t = Table::new(&["shape", "x cuBLAS"], &[true]);
        t.row(vec!["1x1x1".into(), "1.0".into()]);
        t.row(vec!["1x1x1".into(), "1.0".into(), "regret".into()]);
    }

    #[test]
    #[should_panic(expected = "a row of 1 cells for the 2 columns")]
    fn a_row_with_a_cell_missing_is_rejected() {
        let mut t = Table::new(&["shape", "x cuBLAS"], &[true]);
        t.row(vec!["1x1x1".into()]);
    }

    struct Timing {
        name: &'static str,
        ms: f64,
    }

    impl Row for Timing {
        fn header() -> Vec<(&'static str, Align)> {
            vec![("name", Align::Left), ("ms", Align::Right)]
        }

        fn cells(&self) -> Vec<String> {
            vec![self.name.to_string(), self.ms.to_string()]
        }
    }

    #[test]
    fn typed_rows_make_the_same_table() {
        let rows = [
            Timing { name: "a", ms: 1.5 },
            Timing {
                name: "longer",
                ms: 10.25,
            },
        ];
        let t = Table::from_rows(&rows);
        assert_eq!(t.render(), sample().render());
        assert_eq!(t.markdown(), sample().markdown());
        let mut renamed = Table::from_rows(&rows[..0]);
        renamed.rename("ms", "time ms");
        assert_eq!(renamed.render(), "name  time ms\n");
    }

    #[test]
    fn text_aligns_columns() {
        assert_eq!(
            sample().render(),
            "name       ms\na         1.5\nlonger  10.25\n"
        );
    }

    #[test]
    fn columns_added_one_by_one_and_empty_cells() {
        let mut t = Table::default();
        t.column("x", Align::Right).column("label", Align::Left);
        t.row(vec!["100".into(), String::new()]);
        t.row(vec!["2".into(), "b".into()]);
        assert_eq!(t.render(), "  x  label\n100\n  2  b\n");
        assert_eq!(
            t.markdown(),
            "| x | label |\n|---:|---|\n| 100 |  |\n| 2 | b |\n"
        );
    }

    #[test]
    fn markdown_and_csv() {
        let mut t = sample();
        t.row(vec!["a|b, \"c\"".into(), "3".into()]);
        assert_eq!(
            t.markdown(),
            "| name | ms |\n|---|---:|\n| a | 1.5 |\n| longer | 10.25 |\n| a\\|b, \"c\" | 3 |\n"
        );
        assert_eq!(
            t.csv(),
            "name,ms\na,1.5\nlonger,10.25\n\"a|b, \"\"c\"\"\",3\n"
        );
        assert_eq!(t.csv_rows(), t.csv().split_once('\n').unwrap().1);
    }
}
