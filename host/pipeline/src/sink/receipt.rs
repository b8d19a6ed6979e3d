//! Receipts: how a batch learns that every sink holds its events. The worker makes one
//! receipt per sink for each batch; a sink completes its receipt once the events are durable
//! (or dead-lettered). When the last one completes, the batch is acknowledged to the buffer
//! (Kafka: its offsets may be committed). A receipt dropped without being completed (a sink
//! gave up at shutdown) means the batch is never acknowledged: it is read again after a restart.

/// One sink's share of a batch's acknowledgement: a [`Share`](sluice_buffer::Share), named
/// for what completes it. With a [`Tally`], the sink may also complete single records before
/// the batch (`complete_records`), and a record is acknowledged once every sink completed it.
#[derive(Debug)]
pub struct Receipt {
    share: sluice_buffer::Share,
    records: Option<Records>,
}

/// A receipt's part in a batch's [`Tally`]: which records it completed.
#[derive(Debug)]
struct Records {
    tally: std::sync::Arc<Tally>,
    done: Vec<bool>,
}

/// A batch's records as sinks complete them one by one (a Kafka buffer's batch, in a
/// pipeline with a sink whose requests are cut by offsets: `docs/design/exactly-once.md`).
pub struct Tally {
    /// Each record's position and receive time (ms since the epoch).
    pub(crate) records: Vec<(sluice_buffer::Position, u64)>,
    /// What the batch read of each partition.
    pub(crate) reads: Vec<sluice_buffer::Read>,
    /// Per record, the sinks that have not completed it yet.
    left: Vec<std::sync::atomic::AtomicUsize>,
    parts: std::sync::Arc<dyn sluice_buffer::RecordAcks>,
}

impl std::fmt::Debug for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tally")
            .field("records", &self.records.len())
            .finish_non_exhaustive()
    }
}

impl Tally {
    /// The tally of a batch whose records sit at `records`, for `sinks` sinks.
    pub fn new(
        records: Vec<(sluice_buffer::Position, u64)>,
        reads: Vec<sluice_buffer::Read>,
        sinks: usize,
        parts: std::sync::Arc<dyn sluice_buffer::RecordAcks>,
    ) -> Self {
        Self {
            left: (0..records.len())
                .map(|_| std::sync::atomic::AtomicUsize::new(sinks))
                .collect(),
            records,
            reads,
            parts,
        }
    }

    /// One more sink completed these records: acknowledges those every sink completed.
    fn release(&self, records: impl Iterator<Item = usize>) {
        let done: Vec<usize> = records
            .filter(|&i| self.left[i].fetch_sub(1, std::sync::atomic::Ordering::AcqRel) == 1)
            .collect();
        if !done.is_empty() {
            self.parts.acknowledge(&done);
        }
    }

    /// The offset committed for `partition`, while the batch's assignment of it lasts.
    pub(crate) fn committed(&self, partition: i32) -> Option<i64> {
        self.parts.committed(partition)
    }
}

impl Receipt {
    /// `n` receipts that run `on_done` once all of them are completed. With `n == 0`,
    /// `on_done` runs now.
    pub fn split(n: usize, on_done: impl FnOnce() + Send + 'static) -> Vec<Receipt> {
        Self::split_tallied(n, None, on_done)
    }

    /// [`split`](Self::split), the receipts sharing `tally` (made for `n` sinks).
    pub fn split_tallied(
        n: usize,
        tally: Option<std::sync::Arc<Tally>>,
        on_done: impl FnOnce() + Send + 'static,
    ) -> Vec<Receipt> {
        if n == 0 {
            on_done();
            return Vec::new();
        }
        let records = |share| Receipt {
            share,
            records: tally.as_ref().map(|t| Records {
                tally: t.clone(),
                done: vec![false; t.records.len()],
            }),
        };
        let first = sluice_buffer::Acknowledgement::new(on_done).shared();
        let mut receipts: Vec<Receipt> = (1..n).map(|_| records(first.share())).collect();
        receipts.push(records(first));
        receipts
    }

    /// The batch's records, if they can be completed one by one.
    pub(crate) fn tally(&self) -> Option<&std::sync::Arc<Tally>> {
        self.records.as_ref().map(|r| &r.tally)
    }

    /// The sink holds these records' events (indices into the batch's records); each is
    /// acknowledged once every sink completed it. Indices already completed are ignored.
    pub(crate) fn complete_records(&mut self, indices: &[usize]) {
        if let Some(r) = &mut self.records {
            let fresh: Vec<usize> = indices
                .iter()
                .copied()
                .filter(|&i| i < r.done.len() && !std::mem::replace(&mut r.done[i], true))
                .collect();
            r.tally.release(fresh.into_iter());
        }
    }

    /// The sink holds its share (or dead-lettered it).
    pub fn complete(self) {
        if let Some(r) = &self.records {
            let rest = r
                .done
                .iter()
                .enumerate()
                .filter(|(_, d)| !**d)
                .map(|(i, _)| i);
            r.tally.release(rest);
        }
        self.share.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Records what the buffer was told.
    #[derive(Default)]
    struct Acked(Mutex<Vec<usize>>);

    impl sluice_buffer::RecordAcks for Acked {
        fn acknowledge(&self, records: &[usize]) {
            self.0.lock().unwrap().extend_from_slice(records);
        }
        fn committed(&self, _: i32) -> Option<i64> {
            None
        }
    }

    #[test]
    fn a_record_is_acknowledged_once_every_sink_completed_it() {
        let acked = Arc::new(Acked::default());
        let at = |offset| {
            (
                sluice_buffer::Position {
                    topic: "t".into(),
                    partition: 0,
                    offset,
                },
                0,
            )
        };
        let tally = Arc::new(Tally::new(
            vec![at(0), at(1), at(2)],
            Vec::new(),
            2,
            acked.clone(),
        ));
        let (done, f) = counter();
        let mut r = Receipt::split_tallied(2, Some(tally), f);
        let mut staged = r.remove(1);
        staged.complete_records(&[1]);
        assert!(
            acked.0.lock().unwrap().is_empty(),
            "the other sink has none"
        );
        r.remove(0).complete();
        assert_eq!(
            *acked.0.lock().unwrap(),
            vec![1],
            "record 1 only: 0 and 2 wait"
        );
        staged.complete_records(&[1, 0]);
        assert_eq!(
            *acked.0.lock().unwrap(),
            vec![1, 0],
            "1 is not acknowledged twice"
        );
        assert_eq!(done.load(Ordering::SeqCst), 0);
        staged.complete();
        assert_eq!(*acked.0.lock().unwrap(), vec![1, 0, 2]);
        assert_eq!(done.load(Ordering::SeqCst), 1);
    }
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn counter() -> (Arc<AtomicUsize>, impl FnOnce() + Send + 'static) {
        let done = Arc::new(AtomicUsize::new(0));
        let d = done.clone();
        (done, move || {
            d.fetch_add(1, Ordering::SeqCst);
        })
    }

    #[test]
    fn the_batch_is_acknowledged_once_every_sink_completed_in_any_order() {
        let (done, f) = counter();
        let mut r = Receipt::split(3, f);
        r.remove(1).complete();
        r.remove(0).complete();
        assert_eq!(
            done.load(Ordering::SeqCst),
            0,
            "one sink still holds its share"
        );
        r.remove(0).complete();
        assert_eq!(done.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_receipt_dropped_uncompleted_means_never_acknowledged() {
        let (done, f) = counter();
        let mut r = Receipt::split(2, f);
        drop(r.remove(0));
        r.remove(0).complete();
        assert_eq!(done.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn no_sinks_acknowledges_at_once() {
        let (done, f) = counter();
        assert!(Receipt::split(0, f).is_empty());
        assert_eq!(done.load(Ordering::SeqCst), 1);
    }
}
