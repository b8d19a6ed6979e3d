//! `sluice plugins new|build` as a plugin author runs them, with the real component tools
//! (componentize-py and componentize-js, pinned and installed by `scripts/build-plugins`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use crate::{plugin_cache, root, sluice_bin};

/// PATH with componentize-py and componentize-js in front.
pub fn tools_path() -> String {
    static PATH: OnceLock<String> = OnceLock::new();
    PATH.get_or_init(|| {
        let out = Command::new(root().join("scripts/build-plugins"))
            .arg("--tools-path")
            .output()
            .expect("running scripts/build-plugins --tools-path");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let tools = String::from_utf8(out.stdout).unwrap().trim().to_owned();
        format!("{tools}:{}", std::env::var("PATH").unwrap_or_default())
    })
    .clone()
}

/// Runs `sluice ARGS` with the tools on PATH: (success, stdout, stderr).
pub fn sluice_cli(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(sluice_bin())
        .args(args)
        .env("PATH", tools_path())
        // Rust templates share one target folder across runs, so deps build once.
        .env(
            "CARGO_TARGET_DIR",
            plugin_cache().with_file_name("template-target"),
        )
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The component `sluice plugins new NAME --kind KIND --lang LANG` then `sluice plugins build`
/// make, with NAME `<name>_<lang>`; built once per test run, in `target/<profile>/templates/`.
pub fn built_template(kind: &str, name: &str, lang: &str) -> PathBuf {
    static BUILT: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let name = format!("{name}_{lang}");
    let built = BUILT.get_or_init(Default::default);
    // One build at a time: the Rust ones share a target folder, the tools are CPU-bound.
    let mut built = built
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(wasm) = built.get(&name) {
        return wasm.clone();
    }
    let dir = plugin_cache().with_file_name("templates").join(&name);
    let _ = std::fs::remove_dir_all(&dir);
    let dir_arg = dir.to_str().unwrap();
    let (ok, _, stderr) = sluice_cli(&[
        "plugins", "new", &name, "--kind", kind, "--lang", lang, "--dir", dir_arg,
    ]);
    assert!(
        ok,
        "sluice plugins new {name} --kind {kind} --lang {lang}: {stderr}"
    );
    let (ok, stdout, stderr) = sluice_cli(&["plugins", "build", dir_arg]);
    assert!(ok, "sluice plugins build {dir_arg}:\n{stdout}\n{stderr}");
    let wasm = dir.join(format!("{name}.wasm"));
    assert!(wasm.is_file(), "{stdout}");
    built.insert(name, wasm.clone());
    wasm
}
