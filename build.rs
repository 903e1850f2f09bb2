//! Embeds every kernel template (`templates/*.cu`), the headers they include
//! (`templates/include/*.cuh`), every parameter space (`configs/spaces/*.toml`) and every
//! family's committed fingerprint (`configs/fingerprints/*.toml`) into the
//! library, so the binary works from any directory and a new family is picked up without a
//! code change.
use std::fmt::Write;
use std::path::Path;

fn list(dir: &Path, ext: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.extension().and_then(|x| x.to_str()) == Some(ext) {
                let name = p
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or_default()
                    .to_string();
                let abs = std::fs::canonicalize(&p).unwrap_or(p);
                out.push((name, abs.display().to_string()));
            }
        }
    }
    out.sort();
    out
}

fn main() {
    // Read when the build script runs, not when it is compiled: a target directory shared by
    // checkouts at different paths must embed this checkout's templates.
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let root = Path::new(&manifest);
    let mut code = String::new();
    for (konst, dir, ext) in [
        ("TEMPLATES", root.join("templates"), "cu"),
        ("INCLUDES", root.join("templates/include"), "cuh"),
        ("SPACES", root.join("configs/spaces"), "toml"),
        ("FINGERPRINTS", root.join("configs/fingerprints"), "toml"),
    ] {
        println!("cargo:rerun-if-changed={}", dir.display());
        let _ = writeln!(
            code,
            "/// Embedded `{}` files: (file name, contents).",
            dir.display()
        );
        let _ = writeln!(code, "pub const {konst}: &[(&str, &str)] = &[");
        for (name, abs) in list(&dir, ext) {
            println!("cargo:rerun-if-changed={abs}");
            let _ = writeln!(code, "    ({name:?}, include_str!({abs:?})),");
        }
        let _ = writeln!(code, "];");
    }
    let out =
        std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap_or_default()).join("embedded.rs");
    if let Err(e) = std::fs::write(&out, code) {
        panic!("cannot write {}: {e}", out.display());
    }
}
