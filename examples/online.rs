//! Online tuning as a product uses it: a runtime over a shipped database, with online tuning
//! kept in a second file, called on shapes nobody tuned. Each shape's first call tunes it
//! (among the configs the coverage predicts fastest, within the budget); the second call runs
//! the winner. Both calls are timed on the host (call to synchronize), and every result is
//! checked against cuBLAS.
//!
//! `online SHIPPED_DB ONLINE_DB COUNT SEED [BUDGET_MS]`: COUNT random gemm shapes (seeded, as
//! `autotune evaluate --random` draws them) not tuned on this GPU. Run it twice: the second
//! process finds every shape in ONLINE_DB and tunes nothing. With `AUTOTUNE_RECORD=DIR` the
//! shapes are also recorded as `DIR/gemm.toml`, a suite `autotune evaluate --shapes` and
//! `autotune --suite` read.

use autotune::cuda::bench;
use autotune::product::online::OnlineTuning;
use autotune::tuning::workload;
use autotune::{Op, Tuned};
use std::time::{Duration, Instant};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Errors print as messages (`Error: no CUDA driver ...`), not as `Debug` values.
fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("Error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 5 {
        return Err("usage: online SHIPPED_DB ONLINE_DB COUNT SEED [BUDGET_MS]".into());
    }
    let shipped = autotune::db::Database::load_existing(std::path::Path::new(&args[1]))?;
    let count: usize = args[3].parse()?;
    let seed: u64 = args[4].parse()?;
    let budget_ms: u64 = args.get(5).map_or(Ok(2000), |b| b.parse())?;
    // An error value, not a panic, when the driver or the GPU is missing.
    let ctx = Tuned::context(0)?;
    let stream = ctx.default_stream();
    let mut online = OnlineTuning::new(&args[2]);
    online.budget = Duration::from_millis(budget_ms);
    let tuned = Tuned::new(&ctx, shipped.clone())?.online_tuning(online)?;
    let gpu = tuned.device().name.clone();
    let problems = workload::random_problems(Op::Gemm, count, seed, &|s| {
        shipped.measured(&gpu, Op::Gemm, *s)
    })?;
    let blas = bench::fp32_blas(&stream)?;
    println!("| shape | kind | rule before | first call ms | second call ms | cuBLAS call ms | rule after | max rel diff |");
    println!("|---|---|---|---:|---:|---:|---|---:|");
    let mut ok = true;
    for p in &problems {
        let s = p.shape;
        let (m, n, k) = (s.m as usize, s.n as usize, s.k as usize);
        let a = stream.clone_htod(&autotune::measure::verify::random_values(m * k, 1, 0))?;
        let b = stream.clone_htod(&autotune::measure::verify::random_values(k * n, 2, 0))?;
        let mut c = stream.alloc_zeros::<f32>(m * n)?;
        let mut r = stream.alloc_zeros::<f32>(m * n)?;
        let before = tuned.explain(Op::Gemm, s);
        let mut call = || -> Res<f64> {
            stream.synchronize()?;
            let t = Instant::now();
            tuned.gemm(&stream, m, n, k, &a, &b, &mut c)?;
            stream.synchronize()?;
            Ok(t.elapsed().as_secs_f64() * 1e3)
        };
        let first = call()?;
        let second = call()?;
        stream.synchronize()?;
        let t = Instant::now();
        blas.gemm(&bench::row_major_gemm(s, 1.0f32), &b, &a, &mut r)?;
        stream.synchronize()?;
        let cublas = t.elapsed().as_secs_f64() * 1e3;
        let (x, y) = (stream.clone_dtoh(&c)?, stream.clone_dtoh(&r)?);
        let scale = y.iter().fold(0f64, |m, v| m.max(v.abs() as f64)).max(1e-30);
        let diff = x
            .iter()
            .zip(&y)
            .map(|(p, q)| (*p as f64 - *q as f64).abs() / scale)
            .fold(
                0.0,
                |a: f64, d| if d.is_nan() { f64::INFINITY } else { a.max(d) },
            );
        ok &= diff < 1e-4;
        let after = tuned.explain(Op::Gemm, s);
        let rule = |c: &autotune::product::lookup::Choice| {
            if c.vendor {
                format!("{} -> cuBLAS (guard)", c.rule)
            } else {
                format!("{}: {}", c.rule, c.family)
            }
        };
        println!(
            "| {} | {} | {} | {first:.2} | {second:.3} | {cublas:.3} | {} | {diff:.1e} |",
            s.label(Op::Gemm),
            p.kind,
            rule(&before),
            rule(&after)
        );
    }
    let st = tuned.stats();
    println!(
        "module cache: compiled {} kernel(s) with NVRTC, {} from the disk cache",
        st.compiled, st.disk_hits
    );
    if !ok {
        return Err("a result disagreed with cuBLAS".into());
    }
    Ok(())
}
