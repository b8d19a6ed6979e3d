//! Staging for outputs that want large requests (an S3 object, an HTTP bulk body): one task
//! per sink collects the events of many batches and sends them once a threshold is reached
//! (`event_count`, `maximum_size`) or the oldest staged event has waited
//! `event_collect_timeout`. A batch's receipt is completed when the request holding its last
//! event is delivered. For an output that is `keyed` (s3, http with `exactly_once`), a Kafka
//! buffer's batches go to [`Keyed`] instead, which cuts requests by offsets and completes
//! records one by one; other batches (a memory buffer's, a stateful processor's) are staged
//! here as before.
//!
//! Memory stays bounded: while the task sends (and retries), it takes no more batches, so the
//! workers wait in [`Stager::take`] and stop reading the buffer (the Kafka buffer keeps
//! accepting writes and holds them). At most one threshold's worth of events is staged, plus
//! the batch being added.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::deliver::Delivery;
use super::keyed::{Keyed, Ready};
use super::{Provenance, Receipt, Threshold};

/// A batch's events on their way to the sink's task.
type Staging = mpsc::Sender<(Vec<Bytes>, Provenance, Receipt)>;

/// The handle the workers use; the task owns the staged events.
pub(crate) struct Stager {
    tx: std::sync::Mutex<Option<Staging>>,
    task: tokio::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Set at shutdown: send what is staged now, and every batch as it comes.
    draining: tokio::sync::watch::Sender<bool>,
    name: String,
    keyed: bool,
    encoder: Option<Arc<dyn super::Encode>>,
}

impl Stager {
    pub(crate) fn start(
        delivery: Arc<Delivery>,
        threshold: Threshold,
        read_delay: std::time::Duration,
    ) -> Self {
        let (tx, rx) = mpsc::channel(1);
        let (draining, drain_rx) = tokio::sync::watch::channel(false);
        let name = delivery.name.clone();
        let keyed = delivery.output.keyed();
        let encoder = delivery.output.encoder();
        let task = tokio::spawn(run(delivery, threshold, read_delay, rx, drain_rx));
        Self {
            tx: std::sync::Mutex::new(Some(tx)),
            task: tokio::sync::Mutex::new(Some(task)),
            draining,
            name,
            keyed,
            encoder,
        }
    }

    /// The output's [`encoder`](super::Output::encoder).
    pub(crate) fn encoder(&self) -> Option<Arc<dyn super::Encode>> {
        self.encoder.clone()
    }

    /// Whether the task cuts requests by offsets (the output is [`keyed`](super::Output::keyed)).
    pub(crate) fn keyed(&self) -> bool {
        self.keyed
    }

    /// Shutdown has begun: stop collecting. What is staged is sent now, and each batch still
    /// coming as soon as it arrives, so the buffer can commit before it closes (its readers
    /// end only once what they read is acknowledged).
    pub(crate) fn drain(&self) {
        self.draining.send_replace(true);
    }

    /// Stages a batch; waits while the task is sending.
    pub(crate) async fn take(&self, events: Vec<Bytes>, from: Provenance, receipt: Receipt) {
        let tx = self.tx.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let Some(tx) = tx else {
            // Closed: the receipt is dropped, so the batch is not acknowledged and is read
            // again after a restart.
            tracing::error!(sink = %self.name, "a batch reached a closed sink; it is not acknowledged");
            return;
        };
        if tx.send((events, from, receipt)).await.is_err() {
            tracing::error!(sink = %self.name, "the sink's task ended; the batch is not acknowledged");
        }
    }

    /// Sends what is staged, waits for it, and ends the task.
    pub(crate) async fn close(&self) {
        drop(self.tx.lock().unwrap_or_else(|e| e.into_inner()).take());
        if let Some(task) = self.task.lock().await.take() {
            let _ = task.await;
        }
    }
}

/// The staged events, and the receipts of the batches they came from.
#[derive(Default)]
struct Staged {
    events: VecDeque<Bytes>,
    /// Where each staged event came from (`Provenance::at`), while every batch said so.
    at: VecDeque<Option<(sluice_buffer::Position, u32)>>,
    bytes: u64,
    /// The number of events ever sent: the position of `events[0]`.
    sent: u64,
    /// Each batch's receipt, with the position after its last event.
    receipts: VecDeque<(u64, Receipt)>,
    /// When the oldest staged event arrived.
    since: Option<Instant>,
}

impl Staged {
    fn add(&mut self, events: Vec<Bytes>, from: Provenance, receipt: Receipt) {
        if self.events.is_empty() && !events.is_empty() {
            self.since = Some(Instant::now());
        }
        if from.at.len() == events.len() {
            self.at.extend(from.at);
        } else {
            self.at.extend(events.iter().map(|_| None));
        }
        for e in events {
            self.bytes += e.len() as u64 + 1;
            self.events.push_back(e);
        }
        let end = self.sent + self.events.len() as u64;
        self.receipts.push_back((end, receipt));
    }

    /// Whether a threshold's worth is staged.
    fn full(&self, t: &Threshold) -> bool {
        t.event_count.is_some_and(|n| self.events.len() >= n)
            || t.maximum_size.is_some_and(|m| self.bytes >= m)
    }

    /// Takes the next request's events, as many as the thresholds allow, at least one, and
    /// where they came from.
    fn next_request(&mut self, t: &Threshold) -> (Vec<Bytes>, Provenance) {
        let max_events = t.event_count.unwrap_or(usize::MAX).max(1);
        let max_bytes = t.maximum_size.unwrap_or(u64::MAX);
        let mut out = Vec::new();
        let mut bytes = 0u64;
        while let Some(e) = self.events.front() {
            let size = e.len() as u64 + 1;
            if out.len() >= max_events || (!out.is_empty() && bytes + size > max_bytes) {
                break;
            }
            bytes += size;
            out.push(self.events.pop_front().expect("front exists"));
        }
        self.bytes -= bytes;
        self.since = if self.events.is_empty() {
            None
        } else {
            Some(Instant::now())
        };
        let at: Vec<_> = self.at.drain(..out.len()).collect();
        let from = Provenance {
            // All or nothing, as a batch's.
            at: if at.iter().all(Option::is_some) {
                at
            } else {
                Vec::new()
            },
            ..Provenance::default()
        };
        (out, from)
    }

    /// `n` more events were delivered: completes the receipts of batches now wholly delivered.
    fn delivered(&mut self, n: usize) {
        self.sent += n as u64;
        while self
            .receipts
            .front()
            .is_some_and(|(end, _)| *end <= self.sent)
        {
            let (_, receipt) = self.receipts.pop_front().expect("front exists");
            receipt.complete();
        }
    }
}

async fn run(
    delivery: Arc<Delivery>,
    threshold: Threshold,
    read_delay: std::time::Duration,
    mut rx: mpsc::Receiver<(Vec<Bytes>, Provenance, Receipt)>,
    mut drain: tokio::sync::watch::Receiver<bool>,
) {
    let mut staged = Staged::default();
    // Batches of a Kafka buffer, for an output that names requests by what they hold.
    let mut keyed = Keyed::new(read_delay);
    let cut_by_offsets = delivery.output.keyed();
    let mut draining = false;
    loop {
        let loose = staged
            .since
            .zip(threshold.event_collect_timeout)
            .map(|(since, wait)| since + wait);
        let deadline = match (loose, keyed.deadline(&threshold, wall_ms())) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let next = tokio::select! {
            // Batches that came are placed before a close by the clock is considered.
            biased;
            next = rx.recv() => next,
            () = sleep_until(deadline) => {
                let now = Instant::now();
                if loose.is_some_and(|at| at <= now) {
                    flush(&delivery, &threshold, &mut staged, true).await;
                }
                let mut ready = Vec::new();
                keyed.due(now, wall_ms(), &threshold, &mut ready);
                if draining {
                    keyed.close_all(&mut ready);
                }
                send_keyed(&delivery, &mut keyed, ready).await;
                continue;
            }
            changed = drain.changed(), if !draining => {
                // A dropped sender (the sink is gone) also ends the collecting.
                draining = changed.is_err() || *drain.borrow();
                if draining {
                    flush(&delivery, &threshold, &mut staged, true).await;
                    let mut ready = Vec::new();
                    keyed.close_all(&mut ready);
                    send_keyed(&delivery, &mut keyed, ready).await;
                }
                continue;
            }
        };
        match next {
            Some((events, from, receipt)) => {
                let has_offsets = receipt.tally().is_some()
                    && from.at.len() == events.len()
                    && from.at.iter().all(Option::is_some);
                if cut_by_offsets && has_offsets {
                    let mut ready = keyed.add(events, &from.at, receipt, &threshold);
                    if draining {
                        keyed.close_all(&mut ready);
                    }
                    send_keyed(&delivery, &mut keyed, ready).await;
                } else {
                    staged.add(events, from, receipt);
                    flush(&delivery, &threshold, &mut staged, draining).await;
                }
            }
            None => {
                flush(&delivery, &threshold, &mut staged, true).await;
                let mut ready = Vec::new();
                keyed.close_all(&mut ready);
                send_keyed(&delivery, &mut keyed, ready).await;
                if !keyed.is_empty() {
                    // Batches behind a gap (or a commit that never came): not acknowledged,
                    // read again after a restart.
                    tracing::warn!(sink = %delivery.name, "batches still waiting for earlier ones at close; they are read again after a restart");
                }
                return;
            }
        }
    }
}

/// Sends requests cut by offsets, each named by its extent; its records are done once it is
/// delivered (or dead-lettered).
async fn send_keyed(delivery: &Delivery, keyed: &mut Keyed, ready: Vec<Ready>) {
    for mut r in ready {
        let lines = std::mem::take(&mut r.lines);
        let from = Provenance {
            extent: Some(r.extent.clone()),
            ..Provenance::default()
        };
        delivery.send(lines, from).await;
        keyed.delivered(r);
    }
}

/// Sends requests while a threshold's worth is staged, or (`all`) until nothing is.
async fn flush(delivery: &Delivery, threshold: &Threshold, staged: &mut Staged, all: bool) {
    while staged.full(threshold) || (all && !staged.events.is_empty()) {
        let (events, from) = staged.next_request(threshold);
        let n = events.len();
        delivery.send(events, from).await;
        staged.delivered(n);
    }
    // Batches without events (all dead-lettered) are done once everything before them is.
    staged.delivered(0);
}

/// Now, in ms since the epoch.
fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    #[test]
    fn requests_hold_at_most_the_threshold_and_receipts_wait_for_their_last_event() {
        let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let t = Threshold {
            event_count: Some(2),
            maximum_size: None,
            event_collect_timeout: None,
        };
        let mut s = Staged::default();
        let d = done.clone();
        let mut r = Receipt::split(1, move || {
            d.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        });
        s.add(
            vec![ev("a"), ev("b"), ev("c")],
            Provenance::default(),
            r.remove(0),
        );
        assert!(s.full(&t));
        let (first, _) = s.next_request(&t);
        assert_eq!(first, vec![ev("a"), ev("b")]);
        s.delivered(first.len());
        assert_eq!(
            done.load(std::sync::atomic::Ordering::SeqCst),
            0,
            "`c` is not sent yet"
        );
        assert!(!s.full(&t));
        let (rest, _) = s.next_request(&t);
        assert_eq!(rest, vec![ev("c")]);
        s.delivered(1);
        assert_eq!(done.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    #[test]
    fn a_request_stays_under_maximum_size_unless_one_event_is_larger() {
        let t = Threshold {
            event_count: None,
            maximum_size: Some(10),
            event_collect_timeout: None,
        };
        let mut s = Staged::default();
        let at = |offset| {
            Some((
                sluice_buffer::Position {
                    topic: "t".into(),
                    partition: 0,
                    offset,
                },
                0,
            ))
        };
        s.add(
            vec![ev("1234"), ev("1234"), ev("123456789012")],
            Provenance {
                at: vec![at(7), at(8), at(9)],
                ..Provenance::default()
            },
            Receipt::split(1, || {}).remove(0),
        );
        let (first, from) = s.next_request(&t);
        assert_eq!(first.len(), 2, "5 + 5 bytes fit, the third does not");
        assert_eq!(
            from.at,
            [at(7), at(8)],
            "each event's position goes with it"
        );
        let (last, from) = s.next_request(&t);
        assert_eq!(last.len(), 1, "a lone large event still goes");
        assert_eq!(from.at, [at(9)]);
        s.delivered(3);
    }
}
