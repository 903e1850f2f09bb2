//! An evaluation's tables and summaries (`autotune evaluate`, and `--rescore`): per shape, per
//! policy, per kind and layout, with the regret lines; as text for a terminal, as Markdown for
//! a file and as JSON.

use super::{summarize, ShapeEval};
use crate::family::space::params_label;
use crate::problem::Op;
use crate::report::Table;
use crate::tuning::workload::{form_counts, Summary};

/// An evaluation rendered three ways.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// The per-shape table, the policies' summaries, the regret and form lines and the table
    /// by kind and layout, for a terminal.
    pub text: String,
    /// The same as a Markdown page, headed by `source` (what was evaluated, how).
    pub markdown: String,
    /// Every measurement, the policies' summaries and the regret.
    pub json: serde_json::Value,
}

/// Renders the evaluation `evals` of `op` on `gpu` (seed `seed`); `source` says where its
/// shapes and measurements came from.
pub fn render(op: Op, gpu: &str, seed: u64, evals: &[ShapeEval], source: &str) -> Rendered {
    let mut table = Table::new(
        &[
            "shape",
            "kind",
            "runtime's choice",
            "x cuBLAS",
            "no guard",
            "before",
            "regret",
            "choice regret",
        ],
        &[true, true, true],
    );
    for e in evals {
        let c = &e.chosen[0];
        let what = if c.vendor {
            format!("cuBLAS (guard; else {})", c.family)
        } else {
            format!("{}: {} {}", c.rule, c.family, params_label(&c.params))
        };
        table.row(vec![
            e.label.clone(),
            e.kind.clone(),
            what,
            format!("{:.3}", c.vs_cublas(e.cublas_ms)),
            format!("{:.3}", e.chosen[1].vs_cublas(e.cublas_ms)),
            format!("{:.3}", e.chosen[2].vs_cublas(e.cublas_ms)),
            e.regret().map_or("-".into(), |r| format!("{r:.3}")),
            e.choice_regret().map_or("-".into(), |r| format!("{r:.3}")),
        ]);
    }
    let (policies, regret) = summarize(evals);
    let mut sums = Table::new(
        &[
            "policy",
            "shapes",
            "geomean x cuBLAS",
            "p10",
            "median",
            "worst",
            ">= 1.0x",
            "rules",
        ],
        &[true],
    );
    for p in &policies {
        let rules: Vec<String> = p.rules.iter().map(|(r, n)| format!("{r}: {n}")).collect();
        match &p.vs_cublas {
            Some(s) => sums.row(vec![
                p.policy.clone(),
                s.count.to_string(),
                format!("{:.3}", s.geomean),
                format!("{:.3}", s.p10),
                format!("{:.3}", s.median),
                format!("{:.3}", s.min),
                format!("{:.1}%", 100.0 * s.share_at_least_one),
                rules.join(", "),
            ]),
            None => sums.row(vec![
                p.policy.clone(),
                "0".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                rules.join(", "),
            ]),
        }
    }
    let by = by_kind_and_layout(op, evals);
    let forms = format!("forms: {}", form_counts(op, evals.iter().map(|e| &e.shape)));
    let searched = evals.iter().any(|e| e.best_ms.is_some());
    let line = |what: &str, r: &Option<Summary>| match r {
        Some(r) => {
            let out = evals.len().saturating_sub(r.count);
            let left = if out > 0 {
                format!(", {out} left out: a kernel failed there or nothing was found")
            } else {
                String::new()
            };
            format!(
                "{what} ({} shapes{left}): geomean {:.3}, median {:.3}, p90 {:.3}, worst {:.3}",
                r.count, r.geomean, r.median, r.p90, r.max
            )
        }
        None if searched => format!("{what}: no shape has one (every kernel compared failed)"),
        None => format!("{what}: not measured (give --tune-budget N)"),
    };
    let confirmed = evals.iter().filter(|e| !e.confirmed.is_empty()).count();
    let mut regret_line = format!(
        "{}\n{}",
        line(
            if confirmed > 0 {
                "regret of the runtime's kernel (its time / the best kernel found; timed again side by side where another was faster)"
            } else {
                "regret of the runtime's kernel (its time / the best kernel found)"
            },
            &regret[0]
        ),
        line(
            "regret of the runtime's choice (what it runs, cuBLAS where guarded / the best of the kernels found and cuBLAS)",
            &regret[1]
        )
    );
    if confirmed > 0 {
        regret_line.push('\n');
        regret_line.push_str(&line(
            &format!(
                "regret of the runtime's kernel from single timings (before {confirmed} shapes were timed again)"
            ),
            &regret[2],
        ));
    }
    let text = format!(
        "{}\nsummary ({op}, {} shapes, {gpu}):\n{}\n{regret_line}\n{forms}\n{}\n",
        table.render(),
        evals.len(),
        sums.render(),
        by.render()
    );
    let markdown = format!(
        "# evaluate: {op} on {gpu}\n\n{source}\n\n{}\n{}\n{regret_line}\n\n## By kind and layout\n\n{forms}\n\n{}\n## Per shape\n\n{}",
        sums.markdown(),
        "",
        by.markdown(),
        table.markdown()
    );
    let json = serde_json::json!({ "gpu": gpu, "op": op, "seed": seed, "shapes": evals, "policies": policies, "regret": regret });
    Rendered {
        text,
        markdown,
        json,
    }
}

/// The runtime's x cuBLAS per kind and per layout (of the shapes where its choice was
/// measured), and how many shapes have each.
fn by_kind_and_layout(op: Op, evals: &[ShapeEval]) -> Table {
    let mut groups: Vec<(String, Vec<f64>)> = Vec::new();
    // Kept above zero: a geometric mean takes positive values only.
    let runtime = |e: &ShapeEval| e.chosen[0].vs_cublas(e.cublas_ms).max(1e-3);
    for e in evals.iter().filter(|e| e.chosen[0].measured) {
        let layout = format!("layout {}", e.shape.form.layout.name(op));
        for group in [format!("kind {}", e.kind), layout] {
            match groups.iter_mut().find(|(g, _)| *g == group) {
                Some((_, v)) => v.push(runtime(e)),
                None => groups.push((group, vec![runtime(e)])),
            }
        }
    }
    groups.sort_by(|x, y| x.0.cmp(&y.0));
    let mut by = Table::new(
        &[
            "kind / layout",
            "shapes",
            "runtime geomean x cuBLAS",
            "worst",
        ],
        &[true],
    );
    for (group, values) in &groups {
        let s = Summary::of(values);
        by.row(vec![
            group.clone(),
            values.len().to_string(),
            s.map_or("-".into(), |s| format!("{:.3}", s.geomean)),
            s.map_or("-".into(), |s| format!("{:.3}", s.min)),
        ]);
    }
    by
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Database;
    use crate::family::catalog::Catalog;
    use crate::tuning::rescore::{rescore, Recorded};
    use std::path::Path;

    /// The committed evaluation, re-scored under the shipped database, renders every part.
    #[test]
    fn renders_a_committed_evaluation() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let text =
            std::fs::read_to_string(root.join("results/untuned/evaluate-gemm-2026-h100.json"))
                .unwrap();
        let rec: Recorded = serde_json::from_str(&text).unwrap();
        let db = Database::load_existing(&root.join("results/tuning.toml")).unwrap();
        let evals = rescore(&db, &Catalog::builtin().unwrap(), &rec).unwrap();
        let r = render(rec.op, &rec.gpu, rec.seed, &evals, "the source line");
        let head = format!("summary ({}, {} shapes, {}):", rec.op, evals.len(), rec.gpu);
        assert!(r.text.contains(&head), "{}", r.text);
        assert!(r.text.contains("\nforms: ") && r.text.contains("kind / layout"));
        assert!(r.markdown.starts_with(&format!(
            "# evaluate: {} on {}\n\nthe source line\n\n",
            rec.op, rec.gpu
        )));
        assert!(
            r.markdown.contains("## By kind and layout") && r.markdown.contains("## Per shape")
        );
        assert_eq!(r.json["shapes"].as_array().map(Vec::len), Some(evals.len()));
        assert_eq!(r.json["seed"], rec.seed);
    }
}
