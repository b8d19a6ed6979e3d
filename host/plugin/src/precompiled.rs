//! The artefact `sluice plugins build` leaves beside a component: `NAME.cwasm` next to
//! `NAME.wasm`, Cranelift's code for it, so that the first start on a machine whose cache is
//! empty (a fresh container, a new data dir) loads it instead of compiling.
//!
//! Loading one is `unsafe` (wasmtime runs the machine code it holds), so it is used only when
//! whoever could have written it could already change sluice itself:
//! - the folder (opened once; the file is opened relative to it) and the file are owned by the
//!   user sluice runs as, or by root, and neither is writable by group or others;
//! - the file is a regular file (not a symbolic link, not a FIFO);
//! - its first line, `sluice-precompiled v1 <component sha256> <engine hash> <artefact
//!   blake3>`, names the sha256 of the `.wasm` beside it (so a component changed since the
//!   build is never run with stale code), the compatibility hash of this sluice's engine (so an
//!   artefact from another version or CPU is compiled anew rather than refused by wasmtime),
//!   and the BLAKE3 hash of the rest of the file (a torn copy);
//! - wasmtime checks its own header again as it deserializes.
//!
//! Unlike a cache entry it carries no MAC: it is made to be copied to other machines, which
//! do not share the cache's key, so the owner and mode checks are the whole trust. An artefact
//! that fails a check is logged and left alone (it is the user's file), and the component is
//! compiled as if it were not there.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};
use wasmtime::Engine;
use wasmtime::component::Component;

/// How the header line starts: the format and its version.
const MAGIC: &str = "sluice-precompiled v1";
/// The header line is short; anything longer is not one of ours.
const MAX_HEADER: usize = 512;

/// Where the artefact of the component at `wasm` goes: `NAME.cwasm` beside `NAME.wasm`.
pub(crate) fn path_for(wasm: &Path) -> PathBuf {
    wasm.with_extension("cwasm")
}

/// The artefact beside `wasm`, if there is one and every check passes; a failed check is
/// logged (with how to fix it) and means `None`.
pub(crate) fn load(
    engine: &Engine,
    wasm: &Path,
    source: &str,
    engine_hash: &str,
) -> Option<Component> {
    let path = path_for(wasm);
    let bytes = match read_trusted(&path) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return None,
        Err(reason) => return ignore(&path, &reason),
    };
    let artefact = match verify(&bytes, source, engine_hash) {
        Ok(artefact) => artefact,
        Err(reason) => return ignore(&path, reason),
    };
    match deserialize(engine, artefact) {
        Ok(component) => Some(component),
        Err(e) => ignore(&path, &format!("wasmtime refused it: {e:#}")),
    }
}

/// Writes `component` (compiled from the component with sha256 `source`) as the artefact
/// beside `wasm`, mode 0644, through a temporary file renamed over it. Returns its path.
pub(crate) fn write(
    component: &Component,
    wasm: &Path,
    source: &str,
    engine_hash: &str,
) -> io::Result<PathBuf> {
    let path = path_for(wasm);
    let artefact = component.serialize().map_err(io::Error::other)?;
    let header = format!(
        "{MAGIC} {source} {engine_hash} {}\n",
        blake3::hash(&artefact).to_hex()
    );
    let tmp = path.with_extension(format!("cwasm.{}.tmp", std::process::id()));
    let written = (|| {
        let mut file = File::from(rustix::fs::open(
            &tmp,
            OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )?);
        file.write_all(header.as_bytes())?;
        file.write_all(&artefact)?;
        file.sync_all()?;
        std::fs::rename(&tmp, &path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.map(|()| path)
}

fn ignore<T>(path: &Path, reason: &str) -> Option<T> {
    tracing::warn!(
        artefact = %path.display(),
        %reason,
        "not using the precompiled plugin artefact; compiling the component instead"
    );
    None
}

/// Whether a file or folder owned by `uid` with mode `mode` may hold code sluice runs.
fn trusted_owner(what: &str, uid: u32, mode: u32) -> Result<(), String> {
    let me = rustix::process::geteuid().as_raw();
    if uid != me && uid != 0 {
        return Err(format!(
            "{what} is owned by uid {uid}, neither by uid {me} that sluice runs as nor by root"
        ));
    }
    if mode & 0o022 != 0 {
        return Err(format!(
            "{what} is writable by group or others (mode {:04o}); `chmod go-w` it",
            mode & 0o7777
        ));
    }
    Ok(())
}

/// The artefact's bytes if it exists and passes the owner checks (see the module's doc).
fn read_trusted(path: &Path) -> Result<Option<Vec<u8>>, String> {
    let (Some(folder), Some(name)) = (path.parent(), path.file_name()) else {
        return Ok(None);
    };
    let folder = if folder.as_os_str().is_empty() {
        Path::new(".")
    } else {
        folder
    };
    let dir = match rustix::fs::open(
        folder,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(dir) => File::from(dir),
        Err(_) => return Ok(None),
    };
    // Without an artefact there is nothing to say about its folder.
    let Some((mut file, meta)) = crate::cache::open_regular(&dir, name)? else {
        return Ok(None);
    };
    let folder = dir
        .metadata()
        .map_err(|e| format!("cannot stat its folder: {e}"))?;
    trusted_owner("its folder", folder.uid(), folder.mode())?;
    trusted_owner("it", meta.uid(), meta.mode())?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read it: {e}"))?;
    Ok(Some(bytes))
}

/// Checks the header line against the component and the engine and the rest of the file
/// against its checksum; returns the artefact.
fn verify<'a>(bytes: &'a [u8], source: &str, engine_hash: &str) -> Result<&'a [u8], &'static str> {
    let not_ours = "it is not an artefact `sluice plugins build` wrote";
    let end = bytes
        .iter()
        .take(MAX_HEADER)
        .position(|&b| b == b'\n')
        .ok_or(not_ours)?;
    let line = std::str::from_utf8(&bytes[..end]).map_err(|_| not_ours)?;
    let artefact = &bytes[end + 1..];
    let mut fields = line.strip_prefix(MAGIC).ok_or(not_ours)?.split(' ');
    let (Some(""), Some(from), Some(by), Some(sum), None) = (
        fields.next(),
        fields.next(),
        fields.next(),
        fields.next(),
        fields.next(),
    ) else {
        return Err(not_ours);
    };
    if from != source {
        return Err(
            "it was built from another version of the component; run `sluice plugins build` again",
        );
    }
    if by != engine_hash {
        return Err(
            "it was built by another sluice version or for another CPU; run `sluice plugins build` again",
        );
    }
    if blake3::hash(artefact).to_hex().as_str() != sum {
        return Err("it does not match its checksum (a torn or changed copy)");
    }
    Ok(artefact)
}

#[expect(
    unsafe_code,
    reason = "deserializing an artefact from an owner-only file, verified just before"
)]
fn deserialize(engine: &Engine, artefact: &[u8]) -> wasmtime::Result<Component> {
    // SAFETY: `artefact` is the in-memory copy of a regular file in a folder that only this
    // user or root can write, which itself only this user or root can write (`read_trusted`);
    // its header names the sha256 of the component beside it and this engine's compatibility
    // hash, and its checksum matches (`verify`, on these very bytes).
    unsafe { Component::deserialize(engine, artefact) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_names_the_component_the_engine_and_the_checksum() {
        let artefact = b"code";
        let sum = blake3::hash(artefact).to_hex().to_string();
        let file = |from: &str, by: &str, sum: &str| {
            let mut f = format!("{MAGIC} {from} {by} {sum}\n").into_bytes();
            f.extend_from_slice(artefact);
            f
        };
        assert_eq!(
            verify(&file("aa", "e1", &sum), "aa", "e1"),
            Ok(&artefact[..])
        );
        assert!(
            verify(&file("bb", "e1", &sum), "aa", "e1")
                .unwrap_err()
                .contains("another version of the component")
        );
        assert!(
            verify(&file("aa", "e2", &sum), "aa", "e1")
                .unwrap_err()
                .contains("another sluice version")
        );
        assert!(
            verify(&file("aa", "e1", "00"), "aa", "e1")
                .unwrap_err()
                .contains("checksum")
        );
        assert!(
            verify(b"\x7fELF...", "aa", "e1")
                .unwrap_err()
                .contains("not an artefact")
        );
    }

    #[test]
    fn only_owner_only_files_are_trusted() {
        let me = rustix::process::geteuid().as_raw();
        assert!(trusted_owner("it", me, 0o100644).is_ok());
        assert!(trusted_owner("it", 0, 0o040755).is_ok());
        assert!(
            trusted_owner("it", me, 0o100664)
                .unwrap_err()
                .contains("writable by group or others (mode 0664)")
        );
        let other = if me == 1000 { 1001 } else { 1000 };
        assert!(
            trusted_owner("it", other, 0o100644)
                .unwrap_err()
                .contains("neither by uid")
        );
    }
}
