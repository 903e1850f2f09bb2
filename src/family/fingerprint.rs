//! Fingerprints: a family's identity that survives a refactor.
//!
//! A database entry is current while the checksum it records is its family's
//! [`Family::checksum`](crate::family::catalog::Family::checksum). For a built-in family that
//! checksum is not a hash of today's text: it is the `checksum` of the committed fingerprint
//! file `configs/fingerprints/<family>.toml` for the family's `revision` (its space file's
//! `revision = N`), so an edit that leaves the kernels alone (a renamed variable, a comment, a
//! value added to a space) keeps every entry current, and an edit that changes them must bump
//! the revision, which stales the entries of the old one.
//!
//! What keeps this honest is the fingerprint itself: for a fixed set of *probes* (configs of
//! the family on a shape: the first and last valid configs, and for a family of the full
//! interface one per layout, chosen by `family::probe`), the file records the launch the space gives
//! each ([`launch_label`]) and the SHA-256 of its PTX for each of [`TARGETS`] (compiler
//! header lines stripped, [`digest_ptx`]). `tests/nvrtc.rs` compiles the probes with the
//! pinned NVRTC wheels and compares ([`check`]); code that changed without a revision bump
//! fails there, with what to do. [`update`] is what [`UPDATE_COMMAND`] writes.
//!
//! The probes are recorded in the file, so the check compiles the same kernels however the
//! space's value lists change; new probes are chosen when the revision is bumped. A probe is a
//! sample: a change that only affects other configs goes unseen, so bump the revision whenever
//! a change is meant to alter the kernels.
//!
//! NVRTC's PTX of a large kernel varies from process to process (see [`settle`]): each probe
//! records the variants the update saw beside its hash ([`Probe::variants`]), each is compiled
//! in a process of its own, and one whose PTX is none of them is compiled again, in new
//! processes, before the difference counts.
//!
//! Everything here is pure data and rules; `family::probe` chooses and instantiates the
//! probes, and compiling them is the caller's (`autotune fingerprint`,
//! hidden, prints the fresh fingerprints of the built-in families for one target).

use crate::family::space::Launch;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The PTX targets fingerprints are taken for, each with the NVRTC major version that compiles
/// it (the pinned wheels of `scripts/test.sh`: NVRTC 13 for sm_90, NVRTC 12 for sm_61, which
/// NVRTC 13 no longer targets).
pub const TARGETS: [(&str, u32); 2] = [("compute_90", 13), ("compute_61", 12)];

/// Where the fingerprint files live, relative to the repository root.
pub const DIR: &str = "configs/fingerprints";

/// The command that writes the fingerprint files (see [`update`]).
pub const UPDATE_COMMAND: &str =
    "AUTOTUNE_UPDATE_FINGERPRINTS=1 bash scripts/test.sh --test nvrtc fingerprints";

/// The arch whose documented limits the probes' launches are computed with.
pub const LAUNCH_ARCH: i64 = 90;

/// A family's committed fingerprint: `configs/fingerprints/<family>.toml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fingerprint {
    /// The family.
    pub family: String,
    /// The revision this fingerprint is of (the space's `revision`).
    pub revision: u32,
    /// The checksum the database entries of this revision record: the hex SHA-256 of the
    /// template and space texts when the revision was first fingerprinted
    /// ([`Family::content_checksum`](crate::family::catalog::Family::content_checksum)).
    pub checksum: String,
    /// Per target, the compiler that made the PTX (its header comment, e.g. `Cuda compilation
    /// tools, release 13.0, V13.0.88`).
    #[serde(default)]
    pub compilers: BTreeMap<String, String>,
    /// The probes, in the order chosen.
    #[serde(default, rename = "probe")]
    pub probes: Vec<Probe>,
}

/// One fingerprinted kernel: a config of the family on a shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Probe {
    /// The shape, as [`Shape::label`](crate::problem::Shape::label) writes it (its layout chooses `TRANS_A` and `TRANS_B`).
    pub shape: String,
    /// The config's parameters.
    pub params: BTreeMap<String, i64>,
    /// The launch the space gives the config on the shape ([`launch_label`]).
    pub launch: String,
    /// Per target, the hex SHA-256 of the PTX ([`digest_ptx`]).
    #[serde(default)]
    pub ptx: BTreeMap<String, String>,
    /// Per target, the hashes of other PTX the same source compiled to in other processes
    /// (sorted): NVRTC's PTX of a large kernel depends on the process's address layout
    /// ([`settle`]). The update records what it saw; the check accepts any of them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub variants: BTreeMap<String, Vec<String>>,
}

impl Probe {
    /// Whether `hash` is this probe's PTX for `target`: its hash or a recorded variant.
    pub fn accepts(&self, target: &str, hash: &str) -> bool {
        self.ptx.get(target).is_some_and(|h| h == hash)
            || self
                .variants
                .get(target)
                .is_some_and(|v| v.iter().any(|h| h == hash))
    }
}

/// Why a fingerprint file is unusable, or a family has no probes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FingerprintError {
    /// The file is not a fingerprint.
    #[error(
        "fingerprint file {origin} is invalid: {message}; regenerate it with `{UPDATE_COMMAND}`"
    )]
    Parse {
        /// Where the text came from.
        origin: String,
        /// The parser's message.
        message: String,
    },
    /// The file's name and its `family` disagree.
    #[error("fingerprint file {origin} is for family '{family}': a family's fingerprint is {DIR}/<family>.toml; regenerate with `{UPDATE_COMMAND}`")]
    WrongFile {
        /// The file.
        origin: String,
        /// The family it names.
        family: String,
    },
    /// No shape of `family::probe::probe_shapes` has a valid config of the family on any layout.
    #[error("family '{family}' has no valid config on any of {shapes} ({layout}) for sm_{LAUNCH_ARCH}, so it cannot be fingerprinted: add a shape where it has configs to `probe_shapes` in src/family/probe.rs")]
    NoProbe {
        /// The family.
        family: String,
        /// The layouts tried, by name.
        layout: String,
        /// The shapes tried.
        shapes: String,
    },
    /// A probe's shape does not parse or its config cannot be launched.
    #[error("family '{family}', probe {params} on {shape}: {message}")]
    BadProbe {
        /// The family.
        family: String,
        /// The probe's shape.
        shape: String,
        /// The probe's parameters.
        params: String,
        /// What went wrong.
        message: String,
    },
}

impl Fingerprint {
    /// Parses a fingerprint file; `origin` names it in errors.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Fingerprint, FingerprintError> {
        toml::from_str(text).map_err(|e| FingerprintError::Parse {
            origin: origin.to_string(),
            message: e.to_string(),
        })
    }

    /// The file's text: a header comment, then the fields, one `[[probe]]` per probe with its
    /// parameters and hashes as inline tables.
    pub fn to_toml_string(&self) -> String {
        let q = |s: &str| toml::Value::String(s.to_string()).to_string();
        let inline = |m: &mut dyn Iterator<Item = (String, String)>| {
            let items: Vec<String> = m.map(|(k, v)| format!("{k} = {v}")).collect();
            format!("{{ {} }}", items.join(", "))
        };
        let mut s = format!(
            "# The fingerprint of family {} at revision {}: what its kernels compile to. Do not edit\n\
             # (see docs/fingerprints.md); written by\n\
             # {UPDATE_COMMAND}\n",
            self.family, self.revision
        );
        let _ = writeln!(s, "family = {}", q(&self.family));
        let _ = writeln!(s, "revision = {}", self.revision);
        let _ = writeln!(s, "checksum = {}", q(&self.checksum));
        let _ = writeln!(
            s,
            "compilers = {}",
            inline(&mut self.compilers.iter().map(|(k, v)| (k.clone(), q(v))))
        );
        for p in &self.probes {
            let _ = writeln!(s, "\n[[probe]]");
            let _ = writeln!(s, "shape = {}", q(&p.shape));
            let _ = writeln!(
                s,
                "params = {}",
                inline(&mut p.params.iter().map(|(k, v)| (k.clone(), v.to_string())))
            );
            let _ = writeln!(s, "launch = {}", q(&p.launch));
            let _ = writeln!(
                s,
                "ptx = {}",
                inline(&mut p.ptx.iter().map(|(k, v)| (k.clone(), q(v))))
            );
            if !p.variants.is_empty() {
                let list = |v: &Vec<String>| {
                    let items: Vec<String> = v.iter().map(|h| q(h)).collect();
                    format!("[{}]", items.join(", "))
                };
                let _ = writeln!(
                    s,
                    "variants = {}",
                    inline(&mut p.variants.iter().map(|(k, v)| (k.clone(), list(v))))
                );
            }
        }
        s
    }

    /// Adds `other`'s compilers and PTX hashes (another target's run over the same probes).
    pub fn absorb(&mut self, other: &Fingerprint) {
        self.compilers
            .extend(other.compilers.iter().map(|(k, v)| (k.clone(), v.clone())));
        for p in &mut self.probes {
            if let Some(o) = other
                .probes
                .iter()
                .find(|o| o.shape == p.shape && o.params == p.params)
            {
                p.ptx
                    .extend(o.ptx.iter().map(|(k, v)| (k.clone(), v.clone())));
                p.variants
                    .extend(o.variants.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
        }
    }
}

/// A launch as one line: `grid 8x8x1, block 256x1x1, dynamic shared 32768 B`, then the zeroing
/// of the output and the workspace when there are.
pub fn launch_label(l: &Launch) -> String {
    let (g, b) = (l.grid, l.block);
    let mut s = format!(
        "grid {}x{}x{}, block {}x{}x{}, dynamic shared {} B",
        g.0, g.1, g.2, b.0, b.1, b.2, l.dynamic_shared_bytes
    );
    if l.zero_output {
        s.push_str(", zeroed output");
    }
    if let Some(w) = l.workspace_bytes {
        let _ = write!(s, ", workspace {w} B zeroed {}", l.workspace_zero.name());
    }
    s
}

/// The fingerprint of one kernel's PTX.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PtxDigest {
    /// The compiler named by the header comment (its non-empty `//` lines before the first
    /// directive, joined with `; `).
    pub compiler: String,
    /// Hex SHA-256 of the PTX without its comment lines (the header names the compiler's
    /// version and build, which say nothing of the kernel) and without a trailing NUL.
    pub sha256: String,
}

/// Digests PTX text as NVRTC writes it ([`PtxDigest`]).
pub fn digest_ptx(ptx: &str) -> PtxDigest {
    let ptx = ptx.trim_end_matches('\0');
    let mut compiler = Vec::new();
    let mut in_header = true;
    let mut h = Sha256::new();
    for line in ptx.lines() {
        let t = line.trim_start();
        if let Some(comment) = t.strip_prefix("//") {
            let comment = comment.trim();
            if in_header && !comment.is_empty() {
                compiler.push(comment.to_string());
            }
            continue;
        }
        if !t.is_empty() {
            in_header = false;
        }
        h.update(line.as_bytes());
        h.update(b"\n");
    }
    PtxDigest {
        compiler: compiler.join("; "),
        sha256: hex(&h.finalize()),
    }
}

/// Lower-case hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// How many times [`UPDATE_COMMAND`] compiles each probe, in separate processes, before it
/// records the most frequent PTX and the others as its variants ([`settle`]).
pub const UPDATE_ATTEMPTS: usize = 10;

/// How many times in all the check compiles a probe whose PTX differs from the committed
/// fingerprint, each time in a new process, before it reports the difference ([`settle`]).
pub const CHECK_ATTEMPTS: usize = 5;

/// One fresh fingerprint from several compilations of the same probes (`attempts`, each
/// compiled in its own process, in order): per probe and target, the committed hash when any
/// attempt produced it or one of its recorded variants, else the most frequent one (the first
/// seen of equally frequent ones); the other hashes seen become variants (with the committed
/// ones, when the committed hash was matched).
///
/// NVRTC's PTX of a large kernel is not a pure function of its source: in some processes an
/// optimization comes out otherwise (measured with NVRTC 13.5 on `gemm_tile2d` BM=256 TM=16:
/// one shared load more and its registers renumbered in 20 of 40 processes, a third PTX in 1,
/// the share following the size of the environment, i.e. the stack's address). A PTX that no
/// attempt matches, committed hash or variant, is a change; one that some attempts match is
/// that noise.
pub fn settle(committed: Option<&Fingerprint>, attempts: &[Fingerprint]) -> Option<Fingerprint> {
    let (first, rest) = attempts.split_first()?;
    let mut out = first.clone();
    for probe in &mut out.probes {
        let (shape, params) = (probe.shape.clone(), probe.params.clone());
        let same = |p: &&Probe| p.shape == shape && p.params == params;
        let was = committed.and_then(|c| c.probes.iter().find(same));
        let mut variants = BTreeMap::new();
        for (target, hash) in probe.ptx.iter_mut() {
            let mut seen: Vec<String> = vec![hash.clone()];
            seen.extend(
                rest.iter()
                    .filter_map(|a| a.probes.iter().find(same))
                    .filter_map(|p| p.ptx.get(target).cloned()),
            );
            let count = |h: &String| seen.iter().filter(|s| *s == h).count();
            let known = was.filter(|w| seen.iter().any(|h| w.accepts(target, h)));
            let mut others: Vec<String> = seen.clone();
            *hash = match known.and_then(|w| w.ptx.get(target)) {
                Some(c) => {
                    others.extend(
                        known
                            .and_then(|w| w.variants.get(target))
                            .cloned()
                            .unwrap_or_default(),
                    );
                    c.clone()
                }
                // Most frequent; among equals the earliest.
                None => seen
                    .iter()
                    .fold(None::<&String>, |best, h| match best {
                        Some(b) if count(b) >= count(h) => Some(b),
                        _ => Some(h),
                    })
                    .cloned()
                    .unwrap_or_default(),
            };
            others.retain(|h| h != hash);
            others.sort();
            others.dedup();
            if !others.is_empty() {
                variants.insert(target.clone(), others);
            }
        }
        probe.variants = variants;
    }
    Some(out)
}

/// What comparing a family's fresh fingerprint with its committed one found: each says what
/// to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Mismatch {
    /// The family's revision has no fingerprint file.
    #[error("family '{family}' has no fingerprint for revision {revision} ({DIR}/{family}.toml {found}): run `{UPDATE_COMMAND}` and commit the file")]
    Missing {
        /// The family.
        family: String,
        /// Its space's revision.
        revision: u32,
        /// What the directory holds instead (`is missing`, `holds revision 1`).
        found: String,
    },
    /// The space's revision is older than the file's.
    #[error("family '{family}': configs/spaces/{family}.toml says revision {space} but {DIR}/{family}.toml holds revision {file}: revisions only grow; set `revision = {next}` in the space and run `{UPDATE_COMMAND}`", next = .file + 1)]
    Backwards {
        /// The family.
        family: String,
        /// The space's revision.
        space: u32,
        /// The file's revision.
        file: u32,
    },
    /// The PTX or the launch of a probe changed while the revision stayed.
    #[error("family '{family}' changed without a revision bump: {details}. Its database entries were tuned with revision {revision}'s kernels; if the change is meant, set `revision = {next}` in configs/spaces/{family}.toml and run `{UPDATE_COMMAND}` (entries of revision {revision} become stale); if it should not change the kernels (a refactor), make it leave the PTX alone", next = .revision + 1)]
    Changed {
        /// The family.
        family: String,
        /// The revision both are of.
        revision: u32,
        /// What differs, probe by probe.
        details: String,
    },
    /// The PTX was made by another compiler than the committed fingerprint's.
    #[error("family '{family}': its fingerprint for {target} was made by `{committed}`, this run compiled with `{now}`: run the test through scripts/test.sh, which installs the pinned NVRTC wheels; when the pin itself moves, `{UPDATE_COMMAND}` rewrites the hashes at the same revisions")]
    Compiler {
        /// The family.
        family: String,
        /// The target.
        target: String,
        /// The compiler the file names.
        committed: String,
        /// The one that ran.
        now: String,
    },
    /// A fingerprint file names a family that no built-in space defines.
    #[error("{DIR}/{family}.toml is the fingerprint of family '{family}', which no space in configs/spaces defines: delete it (`{UPDATE_COMMAND}` does)")]
    Orphan {
        /// The family it names.
        family: String,
    },
}

/// Checks `fresh` (probes compiled now, for the family at `revision`) against the committed
/// fingerprint, if any: empty when they agree.
pub fn check(
    family: &str,
    revision: u32,
    committed: Option<&Fingerprint>,
    fresh: &Fingerprint,
) -> Vec<Mismatch> {
    let Some(c) = committed.filter(|c| c.revision == revision) else {
        return match committed {
            Some(c) if c.revision > revision => vec![Mismatch::Backwards {
                family: family.to_string(),
                space: revision,
                file: c.revision,
            }],
            other => vec![Mismatch::Missing {
                family: family.to_string(),
                revision,
                found: other.map_or("is missing".to_string(), |c| {
                    format!("holds revision {}", c.revision)
                }),
            }],
        };
    };
    let mut out = Vec::new();
    for (target, now) in &fresh.compilers {
        let was = c.compilers.get(target);
        if was != Some(now) {
            out.push(Mismatch::Compiler {
                family: family.to_string(),
                target: target.clone(),
                committed: was
                    .map_or("no compiler (no fingerprint for this target)", |w| w)
                    .to_string(),
                now: now.clone(),
            });
        }
    }
    if !out.is_empty() {
        // Another compiler explains any PTX difference: install the pinned one first.
        return out;
    }
    let details = differences(c, fresh);
    if !details.is_empty() {
        out.push(Mismatch::Changed {
            family: family.to_string(),
            revision,
            details: details.join("; "),
        });
    }
    out
}

/// What differs between two fingerprints of one revision, probe by probe.
fn differences(committed: &Fingerprint, fresh: &Fingerprint) -> Vec<String> {
    let mut out = Vec::new();
    for target in committed.compilers.keys() {
        if !fresh.compilers.contains_key(target) {
            out.push(format!("no PTX was compiled for {target}"));
        }
    }
    for p in &committed.probes {
        let name = format!(
            "{} on {}",
            crate::family::space::params_label(&p.params),
            p.shape
        );
        let Some(f) = fresh
            .probes
            .iter()
            .find(|f| f.shape == p.shape && f.params == p.params)
        else {
            out.push(format!("probe {name} was not compiled"));
            continue;
        };
        if f.launch != p.launch {
            out.push(format!(
                "probe {name}: launch is now `{}`, was `{}`",
                f.launch, p.launch
            ));
        }
        for target in p.ptx.keys() {
            match f.ptx.get(target) {
                Some(now) if !p.accepts(target, now) => {
                    out.push(format!("probe {name}: {target} PTX differs"))
                }
                None if fresh.compilers.contains_key(target) => {
                    out.push(format!("probe {name}: no {target} PTX"))
                }
                _ => {}
            }
        }
    }
    out
}

/// What [`UPDATE_COMMAND`] writes for a family at `revision` whose template and space hash to
/// `content_checksum`, given its committed fingerprint and the fresh one: `Ok(None)` when the
/// committed file stands; `Ok(Some(file))` for a new revision (the fresh probes, with
/// `content_checksum`), a new compiler (the fresh hashes, the committed checksum kept, so
/// entries stay current) or the same kernels with variants the file lacks (its hashes kept,
/// the variants added); an error when the kernels changed at the same revision (bump it) or
/// the revision went backwards.
pub fn update(
    revision: u32,
    content_checksum: &str,
    committed: Option<&Fingerprint>,
    fresh: &Fingerprint,
) -> Result<Option<Fingerprint>, Mismatch> {
    let family = fresh.family.as_str();
    match committed {
        Some(c) if c.revision > revision => Err(Mismatch::Backwards {
            family: family.to_string(),
            space: revision,
            file: c.revision,
        }),
        Some(c) if c.revision == revision => {
            let found = check(family, revision, Some(c), fresh);
            let grew = |p: &Probe| {
                let known = c
                    .probes
                    .iter()
                    .find(|k| k.shape == p.shape && k.params == p.params);
                p.variants
                    .iter()
                    .flat_map(|(t, v)| v.iter().map(move |h| (t, h)))
                    .any(|(t, h)| !known.is_some_and(|k| k.accepts(t, h)))
            };
            match found.first() {
                None if fresh.probes.iter().any(grew) => {
                    let mut probes = c.probes.clone();
                    for p in &mut probes {
                        let f = fresh
                            .probes
                            .iter()
                            .find(|f| f.shape == p.shape && f.params == p.params);
                        for (t, v) in f.map(|f| &f.variants).into_iter().flatten() {
                            let mine = p.variants.entry(t.clone()).or_default();
                            mine.extend(v.iter().filter(|h| p.ptx.get(t) != Some(*h)).cloned());
                            mine.sort();
                            mine.dedup();
                        }
                    }
                    Ok(Some(Fingerprint {
                        probes,
                        ..c.clone()
                    }))
                }
                None => Ok(None),
                Some(Mismatch::Compiler { .. }) => Ok(Some(Fingerprint {
                    checksum: c.checksum.clone(),
                    revision,
                    ..fresh.clone()
                })),
                Some(m) => Err(m.clone()),
            }
        }
        _ => Ok(Some(Fingerprint {
            checksum: content_checksum.to_string(),
            revision,
            ..fresh.clone()
        })),
    }
}

#[cfg(test)]
mod tests;
