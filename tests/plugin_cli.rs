//! `sluice plugins new|build|inspect`: the author's workflow, in each language, with the real
//! component tools (installed by `scripts/build-plugins`).

use std::process::Command;
use std::sync::OnceLock;

use sluice_tests::{plugin_cache, plugin_dir, root, sluice_bin};

/// PATH with componentize-py and componentize-js in front.
fn tools_path() -> String {
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
fn sluice(args: &[&str]) -> (bool, String, String) {
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

/// new -> build -> inspect --sample, for one language.
fn round_trip(lang: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let name = format!("hello_{lang}");
    let dir = tmp.path().join(&name);
    let dir_arg = dir.to_str().unwrap();
    let (ok, stdout, stderr) = sluice(&["plugins", "new", &name, "--lang", lang, "--dir", dir_arg]);
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains(&format!("sluice plugins build {dir_arg}")),
        "{stdout}"
    );
    assert!(dir.join("wit/deserializer.wit").is_file());

    let (ok, stdout, stderr) = sluice(&["plugins", "build", dir_arg]);
    assert!(ok, "build failed:\n{stdout}\n{stderr}");
    let wasm = dir.join(format!("{name}.wasm"));
    assert!(wasm.is_file(), "{stdout}");

    let good = tmp.path().join("good.txt");
    std::fs::write(&good, "hello\n\nworld\n").unwrap();
    let bad = tmp.path().join("bad.bin");
    std::fs::write(&bad, b"\xff\xfe").unwrap();
    let (ok, stdout, stderr) = sluice(&[
        "plugins",
        "inspect",
        wasm.to_str().unwrap(),
        "--sample",
        good.to_str().unwrap(),
        "--sample",
        bad.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains(&format!("plugin   {name}")), "{stdout}");
    assert!(
        stdout.contains("world    sluice:plugin/deserializer@0.1.0"),
        "{stdout}"
    );
    assert!(stdout.contains("(13 bytes): 2 event(s)"), "{stdout}");
    let events: Vec<serde_json::Value> = stdout
        .lines()
        .filter_map(|l| {
            l.strip_prefix("    {")
                .map(|e| serde_json::from_str(&format!("{{{e}")).unwrap())
        })
        .collect();
    assert_eq!(
        events,
        [
            serde_json::json!({"message": "hello"}),
            serde_json::json!({"message": "world"})
        ],
        "{stdout}"
    );
    assert!(
        stdout.contains("(2 bytes): malformed: not UTF-8"),
        "{stdout}"
    );
}

#[test]
fn a_new_rust_plugin_builds_and_runs() {
    round_trip("rust");
}

#[test]
fn a_new_python_plugin_builds_and_runs() {
    round_trip("python");
}

#[test]
fn a_new_javascript_plugin_builds_and_runs() {
    round_trip("js");
}

#[test]
fn inspect_flags_the_capabilities_a_plugin_asks_for() {
    let file = plugin_dir().join("hostile.wasm");
    let (ok, stdout, stderr) = sluice(&["plugins", "inspect", file.to_str().unwrap()]);
    assert!(ok, "{stderr}");
    let flagged = |what: &str| {
        stdout
            .lines()
            .any(|l| l.starts_with("  ! wasi:") && l.contains(what))
    };
    assert!(
        flagged("files -> none (no folder is preopened)"),
        "{stdout}"
    );
    assert!(
        flagged("network -> none (every address and lookup denied)"),
        "{stdout}"
    );
    assert!(
        flagged("environment variables and arguments -> none (both empty)"),
        "{stdout}"
    );
    assert!(stdout.contains("linear memory "), "{stdout}");
}

#[test]
fn inspect_passes_options_and_names_a_refused_one() {
    let file = plugin_dir().join("csv.wasm");
    let tmp = tempfile::tempdir().unwrap();
    let sample = tmp.path().join("rows.csv");
    std::fs::write(&sample, "1;a\n2;b\n").unwrap();
    let file_arg = file.to_str().unwrap();
    let (ok, stdout, stderr) = sluice(&[
        "plugins",
        "inspect",
        file_arg,
        "--sample",
        sample.to_str().unwrap(),
        "--option",
        "delimiter=;",
        "--option",
        "columns=[\"n\",\"v\"]",
    ]);
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("2 event(s)") && stdout.contains(r#"{"n":"1","v":"a"}"#),
        "{stdout}"
    );
    let (ok, _, stderr) = sluice(&["plugins", "inspect", file_arg, "--option", "quote=x"]);
    assert!(!ok);
    assert!(stderr.contains("unknown option `quote`"), "{stderr}");
}

#[test]
fn new_refuses_a_bad_name_and_a_folder_in_use() {
    let tmp = tempfile::tempdir().unwrap();
    let (ok, _, stderr) = sluice(&["plugins", "new", "Bad-Name", "--lang", "rust"]);
    assert!(!ok);
    assert!(
        stderr.contains("plugin name `Bad-Name` must start with a lowercase letter"),
        "{stderr}"
    );
    let used = tmp.path().join("used");
    std::fs::create_dir(&used).unwrap();
    std::fs::write(used.join("keep.txt"), "mine").unwrap();
    let (ok, _, stderr) = sluice(&[
        "plugins",
        "new",
        "used",
        "--lang",
        "js",
        "--dir",
        used.to_str().unwrap(),
    ]);
    assert!(!ok);
    assert!(
        stderr.contains("already exists and is not empty"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(used.join("keep.txt")).unwrap(),
        "mine"
    );
}
