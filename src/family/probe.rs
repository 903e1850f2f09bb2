//! The probes of a family's fingerprint: which configs on which shapes are compiled
//! ([`choose_probes`]) and the kernel source of each ([`probe_kernel`]). The fingerprint file's
//! format and the rules that compare fingerprints are in [`super::fingerprint`].

use crate::family::catalog::{Family, Source};
use crate::family::fingerprint::{launch_label, FingerprintError, Probe, LAUNCH_ARCH};
use crate::family::space::{Config, Interface, Limits, SpaceError};
use crate::problem::{Form, Layout, Op, Shape};
use std::collections::BTreeMap;

/// The shapes probes are taken on, per op, in order: for each layout the first shape where the
/// family has a valid config is used. Square, few rows, few columns, then few rows and a short
/// K, so that the GEMV-shaped and short-K families have configs too.
pub fn probe_shapes(op: Op) -> &'static [&'static str] {
    match op {
        Op::Gemm => &[
            "2048x2048x2048",
            "16x2048x2048",
            "2048x16x2048",
            "16x2048x16",
        ],
        Op::Gemv => &["4096x4096"],
    }
}

/// The layouts a family's kernels are compiled for: every layout of its op for the full
/// interface (its sources `#define TRANS_A` and `TRANS_B`), the plain one otherwise.
fn layouts(family: &Family) -> Vec<Layout> {
    match (family.space.interface, family.space.op) {
        (Interface::Plain, _) => vec![Layout::Nn],
        (Interface::Full, Op::Gemm) => Layout::ALL.to_vec(),
        (Interface::Full, Op::Gemv) => vec![Layout::Nn, Layout::Tn],
    }
}

/// The limits the probes' launches are computed with: sm_90's documented ones.
pub(crate) fn limits() -> Limits {
    #[allow(clippy::expect_used)]
    Limits::for_arch(LAUNCH_ARCH).expect("the arch table knows sm_90")
}

/// The probes of a family whose revision has no fingerprint yet, without PTX hashes: for a
/// family of the plain interface its first and last valid configs on the first of
/// [`probe_shapes`] where it has any; for one of the full interface, per layout in order (NN,
/// NT, TN, TT; gemv N, T), the first valid config on even positions and the last on odd ones,
/// so that every layout and both ends of the space are compiled. Duplicates are dropped.
pub fn choose_probes(family: &Family) -> Result<Vec<Probe>, FingerprintError> {
    let op = family.space.op;
    let limits = limits();
    let mut probes: Vec<Probe> = Vec::new();
    let layouts = layouts(family);
    let mut unprobed: Vec<&str> = Vec::new();
    for (i, &layout) in layouts.iter().enumerate() {
        let mut found = None;
        for text in probe_shapes(op) {
            let bad = |message: String| FingerprintError::BadProbe {
                family: family.name().to_string(),
                shape: text.to_string(),
                params: String::new(),
                message,
            };
            let shape = Shape::parse(op, text)
                .map_err(|e| bad(e.to_string()))?
                .with_form(Form {
                    layout,
                    ..Form::PLAIN
                });
            let valid = family
                .space
                .prune(shape, &limits)
                .map_err(|e| bad(e.to_string()))?
                .valid;
            if let (Some(first), Some(last)) = (valid.first(), valid.last()) {
                found = Some((shape, first.clone(), last.clone()));
                break;
            }
        }
        // A space may offer the family on some layouts only (a constraint on TRANS_A or
        // TRANS_B); those are probed, and a family with no probe at all is an error.
        let Some((shape, first, last)) = found else {
            unprobed.push(layout.name(op));
            continue;
        };
        // Alternate over the layouts probed, so both ends are compiled where two are offered.
        let nth = i - unprobed.len();
        let picks = if layouts.len() == 1 {
            vec![first, last]
        } else if nth.is_multiple_of(2) {
            vec![first]
        } else {
            vec![last]
        };
        for config in picks {
            let label = shape.label(op);
            if probes
                .iter()
                .any(|p| p.shape == label && p.params == config.params)
            {
                continue;
            }
            let launch = family
                .space
                .launch(&config, shape, &limits)
                .map_err(|e| bad_probe(family, &label, &config.params, &e))?;
            probes.push(Probe {
                shape: label,
                params: config.params,
                launch: launch_label(&launch),
                ptx: BTreeMap::new(),
                variants: BTreeMap::new(),
            });
        }
    }
    if probes.is_empty() {
        return Err(FingerprintError::NoProbe {
            family: family.name().to_string(),
            layout: unprobed.join(", "),
            shapes: probe_shapes(op).join(", "),
        });
    }
    Ok(probes)
}

fn bad_probe(
    family: &Family,
    shape: &str,
    params: &BTreeMap<String, i64>,
    e: &dyn std::fmt::Display,
) -> FingerprintError {
    FingerprintError::BadProbe {
        family: family.name().to_string(),
        shape: shape.to_string(),
        params: crate::family::space::params_label(params),
        message: e.to_string(),
    }
}

/// The source of `probe` and the launch label the family's space gives it today.
pub fn probe_kernel(family: &Family, probe: &Probe) -> Result<(Source, String), FingerprintError> {
    let op = family.space.op;
    let shape = Shape::parse(op, &probe.shape)
        .map_err(|e| bad_probe(family, &probe.shape, &probe.params, &e))?;
    let config = Config {
        family: family.name().to_string(),
        params: probe.params.clone(),
    };
    let kernel = family
        .kernel(&config, shape, &limits())
        .map_err(|e: SpaceError| bad_probe(family, &probe.shape, &probe.params, &e))?;
    Ok((kernel.source, launch_label(&kernel.launch)))
}
