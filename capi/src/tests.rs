//! The header against the code, and the calls without a GPU.

use super::*;
use std::collections::BTreeMap;

const HEADER: &str = include_str!("../include/autotune.h");
const SOURCE: &str = include_str!("lib.rs");

/// The header with its comments left out.
fn header_code() -> String {
    let mut out = String::new();
    let mut rest = HEADER;
    while let Some(i) = rest.find("/*") {
        out.push_str(&rest[..i]);
        rest = rest[i..].find("*/").map_or("", |j| &rest[i + j + 2..]);
    }
    out.push_str(rest);
    out
}

/// Each function's parameter types as the header declares them, in the Rust spelling.
fn header_functions() -> BTreeMap<String, Vec<String>> {
    let code = header_code();
    let mut out = BTreeMap::new();
    for decl in code.split(';') {
        let decl = decl.split_whitespace().collect::<Vec<_>>().join(" ");
        let Some(open) = decl.find('(') else { continue };
        let head = &decl[..open];
        if !(head.starts_with("autotune_status_t ") || head.starts_with("const char *")) {
            continue;
        }
        let name = head.rsplit([' ', '*']).next().unwrap_or_default();
        let params = &decl[open + 1..decl.rfind(')').unwrap_or(decl.len())];
        let types = params
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty() && *p != "void")
            .map(|p| {
                // The type is all but the last word (the name).
                let ty = p[..p.rfind([' ', '*']).map_or(0, |i| i + 1)].trim();
                rust_type(ty).unwrap_or_else(|| panic!("{name}: no Rust spelling for `{ty}`"))
            })
            .collect();
        out.insert(name.to_string(), types);
    }
    out
}

/// A C parameter type as the Rust code spells it.
fn rust_type(c: &str) -> Option<String> {
    let t = match c.replace(" *", "*").as_str() {
        "autotune_handle_t" => "*mut Handle",
        "autotune_handle_t*" => "*mut *mut Handle",
        "autotune_operation_t" | "int" => "c_int",
        "autotune_status_t" => "c_int",
        "float" => "f32",
        "const float*" => "*const f32",
        "float*" => "*mut f32",
        "long long int" => "c_longlong",
        "char*" => "*mut c_char",
        "const char*" => "*const c_char",
        "size_t" => "usize",
        "size_t*" => "*mut usize",
        "void*" => "*mut c_void",
        "void**" => "*mut *mut c_void",
        _ => return None,
    };
    Some(t.to_string())
}

/// Each exported function's parameter types as the Rust code declares them.
fn rust_functions() -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for part in SOURCE.split("extern \"C\" fn ").skip(1) {
        let open = part.find('(').unwrap_or_default();
        let name = part[..open].trim().to_string();
        let close = part.find(") ->").unwrap_or(part.len());
        let types = part[open + 1..close]
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| p.split_once(':').map_or("", |(_, t)| t.trim()).to_string())
            .collect();
        out.insert(name, types);
    }
    out
}

#[test]
fn the_header_declares_what_the_library_exports() {
    let (header, rust) = (header_functions(), rust_functions());
    assert!(header.len() >= 12, "{header:?}");
    assert_eq!(
        header.keys().collect::<Vec<_>>(),
        rust.keys().collect::<Vec<_>>()
    );
    for (name, types) in &header {
        assert_eq!(types, &rust[name], "{name}: parameter types differ");
    }
}

#[test]
fn the_header_has_every_status_with_its_value() {
    let code = header_code();
    for s in Status::ALL {
        let decl = format!("{} = {}", s.name(), s as i32);
        assert!(code.contains(&decl), "the header lacks `{decl}`");
    }
    assert_eq!(code.matches("AUTOTUNE_STATUS_").count(), Status::ALL.len());
}

#[test]
fn calls_on_a_null_handle_are_a_status() {
    let null = std::ptr::null_mut();
    let one = 1f32;
    unsafe {
        let p = std::ptr::null();
        let s = autotune_sgemm(null, 0, 0, 4, 4, 4, &one, p, 4, p, 4, &one, null.cast(), 4);
        assert_eq!(s, Status::NotInitialized);
        let s = autotune_sgemv(null, 0, 4, 4, &one, p, 4, p, 1, &one, null.cast(), 1);
        assert_eq!(s, Status::NotInitialized);
        assert_eq!(autotune_destroy(null), Status::NotInitialized);
        assert_eq!(
            autotune_set_stream(null, null.cast()),
            Status::NotInitialized
        );
        let msg = CStr::from_ptr(autotune_last_error()).to_str().unwrap();
        assert!(msg.contains("null"), "{msg}");
        assert_eq!(
            autotune_create(std::ptr::null_mut(), 0, std::ptr::null()),
            Status::InvalidValue
        );
    }
}

#[test]
fn status_strings_are_static_text() {
    for s in Status::ALL {
        let text = unsafe { CStr::from_ptr(autotune_status_string(s as c_int)) };
        assert!(text.to_str().unwrap().starts_with(s.name()));
    }
    let unknown = unsafe { CStr::from_ptr(autotune_status_string(-5)) };
    assert!(unknown.to_str().unwrap().contains("UNKNOWN"));
}

#[test]
fn a_missing_database_file_is_a_status() {
    let mut h: *mut Handle = std::ptr::null_mut();
    let path = c"/nonexistent/tuning.toml";
    let s = unsafe { autotune_create(&mut h, 0, path.as_ptr()) };
    assert_eq!(s, Status::DatabaseError);
    assert!(h.is_null());
}

/// Without a driver (CI, where AUTOTUNE_REQUIRE_NO_CUDA is set), creating a handle is
/// `NO_DEVICE`, not a crash; with one, it succeeds or names its failure.
#[test]
fn no_driver_is_a_status() {
    let mut h: *mut Handle = std::ptr::null_mut();
    let s = unsafe { autotune_create(&mut h, 0, std::ptr::null()) };
    if std::env::var_os("AUTOTUNE_REQUIRE_NO_CUDA").is_some() {
        assert_eq!(s, Status::NoDevice);
    }
    if s == Status::Success {
        assert_eq!(unsafe { autotune_destroy(h) }, Status::Success);
    } else {
        assert!(h.is_null());
    }
    let mut h: *mut Handle = std::ptr::null_mut();
    let s = unsafe { autotune_create(&mut h, -1, std::ptr::null()) };
    assert_eq!(s, Status::InvalidValue);
}

#[test]
fn explain_text_is_written_as_snprintf_writes() {
    let mut buf = [b'x' as c_char; 6];
    let mut len = 0usize;
    unsafe { write_text("abcdefgh", buf.as_mut_ptr(), buf.len(), &mut len) }.unwrap();
    assert_eq!(len, 8);
    let s = unsafe { CStr::from_ptr(buf.as_ptr()) };
    assert_eq!(s.to_str().unwrap(), "abcde");
    unsafe { write_text("abc", std::ptr::null_mut(), 0, &mut len) }.unwrap();
    assert_eq!(len, 3);
    assert!(unsafe { write_text("abc", std::ptr::null_mut(), 4, &mut len) }.is_err());
}
