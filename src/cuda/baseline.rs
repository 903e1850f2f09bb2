//! The cuBLAS side of a measurement: the FP32 handle, the call that matches a problem (row-major
//! layouts, leading dimensions, alpha/beta, strided batches, mapped to cuBLAS's column-major
//! arguments), and the float64 references computed with cuBLAS DGEMM.

use crate::cuda::cublas_lib::{Batch, Blas, GemmParams, GemvParams, MathMode, Transpose};
use crate::cuda::device::{Device, DriverContext};
use crate::cuda::error::RunError;
use crate::measure::verify;
use crate::problem::{Call, Op, Shape};
use cudarc::driver::{CudaSlice, CudaStream, CudaViewMut};
use std::sync::Arc;

/// [`Call`] as the full-interface kernels take it (`int` leading dimensions and batch, `long
/// long` strides).
pub(crate) struct FullArgs {
    pub(crate) lda: i32,
    pub(crate) ldb: i32,
    pub(crate) ldc: i32,
    pub(crate) stride_a: i64,
    pub(crate) stride_b: i64,
    pub(crate) stride_c: i64,
    pub(crate) batch: i32,
    pub(crate) alpha: f32,
    pub(crate) beta: f32,
}

impl FullArgs {
    pub(crate) fn of(call: &Call) -> Result<FullArgs, String> {
        let s = &call.strides;
        let int = |what: &str, v: u64| {
            i32::try_from(v).map_err(|_| format!("{what} = {v} does not fit the kernels' int"))
        };
        let long = |what: &str, v: u64| {
            i64::try_from(v)
                .map_err(|_| format!("{what} = {v} does not fit the kernels' long long"))
        };
        Ok(FullArgs {
            lda: int("lda", s.lda)?,
            ldb: int("ldb", s.ldb)?,
            ldc: int("ldc", s.ldc)?,
            stride_a: long("strideA", s.stride_a)?,
            stride_b: long("strideB", s.stride_b)?,
            stride_c: long("strideC", s.stride_c)?,
            batch: int("batch", call.batch)?,
            alpha: call.alpha,
            beta: call.beta,
        })
    }
}

/// A cuBLAS handle on `stream` in plain FP32 mode (no TF32 tensor-core shortcuts): the one
/// the baseline and the runtime's vendor guard use.
pub fn fp32_blas(stream: &Arc<CudaStream>) -> Result<Blas, RunError> {
    let blas = Blas::new(stream.clone())?;
    blas.set_math_mode(MathMode::Default)?;
    Ok(blas)
}

/// cuBLAS computing `op` on `shape` (row-major, as the kernels do) on the handle's stream,
/// laid out as `call` says: `out = alpha op(a) op(b) + beta out` for gemm, `out = alpha op(a)
/// x + beta out` (x = `b`) for gemv, strided batched when the batch has more than one
/// product. The caller has checked every buffer's length against the shape and call.
pub fn cublas_call(
    blas: &Blas,
    op: Op,
    shape: Shape,
    call: &Call,
    a: &CudaSlice<f32>,
    b: &CudaSlice<f32>,
    out: &mut CudaViewMut<'_, f32>,
) -> Result<(), String> {
    if shape.form.is_plain() {
        return match op {
            Op::Gemm => blas.gemm(&row_major_gemm(shape, 1.0f32), b, a, out),
            Op::Gemv => blas.sgemv(&row_major_gemv(shape), a, b, out),
        }
        .map_err(|e| e.to_string());
    }
    let batch = cublas_batch(op, call)?;
    match op {
        Op::Gemm => {
            let p = general_gemm(shape, call, call.alpha, call.beta)?;
            if call.batch == 1 {
                blas.gemm(&p, b, a, out)
            } else {
                blas.gemm_strided_batched(&p, &batch, b, a, out)
            }
        }
        Op::Gemv => {
            let p = general_gemv(shape, call)?;
            if call.batch == 1 {
                blas.sgemv(&p, a, b, out)
            } else {
                blas.sgemv_strided_batched(&p, &batch, a, b, out)
            }
        }
    }
    .map_err(|e| e.to_string())
}

/// cuBLAS's batch of `call`: for gemm cuBLAS's A is our B, so the strides of A and B swap
/// (see [`general_gemm`]); for gemv they stay (A, x, y).
fn cublas_batch(op: Op, call: &Call) -> Result<Batch, String> {
    let f = FullArgs::of(call)?;
    let (stride_a, stride_b) = match op {
        Op::Gemm => (f.stride_b, f.stride_a),
        Op::Gemv => (f.stride_a, f.stride_b),
    };
    Ok(Batch {
        stride_a,
        stride_b,
        stride_c: f.stride_c,
        count: f.batch,
    })
}

/// cuBLAS's configuration for row-major `C = alpha op(A) op(B) + beta C` laid out by `call`
/// (see [`crate::problem`] for the mapping): cuBLAS's first matrix is our B, its second our A,
/// with the same transpose letters and leading dimensions. The batch's strides follow the
/// same swap (`cublas_batch`).
pub fn general_gemm<T>(
    shape: Shape,
    call: &Call,
    alpha: T,
    beta: T,
) -> Result<GemmParams<T>, String> {
    let f = FullArgs::of(call)?;
    let t = |yes: bool| if yes { Transpose::T } else { Transpose::N };
    let l = shape.form.layout;
    Ok(GemmParams {
        transa: t(l.trans_b()),
        transb: t(l.trans_a()),
        m: shape.n as i32,
        n: shape.m as i32,
        k: shape.k as i32,
        alpha,
        lda: f.ldb,
        ldb: f.lda,
        beta,
        ldc: f.ldc,
    })
}

/// cuBLAS's configuration for `y = alpha op(A) x + beta y` with row-major A (`M x K`, leading
/// dimension `lda`): column-major that is A^T (`K x M`), so `y = A x` is cuBLAS's `T` and `y
/// = A^T x` its `N`.
pub fn general_gemv(shape: Shape, call: &Call) -> Result<GemvParams, String> {
    let f = FullArgs::of(call)?;
    Ok(GemvParams {
        trans: if shape.form.layout.trans_a() {
            Transpose::N
        } else {
            Transpose::T
        },
        m: shape.k as i32,
        n: shape.m as i32,
        alpha: call.alpha,
        lda: f.lda,
        incx: 1,
        beta: call.beta,
        incy: 1,
    })
}

/// cuBLAS's configuration for row-major `C (M x N) = A (M x K) B (K x N)` with `beta = 0`.
/// cuBLAS is column-major, and row-major C = A B is column-major C^T = B^T A^T: pass B as
/// cuBLAS's first matrix and A as its second.
pub fn row_major_gemm<T: Default>(shape: Shape, alpha: T) -> GemmParams<T> {
    let (m, n, k) = (shape.m as i32, shape.n as i32, shape.k as i32);
    GemmParams {
        transa: Transpose::N,
        transb: Transpose::N,
        m: n,
        n: m,
        k,
        alpha,
        lda: n,
        ldb: k,
        beta: T::default(),
        ldc: n,
    }
}

/// cuBLAS's configuration for `y = A x` with row-major `A (M x K)`: column-major that is
/// A^T (K x M), so y = (A^T)^T x.
pub fn row_major_gemv(shape: Shape) -> GemvParams {
    let (m, k) = (shape.m as i32, shape.k as i32);
    GemvParams {
        trans: Transpose::T,
        m: k,
        n: m,
        alpha: 1.0,
        lda: k,
        incx: 1,
        beta: 0.0,
        incy: 1,
    }
}

/// Float64 reference on the GPU with cuBLAS DGEMM: the values, then the bound from |A| |B|.
pub(crate) fn gpu_dgemm_reference(
    dev: &Device,
    blas: &Blas,
    shape: Shape,
    a: &[f32],
    b: &[f32],
) -> Result<(Vec<f64>, Vec<f64>), RunError> {
    let s = &dev.stream;
    let cfg = row_major_gemm(shape, 1.0f64);
    let mut c = s
        .alloc_zeros::<f64>(shape.m as usize * shape.n as usize)
        .during("allocating the float64 reference")?;
    let mut run = |abs: bool| -> Result<Vec<f64>, RunError> {
        let up = |v: &[f32]| -> Vec<f64> {
            v.iter()
                .map(|&x| if abs { (x as f64).abs() } else { x as f64 })
                .collect()
        };
        let a64 = s.clone_htod(&up(a)).during("uploading float64 A")?;
        let b64 = s.clone_htod(&up(b)).during("uploading float64 B")?;
        blas.gemm(&cfg, &b64, &a64, &mut c)?;
        Ok(s.clone_dtoh(&c).during("downloading the reference")?)
    };
    let reference = run(false)?;
    let bound = run(true)?;
    Ok((reference, bound))
}

/// Float64 reference on the GPU of a gemm of any form (cuBLAS DGEMM, strided batched): the
/// compact values (product by product, row by row), then the bounds from |alpha| |A| |B| +
/// |beta C|.
pub(crate) fn gpu_general_reference(
    dev: &Device,
    blas: &Blas,
    shape: Shape,
    call: &Call,
    a: &[f32],
    b: &[f32],
    before: &[f32],
) -> Result<(Vec<f64>, Vec<f64>), RunError> {
    let s = &dev.stream;
    let bad = |message: String| RunError::Cublas {
        what: "float64 reference",
        message,
    };
    let batch = cublas_batch(Op::Gemm, call).map_err(bad)?;
    let run = |abs: bool| -> Result<Vec<f64>, RunError> {
        let up = |v: &[f32]| -> Vec<f64> {
            v.iter()
                .map(|&x| {
                    let x = if x.is_finite() { x as f64 } else { 0.0 };
                    if abs {
                        x.abs()
                    } else {
                        x
                    }
                })
                .collect()
        };
        let (alpha, beta) = (call.alpha as f64, call.beta as f64);
        let (alpha, beta) = if abs {
            (alpha.abs(), beta.abs())
        } else {
            (alpha, beta)
        };
        let p = general_gemm(shape, call, alpha, beta).map_err(bad)?;
        let a64 = s.clone_htod(&up(a)).during("uploading float64 A")?;
        let b64 = s.clone_htod(&up(b)).during("uploading float64 B")?;
        let mut c64 = s.clone_htod(&up(before)).during("uploading float64 C")?;
        blas.gemm_strided_batched(&p, &batch, &b64, &a64, &mut c64)?;
        let full: Vec<f64> = s.clone_dtoh(&c64).during("downloading the reference")?;
        // Compact, as the CPU reference orders it.
        Ok(verify::compact(
            &full,
            verify::output_rows(Op::Gemm, shape, call),
        ))
    };
    let reference = run(false)?;
    let bound = run(true)?;
    Ok((reference, bound))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_major_configs_swap_to_column_major() {
        // Row-major C (3 x 5) = A (3 x 7) B (7 x 5) is column-major C^T (5 x 3) = B^T A^T.
        let g = row_major_gemm(Shape::mnk(3, 5, 7), 1.0f32);
        assert_eq!((g.m, g.n, g.k), (5, 3, 7));
        assert_eq!((g.lda, g.ldb, g.ldc), (5, 7, 5));
        assert_eq!((g.alpha, g.beta), (1.0, 0.0));
        // Row-major A (3 x 7) is column-major A^T (7 x 3), used transposed.
        let v = row_major_gemv(Shape::mnk(3, 1, 7));
        assert_eq!((v.m, v.n, v.lda), (7, 3, 7));
        assert_eq!(v.trans, Transpose::T);
        assert_eq!((v.alpha, v.beta, v.incx, v.incy), (1.0, 0.0, 1, 1));
        assert_eq!((g.transa, g.transb), (Transpose::N, Transpose::N));
    }
}
