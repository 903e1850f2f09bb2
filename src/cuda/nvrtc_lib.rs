//! Loading NVRTC (libnvrtc) ourselves, so that the user can choose which one.
//!
//! cudarc's loader tries a fixed list of file names, `libnvrtc.so.13` before `libnvrtc.so.12`,
//! whatever the order of the directories on `LD_LIBRARY_PATH`: with both installed it always
//! loads NVRTC 13, which cannot compile for archs older than sm_75 (a GTX 1080 Ti is sm_61).
//! Here the library is [`ENV`] (`AUTOTUNE_NVRTC`) when it is set: a library file, a directory
//! holding `libnvrtc.so*` (the highest-versioned `libnvrtc.so.N` there), or a bare file name
//! the dynamic loader looks up. When it is unset (or empty), the names cudarc tries, in
//! cudarc's order, so nothing changes for users who set nothing. A chosen library that cannot
//! be loaded is an error: never a fallback to another NVRTC.
//!
//! The library is loaded once per process and never unloaded; `get` hands out the function
//! pointers, wrapped in safe calls.

use super::nvrtc::CompileError;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The environment variable that chooses the NVRTC library: a file
/// (`/opt/cuda-12/lib64/libnvrtc.so.12`), a directory holding `libnvrtc.so*`, or a file name
/// for the dynamic loader to look up (`libnvrtc.so.12`).
pub const ENV: &str = "AUTOTUNE_NVRTC";

/// `nvrtcProgram`: an opaque handle.
type RawProgram = *mut c_void;
/// `nvrtcResult`: a C enum, kept as its integer so that an unknown value is no undefined
/// behaviour. `NVRTC_SUCCESS` is 0.
type Status = c_int;

type VersionFn = unsafe extern "C" fn(*mut c_int, *mut c_int) -> Status;
type NumArchsFn = unsafe extern "C" fn(*mut c_int) -> Status;
type ArchsFn = unsafe extern "C" fn(*mut c_int) -> Status;
type CreateFn = unsafe extern "C" fn(
    *mut RawProgram,
    *const c_char,
    *const c_char,
    c_int,
    *const *const c_char,
    *const *const c_char,
) -> Status;
type CompileFn = unsafe extern "C" fn(RawProgram, c_int, *const *const c_char) -> Status;
type SizeFn = unsafe extern "C" fn(RawProgram, *mut usize) -> Status;
type FillFn = unsafe extern "C" fn(RawProgram, *mut c_char) -> Status;
type DestroyFn = unsafe extern "C" fn(*mut RawProgram) -> Status;
type ErrorStringFn = unsafe extern "C" fn(Status) -> *const c_char;

/// A loaded NVRTC: the library (kept loaded for the process's life), what was opened, and the
/// functions this crate calls.
pub(crate) struct Nvrtc {
    library: String,
    version: VersionFn,
    num_supported_archs: NumArchsFn,
    supported_archs: ArchsFn,
    create_program: CreateFn,
    compile_program: CompileFn,
    program_log_size: SizeFn,
    program_log: FillFn,
    cubin_size: SizeFn,
    cubin: FillFn,
    ptx_size: SizeFn,
    ptx: FillFn,
    destroy_program: DestroyFn,
    error_string: ErrorStringFn,
    /// Holds the functions above valid: never dropped before them (it lives in a static).
    _lib: libloading::Library,
}

/// An NVRTC call that returned an error: which call, and the status by name.
#[derive(Debug, Clone)]
pub(crate) struct CallError {
    /// The C function.
    pub(crate) step: &'static str,
    /// The status, e.g. `NVRTC_ERROR_COMPILATION (6)`.
    pub(crate) code: String,
}

static NVRTC: OnceLock<Result<Nvrtc, CompileError>> = OnceLock::new();

/// The process's NVRTC, loaded on first use (see the module documentation for which one).
pub(crate) fn get() -> Result<&'static Nvrtc, CompileError> {
    NVRTC.get_or_init(load).as_ref().map_err(Clone::clone)
}

fn load() -> Result<Nvrtc, CompileError> {
    match std::env::var_os(ENV).filter(|v| !v.is_empty()) {
        Some(value) => load_chosen(Path::new(&value)),
        None => load_default(),
    }
}

/// cudarc's candidate names in cudarc's order: the first that loads is used.
fn load_default() -> Result<Nvrtc, CompileError> {
    for name in cudarc::get_lib_name_candidates("nvrtc") {
        // SAFETY: loading libnvrtc runs only its own initialisers (the same call cudarc makes).
        if let Ok(lib) = unsafe { libloading::Library::new(&name) } {
            let mut nvrtc = Nvrtc::from_library(lib, name)?;
            // The loader searched the library path: say which file it found, when we can.
            if let Some(path) = mapped_file(nvrtc.version as usize) {
                nvrtc.library = path;
            }
            return Ok(nvrtc);
        }
    }
    Err(CompileError::NvrtcMissing)
}

/// The library `value` (the value of [`ENV`]) names.
fn load_chosen(value: &Path) -> Result<Nvrtc, CompileError> {
    let fail = |tried: String| CompileError::NvrtcChoice {
        value: value.display().to_string(),
        tried,
    };
    let file = if value.is_dir() {
        newest_in_dir(value).map_err(fail)?
    } else if value.exists() {
        // An absolute path, so that the loader opens this file and searches nothing.
        std::path::absolute(value).map_err(|e| fail(format!("cannot resolve the path: {e}")))?
    } else if value.components().count() == 1 && !value.to_string_lossy().contains('/') {
        // A bare file name such as `libnvrtc.so.12`: the dynamic loader's search.
        let name = value.to_string_lossy().into_owned();
        // SAFETY: as in load_default.
        let lib = unsafe { libloading::Library::new(&name) }.map_err(|e| {
            fail(format!(
                "it is no file or directory here, and the dynamic loader did not find a library of that name on LD_LIBRARY_PATH or in the system directories ({e})"
            ))
        })?;
        let mut nvrtc = Nvrtc::from_library(lib, name)?;
        if let Some(path) = mapped_file(nvrtc.version as usize) {
            nvrtc.library = path;
        }
        return Ok(nvrtc);
    } else {
        return Err(fail("no such file or directory".into()));
    };
    // SAFETY: as in load_default; `file` is a path, so the loader opens exactly that file.
    let lib = unsafe { libloading::Library::new(&file) }
        .map_err(|e| fail(format!("could not load {}: {e}", file.display())))?;
    Nvrtc::from_library(lib, file.display().to_string())
}

/// The version of an NVRTC file name: `libnvrtc.so` is `[]`, `libnvrtc.so.12.9.86` is
/// `[12, 9, 86]`; `None` for anything else (`libnvrtc-builtins.so.13`, `libnvrtc.alt.so.12`).
fn nvrtc_file_version(name: &str) -> Option<Vec<u32>> {
    let rest = name.strip_prefix("libnvrtc.so")?;
    if rest.is_empty() {
        return Some(Vec::new());
    }
    rest.strip_prefix('.')?
        .split('.')
        .map(|part| part.parse::<u32>().ok())
        .collect()
}

/// The highest-versioned `libnvrtc.so.N` in `dir` (else `libnvrtc.so`), or what was found.
fn newest_in_dir(dir: &Path) -> Result<PathBuf, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("cannot read the directory: {e}"))?;
    let best = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            nvrtc_file_version(&name).map(|v| (v, e.path()))
        })
        .max_by(|a, b| a.0.cmp(&b.0));
    best.map(|(_, path)| path).ok_or_else(|| {
        "the directory holds no libnvrtc.so or libnvrtc.so.N (give the lib directory of an NVRTC install, or the library file itself)".to_string()
    })
}

/// The file mapped at `addr` in this process (from `/proc/self/maps`), if it can be read.
fn mapped_file(addr: usize) -> Option<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines().find_map(|line| {
        // `start-end perms offset dev inode   path`
        let mut fields = line.splitn(6, ' ');
        let (start, end) = fields.next()?.split_once('-')?;
        let (start, end) = (
            usize::from_str_radix(start, 16).ok()?,
            usize::from_str_radix(end, 16).ok()?,
        );
        let path = fields.nth(4)?.trim();
        (start <= addr && addr < end && path.starts_with('/')).then(|| path.to_string())
    })
}

/// Looks up `name` in `lib` as a `T`.
///
/// # Safety
/// `T` must be the C signature of `name` in NVRTC 12 and 13.
unsafe fn symbol<T: Copy>(
    lib: &libloading::Library,
    library: &str,
    name: &'static str,
) -> Result<T, CompileError> {
    // SAFETY: the caller gives the symbol's true type.
    match unsafe { lib.get::<T>(name) } {
        Ok(sym) => Ok(*sym),
        Err(e) => Err(CompileError::NvrtcUnusable {
            library: library.to_string(),
            reason: format!("it has no {name} ({e})"),
        }),
    }
}

impl Nvrtc {
    fn from_library(lib: libloading::Library, library: String) -> Result<Nvrtc, CompileError> {
        let l = library.as_str();
        // SAFETY (each lookup): the types are the declarations of nvrtc.h in CUDA 12 and 13
        // (as cudarc's bindings give them), with `nvrtcResult` as its `int`.
        unsafe {
            Ok(Nvrtc {
                version: symbol(&lib, l, "nvrtcVersion")?,
                num_supported_archs: symbol(&lib, l, "nvrtcGetNumSupportedArchs")?,
                supported_archs: symbol(&lib, l, "nvrtcGetSupportedArchs")?,
                create_program: symbol(&lib, l, "nvrtcCreateProgram")?,
                compile_program: symbol(&lib, l, "nvrtcCompileProgram")?,
                program_log_size: symbol(&lib, l, "nvrtcGetProgramLogSize")?,
                program_log: symbol(&lib, l, "nvrtcGetProgramLog")?,
                cubin_size: symbol(&lib, l, "nvrtcGetCUBINSize")?,
                cubin: symbol(&lib, l, "nvrtcGetCUBIN")?,
                ptx_size: symbol(&lib, l, "nvrtcGetPTXSize")?,
                ptx: symbol(&lib, l, "nvrtcGetPTX")?,
                destroy_program: symbol(&lib, l, "nvrtcDestroyProgram")?,
                error_string: symbol(&lib, l, "nvrtcGetErrorString")?,
                library,
                _lib: lib,
            })
        }
    }

    /// What was opened: the library's path, or the name the loader was given when the path
    /// cannot be found.
    pub(crate) fn library(&self) -> &str {
        &self.library
    }

    fn check(&self, step: &'static str, rc: Status) -> Result<(), CallError> {
        if rc == 0 {
            return Ok(());
        }
        // SAFETY: nvrtcGetErrorString accepts any status and returns a static string or NULL.
        let name = unsafe { (self.error_string)(rc) };
        let code = if name.is_null() {
            format!("status {rc}")
        } else {
            // SAFETY: non-NULL: a static NUL-terminated string.
            let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
            format!("{name} ({rc})")
        };
        Err(CallError { step, code })
    }

    /// `(major, minor)`.
    pub(crate) fn version(&self) -> Result<(i32, i32), CallError> {
        let (mut major, mut minor) = (0, 0);
        // SAFETY: both out-pointers are valid for writes.
        let rc = unsafe { (self.version)(&mut major, &mut minor) };
        self.check("nvrtcVersion", rc)?;
        Ok((major, minor))
    }

    /// The archs it can target, as numbers (e.g. 75, 80, 90).
    pub(crate) fn supported_archs(&self) -> Result<Vec<i32>, CallError> {
        let mut n: c_int = 0;
        // SAFETY: valid out-pointer.
        let rc = unsafe { (self.num_supported_archs)(&mut n) };
        self.check("nvrtcGetNumSupportedArchs", rc)?;
        let mut archs = vec![0 as c_int; n.max(0) as usize];
        if archs.is_empty() {
            return Ok(archs);
        }
        // SAFETY: `archs` has room for the `n` entries NVRTC reported.
        let rc = unsafe { (self.supported_archs)(archs.as_mut_ptr()) };
        self.check("nvrtcGetSupportedArchs", rc)?;
        Ok(archs)
    }

    /// A program of `src`, called `name` in NVRTC's messages.
    pub(crate) fn create_program(&self, src: &CStr, name: &CStr) -> Result<Program<'_>, CallError> {
        let mut raw: RawProgram = std::ptr::null_mut();
        // SAFETY: valid out-pointer; `src` and `name` are NUL-terminated and outlive the call
        // (NVRTC copies them); no headers.
        let rc = unsafe {
            (self.create_program)(
                &mut raw,
                src.as_ptr(),
                name.as_ptr(),
                0,
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        self.check("nvrtcCreateProgram", rc)?;
        Ok(Program { nvrtc: self, raw })
    }
}

/// A live NVRTC program, destroyed on drop.
pub(crate) struct Program<'a> {
    nvrtc: &'a Nvrtc,
    raw: RawProgram,
}

impl Program<'_> {
    /// Compiles with `options`.
    pub(crate) fn compile(&self, options: &[String]) -> Result<(), CallError> {
        let options = options
            .iter()
            .map(|o| CString::new(o.as_str()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| CallError {
                step: "nvrtcCompileProgram",
                code: "an option holds a NUL byte".into(),
            })?;
        let ptrs: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
        let n = c_int::try_from(ptrs.len()).map_err(|_| CallError {
            step: "nvrtcCompileProgram",
            code: "too many options".into(),
        })?;
        // SAFETY: a live program; `ptrs` holds `n` NUL-terminated strings that outlive the call.
        let rc = unsafe { (self.nvrtc.compile_program)(self.raw, n, ptrs.as_ptr()) };
        self.nvrtc.check("nvrtcCompileProgram", rc)
    }

    /// The compile log.
    pub(crate) fn log(&self) -> Result<String, CallError> {
        let mut size = 0usize;
        // SAFETY: a live program; valid out-pointer.
        let rc = unsafe { (self.nvrtc.program_log_size)(self.raw, &mut size) };
        self.nvrtc.check("nvrtcGetProgramLogSize", rc)?;
        // The size counts the terminating NUL; one more byte in case it does not.
        let mut buf = vec![0u8; size + 1];
        // SAFETY: `buf` has room for the `size` bytes NVRTC reported.
        let rc = unsafe { (self.nvrtc.program_log)(self.raw, buf.as_mut_ptr().cast()) };
        self.nvrtc.check("nvrtcGetProgramLog", rc)?;
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        Ok(String::from_utf8_lossy(&buf[..end]).into_owned())
    }

    /// The cubin of a compiled program.
    pub(crate) fn cubin(&self) -> Result<Vec<u8>, CallError> {
        let mut size = 0usize;
        // SAFETY: a live program; valid out-pointer.
        let rc = unsafe { (self.nvrtc.cubin_size)(self.raw, &mut size) };
        self.nvrtc.check("nvrtcGetCUBINSize", rc)?;
        let mut cubin = vec![0u8; size];
        if cubin.is_empty() {
            return Ok(cubin);
        }
        // SAFETY: `cubin` has the size NVRTC reported.
        let rc = unsafe { (self.nvrtc.cubin)(self.raw, cubin.as_mut_ptr().cast()) };
        self.nvrtc.check("nvrtcGetCUBIN", rc)?;
        Ok(cubin)
    }

    /// The PTX of a program compiled for a virtual arch (`compute_XY`), NUL-terminated as the
    /// driver's module loader wants it.
    pub(crate) fn ptx(&self) -> Result<Vec<u8>, CallError> {
        let mut size = 0usize;
        // SAFETY: a live program; valid out-pointer.
        let rc = unsafe { (self.nvrtc.ptx_size)(self.raw, &mut size) };
        self.nvrtc.check("nvrtcGetPTXSize", rc)?;
        // The size counts the terminating NUL; one more byte in case it does not.
        let mut ptx = vec![0u8; size + 1];
        // SAFETY: `ptx` has room for the `size` bytes NVRTC reported.
        let rc = unsafe { (self.nvrtc.ptx)(self.raw, ptx.as_mut_ptr().cast()) };
        self.nvrtc.check("nvrtcGetPTX", rc)?;
        let end = ptx.iter().position(|&b| b == 0).unwrap_or(size);
        ptx.truncate(end);
        ptx.push(0);
        Ok(ptx)
    }
}

impl Drop for Program<'_> {
    fn drop(&mut self) {
        // SAFETY: created by nvrtcCreateProgram and destroyed only here.
        let _ = unsafe { (self.nvrtc.destroy_program)(&mut self.raw) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_versions() {
        assert_eq!(nvrtc_file_version("libnvrtc.so"), Some(vec![]));
        assert_eq!(nvrtc_file_version("libnvrtc.so.12"), Some(vec![12]));
        assert_eq!(
            nvrtc_file_version("libnvrtc.so.12.9.86"),
            Some(vec![12, 9, 86])
        );
        for other in [
            "libnvrtc-builtins.so.13.5",
            "libnvrtc.alt.so.12",
            "libnvrtc.so.x",
            "libnvrtc.so.",
            "libnvrtc.sox",
            "libnvrtc.a",
        ] {
            assert_eq!(nvrtc_file_version(other), None, "{other}");
        }
    }

    #[test]
    fn newest_in_dir_prefers_the_highest_major() {
        let dir = tempfile::tempdir().unwrap();
        for f in [
            "libnvrtc.so",
            "libnvrtc.so.9",
            "libnvrtc.so.12",
            "libnvrtc-builtins.so.13",
            "libnvrtc.alt.so.13",
        ] {
            std::fs::write(dir.path().join(f), b"").unwrap();
        }
        assert_eq!(
            newest_in_dir(dir.path()).unwrap(),
            dir.path().join("libnvrtc.so.12")
        );
        let empty = tempfile::tempdir().unwrap();
        let e = newest_in_dir(empty.path()).unwrap_err();
        assert!(e.contains("no libnvrtc.so"), "{e}");
    }

    #[test]
    fn a_chosen_library_that_is_missing_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope/libnvrtc.so.12");
        let e = load_chosen(&missing).err().unwrap().to_string();
        assert!(e.contains(&missing.display().to_string()), "{e}");
        assert!(e.contains("AUTOTUNE_NVRTC"), "{e}");
        // A file that is no library: the loader's reason, no fallback.
        let junk = dir.path().join("libnvrtc.so.12");
        std::fs::write(&junk, b"not a library").unwrap();
        let e = load_chosen(&junk).err().unwrap().to_string();
        assert!(e.contains("could not load"), "{e}");
        let e = load_chosen(dir.path()).err().unwrap().to_string();
        assert!(e.contains("could not load"), "{e}");
        let e = load_chosen(Path::new("libnvrtc.so.no-such-version"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("dynamic loader"), "{e}");
    }

    #[test]
    fn maps_name_this_executable() {
        let here = maps_name_this_executable as fn() as usize;
        if let Some(path) = mapped_file(here) {
            assert!(path.starts_with('/'), "{path}");
        }
    }
}
