//! A small product that ships the tuned database: it embeds `results/tuning.toml`, runs gemm
//! and gemv for tuned, near-tuned and untuned shapes through `autotune::Tuned`, checks each
//! result against cuBLAS, and prints the decision and the time. Then the full interface: every
//! gemm layout, padded leading dimensions, beta != 0 and strided batches through
//! `Tuned::gemm_ex`, and gemv with `op(A) = A^T` and batches through `Tuned::gemv_ex`, each
//! checked against the matching cuBLAS call (`cublasSgemmStridedBatched`, `cublasSgemv`, ...).
//! Then it measures what the runtime path (lookup + cached module) costs over a direct cudarc
//! launch of the same kernel.
//!
//! Run on a GPU: `cargo run --release --example ship`. A second run finds every kernel in the
//! disk cache (`compiled 0` in the last line).

use autotune::cuda::nvrtc;
use autotune::cuda::{baseline, cublas_lib, launch};
use autotune::family::catalog::Catalog;
use autotune::problem::Layout;
use autotune::product::desc::{GemmDesc, GemvDesc};
use autotune::product::lookup::Rule;
use autotune::{Op, Shape, Tuned};
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaContext, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use std::sync::Arc;
use std::time::Instant;

const DB: &str = include_str!("../results/tuning.toml");

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn random(n: usize, seed: u64) -> Vec<f32> {
    autotune::measure::verify::random_values(n, seed, 0)
}

/// Median of `reps` event-timed runs, with L2 flushed before each (as the tuner times).
fn time_ms(
    ctx: &Arc<CudaContext>,
    stream: &Arc<CudaStream>,
    flush: &mut CudaSlice<u8>,
    reps: usize,
    mut f: impl FnMut() -> Res<()>,
) -> Res<f64> {
    f()?;
    let mut v = Vec::new();
    for _ in 0..reps {
        stream.memset_zeros(flush)?;
        let (a, b) = (
            ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?,
            ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?,
        );
        a.record(stream)?;
        f()?;
        b.record(stream)?;
        b.synchronize()?;
        v.push(a.elapsed_ms(&b)? as f64);
    }
    v.sort_by(f64::total_cmp);
    Ok(v[v.len() / 2])
}

fn max_rel_diff(x: &[f32], y: &[f32]) -> f64 {
    let scale = y.iter().fold(0f64, |m, v| m.max(v.abs() as f64)).max(1e-30);
    x.iter()
        .zip(y)
        .map(|(a, b)| {
            if a.is_finite() {
                (*a as f64 - *b as f64).abs() / scale
            } else {
                f64::INFINITY
            }
        })
        .fold(0.0, f64::max)
}

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
    // An error value, not a panic, when the driver or the GPU is missing.
    let ctx = Tuned::context(0)?;
    let stream = ctx.default_stream();
    let tuned = Tuned::from_toml_str(&ctx, DB)?;
    let blas = baseline::fp32_blas(&stream)?;
    let l2 = tuned.device().l2_bytes.max(1 << 20) as usize;
    let mut flush = stream.alloc_zeros::<u8>(2 * l2)?;
    println!(
        "device: {} ({}); cuBLAS {}",
        tuned.device().name,
        tuned.device().arch,
        cublas_lib::describe()?
    );
    println!("| op | shape | rule | config | ms | cuBLAS ms | x cuBLAS | db ms | max rel diff |");
    println!("|---|---|---|---|---:|---:|---:|---:|---:|");
    let mut all_ok = true;
    let cases = [
        (Op::Gemm, "2048x2048x2048"),
        (Op::Gemm, "3000x3000x3000"),
        (Op::Gemm, "777x1333x555"),
        (Op::Gemv, "4096x4096"),
        (Op::Gemv, "5000x5000"),
        (Op::Gemv, "1000x999"),
    ];
    for (op, text) in cases {
        let shape = Shape::parse(op, text)?;
        let (m, n, k) = (shape.m as usize, shape.n as usize, shape.k as usize);
        let a = stream.clone_htod(&random(m * k, 1))?;
        let b = stream.clone_htod(&random(k * n, 2))?;
        let mut out = stream.alloc_zeros::<f32>(m * n)?;
        let mut reference = stream.alloc_zeros::<f32>(m * n)?;
        let ours = time_ms(&ctx, &stream, &mut flush, 20, || {
            match op {
                Op::Gemm => tuned.gemm(&stream, m, n, k, &a, &b, &mut out)?,
                Op::Gemv => tuned.gemv(&stream, m, k, &a, &b, &mut out)?,
            }
            Ok(())
        })?;
        let cublas = time_ms(&ctx, &stream, &mut flush, 20, || {
            match op {
                Op::Gemm => blas.gemm(
                    &baseline::row_major_gemm(shape, 1.0f32),
                    &b,
                    &a,
                    &mut reference,
                )?,
                Op::Gemv => blas.sgemv(&baseline::row_major_gemv(shape), &a, &b, &mut reference)?,
            }
            Ok(())
        })?;
        let diff = max_rel_diff(&stream.clone_dtoh(&out)?, &stream.clone_dtoh(&reference)?);
        let choice = tuned.explain(op, shape);
        let db_ms = match (&choice.entry, choice.rule) {
            (Some(e), Rule::Exact) => format!("{:.4}", e.median_ms),
            _ => "-".into(),
        };
        // Relative to the largest |element|: fp32 summation-order noise is far below 1e-4.
        let ok = diff < 1e-4;
        all_ok &= ok;
        println!(
            "| {op} | {text} | {}{} | {} {} | {ours:.4} | {cublas:.4} | {:.3} | {db_ms} | {diff:.2e}{} |",
            choice.rule,
            if choice.vendor { ", cuBLAS (guard)" } else { "" },
            choice.family,
            autotune::family::space::params_label(&choice.params),
            cublas / ours,
            if ok { "" } else { " WRONG" }
        );
    }

    // The full interface, each call beside the matching cuBLAS call on copies of the same C.
    println!();
    println!("| op | problem | rule | config | ms | cuBLAS ms | x cuBLAS | max rel diff |");
    println!("|---|---|---|---|---:|---:|---:|---:|");
    // (layout, m, n, k, padding of every ld, beta, batch)
    let gemms = [
        (Layout::Nn, 1024, 768, 512, 0, 0.0, 1),
        (Layout::Nt, 1024, 768, 512, 0, 0.5, 1),
        (Layout::Tn, 1000, 700, 300, 5, 0.0, 1),
        (Layout::Tt, 1024, 768, 512, 64, 1.0, 1),
        (Layout::Nn, 128, 128, 128, 0, 0.0, 64),
        (Layout::Tn, 64, 96, 80, 3, 0.25, 512),
    ];
    let mut calls: Vec<(Op, GemmDesc, GemvDesc)> = Vec::new();
    for (layout, m, n, k, pad, beta, batch) in gemms {
        let mut d = GemmDesc::new(layout, m, n, k);
        d.lda += pad;
        d.ldb += pad;
        d.ldc += pad;
        d.alpha = 0.75;
        d.beta = beta;
        calls.push((Op::Gemm, d.batched(batch), GemvDesc::new(false, 1, 1)));
    }
    // (transposed, m, k, padding of lda, beta, batch)
    let gemvs = [
        (false, 4096, 4096, 0, 0.5, 1),
        (true, 4096, 4096, 0, 0.0, 1),
        (true, 1000, 999, 7, 1.0, 1),
        (true, 512, 512, 0, 0.0, 64),
        (false, 300, 700, 1, 0.5, 64),
    ];
    for (trans, m, k, pad, beta, batch) in gemvs {
        let mut d = GemvDesc::new(trans, m, k);
        d.lda += pad;
        d.alpha = 0.75;
        d.beta = beta;
        calls.push((
            Op::Gemv,
            GemmDesc::new(Layout::Nn, 1, 1, 1),
            d.batched(batch),
        ));
    }
    for (i, (op, gd, vd)) in calls.iter().enumerate() {
        let lens = match op {
            Op::Gemm => gd.lens(),
            Op::Gemv => vd.lens(),
        };
        let (shape, call) = match op {
            Op::Gemm => gd.problem(lens)?,
            Op::Gemv => vd.problem(lens)?,
        };
        let seed = 10 + 3 * i as u64;
        let a = stream.clone_htod(&random(lens[0], seed))?;
        let b = stream.clone_htod(&random(lens[1], seed + 1))?;
        let c0 = random(lens[2], seed + 2);
        let mut out = stream.clone_htod(&c0)?;
        let mut reference = stream.clone_htod(&c0)?;
        let ours_into = |c: &mut CudaSlice<f32>| -> Res<()> {
            match op {
                Op::Gemm => tuned.gemm_ex(&stream, gd, &a, &b, c)?,
                Op::Gemv => tuned.gemv_ex(&stream, vd, &a, &b, c)?,
            }
            Ok(())
        };
        let cublas_into = |c: &mut CudaSlice<f32>| -> Res<()> {
            baseline::cublas_call(&blas, *op, shape, &call, &a, &b, &mut c.as_view_mut())?;
            Ok(())
        };
        // One call each on the same old C: the results compared.
        ours_into(&mut out)?;
        cublas_into(&mut reference)?;
        let diff = max_rel_diff(&stream.clone_dtoh(&out)?, &stream.clone_dtoh(&reference)?);
        // Then timed (beta != 0 keeps accumulating into C: the values do not matter here).
        let ours = time_ms(&ctx, &stream, &mut flush, 20, || ours_into(&mut out))?;
        let cublas = time_ms(&ctx, &stream, &mut flush, 20, || {
            cublas_into(&mut reference)
        })?;
        let choice = tuned.explain(*op, shape);
        let ok = diff < 1e-4;
        all_ok &= ok;
        println!(
            "| {op} | {} (alpha {}, beta {}) | {}{} | {} {} | {ours:.4} | {cublas:.4} | {:.3} | {diff:.2e}{} |",
            shape.label(*op),
            call.alpha,
            call.beta,
            choice.rule,
            if choice.vendor { ", cuBLAS (guard)" } else { "" },
            choice.family,
            autotune::family::space::params_label(&choice.params),
            cublas / ours,
            if ok { "" } else { " WRONG" }
        );
    }

    // Launch overhead: 10,000 small launches through the runtime, and the same kernel launched
    // directly with cudarc.
    let shape = Shape::parse(Op::Gemv, "64x64")?;
    let (m, k) = (64usize, 64usize);
    let a = stream.clone_htod(&random(m * k, 3))?;
    let x = stream.clone_htod(&random(k, 4))?;
    let mut y = stream.alloc_zeros::<f32>(m)?;
    let choice = tuned.explain(Op::Gemv, shape);
    let catalog = Catalog::builtin()?;
    let family = catalog.get(&choice.family)?;
    let config = autotune::family::space::Config {
        family: choice.family.clone(),
        params: choice.params.clone(),
    };
    let launch = family
        .space
        .launch(&config, shape, &tuned.device().limits)?;
    let source = family.instantiate(&config);
    let compiled = nvrtc::compile(&source, tuned.device().arch)?;
    let func = launch::load_function(
        &ctx,
        &compiled.cubin,
        &source.kernel_name,
        launch.dynamic_shared_bytes,
    )?;
    let cfg = LaunchConfig {
        grid_dim: launch.grid,
        block_dim: launch.block,
        shared_mem_bytes: launch.dynamic_shared_bytes,
    };
    const N: usize = 10_000;
    let mut direct_us = Vec::new();
    let mut runtime_us = Vec::new();
    tuned.gemv(&stream, m, k, &a, &x, &mut y)?;
    for _round in 0..5 {
        stream.synchronize()?;
        let t = Instant::now();
        for _ in 0..N {
            let (mi, ki) = (m as i32, k as i32);
            if launch.zero_output {
                stream.memset_zeros(&mut y)?;
            }
            let mut lb = stream.launch_builder(&func);
            lb.arg(&mi).arg(&ki).arg(&a).arg(&x).arg(&mut y);
            unsafe { lb.launch(cfg) }?;
        }
        stream.synchronize()?;
        direct_us.push(t.elapsed().as_secs_f64() * 1e6 / N as f64);
        let t = Instant::now();
        for _ in 0..N {
            tuned.gemv(&stream, m, k, &a, &x, &mut y)?;
        }
        stream.synchronize()?;
        runtime_us.push(t.elapsed().as_secs_f64() * 1e6 / N as f64);
    }
    direct_us.sort_by(f64::total_cmp);
    runtime_us.sort_by(f64::total_cmp);
    let (d, r) = (direct_us[2], runtime_us[2]);
    println!(
        "launch overhead, {N} launches of {} (gemv 64x64), median of 5 rounds: direct cudarc {d:.3} us/launch, runtime {r:.3} us/launch, ratio {:.3}",
        source.kernel_name,
        r / d
    );
    let s = tuned.stats();
    println!(
        "module cache: compiled {} kernel(s) with NVRTC, {} from the disk cache, {} shapes resolved",
        s.compiled, s.disk_hits, s.shapes
    );
    if !all_ok {
        return Err("a result disagreed with cuBLAS".into());
    }
    Ok(())
}
