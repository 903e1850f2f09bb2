//! The CPU emulator of CUDA that tests/emulate.rs runs every family in: a kernel instantiated as
//! the tuner instantiates it is made C++ (dynamic shared memory, `__shared__` arrays and inline
//! PTX rewritten), compiled with g++ against `prelude.h` (the CUDA a kernel sees) and linked
//! with `runtime.cpp` (the scheduler of blocks and threads; compiled once) under
//! AddressSanitizer and UBSan, run on a problem with its blocks and threads in a seeded
//! shuffled order, and judged like a GPU run.
//!
//! A run fails in one of four ways ([`Failure`]): the kernel does not build; a check stops it
//! (the emulator's own: shuffle masks, deadlocks, misaligned cp.async and red.v4;
//! AddressSanitizer's: an access outside a buffer; UBSan's: a misaligned float4 or float2; the
//! watchdog's: a hang); it dies without a check's report; or its output is wrong. Each message
//! names the kernel and the seed of the order (`AUTOTUNE_EMU_SEED` sets it; 0: ascending).

use autotune::family::catalog::Family;
use autotune::family::space::{Config, Interface, Limits, WorkspaceZero};
use autotune::measure::verify;
use autotune::problem::{Op, Shape};
use std::collections::hash_map::DefaultHasher;
use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// What each kernel includes: the CUDA it sees.
fn prelude() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/emu/prelude.h")
}

/// What each kernel is linked with: the scheduler, warp-level calls, cp.async, the launch.
fn runtime() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/emu/runtime.cpp")
}

/// Where compiled kernels and the runtime are kept between runs (named by a hash of what they
/// are built from).
fn cache_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("emu");
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn have_gxx() -> bool {
    Command::new("g++")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// For a test that runs the emulator (`#[ignore]`d, so run only when asked for): fails it
/// without g++.
pub fn require_gxx() {
    if !have_gxx() {
        panic!("needs g++: the CUDA emulator compiles kernels as C++20, and g++ was not found");
    }
}

/// The operands of inline PTX: the expression inside each `"c"(expr)` of the output and input
/// sections, in order.
fn asm_operands(sections: &[&str]) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for s in sections {
        let mut rest = s.trim();
        while !rest.is_empty() {
            // "constraint"(expr)
            let open = rest
                .find('(')
                .ok_or_else(|| format!("operand without '(': {rest}"))?;
            let mut depth = 0;
            let mut close = None;
            for (i, ch) in rest[open..].char_indices() {
                match ch {
                    '(' => depth += 1,
                    ')' => {
                        depth -= 1;
                        if depth == 0 {
                            close = Some(open + i);
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let close = close.ok_or_else(|| format!("unbalanced operand: {rest}"))?;
            out.push(rest[open + 1..close].to_string());
            rest = rest[close + 1..]
                .trim_start()
                .trim_start_matches(',')
                .trim();
        }
    }
    Ok(out)
}

/// Splits `text` at top-level `:` (outside strings and parentheses).
fn top_level_colons(text: &str) -> Vec<&str> {
    let (mut depth, mut in_str, mut start) = (0i32, false, 0);
    let mut parts = Vec::new();
    for (i, ch) in text.char_indices() {
        match ch {
            '"' => in_str = !in_str,
            '(' if !in_str => depth += 1,
            ')' if !in_str => depth -= 1,
            ':' if !in_str && depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// One `asm volatile(...)` statement as a call of the prelude's emulation of that PTX.
fn emulate_asm(body: &str) -> Result<String, String> {
    let parts = top_level_colons(body);
    let ptx: String = parts[0]
        .split('"')
        .skip(1)
        .step_by(2)
        .collect::<Vec<_>>()
        .concat();
    let ptx = ptx
        .replace("\\n", "")
        .trim()
        .trim_end_matches(';')
        .to_string();
    let ops = asm_operands(&parts[1..parts.len().min(3)])?;
    let op = |i: usize| {
        ops.get(i)
            .cloned()
            .ok_or_else(|| format!("asm \"{ptx}\" lacks operand {i}"))
    };
    if let Some(rest) = ptx
        .strip_prefix("cp.async.ca.shared.global ")
        .or_else(|| ptx.strip_prefix("cp.async.cg.shared.global "))
    {
        // [%0], [%1], SIZE[, %2]
        let fields: Vec<&str> = rest.split(',').map(str::trim).collect();
        let size: i32 = fields
            .get(2)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("cp.async without a literal size: {ptx}"))?;
        let src_size = if fields.len() > 3 {
            op(2)?
        } else {
            size.to_string()
        };
        return Ok(format!(
            "emu_cp_async({}, {}, {size}, {src_size});",
            op(0)?,
            op(1)?
        ));
    }
    // An empty asm (include/split_tiles.cuh's `opaque`) only hides a value from the compiler's
    // optimizer: nothing to run.
    if ptx.is_empty() {
        return Ok(String::new());
    }
    // Instructions without operands, and those whose one operand is a count of groups.
    const PLAIN: [(&str, &str); 5] = [
        ("cp.async.commit_group", "emu_cp_commit();"),
        ("cp.async.wait_all", "emu_cp_wait(0);"),
        ("wgmma.fence.sync.aligned", "emu_wgmma_fence();"),
        ("wgmma.commit_group.sync.aligned", "emu_wgmma_commit();"),
        ("fence.proxy.async.shared::cta", "emu_fence_proxy_async();"),
    ];
    const COUNTED: [(&str, &str); 2] = [
        ("cp.async.wait_group", "emu_cp_wait"),
        ("wgmma.wait_group.sync.aligned", "emu_wgmma_wait"),
    ];
    if let Some((_, call)) = PLAIN.iter().find(|(p, _)| ptx == *p) {
        return Ok((*call).into());
    }
    if let Some((_, call)) = COUNTED.iter().find(|(p, _)| ptx.starts_with(p)) {
        return Ok(format!("{call}({});", op(0)?));
    }
    if ptx.starts_with("cvt.rna.tf32.f32 ") {
        return Ok(format!("({}) = emu_cvt_rna_tf32({});", op(0)?, op(1)?));
    }
    if let Some(at) = ptx.find("wgmma.mma_async.sync.aligned.m64n") {
        // include/wgmma_tf32.cuh: the accumulators d (one macro-built operand list per 32 of
        // them, whose first names the array), then the descriptors of A and B and scale-d.
        let rest = &ptx[at + "wgmma.mma_async.sync.aligned.m64n".len()..];
        let n: u32 = rest
            .split_once("k8.f32.tf32.tf32")
            .and_then(|(n, _)| n.parse().ok())
            .ok_or_else(|| format!("wgmma of a shape or type the emulator does not know: {ptx}"))?;
        if ops.len() < 4 {
            return Err(format!(
                "wgmma without its accumulators, descriptors and scale: {ptx}"
            ));
        }
        let d = op(0)?;
        let d = d.split(',').next().unwrap_or_default().trim().to_string();
        // A from registers: a second brace list, the four fragment registers (by address, so
        // that the emulator can tell when they change before the wait).
        if rest.contains("}, {") {
            if ops.len() < 7 {
                return Err(format!(
                    "wgmma without its accumulators, A registers, descriptor and scale: {ptx}"
                ));
            }
            let last = ops.len() - 6;
            let a = (last..last + 4)
                .map(|i| op(i).map(|o| format!("&({o})")))
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(format!(
                "emu_wgmma_tf32_rs({n}, {}, {}, {d}, {});",
                a.join(", "),
                op(last + 4)?,
                op(last + 5)?
            ));
        }
        let last = ops.len() - 3;
        return Ok(format!(
            "emu_wgmma_tf32({n}, {}, {}, {d}, {});",
            op(last)?,
            op(last + 1)?,
            op(last + 2)?
        ));
    }
    if ptx.starts_with("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 ") {
        // D (= C, the same registers: "+f") += A B over the warp: d0..d3, a0..a3, b0, b1.
        let ops = (0..10).map(op).collect::<Result<Vec<_>, _>>()?;
        return Ok(format!("emu_mma_tf32({});", ops.join(", ")));
    }
    if let Some(rest) = ptx.strip_prefix("ld.global.nc.L1::no_allocate.L2::256B.") {
        // The hinted loads of B (small_m_rows.cuh): a cached read, alignment checked.
        let lanes = match rest.split_whitespace().next() {
            Some("f32") => 1,
            Some("v2.f32") => 2,
            Some("v4.f32") => 4,
            _ => return Err(format!("hinted load of an unknown type: {ptx}")),
        };
        let outs = (0..lanes)
            .map(|i| op(i).map(|o| format!("&({o})")))
            .collect::<Result<Vec<_>, _>>()?;
        return Ok(format!(
            "emu_ld_nc({}, {}, {lanes});",
            op(lanes)?,
            outs.join(", ")
        ));
    }
    if ptx.starts_with("red.global.add.v4.f32") {
        return Ok(format!(
            "emu_red_add_v4({}, {}, {}, {}, {});",
            op(0)?,
            op(1)?,
            op(2)?,
            op(3)?,
            op(4)?
        ));
    }
    Err(format!(
        "inline PTX the emulator does not know: \"{ptx}\" (add it to tests/emu/prelude.h and emulate_asm)"
    ))
}

/// The kernel source made C++: dynamic shared memory declarations and inline PTX rewritten.
fn to_cpp(code: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = code;
    while let Some(at) = rest.find("asm volatile(") {
        out.push_str(&rest[..at]);
        let body_start = at + "asm volatile(".len();
        let mut depth = 1;
        let mut in_str = false;
        let mut end = None;
        for (i, ch) in rest[body_start..].char_indices() {
            match ch {
                '"' => in_str = !in_str,
                '(' if !in_str => depth += 1,
                ')' if !in_str => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(body_start + i);
                        break;
                    }
                }
                _ => {}
            }
        }
        let end = end.ok_or("unbalanced asm statement")?;
        out.push_str(&emulate_asm(&rest[body_start..end])?);
        // Skip the statement's own `;`.
        rest = rest[end + 1..].trim_start_matches(';');
    }
    out.push_str(rest);
    // `extern __shared__ [__align__(n)] float name[];` -> the dynamic arena; `__shared__ ...
    // name[...];` registered for poisoning.
    let mut lines = Vec::new();
    for line in out.lines() {
        let t = line.trim();
        let code = t.split("//").next().unwrap_or_default();
        if t.starts_with("extern __shared__") && t.ends_with("[];") {
            let decl = t.trim_end_matches("[];");
            let name = decl.rsplit(' ').next().unwrap_or_default();
            let ty = if decl.contains(" float ") {
                "float"
            } else {
                return Err(format!("dynamic shared memory of an unknown type: {t}"));
            };
            lines.push(format!(
                "{ty}* const {name} = static_cast<{ty}*>(emu_dynamic_smem());"
            ));
        } else if code.starts_with("__shared__") {
            lines.push(format!("{line} {}", register_shared(code.trim())?));
        } else if code.contains("__shared__") {
            return Err(format!(
                "a __shared__ declaration the emulator cannot read (one a line, at its start): {t}"
            ));
        } else {
            lines.push(line.to_string());
        }
    }
    Ok(lines.join("\n"))
}

/// The registration of a static shared array for poisoning when each block starts, from its
/// declaration `__shared__ [__align__(n)] T name[dims];` (a lambda marks the site: the prelude
/// poisons each array the first time any thread passes it, then at every block's start).
fn register_shared(decl: &str) -> Result<String, String> {
    let cannot = || format!("a __shared__ declaration the emulator cannot read: {decl}");
    let body = decl.strip_suffix(';').ok_or_else(cannot)?;
    let name = body
        .split('[')
        .next()
        .and_then(|head| head.split_whitespace().last())
        .ok_or_else(cannot)?;
    let ident = |n: &str| {
        n.chars().next().is_some_and(|c| !c.is_ascii_digit())
            && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    if !ident(name) || name == "__shared__" || body.contains([',', '=']) {
        return Err(cannot());
    }
    Ok(format!("emu_shared({name}, [] {{}});"))
}

/// The prelude's `emu_kernel` (the kernel's name, for its messages) and `emu_call` (the kernel
/// called with its family's signature).
fn entry(op: Op, interface: Interface, kernel: &str, workspace: bool) -> String {
    let mut args: Vec<&str> = match op {
        Op::Gemm => vec!["a.M", "a.N", "a.K", "a.A", "a.B", "a.C"],
        Op::Gemv => vec!["a.M", "a.K", "a.A", "a.B", "a.C"],
    };
    if interface == Interface::Full {
        match op {
            Op::Gemm => args.extend(["a.lda", "a.ldb", "a.ldc"]),
            Op::Gemv => args.push("a.lda"),
        }
        args.extend(["a.sa", "a.sb", "a.sc", "a.batch", "a.alpha", "a.beta"]);
    }
    if workspace {
        args.push("a.workspace");
    }
    format!(
        "\nconst char* const emu_kernel = \"{kernel}\";\nvoid emu_call(const EmuArgs& a) {{ {kernel}({}); }}\n",
        args.join(", ")
    )
}

/// What this process spent in g++ and in emulated runs, summed over its jobs (which run in
/// parallel): for the tests' summary lines.
#[derive(Default)]
pub struct Tally {
    compiles: Vec<f64>,
    runs: Vec<(f64, String)>,
}

pub static TALLY: Mutex<Tally> = Mutex::new(Tally {
    compiles: Vec::new(),
    runs: Vec::new(),
});

fn tally() -> std::sync::MutexGuard<'static, Tally> {
    TALLY.lock().unwrap_or_else(|p| p.into_inner())
}

impl Tally {
    /// `compiled N kernels (X s of g++), ran M (Y s); slowest: ...`.
    pub fn summary(&self) -> String {
        let mut runs = self.runs.clone();
        runs.sort_by(|a, b| b.0.total_cmp(&a.0));
        let slowest: Vec<String> = runs
            .iter()
            .take(5)
            .map(|(t, what)| format!("{what} {t:.1} s"))
            .collect();
        format!(
            "compiled {} kernels ({:.0} s of g++), ran {} ({:.0} s); slowest runs: {}",
            self.compiles.len(),
            self.compiles.iter().sum::<f64>(),
            runs.len(),
            runs.iter().map(|r| r.0).sum::<f64>(),
            slowest.join(", ")
        )
    }
}

/// g++'s flags for the runtime and every kernel: AddressSanitizer and UBSan, errors fatal.
const GXX_FLAGS: [&str; 5] = [
    "-std=c++20",
    "-O1",
    "-w",
    "-fsanitize=address,undefined",
    "-fno-sanitize-recover=all",
];

/// A hex hash of `what`, naming a compiled file.
fn key_of(what: impl Hash) -> String {
    let mut h = DefaultHasher::new();
    what.hash(&mut h);
    format!("{:016x}", h.finish())
}

/// Compiles `cpp` (cached) and links it with the emulator's runtime (compiled once), returning
/// the executable. A change of the runtime alone relinks the kernels, not recompiles them.
fn compile(cpp: &str, arch: u32) -> Result<PathBuf, String> {
    let read = |p: PathBuf| fs::read_to_string(p).map_err(|e| e.to_string());
    let prelude_text = read(prelude())?;
    let runtime_key = key_of((&prelude_text, read(runtime())?, GXX_FLAGS));
    let runtime_object = cached(&format!("runtime{runtime_key}.o"), |out| {
        gxx(Command::new("g++").arg("-c").arg(runtime()), out)
    })?;
    let kernel = format!("k{}", key_of((cpp, &prelude_text, GXX_FLAGS, arch)));
    let object = cached(&format!("{kernel}.o"), |out| {
        let src = out.with_extension("cpp");
        fs::write(&src, cpp).map_err(|e| e.to_string())?;
        let start = std::time::Instant::now();
        gxx(
            Command::new("g++")
                .arg(format!("-D__CUDA_ARCH__={arch}"))
                // sm_90 is emulated with its arch-specific features (sm_90a: wgmma).
                .args((arch == 900).then_some("-D__CUDA_ARCH_FEAT_SM90_ALL"))
                .arg("-include")
                .arg(prelude())
                .arg("-c")
                .arg(&src),
            out,
        )?;
        tally().compiles.push(start.elapsed().as_secs_f64());
        Ok(())
    })?;
    cached(&format!("{kernel}-{runtime_key}"), |out| {
        gxx(Command::new("g++").arg(&object).arg(&runtime_object), out)
    })
}

/// Runs g++ (with [`GXX_FLAGS`]) writing `out`: its first errors when it fails.
fn gxx(cmd: &mut Command, out: &Path) -> Result<(), String> {
    let run = cmd
        .args(GXX_FLAGS)
        .arg("-o")
        .arg(out)
        .output()
        .map_err(|e| format!("running g++: {e}"))?;
    if !run.status.success() {
        let log = String::from_utf8_lossy(&run.stderr);
        let head: String = log.lines().take(30).collect::<Vec<_>>().join("\n");
        return Err(format!("g++ failed on {}:\n{head}", out.display()));
    }
    Ok(())
}

/// The file `name` of the cache, built by `build` (into a file of its own, then renamed: other
/// test processes may build the same) unless it exists. Jobs of this process that need the
/// same file wait for one build.
fn cached(name: &str, build: impl FnOnce(&Path) -> Result<(), String>) -> Result<PathBuf, String> {
    type Slot = Arc<OnceLock<Result<PathBuf, String>>>;
    static BUILT: Mutex<BTreeMap<String, Slot>> = Mutex::new(BTreeMap::new());
    let slot = BUILT
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .entry(name.to_string())
        .or_default()
        .clone();
    slot.get_or_init(|| {
        let dir = cache_dir();
        let path = dir.join(name);
        if !path.exists() {
            let tmp = dir.join(format!("{name}.{}.tmp", std::process::id()));
            build(&tmp)?;
            fs::rename(&tmp, &path).map_err(|e| e.to_string())?;
        }
        Ok(path)
    })
    .clone()
}

/// The whole number in the environment variable `name`, else `default`; a value that is not
/// one stops the test (a typo must not run another seed or limit than the one asked for).
fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?}: not a whole number")),
        Err(_) => default,
    }
}

/// How long one emulated launch may run: `AUTOTUNE_EMU_WATCHDOG` seconds, default 600 (the
/// slowest kernel of the edge shapes takes well under a minute under AddressSanitizer).
fn watchdog() -> Duration {
    Duration::from_secs(env_number("AUTOTUNE_EMU_WATCHDOG", 600))
}

/// The seed of the blocks' and threads' order when `AUTOTUNE_EMU_SEED` is not set.
pub const DEFAULT_SEED: u64 = 1;

/// The seed of the blocks' and threads' order: `AUTOTUNE_EMU_SEED` (0: ascending order), else
/// [`DEFAULT_SEED`].
fn seed() -> u64 {
    env_number("AUTOTUNE_EMU_SEED", DEFAULT_SEED)
}

/// How a kernel is emulated: the `__CUDA_ARCH__` it is compiled for, the watchdog's limit on
/// its run and the seed of its blocks' and threads' order.
#[derive(Debug, Clone, Copy)]
pub struct Emulation {
    pub arch: u32,
    pub watchdog: Duration,
    pub seed: u64,
}

impl Emulation {
    /// `arch` with the watchdog and seed the environment sets.
    pub fn new(arch: u32) -> Self {
        Emulation {
            arch,
            watchdog: watchdog(),
            seed: seed(),
        }
    }
}

/// Why a kernel failed in the emulator. Each message names the kernel; those of a run name the
/// seed of its blocks' and threads' order too.
#[derive(Debug, Clone)]
pub enum Failure {
    /// No program to run: the config has no launch, the source holds what the emulator cannot
    /// take, or g++ rejects it.
    Build(String),
    /// A check stopped the run: the emulator's (shuffle masks, misaligned cp.async and
    /// red.v4), AddressSanitizer's (an access outside a buffer), UBSan's (a misaligned float4
    /// or float2) or the watchdog's (a hang).
    Check(String),
    /// The run died without a check's report.
    Crash(String),
    /// The run ended, and its output is wrong.
    Validation(String),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Build(e) => write!(f, "does not build: {e}"),
            Failure::Check(e) => write!(f, "stopped by a check: {e}"),
            Failure::Crash(e) => write!(f, "crashed without a check's report: {e}"),
            Failure::Validation(e) => write!(f, "wrong output: {e}"),
        }
    }
}

/// The report lines that say which check stopped a run: the emulator's, AddressSanitizer's,
/// UBSan's.
const CHECK_REPORTS: [&str; 3] = ["emulator: ", "AddressSanitizer", "runtime error: "];

/// What must stop a mutant: its wrong output, or a check whose report holds the text.
#[derive(Debug, Clone, Copy)]
pub enum Catch {
    Validation,
    Check(&'static str),
}

/// Whether `result`, a mutant's run, is stopped as `want` says: the report, or why the mutant
/// is not caught (it passed, does not compile, crashed, or was stopped by something else).
pub fn caught(result: Result<(), Failure>, want: Catch) -> Result<String, String> {
    match (result, want) {
        (Ok(()), _) => Err("passed the emulator".into()),
        (Err(Failure::Build(e)), _) => Err(format!("does not compile: fix the mutant\n{e}")),
        (Err(Failure::Validation(e)), Catch::Validation) => Ok(e),
        (Err(Failure::Check(e)), Catch::Check(what)) if e.contains(what) => Ok(e),
        (Err(other), want) => Err(format!("not caught as wanted ({want:?}): {other}")),
    }
}

/// Runs `family`'s `config` on `shape` in the emulator (for `__CUDA_ARCH__` `arch`, with the
/// environment's watchdog and seed) and judges the output.
pub fn check(family: &Family, config: &Config, shape: Shape, arch: u32) -> Result<(), Failure> {
    check_with(family, config, shape, Emulation::new(arch))
}

/// [`check`] as `emu` says.
pub fn check_with(
    family: &Family,
    config: &Config,
    shape: Shape,
    emu: Emulation,
) -> Result<(), Failure> {
    let name = family.kernel_name_for(config, shape);
    let seed = emu.seed;
    let ran = |e: String| format!("{name} (order seed {seed}): {e}");
    match run(family, config, shape, emu) {
        Ok(output) => judge(family, shape, &output).map_err(|e| Failure::Validation(ran(e))),
        Err(Failure::Build(e)) => Err(Failure::Build(format!("{name}: {e}"))),
        Err(Failure::Check(e)) => Err(Failure::Check(ran(e))),
        Err(Failure::Crash(e)) => Err(Failure::Crash(ran(e))),
        Err(Failure::Validation(e)) => Err(Failure::Validation(ran(e))),
    }
}

/// Runs `cmd` to its end, or kills it after `limit`: a thread that never returns nor waits (an
/// endless loop, a spin on a flag no thread or block sets) hangs the emulated block, which must
/// fail the run (with the kernel's name, added by the caller) rather than hang CI. (A deadlock
/// at barriers or warp-level calls the emulator reports at once.)
pub fn run_watched(cmd: &mut Command, limit: Duration) -> Result<std::process::Output, String> {
    use std::process::Stdio;
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    // Drained on threads so that a child writing much output never blocks on a full pipe.
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let err = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "the emulated kernel did not finish within the watchdog's {} s (an endless loop, or a spin on what no thread sets?)",
                limit.as_secs()
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Ok(std::process::Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    })
}

/// What a run read and wrote: the operands, C before the launches, and C after each launch.
struct Ran {
    a: Vec<f32>,
    b: Vec<f32>,
    before: Vec<f32>,
    outputs: Vec<f32>,
    /// Whether the kernel was launched twice on one workspace zeroed once.
    once: bool,
}

/// The seed of the operands and of C's values before the launch.
const DATA_SEED: u64 = 7;

/// Builds `family`'s `config` for `shape` and runs it in the emulator on random operands.
fn run(family: &Family, config: &Config, shape: Shape, emu: Emulation) -> Result<Ran, Failure> {
    run_planted(family, config, shape, emu, &|_, _| {})
}

/// Operands changed before a run: the stored A and B (each batch's matrices, strided).
pub type Plant<'a> = &'a dyn Fn(&mut [f32], &mut [f32]);

/// [`run`] on random operands that `plant` changes first.
fn run_planted(
    family: &Family,
    config: &Config,
    shape: Shape,
    emu: Emulation,
    plant: Plant,
) -> Result<Ran, Failure> {
    let op = family.space.op;
    let limits = Limits::for_arch(90).unwrap();
    let kernel = family
        .kernel(config, shape, &limits)
        .map_err(|e| Failure::Build(format!("no launch: {e}")))?;
    let launch = kernel.launch;
    let cpp = format!(
        "{}{}",
        to_cpp(&kernel.source.code).map_err(Failure::Build)?,
        entry(
            op,
            launch.interface,
            &kernel.source.kernel_name,
            launch.workspace_bytes.is_some()
        )
    );
    let exe = compile(&cpp, emu.arch).map_err(Failure::Build)?;
    let call = shape.tuning_call(op);
    let [la, lb, lc] = shape.lens(op).map(|l| l as usize);
    let mut a = verify::random_values(la, DATA_SEED, 0);
    let mut b = verify::random_values(lb, DATA_SEED, 1);
    plant(&mut a, &mut b);
    let before = verify::output_before(op, shape, &call, DATA_SEED, lc);
    let once = launch.workspace_bytes.is_some() && launch.workspace_zero == WorkspaceZero::Once;
    let launches = if once { 2 } else { 1 };
    let s = call.strides;
    let header: [i64; 26] = [
        shape.m as i64,
        shape.n as i64,
        shape.k as i64,
        s.lda as i64,
        s.ldb as i64,
        s.ldc as i64,
        s.stride_a as i64,
        s.stride_b as i64,
        s.stride_c as i64,
        call.batch as i64,
        call.alpha.to_bits() as i64,
        call.beta.to_bits() as i64,
        launch.grid.0 as i64,
        launch.grid.1 as i64,
        launch.grid.2 as i64,
        launch.block.0 as i64,
        launch.block.1 as i64,
        launch.block.2 as i64,
        launch.dynamic_shared_bytes as i64,
        launch.workspace_bytes.map_or(-1, |w| w as i64),
        launch.zero_output as i64,
        match launch.workspace_zero {
            WorkspaceZero::Never => 0,
            WorkspaceZero::Once => 1,
            WorkspaceZero::EveryLaunch => 2,
        },
        launches as i64,
        la as i64,
        lb as i64,
        lc as i64,
    ];
    let mut input: Vec<u8> = header.iter().flat_map(|v| v.to_le_bytes()).collect();
    for v in [&a, &b, &before] {
        input.extend(v.iter().flat_map(|x| x.to_le_bytes()));
    }
    let io = |e: std::io::Error| Failure::Crash(format!("emulator files: {e}"));
    let dir = tempfile::tempdir().map_err(io)?;
    let (inp, outp) = (dir.path().join("in"), dir.path().join("out"));
    fs::write(&inp, input).map_err(io)?;
    let start = std::time::Instant::now();
    let run = run_watched(
        Command::new(&exe)
            .arg(&inp)
            .arg(&outp)
            .env("ASAN_OPTIONS", "detect_leaks=0")
            .env("EMU_SEED", emu.seed.to_string()),
        emu.watchdog,
    )
    .map_err(Failure::Check)?;
    tally().runs.push((
        start.elapsed().as_secs_f64(),
        format!("{} on {}", kernel.source.kernel_name, shape.label(op)),
    ));
    if !run.status.success() {
        let log = String::from_utf8_lossy(&run.stderr);
        let head: String = log.lines().take(12).collect::<Vec<_>>().join("\n");
        let e = format!("the emulated kernel failed ({}):\n{head}", run.status);
        return Err(if CHECK_REPORTS.iter().any(|r| log.contains(r)) {
            Failure::Check(e)
        } else {
            Failure::Crash(e)
        });
    }
    let bytes = fs::read(&outp).map_err(io)?;
    let outputs: Vec<f32> = bytes[..launches * lc * 4]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    Ok(Ran {
        a,
        b,
        before,
        outputs,
        once,
    })
}

/// Runs `family`'s `config` on `shape` with operands `plant` changed (inf, NaN, values near the
/// range's ends) and judges it as IEEE FP32 arithmetic would come out: NaN where the float64
/// reference is NaN, the same infinity where it is infinite, and elsewhere within the
/// tolerance of the finite bound.
pub fn check_special(
    family: &Family,
    config: &Config,
    shape: Shape,
    emu: Emulation,
    plant: Plant,
) -> Result<(), String> {
    let name = family.kernel_name_for(config, shape);
    let ran =
        run_planted(family, config, shape, emu, plant).map_err(|e| format!("{name}: {e:?}"))?;
    let op = family.space.op;
    let call = shape.tuning_call(op);
    let (reference, bound) =
        verify::general_reference(op, shape, &call, &ran.a, &ran.b, &ran.before);
    let tolerance = verify::tolerance(shape.k);
    let lc = ran.before.len();
    for (l, out) in ran.outputs.chunks_exact(lc).enumerate() {
        let (logical, _) = verify::logical_output(op, shape, &call, out, &ran.before);
        for (i, (&o, (&r, &b))) in logical.iter().zip(reference.iter().zip(&bound)).enumerate() {
            let ok = crate::common::ieee_matches(o, r, b, tolerance);
            if !ok {
                return Err(format!(
                    "{name}: launch {l}: element {i} = {o}, expected {r} (bound {b})"
                ));
            }
        }
    }
    Ok(())
}

/// Judges a run's outputs like a GPU run's: against the float64 reference within the
/// tolerance, the padding between C's rows untouched, and two launches on a workspace zeroed
/// once giving the same bits.
fn judge(family: &Family, shape: Shape, ran: &Ran) -> Result<(), String> {
    let op = family.space.op;
    let call = shape.tuning_call(op);
    let lc = ran.before.len();
    let (reference, bound) =
        verify::general_reference(op, shape, &call, &ran.a, &ran.b, &ran.before);
    let k = if op == Op::Gemv && shape.form.layout.trans_a() {
        shape.m
    } else {
        shape.k
    };
    let cols = shape.stored(op)[2].1 as usize;
    for (i, out) in ran.outputs.chunks_exact(lc).enumerate() {
        let (logical, padding_kept) = verify::logical_output(op, shape, &call, out, &ran.before);
        if !padding_kept {
            return Err(format!(
                "launch {i}: wrote into the padding between C's rows"
            ));
        }
        verify::compare(&logical, &reference, &bound, cols, verify::tolerance(k))
            .map_err(|e| format!("launch {i}: {e}"))?;
    }
    if ran.once {
        // The kernel resets what it counts with (the partials are scratch): a second launch on
        // the same workspace must pass and give the same bits.
        let (first, second) = ran.outputs.split_at(lc);
        if first
            .iter()
            .zip(second)
            .any(|(x, y)| x.to_bits() != y.to_bits())
        {
            return Err("two launches on the same workspace differ".into());
        }
    }
    Ok(())
}
