//! The `file` sink: appends event lines to a file, flushing each batch, and reopens the file
//! after a failed write (it may have been rotated, or its disk freed). Also the dead-letter
//! file's storage (see [`super::dlq`]).
//!
//! From a Kafka buffer it writes no line twice (`docs/design/exactly-once.md`): beside the file,
//! `<file>.offsets` records the file's length and, per partition, the offset ranges whose
//! events the file holds: a whole record, then a line per batch with what the batch added
//! (rewritten whole every 1,000 batches). A batch's events whose record is in a held
//! range are skipped.
//!
//! Every writer of the file appends under an exclusive lock on it (`flock`), held from reading
//! the record to writing it again, whichever process it is in: the running pipeline, a
//! `sluice buffer replay` or a dead-letter replay in another process. Under the lock the
//! record is read afresh and the file's length is read from the file, so no writer records a
//! length another one has made stale. A file longer than its record under the lock is what a
//! writer killed mid-batch left (it never recorded it): that tail is cut, and its batch is
//! read again by whoever wrote it.

use std::collections::{BTreeMap, HashMap};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};

use tokio::sync::Mutex;

use bytes::Bytes;
use sluice_buffer::Position;

use super::{Output, Provenance, SendError, SinkError, Span};

/// The most offset ranges kept per partition; past it the lowest go (long committed: after a
/// rebalance took the partition away and gave it back, it can be more than one).
const RANGES_KEPT: usize = 32;

/// The most objects (an s3 source's positions, `s3://<bucket>/<key>`) whose lines the record
/// keeps; past it the least recently written goes: an object read again after that many newer
/// ones (its message redelivered late, while many small objects were read) may add its lines
/// twice. Kafka topics are few, and always kept.
const OBJECTS_KEPT: usize = 4096;

/// Batches appended to the record of offsets as a line each before it is written whole again
/// (aside, then renamed over it): a batch costs one small append, not a new file.
const DELTAS_KEPT: usize = 1000;

/// An appended file, as one sink (or dead-letter file) writes it.
pub struct FileSink {
    name: String,
    /// Skip what the file holds and record what it takes (`exactly_once`).
    once: bool,
    /// Whose offsets these are in the record (the pipeline, or its dead letters): two writers
    /// of one file, which may read the same topic, keep theirs apart.
    scope: String,
    file: Arc<Shared>,
}

/// One file as every writer of this process shares it. The tokio Mutex keeps one batch's
/// lines together when several workers (or sinks) of this process write at once (the file
/// lock then keeps them apart from other processes').
struct Shared {
    path: PathBuf,
    /// `None` after a failed write: the next write reopens the path.
    opened: Mutex<Option<Arc<std::fs::File>>>,
    /// The record of offsets as this process last read or wrote it (taken out while a batch
    /// is written; `None` after a failure: read again from the disk).
    log: std::sync::Mutex<Option<Log>>,
}

/// The files open in this process, by absolute path: two sinks (or a sink and a dead-letter
/// file) on one path share one [`Shared`].
static OPEN: std::sync::Mutex<Option<HashMap<PathBuf, Weak<Shared>>>> = std::sync::Mutex::new(None);

/// What `<file>.offsets` records: the file's length, and per `topic/partition` the merged,
/// sorted offset ranges `[first, last]` whose events the file holds.
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Held {
    length: u64,
    ranges: BTreeMap<String, Vec<(i64, i64)>>,
    /// The keys of `ranges` that are objects, least recently written first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    objects: Vec<String>,
}

impl Held {
    fn key(scope: &str, topic: &str, partition: i32) -> String {
        format!("{scope}:{topic}/{partition}")
    }

    /// Whether the file holds `scope`'s events of this record.
    #[cfg(test)]
    fn holds(&self, scope: &str, topic: &str, partition: i32, offset: i64) -> bool {
        held_in(self.ranges_of(scope, topic, partition), offset)
    }

    /// The ranges of `scope`'s events of this partition the file holds.
    fn ranges_of(&self, scope: &str, topic: &str, partition: i32) -> Ranges<'_> {
        self.ranges
            .get(&Self::key(scope, topic, partition))
            .map(Vec::as_slice)
    }

    /// The file now holds `scope`'s events of `span`.
    fn add(&mut self, scope: &str, span: &Span) {
        let key = Self::key(scope, &span.topic, span.partition);
        // Most batches are of the object written last: it stays where it is.
        if span.topic.contains("://") && self.objects.last() != Some(&key) {
            self.objects.retain(|k| *k != key);
            self.objects.push(key.clone());
            if self.objects.len() > OBJECTS_KEPT {
                let oldest = self.objects.remove(0);
                self.ranges.remove(&oldest);
            }
        }
        let ranges = self.ranges.entry(key).or_default();
        ranges.push((span.first, span.last));
        ranges.sort_unstable();
        let mut merged: Vec<(i64, i64)> = Vec::with_capacity(ranges.len());
        for &(a, b) in ranges.iter() {
            match merged.last_mut() {
                Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        let excess = merged.len().saturating_sub(RANGES_KEPT);
        merged.drain(..excess);
        *ranges = merged;
    }

    /// `<file>.offsets`.
    fn path(file: &Path) -> PathBuf {
        let mut name = file.as_os_str().to_owned();
        name.push(".offsets");
        PathBuf::from(name)
    }
}

/// A partition's held ranges, if the record has any.
type Ranges<'a> = Option<&'a [(i64, i64)]>;

/// Whether `ranges` hold `offset`.
fn held_in(ranges: Ranges<'_>, offset: i64) -> bool {
    ranges.is_some_and(|r| r.iter().any(|&(a, b)| a <= offset && offset <= b))
}

/// A line of the record after its first: what one batch added, and the file's new length.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Delta {
    length: u64,
    scope: String,
    /// `(topic, partition, first, last)` of each span the batch covered.
    add: Vec<(String, i32, i64, i64)>,
}

/// A line of the record: a batch's [`Delta`], or the whole record (its first line).
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum Line {
    Delta(Delta),
    Whole(Held),
}

/// `<file>.offsets` as read or written: what it says ([`Held`], its lines applied in order),
/// and enough about the file to append to it or to see that someone else changed it.
#[derive(Debug)]
struct Log {
    held: Held,
    /// The record file's device, inode, length and modification time when last read or
    /// written by this process: as long as they stay, `held` is what the file says (another
    /// writer appends, which moves the length, or renames a new record over it).
    seen: Option<(u64, u64, u64, i64, i64)>,
    /// Lines after the whole record.
    deltas: usize,
    /// The last line has no newline (a record written whole by an older sluice).
    open_line: bool,
}

impl Log {
    /// A record not written yet.
    fn new(held: Held) -> Self {
        Self {
            held,
            seen: None,
            deltas: DELTAS_KEPT,
            open_line: false,
        }
    }

    /// The record beside `file`: `cached` if the file is as this process last saw it, else read
    /// afresh. `None` without a record, or with one that cannot be read (warned). A torn last
    /// line (a writer killed while appending it) is left out and cut from the record.
    fn load(file: &Path, cached: Option<Log>) -> std::io::Result<Option<Log>> {
        let path = Held::path(file);
        let seen = match std::fs::metadata(&path) {
            Ok(m) => identity(&m),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        if let Some(log) = cached.filter(|l| l.seen == Some(seen)) {
            return Ok(Some(log));
        }
        let text = std::fs::read(&path)?;
        let unreadable = |error: &dyn std::fmt::Display| {
            tracing::warn!(path = %path.display(), %error, "cannot read the record of offsets; the file may get lines again that it holds");
        };
        let mut log: Option<Log> = None;
        let mut at = 0;
        while at < text.len() {
            let (line, end, open) = match memchr::memchr(b'\n', &text[at..]) {
                Some(n) => (&text[at..at + n], at + n + 1, false),
                None => (&text[at..], text.len(), true),
            };
            match (serde_json::from_slice::<Line>(line), &mut log) {
                (Ok(Line::Whole(held)), None) => {
                    log = Some(Log {
                        held,
                        seen: None,
                        deltas: 0,
                        open_line: open,
                    });
                }
                (Ok(Line::Delta(delta)), Some(log)) => {
                    log.apply(&delta);
                    log.deltas += 1;
                    log.open_line = open;
                }
                (Ok(_), _) => {
                    unreadable(&"a batch's line without a whole record before it");
                    return Ok(None);
                }
                // A writer killed while appending its batch's line: that batch is not
                // recorded (its lines are cut from the file), and the line goes.
                (Err(_), Some(_)) if open => {
                    std::fs::OpenOptions::new()
                        .write(true)
                        .open(&path)?
                        .set_len(at as u64)?;
                    break;
                }
                (Err(e), _) => {
                    unreadable(&e);
                    return Ok(None);
                }
            }
            at = end;
        }
        if let Some(log) = &mut log {
            log.seen = Some(identity(&std::fs::metadata(&path)?));
        }
        if log.is_none() && !text.is_empty() {
            unreadable(&"no whole record in it");
        }
        Ok(log)
    }

    fn apply(&mut self, delta: &Delta) {
        self.held.length = delta.length;
        for (topic, partition, first, last) in &delta.add {
            self.held.add(
                &delta.scope,
                &Span {
                    topic: Arc::from(topic.as_str()),
                    partition: *partition,
                    first: *first,
                    last: *last,
                },
            );
        }
    }

    /// Records that the file is now `length` long and holds `scope`'s events of `covers`:
    /// appends the batch's line, or writes the whole record (aside, then renamed over it) when
    /// it has none yet or [`DELTAS_KEPT`] lines were appended since.
    fn append(
        &mut self,
        file: &Path,
        length: u64,
        scope: &str,
        covers: &[Span],
    ) -> std::io::Result<()> {
        let delta = Delta {
            length,
            scope: scope.to_owned(),
            add: covers
                .iter()
                .map(|s| (s.topic.to_string(), s.partition, s.first, s.last))
                .collect(),
        };
        self.apply(&delta);
        let path = Held::path(file);
        if self.deltas >= DELTAS_KEPT {
            let mut aside = path.as_os_str().to_owned();
            aside.push(".tmp");
            let mut text = serde_json::to_vec(&self.held).expect("serializable");
            text.push(b'\n');
            std::fs::write(&aside, text)?;
            std::fs::rename(&aside, &path)?;
            self.deltas = 0;
        } else {
            let mut text = Vec::with_capacity(64 + 64 * delta.add.len());
            if self.open_line {
                text.push(b'\n');
            }
            serde_json::to_writer(&mut text, &delta).expect("serializable");
            text.push(b'\n');
            let mut record = std::fs::OpenOptions::new().append(true).open(&path)?;
            record.write_all(&text)?;
            self.deltas += 1;
        }
        self.open_line = false;
        self.seen = Some(identity(&std::fs::metadata(&path)?));
        Ok(())
    }
}

/// What tells a record file changed: device, inode, length, modification time.
fn identity(m: &std::fs::Metadata) -> (u64, u64, u64, i64, i64) {
    use std::os::unix::fs::MetadataExt as _;
    (m.dev(), m.ino(), m.size(), m.mtime(), m.mtime_nsec())
}

impl FileSink {
    /// Opens `path` for appending, creating it and its folder.
    pub async fn open(path: &Path) -> std::io::Result<Self> {
        Self::open_with(path, true, "").await
    }

    /// [`open`](Self::open); `once`: write each event from a Kafka buffer once, keeping its
    /// offsets under `scope`. A path this process already has open is shared.
    pub async fn open_with(path: &Path, once: bool, scope: &str) -> std::io::Result<Self> {
        let name = sluice_config::sink::file::name(path);
        let key = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
        let open = || {
            OPEN.lock()
                .unwrap_or_else(|e| e.into_inner())
                .get_or_insert_with(HashMap::new)
                .get(&key)
                .and_then(Weak::upgrade)
        };
        let file = match open() {
            Some(shared) => shared,
            None => {
                let opened = Arc::new(open_append(path).await?);
                // What a writer killed mid-batch left is cut now (and again under the lock
                // before each batch, for a writer killed while this one runs).
                let (file, at) = (opened.clone(), path.to_owned());
                blocking(move || Locked::take(file, &at, None).map(drop)).await?;
                let mut files = OPEN.lock().unwrap_or_else(|e| e.into_inner());
                let files = files.get_or_insert_with(HashMap::new);
                files.retain(|_, f| f.strong_count() > 0);
                match files.get(&key).and_then(Weak::upgrade) {
                    // Opened meanwhile by another sink: that one is the file.
                    Some(shared) => shared,
                    None => {
                        let shared = Arc::new(Shared {
                            path: path.to_owned(),
                            opened: Mutex::new(Some(opened)),
                            log: std::sync::Mutex::new(None),
                        });
                        files.insert(key, Arc::downgrade(&shared));
                        shared
                    }
                }
            }
        };
        Ok(Self {
            name,
            once,
            scope: scope.to_owned(),
            file,
        })
    }
}

impl super::BuildOutput for sluice_config::sink::file::FileSink {
    type Error = std::io::Error;
    async fn build(self, _: &str, cx: &super::SinkBuild<'_>) -> std::io::Result<Arc<dyn Output>> {
        Ok(Arc::new(
            FileSink::open_with(&self.path, self.exactly_once, cx.pipeline).await?,
        ))
    }
}

#[async_trait::async_trait]
impl Output for FileSink {
    /// Skips the events whose record the file holds; records the batch's ranges with the lines.
    async fn send(&self, events: &[Bytes], from: &Provenance) -> Result<(), SendError> {
        self.write_from(events, from)
            .await
            .map_err(|e| SendError::Retry(e.source.to_string()))
    }

    fn records_reads(&self) -> bool {
        self.once
    }
}

impl FileSink {
    /// For logs: `file:<path>`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Appends `lines` and flushes; all or, on error, to be written again whole.
    pub async fn write(&self, lines: &[u8]) -> Result<(), SinkError> {
        if lines.is_empty() {
            return Ok(());
        }
        self.append(|_| lines.to_vec(), &[]).await
    }

    /// Appends the events the file does not hold yet, then records `from.covers` as held.
    pub(crate) async fn write_from(
        &self,
        events: &[Bytes],
        from: &Provenance,
    ) -> Result<(), SinkError> {
        if !self.once {
            return self.write(&super::codec::lines(events)).await;
        }
        if events.is_empty() && from.covers.is_empty() {
            return Ok(());
        }
        let fresh = |held: &Held| {
            if from.at.is_empty() {
                return super::codec::lines(events);
            }
            // The ranges of the partition of the event before (most batches have one).
            let mut last: Option<(&Position, Ranges<'_>)> = None;
            let fresh: Vec<Bytes> = events
                .iter()
                .enumerate()
                .map(|(i, e)| (e, from.at.get(i).and_then(Option::as_ref)))
                .filter(|(_, at)| {
                    let Some((p, _)) = at else { return true };
                    let ranges = match last {
                        Some((q, ranges)) if q.partition == p.partition && q.topic == p.topic => {
                            ranges
                        }
                        _ => held.ranges_of(&self.scope, &p.topic, p.partition),
                    };
                    last = Some((p, ranges));
                    !held_in(ranges, p.offset)
                })
                .map(|(e, _)| e.clone())
                .collect();
            if fresh.len() < events.len() {
                // After a crash the first batches read again are skipped: expected. Skipping
                // on and on means the offsets are not the ones the record was made from.
                tracing::warn!(sink = %self.name, skipped = events.len() - fresh.len(), "skipping events the file already holds (read again after a restart); if the buffer topic was recreated or moved to another cluster, remove the file's record of offsets (<path>.offsets)");
            }
            super::codec::lines(&fresh)
        };
        self.append(fresh, &from.covers).await
    }

    /// The record of offsets as this process last saw it.
    fn cached_log(&self) -> std::sync::MutexGuard<'_, Option<Log>> {
        self.file.log.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends the lines `lines` makes from what the file holds, and records `covers` (and the
    /// new length) beside the file when it keeps a record of offsets; all under the file's
    /// lock, so what the record says and what the file holds move together whoever writes.
    async fn append(
        &self,
        lines: impl FnOnce(&Held) -> Vec<u8>,
        covers: &[Span],
    ) -> Result<(), SinkError> {
        let mut slot = self.file.opened.lock().await;
        let result = async {
            let file = match &*slot {
                Some(file) => file.clone(),
                None => slot
                    .insert(Arc::new(open_append(&self.file.path).await?))
                    .clone(),
            };
            let path = self.file.path.clone();
            let cached = self.cached_log().take();
            let (locked, log) = blocking(move || Locked::take(file, &path, cached)).await?;
            let lines = lines(log.as_ref().map_or(&Held::default(), |l| &l.held));
            // A record is kept once there is one (every writer moves its length) or once a
            // batch has offsets to record.
            let record = match log {
                Some(log) => Some(log),
                None if !covers.is_empty() => Some(Log::new(Held {
                    length: locked.length,
                    ..Held::default()
                })),
                None => None,
            };
            let (shared, scope, covers) = (self.file.clone(), self.scope.clone(), covers.to_vec());
            blocking(move || {
                if !lines.is_empty() {
                    (&*locked.file).write_all(&lines)?;
                }
                if let Some(mut record) = record {
                    let length = locked.length + lines.len() as u64;
                    record.append(&shared.path, length, &scope, &covers)?;
                    *shared.log.lock().unwrap_or_else(|e| e.into_inner()) = Some(record);
                }
                // The lock goes with `locked`, after the record.
                Ok(())
            })
            .await
        }
        .await;
        if result.is_err() {
            // Part of the batch may be in the file: the next writer cuts it (to the recorded
            // length, or the torn line), and the retry writes the whole batch.
            *slot = None;
        }
        result.map_err(|source| SinkError::new(&self.name, source))
    }
}

/// The file locked for one batch, and its length under the lock (after cutting what a writer
/// killed mid-batch left). Unlocked when dropped: also when the batch's task is cancelled
/// between reading the record and writing.
struct Locked {
    file: Arc<std::fs::File>,
    length: u64,
}

impl Locked {
    /// Waits for the lock on `file` (at `path`), then reads the record of offsets afresh and
    /// cuts the file to it: a file longer than its record was left so by a writer killed
    /// between its lines and its record, in this process or another. Without a record, only a
    /// torn last line is cut. A file shorter than its record was rotated or truncated by
    /// someone else: only a torn line is cut, and the record takes the file's length.
    fn take(
        file: Arc<std::fs::File>,
        path: &Path,
        cached: Option<Log>,
    ) -> std::io::Result<(Self, Option<Log>)> {
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                tracing::debug!(path = %path.display(), "another process writes this file; waiting for its batch");
                file.lock()?;
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
        let mut locked = Self { file, length: 0 };
        let log = Log::load(path, cached)?;
        let length = locked.file.metadata()?.len();
        locked.length = match log.as_ref().map(|l| l.held.length) {
            Some(recorded) if recorded < length => {
                tracing::warn!(
                    path = %path.display(),
                    cut = length - recorded,
                    "the sink file holds lines written after its last record of offsets (a writer killed mid-batch); cutting them, their batch is read again"
                );
                locked.file.set_len(recorded)?;
                recorded
            }
            Some(recorded) if recorded == length => length,
            _ => {
                trim_torn_line(&locked.file)?;
                locked.file.metadata()?.len()
            }
        };
        Ok((locked, log))
    }
}

impl Drop for Locked {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

/// Runs file I/O off the reactor: [`crate::off_reactor`] (a batch's append is a few small
/// writes into the page cache).
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> std::io::Result<T> {
    crate::off_reactor(work).await
}

/// Opens `path` for appending, creating it and its folder. Nothing is cut here: that is done
/// under the lock, before each batch ([`Locked::take`]).
async fn open_append(path: &Path) -> std::io::Result<std::fs::File> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        tokio::fs::create_dir_all(dir).await?;
    }
    let path = path.to_owned();
    blocking(move || {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(path)
    })
    .await
}

/// Cuts a last line without its newline (a writer died mid-write): its events are written
/// again, whole.
fn trim_torn_line(file: &std::fs::File) -> std::io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let metadata = file.metadata()?;
    let len = metadata.len();
    if len == 0 || !metadata.is_file() {
        return Ok(());
    }
    let mut reader = file;
    let mut last = [0u8];
    reader.seek(SeekFrom::Start(len - 1))?;
    reader.read_exact(&mut last)?;
    if last[0] == b'\n' {
        return Ok(());
    }
    // Look back in blocks for the last newline.
    let mut end = len;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let start = end.saturating_sub(buf.len() as u64);
        let n = (end - start) as usize;
        reader.seek(SeekFrom::Start(start))?;
        reader.read_exact(&mut buf[..n])?;
        if let Some(i) = buf[..n].iter().rposition(|b| *b == b'\n') {
            let keep = start + i as u64 + 1;
            tracing::warn!(
                cut = len - keep,
                "the sink file ended in a torn line (a crash mid-write); cutting it, its events are written again"
            );
            return file.set_len(keep);
        }
        if start == 0 {
            tracing::warn!(
                cut = len,
                "the sink file holds only a torn line; cutting it"
            );
            return file.set_len(0);
        }
        end = start;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One event per offset of `offsets` in partition 0 of `t`, and where they came from.
    fn batch(offsets: std::ops::Range<i64>) -> (Vec<Bytes>, Provenance) {
        let at: Vec<Position> = offsets
            .clone()
            .map(|offset| Position {
                topic: Arc::from("t"),
                partition: 0,
                offset,
            })
            .collect();
        let events = offsets
            .map(|n| Bytes::from(format!("{{\"n\":{n}}}")))
            .collect();
        let from = Provenance {
            covers: Span::runs(at.iter()),
            extent: None,
            at: at.into_iter().map(|p| Some((p, 0))).collect(),
        };
        (events, from)
    }

    /// Appends `bytes` to the file at `path`, as a writer killed mid-write leaves them.
    fn append_to(path: &Path, bytes: &[u8]) {
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .unwrap();
        file.write_all(bytes).unwrap();
    }

    fn numbers(path: &Path) -> Vec<i64> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["n"]
                    .as_i64()
                    .unwrap()
            })
            .collect()
    }

    #[tokio::test]
    async fn batches_read_again_after_a_restart_are_not_written_twice_in_any_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let sink = FileSink::open(&path).await.unwrap();
        // A later batch of the partition first (another worker was faster).
        let (e, from) = batch(5..10);
        sink.send(&e, &from).await.unwrap();
        drop(sink);
        // The restart reads everything again from the last commit.
        let sink = FileSink::open(&path).await.unwrap();
        for range in [0..5, 5..10, 0..10, 10..12] {
            let (e, from) = batch(range);
            sink.send(&e, &from).await.unwrap();
        }
        assert_eq!(numbers(&path), [5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 10, 11]);
    }

    #[tokio::test]
    async fn two_sinks_on_one_path_share_the_file_and_keep_their_offsets_apart() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        // Two pipelines reading the same topic (two groups) into one file.
        let a = FileSink::open_with(&path, true, "a").await.unwrap();
        let b = FileSink::open_with(&path, true, "b").await.unwrap();
        let (e, from) = batch(0..2);
        a.send(&e, &from).await.unwrap();
        b.send(&e, &from).await.unwrap();
        a.send(&e, &from).await.unwrap();
        drop((a, b));
        // Reopened: the length recorded covers both sinks' lines, nothing is cut.
        let a = FileSink::open_with(&path, true, "a").await.unwrap();
        let (e, from) = batch(0..3);
        a.send(&e, &from).await.unwrap();
        assert_eq!(numbers(&path), [0, 1, 0, 1, 2]);
    }

    #[tokio::test]
    async fn lines_after_the_record_of_offsets_are_cut_and_written_once_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let sink = FileSink::open(&path).await.unwrap();
        let (e, from) = batch(0..3);
        sink.send(&e, &from).await.unwrap();
        drop(sink);
        // A kill -9 between the next batch's lines and its record of offsets.
        append_to(&path, b"{\"n\":3}\n{\"n\":4}\n{\"n\"");
        let sink = FileSink::open(&path).await.unwrap();
        assert_eq!(numbers(&path), [0, 1, 2], "cut to the recorded length");
        let (e, from) = batch(0..5);
        sink.send(&e, &from).await.unwrap();
        assert_eq!(numbers(&path), [0, 1, 2, 3, 4]);
    }

    /// What another process's writer does (a `sluice buffer replay`): under the lock, lines
    /// appended and, unless it is killed first, the record's length moved.
    fn another_process_appends(path: &Path, lines: &[u8], records: bool) {
        let file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
        file.lock().unwrap();
        (&file).write_all(lines).unwrap();
        if records {
            let mut log = Log::load(path, None).unwrap().unwrap();
            let length = file.metadata().unwrap().len();
            log.append(path, length, "other", &[]).unwrap();
        }
        file.unlock().unwrap();
    }

    #[tokio::test]
    async fn another_process_writing_the_file_keeps_the_record_true() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let sink = FileSink::open(&path).await.unwrap();
        let (e, from) = batch(0..3);
        sink.send(&e, &from).await.unwrap();
        another_process_appends(&path, b"{\"n\":100}\n{\"n\":101}\n", true);
        let (e, from) = batch(3..5);
        sink.send(&e, &from).await.unwrap();
        // Killed mid-batch: lines without a record, the last one torn.
        another_process_appends(&path, b"{\"n\":200}\n{\"n\":2", false);
        let (e, from) = batch(5..6);
        sink.send(&e, &from).await.unwrap();
        drop(sink);
        // A restart cuts nothing that was recorded.
        let sink = FileSink::open(&path).await.unwrap();
        let (e, from) = batch(0..7);
        sink.send(&e, &from).await.unwrap();
        assert_eq!(numbers(&path), [0, 1, 2, 100, 101, 3, 4, 5, 6]);
        let log = Log::load(&path, None).unwrap().unwrap();
        assert_eq!(log.held.length, std::fs::metadata(&path).unwrap().len());
    }

    #[tokio::test]
    async fn a_file_rotated_away_keeps_what_it_held_and_lines_without_offsets_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let sink = FileSink::open(&path).await.unwrap();
        let (e, from) = batch(0..3);
        sink.send(&e, &from).await.unwrap();
        // Lines without a position (what a stateful processor emits) move the length too.
        sink.send(
            &[Bytes::from_static(b"{\"n\":100}")],
            &Provenance::default(),
        )
        .await
        .unwrap();
        drop(sink);
        let sink = FileSink::open(&path).await.unwrap();
        assert_eq!(numbers(&path), [0, 1, 2, 100]);
        drop(sink);
        std::fs::rename(&path, dir.path().join("events.jsonl.1")).unwrap();
        let sink = FileSink::open(&path).await.unwrap();
        let (e, from) = batch(0..4);
        sink.send(&e, &from).await.unwrap();
        assert_eq!(numbers(&path), [3], "0..3 are in the rotated file");
    }

    #[tokio::test]
    async fn a_torn_last_line_is_cut_when_the_file_is_reopened() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        std::fs::write(&path, "{\"n\":1}\n{\"n\":2}\n{\"n\":").unwrap();
        let sink = FileSink::open(&path).await.unwrap();
        sink.write(b"{\"n\":3}\n").await.unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n"
        );
    }

    #[tokio::test]
    async fn batches_append_whole_and_an_empty_batch_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/events.jsonl");
        let sink = FileSink::open(&path).await.unwrap();
        sink.write(b"{\"n\":1}\n").await.unwrap();
        sink.write(b"").await.unwrap();
        sink.write(b"{\"n\":2}\n{\"n\":3}\n").await.unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n"
        );
    }

    #[tokio::test]
    async fn the_record_takes_a_line_per_batch_and_is_rewritten_whole_now_and_then() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let record = Held::path(&path);
        let sink = FileSink::open(&path).await.unwrap();
        for n in 0..DELTAS_KEPT as i64 + 3 {
            let (e, from) = batch(n..n + 1);
            sink.send(&e, &from).await.unwrap();
            let lines = std::fs::read_to_string(&record).unwrap().lines().count();
            let want = if n <= DELTAS_KEPT as i64 {
                n as usize + 1
            } else {
                n as usize - DELTAS_KEPT
            };
            assert_eq!(lines, want, "after batch {n}");
        }
        let read = Log::load(&path, None).unwrap().unwrap();
        let cached = sink.cached_log().take().unwrap();
        assert_eq!(read.held, cached.held, "what the lines say is what was written");
        assert_eq!(read.held.length, std::fs::metadata(&path).unwrap().len());
        assert!(read.held.holds("", "t", 0, DELTAS_KEPT as i64 + 2));
    }

    #[tokio::test]
    async fn a_torn_line_of_the_record_is_cut_with_its_batch() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let sink = FileSink::open(&path).await.unwrap();
        for range in [0..2, 2..3] {
            let (e, from) = batch(range);
            sink.send(&e, &from).await.unwrap();
        }
        drop(sink);
        // A kill -9 while the next batch's line went into the record, after its lines.
        append_to(&path, b"{\"n\":3}\n");
        append_to(&Held::path(&path), b"{\"length\":32,\"scope\":\"\",\"ad");
        let sink = FileSink::open(&path).await.unwrap();
        let (e, from) = batch(0..5);
        sink.send(&e, &from).await.unwrap();
        assert_eq!(numbers(&path), [0, 1, 2, 3, 4], "3 once, from the batch read again");
        let text = std::fs::read_to_string(Held::path(&path)).unwrap();
        assert!(text.ends_with('\n') && !text.contains("\"ad\n"), "{text}");
    }

    #[tokio::test]
    async fn a_record_written_whole_by_an_older_sluice_is_read_and_added_to() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        std::fs::write(&path, "{\"n\":0}\n{\"n\":1}\n").unwrap();
        // One JSON object and no newline, as sluice wrote it before the lines.
        std::fs::write(
            Held::path(&path),
            r#"{"length":16,"ranges":{":t/0":[[0,1]]}}"#,
        )
        .unwrap();
        let sink = FileSink::open(&path).await.unwrap();
        let (e, from) = batch(0..3);
        sink.send(&e, &from).await.unwrap();
        drop(sink);
        let sink = FileSink::open(&path).await.unwrap();
        let (e, from) = batch(0..4);
        sink.send(&e, &from).await.unwrap();
        assert_eq!(numbers(&path), [0, 1, 2, 3]);
        let text = std::fs::read_to_string(Held::path(&path)).unwrap();
        assert_eq!(text.lines().count(), 3, "{text}");
    }

    #[test]
    fn the_record_keeps_the_latest_objects_and_every_topic() {
        let span = |topic: &str, partition| Span {
            topic: topic.into(),
            partition,
            first: 1,
            last: 10,
        };
        let mut held = Held::default();
        held.add("p", &span("buffer-topic", 0));
        for i in 0..OBJECTS_KEPT + 5 {
            held.add("p", &span(&format!("s3://b/k{i}"), 7));
        }
        // Written again: the most recent, kept.
        held.add("p", &span("s3://b/k2", 7));
        assert!(
            held.holds("p", "buffer-topic", 0, 5),
            "a topic is never dropped"
        );
        assert!(held.holds("p", "s3://b/k2", 7, 5));
        assert!(
            !held.holds("p", "s3://b/k0", 7, 5),
            "the oldest object went"
        );
        assert!(held.holds("p", &format!("s3://b/k{}", OBJECTS_KEPT + 4), 7, 10));
        assert_eq!(held.ranges.len(), OBJECTS_KEPT + 1);
        let text = serde_json::to_string(&held).unwrap();
        assert_eq!(serde_json::from_str::<Held>(&text).unwrap(), held);
    }
}
