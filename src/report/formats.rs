//! Every database entry in formats other tools read: CSV (one line per entry), JSON (the
//! database's own records, lossless) and T4, the autotuning results format of Kernel Tuner and
//! KTT (schema `T4/1.0.0/results-schema.json`, a copy of which is in `tests/data/t4/`).

use super::{Align, Row, Table};
use crate::db::{Database, Entry, GpuRecord, Producer, SCHEMA_VERSION};
use crate::family::space::params_label;
use crate::problem::Op;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// The T4 results schema version [`t4`] writes.
pub const T4_SCHEMA_VERSION: &str = "1.0.0";

/// The header of [`entries_csv`].
pub const ENTRIES_CSV_HEADER: &str = "gpu,op,shape,m,n,k,family,kernel,params,median_ms,min_ms,spread_pct,samples,gflops,gbs,cublas_median_ms,vs_cublas,pct_of_peak,max_rel_error,mean_rel_error,cublas_max_rel_error,cublas_mean_rel_error,tolerance,tried,failed,seed,date,tool_version,checksum,deterministic,math,partial,also_measured,host,device,pci_bus_id,gpu_uuid,shard";

/// `field` as one CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break,
/// with quotes doubled.
pub fn csv_field(field: &str) -> String {
    if field.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}

/// The GPU records and entries of `db` for `gpu` (a full name) and `op`, each filter skipped
/// when `None`. Entries keep the database's order (sorted by GPU, op, shape); with an `op`
/// filter, only the GPUs that have entries of that op are kept.
pub fn select<'a>(
    db: &'a Database,
    gpu: Option<&str>,
    op: Option<Op>,
) -> (Vec<&'a GpuRecord>, Vec<&'a Entry>) {
    let entries: Vec<&Entry> = db
        .entries
        .iter()
        .filter(|e| gpu.is_none_or(|g| e.gpu == g) && op.is_none_or(|o| e.op == o))
        .collect();
    let gpus = db
        .gpus
        .iter()
        .filter(|g| match gpu {
            Some(name) => g.name == name,
            None => op.is_none() || entries.iter().any(|e| e.gpu == g.name),
        })
        .collect();
    (gpus, entries)
}

/// Entries as CSV: [`ENTRIES_CSV_HEADER`], then one line per entry with every field of the
/// database; `params` as `BM=128 BN=64`, `also_measured` as `0.41 ms from a.toml; ...` (with
/// ` on node07 device 1 shard 2/8` after a measurement whose producer is known), and the
/// entry's `produced_by` in the last columns: `host`, `device`, `pci_bus_id`, `gpu_uuid`,
/// `shard` (empty when not recorded).
pub fn entries_csv(entries: &[&Entry]) -> String {
    let rows: Vec<EntryCsv> = entries.iter().map(|e| EntryCsv(e)).collect();
    Table::from_rows(&rows).csv()
}

/// A line of [`entries_csv`]: the entry's fields under [`ENTRIES_CSV_HEADER`].
struct EntryCsv<'a>(&'a Entry);

impl Row for EntryCsv<'_> {
    fn header() -> Vec<(&'static str, Align)> {
        ENTRIES_CSV_HEADER
            .split(',')
            .map(|name| (name, Align::Right))
            .collect()
    }

    fn cells(&self) -> Vec<String> {
        let e = self.0;
        let also = e
            .also_measured
            .iter()
            .map(|m| {
                let mut text = format!("{} ms from {}", m.median_ms, m.source);
                if let Some(p) = &m.produced_by {
                    let _ = write!(text, " on {} device {}", p.host, p.device);
                    if let Some(shard) = &p.shard {
                        let _ = write!(text, " shard {shard}");
                    }
                }
                text
            })
            .collect::<Vec<_>>()
            .join("; ");
        let by = e.produced_by.as_ref();
        let text = |f: fn(&Producer) -> Option<String>| by.and_then(f).unwrap_or_default();
        let opt = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
        vec![
            e.gpu.clone(),
            e.op.name().to_string(),
            e.shape.clone(),
            e.m.to_string(),
            e.n.to_string(),
            e.k.to_string(),
            e.family.clone(),
            e.kernel.clone(),
            params_label(&e.params),
            e.median_ms.to_string(),
            e.min_ms.to_string(),
            e.spread_pct.to_string(),
            e.samples.to_string(),
            e.gflops.to_string(),
            e.gbs.to_string(),
            e.cublas_median_ms.to_string(),
            e.vs_cublas.to_string(),
            e.pct_of_peak.to_string(),
            e.max_rel_error.to_string(),
            // Empty when not recorded (entries written before schema version 6).
            opt(e.mean_rel_error),
            opt(e.cublas_max_rel_error),
            opt(e.cublas_mean_rel_error),
            e.tolerance.to_string(),
            e.tried.to_string(),
            e.failed.to_string(),
            e.seed.to_string(),
            e.date.clone(),
            e.tool_version.clone(),
            e.checksum.clone(),
            // Empty when unknown (entries written before schema version 3).
            e.deterministic.map(|d| d.to_string()).unwrap_or_default(),
            e.math.to_string(),
            e.partial.map(|p| p.to_string()).unwrap_or_default(),
            also,
            text(|p| Some(p.host.clone())),
            text(|p| Some(p.device.to_string())),
            text(|p| p.pci_bus_id.clone()),
            text(|p| p.uuid.clone()),
            text(|p| p.shard.clone()),
        ]
    }
}

/// What [`entries_json`] writes: the database's own records, so it reads back losslessly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonExport {
    /// The database layout version the records follow ([`SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// The GPU records.
    pub gpus: Vec<GpuRecord>,
    /// The entries.
    pub entries: Vec<Entry>,
}

/// Entries and their GPU records as pretty-printed JSON ([`JsonExport`]). Every entry states
/// its `math`, `simt` included (the database leaves that default out).
pub fn entries_json(gpus: &[&GpuRecord], entries: &[&Entry]) -> Result<String, serde_json::Error> {
    let export = JsonExport {
        schema_version: SCHEMA_VERSION,
        gpus: gpus.iter().map(|g| (*g).clone()).collect(),
        entries: entries.iter().map(|e| (*e).clone()).collect(),
    };
    let mut value = serde_json::to_value(&export)?;
    if let Some(list) = value.get_mut("entries").and_then(|v| v.as_array_mut()) {
        for (v, e) in list.iter_mut().zip(&export.entries) {
            if let Some(obj) = v.as_object_mut() {
                obj.entry("math")
                    .or_insert_with(|| serde_json::Value::from(e.math.name()));
            }
        }
    }
    serde_json::to_string_pretty(&value)
}

/// One `{name, value, unit}` measurement of a T4 result.
fn measurement(name: &str, value: f64, unit: &str) -> serde_json::Value {
    serde_json::json!({ "name": name, "value": value, "unit": unit })
}

/// Entries in the T4 autotuning results format (Kernel Tuner, KTT), schema version
/// [`T4_SCHEMA_VERSION`]: one result per entry, the winning configuration of its GPU x op x
/// shape.
///
/// - `configuration`: the parameters, plus `family` (the kernel family is a choice of the
///   search too);
/// - `times.runtimes`: the median time (ms), the only sample the database keeps;
/// - `invalidity` `"correct"` and `correctness` 1: an entry exists only for a config that
///   passed validation against the float64 reference;
/// - `measurements`: median, min, spread, cuBLAS time, x cuBLAS, GFLOP/s, GB/s, % of peak and
///   the largest relative error;
/// - `objectives`: `["time"]`;
/// - `autotune` (an extension; the schema allows more properties): the GPU, op and shape the
///   result is for, the kernel name, the template checksum, the search's counts and, when
///   recorded, `produced_by` (host, device, PCI bus id, UUID, shard).
///
/// The top level carries `metadata` (tool, time unit, the GPU records) as KTT's T4 files do.
pub fn t4(gpus: &[&GpuRecord], entries: &[&Entry]) -> serde_json::Value {
    let results: Vec<serde_json::Value> = entries
        .iter()
        .map(|e| {
            let mut configuration = serde_json::Map::new();
            configuration.insert("family".into(), e.family.clone().into());
            for (k, v) in &e.params {
                configuration.insert(k.clone(), (*v).into());
            }
            let arch = gpus
                .iter()
                .find(|g| g.name == e.gpu)
                .map(|g| g.arch.clone());
            let mut result = serde_json::json!({
                "timestamp": e.date,
                "configuration": configuration,
                "objectives": ["time"],
                "times": { "runtimes": [e.median_ms] },
                "invalidity": "correct",
                "correctness": 1,
                "measurements": [
                    measurement("time", e.median_ms, "ms"),
                    measurement("time_min", e.min_ms, "ms"),
                    measurement("time_spread", e.spread_pct, "%"),
                    measurement("cublas_time", e.cublas_median_ms, "ms"),
                    measurement("vs_cublas", e.vs_cublas, ""),
                    measurement("gflops", e.gflops, "GFLOP/s"),
                    measurement("gbs", e.gbs, "GB/s"),
                    measurement("pct_of_peak", e.pct_of_peak, "%"),
                    measurement("max_rel_error", e.max_rel_error, ""),
                ],
                "autotune": {
                    "gpu": e.gpu,
                    "arch": arch,
                    "op": e.op,
                    "shape": e.shape,
                    "m": e.m,
                    "n": e.n,
                    "k": e.k,
                    "kernel": e.kernel,
                    "checksum": e.checksum,
                    "tried": e.tried,
                    "failed": e.failed,
                    "samples": e.samples,
                    "seed": e.seed,
                    "tolerance": e.tolerance,
                    "tool_version": e.tool_version,
                    "partial": e.partial.unwrap_or(false),
                },
            });
            if let Some(p) = &e.produced_by {
                result["autotune"]["produced_by"] = serde_json::json!(p);
            }
            result
        })
        .collect();
    serde_json::json!({
        "schema_version": T4_SCHEMA_VERSION,
        "metadata": {
            "autotuner": "autotune",
            "autotuner_version": env!("CARGO_PKG_VERSION"),
            "timeunit": "milliseconds",
            "devices": gpus,
        },
        "results": results,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> Database {
        Database::from_toml_str(include_str!("../../tests/data/h200-db.toml"), "h200").unwrap()
    }

    #[test]
    fn csv_quotes_only_when_needed() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("two\nlines"), "\"two\nlines\"");
    }

    #[test]
    fn select_filters_by_gpu_and_op() {
        let db = db();
        let (g, e) = select(&db, None, None);
        assert_eq!((g.len(), e.len()), (1, db.entries.len()));
        let (g, e) = select(&db, Some("NVIDIA H200"), Some(Op::Gemm));
        assert_eq!((g.len(), e.len()), (1, 2));
        let (g, e) = select(&db, Some("nope"), None);
        assert_eq!((g.len(), e.len()), (0, 0));
    }

    #[test]
    fn exports_show_who_produced_each_entry() {
        let mut db = db();
        let producer = Producer {
            host: "node07".into(),
            device: 1,
            pci_bus_id: Some("0000:19:00.0".into()),
            uuid: None,
            shard: Some("2/8".into()),
        };
        db.entries[0].produced_by = Some(producer.clone());
        let mut other = db.entries[0].clone();
        other.median_ms *= 2.0;
        other.produced_by = Some(Producer {
            host: "node01".into(),
            device: 0,
            pci_bus_id: None,
            uuid: None,
            shard: Some("0/8".into()),
        });
        db.entries[0].also_measured = vec![crate::db::Measurement::of(&other, "s0.toml")];
        db.entries[0].deterministic = Some(true);
        let (g, e) = select(&db, None, None);
        let csv = entries_csv(&e);
        let lines: Vec<&str> = csv.lines().collect();
        assert!(lines[0].contains(",checksum,deterministic,math,partial,"));
        assert!(lines[0].contains(
            ",max_rel_error,mean_rel_error,cublas_max_rel_error,cublas_mean_rel_error,tolerance,"
        ));
        assert!(lines[1].contains(",true,simt,"), "{}", lines[1]);
        // Recorded, then unknown (an entry written before schema version 3).
        let sum = |i: usize| e[i].checksum.clone();
        assert!(
            lines[1].contains(&format!(",{},true,", sum(0))),
            "{}",
            lines[1]
        );
        assert!(lines[2].contains(&format!(",{},,", sum(1))), "{}", lines[2]);
        assert!(lines[0].ends_with(",also_measured,host,device,pci_bus_id,gpu_uuid,shard"));
        assert!(
            lines[1].ends_with(&format!(
                ",{} ms from s0.toml on node01 device 0 shard 0/8,node07,1,0000:19:00.0,,2/8",
                other.median_ms
            )),
            "{}",
            lines[1]
        );
        // Entries without a producer leave the columns empty.
        assert!(lines[2].ends_with(",,,,,,"), "{}", lines[2]);
        let columns = lines[0].split(',').count();
        assert!(lines.iter().all(|l| l.split(',').count() == columns));

        let v = t4(&g, &e);
        let by = &v["results"][0]["autotune"]["produced_by"];
        assert_eq!(by["host"], "node07");
        assert_eq!(by["device"], 1);
        assert_eq!(by["shard"], "2/8");
        assert!(v["results"][1]["autotune"].get("produced_by").is_none());

        let back: JsonExport = serde_json::from_str(&entries_json(&g, &e).unwrap()).unwrap();
        assert_eq!(back.entries[0].produced_by, Some(producer));
        assert_eq!(
            back.entries[0].also_measured[0].produced_by,
            other.produced_by
        );
    }

    #[test]
    fn exports_carry_the_math_and_the_errors_beside_cublas() {
        use crate::family::math::Math;
        let mut db = db();
        db.entries[0].math = Math::Tf32x3;
        db.entries[0].mean_rel_error = Some(2.5e-7);
        db.entries[0].cublas_max_rel_error = Some(8e-7);
        db.entries[0].cublas_mean_rel_error = Some(1e-7);
        let (g, e) = select(&db, None, None);
        let csv = entries_csv(&e);
        let lines: Vec<&str> = csv.lines().collect();
        assert!(
            lines[1].contains(",0.00000025,0.0000008,0.0000001,") && lines[1].contains(",tf32x3,"),
            "{}",
            lines[1]
        );
        assert!(lines[2].contains(",simt,"), "{}", lines[2]);
        let json = entries_json(&g, &e).unwrap();
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["entries"][0]["math"], "tf32x3");
        // JSON states simt too, which the database leaves out.
        assert_eq!(v["entries"][1]["math"], "simt");
        assert_eq!(v["entries"][0]["cublas_max_rel_error"], 8e-7);
        let back: JsonExport = serde_json::from_str(&json).unwrap();
        assert_eq!(back.entries, db.entries);
    }

    #[test]
    fn t4_has_one_result_per_entry() {
        let db = db();
        let (g, e) = select(&db, None, Some(Op::Gemv));
        let v = t4(&g, &e);
        assert_eq!(v["schema_version"], "1.0.0");
        let results = v["results"].as_array().unwrap();
        assert_eq!(results.len(), 8);
        assert_eq!(results[0]["invalidity"], "correct");
        assert_eq!(results[0]["autotune"]["op"], "gemv");
        assert_eq!(results[0]["autotune"]["arch"], "sm_90");
        assert_eq!(results[0]["measurements"][0]["name"], "time");
        assert_eq!(
            results[0]["measurements"][0]["value"],
            results[0]["times"]["runtimes"][0]
        );
        assert!(results[0]["configuration"]["family"].is_string());
    }
}
