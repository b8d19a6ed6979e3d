//! Embeds the example plugins (`json`, `ndjson`) as built-ins when they have been built
//! (`./scripts/build-plugins`), so `sluice run` works from any folder. Without them the binary
//! still builds, with no built-ins.

use std::path::Path;

fn main() {
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plugins/target/wasm32-wasip2/release");
    // Cargo does not notice a watched file that appears later, so also watch the deepest
    // folder that exists: building the plugins then changes it and re-runs this script. Never
    // above `plugins/`: cargo walks a watched folder recursively, and a checkout that has
    // since been deleted would otherwise leave `/` watched (seen: a build stuck walking /sys).
    let plugins = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plugins");
    let mut watch = dir.as_path();
    while !watch.exists() && watch != plugins {
        match watch.parent() {
            Some(parent) => watch = parent,
            None => break,
        }
    }
    if watch.exists() {
        println!("cargo:rerun-if-changed={}", watch.display());
    }
    let mut code = String::from("pub(crate) const BUILTIN: &[(&str, &[u8])] = &[\n");
    for name in ["json", "ndjson"] {
        let path = dir.join(format!("{name}.wasm"));
        println!("cargo:rerun-if-changed={}", path.display());
        if path.is_file() {
            let path = path.canonicalize().expect("canonical plugin path");
            code.push_str(&format!(
                "    ({name:?}, include_bytes!({:?})),\n",
                path.display().to_string()
            ));
        } else {
            println!(
                "cargo:warning=built-in plugin `{name}` is not built (run ./scripts/build-plugins); the binary will not include it"
            );
        }
    }
    code.push_str("];\n");
    std::fs::write(Path::new(&out).join("builtin.rs"), code).expect("writing builtin.rs");
}
