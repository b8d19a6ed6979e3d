//! Hot reload: what `Catalog::rescan` does when the plugin folder changes.

use std::sync::Arc;

use sluice_plugin::testing::hostile_component;
use sluice_plugin::{Catalog, Code, PluginHost, Reload};

fn catalog() -> (Catalog, tempfile::TempDir) {
    let host = Arc::new(PluginHost::new(None).unwrap());
    (Catalog::new(host), tempfile::tempdir().unwrap())
}

fn names(reloads: &[Reload]) -> Vec<String> {
    reloads
        .iter()
        .map(|r| match r {
            Reload::Loaded { name, replaced, .. } => format!("loaded {name} replaced={replaced}"),
            Reload::Failed { name, .. } => format!("failed {name}"),
            Reload::Removed { name, .. } => format!("removed {name}"),
        })
        .collect()
}

#[test]
fn a_new_file_is_loaded_once_it_stops_changing() {
    let (catalog, dir) = catalog();
    std::fs::write(dir.path().join("p.wasm"), hostile_component(false)).unwrap();
    // First sight: it may still be being written.
    assert!(catalog.rescan(dir.path()).is_empty());
    assert!(catalog.get("p").is_none());
    assert_eq!(
        names(&catalog.rescan(dir.path())),
        ["loaded p replaced=false"]
    );
    assert!(catalog.get("p").is_some());
    assert!(catalog.rescan(dir.path()).is_empty());
}

#[test]
fn a_replaced_file_is_published_to_subscribers() {
    let (catalog, dir) = catalog();
    let path = dir.path().join("p.wasm");
    std::fs::write(&path, hostile_component(false)).unwrap();
    catalog.load_dir(dir.path(), false).unwrap();
    let mut rx = catalog.subscribe("p").unwrap();
    let before = catalog.get("p").unwrap().sha256().to_owned();

    std::fs::write(&path, hostile_component(true)).unwrap();
    assert!(catalog.rescan(dir.path()).is_empty());
    assert!(!rx.has_changed().unwrap());
    assert_eq!(
        names(&catalog.rescan(dir.path())),
        ["loaded p replaced=true"]
    );
    assert!(rx.has_changed().unwrap());
    let now = rx.borrow_and_update().clone();
    assert_ne!(now.sha256(), before);
    assert_eq!(now.world(), "sluice:plugin/configurable-deserializer@0.1.0");
}

#[test]
fn a_bad_replacement_is_reported_once_and_the_old_version_keeps_running() {
    let (catalog, dir) = catalog();
    let path = dir.path().join("p.wasm");
    std::fs::write(&path, hostile_component(false)).unwrap();
    catalog.load_dir(dir.path(), false).unwrap();
    let rx = catalog.subscribe("p").unwrap();
    let good = catalog.get("p").unwrap().sha256().to_owned();

    std::fs::write(&path, b"\0asm\x0d\0\x01\0 truncated").unwrap();
    catalog.rescan(dir.path());
    let reloads = catalog.rescan(dir.path());
    let [Reload::Failed { name, error }] = &reloads[..] else {
        panic!("{reloads:?}");
    };
    assert_eq!(name, "p");
    let text = error.to_string();
    assert!(
        text.contains("p.wasm") && text.contains("not a valid WebAssembly component"),
        "{text}"
    );
    // Not reported again while the file stays the same; nobody was told to switch.
    assert!(catalog.rescan(dir.path()).is_empty());
    assert!(!rx.has_changed().unwrap());
    assert_eq!(catalog.get("p").unwrap().sha256(), good);

    // Fixed: taken.
    std::fs::write(&path, hostile_component(true)).unwrap();
    catalog.rescan(dir.path());
    assert_eq!(
        names(&catalog.rescan(dir.path())),
        ["loaded p replaced=true"]
    );
}

#[test]
fn touching_a_file_without_changing_it_wakes_nobody() {
    let (catalog, dir) = catalog();
    let path = dir.path().join("p.wasm");
    std::fs::write(&path, hostile_component(false)).unwrap();
    catalog.load_dir(dir.path(), false).unwrap();
    let rx = catalog.subscribe("p").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&path, hostile_component(false)).unwrap();
    catalog.rescan(dir.path());
    assert!(catalog.rescan(dir.path()).is_empty());
    assert!(!rx.has_changed().unwrap());
}

#[test]
fn a_removed_file_is_reported_and_its_plugin_stays_loaded() {
    let (catalog, dir) = catalog();
    let path = dir.path().join("p.wasm");
    std::fs::write(&path, hostile_component(false)).unwrap();
    catalog.load_dir(dir.path(), false).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(names(&catalog.rescan(dir.path())), ["removed p"]);
    assert!(catalog.rescan(dir.path()).is_empty());
    assert!(catalog.get("p").is_some());
}

/// Decodes one ordinary record with `plugin`: the hostile component gives `{"wat":true}`.
fn decode_one(plugin: sluice_plugin::Plugin) -> sluice_plugin::Decoded {
    let mut decoder =
        sluice_plugin::Decoder::new(plugin, vec![], sluice_plugin::Limits::default()).unwrap();
    let record = sluice_plugin::RawRecord {
        payload: b"a".to_vec(),
        key: None,
        received_at_ms: 0,
        origin: "test".to_owned(),
    };
    decoder.decode(&[record]).remove(0)
}

#[test]
fn a_first_start_runs_baseline_code_until_the_optimized_code_is_published() {
    let cache = tempfile::tempdir().unwrap();
    let host = Arc::new(PluginHost::new(Some(cache.path().to_owned())).unwrap());
    let catalog = Catalog::new(host);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.wasm"), hostile_component(false)).unwrap();
    let wat = sluice_plugin::Decoded::Events(vec![r#"{"wat":true}"#.to_owned()].into());

    // An empty cache: Winch's code, which runs like the optimized code will.
    let loaded = catalog.load_dir(dir.path(), true).unwrap();
    assert_eq!(loaded[0].code(), Code::Quick);
    assert!(!loaded[0].optimized());
    assert_eq!(decode_one(loaded[0].clone()), wat);
    let mut rx = catalog.subscribe("p").unwrap();

    // The background compile publishes the same version, optimized, to the subscribers.
    assert_eq!(catalog.optimize(), 1);
    assert!(rx.has_changed().unwrap());
    let optimized = rx.borrow_and_update().clone();
    assert_eq!(optimized.code(), Code::Compiled);
    assert_eq!(optimized.sha256(), loaded[0].sha256());
    assert_eq!(decode_one(optimized), wat);
    assert_eq!(catalog.optimize(), 0, "nothing is left to optimize");

    // ... and caches it: the next start loads Cranelift's code and has nothing to optimize.
    let again = Catalog::new(Arc::new(
        PluginHost::new(Some(cache.path().to_owned())).unwrap(),
    ));
    assert_eq!(
        again.load_dir(dir.path(), true).unwrap()[0].code(),
        Code::Cached
    );
    assert_eq!(again.optimize(), 0);
}

#[test]
fn a_version_replaced_while_it_was_optimized_is_not_overwritten() {
    let (catalog, dir) = catalog();
    let path = dir.path().join("p.wasm");
    std::fs::write(&path, hostile_component(false)).unwrap();
    catalog.load_dir(dir.path(), true).unwrap();
    // A new version arrives (and is loaded optimized by the rescan) before the optimizer runs.
    std::fs::write(&path, hostile_component(true)).unwrap();
    catalog.rescan(dir.path());
    assert_eq!(
        names(&catalog.rescan(dir.path())),
        ["loaded p replaced=true"]
    );
    let new = catalog.get("p").unwrap();
    assert_eq!(new.code(), Code::Compiled);
    assert_eq!(catalog.optimize(), 0);
    assert_eq!(catalog.get("p").unwrap().sha256(), new.sha256());
}

#[test]
fn built_ins_start_quickly_and_a_file_of_the_same_name_is_the_one_optimized() {
    static JSON: std::sync::LazyLock<&'static [u8]> =
        std::sync::LazyLock::new(|| hostile_component(false).leak().as_bytes());
    let (catalog, dir) = catalog();
    let builtins = catalog.load_builtins(&[("p", *JSON)], true).unwrap();
    assert_eq!(builtins[0].code(), Code::Quick);
    assert_eq!(builtins[0].origin(), "built-in p");
    std::fs::write(dir.path().join("p.wasm"), hostile_component(true)).unwrap();
    catalog.load_dir(dir.path(), true).unwrap();
    assert_eq!(catalog.optimize(), 1);
    let p = catalog.get("p").unwrap();
    assert!(p.optimized());
    assert!(p.origin().ends_with("p.wasm"), "{}", p.origin());
}
