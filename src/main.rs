//! The `autotune` command line: a thin layer over the library.
mod cli;

fn main() {
    // cudarc panics when a CUDA library cannot be loaded; the library checks first, and this
    // hook turns anything that slips through into one readable line.
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("unknown panic");
        eprintln!("Error: internal failure: {msg}");
        if msg.contains("Unable to dynamically load") {
            eprintln!("A CUDA library is missing: install the NVIDIA driver (libcuda), NVRTC and cuBLAS from CUDA 12 or 13, and put their lib directories on LD_LIBRARY_PATH.");
        }
    }));
    match std::panic::catch_unwind(cli::main) {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            eprintln!("Error: {}", message(&e));
            // What to do about it, naming the flags: the library's errors do not.
            if let Some(hint) = cli::advice(&e) {
                eprintln!("hint: {hint}");
            }
            std::process::exit(1);
        }
        Err(_) => std::process::exit(101),
    }
}

/// The error and its causes on one line, `outer: inner: ...`, skipping a cause whose text the
/// line already holds (library errors often quote their source in their own message).
fn message(e: &anyhow::Error) -> String {
    let mut line = e.to_string();
    for cause in e.chain().skip(1) {
        let text = cause.to_string();
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
    }
    line
}
