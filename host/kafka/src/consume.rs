//! One consumer of the group, on its own thread (librdkafka's poll is blocking).
//!
//! The loop: apply nothing itself (acknowledgements update the shared tracker directly from
//! the worker that acknowledges), commit when the schedule says so (below), and
//! - when the batch channel has room: resume, poll up to `batch_size` records (waiting at most
//!   `delay` once the first arrived, and not at all once a poll finds nothing more: caught
//!   up, the consumer sends what it has) and send them as one batch;
//! - when it is full (the sinks are behind) for more than a second: pause the assignment and
//!   keep polling, which reads nothing but keeps the consumer in the group (Data Prepper stops
//!   polling here and gets kicked out after `max.poll.interval.ms`). Shorter waits do not
//!   pause: a pause drops librdkafka's prefetched records, which are fetched again.
//!
//! # When offsets are committed
//! What is acknowledged is committed, by the schedule below. A scheduled commit is handed to
//! the consumer's committer thread (`committer`), which waits for the broker while this thread
//! goes on polling (one commit takes hundreds of milliseconds on a slow broker); its result
//! comes back at a later check. A commit on revoke or close is made here and waited for, after
//! the committer's commit in flight. What is committed:
//! - at once while a partition is new to this consumer: during the first `commit_interval`
//!   after its first record was read following a start or an assignment, every check that
//!   finds its commit point moved commits (while one is on its way, the next waits, merged
//!   with any later one). So the first acknowledged batch after a start or a rebalance is on
//!   its way to the broker within one poll (at most 100 ms), and a process that crashes
//!   every few seconds (an OOM loop) still moves forward instead of reading the same backlog at
//!   every start;
//! - after that, at most every `commit_interval` (at once if something is acknowledged after a
//!   quiet interval: the clock runs from the last commit);
//! - after a failed commit, not again for one `commit_interval`;
//! - on revoke (the revoked partitions) and on close (everything), whatever the schedule.
//!
//! The check runs at every turn of the loop and between the polls that gather a batch, so
//! gathering (which may wait up to `delay`, 3 s by default, for a batch to fill) does not hold
//! commits back. What a `kill -9` makes the next start read again is therefore what was
//! handed out and not yet acknowledged, plus what was acknowledged since the last commit: in
//! a partition's eager window only what was acknowledged since the last check and the commit
//! on its way, after it at most one `commit_interval`'s worth.
//!
//! On revoke (in the rebalance callback, inside a poll on this thread): wait for the
//! committer's commit in flight, drop the revoked partitions from what waits for it, commit
//! them here, and forget them; the committer also leaves out any commit point of an
//! assignment that is no longer current (`Tracker::current`), so it never commits for a
//! partition this consumer no longer owns.
//!
//! On close: stop the committer (after its commit in flight), stop reading, wait up to
//! `drain_timeout` for the batches already handed out to be acknowledged, commit, and leave
//! the group.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::ClientContext;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer as _, ConsumerContext, Rebalance};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::Message;
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};
use sluice_buffer::{Acknowledgement, Batch, Record, Unreadable};
use tokio::sync::mpsc;

use crate::commit::{CommitPoint, Range, Schedule, Tracker};
use crate::committer::{self, Handoff};
use crate::{KafkaBufferConfig, KafkaBufferError, KafkaStats, envelope};

/// How long one poll blocks when there is nothing to read, and so how quickly the loop
/// notices a close or room in the channel.
const POLL: Duration = Duration::from_millis(100);

/// How long the workers may be behind before the consumer pauses its partitions.
const PAUSE_AFTER: Duration = Duration::from_secs(1);

/// What the consumer thread and the acknowledging workers share.
struct Shared {
    /// The topic, shared by the positions of the records read.
    topic: Arc<str>,
    tracker: Mutex<Tracker>,
    /// Batches handed out and not yet acknowledged or dropped.
    in_flight: AtomicUsize,
    stats: Arc<KafkaStats>,
    /// The scheduled commits' way to the committer thread, and their results' way back.
    handoff: Arc<Handoff>,
}

impl Shared {
    /// Commits what the tracker allows (only `only`, when given), waiting for the broker: on
    /// revoke and close. Returns `None` when there was nothing to commit, else whether the
    /// broker took the commit.
    fn commit(&self, consumer: &BaseConsumer<Context>, only: Option<&[i32]>) -> Option<bool> {
        let points = self.tracker.lock().expect("not poisoned").committable(only);
        if points.is_empty() {
            return None;
        }
        Some(self.commit_points(consumer, &points))
    }

    /// The committer's commit of `points` asked for by the schedule: those still of the
    /// current assignment of their partition. `None` when none is left.
    fn commit_scheduled(
        &self,
        consumer: &BaseConsumer<Context>,
        points: &[CommitPoint],
    ) -> Option<bool> {
        let points = self.tracker.lock().expect("not poisoned").current(points);
        if points.is_empty() {
            return None;
        }
        Some(self.commit_points(consumer, &points))
    }

    /// Commits `points`, waiting for the broker, and records in the tracker what it took.
    /// Returns whether it took them.
    fn commit_points(&self, consumer: &BaseConsumer<Context>, points: &[CommitPoint]) -> bool {
        let mut list = TopicPartitionList::new();
        for c in points {
            if let Err(e) =
                list.add_partition_offset(&self.topic, c.partition, Offset::Offset(c.offset))
            {
                tracing::warn!(error = %e, "building the commit list failed");
                return false;
            }
        }
        let started = Instant::now();
        let offsets: Vec<(i32, i64)> = points.iter().map(|c| (c.partition, c.offset)).collect();
        match consumer.commit(&list, CommitMode::Sync) {
            Ok(()) => {
                let moved = self.tracker.lock().expect("not poisoned").committed(points);
                self.stats.records_committed.add(moved);
                tracing::debug!(topic = %self.topic, ?offsets, records = moved, took = ?started.elapsed(), "committed");
                true
            }
            Err(e) => {
                tracing::warn!(topic = %self.topic, error = %e, ?offsets, "committing offsets failed; retrying after `commit_interval`");
                false
            }
        }
    }
}

/// The librdkafka context: rebalance and error callbacks, run inside `poll` on the consumer
/// thread (and inside the consumer's drop, on the thread that drops it last: the consumer
/// thread, after its committer ended).
pub(crate) struct Context {
    shared: Arc<Shared>,
}

impl ClientContext for Context {
    /// librdkafka's statistics (every `statistics.interval.ms`): the consumer lag per partition.
    fn stats(&self, statistics: rdkafka::Statistics) {
        let Some(topic) = statistics.topics.get(&*self.shared.topic) else {
            return;
        };
        for (partition, p) in &topic.partitions {
            // -1 is librdkafka's internal unassigned partition; a negative lag is unknown.
            if *partition >= 0 && p.consumer_lag >= 0 {
                self.shared.stats.consumer_lag(*partition, p.consumer_lag);
            }
        }
    }

    fn error(&self, error: KafkaError, reason: &str) {
        let code = error.rdkafka_error_code();
        if matches!(
            code,
            Some(
                RDKafkaErrorCode::Authentication
                    | RDKafkaErrorCode::SaslAuthenticationFailed
                    | RDKafkaErrorCode::TopicAuthorizationFailed
                    | RDKafkaErrorCode::GroupAuthorizationFailed
            )
        ) {
            self.shared.stats.poll_auth_errors.add(1);
        }
        self.shared.stats.poll_errors.add(1);
        tracing::warn!(topic = %self.shared.topic, error = %error, reason, "kafka client error");
    }
}

impl ConsumerContext for Context {
    fn pre_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        match rebalance {
            Rebalance::Revoke(list) => {
                let partitions: Vec<i32> = list
                    .elements_for_topic(&self.shared.topic)
                    .iter()
                    .map(|e| e.partition())
                    .collect();
                // After the committer's commit in flight, so the revoke's commit is the last
                // of these partitions; the committer takes nothing until they are forgotten,
                // and what waited for it keeps only the partitions this consumer still owns.
                let mut slot = self.shared.handoff.idle();
                slot.forget(&partitions);
                self.shared.commit(consumer, Some(&partitions));
                self.shared
                    .tracker
                    .lock()
                    .expect("not poisoned")
                    .revoke(&partitions);
                drop(slot);
                self.shared
                    .stats
                    .partitions_revoked
                    .add(partitions.len() as u64);
                tracing::info!(topic = %self.shared.topic, ?partitions, "partitions revoked");
            }
            Rebalance::Assign(list) => {
                let partitions: Vec<i32> = list.elements().iter().map(|e| e.partition()).collect();
                tracing::info!(topic = %self.shared.topic, ?partitions, "partitions assigned");
            }
            Rebalance::Error(e) => {
                tracing::warn!(topic = %self.shared.topic, error = %e, "rebalance failed")
            }
        }
    }
}

/// A consumer, ready to run on its thread.
pub(crate) struct Consumer {
    /// Shared with the committer thread, which commits with it.
    consumer: Arc<BaseConsumer<Context>>,
    shared: Arc<Shared>,
    config: KafkaBufferConfig,
    batches: mpsc::Sender<Batch>,
    closed: Arc<AtomicBool>,
    opener: Option<sluice_crypt::Opener>,
    /// Keep each record's Kafka headers (`Record::headers`): the `kafka` source hands them on
    /// as the `kafka_headers` attribute; the buffer's own records carry theirs as the envelope.
    keep_headers: bool,
}

impl Consumer {
    #[expect(
        clippy::result_large_err,
        reason = "built once per consumer at start; the error carries librdkafka's for the message"
    )]
    pub(crate) fn new(
        config: &KafkaBufferConfig,
        index: usize,
        batches: mpsc::Sender<Batch>,
        stats: Arc<KafkaStats>,
        closed: Arc<AtomicBool>,
        opener: Option<sluice_crypt::Opener>,
    ) -> Result<Self, KafkaBufferError> {
        let shared = Arc::new(Shared {
            topic: Arc::from(config.topic.as_str()),
            tracker: Mutex::new(Tracker::default()),
            in_flight: AtomicUsize::new(0),
            stats,
            handoff: Arc::new(Handoff::default()),
        });
        let client = config.consumer_client_config(index);
        let error = |error| KafkaBufferError::Client {
            role: "consumer",
            servers: config.servers(),
            error,
        };
        let consumer: BaseConsumer<Context> = client
            .create_with_context(Context {
                shared: shared.clone(),
            })
            .map_err(error)?;
        consumer.subscribe(&[&config.topic]).map_err(error)?;
        Ok(Self {
            consumer: Arc::new(consumer),
            shared,
            config: config.clone(),
            batches,
            closed,
            opener,
            keep_headers: false,
        })
    }

    /// Keeps each record's Kafka headers (see `keep_headers`).
    pub(crate) fn keeping_headers(mut self) -> Self {
        self.keep_headers = true;
        self
    }

    /// Reads until closed (or the workers are gone), then drains. `name`: the thread's, which
    /// its committer's is named after.
    pub(crate) fn run(self, name: &str) {
        let committer = {
            let (consumer, shared) = (self.consumer.clone(), self.shared.clone());
            committer::spawn(
                format!("{name}-commit"),
                self.shared.handoff.clone(),
                move |points| shared.commit_scheduled(&consumer, &points),
            )
        };
        let mut schedule = Schedule::new(self.config.commit_interval);
        let mut paused = false;
        let mut full_since: Option<Instant> = None;
        let mut poll_warned: Option<Instant> = None;
        while !self.closed.load(Ordering::SeqCst) {
            self.commit_if_due(&mut schedule);
            let permit = match self.batches.try_reserve() {
                Ok(permit) => permit,
                Err(mpsc::error::TrySendError::Full(())) => {
                    // The workers are behind. Briefly, just wait: pausing drops what
                    // librdkafka prefetched and it is fetched again on resume, which costs the
                    // broker more than a short wait. For longer, pause and keep polling, so
                    // nothing more is fetched and the consumer stays in the group.
                    let since = *full_since.get_or_insert_with(Instant::now);
                    if since.elapsed() < PAUSE_AFTER {
                        std::thread::sleep(Duration::from_millis(1));
                        continue;
                    }
                    if !paused {
                        paused = self.set_paused(true);
                    }
                    self.idle_poll();
                    continue;
                }
                Err(mpsc::error::TrySendError::Closed(())) => break,
            };
            full_since = None;
            if paused {
                paused = !self.set_paused(false);
            }
            if let Some(batch) = self.gather(&mut schedule, &mut poll_warned) {
                permit.send(batch);
            }
        }
        self.drain(committer);
    }

    /// Learns how the committer's commits ended, and hands it what was acknowledged if
    /// `schedule` says it is time (see the module doc). Never waits for the broker.
    fn commit_if_due(&self, schedule: &mut Schedule) {
        let now = Instant::now();
        let handoff = &self.shared.handoff;
        let mut slot = handoff.lock();
        let mut tracker = self.shared.tracker.lock().expect("not poisoned");
        if let Some(ok) = slot.outcome() {
            schedule.ended(ok);
            if !ok {
                // The committer dropped what waited: it is all asked for again, on schedule.
                tracker.unask();
            }
        }
        if !schedule.due(now, &tracker) {
            return;
        }
        let points = tracker.ask();
        drop(tracker);
        schedule.requested(now);
        handoff.request(&mut slot, points);
    }

    /// Pauses or resumes the whole assignment; returns whether it worked.
    fn set_paused(&self, pause: bool) -> bool {
        let assignment = match self.consumer.assignment() {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!(error = %e, "reading the assignment failed");
                return false;
            }
        };
        let result = if pause {
            self.consumer.pause(&assignment)
        } else {
            self.consumer.resume(&assignment)
        };
        match result {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(error = %e, pause, "pausing or resuming partitions failed");
                false
            }
        }
    }

    /// A poll while paused or draining: it serves rebalances and keeps the membership alive.
    /// A record it returns anyway (fetched before the pause) is not lost: it was not handed
    /// out, so its offset is never committed, and it is read again after a seek back.
    fn idle_poll(&self) {
        if let Some(Ok(m)) = self.consumer.poll(POLL) {
            let _ = self.consumer.seek(
                m.topic(),
                m.partition(),
                Offset::Offset(m.offset()),
                Duration::from_secs(1),
            );
        }
    }

    /// Up to `batch_size` records: `None` if the first does not come within one poll, else
    /// waits at most `delay` for the rest, and no longer once a poll finds nothing (the
    /// consumer caught up with its partitions: the last batch of a backlog, or a trickle). Commits what is due between polls, so a batch that
    /// is slow to fill does not hold back the commit of those acknowledged meanwhile.
    fn gather(&self, schedule: &mut Schedule, poll_warned: &mut Option<Instant>) -> Option<Batch> {
        let mut records = Vec::new();
        let mut unreadable = Vec::new();
        let mut ranges: Vec<Range> = Vec::new();
        // Each record's own range, in read order, with its index in `records`.
        let mut pieces: Vec<(Range, Option<usize>)> = Vec::new();
        let mut filled_by: Option<Instant> = None;
        while records.len() + unreadable.len() < self.config.batch_size {
            self.commit_if_due(schedule);
            let wait = match filled_by {
                Some(at) => match at.checked_duration_since(Instant::now()) {
                    Some(left) => left.min(POLL),
                    None => break,
                },
                None if self.closed.load(Ordering::SeqCst) => break,
                None => POLL,
            };
            let Some(result) = self.consumer.poll(wait) else {
                if records.is_empty() && unreadable.is_empty() {
                    // Back to the loop, which commits on time and notices a close.
                    return None;
                }
                // Caught up: nothing more came within a poll, so what is here goes now
                // rather than waiting out `delay` for records that are not there yet.
                break;
            };
            let m = match result {
                Ok(m) => m,
                Err(e) => {
                    self.shared.stats.poll_errors.add(1);
                    if poll_warned.is_none_or(|at| at.elapsed() > Duration::from_secs(10)) {
                        tracing::warn!(topic = %self.config.topic, error = %e, "kafka poll failed; retrying");
                        *poll_warned = Some(Instant::now());
                    }
                    if records.is_empty() && unreadable.is_empty() {
                        std::thread::sleep(POLL / 2);
                        return None;
                    }
                    continue;
                }
            };
            let (partition, offset) = (m.partition(), m.offset());
            let (epoch, start) = self.shared.tracker.lock().expect("not poisoned").reading(
                partition,
                offset,
                Instant::now(),
            );
            let piece = Range {
                partition,
                epoch,
                start,
                end: offset + 1,
            };
            match ranges
                .iter_mut()
                .find(|r| r.partition == partition && r.epoch == epoch)
            {
                Some(r) => r.end = offset + 1,
                None => ranges.push(piece),
            }
            let meta = envelope::Meta::read(&m);
            let mut record = envelope::record(&m, &meta, &self.shared.topic);
            if self.keep_headers {
                record.headers = envelope::kafka_headers(&m);
            }
            self.shared
                .stats
                .bytes_consumed
                .add(record.payload.len() as u64);
            match self.open(&meta, record) {
                Ok(record) => {
                    pieces.push((piece, Some(records.len())));
                    records.push(record);
                }
                Err(unread) => {
                    pieces.push((piece, None));
                    unreadable.push(unread);
                }
            }
            filled_by.get_or_insert_with(|| Instant::now() + self.config.delay);
        }
        if records.is_empty() && unreadable.is_empty() {
            return None;
        }
        self.shared
            .stats
            .records_consumed
            .add((records.len() + unreadable.len()) as u64);
        self.shared.in_flight.fetch_add(1, Ordering::SeqCst);
        let n = (records.len() + unreadable.len()) as f64;
        self.shared.stats.in_flight.increment(n);
        self.shared
            .stats
            .records_unreadable
            .add(unreadable.len() as u64);
        let reads = {
            let tracker = self.shared.tracker.lock().expect("not poisoned");
            ranges
                .iter()
                .map(|r| sluice_buffer::Read {
                    topic: self.shared.topic.clone(),
                    partition: r.partition,
                    epoch: r.epoch,
                    start: r.start,
                    end: r.end,
                    begins: tracker.begins(r.partition, r.epoch, r.start),
                })
                .collect()
        };
        let parts = Arc::new(Parts {
            shared: self.shared.clone(),
            state: Mutex::new(PartsState {
                acked: vec![false; pieces.len()],
                by_record: pieces
                    .iter()
                    .enumerate()
                    .filter_map(|(i, (_, r))| r.map(|_| i))
                    .collect(),
                pieces: pieces.into_iter().map(|(p, _)| p).collect(),
                any: false,
                finished: false,
            }),
        });
        let guard = AckGuard {
            parts: parts.clone(),
            ranges,
            records: n,
            acked: false,
        };
        let ack = Acknowledgement::new(move || {
            let mut guard = guard;
            guard.acked = true;
        });
        Some(Batch {
            records,
            unreadable,
            ack,
            room: None,
            parts: Some(parts),
            reads,
        })
    }

    /// A record as the workers get it ([`envelope::open`]), counting what fails to decrypt.
    #[expect(
        clippy::result_large_err,
        reason = "both sides carry the record by value: the error hands it to the dead-letter file"
    )]
    fn open(&self, meta: &envelope::Meta<'_>, record: Record) -> Result<Record, Unreadable> {
        envelope::open(self.opener.as_ref(), meta, record).map_err(|e| self.counted(e))
    }

    fn counted(&self, (unreadable, decrypt): (Unreadable, bool)) -> Unreadable {
        if decrypt {
            self.shared.stats.decrypt_failures.add(1);
        }
        unreadable
    }

    /// Stops the committer (after its commit in flight: the commits below come after it),
    /// waits up to `drain_timeout` for the batches handed out, commits, and leaves the group.
    fn drain(self, committer: committer::Committer) {
        committer.stop();
        let deadline = Instant::now() + self.config.drain_timeout;
        self.set_paused(true);
        while self.shared.in_flight.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
            self.idle_poll();
            // What is acknowledged meanwhile is committed as it comes: a sink that waits for a
            // commit before its next request (`docs/design/exactly-once.md`) can finish.
            self.shared.commit(&self.consumer, None);
        }
        let left = self.shared.in_flight.load(Ordering::SeqCst);
        if left > 0 {
            tracing::warn!(topic = %self.config.topic, batches = left, drain_timeout = ?self.config.drain_timeout,
                "batches not acknowledged in time; they are read again after a restart");
        }
        self.shared.commit(&self.consumer, None);
        self.shared.tracker.lock().expect("not poisoned").clear();
        self.consumer.unsubscribe();
        // Dropping the consumer closes it: it leaves the group. The committer's clone went
        // with its thread, so this is the last one, and the close's rebalance callbacks run
        // here.
    }
}

/// Runs `consumer` on a thread of its own named `name` (librdkafka's poll blocks), and its
/// committer on another (`{name}-commit`).
pub(crate) fn spawn(consumer: Consumer, name: String) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name(name.clone())
        .spawn(move || consumer.run(&name))
        .expect("spawning a consumer thread")
}

/// Waits, off the reactor, for the consumer threads in `threads` to end (their last commit,
/// leaving the group).
pub(crate) async fn join(threads: &Mutex<Vec<std::thread::JoinHandle<()>>>) {
    let threads = std::mem::take(&mut *threads.lock().expect("not poisoned"));
    let _ = tokio::task::spawn_blocking(move || {
        for t in threads {
            let _ = t.join();
        }
    })
    .await;
}

/// Acknowledges a batch's ranges when the pipeline acknowledges it; counts a negative
/// acknowledgement when the batch is dropped without (its offsets are then never committed
/// by this assignment, and are read again after a restart or rebalance).
struct AckGuard {
    parts: Arc<Parts>,
    ranges: Vec<Range>,
    records: f64,
    acked: bool,
}

impl Drop for AckGuard {
    fn drop(&mut self) {
        let shared = &self.parts.shared;
        let stats = &shared.stats;
        let mut parts = self.parts.state.lock().expect("not poisoned");
        parts.finished = true;
        if self.acked {
            let mut tracker = shared.tracker.lock().expect("not poisoned");
            if parts.any {
                // Some records were acknowledged alone: the rest, piece by piece.
                for (piece, acked) in parts.pieces.iter().zip(&parts.acked) {
                    if !acked {
                        tracker.ack(*piece);
                    }
                }
            } else {
                for range in &self.ranges {
                    tracker.ack(*range);
                }
            }
            stats.positive_acknowledgements.add(1);
        } else {
            stats.negative_acknowledgements.add(1);
        }
        stats.in_flight.decrement(self.records);
        shared.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A batch's records acknowledged one by one ([`sluice_buffer::RecordAcks`]): each acknowledges
/// its own range, from the offset after the record read before it in its partition.
struct Parts {
    shared: Arc<Shared>,
    state: Mutex<PartsState>,
}

struct PartsState {
    /// Every record's range (the unreadable ones' too), in read order: together they tile the
    /// batch's ranges.
    pieces: Vec<Range>,
    acked: Vec<bool>,
    /// For each of `Batch::records`, its piece.
    by_record: Vec<usize>,
    /// Whether a piece was acknowledged alone.
    any: bool,
    /// The batch was acknowledged (or dropped): nothing more to do here.
    finished: bool,
}

impl sluice_buffer::RecordAcks for Parts {
    fn acknowledge(&self, records: &[usize]) {
        let mut state = self.state.lock().expect("not poisoned");
        if state.finished {
            return;
        }
        let mut tracker = self.shared.tracker.lock().expect("not poisoned");
        for &r in records {
            let Some(&i) = state.by_record.get(r) else {
                continue;
            };
            if !std::mem::replace(&mut state.acked[i], true) {
                state.any = true;
                tracker.ack(state.pieces[i]);
            }
        }
    }

    fn committed(&self, partition: i32) -> Option<i64> {
        let state = self.state.lock().expect("not poisoned");
        let epoch = state
            .pieces
            .iter()
            .find(|p| p.partition == partition)?
            .epoch;
        drop(state);
        self.shared
            .tracker
            .lock()
            .expect("not poisoned")
            .committed_at(partition, epoch)
    }
}
