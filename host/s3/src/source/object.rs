//! Reading one object of the s3 source: streams it into batches of lines (their positions the
//! object and the line number), and counts what is in flight of each object, so it finishes
//! (its message is deleted, or the scan records it) only once every line reached the sinks.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use aws_sdk_s3::error::{DisplayErrorContext, ProvideErrorMetadata};
use sluice_buffer::{Acknowledgement, Batch, Position, Read, Record, Unreadable};
use tokio::io::AsyncWriteExt as _;
use tokio::sync::{mpsc, watch};

use super::{Compression, HEADER, Lines, S3SourceConfig, S3Stats};
use crate::codec::{csv, json, parquet};
use crate::lines::{INFLATE_SLICE, Inflate, LINE_LIMIT, Piece, Splitter};
use crate::notification::Announced;

/// What reads objects into batches, for the queue readers and the scan.
pub(super) struct Reading {
    pub(super) config: S3SourceConfig,
    pub(super) stats: Arc<S3Stats>,
    pub(super) s3: aws_sdk_s3::Client,
    /// The queue URL's account (else the role's): the default expected bucket owner.
    pub(super) account: Option<String>,
    pub(super) batches: mpsc::Sender<Batch>,
    pub(super) stop: watch::Receiver<bool>,
    /// Each read of an object gets the next (the `epoch` of its [`Read`]s).
    pub(super) reads: Arc<AtomicU64>,
}

/// One object in flight: it finishes (its message is deleted, or the scan records it) once it
/// was read to the end and every batch of its lines was acknowledged. Dropped otherwise (a
/// batch dropped unacknowledged, a failed or stopped read), it finishes unread: the message
/// stays and comes back, the scan tries it again.
pub(super) struct InFlight {
    /// Batches out, read to the end, finished.
    state: Mutex<(usize, bool, bool)>,
    /// Called once: `true` when done, `false` when dropped before.
    finish: Box<dyn Fn(bool) + Send + Sync>,
}

impl InFlight {
    pub(super) fn new(finish: impl Fn(bool) + Send + Sync + 'static) -> Self {
        Self {
            state: Mutex::new((0, false, false)),
            finish: Box::new(finish),
        }
    }

    /// One more batch out.
    fn sent(&self) {
        self.state.lock().expect("not poisoned").0 += 1;
    }

    /// A batch was acknowledged.
    fn acknowledged(&self) {
        let mut s = self.state.lock().expect("not poisoned");
        s.0 -= 1;
        self.finish_if_done(&mut s);
    }

    /// The object was read to its end.
    fn read_whole(&self) {
        let mut s = self.state.lock().expect("not poisoned");
        s.1 = true;
        self.finish_if_done(&mut s);
    }

    fn finish_if_done(&self, s: &mut (usize, bool, bool)) {
        if s.0 == 0 && s.1 && !s.2 {
            s.2 = true;
            (self.finish)(true);
        }
    }

    pub(super) fn done(&self) -> bool {
        self.state.lock().expect("not poisoned").2
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if !self.state.get_mut().expect("not poisoned").2 {
            (self.finish)(false);
        }
    }
}

/// Why an object was not read whole.
#[derive(Debug)]
pub(super) enum ReadError {
    /// Shutting down.
    Stopped,
    /// The store refused or failed (to be tried again).
    Failed(String),
    /// The object is not there (any more).
    Missing(String),
}

impl Reading {
    /// Reads the object `a` names whole into batches, counting it; once its batches are
    /// acknowledged, `object` finishes.
    pub(super) async fn read_object(
        &self,
        a: &Announced,
        object: &Arc<InFlight>,
    ) -> Result<(), ReadError> {
        let started = Instant::now();
        let result = self.read(a, object).await;
        match &result {
            Ok((bytes, lines)) => {
                self.stats.objects_succeeded.add(1);
                self.stats.object_size.record(*bytes as f64);
                self.stats.processed_bytes.record(*bytes as f64);
                self.stats.object_events.record(*lines as f64);
                self.stats.read_time.record(started.elapsed().as_secs_f64());
                tracing::debug!(bucket = %a.bucket, key = %a.key, bytes, lines, "object read");
                object.read_whole();
            }
            Err(ReadError::Stopped) => {}
            Err(ReadError::Failed(_) | ReadError::Missing(_)) => self.stats.objects_failed.add(1),
        }
        result.map(|_| ())
    }

    /// The owner the bucket must have, if checked.
    pub(super) fn expected_owner(&self, bucket: &str) -> Option<String> {
        if !self.config.check_owner {
            return None;
        }
        self.config
            .bucket_owners
            .get(bucket)
            .or(self.config.default_bucket_owner.as_ref())
            .or(self.account.as_ref())
            .cloned()
    }

    /// Streams the object, sending its lines in batches; returns its bytes and lines.
    async fn read(&self, a: &Announced, object: &Arc<InFlight>) -> Result<(u64, i64), ReadError> {
        let gzip = match self.config.compression {
            Compression::Gzip => true,
            Compression::None => false,
            Compression::Automatic => a.key.ends_with(".gz"),
        };
        let is_parquet = matches!(self.config.lines, Lines::Parquet);
        let mut spool = if is_parquet {
            Some(Spool::new().await?)
        } else {
            None
        };
        let mut stop = self.stop.clone();
        let mut body = None;
        let mut etag = None;
        let mut got: u64 = 0;
        let mut attempts = 0;
        let mut inflate = Inflate::new(gzip && !is_parquet);
        let mut text = Vec::new();
        let mut decoder = Decoder::new(&self.config.lines);
        let mut lines = Batcher::new(self, a, object);
        loop {
            if body.is_none() {
                let get = self.get(a, got, etag.as_deref());
                let out = tokio::select! {
                    out = get => out?,
                    _ = stop.wait_for(|s| *s) => return Err(ReadError::Stopped),
                };
                if etag.is_none() {
                    lines.partition = partition(out.e_tag().unwrap_or_default());
                    etag = out.e_tag().map(str::to_owned);
                } else {
                    // A store that ignores `Range` would send the object from its start.
                    let from = out
                        .content_range()
                        .and_then(|r| r.strip_prefix("bytes "))
                        .and_then(|r| r.split('-').next())
                        .and_then(|n| n.parse::<u64>().ok());
                    if from != Some(got) {
                        return Err(ReadError::Failed(format!(
                            "resuming at byte {got}, the store answered the range {:?}",
                            out.content_range()
                        )));
                    }
                }
                body = Some(out.body);
            }
            let stream = body.as_mut().expect("set above");
            let chunk = tokio::select! {
                c = stream.next() => c,
                _ = stop.wait_for(|s| *s) => return Err(ReadError::Stopped),
            };
            match chunk {
                None => break,
                Some(Ok(chunk)) => {
                    // Data Prepper reads a parquet object as it is whatever `compression`
                    // says (its codec reads the object itself, not the inflated stream), so a
                    // plain one is read here too; a gzipped one (its magic number first, where
                    // parquet has `PAR1`) is inflated.
                    if is_parquet && gzip && got == 0 && chunk.first() == Some(&0x1f) {
                        inflate = Inflate::new(true);
                    }
                    got += chunk.len() as u64;
                    // Slice by slice: what one slice inflates goes out (waiting for room)
                    // before the next is inflated.
                    for slice in chunk.chunks(INFLATE_SLICE) {
                        inflate
                            .feed(slice, &mut text)
                            .map_err(|e| ReadError::Failed(format!("inflating gzip: {e}")))?;
                        match &mut spool {
                            Some(spool) => spool.write(&text).await?,
                            None => lines.decode(&mut decoder, &text).await?,
                        }
                    }
                }
                Some(Err(e)) => {
                    attempts += 1;
                    if attempts > 5 {
                        return Err(ReadError::Failed(format!("reading the body: {e}")));
                    }
                    tracing::warn!(bucket = %a.bucket, key = %a.key, at = got, error = %e,
                        "reading an object broke off; resuming where it stopped");
                    body = None;
                }
            }
        }
        inflate
            .finish(&mut text)
            .map_err(|e| ReadError::Failed(format!("inflating gzip: {e}")))?;
        if let Some(mut spool) = spool {
            spool.write(&text).await?;
            lines.parquet(spool.finish().await?).await?;
            return Ok((got, lines.number));
        }
        lines.decode(&mut decoder, &text).await?;
        let mut last = Vec::new();
        let end = decoder.finish(&mut last);
        for (number, piece) in last {
            lines.take(number, piece).await?;
        }
        lines.flush().await?;
        end?;
        Ok((got, lines.number))
    }

    /// `GetObject` from byte `from` on (`If-Match` the first read's ETag when resuming).
    async fn get(
        &self,
        a: &Announced,
        from: u64,
        etag: Option<&str>,
    ) -> Result<aws_sdk_s3::operation::get_object::GetObjectOutput, ReadError> {
        let mut get = self.s3.get_object().bucket(&a.bucket).key(&a.key);
        if let Some(owner) = self.expected_owner(&a.bucket) {
            get = get.expected_bucket_owner(owner);
        }
        if from > 0 {
            get = get.range(format!("bytes={from}-"));
        }
        if let Some(etag) = etag {
            get = get.if_match(etag);
        }
        get.send().await.map_err(|e| {
            let reason = format!(
                "GetObject s3://{}/{}: {}",
                a.bucket,
                a.key,
                DisplayErrorContext(&e)
            );
            match e.code() {
                Some("NoSuchKey" | "NotFound") => {
                    self.stats.objects_not_found.add(1);
                    return ReadError::Missing(reason);
                }
                Some("AccessDenied") => self.stats.objects_access_denied.add(1),
                _ => {}
            }
            ReadError::Failed(reason)
        })
    }
}

/// A record's bytes, owned (the decoder's borrow ends with the chunk).
enum Owned {
    Line(Vec<u8>),
    TooLong(Vec<u8>),
}

fn owned(p: Piece<'_>) -> Owned {
    match p {
        Piece::Line(l) => Owned::Line(l.to_vec()),
        Piece::TooLong(l) => Owned::TooLong(l.to_vec()),
    }
}

/// How the codec cuts an object's text into records, each with its number when the codec
/// gives one (`None`: the next line's).
enum Decoder {
    Lines(Splitter),
    Json(Box<json::JsonSplitter>),
    Csv(Box<csv::CsvSplitter>),
}

type Pieces = Vec<(Option<i64>, Owned)>;

impl Decoder {
    fn new(lines: &Lines) -> Self {
        match lines {
            // A parquet object is spooled, not cut (`Batcher::parquet`).
            Lines::Newline | Lines::Ndjson { .. } | Lines::Parquet => {
                Self::Lines(Splitter::default())
            }
            Lines::Json(options) => Self::Json(Box::new(json::JsonSplitter::new(options.clone()))),
            Lines::Csv(options) => Self::Csv(Box::new(csv::CsvSplitter::new(options.clone()))),
        }
    }

    fn feed(&mut self, text: &[u8], out: &mut Pieces) -> Result<(), ReadError> {
        match self {
            Self::Lines(s) => {
                s.feed(text, &mut |p| out.push((None, owned(p))));
                Ok(())
            }
            Self::Json(s) => s
                .feed(text, &mut |e| out.push(element(e)))
                .map_err(malformed),
            Self::Csv(s) => s.feed(text, &mut |r| out.push(row(r))).map_err(malformed),
        }
    }

    fn finish(&mut self, out: &mut Pieces) -> Result<(), ReadError> {
        match self {
            Self::Lines(s) => {
                s.finish(&mut |p| out.push((None, owned(p))));
                Ok(())
            }
            Self::Json(s) => s.finish(&mut |e| out.push(element(e))).map_err(malformed),
            Self::Csv(s) => s.finish(&mut |r| out.push(row(r))).map_err(malformed),
        }
    }
}

/// A malformed object: Data Prepper's codecs fail it there, after the records before.
fn malformed(e: impl std::fmt::Display) -> ReadError {
    ReadError::Failed(format!("the codec cannot read on: {e}"))
}

fn number(n: u64) -> Option<i64> {
    Some(i64::try_from(n).unwrap_or(i64::MAX))
}

fn element(e: json::Element<'_>) -> (Option<i64>, Owned) {
    match e {
        json::Element::Event { ordinal, json, .. } => (number(ordinal), Owned::Line(json.to_vec())),
        json::Element::TooLong { ordinal, head, .. } => {
            (number(ordinal), Owned::TooLong(head.to_vec()))
        }
    }
}

fn row(r: csv::Row<'_>) -> (Option<i64>, Owned) {
    match r {
        csv::Row::Event { line, json, .. } => (number(line), Owned::Line(json.to_vec())),
        csv::Row::TooLong { line, head, .. } => (number(line), Owned::TooLong(head.to_vec())),
    }
}

/// A parquet object on its way to a temporary file in the system's temporary directory
/// (`TMPDIR`, as Data Prepper's `java.io.tmpdir`). The file has no name (`O_TMPFILE`), so it
/// is gone once closed, even when sluice is killed mid-object: nothing to clean up.
struct Spool(tokio::fs::File);

impl Spool {
    async fn new() -> Result<Self, ReadError> {
        let file = tokio::task::spawn_blocking(tempfile::tempfile)
            .await
            .map_err(|e| ReadError::Failed(e.to_string()))?
            .map_err(spool_failed)?;
        Ok(Self(tokio::fs::File::from_std(file)))
    }

    async fn write(&mut self, bytes: &[u8]) -> Result<(), ReadError> {
        self.0.write_all(bytes).await.map_err(spool_failed)
    }

    async fn finish(mut self) -> Result<std::fs::File, ReadError> {
        self.0.flush().await.map_err(spool_failed)?;
        Ok(self.0.into_std().await)
    }
}

fn spool_failed(e: std::io::Error) -> ReadError {
    ReadError::Failed(format!(
        "spooling the parquet object to a temporary file in {}: {e}",
        std::env::temp_dir().display()
    ))
}

/// Rows in one message from the parquet reader's thread, and such messages waiting at most:
/// a few hundred rows decoded ahead of the batches, and one message per 64 rows, not per row.
const PARQUET_SLICE_ROWS: usize = 64;
const PARQUET_SLICES: usize = 4;

/// The partition of an object's positions: a hash of its ETag (non-negative).
fn partition(etag: &str) -> i32 {
    (crc32fast::hash(etag.trim_matches('"').as_bytes()) & 0x7fff_ffff) as i32
}

/// An object's lines on their way into batches.
struct Batcher<'a> {
    reading: &'a Reading,
    object: &'a Arc<InFlight>,
    topic: Arc<str>,
    partition: i32,
    /// The last line's number.
    number: i64,
    header: Option<String>,
    /// The batch being filled, and the first line number it covers.
    records: Vec<Record>,
    unreadable: Vec<Unreadable>,
    start: i64,
    epoch: u64,
    first: bool,
    /// When the chunk being cut was received, in ms since the Unix epoch.
    received_at_ms: u64,
}

impl<'a> Batcher<'a> {
    fn new(reading: &'a Reading, a: &Announced, object: &'a Arc<InFlight>) -> Self {
        Self {
            reading,
            object,
            topic: Arc::from(format!("s3://{}/{}", a.bucket, a.key)),
            partition: 0,
            number: 0,
            header: None,
            records: Vec::new(),
            unreadable: Vec::new(),
            start: 1,
            epoch: reading.reads.fetch_add(1, Ordering::Relaxed),
            first: true,
            received_at_ms: 0,
        }
    }

    fn record(&self, payload: Vec<u8>) -> Record {
        // `format!` would grow the string for the number: room for it first.
        let mut origin = String::with_capacity(self.topic.len() + 21);
        let _ = write!(origin, "{}:{}", self.topic, self.number);
        Record {
            payload,
            key: None,
            received_at_ms: self.received_at_ms,
            position: Some(Position {
                topic: self.topic.clone(),
                partition: self.partition,
                offset: self.number,
            }),
            origin,
            headers: self
                .header
                .iter()
                .map(|h| (HEADER.to_owned(), h.clone()))
                .collect(),
            ..Record::default()
        }
    }

    /// The records made from here on were received now (read once per chunk, not per line).
    fn received_now(&mut self) {
        self.received_at_ms = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
    }

    /// Cuts `text` into records with `decoder` and takes each.
    async fn decode(&mut self, decoder: &mut Decoder, text: &[u8]) -> Result<(), ReadError> {
        self.received_now();
        let mut pieces = Vec::new();
        let cut = decoder.feed(text, &mut pieces);
        // What came before a malformed part goes on, as Data Prepper's codecs hand it out.
        for (number, piece) in pieces {
            self.take(number, piece).await?;
        }
        if cut.is_err() {
            self.flush().await?;
        }
        cut
    }

    /// Reads the rows of the spooled parquet `file` into batches. Decoding is file I/O and CPU,
    /// so a blocking thread does it, handing rows over a small bounded channel: when the
    /// batches channel is full this waits, then the thread does, so little is read ahead.
    async fn parquet(&mut self, file: std::fs::File) -> Result<(), ReadError> {
        let (tx, mut rx) = mpsc::channel::<Vec<Vec<u8>>>(PARQUET_SLICES);
        let reader = tokio::task::spawn_blocking(move || {
            let mut slice = Vec::with_capacity(PARQUET_SLICE_ROWS);
            let read = parquet::read_rows(file, |_, json| {
                slice.push(json);
                // A closed channel: the read stopped; so does the thread.
                slice.len() < PARQUET_SLICE_ROWS
                    || tx
                        .blocking_send(std::mem::replace(
                            &mut slice,
                            Vec::with_capacity(PARQUET_SLICE_ROWS),
                        ))
                        .is_ok()
            });
            if !slice.is_empty() {
                let _ = tx.blocking_send(slice);
            }
            read
        });
        let mut stop = self.reading.stop.clone();
        let mut number: i64 = 0;
        loop {
            let rows = tokio::select! {
                rows = rx.recv() => rows,
                _ = stop.wait_for(|s| *s) => return Err(ReadError::Stopped),
            };
            let Some(rows) = rows else { break };
            self.received_now();
            for json in rows {
                number += 1;
                let piece = if json.len() > LINE_LIMIT {
                    Owned::TooLong(json[..LINE_LIMIT].to_vec())
                } else {
                    Owned::Line(json)
                };
                self.take(Some(number), piece).await?;
            }
        }
        let read = reader
            .await
            .map_err(|e| ReadError::Failed(format!("the parquet reader stopped: {e}")))?;
        // The rows before a malformed part go on, as Data Prepper's codec hands them out.
        self.flush().await?;
        read.map(|_| ()).map_err(malformed)
    }

    /// Takes the next record of the object: numbered `number`, or the next line's.
    async fn take(&mut self, number: Option<i64>, piece: Owned) -> Result<(), ReadError> {
        self.number = number.map_or(self.number + 1, |n| n.max(self.number + 1));
        let config = &self.reading.config;
        let skipped = self.number as usize <= config.skip_lines;
        let line = match piece {
            Owned::Line(line) => line,
            Owned::TooLong(head) => {
                if !skipped {
                    let reason = format!(
                        "the record is longer than {LINE_LIMIT} bytes (its first {LINE_LIMIT} are kept here)"
                    );
                    let record = self.record(head);
                    self.unreadable.push(Unreadable { record, reason });
                }
                return self.full().await;
            }
        };
        if skipped {
            return self.full().await;
        }
        if config.header && self.header.is_none() {
            self.header = Some(String::from_utf8_lossy(&line).into_owned());
            return self.full().await;
        }
        if let Lines::Ndjson {
            include_empty_objects,
        } = &config.lines
        {
            let blank = line.iter().all(u8::is_ascii_whitespace);
            let empty = !*include_empty_objects
                && line
                    .iter()
                    .filter(|b| !b.is_ascii_whitespace())
                    .eq(b"{}".iter());
            if blank || empty {
                return self.full().await;
            }
        }
        let record = self.record(line);
        self.records.push(record);
        self.full().await
    }

    /// Sends the batch once it holds `batch_size` lines.
    async fn full(&mut self) -> Result<(), ReadError> {
        if self.records.len() + self.unreadable.len() >= self.reading.config.batch_size {
            self.flush().await
        } else {
            Ok(())
        }
    }

    /// Sends what the batch holds (the lines read since the last one, skipped ones included).
    async fn flush(&mut self) -> Result<(), ReadError> {
        let end = self.number + 1;
        if end == self.start {
            return Ok(());
        }
        let read = Read {
            topic: self.topic.clone(),
            partition: self.partition,
            epoch: self.epoch,
            start: self.start,
            end,
            begins: self.first,
        };
        let object = self.object.clone();
        object.sent();
        let records = std::mem::take(&mut self.records);
        self.reading.stats.records_read.add(records.len() as u64);
        let batch = Batch {
            records,
            unreadable: std::mem::take(&mut self.unreadable),
            ack: Acknowledgement::new(move || object.acknowledged()),
            room: None,
            parts: None,
            reads: vec![read],
        };
        self.start = end;
        self.first = false;
        let mut stop = self.reading.stop.clone();
        tokio::select! {
            sent = self.reading.batches.send(batch) => sent.map_err(|_| ReadError::Stopped),
            _ = stop.wait_for(|s| *s) => Err(ReadError::Stopped),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_finishes_only_read_whole_and_every_batch_acknowledged() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let o = InFlight::new(move |done| {
            let _ = tx.send(done);
        });
        o.sent();
        o.sent();
        o.acknowledged();
        o.read_whole();
        assert!(rx.try_recv().is_err(), "one batch is still out");
        o.acknowledged();
        assert_eq!(rx.try_recv(), Ok(true));
        drop(o);
        assert!(rx.try_recv().is_err(), "finished once");
        let (tx, mut rx) = mpsc::unbounded_channel();
        let o = InFlight::new(move |done| {
            let _ = tx.send(done);
        });
        o.sent();
        o.acknowledged();
        assert!(rx.try_recv().is_err(), "not read to its end");
        drop(o);
        assert_eq!(rx.try_recv(), Ok(false), "dropped unread");
    }
}
