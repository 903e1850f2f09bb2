//! Kernel templates and the catalog of families.
//!
//! A family is a `templates/<name>.cu` file plus a `configs/spaces/<name>.toml` space. Both are
//! embedded into the library at build time (see `build.rs`), and can be overridden from a
//! directory holding `templates/` and `configs/spaces/`.
//!
//! **Instantiation.** A config becomes source text by prefixing the template with one
//! `#define NAME VALUE` per parameter and `#define KERNEL_NAME <unique name>`; the template
//! declares its kernel as `extern "C" __global__ void KERNEL_NAME(...)` and reads the
//! parameters as compile-time constants, so NVRTC unrolls and sizes arrays with them.
//!
//! **Includes.** Device code shared by several templates lives in `templates/include/*.cuh`
//! (embedded too). A template line `#include "name.cuh"` is replaced, when the catalog is
//! built, by the text of `include/name.cuh` between `#line 1 "include/name.cuh"` and
//! `#line <next> "<template>.cu"`, so NVRTC reports errors at the right file and line and the
//! source handed to NVRTC (and exported headers) is self-contained. Headers may include
//! headers; each is inlined once per source (later directives for it become comments). Only
//! quoted includes are inlined, unconditionally (they are not preprocessor-aware);
//! `#include <...>` is left to NVRTC.
//!
//! **Identity.** A family's [`Family::checksum`] is what database entries record and are
//! current against ([`Catalog::freshness`]). A built-in family takes it from its committed
//! fingerprint (`configs/fingerprints/<family>.toml`, embedded too) for its space's `revision`,
//! so a refactor that leaves the kernels alone stales nothing ([`crate::family::fingerprint`]);
//! without a fingerprint for that revision (a bump not yet fingerprinted) it is the content
//! checksum. A family read from a directory ([`Catalog::from_dir`]) keeps the content checksum,
//! unless its template and space are byte for byte the built-in family's: then it is that
//! family, identity included.

use crate::family::fingerprint::{self, Fingerprint, FingerprintError};
use crate::family::space::{resolve_extends, Config, Interface, Launch, Limits, Space, SpaceError};
use crate::problem::{Op, Shape};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/embedded.rs"));
}

/// Why the catalog could not be built.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A space file is invalid.
    #[error(transparent)]
    Space(#[from] SpaceError),
    /// A fingerprint file is invalid.
    #[error(transparent)]
    Fingerprint(#[from] FingerprintError),
    /// A space names a template that does not exist.
    #[error("space '{family}' names template '{template}', which is not in {dir}: add it or fix the space's `template` field")]
    MissingTemplate {
        /// The family.
        family: String,
        /// The template file it names.
        template: String,
        /// Where templates were looked for.
        dir: String,
    },
    /// A template (or an included header) includes a header that does not exist.
    #[error("family '{family}': {file} line {line} includes \"{include}\", which is not in {dir}: add it there or fix the #include")]
    MissingInclude {
        /// The family.
        family: String,
        /// The header named by the `#include`.
        include: String,
        /// The file holding the `#include` (the template or an included header).
        file: String,
        /// Its 1-based line.
        line: usize,
        /// Where headers were looked for.
        dir: String,
    },
    /// Two spaces share a family name.
    #[error("two space files define family '{0}': family names must be unique")]
    Duplicate(String),
    /// A run restricted to deterministic families names one that is not.
    #[error("family '{family}' is not deterministic (it accumulates with atomics, or its space says deterministic = false), so a deterministic-only run cannot tune it; deterministic families: {deterministic}")]
    NotDeterministic {
        /// The family named.
        family: String,
        /// The catalog's deterministic families.
        deterministic: String,
    },
    /// No family with that name.
    #[error("no kernel family named '{name}'; known families: {known}")]
    UnknownFamily {
        /// What was asked for.
        name: String,
        /// What exists.
        known: String,
    },
}

/// A kernel family: its space, its template source, their checksum and its identity.
#[derive(Debug, Clone)]
pub struct Family {
    /// The parameter space.
    pub space: Space,
    /// The `.cu` template text, as written.
    pub template: String,
    /// The headers inlined into the template, in order of inlining (empty when it has no
    /// `#include "..."`).
    pub includes: Vec<String>,
    /// The template with its includes inlined between `#line` markers: the text instantiation
    /// prefixes with the parameters. Equal to `template` when `includes` is empty.
    pub inlined: String,
    /// The family's identity, which database entries record: a database entry whose checksum
    /// differs was tuned with another version of the family. The committed fingerprint's
    /// checksum when [`Family::fingerprint`] is of the space's revision, else
    /// [`Family::content_checksum`] (see the module docs).
    pub checksum: String,
    /// Hex SHA-256 of the template (with its includes inlined, when it has any) and space
    /// texts.
    pub content_checksum: String,
    /// The committed fingerprint of a built-in family (of whatever revision it is: one behind
    /// the space's after a bump not yet fingerprinted); `None` when there is none.
    pub fingerprint: Option<Fingerprint>,
}

/// One instantiated kernel: the source NVRTC compiles and the name to load.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Source {
    /// The family.
    pub family: String,
    /// The `extern "C"` kernel name.
    pub kernel_name: String,
    /// Complete CUDA C++ source.
    pub code: String,
    /// The archs (`major * 10 + minor`) for which it must be compiled to the arch-specific
    /// target `sm_XYa` (the family's [`Space::arch_specific`]).
    pub arch_specific: Vec<u32>,
}

/// A config made ready for one shape on one device: what NVRTC compiles and how to launch it.
#[derive(Debug, Clone, PartialEq)]
pub struct Kernel {
    /// The instantiated source.
    pub source: Source,
    /// Grid, block and shared memory for the shape.
    pub launch: Launch,
}

/// Where a template finds the headers it includes: `templates/include/` beside it.
const INCLUDE_DIR: &str = "include";

/// The header a line includes with `#include "name"`, if it is such a directive.
fn quoted_include(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix('#')?;
    let rest = rest.trim_start().strip_prefix("include")?;
    let rest = rest.trim_start().strip_prefix('"')?;
    rest.find('"').map(|end| &rest[..end])
}

/// A `#line` directive naming `file` as the file of the next line, number `line`.
fn line_marker(line: usize, file: &str) -> String {
    let file = file.replace('\\', "\\\\").replace('"', "\\\"");
    format!("#line {line} \"{file}\"\n")
}

/// The inlining of one template's includes (see the module docs).
struct Inliner<'a> {
    /// The family, for errors.
    family: &'a str,
    /// The available headers: name -> text.
    headers: &'a BTreeMap<String, String>,
    /// Where the headers were looked for, for errors.
    dir: &'a str,
    /// Headers inlined so far, in order.
    inlined: Vec<String>,
    /// The same, for lookups.
    seen: BTreeSet<String>,
}

impl Inliner<'_> {
    /// Appends `text` (the file `file`) to `out`, each `#include "name"` line replaced by the
    /// marked text of header `name` the first time and by a comment afterwards.
    fn expand(&mut self, file: &str, text: &str, out: &mut String) -> Result<(), CatalogError> {
        for (i, line) in text.split_inclusive('\n').enumerate() {
            let Some(name) = quoted_include(line) else {
                out.push_str(line);
                continue;
            };
            if !self.seen.insert(name.to_string()) {
                // A comment keeps the line count, so the numbering after it needs no marker;
                // it does not quote the directive, so no `#include "..."` text is left.
                out.push_str(&format!("// {name}: inlined above\n"));
                continue;
            }
            let header = self
                .headers
                .get(name)
                .ok_or_else(|| CatalogError::MissingInclude {
                    family: self.family.to_string(),
                    include: name.to_string(),
                    file: file.to_string(),
                    line: i + 1,
                    dir: self.dir.to_string(),
                })?;
            self.inlined.push(name.to_string());
            let path = format!("{INCLUDE_DIR}/{name}");
            out.push_str(&line_marker(1, &path));
            self.expand(&path, header, out)?;
            if !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&line_marker(i + 2, file));
        }
        Ok(())
    }
}

impl Family {
    /// The one way from (config, shape, device limits) to (source, launch), used by tuning,
    /// cross-GPU runs, the runtime, the exports and `best`. It does not apply the space's
    /// constraints (some prune for speed on a shape; every config is correct on every shape):
    /// callers that choose among configs prune first.
    pub fn kernel(
        &self,
        config: &Config,
        shape: Shape,
        limits: &Limits,
    ) -> Result<Kernel, SpaceError> {
        let launch = self.space.launch(config, shape, limits)?;
        Ok(Kernel {
            source: self.instantiate_for(config, shape),
            launch,
        })
    }

    /// Builds a family from its space and template texts, inlining the template's
    /// `#include "name"` directives from `headers` (name -> text; the files of
    /// `templates/include/`, which `dir` names for errors).
    pub fn new(
        space: Space,
        template: String,
        headers: &BTreeMap<String, String>,
        dir: &str,
    ) -> Result<Family, CatalogError> {
        let mut inliner = Inliner {
            family: &space.name,
            headers,
            dir,
            inlined: Vec::new(),
            seen: BTreeSet::new(),
        };
        let mut inlined = String::with_capacity(template.len());
        inliner.expand(&space.template, &template, &mut inlined)?;
        let includes = inliner.inlined;
        // A template without includes hashes exactly as before includes existed, so the
        // database entries tuned with it stay valid; one with includes hashes what NVRTC sees.
        let hashed = if includes.is_empty() {
            &template
        } else {
            &inlined
        };
        let mut h = Sha256::new();
        h.update(hashed.as_bytes());
        h.update([0u8]);
        h.update(space.source.as_bytes());
        let content_checksum = fingerprint::hex(&h.finalize());
        Ok(Family {
            space,
            template,
            includes,
            inlined,
            checksum: content_checksum.clone(),
            content_checksum,
            fingerprint: None,
        })
    }

    /// The family with its committed fingerprint `fp`, whose checksum becomes its identity
    /// when `fp` is of the space's revision.
    pub fn with_fingerprint(mut self, fp: Fingerprint) -> Family {
        if fp.revision == self.space.revision {
            self.checksum = fp.checksum.clone();
        }
        self.fingerprint = Some(fp);
        self
    }

    /// The family's name.
    pub fn name(&self) -> &str {
        &self.space.name
    }

    /// A unique, C-identifier kernel name for `config`, e.g. `gemm_tile2d_BK8_BM64_BN128_TM8_TN8`.
    pub fn kernel_name(&self, config: &Config) -> String {
        let mut s = self.space.name.clone();
        for (k, v) in &config.params {
            let v = if *v < 0 {
                format!("m{}", v.unsigned_abs())
            } else {
                v.to_string()
            };
            s.push_str(&format!("_{k}{v}"));
        }
        s
    }

    /// The kernel name of `config` on `shape`: [`Family::kernel_name`], and for a family of
    /// the full interface the layout it is compiled for (`_TA0_TB1`), so kernels of two
    /// layouts can share a module or a header.
    pub fn kernel_name_for(&self, config: &Config, shape: Shape) -> String {
        let mut name = self.kernel_name(config);
        if let Some((a, b)) = self.transposes(shape) {
            name.push_str(&format!("_TA{a}_TB{b}"));
        }
        name
    }

    /// `TRANS_A` and `TRANS_B` of `shape`'s layout (0 or 1) for a family of the full
    /// interface; `None` for the others, whose sources do not depend on the layout.
    fn transposes(&self, shape: Shape) -> Option<(u8, u8)> {
        let l = shape.form.layout;
        (self.space.interface == Interface::Full)
            .then(|| (u8::from(l.trans_a()), u8::from(l.trans_b())))
    }

    /// The source text for `config` (on a problem of the plain form).
    pub fn instantiate(&self, config: &Config) -> Source {
        self.instantiate_for(config, Shape::mnk(1, 1, 1))
    }

    /// The source text for `config` on `shape`: a family of the full interface is compiled
    /// for the shape's layout (`#define TRANS_A` and `TRANS_B`); the others' sources do not
    /// depend on the shape.
    pub fn instantiate_for(&self, config: &Config, shape: Shape) -> Source {
        let kernel_name = self.kernel_name_for(config, shape);
        let mut code = format!(
            "// autotune: family {}, generated from templates/{}\n#define KERNEL_NAME {}\n",
            self.space.name, self.space.template, kernel_name
        );
        for (k, v) in &config.params {
            code.push_str(&format!("#define {k} {v}\n"));
        }
        if let Some((a, b)) = self.transposes(shape) {
            code.push_str(&format!("#define TRANS_A {a}\n#define TRANS_B {b}\n"));
        }
        if self.includes.is_empty() {
            // Unchanged from before includes existed: the same source hits the same caches.
            code.push_str("#line 1\n");
        } else {
            // After an include the markers name the template file; so does its first line.
            code.push_str(&line_marker(1, &self.space.template));
        }
        code.push_str(&self.inlined);
        Source {
            family: self.space.name.clone(),
            kernel_name,
            code,
            arch_specific: self.space.arch_specific.clone(),
        }
    }
}

/// How an entry's recorded checksum stands against this build's family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Freshness {
    /// Tuned against this build's template and space.
    Current,
    /// Tuned against another version of the family: its evidence is not this kernel's.
    Stale,
    /// This build has no family of that name.
    UnknownFamily,
}

impl Freshness {
    /// The one checksum comparison: an entry's `recorded` checksum against the family's
    /// `current` one (`None` when this build has no such family).
    pub fn of(recorded: &str, current: Option<&str>) -> Freshness {
        match current {
            None => Freshness::UnknownFamily,
            Some(c) if c == recorded => Freshness::Current,
            Some(_) => Freshness::Stale,
        }
    }
}

impl fmt::Display for Freshness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Freshness::Current => "current",
            Freshness::Stale => "stale (tuned with another revision of its family)",
            Freshness::UnknownFamily => "unknown family (not in this build)",
        })
    }
}

/// `configs/fingerprints/<file>`: where a fingerprint file lives, for messages.
fn fingerprint_path(file: &str) -> String {
    format!("{}/{file}", fingerprint::DIR)
}

/// Every known kernel family.
#[derive(Debug, Clone)]
pub struct Catalog {
    families: Vec<Family>,
}

impl Catalog {
    fn build(
        spaces: Vec<(String, String)>,
        templates: BTreeMap<String, String>,
        headers: BTreeMap<String, String>,
        mut fingerprints: BTreeMap<String, Fingerprint>,
        dir: &str,
        include_dir: &str,
    ) -> Result<Catalog, CatalogError> {
        let mut families: Vec<Family> = Vec::new();
        for (origin, text) in resolve_extends(spaces)? {
            let space = Space::from_toml_str(&text, &origin)?;
            let template = templates.get(&space.template).cloned().ok_or_else(|| {
                CatalogError::MissingTemplate {
                    family: space.name.clone(),
                    template: space.template.clone(),
                    dir: dir.to_string(),
                }
            })?;
            if families.iter().any(|f| f.space.name == space.name) {
                return Err(CatalogError::Duplicate(space.name));
            }
            let fp = fingerprints.remove(&space.name);
            let family = Family::new(space, template, &headers, include_dir)?;
            families.push(match fp {
                Some(fp) => family.with_fingerprint(fp),
                None => family,
            });
        }
        families.sort_by(|a, b| (a.space.op, &a.space.name).cmp(&(b.space.op, &b.space.name)));
        Ok(Catalog { families })
    }

    /// The families built into this binary.
    pub fn builtin() -> Result<Catalog, CatalogError> {
        let spaces = embedded::SPACES
            .iter()
            .map(|(n, t)| (format!("configs/spaces/{n} (built in)"), t.to_string()))
            .collect();
        let templates = embedded::TEMPLATES
            .iter()
            .map(|(n, t)| (n.to_string(), t.to_string()))
            .collect();
        let headers = embedded::INCLUDES
            .iter()
            .map(|(n, t)| (n.to_string(), t.to_string()))
            .collect();
        let mut fingerprints = BTreeMap::new();
        for (file, text) in embedded::FINGERPRINTS {
            let origin = format!("{} (built in)", fingerprint_path(file));
            let fp = Fingerprint::from_toml_str(text, &origin)?;
            if file.strip_suffix(".toml") != Some(fp.family.as_str()) {
                return Err(FingerprintError::WrongFile {
                    origin,
                    family: fp.family,
                }
                .into());
            }
            fingerprints.insert(fp.family.clone(), fp);
        }
        Self::build(
            spaces,
            templates,
            headers,
            fingerprints,
            "templates/ (built in)",
            "templates/include/ (built in)",
        )
    }

    /// The families under `root` (`root/configs/spaces/*.toml`, `root/templates/*.cu`, and the
    /// headers they include, `root/templates/include/*.cuh`: a directory that may be absent).
    pub fn from_dir(root: &Path) -> Result<Catalog, CatalogError> {
        let read_dir = |dir: PathBuf, ext: &str| -> Result<Vec<(String, String)>, CatalogError> {
            let io = |source| CatalogError::Io {
                path: dir.clone(),
                source,
            };
            let mut out = Vec::new();
            for e in std::fs::read_dir(&dir).map_err(io)? {
                let p = e.map_err(io)?.path();
                if p.extension().and_then(|x| x.to_str()) == Some(ext) {
                    let text = std::fs::read_to_string(&p).map_err(|source| CatalogError::Io {
                        path: p.clone(),
                        source,
                    })?;
                    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
                    out.push((name.to_string(), text));
                }
            }
            out.sort();
            Ok(out)
        };
        let tdir = root.join("templates");
        let templates = read_dir(tdir.clone(), "cu")?.into_iter().collect();
        let idir = tdir.join(INCLUDE_DIR);
        // Templates without includes need no include directory.
        let headers = if idir.is_dir() {
            read_dir(idir.clone(), "cuh")?.into_iter().collect()
        } else {
            BTreeMap::new()
        };
        let spaces = read_dir(root.join("configs/spaces"), "toml")?
            .into_iter()
            .map(|(n, t)| (root.join("configs/spaces").join(n).display().to_string(), t))
            .collect();
        let mut catalog = Self::build(
            spaces,
            templates,
            headers,
            BTreeMap::new(),
            &tdir.display().to_string(),
            &idir.display().to_string(),
        )?;
        // A family identical to a built-in one is that family (see the module docs); the
        // built-in catalog loads in every build that passed its tests.
        if let Ok(builtin) = Catalog::builtin() {
            for f in &mut catalog.families {
                if let Some(b) = builtin.families.iter().find(|b| {
                    b.space.name == f.space.name && b.content_checksum == f.content_checksum
                }) {
                    f.checksum = b.checksum.clone();
                    f.fingerprint = b.fingerprint.clone();
                }
            }
        }
        Ok(catalog)
    }

    /// All families, ordered by op then name.
    pub fn families(&self) -> &[Family] {
        &self.families
    }

    /// The families computing `op`.
    pub fn for_op(&self, op: Op) -> impl Iterator<Item = &Family> {
        self.families.iter().filter(move |f| f.space.op == op)
    }

    /// Whether an entry of `family` recorded with `checksum` was tuned against this build's
    /// family ([`Freshness::of`]).
    pub fn freshness(&self, family: &str, checksum: &str) -> Freshness {
        let current = self.families.iter().find(|f| f.space.name == family);
        Freshness::of(checksum, current.map(|f| f.checksum.as_str()))
    }

    /// Whether the kernels of family `name` give bit-identical outputs on every run
    /// ([`Space::deterministic`]); `None` when this catalog has no such family.
    pub fn deterministic(&self, name: &str) -> Option<bool> {
        self.families
            .iter()
            .find(|f| f.space.name == name)
            .map(|f| f.space.deterministic)
    }

    /// The catalog without its non-deterministic families: what a run asked for deterministic
    /// kernels only (`--deterministic`) plans from. `named` is the run's own family filter
    /// (empty: none); naming a family that is not deterministic is an error, not an empty run.
    pub fn deterministic_only(self, named: &[String]) -> Result<Catalog, CatalogError> {
        let deterministic = || {
            self.families
                .iter()
                .filter(|f| f.space.deterministic)
                .map(|f| f.name())
                .collect::<Vec<_>>()
                .join(", ")
        };
        if let Some(f) = named
            .iter()
            .find(|n| self.deterministic(n.as_str()) == Some(false))
        {
            return Err(CatalogError::NotDeterministic {
                family: f.clone(),
                deterministic: deterministic(),
            });
        }
        let families = self
            .families
            .into_iter()
            .filter(|f| f.space.deterministic)
            .collect();
        Ok(Catalog { families })
    }

    /// The family named `name`.
    pub fn get(&self, name: &str) -> Result<&Family, CatalogError> {
        self.families
            .iter()
            .find(|f| f.space.name == name)
            .ok_or_else(|| CatalogError::UnknownFamily {
                name: name.to_string(),
                known: self
                    .families
                    .iter()
                    .map(|f| f.space.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }
}

mod math;
pub use math::MathExcluded;

#[cfg(test)]
mod tests;
