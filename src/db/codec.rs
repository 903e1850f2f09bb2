//! The canonical TOML form of a database: reading it ([`Database::from_toml_str`], checked for
//! what TOML types cannot express) and writing it ([`Database::to_toml_string`]: fixed key
//! order, sorted records, shortest round-trip floats), so that the same content always gives
//! the same bytes.

use super::error::parse_error;
use super::{Coverage, Database, DbError, Entry, GpuRecord, SCHEMA_VERSION};
use crate::problem::{Op, Shape};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

/// The comment written at the top of every database file.
const HEADER: &str =
    "# autotune tuning database: the fastest kernel configuration per GPU x op x shape.\n\
# Written by autotune, one [[entry]] per result; comments are not kept when it rewrites the file.\n";

/// The file as it is deserialized (the top level rejects unknown keys, which catches typos
/// such as `[[entries]]`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRepr {
    schema_version: u32,
    #[serde(default)]
    gpu: Vec<GpuRecord>,
    #[serde(default)]
    entry: Vec<Entry>,
    #[serde(default)]
    coverage: Vec<Coverage>,
}

/// The order keys of a `[[gpu]]` table are written in; unknown keys follow, sorted.
pub(super) const GPU_FIELDS: &[&str] = &[
    "name",
    "arch",
    "sms",
    "clock_mhz",
    "fp32_peak_gflops",
    "memory_mib",
    "driver_version",
    "nvrtc_version",
    "copy_bandwidth_gbs",
];

/// The order keys of an `[[entry]]` table are written in; unknown keys follow, sorted.
pub(super) const ENTRY_FIELDS: &[&str] = &[
    "gpu",
    "op",
    "shape",
    "m",
    "n",
    "k",
    "form",
    "family",
    "kernel",
    "params",
    "median_ms",
    "min_ms",
    "spread_pct",
    "samples",
    "gflops",
    "gbs",
    "cublas_median_ms",
    "vs_cublas",
    "pct_of_peak",
    "max_rel_error",
    "tolerance",
    "tried",
    "failed",
    "seed",
    "date",
    "tool_version",
    "checksum",
    "deterministic",
    "partial",
    "produced_by",
    "also_measured",
];

/// The first float in `table` (searched recursively) that is NaN or infinite, by key path;
/// top-level keys are searched in `order` first, so the first field as written is named.
fn non_finite_field(table: &toml::Table, order: &[&str]) -> Option<String> {
    fn walk(value: &toml::Value, path: &str) -> Option<String> {
        match value {
            toml::Value::Float(f) if !f.is_finite() => Some(path.to_string()),
            toml::Value::Table(t) => t.iter().find_map(|(k, v)| walk(v, &format!("{path}.{k}"))),
            toml::Value::Array(a) => a
                .iter()
                .enumerate()
                .find_map(|(i, v)| walk(v, &format!("{path}[{i}]"))),
            _ => None,
        }
    }
    order
        .iter()
        .filter_map(|k| table.get(*k).map(|v| (*k, v)))
        .chain(
            table
                .iter()
                .filter(|(k, _)| !order.contains(&k.as_str()))
                .map(|(k, v)| (k.as_str(), v)),
        )
        .find_map(|(k, v)| walk(v, k))
}

/// `rec` as a TOML table, refusing values TOML cannot hold.
fn gpu_table(rec: &GpuRecord) -> Result<toml::Table, DbError> {
    let what = "(gpu record)";
    if rec.memory_mib > i64::MAX as u64 {
        return Err(DbError::OutOfRange {
            gpu: rec.name.clone(),
            shape: what.to_string(),
            field: "memory_mib",
            value: rec.memory_mib,
        });
    }
    let table = toml::Table::try_from(rec)
        .map_err(|e| DbError::Serialize(format!("GPU record {}: {e}", rec.name)))?;
    if let Some(field) = non_finite_field(&table, GPU_FIELDS) {
        return Err(DbError::NonFinite {
            gpu: rec.name.clone(),
            shape: what.to_string(),
            field,
        });
    }
    Ok(table)
}

/// `entry` as a TOML table, refusing values TOML cannot hold.
fn entry_table(entry: &Entry) -> Result<toml::Table, DbError> {
    let shape = format!("{} {}", entry.op.name(), entry.shape().label(entry.op));
    for (field, value) in [
        ("m", entry.m),
        ("n", entry.n),
        ("k", entry.k),
        ("seed", entry.seed),
    ] {
        if value > i64::MAX as u64 {
            return Err(DbError::OutOfRange {
                gpu: entry.gpu.clone(),
                shape,
                field,
                value,
            });
        }
    }
    let table = toml::Table::try_from(entry)
        .map_err(|e| DbError::Serialize(format!("entry {}: {e}", entry.describe())))?;
    if let Some(field) = non_finite_field(&table, ENTRY_FIELDS) {
        return Err(DbError::NonFinite {
            gpu: entry.gpu.clone(),
            shape,
            field,
        });
    }
    Ok(table)
}

/// The order keys of a `[[coverage]]` table are written in (before its two arrays).
const COVERAGE_FIELDS: &[&str] = &[
    "gpu",
    "op",
    "form",
    "date",
    "tool_version",
    "seed",
    "produced_by",
];

/// Appends a `[[coverage]]` table: its keys, then `configs` and `points` as arrays of inline
/// tables, one element per line, so that a diff shows which grid point changed.
fn render_coverage(out: &mut String, c: &Coverage) -> Result<(), DbError> {
    let which = c.describe();
    c.check()
        .map_err(|m| DbError::Serialize(format!("{which}: {m}")))?;
    if c.seed > i64::MAX as u64 {
        return Err(DbError::Serialize(format!(
            "{which}: seed {} is above 2^63 - 1",
            c.seed
        )));
    }
    let mut head =
        toml::Table::try_from(c).map_err(|e| DbError::Serialize(format!("{which}: {e}")))?;
    head.remove("configs");
    head.remove("points");
    out.push_str("\n[[coverage]]\n");
    render_table(out, &head, COVERAGE_FIELDS)?;
    out.push_str("configs = [\n");
    for cfg in &c.configs {
        let mut params = String::new();
        for (i, (k, v)) in cfg.params.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            let _ = write!(params, "{sep}{} = {v}", render_key(k)?);
        }
        let _ = writeln!(
            out,
            "    {{ family = {}, params = {{ {params} }}, checksum = {} }},",
            render_value(&toml::Value::String(cfg.family.clone()))?,
            render_value(&toml::Value::String(cfg.checksum.clone()))?
        );
    }
    out.push_str("]\npoints = [\n");
    for p in &c.points {
        let ms: Vec<String> = p.ms.iter().map(|v| format!("{v:?}")).collect();
        let _ = writeln!(
            out,
            "    {{ shape = {}, cublas_ms = {:?}, ms = [{}] }},",
            render_value(&toml::Value::String(p.shape.clone()))?,
            p.cublas_ms,
            ms.join(", ")
        );
    }
    out.push_str("]\n");
    Ok(())
}

/// A key as TOML writes it: bare when it can be, quoted otherwise.
fn render_key(key: &str) -> Result<String, DbError> {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare {
        Ok(key.to_string())
    } else {
        render_value(&toml::Value::String(key.to_string()))
    }
}

/// A value as TOML writes it on the right of `key = ` (tables become inline tables).
/// Top-level floats use Rust's shortest round-trip form with an exponent for very large or
/// small magnitudes (`1.2e-7`, not `0.00000012`), which is also valid TOML.
fn render_value(value: &toml::Value) -> Result<String, DbError> {
    if let toml::Value::Float(f) = value {
        if f.is_finite() {
            return Ok(format!("{f:?}"));
        }
    }
    let mut out = String::new();
    value
        .serialize(toml::ser::ValueSerializer::new(&mut out))
        .map_err(|e| DbError::Serialize(e.to_string()))?;
    Ok(out)
}

/// Appends `table`'s keys as `key = value` lines: those in `order` first, in that order, then
/// any others sorted by name.
fn render_table(out: &mut String, table: &toml::Table, order: &[&str]) -> Result<(), DbError> {
    let mut rest: Vec<&String> = table
        .keys()
        .filter(|k| !order.contains(&k.as_str()))
        .collect();
    rest.sort();
    let ordered = order.iter().copied().chain(rest.iter().map(|k| k.as_str()));
    for key in ordered {
        if let Some(value) = table.get(key) {
            let _ = writeln!(out, "{} = {}", render_key(key)?, render_value(value)?);
        }
    }
    Ok(())
}

impl Database {
    /// Parses database text; `origin` names it in error messages (usually the file path).
    ///
    /// `schema_version` is checked before anything else, so a file from a newer autotune is
    /// reported as such even when it has fields this build does not know.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Database, DbError> {
        let path = PathBuf::from(origin);
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let table: toml::Table = toml::from_str(text).map_err(|e| parse_error(&path, text, &e))?;
        match table.get("schema_version") {
            None => return Err(DbError::MissingSchema { path }),
            Some(toml::Value::Integer(v)) if *v > i64::from(SCHEMA_VERSION) => {
                return Err(DbError::NewerSchema {
                    path,
                    found: *v,
                    supported: SCHEMA_VERSION,
                })
            }
            Some(toml::Value::Integer(v)) if *v < 1 => {
                return Err(DbError::Invalid {
                    path,
                    message: format!(
                        "schema_version = {v} is not a valid version (this build reads 1 to {SCHEMA_VERSION})"
                    ),
                })
            }
            // Any other type is reported, with its line, by the typed parse below.
            _ => {}
        }
        let raw: FileRepr = toml::from_str(text).map_err(|e| parse_error(&path, text, &e))?;
        let mut db = Database {
            schema_version: raw.schema_version,
            gpus: raw.gpu,
            entries: raw.entry,
            coverage: raw.coverage,
        };
        db.check_content()
            .map_err(|message| DbError::Invalid { path, message })?;
        db.sort();
        Ok(db)
    }

    /// Checks what TOML types cannot: unique keys, shapes that agree with their labels,
    /// finite numbers. Returns a message naming the offending record.
    fn check_content(&self) -> Result<(), String> {
        let mut names = BTreeMap::new();
        for (i, g) in self.gpus.iter().enumerate() {
            if let Some(first) = names.insert(g.name.as_str(), i) {
                return Err(format!(
                    "[[gpu]] tables {} and {} both have name = {:?}; keep one",
                    first + 1,
                    i + 1,
                    g.name
                ));
            }
            if let Some(field) = toml::Table::try_from(g)
                .ok()
                .and_then(|t| non_finite_field(&t, GPU_FIELDS))
            {
                return Err(format!(
                    "[[gpu]] table {} ({}) has a NaN or infinite `{field}`",
                    i + 1,
                    g.name
                ));
            }
        }
        let mut keys = BTreeMap::new();
        for (i, e) in self.entries.iter().enumerate() {
            let which = format!("[[entry]] table {} ({})", i + 1, e.describe());
            if let Some(first) = keys.insert(e.key_ref(), i) {
                return Err(format!(
                    "[[entry]] tables {} and {} are both for {}; keep one",
                    first + 1,
                    i + 1,
                    e.describe()
                ));
            }
            if e.m == 0 || e.n == 0 || e.k == 0 {
                return Err(format!("{which} has a zero dimension"));
            }
            if e.op == Op::Gemv && e.n != 1 {
                return Err(format!(
                    "{which} is a gemv entry with n = {}; gemv needs n = 1",
                    e.n
                ));
            }
            if let Err(err) = Shape::new(e.op, e.m, e.n, e.k) {
                return Err(format!("{which} has an unusable shape: {err}"));
            }
            let label = e.shape().label(e.op);
            if Shape::parse(e.op, &e.shape).ok() != Some(e.shape()) {
                return Err(format!(
                    "{which} has shape = {:?} but m, n, k say {label:?}; make them agree",
                    e.shape
                ));
            }
            if let Some(field) = toml::Table::try_from(e)
                .ok()
                .and_then(|t| non_finite_field(&t, ENTRY_FIELDS))
            {
                return Err(format!("{which} has a NaN or infinite `{field}`"));
            }
        }
        let mut covered = BTreeMap::new();
        for (i, c) in self.coverage.iter().enumerate() {
            if let Some(first) = covered.insert(c.key_ref(), i) {
                return Err(format!(
                    "[[coverage]] tables {} and {} are both for {}; keep one",
                    first + 1,
                    i + 1,
                    c.describe()
                ));
            }
            c.check()
                .map_err(|m| format!("[[coverage]] table {}: {m}", i + 1))?;
        }
        Ok(())
    }

    /// The database as TOML text: header comment, `schema_version`, `[[gpu]]` tables sorted by
    /// name, `[[entry]]` tables sorted by `(gpu, op, m, n, k)`, keys in a fixed order, `params`
    /// as an inline table. The same content always gives the same bytes.
    ///
    /// Fails on NaN or infinite numbers, on unsigned values above `2^63 - 1`, and on two GPUs
    /// or two entries with the same key.
    pub fn to_toml_string(&self) -> Result<String, DbError> {
        let mut gpus: Vec<&GpuRecord> = self.gpus.iter().collect();
        gpus.sort_by(|a, b| a.name.cmp(&b.name));
        if let Some(w) = gpus.windows(2).find(|w| w[0].name == w[1].name) {
            return Err(DbError::Serialize(format!(
                "two GPU records are named {:?}; keep one (Database::upsert_gpu replaces instead of adding)",
                w[0].name
            )));
        }
        let mut entries: Vec<&Entry> = self.entries.iter().collect();
        entries.sort_by(|a, b| a.key_ref().cmp(&b.key_ref()));
        if let Some(w) = entries
            .windows(2)
            .find(|w| w[0].key_ref() == w[1].key_ref())
        {
            return Err(DbError::Serialize(format!(
                "two entries are for {}; keep one (Database::upsert replaces instead of adding)",
                w[0].describe()
            )));
        }

        let mut out = String::from(HEADER);
        let _ = writeln!(out, "schema_version = {SCHEMA_VERSION}");
        for g in gpus {
            let table = gpu_table(g)?;
            out.push_str("\n[[gpu]]\n");
            render_table(&mut out, &table, GPU_FIELDS)?;
        }
        for e in entries {
            let table = entry_table(e)?;
            out.push_str("\n[[entry]]\n");
            render_table(&mut out, &table, ENTRY_FIELDS)?;
        }
        let mut coverage: Vec<&Coverage> = self.coverage.iter().collect();
        coverage.sort_by(|a, b| a.key_ref().cmp(&b.key_ref()));
        for c in coverage {
            render_coverage(&mut out, c)?;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;
    use crate::db::{Measurement, Producer};
    use std::fs;

    #[test]
    fn extreme_floats_round_trip_exactly() {
        let mut db = sample_db();
        let values = [
            1.2e-7,
            1e-300,
            5e-324,
            1e300,
            f64::MAX,
            0.1 + 0.2,
            -0.0,
            1e16,
            3.0,
        ];
        for (i, v) in values.iter().enumerate() {
            let mut e = entry("G", Op::Gemm, &format!("{}x1x1", i + 1), 1.0);
            e.max_rel_error = *v;
            db.upsert(e);
        }
        let text = db.to_toml_string().unwrap();
        assert!(text.contains("max_rel_error = 1.2e-7\n"), "{text}");
        let loaded = Database::from_toml_str(&text, "mem").unwrap();
        for (i, v) in values.iter().enumerate() {
            let got = loaded
                .get("G", Op::Gemm, Shape::mnk(i as u64 + 1, 1, 1))
                .unwrap()
                .max_rel_error;
            assert_eq!(got.to_bits(), v.to_bits(), "{v:?} came back as {got:?}");
        }
    }

    #[test]
    fn text_order_is_stable_whatever_the_insertion_order() {
        let a = sample_db();
        let mut b = Database::new();
        for e in a.entries.iter().rev() {
            b.upsert(e.clone());
        }
        for g in a.gpus.iter().rev() {
            b.upsert_gpu(g.clone());
        }
        // Also a database whose vectors were filled directly, unsorted.
        let mut c = Database::new();
        c.entries = a.entries.iter().rev().cloned().collect();
        c.gpus = a.gpus.iter().rev().cloned().collect();
        let ta = a.to_toml_string().unwrap();
        assert_eq!(ta, b.to_toml_string().unwrap());
        assert_eq!(ta, c.to_toml_string().unwrap());
        // Sorted: gpus by name, entries by (gpu, op, m, n, k).
        let a100_gpu = ta.find("name = \"NVIDIA A100").unwrap();
        let h100_gpu = ta.find("name = \"NVIDIA H100").unwrap();
        assert!(a100_gpu < h100_gpu);
        let gemm = ta.find("shape = \"2048x2048x2048\"").unwrap();
        let gemv = ta.find("shape = \"4096x4096\"").unwrap();
        let a100 = ta.find("shape = \"512x256x128\"").unwrap();
        assert!(a100 < gemm && gemm < gemv, "{ta}");
        // Keys in declared order within a table.
        let median = ta.find("median_ms = ").unwrap();
        let checksum = ta.find("checksum = ").unwrap();
        assert!(median < checksum);
    }

    #[test]
    fn field_order_lists_cover_every_field() {
        let mut e = entry("G", Op::Gemm, "1x2x3", 1.0);
        e.partial = Some(false);
        e.deterministic = Some(true);
        e.produced_by = Some(producer("h", 0, Some("0/1")));
        e.also_measured = vec![Measurement::of(&e, "other.toml")];
        e.form.beta = true;
        let t = toml::Table::try_from(&e).unwrap();
        for k in t.keys() {
            assert!(ENTRY_FIELDS.contains(&k.as_str()), "ENTRY_FIELDS lacks {k}");
        }
        assert_eq!(t.len(), ENTRY_FIELDS.len());
        let mut g = gpu("G");
        g.copy_bandwidth_gbs = Some(1.0);
        let t = toml::Table::try_from(&g).unwrap();
        for k in t.keys() {
            assert!(GPU_FIELDS.contains(&k.as_str()), "GPU_FIELDS lacks {k}");
        }
        assert_eq!(t.len(), GPU_FIELDS.len());
    }

    #[test]
    fn old_files_without_also_measured_still_load() {
        let text = sample_db().to_toml_string().unwrap();
        assert!(!text.contains("also_measured"), "{text}");
        let db = Database::from_toml_str(&text, "old.toml").unwrap();
        assert!(db.entries.iter().all(|e| e.also_measured.is_empty()));
    }

    #[test]
    fn producer_round_trips_and_old_entries_without_it_still_load() {
        // An entry as files written before `produced_by` existed have it.
        let old = r#"schema_version = 1

[[entry]]
gpu = "G"
op = "gemm"
shape = "8x8x8"
m = 8
n = 8
k = 8
family = "f"
kernel = "k"
params = { BM = 8 }
median_ms = 0.5
min_ms = 0.5
spread_pct = 1.0
samples = 10
gflops = 1.0
gbs = 1.0
cublas_median_ms = 0.5
vs_cublas = 1.0
pct_of_peak = 1.0
max_rel_error = 0.0
tolerance = 0.0001
tried = 1
failed = 0
seed = 1
date = "2026-01-01T00:00:00Z"
tool_version = "0.1.0"
checksum = "ab"
also_measured = [{ source = "a.toml", median_ms = 0.6, cublas_median_ms = 0.5, family = "f", params = { BM = 16 }, date = "2026-01-01T00:00:00Z" }]
"#;
        let db = Database::from_toml_str(old, "old.toml").unwrap();
        assert_eq!(db.entries[0].produced_by, None);
        assert_eq!(db.entries[0].also_measured[0].produced_by, None);
        // Nothing is written for an entry without a producer.
        assert!(!db.to_toml_string().unwrap().contains("produced_by"));

        let mut db = sample_db();
        db.entries[0].produced_by = Some(producer("node07", 1, Some("2/8")));
        db.entries[1].produced_by = Some(Producer {
            pci_bus_id: None,
            uuid: None,
            ..producer("node01", 0, None)
        });
        let text = db.to_toml_string().unwrap();
        assert!(
            text.contains("produced_by = { device = 1, host = \"node07\", pci_bus_id = \"0000:19:00.0\", shard = \"2/8\", uuid = \"GPU-00000001-0000-0000-0000-000000000000\" }\n"),
            "{text}"
        );
        assert!(
            text.contains("produced_by = { device = 0, host = \"node01\" }\n"),
            "{text}"
        );
        assert_eq!(Database::from_toml_str(&text, "new.toml").unwrap(), db);
        assert_eq!(
            producer("node07", 1, Some("2/8")).to_string(),
            "node07 device 1, shard 2/8"
        );
        assert_eq!(producer("n", 0, None).to_string(), "n device 0");
    }

    #[test]
    fn deterministic_round_trips_and_older_entries_load_as_unknown() {
        let mut db = sample_db();
        db.entries[0].deterministic = Some(true);
        db.entries[1].deterministic = Some(false);
        let text = db.to_toml_string().unwrap();
        assert!(text.contains("schema_version = 4\n"), "{text}");
        // Right after the checksum, a plain key = value line.
        assert!(
            text.contains(&format!(
                "checksum = \"{}\"\ndeterministic = true\n",
                "ab".repeat(32)
            )),
            "{text}"
        );
        assert!(text.contains("\ndeterministic = false\n"), "{text}");
        let back = Database::from_toml_str(&text, "new.toml").unwrap();
        assert_eq!(back, db);
        assert_eq!(back.to_toml_string().unwrap(), text);

        // A version 2 file (written before the flag existed): unknown, derived from the family.
        let mut old = sample_db();
        old.schema_version = 2;
        let v2 =
            old.to_toml_string()
                .unwrap()
                .replacen("schema_version = 4", "schema_version = 2", 1);
        assert!(!v2.contains("deterministic"), "{v2}");
        let db = Database::from_toml_str(&v2, "v2.toml").unwrap();
        assert_eq!(db.schema_version, 2);
        let e = &db.entries[0];
        assert_eq!(e.deterministic, None);
        assert_eq!(e.is_deterministic(|_| None), None);
        assert_eq!(
            e.is_deterministic(|f| (f == "gemm_tile2d").then_some(true)),
            Some(true)
        );
        // A recorded flag wins over the family's.
        let mut e = e.clone();
        e.deterministic = Some(false);
        assert_eq!(e.is_deterministic(|_| Some(true)), Some(false));
        // Saved again, it is written at the current version.
        assert!(db
            .to_toml_string()
            .unwrap()
            .contains("schema_version = 4\n"));
    }

    #[test]
    fn wrong_type_reports_its_line() {
        let mut text = sample_db().to_toml_string().unwrap();
        text = text.replacen("sms = 132", "sms = \"many\"", 1);
        let line = text
            .lines()
            .position(|l| l.starts_with("sms = \"many\""))
            .unwrap()
            + 1;
        let err = Database::from_toml_str(&text, "x.toml").unwrap_err();
        match err {
            DbError::Parse {
                line: l, column, ..
            } => {
                assert_eq!(l, line);
                assert_eq!(column, 7);
            }
            other => panic!("expected Parse, got {other:?}"),
        }
        // A typo in the top-level table names is caught too.
        let err = Database::from_toml_str("schema_version = 1\n\n[[entries]]\n", "x").unwrap_err();
        assert!(matches!(err, DbError::Parse { line: 3, .. }), "{err:?}");
    }

    #[test]
    fn newer_schema_is_reported_before_unknown_fields() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.toml");
        let text = "schema_version = 99\nfuture = { x = 1 }\n\n[[entry]]\nwhatever = true\n";
        fs::write(&path, text).unwrap();
        let err = Database::load(&path).unwrap_err();
        assert!(
            matches!(
                err,
                DbError::NewerSchema {
                    found: 99,
                    supported: SCHEMA_VERSION,
                    ..
                }
            ),
            "{err:?}"
        );
        let msg = err.to_string();
        assert!(msg.contains("newer autotune"), "{msg}");
        assert!(msg.contains("upgrade autotune"), "{msg}");
        assert_eq!(fs::read_to_string(&path).unwrap(), text);
    }

    #[test]
    fn missing_or_invalid_schema_is_an_error() {
        let err = Database::from_toml_str("[[gpu]]\nname = \"x\"\n", "db.toml").unwrap_err();
        assert!(matches!(err, DbError::MissingSchema { .. }), "{err:?}");
        let err = Database::from_toml_str("", "db.toml").unwrap_err();
        assert!(matches!(err, DbError::MissingSchema { .. }), "{err:?}");
        let err = Database::from_toml_str("schema_version = 0\n", "db.toml").unwrap_err();
        assert!(matches!(err, DbError::Invalid { .. }), "{err:?}");
        let err = Database::from_toml_str("schema_version = \"1\"\n", "db.toml").unwrap_err();
        assert!(matches!(err, DbError::Parse { line: 1, .. }), "{err:?}");
        // A version 1 file (before coverage) still loads, and is written at the new version.
        let db = Database::from_toml_str("schema_version = 1\n", "db.toml").unwrap();
        assert_eq!((db.schema_version, db.coverage.len()), (1, 0));
        assert_eq!(
            Database {
                schema_version: SCHEMA_VERSION,
                ..db
            },
            Database::new()
        );
    }

    fn coverage_db() -> Database {
        use crate::db::{Coverage, CoverageConfig, CoveragePoint};
        let mut db = sample_db();
        db.upsert_coverage(Coverage {
            gpu: "NVIDIA H100 80GB HBM3".into(),
            op: Op::Gemm,
            form: crate::problem::Form::PLAIN,
            date: "2026-11-23T00:00:00Z".into(),
            tool_version: "0.1.0".into(),
            seed: 7,
            produced_by: None,
            configs: vec![
                CoverageConfig {
                    family: "gemm_tile2d".into(),
                    params: [("BM".to_string(), 64), ("BN".to_string(), 32)].into(),
                    checksum: "ab".repeat(32),
                },
                CoverageConfig {
                    family: "gemm_tiled".into(),
                    params: [("TILE".to_string(), 16)].into(),
                    checksum: "cd".repeat(32),
                },
            ],
            points: vec![
                CoveragePoint {
                    shape: "1x64x4096".into(),
                    cublas_ms: 0.0123,
                    ms: vec![0.02, 0.0],
                },
                CoveragePoint {
                    shape: "64x64x64".into(),
                    cublas_ms: 1.5e-3,
                    ms: vec![2.25e-3, 3.0],
                },
            ],
        });
        db
    }

    #[test]
    fn coverage_round_trips_byte_for_byte_with_one_point_per_line() {
        let db = coverage_db();
        let text = db.to_toml_string().unwrap();
        assert!(text.contains("schema_version = 4\n"), "{text}");
        assert!(
            text.contains("\n[[coverage]]\ngpu = \"NVIDIA H100 80GB HBM3\"\nop = \"gemm\"\n"),
            "{text}"
        );
        assert!(
            text.contains("    { shape = \"1x64x4096\", cublas_ms = 0.0123, ms = [0.02, 0.0] },\n"),
            "{text}"
        );
        assert!(
            text.contains("{ family = \"gemm_tile2d\", params = { BM = 64, BN = 32 }, checksum = "),
            "{text}"
        );
        let back = Database::from_toml_str(&text, "mem").unwrap();
        assert_eq!(back, db);
        assert_eq!(back.to_toml_string().unwrap(), text);
    }

    #[test]
    fn coverage_of_a_form_round_trips_and_is_kept_apart_from_the_plain_one() {
        use crate::problem::{Form, Layout};
        let nt = Form {
            layout: Layout::Nt,
            ..Form::PLAIN
        };
        let g = "NVIDIA H100 80GB HBM3";
        let mut db = coverage_db();
        let plain = db.coverage[0].clone();
        let mut other = Coverage {
            form: nt,
            seed: 9,
            ..plain.clone()
        };
        assert!(db.upsert_coverage(other.clone()).is_none());
        assert_eq!(db.coverage.len(), 2);
        // Found by form; a form without a record has none.
        assert_eq!(db.coverage(g, Op::Gemm, &Form::PLAIN).unwrap().seed, 7);
        assert_eq!(db.coverage(g, Op::Gemm, &nt).unwrap().seed, 9);
        let nt_b2 = Form { batch: 2, ..nt };
        assert!(db.coverage(g, Op::Gemm, &nt_b2).is_none());
        let s = |t: &str| Shape::parse(Op::Gemm, t).unwrap();
        assert_eq!(
            db.coverage_for(g, Op::Gemm, s("5x6x7:nt")).unwrap().form,
            nt
        );
        // A point of the NT grid is measured for the NT problem only.
        assert!(db.measured(g, Op::Gemm, s("64x64x64:nt")));
        assert!(!db.measured(g, Op::Gemm, s("64x64x64:tn")));
        // Upserting replaces only the record of the same key.
        other.seed = 11;
        assert_eq!(db.upsert_coverage(other).unwrap().seed, 9);
        assert_eq!(db.coverage(g, Op::Gemm, &Form::PLAIN).unwrap().seed, 7);
        // The form is written after op, the plain record (no `form`) first.
        let text = db.to_toml_string().unwrap();
        let plain_at = text
            .find("[[coverage]]\ngpu = \"NVIDIA H100 80GB HBM3\"\nop = \"gemm\"\ndate")
            .unwrap();
        let nt_at = text
            .find("[[coverage]]\ngpu = \"NVIDIA H100 80GB HBM3\"\nop = \"gemm\"\nform = { batch = 1, beta = false, layout = \"nt\", padded = false, scaled = false }\n")
            .unwrap();
        assert!(plain_at < nt_at, "{text}");
        let back = Database::from_toml_str(&text, "mem").unwrap();
        assert_eq!(back, db);
        assert_eq!(back.to_toml_string().unwrap(), text);
        // Two records of one key are refused; a point with form tags too; a gemv grid of a
        // layout gemv lacks too.
        let twice = format!("{text}{}", &text[text.rfind("\n[[coverage]]").unwrap()..]);
        let err = Database::from_toml_str(&twice, "db.toml")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("both for") && err.contains("gemm:nt coverage"),
            "{err}"
        );
        let tagged = text.replacen("shape = \"64x64x64\"", "shape = \"64x64x64:nt\"", 1);
        let err = Database::from_toml_str(&tagged, "db.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("dimensions only"), "{err}");
    }

    #[test]
    fn the_shipped_database_saves_byte_for_byte() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/results/tuning.toml");
        let text = std::fs::read_to_string(path).unwrap();
        let db = Database::from_toml_str(&text, path).unwrap();
        assert!(!db.coverage.is_empty());
        assert!(db.coverage.iter().all(|c| c.form.is_plain()));
        assert_eq!(db.to_toml_string().unwrap(), text);
    }

    #[test]
    fn measured_means_an_entry_or_a_coverage_point_of_that_gpu() {
        let db = coverage_db();
        let g = "NVIDIA H100 80GB HBM3";
        let s = |t: &str| Shape::parse(Op::Gemm, t).unwrap();
        assert!(db.measured(g, Op::Gemm, s("64x64x64")));
        assert!(db.measured(g, Op::Gemm, s("1x64x4096")));
        assert!(!db.measured(g, Op::Gemm, s("65x64x64")));
        assert!(!db.measured("NVIDIA H200", Op::Gemm, s("64x64x64")));
        let e = &db.entries[0];
        assert!(db.measured(&e.gpu, e.op, e.shape()));
    }

    #[test]
    fn broken_coverage_is_refused_naming_the_record() {
        let text = coverage_db().to_toml_string().unwrap();
        for (from, to, want) in [
            ("ms = [0.02, 0.0]", "ms = [0.02]", "1 times for 2 configs"),
            (
                "ms = [0.02, 0.0]",
                "ms = [0.02, -1.0]",
                "finite and positive",
            ),
            (
                "ms = [0.02, 0.0]",
                "ms = [0.02, nan]",
                "finite and positive",
            ),
            (
                "cublas_ms = 0.0123",
                "cublas_ms = 0.0",
                "finite and positive",
            ),
            (
                "shape = \"1x64x4096\"",
                "shape = \"64x64x64\"",
                "listed twice",
            ),
            (
                "shape = \"1x64x4096\"",
                "shape = \"0x64\"",
                "not a gemm shape",
            ),
        ] {
            let bad = text.replacen(from, to, 1);
            assert_ne!(bad, text);
            let err = Database::from_toml_str(&bad, "db.toml")
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(want) && err.contains("NVIDIA H100 80GB HBM3 gemm coverage"),
                "{to}: {err}"
            );
        }
        let twice = format!("{text}{}", &text[text.find("\n[[coverage]]").unwrap()..]);
        let err = Database::from_toml_str(&twice, "db.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("both for"), "{err}");
    }

    #[test]
    fn inconsistent_content_is_rejected() {
        let good = sample_db().to_toml_string().unwrap();
        let bad = good.replacen("shape = \"4096x4096\"", "shape = \"4096x8192\"", 1);
        let err = Database::from_toml_str(&bad, "db.toml").unwrap_err();
        assert!(matches!(err, DbError::Invalid { .. }), "{err:?}");
        assert!(err.to_string().contains("4096x8192"));
        let dup = format!(
            "{good}\n[[entry]]\n{}",
            good.split("[[entry]]\n").nth(1).unwrap()
        );
        let err = Database::from_toml_str(&dup, "db.toml").unwrap_err();
        assert!(err.to_string().contains("keep one"), "{err}");
        let nan = good.replacen("median_ms = 0.41", "median_ms = nan", 1);
        assert_ne!(nan, good);
        let err = Database::from_toml_str(&nan, "db.toml").unwrap_err();
        assert!(err.to_string().contains("median_ms"), "{err}");
    }
}
