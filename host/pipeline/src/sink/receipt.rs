//! Receipts: how a batch learns that every sink holds its events. The worker makes one
//! receipt per sink for each batch; a sink completes its receipt once the events are durable
//! (or dead-lettered). When the last one completes, the batch is acknowledged to the buffer
//! (Kafka: its offsets may be committed). A receipt dropped without being completed (a sink
//! gave up at shutdown) means the batch is never acknowledged: it is read again after a restart.

/// One sink's share of a batch's acknowledgement: a [`Share`](sluice_buffer::Share), named
/// for what completes it.
#[derive(Debug)]
pub struct Receipt(sluice_buffer::Share);

impl Receipt {
    /// `n` receipts that run `on_done` once all of them are completed. With `n == 0`,
    /// `on_done` runs now.
    pub fn split(n: usize, on_done: impl FnOnce() + Send + 'static) -> Vec<Receipt> {
        if n == 0 {
            on_done();
            return Vec::new();
        }
        let first = sluice_buffer::Acknowledgement::new(on_done).shared();
        let mut receipts: Vec<Receipt> = (1..n).map(|_| Receipt(first.share())).collect();
        receipts.push(Receipt(first));
        receipts
    }

    /// The sink holds its share (or dead-lettered it).
    pub fn complete(self) {
        self.0.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
