//! Which offsets may be committed, and when.
//!
//! Which ([`Tracker`]): per partition, the acknowledged ranges are merged and the commit point
//! only moves over a gap-free prefix, so an offset is committed only once every record before
//! it is done. Batches may be acknowledged in any order.
//!
//! When ([`Schedule`]): at once while a partition is new to this consumer (its first
//! `commit_interval` of reading after a start or an assignment), then at most every
//! `commit_interval`. A process in a crash loop (an OOM loop, a bad deploy) that lives a few
//! seconds each time therefore still moves its offsets forward, instead of reading the same
//! backlog again at every start (the death spiral Redpanda's transforms had).
//!
//! What the schedule commits goes to the consumer's committer thread (`committer`), so the
//! tracker also remembers what was asked of it (`asked`, at or above `committed`): the schedule
//! looks at what moved beyond that, and while one commit is on its way only newer commit
//! points make another request. [`coalesce`] merges requests so that a partition's commit
//! point never goes back.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

/// The ranges of one partition since it was assigned to this consumer.
#[derive(Debug)]
pub(crate) struct PartitionTracker {
    /// Identifies this assignment: acknowledgements of batches read under an earlier one are
    /// ignored (the partition was revoked and may have moved to another consumer).
    pub(crate) epoch: u64,
    /// The lowest offset not yet acknowledged: what a commit would write.
    pub(crate) next: i64,
    /// What was last committed (or where reading started).
    pub(crate) committed: i64,
    /// The highest commit point handed to the committer (at or above `committed`): what the
    /// schedule has already asked for, whatever became of it.
    asked: i64,
    /// Where reading started.
    first: i64,
    /// The offset after the last record read. A batch's range starts here, so offsets the
    /// consumer never sees (transaction markers, compacted records) do not leave gaps.
    read_to: i64,
    /// Acknowledged ranges `[start, end)` above `next`, by start.
    done: BTreeMap<i64, i64>,
    /// When the first record of this assignment was read: the partition is committed eagerly
    /// for one `commit_interval` from here (see [`Schedule`]).
    since: Instant,
}

impl PartitionTracker {
    fn new(epoch: u64, start: i64, since: Instant) -> Self {
        Self {
            epoch,
            next: start,
            committed: start,
            asked: start,
            first: start,
            read_to: start,
            done: BTreeMap::new(),
            since,
        }
    }

    /// Marks `[start, end)` acknowledged and moves `next` over every contiguous range.
    fn ack(&mut self, start: i64, end: i64) {
        if end <= self.next {
            return;
        }
        self.done.insert(start.max(self.next), end);
        while let Some(end) = self.done.remove(&self.next) {
            self.next = end;
        }
    }
}

/// Every partition of one consumer.
#[derive(Debug, Default)]
pub(crate) struct Tracker {
    partitions: HashMap<i32, PartitionTracker>,
}

/// A new assignment's epoch: process-wide, so that the epochs of one partition increase even
/// when it moves between the consumers of one process.
fn next_epoch() -> u64 {
    static EPOCHS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    EPOCHS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1
}

/// One partition's share of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Range {
    pub(crate) partition: i32,
    pub(crate) epoch: u64,
    pub(crate) start: i64,
    pub(crate) end: i64,
}

/// Where a partition is to be committed, under the assignment whose reads it covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CommitPoint {
    pub(crate) partition: i32,
    pub(crate) epoch: u64,
    /// The offset of the next record to read, as Kafka commits it.
    pub(crate) offset: i64,
}

/// Merges `newer` commit points into `waiting` (a request the committer has not taken yet):
/// per partition the newest wins, a later assignment over an earlier one, a higher offset
/// over a lower one of the same assignment, so a request never carries a commit point older
/// than the one it replaces.
pub(crate) fn coalesce(waiting: &mut Vec<CommitPoint>, newer: Vec<CommitPoint>) {
    for point in newer {
        match waiting.iter_mut().find(|w| w.partition == point.partition) {
            Some(w) if (point.epoch, point.offset) > (w.epoch, w.offset) => *w = point,
            Some(_) => {}
            None => waiting.push(point),
        }
    }
    waiting.sort_unstable_by_key(|w| w.partition);
}

/// What a commit now would do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pending {
    /// Nothing: no commit point moved since the last commit.
    Nothing,
    /// A commit point moved, on partitions read for longer than the eager window only.
    Some,
    /// A commit point moved on a partition still in its eager window (new to this consumer).
    Eager,
}

impl Tracker {
    /// Notes a record read at `offset` at `now`: returns the assignment's epoch and where a
    /// range that begins with this record starts. The tracker of a partition starts at the
    /// first record read after an assignment.
    pub(crate) fn reading(&mut self, partition: i32, offset: i64, now: Instant) -> (u64, i64) {
        let t = self
            .partitions
            .entry(partition)
            .or_insert_with(|| PartitionTracker::new(next_epoch(), offset, now));
        let start = t.read_to.min(offset);
        t.read_to = t.read_to.max(offset + 1);
        (t.epoch, start)
    }

    /// What was last committed of `partition` in the assignment `epoch`.
    pub(crate) fn committed_at(&self, partition: i32, epoch: u64) -> Option<i64> {
        self.partitions
            .get(&partition)
            .filter(|t| t.epoch == epoch)
            .map(|t| t.committed)
    }

    /// Whether `start` is where `partition`'s current assignment began reading.
    pub(crate) fn begins(&self, partition: i32, epoch: u64, start: i64) -> bool {
        self.partitions
            .get(&partition)
            .is_some_and(|t| t.epoch == epoch && t.first == start)
    }

    /// Applies an acknowledgement; stale ones (earlier assignment) are ignored. Returns
    /// whether it applied.
    pub(crate) fn ack(&mut self, range: Range) -> bool {
        match self.partitions.get_mut(&range.partition) {
            Some(t) if t.epoch == range.epoch => {
                t.ack(range.start, range.end);
                true
            }
            _ => false,
        }
    }

    /// Partitions whose commit point moved since the last commit, with the offset to commit:
    /// what a revoke or a close commits. `only`: restrict to these partitions.
    pub(crate) fn committable(&self, only: Option<&[i32]>) -> Vec<CommitPoint> {
        self.points(|p, t| t.next > t.committed && only.is_none_or(|o| o.contains(&p)))
    }

    /// Partitions whose commit point moved beyond what was asked of the committer, with the
    /// offset to commit; from now on that is asked.
    pub(crate) fn ask(&mut self) -> Vec<CommitPoint> {
        let points = self.points(|_, t| t.next > t.asked);
        for point in &points {
            if let Some(t) = self.partitions.get_mut(&point.partition) {
                t.asked = point.offset;
            }
        }
        points
    }

    /// After a failed scheduled commit (the committer dropped what it had waiting): nothing
    /// that is not committed counts as asked, so the schedule asks for it again.
    pub(crate) fn unask(&mut self) {
        for t in self.partitions.values_mut() {
            t.asked = t.committed;
        }
    }

    /// Those of `points` still worth committing: of the current assignment of their
    /// partition (not revoked since they were asked for) and beyond what it committed.
    pub(crate) fn current(&self, points: &[CommitPoint]) -> Vec<CommitPoint> {
        points
            .iter()
            .filter(|c| {
                self.partitions
                    .get(&c.partition)
                    .is_some_and(|t| t.epoch == c.epoch && c.offset > t.committed)
            })
            .copied()
            .collect()
    }

    /// Each partition's commit point where `keep` says so, by partition.
    fn points(&self, keep: impl Fn(i32, &PartitionTracker) -> bool) -> Vec<CommitPoint> {
        let mut out: Vec<CommitPoint> = self
            .partitions
            .iter()
            .filter(|(p, t)| keep(**p, t))
            .map(|(p, t)| CommitPoint {
                partition: *p,
                epoch: t.epoch,
                offset: t.next,
            })
            .collect();
        out.sort_unstable_by_key(|c| c.partition);
        out
    }

    /// Whether a scheduled commit now would move anything (beyond what was asked of the
    /// committer), and whether one of the partitions it would move is within `window` of its
    /// first read (new to this consumer).
    pub(crate) fn pending(&self, now: Instant, window: Duration) -> Pending {
        let mut pending = Pending::Nothing;
        for t in self.partitions.values().filter(|t| t.next > t.asked) {
            if now.saturating_duration_since(t.since) < window {
                return Pending::Eager;
            }
            pending = Pending::Some;
        }
        pending
    }

    /// Records that `points` were committed (those of an earlier assignment change nothing);
    /// returns how many records the commit covered.
    pub(crate) fn committed(&mut self, points: &[CommitPoint]) -> u64 {
        let mut moved = 0;
        for c in points {
            if let Some(t) = self
                .partitions
                .get_mut(&c.partition)
                .filter(|t| t.epoch == c.epoch)
            {
                moved += u64::try_from(c.offset - t.committed).unwrap_or(0);
                t.committed = t.committed.max(c.offset);
                t.asked = t.asked.max(t.committed);
            }
        }
        moved
    }

    /// Forgets partitions that were revoked.
    pub(crate) fn revoke(&mut self, partitions: &[i32]) {
        for p in partitions {
            self.partitions.remove(p);
        }
    }

    /// Forgets every partition.
    pub(crate) fn clear(&mut self) {
        self.partitions.clear();
    }
}

/// When a consumer commits what its [`Tracker`] allows (its revoke and close commits are not
/// scheduled: they always commit).
///
/// - While a partition is in its eager window (the first `interval` after its first record
///   was read, after a start or an assignment), every check that finds a commit point moved
///   commits: the first acknowledged batch after a start reaches the broker at once, and so
///   does every batch of a process that lives less than one `interval` (a crash loop).
/// - Otherwise at most one commit per `interval`, and at once when something moved after a
///   quiet `interval` (the clock runs from the last commit, not from the last check).
/// - After a failed commit (the broker is away), the next waits a whole `interval`, eager or
///   not, so an outage is not hammered with commits.
///
/// A commit is handed to the committer thread ([`Schedule::requested`]) and its result comes
/// back later ([`Schedule::ended`]); what is on its way is not asked for again
/// ([`Tracker::ask`]).
#[derive(Debug)]
pub(crate) struct Schedule {
    interval: Duration,
    /// When the last commit was requested; `None` before the first.
    last: Option<Instant>,
    /// Whether the last commit that ended failed.
    failed: bool,
}

impl Schedule {
    pub(crate) fn new(interval: Duration) -> Self {
        Self {
            interval,
            last: None,
            failed: false,
        }
    }

    /// Whether to commit at `now`, given what `tracker` would commit.
    pub(crate) fn due(&self, now: Instant, tracker: &Tracker) -> bool {
        let waited = self
            .last
            .is_none_or(|at| now.saturating_duration_since(at) >= self.interval);
        match tracker.pending(now, self.interval) {
            Pending::Nothing => false,
            Pending::Some => waited,
            Pending::Eager => waited || !self.failed,
        }
    }

    /// Records a commit requested at `now`.
    pub(crate) fn requested(&mut self, now: Instant) {
        self.last = Some(now);
    }

    /// Records that a requested commit ended, and whether the broker took it.
    pub(crate) fn ended(&mut self, ok: bool) {
        self.failed = !ok;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads `start..end` as one batch.
    fn range(t: &mut Tracker, partition: i32, start: i64, end: i64) -> Range {
        range_at(t, partition, start, end, Instant::now())
    }

    /// Partition and offset of each of `points`.
    fn offsets(points: &[CommitPoint]) -> Vec<(i32, i64)> {
        points.iter().map(|c| (c.partition, c.offset)).collect()
    }

    /// Reads `start..end` as one batch at `now`.
    fn range_at(t: &mut Tracker, partition: i32, start: i64, end: i64, now: Instant) -> Range {
        let (epoch, start) = t.reading(partition, start, now);
        t.reading(partition, end - 1, now);
        Range {
            partition,
            epoch,
            start,
            end,
        }
    }

    #[test]
    fn commits_only_a_gap_free_prefix() {
        let mut t = Tracker::default();
        let a = range(&mut t, 0, 10, 20);
        let b = range(&mut t, 0, 20, 30);
        let c = range(&mut t, 0, 30, 40);
        assert!(t.ack(c));
        assert_eq!(
            offsets(&t.committable(None)),
            vec![],
            "30..40 done but 10..30 is not"
        );
        assert!(t.ack(a));
        let points = t.committable(None);
        assert_eq!(offsets(&points), vec![(0, 20)]);
        assert_eq!(t.committed(&points), 10);
        assert_eq!(offsets(&t.committable(None)), vec![]);
        assert!(t.ack(b));
        assert_eq!(
            offsets(&t.committable(None)),
            vec![(0, 40)],
            "b closes the gap up to c"
        );
    }

    #[test]
    fn offsets_never_read_do_not_block_commits() {
        let mut t = Tracker::default();
        let a = range(&mut t, 0, 0, 10);
        // Offset 10 is a marker the consumer never sees; the next record is 11.
        let b = range(&mut t, 0, 11, 15);
        assert_eq!(b.start, 10);
        t.ack(a);
        t.ack(b);
        assert_eq!(offsets(&t.committable(None)), vec![(0, 15)]);
    }

    #[test]
    fn partitions_are_independent() {
        let mut t = Tracker::default();
        let p0 = range(&mut t, 0, 0, 5);
        let _p1_unacked = range(&mut t, 1, 100, 105);
        let p1 = range(&mut t, 1, 105, 110);
        t.ack(p0);
        t.ack(p1);
        assert_eq!(offsets(&t.committable(None)), vec![(0, 5)]);
        assert_eq!(offsets(&t.committable(Some(&[1]))), vec![]);
    }

    #[test]
    fn acknowledgements_from_an_earlier_assignment_are_ignored() {
        let mut t = Tracker::default();
        let old = range(&mut t, 3, 0, 10);
        t.revoke(&[3]);
        let new = range(&mut t, 3, 0, 4);
        assert!(!t.ack(old), "read before the partition was revoked");
        assert_eq!(offsets(&t.committable(None)), vec![]);
        assert!(t.ack(new));
        assert_eq!(offsets(&t.committable(None)), vec![(3, 4)]);
    }

    #[test]
    fn what_was_asked_of_the_committer_is_not_asked_again() {
        let mut t = Tracker::default();
        let (a, b) = (range(&mut t, 0, 0, 10), range(&mut t, 1, 0, 5));
        t.ack(a);
        let asked = t.ask();
        assert_eq!(offsets(&asked), vec![(0, 10)]);
        assert_eq!(offsets(&t.ask()), vec![], "on its way");
        assert_eq!(
            offsets(&t.committable(None)),
            vec![(0, 10)],
            "not committed yet: a revoke or close still commits it"
        );
        t.ack(b);
        assert_eq!(offsets(&t.ask()), vec![(1, 5)], "only what moved beyond it");
        assert_eq!(t.committed(&asked), 10);
        let c = range(&mut t, 0, 10, 20);
        t.ack(c);
        assert_eq!(offsets(&t.ask()), vec![(0, 20)]);
        // The commit of 1@5 and 0@20 failed: both are asked for again.
        t.unask();
        assert_eq!(offsets(&t.ask()), vec![(0, 20), (1, 5)]);
    }

    #[test]
    fn a_commit_point_of_a_revoked_assignment_is_neither_committed_nor_counted() {
        let mut t = Tracker::default();
        let a = range(&mut t, 0, 0, 10);
        t.ack(a);
        let asked = t.ask();
        assert_eq!(t.current(&asked), asked);
        t.revoke(&[0]);
        let b = range(&mut t, 0, 0, 4);
        t.ack(b);
        assert_eq!(
            t.current(&asked),
            vec![],
            "asked before the revoke: another consumer may own the partition now"
        );
        assert_eq!(t.committed(&asked), 0);
        assert_eq!(
            offsets(&t.committable(None)),
            vec![(0, 4)],
            "the new assignment's own commit point is untouched"
        );
        let now = t.committable(None);
        t.committed(&now);
        assert_eq!(t.current(&now), vec![], "already committed");
    }

    fn point(partition: i32, epoch: u64, offset: i64) -> CommitPoint {
        CommitPoint {
            partition,
            epoch,
            offset,
        }
    }

    #[test]
    fn a_newer_request_replaces_the_waiting_one_per_partition_and_never_goes_back() {
        let mut waiting = vec![point(0, 1, 100), point(2, 1, 50)];
        coalesce(&mut waiting, vec![point(0, 1, 120), point(1, 1, 7)]);
        assert_eq!(
            waiting,
            vec![point(0, 1, 120), point(1, 1, 7), point(2, 1, 50)],
            "the newest per partition; partitions only in the waiting request stay"
        );
        coalesce(&mut waiting, vec![point(0, 1, 110)]);
        assert_eq!(waiting[0], point(0, 1, 120), "an older offset never wins");
        coalesce(&mut waiting, vec![point(2, 5, 10)]);
        assert_eq!(
            waiting[2],
            point(2, 5, 10),
            "a later assignment wins, whatever its offset"
        );
        coalesce(&mut waiting, vec![point(2, 1, 60)]);
        assert_eq!(
            waiting[2],
            point(2, 5, 10),
            "an earlier assignment never wins"
        );
    }

    const INTERVAL: Duration = Duration::from_secs(5);

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// What the consumer thread does when the schedule says so, and the committer after it.
    fn commit(t: &mut Tracker, s: &mut Schedule, now: Instant) -> Vec<(i32, i64)> {
        let points = t.ask();
        s.requested(now);
        t.committed(&points);
        s.ended(true);
        offsets(&points)
    }

    #[test]
    fn after_a_start_the_first_acknowledged_batch_is_committed_at_once() {
        let (mut t, mut s, t0) = (Tracker::default(), Schedule::new(INTERVAL), Instant::now());
        assert!(!s.due(t0, &t), "nothing read");
        let a = range_at(&mut t, 0, 100, 150, t0 + ms(200));
        assert!(!s.due(t0 + ms(300), &t), "read, not acknowledged");
        t.ack(a);
        // Not `commit_interval` after the start: as soon as the batch is acknowledged.
        assert!(s.due(t0 + ms(310), &t));
        assert_eq!(commit(&mut t, &mut s, t0 + ms(310)), vec![(0, 150)]);
        assert!(!s.due(t0 + ms(320), &t), "nothing new");
    }

    #[test]
    fn within_the_first_interval_every_acknowledged_batch_is_committed_at_once() {
        // A process that lives less than one interval (a crash loop) loses at most what was
        // acknowledged since the last check, not everything since its start.
        let (mut t, mut s, t0) = (Tracker::default(), Schedule::new(INTERVAL), Instant::now());
        let mut at = t0;
        for i in 0..10 {
            let start = i * 50;
            let batch = range_at(&mut t, 0, start, start + 50, at);
            at += ms(400);
            t.ack(batch);
            assert!(s.due(at, &t), "batch {i} at {:?}", at - t0);
            assert_eq!(commit(&mut t, &mut s, at), vec![(0, start + 50)]);
        }
        assert!(at - t0 < INTERVAL);
    }

    #[test]
    fn after_the_first_interval_commits_come_at_most_every_interval() {
        let (mut t, mut s, t0) = (Tracker::default(), Schedule::new(INTERVAL), Instant::now());
        let a = range_at(&mut t, 0, 0, 10, t0);
        t.ack(a);
        commit(&mut t, &mut s, t0 + ms(100));
        let later = t0 + INTERVAL + ms(500);
        let b = range_at(&mut t, 0, 10, 20, later);
        t.ack(b);
        assert!(
            s.due(later, &t),
            "a quiet interval passed since the last commit: commit at once"
        );
        commit(&mut t, &mut s, later);
        let c = range_at(&mut t, 0, 20, 30, later);
        t.ack(c);
        assert!(!s.due(later + ms(100), &t));
        assert!(!s.due(later + INTERVAL - ms(1), &t));
        assert!(s.due(later + INTERVAL, &t));
    }

    #[test]
    fn a_partition_assigned_after_a_rebalance_is_committed_at_once() {
        let (mut t, mut s, t0) = (Tracker::default(), Schedule::new(INTERVAL), Instant::now());
        let a = range_at(&mut t, 0, 0, 10, t0);
        t.ack(a);
        commit(&mut t, &mut s, t0);
        // Long past the eager window, partition 0 commits by the interval.
        let now = t0 + 3 * INTERVAL;
        let b = range_at(&mut t, 0, 10, 20, now);
        t.ack(b);
        commit(&mut t, &mut s, now);
        let c = range_at(&mut t, 0, 20, 30, now);
        t.ack(c);
        assert!(
            !s.due(now + ms(50), &t),
            "partition 0: wait for the interval"
        );
        // A rebalance takes partition 0 back and assigns it and partition 1 again.
        t.revoke(&[0]);
        let d = range_at(&mut t, 1, 500, 510, now + ms(100));
        let e = range_at(&mut t, 0, 20, 30, now + ms(100));
        t.ack(d);
        assert!(
            s.due(now + ms(150), &t),
            "partition 1 is new to this consumer"
        );
        assert_eq!(commit(&mut t, &mut s, now + ms(150)), vec![(1, 510)]);
        t.ack(e);
        assert!(s.due(now + ms(200), &t), "so is partition 0, again");
        assert_eq!(commit(&mut t, &mut s, now + ms(200)), vec![(0, 30)]);
    }

    #[test]
    fn while_a_commit_is_on_its_way_only_a_newer_acknowledgement_is_due() {
        let (mut t, mut s, t0) = (Tracker::default(), Schedule::new(INTERVAL), Instant::now());
        let a = range_at(&mut t, 0, 0, 10, t0);
        t.ack(a);
        assert!(s.due(t0, &t));
        let on_its_way = t.ask();
        s.requested(t0);
        assert!(
            !s.due(t0 + ms(100), &t),
            "nothing moved beyond what the committer has"
        );
        let b = range_at(&mut t, 0, 10, 20, t0 + ms(100));
        t.ack(b);
        assert!(s.due(t0 + ms(150), &t), "eager: the newer one at once");
        assert_eq!(offsets(&t.ask()), vec![(0, 20)]);
        s.requested(t0 + ms(150));
        // The first commit comes back after both were requested.
        assert_eq!(t.committed(&on_its_way), 10);
        s.ended(true);
        assert!(!s.due(t0 + ms(200), &t), "0@20 is on its way");
    }

    #[test]
    fn after_a_failed_commit_even_an_eager_one_waits_an_interval() {
        let (mut t, mut s, t0) = (Tracker::default(), Schedule::new(INTERVAL), Instant::now());
        let a = range_at(&mut t, 0, 0, 10, t0);
        t.ack(a);
        assert!(s.due(t0, &t));
        t.ask();
        s.requested(t0);
        s.ended(false);
        t.unask();
        assert!(
            !s.due(t0 + ms(100), &t),
            "the broker is away: do not hammer it"
        );
        assert!(s.due(t0 + INTERVAL, &t));
        commit(&mut t, &mut s, t0 + INTERVAL);
        let b = range_at(&mut t, 1, 0, 10, t0 + INTERVAL);
        t.ack(b);
        assert!(
            s.due(t0 + INTERVAL + ms(1), &t),
            "eager again once a commit went through"
        );
    }
}
