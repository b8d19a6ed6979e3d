//! Builds the built-in deserializers (`json`, `ndjson`, `plain`, and `otlp`, which the OTLP sources use) from `plugins/` for `wasm32-wasip2` and
//! embeds them, so every build of the binary has them: `cargo build`, `cargo build --release`
//! and `cargo install --path host/cli` from a fresh clone alike. A build that cannot make them
//! fails and says what to run; it never produces a binary without its built-ins.
//!
//! The plugins are their own cargo workspace with their own target folder (`plugins/target`,
//! shared with `scripts/build-plugins`), so cargo's freshness check makes this a no-op once they
//! are built, and the nested build never touches the host's target folder or lock.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The built-in plugins: package names in `plugins/Cargo.toml`, and the component file names.
const BUILTIN: [&str; 4] = ["json", "ndjson", "otlp", "plain"];

fn main() {
    // Read at run time, not with `env!`: a build script binary compiled for a checkout at
    // another path (a shared target folder) must still look at this checkout.
    let manifest = PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"),
    );
    let root = manifest.join("../..");
    let plugins = root.join("plugins");
    if !plugins.join("Cargo.toml").is_file() {
        fail(&format!(
            "the plugin sources are missing ({} has no Cargo.toml); build sluice from a clone \
             of its repository (`cargo install --locked --path host/cli`)",
            plugins.display()
        ));
    }
    // Rebuild when a built-in's source, the plugin workspace or the contract changes.
    for watched in ["Cargo.toml", "Cargo.lock", ".cargo/config.toml"] {
        println!("cargo:rerun-if-changed={}", plugins.join(watched).display());
    }
    for name in BUILTIN {
        println!("cargo:rerun-if-changed={}", plugins.join(name).display());
    }
    println!("cargo:rerun-if-changed={}", root.join("wit").display());
    // The JSON scan the json and otlp built-ins share with the host.
    println!(
        "cargo:rerun-if-changed={}",
        root.join("host/scan").display()
    );

    let target_dir = plugins.join("target");
    let mut cargo = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cargo
        .current_dir(&plugins)
        .args([
            "build",
            "--release",
            "--locked",
            "--target",
            "wasm32-wasip2",
        ])
        .args(BUILTIN.iter().flat_map(|name| ["-p", name]))
        .env("CARGO_TARGET_DIR", &target_dir);
    // What cargo hands this script is meant for the host build, not for a wasm build: flags
    // for another target, a target folder, a target triple.
    for var in [
        "CARGO_BUILD_TARGET",
        "CARGO_BUILD_TARGET_DIR",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_MANIFEST_DIR",
        "CARGO_PRIMARY_PACKAGE",
        // `cargo clippy` lints the host's crates through this wrapper; not the plugins.
        "RUSTC_WORKSPACE_WRAPPER",
    ] {
        cargo.env_remove(var);
    }
    let output = match cargo.output() {
        Ok(output) => output,
        Err(e) => fail(&format!("cannot run cargo to build them: {e}")),
    };
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let missing_target = stderr.contains("target may not be installed")
            || stderr.contains("can't find crate for `core`")
            || stderr.contains("can't find crate for `std`");
        let hint = if missing_target {
            "the wasm32-wasip2 target is not installed: run `rustup target add wasm32-wasip2` \
             (rust-toolchain.toml lists it, so rustup adds it when it installs the pinned \
             toolchain)"
        } else {
            "see cargo's output below; `./scripts/build-plugins` builds every plugin the same way"
        };
        fail(&format!("{hint}\n\n{stderr}"));
    }

    let dir = target_dir.join("wasm32-wasip2/release");
    let mut code = String::from("pub(crate) const BUILTIN: &[(&str, &[u8])] = &[\n");
    for name in BUILTIN {
        let path = dir.join(format!("{name}.wasm"));
        let Ok(path) = path.canonicalize() else {
            fail(&format!(
                "cargo built them but {} is missing",
                path.display()
            ));
        };
        code.push_str(&format!(
            "    ({name:?}, include_bytes!({:?})),\n",
            path.display().to_string()
        ));
    }
    code.push_str("];\n");
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    std::fs::write(Path::new(&out).join("builtin.rs"), code).expect("writing builtin.rs");
}

/// Stops the build with a message naming what went wrong and what to run.
fn fail(why: &str) -> ! {
    eprintln!(
        "error: cannot build sluice's built-in deserializers (json, ndjson, otlp, plain): {why}"
    );
    std::process::exit(1);
}
