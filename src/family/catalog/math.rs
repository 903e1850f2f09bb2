//! The catalog by math: which families compute with which [`Math`], and the catalog a run that
//! admits some maths only plans from ([`Catalog::with_math`]).

use super::Catalog;
use crate::family::math::{Math, MathFilter};
use crate::measure::outcome::{Failure, Measured};
use crate::problem::Shape;

/// A family a run names that its math filter leaves out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("family '{family}' computes with {math}, which a run admitting {filter} families only leaves out; drop it or admit its math (families of {filter}: {admitted})")]
pub struct MathExcluded {
    /// The family named.
    pub family: String,
    /// Its math.
    pub math: Math,
    /// The run's filter.
    pub filter: MathFilter,
    /// The families the filter admits, comma-separated.
    pub admitted: String,
}

impl Catalog {
    /// The math of family `name` ([`Space::math`](crate::family::space::Space::math)); `None`
    /// when this catalog has no such family.
    pub fn math(&self, name: &str) -> Option<Math> {
        self.families
            .iter()
            .find(|f| f.space.name == name)
            .map(|f| f.space.math)
    }

    /// A candidate of the family named `family` measured on `shape`, where cuBLAS SGEMM's
    /// largest relative error on the same inputs is `cublas_error`: still measured, or refused
    /// by its math's accuracy rule ([`Math::admit`]; a name the catalog lacks counts as
    /// `simt`, held to none).
    pub fn admit(
        &self,
        family: &str,
        shape: Shape,
        cublas_error: f64,
        measured: Measured,
    ) -> Result<Measured, Failure> {
        let math = self.math(family).unwrap_or_default();
        math.admit(shape.k as usize, cublas_error, measured)
    }

    /// The catalog with only the families whose math `filter` admits: what a run with `tune
    /// --math` plans from (nothing is left out with [`MathFilter::Any`]). `named` is the
    /// run's own family filter (empty: none); naming a family the filter leaves out is an
    /// error, not an empty run. Which families those are follows from their spaces' `math`
    /// alone, never from their names.
    pub fn with_math(self, filter: MathFilter, named: &[String]) -> Result<Catalog, MathExcluded> {
        if let Some((family, math)) = named
            .iter()
            .filter_map(|n| Some((n, self.math(n)?)))
            .find(|(_, m)| !filter.admits(*m))
        {
            return Err(MathExcluded {
                family: family.clone(),
                math,
                filter,
                admitted: self
                    .families
                    .iter()
                    .filter(|f| filter.admits(f.space.math))
                    .map(|f| f.name())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        let families = self
            .families
            .into_iter()
            .filter(|f| filter.admits(f.space.math))
            .collect();
        Ok(Catalog { families })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_math_keeps_the_families_of_the_admitted_math_and_refuses_naming_another() {
        let cat = Catalog::builtin().unwrap();
        assert_eq!(cat.math("gemm_tf32x3"), Some(Math::Tf32x3));
        assert_eq!(cat.math("gemm_warptile"), Some(Math::Simt));
        assert_eq!(cat.math("nope"), None);
        let all = cat.families().len();
        let tensor = cat
            .families()
            .iter()
            .filter(|f| f.space.math == Math::Tf32x3)
            .count();
        assert!(tensor >= 1 && tensor < all);
        let any = cat.clone().with_math(MathFilter::Any, &[]).unwrap();
        assert_eq!(any.families().len(), all);
        // `--math simt`: the tensor-core families are out, whatever their names.
        let simt = cat
            .clone()
            .with_math(MathFilter::Only(Math::Simt), &[])
            .unwrap();
        assert_eq!(simt.families().len(), all - tensor);
        assert!(simt.families().iter().all(|f| f.space.math == Math::Simt));
        assert!(simt.get("gemm_tf32x3").is_err());
        // `--math tf32x3`: only they are left.
        let tf = cat
            .clone()
            .with_math(MathFilter::Only(Math::Tf32x3), &[])
            .unwrap();
        assert_eq!(tf.families().len(), tensor);
        assert!(tf.get("gemm_tf32x3").is_ok());
        // Naming an admitted (or unknown: left to the planner) family is fine.
        assert!(cat
            .clone()
            .with_math(
                MathFilter::Only(Math::Simt),
                &["gemm_warptile".into(), "nope".into()]
            )
            .is_ok());
        let err = cat
            .with_math(
                MathFilter::Only(Math::Simt),
                &["gemm_warptile".into(), "gemm_tf32x3".into()],
            )
            .unwrap_err();
        assert_eq!(
            (err.family.as_str(), err.math),
            ("gemm_tf32x3", Math::Tf32x3)
        );
        let msg = err.to_string();
        assert!(
            msg.contains("'gemm_tf32x3'")
                && msg.contains("tf32x3")
                && msg.contains("gemm_warptile"),
            "{msg}"
        );
    }
}
