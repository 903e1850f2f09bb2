//! Opening a CUDA library that the user can choose with an environment variable: the rules
//! [`super::nvrtc_lib`] (`AUTOTUNE_NVRTC`) and [`super::cublas_lib`] (`AUTOTUNE_CUBLAS`) share.
//!
//! cudarc's loader tries a fixed list of file names, `libNAME.so.13` before `libNAME.so.12`,
//! whatever the order of the directories on `LD_LIBRARY_PATH`: with CUDA 12 and 13 both
//! installed it always loads 13's. Here the variable's value, when it is set, is a library
//! file, a directory holding `libNAME.so*` (the highest-versioned `libNAME.so.N` there), or a
//! bare file name the dynamic loader looks up. Unset (or empty): the names cudarc tries, in
//! cudarc's order, so nothing changes for users who set nothing. A chosen library that cannot
//! be loaded is an error: never a fallback to another.

use std::ffi::{c_void, OsStr};
use std::path::{Path, PathBuf};

/// An opened library and what it is called in messages.
pub(crate) struct Opened {
    /// The library; the caller keeps it loaded while it uses its symbols.
    pub(crate) lib: libloading::Library,
    /// The file's path, or the name the dynamic loader was given when the path cannot be found.
    pub(crate) name: String,
}

/// Why no library was opened.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum OpenError {
    /// The variable is unset and none of cudarc's candidate names loaded.
    NotFound,
    /// The library the variable names could not be loaded (no other was tried).
    Chosen {
        /// The variable's value.
        value: String,
        /// What was tried and why it failed.
        tried: String,
    },
}

/// Opens library `lib` (`"nvrtc"`, `"cublas"`) as `value` (the variable's value) chooses.
/// Where the dynamic loader searched for a name, the name is replaced by the path of the file
/// that holds `probe` (one of the library's functions), when it can be found.
pub(crate) fn open(lib: &str, value: Option<&OsStr>, probe: &str) -> Result<Opened, OpenError> {
    let (lib, name, searched) = match value.filter(|v| !v.is_empty()) {
        Some(value) => {
            let value = Path::new(value);
            open_chosen(lib, value).map_err(|tried| OpenError::Chosen {
                value: value.display().to_string(),
                tried,
            })?
        }
        None => open_default(lib).ok_or(OpenError::NotFound)?,
    };
    let mut opened = Opened { lib, name };
    if searched {
        // SAFETY: only the symbol's address is read, never called or dereferenced.
        let addr = unsafe { opened.lib.get::<*const c_void>(probe) }.map(|s| *s as usize);
        if let Some(path) = addr.ok().and_then(mapped_file) {
            opened.name = path;
        }
    }
    Ok(opened)
}

/// Looks up `name` in `lib` as a `T`, or says that the library lacks it.
///
/// # Safety
/// `T` must be the C signature of `name` in the library's supported versions.
pub(crate) unsafe fn symbol<T: Copy>(lib: &libloading::Library, name: &str) -> Result<T, String> {
    // SAFETY: the caller gives the symbol's true type.
    unsafe { lib.get::<T>(name) }
        .map(|sym| *sym)
        .map_err(|e| format!("it has no {name} ({e})"))
}

/// cudarc's candidate names in cudarc's order: the first that loads, its name, and `true`
/// (the loader searched).
fn open_default(lib: &str) -> Option<(libloading::Library, String, bool)> {
    cudarc::get_lib_name_candidates(lib)
        .into_iter()
        // SAFETY: loading a CUDA library runs only its own initialisers (the call cudarc makes).
        .find_map(|name| Some((unsafe { libloading::Library::new(&name) }.ok()?, name, true)))
}

/// The library `value` names: the library, its name, and whether the loader searched for it;
/// else what was tried.
fn open_chosen(lib: &str, value: &Path) -> Result<(libloading::Library, String, bool), String> {
    let file = if value.is_dir() {
        newest_in_dir(lib, value)?
    } else if value.exists() {
        // An absolute path, so that the loader opens this file and searches nothing.
        std::path::absolute(value).map_err(|e| format!("cannot resolve the path: {e}"))?
    } else if value.components().count() == 1 && !value.to_string_lossy().contains('/') {
        // A bare file name such as `libnvrtc.so.12`: the dynamic loader's search.
        let name = value.to_string_lossy().into_owned();
        // SAFETY: as in open_default.
        let lib = unsafe { libloading::Library::new(&name) }.map_err(|e| {
            format!(
                "it is no file or directory here, and the dynamic loader did not find a library of that name on LD_LIBRARY_PATH or in the system directories ({e})"
            )
        })?;
        return Ok((lib, name, true));
    } else {
        return Err("no such file or directory".into());
    };
    // SAFETY: as in open_default; `file` is a path, so the loader opens exactly that file.
    let opened = unsafe { libloading::Library::new(&file) }
        .map_err(|e| format!("could not load {}: {e}", file.display()))?;
    Ok((opened, file.display().to_string(), false))
}

/// `libNAME.so` for library `lib` (`libnvrtc.so`).
fn file_stem(lib: &str) -> String {
    use std::env::consts::{DLL_PREFIX, DLL_SUFFIX};
    format!("{DLL_PREFIX}{lib}{DLL_SUFFIX}")
}

/// The version of a file name of library `lib`: for `nvrtc`, `libnvrtc.so` is `[]`,
/// `libnvrtc.so.12.9.86` is `[12, 9, 86]`; `None` for anything else (`libnvrtc-builtins.so.13`,
/// `libnvrtc.alt.so.12`).
fn file_version(lib: &str, name: &str) -> Option<Vec<u32>> {
    let rest = name.strip_prefix(&file_stem(lib))?;
    if rest.is_empty() {
        return Some(Vec::new());
    }
    rest.strip_prefix('.')?
        .split('.')
        .map(|part| part.parse::<u32>().ok())
        .collect()
}

/// The highest-versioned `libNAME.so.N` in `dir` (else `libNAME.so`), or what was found.
fn newest_in_dir(lib: &str, dir: &Path) -> Result<PathBuf, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("cannot read the directory: {e}"))?;
    let best = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            file_version(lib, &name).map(|v| (v, e.path()))
        })
        .max_by(|a, b| a.0.cmp(&b.0));
    best.map(|(_, path)| path).ok_or_else(|| {
        let stem = file_stem(lib);
        format!("the directory holds no {stem} or {stem}.N (give the lib directory that holds the library, or the library file itself)")
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

/// For the loaders' tests: values of the variable that fail to load library `lib`, made in
/// `dir`: a file that is no library, a directory holding only that file, a missing path.
#[cfg(test)]
pub(crate) fn unloadable_values(lib: &str, dir: &Path) -> [PathBuf; 3] {
    let junk = dir.join(format!("{}.12", file_stem(lib)));
    std::fs::write(&junk, b"not a library").unwrap();
    [junk, dir.to_path_buf(), dir.join("nope")]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chosen_err(lib: &str, value: &Path) -> String {
        match open(lib, Some(value.as_os_str()), "probe") {
            Err(OpenError::Chosen { value: v, tried }) => {
                assert_eq!(v, value.display().to_string());
                tried
            }
            Err(e) => panic!("{e:?}"),
            Ok(o) => panic!("{} loaded", o.name),
        }
    }

    #[test]
    fn file_versions() {
        assert_eq!(file_version("nvrtc", "libnvrtc.so"), Some(vec![]));
        assert_eq!(file_version("nvrtc", "libnvrtc.so.12"), Some(vec![12]));
        assert_eq!(
            file_version("nvrtc", "libnvrtc.so.12.9.86"),
            Some(vec![12, 9, 86])
        );
        assert_eq!(file_version("cublas", "libcublas.so.13"), Some(vec![13]));
        for other in [
            "libnvrtc-builtins.so.13.5",
            "libnvrtc.alt.so.12",
            "libnvrtc.so.x",
            "libnvrtc.so.",
            "libnvrtc.sox",
            "libnvrtc.a",
            "libcublas.so.12",
        ] {
            assert_eq!(file_version("nvrtc", other), None, "{other}");
        }
        // cuBLAS's companion library is not cuBLAS.
        assert_eq!(file_version("cublas", "libcublasLt.so.13"), None);
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
            "libcublas.so.11",
            "libcublas.so.12.9.1.4",
            "libcublas.so.12",
            "libcublasLt.so.13",
        ] {
            std::fs::write(dir.path().join(f), b"").unwrap();
        }
        let newest = |lib| newest_in_dir(lib, dir.path()).unwrap();
        assert_eq!(newest("nvrtc"), dir.path().join("libnvrtc.so.12"));
        assert_eq!(newest("cublas"), dir.path().join("libcublas.so.12.9.1.4"));
        let empty = tempfile::tempdir().unwrap();
        let e = newest_in_dir("cublas", empty.path()).unwrap_err();
        assert!(e.contains("no libcublas.so"), "{e}");
    }

    #[test]
    fn a_chosen_library_that_fails_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope/libcublas.so.12");
        let e = chosen_err("cublas", &missing);
        assert!(e.contains("no such file"), "{e}");
        // A file that is no library: the loader's reason, no fallback.
        let junk = dir.path().join("libcublas.so.12");
        std::fs::write(&junk, b"not a library").unwrap();
        let e = chosen_err("cublas", &junk);
        assert!(
            e.contains(&format!("could not load {}", junk.display())),
            "{e}"
        );
        // A directory: its highest version is the one tried.
        std::fs::write(dir.path().join("libcublas.so.13"), b"junk").unwrap();
        let e = chosen_err("cublas", dir.path());
        let newest = dir.path().join("libcublas.so.13");
        assert!(
            e.contains(&format!("could not load {}", newest.display())),
            "{e}"
        );
        // A bare name the loader does not find.
        let e = chosen_err("cublas", Path::new("libcublas.so.no-such-version"));
        assert!(e.contains("dynamic loader"), "{e}");
    }

    #[test]
    fn a_bare_name_is_found_by_the_loader_and_named_by_its_path() {
        // libc is on every Linux machine: the loader finds it, and its path is reported.
        let opened = open("c", Some(OsStr::new("libc.so.6")), "malloc").unwrap();
        assert!(opened.name.starts_with('/'), "{}", opened.name);
        assert!(opened.name.contains("libc"), "{}", opened.name);
    }

    #[test]
    fn empty_is_unset() {
        // No library of that name anywhere: unset and empty both try cudarc's names, and fail
        // as "not found", never as a chosen library.
        let lib = "autotune-no-such-library";
        assert_eq!(open(lib, None, "f").err(), Some(OpenError::NotFound));
        assert_eq!(
            open(lib, Some(OsStr::new("")), "f").err(),
            Some(OpenError::NotFound)
        );
    }

    #[test]
    fn maps_name_this_executable() {
        let here = maps_name_this_executable as fn() as usize;
        if let Some(path) = mapped_file(here) {
            assert!(path.starts_with('/'), "{path}");
        }
    }
}
