//! `sluice plugins build`: finds a plugin folder's language and world, runs that language's
//! component tool (cargo, componentize-py, componentize-js) and writes `DIR/NAME.wasm`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};

use super::Lang;

/// The pinned component tools, named in errors and written into templates.
const COMPONENTIZE_PY: &str = "componentize-py==0.25.1";

/// Which language a plugin folder is in, from the files `new` writes.
fn detect(dir: &Path) -> anyhow::Result<Lang> {
    if dir.join("Cargo.toml").is_file() {
        Ok(Lang::Rust)
    } else if dir.join("app.py").is_file() {
        Ok(Lang::Python)
    } else if dir.join("plugin.js").is_file() {
        Ok(Lang::Js)
    } else {
        bail!(
            "`{}` holds no Cargo.toml, app.py or plugin.js: not a plugin folder (`sluice plugins new` makes one)",
            dir.display()
        )
    }
}

/// The world a plugin folder implements: a 0.2 world when its `wit/` declares one, else the
/// 0.1.0 deserializer, configurable when the source file (`app.py`, `plugin.js`) holds
/// `configurable_marker`, the sign that it exports `configure`.
fn world(dir: &Path, source: &str, configurable_marker: &str) -> anyhow::Result<&'static str> {
    let wit = dir.join("wit");
    let entries =
        std::fs::read_dir(&wit).with_context(|| format!("reading `{}`", wit.display()))?;
    for entry in entries {
        let text = std::fs::read_to_string(entry?.path()).unwrap_or_default();
        for world in sluice_plugin::worlds::wit_names("0.2.0") {
            if text.contains(&format!("world {world} ")) {
                return Ok(world);
            }
        }
    }
    let source = std::fs::read_to_string(dir.join(source))?;
    Ok(if source.contains(configurable_marker) {
        "configurable-deserializer"
    } else {
        "deserializer"
    })
}

fn run(command: &mut Command, what: &str) -> anyhow::Result<()> {
    let status = command
        .status()
        .with_context(|| format!("cannot run {what}"))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}

/// Finds `tool` on PATH.
fn on_path(tool: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(tool))
            .find(|p| p.is_file())
    })
}

/// `sluice plugins build`: returns the component it wrote.
pub(crate) fn build(dir: &Path) -> anyhow::Result<PathBuf> {
    let dir = dir
        .canonicalize()
        .with_context(|| format!("plugin folder `{}`", dir.display()))?;
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let out = dir.join(format!("{name}.wasm"));
    match detect(&dir)? {
        Lang::Rust => {
            let target = std::env::var_os("CARGO_TARGET_DIR")
                .map_or_else(|| dir.join("target"), PathBuf::from);
            run(
                Command::new("cargo")
                    .args(["build", "--release", "--target", "wasm32-wasip2"])
                    .current_dir(&dir)
                    .env("CARGO_TARGET_DIR", &target),
                "cargo build --target wasm32-wasip2 (add the target with `rustup target add wasm32-wasip2`)",
            )?;
            let manifest = std::fs::read_to_string(dir.join("Cargo.toml"))?;
            let crate_name = manifest
                .lines()
                .find_map(|l| l.strip_prefix("name = \""))
                .and_then(|l| l.strip_suffix('"'))
                .unwrap_or(&name)
                .replace('-', "_");
            let built = target.join(format!("wasm32-wasip2/release/{crate_name}.wasm"));
            std::fs::copy(&built, &out)
                .with_context(|| format!("copying `{}`", built.display()))?;
        }
        Lang::Python => {
            let tool = on_path("componentize-py").with_context(|| {
                format!("componentize-py is not on PATH; install it with `python3 -m pip install {COMPONENTIZE_PY}`")
            })?;
            run(
                Command::new(tool)
                    .args(["-d", "wit", "-w", world(&dir, "app.py", "class Configure")?])
                    .args(["componentize", "-p", ".", "app", "-o"])
                    .arg(&out)
                    .current_dir(&dir),
                "componentize-py",
            )?;
        }
        Lang::Js => {
            let local = dir.join("node_modules/.bin/componentize-js");
            let tool = match on_path("componentize-js") {
                Some(tool) => tool,
                None => {
                    if !local.is_file() {
                        eprintln!(
                            "installing the pinned componentize-js (npm install in `{}`)",
                            dir.display()
                        );
                        run(
                            Command::new("npm")
                                .args(["install", "--no-audit", "--no-fund"])
                                .current_dir(&dir),
                            "npm install",
                        )?;
                    }
                    local
                }
            };
            // componentize-js resolves paths inside its own sandbox: relative to the folder.
            // `-d http fetch-event`: sluice links no wasi:http.
            run(
                Command::new(tool)
                    .args([
                        "plugin.js",
                        "--wit",
                        "wit",
                        "-n",
                        world(&dir, "plugin.js", "export const configure")?,
                    ])
                    .args(["-d", "http", "fetch-event", "-o"])
                    .arg(format!("{name}.wasm"))
                    .current_dir(&dir),
                "componentize-js",
            )?;
        }
    }
    Ok(out)
}
