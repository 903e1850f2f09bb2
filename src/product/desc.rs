//! The calls a product makes, described as cuBLAS describes them: [`GemmDesc`] (as
//! `cublasSgemmStridedBatched`) and [`GemvDesc`] (as `cublasSgemvStridedBatched`), in the
//! row-major convention of [`crate::problem`]. Pure: no GPU.
//!
//! [`GemmDesc::problem`] and [`GemvDesc::problem`] check a descriptor against the buffers it
//! will read and write and turn it into the problem the lookup keys on ([`Shape`] with its
//! [`Form`]) and the arguments the kernels take ([`Call`]). Every check happens before anything
//! is launched: a descriptor that would make a kernel read or write out of bounds is an error.

use crate::problem::{Call, Form, Layout, Op, Shape, ShapeError, Strides, MAX_BATCH};

/// Why a descriptor was refused. Nothing was launched.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DescError {
    /// The dimensions are invalid (zero, or beyond the kernels' 32-bit indexing).
    #[error(transparent)]
    Shape(#[from] ShapeError),
    /// A leading dimension is smaller than the row it must hold.
    #[error("{op}: {operand} is stored {rows} x {cols} (row-major), so ld{operand_lc} must be at least {cols}; got {ld}")]
    LdTooSmall {
        /// The op.
        op: Op,
        /// Which operand (`A`, `B`, `C`).
        operand: &'static str,
        /// The operand in lower case, for the argument's name.
        operand_lc: &'static str,
        /// Its stored rows.
        rows: u64,
        /// Its stored columns (the least leading dimension).
        cols: u64,
        /// The leading dimension given.
        ld: u64,
    },
    /// The batch count is zero or too large.
    #[error("{op}: the batch count must be between 1 and {max}; got {batch}")]
    Batch {
        /// The op.
        op: Op,
        /// The batch count given.
        batch: u64,
        /// The limit ([`MAX_BATCH`]).
        max: u64,
    },
    /// Consecutive products' outputs would overlap: their results would race.
    #[error("{op}: stride{operand} = {stride} is smaller than one product's {operand} ({span} elements): the products' outputs would overlap; use a stride of at least {span}")]
    OutputOverlap {
        /// The op.
        op: Op,
        /// `C` or `Y`.
        operand: &'static str,
        /// The stride given.
        stride: u64,
        /// Elements one product's output spans.
        span: u64,
    },
    /// A value does not fit the integers the kernels (and cuBLAS) take, or a buffer's extent
    /// overflows.
    #[error("{op}: {what} = {value} is too large: {why}")]
    TooLarge {
        /// The op.
        op: Op,
        /// Which value.
        what: &'static str,
        /// Its value (saturated).
        value: u64,
        /// The limit it broke.
        why: &'static str,
    },
    /// A buffer is shorter than the descriptor says it is read or written.
    #[error("{op} {shape}: buffer {buffer} has {got} elements, the descriptor reaches element {need} (batch {batch}, stride {stride}, ld {ld}); pass a longer buffer or fix the descriptor")]
    BufferLength {
        /// The op.
        op: Op,
        /// The problem's label.
        shape: String,
        /// Which buffer.
        buffer: &'static str,
        /// Its length.
        got: usize,
        /// The length the descriptor needs.
        need: u64,
        /// The batch count.
        batch: u64,
        /// The buffer's batch stride.
        stride: u64,
        /// The buffer's leading dimension.
        ld: u64,
    },
}

/// `C = alpha op(A) op(B) + beta C` for each of `batch` products, row-major: op(A) is `m x k`,
/// op(B) `k x n`, C `m x n`. The layout says how A and B are stored ([`Layout`]); `lda`, `ldb`,
/// `ldc` are the elements between consecutive stored rows; the i-th product's operands start
/// `i * stride_x` elements into each buffer. With `beta == 0`, C is only written (its old
/// values may be anything, NaN included), as with cuBLAS.
///
/// The layer call `Y = X · Wᵀ + Y` (X tokens x in-features, W out-features x in-features,
/// stored as a framework stores them), then a batch of independent products:
///
/// ```
/// use autotune::problem::Layout;
/// use autotune::product::desc::GemmDesc;
///
/// let (tokens, d_in, d_out) = (8, 4096, 11008);
/// let layer = GemmDesc {
///     beta: 1.0,
///     ..GemmDesc::new(Layout::Nt, tokens, d_out, d_in)
/// };
/// // Packed: X's and W's rows are d_in floats long, Y's d_out.
/// assert_eq!((layer.lda, layer.ldb, layer.ldc), (d_in, d_in, d_out));
/// assert_eq!(layer.lens(), [tokens * d_in, d_out * d_in, tokens * d_out]);
///
/// // 64 products of 128 x 128 x 64, one after the other in each buffer.
/// let batch = GemmDesc::new(Layout::Nn, 128, 128, 64).batched(64);
/// assert_eq!(batch.lens(), [64 * 128 * 64, 64 * 64 * 128, 64 * 128 * 128]);
/// // Buffers too short for what the description reads are an error, not a launch.
/// assert!(batch.problem([1, 1, 1]).is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GemmDesc {
    /// How A and B are stored.
    pub layout: Layout,
    /// Rows of op(A) and C.
    pub m: usize,
    /// Columns of op(B) and C.
    pub n: usize,
    /// The reduction length.
    pub k: usize,
    /// Leading dimension of A as stored (`k` for NN/NT packed, `m` for TN/TT packed).
    pub lda: usize,
    /// Leading dimension of B as stored (`n` for NN/TN packed, `k` for NT/TT packed).
    pub ldb: usize,
    /// Leading dimension of C (`n` packed).
    pub ldc: usize,
    /// Scales op(A) op(B).
    pub alpha: f32,
    /// Scales C's old value.
    pub beta: f32,
    /// How many products.
    pub batch: usize,
    /// Elements between consecutive products' A (0: every product reads the same A).
    pub stride_a: usize,
    /// Elements between consecutive products' B (0: the same B).
    pub stride_b: usize,
    /// Elements between consecutive products' C (at least one C's extent when `batch > 1`).
    pub stride_c: usize,
}

impl GemmDesc {
    /// One packed product `C = A B` of `layout`: leading dimensions the stored rows, alpha 1,
    /// beta 0. Change the fields for the rest.
    pub fn new(layout: Layout, m: usize, n: usize, k: usize) -> GemmDesc {
        let shape = Shape::mnk(m as u64, n as u64, k as u64).with_form(Form {
            layout,
            ..Form::PLAIN
        });
        let [a, b, c] = shape.stored(Op::Gemm);
        GemmDesc {
            layout,
            m,
            n,
            k,
            lda: a.1 as usize,
            ldb: b.1 as usize,
            ldc: c.1 as usize,
            alpha: 1.0,
            beta: 0.0,
            batch: 1,
            stride_a: 0,
            stride_b: 0,
            stride_c: 0,
        }
    }

    /// `batch` products one after the other in each buffer (strides of one operand's extent).
    pub fn batched(mut self, batch: usize) -> GemmDesc {
        self.batch = 1;
        [self.stride_a, self.stride_b, self.stride_c] = self.lens();
        self.batch = batch;
        self
    }

    /// The fewest elements A, B and C must hold for this descriptor (saturating: a descriptor
    /// that overflows asks for `usize::MAX`, and [`GemmDesc::problem`] says why).
    pub fn lens(&self) -> [usize; 3] {
        self.raw().lens()
    }

    /// Checks the descriptor against the lengths of A, B and C (elements) and returns the
    /// problem it is and the kernels' arguments.
    pub fn problem(&self, lens: [usize; 3]) -> Result<(Shape, Call), DescError> {
        self.raw().check(lens)
    }

    fn raw(&self) -> Raw {
        Raw {
            op: Op::Gemm,
            dims: (self.m, self.n, self.k),
            layout: self.layout,
            lds: [self.lda, self.ldb, self.ldc],
            strides: [self.stride_a, self.stride_b, self.stride_c],
            batch: self.batch,
            alpha: self.alpha,
            beta: self.beta,
        }
    }
}

/// `y = alpha op(A) x + beta y` for each of `batch` products. A is stored row-major `m x k`
/// with leading dimension `lda`; `trans` false: x has `k` elements and y `m`; true (`y = A^T
/// x`): x has `m` and y `k`. Vectors are contiguous (cuBLAS's `incx = incy = 1`). With
/// `beta == 0`, y is only written.
///
/// ```
/// use autotune::product::desc::GemvDesc;
///
/// // y = Aᵀ x with A stored 1000 x 300: x has 1000 elements, y 300.
/// let t = GemvDesc::new(true, 1000, 300);
/// assert_eq!(t.lens(), [1000 * 300, 1000, 300]);
/// // Rows padded to 320 floats: A's buffer holds the padding of every row but the last.
/// let padded = GemvDesc { lda: 320, ..t };
/// assert_eq!(padded.lens()[0], 999 * 320 + 300);
/// assert!(padded.problem(padded.lens()).is_ok());
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GemvDesc {
    /// Whether y = A^T x.
    pub trans: bool,
    /// Rows of A as stored.
    pub m: usize,
    /// Columns of A as stored.
    pub k: usize,
    /// Leading dimension of A (at least `k`).
    pub lda: usize,
    /// Scales op(A) x.
    pub alpha: f32,
    /// Scales y's old value.
    pub beta: f32,
    /// How many products.
    pub batch: usize,
    /// Elements between consecutive products' A (0: the same A).
    pub stride_a: usize,
    /// Elements between consecutive products' x (0: the same x).
    pub stride_x: usize,
    /// Elements between consecutive products' y (at least y's length when `batch > 1`).
    pub stride_y: usize,
}

impl GemvDesc {
    /// One packed `y = op(A) x`: `lda = k`, alpha 1, beta 0.
    pub fn new(trans: bool, m: usize, k: usize) -> GemvDesc {
        GemvDesc {
            trans,
            m,
            k,
            lda: k,
            alpha: 1.0,
            beta: 0.0,
            batch: 1,
            stride_a: 0,
            stride_x: 0,
            stride_y: 0,
        }
    }

    /// `batch` products one after the other in each buffer.
    pub fn batched(mut self, batch: usize) -> GemvDesc {
        self.batch = 1;
        [self.stride_a, self.stride_x, self.stride_y] = self.lens();
        self.batch = batch;
        self
    }

    /// The fewest elements A, x and y must hold for this descriptor (saturating).
    pub fn lens(&self) -> [usize; 3] {
        self.raw().lens()
    }

    /// Checks the descriptor against the lengths of A, x and y (elements) and returns the
    /// problem it is and the kernels' arguments.
    pub fn problem(&self, lens: [usize; 3]) -> Result<(Shape, Call), DescError> {
        self.raw().check(lens)
    }

    fn raw(&self) -> Raw {
        Raw {
            op: Op::Gemv,
            dims: (self.m, 1, self.k),
            layout: if self.trans { Layout::Tn } else { Layout::Nn },
            lds: [self.lda, 1, 1],
            strides: [self.stride_a, self.stride_x, self.stride_y],
            batch: self.batch,
            alpha: self.alpha,
            beta: self.beta,
        }
    }
}

/// A descriptor of either op, as checked.
struct Raw {
    op: Op,
    dims: (usize, usize, usize),
    layout: Layout,
    lds: [usize; 3],
    strides: [usize; 3],
    batch: usize,
    alpha: f32,
    beta: f32,
}

impl Raw {
    /// Each operand's extent: `(batch - 1) * stride + (rows - 1) * ld + cols`, saturating.
    fn lens(&self) -> [usize; 3] {
        let (m, n, k) = self.dims;
        let (m, n, k) = (m as u64, n as u64, k as u64);
        let shape = Shape::mnk(m, n, k).with_form(Form {
            layout: self.layout,
            ..Form::PLAIN
        });
        let stored = shape.stored(self.op);
        std::array::from_fn(|i| {
            let (rows, cols) = stored[i];
            let ld = self.lds[i] as u64;
            let one = rows
                .saturating_sub(1)
                .saturating_mul(ld)
                .saturating_add(cols);
            let all = (self.batch as u64)
                .saturating_sub(1)
                .saturating_mul(self.strides[i] as u64)
                .saturating_add(one);
            usize::try_from(all).unwrap_or(usize::MAX)
        })
    }

    fn check(&self, lens: [usize; 3]) -> Result<(Shape, Call), DescError> {
        let op = self.op;
        let batch = self.batch as u64;
        if batch == 0 || batch > MAX_BATCH {
            return Err(DescError::Batch {
                op,
                batch,
                max: MAX_BATCH,
            });
        }
        let (m, n, k) = self.dims;
        let shape = Shape::new(op, m as u64, n as u64, k as u64)?;
        let mut shape = shape.with_form(Form {
            layout: self.layout,
            padded: false,
            beta: self.beta != 0.0,
            scaled: self.alpha != 1.0,
            batch,
        });
        let stored = shape.stored(op);
        let names = [("A", "a"), ("B", "b"), ("C", "c")];
        let (names, vectors) = match op {
            Op::Gemm => (names, 0),
            // x and y: contiguous, no leading dimension of their own.
            Op::Gemv => ([("A", "a"), ("X", "x"), ("Y", "y")], 2),
        };
        let int_max = i32::MAX as u64;
        let long_max = i64::MAX as u64;
        let mut spans = [0u64; 3];
        for i in 0..3 {
            let (rows, cols) = stored[i];
            let ld = self.lds[i] as u64;
            if i < 3 - vectors {
                if ld < cols {
                    return Err(DescError::LdTooSmall {
                        op,
                        operand: names[i].0,
                        operand_lc: names[i].1,
                        rows,
                        cols,
                        ld,
                    });
                }
                if ld > int_max {
                    return Err(DescError::TooLarge {
                        op,
                        what: ["lda", "ldb", "ldc"][i],
                        value: ld,
                        why: "leading dimensions are 32-bit ints (as in cuBLAS)",
                    });
                }
                if ld > cols {
                    shape.form.padded = true;
                }
            }
            let ld = if i < 3 - vectors { ld } else { 1 };
            // One product's extent: (rows - 1) * ld + cols, which fits: rows and ld < 2^31.
            spans[i] = (rows - 1) * ld + cols;
        }
        // Outputs of consecutive products must not overlap.
        let out_stride = self.strides[2] as u64;
        if batch > 1 && out_stride < spans[2] {
            return Err(DescError::OutputOverlap {
                op,
                operand: names[2].0,
                stride: out_stride,
                span: spans[2],
            });
        }
        let buffers = [names[0].1, names[1].1, names[2].1];
        for i in 0..3 {
            let stride = self.strides[i] as u64;
            if stride > long_max {
                return Err(DescError::TooLarge {
                    op,
                    what: ["stride_a", "stride_b", "stride_c"][i],
                    value: stride,
                    why: "strides are 64-bit signed integers (as in cuBLAS)",
                });
            }
            // (batch - 1) * stride + span: the last element any product touches, plus one.
            let need = (batch - 1)
                .checked_mul(stride)
                .and_then(|v| v.checked_add(spans[i]))
                .filter(|&v| v <= long_max)
                .ok_or(DescError::TooLarge {
                    op,
                    what: ["stride_a", "stride_b", "stride_c"][i],
                    value: stride,
                    why: "the batch's extent (batch - 1) * stride + one product overflows 64-bit indexing",
                })?;
            if (lens[i] as u64) < need {
                return Err(DescError::BufferLength {
                    op,
                    shape: shape.label(op),
                    buffer: buffers[i],
                    got: lens[i],
                    need,
                    batch,
                    stride,
                    ld: self.lds[i] as u64,
                });
            }
        }
        let call = Call {
            strides: Strides {
                lda: self.lds[0] as u64,
                ldb: if op == Op::Gemm {
                    self.lds[1] as u64
                } else {
                    1
                },
                ldc: if op == Op::Gemm {
                    self.lds[2] as u64
                } else {
                    1
                },
                stride_a: self.strides[0] as u64,
                stride_b: self.strides[1] as u64,
                stride_c: self.strides[2] as u64,
            },
            batch,
            alpha: self.alpha,
            beta: self.beta,
        };
        Ok((shape, call))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gemm(layout: Layout) -> GemmDesc {
        GemmDesc::new(layout, 64, 48, 32)
    }

    /// The lengths a descriptor needs, computed independently of [`GemmDesc::lens`].
    fn lens(d: &GemmDesc) -> [usize; 3] {
        let b = d.batch.max(1);
        let span =
            |s: usize, rows: usize, ld: usize, cols: usize| (b - 1) * s + (rows - 1) * ld + cols;
        let (ar, ac) = if d.layout.trans_a() {
            (d.k, d.m)
        } else {
            (d.m, d.k)
        };
        let (br, bc) = if d.layout.trans_b() {
            (d.n, d.k)
        } else {
            (d.k, d.n)
        };
        let l = [
            span(d.stride_a, ar, d.lda, ac),
            span(d.stride_b, br, d.ldb, bc),
            span(d.stride_c, d.m, d.ldc, d.n),
        ];
        assert_eq!(d.lens(), l);
        l
    }

    #[test]
    fn packed_descriptors_of_every_layout_are_plain_but_for_the_layout() {
        for layout in Layout::ALL {
            let d = gemm(layout);
            let (shape, call) = d.problem(lens(&d)).unwrap();
            assert_eq!(shape.form.layout, layout);
            assert!(!shape.form.padded && !shape.form.beta && shape.form.batch == 1);
            assert_eq!(shape.form.is_plain(), layout == Layout::Nn);
            // The packed leading dimensions are the tuner's own.
            assert_eq!(call.strides.lda, shape.strides(Op::Gemm).lda);
            assert_eq!(call.strides.ldb, shape.strides(Op::Gemm).ldb);
        }
        let d = gemm(Layout::Tn);
        assert_eq!((d.lda, d.ldb, d.ldc), (64, 48, 48));
        let d = gemm(Layout::Nt);
        assert_eq!((d.lda, d.ldb, d.ldc), (32, 32, 48));
    }

    #[test]
    fn the_form_follows_the_descriptor() {
        let mut d = gemm(Layout::Tt).batched(8);
        d.beta = 0.5;
        d.ldc = 64;
        let d = d.batched(8);
        let (shape, call) = d.problem(lens(&d)).unwrap();
        assert_eq!(
            shape.form,
            Form {
                layout: Layout::Tt,
                padded: true,
                beta: true,
                scaled: false,
                batch: 8
            }
        );
        assert_eq!(shape.label(Op::Gemm), "64x48x32:tt:b8:beta:pad");
        assert_eq!(call.strides.stride_c, 63 * 64 + 48);
        assert_eq!(call.beta, 0.5);
    }

    #[test]
    fn hostile_gemm_descriptors_are_refused() {
        let ok = gemm(Layout::Nn).batched(4);
        let good = lens(&ok);
        assert!(ok.problem(good).is_ok());
        // Short buffers, one at a time.
        for i in 0..3 {
            let mut l = good;
            l[i] -= 1;
            let e = ok.problem(l).unwrap_err();
            assert!(matches!(e, DescError::BufferLength { .. }), "{e}");
            assert!(e.to_string().contains(["a", "b", "c"][i]), "{e}");
        }
        // ld smaller than the row.
        let mut d = ok;
        d.lda = 31;
        let e = d.problem(good).unwrap_err();
        assert!(
            matches!(
                e,
                DescError::LdTooSmall {
                    operand: "A",
                    cols: 32,
                    ld: 31,
                    ..
                }
            ),
            "{e}"
        );
        let mut d = gemm(Layout::Tn);
        d.lda = 63; // A is stored k x m: ld >= m = 64.
        assert!(matches!(
            d.problem([usize::MAX; 3]),
            Err(DescError::LdTooSmall { operand: "A", .. })
        ));
        let mut d = ok;
        d.ldc = 47;
        assert!(matches!(
            d.problem([usize::MAX; 3]),
            Err(DescError::LdTooSmall { operand: "C", .. })
        ));
        // Zero or huge batch.
        let mut d = ok;
        d.batch = 0;
        assert!(matches!(
            d.problem(good),
            Err(DescError::Batch { batch: 0, .. })
        ));
        d.batch = usize::MAX;
        assert!(matches!(
            d.problem([usize::MAX; 3]),
            Err(DescError::Batch { .. })
        ));
        // A batch that fits the int but not the buffers.
        d.batch = i32::MAX as usize;
        assert!(matches!(
            d.problem(good),
            Err(DescError::BufferLength { .. })
        ));
        // Overflowing strides.
        let mut d = ok;
        d.stride_a = usize::MAX / 2;
        let e = d.problem([usize::MAX; 3]).unwrap_err();
        assert!(matches!(e, DescError::TooLarge { .. }), "{e}");
        let mut d = ok;
        d.stride_b = (i64::MAX / 2) as usize;
        let e = d.problem([usize::MAX; 3]).unwrap_err();
        assert!(
            matches!(
                e,
                DescError::TooLarge {
                    what: "stride_b",
                    ..
                }
            ),
            "{e}"
        );
        // Overlapping outputs.
        let mut d = ok;
        d.stride_c = 64 * 48 - 1;
        assert!(matches!(
            d.problem([usize::MAX; 3]),
            Err(DescError::OutputOverlap { .. })
        ));
        // Inputs may be shared across the batch (stride 0).
        let mut d = ok;
        d.stride_a = 0;
        d.stride_b = 0;
        assert!(d.problem(good).is_ok());
        // Zero and oversized dimensions.
        let mut d = ok;
        d.m = 0;
        assert!(matches!(d.problem(good), Err(DescError::Shape(_))));
        let mut d = ok;
        d.k = 1 << 31;
        d.lda = 1 << 31;
        assert!(d.problem([usize::MAX; 3]).is_err());
        // ld beyond a 32-bit int.
        let mut d = gemm(Layout::Nn);
        d.lda = 1 << 31;
        let e = d.problem([usize::MAX; 3]).unwrap_err();
        assert!(matches!(e, DescError::TooLarge { what: "lda", .. }), "{e}");
    }

    #[test]
    fn gemv_descriptors_check_vectors_by_op() {
        let d = GemvDesc::new(false, 100, 30).batched(3);
        let (shape, call) = d.problem([3 * 3000, 3 * 30, 3 * 100]).unwrap();
        assert_eq!(shape.label(Op::Gemv), "100x30:b3");
        assert_eq!((call.strides.stride_b, call.strides.stride_c), (30, 100));
        // Transposed: x has m elements, y k.
        let t = GemvDesc::new(true, 100, 30);
        assert!(t.problem([3000, 100, 30]).is_ok());
        assert!(matches!(
            t.problem([3000, 30, 30]),
            Err(DescError::BufferLength { buffer: "x", .. })
        ));
        let mut t = GemvDesc::new(true, 100, 30).batched(2);
        t.stride_y = 29;
        assert!(matches!(
            t.problem([usize::MAX; 3]),
            Err(DescError::OutputOverlap { operand: "Y", .. })
        ));
        let mut p = GemvDesc::new(false, 100, 30);
        p.lda = 29;
        assert!(matches!(
            p.problem([usize::MAX; 3]),
            Err(DescError::LdTooSmall { .. })
        ));
        p.lda = 32;
        let (shape, _) = p.problem([99 * 32 + 30, 30, 100]).unwrap();
        assert!(shape.form.padded);
        assert!(matches!(
            p.problem([99 * 32 + 29, 30, 100]),
            Err(DescError::BufferLength { buffer: "a", .. })
        ));
    }
}
