//! Loading NVRTC (libnvrtc) ourselves, so that the user can choose which one.
//!
//! cudarc's loader tries a fixed list of file names, `libnvrtc.so.13` before `libnvrtc.so.12`,
//! whatever the order of the directories on `LD_LIBRARY_PATH`: with both installed it always
//! loads NVRTC 13, which cannot compile for archs older than sm_75 (a GTX 1080 Ti is sm_61).
//! Here the library is [`ENV`] (`AUTOTUNE_NVRTC`) when it is set: a library file, a directory
//! holding `libnvrtc.so*` (the highest-versioned `libnvrtc.so.N` there), or a bare file name
//! the dynamic loader looks up; when it is unset (or empty), the names cudarc tries, in
//! cudarc's order. A chosen library that cannot be loaded is an error: never a fallback to
//! another NVRTC. These rules are the `dylib` module's, shared with cuBLAS.
//!
//! The library is loaded once per process and never unloaded; `get` hands out the function
//! pointers, wrapped in safe calls.

use super::dylib::{self, OpenError};
use std::ffi::{c_char, c_int, c_void, CStr, CString};
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

/// Why libnvrtc could not be loaded (the compiler's error type turns each into its message).
#[derive(Debug, Clone)]
pub(crate) enum LoadError {
    /// No libnvrtc was found.
    Missing,
    /// The library [`ENV`] names could not be loaded (no other is tried).
    Choice {
        /// The variable's value.
        value: String,
        /// What was tried and why it failed.
        tried: String,
    },
    /// The library loaded as NVRTC lacks a function this program calls.
    Unusable {
        /// The library that was loaded.
        library: String,
        /// What is missing.
        reason: String,
    },
}

static NVRTC: OnceLock<Result<Nvrtc, LoadError>> = OnceLock::new();

/// The process's NVRTC, loaded on first use (see the module documentation for which one).
pub(crate) fn get() -> Result<&'static Nvrtc, LoadError> {
    NVRTC.get_or_init(load).as_ref().map_err(Clone::clone)
}

fn load() -> Result<Nvrtc, LoadError> {
    load_value(std::env::var_os(ENV).as_deref())
}

/// The NVRTC that `value` (the value of [`ENV`]) chooses (see [`super::dylib`]).
pub(crate) fn load_value(value: Option<&std::ffi::OsStr>) -> Result<Nvrtc, LoadError> {
    let opened = dylib::open("nvrtc", value, "nvrtcVersion").map_err(|e| match e {
        OpenError::NotFound => LoadError::Missing,
        OpenError::Chosen { value, tried } => LoadError::Choice { value, tried },
    })?;
    Nvrtc::from_library(opened.lib, opened.name)
}

/// Looks up `name` in `lib` as a `T`.
///
/// # Safety
/// `T` must be the C signature of `name` in NVRTC 12 and 13.
unsafe fn symbol<T: Copy>(
    lib: &libloading::Library,
    library: &str,
    name: &'static str,
) -> Result<T, LoadError> {
    // SAFETY: the caller gives the symbol's true type.
    unsafe { dylib::symbol(lib, name) }.map_err(|reason| LoadError::Unusable {
        library: library.to_string(),
        reason,
    })
}

impl Nvrtc {
    fn from_library(lib: libloading::Library, library: String) -> Result<Nvrtc, LoadError> {
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
