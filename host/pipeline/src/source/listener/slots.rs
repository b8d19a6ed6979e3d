//! The open connections of a listener, at most `max_connection_count` of them, and making room
//! among them for a new one when they are that many.
//!
//! Each open connection holds a semaphore permit and has an entry in [`Slots`]: its [`Open`]
//! guard holds both and gives them back when the connection's task ends. Below the cap this is
//! all that happens. At the cap, the accept loop asks [`Slots::shed`] for the open connection
//! that most readily gives its place up (see [`Shed`]): first the one that has been sending
//! its request head the longest (a slowloris, or a TLS handshake that drags), else the one idle
//! the longest between requests. That connection closes as on shutdown: at once, or once a
//! request that began meanwhile is answered (`connection`). The new connection waits for the
//! freed permit, and is served. A connection serving a request is never chosen; when every
//! open connection serves one, the new one is refused (`refuse`), as before.
//!
//! Shedding starts at the cap itself, not at a high-water mark below it (Envoy's overload
//! manager starts scaling its timeouts down at a configured pressure): below the cap, every
//! connection keeps the timeouts its keys say, and a connection shed without a request in
//! flight closes at once, so the new one waits for its place only as long as that takes.
//! The cap still bounds what is open: shed connections keep their permit until they close, and
//! the new connections waiting for one are at most as many as the shed connections still
//! closing.
//!
//! Cost: choosing scans the open connections once (at most `max_connection_count`, each a lock
//! held for a few instructions), and only for a connection that arrives at the cap.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::OwnedSemaphorePermit;

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
    /// What each open connection is doing.
    open: HashMap<u64, Arc<Activity>>,
}

impl Slots {
    fn entries(&self) -> MutexGuard<'_, Entries> {
        // A panic while holding the lock cannot leave the map half-written.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sheds the open connection that most readily gives its place up: the one in the lowest
    /// [`Shed`] class, and the longest in it. `None` when every open connection serves a
    /// request or is already closing.
    pub(super) fn shed(&self) -> Option<Shed> {
        let entries = self.entries();
        for _ in 0..SHED_ATTEMPTS {
            let ((class, _), chosen) = entries
                .open
                .values()
                .filter_map(|activity| Some((activity.sheddable()?, activity)))
                .min_by_key(|(rank, _)| *rank)?;
            if chosen.shed() {
                return Some(class);
            }
        }
        None
    }

    /// How many connections are open (for tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries().open.len()
    }
}

/// An open connection's place under `max_connection_count`: its permit, its entry in
/// [`Slots`], and its count in the open-connections gauge, all given back on drop.
pub(super) struct Open {
    /// Its entry in `slots`.
    id: u64,
    slots: Arc<Slots>,
    /// `sluice_httpConnections{pipeline}`.
    gauge: metrics::Gauge,
    /// Dropped after [`Drop::drop`] removed the entry: a new connection never finds the permit
    /// free while the old one could still be chosen.
    _permit: OwnedSemaphorePermit,
}

impl Open {
    /// Takes a place for the connection that `activity` describes, with the `permit` it holds.
    pub(super) fn new(
        permit: OwnedSemaphorePermit,
        slots: Arc<Slots>,
        activity: Arc<Activity>,
        gauge: metrics::Gauge,
    ) -> Self {
        let id = {
            let mut entries = slots.entries();
            let id = entries.next;
            entries.next += 1;
            entries.open.insert(id, activity);
            id
        };
        gauge.increment(1.0);
        Self {
            id,
            slots,
            gauge,
            _permit: permit,
        }
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.slots.entries().open.remove(&self.id);
        self.gauge.decrement(1.0);
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

        assert_eq!(slots.shed(), Some(Shed::Head));
        assert!(head_old.is_shed() && !head_young.is_shed());
        assert_eq!(slots.shed(), Some(Shed::Head));
        assert!(head_young.is_shed());
        assert_eq!(slots.shed(), Some(Shed::Idle));
        assert!(idle_old.is_shed() && !idle_young.is_shed());
        assert_eq!(slots.shed(), Some(Shed::Idle));
        assert!(idle_young.is_shed());
        assert_eq!(
            slots.shed(),
            None,
            "only a connection serving a request is left"
        );
        assert!(!serving.is_shed());

        // Once answered, it may go too.
        serving.answered();
        assert_eq!(slots.shed(), Some(Shed::Idle));
    }

    #[test]
    fn a_closed_connection_gives_its_place_back() {
        let slots = Arc::new(Slots::default());
        let permits = Arc::new(Semaphore::new(1));
        let (_activity, open) = open(&slots, &permits);
        assert_eq!((slots.len(), permits.available_permits()), (1, 0));
        drop(open);
        assert_eq!((slots.len(), permits.available_permits()), (0, 1));
        assert_eq!(slots.shed(), None);
    }
}
