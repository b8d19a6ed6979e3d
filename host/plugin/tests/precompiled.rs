//! The artefact `sluice plugins build` leaves beside a component (`NAME.cwasm`): loaded instead
//! of compiling when it is owner-only and names this component and engine; anything else is
//! said in the log and compiled as if the artefact were not there.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

mod support;

use sluice_plugin::testing::hostile_component;
use sluice_plugin::{Code, Decoded, Decoder, Limits, PluginHost, RawRecord};
use support::logged;

/// A folder holding `p.wasm` and the artefact built from it.
fn built() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let wasm = dir.path().join("p.wasm");
    fs::write(&wasm, hostile_component(false)).unwrap();
    let artefact = PluginHost::new(None)
        .unwrap()
        .precompile_beside(&wasm)
        .unwrap();
    assert_eq!(artefact, dir.path().join("p.cwasm"));
    (dir, wasm)
}

/// Loads `wasm` through a fresh host with an empty cache: where its code came from, what one
/// record decodes to, and the log.
fn load(wasm: &Path) -> (Code, Decoded, String) {
    let cache = tempfile::tempdir().unwrap();
    let ((code, decoded), log) = logged(|| {
        let host = PluginHost::new(Some(cache.path().to_owned())).unwrap();
        let plugin = host.load_file(wasm).unwrap();
        let code = plugin.code();
        let mut decoder = Decoder::new(plugin, vec![], Limits::default()).unwrap();
        let record = RawRecord {
            payload: b"a".to_vec(),
            key: None,
            received_at_ms: 0,
            origin: "test".to_owned(),
        };
        (code, decoder.decode(&[record]).remove(0))
    });
    (code, decoded, log)
}

fn wat() -> Decoded {
    Decoded::Events(vec![r#"{"wat":true}"#.to_owned()].into())
}

#[test]
fn the_artefact_beside_the_component_is_loaded_instead_of_compiling() {
    let (_dir, wasm) = built();
    let (code, decoded, log) = load(&wasm);
    assert_eq!(code, Code::Precompiled, "{log}");
    assert_eq!(decoded, wat());
    assert!(!log.contains("compiled plugin"), "{log}");
}

#[test]
fn an_artefact_of_another_version_of_the_component_is_not_run() {
    let (_dir, wasm) = built();
    // The component changes after the build; its artefact stays.
    fs::write(&wasm, hostile_component(true)).unwrap();
    let (code, _, log) = load(&wasm);
    assert_eq!(code, Code::Compiled, "{log}");
    assert!(
        log.contains("built from another version of the component")
            && log.contains("sluice plugins build"),
        "{log}"
    );
}

#[test]
fn a_torn_or_changed_artefact_is_not_run() {
    let (dir, wasm) = built();
    let artefact = dir.path().join("p.cwasm");
    let bytes = fs::read(&artefact).unwrap();
    fs::write(&artefact, &bytes[..bytes.len() - 100]).unwrap();
    let (code, decoded, log) = load(&wasm);
    assert_eq!(code, Code::Compiled, "{log}");
    assert_eq!(decoded, wat());
    assert!(log.contains("does not match its checksum"), "{log}");
    // Left alone: it is the user's file.
    assert!(artefact.exists());
}

#[test]
fn an_artefact_others_can_write_is_not_run() {
    let (dir, wasm) = built();
    let artefact = dir.path().join("p.cwasm");
    fs::set_permissions(&artefact, fs::Permissions::from_mode(0o666)).unwrap();
    let (code, _, log) = load(&wasm);
    assert_eq!(code, Code::Compiled, "{log}");
    assert!(
        log.contains("writable by group or others (mode 0666)"),
        "{log}"
    );

    fs::set_permissions(&artefact, fs::Permissions::from_mode(0o644)).unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o777)).unwrap();
    let (code, _, log) = load(&wasm);
    assert_eq!(code, Code::Compiled, "{log}");
    assert!(
        log.contains("its folder is writable by group or others"),
        "{log}"
    );

    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(load(&wasm).0, Code::Precompiled);
}

#[test]
fn a_native_artefact_is_still_refused_as_a_plugin() {
    // The artefact is only ever used beside its component: named `.wasm`, it is refused.
    let (dir, _) = built();
    let disguised = dir.path().join("q.wasm");
    fs::copy(dir.path().join("p.cwasm"), &disguised).unwrap();
    let error = PluginHost::new(None)
        .unwrap()
        .load_file(&disguised)
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("not a valid WebAssembly component")
            || error.to_string().contains("precompiled"),
        "{error}"
    );
}
