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

use crate::family::space::{Config, Launch, Limits, Space, SpaceError};
use crate::problem::{Op, Shape};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
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
    /// Two spaces share a family name.
    #[error("two space files define family '{0}': family names must be unique")]
    Duplicate(String),
    /// No family with that name.
    #[error("no kernel family named '{name}'; known families: {known}")]
    UnknownFamily {
        /// What was asked for.
        name: String,
        /// What exists.
        known: String,
    },
}

/// A kernel family: its space, its template source and their checksum.
#[derive(Debug, Clone)]
pub struct Family {
    /// The parameter space.
    pub space: Space,
    /// The `.cu` template text.
    pub template: String,
    /// Hex SHA-256 of the template and space texts: a database entry whose checksum differs
    /// was tuned with another version of the family.
    pub checksum: String,
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
}

/// A config made ready for one shape on one device: what NVRTC compiles and how to launch it.
#[derive(Debug, Clone, PartialEq)]
pub struct Kernel {
    /// The instantiated source.
    pub source: Source,
    /// Grid, block and shared memory for the shape.
    pub launch: Launch,
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
            source: self.instantiate(config),
            launch,
        })
    }

    /// Builds a family from its space and template texts.
    pub fn new(space: Space, template: String) -> Family {
        let mut h = Sha256::new();
        h.update(template.as_bytes());
        h.update([0u8]);
        h.update(space.source.as_bytes());
        let checksum = h
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>();
        Family {
            space,
            template,
            checksum,
        }
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

    /// The source text for `config`.
    pub fn instantiate(&self, config: &Config) -> Source {
        let kernel_name = self.kernel_name(config);
        let mut code = format!(
            "// autotune: family {}, generated from templates/{}\n#define KERNEL_NAME {}\n",
            self.space.name, self.space.template, kernel_name
        );
        for (k, v) in &config.params {
            code.push_str(&format!("#define {k} {v}\n"));
        }
        code.push_str("#line 1\n");
        code.push_str(&self.template);
        Source {
            family: self.space.name.clone(),
            kernel_name,
            code,
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
            Freshness::Stale => "stale (tuned with another version of its template or space)",
            Freshness::UnknownFamily => "unknown family (not in this build)",
        })
    }
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
        dir: &str,
    ) -> Result<Catalog, CatalogError> {
        let mut families: Vec<Family> = Vec::new();
        for (origin, text) in spaces {
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
            families.push(Family::new(space, template));
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
        Self::build(spaces, templates, "templates/ (built in)")
    }

    /// The families under `root` (`root/configs/spaces/*.toml`, `root/templates/*.cu`).
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
        let spaces = read_dir(root.join("configs/spaces"), "toml")?
            .into_iter()
            .map(|(n, t)| (root.join("configs/spaces").join(n).display().to_string(), t))
            .collect();
        Self::build(spaces, templates, &tdir.display().to_string())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::family::space::Limits;
    use crate::problem::Shape;

    #[test]
    fn builtin_catalog_loads_and_instantiates() {
        let cat = Catalog::builtin().unwrap();
        assert!(
            cat.for_op(Op::Gemm).count() >= 2,
            "two gemm families expected"
        );
        let limits = Limits::for_arch(90).unwrap();
        let shape = Shape {
            m: 64,
            n: 64,
            k: 64,
        };
        for fam in cat.families() {
            let pruned = fam.space.prune(shape, &limits).unwrap();
            assert!(
                !pruned.valid.is_empty(),
                "{} has no valid config",
                fam.name()
            );
            let src = fam.instantiate(&pruned.valid[0]);
            assert!(src
                .code
                .contains(&format!("#define KERNEL_NAME {}", src.kernel_name)));
            for (k, v) in &pruned.valid[0].params {
                assert!(src.code.contains(&format!("#define {k} {v}\n")));
            }
            assert!(
                src.code.contains("KERNEL_NAME("),
                "template must declare KERNEL_NAME"
            );
            assert_eq!(fam.checksum.len(), 64);
        }
    }

    #[test]
    fn kernel_names_are_unique_within_a_space() {
        let cat = Catalog::builtin().unwrap();
        for fam in cat.families() {
            let mut names: Vec<String> = fam
                .space
                .enumerate()
                .iter()
                .map(|c| fam.kernel_name(c))
                .collect();
            let n = names.len();
            names.sort();
            names.dedup();
            assert_eq!(names.len(), n);
        }
    }

    #[test]
    fn from_dir_matches_builtin_and_reports_missing_template() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let disk = Catalog::from_dir(root).unwrap();
        let builtin = Catalog::builtin().unwrap();
        let sums = |c: &Catalog| {
            c.families()
                .iter()
                .map(|f| f.checksum.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(sums(&disk), sums(&builtin));

        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("configs/spaces")).unwrap();
        std::fs::create_dir_all(tmp.path().join("templates")).unwrap();
        let space = std::fs::read_to_string(root.join("configs/spaces/gemm_tiled.toml")).unwrap();
        std::fs::write(tmp.path().join("configs/spaces/gemm_tiled.toml"), space).unwrap();
        let err = Catalog::from_dir(tmp.path()).unwrap_err();
        assert!(matches!(err, CatalogError::MissingTemplate { .. }), "{err}");
    }
}
