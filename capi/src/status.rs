//! The status every call returns, and why: the runtime's errors as status codes, with the
//! message of the last failure kept per thread (`autotune_last_error`).

use crate::mapping::ArgError;
use autotune_rt::cuda::device::DeviceError;
use autotune_rt::product::runtime::RuntimeError;
use std::cell::RefCell;
use std::ffi::{c_char, CString};

/// `autotune_status_t`. The values cuBLAS's `cublasStatus_t` has are cuBLAS's, so a product's
/// checks read the same; the codes from 100 on are the runtime's own.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// The call succeeded (or had nothing to do).
    Success = 0,
    /// The handle is null.
    NotInitialized = 1,
    /// Device or host memory could not be allocated.
    AllocFailed = 3,
    /// An argument is invalid (a null pointer, a negative size, a leading dimension too small,
    /// an unknown transpose, overlapping outputs): nothing was launched.
    InvalidValue = 7,
    /// A launch or a driver call failed.
    ExecutionFailed = 13,
    /// A failure inside the library (a caught panic): a bug to report.
    InternalError = 14,
    /// A call cuBLAS accepts that this library does not compute (increments other than 1,
    /// `k == 0`).
    NotSupported = 15,
    /// No NVIDIA driver, or no such GPU.
    NoDevice = 100,
    /// The tuning database could not be read or parsed.
    DatabaseError = 101,
    /// NVRTC is missing or could not compile the chosen kernel.
    CompileError = 102,
}

impl Status {
    /// Every status, in the header's order.
    pub const ALL: [Status; 10] = [
        Status::Success,
        Status::NotInitialized,
        Status::AllocFailed,
        Status::InvalidValue,
        Status::ExecutionFailed,
        Status::InternalError,
        Status::NotSupported,
        Status::NoDevice,
        Status::DatabaseError,
        Status::CompileError,
    ];

    /// The name the header gives it.
    pub fn name(self) -> &'static str {
        match self {
            Status::Success => "AUTOTUNE_STATUS_SUCCESS",
            Status::NotInitialized => "AUTOTUNE_STATUS_NOT_INITIALIZED",
            Status::AllocFailed => "AUTOTUNE_STATUS_ALLOC_FAILED",
            Status::InvalidValue => "AUTOTUNE_STATUS_INVALID_VALUE",
            Status::ExecutionFailed => "AUTOTUNE_STATUS_EXECUTION_FAILED",
            Status::InternalError => "AUTOTUNE_STATUS_INTERNAL_ERROR",
            Status::NotSupported => "AUTOTUNE_STATUS_NOT_SUPPORTED",
            Status::NoDevice => "AUTOTUNE_STATUS_NO_DEVICE",
            Status::DatabaseError => "AUTOTUNE_STATUS_DATABASE_ERROR",
            Status::CompileError => "AUTOTUNE_STATUS_COMPILE_ERROR",
        }
    }

    /// `autotune_status_string`: the name and what it means, NUL-terminated, static.
    pub fn text(self) -> &'static str {
        match self {
            Status::Success => "AUTOTUNE_STATUS_SUCCESS: success\0",
            Status::NotInitialized => "AUTOTUNE_STATUS_NOT_INITIALIZED: the handle is null\0",
            Status::AllocFailed => "AUTOTUNE_STATUS_ALLOC_FAILED: memory could not be allocated\0",
            Status::InvalidValue => "AUTOTUNE_STATUS_INVALID_VALUE: an argument is invalid; nothing was launched\0",
            Status::ExecutionFailed => "AUTOTUNE_STATUS_EXECUTION_FAILED: a launch or a CUDA driver call failed\0",
            Status::InternalError => "AUTOTUNE_STATUS_INTERNAL_ERROR: a failure inside libautotune (please report it)\0",
            Status::NotSupported => "AUTOTUNE_STATUS_NOT_SUPPORTED: cuBLAS accepts this call, libautotune does not compute it\0",
            Status::NoDevice => "AUTOTUNE_STATUS_NO_DEVICE: no NVIDIA driver (libcuda) or no such GPU\0",
            Status::DatabaseError => "AUTOTUNE_STATUS_DATABASE_ERROR: the tuning database could not be read\0",
            Status::CompileError => "AUTOTUNE_STATUS_COMPILE_ERROR: NVRTC is missing or could not compile the kernel\0",
        }
    }
}

/// Why a call failed: a status and the message `autotune_last_error` returns.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// A null handle.
    #[error("the handle is null: create one with autotune_create")]
    NullHandle,
    /// A null pointer argument.
    #[error("{0} is a null pointer")]
    Null(&'static str),
    /// A text argument that is not UTF-8.
    #[error("{0} is not UTF-8")]
    NotUtf8(&'static str),
    /// The database file does not exist.
    #[error(
        "the tuning database {0} does not exist (pass NULL for the one built into libautotune)"
    )]
    NoDatabase(String),
    /// Refused arguments.
    #[error(transparent)]
    Arg(#[from] ArgError),
    /// The runtime's error.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// A caught panic.
    #[error("internal failure: {0}")]
    Panic(String),
}

impl Failure {
    /// The status it is returned as.
    pub fn status(&self) -> Status {
        match self {
            Failure::NullHandle => Status::NotInitialized,
            Failure::Null(_) | Failure::NotUtf8(_) => Status::InvalidValue,
            Failure::NoDatabase(_) => Status::DatabaseError,
            Failure::Arg(a) if a.is_unsupported() => Status::NotSupported,
            Failure::Arg(_) => Status::InvalidValue,
            Failure::Panic(_) => Status::InternalError,
            Failure::Runtime(e) => match e {
                RuntimeError::Db(_) => Status::DatabaseError,
                RuntimeError::Catalog(_) => Status::InternalError,
                RuntimeError::Device(DeviceError::NoDriver | DeviceError::NoDevice { .. }) => {
                    Status::NoDevice
                }
                RuntimeError::Device(_) => Status::ExecutionFailed,
                RuntimeError::Shape(_)
                | RuntimeError::Desc(_)
                | RuntimeError::BufferLength { .. } => Status::InvalidValue,
                RuntimeError::Compile(_) => Status::CompileError,
                RuntimeError::Config { .. } | RuntimeError::Launch { .. } => {
                    Status::ExecutionFailed
                }
            },
        }
    }
}

thread_local! {
    /// The message of this thread's last failed call.
    static LAST: RefCell<CString> = RefCell::new(CString::default());
}

/// Keeps `message` as this thread's last error (interior NULs dropped).
pub fn set_last_error(message: &str) {
    let text = CString::new(message.replace('\0', "")).unwrap_or_default();
    LAST.with(|l| *l.borrow_mut() = text);
}

/// This thread's last error message, valid until this thread's next call into the library.
pub fn last_error() -> *const c_char {
    LAST.with(|l| l.borrow().as_ptr())
}

/// The result of a call as its status, keeping the message of a failure.
pub fn finish(r: Result<(), Failure>) -> Status {
    match r {
        Ok(()) => Status::Success,
        Err(e) => {
            set_last_error(&e.to_string());
            e.status()
        }
    }
}

/// Runs `f`, turning a panic into [`Failure::Panic`]: nothing unwinds across the C ABI.
pub fn guard(f: impl FnOnce() -> Result<(), Failure>) -> Status {
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let msg = p
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| p.downcast_ref::<&str>().copied())
            .unwrap_or("unknown panic");
        Err(Failure::Panic(msg.to_string()))
    });
    finish(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_is_a_status_with_its_message() {
        let s = guard(|| panic!("boom"));
        assert_eq!(s, Status::InternalError);
        let msg = unsafe { std::ffi::CStr::from_ptr(last_error()) };
        assert_eq!(msg.to_str().unwrap(), "internal failure: boom");
        assert_eq!(guard(|| Ok(())), Status::Success);
    }

    #[test]
    fn every_status_has_a_terminated_text_starting_with_its_name() {
        for s in Status::ALL {
            assert!(s.text().starts_with(s.name()), "{s:?}");
            assert!(s.text().ends_with('\0') && s.text().matches('\0').count() == 1);
        }
    }
}
