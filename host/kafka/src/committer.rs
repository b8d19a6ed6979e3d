//! A consumer's committer: the thread that sends the consumer's scheduled commits to the
//! broker, one at a time and synchronously, so that the consumer thread never waits for one.
//!
//! Why a thread of its own: one `OffsetCommit` takes hundreds of milliseconds on a slow
//! broker (250 to 750 ms on Nisshi), and a consumer thread that waits for it between two polls
//! reads nothing meanwhile (`docs/performance.md` §18). An asynchronous commit would not wait,
//! but rust-rdkafka 0.38 never reports the result of a manual asynchronous commit (it sets no
//! `offset_commit_cb`, so `ConsumerContext::commit_callback` is not called for them;
//! rust-rdkafka issue #856), and without the results the tracker and the schedule cannot know
//! what was committed. A synchronous commit on another thread has both: the consumer thread
//! goes on polling, and the result comes back.
//!
//! The way there is a [`Handoff`], a channel of capacity one whose sender merges: a request
//! made while another waits is merged into it ([`coalesce`]: the newest commit point per
//! partition), so the consumer thread never waits for room, and the broker gets at most one
//! commit after the one in flight, never an older offset after a newer one. The committer
//! records a commit the broker took in the tracker itself (before it is idle again); whether
//! it was taken goes back through the handoff to the consumer thread's schedule
//! ([`Slot::outcome`]).
//!
//! The commits that must finish before the consumer goes on (on revoke, in the rebalance
//! callback, and on close) are still made by the consumer thread, after the committer's commit
//! in flight ended ([`Handoff::idle`]), so the broker sees the commits in the order they were
//! made and the last one is the newest.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use crate::commit::{CommitPoint, coalesce};

/// The way from a consumer thread to its committer and back.
#[derive(Debug, Default)]
pub(crate) struct Handoff {
    slot: Mutex<Slot>,
    /// Signalled when a request waits, when a commit ended and when the committer is to stop.
    changed: Condvar,
}

/// What the consumer thread and its committer share (behind [`Handoff`]'s lock).
#[derive(Debug, Default)]
pub(crate) struct Slot {
    /// The request the committer has not taken yet: at most one (later ones merge into it).
    waiting: Option<Vec<CommitPoint>>,
    /// The committer is committing a request it took.
    busy: bool,
    /// Callers of [`Handoff::idle`] waiting for that commit to end: meanwhile the committer
    /// takes no other.
    held: usize,
    /// Whether the broker took the commits that ended since the consumer thread last looked.
    outcome: Option<bool>,
    /// The committer is to stop.
    closed: bool,
}

impl Slot {
    /// Whether the broker took the commits that ended since the last call (`None`: none
    /// ended). A failure is reported even if a later commit went through.
    pub(crate) fn outcome(&mut self) -> Option<bool> {
        self.outcome.take()
    }

    /// Drops `partitions` from the waiting request: they were revoked, and their commit is
    /// the revoke's.
    pub(crate) fn forget(&mut self, partitions: &[i32]) {
        if let Some(waiting) = &mut self.waiting {
            waiting.retain(|c| !partitions.contains(&c.partition));
            if waiting.is_empty() {
                self.waiting = None;
            }
        }
    }
}

impl Handoff {
    /// The shared state. A panic elsewhere does not leave it half-changed (every change is
    /// one statement), so a poisoned lock is used as it is: the committer must still say it
    /// stopped, or a revoke would wait for it forever.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands `points` to the committer: they wait in `slot`, merged with what already
    /// waited, until it takes them. Never blocks.
    pub(crate) fn request(&self, slot: &mut Slot, points: Vec<CommitPoint>) {
        if points.is_empty() {
            return;
        }
        coalesce(slot.waiting.get_or_insert_with(Vec::new), points);
        self.changed.notify_all();
    }

    /// Waits until the committer's commit in flight ended (it takes no other meanwhile). While
    /// the returned guard is held it takes no request either, so a commit made meanwhile comes
    /// after its last one and before its next.
    pub(crate) fn idle(&self) -> MutexGuard<'_, Slot> {
        let mut slot = self.lock();
        slot.held += 1;
        let mut slot = self
            .changed
            .wait_while(slot, |s| s.busy)
            .unwrap_or_else(PoisonError::into_inner);
        slot.held -= 1;
        // The committer checks again once the guard is dropped (it needs the lock to).
        self.changed.notify_all();
        slot
    }

    /// Stops the committer: what waits is dropped (the close commits everything itself) and
    /// its thread returns once the commit in flight ended (join it to wait for that).
    pub(crate) fn close(&self) {
        let mut slot = self.lock();
        slot.closed = true;
        slot.waiting = None;
        self.changed.notify_all();
    }

    /// The committer's side: the next request, once there is one; `None` once closed.
    fn take(&self) -> Option<Vec<CommitPoint>> {
        let mut slot = self
            .changed
            .wait_while(self.lock(), |s| {
                !s.closed && (s.waiting.is_none() || s.held > 0)
            })
            .unwrap_or_else(PoisonError::into_inner);
        if slot.closed {
            return None;
        }
        slot.busy = true;
        slot.waiting.take()
    }

    /// The committer's side: the commit it took ended; `outcome` says whether the broker took
    /// it (`None`: nothing of it was left to commit). After a failure what waits is dropped:
    /// the broker is likely away, and the schedule asks again after `commit_interval`.
    fn finish(&self, outcome: Option<bool>) {
        let mut slot = self.lock();
        slot.busy = false;
        if let Some(ok) = outcome {
            slot.outcome = Some(ok && slot.outcome != Some(false));
            if !ok {
                slot.waiting = None;
            }
        }
        self.changed.notify_all();
    }
}

/// Says that the committer's commit ended, even when it panicked (a revoke waits for it).
struct Finish<'a> {
    handoff: &'a Handoff,
    outcome: Option<bool>,
}

impl Drop for Finish<'_> {
    fn drop(&mut self) {
        self.handoff.finish(self.outcome);
    }
}

/// A running committer thread.
pub(crate) struct Committer {
    handoff: Arc<Handoff>,
    thread: Option<JoinHandle<()>>,
}

impl Committer {
    /// Stops the committer ([`Handoff::close`]) and waits for its commit in flight.
    pub(crate) fn stop(mut self) {
        self.handoff.close();
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            tracing::warn!("the kafka committer thread panicked");
        }
    }
}

impl Drop for Committer {
    /// Not stopped (the consumer thread panicked): the committer is still told to stop, so it
    /// lets go of the consumer, which can then leave its group.
    fn drop(&mut self) {
        self.handoff.close();
    }
}

/// Starts the committer thread `name`. It takes each request from `handoff` and commits it
/// with `commit`, which waits for the broker and returns whether it took the commit (`None`
/// when nothing of the request was left to commit), until [`Committer::stop`].
pub(crate) fn spawn(
    name: String,
    handoff: Arc<Handoff>,
    mut commit: impl FnMut(Vec<CommitPoint>) -> Option<bool> + Send + 'static,
) -> Committer {
    let thread = {
        let handoff = handoff.clone();
        std::thread::Builder::new()
            .name(name)
            .spawn(move || {
                while let Some(points) = handoff.take() {
                    let mut finish = Finish {
                        handoff: &handoff,
                        outcome: None,
                    };
                    finish.outcome = commit(points);
                }
            })
            .expect("spawning a committer thread")
    };
    Committer {
        handoff,
        thread: Some(thread),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;

    fn point(partition: i32, offset: i64) -> CommitPoint {
        CommitPoint {
            partition,
            epoch: 1,
            offset,
        }
    }

    /// A committer whose commits each wait for a word on `gate` (the outcome to report) and
    /// are sent to `starts` as they start.
    struct Gated {
        handoff: Arc<Handoff>,
        committer: Committer,
        gate: mpsc::Sender<Option<bool>>,
        starts: mpsc::Receiver<Vec<CommitPoint>>,
    }

    fn gated() -> Gated {
        let handoff = Arc::new(Handoff::default());
        let (gate, opened) = mpsc::channel::<Option<bool>>();
        let (started, starts) = mpsc::channel();
        let committer = spawn("test-commit".to_owned(), handoff.clone(), move |points| {
            started.send(points).unwrap();
            opened.recv().unwrap()
        });
        Gated {
            handoff,
            committer,
            gate,
            starts,
        }
    }

    const WAIT: Duration = Duration::from_secs(10);

    fn request(handoff: &Handoff, points: Vec<CommitPoint>) {
        let mut slot = handoff.lock();
        handoff.request(&mut slot, points);
    }

    #[test]
    fn requests_made_while_a_commit_is_in_flight_merge_and_go_next_newest_per_partition() {
        let Gated {
            handoff,
            committer,
            gate,
            starts,
        } = gated();
        request(&handoff, vec![point(0, 10)]);
        assert_eq!(starts.recv_timeout(WAIT).unwrap(), vec![point(0, 10)]);
        // In flight: the next ones wait, merged; the caller never waits.
        request(&handoff, vec![point(0, 20), point(1, 5)]);
        request(&handoff, vec![point(0, 30)]);
        assert!(starts.recv_timeout(Duration::from_millis(50)).is_err());
        gate.send(Some(true)).unwrap();
        assert_eq!(
            starts.recv_timeout(WAIT).unwrap(),
            vec![point(0, 30), point(1, 5)],
            "one commit for both, with the newest offset of partition 0"
        );
        gate.send(Some(true)).unwrap();
        drop(handoff.idle());
        assert_eq!(handoff.lock().outcome(), Some(true));
        assert_eq!(handoff.lock().outcome(), None, "reported once");
        committer.stop();
    }

    #[test]
    fn idle_waits_for_the_commit_in_flight_and_holds_the_next_back() {
        let Gated {
            handoff,
            committer,
            gate,
            starts,
        } = gated();
        request(&handoff, vec![point(0, 10)]);
        starts.recv_timeout(WAIT).unwrap();
        request(&handoff, vec![point(0, 20), point(1, 5)]);
        let waiter = {
            let handoff = handoff.clone();
            std::thread::spawn(move || {
                // As a revoke of partition 0 does.
                let mut slot = handoff.idle();
                slot.forget(&[0]);
                std::thread::sleep(Duration::from_millis(100));
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            !waiter.is_finished(),
            "returned while a commit was in flight"
        );
        gate.send(Some(true)).unwrap();
        waiter.join().unwrap();
        assert_eq!(
            starts.recv_timeout(WAIT).unwrap(),
            vec![point(1, 5)],
            "the revoked partition is left out of the next commit"
        );
        gate.send(Some(true)).unwrap();
        committer.stop();
    }

    #[test]
    fn after_a_failed_commit_what_waited_is_dropped_and_the_failure_is_reported() {
        let Gated {
            handoff,
            committer,
            gate,
            starts,
        } = gated();
        request(&handoff, vec![point(0, 10)]);
        starts.recv_timeout(WAIT).unwrap();
        request(&handoff, vec![point(0, 20)]);
        gate.send(Some(false)).unwrap();
        let mut slot = handoff.idle();
        assert_eq!(slot.outcome(), Some(false));
        assert!(
            slot.waiting.is_none(),
            "the broker is away: do not hammer it"
        );
        drop(slot);
        committer.stop();
        assert!(starts.try_recv().is_err());
    }

    #[test]
    fn stop_waits_for_the_commit_in_flight_and_drops_what_waits() {
        let Gated {
            handoff,
            committer,
            gate,
            starts,
        } = gated();
        request(&handoff, vec![point(0, 10)]);
        starts.recv_timeout(WAIT).unwrap();
        request(&handoff, vec![point(0, 20)]);
        let stopping = std::thread::spawn(move || committer.stop());
        std::thread::sleep(Duration::from_millis(50));
        assert!(!stopping.is_finished(), "a commit is in flight");
        // Nothing of it was left to commit (its partition was revoked meanwhile).
        gate.send(None).unwrap();
        stopping.join().unwrap();
        assert_eq!(handoff.lock().outcome(), None);
        assert!(
            starts.try_recv().is_err(),
            "what waited at the close is the close's to commit"
        );
    }

    #[test]
    fn a_committer_dropped_without_stop_still_lets_go_of_what_it_commits_with() {
        // As when the consumer thread panicked: the committer's clone of the consumer must go,
        // or the consumer would never leave its group.
        let handoff = Arc::new(Handoff::default());
        let consumer = Arc::new(());
        let committer = {
            let consumer = consumer.clone();
            spawn("test-commit".to_owned(), handoff, move |_| {
                let _ = &consumer;
                Some(true)
            })
        };
        drop(committer);
        let started = std::time::Instant::now();
        while Arc::strong_count(&consumer) > 1 {
            assert!(started.elapsed() < WAIT, "the committer thread still runs");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}
