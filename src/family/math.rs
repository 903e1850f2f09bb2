//! A family's math: how its kernels compute the FP32 products ([`Math`], the space file's
//! `math = "simt" | "tf32x3"`), which families a tuning run admits ([`MathFilter`], `tune
//! --math`), and which entries a product's runtime may launch ([`MathPolicy`]).
//!
//! Both maths meet the FP32 tolerance of validation ([`crate::measure::verify::tolerance`]):
//! `tf32x3` splits each operand into two TF32 parts and runs three tensor-core products, with
//! an error of FP32 FMAs or better, but not bit for bit what FMAs give, and from K = 256 it must
//! also be at least as accurate as cuBLAS SGEMM on the same inputs ([`Math::admit`]). A product
//! that needs FMA-exact behaviour asks for `simt` only.

use crate::measure::outcome::{Failure, Measured, Stage};
use std::fmt;
use std::str::FromStr;

/// How a family's kernels compute: the space file's `math` (`simt` when absent).
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Math {
    /// FP32 fused multiply-adds on the CUDA cores.
    #[default]
    Simt,
    /// 3xTF32 on the tensor cores: each operand split into a TF32 high and low part, three
    /// products per multiply-add (FP32 accuracy, not FMA-exact).
    Tf32x3,
}

/// The names [`Math`] parses, for messages.
pub const MATH_NAMES: &str = "simt, tf32x3";

/// The names [`MathFilter`] parses, for messages.
pub const MATH_FILTER_NAMES: &str = "any, simt, tf32x3";

/// A math name that is not one of those accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown math '{given}': use one of {accepted}")]
pub struct MathError {
    /// What was given.
    pub given: String,
    /// The accepted names, comma-separated.
    pub accepted: &'static str,
}

impl Math {
    /// How the space file and the database spell it.
    pub fn name(self) -> &'static str {
        match self {
            Math::Simt => "simt",
            Math::Tf32x3 => "tf32x3",
        }
    }

    /// Whether it is the plain FP32 FMA math (`simt`).
    pub fn is_simt(&self) -> bool {
        *self == Math::Simt
    }
}

/// From this inner dimension on, a kernel that is not plain FP32 FMAs must also be at least as
/// accurate as cuBLAS SGEMM on the same inputs ([`Math::accuracy_shortfall`]); below it, where
/// both errors are a few roundings, the FP32 tolerance alone decides.
pub const AS_ACCURATE_FROM_K: usize = 256;

impl Math {
    /// Why a kernel of this math is not admitted where cuBLAS SGEMM is more accurate: on a
    /// gemm of inner dimension `k`, its largest relative error on the validation inputs
    /// (`error`) beside cuBLAS SGEMM's on the same inputs (`cublas`). `None` when admitted:
    /// always for `simt` (the FP32 tolerance decides, as for cuBLAS's own), and for `tf32x3`
    /// below [`AS_ACCURATE_FROM_K`] or within cuBLAS's error. 3xTF32 stands in for FP32 SGEMM,
    /// so a product that trades it for speed must not lose accuracy; where cuBLAS's algorithm
    /// happens to be more accurate (a split K sums shorter runs), SGEMM-exact kernels or cuBLAS
    /// serve the shape instead.
    pub fn accuracy_shortfall(self, k: usize, error: f64, cublas: f64) -> Option<String> {
        // A NaN error compares as neither: no evidence of accuracy, so refused.
        let within = error.partial_cmp(&cublas).is_some_and(|o| o.is_le());
        (self == Math::Tf32x3 && k >= AS_ACCURATE_FROM_K && !within).then(|| {
            format!(
                "less accurate than cuBLAS SGEMM on the same inputs: largest relative error \
                 {error:.3e} against cuBLAS's {cublas:.3e} (a {self} kernel must match it from \
                 K = {AS_ACCURATE_FROM_K})"
            )
        })
    }

    /// A candidate of this math measured on a gemm of inner dimension `k`, where cuBLAS SGEMM's
    /// largest relative error on the same inputs is `cublas`: still measured, or a validation
    /// failure saying why it is refused ([`Math::accuracy_shortfall`]).
    pub fn admit(self, k: usize, cublas: f64, measured: Measured) -> Result<Measured, Failure> {
        match self.accuracy_shortfall(k, measured.max_rel_error, cublas) {
            Some(reason) => Err(Failure {
                stage: Stage::Validate,
                reason,
            }),
            None => Ok(measured),
        }
    }
}

impl fmt::Display for Math {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Math {
    type Err = MathError;

    fn from_str(s: &str) -> Result<Math, MathError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "simt" => Ok(Math::Simt),
            "tf32x3" => Ok(Math::Tf32x3),
            _ => Err(MathError {
                given: s.to_string(),
                accepted: MATH_NAMES,
            }),
        }
    }
}

/// Which families a tuning run admits by their math (`tune --math`; `any` by default, since
/// both maths meet the FP32 tolerance).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum MathFilter {
    /// Every family.
    #[default]
    Any,
    /// Only the families of one math.
    Only(Math),
}

impl MathFilter {
    /// Whether a family of math `math` is admitted.
    pub fn admits(self, math: Math) -> bool {
        match self {
            MathFilter::Any => true,
            MathFilter::Only(m) => m == math,
        }
    }
}

impl fmt::Display for MathFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MathFilter::Any => f.write_str("any"),
            MathFilter::Only(m) => m.fmt(f),
        }
    }
}

impl FromStr for MathFilter {
    type Err = MathError;

    fn from_str(s: &str) -> Result<MathFilter, MathError> {
        if s.trim().eq_ignore_ascii_case("any") {
            return Ok(MathFilter::Any);
        }
        s.parse::<Math>()
            .map(MathFilter::Only)
            .map_err(|e| MathError {
                accepted: MATH_FILTER_NAMES,
                ..e
            })
    }
}

/// Which maths a product's runtime may launch (`LookupOptions::math`): every math by default,
/// or `simt` only for a product that needs FMA-exact results (it then gets a simt kernel, or
/// cuBLAS SGEMM, never a tensor-core entry).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MathPolicy {
    /// Every math that meets the FP32 tolerance.
    #[default]
    Any,
    /// FP32 FMAs only: no tensor-core (`tf32x3`) kernel.
    Simt,
}

impl MathPolicy {
    /// Whether a kernel of math `math` may run.
    pub fn admits(self, math: Math) -> bool {
        match self {
            MathPolicy::Any => true,
            MathPolicy::Simt => math == Math::Simt,
        }
    }
}

impl fmt::Display for MathPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MathPolicy::Any => "any",
            MathPolicy::Simt => "simt",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tf32x3_must_match_cublas_accuracy_from_k_256_and_simt_never_is_held_to_it() {
        let k = AS_ACCURATE_FROM_K;
        // 3xTF32 less accurate than cuBLAS from K = 256 on: refused, with both errors.
        let why = Math::Tf32x3.accuracy_shortfall(k, 1.25e-7, 6.2e-8).unwrap();
        assert!(
            why.contains("1.250e-7") && why.contains("6.200e-8"),
            "{why}"
        );
        assert!(
            why.contains("cuBLAS SGEMM") && why.contains("K = 256"),
            "{why}"
        );
        // Equal or better: admitted; below K = 256 the FP32 tolerance alone decides.
        assert_eq!(Math::Tf32x3.accuracy_shortfall(k, 6.2e-8, 6.2e-8), None);
        assert_eq!(Math::Tf32x3.accuracy_shortfall(4096, 7e-8, 3.8e-7), None);
        assert_eq!(Math::Tf32x3.accuracy_shortfall(k - 1, 1e-6, 1e-7), None);
        // A NaN error (nothing to compare) is no evidence of accuracy.
        assert!(Math::Tf32x3.accuracy_shortfall(k, f64::NAN, 1e-7).is_some());
        // FP32 FMAs are what cuBLAS runs: never held to its error.
        assert_eq!(Math::Simt.accuracy_shortfall(4096, 1e-6, 1e-7), None);
    }

    #[test]
    fn math_parses_prints_and_refuses_with_the_accepted_names() {
        for m in [Math::Simt, Math::Tf32x3] {
            assert_eq!(m.to_string().parse::<Math>(), Ok(m));
        }
        assert_eq!(" TF32x3 ".parse::<Math>(), Ok(Math::Tf32x3));
        assert_eq!(Math::default(), Math::Simt);
        let e = "tf32".parse::<Math>().unwrap_err().to_string();
        assert!(e.contains("'tf32'") && e.contains("simt, tf32x3"), "{e}");
    }

    #[test]
    fn math_serialises_snake_case() {
        #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
        struct T {
            math: Math,
        }
        let text = toml::to_string(&T { math: Math::Tf32x3 }).unwrap();
        assert_eq!(text.trim(), "math = \"tf32x3\"");
        assert_eq!(toml::from_str::<T>(&text).unwrap().math, Math::Tf32x3);
        assert!(toml::from_str::<T>("math = \"fma\"").is_err());
    }

    #[test]
    fn filters_and_policies_admit_what_they_say() {
        assert_eq!("any".parse::<MathFilter>(), Ok(MathFilter::Any));
        assert_eq!(
            "simt".parse::<MathFilter>(),
            Ok(MathFilter::Only(Math::Simt))
        );
        let e = "bogus".parse::<MathFilter>().unwrap_err().to_string();
        assert!(e.contains("any, simt, tf32x3"), "{e}");
        assert!(MathFilter::Any.admits(Math::Tf32x3));
        assert!(!MathFilter::Only(Math::Simt).admits(Math::Tf32x3));
        assert!(MathFilter::Only(Math::Tf32x3).admits(Math::Tf32x3));
        assert!(!MathFilter::Only(Math::Tf32x3).admits(Math::Simt));
        assert_eq!(MathFilter::Only(Math::Tf32x3).to_string(), "tf32x3");
        assert!(MathPolicy::Any.admits(Math::Tf32x3));
        assert!(MathPolicy::Simt.admits(Math::Simt));
        assert!(!MathPolicy::Simt.admits(Math::Tf32x3));
    }
}
