//! Receipts: how a batch learns that every sink holds its events. The worker makes one
//! receipt per sink for each batch; a sink completes its receipt once the events are durable
//! (or dead-lettered). When the last one completes, the batch is acknowledged to the buffer
//! (Kafka: its offsets may be committed). A receipt dropped without being completed (a sink
//! gave up at shutdown) means the batch is never acknowledged: it is read again after a restart.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// One sink's share of a batch's acknowledgement.
pub struct Receipt {
    tally: std::sync::Arc<Tally>,
    completed: bool,
}

struct Tally {
    left: AtomicUsize,
    /// A receipt was dropped without being completed.
    abandoned: AtomicBool,
    on_done: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl Receipt {
    /// `n` receipts that run `on_done` once all of them are completed. With `n == 0`,
    /// `on_done` runs now.
    pub fn split(n: usize, on_done: impl FnOnce() + Send + 'static) -> Vec<Receipt> {
        if n == 0 {
            on_done();
            return Vec::new();
        }
        let tally = std::sync::Arc::new(Tally {
            left: AtomicUsize::new(n),
            abandoned: AtomicBool::new(false),
            on_done: Mutex::new(Some(Box::new(on_done))),
        });
        (0..n)
            .map(|_| Receipt {
                tally: tally.clone(),
                completed: false,
            })
            .collect()
    }

    /// The sink holds its share (or dead-lettered it).
    pub fn complete(mut self) {
        self.completed = true;
    }
}

impl Drop for Receipt {
    fn drop(&mut self) {
        if !self.completed {
            self.tally.abandoned.store(true, Ordering::SeqCst);
        }
        if self.tally.left.fetch_sub(1, Ordering::SeqCst) == 1
            && !self.tally.abandoned.load(Ordering::SeqCst)
        {
            let on_done = self
                .tally
                .on_done
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            if let Some(f) = on_done {
                f();
            }
        }
    }
}

impl std::fmt::Debug for Receipt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Receipt")
            .field("left", &self.tally.left.load(Ordering::Relaxed))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

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
