//! Every kernel family validated without a GPU: each kernel, instantiated as the tuner
//! instantiates it, is compiled as C++ against a CPU emulation of the CUDA it uses
//! (`tests/emu/prelude.h`: a thread per CUDA thread, barriers, shuffles, queued cp.async
//! copies) under AddressSanitizer and UBSan, run on the op's edge shapes (and, for the families
//! of the full interface, on every layout, padded leading dimensions, beta and batches), and
//! its output judged like a GPU run's: against the float64 reference within the tolerance,
//! the padding between C's rows untouched, and a kernel whose workspace is zeroed `once`
//! launched twice on it, both outputs passing and bit-identical. An access outside a buffer, a misaligned float4 or a 16-byte
//! copy from a misaligned address fails the run.
//!
//! This checks indexing, edges and block-level protocols (split-K and stream-K fix-ups) on
//! every machine CI runs on; it cannot see what only a GPU shows (timing, the memory model of
//! concurrent blocks, the hardware's own checks), which the GPU tests cover.
//!
//! A launch that runs past the watchdog (`AUTOTUNE_EMU_WATCHDOG` seconds, default 600: a barrier
//! or shuffle some threads never reach) is killed and fails with the kernel's name.
//!
//! Needs g++ (C++20); without it the test prints `skipped: ...`, and fails instead under
//! `AUTOTUNE_REQUIRE_EMULATOR=1` (set in CI). `AUTOTUNE_EMU_FAMILY=name` runs one family.

mod common;

use autotune::family::catalog::{Catalog, Family};
use autotune::family::space::{Config, Interface, Limits, WorkspaceZero};
use autotune::measure::verify;
use autotune::problem::{Form, Layout, Op, Shape};
use autotune::tuning::sweep;
use rayon::prelude::*;
use std::collections::hash_map::DefaultHasher;
use std::collections::BTreeMap;
use std::fs;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};

/// `1`: a missing g++ fails the test instead of skipping it.
const REQUIRE_EMULATOR: &str = "AUTOTUNE_REQUIRE_EMULATOR";

fn prelude() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/emu/prelude.h")
}

/// Where compiled kernels are kept between runs (keyed by source and prelude).
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

/// Whether the emulator can run here; without g++ the test is skipped (a failure under
/// `AUTOTUNE_REQUIRE_EMULATOR=1`).
fn emulator_ready() -> bool {
    let ready = have_gxx();
    if !ready {
        common::skip(
            REQUIRE_EMULATOR,
            "g++ not found: the CUDA emulator needs a C++20 compiler",
        );
    }
    ready
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
    if ptx == "cp.async.commit_group" {
        return Ok("emu_cp_commit();".into());
    }
    if ptx.starts_with("cp.async.wait_group") {
        return Ok(format!("emu_cp_wait({});", op(0)?));
    }
    if ptx == "cp.async.wait_all" {
        return Ok("emu_cp_wait(0);".into());
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
    // `extern __shared__ [__align__(n)] float name[];` -> the dynamic arena.
    let mut lines = Vec::new();
    for line in out.lines() {
        let t = line.trim();
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
        } else {
            lines.push(line.to_string());
        }
    }
    Ok(lines.join("\n"))
}

/// The prelude's `emu_call`: the kernel called with its family's signature.
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
        "\nvoid emu_call(const EmuArgs& a) {{ {kernel}({}); }}\n",
        args.join(", ")
    )
}

/// Compiles `cpp` (cached), returning the executable. Jobs of this process that need the same
/// kernel wait for one compilation.
fn compile(cpp: &str, arch: u32) -> Result<PathBuf, String> {
    type Slot = Arc<OnceLock<Result<PathBuf, String>>>;
    static COMPILED: Mutex<BTreeMap<String, Slot>> = Mutex::new(BTreeMap::new());
    let prelude_text = fs::read_to_string(prelude()).map_err(|e| e.to_string())?;
    let mut h = DefaultHasher::new();
    (cpp, &prelude_text, arch).hash(&mut h);
    let key = format!("{:016x}", h.finish());
    let slot = COMPILED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .entry(key.clone())
        .or_default()
        .clone();
    slot.get_or_init(|| compile_now(cpp, arch, &key)).clone()
}

fn compile_now(cpp: &str, arch: u32, key: &str) -> Result<PathBuf, String> {
    let dir = cache_dir();
    let exe = dir.join(format!("k{key}"));
    if exe.exists() {
        return Ok(exe);
    }
    let src = dir.join(format!("k{key}.cpp"));
    fs::write(&src, cpp).map_err(|e| e.to_string())?;
    // Another test process may compile the same kernel: each writes its own file, then renames.
    let tmp = dir.join(format!("k{key}.{}.tmp", std::process::id()));
    let out = Command::new("g++")
        .args([
            "-std=c++20",
            "-O1",
            "-w",
            "-pthread",
            "-fsanitize=address,undefined",
            "-fno-sanitize-recover=all",
            &format!("-D__CUDA_ARCH__={arch}"),
            "-include",
        ])
        .arg(prelude())
        .arg(&src)
        .arg("-o")
        .arg(&tmp)
        .output()
        .map_err(|e| format!("running g++: {e}"))?;
    if !out.status.success() {
        let log = String::from_utf8_lossy(&out.stderr);
        let head: String = log.lines().take(30).collect::<Vec<_>>().join("\n");
        return Err(format!("g++ failed on {}:\n{head}", src.display()));
    }
    fs::rename(&tmp, &exe).map_err(|e| e.to_string())?;
    Ok(exe)
}

/// Runs `family`'s `config` on `shape` in the emulator and judges the output.
/// How long one emulated launch may run: `AUTOTUNE_EMU_WATCHDOG` seconds, default 600 (the
/// slowest kernel of the edge shapes takes well under a minute under AddressSanitizer).
fn watchdog() -> std::time::Duration {
    let secs = std::env::var("AUTOTUNE_EMU_WATCHDOG")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(600);
    std::time::Duration::from_secs(secs)
}

/// Runs `cmd` to its end, or kills it after `limit`: a barrier that some threads never reach
/// hangs the emulated block, which must fail the run (with the kernel's name, added by the
/// caller) rather than hang CI.
fn run_watched(
    cmd: &mut Command,
    limit: std::time::Duration,
) -> Result<std::process::Output, String> {
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
                "the emulated kernel did not finish within the watchdog's {} s (a barrier or shuffle some threads never reach?)",
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

fn check(family: &Family, config: &Config, shape: Shape, arch: u32) -> Result<(), String> {
    check_within(family, config, shape, arch, watchdog())
}

/// [`check`] with the watchdog's limit given.
fn check_within(
    family: &Family,
    config: &Config,
    shape: Shape,
    arch: u32,
    limit: std::time::Duration,
) -> Result<(), String> {
    let op = family.space.op;
    let limits = Limits::for_arch(90).unwrap();
    let kernel = family
        .kernel(config, shape, &limits)
        .map_err(|e| format!("no launch: {e}"))?;
    let launch = kernel.launch;
    let cpp = format!(
        "{}{}",
        to_cpp(&kernel.source.code)?,
        entry(
            op,
            launch.interface,
            &kernel.source.kernel_name,
            launch.workspace_bytes.is_some()
        )
    );
    let exe = compile(&cpp, arch)?;
    let call = shape.tuning_call(op);
    let [la, lb, lc] = shape.lens(op).map(|l| l as usize);
    let seed = 7;
    let a = verify::random_values(la, seed, 0);
    let b = verify::random_values(lb, seed, 1);
    let before = verify::output_before(op, shape, &call, seed, lc);
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
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let (inp, outp) = (dir.path().join("in"), dir.path().join("out"));
    fs::write(&inp, input).map_err(|e| e.to_string())?;
    let run = run_watched(
        Command::new(&exe)
            .arg(&inp)
            .arg(&outp)
            .env("ASAN_OPTIONS", "detect_leaks=0"),
        limit,
    )
    .map_err(|e| format!("{}: {e}", kernel.source.kernel_name))?;
    if !run.status.success() {
        let log = String::from_utf8_lossy(&run.stderr);
        let head: String = log.lines().take(12).collect::<Vec<_>>().join("\n");
        return Err(format!(
            "the emulated kernel failed ({}):\n{head}",
            run.status
        ));
    }
    let bytes = fs::read(&outp).map_err(|e| e.to_string())?;
    let floats: Vec<f32> = bytes[..launches * lc * 4]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let (reference, bound) = verify::general_reference(op, shape, &call, &a, &b, &before);
    let k = if op == Op::Gemv && shape.form.layout.trans_a() {
        shape.m
    } else {
        shape.k
    };
    let cols = shape.stored(op)[2].1 as usize;
    for (i, out) in floats.chunks_exact(lc).enumerate() {
        let (logical, padding_kept) = verify::logical_output(op, shape, &call, out, &before);
        if !padding_kept {
            return Err(format!(
                "launch {i}: wrote into the padding between C's rows"
            ));
        }
        verify::compare(&logical, &reference, &bound, cols, verify::tolerance(k))
            .map_err(|e| format!("launch {i}: {e}"))?;
    }
    if once {
        // The kernel resets what it counts with (the partials are scratch): a second launch on
        // the same workspace must pass and give the same bits.
        let (first, second) = floats.split_at(lc);
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

/// A form of the full interface (alpha != 1 always, so the scaling is checked too).
fn full(layout: Layout, padded: bool, beta: bool, batch: u64) -> Form {
    Form {
        layout,
        padded,
        beta,
        scaled: true,
        batch,
    }
}

fn s(m: u64, n: u64, k: u64) -> Shape {
    Shape::mnk(m, n, k)
}

/// Whether `family`'s space offers a config on `shape` (for sm_90).
fn offers(family: &Family, shape: Shape) -> bool {
    let limits = Limits::for_arch(90).unwrap();
    family
        .space
        .prune(shape, &limits)
        .is_ok_and(|p| !p.valid.is_empty())
}

/// The problems each family runs on: the op's edges; GEMV-shaped families' few rows or
/// columns; the full interface's layouts, padding, beta and batches (for a family offered
/// only on few rows or columns, also on a problem where it is offered).
fn problems(family: &Family) -> Vec<Shape> {
    let op = family.space.op;
    // Edges of every kind (1x1x1, sizes 2^k +- 1, odd and prime sizes, few rows or columns,
    // long K), with grids of at most a few thousand blocks: the emulator pays per block, so
    // `autotune verify`'s 2049x2047x1 and 100000x3 (up to 200,000 blocks) stay on the GPU.
    let mut v = match op {
        Op::Gemm => vec![
            s(1, 1, 1),
            s(3, 5, 7),
            s(33, 65, 129),
            s(130, 7, 1001),
            s(257, 131, 37),
            s(1, 37, 300),
            s(8, 130, 77),
            s(130, 3, 99),
            // Rows of 16-byte multiples: the vectorised paths, interior and edge tiles.
            s(96, 128, 64),
            s(200, 136, 260),
        ],
        Op::Gemv => vec![
            s(1, 1, 1),
            s(3, 1, 5),
            s(33, 1, 129),
            s(1000, 1, 999),
            s(17, 1, 10_001),
            s(3000, 1, 3),
            s(256, 1, 512),
        ],
    };
    if family.space.interface == Interface::Full {
        let layouts: &[Layout] = match op {
            Op::Gemm => &[Layout::Nn, Layout::Nt, Layout::Tn, Layout::Tt],
            Op::Gemv => &[Layout::Nn, Layout::Tn],
        };
        for (i, &l) in layouts.iter().enumerate() {
            let base = match op {
                Op::Gemm => s(67, 45, 93),
                Op::Gemv => s(67, 1, 93),
            };
            let forms = [
                full(l, i % 2 == 1, i >= 1, 1),
                full(l, i % 2 == 0, i != 1, 3),
            ];
            let mut bases = vec![base];
            if op == Op::Gemm && !offers(family, base.with_form(forms[0])) {
                bases.extend(
                    [s(7, 45, 93), s(67, 7, 93)]
                        .into_iter()
                        .find(|b| offers(family, b.with_form(forms[0]))),
                );
            }
            for b in bases {
                for f in forms {
                    v.push(b.with_form(f));
                }
            }
        }
    }
    v
}

/// Valid configs of `family` on `shape` that between them take every value each parameter
/// takes among the valid ones (greedy: each next config adds the most values not yet taken).
fn covering(family: &Family, shape: Shape, limits: &Limits) -> Vec<Config> {
    let valid = family.space.prune(shape, limits).unwrap().valid;
    let mut left: std::collections::BTreeSet<(String, i64)> = valid
        .iter()
        .flat_map(|c| c.params.iter().map(|(k, v)| (k.clone(), *v)))
        .collect();
    let mut out: Vec<Config> = Vec::new();
    while !left.is_empty() {
        let gain = |c: &Config| {
            c.params
                .iter()
                .filter(|(k, v)| left.contains(&((*k).clone(), **v)))
                .count()
        };
        let Some(best) = valid.iter().max_by_key(|c| gain(c)) else {
            break;
        };
        for (k, v) in &best.params {
            left.remove(&(k.clone(), *v));
        }
        out.push(best.clone());
    }
    out
}

#[test]
fn every_family_validates_on_edge_shapes_in_the_emulator() {
    if !emulator_ready() {
        return;
    }
    let catalog = Catalog::builtin().unwrap();
    let limits = Limits::for_arch(90).unwrap();
    let only = std::env::var("AUTOTUNE_EMU_FAMILY").ok();
    let mut jobs = Vec::new();
    for family in catalog.families() {
        if only.as_deref().is_some_and(|o| o != family.name()) {
            continue;
        }
        let ends = sweep::family_ends(family, &limits).unwrap();
        assert!(!ends.is_empty(), "{}: no config to emulate", family.name());
        // Templates with an sm_80+ path (cp.async) also run their older archs' path (the GTX
        // 1080 Ti's) on a few problems.
        let older = family.inlined.contains("__CUDA_ARCH__");
        let problems = problems(family);
        for (i, &shape) in problems.iter().enumerate() {
            // The ends of what the space offers on this problem (a layout may open parameters
            // others do not), else the family's.
            let here = sweep::space_ends(family, shape, &limits).unwrap();
            for config in if here.is_empty() { &ends } else { &here } {
                jobs.push((family, config.clone(), shape, 900));
                if older && i % 3 == 2 {
                    jobs.push((family, config.clone(), shape, 610));
                }
            }
        }
        // Every value of every parameter on one problem of each layout: one with 16-byte rows
        // (padded leading dimensions for the full interface, with beta and two products),
        // interior tiles up to 256 x 256 (the unchecked copies) and edge tiles in M, N and K.
        let mut layouts = Vec::new();
        for p in &problems {
            if !layouts.contains(&p.form.layout) {
                layouts.push(p.form.layout);
            }
        }
        for layout in layouts {
            let form = if family.space.interface == Interface::Full {
                full(layout, true, true, 2)
            } else {
                Form::default()
            };
            // The first problem the family is offered on: families for few rows or a short
            // K sit the square one out.
            let candidates = match family.space.op {
                Op::Gemm => vec![s(520, 264, 152), s(13, 520, 152), s(520, 264, 7)],
                Op::Gemv => vec![s(520, 1, 152)],
            };
            let offered = candidates
                .into_iter()
                .map(|c| c.with_form(form))
                .find(|&c| offers(family, c));
            let Some(shape) = offered else { continue };
            for config in covering(family, shape, &limits) {
                jobs.push((family, config, shape, 900));
            }
        }
    }
    let failures: Vec<String> = jobs
        .par_iter()
        .filter_map(|(family, config, shape, arch)| {
            let op = family.space.op;
            check(family, config, *shape, *arch).err().map(|e| {
                format!(
                    "{} {} on {} (__CUDA_ARCH__ {arch}): {e}",
                    family.name(),
                    autotune::family::space::params_label(&config.params),
                    shape.label(op)
                )
            })
        })
        .collect();
    println!(
        "emulated {} (config, problem) pairs, {} failed",
        jobs.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A kernel whose threads wait at barriers the others never reach fails within the watchdog's
/// limit, naming the kernel, instead of hanging the test: lane 0 of each warp waits at a block
/// barrier while the other lanes wait for it at the warp's shuffle.
#[test]
fn a_deadlocked_kernel_fails_within_the_watchdog_with_its_name() {
    if !emulator_ready() {
        return;
    }
    let catalog = Catalog::builtin().unwrap();
    let limits = Limits::for_arch(90).unwrap();
    let family = catalog.get("gemv_warp_row").unwrap();
    let shape = Shape::parse(Op::Gemv, "37x100").unwrap();
    let config = family.space.prune(shape, &limits).unwrap().valid[0].clone();
    let exit = "if (row >= M) return;";
    assert!(
        family.inlined.contains(exit),
        "gemv_warp_row no longer holds {exit:?}"
    );
    let mut mutant = family.clone();
    mutant.inlined = family.inlined.replace(
        exit,
        "if (row >= M) return; if (lane == 0) __syncthreads();",
    );
    let limit = std::time::Duration::from_secs(20);
    let start = std::time::Instant::now();
    let err = check_within(&mutant, &config, shape, 900, limit)
        .expect_err("a deadlocked kernel passed the emulator");
    let name = family.kernel_name(&config);
    assert!(err.contains("watchdog") && err.contains(&name), "{err}");
    // Compiling is not timed by the watchdog: only the run is cut at the limit.
    println!(
        "{err} (after {:.1} s in all)",
        start.elapsed().as_secs_f64()
    );
}

/// A fault injected into a family: (family, text, its mutant, problem, a parameter value the
/// config run must have).
type Mutant = (
    &'static str,
    &'static str,
    &'static str,
    Shape,
    Option<(&'static str, i64)>,
);

/// The emulator catches what it exists for: each mutant of a real template (an out-of-bounds
/// read, a write past C, a cp.async stage read before its copies are waited for, split-K tile
/// counters not reset for the next launch, a 16-byte copy of the wrong chunk, vector stores
/// past N) fails, while the unmutated family passes.
#[test]
fn the_emulator_catches_injected_faults() {
    if !emulator_ready() {
        return;
    }
    let catalog = Catalog::builtin().unwrap();
    let limits = Limits::for_arch(90).unwrap();
    let mutants: [Mutant; 6] = [
        (
            "gemm_tiled",
            "(row < M && ak < K) ? A[(size_t)row * K + ak]",
            "(row <= M && ak < K) ? A[(size_t)row * K + ak]",
            s(33, 65, 129),
            None,
        ),
        (
            "gemm_tiled",
            "if (row < M && col < N) {",
            "if (row <= M && col < N) {",
            s(33, 65, 129),
            None,
        ),
        (
            "gemm_warptile",
            "::\"n\"(N_) : \"memory\"",
            "::\"n\"(N_ + 1) : \"memory\"",
            s(257, 131, 200),
            None,
        ),
        (
            "gemm_warptile_splitk_det",
            "atomicExch(",
            "(void)(",
            s(130, 7, 1001),
            None,
        ),
        (
            "gemm_general",
            "gg_cp16(as_dst + 4u * (l * A_KSTEP * AS_LD), pa + l * a_kstep);",
            "gg_cp16(as_dst + 4u * (l * A_KSTEP * AS_LD), pa + l * a_kstep + 4);",
            // Interior tiles (the unchecked copies) for tiles up to 256 x 256.
            s(520, 264, 152).with_form(full(Layout::Tn, true, true, 2)),
            None,
        ),
        (
            // float4 stores of C without the check that the columns are inside N and aligned.
            "gemm_general_small_k",
            "const bool cvec = full &&",
            "const bool cvec = true || full &&",
            s(37, 67, 3),
            Some(("VEC", 4)),
        ),
    ];
    for (name, from, to, shape, want) in mutants {
        let family = catalog.get(name).unwrap();
        // The last config the space offers on the problem (the most split, where a family has
        // splits, so the workspace is used) that has the wanted parameter value.
        let valid = family.space.prune(shape, &limits).unwrap().valid;
        let config = &valid
            .into_iter()
            .rev()
            .find(|c| want.is_none_or(|(k, v)| c.params.get(k) == Some(&v)))
            .unwrap_or_else(|| panic!("{name}: no valid config on {}", shape.label(Op::Gemm)));
        check(family, config, shape, 900)
            .unwrap_or_else(|e| panic!("{name} unmutated on {}: {e}", shape.label(Op::Gemm)));
        assert!(
            family.inlined.contains(from),
            "{name} no longer holds {from:?}"
        );
        let mut mutant = family.clone();
        mutant.inlined = family.inlined.replace(from, to);
        let err = check(&mutant, config, shape, 900)
            .expect_err(&format!("{name} with {to:?} passed the emulator"));
        println!(
            "{name} with {to:?}: {}",
            err.lines().next().unwrap_or_default()
        );
    }
}
