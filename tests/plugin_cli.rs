//! `sluice plugins new|build|inspect`: the author's workflow, in each language, with the real
//! component tools (installed by `scripts/build-plugins`).

use sluice_tests::{built_template, plugin_dir, sluice_cli as sluice};

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
    assert!(dir.join("wit/types.wit").is_file());

    let (ok, stdout, stderr) = sluice(&["plugins", "build", dir_arg]);
    assert!(ok, "build failed:\n{stdout}\n{stderr}");
    let wasm = dir.join(format!("{name}.wasm"));
    assert!(wasm.is_file(), "{stdout}");
    // ... with Cranelift's code beside it, which inspect (and run) load instead of compiling.
    assert!(dir.join(format!("{name}.cwasm")).is_file(), "{stdout}");
    assert!(stdout.contains(&format!("{name}.cwasm")), "{stdout}");

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
        stdout.contains("world    sluice:plugin/deserializer-plugin@0.2.0"),
        "{stdout}"
    );
    assert!(
        stdout.contains("code     precompiled (the NAME.cwasm beside it)"),
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

/// new --kind processor -> build -> inspect with options and sample events, for one language.
/// (The processor conformance suite runs the same components on every verdict.)
fn processor_round_trip(lang: &str) {
    let wasm = built_template("processor", "stamp", lang);
    let dir = wasm.parent().unwrap();
    assert!(dir.join("wit/processor.wit").is_file());
    assert!(dir.join("wit/types.wit").is_file());
    let tmp = tempfile::tempdir().unwrap();
    let events = tmp.path().join("events.ndjson");
    std::fs::write(
        &events,
        "{\"msg\":\"a\",\"items\":[1,2]}\n{\"level\":\"debug\"}\n{\"tag\":\"blue\"}\n{\"items\":7}\n",
    )
    .unwrap();
    let wasm_arg = wasm.to_str().unwrap();
    let (ok, stdout, stderr) = sluice(&[
        "plugins",
        "inspect",
        wasm_arg,
        "--lines",
        "--sample",
        events.to_str().unwrap(),
        "--option",
        "tag=blue",
        "--option",
        "drop_level=debug",
        "--option",
        "split=items",
    ]);
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("world    sluice:plugin/processor-plugin@0.2.0"),
        "{stdout}"
    );
    assert!(stdout.contains(":1: replaced by 2 event(s)"), "{stdout}");
    assert!(
        stdout.contains(r#"{"items":1,"msg":"a","received_at_ms":0,"tag":"blue"}"#)
            || stdout.contains(r#"{"msg":"a","items":1,"tag":"blue","received_at_ms":0}"#),
        "{stdout}"
    );
    assert!(stdout.contains(":2: dropped"), "{stdout}");
    assert!(stdout.contains(":3: kept"), "{stdout}");
    assert!(
        stdout.contains(":4: failed: field `items` is not a list"),
        "{stdout}"
    );
    let (ok, _, stderr) = sluice(&["plugins", "inspect", wasm_arg]);
    assert!(!ok);
    assert!(stderr.contains("option `tag` is required"), "{stderr}");
}

#[test]
fn a_new_rust_processor_builds_and_runs() {
    processor_round_trip("rust");
}

#[test]
fn a_new_python_processor_builds_and_runs() {
    processor_round_trip("python");
}

#[test]
fn a_new_javascript_processor_builds_and_runs() {
    processor_round_trip("js");
}

/// new --kind buffer -> build -> inspect with options, for one language. (The buffer
/// conformance suite runs the same components on every decision.)
fn buffer_round_trip(lang: &str) {
    let wasm = built_template("buffer", "spill", lang);
    let dir = wasm.parent().unwrap();
    assert!(dir.join("wit/buffer.wit").is_file());
    assert!(dir.join("wit/types.wit").is_file());
    let wasm_arg = wasm.to_str().unwrap();
    let (ok, stdout, stderr) = sluice(&[
        "plugins",
        "inspect",
        wasm_arg,
        "--option",
        "key_header=X-Tenant",
        "--option",
        "max_records=100",
    ]);
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains(&format!("plugin   spill_{lang}")),
        "{stdout}"
    );
    assert!(
        stdout.contains("world    sluice:plugin/buffer-plugin@0.2.0"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  ! sluice:plugin/buffer-host@0.2.0: the buffer's tiers"),
        "{stdout}"
    );
    assert!(
        stdout.contains("reads    request headers x-tenant"),
        "{stdout}"
    );
    let (ok, _, stderr) = sluice(&["plugins", "inspect", wasm_arg, "--option", "max_records=0"]);
    assert!(!ok);
    assert!(
        stderr.contains("option `max_records` must be a whole number above 0, got `0`"),
        "{stderr}"
    );
}

#[test]
fn a_new_rust_buffer_policy_builds_and_runs() {
    buffer_round_trip("rust");
}

#[test]
fn a_new_python_buffer_policy_builds_and_runs() {
    buffer_round_trip("python");
}

#[test]
fn a_new_javascript_buffer_policy_builds_and_runs() {
    buffer_round_trip("js");
}

#[test]
fn new_kind_buffer_says_what_it_wrote_and_names_the_policy_in_its_source() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("lanes");
    let dir_arg = dir.to_str().unwrap();
    let (ok, stdout, stderr) = sluice(&[
        "plugins", "new", "lanes", "--kind", "buffer", "--lang", "js", "--dir", dir_arg,
    ]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("buffer policy `lanes`"), "{stdout}");
    assert!(
        stdout.contains(&format!("sluice plugins build {dir_arg}")),
        "{stdout}"
    );
    let source = std::fs::read_to_string(dir.join("plugin.js")).unwrap();
    assert!(
        source.starts_with("// `lanes`: a buffer policy"),
        "{source}"
    );
    assert!(source.contains("export const bufferPolicy"), "{source}");
    assert!(dir.join("package.json").is_file());
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
