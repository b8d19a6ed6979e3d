//! Requests cut by offsets (`docs/design/exactly-once.md`, part 1): for an output that names a
//! request after what it holds (an S3 object's key, an HTTP `Idempotency-Key`), each request
//! holds the events of a contiguous run of one partition's records, and where it ends depends
//! only on those records, so a batch read again after a crash makes the same requests.
//!
//! - Batches of one partition are placed in offset order: one that arrives before the batch
//!   read ahead of it (another worker was faster) waits for it ([`Read`] chains them).
//! - An [`Object`] opens at the first record with events for the sink and closes after the
//!   record at which it holds `event_count` events or `maximum_size` bytes, or before the first
//!   record received `event_collect_timeout` after its first record: never inside a record.
//! - A record is completed (its receipt, per record) once the request holding its events was
//!   delivered; a record with none for this sink, once the requests before it were. So the
//!   buffer commits only at request boundaries, and a restart begins at one.
//! - A partition that goes quiet: its open object is closed by the clock once it has been open
//!   `event_collect_timeout`, no record came for the pipeline's `delay` (how long a reader may
//!   wait to fill a batch) plus [`QUIET`], and the clock is past its first record's receive
//!   time plus `event_collect_timeout`, `delay` and [`QUIET`]. A record that comes later was almost
//!   surely received later too, so the records alone would have cut there as well: a restart
//!   makes the same request. As that is not certain (a record can be later still: a backlog,
//!   a slow worker), the partition's next object waits until the commit reached the end of
//!   this one, so the next start begins there (an S3 object made again from more records has
//!   the same key and overwrites; an HTTP request would get another key).
//! - A partition revoked and assigned again (a new epoch) starts over at its first read: what
//!   was open of it is dropped unsent (read again from the committed offset). So is what is
//!   held of a partition revoked and not assigned again, once the buffer says so (checked at
//!   least every second).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use bytes::Bytes;
use sluice_buffer::Read;
use tokio::time::Instant;

use super::{Extent, Receipt, Tally, Threshold};

/// How long a partition must have had no record, beyond the pipeline's `delay`, before its
/// open object closes by the clock.
pub(crate) const QUIET: std::time::Duration = std::time::Duration::from_secs(1);

/// The requests being cut, per partition, and the receipts of the batches they came from.
#[derive(Default)]
pub(crate) struct Keyed {
    /// How long a record can wait to be read after it was received (the pipeline's `delay`).
    read_delay: std::time::Duration,
    parts: HashMap<(Arc<str>, i32), Part>,
    batches: HashMap<u64, Entry>,
    next_batch: u64,
}

/// A batch some of whose records are not completed yet.
struct Entry {
    receipt: Receipt,
    /// Its records not completed yet.
    left: usize,
}

/// One partition.
#[derive(Default)]
struct Part {
    epoch: u64,
    /// Where the next read to place starts: the end of the last placed one (`None` until the
    /// assignment's first read arrives).
    next: Option<i64>,
    /// Reads that came before the one ahead of them, by start.
    waiting: BTreeMap<i64, Piece>,
    open: Option<Object>,
    /// After a close by the clock: the next object waits until this offset is committed.
    fence: Option<(i64, Arc<Tally>)>,
    /// When a record was last placed.
    last_placed: Option<Instant>,
}

/// One batch's records of one partition.
struct Piece {
    read: Read,
    batch: u64,
    tally: Arc<Tally>,
    /// In offset order: the record's index in its batch, offset, receive time, lines.
    records: Vec<(usize, i64, u64, Vec<Bytes>)>,
}

/// A request being filled.
struct Object {
    extent: Extent,
    lines: Vec<Bytes>,
    bytes: u64,
    /// The records it covers (with events or not), as (batch, index).
    records: Vec<(u64, usize)>,
    /// When its first line was placed, for the close by the clock.
    opened: Instant,
    /// The tally of its first record's batch: it tells the partition's commit.
    tally: Arc<Tally>,
}

/// A request to send: its lines, what names it, and the records it completes once delivered.
pub(crate) struct Ready {
    pub(crate) lines: Vec<Bytes>,
    pub(crate) extent: Extent,
    records: Vec<(u64, usize)>,
}

impl Keyed {
    pub(crate) fn new(read_delay: std::time::Duration) -> Self {
        Self {
            read_delay,
            ..Self::default()
        }
    }

    /// Takes a batch's lines (`at`: each line's record position, all known) with its tallied
    /// receipt; returns the requests that closed.
    pub(crate) fn add(
        &mut self,
        lines: Vec<Bytes>,
        at: &[Option<(sluice_buffer::Position, u32)>],
        receipt: Receipt,
        t: &Threshold,
    ) -> Vec<Ready> {
        let tally = receipt
            .tally()
            .expect("only tallied batches are keyed")
            .clone();
        let id = self.next_batch;
        self.next_batch += 1;
        // Each record's lines, then the records grouped by partition in offset order.
        let mut per_record: Vec<Vec<Bytes>> = vec![Vec::new(); tally.records.len()];
        let index: HashMap<(&str, i32, i64), usize> = tally
            .records
            .iter()
            .enumerate()
            .map(|(i, (p, _))| ((&*p.topic, p.partition, p.offset), i))
            .collect();
        for (line, at) in lines.into_iter().zip(at) {
            let Some((p, _)) = at else { continue };
            if let Some(&i) = index.get(&(&*p.topic, p.partition, p.offset)) {
                per_record[i].push(line);
            }
        }
        let mut pieces: Vec<Piece> = tally
            .reads
            .iter()
            .map(|read| Piece {
                read: read.clone(),
                batch: id,
                tally: tally.clone(),
                records: Vec::new(),
            })
            .collect();
        for (i, (p, received)) in tally.records.iter().enumerate() {
            if let Some(piece) = pieces
                .iter_mut()
                .find(|x| x.read.partition == p.partition && x.read.topic == p.topic)
            {
                let lines = std::mem::take(&mut per_record[i]);
                piece.records.push((i, p.offset, *received, lines));
            }
        }
        self.batches.insert(
            id,
            Entry {
                receipt,
                left: pieces.iter().map(|p| p.records.len()).sum(),
            },
        );
        let mut ready = Vec::new();
        for mut piece in pieces {
            piece.records.sort_unstable_by_key(|r| r.1);
            self.arrive(piece, t, &mut ready);
        }
        self.completed(id, &[]);
        ready
    }

    /// A piece arrives at its partition: placed now if it is next, else it waits.
    fn arrive(&mut self, piece: Piece, t: &Threshold, ready: &mut Vec<Ready>) {
        let key = (piece.read.topic.clone(), piece.read.partition);
        let part = self.parts.entry(key.clone()).or_default();
        if piece.read.epoch < part.epoch {
            // Read under an assignment since revoked: its offsets are not ours to commit.
            let done: Vec<usize> = piece.records.iter().map(|r| r.0).collect();
            self.completed(piece.batch, &done);
            return;
        }
        let mut dropped = Vec::new();
        if piece.read.epoch > part.epoch {
            // Assigned anew: start over where this assignment began.
            dropped = part.reset(piece.read.epoch);
        }
        part.waiting.insert(piece.read.start, piece);
        self.place(&key, t, ready);
        for (batch, i) in dropped {
            self.completed(batch, &[i]);
        }
    }

    /// Places the partition's waiting pieces that are next, unless a fence holds them.
    fn place(&mut self, key: &(Arc<str>, i32), t: &Threshold, ready: &mut Vec<Ready>) {
        let mut done = Vec::new();
        {
            let part = self.parts.get_mut(key).expect("known partition");
            if let Some((end, tally)) = &part.fence {
                if tally.committed(key.1).is_none_or(|c| c < *end) {
                    return;
                }
                part.fence = None;
            }
            loop {
                let next = match part.next {
                    Some(next) => part.waiting.remove(&next),
                    None => {
                        let first = part.waiting.iter().find(|(_, p)| p.read.begins);
                        match first.map(|(start, _)| *start) {
                            Some(start) => part.waiting.remove(&start),
                            None => None,
                        }
                    }
                };
                let Some(piece) = next else { break };
                part.next = Some(piece.read.end);
                for (i, offset, received, lines) in piece.records {
                    part.record(
                        piece.batch,
                        i,
                        offset,
                        received,
                        lines,
                        &piece.tally,
                        t,
                        ready,
                        &mut done,
                    );
                }
            }
        }
        for (batch, i) in done {
            self.completed(batch, &[i]);
        }
    }

    /// Requests whose time is up: objects open for `event_collect_timeout` of wall-clock time
    /// close (and fence their partition); fenced partitions whose commit came are placed.
    pub(crate) fn due(
        &mut self,
        now: Instant,
        wall_ms: u64,
        t: &Threshold,
        ready: &mut Vec<Ready>,
    ) {
        let keys: Vec<(Arc<str>, i32)> = self.parts.keys().cloned().collect();
        for key in keys {
            let part = self.parts.get_mut(&key).expect("known partition");
            if part.revoked(key.1) {
                // Its offsets are no longer ours to commit: what it holds is read again by
                // whoever has the partition now.
                let epoch = part.epoch;
                for (batch, i) in part.reset(epoch) {
                    self.completed(batch, &[i]);
                }
                continue;
            }
            if part
                .closes_at(t, self.read_delay, now, wall_ms)
                .is_some_and(|at| at <= now)
            {
                let o = part.open.take().expect("open");
                if let Some(next) = part.next {
                    part.fence = Some((next, o.tally.clone()));
                }
                ready.push(o.close());
            }
            self.place(&key, t, ready);
        }
    }

    /// When the next call to [`due`](Self::due) has work: the earliest close by the clock, or
    /// soon if a partition waits for its commit.
    pub(crate) fn deadline(&self, t: &Threshold, wall_ms: u64) -> Option<Instant> {
        let now = Instant::now();
        // While anything is held, at least every second: a partition may have been revoked.
        let revoked = (!self.batches.is_empty()).then(|| now + std::time::Duration::from_secs(1));
        self.parts
            .values()
            .filter_map(|part| match part.fence {
                Some(_) => Some(now + std::time::Duration::from_millis(100)),
                None => part.closes_at(t, self.read_delay, now, wall_ms),
            })
            .chain(revoked)
            .min()
    }

    /// Shutdown: every open object closes now.
    pub(crate) fn close_all(&mut self, ready: &mut Vec<Ready>) {
        for part in self.parts.values_mut() {
            if let Some(o) = part.open.take() {
                ready.push(o.close());
            }
        }
    }

    /// Whether nothing is open or waiting.
    pub(crate) fn is_empty(&self) -> bool {
        self.batches.is_empty()
    }

    /// `ready` was delivered (or dead-lettered): its records are done.
    pub(crate) fn delivered(&mut self, ready: Ready) {
        for (batch, i) in ready.records {
            self.completed(batch, &[i]);
        }
    }

    /// Completes records of a batch; the batch's receipt once all of them are.
    fn completed(&mut self, batch: u64, records: &[usize]) {
        let Some(entry) = self.batches.get_mut(&batch) else {
            return;
        };
        entry.receipt.complete_records(records);
        entry.left -= records.len().min(entry.left);
        if entry.left == 0 {
            let entry = self.batches.remove(&batch).expect("present");
            entry.receipt.complete();
        }
    }
}

impl Part {
    /// Whether the assignment under which the partition's held records were read is over
    /// (the buffer no longer commits it).
    fn revoked(&self, partition: i32) -> bool {
        let tally = self
            .open
            .as_ref()
            .map(|o| &o.tally)
            .or(self.fence.as_ref().map(|(_, t)| t))
            .or(self.waiting.values().next().map(|p| &p.tally));
        tally.is_some_and(|t| t.committed(partition).is_none())
    }

    /// When the open object closes by the clock, if nothing comes first (`wall_ms`: the time
    /// `now` is, in ms since the epoch).
    fn closes_at(
        &self,
        t: &Threshold,
        read_delay: std::time::Duration,
        now: Instant,
        wall_ms: u64,
    ) -> Option<Instant> {
        let (o, wait) = (self.open.as_ref()?, t.event_collect_timeout?);
        let received_by = o
            .extent
            .received_at_ms
            .saturating_add((wait + read_delay + QUIET).as_millis() as u64);
        let by_receipt =
            now + std::time::Duration::from_millis(received_by.saturating_sub(wall_ms));
        // A reader holds a batch that did not fill up to `delay`: the next records of a
        // backlog (a restart, a partition taken over) can come that much after the last.
        let quiet = self.last_placed.unwrap_or(o.opened) + read_delay + QUIET;
        Some((o.opened + wait).max(quiet).max(by_receipt))
    }

    /// A new assignment: what was open or waiting is dropped unsent; returns its records, to
    /// be completed (their acknowledgements belong to the old assignment, so the buffer
    /// ignores them, and the batches do not wait on them).
    fn reset(&mut self, epoch: u64) -> Vec<(u64, usize)> {
        let mut dropped = Vec::new();
        if let Some(o) = self.open.take() {
            dropped.extend(o.records);
        }
        for (_, piece) in std::mem::take(&mut self.waiting) {
            dropped.extend(piece.records.iter().map(|r| (piece.batch, r.0)));
        }
        *self = Part {
            epoch,
            ..Part::default()
        };
        dropped
    }

    /// Places one record; closes the object before it (time) or after it (size).
    #[expect(
        clippy::too_many_arguments,
        reason = "one record's fields, unpacked once"
    )]
    fn record(
        &mut self,
        batch: u64,
        i: usize,
        offset: i64,
        received: u64,
        lines: Vec<Bytes>,
        tally: &Arc<Tally>,
        t: &Threshold,
        ready: &mut Vec<Ready>,
        done: &mut Vec<(u64, usize)>,
    ) {
        self.last_placed = Some(Instant::now());
        if lines.is_empty() {
            match &mut self.open {
                Some(o) => o.records.push((batch, i)),
                // Nothing before it is unsent: done.
                None => done.push((batch, i)),
            }
            return;
        }
        if let (Some(o), Some(wait)) = (&self.open, t.event_collect_timeout)
            && received
                >= o.extent
                    .received_at_ms
                    .saturating_add(wait.as_millis() as u64)
        {
            ready.push(self.open.take().expect("open").close());
        }
        let o = self.open.get_or_insert_with(|| Object {
            extent: Extent {
                topic: tally.records[i].0.topic.clone(),
                partition: tally.records[i].0.partition,
                first: offset,
                last: offset,
                received_at_ms: received,
                events: 0,
            },
            lines: Vec::new(),
            bytes: 0,
            records: Vec::new(),
            opened: Instant::now(),
            tally: tally.clone(),
        });
        o.extent.last = offset;
        o.bytes += lines.iter().map(|l| l.len() as u64 + 1).sum::<u64>();
        o.lines.extend(lines);
        o.records.push((batch, i));
        if t.event_count.is_some_and(|n| o.lines.len() >= n)
            || t.maximum_size.is_some_and(|m| o.bytes >= m)
        {
            ready.push(self.open.take().expect("open").close());
        }
    }
}

impl Object {
    fn close(self) -> Ready {
        Ready {
            extent: Extent {
                events: self.lines.len(),
                ..self.extent
            },
            lines: self.lines,
            records: self.records,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use sluice_buffer::Position;

    use super::*;

    /// The buffer's side: what was acknowledged, and what it says is committed (`None`: the
    /// partition was revoked).
    struct Buffer {
        acked: Mutex<Vec<i64>>,
        committed: Mutex<Option<i64>>,
    }

    impl Default for Buffer {
        fn default() -> Self {
            Self {
                acked: Mutex::default(),
                committed: Mutex::new(Some(0)),
            }
        }
    }

    /// One batch's view of `Buffer`: indices become offsets.
    struct Acks {
        buffer: Arc<Buffer>,
        offsets: Vec<i64>,
    }

    impl sluice_buffer::RecordAcks for Acks {
        fn acknowledge(&self, records: &[usize]) {
            let mut acked = self.buffer.acked.lock().unwrap();
            acked.extend(records.iter().map(|&i| self.offsets[i]));
            acked.sort_unstable();
        }
        fn committed(&self, _: i32) -> Option<i64> {
            *self.buffer.committed.lock().unwrap()
        }
    }

    fn threshold(count: usize, timeout_s: u64) -> Threshold {
        Threshold {
            event_count: Some(count),
            maximum_size: None,
            event_collect_timeout: Some(Duration::from_secs(timeout_s)),
        }
    }

    /// A batch of partition 0 reading `start..end` (epoch `epoch`), records `(offset,
    /// received ms, lines)`; adds it and returns what closed.
    fn batch(
        keyed: &mut Keyed,
        buffer: &Arc<Buffer>,
        (epoch, start, end, begins): (u64, i64, i64, bool),
        records: &[(i64, u64, &[&str])],
        t: &Threshold,
    ) -> Vec<Ready> {
        let topic: Arc<str> = "buf".into();
        let position = |offset| Position {
            topic: topic.clone(),
            partition: 0,
            offset,
        };
        let mut lines = Vec::new();
        let mut at = Vec::new();
        for (offset, _, ls) in records {
            for (rank, l) in ls.iter().enumerate() {
                lines.push(Bytes::copy_from_slice(l.as_bytes()));
                at.push(Some((position(*offset), rank as u32)));
            }
        }
        let acks = Arc::new(Acks {
            buffer: buffer.clone(),
            offsets: records.iter().map(|r| r.0).collect(),
        });
        let read = Read {
            topic: topic.clone(),
            partition: 0,
            epoch,
            start,
            end,
            begins,
        };
        let tally = Arc::new(Tally::new(
            records.iter().map(|r| (position(r.0), r.1)).collect(),
            vec![read],
            1,
            acks,
        ));
        let receipt = Receipt::split_tallied(1, Some(tally), || {}).remove(0);
        keyed.add(lines, &at, receipt, t)
    }

    /// Delivers `ready`, returning (first, last, lines) of each.
    fn deliver(keyed: &mut Keyed, ready: Vec<Ready>) -> Vec<(i64, i64, Vec<String>)> {
        ready
            .into_iter()
            .map(|r| {
                let out = (
                    r.extent.first,
                    r.extent.last,
                    r.lines
                        .iter()
                        .map(|l| String::from_utf8_lossy(l).into_owned())
                        .collect(),
                );
                keyed.delivered(r);
                out
            })
            .collect()
    }

    const RECORDS: [(i64, u64, &[&str]); 6] = [
        (10, 0, &["a", "b"]),
        (11, 0, &[]),
        (12, 0, &["c"]),
        (13, 0, &["d", "e"]),
        (14, 0, &["f"]),
        (15, 0, &["g"]),
    ];

    #[test]
    fn the_same_records_make_the_same_objects_however_they_are_batched_and_ordered() {
        let t = threshold(3, 60);
        // One batch.
        let (mut one, buffer) = (Keyed::default(), Arc::new(Buffer::default()));
        let ready = batch(&mut one, &buffer, (1, 10, 16, true), &RECORDS, &t);
        let whole = deliver(&mut one, ready);
        // Two batches, the later one first.
        let (mut two, buffer2) = (Keyed::default(), Arc::new(Buffer::default()));
        let early = batch(&mut two, &buffer2, (1, 13, 16, false), &RECORDS[3..], &t);
        assert!(early.is_empty(), "it waits for the read ahead of it");
        let mut split = deliver(&mut two, early);
        let ready = batch(&mut two, &buffer2, (1, 10, 13, true), &RECORDS[..3], &t);
        split.extend(deliver(&mut two, ready));
        assert_eq!(whole, split);
        assert_eq!(
            whole,
            vec![
                (10, 12, vec!["a".into(), "b".into(), "c".into()]),
                (13, 14, vec!["d".into(), "e".into(), "f".into()]),
            ],
            "closed after the record that reached 3 events, never inside one"
        );
        // `g` is open: 15 is not acknowledged, everything before it is.
        assert_eq!(*buffer.acked.lock().unwrap(), vec![10, 11, 12, 13, 14]);
        assert_eq!(*buffer2.acked.lock().unwrap(), vec![10, 11, 12, 13, 14]);
    }

    #[test]
    fn records_are_acknowledged_only_once_their_object_is_delivered() {
        let t = threshold(3, 60);
        let (mut keyed, buffer) = (Keyed::default(), Arc::new(Buffer::default()));
        let ready = batch(&mut keyed, &buffer, (1, 10, 16, true), &RECORDS, &t);
        assert_eq!(ready.len(), 2);
        assert!(
            buffer.acked.lock().unwrap().is_empty(),
            "nothing delivered yet"
        );
        let mut ready = ready.into_iter();
        keyed.delivered(ready.next().unwrap());
        assert_eq!(*buffer.acked.lock().unwrap(), vec![10, 11, 12]);
        assert!(!keyed.is_empty());
    }

    #[test]
    fn a_record_received_after_the_collect_timeout_starts_a_new_object() {
        let t = threshold(100, 2);
        let (mut keyed, buffer) = (Keyed::default(), Arc::new(Buffer::default()));
        let records: [(i64, u64, &[&str]); 3] =
            [(0, 1_000, &["a"]), (1, 2_999, &["b"]), (2, 3_000, &["c"])];
        let ready = batch(&mut keyed, &buffer, (1, 0, 3, true), &records, &t);
        assert_eq!(
            deliver(&mut keyed, ready),
            vec![(0, 1, vec!["a".into(), "b".into()])],
            "`c` came 2 s after `a`"
        );
    }

    #[test]
    fn a_new_assignment_starts_over_and_drops_what_was_open() {
        let t = threshold(3, 60);
        let (mut keyed, buffer) = (Keyed::default(), Arc::new(Buffer::default()));
        let ready = batch(&mut keyed, &buffer, (1, 10, 11, true), &RECORDS[..1], &t);
        assert!(ready.is_empty(), "a, b are open");
        // Revoked and assigned again, from 10.
        let ready = batch(&mut keyed, &buffer, (2, 10, 16, true), &RECORDS, &t);
        let objects = deliver(&mut keyed, ready);
        assert_eq!(
            objects[0],
            (10, 12, vec!["a".into(), "b".into(), "c".into()])
        );
        // A late batch of the first assignment is let go, not placed.
        let ready = batch(&mut keyed, &buffer, (1, 11, 13, false), &RECORDS[1..3], &t);
        assert!(ready.is_empty());
    }

    #[test]
    fn a_quiet_partition_closes_by_the_clock_and_waits_for_the_commit() {
        let t = threshold(100, 2);
        let (mut keyed, buffer) = (Keyed::default(), Arc::new(Buffer::default()));
        let ready = batch(&mut keyed, &buffer, (1, 10, 11, true), &RECORDS[..1], &t);
        assert!(ready.is_empty());
        // Not before the clock is past `a`'s receive time (0) + 2 s + QUIET.
        let mut ready = Vec::new();
        keyed.due(
            Instant::now() + Duration::from_secs(3),
            2_500,
            &t,
            &mut ready,
        );
        assert!(
            ready.is_empty(),
            "a later record received by 3 s would still join"
        );
        let later = Instant::now() + Duration::from_secs(3);
        let mut ready = Vec::new();
        keyed.due(later, 10_000, &t, &mut ready);
        assert_eq!(
            deliver(&mut keyed, ready),
            vec![(10, 10, vec!["a".into(), "b".into()])]
        );
        assert_eq!(*buffer.acked.lock().unwrap(), vec![10]);
        // The next record waits: a restart before the commit would begin at 10 again.
        let ready = batch(&mut keyed, &buffer, (1, 11, 13, false), &RECORDS[1..3], &t);
        assert!(ready.is_empty());
        let mut ready = Vec::new();
        keyed.due(later, 10_000, &t, &mut ready);
        assert!(ready.is_empty());
        assert_eq!(
            *buffer.acked.lock().unwrap(),
            vec![10],
            "11 is not placed yet"
        );
        *buffer.committed.lock().unwrap() = Some(11);
        keyed.due(later, 10_000, &t, &mut ready);
        assert!(ready.is_empty(), "c is open now");
        assert_eq!(*buffer.acked.lock().unwrap(), vec![10, 11]);
        keyed.close_all(&mut ready);
        assert_eq!(deliver(&mut keyed, ready), vec![(12, 12, vec!["c".into()])]);
        assert!(keyed.is_empty());
    }

    #[test]
    fn what_is_held_of_a_revoked_partition_is_let_go() {
        let t = threshold(100, 60);
        let (mut keyed, buffer) = (Keyed::default(), Arc::new(Buffer::default()));
        let ready = batch(&mut keyed, &buffer, (1, 10, 11, true), &RECORDS[..1], &t);
        let early = batch(&mut keyed, &buffer, (1, 12, 13, false), &RECORDS[2..3], &t);
        assert!(ready.is_empty() && early.is_empty());
        let mut ready = Vec::new();
        keyed.due(Instant::now(), 0, &t, &mut ready);
        assert!(!keyed.is_empty(), "still assigned: held");
        *buffer.committed.lock().unwrap() = None;
        keyed.due(Instant::now(), 0, &t, &mut ready);
        assert!(ready.is_empty(), "nothing is sent");
        assert!(keyed.is_empty(), "the batches are let go");
    }
}
