//! The compiled-plugin cache: the native code sluice compiled from a component, kept on disk so
//! the next start (or the next load of the same file) skips Cranelift. Loading an entry is
//! `unsafe`: wasmtime runs whatever machine code the file holds, so anyone who could write an
//! entry could run code in sluice. This module decides when the folder and an entry may be
//! trusted; the engine asks it for an entry before compiling and hands it each new artefact.
//!
//! # What is checked
//! - **The folder** is created owner-only (mode 0700, and so is every parent this creates). It
//!   is used only if it is a real folder (not a symbolic link), owned by the user sluice runs
//!   as, and not writable by group or others; otherwise sluice logs why and compiles without
//!   it, reading nothing from it and writing nothing to it. The folder is opened once and every
//!   file is opened relative to that handle, so the folder checked is the folder read.
//!   Parent folders are not checked: replacing this one through a writable parent makes a
//!   folder owned by someone else, which the owner check refuses.
//! - **Each entry** must be a regular file owned by the same user and not writable by others.
//!   It is read into memory once; its first line names the sha256 of the component it was
//!   compiled from and the engine's compatibility hash, and carries a MAC (BLAKE3, keyed) of both
//!   and of the artefact. Only the bytes just verified are deserialized (no window between check
//!   and use). An entry that fails any check is logged, deleted and compiled again.
//!
//! # Why a MAC and not a plain checksum
//! A checksum anyone can recompute only catches accidents (a torn write, a disk error, an entry
//! copied under another component's name): someone who can write the folder can write a
//! matching checksum too. The MAC is keyed by 32 random bytes in `key` (mode 0600, made on
//! first use), so a forged entry fails unless its author could also read the key. The ownership
//! checks already keep other users out; the key covers what they cannot see: entries planted
//! while the folder was open to others (before a `chmod`), a cache folder copied or restored
//! from elsewhere without its key (a fresh key is made and every old entry is recompiled), and
//! anything that can drop files as sluice's user without reading its files. It costs one small
//! file and a crate already in the build (the AWS SDK signs with it).
//!
//! # Why not wasmtime's own cache
//! wasmtime's `cache` feature keys entries by module and engine hash, but it trusts its folder:
//! it neither checks who can write it nor authenticates what it loads.
//!
//! # Entry format
//! `<component sha256>-<engine hash>.cwasm`, holding one line
//! `sluice-cwasm v2 <component sha256> <engine hash> <mac>` then the serialized component (v1
//! entries, signed with HMAC-SHA256, are not ours any more: they are deleted and recompiled).
//! The MAC is BLAKE3 in keyed mode, three times as fast here as HMAC-SHA256 over the tens of
//! MB a large component compiles to; the entry is hashed where the kernel maps it, not read
//! into a copy first.
//! Unix only (it relies on file owners and modes), like the rest of sluice.

use std::fs::{DirBuilder, File};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, Mode, OFlags};
use wasmtime::Engine;
use wasmtime::component::Component;

/// How an entry's header line starts: the format and its version.
const MAGIC: &str = "sluice-cwasm v2";
/// The file holding the MAC key, in the cache folder.
const KEY_FILE: &str = "key";
const KEY_LEN: usize = 32;
/// The header line is short; anything longer is not one of ours.
const MAX_HEADER: usize = 512;

/// Distinguishes the temporary files of concurrent writers in one process (the catalog compiles
/// on a background thread while the CLI may load another plugin).
static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A cache folder that passed the checks, opened, with its key.
pub(crate) struct Cache {
    /// The folder, opened once; every file is opened relative to it.
    dir: File,
    path: PathBuf,
    /// The user sluice runs as (effective uid), who must own the folder and its files.
    uid: u32,
    key: [u8; KEY_LEN],
}

impl Cache {
    /// Opens the cache folder at `path`, creating it (and missing parents) with mode 0700.
    /// `None`, after a warning naming the folder and why, when it cannot be used safely.
    pub(crate) fn open(path: &Path) -> Option<Cache> {
        match Self::try_open(path) {
            Ok(cache) => Some(cache),
            Err(reason) => {
                tracing::warn!(
                    cache = %path.display(),
                    %reason,
                    "not using the plugin cache folder; plugins are compiled without it"
                );
                None
            }
        }
    }

    fn try_open(path: &Path) -> Result<Cache, String> {
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(path)
            .map_err(|e| format!("cannot create it: {e}"))?;
        let dir = File::from(
            rustix::fs::open(
                path,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| match e {
                rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR => {
                    "it is a symbolic link or not a folder".to_owned()
                }
                e => format!("cannot open it: {}", io::Error::from(e)),
            })?,
        );
        let meta = dir.metadata().map_err(|e| format!("cannot stat it: {e}"))?;
        let uid = rustix::process::geteuid().as_raw();
        let mode = meta.mode() & 0o7777;
        if meta.uid() != uid {
            return Err(format!(
                "it is owned by uid {}, not by uid {uid} that sluice runs as (mode {mode:04o})",
                meta.uid()
            ));
        }
        if mode & 0o022 != 0 {
            return Err(format!(
                "it is writable by group or others (mode {mode:04o}); `chmod 700` it"
            ));
        }
        let mut cache = Cache {
            dir,
            path: path.to_owned(),
            uid,
            key: [0; KEY_LEN],
        };
        cache.key = cache
            .load_key()
            .map_err(|e| format!("cannot read or create its key file `{KEY_FILE}`: {e}"))?;
        Ok(cache)
    }

    /// The entry for the component with sha256 `source` compiled by an engine with
    /// compatibility hash `engine_hash`, if there is one and it verifies. An entry that does not
    /// is logged and deleted.
    pub(crate) fn load(
        &self,
        engine: &Engine,
        source: &str,
        engine_hash: &str,
    ) -> Option<Component> {
        let name = entry_name(source, engine_hash);
        let file = match self.open_private(&name, None) {
            Ok(Some(file)) => file,
            Ok(None) => return None,
            Err(reason) => return self.reject(&name, &reason),
        };
        let bytes = match map(&file) {
            Ok(bytes) => bytes,
            Err(e) => return self.reject(&name, &format!("cannot map it: {e}")),
        };
        let artefact = match self.verify(&bytes, source, engine_hash) {
            Ok(artefact) => artefact,
            Err(reason) => return self.reject(&name, reason),
        };
        match deserialize(engine, artefact) {
            Ok(component) => Some(component),
            Err(e) => self.reject(&name, &format!("wasmtime refused it: {e:#}")),
        }
    }

    /// Writes `component` as the entry for `source` and `engine_hash`: to a temporary file
    /// (mode 0600) first, then renamed, so a reader never sees half an entry.
    pub(crate) fn store(
        &self,
        component: &Component,
        source: &str,
        engine_hash: &str,
    ) -> Result<(), Box<dyn std::error::Error>> {
        let artefact = component.serialize()?;
        let header = header(source, engine_hash);
        let tag = self.mac(&header, &artefact);
        let mut entry = Vec::with_capacity(header.len() + 65 + artefact.len());
        entry.extend_from_slice(header.trim_end().as_bytes());
        entry.push(b' ');
        entry.extend_from_slice(hex::encode(tag).as_bytes());
        entry.push(b'\n');
        entry.extend_from_slice(&artefact);
        self.write_private(&entry_name(source, engine_hash), &entry, Replace::Yes)?;
        Ok(())
    }

    /// Checks an entry's header and MAC; returns the artefact they vouch for.
    fn verify<'a>(
        &self,
        bytes: &'a [u8],
        source: &str,
        engine_hash: &str,
    ) -> Result<&'a [u8], &'static str> {
        let not_ours = "it is not a sluice cache entry";
        let end = bytes
            .iter()
            .take(MAX_HEADER)
            .position(|&b| b == b'\n')
            .ok_or(not_ours)?;
        let line = std::str::from_utf8(&bytes[..end]).map_err(|_| not_ours)?;
        let artefact = &bytes[end + 1..];
        let (signed, tag) = line.rsplit_once(' ').ok_or(not_ours)?;
        let mut fields = signed.strip_prefix(MAGIC).ok_or(not_ours)?.split(' ');
        let (Some(""), Some(from), Some(by), None) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            return Err(not_ours);
        };
        if from != source {
            return Err("it was compiled from another component");
        }
        if by != engine_hash {
            return Err("it was compiled by another engine");
        }
        let tag = hex::decode(tag).map_err(|_| not_ours)?;
        let expected = self.mac(&header(source, engine_hash), artefact);
        // Compared in constant time (a `blake3::Hash` compares so).
        if blake3::Hash::from(expected) != blake3::Hash::from_slice(&tag).map_err(|_| not_ours)? {
            return Err("it does not match its checksum (MAC)");
        }
        Ok(artefact)
    }

    /// The MAC of an entry: BLAKE3 keyed with the folder's key, over the header and artefact.
    fn mac(&self, header: &str, artefact: &[u8]) -> [u8; 32] {
        let mut mac = blake3::Hasher::new_keyed(&self.key);
        mac.update(header.as_bytes());
        mac.update(artefact);
        *mac.finalize().as_bytes()
    }

    fn reject<T>(&self, name: &str, reason: &str) -> Option<T> {
        tracing::warn!(
            entry = %self.path.join(name).display(),
            %reason,
            "plugin cache entry failed verification; deleting it and recompiling"
        );
        if let Err(e) = rustix::fs::unlinkat(&self.dir, name, AtFlags::empty()) {
            tracing::debug!(entry = name, error = %e, "cannot delete the cache entry; it will be overwritten");
        }
        None
    }

    /// The MAC key: read from [`KEY_FILE`], or made. A key file that is not private (wrong
    /// owner, readable by others, wrong size) is replaced: entries signed with it are then
    /// recompiled, which is the point.
    fn load_key(&self) -> io::Result<[u8; KEY_LEN]> {
        for _ in 0..2 {
            let replace = match self.read_private(KEY_FILE, Some(0o077)) {
                Ok(Some(bytes)) if bytes.len() == KEY_LEN => {
                    let mut key = [0; KEY_LEN];
                    key.copy_from_slice(&bytes);
                    return Ok(key);
                }
                Ok(Some(_)) => Some("it is not 32 bytes long".to_owned()),
                Ok(None) => None,
                Err(reason) => Some(reason),
            };
            if let Some(reason) = &replace {
                tracing::warn!(
                    key = %self.path.join(KEY_FILE).display(),
                    %reason,
                    "replacing the plugin cache key; cached plugins will be recompiled"
                );
            }
            let mut key = [0; KEY_LEN];
            File::open("/dev/urandom")?.read_exact(&mut key)?;
            let how = if replace.is_some() {
                Replace::Yes
            } else {
                Replace::No
            };
            match self.write_private(KEY_FILE, &key, how) {
                Ok(()) => return Ok(key),
                // Another process made it first: use theirs.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::other("the key file keeps changing"))
    }

    /// Reads `name` from the folder (see [`Self::open_private`]).
    fn read_private(&self, name: &str, forbidden: Option<u32>) -> Result<Option<Vec<u8>>, String> {
        let Some(mut file) = self.open_private(name, forbidden)? else {
            return Ok(None);
        };
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read it: {e}"))?;
        Ok(Some(bytes))
    }

    /// Opens `name` in the folder if it is a regular file owned by this user with none of
    /// `forbidden` mode bits (default: writable by group or others). `Ok(None)` if it does not
    /// exist; `Err` says why it cannot be trusted.
    fn open_private(&self, name: &str, forbidden: Option<u32>) -> Result<Option<File>, String> {
        let Some((file, meta)) = open_regular(&self.dir, name)? else {
            return Ok(None);
        };
        let mode = meta.mode() & 0o7777;
        if meta.uid() != self.uid {
            return Err(format!(
                "it is owned by uid {}, not {}",
                meta.uid(),
                self.uid
            ));
        }
        if mode & forbidden.unwrap_or(0o022) != 0 {
            return Err(format!("its mode {mode:04o} lets others change or read it"));
        }
        Ok(Some(file))
    }

    /// Writes `bytes` to `name` with mode 0600, through a temporary file so readers see all or
    /// nothing. With [`Replace::No`], fails with `AlreadyExists` if `name` exists.
    fn write_private(&self, name: &str, bytes: &[u8], replace: Replace) -> io::Result<()> {
        let tmp = format!(
            ".{name}.{}.{}.tmp",
            std::process::id(),
            TMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let fd = rustix::fs::openat(
            &self.dir,
            &tmp,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )?;
        let written = File::from(fd)
            .write_all(bytes)
            .and_then(|()| match replace {
                Replace::Yes => Ok(rustix::fs::renameat(&self.dir, &tmp, &self.dir, name)?),
                Replace::No => Ok(rustix::fs::linkat(
                    &self.dir,
                    &tmp,
                    &self.dir,
                    name,
                    AtFlags::empty(),
                )?),
            });
        // After a rename there is nothing left to remove; after a link (or a failure), the
        // temporary name goes.
        let _ = rustix::fs::unlinkat(&self.dir, &tmp, AtFlags::empty());
        written
    }
}

/// Opens `name` in `dir` if it is a regular file, without following a symbolic link (an
/// error) or waiting on a FIFO planted under the name; with its metadata, from the open file.
/// `Ok(None)` if it does not exist; `Err` says why it cannot be used. The cache and the
/// precompiled artefact (`crate::precompiled`) then check its owner and mode, each its own way.
pub(crate) fn open_regular(
    dir: &File,
    name: impl AsRef<Path>,
) -> Result<Option<(File, std::fs::Metadata)>, String> {
    let fd = match rustix::fs::openat(
        dir,
        name.as_ref(),
        // NONBLOCK: a FIFO planted under the name must not hang the load.
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(rustix::io::Errno::LOOP) => return Err("it is a symbolic link".to_owned()),
        Err(e) => return Err(format!("cannot open it: {}", io::Error::from(e))),
    };
    let file = File::from(fd);
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot stat it: {e}"))?;
    if !meta.file_type().is_file() {
        return Err("it is not a regular file".to_owned());
    }
    Ok(Some((file, meta)))
}

enum Replace {
    Yes,
    No,
}

fn entry_name(source: &str, engine_hash: &str) -> String {
    debug_assert!(
        [source, engine_hash]
            .iter()
            .all(|s| s.bytes().all(|b| b.is_ascii_alphanumeric())),
        "hashes are hex, so they make a plain file name"
    );
    format!("{source}-{engine_hash}.cwasm")
}

/// What the MAC covers before the artefact: the format, the component and the engine.
fn header(source: &str, engine_hash: &str) -> String {
    format!("{MAGIC} {source} {engine_hash}\n")
}

#[expect(
    unsafe_code,
    reason = "mapping a cache entry: entries are replaced by rename, never changed in place"
)]
fn map(file: &File) -> io::Result<memmap2::Mmap> {
    // SAFETY: the file is a regular file in the owner-only folder (`open_private`); sluice
    // writes an entry to a temporary file and renames it, so the mapped file is never
    // truncated or rewritten under the map (only its owner could, deliberately).
    unsafe { memmap2::Mmap::map(file) }
}

#[expect(
    unsafe_code,
    reason = "deserializing a cache entry this host wrote, verified just before"
)]
fn deserialize(engine: &Engine, artefact: &[u8]) -> wasmtime::Result<Component> {
    // SAFETY: `artefact` is the in-memory copy of an entry from a folder and file only this
    // user can write, whose MAC (keyed by a secret only this user can read) covers it together
    // with the sha256 of the component it was compiled from and this engine's compatibility
    // hash; `Cache::verify` checked all three on these very bytes.
    unsafe { Component::deserialize(engine, artefact) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine() -> Engine {
        let mut config = wasmtime::Config::new();
        config.wasm_component_model(true);
        Engine::new(&config).unwrap()
    }

    const A: &str = "(component)";
    const B: &str = r#"(component (core module (func (export "f"))))"#;

    #[test]
    fn the_mac_is_keyed_blake3_of_header_and_artefact() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let mut joined = b"head\n".to_vec();
        joined.extend_from_slice(b"code");
        assert_eq!(
            cache.mac("head\n", b"code"),
            *blake3::keyed_hash(&cache.key, &joined).as_bytes()
        );
        let other = Cache {
            key: [7; KEY_LEN],
            dir: File::open(dir.path()).unwrap(),
            path: dir.path().to_owned(),
            uid: cache.uid,
        };
        assert_ne!(other.mac("head\n", b"code"), cache.mac("head\n", b"code"));
    }

    #[test]
    fn an_entry_forged_with_another_key_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let engine = engine();
        let cache = Cache::open(dir.path()).unwrap();
        let b = Component::new(&engine, B).unwrap();
        // The forger writes B's code under A's name with a correct header and a MAC under a
        // key of their own (the best they can do without reading `key`).
        let forger = Cache {
            dir: File::open(dir.path()).unwrap(),
            path: dir.path().to_owned(),
            uid: cache.uid,
            key: [7; KEY_LEN],
        };
        forger.store(&b, "aaaa", "e1").unwrap();
        assert!(cache.load(&engine, "aaaa", "e1").is_none());
        // ... and the forged entry is gone.
        assert!(!dir.path().join("aaaa-e1.cwasm").exists());
    }

    #[test]
    fn an_entry_verifies_only_for_its_component_and_engine() {
        let dir = tempfile::tempdir().unwrap();
        let engine = engine();
        let cache = Cache::open(dir.path()).unwrap();
        let a = Component::new(&engine, A).unwrap();
        cache.store(&a, "aaaa", "e1").unwrap();
        let entry = std::fs::read(dir.path().join("aaaa-e1.cwasm")).unwrap();
        assert!(cache.verify(&entry, "aaaa", "e1").is_ok());
        assert_eq!(
            cache.verify(&entry, "bbbb", "e1"),
            Err("it was compiled from another component")
        );
        assert_eq!(
            cache.verify(&entry, "aaaa", "e2"),
            Err("it was compiled by another engine")
        );
        // One flipped bit anywhere after the header.
        let mut flipped = entry.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert_eq!(
            cache.verify(&flipped, "aaaa", "e1"),
            Err("it does not match its checksum (MAC)")
        );
        assert_eq!(
            cache.verify(b"\x7fELF...", "aaaa", "e1"),
            Err("it is not a sluice cache entry")
        );
        assert!(cache.load(&engine, "aaaa", "e1").is_some());
    }

    #[test]
    fn the_key_is_kept_and_a_leaked_key_is_replaced() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let first = Cache::open(dir.path()).unwrap().key;
        assert_eq!(Cache::open(dir.path()).unwrap().key, first);
        let key = dir.path().join(KEY_FILE);
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
        let second = Cache::open(dir.path()).unwrap().key;
        assert_ne!(second, first);
        let mode = std::fs::metadata(&key).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
}
