//! Which offsets may be committed: per partition, the acknowledged ranges are merged and the
//! commit point only moves over a gap-free prefix, so an offset is committed only once every
//! record before it is done. Batches may be acknowledged in any order.

use std::collections::{BTreeMap, HashMap};

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
    /// The offset after the last record read. A batch's range starts here, so offsets the
    /// consumer never sees (transaction markers, compacted records) do not leave gaps.
    read_to: i64,
    /// Acknowledged ranges `[start, end)` above `next`, by start.
    done: BTreeMap<i64, i64>,
}

impl PartitionTracker {
    fn new(epoch: u64, start: i64) -> Self {
        Self {
            epoch,
            next: start,
            committed: start,
            read_to: start,
            done: BTreeMap::new(),
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
    epochs: u64,
}

/// One partition's share of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Range {
    pub(crate) partition: i32,
    pub(crate) epoch: u64,
    pub(crate) start: i64,
    pub(crate) end: i64,
}

impl Tracker {
    /// Notes a record read at `offset`: returns the assignment's epoch and where a range
    /// that begins with this record starts. The tracker of a partition starts at the first
    /// record read after an assignment.
    pub(crate) fn reading(&mut self, partition: i32, offset: i64) -> (u64, i64) {
        let epochs = &mut self.epochs;
        let t = self.partitions.entry(partition).or_insert_with(|| {
            *epochs += 1;
            PartitionTracker::new(*epochs, offset)
        });
        let start = t.read_to.min(offset);
        t.read_to = t.read_to.max(offset + 1);
        (t.epoch, start)
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

    /// Partitions whose commit point moved since the last commit, with the offset to commit.
    /// `only`: restrict to these partitions.
    pub(crate) fn committable(&self, only: Option<&[i32]>) -> Vec<(i32, i64)> {
        let mut out: Vec<(i32, i64)> = self
            .partitions
            .iter()
            .filter(|(p, t)| t.next > t.committed && only.is_none_or(|o| o.contains(p)))
            .map(|(p, t)| (*p, t.next))
            .collect();
        out.sort_unstable();
        out
    }

    /// Records that `offsets` were committed; returns how many records the commit covered.
    pub(crate) fn committed(&mut self, offsets: &[(i32, i64)]) -> u64 {
        let mut moved = 0;
        for (p, offset) in offsets {
            if let Some(t) = self.partitions.get_mut(p) {
                moved += u64::try_from(offset - t.committed).unwrap_or(0);
                t.committed = t.committed.max(*offset);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads `start..end` as one batch.
    fn range(t: &mut Tracker, partition: i32, start: i64, end: i64) -> Range {
        let (epoch, start) = t.reading(partition, start);
        t.reading(partition, end - 1);
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
        assert_eq!(t.committable(None), vec![], "30..40 done but 10..30 is not");
        assert!(t.ack(a));
        assert_eq!(t.committable(None), vec![(0, 20)]);
        assert_eq!(t.committed(&[(0, 20)]), 10);
        assert_eq!(t.committable(None), vec![]);
        assert!(t.ack(b));
        assert_eq!(
            t.committable(None),
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
        assert_eq!(t.committable(None), vec![(0, 15)]);
    }

    #[test]
    fn partitions_are_independent() {
        let mut t = Tracker::default();
        let p0 = range(&mut t, 0, 0, 5);
        let _p1_unacked = range(&mut t, 1, 100, 105);
        let p1 = range(&mut t, 1, 105, 110);
        t.ack(p0);
        t.ack(p1);
        assert_eq!(t.committable(None), vec![(0, 5)]);
        assert_eq!(t.committable(Some(&[1])), vec![]);
    }

    #[test]
    fn acknowledgements_from_an_earlier_assignment_are_ignored() {
        let mut t = Tracker::default();
        let old = range(&mut t, 3, 0, 10);
        t.revoke(&[3]);
        let new = range(&mut t, 3, 0, 4);
        assert!(!t.ack(old), "read before the partition was revoked");
        assert_eq!(t.committable(None), vec![]);
        assert!(t.ack(new));
        assert_eq!(t.committable(None), vec![(3, 4)]);
    }
}
