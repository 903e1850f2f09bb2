//! cuBLAS's column-major calls as the row-major runtime's descriptors, checked as cuBLAS checks
//! them. Pure: no GPU.
//!
//! A column-major `r x c` matrix with leading dimension `ld` is, in memory, the row-major
//! `c x r` matrix of its transpose with the same `ld`. So the column-major
//! `C = op(A) op(B)` (C `m x n`) is the row-major `Cᵀ = op(B)ᵀ op(A)ᵀ` (`n x m`): the runtime's
//! A is cuBLAS's B and its B cuBLAS's A, M and N trade places, K stays, each operand keeps its
//! leading dimension and batch stride, and an operand transposed for cuBLAS is transposed for
//! the runtime. For GEMV, the column-major `m x n` A is the row-major `n x m` matrix it is
//! stored as, and `trans` flips.

use autotune_rt::problem::Layout;
use autotune_rt::product::desc::{GemmDesc, GemvDesc};

/// Why the arguments of a call were refused, in cuBLAS's column-major terms.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgError {
    /// A transpose that is not N (0), T (1) or C (2).
    #[error("{name} = {value} is not a transpose: use AUTOTUNE_OP_N (0), AUTOTUNE_OP_T (1) or AUTOTUNE_OP_C (2)")]
    Transpose {
        /// The argument's name.
        name: &'static str,
        /// Its value.
        value: i32,
    },
    /// A size, count or stride below zero.
    #[error("{name} = {value} is negative")]
    Negative {
        /// The argument's name.
        name: &'static str,
        /// Its value.
        value: i64,
    },
    /// A leading dimension smaller than the column it must hold.
    #[error("{name} = {value} is smaller than max(1, {rows_name}) = {least}")]
    LeadingDimension {
        /// The argument's name.
        name: &'static str,
        /// Its value.
        value: i32,
        /// What it must hold (`m`, `k`, ...).
        rows_name: &'static str,
        /// The least value accepted.
        least: i32,
    },
    /// A vector increment of zero (cuBLAS refuses it too).
    #[error("{name} = 0: vector increments must not be zero")]
    ZeroIncrement {
        /// The argument's name.
        name: &'static str,
    },
    /// A call cuBLAS accepts that the runtime does not compute.
    #[error("not supported: {0}")]
    Unsupported(&'static str),
}

impl ArgError {
    /// Whether the call is valid for cuBLAS, only not computed here (`NOT_SUPPORTED` rather
    /// than `INVALID_VALUE`).
    pub fn is_unsupported(&self) -> bool {
        matches!(self, ArgError::Unsupported(_))
    }
}

/// cuBLAS's `cublasOperation_t`: N, T, or C (the same as T for real matrices).
fn transposed(name: &'static str, value: i32) -> Result<bool, ArgError> {
    match value {
        0 => Ok(false),
        1 | 2 => Ok(true),
        _ => Err(ArgError::Transpose { name, value }),
    }
}

fn count(name: &'static str, value: i64) -> Result<usize, ArgError> {
    usize::try_from(value).map_err(|_| ArgError::Negative { name, value })
}

fn leading(
    name: &'static str,
    value: i32,
    rows_name: &'static str,
    rows: i32,
) -> Result<usize, ArgError> {
    let least = rows.max(1);
    if value < least {
        return Err(ArgError::LeadingDimension {
            name,
            value,
            rows_name,
            least,
        });
    }
    count(name, value.into())
}

/// The arguments of `cublasSgemmStridedBatched` (`cublasSgemm`: one product, strides 0), the
/// pointers left out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ColGemm {
    /// `transa`.
    pub transa: i32,
    /// `transb`.
    pub transb: i32,
    /// Rows of op(A) and C.
    pub m: i32,
    /// Columns of op(B) and C.
    pub n: i32,
    /// The reduction length.
    pub k: i32,
    /// `*alpha`.
    pub alpha: f32,
    /// `lda`.
    pub lda: i32,
    /// `strideA`.
    pub stride_a: i64,
    /// `ldb`.
    pub ldb: i32,
    /// `strideB`.
    pub stride_b: i64,
    /// `*beta`.
    pub beta: f32,
    /// `ldc`.
    pub ldc: i32,
    /// `strideC`.
    pub stride_c: i64,
    /// `batchCount`.
    pub batch: i32,
}

impl ColGemm {
    /// One product, as `cublasSgemm` takes it: strides 0, batch 1.
    #[allow(clippy::too_many_arguments)]
    pub fn single(
        transa: i32,
        transb: i32,
        m: i32,
        n: i32,
        k: i32,
        alpha: f32,
        lda: i32,
        ldb: i32,
        beta: f32,
        ldc: i32,
    ) -> ColGemm {
        ColGemm {
            transa,
            transb,
            m,
            n,
            k,
            alpha,
            lda,
            stride_a: 0,
            ldb,
            stride_b: 0,
            beta,
            ldc,
            stride_c: 0,
            batch: 1,
        }
    }

    /// The row-major descriptor of the same call, whose A is this call's B and whose B this
    /// call's A ([`swap`]); `None` when there is nothing to compute (`m`, `n` or the batch
    /// count zero, which cuBLAS returns from at once). Checked as cuBLAS checks: transposes,
    /// negative sizes, counts and strides, leading dimensions below `max(1, rows)`.
    pub fn to_row_major(&self) -> Result<Option<GemmDesc>, ArgError> {
        let ta = transposed("transa", self.transa)?;
        let tb = transposed("transb", self.transb)?;
        let m = count("m", self.m.into())?;
        let n = count("n", self.n.into())?;
        let k = count("k", self.k.into())?;
        let batch = count("batchCount", self.batch.into())?;
        let (a_rows, a_rows_name) = if ta { (self.k, "k") } else { (self.m, "m") };
        let (b_rows, b_rows_name) = if tb { (self.n, "n") } else { (self.k, "k") };
        let lda = leading("lda", self.lda, a_rows_name, a_rows)?;
        let ldb = leading("ldb", self.ldb, b_rows_name, b_rows)?;
        let ldc = leading("ldc", self.ldc, "m", self.m)?;
        let stride_a = count("strideA", self.stride_a)?;
        let stride_b = count("strideB", self.stride_b)?;
        let stride_c = count("strideC", self.stride_c)?;
        if m == 0 || n == 0 || batch == 0 {
            return Ok(None);
        }
        if k == 0 {
            return Err(ArgError::Unsupported(
                "k = 0 (C = beta C): the runtime's kernels need k >= 1",
            ));
        }
        Ok(Some(GemmDesc {
            layout: Layout::from_trans(tb, ta),
            m: n,
            n: m,
            k,
            lda: ldb,
            ldb: lda,
            ldc,
            alpha: self.alpha,
            beta: self.beta,
            batch,
            stride_a: stride_b,
            stride_b: stride_a,
            stride_c,
        }))
    }
}

/// The runtime's (A, B, C) for cuBLAS's (A, B, C): A and B trade places.
pub fn swap<T>(a: T, b: T, c: T) -> (T, T, T) {
    (b, a, c)
}

/// The arguments of `cublasSgemvStridedBatched` (`cublasSgemv`: strides 0, batch 1), the
/// pointers left out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ColGemv {
    /// `trans`.
    pub trans: i32,
    /// Rows of A.
    pub m: i32,
    /// Columns of A.
    pub n: i32,
    /// `*alpha`.
    pub alpha: f32,
    /// `lda`.
    pub lda: i32,
    /// `strideA`.
    pub stride_a: i64,
    /// `incx`.
    pub incx: i32,
    /// `stridex`.
    pub stride_x: i64,
    /// `*beta`.
    pub beta: f32,
    /// `incy`.
    pub incy: i32,
    /// `stridey`.
    pub stride_y: i64,
    /// `batchCount`.
    pub batch: i32,
}

impl ColGemv {
    /// One product, as `cublasSgemv` takes it.
    #[allow(clippy::too_many_arguments)]
    pub fn single(
        trans: i32,
        m: i32,
        n: i32,
        alpha: f32,
        lda: i32,
        incx: i32,
        beta: f32,
        incy: i32,
    ) -> ColGemv {
        ColGemv {
            trans,
            m,
            n,
            alpha,
            lda,
            stride_a: 0,
            incx,
            stride_x: 0,
            beta,
            incy,
            stride_y: 0,
            batch: 1,
        }
    }

    /// The row-major descriptor of the same call (A, x and y keep their places); `None` when
    /// there is nothing to compute. Checked as cuBLAS checks; increments other than 1 are
    /// [`ArgError::Unsupported`].
    pub fn to_row_major(&self) -> Result<Option<GemvDesc>, ArgError> {
        let t = transposed("trans", self.trans)?;
        let m = count("m", self.m.into())?;
        let n = count("n", self.n.into())?;
        let batch = count("batchCount", self.batch.into())?;
        let lda = leading("lda", self.lda, "m", self.m)?;
        for (name, inc) in [("incx", self.incx), ("incy", self.incy)] {
            if inc == 0 {
                return Err(ArgError::ZeroIncrement { name });
            }
        }
        let stride_a = count("strideA", self.stride_a)?;
        let stride_x = count("stridex", self.stride_x)?;
        let stride_y = count("stridey", self.stride_y)?;
        if m == 0 || n == 0 || batch == 0 {
            return Ok(None);
        }
        if self.incx != 1 || self.incy != 1 {
            return Err(ArgError::Unsupported(
                "vector increments other than 1 (incx, incy)",
            ));
        }
        // Stored row-major, A is n x m with leading dimension lda.
        Ok(Some(GemvDesc {
            trans: !t,
            m: n,
            k: m,
            lda,
            alpha: self.alpha,
            beta: self.beta,
            batch,
            stride_a,
            stride_x,
            stride_y,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A seeded sequence of small floats.
    fn values(n: usize, seed: u64) -> Vec<f32> {
        let mut s = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 40) % 17) as f32 - 8.0
            })
            .collect()
    }

    /// cuBLAS's strided-batched SGEMM on the host, column-major, as its documentation says.
    fn col_gemm(g: &ColGemm, a: &[f32], b: &[f32], c: &mut [f32]) {
        let (ta, tb) = (g.transa != 0, g.transb != 0);
        let (m, n, k) = (g.m as usize, g.n as usize, g.k as usize);
        let (lda, ldb, ldc) = (g.lda as usize, g.ldb as usize, g.ldc as usize);
        for p in 0..g.batch as usize {
            let (oa, ob, oc) = (
                p * g.stride_a as usize,
                p * g.stride_b as usize,
                p * g.stride_c as usize,
            );
            for j in 0..n {
                for i in 0..m {
                    let mut s = 0f32;
                    for l in 0..k {
                        let x = if ta {
                            a[oa + l + i * lda]
                        } else {
                            a[oa + i + l * lda]
                        };
                        let y = if tb {
                            b[ob + j + l * ldb]
                        } else {
                            b[ob + l + j * ldb]
                        };
                        s += x * y;
                    }
                    let old = c[oc + i + j * ldc];
                    c[oc + i + j * ldc] = g.alpha * s + g.beta * old;
                }
            }
        }
    }

    /// The runtime's row-major descriptor on the host, as `GemmDesc` documents it.
    fn row_gemm(d: &GemmDesc, a: &[f32], b: &[f32], c: &mut [f32]) {
        let (ta, tb) = (d.layout.trans_a(), d.layout.trans_b());
        for p in 0..d.batch {
            let (oa, ob, oc) = (p * d.stride_a, p * d.stride_b, p * d.stride_c);
            for r in 0..d.m {
                for col in 0..d.n {
                    let mut s = 0f32;
                    for l in 0..d.k {
                        let x = if ta {
                            a[oa + l * d.lda + r]
                        } else {
                            a[oa + r * d.lda + l]
                        };
                        let y = if tb {
                            b[ob + col * d.ldb + l]
                        } else {
                            b[ob + l * d.ldb + col]
                        };
                        s += x * y;
                    }
                    let old = c[oc + r * d.ldc + col];
                    c[oc + r * d.ldc + col] = d.alpha * s + d.beta * old;
                }
            }
        }
    }

    #[test]
    fn gemm_mapping_computes_what_cublas_computes() {
        let mut seed = 1;
        for transa in [0, 1, 2] {
            for transb in [0, 1, 2] {
                for (m, n, k, pad, batch) in [(3, 5, 7, 0, 1), (4, 2, 9, 3, 3), (1, 6, 1, 1, 2)] {
                    let (ta, tb) = (transa != 0, transb != 0);
                    let lda = if ta { k } else { m } + pad;
                    let ldb = if tb { n } else { k } + pad;
                    let ldc = m + pad;
                    let span = |ld: i32, cols: i32| (ld * cols) as i64;
                    let g = ColGemm {
                        transa,
                        transb,
                        m,
                        n,
                        k,
                        alpha: 0.5,
                        lda,
                        stride_a: span(lda, if ta { m } else { k }) + 1,
                        ldb,
                        stride_b: span(ldb, if tb { k } else { n }),
                        beta: -2.0,
                        ldc,
                        stride_c: span(ldc, n) + 2,
                        batch,
                    };
                    let d = g.to_row_major().unwrap().unwrap();
                    let [la, lb, lc] = d.lens();
                    // The runtime's A is cuBLAS's B: lengths trade places too.
                    let (a, b) = (values(lb, seed), values(la, seed + 1));
                    let c0 = values(lc, seed + 2);
                    seed += 3;
                    let (mut want, mut got) = (c0.clone(), c0.clone());
                    col_gemm(&g, &a, &b, &mut want);
                    let (ra, rb, _) = swap(&a, &b, &a);
                    row_gemm(&d, ra, rb, &mut got);
                    assert_eq!(got, want, "{g:?} -> {d:?}");
                    assert!(d.problem(d.lens()).is_ok(), "{d:?}");
                }
            }
        }
    }

    #[test]
    fn gemv_mapping_computes_what_cublas_computes() {
        for trans in [0, 1, 2] {
            for (m, n, pad, batch) in [(3, 5, 0, 1), (7, 2, 2, 3), (1, 4, 0, 2)] {
                let t = trans != 0;
                let lda = m + pad;
                let (xl, yl) = if t { (m, n) } else { (n, m) };
                let g = ColGemv {
                    trans,
                    m,
                    n,
                    alpha: 2.0,
                    lda,
                    stride_a: (lda * n) as i64,
                    incx: 1,
                    stride_x: xl as i64,
                    beta: 0.5,
                    incy: 1,
                    stride_y: yl as i64 + 1,
                    batch,
                };
                let d = g.to_row_major().unwrap().unwrap();
                let [la, lx, ly] = d.lens();
                let (a, x, y0) = (values(la, 7), values(lx, 8), values(ly, 9));
                let (mut want, mut got) = (y0.clone(), y0);
                // cuBLAS, column-major.
                let lda = lda as usize;
                for p in 0..batch as usize {
                    let (oa, ox, oy) = (
                        p * g.stride_a as usize,
                        p * xl as usize,
                        p * g.stride_y as usize,
                    );
                    for r in 0..yl as usize {
                        let s: f32 = (0..xl as usize)
                            .map(|l| {
                                let v = if t {
                                    a[oa + l + r * lda]
                                } else {
                                    a[oa + r + l * lda]
                                };
                                v * x[ox + l]
                            })
                            .sum();
                        want[oy + r] = g.alpha * s + g.beta * want[oy + r];
                    }
                }
                // The runtime's GemvDesc, row-major.
                for p in 0..d.batch {
                    let (oa, ox, oy) = (p * d.stride_a, p * d.stride_x, p * d.stride_y);
                    let (outs, ins) = if d.trans { (d.k, d.m) } else { (d.m, d.k) };
                    for r in 0..outs {
                        let s: f32 = (0..ins)
                            .map(|l| {
                                let v = if d.trans {
                                    a[oa + l * d.lda + r]
                                } else {
                                    a[oa + r * d.lda + l]
                                };
                                v * x[ox + l]
                            })
                            .sum();
                        got[oy + r] = d.alpha * s + d.beta * got[oy + r];
                    }
                }
                assert_eq!(got, want, "{g:?} -> {d:?}");
                assert!(d.problem(d.lens()).is_ok(), "{d:?}");
            }
        }
    }

    #[test]
    fn arguments_are_checked_as_cublas_checks_them() {
        let ok = ColGemm::single(0, 1, 4, 5, 6, 1.0, 4, 5, 0.0, 4);
        assert!(ok.to_row_major().unwrap().is_some());
        let bad = |g: ColGemm| g.to_row_major().unwrap_err();
        assert!(matches!(
            bad(ColGemm { transa: 3, ..ok }),
            ArgError::Transpose { name: "transa", .. }
        ));
        assert!(matches!(
            bad(ColGemm { m: -1, ..ok }),
            ArgError::Negative { name: "m", .. }
        ));
        assert!(matches!(
            bad(ColGemm { batch: -1, ..ok }),
            ArgError::Negative {
                name: "batchCount",
                ..
            }
        ));
        assert!(matches!(
            bad(ColGemm { stride_c: -4, ..ok }),
            ArgError::Negative {
                name: "strideC",
                ..
            }
        ));
        // lda >= m for A not transposed; ldb >= n for B transposed; ldc >= m.
        assert!(matches!(
            bad(ColGemm { lda: 3, ..ok }),
            ArgError::LeadingDimension {
                name: "lda",
                least: 4,
                ..
            }
        ));
        assert!(matches!(
            bad(ColGemm { ldb: 4, ..ok }),
            ArgError::LeadingDimension {
                name: "ldb",
                least: 5,
                ..
            }
        ));
        assert!(matches!(
            bad(ColGemm { ldc: 0, m: 0, ..ok }),
            ArgError::LeadingDimension {
                name: "ldc",
                least: 1,
                ..
            }
        ));
        // Nothing to do: success, nothing launched.
        assert_eq!(ColGemm { m: 0, ..ok }.to_row_major(), Ok(None));
        assert_eq!(ColGemm { batch: 0, ..ok }.to_row_major(), Ok(None));
        assert!(bad(ColGemm { k: 0, ..ok }).is_unsupported());

        let v = ColGemv::single(0, 4, 3, 1.0, 4, 1, 0.0, 1);
        assert!(v.to_row_major().unwrap().is_some());
        assert!(matches!(
            ColGemv { lda: 2, ..v }.to_row_major(),
            Err(ArgError::LeadingDimension { name: "lda", .. })
        ));
        assert!(matches!(
            ColGemv { incx: 0, ..v }.to_row_major(),
            Err(ArgError::ZeroIncrement { name: "incx" })
        ));
        assert!(ColGemv { incy: 2, ..v }
            .to_row_major()
            .unwrap_err()
            .is_unsupported());
        assert!(matches!(
            ColGemv { trans: -1, ..v }.to_row_major(),
            Err(ArgError::Transpose { .. })
        ));
        assert_eq!(ColGemv { n: 0, ..v }.to_row_major(), Ok(None));
    }
}
