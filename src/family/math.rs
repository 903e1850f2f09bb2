//! A family's math: how its kernels compute the FP32 products ([`Math`], the space file's
//! `math = "simt" | "tf32x3"`), which families a tuning run admits ([`MathFilter`], `tune
//! --math`), and which entries a product's runtime may launch ([`MathPolicy`]).
//!
//! Both maths meet the FP32 tolerance of validation ([`crate::measure::verify::tolerance`]):
//! `tf32x3` splits each operand into two TF32 parts and runs three tensor-core products, with
//! an error of FP32 FMAs or better, but not bit for bit what FMAs give. A product that needs
//! FMA-exact behaviour asks for `simt` only.

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
