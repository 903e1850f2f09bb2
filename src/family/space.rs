//! Parameter spaces: one `configs/spaces/<family>.toml` per kernel family, giving the value list of
//! each parameter, derived values, constraints and the launch geometry, all as integer
//! expressions (see [`crate::family::expr`]). This module enumerates the cartesian product, prunes it
//! against the constraints and a device's limits, and computes each survivor's launch geometry
//! for a shape.
//!
//! Names an expression may read: the family's parameters, its `[derived]` values, the shape
//! (`M`, `N`, `K`) and the device limits in [`Limits::env`].
//!
//! `[launch]` may declare a **workspace**: `workspace_bytes = "<expression>"` bytes of device
//! memory the kernel takes as one extra trailing argument (`float* workspace`) after the op's
//! usual ones, and `workspace_zero` (`"once"`, the default; `"every_launch"`; `"never"`), how
//! it must be initialised ([`WorkspaceZero`]). Every path that launches a kernel provides it
//! from the [`Launch`] alone, so a family with a workspace needs no code.
//!
//! A space states its **revision** (`revision = N`, 1 when absent): the version of the family's
//! kernels that database entries are current against (see [`crate::family::fingerprint`]).
//!
//! A space is **deterministic** (the same inputs give bit-identical outputs on every run) unless
//! it says `deterministic = false`, or it accumulates its output with atomics
//! (`zero_output = true`), which makes it non-deterministic by default and cannot be declared
//! deterministic ([`Space::deterministic`]).
//!
//! A space may ask for **arch-specific** compilation (`arch_specific = [90]`): on those archs its
//! kernels are compiled for `sm_XYa` (features such as Hopper's `wgmma` exist only there), on
//! every other arch for the plain `sm_XY` ([`Space::arch_specific`]).
//!
//! A space states its **math** (`math = "simt"`, the default, or `"tf32x3"`): how its kernels
//! compute the FP32 products ([`Math`]), which database entries record and `tune --math` and a
//! product's runtime filter on.
//!
//! An optional `[model]` section gives the performance model ([`crate::plan::model`]) figures it
//! cannot derive from the launch geometry (`registers` per thread, `global_bytes` in all,
//! `bytes_in_flight` per thread, `block_outputs` per block, `k_splits` per tile), as
//! expressions over the same names; see [`ModelHints`].

use crate::family::expr::{Env, Expr, ExprError};
pub use crate::family::math::Math;
use crate::problem::{Op, Shape};
use serde::Deserialize;
use std::collections::BTreeMap;

/// Why a space file is unusable.
#[derive(Debug, thiserror::Error)]
pub enum SpaceError {
    /// The TOML did not parse or has wrong fields.
    #[error("space file {origin} is invalid: {message}")]
    Toml {
        /// Where the text came from.
        origin: String,
        /// The parser's message (with line and column).
        message: String,
    },
    /// An expression in the file is malformed or reads an unknown name.
    #[error("space '{family}', {place}: {source}")]
    Expr {
        /// The family.
        family: String,
        /// Which field (e.g. `constraint 2`, `launch.grid[0]`).
        place: String,
        /// The expression's error.
        source: ExprError,
    },
    /// A structural problem: empty parameter list, wrong arity, derived cycle...
    #[error("space '{family}': {message}")]
    Invalid {
        /// The family.
        family: String,
        /// What is wrong and how to fix it.
        message: String,
    },
}

pub use crate::gpu::Limits;

/// What constraints and launch expressions read of the device.
impl Limits {
    /// The names and values expressions see.
    pub fn env(&self) -> Env {
        [
            ("sm", self.sm),
            ("max_threads_per_block", self.max_threads_per_block),
            ("max_shared_per_block", self.max_shared_per_block),
            (
                "max_shared_per_block_optin",
                self.max_shared_per_block_optin,
            ),
            ("max_regs_per_block", self.max_regs_per_block),
            ("warp_size", 32),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SpaceFile {
    name: String,
    op: Op,
    template: String,
    #[serde(default)]
    revision: Option<u32>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    constraints: Vec<String>,
    #[serde(default)]
    untuned_constraints: Vec<String>,
    params: BTreeMap<String, Vec<i64>>,
    #[serde(default)]
    derived: BTreeMap<String, String>,
    launch: LaunchFile,
    #[serde(default)]
    model: Option<ModelFile>,
    #[serde(default)]
    deterministic: Option<bool>,
    #[serde(default)]
    interface: Interface,
    #[serde(default)]
    arch_specific: Vec<u32>,
    #[serde(default)]
    math: Math,
}

/// The kernel signature a family's kernels take (`interface` in the space file).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Interface {
    /// The op's plain signature: gemm `(M, N, K, A, B, C)`, gemv `(M, K, A, x, y)`, packed
    /// row-major, `C = A B` (or `y = A x`), one product. Such a family computes only problems
    /// of the plain form ([`crate::problem::Form::PLAIN`]).
    #[default]
    Plain,
    /// The full signature: the plain one, then gemm `(lda, ldb, ldc, strideA, strideB,
    /// strideC, batch, alpha, beta)` or gemv `(lda, strideA, strideX, strideY, batch, alpha,
    /// beta)`; the layout comes as the `#define`s `TRANS_A` and `TRANS_B` (0 or 1). Such a
    /// family computes every form; its expressions may read `BATCH`, `TRANS_A`, `TRANS_B`
    /// and `BETA` (1 when beta != 0).
    Full,
}

impl Interface {
    /// Whether kernels of this signature compute problems of `form`: the full interface
    /// every form, the plain one only the plain form.
    pub fn computes(self, form: &crate::problem::Form) -> bool {
        self == Interface::Full || form.is_plain()
    }
}

/// The names a space's expressions may read about the problem's form, and their values.
pub fn form_vars(shape: Shape) -> [(&'static str, i64); 4] {
    let f = shape.form;
    [
        ("BATCH", i64::try_from(f.batch).unwrap_or(i64::MAX)),
        ("TRANS_A", i64::from(f.layout.trans_a())),
        ("TRANS_B", i64::from(f.layout.trans_b())),
        ("BETA", i64::from(f.beta)),
    ]
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LaunchFile {
    grid: Vec<String>,
    block: Vec<String>,
    #[serde(default)]
    shared_bytes: Option<String>,
    #[serde(default)]
    dynamic_shared_bytes: Option<String>,
    #[serde(default)]
    zero_output: bool,
    #[serde(default)]
    workspace_bytes: Option<String>,
    #[serde(default)]
    workspace_zero: Option<WorkspaceZero>,
}

/// How a kernel's workspace must be initialised (`[launch] workspace_zero`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum WorkspaceZero {
    /// Zeroed before the kernel's first launch, and again whenever another kernel or another
    /// shape used the buffer in between: the kernel leaves it zeroed after each complete launch
    /// (e.g. tile counters reset by the last block), so repeated calls pay nothing. Not timed:
    /// a product pays it once. A kernel that breaks the promise fails validation, which
    /// launches such kernels twice on the same workspace.
    #[default]
    Once,
    /// Zeroed before every launch; the zeroing is part of what is timed.
    EveryLaunch,
    /// Never initialised: the kernel writes every byte before it reads it.
    Never,
}

impl WorkspaceZero {
    /// How the space file spells it.
    pub fn name(self) -> &'static str {
        match self {
            WorkspaceZero::Once => "once",
            WorkspaceZero::EveryLaunch => "every_launch",
            WorkspaceZero::Never => "never",
        }
    }
}

/// One point of a space: the family and a value for each parameter.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct Config {
    /// The family's name.
    pub family: String,
    /// Parameter values, by name.
    pub params: BTreeMap<String, i64>,
}

pub use crate::db::params_label;

/// `family BM=64 BN=128 ...`: a config as logs and reports name it.
pub fn config_label(family: &str, params: &BTreeMap<String, i64>) -> String {
    format!("{family} {}", params_label(params))
}

impl Config {
    /// `BM=64 BN=128 ...`, for tables.
    pub fn params_label(&self) -> String {
        params_label(&self.params)
    }
}

/// How to launch one config on one shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Launch {
    /// Grid dimensions.
    pub grid: (u32, u32, u32),
    /// Block dimensions.
    pub block: (u32, u32, u32),
    /// Dynamic shared memory, bytes.
    pub dynamic_shared_bytes: u32,
    /// Whether the output must be zeroed before the launch (split-K with atomics);
    /// the zeroing is part of what is timed.
    pub zero_output: bool,
    /// Bytes of device workspace the kernel takes as its last argument (`[launch]
    /// workspace_bytes` on this shape); `None` when its family has no workspace (and its
    /// kernels the op's plain signature). `Some(0)` still passes the argument.
    #[serde(default)]
    pub workspace_bytes: Option<u64>,
    /// How the workspace must be initialised; meaningless without a workspace.
    #[serde(default)]
    pub workspace_zero: WorkspaceZero,
    /// The kernel's signature ([`Interface`]).
    #[serde(default)]
    pub interface: Interface,
}

/// A kernel family's parameter space, parsed and checked.
#[derive(Debug, Clone)]
pub struct Space {
    /// Family name (also the file stem).
    pub name: String,
    /// The op its kernels compute.
    pub op: Op,
    /// The template file name under `templates/`.
    pub template: String,
    /// The family's revision (`revision`, 1 when the file gives none): bumped whenever its
    /// kernels change (their PTX, or the launch the space gives them), so that the database
    /// entries tuned with the previous revision become stale. See `docs/fingerprints.md`.
    pub revision: u32,
    /// One line for humans.
    pub description: String,
    /// The raw TOML, for checksums.
    pub source: String,
    params: BTreeMap<String, Vec<i64>>,
    derived: Vec<(String, Expr)>,
    constraints: Vec<Expr>,
    /// `untuned_constraints`: what a config must also meet to serve a shape nobody tuned
    /// ([`Space::serves_untuned`]).
    untuned: Vec<Expr>,
    grid: [Expr; 3],
    block: [Expr; 3],
    shared_bytes: Option<Expr>,
    dynamic_shared_bytes: Option<Expr>,
    zero_output: bool,
    workspace_bytes: Option<Expr>,
    workspace_zero: WorkspaceZero,
    /// Whether the family's kernels give bit-identical outputs on every run: the file's
    /// `deterministic`, by default `true` unless the output is accumulated with atomics
    /// (`zero_output`).
    pub deterministic: bool,
    /// The kernel signature (`interface`, plain unless said).
    pub interface: Interface,
    /// The archs (`major * 10 + minor`) on which the kernels are compiled for the arch-specific
    /// target `sm_XYa` (`arch_specific`, empty unless said).
    pub arch_specific: Vec<u32>,
    /// How the kernels compute the products (`math`, `simt` unless said).
    pub math: Math,
    /// `[model]`: registers, global bytes, bytes in flight, FMA efficiency, block outputs, K
    /// splits.
    model: [Option<Expr>; 6],
}

/// Why a plain-interface family has no config for a problem of another form.
pub const PLAIN_ONLY: &str =
    "the family computes only the plain form (NN, packed, alpha = 1, beta = 0, one product)";

/// The result of pruning a space.
#[derive(Debug, Clone)]
pub struct Pruned {
    /// Size of the cartesian product.
    pub total: usize,
    /// Configs that satisfy every constraint and limit.
    pub valid: Vec<Config>,
    /// For each constraint text (or limit), how many configs it rejected first.
    pub rejected_by: BTreeMap<String, usize>,
}

/// The x, y and z expressions of a grid or block (`place` names it in errors).
fn dim3_exprs(family: &str, place: &str, texts: &[String]) -> Result<[Expr; 3], SpaceError> {
    if texts.len() != 3 {
        return Err(SpaceError::Invalid {
            family: family.to_string(),
            message: format!(
                "launch.{place} needs 3 expressions (x, y, z), got {}",
                texts.len()
            ),
        });
    }
    let parse = |i: usize| {
        Expr::parse(&texts[i]).map_err(|source| SpaceError::Expr {
            family: family.to_string(),
            place: format!("launch.{place}[{i}]"),
            source,
        })
    };
    Ok([parse(0)?, parse(1)?, parse(2)?])
}

impl Space {
    /// Parses a space file. `origin` names it in messages.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Space, SpaceError> {
        // `extends` is resolved among the files read together ([`resolve_extends`]).
        if let Ok(table) = text.parse::<toml::Table>() {
            if let Some(base) = table.get("extends") {
                let name = table.get("name").and_then(|n| n.as_str()).unwrap_or(origin);
                return Err(SpaceError::Invalid {
                    family: name.to_string(),
                    message: format!(
                        "extends '{}': read it with the space files it extends (a catalog \
                         of configs/spaces/), which merges the two first",
                        base.as_str().unwrap_or_default()
                    ),
                });
            }
        }
        let file: SpaceFile = toml::from_str(text).map_err(|e| SpaceError::Toml {
            origin: origin.to_string(),
            message: e.to_string(),
        })?;
        let family = file.name.clone();
        let invalid = |message: String| SpaceError::Invalid {
            family: family.clone(),
            message,
        };
        if file.params.is_empty() {
            return Err(invalid(
                "[params] is empty: give at least one parameter".into(),
            ));
        }
        for (name, values) in &file.params {
            if values.is_empty() {
                return Err(invalid(format!("parameter {name} has no values")));
            }
            if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                || name.starts_with(|c: char| c.is_ascii_digit())
            {
                return Err(invalid(format!(
                    "parameter name '{name}' must be a C identifier (it becomes a #define)"
                )));
            }
        }
        let parse = |place: String, text: &str| {
            Expr::parse(text).map_err(|source| SpaceError::Expr {
                family: family.clone(),
                place,
                source,
            })
        };
        // Order derived values so each is computed after the ones it reads.
        let mut pending: Vec<(String, Expr)> = file
            .derived
            .iter()
            .map(|(k, v)| Ok((k.clone(), parse(format!("derived.{k}"), v)?)))
            .collect::<Result<_, SpaceError>>()?;
        let mut derived = Vec::new();
        while !pending.is_empty() {
            let before = pending.len();
            let names: Vec<String> = pending.iter().map(|(n, _)| n.clone()).collect();
            pending.retain(|(name, e)| {
                let ready = e.names().iter().all(|n| !names.contains(n) || n == name);
                if ready {
                    derived.push((name.clone(), e.clone()));
                }
                !ready
            });
            if pending.len() == before {
                return Err(invalid(format!(
                    "derived values depend on each other in a cycle: {}",
                    names.join(", ")
                )));
            }
        }
        let parse_all = |what: &str, texts: &[String]| {
            texts
                .iter()
                .enumerate()
                .map(|(i, c)| parse(format!("{what} {} ('{c}')", i + 1), c))
                .collect::<Result<Vec<_>, _>>()
        };
        let constraints = parse_all("constraint", &file.constraints)?;
        let untuned = parse_all("untuned constraint", &file.untuned_constraints)?;
        let opt = |place: &str, t: &Option<String>| {
            let place = if place.contains('.') {
                place.to_string()
            } else {
                format!("launch.{place}")
            };
            t.as_deref().map(|t| parse(place, t)).transpose()
        };
        let model = match &file.model {
            Some(m) => {
                let mut exprs: [Option<Expr>; 6] = Default::default();
                for (e, (key, text)) in exprs.iter_mut().zip(m.texts()) {
                    *e = opt(&format!("model.{key}"), text)?;
                }
                exprs
            }
            None => Default::default(),
        };
        if file.launch.workspace_zero.is_some() && file.launch.workspace_bytes.is_none() {
            return Err(invalid(
                "launch.workspace_zero is set but launch.workspace_bytes is not: give the workspace's size, or drop workspace_zero".into(),
            ));
        }
        if file.revision == Some(0) {
            return Err(invalid(
                "revision = 0: revisions start at 1 (give `revision = 1` for a new family)".into(),
            ));
        }
        let deterministic = match file.deterministic {
            Some(true) if file.launch.zero_output => {
                return Err(invalid(
                    "deterministic = true contradicts launch.zero_output = true (atomic accumulation into the output, whose order varies from run to run): reduce through a workspace instead, or drop deterministic".into(),
                ))
            }
            Some(d) => d,
            None => !file.launch.zero_output,
        };
        let space = Space {
            name: file.name.clone(),
            op: file.op,
            template: file.template.clone(),
            // A space without `revision` (written before revisions existed) is revision 1.
            revision: file.revision.unwrap_or(1),
            description: file.description.clone(),
            source: text.to_string(),
            grid: dim3_exprs(&family, "grid", &file.launch.grid)?,
            block: dim3_exprs(&family, "block", &file.launch.block)?,
            shared_bytes: opt("shared_bytes", &file.launch.shared_bytes)?,
            dynamic_shared_bytes: opt("dynamic_shared_bytes", &file.launch.dynamic_shared_bytes)?,
            zero_output: file.launch.zero_output,
            workspace_bytes: opt("workspace_bytes", &file.launch.workspace_bytes)?,
            workspace_zero: file.launch.workspace_zero.unwrap_or_default(),
            deterministic,
            interface: file.interface,
            arch_specific: file.arch_specific.clone(),
            math: file.math,
            model,
            params: file.params,
            derived,
            constraints,
            untuned,
        };
        space.check_names()?;
        Ok(space)
    }

    /// Every expression must read only known names: catch typos at load, not mid-run.
    fn check_names(&self) -> Result<(), SpaceError> {
        let mut known: Vec<String> = self.params.keys().cloned().collect();
        known.extend(self.derived.iter().map(|(n, _)| n.clone()));
        known.extend(["M", "N", "K"].map(String::from));
        if self.interface == Interface::Full {
            known.extend(form_vars(Shape::mnk(1, 1, 1)).map(|(n, _)| n.to_string()));
        }
        known.extend(
            Limits::for_arch(90)
                .map(|l| l.env())
                .unwrap_or_default()
                .into_keys(),
        );
        let all = self
            .constraints
            .iter()
            .chain(self.untuned.iter())
            .chain(self.derived.iter().map(|(_, e)| e))
            .chain(self.grid.iter())
            .chain(self.block.iter())
            .chain(self.shared_bytes.iter())
            .chain(self.dynamic_shared_bytes.iter())
            .chain(self.workspace_bytes.iter())
            .chain(self.model.iter().flatten());
        for e in all {
            if let Some(bad) = e.names().into_iter().find(|n| !known.contains(n)) {
                return Err(SpaceError::Expr {
                    family: self.name.clone(),
                    place: format!("'{}'", e.text()),
                    source: ExprError::UnknownName {
                        text: e.text().to_string(),
                        name: bad,
                    },
                });
            }
        }
        Ok(())
    }

    /// Parameter names and their value lists.
    pub fn params(&self) -> &BTreeMap<String, Vec<i64>> {
        &self.params
    }

    /// Size of the cartesian product of the value lists.
    pub fn cardinality(&self) -> usize {
        self.params.values().map(Vec::len).product()
    }

    /// Every point of the cartesian product, in a stable order.
    pub fn enumerate(&self) -> Vec<Config> {
        let mut out = vec![BTreeMap::new()];
        for (name, values) in &self.params {
            out = out
                .into_iter()
                .flat_map(|p| {
                    values.iter().map(move |v| {
                        let mut p = p.clone();
                        p.insert(name.clone(), *v);
                        p
                    })
                })
                .collect();
        }
        out.into_iter()
            .map(|params| Config {
                family: self.name.clone(),
                params,
            })
            .collect()
    }

    /// The full environment for `config` on `shape` under `limits`: parameters, derived
    /// values, shape and limits.
    pub fn env(&self, config: &Config, shape: Shape, limits: &Limits) -> Result<Env, SpaceError> {
        let mut env = limits.env();
        env.insert("M".into(), shape.m as i64);
        env.insert("N".into(), shape.n as i64);
        env.insert("K".into(), shape.k as i64);
        if self.interface == Interface::Full {
            for (name, v) in form_vars(shape) {
                env.insert(name.into(), v);
            }
        }
        for (name, v) in &config.params {
            env.insert(name.clone(), *v);
        }
        for (name, e) in &self.derived {
            let v = e.eval(&env).map_err(|source| SpaceError::Expr {
                family: self.name.clone(),
                place: format!("derived.{name}"),
                source,
            })?;
            env.insert(name.clone(), v);
        }
        Ok(env)
    }

    /// Why `config` is not valid on `shape` under `limits`, or `None` if it is.
    pub fn reject_reason(
        &self,
        config: &Config,
        shape: Shape,
        limits: &Limits,
    ) -> Result<Option<String>, SpaceError> {
        if !self.interface.computes(&shape.form) {
            return Ok(Some(PLAIN_ONLY.into()));
        }
        let env = match self.env(config, shape, limits) {
            Ok(env) => env,
            // A derived value that divides by zero marks the config invalid, not the space.
            Err(SpaceError::Expr {
                source: ExprError::Arithmetic { text, .. },
                ..
            }) => return Ok(Some(format!("arithmetic error in '{text}'"))),
            Err(e) => return Err(e),
        };
        if let Some(c) = self.first_unmet(&self.constraints, &env, "constraint")? {
            return Ok(Some(c.text().to_string()));
        }
        let launch = match self.launch_in(&env) {
            Ok(l) => l,
            Err(SpaceError::Invalid { message, .. }) => return Ok(Some(message)),
            Err(e) => return Err(e),
        };
        let threads =
            i64::from(launch.block.0) * i64::from(launch.block.1) * i64::from(launch.block.2);
        if threads > limits.max_threads_per_block {
            return Ok(Some("threads per block > device limit".into()));
        }
        if let Some(s) = &self.shared_bytes {
            let bytes = self.eval_in(s, "launch.shared_bytes", &env)?;
            if bytes > limits.max_shared_per_block {
                return Ok(Some("static shared memory > 48 KiB".into()));
            }
        }
        if i64::from(launch.dynamic_shared_bytes) > limits.max_shared_per_block_optin {
            return Ok(Some("dynamic shared memory > device opt-in limit".into()));
        }
        Ok(None)
    }

    /// Why `config`, valid on `shape`, may not serve it where nobody tuned it (the space's
    /// `untuned_constraints`, each of which must be non-zero), or `None` if it may. A runtime
    /// that predicts a config for an untuned shape from a coverage grid has no measurement of
    /// that shape, only of the grid's; a family states here which of its configs keep a margin
    /// for what the grid cannot show (e.g. accuracy that varies from shape to shape), while
    /// every config still serves the shapes it was tuned and validated on.
    pub fn untuned_reject_reason(
        &self,
        config: &Config,
        shape: Shape,
        limits: &Limits,
    ) -> Result<Option<String>, SpaceError> {
        if self.untuned.is_empty() {
            return Ok(None);
        }
        let env = self.env(config, shape, limits)?;
        Ok(self
            .first_unmet(&self.untuned, &env, "untuned constraint")?
            .map(|c| format!("untuned constraint '{}'", c.text())))
    }

    /// The first of `conditions` (a run's own narrowing of the space, `autotune tune --where`)
    /// that `config` does not meet on `shape`, as its text, or `None` if it meets them all; an
    /// error names the family when a condition uses a name its space does not know.
    pub fn unmet_condition(
        &self,
        config: &Config,
        shape: Shape,
        limits: &Limits,
        conditions: &[Expr],
    ) -> Result<Option<String>, SpaceError> {
        if conditions.is_empty() {
            return Ok(None);
        }
        let env = self.env(config, shape, limits)?;
        Ok(self
            .first_unmet(conditions, &env, "--where")?
            .map(|c| c.text().to_string()))
    }

    /// The first of `exprs` that is zero in `env` (or fails arithmetic there: unmet too);
    /// an error for an expression that cannot be evaluated at all (`what` names the list).
    fn first_unmet<'a>(
        &self,
        exprs: &'a [Expr],
        env: &Env,
        what: &str,
    ) -> Result<Option<&'a Expr>, SpaceError> {
        for c in exprs {
            match c.eval(env) {
                Ok(0) | Err(ExprError::Arithmetic { .. }) => return Ok(Some(c)),
                Ok(_) => {}
                Err(source) => {
                    return Err(SpaceError::Expr {
                        family: self.name.clone(),
                        place: format!("{what} '{}'", c.text()),
                        source,
                    })
                }
            }
        }
        Ok(None)
    }

    /// Whether `config` may serve `shape` untuned ([`Space::untuned_reject_reason`]); an
    /// expression that cannot be evaluated says no.
    pub fn serves_untuned(&self, config: &Config, shape: Shape, limits: &Limits) -> bool {
        matches!(self.untuned_reject_reason(config, shape, limits), Ok(None))
    }

    /// The performance model's figures for `config` on `shape`: static shared memory and the
    /// optional `[model]` section. A `[model]` expression that cannot be evaluated for this
    /// config (division by zero, overflow on a huge shape) is left out, as if not given.
    pub fn model_hints(
        &self,
        config: &Config,
        shape: Shape,
        limits: &Limits,
    ) -> Result<ModelHints, SpaceError> {
        let env = self.env(config, shape, limits)?;
        let static_shared_bytes = match &self.shared_bytes {
            Some(e) => self.eval_in(e, "launch.shared_bytes", &env)?,
            None => 0,
        };
        let values = self
            .model
            .clone()
            .map(|e| e.and_then(|e| e.eval(&env).ok()));
        Ok(ModelHints::new(static_shared_bytes, values))
    }

    /// Enumerates and prunes against the constraints and `limits` for `shape`.
    pub fn prune(&self, shape: Shape, limits: &Limits) -> Result<Pruned, SpaceError> {
        let all = self.enumerate();
        let total = all.len();
        let mut valid = Vec::new();
        let mut rejected_by = BTreeMap::new();
        for c in all {
            match self.reject_reason(&c, shape, limits)? {
                None => valid.push(c),
                Some(why) => *rejected_by.entry(why).or_insert(0) += 1,
            }
        }
        Ok(Pruned {
            total,
            valid,
            rejected_by,
        })
    }

    fn eval_in(&self, e: &Expr, place: &str, env: &Env) -> Result<i64, SpaceError> {
        e.eval(env).map_err(|source| SpaceError::Expr {
            family: self.name.clone(),
            place: place.to_string(),
            source,
        })
    }

    fn launch_in(&self, env: &Env) -> Result<Launch, SpaceError> {
        let dim = |e: &Expr, place: &str| -> Result<u32, SpaceError> {
            let v = self.eval_in(e, place, env)?;
            u32::try_from(v)
                .ok()
                .filter(|v| *v >= 1)
                .ok_or_else(|| SpaceError::Invalid {
                    family: self.name.clone(),
                    message: format!("launch {place} = {v} is out of range (1..2^32)"),
                })
        };
        let dyn_smem = match &self.dynamic_shared_bytes {
            Some(e) => {
                let v = self.eval_in(e, "launch.dynamic_shared_bytes", env)?;
                u32::try_from(v).map_err(|_| SpaceError::Invalid {
                    family: self.name.clone(),
                    message: format!("dynamic shared memory {v} is out of range"),
                })?
            }
            None => 0,
        };
        let workspace_bytes = match &self.workspace_bytes {
            Some(e) => {
                // Overflow on a huge shape makes the config unusable there, not the space.
                let v = e.eval(env).map_err(|source| match source {
                    ExprError::Arithmetic { text, .. } => SpaceError::Invalid {
                        family: self.name.clone(),
                        message: format!("launch.workspace_bytes: arithmetic error in '{text}'"),
                    },
                    source => SpaceError::Expr {
                        family: self.name.clone(),
                        place: "launch.workspace_bytes".into(),
                        source,
                    },
                })?;
                Some(u64::try_from(v).map_err(|_| SpaceError::Invalid {
                    family: self.name.clone(),
                    message: format!("launch.workspace_bytes = {v} is negative"),
                })?)
            }
            None => None,
        };
        Ok(Launch {
            grid: (
                dim(&self.grid[0], "grid.x")?,
                dim(&self.grid[1], "grid.y")?,
                dim(&self.grid[2], "grid.z")?,
            ),
            block: (
                dim(&self.block[0], "block.x")?,
                dim(&self.block[1], "block.y")?,
                dim(&self.block[2], "block.z")?,
            ),
            dynamic_shared_bytes: dyn_smem,
            zero_output: self.zero_output,
            workspace_bytes,
            workspace_zero: self.workspace_zero,
            interface: self.interface,
        })
    }

    /// The launch geometry of `config` on `shape`.
    pub fn launch(
        &self,
        config: &Config,
        shape: Shape,
        limits: &Limits,
    ) -> Result<Launch, SpaceError> {
        let env = self.env(config, shape, limits)?;
        let launch = self.launch_in(&env)?;
        // The CUDA limits on grid y and z.
        if launch.grid.1 > 65535 || launch.grid.2 > 65535 {
            return Err(SpaceError::Invalid {
                family: self.name.clone(),
                message: format!(
                    "grid {:?} for shape {}x{}x{} exceeds 65535 in y or z",
                    launch.grid, shape.m, shape.n, shape.k
                ),
            });
        }
        Ok(launch)
    }
}

mod extends;
mod model;
pub use extends::resolve_extends;
use model::ModelFile;
pub use model::ModelHints;

#[cfg(test)]
mod tests;
