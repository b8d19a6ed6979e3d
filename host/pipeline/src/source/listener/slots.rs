//! The open connections of a listener, at most `max_connection_count` of them holding a place,
//! and making room among them for a new one when they are that many.
//!
//! Each open connection's place is a semaphore permit kept in its entry in [`Slots`]; its
//! [`Open`] guard removes the entry (and gives the permit back) when the connection's task
//! ends. Below the cap this is all that happens. At the cap, the accept loop asks
//! [`Slots::shed`] for the open connection that most readily gives its place up (see [`Shed`]):
//! first the one that has been sending its request head the longest (a slowloris, or a TLS
//! handshake that drags), else the one idle the longest between requests. Its permit is taken
//! from it there and then and handed to the new connection, which is served at once: the new
//! one never waits for the shed one to notice, nor queues behind other new connections. A
//! connection shed while sending its head is closed from the accept loop (its task aborted:
//! nothing of it was accepted; a head completed in the instant between the choice and the abort
//! is reset unanswered, and its client, never told it was accepted, sends it again); one shed
//! while idle closes as on shutdown, at once, or once a
//! request that began meanwhile is answered (`connection`). A connection serving a request is
//! never chosen; when every open connection serves one, the new one is refused (`refuse`).
//!
//! Shedding starts at the cap itself, not at a high-water mark below it (Envoy's overload
//! manager starts scaling its timeouts down at a configured pressure): below the cap, every
//! connection keeps the timeouts its keys say. The cap bounds the connections holding a place
//! (and the open-connections gauge counts those); beyond it, only shed connections still
//! closing are open: an aborted one for the moment its task takes to drop, an idle one that
//! began a request in the microseconds between being chosen and shed for that request's
//! `request_timeout` at most.
//!
//! Cost: choosing scans the open connections once (at most `max_connection_count`, each a lock
//! held for a few instructions), and only for a connection that arrives at the cap.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::OwnedSemaphorePermit;
use tokio::task::AbortHandle;

use super::activity::{Activity, Shed};

/// How many times [`Slots::shed`] chooses again when the chosen connection began a request
/// between being chosen and being shed (a race of microseconds: more than twice in a row is
/// rarer still, and then the new connection is refused).
const SHED_ATTEMPTS: usize = 3;

/// The open connections, by id, with what each is doing.
#[derive(Default)]
pub(super) struct Slots {
    /// A std mutex: held for an insert, a removal or one scan, never across an `.await`.
    entries: Mutex<Entries>,
}

/// The open connections, each under the id its [`Open`] removes it by.
#[derive(Default)]
struct Entries {
    /// The next connection's id.
    next: u64,
    open: HashMap<u64, Entry>,
}

/// One open connection.
struct Entry {
    /// What it is doing.
    activity: Arc<Activity>,
    /// Its place under `max_connection_count`; `None` once shed (handed to the connection
    /// that took its place).
    permit: Option<OwnedSemaphorePermit>,
    /// Its task, to close it from the accept loop when it is shed in its request head.
    task: Option<AbortHandle>,
    /// `sluice_httpConnections{pipeline}`: counts it while it holds a place.
    gauge: metrics::Gauge,
}

impl Slots {
    fn entries(&self) -> MutexGuard<'_, Entries> {
        // A panic while holding the lock cannot leave the map half-written.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sheds the open connection that most readily gives its place up: the one in the lowest
    /// [`Shed`] class, and the longest in it; its place (permit) goes to the caller's new
    /// connection. One shed in its request head is closed at once. `None` when every open
    /// connection serves a request or is already closing.
    pub(super) fn shed(&self) -> Option<(Shed, OwnedSemaphorePermit)> {
        let mut entries = self.entries();
        for _ in 0..SHED_ATTEMPTS {
            let ((class, _), id) = entries
                .open
                .iter()
                .filter(|(_, entry)| entry.permit.is_some())
                .filter_map(|(id, entry)| Some((entry.activity.sheddable()?, *id)))
                .min_by_key(|(rank, _)| *rank)?;
            let entry = entries.open.get_mut(&id).expect("chosen from the map");
            if entry.activity.shed() {
                let permit = entry.permit.take().expect("chosen with its permit");
                entry.gauge.decrement(1.0);
                if class == Shed::Head
                    && let Some(task) = &entry.task
                {
                    task.abort();
                }
                return Some((class, permit));
            }
        }
        None
    }

    /// `task` serves connection `id` (its [`Open::id`]), so shedding can close it.
    pub(super) fn serving(&self, id: u64, task: AbortHandle) {
        if let Some(entry) = self.entries().open.get_mut(&id) {
            entry.task = Some(task);
        }
    }

    /// How many connections are open (for tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries().open.len()
    }
}

/// An open connection's entry in [`Slots`], with its place under `max_connection_count` and
/// its count in the open-connections gauge, all given back on drop.
pub(super) struct Open {
    /// Its entry in `slots`.
    id: u64,
    slots: Arc<Slots>,
}

impl Open {
    /// Takes a place for the connection that `activity` describes, with the `permit` it holds.
    pub(super) fn new(
        permit: OwnedSemaphorePermit,
        slots: Arc<Slots>,
        activity: Arc<Activity>,
        gauge: metrics::Gauge,
    ) -> Self {
        gauge.increment(1.0);
        let id = {
            let mut entries = slots.entries();
            let id = entries.next;
            entries.next += 1;
            let entry = Entry {
                activity,
                permit: Some(permit),
                task: None,
                gauge,
            };
            entries.open.insert(id, entry);
            id
        };
        Self { id, slots }
    }

    /// Its entry's id, for [`Slots::serving`].
    pub(super) fn id(&self) -> u64 {
        self.id
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        // The permit goes after the entry: a new connection never finds it free while the old
        // one could still be chosen.
        let entry = self.slots.entries().open.remove(&self.id);
        if let Some(Entry {
            permit: Some(_),
            gauge,
            ..
        }) = entry
        {
            gauge.decrement(1.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use tokio::sync::Semaphore;

    use super::{Open, Shed, Slots};
    use crate::source::listener::activity::Activity;

    /// A connection opened now, in its place; a moment passes so the next one is younger.
    fn open(slots: &Arc<Slots>, permits: &Arc<Semaphore>) -> (Arc<Activity>, Open) {
        let activity = Arc::new(Activity::new(false));
        let permit = permits.clone().try_acquire_owned().unwrap();
        let gauge = metrics::Gauge::noop();
        let open = Open::new(permit, slots.clone(), activity.clone(), gauge);
        std::thread::sleep(Duration::from_millis(2));
        (activity, open)
    }

    #[test]
    fn the_oldest_head_goes_first_then_the_oldest_idle_and_never_a_request() {
        let slots = Arc::new(Slots::default());
        let permits = Arc::new(Semaphore::new(5));
        let (idle_old, _a) = open(&slots, &permits);
        idle_old.request(false);
        idle_old.answered();
        let (serving, _b) = open(&slots, &permits);
        serving.request(true);
        let (head_old, _c) = open(&slots, &permits);
        let (idle_young, _d) = open(&slots, &permits);
        idle_young.request(false);
        idle_young.answered();
        let (head_young, _e) = open(&slots, &permits);

        let class = |shed: Option<(Shed, _)>| shed.map(|(class, _)| class);
        // Each shed connection's place is handed over: none comes back to the semaphore.
        let mut places = Vec::new();
        let mut shed = |expected| {
            let (class, place) = slots.shed().expect("one to shed");
            assert_eq!(class, expected);
            places.push(place);
        };
        shed(Shed::Head);
        assert!(head_old.is_shed() && !head_young.is_shed());
        shed(Shed::Head);
        assert!(head_young.is_shed());
        shed(Shed::Idle);
        assert!(idle_old.is_shed() && !idle_young.is_shed());
        shed(Shed::Idle);
        assert!(idle_young.is_shed());
        assert_eq!(
            class(slots.shed()),
            None,
            "only a connection serving a request is left"
        );
        assert!(!serving.is_shed());
        assert_eq!(permits.available_permits(), 0);

        // Once answered, it may go too.
        serving.answered();
        assert_eq!(class(slots.shed()), Some(Shed::Idle));
    }

    #[tokio::test]
    async fn a_connection_shed_in_its_request_head_is_closed_from_the_accept_loop() {
        let slots = Arc::new(Slots::default());
        let permits = Arc::new(Semaphore::new(2));
        let (head, open_head) = open(&slots, &permits);
        let (idle, open_idle) = open(&slots, &permits);
        assert_eq!((open_head.id(), open_idle.id()), (0, 1));
        idle.request(false);
        idle.answered();
        // Tasks that would serve the connections until told: only shedding ends one early.
        let head_task = tokio::spawn(async move {
            let _open = open_head;
            std::future::pending::<()>().await
        });
        let idle_task = tokio::spawn(async move {
            let _open = open_idle;
            std::future::pending::<()>().await
        });
        slots.serving(0, head_task.abort_handle());
        slots.serving(1, idle_task.abort_handle());
        let (_, place) = slots.shed().expect("the head");
        assert!(head.is_shed());
        assert!(
            head_task.await.unwrap_err().is_cancelled(),
            "closed at once"
        );
        assert_eq!(slots.len(), 1, "its entry went with its task");
        // An idle one is told, not aborted: it closes as on shutdown.
        let (class, _) = slots.shed().expect("the idle one");
        assert_eq!(class, Shed::Idle);
        assert!(idle.is_shed() && !idle_task.is_finished());
        idle_task.abort();
        drop(place);
    }

    #[test]
    fn a_closed_connection_gives_its_place_back() {
        let slots = Arc::new(Slots::default());
        let permits = Arc::new(Semaphore::new(1));
        let (_activity, open) = open(&slots, &permits);
        assert_eq!((slots.len(), permits.available_permits()), (1, 0));
        drop(open);
        assert_eq!((slots.len(), permits.available_permits()), (0, 1));
        assert!(slots.shed().is_none());
    }
}
