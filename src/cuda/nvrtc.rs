//! NVRTC: options per arch, parallel compilation to cubin, and compile errors with their log.
//!
//! Kernels are compiled for the real arch (`--gpu-architecture=sm_XY`) and loaded as cubin, so
//! the driver does no JIT at load time, and a newer NVRTC than the driver still works. A
//! [`Target::Ptx`] compiles PTX for an older virtual arch instead (`compute_75`), which the
//! driver JIT-compiles at load: the templates' `__CUDA_ARCH__ < 800` paths then run on a newer
//! GPU, for validation (the timings are not what that older GPU would measure).
//!
//! Which libnvrtc is loaded: `AUTOTUNE_NVRTC` when set, else the first of cudarc's candidate
//! names the dynamic loader finds ([`super::nvrtc_lib`]); [`library`] says which it was.

use super::nvrtc_lib::{self, CallError};
use crate::family::catalog::Source;
use crate::gpu::Arch;
use rayon::prelude::*;
use std::collections::HashMap;
use std::ffi::CString;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

/// Why compilation failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CompileError {
    /// libnvrtc could not be loaded.
    #[error("the NVRTC library (libnvrtc.so) was not found: install NVRTC from CUDA 12 or 13 (e.g. `pip install nvidia-cuda-nvrtc` for CUDA 13, or `nvidia-cuda-nvrtc-cu12` for CUDA 12, which is needed for sm_61) and put its lib directory on LD_LIBRARY_PATH, or set AUTOTUNE_NVRTC to the library file")]
    NvrtcMissing,
    /// The library `AUTOTUNE_NVRTC` names could not be loaded (no other is tried).
    #[error("AUTOTUNE_NVRTC={value}: {tried}; set AUTOTUNE_NVRTC to an NVRTC 12 or 13 library file (e.g. /usr/local/cuda-12/lib64/libnvrtc.so.12) or the directory holding it, or unset it to load the libnvrtc found on LD_LIBRARY_PATH")]
    NvrtcChoice {
        /// The variable's value.
        value: String,
        /// What was tried and why it failed.
        tried: String,
    },
    /// The library loaded as NVRTC lacks a function this program calls.
    #[error("{library} is not a usable NVRTC: {reason}; use NVRTC from CUDA 12 or 13 (set AUTOTUNE_NVRTC to its library file, or put its lib directory on LD_LIBRARY_PATH)")]
    NvrtcUnusable {
        /// The library that was loaded.
        library: String,
        /// What is missing.
        reason: String,
    },
    /// The loaded NVRTC cannot target the arch.
    #[error("NVRTC {nvrtc} cannot compile for {arch} (it supports {supported}): {}", nvrtc_to_use(arch.arch(), *oldest))]
    UnsupportedArch {
        /// The target asked for.
        arch: Target,
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
        arch: Target,
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

impl From<nvrtc_lib::LoadError> for CompileError {
    fn from(e: nvrtc_lib::LoadError) -> Self {
        match e {
            nvrtc_lib::LoadError::Missing => CompileError::NvrtcMissing,
            nvrtc_lib::LoadError::Choice { value, tried } => {
                CompileError::NvrtcChoice { value, tried }
            }
            nvrtc_lib::LoadError::Unusable { library, reason } => {
                CompileError::NvrtcUnusable { library, reason }
            }
        }
    }
}

/// What NVRTC compiles to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Target {
    /// A cubin for the real arch `sm_XY`: what tuning and the runtime load.
    Cubin(Arch),
    /// PTX for the virtual arch `compute_XY`, JIT-compiled by the driver when loaded: code for
    /// an older arch's paths (`__CUDA_ARCH__` is that arch's) running on the GPU at hand.
    Ptx(Arch),
}

impl Target {
    /// The arch compiled for.
    pub fn arch(&self) -> Arch {
        match self {
            Target::Cubin(a) | Target::Ptx(a) => *a,
        }
    }

    /// Whether this is PTX for a virtual arch.
    pub fn is_ptx(&self) -> bool {
        matches!(self, Target::Ptx(_))
    }

    /// Whether `source` is compiled for the arch-specific variant of this target (`sm_90a`):
    /// its family asks for it on this arch ([`Source::arch_specific`]).
    pub fn is_specific_for(&self, source: &Source) -> bool {
        source.arch_specific.contains(&self.arch().number())
    }

    /// NVRTC's `--gpu-architecture` value for `source`: this target's (`sm_90`), with the `a`
    /// of the arch-specific variant where the source's family asks for it (`sm_90a`).
    pub fn name_for(&self, source: &Source) -> String {
        self.named(self.is_specific_for(source))
    }

    /// This target's name, with the `a` of the arch-specific variant when `specific`.
    fn named(&self, specific: bool) -> String {
        if specific {
            format!("{self}a")
        } else {
            self.to_string()
        }
    }
}

impl From<Arch> for Target {
    fn from(arch: Arch) -> Target {
        Target::Cubin(arch)
    }
}

/// `compute_XY` is PTX for that virtual arch; `sm_XY` (or `XY`) a cubin.
impl std::str::FromStr for Target {
    type Err = crate::gpu::ArchError;
    fn from_str(s: &str) -> Result<Target, Self::Err> {
        let arch: Arch = s.parse()?;
        Ok(if s.trim().starts_with("compute_") {
            Target::Ptx(arch)
        } else {
            Target::Cubin(arch)
        })
    }
}

/// `sm_90` for a cubin, `compute_75` for PTX: NVRTC's `--gpu-architecture` value.
impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Cubin(a) => write!(f, "{a}"),
            Target::Ptx(a) => write!(f, "compute_{}", a.number()),
        }
    }
}

/// A compiled kernel image.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// The `extern "C"` name to load.
    pub kernel_name: String,
    /// What it was compiled to.
    pub target: Target,
    /// The image: a cubin, or NUL-terminated PTX text for a [`Target::Ptx`] (the driver's
    /// module loader takes either).
    pub cubin: Vec<u8>,
    /// Wall time NVRTC took, milliseconds.
    pub compile_ms: f64,
    /// Whether it was compiled for the arch-specific variant of the target (`sm_90a`).
    pub arch_specific: bool,
}

impl Compiled {
    /// The `--gpu-architecture` it was compiled for: `sm_90`, `sm_90a`, `compute_75`.
    pub fn target_name(&self) -> String {
        self.target.named(self.arch_specific)
    }
}

/// An NVRTC call outside compiling a kernel failed.
fn internal(e: CallError) -> CompileError {
    CompileError::Internal {
        kernel: String::new(),
        step: e.step,
        code: e.code,
    }
}

/// The NVRTC library that was loaded (loading it on first use): the path of the file, or the
/// name the dynamic loader was given when its path cannot be found. Which one is loaded:
/// `AUTOTUNE_NVRTC` when set, a library file or a directory holding `libnvrtc.so.N`, else the
/// first of cudarc's candidate names (`libnvrtc.so`, ..., `libnvrtc.so.13`, `libnvrtc.so.12`,
/// ...) that the loader finds.
pub fn library() -> Result<String, CompileError> {
    Ok(nvrtc_lib::get()?.library().to_string())
}

/// The loaded NVRTC's version as `major.minor`.
pub fn nvrtc_version() -> Result<String, CompileError> {
    let (major, minor) = nvrtc_lib::get()?.version().map_err(internal)?;
    Ok(format!("{major}.{minor}"))
}

/// The loaded NVRTC's version and library, for messages: `13.0 (/path/libnvrtc.so.13)`.
pub fn describe() -> Result<String, CompileError> {
    Ok(format!("{} ({})", nvrtc_version()?, library()?))
}

/// The archs the loaded NVRTC can target, as numbers (e.g. 75, 80, 90).
pub fn supported_archs() -> Result<Vec<u32>, CompileError> {
    let archs = nvrtc_lib::get()?.supported_archs().map_err(internal)?;
    Ok(archs.into_iter().map(|a| a.max(0) as u32).collect())
}

/// Checks that the loaded NVRTC can target `arch` (an [`Arch`] or a [`Target`]); when it
/// cannot, the error names the NVRTC that can.
pub fn check_arch(arch: impl Into<Target>) -> Result<(), CompileError> {
    let arch: Target = arch.into();
    let supported = supported_archs()?;
    if supported.contains(&arch.arch().number()) {
        return Ok(());
    }
    let nvrtc = nvrtc_version()?;
    Err(CompileError::UnsupportedArch {
        arch,
        nvrtc,
        supported: match (supported.first(), supported.last()) {
            (Some(a), Some(b)) if arch.is_ptx() => format!("compute_{a} to compute_{b}"),
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
        Some(oldest) if arch.number() < oldest => "NVRTC 13 dropped archs older than sm_75; for a GTX 1080 Ti (sm_61) use NVRTC 12 (pip install nvidia-cuda-nvrtc-cu12) and set AUTOTUNE_NVRTC to its library file or lib directory (e.g. AUTOTUNE_NVRTC=/usr/local/cuda-12/lib64/libnvrtc.so.12): the order of directories on LD_LIBRARY_PATH does not choose between NVRTC 12 and 13",
        _ => "use a newer NVRTC",
    }
}

/// The NVRTC options for `target` (an [`Arch`]: a cubin for it; or a [`Target`]).
///
/// With NVRTC 12.4 or newer, `-minimal` too: the templates include no header and use no
/// texture, runtime-API or device-launch feature, so the front end need not parse those
/// declarations. Measured: byte-identical cubins with and without it for a spread
/// of configs of every family (102 cubins for sm_90 with NVRTC 13.5, 94 for sm_61 with NVRTC
/// 12.9), so no kernel runs differently; the front end drops from ~31 to ~20 ms per kernel
/// (`--fdevice-time-trace`), 1-2% of a GEMM kernel's compile (most of it is NVVM and ptxas,
/// which no option shortens without changing the code). The disk cache key holds no
/// options: an option that changes the cubin must change that key.
pub fn options(target: impl Into<Target>) -> Vec<String> {
    options_named(&target.into().to_string())
}

/// [`options`] for the `--gpu-architecture` value `target` (`sm_90a` included).
fn options_named(target: &str) -> Vec<String> {
    let mut o = vec![
        format!("--gpu-architecture={target}"),
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

/// Compiles one kernel for `arch`: to cubin for an [`Arch`] or a [`Target::Cubin`], to PTX for
/// a [`Target::Ptx`]. Call [`check_arch`] once first for a clear message when the arch is
/// unsupported.
pub fn compile(source: &Source, arch: impl Into<Target>) -> Result<Compiled, CompileError> {
    let arch: Target = arch.into();
    let nvrtc = nvrtc_lib::get()?;
    let start = Instant::now();
    let kernel = source.kernel_name.clone();
    let internal = |step: &'static str, code: String| CompileError::Internal {
        kernel: kernel.clone(),
        step,
        code,
    };
    let call = |e: CallError| internal(e.step, e.code);
    let src = CString::new(source.code.as_bytes())
        .map_err(|_| internal("create (source has a NUL byte)", String::new()))?;
    let name = CString::new(format!("{}.cu", source.kernel_name))
        .map_err(|_| internal("create (name has a NUL byte)", String::new()))?;
    let prog = nvrtc.create_program(&src, &name).map_err(call)?;
    let opts = options_named(&arch.name_for(source));
    if let Err(e) = prog.compile(&opts) {
        let log = prog
            .log()
            .unwrap_or_else(|_| format!("(no log; status {})", e.code));
        return Err(CompileError::Failed {
            kernel: source.kernel_name.clone(),
            arch,
            options: opts.join(" "),
            log: log.trim().to_string(),
        });
    }
    let cubin = match arch {
        Target::Cubin(_) => prog.cubin(),
        Target::Ptx(_) => prog.ptx(),
    }
    .map_err(call)?;
    Ok(Compiled {
        kernel_name: source.kernel_name.clone(),
        target: arch,
        cubin,
        compile_ms: start.elapsed().as_secs_f64() * 1e3,
        arch_specific: arch.is_specific_for(source),
    })
}

/// A compile result shared between the cache and its users.
pub type Shared = Arc<Result<Compiled, CompileError>>;

/// An in-memory cache of compile results keyed by (target, exact source text), so the shapes
/// of a suite compile each kernel once. Failures are cached too: the same source fails the
/// same way. The target holds whether the image is a cubin or PTX, so PTX for `compute_75`
/// and a cubin for `sm_75` (or `sm_90`) are different entries.
///
/// Shared by the devices of a run (one thread per device): a kernel another thread is
/// compiling is waited for, not compiled again, so each (target, source) goes through NVRTC
/// at most once per process ([`Cache::compiled`] counts them, [`Cache::waited`] the lookups
/// that waited for another thread's compile).
#[derive(Debug, Default)]
pub struct Cache {
    map: Mutex<CacheMap>,
    ready: Condvar,
    hits: AtomicUsize,
    compiled: AtomicUsize,
    waited: AtomicUsize,
}

#[derive(Debug, Default)]
struct CacheMap {
    done: HashMap<(Target, String), Shared>,
    /// Being compiled by some thread now.
    busy: std::collections::HashSet<(Target, String)>,
}

/// What a lookup found: the result, or the right (and duty) to compile it.
enum Claim<'a> {
    Ready(Shared),
    Mine(Claimed<'a>),
}

/// A source this thread compiles; if dropped before [`Cache::put`], the waiters are released
/// to compile it themselves.
struct Claimed<'a> {
    cache: &'a Cache,
    key: (Target, String),
}

impl Drop for Claimed<'_> {
    fn drop(&mut self) {
        let mut map = self.cache.lock();
        map.busy.remove(&self.key);
        self.cache.ready.notify_all();
    }
}

impl Cache {
    /// An empty cache.
    pub fn new() -> Cache {
        Cache::default()
    }

    /// How many lookups were served from the cache (waits for another thread included).
    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::Relaxed)
    }

    /// How many kernels NVRTC compiled through this cache (each (target, source) once).
    pub fn compiled(&self) -> usize {
        self.compiled.load(Ordering::Relaxed)
    }

    /// How many lookups waited for another thread compiling the same kernel instead of
    /// compiling it again.
    pub fn waited(&self) -> usize {
        self.waited.load(Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CacheMap> {
        // Every update is one insert or remove: a panicking holder leaves it consistent.
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The result for (`arch`, `code`), waiting while another thread compiles it; or, when
    /// nobody has it, the claim to compile it here.
    fn claim(&self, arch: Target, code: &str) -> Claim<'_> {
        let key = (arch, code.to_string());
        let mut map = self.lock();
        let mut counted = false;
        loop {
            if let Some(r) = map.done.get(&key) {
                self.hits.fetch_add(1, Ordering::Relaxed);
                return Claim::Ready(r.clone());
            }
            if !map.busy.contains(&key) {
                map.busy.insert(key.clone());
                return Claim::Mine(Claimed { cache: self, key });
            }
            if !counted {
                self.waited.fetch_add(1, Ordering::Relaxed);
                counted = true;
            }
            map = self.ready.wait(map).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Stores the result of a claim (`fresh`: NVRTC made it) and wakes the waiters.
    fn put(&self, claim: Claimed<'_>, r: Shared, fresh: bool) {
        if fresh {
            self.compiled.fetch_add(1, Ordering::Relaxed);
        }
        let mut map = self.lock();
        map.done.insert(claim.key.clone(), r);
        drop(map);
        // Dropping the claim clears `busy` and wakes the waiters, who find the result.
        drop(claim);
    }
}

/// Compiles every source in parallel (rayon), through `caches` (memory, then disk, then NVRTC:
/// [`compile_cached`]). Each result stands alone: one failure never stops the others.
/// `on_done` is called as each finishes (for progress bars).
pub fn compile_all(
    sources: &[Source],
    arch: impl Into<Target>,
    caches: Caches,
    on_done: &(dyn Fn(&Result<Compiled, CompileError>) + Sync),
) -> Batch {
    let arch: Target = arch.into();
    let (results, fresh): (Vec<Shared>, Vec<bool>) = sources
        .par_iter()
        .map(|s| {
            let (r, fresh) = compile_cached(s, arch, caches);
            on_done(&r);
            (r, fresh)
        })
        .unzip();
    Batch {
        results,
        compiled_now: fresh.into_iter().filter(|f| *f).count(),
    }
}

/// What [`compile_all`] gives back.
#[derive(Debug)]
pub struct Batch {
    /// One result per source, in the sources' order.
    pub results: Vec<Shared>,
    /// How many of them NVRTC compiled now; the rest came from a cache.
    pub compiled_now: usize,
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

impl<'a> Caches<'a> {
    /// The in-memory cache alone: nothing is read from or written to disk.
    pub fn memory(cache: &'a Cache) -> Caches<'a> {
        Caches {
            memory: cache,
            disk: None,
        }
    }
}

/// Compiles one source through `caches`: memory, then disk, then NVRTC (storing the cubin in
/// both). Returns the result and whether NVRTC ran.
pub fn compile_cached(source: &Source, arch: Target, caches: Caches) -> (Shared, bool) {
    let claim = match caches.memory.claim(arch, &source.code) {
        Claim::Ready(r) => return (r, false),
        Claim::Mine(c) => c,
    };
    if let Some(c) = caches.disk.and_then(|(d, v)| d.get(v, arch, source)) {
        let r = Arc::new(Ok(c));
        caches.memory.put(claim, r.clone(), false);
        return (r, false);
    }
    let r = Arc::new(compile(source, arch));
    if let (Some((d, v)), Ok(c)) = (caches.disk, r.as_ref()) {
        // A failed write only means the next run compiles again.
        let _ = d.put(v, c, source);
    }
    caches.memory.put(claim, r.clone(), true);
    (r, true)
}

/// Compiles a list of sources on background threads while the caller benchmarks: results
/// become available one by one, in `order` (the order the caller expects to need them), and a
/// caller that needs one not yet started compiles it itself at once, so the GPU never waits
/// for the whole list.
pub struct Pipeline<'a> {
    sources: &'a [Source],
    arch: Target,
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
        arch: impl Into<Target>,
        caches: Caches<'a>,
        order: Vec<usize>,
        on_done: &'a (dyn Fn(&Result<Compiled, CompileError>) + Sync),
    ) -> Pipeline<'a> {
        Pipeline {
            sources,
            arch: arch.into(),
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
    fn threads_asking_for_one_kernel_compile_it_once() {
        // Eight threads (devices) ask for the same kernel at once: one compiles (here a
        // stand-in for NVRTC that takes a while), the others wait for its result.
        let cache = Cache::new();
        let arch = Target::from(Arch { major: 9, minor: 0 });
        let nvrtc_runs = AtomicUsize::new(0);
        let got: Vec<Shared> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(|| match cache.claim(arch, "__global__ void k() {}") {
                        Claim::Ready(r) => r,
                        Claim::Mine(c) => {
                            nvrtc_runs.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(std::time::Duration::from_millis(50));
                            let r: Shared = Arc::new(Err(CompileError::Failed {
                                kernel: "k".into(),
                                arch,
                                options: String::new(),
                                log: "stand-in".into(),
                            }));
                            cache.put(c, r.clone(), true);
                            r
                        }
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(nvrtc_runs.load(Ordering::SeqCst), 1);
        assert_eq!(cache.compiled(), 1);
        assert_eq!(cache.hits(), 7);
        assert!(got.iter().all(|r| Arc::ptr_eq(r, &got[0])));
        // A claim dropped without a result (a panicking compile) lets the next one compile.
        match cache.claim(arch, "other") {
            Claim::Mine(c) => drop(c),
            Claim::Ready(_) => panic!("nothing was compiled yet"),
        }
        assert!(matches!(cache.claim(arch, "other"), Claim::Mine(_)));
    }

    #[test]
    fn a_chosen_library_that_fails_is_an_error_naming_the_variable() {
        let load = |value: &std::ffi::OsStr| {
            CompileError::from(nvrtc_lib::load_value(Some(value)).err().unwrap()).to_string()
        };
        let dir = tempfile::tempdir().unwrap();
        for value in super::super::dylib::unloadable_values("nvrtc", dir.path()) {
            let e = load(value.as_os_str());
            assert!(
                e.starts_with(&format!("AUTOTUNE_NVRTC={}: ", value.display())),
                "{e}"
            );
        }
        let e = load(std::path::Path::new("libnvrtc.so.no-such-version").as_os_str());
        assert!(e.contains("dynamic loader"), "{e}");
    }

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

/// Compiled cubins on disk, keyed by NVRTC version + target + source hash, so a product's
/// second start compiles nothing. A cubin for `sm_90` and PTX for `compute_75` hash different
/// target strings and have different extensions (`.cubin`, `.ptx`): they never meet. Writes are atomic (temp file + rename); an unreadable or missing
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

    fn path(&self, nvrtc: &str, arch: Target, source: &Source) -> std::path::PathBuf {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        for part in [
            nvrtc.as_bytes(),
            arch.name_for(source).as_bytes(),
            source.code.as_bytes(),
        ] {
            h.update(part);
            h.update([0u8]);
        }
        let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
        let ext = if arch.is_ptx() { "ptx" } else { "cubin" };
        self.dir
            .join(format!("{}-{}.{ext}", source.kernel_name, &hex[..32]))
    }

    /// The cached image of `source` for `arch` (an [`Arch`]: its cubin; or a [`Target`]), if
    /// present.
    pub fn get(&self, nvrtc: &str, arch: impl Into<Target>, source: &Source) -> Option<Compiled> {
        let arch: Target = arch.into();
        let cubin = std::fs::read(self.path(nvrtc, arch, source)).ok()?;
        (!cubin.is_empty()).then(|| Compiled {
            kernel_name: source.kernel_name.clone(),
            target: arch,
            cubin,
            compile_ms: 0.0,
            arch_specific: arch.is_specific_for(source),
        })
    }

    /// Stores a cubin; failures are returned but harmless (the next start compiles again).
    /// Unlocked ([`crate::fileio::write_atomic`]): two processes storing one cubin write the
    /// same bytes, and either rename leaves a whole file.
    pub fn put(&self, nvrtc: &str, compiled: &Compiled, source: &Source) -> std::io::Result<()> {
        let path = self.path(nvrtc, compiled.target, source);
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
            arch_specific: Vec::new(),
        };
        let arch = Arch { major: 9, minor: 0 };
        assert!(cache.get("13.0", arch, &src).is_none());
        let c = Compiled {
            kernel_name: "k".into(),
            target: arch.into(),
            cubin: vec![1, 2, 3],
            compile_ms: 5.0,
            arch_specific: false,
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

    #[test]
    fn ptx_and_cubin_never_share_a_cache_entry() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::new(dir.path().join("c"));
        let src = Source {
            family: "f".into(),
            kernel_name: "k".into(),
            code: "code".into(),
            arch_specific: Vec::new(),
        };
        let sm75 = Arch { major: 7, minor: 5 };
        let ptx = Compiled {
            kernel_name: "k".into(),
            target: Target::Ptx(sm75),
            cubin: b".target sm_75\0".to_vec(),
            compile_ms: 1.0,
            arch_specific: false,
        };
        cache.put("13.0", &ptx, &src).unwrap();
        // Neither the cubin of the same arch nor the device's cubin is the PTX.
        assert!(cache.get("13.0", sm75, &src).is_none());
        assert!(cache
            .get("13.0", Arch { major: 9, minor: 0 }, &src)
            .is_none());
        let got = cache.get("13.0", Target::Ptx(sm75), &src).unwrap();
        assert_eq!(got.target, Target::Ptx(sm75));
        assert_eq!(got.cubin, ptx.cubin);
        // The in-memory cache keys by target too.
        let mem = Cache::new();
        match mem.claim(Target::Ptx(sm75), "code") {
            Claim::Mine(c) => mem.put(c, Arc::new(Ok(ptx.clone())), false),
            Claim::Ready(_) => panic!("empty cache"),
        }
        assert!(matches!(
            mem.claim(Target::Cubin(sm75), "code"),
            Claim::Mine(_)
        ));
        assert!(matches!(
            mem.claim(Target::Ptx(sm75), "code"),
            Claim::Ready(_)
        ));
        // NVRTC's option names the virtual arch.
        assert!(options(Target::Ptx(sm75)).contains(&"--gpu-architecture=compute_75".to_string()));
        assert_eq!(Target::Ptx(sm75).to_string(), "compute_75");
        assert_eq!(Target::Cubin(sm75).to_string(), "sm_75");
        assert_eq!("compute_75".parse::<Target>().unwrap(), Target::Ptx(sm75));
        assert_eq!("sm_75".parse::<Target>().unwrap(), Target::Cubin(sm75));
        assert_eq!("75".parse::<Target>().unwrap(), Target::Cubin(sm75));
        assert!("compute_x".parse::<Target>().is_err());
    }
}
