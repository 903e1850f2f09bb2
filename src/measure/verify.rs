//! Reference results in float64 and the tolerance rule.
//!
//! Each output element is judged by its error relative to the magnitude bound of its dot
//! product, `bound_i = sum_k |a_ik * b_k|`: `err_i = |out_i - ref_i| / bound_i`. Float32
//! summation in any order (tiles, split-K atomics) keeps `err_i` near `eps * sqrt(K)`, while an
//! indexing or synchronisation bug gives errors near 1. NaN, infinity and unwritten (NaN-poisoned)
//! elements always fail.

use crate::problem::{Call, Op, Shape};
use rayon::prelude::*;
use std::ops::Range;

/// Deterministic uniform values in [-1, 1): the same `seed` and `stream` give the same values.
/// Filled in parallel, in chunks with independent generators, so large inputs are quick.
pub fn random_values(len: usize, seed: u64, stream: u64) -> Vec<f32> {
    const CHUNK: usize = 1 << 16;
    let mut out = vec![0f32; len];
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(ci, chunk)| {
            let mut state =
                splitmix(seed ^ splitmix(stream.wrapping_add(1)) ^ splitmix(ci as u64 + 7));
            for v in chunk {
                state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let bits = splitmix(state) >> 40; // 24 random bits
                *v = (bits as f32) * (2.0 / (1u64 << 24) as f32) - 1.0;
            }
        });
    out
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The largest accepted relative error for a reduction of length `k`.
pub fn tolerance(k: u64) -> f64 {
    // 2^-23 is float32's epsilon; 8 sqrt(K) + 16 of them leaves room for any summation order.
    let eps = f32::EPSILON as f64;
    eps * (8.0 * (k as f64).sqrt() + 16.0)
}

/// Float64 reference of `C = A B` (row-major) and the magnitude bound of each element.
pub fn gemm_reference(m: usize, n: usize, k: usize, a: &[f32], b: &[f32]) -> (Vec<f64>, Vec<f64>) {
    let mut reference = vec![0f64; m * n];
    let mut bound = vec![0f64; m * n];
    reference
        .par_chunks_mut(n)
        .zip(bound.par_chunks_mut(n))
        .enumerate()
        .for_each(|(i, (r, bd))| {
            for p in 0..k {
                let av = a[i * k + p] as f64;
                let brow = &b[p * n..(p + 1) * n];
                for j in 0..n {
                    let t = av * brow[j] as f64;
                    r[j] += t;
                    bd[j] += t.abs();
                }
            }
        });
    (reference, bound)
}

/// Float64 reference of `y = A x` (A row-major `m x k`) and each element's magnitude bound.
pub fn gemv_reference(m: usize, k: usize, a: &[f32], x: &[f32]) -> (Vec<f64>, Vec<f64>) {
    (0..m)
        .into_par_iter()
        .map(|i| {
            let row = &a[i * k..(i + 1) * k];
            row.iter().zip(x).fold((0f64, 0f64), |(s, b), (&av, &xv)| {
                let t = av as f64 * xv as f64;
                (s + t, b + t.abs())
            })
        })
        .unzip()
}

/// Float64 reference of any problem (`shape`'s form: layouts, leading dimensions, batch) as
/// laid out by `call`: `alpha op(A) op(B) + beta C` (gemv: `alpha op(A) x + beta y`) from the
/// operands as stored (`a`, `b` = x, `c` = the output's old value, read only when beta != 0).
/// Values and bounds are compact: product by product, row by row (gemv: one row of y's
/// elements per product).
pub fn general_reference(
    op: Op,
    shape: Shape,
    call: &Call,
    a: &[f32],
    b: &[f32],
    c: &[f32],
) -> (Vec<f64>, Vec<f64>) {
    let [_, _, (rows, cols)] = shape.stored(op);
    let (rows, cols) = (rows as usize, cols as usize);
    let k = match op {
        Op::Gemm => shape.k as usize,
        // y = A x: a row of A (K); y = A^T x: a column of A (M).
        Op::Gemv if shape.form.layout.trans_a() => shape.m as usize,
        Op::Gemv => shape.k as usize,
    };
    let s = call.strides;
    let (lda, ldb, ldc) = (s.lda as usize, s.ldb as usize, s.ldc as usize);
    let (ta, tb) = (shape.form.layout.trans_a(), shape.form.layout.trans_b());
    let (alpha, beta) = (call.alpha as f64, call.beta as f64);
    let batch = call.batch as usize;
    let mut reference = vec![0f64; batch * rows * cols];
    let mut bound = vec![0f64; batch * rows * cols];
    reference
        .par_chunks_mut(cols)
        .zip(bound.par_chunks_mut(cols))
        .enumerate()
        .for_each(|(row, (r, bd))| {
            let (bi, i) = (row / rows, row % rows);
            let a = &a[bi * s.stride_a as usize..];
            let b = &b[bi * s.stride_b as usize..];
            for (j, (r, bd)) in r.iter_mut().zip(bd.iter_mut()).enumerate() {
                let (mut sum, mut mag) = (0f64, 0f64);
                for p in 0..k {
                    let (av, bv) = match op {
                        Op::Gemm => (
                            if ta { a[p * lda + i] } else { a[i * lda + p] },
                            if tb { b[j * ldb + p] } else { b[p * ldb + j] },
                        ),
                        // y[i] = sum_p A(i, p) x[p], or A(p, i) x[p] transposed.
                        Op::Gemv => (if ta { a[p * lda + i] } else { a[i * lda + p] }, b[p]),
                    };
                    let t = av as f64 * bv as f64;
                    sum += t;
                    mag += t.abs();
                }
                let old = if beta != 0.0 {
                    c[bi * s.stride_c as usize + i * ldc + j] as f64
                } else {
                    0.0
                };
                *r = alpha * sum + beta * old;
                *bd = alpha.abs() * mag + (beta * old).abs();
            }
        });
    (reference, bound)
}

/// Where each row of an output laid out by `call` lies in its buffer, in the order
/// [`general_reference`] uses: product by product, row by row (gemv: one element per row).
pub fn output_rows(op: Op, shape: Shape, call: &Call) -> impl Iterator<Item = Range<usize>> {
    let [_, _, (rows, cols)] = shape.stored(op);
    let (rows, cols) = (rows as usize, cols as usize);
    let (ldc, stride) = (call.strides.ldc as usize, call.strides.stride_c as usize);
    (0..call.batch as usize).flat_map(move |bi| {
        (0..rows).map(move |i| {
            let start = bi * stride + i * ldc;
            start..start + cols
        })
    })
}

/// What a validation writes in the padding between an output's rows (and the bench around the
/// output): a signalling NaN no kernel computes by accident, so a write there is caught.
pub const CANARY: u32 = 0x7FA5_A5A5;

/// The output's image before a validation of a problem of another form than the plain one:
/// C's old values (seeded) where beta reads them, NaN where it does not (so unwritten
/// elements fail), [`CANARY`] in the padding between rows (so writes there are caught).
pub fn output_before(op: Op, shape: Shape, call: &Call, seed: u64, len: usize) -> Vec<f32> {
    let mut v = if shape.form.beta {
        random_values(len, seed, 2)
    } else {
        vec![f32::from_bits(u32::MAX); len]
    };
    // The gaps between consecutive rows: the padding of each row but the last of a product.
    let mut end = None;
    for r in output_rows(op, shape, call) {
        if let Some(e) = end {
            v[e..r.start].fill(f32::from_bits(CANARY));
        }
        end = Some(r.end);
    }
    v
}

/// The elements of `rows` (from [`output_rows`]) of `out`, one after the other.
pub fn compact<T: Copy>(out: &[T], rows: impl Iterator<Item = Range<usize>>) -> Vec<T> {
    let mut v = Vec::new();
    for r in rows {
        v.extend_from_slice(&out[r]);
    }
    v
}

/// The logical elements of an output laid out by `call` (compact, as
/// [`general_reference`] orders them), and whether every other element of the output (the
/// padding between rows) still holds what `before` held there.
pub fn logical_output(
    op: Op,
    shape: Shape,
    call: &Call,
    out: &[f32],
    before: &[f32],
) -> (Vec<f32>, bool) {
    let kept = |r: Range<usize>| {
        out[r.clone()]
            .iter()
            .zip(&before[r])
            .all(|(x, y)| x.to_bits() == y.to_bits())
    };
    let mut padding_kept = true;
    let mut end = 0;
    for r in output_rows(op, shape, call) {
        padding_kept &= kept(end..r.start);
        end = r.end;
    }
    padding_kept &= kept(end..out.len());
    (compact(out, output_rows(op, shape, call)), padding_kept)
}

/// Why an output was rejected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Mismatch {
    /// Wrong number of elements.
    #[error("output has {got} elements, expected {expected}")]
    Length {
        /// Elements given.
        got: usize,
        /// Elements expected.
        expected: usize,
    },
    /// An element is NaN or infinite (unwritten outputs stay NaN-poisoned).
    #[error(
        "element ({row}, {col}) is {value} (unwritten or not finite); {count} such element(s)"
    )]
    NotFinite {
        /// Row of the first one.
        row: usize,
        /// Column of the first one.
        col: usize,
        /// Its value.
        value: f32,
        /// How many elements are not finite.
        count: usize,
    },
    /// The error is over tolerance.
    #[error("element ({row}, {col}) = {value}, expected {expected}: relative error {error:.3e} > tolerance {tolerance:.3e}; {count} element(s) over")]
    TooFar {
        /// Row of the worst element.
        row: usize,
        /// Column of the worst element.
        col: usize,
        /// What the kernel wrote.
        value: f32,
        /// The reference.
        expected: f64,
        /// Its relative error.
        error: f64,
        /// The tolerance.
        tolerance: f64,
        /// How many elements are over.
        count: usize,
    },
}

/// The relative errors of an output that passed validation: each element's
/// `|out_i - ref_i| / bound_i` (see the module docs), summarised.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ErrorStats {
    /// The largest relative error.
    pub max: f64,
    /// The mean relative error over every element (0 for an empty output).
    pub mean: f64,
}

impl ErrorStats {
    /// The larger of each statistic of `self` and `other` (two validations of one kernel).
    pub fn worst(self, other: ErrorStats) -> ErrorStats {
        ErrorStats {
            max: self.max.max(other.max),
            mean: self.mean.max(other.mean),
        }
    }
}

/// Compares `out` with the reference; returns the largest relative error when every element
/// passes. `cols` is the row length, used only to report positions.
pub fn compare(
    out: &[f32],
    reference: &[f64],
    bound: &[f64],
    cols: usize,
    tolerance: f64,
) -> Result<f64, Mismatch> {
    compare_stats(out, reference, bound, cols, tolerance).map(|e| e.max)
}

/// [`compare`], returning the largest and the mean relative error when every element passes:
/// what the database records of a kernel, and of cuBLAS on the same inputs.
pub fn compare_stats(
    out: &[f32],
    reference: &[f64],
    bound: &[f64],
    cols: usize,
    tolerance: f64,
) -> Result<ErrorStats, Mismatch> {
    if out.len() != reference.len() || bound.len() != reference.len() {
        return Err(Mismatch::Length {
            got: out.len(),
            expected: reference.len(),
        });
    }
    let cols = cols.max(1);
    // (first non-finite index, non-finite count, worst index, worst error, count over, sum of
    // errors)
    type Acc = (Option<usize>, usize, usize, f64, usize, f64);
    let (nan_at, nan_count, worst, worst_err, over, sum) = out
        .par_iter()
        .zip(reference.par_iter().zip(bound.par_iter()))
        .enumerate()
        .fold(
            || -> Acc { (None, 0, 0, 0.0, 0, 0.0) },
            |mut acc, (i, (&o, (&r, &b)))| {
                if !o.is_finite() {
                    acc.0 = Some(acc.0.map_or(i, |j| j.min(i)));
                    acc.1 += 1;
                    return acc;
                }
                // An exact-zero bound means every product was zero: any nonzero output is wrong.
                let e = (o as f64 - r).abs() / b.max(f64::MIN_POSITIVE);
                if e > tolerance {
                    acc.4 += 1;
                }
                acc.5 += e;
                if e > acc.3 {
                    acc.2 = i;
                    acc.3 = e;
                }
                acc
            },
        )
        .reduce(
            || (None, 0, 0, 0.0, 0, 0.0),
            |a, b| {
                let nan_at = match (a.0, b.0) {
                    (Some(x), Some(y)) => Some(x.min(y)),
                    (x, y) => x.or(y),
                };
                let (wi, we) = if b.3 > a.3 { (b.2, b.3) } else { (a.2, a.3) };
                (nan_at, a.1 + b.1, wi, we, a.4 + b.4, a.5 + b.5)
            },
        );
    if let Some(i) = nan_at {
        return Err(Mismatch::NotFinite {
            row: i / cols,
            col: i % cols,
            value: out[i],
            count: nan_count,
        });
    }
    if over > 0 {
        return Err(Mismatch::TooFar {
            row: worst / cols,
            col: worst % cols,
            value: out[worst],
            expected: reference[worst],
            error: worst_err,
            tolerance,
            count: over,
        });
    }
    Ok(ErrorStats {
        max: worst_err,
        mean: if out.is_empty() {
            0.0
        } else {
            sum / out.len() as f64
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_general_reference_of_the_plain_form_is_the_plain_one() {
        let shape = Shape::mnk(7, 5, 3);
        let a = random_values(21, 1, 0);
        let b = random_values(15, 1, 1);
        let call = shape.tuning_call(Op::Gemm);
        assert_eq!(
            general_reference(Op::Gemm, shape, &call, &a, &b, &[]),
            gemm_reference(7, 5, 3, &a, &b)
        );
        let v = Shape::mnk(6, 1, 4);
        let a = random_values(24, 2, 0);
        let x = &b[..4];
        let (r, bd) = general_reference(Op::Gemv, v, &v.tuning_call(Op::Gemv), &a, x, &[]);
        let (r2, bd2) = gemv_reference(6, 4, &a, x);
        assert_eq!((r, bd), (r2, bd2));
    }

    #[test]
    fn the_general_reference_transposes_scales_and_batches() {
        // TN with padding, beta and two products: compare with transposing by hand.
        let s = Shape::parse(Op::Gemm, "3x2x4:tn:b2:beta:pad").unwrap();
        let call = s.tuning_call(Op::Gemm);
        let [la, lb, lc] = s.lens(Op::Gemm).map(|l| l as usize);
        let (a, b, c) = (
            random_values(la, 3, 0),
            random_values(lb, 3, 1),
            random_values(lc, 3, 2),
        );
        let (r, _) = general_reference(Op::Gemm, s, &call, &a, &b, &c);
        let st = call.strides;
        for bi in 0..2 {
            for i in 0..3 {
                for j in 0..2 {
                    let mut sum = 0f64;
                    for p in 0..4 {
                        let av = a[bi * st.stride_a as usize + p * st.lda as usize + i];
                        let bv = b[bi * st.stride_b as usize + p * st.ldb as usize + j];
                        sum += av as f64 * bv as f64;
                    }
                    let old = c[bi * st.stride_c as usize + i * st.ldc as usize + j] as f64;
                    let want = 0.75 * sum + 0.5 * old;
                    let got = r[bi * 6 + i * 2 + j];
                    assert!((got - want).abs() < 1e-12, "{got} {want}");
                }
            }
        }
        // y = A^T x.
        let v = Shape::parse(Op::Gemv, "3x2:t").unwrap();
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let (r, _) = general_reference(
            Op::Gemv,
            v,
            &v.tuning_call(Op::Gemv),
            &a,
            &[1.0, 1.0, 1.0],
            &[],
        );
        assert_eq!(r, vec![0.75 * 9.0, 0.75 * 12.0]);
    }

    #[test]
    fn logical_output_skips_and_checks_padding() {
        let s = Shape::parse(Op::Gemm, "2x3x1:pad").unwrap();
        let call = s.tuning_call(Op::Gemm);
        let len = s.lens(Op::Gemm)[2] as usize;
        assert_eq!(len, 64 + 3);
        let before = vec![9.0f32; len];
        let mut out = before.clone();
        out[..3].copy_from_slice(&[1.0, 2.0, 3.0]);
        out[64..67].copy_from_slice(&[4.0, 5.0, 6.0]);
        let (v, kept) = logical_output(Op::Gemm, s, &call, &out, &before);
        assert_eq!(v, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert!(kept);
        out[10] = 0.0;
        assert!(!logical_output(Op::Gemm, s, &call, &out, &before).1);
    }

    #[test]
    fn random_values_are_deterministic_and_in_range() {
        let a = random_values(200_000, 42, 0);
        assert_eq!(a, random_values(200_000, 42, 0));
        assert_ne!(a, random_values(200_000, 43, 0));
        assert_ne!(a, random_values(200_000, 42, 1));
        assert!(a.iter().all(|v| (-1.0..1.0).contains(v)));
        let mean = a.iter().map(|&v| v as f64).sum::<f64>() / a.len() as f64;
        assert!(mean.abs() < 0.01, "mean {mean}");
    }

    fn naive_f32_gemm(m: usize, n: usize, k: usize, a: &[f32], b: &[f32]) -> Vec<f32> {
        let mut c = vec![0f32; m * n];
        for i in 0..m {
            for j in 0..n {
                let mut s = 0f32;
                for p in 0..k {
                    s = a[i * k + p].mul_add(b[p * n + j], s);
                }
                c[i * n + j] = s;
            }
        }
        c
    }

    #[test]
    fn float32_result_passes_and_errors_fail() {
        let (m, n, k) = (33, 17, 1000);
        let a = random_values(m * k, 1, 0);
        let b = random_values(k * n, 1, 1);
        let (r, bd) = gemm_reference(m, n, k, &a, &b);
        let mut c = naive_f32_gemm(m, n, k, &a, &b);
        let tol = tolerance(k as u64);
        let err = compare(&c, &r, &bd, n, tol).unwrap();
        assert!(
            err < tol / 4.0,
            "sequential fp32 error {err} should sit well under {tol}"
        );

        // One element off by a single product: caught, at the right place.
        c[5 * n + 3] += a[5 * k] * b[3];
        match compare(&c, &r, &bd, n, tol) {
            Err(Mismatch::TooFar {
                row, col, count, ..
            }) => assert_eq!((row, col, count), (5, 3, 1)),
            other => panic!("expected TooFar, got {other:?}"),
        }
        c[5 * n + 3] = f32::NAN;
        assert!(matches!(
            compare(&c, &r, &bd, n, tol),
            Err(Mismatch::NotFinite {
                row: 5,
                col: 3,
                count: 1,
                ..
            })
        ));
        assert!(matches!(
            compare(&c[1..], &r, &bd, n, tol),
            Err(Mismatch::Length { .. })
        ));
    }

    #[test]
    fn error_stats_are_the_max_and_mean_of_the_bound_normalised_errors() {
        // Bounds 2, 4, 1 and 0 (every product zero: any error counts in full, none is 0).
        let reference = [1.0, -2.0, 0.5, 0.0];
        let bound = [2.0, 4.0, 1.0, 0.0];
        let out = [1.5f32, -2.0, 0.25, 0.0];
        let e = compare_stats(&out, &reference, &bound, 2, 1.0).unwrap();
        // Errors 0.25, 0, 0.25, 0.
        assert_eq!(e.max, 0.25);
        assert!((e.mean - 0.125).abs() < 1e-15, "{e:?}");
        assert_eq!(compare(&out, &reference, &bound, 2, 1.0), Ok(e.max));
        // The same rule as validation: over the tolerance fails, NaN never passes.
        assert!(compare_stats(&out, &reference, &bound, 2, 0.2).is_err());
        let nan = [f32::NAN, -2.0, 0.5, 0.0];
        assert!(compare_stats(&nan, &reference, &bound, 2, 1.0).is_err());
        assert_eq!(
            compare_stats(&[], &[], &[], 1, 1.0),
            Ok(ErrorStats::default())
        );
        // A real fp32 product: the mean sits under the max, both well inside the tolerance.
        let (m, n, k) = (16, 24, 300);
        let a = random_values(m * k, 5, 0);
        let b = random_values(k * n, 5, 1);
        let (r, bd) = gemm_reference(m, n, k, &a, &b);
        let c = naive_f32_gemm(m, n, k, &a, &b);
        let e = compare_stats(&c, &r, &bd, n, tolerance(k as u64)).unwrap();
        assert!(e.mean > 0.0 && e.mean < e.max, "{e:?}");
        let w = e.worst(ErrorStats {
            max: e.max / 2.0,
            mean: e.mean * 2.0,
        });
        assert_eq!((w.max, w.mean), (e.max, e.mean * 2.0));
    }

    #[test]
    fn gemv_reference_matches_gemm_with_one_column() {
        let (m, k) = (9, 31);
        let a = random_values(m * k, 3, 0);
        let x = random_values(k, 3, 1);
        let (r1, b1) = gemv_reference(m, k, &a, &x);
        let (r2, b2) = gemm_reference(m, 1, k, &a, &x);
        for i in 0..m {
            assert!((r1[i] - r2[i]).abs() < 1e-12);
            assert!((b1[i] - b2[i]).abs() < 1e-12);
        }
        assert!(tolerance(1) < tolerance(4096));
    }
}
