//! Hot reload: what `Catalog::rescan` does when the plugin folder changes.

use std::sync::Arc;

use sluice_plugin::testing::hostile_component;
use sluice_plugin::{Catalog, PluginHost, Reload};

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
    catalog.load_dir(dir.path()).unwrap();
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
    catalog.load_dir(dir.path()).unwrap();
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
    catalog.load_dir(dir.path()).unwrap();
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
    catalog.load_dir(dir.path()).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(names(&catalog.rescan(dir.path())), ["removed p"]);
    assert!(catalog.rescan(dir.path()).is_empty());
    assert!(catalog.get("p").is_some());
}
