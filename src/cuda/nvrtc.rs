//! NVRTC: options per arch, parallel compilation to cubin, and compile errors with their log.
//!
//! Kernels are compiled for the real arch (`--gpu-architecture=sm_XY`) and loaded as cubin, so
//! the driver does no JIT at load time, and a newer NVRTC than the driver still works.

use crate::family::catalog::Source;
use crate::gpu::Arch;
use cudarc::nvrtc::result as nvrtc;
use cudarc::nvrtc::sys;
use rayon::prelude::*;
use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

/// Why compilation failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CompileError {
    /// libnvrtc could not be loaded.
    #[error("the NVRTC library (libnvrtc.so) was not found: install NVRTC from CUDA 12 or 13 (e.g. `pip install nvidia-cuda-nvrtc` for CUDA 13, or `nvidia-cuda-nvrtc-cu12` for CUDA 12, which is needed for sm_61) and put its lib directory on LD_LIBRARY_PATH")]
    NvrtcMissing,
    /// The loaded NVRTC cannot target the arch.
    #[error("NVRTC {nvrtc} cannot compile for {arch} (it supports {supported}): {}", nvrtc_to_use(*arch, *oldest))]
    UnsupportedArch {
        /// The arch asked for.
        arch: Arch,
        /// The loaded NVRTC version.
        nvrtc: String,
        /// The archs it supports.
        supported: String,
        /// The oldest arch it supports, `major * 10 + minor` (`None`: it reports none).
        oldest: Option<u32>,
    },
    /// NVRTC rejected the kernel.
    #[error("kernel {kernel} failed to compile for {arch} ({options}):\n{log}")]
    Failed {
        /// The kernel name.
        kernel: String,
        /// The target.
        arch: Arch,
        /// The options passed.
        options: String,
        /// NVRTC's log.
        log: String,
    },
    /// An NVRTC call other than the compilation itself failed.
    #[error("NVRTC {step} failed for kernel {kernel}: {code}")]
    Internal {
        /// The kernel name.
        kernel: String,
        /// Which call.
        step: &'static str,
        /// The status it returned.
        code: String,
    },
}

/// A compiled kernel image.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// The `extern "C"` name to load.
    pub kernel_name: String,
    /// The target arch.
    pub arch: Arch,
    /// The cubin.
    pub cubin: Vec<u8>,
    /// Wall time NVRTC took, milliseconds.
    pub compile_ms: f64,
}

fn ensure_nvrtc() -> Result<(), CompileError> {
    // cudarc panics when it cannot load libnvrtc: check first.
    if unsafe { sys::is_culib_present() } {
        Ok(())
    } else {
        Err(CompileError::NvrtcMissing)
    }
}

/// The loaded NVRTC's version as `major.minor`.
pub fn nvrtc_version() -> Result<String, CompileError> {
    ensure_nvrtc()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: the library is loaded and both out-pointers are valid.
    let rc = unsafe { sys::nvrtcVersion(&mut major, &mut minor) };
    if rc != sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(CompileError::Internal {
            kernel: String::new(),
            step: "nvrtcVersion",
            code: format!("{rc:?}"),
        });
    }
    Ok(format!("{major}.{minor}"))
}

/// The archs the loaded NVRTC can target, as numbers (e.g. 75, 80, 90).
pub fn supported_archs() -> Result<Vec<u32>, CompileError> {
    ensure_nvrtc()?;
    let internal = |step, rc: sys::nvrtcResult| CompileError::Internal {
        kernel: String::new(),
        step,
        code: format!("{rc:?}"),
    };
    let mut n = 0;
    // SAFETY: library loaded; valid out-pointer.
    let rc = unsafe { sys::nvrtcGetNumSupportedArchs(&mut n) };
    if rc != sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(internal("nvrtcGetNumSupportedArchs", rc));
    }
    let mut archs = vec![0i32; n.max(0) as usize];
    // SAFETY: `archs` has room for the `n` entries NVRTC reported.
    let rc = unsafe { sys::nvrtcGetSupportedArchs(archs.as_mut_ptr()) };
    if rc != sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(internal("nvrtcGetSupportedArchs", rc));
    }
    Ok(archs.into_iter().map(|a| a.max(0) as u32).collect())
}

/// Checks that the loaded NVRTC can target `arch`; when it cannot, the error names the NVRTC
/// that can.
pub fn check_arch(arch: Arch) -> Result<(), CompileError> {
    let supported = supported_archs()?;
    if supported.contains(&arch.number()) {
        return Ok(());
    }
    let nvrtc = nvrtc_version()?;
    Err(CompileError::UnsupportedArch {
        arch,
        nvrtc,
        supported: match (supported.first(), supported.last()) {
            (Some(a), Some(b)) => format!("sm_{a} to sm_{b}"),
            _ => "no arch".into(),
        },
        oldest: supported.iter().min().copied(),
    })
}

/// Which NVRTC can compile for `arch`, given the oldest arch the loaded one supports: the
/// library a program loads is the caller's to install, whatever the program is.
fn nvrtc_to_use(arch: Arch, oldest: Option<u32>) -> &'static str {
    match oldest {
        Some(oldest) if arch.number() < oldest => "NVRTC 13 dropped archs older than sm_75; for a GTX 1080 Ti (sm_61) use NVRTC 12 (pip install nvidia-cuda-nvrtc-cu12) with its lib directory first on LD_LIBRARY_PATH",
        _ => "use a newer NVRTC",
    }
}

/// The NVRTC options for `arch`.
///
/// With NVRTC 12.4 or newer, `-minimal` too: the templates include no header and use no
/// texture, runtime-API or device-launch feature, so the front end need not parse those
/// declarations. Measured: byte-identical cubins with and without it for a spread
/// of configs of every family (102 cubins for sm_90 with NVRTC 13.5, 94 for sm_61 with NVRTC
/// 12.9), so no kernel runs differently; the front end drops from ~31 to ~20 ms per kernel
/// (`--fdevice-time-trace`), 1-2% of a GEMM kernel's compile (most of it is NVVM and ptxas,
/// which no option shortens without changing the code). The disk cache key holds no
/// options: an option that changes the cubin must change that key.
pub fn options(arch: Arch) -> Vec<String> {
    let mut o = vec![
        format!("--gpu-architecture={arch}"),
        "--std=c++17".into(),
        "-DAUTOTUNE=1".into(),
    ];
    if minimal_supported() {
        o.push("-minimal".into());
    }
    o
}

/// Whether the loaded NVRTC knows `-minimal`.
fn minimal_supported() -> bool {
    static SUPPORTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SUPPORTED.get_or_init(|| nvrtc_version().is_ok_and(|v| knows_minimal(&v)))
}

/// Whether NVRTC `major.minor` knows `-minimal` (added in CUDA 12.4; older ones refuse it).
fn knows_minimal(version: &str) -> bool {
    let mut it = version.split('.').map(|x| x.parse::<u32>().unwrap_or(0));
    (it.next().unwrap_or(0), it.next().unwrap_or(0)) >= (12, 4)
}

struct Program(sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: created by create_program and destroyed only here.
        let _ = unsafe { nvrtc::destroy_program(self.0) };
    }
}

/// Compiles one kernel to cubin for `arch`. Call [`check_arch`] once first for a clear
/// message when the arch is unsupported.
pub fn compile(source: &Source, arch: Arch) -> Result<Compiled, CompileError> {
    ensure_nvrtc()?;
    let start = Instant::now();
    let kernel = source.kernel_name.clone();
    let internal = |step: &'static str, code: String| CompileError::Internal {
        kernel: kernel.clone(),
        step,
        code,
    };
    let src = CString::new(source.code.as_bytes())
        .map_err(|_| internal("create (source has a NUL byte)", String::new()))?;
    let name = CString::new(format!("{}.cu", source.kernel_name))
        .map_err(|_| internal("create (name has a NUL byte)", String::new()))?;
    let prog = Program(
        nvrtc::create_program(&src, Some(&name))
            .map_err(|e| internal("nvrtcCreateProgram", format!("{e:?}")))?,
    );
    let opts = options(arch);
    // SAFETY: `prog` is a live program.
    if let Err(e) = unsafe { nvrtc::compile_program(prog.0, &opts) } {
        // SAFETY: as above.
        let log = unsafe { nvrtc::get_program_log(prog.0) }
            .map(|raw| {
                // SAFETY: NVRTC's log is NUL-terminated.
                unsafe { CStr::from_ptr(raw.as_ptr()) }
                    .to_string_lossy()
                    .into_owned()
            })
            .unwrap_or_else(|_| format!("(no log; status {e:?})"));
        return Err(CompileError::Failed {
            kernel: source.kernel_name.clone(),
            arch,
            options: opts.join(" "),
            log: log.trim().to_string(),
        });
    }
    let mut size = 0usize;
    // SAFETY: compiled program, valid out-pointer.
    let rc = unsafe { sys::nvrtcGetCUBINSize(prog.0, &mut size) };
    if rc != sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(internal("nvrtcGetCUBINSize", format!("{rc:?}")));
    }
    let mut cubin = vec![0u8; size];
    // SAFETY: `cubin` has the size NVRTC reported.
    let rc = unsafe { sys::nvrtcGetCUBIN(prog.0, cubin.as_mut_ptr().cast()) };
    if rc != sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(internal("nvrtcGetCUBIN", format!("{rc:?}")));
    }
    Ok(Compiled {
        kernel_name: source.kernel_name.clone(),
        arch,
        cubin,
        compile_ms: start.elapsed().as_secs_f64() * 1e3,
    })
}

/// A compile result shared between the cache and its users.
pub type Shared = Arc<Result<Compiled, CompileError>>;

/// An in-memory cache of compile results keyed by (arch, exact source text), so the shapes of
/// a suite compile each kernel once. Failures are cached too: the same source fails the same way.
#[derive(Debug, Default)]
pub struct Cache {
    map: Mutex<HashMap<(Arch, String), Shared>>,
    hits: std::sync::atomic::AtomicUsize,
}

impl Cache {
    /// An empty cache.
    pub fn new() -> Cache {
        Cache::default()
    }

    /// How many lookups were served from the cache.
    pub fn hits(&self) -> usize {
        self.hits.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn get(&self, arch: Arch, code: &str) -> Option<Shared> {
        let map = self.map.lock().ok()?;
        let r = map.get(&(arch, code.to_string())).cloned();
        if r.is_some() {
            self.hits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        r
    }

    fn put(&self, arch: Arch, code: &str, r: Shared) {
        if let Ok(mut map) = self.map.lock() {
            map.insert((arch, code.to_string()), r);
        }
    }
}

/// Compiles every source in parallel (rayon), through `cache`. Each result stands alone: one
/// failure never stops the others. `on_done` is called as each finishes (for progress bars).
pub fn compile_all(
    sources: &[Source],
    arch: Arch,
    cache: &Cache,
    on_done: &(dyn Fn(&Result<Compiled, CompileError>) + Sync),
) -> Vec<Shared> {
    sources
        .par_iter()
        .map(|s| {
            let r = match cache.get(arch, &s.code) {
                Some(r) => r,
                None => {
                    let r = Arc::new(compile(s, arch));
                    cache.put(arch, &s.code, r.clone());
                    r
                }
            };
            on_done(&r);
            r
        })
        .collect()
}

/// Where compiled kernels are looked up before NVRTC runs: the in-memory cache of this process
/// and, optionally, the on-disk cache shared with the runtime (with the NVRTC version its keys
/// include).
#[derive(Clone, Copy)]
pub struct Caches<'a> {
    /// This process's cache.
    pub memory: &'a Cache,
    /// The disk cache and the NVRTC version string, unless bypassed (`--no-cache`).
    pub disk: Option<(&'a DiskCache, &'a str)>,
}

/// Compiles one source through `caches`: memory, then disk, then NVRTC (storing the cubin in
/// both). Returns the result and whether NVRTC ran.
pub fn compile_cached(source: &Source, arch: Arch, caches: Caches) -> (Shared, bool) {
    if let Some(r) = caches.memory.get(arch, &source.code) {
        return (r, false);
    }
    if let Some(c) = caches.disk.and_then(|(d, v)| d.get(v, arch, source)) {
        let r = Arc::new(Ok(c));
        caches.memory.put(arch, &source.code, r.clone());
        return (r, false);
    }
    let r = Arc::new(compile(source, arch));
    if let (Some((d, v)), Ok(c)) = (caches.disk, r.as_ref()) {
        // A failed write only means the next run compiles again.
        let _ = d.put(v, c, source);
    }
    caches.memory.put(arch, &source.code, r.clone());
    (r, true)
}

/// Compiles a list of sources on background threads while the caller benchmarks: results
/// become available one by one, in `order` (the order the caller expects to need them), and a
/// caller that needs one not yet started compiles it itself at once, so the GPU never waits
/// for the whole list.
pub struct Pipeline<'a> {
    sources: &'a [Source],
    arch: Arch,
    caches: Caches<'a>,
    order: Vec<usize>,
    next: AtomicUsize,
    /// Per source: 0 pending, 1 being compiled, 2 done.
    state: Vec<AtomicU8>,
    slots: Mutex<Vec<Option<Shared>>>,
    ready: Condvar,
    cancelled: AtomicBool,
    compiled_now: AtomicUsize,
    on_done: &'a (dyn Fn(&Result<Compiled, CompileError>) + Sync),
}

impl<'a> Pipeline<'a> {
    /// A pipeline over `sources`, compiled in `order` (indices into `sources`; any missing
    /// ones are compiled only when asked for). `on_done` sees each result as it finishes.
    pub fn new(
        sources: &'a [Source],
        arch: Arch,
        caches: Caches<'a>,
        order: Vec<usize>,
        on_done: &'a (dyn Fn(&Result<Compiled, CompileError>) + Sync),
    ) -> Pipeline<'a> {
        Pipeline {
            sources,
            arch,
            caches,
            order,
            next: AtomicUsize::new(0),
            state: sources.iter().map(|_| AtomicU8::new(0)).collect(),
            slots: Mutex::new(vec![None; sources.len()]),
            ready: Condvar::new(),
            cancelled: AtomicBool::new(false),
            compiled_now: AtomicUsize::new(0),
            on_done,
        }
    }

    /// Compiles source `i` if nobody has started it; returns whether it did.
    fn claim_and_compile(&self, i: usize) -> bool {
        if self.state[i]
            .compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return false;
        }
        let (r, fresh) = compile_cached(&self.sources[i], self.arch, self.caches);
        if fresh {
            self.compiled_now.fetch_add(1, Ordering::Relaxed);
        }
        (self.on_done)(&r);
        if let Ok(mut slots) = self.slots.lock() {
            slots[i] = Some(r);
        }
        self.state[i].store(2, Ordering::SeqCst);
        self.ready.notify_all();
        true
    }

    /// The body of one background thread: compile in order until the list or the pipeline
    /// ends. Run it on as many threads as there are cores.
    pub fn work(&self) {
        while !self.cancelled.load(Ordering::SeqCst) {
            let j = self.next.fetch_add(1, Ordering::SeqCst);
            let Some(&i) = self.order.get(j) else { break };
            self.claim_and_compile(i);
        }
    }

    /// Stops the background threads after the source each is compiling.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
    }

    /// How many sources NVRTC compiled (not served by a cache) so far.
    pub fn compiled_now(&self) -> usize {
        self.compiled_now.load(Ordering::Relaxed)
    }

    /// The result for source `i`: waits while another thread compiles it, compiles it here if
    /// nobody has started.
    pub fn get(&self, i: usize) -> Shared {
        self.claim_and_compile(i);
        let mut slots = match self.slots.lock() {
            Ok(s) => s,
            Err(p) => p.into_inner(),
        };
        loop {
            if let Some(r) = &slots[i] {
                return r.clone();
            }
            slots = match self.ready.wait(slots) {
                Ok(s) => s,
                Err(p) => p.into_inner(),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_arch_names() {
        assert_eq!(
            "sm_90".parse::<Arch>().unwrap(),
            Arch { major: 9, minor: 0 }
        );
        assert_eq!("sm_61".parse::<Arch>().unwrap().to_string(), "sm_61");
        assert_eq!(
            "120".parse::<Arch>().unwrap(),
            Arch {
                major: 12,
                minor: 0
            }
        );
        assert!("sm_9".parse::<Arch>().is_err());
        assert!("hopper".parse::<Arch>().is_err());
        // Too many digits for any arch: refused rather than overflowing `number()`.
        assert!("sm_4294967299".parse::<Arch>().is_err());
        assert_eq!("sm_1000".parse::<Arch>().unwrap().number(), 1000);
        assert!(
            options(Arch { major: 9, minor: 0 }).contains(&"--gpu-architecture=sm_90".to_string())
        );
    }

    #[test]
    fn minimal_only_from_nvrtc_12_4() {
        for (v, yes) in [
            ("11.8", false),
            ("12.0", false),
            ("12.3", false),
            ("12.4", true),
            ("12.9", true),
            ("13.0", true),
            ("13.5", true),
            ("", false),
        ] {
            assert_eq!(knows_minimal(v), yes, "{v}");
        }
    }
}

/// Compiled cubins on disk, keyed by NVRTC version + arch + source hash, so a product's second
/// start compiles nothing. Writes are atomic (temp file + rename); an unreadable or missing
/// entry is simply compiled again.
#[derive(Debug, Clone)]
pub struct DiskCache {
    dir: std::path::PathBuf,
}

impl DiskCache {
    /// A cache in `dir` (created on first write).
    pub fn new(dir: impl Into<std::path::PathBuf>) -> DiskCache {
        DiskCache { dir: dir.into() }
    }

    /// The user's cache directory: `$AUTOTUNE_CACHE_DIR`, else `$XDG_CACHE_HOME/autotune`,
    /// else `$HOME/.cache/autotune`; `None` when none is set.
    pub fn user_default() -> Option<DiskCache> {
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        var("AUTOTUNE_CACHE_DIR")
            .map(std::path::PathBuf::from)
            .or_else(|| var("XDG_CACHE_HOME").map(|d| std::path::Path::new(&d).join("autotune")))
            .or_else(|| var("HOME").map(|d| std::path::Path::new(&d).join(".cache/autotune")))
            .map(DiskCache::new)
    }

    /// The directory.
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    fn path(&self, nvrtc: &str, arch: Arch, source: &Source) -> std::path::PathBuf {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        for part in [
            nvrtc.as_bytes(),
            arch.to_string().as_bytes(),
            source.code.as_bytes(),
        ] {
            h.update(part);
            h.update([0u8]);
        }
        let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
        self.dir
            .join(format!("{}-{}.cubin", source.kernel_name, &hex[..32]))
    }

    /// The cached cubin of `source`, if present.
    pub fn get(&self, nvrtc: &str, arch: Arch, source: &Source) -> Option<Compiled> {
        let cubin = std::fs::read(self.path(nvrtc, arch, source)).ok()?;
        (!cubin.is_empty()).then(|| Compiled {
            kernel_name: source.kernel_name.clone(),
            arch,
            cubin,
            compile_ms: 0.0,
        })
    }

    /// Stores a cubin; failures are returned but harmless (the next start compiles again).
    /// Unlocked ([`crate::fileio::write_atomic`]): two processes storing one cubin write the
    /// same bytes, and either rename leaves a whole file.
    pub fn put(&self, nvrtc: &str, compiled: &Compiled, source: &Source) -> std::io::Result<()> {
        let path = self.path(nvrtc, compiled.arch, source);
        crate::fileio::write_atomic(&path, |f| std::io::Write::write_all(f, &compiled.cubin))?;
        Ok(())
    }
}

#[cfg(test)]
mod disk_tests {
    use super::*;

    #[test]
    fn disk_cache_round_trip_and_keys() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::new(dir.path().join("c"));
        let src = Source {
            family: "f".into(),
            kernel_name: "k".into(),
            code: "code".into(),
        };
        let arch = Arch { major: 9, minor: 0 };
        assert!(cache.get("13.0", arch, &src).is_none());
        let c = Compiled {
            kernel_name: "k".into(),
            arch,
            cubin: vec![1, 2, 3],
            compile_ms: 5.0,
        };
        cache.put("13.0", &c, &src).unwrap();
        assert_eq!(cache.get("13.0", arch, &src).unwrap().cubin, vec![1, 2, 3]);
        // Another NVRTC, arch or source text is another entry.
        assert!(cache.get("12.9", arch, &src).is_none());
        assert!(cache
            .get("13.0", Arch { major: 8, minor: 9 }, &src)
            .is_none());
        let other = Source {
            code: "code2".into(),
            ..src.clone()
        };
        assert!(cache.get("13.0", arch, &other).is_none());
        let leftovers = std::fs::read_dir(dir.path().join("c")).unwrap().count();
        assert_eq!(leftovers, 1, "no temp files left behind");
    }
}
