//! The compiled-plugin cache: an entry is loaded only if it verifies and only from a folder
//! nobody else can write; anything else is compiled again from the component. What ran is
//! observed through behaviour: two test components answer differently, and the host's log says
//! whether it compiled or loaded.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

mod support;

use sluice_plugin::testing::hostile_component;
use sluice_plugin::{Decoded, Decoder, Limits, PluginHost, RawRecord};
use support::logged;

/// The component the pipeline asks for; an ordinary record gives `{"wat":true}`.
fn real() -> String {
    hostile_component(false)
}

/// Another component, compiled by the same engine: it gives `{"cat":true}`.
fn other() -> String {
    let other = real().replace(r#"\"wat\":true"#, r#"\"cat\":true"#);
    assert_ne!(other, real());
    other
}

fn says(word: &str) -> Decoded {
    Decoded::Events(vec![format!(r#"{{"{word}":true}}"#)].into())
}

/// Loads `wat` through a fresh host using `cache`, and decodes one record with it. Returns the
/// outcome and what the host logged meanwhile.
fn load(cache: &Path, wat: &str) -> (Decoded, String) {
    logged(|| {
        let host = PluginHost::new(Some(cache.to_owned())).unwrap();
        let plugin = host.load_bytes("p", "p.wat", wat.as_bytes()).unwrap();
        let mut decoder = Decoder::new(plugin, vec![], Limits::default()).unwrap();
        let record = RawRecord {
            payload: b"a".to_vec(),
            key: None,
            received_at_ms: 0,
            origin: "test".to_owned(),
        };
        decoder.decode(&[record]).remove(0)
    })
}

fn compiled(log: &str) -> bool {
    log.contains(": compiled plugin")
}

fn from_cache(log: &str) -> bool {
    log.contains("loaded compiled plugin from cache")
}

/// The `.cwasm` entries in `cache`, sorted.
fn entries(cache: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = fs::read_dir(cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "cwasm"))
        .collect();
    entries.sort();
    entries
}

/// Every file in `cache` with its bytes and modification time.
fn snapshot(cache: &Path) -> Vec<(PathBuf, Vec<u8>, std::time::SystemTime)> {
    let mut files: Vec<_> = fs::read_dir(cache)
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            let mtime = fs::metadata(&path).unwrap().modified().unwrap();
            (path.clone(), fs::read(&path).unwrap(), mtime)
        })
        .collect();
    files.sort();
    files
}

/// A cache holding a verified entry for `real` (returned) and one for `other` (second).
fn cache_with_both(cache: &Path) -> (PathBuf, PathBuf) {
    assert_eq!(load(cache, &other()).0, says("cat"));
    let [other_entry] = &entries(cache)[..] else {
        panic!("{:?}", entries(cache));
    };
    let other_entry = other_entry.clone();
    let (outcome, log) = load(cache, &real());
    assert_eq!(outcome, says("wat"));
    assert!(compiled(&log), "{log}");
    let real_entry = entries(cache)
        .into_iter()
        .find(|e| *e != other_entry)
        .unwrap();
    // Sanity: an intact entry is used.
    let (outcome, log) = load(cache, &real());
    assert_eq!(outcome, says("wat"));
    assert!(from_cache(&log) && !compiled(&log), "{log}");
    (real_entry, other_entry)
}

fn header_end(entry: &[u8]) -> usize {
    entry.iter().position(|&b| b == b'\n').unwrap() + 1
}

/// An entry with `victim`'s header line and `donor`'s compiled code, signed with `key`.
fn spliced(key: &[u8], victim: &[u8], donor: &[u8]) -> Vec<u8> {
    let line = std::str::from_utf8(&victim[..header_end(victim) - 1]).unwrap();
    let (signed, _tag) = line.rsplit_once(' ').unwrap();
    let artefact = &donor[header_end(donor)..];
    let mut mac = blake3::Hasher::new_keyed(key.try_into().unwrap());
    mac.update(format!("{signed}\n").as_bytes());
    mac.update(artefact);
    let tag = mac.finalize().to_hex();
    let mut entry = format!("{signed} {tag}\n").into_bytes();
    entry.extend_from_slice(artefact);
    entry
}

/// Writes `donor`'s compiled code as `victim`'s entry, signed with the folder's key, as someone
/// who can write the folder *and* read its key could.
fn forge(cache: &Path, victim: &Path, donor: &Path) {
    let key = fs::read(cache.join("key")).unwrap();
    let entry = spliced(&key, &fs::read(victim).unwrap(), &fs::read(donor).unwrap());
    fs::write(victim, entry).unwrap();
}

fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path).unwrap().mode() & 0o7777
}

fn chmod(path: &Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn a_tampered_entry_is_recompiled_never_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("plugin-cache");
    let (real_entry, _) = cache_with_both(&cache);
    let good = fs::read(&real_entry).unwrap();

    // Bytes flipped in the artefact (the header is intact).
    let mut tampered = good.clone();
    let middle = header_end(&good) + (good.len() - header_end(&good)) / 2;
    tampered[middle] ^= 0xff;
    *tampered.last_mut().unwrap() ^= 0xff;
    fs::write(&real_entry, &tampered).unwrap();

    let (outcome, log) = load(&cache, &real());
    assert_eq!(outcome, says("wat"));
    assert!(
        log.contains("plugin cache entry failed verification")
            && log.contains("does not match its checksum")
            && compiled(&log)
            && !from_cache(&log),
        "{log}"
    );
    // The entry was written again, and verifies.
    assert_ne!(fs::read(&real_entry).unwrap(), tampered);
    let (outcome, log) = load(&cache, &real());
    assert_eq!(outcome, says("wat"));
    assert!(from_cache(&log), "{log}");
}

#[test]
fn another_components_artefact_under_this_name_is_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("plugin-cache");
    let (real_entry, other_entry) = cache_with_both(&cache);
    let good = fs::read(&real_entry).unwrap();
    let other_bytes = fs::read(&other_entry).unwrap();

    // 1. The other component's whole entry copied over this one's.
    fs::write(&real_entry, &other_bytes).unwrap();
    let (outcome, log) = load(&cache, &real());
    assert_eq!(outcome, says("wat"), "{log}");
    assert!(
        log.contains("it was compiled from another component") && compiled(&log),
        "{log}"
    );

    // 2. This entry's header kept, the other component's code after it.
    let mut kept_header = good[..header_end(&good)].to_vec();
    kept_header.extend_from_slice(&other_bytes[header_end(&other_bytes)..]);
    fs::write(&real_entry, &kept_header).unwrap();
    let (outcome, log) = load(&cache, &real());
    assert_eq!(outcome, says("wat"), "{log}");
    assert!(
        log.contains("does not match its checksum") && compiled(&log),
        "{log}"
    );

    // 3. The same, signed by an attacker who cannot read the key: there is no plain checksum
    //    to recompute, and a MAC under a key of their own fails like (2).
    fs::write(&real_entry, spliced(&[0; 32], &good, &other_bytes)).unwrap();
    let (outcome, log) = load(&cache, &real());
    assert_eq!(outcome, says("wat"), "{log}");
    assert!(
        log.contains("does not match its checksum") && compiled(&log),
        "{log}"
    );
}

#[test]
fn an_entry_others_can_write_is_recompiled() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("plugin-cache");
    let (real_entry, _) = cache_with_both(&cache);
    chmod(&real_entry, 0o666);
    let (outcome, log) = load(&cache, &real());
    assert_eq!(outcome, says("wat"));
    assert!(
        log.contains("lets others change or read it") && compiled(&log) && !from_cache(&log),
        "{log}"
    );
    assert_eq!(mode(&real_entry), 0o600);
}

#[test]
fn a_folder_others_can_write_is_not_used() {
    for folder_mode in [0o770, 0o777, 0o702] {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("plugin-cache");
        let (real_entry, other_entry) = cache_with_both(&cache);
        // What someone who can write the folder could plant: the other component's code under
        // this one's name, signed with the key (which they could replace too).
        forge(&cache, &real_entry, &other_entry);
        // Control: were the folder private, the forgery would load (whoever can write the
        // folder and read the key is trusted, as sluice's own user is).
        let (outcome, log) = load(&cache, &real());
        assert_eq!(outcome, says("cat"), "{log}");

        chmod(&cache, folder_mode);
        let before = snapshot(&cache);
        let (outcome, log) = load(&cache, &real());
        assert_eq!(outcome, says("wat"), "mode {folder_mode:o}: {log}");
        assert!(
            log.contains("not using the plugin cache folder")
                && log.contains(&cache.display().to_string())
                && log.contains(&format!("mode {folder_mode:04o}"))
                && compiled(&log)
                && !from_cache(&log),
            "mode {folder_mode:o}: {log}"
        );
        // Nothing was written, replaced or deleted.
        assert_eq!(snapshot(&cache), before, "mode {folder_mode:o}");
    }
}

#[test]
fn a_symlinked_folder_is_not_used() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("plugin-cache");
    cache_with_both(&cache);
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&cache, &link).unwrap();
    let before = snapshot(&cache);
    let (outcome, log) = load(&link, &real());
    assert_eq!(outcome, says("wat"));
    assert!(
        log.contains("not using the plugin cache folder")
            && log.contains("symbolic link")
            && compiled(&log),
        "{log}"
    );
    assert_eq!(snapshot(&cache), before);
}

#[test]
fn the_folder_and_its_files_are_owner_only() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("data/sub/plugin-cache");
    let (outcome, log) = load(&cache, &real());
    assert_eq!(outcome, says("wat"));
    assert!(compiled(&log), "{log}");
    for folder in ["data", "data/sub", "data/sub/plugin-cache"] {
        assert_eq!(mode(&dir.path().join(folder)), 0o700, "{folder}");
    }
    let files: Vec<_> = fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    // The key and one entry; no temporary file left behind.
    assert_eq!(files.len(), 2, "{files:?}");
    for file in &files {
        assert_eq!(mode(file), 0o600, "{}", file.display());
        assert_eq!(
            fs::metadata(file).unwrap().uid(),
            fs::metadata(dir.path()).unwrap().uid()
        );
    }
}
