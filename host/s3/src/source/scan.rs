//! The scan side of the s3 source (`scan`): lists buckets, once or on a schedule, and reads
//! each listed object not read before, up to `workers` at a time.
//!
//! # What was read
//! An object is recorded once it was read to its end and the sinks took every line of it: one
//! JSON line `{"bucket", "key", "etag"}` appended to the scan's record (in the data
//! directory), which a start loads. A later scan, in this process or the next, skips every
//! object whose bucket, key and ETag are recorded, so a rewritten object (a new ETag) is read
//! again, and an object that failed or was cut off (a stop, a kill) is read on the next scan.
//! Its lines keep their positions (object and line number), so a file or opensearch sink
//! skips those it holds from a read cut off.

use std::collections::HashSet;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use aws_sdk_s3::error::DisplayErrorContext;
use tokio::sync::{Semaphore, watch};

use super::object::{InFlight, ReadError, Reading};
use crate::notification::Announced;

/// One scanned bucket.
#[derive(Debug, Clone)]
pub struct ScanBucket {
    pub name: String,
    /// Each listed (the whole bucket when empty).
    pub include_prefix: Vec<String>,
    /// Keys ending in one of these are skipped.
    pub exclude_suffix: Vec<String>,
    /// Only objects last modified after it.
    pub after: Option<SystemTime>,
    /// Only objects last modified before it.
    pub before: Option<SystemTime>,
}

/// The scan's settings.
#[derive(Debug, Clone)]
pub struct ScanConfig {
    pub buckets: Vec<ScanBucket>,
    /// `(interval, count)`: list again `interval` after each listing, `count` times in all.
    /// `None`: once (again after `backoff` while objects could not be read).
    pub scheduling: Option<(Duration, u32)>,
    pub backoff: Duration,
    /// The record of the objects read (JSON lines).
    pub record: PathBuf,
}

/// What the scan read (loaded from its record) and is reading.
pub(super) struct Scanned {
    /// `bucket/key/etag` of each object read.
    read: Mutex<HashSet<(String, String, String)>>,
    /// `bucket/key` of each object being read (or its lines still on their way).
    reading: Mutex<HashSet<(String, String)>>,
    file: Mutex<std::fs::File>,
    path: PathBuf,
}

impl Scanned {
    /// Loads the record at `path` (a torn last line, from a kill, is left out), creating it.
    pub(super) fn open(path: &Path) -> std::io::Result<Self> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut read = HashSet::new();
        if let Ok(f) = std::fs::File::open(path) {
            for line in std::io::BufReader::new(f).lines() {
                let line = line?;
                let entry: Option<(String, String, String)> =
                    serde_json::from_str::<serde_json::Value>(&line)
                        .ok()
                        .and_then(|v| {
                            let field = |k: &str| v.get(k)?.as_str().map(str::to_owned);
                            Some((field("bucket")?, field("key")?, field("etag")?))
                        });
                match entry {
                    Some(e) => {
                        read.insert(e);
                    }
                    None => {
                        tracing::warn!(record = %path.display(), line = %line.chars().take(200).collect::<String>(),
                        "a line of the s3 scan's record is unreadable; left out (its object is read again)")
                    }
                }
            }
        }
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        // A kill mid-append leaves a line without its end: end it, so the next one is whole.
        if std::fs::read(path)?.last().is_some_and(|b| *b != b'\n') {
            file.write_all(b"\n")?;
        }
        Ok(Self {
            read: Mutex::new(read),
            reading: Mutex::new(HashSet::new()),
            file: Mutex::new(file),
            path: path.to_owned(),
        })
    }

    /// Whether the object is to be read now (neither read nor being read); if so, it is
    /// being read from here.
    fn start(&self, bucket: &str, key: &str, etag: &str) -> bool {
        let read = self.read.lock().expect("not poisoned");
        if read.contains(&(bucket.to_owned(), key.to_owned(), etag.to_owned())) {
            return false;
        }
        self.reading
            .lock()
            .expect("not poisoned")
            .insert((bucket.to_owned(), key.to_owned()))
    }

    /// The object is done: read whole and taken by the sinks (`true`), or not.
    fn finish(&self, bucket: &str, key: &str, etag: &str, done: bool) {
        if done {
            let entry = serde_json::json!({"bucket": bucket, "key": key, "etag": etag});
            let written = writeln!(self.file.lock().expect("not poisoned"), "{entry}");
            if let Err(e) = written {
                tracing::warn!(record = %self.path.display(), error = %e,
                    "recording an object the s3 scan read failed; a later scan reads it again");
            }
            self.read.lock().expect("not poisoned").insert((
                bucket.to_owned(),
                key.to_owned(),
                etag.to_owned(),
            ));
        }
        self.reading
            .lock()
            .expect("not poisoned")
            .remove(&(bucket.to_owned(), key.to_owned()));
    }
}

/// What one listing found.
#[derive(Debug, Default)]
struct Listed {
    /// Objects handed to a reader.
    started: AtomicUsize,
    /// Objects skipped: read before, or being read.
    known: AtomicUsize,
    /// Objects (or listings) that failed: to be tried again.
    failed: AtomicUsize,
}

/// The scan: lists, reads, and lists again as scheduled, until stopped.
pub(super) async fn scan(
    reading: Arc<Reading>,
    scan: ScanConfig,
    scanned: Arc<Scanned>,
    mut stop: watch::Receiver<bool>,
) {
    let workers = reading.config.workers.max(1);
    let permits = Arc::new(Semaphore::new(workers));
    let mut scans = 0u32;
    loop {
        scans += 1;
        let listed = Arc::new(Listed::default());
        for bucket in &scan.buckets {
            if list(&reading, bucket, &scanned, &permits, &listed, &mut stop)
                .await
                .is_err()
            {
                break;
            }
        }
        // Every read of this scan ended (or was stopped).
        let all = u32::try_from(workers).unwrap_or(u32::MAX);
        let _ = permits.acquire_many(all).await;
        let stopped = *stop.borrow();
        let (started, known, failed) = (
            listed.started.load(Ordering::Relaxed),
            listed.known.load(Ordering::Relaxed),
            listed.failed.load(Ordering::Relaxed),
        );
        tracing::info!(pipeline = %reading.config.pipeline, scan = scans, read = started, read_before = known, failed, stopped,
            "s3 scan listed its buckets");
        if stopped {
            return;
        }
        let wait = match scan.scheduling {
            Some((_, count)) if scans >= count => None,
            Some((interval, _)) => Some(interval),
            None if failed > 0 => Some(scan.backoff),
            None => None,
        };
        let Some(wait) = wait else {
            tracing::info!(pipeline = %reading.config.pipeline, scans, "s3 scan finished: every listed object was read");
            return;
        };
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}

/// Lists one bucket (each prefix) and starts a read of each object to read. `Err` once
/// stopped.
async fn list(
    reading: &Arc<Reading>,
    bucket: &ScanBucket,
    scanned: &Arc<Scanned>,
    permits: &Arc<Semaphore>,
    listed: &Arc<Listed>,
    stop: &mut watch::Receiver<bool>,
) -> Result<(), ()> {
    let prefixes: Vec<Option<&str>> = if bucket.include_prefix.is_empty() {
        vec![None]
    } else {
        bucket
            .include_prefix
            .iter()
            .map(|p| Some(p.as_str()))
            .collect()
    };
    for prefix in prefixes {
        let mut token = None;
        loop {
            let request = reading
                .s3
                .list_objects_v2()
                .bucket(&bucket.name)
                .set_prefix(prefix.map(str::to_owned))
                .set_continuation_token(token.take())
                .set_expected_bucket_owner(reading.expected_owner(&bucket.name))
                .send();
            let page = tokio::select! {
                p = request => p,
                _ = stop.wait_for(|s| *s) => return Err(()),
            };
            let page = match page {
                Ok(page) => page,
                Err(e) => {
                    listed.failed.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(bucket = %bucket.name, prefix = ?prefix, error = %DisplayErrorContext(&e),
                        "listing a bucket failed; it is listed again on the next scan");
                    break;
                }
            };
            for object in page.contents() {
                let Some(key) = object.key() else { continue };
                if !wanted(reading, bucket, key, object.last_modified()) {
                    continue;
                }
                let etag = object
                    .e_tag()
                    .unwrap_or_default()
                    .trim_matches('"')
                    .to_owned();
                if !scanned.start(&bucket.name, key, &etag) {
                    listed.known.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                let permit = tokio::select! {
                    p = permits.clone().acquire_owned() => p.expect("never closed"),
                    _ = stop.wait_for(|s| *s) => {
                        scanned.finish(&bucket.name, key, &etag, false);
                        return Err(());
                    }
                };
                listed.started.fetch_add(1, Ordering::Relaxed);
                let announced = Announced {
                    bucket: bucket.name.clone(),
                    key: key.to_owned(),
                    size: object
                        .size()
                        .and_then(|s| u64::try_from(s).ok())
                        .unwrap_or(0),
                    event_time: None,
                };
                tokio::spawn(read(
                    reading.clone(),
                    scanned.clone(),
                    announced,
                    etag,
                    listed.clone(),
                    permit,
                ));
            }
            match page.next_continuation_token() {
                Some(next) if page.is_truncated() == Some(true) => token = Some(next.to_owned()),
                _ => break,
            }
        }
    }
    Ok(())
}

/// Whether a listed key is read: not a folder, no excluded suffix, past the top-level
/// `filters`, last modified within the bucket's times (both ends excluded).
fn wanted(
    reading: &Reading,
    bucket: &ScanBucket,
    key: &str,
    modified: Option<&aws_sdk_s3::primitives::DateTime>,
) -> bool {
    if key.ends_with('/')
        || bucket
            .exclude_suffix
            .iter()
            .any(|s| key.ends_with(s.as_str()))
    {
        return false;
    }
    if !reading.config.passes_filters(&bucket.name, key) {
        return false;
    }
    let modified = modified.and_then(|m| SystemTime::try_from(*m).ok());
    match modified {
        Some(m) => bucket.after.is_none_or(|a| m > a) && bucket.before.is_none_or(|b| m < b),
        None => bucket.after.is_none() && bucket.before.is_none(),
    }
}

/// Reads one listed object; it is recorded once its lines reached the sinks.
async fn read(
    reading: Arc<Reading>,
    scanned: Arc<Scanned>,
    a: Announced,
    etag: String,
    listed: Arc<Listed>,
    _permit: tokio::sync::OwnedSemaphorePermit,
) {
    let (bucket, key, tag) = (a.bucket.clone(), a.key.clone(), etag.clone());
    let record = scanned.clone();
    let object = Arc::new(InFlight::new(move |done| {
        record.finish(&bucket, &key, &tag, done);
    }));
    match reading.read_object(&a, &object).await {
        Ok(()) => {}
        Err(ReadError::Stopped) => {
            tracing::info!(bucket = %a.bucket, key = %a.key,
                "stopped while reading an object; the next scan reads it again (lines the sinks hold are skipped by file and opensearch sinks)");
        }
        Err(ReadError::Missing(reason)) => {
            // Deleted since the listing: nothing to read, as Data Prepper's scan.
            tracing::info!(bucket = %a.bucket, key = %a.key, %reason, "a listed object is gone");
            drop(object);
            scanned.finish(&a.bucket, &a.key, &etag, true);
        }
        Err(ReadError::Failed(reason)) => {
            listed.failed.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(bucket = %a.bucket, key = %a.key, %reason,
                "reading an object failed; it is read again on the next scan");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_keeps_what_was_read_across_a_restart_and_a_torn_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s3-scan").join("p.jsonl");
        let s = Scanned::open(&path).unwrap();
        assert!(s.start("b", "k", "e1"));
        assert!(!s.start("b", "k", "e1"), "being read");
        s.finish("b", "k", "e1", true);
        assert!(!s.start("b", "k", "e1"), "read");
        assert!(s.start("b", "k", "e2"), "rewritten: a new ETag");
        s.finish("b", "k", "e2", false);
        assert!(s.start("b", "other", "e"));
        drop(s);
        // A kill mid-append.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(br#"{"bucket":"b","key":"torn"#).unwrap();
        drop(f);
        let s = Scanned::open(&path).unwrap();
        assert!(!s.start("b", "k", "e1"), "read before the restart");
        assert!(s.start("b", "k", "e2"), "not finished before the restart");
        assert!(s.start("b", "other", "e"));
        s.finish("b", "other", "e", true);
        drop(s);
        let s = Scanned::open(&path).unwrap();
        assert!(!s.start("b", "other", "e"), "recorded after the torn line");
    }
}
