//! Export of a tuned config for products built without autotune. Pure: no GPU, no NVRTC.
//!
//! [`cuda_header`] turns a [`Choice`] (what [`crate::product::lookup::lookup`] picked for one shape)
//! into a self-contained `.cuh` for nvcc: the instantiated kernel, byte for byte the source
//! the tuner compiled and validated, plus a `static inline` host helper that launches it with
//! the grid, block and shared memory of exactly that shape.
//!
//! Layout of the header, so that several exported headers coexist in one translation unit:
//!
//! * a comment block saying what was chosen and why (rule, family, params, evidence, checksum);
//! * an outer include guard named after the kernel and the shape;
//! * the kernel part, under its own guard named after the kernel alone (two shapes that chose
//!   the same config define the kernel once), wrapped in `namespace autotune_<kernel>` so the
//!   templates' helper `__device__` functions (`warp_sum`, `load4_guarded`, ...) of two
//!   headers do not clash; the kernel stays `extern "C" __global__` with its generated name
//!   (C linkage ignores the namespace), and every macro the source defines is `#undef`ined
//!   after it so none leaks into the product;
//! * the host helper `autotune_<op>_<shape>(...)`, under `#ifndef __CUDACC_RTC__` (NVRTC has
//!   no runtime API headers), which zeroes the output when the kernel accumulates with atomics,
//!   opts in to more than 48 KiB of dynamic shared memory when needed, launches on a stream and
//!   returns `cudaGetLastError()`.
//!
//! A kernel whose family declares a workspace ([`Launch::workspace_bytes`]) takes it as its last
//! argument; so does the helper (`void* workspace`, before the stream), and the header defines
//! its size as `<helper>_workspace_bytes`. The caller passes a buffer of at least that size,
//! zeroed as the family needs ([`crate::family::space::WorkspaceZero`], stated in the helper's
//! comment), or `nullptr`: then the helper allocates, zeroes and frees one itself, in stream
//! order (`cudaMallocAsync`), on every call.

use crate::cuda::nvrtc::{self, CompileError, Compiled};
use crate::family::catalog::{Family, Freshness, Kernel, Source};
use crate::family::space::{Interface, Launch, Limits, SpaceError, WorkspaceZero};
use crate::gpu::Arch;
use crate::problem::{Op, Shape};
use crate::product::lookup::{Choice, Rule};
use std::fmt::{self, Write as _};
use std::str::FromStr;

/// Static shared memory every block may use without opting in, bytes.
const DEFAULT_SHARED_LIMIT: u32 = 48 * 1024;

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// Not a known export format.
    #[error("unknown export format '{0}': accepted formats: {accepted}", accepted = Format::ACCEPTED.join(", "))]
    UnknownFormat(String),
    /// The family passed is not the one the choice names.
    #[error("the choice is for family '{chosen}' but family '{given}' was passed")]
    FamilyMismatch {
        /// The family of the choice.
        chosen: String,
        /// The family passed.
        given: String,
    },
    /// The family computes another op.
    #[error("family '{family}' computes {family_op}, not {op}")]
    OpMismatch {
        /// The family.
        family: String,
        /// Its op.
        family_op: Op,
        /// The op asked for.
        op: Op,
    },
    /// A dimension does not fit the kernel's `int` arguments.
    #[error("shape {shape} has a dimension above {max}, which the kernels' int arguments cannot hold", max = i32::MAX)]
    TooLarge {
        /// The shape's label.
        shape: String,
    },
    /// The launch geometry could not be computed.
    #[error("cannot compute the launch of {kernel} for this shape: {source}")]
    Launch {
        /// The kernel name.
        kernel: String,
        /// Why (boxed: the error is large).
        source: Box<SpaceError>,
    },
    /// NVRTC is missing or cannot target the arch.
    #[error(transparent)]
    Nvrtc(#[from] CompileError),
    /// The kernel did not compile.
    #[error("compiling {kernel} for {arch}")]
    Compile {
        /// The kernel name.
        kernel: String,
        /// The arch.
        arch: Arch,
        /// Why.
        source: CompileError,
    },
    /// The exported header did not compile.
    #[error("the exported header does not compile with NVRTC")]
    Header {
        /// Why.
        source: CompileError,
    },
}

/// The kernel `choice` runs for `shape`, compiled by NVRTC for `arch` as tuning compiled it
/// (`export --format cubin`): for cuobjdump, or a product's own module loading.
pub fn cubin(
    choice: &Choice,
    family: &Family,
    shape: Shape,
    limits: &Limits,
    arch: Arch,
) -> Result<Compiled, ExportError> {
    let config = choice.config();
    let source = family
        .kernel(&config, shape, limits)
        .map_err(|e| ExportError::Launch {
            kernel: family.kernel_name_for(&config, shape),
            source: Box::new(e),
        })?
        .source;
    nvrtc::check_arch(arch)?;
    nvrtc::compile(&source, arch).map_err(|source_err| ExportError::Compile {
        kernel: source.kernel_name.clone(),
        arch,
        source: source_err,
    })
}

/// Checks that `header` (exported for `family`, `op`, `shape`) compiles with NVRTC for `arch`,
/// after `prelude` (another exported header, or nothing) in one translation unit.
pub fn check_header(
    header: &str,
    prelude: &str,
    family: &str,
    op: Op,
    shape: Shape,
    arch: Arch,
) -> Result<Compiled, ExportError> {
    let mut code = prelude.to_string();
    if !code.is_empty() && !code.ends_with('\n') {
        code.push('\n');
    }
    code.push_str(header);
    let source = Source {
        family: family.to_string(),
        kernel_name: helper_name(op, shape),
        code,
        arch_specific: Vec::new(),
    };
    nvrtc::check_arch(arch)?;
    nvrtc::compile(&source, arch).map_err(|source| ExportError::Header { source })
}

/// An export format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A self-contained `.cuh` for nvcc ([`cuda_header`]): one shape.
    CudaHeader,
    /// Every entry as CSV ([`crate::report::formats::entries_csv`]).
    Csv,
    /// Every entry and GPU record as JSON ([`crate::report::formats::entries_json`]).
    Json,
    /// Every entry in the T4 autotuning results format of Kernel Tuner and KTT
    /// ([`crate::report::formats::t4`]).
    T4,
    /// The chosen kernel compiled by NVRTC for the arch, exactly as tuning compiled it: a cubin
    /// for `cuobjdump --dump-sass` / `--dump-resource-usage`, or for a product that loads
    /// modules itself. One shape.
    Cubin,
}

impl Format {
    /// The names `--format` accepts.
    pub const ACCEPTED: &'static [&'static str] = &["cuda-header", "cubin", "csv", "json", "t4"];

    /// Whether the format holds the whole database (filtered) rather than one shape's choice.
    pub fn is_database_wide(self) -> bool {
        !matches!(self, Format::CudaHeader | Format::Cubin)
    }
}

impl FromStr for Format {
    type Err = ExportError;
    fn from_str(s: &str) -> Result<Format, ExportError> {
        match s.trim() {
            "cuda-header" => Ok(Format::CudaHeader),
            "cubin" => Ok(Format::Cubin),
            "csv" => Ok(Format::Csv),
            "json" => Ok(Format::Json),
            "t4" | "T4" => Ok(Format::T4),
            other => Err(ExportError::UnknownFormat(other.to_string())),
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Format::CudaHeader => "cuda-header",
            Format::Cubin => "cubin",
            Format::Csv => "csv",
            Format::Json => "json",
            Format::T4 => "t4",
        })
    }
}

/// The names of the object-like and function-like macros `code` defines with `#define`, in
/// order of first definition, each once.
pub fn defined_macros(code: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for line in code.lines() {
        let Some(rest) = line.trim_start().strip_prefix('#') else {
            continue;
        };
        let Some(rest) = rest.trim_start().strip_prefix("define") else {
            continue;
        };
        if !rest.starts_with([' ', '\t']) {
            continue;
        }
        let name: String = rest
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() && !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// The name of the host launch helper for `op` on `shape`, e.g. `autotune_gemm_2048x2048x2048`.
pub fn helper_name(op: Op, shape: Shape) -> String {
    let dims = match op {
        Op::Gemm => format!("autotune_gemm_{}x{}x{}", shape.m, shape.n, shape.k),
        Op::Gemv => format!("autotune_gemv_{}x{}", shape.m, shape.k),
    };
    // Form tags (`:tn:b32`) as identifier characters (`_tn_b32`).
    dims + &shape.form.tags(op).replace(':', "_")
}

/// The `.cuh` text for launching `choice` (for `op` on `shape`, from [`crate::product::lookup::lookup`])
/// with the geometry `limits` give; `family` must be the choice's family and `gpu` is the GPU
/// the choice was looked up for (shown in the comment block).
pub fn cuda_header(
    choice: &Choice,
    family: &Family,
    op: Op,
    shape: Shape,
    limits: &Limits,
    gpu: &str,
) -> Result<String, ExportError> {
    if family.name() != choice.family {
        return Err(ExportError::FamilyMismatch {
            chosen: choice.family.clone(),
            given: family.name().to_string(),
        });
    }
    if family.space.op != op {
        return Err(ExportError::OpMismatch {
            family: family.name().to_string(),
            family_op: family.space.op,
            op,
        });
    }
    let dim = |v: u64| {
        i32::try_from(v).map_err(|_| ExportError::TooLarge {
            shape: shape.label(op),
        })
    };
    let (m, n, k) = (dim(shape.m)?, dim(shape.n)?, dim(shape.k)?);
    let config = choice.config();
    let Kernel { source, launch } =
        family
            .kernel(&config, shape, limits)
            .map_err(|source_err| ExportError::Launch {
                kernel: family.kernel_name(&config),
                source: Box::new(source_err),
            })?;
    let kernel = &source.kernel_name;
    let helper = helper_name(op, shape);
    let namespace = format!("autotune_{kernel}");
    let kernel_guard = format!("AUTOTUNE_KERNEL_{kernel}");
    let file_guard = format!(
        "AUTOTUNE_{kernel}_{}_CUH",
        helper.trim_start_matches("autotune_")
    );

    let mut h = String::new();
    comment_block(
        &mut h, choice, family, op, shape, limits, gpu, &source, &launch,
    );
    // `writeln!` into a String cannot fail.
    let _ = writeln!(h, "#ifndef {file_guard}\n#define {file_guard}\n");
    let _ = writeln!(
        h,
        "// The kernel, exactly as autotune instantiated, compiled and validated it.\n#ifndef {kernel_guard}\n#define {kernel_guard}\nnamespace {namespace} {{"
    );
    h.push_str(&source.code);
    if !source.code.ends_with('\n') {
        h.push('\n');
    }
    let _ = writeln!(h, "}}  // namespace {namespace}");
    // The source's `#line 1` renumbered what follows: restore this file's own numbering.
    let next = h.lines().count() + 2;
    let _ = writeln!(h, "#line {next}");
    for name in defined_macros(&source.code) {
        let _ = writeln!(h, "#undef {name}");
    }
    let _ = writeln!(h, "#endif  // {kernel_guard}\n");
    launch_helper(
        &mut h,
        op,
        shape,
        (m, n, k),
        &namespace,
        kernel,
        &helper,
        &launch,
    );
    let _ = writeln!(h, "\n#endif  // {file_guard}");
    Ok(h)
}

#[allow(clippy::too_many_arguments)]
fn comment_block(
    h: &mut String,
    choice: &Choice,
    family: &Family,
    op: Op,
    shape: Shape,
    limits: &Limits,
    gpu: &str,
    source: &Source,
    launch: &Launch,
) {
    let params = crate::family::space::params_label(&choice.params);
    let mut lines = vec![
        format!(
            "Generated by autotune {} (autotune export --format cuda-header). Do not edit: re-export.",
            env!("CARGO_PKG_VERSION")
        ),
        String::new(),
        format!("GPU:      {gpu} (geometry for sm_{})", limits.sm),
        format!("Op:       {op} {}", shape.label(op)),
        format!("Chosen:   {}", choice.describe(op, shape)),
        format!("Rule:     {}", choice.rule),
        format!(
            "Family:   {} (templates/{}), template+space checksum {}",
            family.name(),
            family.space.template,
            family.checksum
        ),
        format!("Params:   {params}"),
        format!("Kernel:   {}", source.kernel_name),
    ];
    if !source.arch_specific.is_empty() {
        let archs: Vec<String> = source
            .arch_specific
            .iter()
            .map(|a| format!("sm_{a}a"))
            .collect();
        lines.push(format!(
            "Compile:  for {} on such a GPU (nvcc -arch={}): the family uses features only that target has",
            archs.join(", "),
            archs[0]
        ));
    }
    match &choice.entry {
        Some(e) => {
            lines.push(format!(
                "Evidence: {:.4} ms median ({:.4} ms min, {} samples), {:.3}x cuBLAS ({:.4} ms), {:.1} GFLOP/s,",
                e.median_ms, e.min_ms, e.samples, e.vs_cublas, e.cublas_median_ms, e.gflops
            ));
            lines.push(format!(
                "          measured for {} {} on {}, max rel. error {:.2e}{}, math {}, {} by autotune {}",
                e.op,
                e.shape,
                e.gpu,
                e.max_rel_error,
                e.cublas_max_rel_error
                    .map_or(String::new(), |c| format!(" (cuBLAS SGEMM {c:.2e})")),
                choice.math,
                e.date,
                e.tool_version
            ));
            if Freshness::of(&e.checksum, Some(&family.checksum)) != Freshness::Current {
                lines.push(format!(
                    "WARNING:  that entry was tuned with another version of {} (checksum {}): re-tune to refresh it",
                    e.family, e.checksum
                ));
            }
        }
        None => lines.push("Evidence: none (built-in default, never measured here)".into()),
    }
    if choice.rule != Rule::Exact {
        lines.push(
            "          (not tuned for this exact shape: the kernel is correct, its speed unmeasured)"
                .into(),
        );
    }
    lines.push(format!(
        "Launch:   grid ({}, {}, {}), block ({}, {}, {}), dynamic shared memory {} B{}{}",
        launch.grid.0,
        launch.grid.1,
        launch.grid.2,
        launch.block.0,
        launch.block.1,
        launch.block.2,
        launch.dynamic_shared_bytes,
        if launch.zero_output {
            ", output zeroed first"
        } else {
            ""
        },
        match launch.workspace_bytes {
            Some(b) => format!(", workspace {b} B"),
            None => String::new(),
        }
    ));
    lines.push(format!(
        "Results:  {}",
        if family.space.deterministic {
            "deterministic (bit-identical on every run)"
        } else {
            "not deterministic (the order of atomic additions varies from run to run)"
        }
    ));
    lines.push(String::new());
    let ws = if launch.workspace_bytes.is_some() {
        ", workspace"
    } else {
        ""
    };
    let full = launch.interface == Interface::Full;
    let (usage, layout) = match (op, full) {
        (Op::Gemm, false) => (
            format!("A, B, C{ws}, stream"),
            "C = A B, row-major: A is M x K, B is K x N, C is M x N (device pointers)".to_string(),
        ),
        (Op::Gemv, false) => (
            format!("A, x, y{ws}, stream"),
            "y = A x, row-major A is M x K, x has K and y has M elements (device pointers)"
                .to_string(),
        ),
        (Op::Gemm, true) => (
            format!("A, lda, strideA, B, ldb, strideB, C, ldc, strideC, batch, alpha, beta{ws}, stream"),
            format!(
                "C = alpha op(A) op(B) + beta C for each of `batch` products, row-major, layout {} (compiled for it: first letter A, second B, t = stored transposed), as cublasSgemmStridedBatched takes it (device pointers)",
                shape.form.layout.name(op)
            ),
        ),
        (Op::Gemv, true) => (
            format!("A, lda, strideA, x, strideX, y, strideY, batch, alpha, beta{ws}, stream"),
            format!(
                "y = alpha op(A) x + beta y for each of `batch` products, row-major A (M x K), op {} (compiled for it), as cublasSgemvStridedBatched takes it with unit increments (device pointers)",
                shape.form.layout.name(op)
            ),
        ),
    };
    lines.push(format!(
        "Usage:    cudaError_t err = {}({usage});",
        helper_name(op, shape)
    ));
    lines.push(format!("          {layout}."));
    if let Some(bytes) = launch.workspace_bytes {
        lines.push(format!(
            "          workspace: {bytes} bytes of device memory ({}_workspace_bytes), 16-byte aligned, {}",
            helper_name(op, shape),
            workspace_rule(launch.workspace_zero)
        ));
        lines.push(
            "          (or nullptr: the helper then allocates, zeroes and frees one on every call)."
                .into(),
        );
    }
    lines.push(
        "          The geometry is for exactly this shape; other shapes need their own export."
            .into(),
    );
    lines.push(
        "          Tuned with NVRTC options --std=c++17 -DAUTOTUNE=1: compile with nvcc -std=c++17."
            .into(),
    );
    for l in lines {
        if l.is_empty() {
            h.push_str("//\n");
        } else {
            let _ = writeln!(h, "// {l}");
        }
    }
    h.push('\n');
}

/// What the caller of a helper must do with a workspace zeroed as `zero` says.
fn workspace_rule(zero: WorkspaceZero) -> &'static str {
    match zero {
        WorkspaceZero::Once => "zeroed (cudaMemsetAsync) before its first use and again after it served another helper (another kernel or shape); the kernel leaves it zeroed for this helper's next call; calls that may overlap (other streams) need one each",
        WorkspaceZero::EveryLaunch => "zeroed by the helper on every call; calls that may overlap (other streams) need one each",
        WorkspaceZero::Never => "needing no initialisation; calls that may overlap (other streams) need one each",
    }
}

#[allow(clippy::too_many_arguments)]
fn launch_helper(
    h: &mut String,
    op: Op,
    shape: Shape,
    (m, n, k): (i32, i32, i32),
    namespace: &str,
    kernel: &str,
    helper: &str,
    launch: &Launch,
) {
    let (params, dims, out, out_elems, args) = match op {
        Op::Gemm => (
            "const float* A, const float* B, float* C",
            format!("    const int M = {m}, N = {n}, K = {k};\n"),
            "C",
            "static_cast<size_t>(M) * static_cast<size_t>(N)",
            "M, N, K, A, B, C",
        ),
        Op::Gemv => (
            "const float* A, const float* x, float* y",
            format!("    const int M = {m}, K = {k};\n"),
            "y",
            "static_cast<size_t>(M)",
            "M, K, A, x, y",
        ),
    };
    // The full interface: leading dimensions, strides, batch, alpha and beta are the
    // caller's, as in the cuBLAS call; the grid's z follows the batch.
    let full = launch.interface == Interface::Full;
    let (params, args, out_elems) = match (op, full) {
        (_, false) => (params.to_string(), args.to_string(), out_elems.to_string()),
        (Op::Gemm, true) => (
            "const float* A, int lda, long long strideA, const float* B, int ldb, long long strideB, float* C, int ldc, long long strideC, int batch, float alpha, float beta".to_string(),
            "M, N, K, A, B, C, lda, ldb, ldc, strideA, strideB, strideC, batch, alpha, beta".to_string(),
            "(static_cast<size_t>(batch) - 1) * static_cast<size_t>(strideC) + (static_cast<size_t>(M) - 1) * static_cast<size_t>(ldc) + static_cast<size_t>(N)".to_string(),
        ),
        (Op::Gemv, true) => (
            "const float* A, int lda, long long strideA, const float* x, long long strideX, float* y, long long strideY, int batch, float alpha, float beta".to_string(),
            "M, K, A, x, y, lda, strideA, strideX, strideY, batch, alpha, beta".to_string(),
            format!(
                "(static_cast<size_t>(batch) - 1) * static_cast<size_t>(strideY) + static_cast<size_t>({})",
                if shape.form.layout.trans_a() { "K" } else { "M" }
            ),
        ),
    };
    let (params, args, out_elems) = (params.as_str(), args.as_str(), out_elems.as_str());
    let (g, b, smem) = (launch.grid, launch.block, launch.dynamic_shared_bytes);
    let grid_z = if full {
        "static_cast<unsigned>(batch < 65535 ? batch : 65535)".to_string()
    } else {
        format!("{}u", g.2)
    };
    let _ = writeln!(
        h,
        "// Host launch helper (not for NVRTC, which has no runtime API).\n#ifndef __CUDACC_RTC__\n#include <cuda_runtime.h>\n"
    );
    if let Some(bytes) = launch.workspace_bytes {
        let _ = writeln!(
            h,
            "// Bytes of the workspace {helper} needs.\nstatic const size_t {helper}_workspace_bytes = {bytes}ull;\n"
        );
    }
    let _ = writeln!(
        h,
        "// Launches {kernel} for {op} {} on `stream`; returns cudaGetLastError().",
        match op {
            Op::Gemm => format!("{m}x{n}x{k}"),
            Op::Gemv => format!("{m}x{k}"),
        }
    );
    let (params, args) = match launch.workspace_bytes {
        Some(_) => {
            let _ = writeln!(
                h,
                "// `workspace`: at least {helper}_workspace_bytes bytes of device memory, 16-byte aligned,\n// {}; or nullptr, and the helper allocates, zeroes and frees one (stream-ordered) itself.",
                workspace_rule(launch.workspace_zero)
            );
            (
                format!("{params}, void* workspace"),
                format!("{args}, static_cast<float*>(workspace)"),
            )
        }
        None => (params.to_string(), args.to_string()),
    };
    let _ = writeln!(
        h,
        "static inline cudaError_t {helper}({params}, cudaStream_t stream)\n{{"
    );
    h.push_str(&dims);
    if full {
        // The workspace (if any) was sized for the exported batch; the grid needs a batch.
        let most = if launch.workspace_bytes.is_some() {
            shape.form.batch.to_string()
        } else {
            "2147483647".into()
        };
        let _ = writeln!(
            h,
            "    if (batch < 1 || batch > {most}) return cudaErrorInvalidValue;"
        );
    }
    // Declared only where a call before the launch can fail: nvcc warns about an unused one.
    if launch.zero_output || smem > DEFAULT_SHARED_LIMIT || launch.workspace_bytes.is_some() {
        let _ = writeln!(h, "    cudaError_t err = cudaSuccess;");
    }
    if launch.zero_output {
        let _ = writeln!(
            h,
            "    // The kernel accumulates into {out} with atomics.\n    err = cudaMemsetAsync({out}, 0, sizeof(float) * {out_elems}, stream);\n    if (err != cudaSuccess) return err;"
        );
    }
    if smem > DEFAULT_SHARED_LIMIT {
        let _ = writeln!(
            h,
            "    err = cudaFuncSetAttribute({namespace}::{kernel}, cudaFuncAttributeMaxDynamicSharedMemorySize, {smem});\n    if (err != cudaSuccess) return err;"
        );
    }
    // Last before the launch: nothing can fail between the allocation and the free.
    if launch.workspace_bytes.is_some() {
        let _ = writeln!(
            h,
            "    void* owned = nullptr;\n    if (workspace == nullptr) {{\n        err = cudaMallocAsync(&owned, {helper}_workspace_bytes, stream);\n        if (err != cudaSuccess) return err;\n        workspace = owned;"
        );
        if launch.workspace_zero == WorkspaceZero::Once {
            let _ = writeln!(
                h,
                "        err = cudaMemsetAsync(workspace, 0, {helper}_workspace_bytes, stream);\n        if (err != cudaSuccess) {{ cudaFreeAsync(owned, stream); return err; }}"
            );
        }
        let _ = writeln!(h, "    }}");
        if launch.workspace_zero == WorkspaceZero::EveryLaunch {
            let _ = writeln!(
                h,
                "    err = cudaMemsetAsync(workspace, 0, {helper}_workspace_bytes, stream);\n    if (err != cudaSuccess) {{ if (owned) cudaFreeAsync(owned, stream); return err; }}"
            );
        }
    }
    let _ = writeln!(
        h,
        "    {namespace}::{kernel}<<<dim3({}u, {}u, {grid_z}), dim3({}u, {}u, {}u), {smem}u, stream>>>({args});",
        g.0, g.1, b.0, b.1, b.2
    );
    if launch.workspace_bytes.is_some() {
        let _ = writeln!(
            h,
            "    err = cudaGetLastError();\n    if (owned != nullptr) {{\n        const cudaError_t freed = cudaFreeAsync(owned, stream);\n        if (err == cudaSuccess) err = freed;\n    }}\n    return err;\n}}\n#endif  // __CUDACC_RTC__"
        );
    } else {
        let _ = writeln!(
            h,
            "    return cudaGetLastError();\n}}\n#endif  // __CUDACC_RTC__"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::family::catalog::Catalog;
    use crate::family::space::Config;
    use crate::product::lookup::default_config;
    use std::collections::BTreeMap;

    /// The built-in default of `op`, as the lookup returns it when nothing is tuned.
    fn default_choice(op: Op) -> Choice {
        let (family, params) = default_config(op);
        Choice {
            params,
            ..choice(&family, &[])
        }
    }

    fn choice(family: &str, params: &[(&str, i64)]) -> Choice {
        Choice {
            rule: Rule::Default,
            family: family.into(),
            params: params
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect::<BTreeMap<_, _>>(),
            entry: None,
            distance: 0.0,
            skipped: Vec::new(),
            prediction: None,
            vendor: false,
            math: Default::default(),
        }
    }

    fn export(c: &Choice, op: Op, shape: &str) -> (String, Source, Launch) {
        let catalog = Catalog::builtin().unwrap();
        let family = catalog.get(&c.family).unwrap();
        let shape = Shape::parse(op, shape).unwrap();
        let limits = Limits::for_arch(90).unwrap();
        let config = Config {
            family: c.family.clone(),
            params: c.params.clone(),
        };
        let k = family.kernel(&config, shape, &limits).unwrap();
        let h = cuda_header(c, family, op, shape, &limits, "NVIDIA H200").unwrap();
        (h, k.source, k.launch)
    }

    #[test]
    fn gemm_header_has_kernel_geometry_guards_and_undefs() {
        let c = default_choice(Op::Gemm);
        let (h, src, l) = export(&c, Op::Gemm, "2048x1024x512");
        let k = &src.kernel_name;
        assert!(
            h.contains(&src.code),
            "the instantiated source is embedded verbatim"
        );
        assert!(h.contains(&format!("#ifndef AUTOTUNE_KERNEL_{k}\n")));
        assert!(h.contains(&format!("#ifndef AUTOTUNE_{k}_gemm_2048x1024x512_CUH\n")));
        assert!(h.contains(&format!("namespace autotune_{k} {{")));
        assert!(h.contains("static inline cudaError_t autotune_gemm_2048x1024x512(const float* A, const float* B, float* C, cudaStream_t stream)"));
        assert!(h.contains("const int M = 2048, N = 1024, K = 512;"));
        let launch = format!(
            "autotune_{k}::{k}<<<dim3({}u, {}u, {}u), dim3({}u, {}u, {}u), {}u, stream>>>(M, N, K, A, B, C);",
            l.grid.0, l.grid.1, l.grid.2, l.block.0, l.block.1, l.block.2, l.dynamic_shared_bytes
        );
        assert!(h.contains(&launch), "{launch} not in\n{h}");
        for m in [
            "KERNEL_NAME",
            "BM",
            "TM",
            "PREFETCH",
            "THREADS",
            "LOAD_TILE",
            "TCOLS",
        ] {
            assert!(h.contains(&format!("\n#undef {m}\n")), "no #undef {m}");
        }
        assert!(h.contains("#ifndef __CUDACC_RTC__\n#include <cuda_runtime.h>"));
        assert!(h.contains("built-in default"));
        assert!(!h.contains("cudaMemsetAsync"), "tile2d needs no zeroing");
        // The #undefs come after the code, the guard closes last.
        let undef = h.find("#undef KERNEL_NAME").unwrap();
        assert!(undef > h.find(&src.code).unwrap());
        assert!(h.trim_end().ends_with("_CUH"));
    }

    #[test]
    fn split_k_gemv_zeroes_y_and_large_smem_opts_in() {
        let c = choice(
            "gemv_split_k",
            &[("BM", 8), ("SPLIT_K", 2), ("VEC", 4), ("X_SMEM", 1)],
        );
        let (h, src, l) = export(&c, Op::Gemv, "1024x65536");
        assert!(l.zero_output);
        assert!(l.dynamic_shared_bytes > DEFAULT_SHARED_LIMIT, "{l:?}");
        assert!(h.contains("autotune_gemv_1024x65536(const float* A, const float* x, float* y, cudaStream_t stream)"));
        assert!(h.contains("cudaMemsetAsync(y, 0, sizeof(float) * static_cast<size_t>(M), stream)"));
        assert!(h.contains(&format!(
            "cudaFuncSetAttribute(autotune_{0}::{0}, cudaFuncAttributeMaxDynamicSharedMemorySize, {1});",
            src.kernel_name, l.dynamic_shared_bytes
        )));
        assert!(h.contains(">>>(M, K, A, x, y);"));
        // Without X_SMEM there is no opt-in.
        let c = choice(
            "gemv_split_k",
            &[("BM", 1), ("SPLIT_K", 2), ("VEC", 4), ("X_SMEM", 0)],
        );
        let (h, _, _) = export(&c, Op::Gemv, "1024x65536");
        assert!(!h.contains("cudaFuncSetAttribute"));
    }

    #[test]
    fn a_workspace_kernel_gets_a_workspace_argument_its_size_and_a_fallback() {
        let c = choice(
            "gemm_warptile_splitk_det",
            &[
                ("BK", 16),
                ("BM", 64),
                ("BN", 64),
                ("GROUP_M", 1),
                ("MIN_BLOCKS", 1),
                ("PAD", 4),
                ("SPLIT_K", 8),
                ("STAGES", 3),
                ("TM", 4),
                ("TN", 4),
                ("WM", 32),
                ("WN", 32),
                ("WNITER", 1),
            ],
        );
        let (h, src, l) = export(&c, Op::Gemm, "256x256x16384");
        let bytes = 4 * 16 * (8 * 64 * 64 + 1);
        assert_eq!(l.workspace_bytes, Some(bytes));
        let helper = "autotune_gemm_256x256x16384";
        assert!(h.contains(&format!(
            "static const size_t {helper}_workspace_bytes = {bytes}ull;"
        )));
        assert!(h.contains(&format!(
            "static inline cudaError_t {helper}(const float* A, const float* B, float* C, void* workspace, cudaStream_t stream)"
        )));
        let k = &src.kernel_name;
        assert!(
            h.contains(">>>(M, N, K, A, B, C, static_cast<float*>(workspace));"),
            "{h}"
        );
        assert!(h.contains(&format!("autotune_{k}::{k}<<<")));
        // Usage, size and the zeroing rule are documented; nullptr allocates, zeroes, frees.
        assert!(h.contains(
            "Usage:    cudaError_t err = autotune_gemm_256x256x16384(A, B, C, workspace, stream);"
        ));
        assert!(
            h.contains(&format!(
                "workspace: {bytes} bytes of device memory ({helper}_workspace_bytes)"
            )),
            "{h}"
        );
        assert!(h.contains("zeroed (cudaMemsetAsync) before its first use"));
        assert!(h.contains(&format!("workspace {bytes} B")));
        assert!(h.contains("Results:  deterministic"));
        assert!(h.contains(&format!(
            "err = cudaMallocAsync(&owned, {helper}_workspace_bytes, stream);"
        )));
        assert!(h.contains(&format!(
            "err = cudaMemsetAsync(workspace, 0, {helper}_workspace_bytes, stream);"
        )));
        assert!(h.contains("cudaFreeAsync(owned, stream)"));
        // Zeroed once: only the helper's own buffer is zeroed, not the caller's every call;
        // and C is not zeroed (no atomics).
        assert_eq!(h.matches("cudaMemsetAsync(").count(), 1, "{h}");
        let launch = h.find(&format!("autotune_{k}::{k}<<<")).unwrap();
        assert!(h.find("cudaMallocAsync").unwrap() < launch);
        assert!(h.rfind("cudaFreeAsync(owned").unwrap() > launch);

        // The atomic split-K family: no workspace, C zeroed, not deterministic.
        let c = choice(
            "gemm_warptile_splitk",
            &c.params
                .iter()
                .map(|(k, v)| (k.as_str(), *v))
                .collect::<Vec<_>>(),
        );
        let (h, _, l) = export(&c, Op::Gemm, "256x256x16384");
        assert_eq!(l.workspace_bytes, None);
        assert!(!h.contains("workspace"), "{h}");
        assert!(h.contains("Results:  not deterministic"));
        assert!(h.contains("cudaMemsetAsync(C, 0,"));
    }

    #[test]
    fn line_directive_restores_the_header_numbering() {
        let c = default_choice(Op::Gemv);
        let (h, _, _) = export(&c, Op::Gemv, "4096x4096");
        let lines: Vec<&str> = h.lines().collect();
        let i = lines.iter().rposition(|l| l.starts_with("#line ")).unwrap();
        // `#line N` numbers the line after it N; lines are 1-based.
        assert_eq!(lines[i], format!("#line {}", i + 2));
    }

    #[test]
    fn macros_are_collected_once_in_order() {
        let code = "#define A 1\n  #  define B(x) x\n#ifndef A\n#define A 2\n#endif\n#defineX 3\n#include <x>\n";
        assert_eq!(defined_macros(code), ["A", "B"]);
    }

    #[test]
    fn mismatches_and_unknown_formats_are_errors() {
        let catalog = Catalog::builtin().unwrap();
        let limits = Limits::for_arch(90).unwrap();
        let gemv = catalog.get("gemv_warp_row").unwrap();
        let c = default_choice(Op::Gemm);
        let shape = Shape::parse(Op::Gemm, "64x64x64").unwrap();
        let e = cuda_header(&c, gemv, Op::Gemm, shape, &limits, "g").unwrap_err();
        assert!(matches!(e, ExportError::FamilyMismatch { .. }), "{e}");
        let tile = catalog.get(&c.family).unwrap();
        let e = cuda_header(&c, tile, Op::Gemv, shape, &limits, "g").unwrap_err();
        assert!(matches!(e, ExportError::OpMismatch { .. }), "{e}");
        let e = "ptx".parse::<Format>().unwrap_err().to_string();
        assert!(e.contains("'ptx'") && e.contains("cuda-header"), "{e}");
        assert_eq!("cuda-header".parse::<Format>().unwrap(), Format::CudaHeader);
        for f in Format::ACCEPTED {
            let parsed = f.parse::<Format>().unwrap();
            assert_eq!(parsed.to_string(), *f);
            assert_eq!(
                parsed.is_database_wide(),
                !matches!(*f, "cuda-header" | "cubin")
            );
        }
    }
}
