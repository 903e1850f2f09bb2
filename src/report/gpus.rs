//! GPUs side by side on the same work, from the database alone: per shape, each GPU's winning
//! config, its throughput, the fraction of that GPU's own peak it reaches and its ratio to
//! cuBLAS; then geometric means over the shapes every GPU was tuned on.
//!
//! Throughput is GFLOP/s for gemm and GB/s (the fewest bytes the problem moves) for gemv; the
//! peak is the GPU's FP32 peak for gemm and its measured device-to-device copy bandwidth for
//! gemv, so "% of peak" says how close each GPU came to its own ceiling.

use super::{geomean, peak_header, unit, Align, Table};
use crate::db::{Database, Entry, GpuRecord};
use crate::family::space::params_label;
use crate::problem::{Op, Shape};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Why a comparison cannot be made. Each message names the database and what it lacks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompareError {
    /// The database holds no result at all.
    #[error("{db} holds no tuning results yet")]
    Empty {
        /// The database's name (usually its path).
        db: String,
    },
    /// No GPU name matches.
    #[error("no GPU in {db} matches '{query}'; it has: {known}. Pass an exact name or a part of one (case does not matter)")]
    UnknownGpu {
        /// What was asked for.
        query: String,
        /// The database.
        db: String,
        /// The GPUs it has.
        known: String,
    },
    /// Several GPU names match.
    #[error("'{query}' matches several GPUs in {db}: {matches}. Write more of the name, or the exact name")]
    AmbiguousGpu {
        /// What was asked for.
        query: String,
        /// The database.
        db: String,
        /// The GPUs it matches.
        matches: String,
    },
    /// The chosen GPUs have no entry for the op.
    #[error("{db} has no {op} entries for {gpus}")]
    NoEntries {
        /// The op.
        op: Op,
        /// The GPUs asked for.
        gpus: String,
        /// The database.
        db: String,
    },
}

/// Every GPU the database knows, by name: its `[[gpu]]` records and the GPUs of its entries,
/// sorted.
pub fn gpu_names(db: &Database) -> Vec<String> {
    let mut names: Vec<String> = db
        .gpus
        .iter()
        .map(|g| g.name.clone())
        .chain(db.entries.iter().map(|e| e.gpu.clone()))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The GPU of `db` that `query` names: an exact name, else the only name containing `query`
/// ignoring case (`"h100"` finds `"NVIDIA H100 80GB HBM3"`). `origin` names the database in
/// errors.
pub fn resolve_gpu(db: &Database, origin: &str, query: &str) -> Result<String, CompareError> {
    let names = gpu_names(db);
    if names.is_empty() {
        return Err(CompareError::Empty {
            db: origin.to_string(),
        });
    }
    let q = query.trim();
    if let Some(exact) = names.iter().find(|n| *n == q) {
        return Ok(exact.clone());
    }
    let lower = q.to_lowercase();
    let matches: Vec<&String> = names
        .iter()
        .filter(|n| !lower.is_empty() && n.to_lowercase().contains(&lower))
        .collect();
    match matches.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(CompareError::UnknownGpu {
            query: query.to_string(),
            db: origin.to_string(),
            known: names.join(", "),
        }),
        many => Err(CompareError::AmbiguousGpu {
            query: query.to_string(),
            db: origin.to_string(),
            matches: many
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

/// The GPUs `queries` name, in that order and each once; every GPU of the database (sorted by
/// name) when `queries` is empty.
pub fn resolve_gpus(
    db: &Database,
    origin: &str,
    queries: &[String],
) -> Result<Vec<String>, CompareError> {
    if queries.is_empty() {
        let names = gpu_names(db);
        if names.is_empty() {
            return Err(CompareError::Empty {
                db: origin.to_string(),
            });
        }
        return Ok(names);
    }
    let mut out: Vec<String> = Vec::new();
    for q in queries {
        let name = resolve_gpu(db, origin, q)?;
        if !out.contains(&name) {
            out.push(name);
        }
    }
    Ok(out)
}

/// A GPU name without the vendor prefixes (`"NVIDIA GeForce RTX 4060"` → `"RTX 4060"`), for
/// column headers.
pub fn short_gpu_name(name: &str) -> &str {
    let s = name.strip_prefix("NVIDIA ").unwrap_or(name);
    let s = s.strip_prefix("GeForce ").unwrap_or(s);
    if s.is_empty() {
        name
    } else {
        s
    }
}

/// One GPU of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuColumn {
    /// The GPU's full name, as recorded.
    pub name: String,
    /// Its `[[gpu]]` record, when the database has one.
    pub record: Option<GpuRecord>,
    /// The peak "% of peak" is relative to: FP32 GFLOP/s (gemm) or copy bandwidth GB/s (gemv);
    /// `None` when unknown.
    pub peak: Option<f64>,
}

impl GpuColumn {
    /// The name without vendor prefixes.
    pub fn short(&self) -> &str {
        short_gpu_name(&self.name)
    }

    /// `sm_90, 132 SMs, FP32 peak 66.9 TFLOP/s, copy 2989 GB/s`, or `no [[gpu]] record`.
    pub fn describe(&self) -> String {
        match &self.record {
            Some(g) => format!(
                "{}, {} SMs, FP32 peak {:.1} TFLOP/s{}",
                g.arch,
                g.sms,
                g.fp32_peak_gflops / 1e3,
                g.copy_bandwidth_gbs
                    .map(|b| format!(", copy {b:.0} GB/s"))
                    .unwrap_or_default()
            ),
            None => "no [[gpu]] record".to_string(),
        }
    }
}

/// One GPU's result for one shape.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cell {
    /// The winning family.
    pub family: String,
    /// Its parameters.
    pub params: BTreeMap<String, i64>,
    /// `family BM=.. BN=..`.
    pub config: String,
    /// Median kernel time, milliseconds.
    pub median_ms: f64,
    /// GFLOP/s (gemm) or GB/s (gemv).
    pub throughput: f64,
    /// Percent of the GPU's own peak ([`GpuColumn::peak`]).
    pub pct_of_peak: Option<f64>,
    /// cuBLAS time over this time (above 1: faster than cuBLAS).
    pub vs_cublas: f64,
    /// The search behind it was cut short.
    pub partial: bool,
}

impl Cell {
    fn of(e: &Entry, op: Op, peak: Option<f64>) -> Cell {
        let throughput = match op {
            Op::Gemm => e.gflops,
            Op::Gemv => e.gbs,
        };
        Cell {
            family: e.family.clone(),
            params: e.params.clone(),
            config: crate::family::space::config_label(&e.family, &e.params),
            median_ms: e.median_ms,
            throughput,
            pct_of_peak: peak.filter(|p| *p > 0.0).map(|p| throughput / p * 100.0),
            vs_cublas: e.vs_cublas,
            partial: e.partial == Some(true),
        }
    }
}

/// One shape: a cell per GPU, `None` where that GPU was not tuned on it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// The shape.
    pub shape: Shape,
    /// Its label (`MxNxK` or `MxK`).
    pub label: String,
    /// One per [`Comparison::gpus`], in order.
    pub cells: Vec<Option<Cell>>,
}

/// The geometric-mean throughput ratio of one GPU over another.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ratio {
    /// The GPU on top.
    pub numerator: String,
    /// The GPU below.
    pub denominator: String,
    /// Geometric mean over the shared shapes of throughput(numerator) / throughput(denominator).
    pub geomean: Option<f64>,
}

/// The geometric means of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// The op.
    pub op: Op,
    /// Shapes that every GPU of the comparison was tuned on; the means are over these.
    pub shared_shapes: usize,
    /// The first GPU over each of the others (`A / B`, `A / C`, ...).
    pub ratios: Vec<Ratio>,
    /// Each GPU's geometric mean of x cuBLAS over the shared shapes, in column order.
    pub vs_cublas: Vec<(String, Option<f64>)>,
}

/// One op's shapes on several GPUs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// The op.
    pub op: Op,
    /// The GPUs, in column order.
    pub gpus: Vec<GpuColumn>,
    /// One row per shape.
    pub rows: Vec<Row>,
}

/// Builds the comparison of `gpus` (full names, e.g. from [`resolve_gpus`]) for `op`. The rows
/// are `shapes` in that order when given (a suite), else every shape any of the GPUs was tuned
/// on, sorted by `(m, n, k)`.
pub fn compare_gpus(
    db: &Database,
    op: Op,
    gpus: &[String],
    shapes: Option<&[Shape]>,
) -> Comparison {
    let columns: Vec<GpuColumn> = gpus
        .iter()
        .map(|name| {
            let record = db.gpu(name).cloned();
            let peak = record.as_ref().and_then(|g| match op {
                Op::Gemm => Some(g.fp32_peak_gflops),
                Op::Gemv => g.copy_bandwidth_gbs,
            });
            GpuColumn {
                name: name.clone(),
                record,
                peak,
            }
        })
        .collect();
    let shapes: Vec<Shape> = match shapes {
        Some(s) => s.to_vec(),
        None => {
            let mut s: Vec<Shape> = db
                .entries
                .iter()
                .filter(|e| e.op == op && gpus.contains(&e.gpu))
                .map(Entry::shape)
                .collect();
            s.sort();
            s.dedup();
            s
        }
    };
    let rows = shapes
        .into_iter()
        .map(|shape| Row {
            shape,
            label: shape.label(op),
            cells: columns
                .iter()
                .map(|c| db.get(&c.name, op, shape).map(|e| Cell::of(e, op, c.peak)))
                .collect(),
        })
        .collect();
    Comparison {
        op,
        gpus: columns,
        rows,
    }
}

/// `1234` for large values, `12.3` for small ones.
fn fmt_throughput(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

fn fmt_opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{v:.digits$}"))
}

/// Column tags `A`, `B`, ... (then `G27`, ... past Z).
fn tag(i: usize) -> String {
    match u8::try_from(i).ok().filter(|i| *i < 26) {
        Some(i) => char::from(b'A' + i).to_string(),
        None => format!("G{}", i + 1),
    }
}

impl Comparison {
    /// Whether no GPU has a result for any row.
    pub fn is_empty(&self) -> bool {
        self.rows
            .iter()
            .all(|r| r.cells.iter().all(Option::is_none))
    }

    /// The unit of [`Cell::throughput`].
    pub fn unit(&self) -> &'static str {
        unit(self.op)
    }

    /// Rows where every GPU has a result.
    fn shared(&self) -> impl Iterator<Item = (&Row, Vec<&Cell>)> {
        self.rows.iter().filter_map(|r| {
            let cells: Option<Vec<&Cell>> = r.cells.iter().map(Option::as_ref).collect();
            cells.map(|c| (r, c))
        })
    }

    /// Throughput of GPU `a` over GPU `b` for one row, when both have a result.
    fn row_ratio(row: &Row, a: usize, b: usize) -> Option<f64> {
        match (row.cells.get(a)?, row.cells.get(b)?) {
            (Some(x), Some(y)) if y.throughput > 0.0 => Some(x.throughput / y.throughput),
            _ => None,
        }
    }

    /// The geometric means over the shapes every GPU has.
    pub fn summary(&self) -> Summary {
        let shared: Vec<(&Row, Vec<&Cell>)> = self.shared().collect();
        let ratios = (1..self.gpus.len())
            .map(|j| Ratio {
                numerator: self.gpus[0].name.clone(),
                denominator: self.gpus[j].name.clone(),
                geomean: geomean(
                    shared
                        .iter()
                        .map(|(_, c)| c[0].throughput / c[j].throughput),
                ),
            })
            .collect();
        let vs_cublas = self
            .gpus
            .iter()
            .enumerate()
            .map(|(i, g)| {
                (
                    g.name.clone(),
                    geomean(shared.iter().map(|(_, c)| c[i].vs_cublas)),
                )
            })
            .collect();
        Summary {
            op: self.op,
            shared_shapes: shared.len(),
            ratios,
            vs_cublas,
        }
    }

    /// The summary as one line, e.g. `gemm: NVIDIA H200 / NVIDIA H100 80GB HBM3 throughput
    /// 1.012x (geometric mean over 8 shared shapes); x cuBLAS (geometric mean): ...`.
    pub fn summary_line(&self) -> String {
        let s = self.summary();
        let plural = if s.shared_shapes == 1 { "" } else { "s" };
        let cublas = s
            .vs_cublas
            .iter()
            .map(|(g, v)| format!("{g} {}", fmt_opt(*v, 3)))
            .collect::<Vec<_>>()
            .join(", ");
        match self.gpus.len() {
            0 => format!("{}: no GPU", self.op),
            1 => format!(
                "{}: {} on {} shape{plural}; x cuBLAS (geometric mean): {cublas}",
                self.op, self.gpus[0].name, s.shared_shapes
            ),
            _ if s.shared_shapes == 0 => format!(
                "{}: no shape was tuned on every GPU ({}), so there is no ratio",
                self.op,
                self.gpus
                    .iter()
                    .map(|g| g.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            _ => {
                let ratios = s
                    .ratios
                    .iter()
                    .map(|r| {
                        format!(
                            "{} / {} throughput {}x",
                            r.numerator,
                            r.denominator,
                            fmt_opt(r.geomean, 3)
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(", ");
                format!(
                    "{}: {ratios} (geometric mean over {} shared shape{plural}); x cuBLAS (geometric mean): {cublas}",
                    self.op, s.shared_shapes
                )
            }
        }
    }

    /// Shapes some GPU lacks, as `shape not tuned on GPU, ...` notes.
    fn missing_notes(&self) -> Vec<String> {
        self.rows
            .iter()
            .filter_map(|r| {
                let missing: Vec<&str> = r
                    .cells
                    .iter()
                    .zip(&self.gpus)
                    .filter(|(c, _)| c.is_none())
                    .map(|(_, g)| g.name.as_str())
                    .collect();
                (!missing.is_empty())
                    .then(|| format!("{} not tuned on {}", r.label, missing.join(", ")))
            })
            .collect()
    }

    /// One row per shape: per GPU (named by `names`, in column order) its config,
    /// throughput, % of peak (headed `peak`) and x cuBLAS, or `not_tuned` and dashes; then the
    /// first GPU's throughput over each other's, headed by the two names joined with `per`.
    fn shape_table(&self, names: &[&str], peak: &str, per: &str, not_tuned: &str) -> Table {
        let mut t = Table::new(&["shape"], &[true]);
        for n in names {
            t.column(format!("{n} config"), Align::Left)
                .column(format!("{n} {}", self.unit()), Align::Right)
                .column(format!("{n} {peak}"), Align::Right)
                .column(format!("{n} x cuBLAS"), Align::Right);
        }
        for n in names.iter().skip(1) {
            t.column(format!("{}{per}{n}", names[0]), Align::Right);
        }
        for r in &self.rows {
            let mut cells = vec![r.label.clone()];
            for c in &r.cells {
                match c {
                    Some(c) => cells.extend([
                        format!("{}{}", c.config, if c.partial { " (partial)" } else { "" }),
                        fmt_throughput(c.throughput),
                        fmt_opt(c.pct_of_peak, 1),
                        format!("{:.3}", c.vs_cublas),
                    ]),
                    None => cells.extend([not_tuned.into(), "-".into(), "-".into(), "-".into()]),
                }
            }
            for j in 1..self.gpus.len() {
                cells.push(fmt_opt(Self::row_ratio(r, 0, j), 3));
            }
            t.row(cells);
        }
        t
    }

    /// A terminal table: a legend naming each GPU `A`, `B`, ..., one row per shape with each
    /// GPU's config, throughput, % of peak and x cuBLAS, the `A/B` throughput ratio per shape,
    /// then the summary line.
    pub fn table(&self) -> String {
        let peak = match self.op {
            Op::Gemm => "FP32 peak",
            Op::Gemv => "copy bandwidth",
        };
        let mut out = format!(
            "{} on {} GPU{}, {} shape{} (throughput in {}; % of each GPU's own {peak})\n",
            self.op,
            self.gpus.len(),
            if self.gpus.len() == 1 { "" } else { "s" },
            self.rows.len(),
            if self.rows.len() == 1 { "" } else { "s" },
            self.unit()
        );
        for (i, g) in self.gpus.iter().enumerate() {
            let _ = writeln!(out, "  {} = {} ({})", tag(i), g.name, g.describe());
        }
        // Tags keep the header narrow; the legend above says which GPU each one is.
        let tags: Vec<String> = (0..self.gpus.len()).map(tag).collect();
        let tags: Vec<&str> = tags.iter().map(String::as_str).collect();
        out.push('\n');
        out.push_str(
            &self
                .shape_table(&tags, "% peak", "/", "(not tuned)")
                .render(),
        );
        out.push('\n');
        out.push_str(&self.summary_line());
        out.push('\n');
        out
    }

    /// A Markdown section: a heading, the GPUs, a table (one row per shape), the summary.
    pub fn markdown(&self) -> String {
        let names: Vec<&str> = self.gpus.iter().map(|g| g.name.as_str()).collect();
        let mut out = format!("### {}: {}\n\n", self.op, names.join(" vs "));
        for g in &self.gpus {
            let _ = writeln!(out, "- {}: {}", g.name, g.describe());
        }
        let short: Vec<&str> = self.gpus.iter().map(GpuColumn::short).collect();
        let table = self.shape_table(&short, peak_header(self.op), " / ", "not tuned");
        let _ = write!(out, "\n{}", table.markdown());
        let _ = writeln!(out, "\n{}", self.summary_line());
        let missing = self.missing_notes();
        if !missing.is_empty() {
            let _ = writeln!(out, "\nNot in the means: {}.", missing.join("; "));
        }
        out
    }

    /// CSV lines without the header ([`CSV_HEADER`]): one per shape per GPU with a result, so
    /// several comparisons (ops) can share one file.
    pub fn csv_rows(&self) -> String {
        let header: Vec<&str> = CSV_HEADER.split(',').collect();
        let mut t = Table::new(&header, &[]);
        for r in &self.rows {
            for (g, c) in self.gpus.iter().zip(&r.cells) {
                let Some(c) = c else { continue };
                t.row(vec![
                    self.op.name().to_string(),
                    r.label.clone(),
                    r.shape.m.to_string(),
                    r.shape.n.to_string(),
                    r.shape.k.to_string(),
                    g.name.clone(),
                    c.family.clone(),
                    params_label(&c.params),
                    c.median_ms.to_string(),
                    c.throughput.to_string(),
                    self.unit().to_string(),
                    c.pct_of_peak.map(|p| p.to_string()).unwrap_or_default(),
                    c.vs_cublas.to_string(),
                ]);
            }
        }
        t.csv_rows()
    }

    /// The comparison as CSV: [`CSV_HEADER`] then [`Comparison::csv_rows`].
    pub fn csv(&self) -> String {
        format!("{CSV_HEADER}\n{}", self.csv_rows())
    }

    /// The comparison and its summary as a JSON value.
    pub fn json(&self) -> serde_json::Value {
        let summary = self.summary();
        serde_json::json!({
            "op": self.op,
            "unit": self.unit(),
            "gpus": self.gpus,
            "rows": self.rows,
            "summary": {
                "line": self.summary_line(),
                "shared_shapes": summary.shared_shapes,
                "ratios": summary.ratios,
                "vs_cublas_geomean": summary
                    .vs_cublas
                    .iter()
                    .map(|(g, v)| serde_json::json!({"gpu": g, "geomean": v}))
                    .collect::<Vec<_>>(),
            },
        })
    }
}

/// The header of [`Comparison::csv`]: long format, one line per shape per GPU.
pub const CSV_HEADER: &str =
    "op,shape,m,n,k,gpu,family,params,median_ms,throughput,unit,pct_of_peak,vs_cublas";

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed H200 database plus a made-up second GPU: the same results, 25 % slower
    /// on gemm 2048^3, not tuned on 4096^3.
    fn db() -> Database {
        let text = include_str!("../../tests/data/h200-db.toml");
        let mut db = Database::from_toml_str(text, "h200-db.toml").unwrap();
        let mut rec = db.gpus[0].clone();
        rec.name = "NVIDIA GeForce RTX 4060".to_string();
        rec.fp32_peak_gflops = 15_110.0;
        rec.copy_bandwidth_gbs = Some(250.0);
        db.upsert_gpu(rec);
        let others: Vec<Entry> = db
            .entries
            .iter()
            .filter(|e| e.shape != "4096x4096x4096")
            .cloned()
            .map(|mut e| {
                e.gpu = "NVIDIA GeForce RTX 4060".to_string();
                if e.shape == "2048x2048x2048" {
                    e.gflops /= 1.25;
                    e.median_ms *= 1.25;
                    e.vs_cublas = 1.1;
                }
                e
            })
            .collect();
        for e in others {
            db.upsert(e);
        }
        db
    }

    #[test]
    fn gpu_names_resolve_exactly_or_by_unambiguous_substring() {
        let db = db();
        assert_eq!(resolve_gpu(&db, "x", "h200").unwrap(), "NVIDIA H200");
        assert_eq!(resolve_gpu(&db, "x", "NVIDIA H200").unwrap(), "NVIDIA H200");
        assert_eq!(
            resolve_gpu(&db, "x", "rtx").unwrap(),
            "NVIDIA GeForce RTX 4060"
        );
        let err = resolve_gpu(&db, "db.toml", "nvidia").unwrap_err();
        assert!(matches!(err, CompareError::AmbiguousGpu { .. }), "{err}");
        assert!(err.to_string().contains("NVIDIA H200"), "{err}");
        let msg = resolve_gpu(&db, "db.toml", "a100").unwrap_err().to_string();
        assert!(
            msg.contains("'a100'") && msg.contains("db.toml") && msg.contains("RTX 4060"),
            "{msg}"
        );
        assert!(matches!(
            resolve_gpu(&Database::new(), "e.toml", "h100"),
            Err(CompareError::Empty { .. })
        ));
        let both = resolve_gpus(&db, "x", &["h200".into(), "4060".into(), "H200".into()]);
        assert_eq!(both.unwrap(), ["NVIDIA H200", "NVIDIA GeForce RTX 4060"]);
        assert_eq!(resolve_gpus(&db, "x", &[]).unwrap().len(), 2);
        assert_eq!(short_gpu_name("NVIDIA GeForce GTX 1080 Ti"), "GTX 1080 Ti");
        assert_eq!(short_gpu_name("NVIDIA H200"), "H200");
    }

    #[test]
    fn table_rows_ratios_and_geomeans() {
        let db = db();
        let gpus = resolve_gpus(&db, "x", &["h200".into(), "4060".into()]).unwrap();
        let c = compare_gpus(&db, Op::Gemm, &gpus, None);
        assert_eq!(c.rows.len(), 2);
        assert_eq!(c.rows[0].label, "2048x2048x2048");
        let h200 = c.rows[0].cells[0].as_ref().unwrap();
        assert_eq!(
            h200.config,
            "gemm_tile2d BK=16 BM=256 BN=128 PREFETCH=1 TM=8 TN=16"
        );
        assert!((h200.throughput - 45149.349).abs() < 0.01);
        assert!((h200.pct_of_peak.unwrap() - 67.48).abs() < 0.01);
        let rtx = c.rows[0].cells[1].as_ref().unwrap();
        let expected = 45149.34935893925 / 1.25 / 15_110.0 * 100.0;
        assert!((rtx.pct_of_peak.unwrap() - expected).abs() < 1e-6);
        assert!(c.rows[1].cells[1].is_none());
        let s = c.summary();
        assert_eq!(s.shared_shapes, 1);
        assert!((s.ratios[0].geomean.unwrap() - 1.25).abs() < 1e-9);
        assert!((s.vs_cublas[1].1.unwrap() - 1.1).abs() < 1e-12);
        assert_eq!(
            c.summary_line(),
            "gemm: NVIDIA H200 / NVIDIA GeForce RTX 4060 throughput 1.250x (geometric mean over 1 shared shape); x cuBLAS (geometric mean): NVIDIA H200 0.898, NVIDIA GeForce RTX 4060 1.100"
        );
        let t = c.table();
        assert!(
            t.contains(
                "  A = NVIDIA H200 (sm_90, 132 SMs, FP32 peak 66.9 TFLOP/s, copy 4224 GB/s)"
            ),
            "{t}"
        );
        assert!(t.contains("A/B"), "{t}");
        let row = t.lines().find(|l| l.starts_with("2048x2048x2048")).unwrap();
        for needle in ["45149", "67.5", "0.898", "1.250", "36119", "1.100"] {
            assert!(row.contains(needle), "{needle} missing from {row}");
        }
        let row = t.lines().find(|l| l.starts_with("4096x4096x4096")).unwrap();
        assert!(row.contains("(not tuned)"), "{row}");
        assert!(t.trim_end().ends_with(&c.summary_line()), "{t}");
    }

    #[test]
    fn suite_order_and_gemv_bandwidth_peak() {
        let db = db();
        let gpus = vec!["NVIDIA H200".to_string()];
        let shapes = [
            Shape::parse(Op::Gemv, "16384x16384").unwrap(),
            Shape::parse(Op::Gemv, "4096x4096").unwrap(),
            Shape::parse(Op::Gemv, "3x3").unwrap(),
        ];
        let c = compare_gpus(&db, Op::Gemv, &gpus, Some(&shapes));
        let labels: Vec<&str> = c.rows.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(labels, ["16384x16384", "4096x4096", "3x3"]);
        let cell = c.rows[0].cells[0].as_ref().unwrap();
        assert_eq!(c.unit(), "GB/s");
        let expected = cell.throughput / 4223.738168137 * 100.0;
        assert!((cell.pct_of_peak.unwrap() - expected).abs() < 1e-9);
        assert!(c.rows[2].cells[0].is_none());
        assert!(
            c.summary_line()
                .starts_with("gemv: NVIDIA H200 on 2 shapes;"),
            "{}",
            c.summary_line()
        );
    }

    #[test]
    fn markdown_csv_and_json() {
        let db = db();
        let gpus = resolve_gpus(&db, "x", &["h200".into(), "4060".into()]).unwrap();
        let c = compare_gpus(&db, Op::Gemm, &gpus, None);
        let md = c.markdown();
        assert!(
            md.starts_with("### gemm: NVIDIA H200 vs NVIDIA GeForce RTX 4060\n"),
            "{md}"
        );
        assert!(md.contains("| shape | H200 config | H200 GFLOP/s | H200 % FP32 peak | H200 x cuBLAS | RTX 4060 config |"), "{md}");
        assert!(md.contains("| H200 / RTX 4060 |"), "{md}");
        assert!(md.contains("|---|---|---:|---:|---:|"), "{md}");
        assert!(md.contains("| 4096x4096x4096 | gemm_tile2d"), "{md}");
        assert!(md.contains("not tuned | - | - | - | - |"), "{md}");
        assert!(
            md.contains("Not in the means: 4096x4096x4096 not tuned on NVIDIA GeForce RTX 4060."),
            "{md}"
        );
        let csv = c.csv();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], CSV_HEADER);
        assert_eq!(lines.len(), 4);
        assert!(lines[1].starts_with("gemm,2048x2048x2048,2048,2048,2048,NVIDIA H200,gemm_tile2d,BK=16 BM=256 BN=128 PREFETCH=1 TM=8 TN=16,0.380511999130249,"), "{}", lines[1]);
        assert!(lines.iter().skip(1).all(|l| l.split(',').count() == 13));
        let v = c.json();
        assert_eq!(v["op"], "gemm");
        assert_eq!(v["unit"], "GFLOP/s");
        assert_eq!(v["rows"][1]["cells"][1], serde_json::Value::Null);
        assert_eq!(v["summary"]["shared_shapes"], 1);
        assert_eq!(v["rows"][0]["cells"][0]["params"]["BM"], 256);
        let ratio = v["summary"]["ratios"][0]["geomean"].as_f64().unwrap();
        assert!((ratio - 1.25).abs() < 1e-9);
        assert_eq!(v["gpus"][1]["name"], "NVIDIA GeForce RTX 4060");
    }
}
