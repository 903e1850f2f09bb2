//! What one call of the Rust runtime costs the host on a small problem: the baseline the
//! Python package's per-call cost is compared with (python/tests/test_gpu.py, run by
//! scripts/python-gpu.sh).
//!
//! ```text
//! cargo run --release --example call_overhead -- [M N K [CALLS [REPS]]]   # default 64 64 64 200 30
//! ```
//!
//! `Tuned::gemm_ex` (the call a Rust product makes) on device buffers, `CALLS` calls back to
//! back on the default stream, `REPS` times, synchronising between runs and never inside one
//! (so the GPU's time stays out while its queue has room): the median host time per call,
//! printed as one JSON line (`us_per_call`), with `raw_us_per_call`, the same for
//! `Tuned::gemm_raw` on a runtime of `Tuned::raw_context` (raw pointers, no event tracking:
//! what the Python package's extension calls after checking the pointers).

use autotune::problem::Layout;
use autotune::product::desc::GemmDesc;
use autotune::Tuned;
use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use std::error::Error;
use std::sync::Arc;
use std::time::Instant;

const DB: &str = include_str!("../results/tuning.toml");

fn arg(args: &[String], i: usize, default: usize) -> Result<usize, Box<dyn Error>> {
    match args.get(i) {
        Some(v) => Ok(v
            .parse()
            .map_err(|e| format!("argument {i} ({v:?}): {e}"))?),
        None => Ok(default),
    }
}

/// The median host microseconds per call of `reps` runs of `calls` calls of `f` on `stream`
/// (after 50 calls to warm up).
fn per_call_us(
    stream: &Arc<CudaStream>,
    calls: usize,
    reps: usize,
    mut f: impl FnMut() -> Result<(), Box<dyn Error>>,
) -> Result<f64, Box<dyn Error>> {
    for _ in 0..50 {
        f()?;
    }
    stream.synchronize()?;
    let mut per_call = Vec::with_capacity(reps);
    for _ in 0..reps {
        let start = Instant::now();
        for _ in 0..calls {
            f()?;
        }
        per_call.push(start.elapsed().as_secs_f64() * 1e6 / calls as f64);
        stream.synchronize()?;
    }
    per_call.sort_by(f64::total_cmp);
    Ok(per_call[per_call.len() / 2])
}

/// A runtime, its stream, and A, B and C on it.
type Setup = (Tuned, Arc<CudaStream>, [CudaSlice<f32>; 3]);

/// The runtime on `ctx` (the shipped database, quiet), its default stream, and zeroed buffers
/// of `lens` floats on it.
fn runtime(ctx: Arc<CudaContext>, lens: [usize; 3]) -> Result<Setup, Box<dyn Error>> {
    let tuned = Tuned::from_toml_str(&ctx, DB)?.quiet();
    let stream = ctx.default_stream();
    let [a, b, c] = lens;
    let bufs = [
        stream.alloc_zeros::<f32>(a)?,
        stream.alloc_zeros::<f32>(b)?,
        stream.alloc_zeros::<f32>(c)?,
    ];
    Ok((tuned, stream, bufs))
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (m, n, k) = (arg(&args, 0, 64)?, arg(&args, 1, 64)?, arg(&args, 2, 64)?);
    let (calls, reps) = (arg(&args, 3, 200)?.max(1), arg(&args, 4, 30)?.max(1));
    let desc = GemmDesc::new(Layout::Nn, m, n, k);

    let (tuned, stream, [a, b, mut c]) = runtime(Tuned::context(0)?, desc.lens())?;
    let median = per_call_us(&stream, calls, reps, || {
        Ok(tuned.gemm_ex(&stream, &desc, &a, &b, &mut c)?)
    })?;

    let (raw, raw_stream, [ra, rb, mut rc]) = runtime(Tuned::raw_context(0)?, desc.lens())?;
    let (pa, _a) = ra.device_ptr(&raw_stream);
    let (pb, _b) = rb.device_ptr(&raw_stream);
    let (pc, _c) = rc.device_ptr_mut(&raw_stream);
    let raw_median = per_call_us(&raw_stream, calls, reps, || {
        // SAFETY: the three buffers hold the descriptor's lengths on this runtime's context
        // and outlive every call; 0 is the legacy default stream, the one they were made on.
        Ok(unsafe { raw.gemm_raw(0, &desc, pa, pb, pc) }?)
    })?;
    println!(
        "{{\"shape\": \"{m}x{n}x{k}\", \"calls\": {calls}, \"reps\": {reps}, \"us_per_call\": {median:.3}, \"raw_us_per_call\": {raw_median:.3}}}"
    );
    Ok(())
}
