//! Problem shapes: parsing `MxNxK` (GEMM) and `MxK` (GEMV), checking them, and counting the
//! work they imply (FLOPs, bytes).
//!
//! Every matrix is row-major and `f32`: for GEMM, A is `M x K`, B is `K x N`, C is `M x N`;
//! for GEMV, `y = A x` with A `M x K` (stored with `n = 1`).

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
}

/// A problem size. For GEMV `n` is 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Shape {
    /// Rows of A and C.
    pub m: u64,
    /// Columns of B and C (1 for GEMV).
    pub n: u64,
    /// Columns of A, rows of B (the reduction length).
    pub k: u64,
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
        let parts: Vec<&str> = text.split(['x', 'X']).map(str::trim).collect();
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
            [m, k] => Shape { m: *m, n: 1, k: *k },
            [m, n, k] => Shape {
                m: *m,
                n: *n,
                k: *k,
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

    /// A shape from its dimensions, checked like [`Shape::parse`] (no allocation unless it is
    /// rejected): every dimension at least 1, `n == 1` for gemv, every matrix within
    /// [`MAX_MATRIX_ELEMENTS`].
    pub fn new(op: Op, m: u64, n: u64, k: u64) -> Result<Shape, ShapeError> {
        let shape = Shape { m, n, k };
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

    /// The canonical text for `op`: `MxNxK` for gemm, `MxK` for gemv.
    pub fn label(&self, op: Op) -> String {
        match op {
            Op::Gemm => format!("{}x{}x{}", self.m, self.n, self.k),
            Op::Gemv => format!("{}x{}", self.m, self.k),
        }
    }

    /// Floating-point operations (one FMA counts as two).
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }

    /// The fewest bytes the problem must move through device memory: every input read once,
    /// every output written once.
    pub fn min_bytes(&self, op: Op) -> f64 {
        let (m, n, k) = (self.m as f64, self.n as f64, self.k as f64);
        4.0 * match op {
            Op::Gemm => m * k + k * n + m * n,
            Op::Gemv => m * k + k + m,
        }
    }

    /// Device memory the tuner allocates for the inputs and output, in bytes.
    pub fn buffer_bytes(&self, op: Op) -> u64 {
        let (m, n, k) = (self.m, self.n, self.k);
        4 * match op {
            Op::Gemm => m * k + k * n + m * n,
            Op::Gemv => m * k + k + m,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_gemm_and_gemv_forms() {
        assert_eq!(
            Shape::parse(Op::Gemm, "2048x1024X512").unwrap(),
            Shape {
                m: 2048,
                n: 1024,
                k: 512
            }
        );
        assert_eq!(
            Shape::parse(Op::Gemv, "4096x100").unwrap(),
            Shape {
                m: 4096,
                n: 1,
                k: 100
            }
        );
        assert_eq!(
            Shape::parse(Op::Gemv, "7x1x9").unwrap(),
            Shape { m: 7, n: 1, k: 9 }
        );
        assert_eq!(
            Shape::parse(Op::Gemm, " 3 x 5 x 7 ")
                .unwrap()
                .label(Op::Gemm),
            "3x5x7"
        );
    }

    #[test]
    fn rejects_bad_shapes_with_reasons() {
        assert!(matches!(
            Shape::parse(Op::Gemm, "2048x2048"),
            Err(ShapeError::Malformed { .. })
        ));
        assert!(matches!(
            Shape::parse(Op::Gemm, "axbxc"),
            Err(ShapeError::Malformed { .. })
        ));
        assert!(matches!(
            Shape::parse(Op::Gemm, "1x1x"),
            Err(ShapeError::Malformed { .. })
        ));
        assert!(matches!(
            Shape::parse(Op::Gemm, "0x4x4"),
            Err(ShapeError::NotPositive { dim: 'M', .. })
        ));
        assert!(matches!(
            Shape::parse(Op::Gemm, "4x-4x4"),
            Err(ShapeError::NotPositive { dim: 'N', .. })
        ));
        assert!(matches!(
            Shape::parse(Op::Gemm, "4x4x99999999999999999999999"),
            Err(ShapeError::Overflow { dim: 'K', .. })
        ));
        assert!(matches!(
            Shape::parse(Op::Gemm, "100000x100000x1"),
            Err(ShapeError::TooLarge {
                what: "C (MxN)",
                ..
            })
        ));
        assert!(matches!(
            Shape::parse(Op::Gemv, "4x2x4"),
            Err(ShapeError::GemvN { n: 2, .. })
        ));
        // Each matrix fits, but K would overflow the kernels' 32-bit K loop.
        let err = Shape::parse(Op::Gemm, "1x1x2147483647").unwrap_err();
        assert!(
            matches!(
                err,
                ShapeError::DimTooLarge {
                    dim: 'K',
                    value: 2147483647,
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(err.to_string().contains("2^30"), "{err}");
        assert!(matches!(
            Shape::parse(Op::Gemv, "1073741825x1"),
            Err(ShapeError::DimTooLarge { dim: 'M', .. })
        ));
        assert_eq!(
            Shape::parse(Op::Gemv, "1x1073741824").unwrap(),
            Shape {
                m: 1,
                n: 1,
                k: MAX_DIM
            }
        );
        assert!(matches!(
            Shape::new(Op::Gemm, 1, 1, MAX_DIM + 1),
            Err(ShapeError::DimTooLarge { dim: 'K', .. })
        ));
        let msg = Shape::parse(Op::Gemm, "12").unwrap_err().to_string();
        assert!(msg.contains("MxNxK"), "{msg}");
    }

    #[test]
    fn counts_work() {
        let s = Shape::parse(Op::Gemm, "2x3x4").unwrap();
        assert_eq!(s.flops(), 48.0);
        assert_eq!(s.min_bytes(Op::Gemm), 4.0 * (8.0 + 12.0 + 6.0));
        let v = Shape::parse(Op::Gemv, "10x20").unwrap();
        assert_eq!(v.min_bytes(Op::Gemv), 4.0 * (200.0 + 20.0 + 10.0));
        assert_eq!("SGEMV".parse::<Op>().unwrap(), Op::Gemv);
        assert_eq!(Shape::new(Op::Gemm, 2, 3, 4).unwrap(), s);
        assert!(matches!(
            Shape::new(Op::Gemm, 2, 0, 4),
            Err(ShapeError::NotPositive { dim: 'N', .. })
        ));
        assert!(matches!(
            Shape::new(Op::Gemv, 2, 2, 4),
            Err(ShapeError::GemvN { .. })
        ));
        assert!(matches!(
            Shape::new(Op::Gemm, 1 << 20, 1 << 20, 1),
            Err(ShapeError::TooLarge { .. })
        ));
        assert!("conv".parse::<Op>().is_err());
    }
}
