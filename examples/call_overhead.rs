//! What one call of the Rust runtime costs the host on a small problem: the baseline the
//! Python package's per-call cost is compared with (python/tests/test_gpu.py, run by
//! scripts/python-gpu.sh).
//!
//! ```text
//! cargo run --release --example call_overhead -- [M N K [CALLS [REPS]]]   # default 64 64 64 200 30
//! ```
//!
//! `Tuned::gemm_ex` (the call the Python package makes) on device buffers, `CALLS` calls back
//! to back on the default stream, `REPS` times, synchronising between runs and never inside
//! one (so the GPU's time stays out while its queue has room): the median host time per call,
//! printed as one JSON line.

use autotune::problem::Layout;
use autotune::product::desc::GemmDesc;
use autotune::Tuned;
use std::error::Error;
use std::time::Instant;

fn arg(args: &[String], i: usize, default: usize) -> Result<usize, Box<dyn Error>> {
    match args.get(i) {
        Some(v) => Ok(v
            .parse()
            .map_err(|e| format!("argument {i} ({v:?}): {e}"))?),
        None => Ok(default),
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (m, n, k) = (arg(&args, 0, 64)?, arg(&args, 1, 64)?, arg(&args, 2, 64)?);
    let (calls, reps) = (arg(&args, 3, 200)?.max(1), arg(&args, 4, 30)?.max(1));
    let ctx = Tuned::context(0)?;
    let tuned = Tuned::from_toml_str(&ctx, include_str!("../results/tuning.toml"))?.quiet();
    let stream = ctx.default_stream();
    let a = stream.alloc_zeros::<f32>(m * k)?;
    let b = stream.alloc_zeros::<f32>(k * n)?;
    let mut c = stream.alloc_zeros::<f32>(m * n)?;
    let desc = GemmDesc::new(Layout::Nn, m, n, k);
    for _ in 0..50 {
        tuned.gemm_ex(&stream, &desc, &a, &b, &mut c)?;
    }
    stream.synchronize()?;
    let mut per_call = Vec::with_capacity(reps);
    for _ in 0..reps {
        let start = Instant::now();
        for _ in 0..calls {
            tuned.gemm_ex(&stream, &desc, &a, &b, &mut c)?;
        }
        per_call.push(start.elapsed().as_secs_f64() * 1e6 / calls as f64);
        stream.synchronize()?;
    }
    per_call.sort_by(f64::total_cmp);
    let median = per_call[per_call.len() / 2];
    println!(
        "{{\"shape\": \"{m}x{n}x{k}\", \"calls\": {calls}, \"reps\": {reps}, \"us_per_call\": {median:.3}}}"
    );
    Ok(())
}
