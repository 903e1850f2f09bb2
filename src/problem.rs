//! Problem shapes: parsing `MxNxK` (GEMM) and `MxK` (GEMV), checking them, and counting the
//! work they imply (FLOPs, bytes).
//!
//! Every matrix is row-major and `f32`: for GEMM, `C = alpha op(A) op(B) + beta C` with op(A)
//! `M x K`, op(B) `K x N`, C `M x N`; for GEMV, `y = alpha op(A) x + beta y` with A stored
//! `M x K` (shapes hold `n = 1`). A shape also carries its [`Form`]: the operands' layouts,
//! whether leading dimensions are padded, whether beta is non-zero, whether alpha is not 1 and
//! the batch count. The plain form (NN, packed, alpha = 1, beta = 0, one product) is what every
//! family computes; the others need a family with the full interface.
//!
//! Text form: `MxNxK` (gemm) or `MxK` (gemv), then `:`-separated form tags for a non-plain
//! form: the layout (`nt`, `tn`, `tt`; gemv: `t`), `bN` (a batch of N), `beta` (beta != 0) and
//! `alpha` (alpha != 1) and `pad` (padded leading dimensions), e.g. `512x512x64:tn:b32:beta`.
//!
//! Layouts use the row-major convention: the first letter is op(A), the second op(B); `n` means
//! the operand is stored as op(X) is (A `M x K`, B `K x N`, row-major), `t` that it is stored
//! transposed (A `K x M`, B `N x K`). cuBLAS is column-major: row-major `C = op(A) op(B)` is
//! column-major `C^T = op(B)^T op(A)^T`, so a row-major layout `XY` is the cuBLAS call
//! `cublasSgemm(opY, opX, N, M, K, alpha, B, ldb, A, lda, beta, C, ldc)` with the same letters
//! (`n` -> `CUBLAS_OP_N`, `t` -> `CUBLAS_OP_T`) and the same leading dimensions. For gemv,
//! row-major `y = A x` is `cublasSgemv(CUBLAS_OP_T, K, M, ...)` and `y = A^T x` is
//! `cublasSgemv(CUBLAS_OP_N, K, M, ...)`.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Largest number of elements one matrix may hold: kernels index with 32-bit row/column
/// arithmetic, so each of A, B and C must stay below 2^31 elements (8 GiB of `f32`). Three
/// such matrices (24 GiB) fit a large GPU; whether they fit the GPU at hand is checked against
/// its free memory before anything is allocated.
pub const MAX_MATRIX_ELEMENTS: u64 = (1 << 31) - 1;

/// Largest value of one dimension (M, N or K): kernels hold row, column and K-loop indices in
/// 32-bit `int`s and step past the end by up to one tile, so every dimension keeps a 2^30
/// margin below `i32::MAX`.
pub const MAX_DIM: u64 = 1 << 30;

/// The operation a kernel family computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// `C = A * B`, A `M x K`, B `K x N`.
    Gemm,
    /// `y = A * x`, A `M x K`.
    Gemv,
}

impl Op {
    /// Every op, in a stable order.
    pub const ALL: [Op; 2] = [Op::Gemm, Op::Gemv];

    /// The lower-case name used in files and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Op::Gemm => "gemm",
            Op::Gemv => "gemv",
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Op {
    type Err = ShapeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "gemm" | "sgemm" => Ok(Op::Gemm),
            "gemv" | "sgemv" => Ok(Op::Gemv),
            other => Err(ShapeError::UnknownOp(other.to_string())),
        }
    }
}

/// The operands' storage in the row-major convention: the first letter is A, the second B;
/// `N`: stored as used (A `M x K`, B `K x N`), `T`: stored transposed (A `K x M`, B `N x K`).
/// GEMV uses `NN` (`y = A x`) and `TN` (`y = A^T x`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    /// Neither transposed (the plain layout).
    #[default]
    Nn,
    /// B stored `N x K`.
    Nt,
    /// A stored `K x M`.
    Tn,
    /// Both stored transposed.
    Tt,
}

impl Layout {
    /// Every layout, in a stable order.
    pub const ALL: [Layout; 4] = [Layout::Nn, Layout::Nt, Layout::Tn, Layout::Tt];

    /// Whether A is stored transposed.
    pub fn trans_a(self) -> bool {
        matches!(self, Layout::Tn | Layout::Tt)
    }

    /// Whether B is stored transposed.
    pub fn trans_b(self) -> bool {
        matches!(self, Layout::Nt | Layout::Tt)
    }

    /// The layout with these transposes.
    pub fn from_trans(trans_a: bool, trans_b: bool) -> Layout {
        match (trans_a, trans_b) {
            (false, false) => Layout::Nn,
            (false, true) => Layout::Nt,
            (true, false) => Layout::Tn,
            (true, true) => Layout::Tt,
        }
    }

    /// How `op` names it: `nn`, `nt`, `tn`, `tt` for gemm; `n`, `t` for gemv.
    pub fn name(self, op: Op) -> &'static str {
        match (op, self) {
            (Op::Gemv, Layout::Nn | Layout::Nt) => "n",
            (Op::Gemv, Layout::Tn | Layout::Tt) => "t",
            (Op::Gemm, Layout::Nn) => "nn",
            (Op::Gemm, Layout::Nt) => "nt",
            (Op::Gemm, Layout::Tn) => "tn",
            (Op::Gemm, Layout::Tt) => "tt",
        }
    }

    /// Parses a layout for `op` (case-insensitive): `nn`, `nt`, `tn`, `tt` for gemm; `n` or
    /// `t` (also `nn`, `tn`) for gemv.
    pub fn parse(op: Op, text: &str) -> Result<Layout, ShapeError> {
        let t = text.trim().to_ascii_lowercase();
        let layout = match (op, t.as_str()) {
            (_, "nn") => Layout::Nn,
            (_, "tn") => Layout::Tn,
            (Op::Gemm, "nt") => Layout::Nt,
            (Op::Gemm, "tt") => Layout::Tt,
            (Op::Gemv, "n") => Layout::Nn,
            (Op::Gemv, "t") => Layout::Tn,
            _ => {
                return Err(ShapeError::UnknownLayout {
                    op,
                    text: text.to_string(),
                })
            }
        };
        Ok(layout)
    }
}

/// Largest batch count of one problem (cuBLAS takes an `int`).
pub const MAX_BATCH: u64 = i32::MAX as u64;

/// How far past the batch counts a batched coverage grid measured it serves problems
/// ([`Form::served_by_counts`]): down to half the smallest count, up to twice the largest.
pub const BATCH_REACH: u64 = 2;

/// What a problem is beyond its dimensions: layouts, leading dimensions, beta, batch. The
/// default is the plain form every family computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Form {
    /// The operands' layouts.
    #[serde(default)]
    pub layout: Layout,
    /// Leading dimensions padded past the rows (see [`Shape::strides`]); packed when false. The
    /// kernels care about the alignment a padding gives, not its size.
    #[serde(default)]
    pub padded: bool,
    /// Whether beta is non-zero (C, or y, is read).
    #[serde(default)]
    pub beta: bool,
    /// Whether alpha is not 1 (the products are scaled): only kernels of the full interface
    /// take alpha.
    #[serde(default)]
    pub scaled: bool,
    /// How many products, strided in memory (at least 1).
    #[serde(default = "one")]
    pub batch: u64,
}

fn one() -> u64 {
    1
}

impl Default for Form {
    fn default() -> Form {
        Form::PLAIN
    }
}

impl Form {
    /// NN, packed, alpha = 1, beta = 0, one product.
    pub const PLAIN: Form = Form {
        layout: Layout::Nn,
        padded: false,
        beta: false,
        scaled: false,
        batch: 1,
    };

    /// Whether this is [`Form::PLAIN`].
    pub fn is_plain(&self) -> bool {
        *self == Form::PLAIN
    }

    /// Whether a coverage grid measured on `grid` is evidence of speed on problems of this
    /// form: the same layout and beta, and one product per call on both or a batch count
    /// within [`BATCH_REACH`] of the grid's (they change what is read and how), while
    /// alpha is free (one multiply per output, for cuBLAS and for every kernel of the full
    /// interface alike) and a grid of packed rows also serves padded ones (padded rows are
    /// 256-byte aligned: the packed, aligned points are their evidence). Only configs whose
    /// family computes the problem's form are ranked for it
    /// ([`crate::family::space::Interface::computes`]).
    pub fn served_by(&self, grid: &Form) -> bool {
        self.served_by_counts(grid, grid.batch..=grid.batch)
    }

    /// [`Form::served_by`] for a grid whose points take the batch counts `counts` (a batched
    /// grid may measure several: `batches` in its file): a batched problem is served when its
    /// count lies within a factor of [`BATCH_REACH`] of them, the way a grid's M, N and K
    /// reach the shapes between and just past its points (the prediction interpolates in the
    /// count too). A batch of one is served only by a grid of one product, and the reverse.
    pub fn served_by_counts(&self, grid: &Form, counts: std::ops::RangeInclusive<u64>) -> bool {
        let batch = if self.batch == 1 || grid.batch == 1 {
            self.batch == grid.batch
        } else {
            let (lo, hi) = (*counts.start(), *counts.end());
            self.batch.saturating_mul(BATCH_REACH) >= lo
                && self.batch <= hi.saturating_mul(BATCH_REACH)
        };
        self.layout == grid.layout
            && self.beta == grid.beta
            && batch
            && (self.padded || !grid.padded)
    }

    /// How many parts of the form differ from `other`'s: each transpose, beta, padding and
    /// whether the product is batched (alpha costs nothing). Orders the grids of other forms
    /// a problem without its own is predicted from.
    pub fn differences(&self, other: &Form) -> u32 {
        [
            self.layout.trans_a() != other.layout.trans_a(),
            self.layout.trans_b() != other.layout.trans_b(),
            self.beta != other.beta,
            self.padded != other.padded,
            (self.batch > 1) != (other.batch > 1),
        ]
        .iter()
        .map(|&d| u32::from(d))
        .sum()
    }

    /// The `:`-separated tags after the dimensions (empty for the plain form).
    pub fn tags(&self, op: Op) -> String {
        let mut s = String::new();
        if self.layout != Layout::Nn {
            s.push(':');
            s.push_str(self.layout.name(op));
        }
        if self.batch != 1 {
            s.push_str(&format!(":b{}", self.batch));
        }
        if self.beta {
            s.push_str(":beta");
        }
        if self.scaled {
            s.push_str(":alpha");
        }
        if self.padded {
            s.push_str(":pad");
        }
        s
    }
}

/// Why a shape or op was rejected. Each message says what is accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    /// The text is not of the form `MxNxK` (gemm) or `MxK` / `Mx1xK` (gemv).
    #[error(
        "malformed shape '{text}': expected {expected}, with positive integers (e.g. {example})"
    )]
    Malformed {
        /// What the user wrote.
        text: String,
        /// The accepted form.
        expected: &'static str,
        /// An example of the accepted form.
        example: &'static str,
    },
    /// A dimension is zero or negative.
    #[error("shape '{text}': every dimension must be at least 1 (got {dim} = {value})")]
    NotPositive {
        /// What the user wrote.
        text: String,
        /// The offending dimension's name.
        dim: char,
        /// Its value as written.
        value: String,
    },
    /// A matrix is too large for the kernels' 32-bit indexing.
    #[error("shape '{text}' is too large: {what} has {elements} elements, the most one matrix may hold is {max} (2^31 - 1, the kernels index with 32-bit integers); split the problem into smaller products")]
    TooLarge {
        /// What the user wrote.
        text: String,
        /// Which matrix overflowed.
        what: &'static str,
        /// How many elements it would have (saturating).
        elements: u64,
        /// The limit.
        max: u64,
    },
    /// One dimension is larger than [`MAX_DIM`].
    #[error("shape '{text}' is too large: {dim} = {value}, the most one dimension may be is {max} (2^30, the kernels index with 32-bit integers); split the problem into smaller products")]
    DimTooLarge {
        /// What the user wrote.
        text: String,
        /// The dimension's name.
        dim: char,
        /// Its value.
        value: u64,
        /// The limit ([`MAX_DIM`]).
        max: u64,
    },
    /// A dimension does not even fit in 64 bits.
    #[error("shape '{text}': {dim} = {value} is too large (the most one matrix may hold is 2^31 - 1 elements, the most one dimension may be is 2^30)")]
    Overflow {
        /// What the user wrote.
        text: String,
        /// The dimension's name.
        dim: char,
        /// Its digits as written.
        value: String,
    },
    /// A GEMV shape with `N != 1`.
    #[error("shape '{text}' has N = {n}: gemv computes y = A x, so write MxK or Mx1xK")]
    GemvN {
        /// What the user wrote.
        text: String,
        /// The N that was given.
        n: u64,
    },
    /// Not `gemm` or `gemv`.
    #[error("unknown op '{0}': accepted ops are gemm and gemv")]
    UnknownOp(String),
    /// Not a layout of the op.
    #[error("unknown {op} layout '{text}': accepted are {}", if *op == Op::Gemm { "nn, nt, tn and tt (row-major: first letter A, second B; t = stored transposed)" } else { "n (y = A x) and t (y = A^T x)" })]
    UnknownLayout {
        /// The op.
        op: Op,
        /// What the user wrote.
        text: String,
    },
    /// A form tag after the dimensions is not one of the known ones.
    #[error("shape '{text}': unknown tag '{tag}' after the dimensions; accepted are a layout ({}), bN (a batch of N products), beta (beta != 0), alpha (alpha != 1) and pad (padded leading dimensions), e.g. {}", if *op == Op::Gemm { "nn, nt, tn, tt" } else { "n, t" }, if *op == Op::Gemm { "512x512x64:tn:b32:beta" } else { "4096x4096:t:b8" })]
    BadTag {
        /// The op.
        op: Op,
        /// What the user wrote.
        text: String,
        /// The tag.
        tag: String,
    },
    /// The batch count is zero or too large.
    #[error("shape '{text}': the batch count must be between 1 and {max} (got {value})")]
    BadBatch {
        /// What the user wrote.
        text: String,
        /// The batch as written.
        value: String,
        /// The limit ([`MAX_BATCH`]).
        max: u64,
    },
}

/// A problem: its size and its [`Form`]. For GEMV `n` is 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Shape {
    /// Rows of op(A) and C (gemv: rows of A as stored).
    pub m: u64,
    /// Columns of op(B) and C (1 for GEMV).
    pub n: u64,
    /// Columns of op(A), rows of op(B): the reduction length (gemv: columns of A as stored).
    pub k: u64,
    /// Layouts, leading dimensions, beta, batch ([`Form::PLAIN`] unless said).
    #[serde(default)]
    pub form: Form,
}

/// What a call of the full interface passes beyond the dimensions and the pointers: leading
/// dimensions, batch strides, batch count, alpha and beta.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Call {
    /// Leading dimensions and batch strides.
    pub strides: Strides,
    /// How many products.
    pub batch: u64,
    /// Scales op(A) op(B) (gemv: op(A) x).
    pub alpha: f32,
    /// Scales C's (y's) old value; 0: C is only written.
    pub beta: f32,
}

/// Leading dimensions (elements between consecutive rows) and batch strides (elements between
/// consecutive products) of a problem's three operands, as the tuner lays them out and the
/// full-interface kernels take them. For gemv, B is x and C is y (vectors: ld 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Strides {
    /// Leading dimension of A as stored.
    pub lda: u64,
    /// Leading dimension of B as stored.
    pub ldb: u64,
    /// Leading dimension of C.
    pub ldc: u64,
    /// Elements from one product's A to the next.
    pub stride_a: u64,
    /// Elements from one product's B (x) to the next.
    pub stride_b: u64,
    /// Elements from one product's C (y) to the next.
    pub stride_c: u64,
}

impl Shape {
    /// Parses a shape for `op`: `MxNxK` for gemm; `MxK` or `Mx1xK` for gemv.
    /// `x` or `X` separate the dimensions; spaces around them are ignored.
    pub fn parse(op: Op, text: &str) -> Result<Shape, ShapeError> {
        let (expected, example) = match op {
            Op::Gemm => ("MxNxK", "2048x2048x2048"),
            Op::Gemv => ("MxK or Mx1xK", "4096x4096"),
        };
        let malformed = || ShapeError::Malformed {
            text: text.to_string(),
            expected,
            example,
        };
        let mut tags = text.split(':');
        let dims_text = tags.next().unwrap_or("");
        let form = Self::parse_tags(op, text, tags)?;
        let parts: Vec<&str> = dims_text.split(['x', 'X']).map(str::trim).collect();
        let names: &[char] = match (op, parts.len()) {
            (Op::Gemm, 3) | (Op::Gemv, 3) => &['M', 'N', 'K'],
            (Op::Gemv, 2) => &['M', 'K'],
            _ => return Err(malformed()),
        };
        let mut dims = Vec::with_capacity(3);
        for (part, &dim) in parts.iter().zip(names) {
            if part.is_empty() {
                return Err(malformed());
            }
            let digits = part.strip_prefix('+').unwrap_or(part);
            if let Some(neg) = digits.strip_prefix('-') {
                if !neg.is_empty() && neg.chars().all(|c| c.is_ascii_digit()) {
                    return Err(ShapeError::NotPositive {
                        text: text.to_string(),
                        dim,
                        value: part.to_string(),
                    });
                }
                return Err(malformed());
            }
            if !digits.chars().all(|c| c.is_ascii_digit()) || digits.is_empty() {
                return Err(malformed());
            }
            let value: u64 = match digits.parse() {
                Ok(v) => v,
                // All digits but unparsable: it overflowed u64.
                Err(_) => {
                    return Err(ShapeError::Overflow {
                        text: text.to_string(),
                        dim,
                        value: part.to_string(),
                    })
                }
            };
            if value == 0 {
                return Err(ShapeError::NotPositive {
                    text: text.to_string(),
                    dim,
                    value: part.to_string(),
                });
            }
            dims.push(value);
        }
        let shape = match dims.as_slice() {
            [m, k] => Shape {
                m: *m,
                n: 1,
                k: *k,
                form,
            },
            [m, n, k] => Shape {
                m: *m,
                n: *n,
                k: *k,
                form,
            },
            _ => return Err(malformed()),
        };
        if op == Op::Gemv && shape.n != 1 {
            return Err(ShapeError::GemvN {
                text: text.to_string(),
                n: shape.n,
            });
        }
        shape.check(op, text)?;
        Ok(shape)
    }

    /// The form tags after the dimensions (`tags` yields the `:`-separated parts after them).
    fn parse_tags<'t>(
        op: Op,
        text: &str,
        tags: impl Iterator<Item = &'t str>,
    ) -> Result<Form, ShapeError> {
        let mut form = Form::PLAIN;
        for tag in tags {
            let t = tag.trim().to_ascii_lowercase();
            if let Ok(layout) = Layout::parse(op, &t) {
                form.layout = layout;
            } else if t == "beta" {
                form.beta = true;
            } else if t == "alpha" {
                form.scaled = true;
            } else if t == "pad" || t == "padded" {
                form.padded = true;
            } else if let Some(digits) = t
                .strip_prefix('b')
                .filter(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()))
            {
                match digits.parse::<u64>() {
                    Ok(b) if (1..=MAX_BATCH).contains(&b) => form.batch = b,
                    _ => {
                        return Err(ShapeError::BadBatch {
                            text: text.to_string(),
                            value: digits.to_string(),
                            max: MAX_BATCH,
                        })
                    }
                }
            } else {
                return Err(ShapeError::BadTag {
                    op,
                    text: text.to_string(),
                    tag: tag.to_string(),
                });
            }
        }
        Ok(form)
    }

    /// The same dimensions with another form.
    pub fn with_form(self, form: Form) -> Shape {
        Shape { form, ..self }
    }

    /// A plain-form shape from its dimensions, unchecked (tests and tables of known sizes).
    pub const fn mnk(m: u64, n: u64, k: u64) -> Shape {
        Shape {
            m,
            n,
            k,
            form: Form::PLAIN,
        }
    }

    /// A shape from its dimensions, checked like [`Shape::parse`] (no allocation unless it is
    /// rejected): every dimension at least 1, `n == 1` for gemv, every matrix within
    /// [`MAX_MATRIX_ELEMENTS`]. The form is plain; [`Shape::with_form`] changes it.
    pub fn new(op: Op, m: u64, n: u64, k: u64) -> Result<Shape, ShapeError> {
        let shape = Shape::mnk(m, n, k);
        let text = || match op {
            Op::Gemm => format!("{m}x{n}x{k}"),
            Op::Gemv => format!("{m}x{n}x{k}"),
        };
        for (dim, v) in [('M', m), ('N', n), ('K', k)] {
            if v == 0 {
                return Err(ShapeError::NotPositive {
                    text: text(),
                    dim,
                    value: "0".into(),
                });
            }
        }
        if op == Op::Gemv && n != 1 {
            return Err(ShapeError::GemvN { text: text(), n });
        }
        let fits = |r: u64, c: u64| r.saturating_mul(c) <= MAX_MATRIX_ELEMENTS;
        let dims_fit = m <= MAX_DIM && n <= MAX_DIM && k <= MAX_DIM;
        if !(dims_fit && fits(m, k) && fits(k, n) && fits(m, n)) {
            shape.check(op, &text())?;
        }
        Ok(shape)
    }

    /// Checks that the problem fits the kernels' 32-bit indexing: every dimension at most
    /// [`MAX_DIM`] and every matrix at most [`MAX_MATRIX_ELEMENTS`] elements. `text` is how
    /// the shape is named in the error.
    pub fn check(&self, op: Op, text: &str) -> Result<(), ShapeError> {
        for (dim, value) in [('M', self.m), ('N', self.n), ('K', self.k)] {
            if value > MAX_DIM {
                return Err(ShapeError::DimTooLarge {
                    text: text.to_string(),
                    dim,
                    value,
                    max: MAX_DIM,
                });
            }
        }
        let mats: &[(&'static str, u64, u64)] = match op {
            Op::Gemm => &[
                ("A (MxK)", self.m, self.k),
                ("B (KxN)", self.k, self.n),
                ("C (MxN)", self.m, self.n),
            ],
            Op::Gemv => &[("A (MxK)", self.m, self.k)],
        };
        for &(what, r, c) in mats {
            let elements = r.saturating_mul(c);
            if elements > MAX_MATRIX_ELEMENTS {
                return Err(ShapeError::TooLarge {
                    text: text.to_string(),
                    what,
                    elements,
                    max: MAX_MATRIX_ELEMENTS,
                });
            }
        }
        Ok(())
    }

    /// The canonical text for `op`: `MxNxK` for gemm, `MxK` for gemv, then the form's tags.
    pub fn label(&self, op: Op) -> String {
        let dims = match op {
            Op::Gemm => format!("{}x{}x{}", self.m, self.n, self.k),
            Op::Gemv => format!("{}x{}", self.m, self.k),
        };
        dims + &self.form.tags(op)
    }

    /// Just the dimensions, plain form: what distances between shapes are measured on.
    pub fn dims(&self) -> Shape {
        Shape::mnk(self.m, self.n, self.k)
    }

    /// Floating-point operations (one FMA counts as two), over the whole batch.
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64 * self.form.batch as f64
    }

    /// Rows and columns of A, B (x) and C (y) as stored (row-major, before padding).
    pub fn stored(&self, op: Op) -> [(u64, u64); 3] {
        let (m, n, k) = (self.m, self.n, self.k);
        let t = self.form.layout;
        match op {
            Op::Gemm => [
                if t.trans_a() { (k, m) } else { (m, k) },
                if t.trans_b() { (n, k) } else { (k, n) },
                (m, n),
            ],
            Op::Gemv if t.trans_a() => [(m, k), (m, 1), (k, 1)],
            Op::Gemv => [(m, k), (k, 1), (m, 1)],
        }
    }

    /// The leading dimensions and batch strides the tuner lays the problem out with: packed
    /// rows, or padded ones (the row length rounded up past the next multiple of 64 floats:
    /// at least one float of padding, rows 256-byte aligned); products one after the other.
    /// Vectors (gemv's x and y) are never padded.
    pub fn strides(&self, op: Op) -> Strides {
        let [a, b, c] = self.stored(op);
        let pad = |cols: u64| {
            if self.form.padded {
                (cols / 64 + 1) * 64
            } else {
                cols
            }
        };
        let (lda, ldb, ldc) = match op {
            Op::Gemm => (pad(a.1), pad(b.1), pad(c.1)),
            Op::Gemv => (pad(a.1), 1, 1),
        };
        let len = |rows: u64, ld: u64, cols: u64| (rows - 1) * ld + cols;
        Strides {
            lda,
            ldb,
            ldc,
            stride_a: len(a.0, lda, a.1),
            stride_b: if op == Op::Gemv {
                b.0
            } else {
                len(b.0, ldb, b.1)
            },
            stride_c: if op == Op::Gemv {
                c.0
            } else {
                len(c.0, ldc, c.1)
            },
        }
    }

    /// The call the tuner makes for this problem: [`Shape::strides`], the batch, and alpha = 1,
    /// beta = 0 for the plain form; otherwise alpha = 0.75 and beta = 0.5 when the form says
    /// beta != 0 (0 when not), so validation sees both scalars applied.
    pub fn tuning_call(&self, op: Op) -> Call {
        let plain = self.form.is_plain();
        Call {
            strides: self.strides(op),
            batch: self.form.batch,
            alpha: if plain { 1.0 } else { 0.75 },
            beta: if self.form.beta { 0.5 } else { 0.0 },
        }
    }

    /// Elements of A, B (x) and C (y) the tuner allocates: every product of the batch.
    pub fn lens(&self, op: Op) -> [u64; 3] {
        let s = self.strides(op);
        let b = self.form.batch;
        [
            s.stride_a.saturating_mul(b),
            s.stride_b.saturating_mul(b),
            s.stride_c.saturating_mul(b),
        ]
    }

    /// The fewest bytes the problem must move through device memory: every input read once
    /// (C too when beta != 0), every output written once.
    pub fn min_bytes(&self, op: Op) -> f64 {
        let [a, b, c] = self.stored(op);
        let el = |d: (u64, u64)| d.0 as f64 * d.1 as f64;
        let c_moves = if self.form.beta { 2.0 } else { 1.0 };
        4.0 * self.form.batch as f64 * (el(a) + el(b) + c_moves * el(c))
    }

    /// Device memory the tuner allocates for the inputs and output, in bytes.
    pub fn buffer_bytes(&self, op: Op) -> u64 {
        4 * self.lens(op).iter().sum::<u64>()
    }
}

#[cfg(test)]
mod tests;
