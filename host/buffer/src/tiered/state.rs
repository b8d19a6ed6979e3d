//! The key-value state a buffer policy keeps, stored by the host so that it outlives the
//! policy's instances (traps, recycling, hot reload), with a TTL per entry, a cap on entries
//! and a cap on the bytes kept (keys and values; an entry counts until it is purged, expired or
//! not).
//!
//! A call's `state-set` that would take the state past its bytes cap is not stored: the call's
//! overlay notes it ([`Overlay::over_limit`]), and the buffer treats the call as a plugin fault
//! (the write gets 503, none of its changes kept). So neither the state nor one call's changes
//! ever hold more than the cap.
//!
//! Changes made during one write go into an [`Overlay`] the policy reads through ([`View`]);
//! the buffer applies it only when the write succeeded, so a retried write is judged as if the
//! failed one never happened.

use std::collections::HashMap;
use std::sync::Mutex;

/// One stored value and when it expires (ms since the Unix epoch; `None`: never).
#[derive(Debug, Clone)]
struct Entry {
    value: Vec<u8>,
    expires_at_ms: Option<u64>,
}

impl Entry {
    fn live(&self, now_ms: u64) -> bool {
        self.expires_at_ms.is_none_or(|at| now_ms < at)
    }
}

/// The bytes an entry keeps: its key and its value.
fn size(key: &[u8], entry: &Entry) -> u64 {
    (key.len() + entry.value.len()) as u64
}

/// The committed state of one buffer.
#[derive(Debug)]
pub struct State {
    stored: Mutex<Stored>,
    max_entries: usize,
    max_bytes: u64,
}

/// The entries, and the bytes they keep.
#[derive(Debug, Default)]
struct Stored {
    entries: HashMap<Vec<u8>, Entry>,
    bytes: u64,
}

impl Stored {
    /// Drops the expired entries.
    fn purge(&mut self, now_ms: u64) {
        let mut freed = 0;
        self.entries.retain(|key, e| {
            let live = e.live(now_ms);
            if !live {
                freed += size(key, e);
            }
            live
        });
        self.bytes -= freed;
    }
}

/// Why a change to the state was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateFull {
    #[error("the buffer policy's state is full ({0} entries, none expired)")]
    Entries(usize),
    #[error(
        "the buffer policy's state would keep more than its `max_state_size` of {0} bytes (keys and values, none expired)"
    )]
    Bytes(u64),
}

impl State {
    /// An empty state that holds at most `max_entries` entries, of any size (see
    /// [`State::with_max_bytes`]).
    pub fn new(max_entries: usize) -> Self {
        Self {
            stored: Mutex::new(Stored::default()),
            max_entries,
            max_bytes: u64::MAX,
        }
    }

    /// The same state, keeping at most `max_bytes` of keys and values.
    pub fn with_max_bytes(mut self, max_bytes: u64) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// Live entries now.
    pub fn len(&self, now_ms: u64) -> usize {
        let stored = self.stored.lock().expect("state lock");
        stored.entries.values().filter(|e| e.live(now_ms)).count()
    }

    /// The bytes kept now (keys and values; expired entries not yet purged included).
    pub fn bytes(&self) -> u64 {
        self.stored.lock().expect("state lock").bytes
    }

    /// Whether `more` bytes fit beside what is kept, once expired entries are purged.
    fn fits(&self, more: u64, now_ms: u64) -> bool {
        let mut stored = self.stored.lock().expect("state lock");
        if stored.bytes.saturating_add(more) <= self.max_bytes {
            return true;
        }
        stored.purge(now_ms);
        stored.bytes.saturating_add(more) <= self.max_bytes
    }

    /// Whether no entry is live.
    pub fn is_empty(&self, now_ms: u64) -> bool {
        self.len(now_ms) == 0
    }

    fn get(&self, key: &[u8], now_ms: u64) -> Option<Vec<u8>> {
        let stored = self.stored.lock().expect("state lock");
        stored
            .entries
            .get(key)
            .filter(|e| e.live(now_ms))
            .map(|e| e.value.clone())
    }

    /// Applies the changes of a successful write. Expired entries are purged first when a
    /// cap is reached; past a cap, the changes are refused whole.
    pub fn apply(&self, overlay: Overlay, now_ms: u64) -> Result<(), StateFull> {
        let mut stored = self.stored.lock().expect("state lock");
        let fits = |stored: &Stored| -> Result<(), StateFull> {
            let (mut added, mut bytes) = (0, stored.bytes);
            for (key, change) in &overlay.changes {
                let old = stored.entries.get(key);
                if change.is_some() && old.is_none() {
                    added += 1;
                }
                bytes -= old.map_or(0, |e| size(key, e));
                bytes += change.as_ref().map_or(0, |e| size(key, e));
            }
            if stored.entries.len() + added > self.max_entries {
                return Err(StateFull::Entries(self.max_entries));
            }
            if bytes > self.max_bytes {
                return Err(StateFull::Bytes(self.max_bytes));
            }
            Ok(())
        };
        if fits(&stored).is_err() {
            stored.purge(now_ms);
            fits(&stored)?;
        }
        for (key, change) in overlay.changes {
            let new = change.as_ref().map_or(0, |e| size(&key, e));
            let old = match change {
                Some(entry) => stored.entries.insert(key.clone(), entry),
                None => stored.entries.remove(&key),
            };
            stored.bytes = stored.bytes - old.map_or(0, |e| size(&key, &e)) + new;
        }
        Ok(())
    }
}

/// The changes one call made, not yet applied: `None` deletes.
#[derive(Debug, Default)]
pub struct Overlay {
    changes: HashMap<Vec<u8>, Option<Entry>>,
    /// The bytes its sets keep.
    bytes: u64,
    /// A set that did not fit in the state's bytes cap.
    over: Option<StateFull>,
}

impl Overlay {
    /// Whether the call changed nothing.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// Set when one of the call's `state-set`s would have taken the state past its bytes cap
    /// (that set was not stored): the call is a plugin fault.
    pub fn over_limit(&self) -> Option<&StateFull> {
        self.over.as_ref()
    }
}

/// The state as one call sees it: the committed entries under its own changes.
pub struct View<'a> {
    pub(crate) state: &'a State,
    pub(crate) overlay: &'a mut Overlay,
    pub(crate) now_ms: u64,
}

impl View<'_> {
    pub fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        match self.overlay.changes.get(key) {
            Some(Some(entry)) if entry.live(self.now_ms) => Some(entry.value.clone()),
            Some(_) => None,
            None => self.state.get(key, self.now_ms),
        }
    }

    /// Stores `value` under `key` for this call, unless the state could not keep it (counted
    /// as if added to what is kept, whatever it replaces): then nothing is stored and the
    /// overlay is marked over the limit.
    pub fn set(&mut self, key: Vec<u8>, value: Vec<u8>, ttl_ms: Option<u64>) {
        if self.overlay.over.is_some() {
            return;
        }
        let entry = Entry {
            value,
            expires_at_ms: ttl_ms.map(|ttl| self.now_ms.saturating_add(ttl)),
        };
        let more = size(&key, &entry);
        let earlier = match self.overlay.changes.get(&key) {
            Some(Some(earlier)) => size(&key, earlier),
            _ => 0,
        };
        if !self
            .state
            .fits(self.overlay.bytes - earlier + more, self.now_ms)
        {
            self.overlay.over = Some(StateFull::Bytes(self.state.max_bytes));
            return;
        }
        self.overlay.bytes += more;
        self.replace(key, Some(entry));
    }

    pub fn delete(&mut self, key: Vec<u8>) {
        self.replace(key, None);
    }

    /// Puts `change` in the overlay, freeing the bytes of an earlier set of the same key.
    fn replace(&mut self, key: Vec<u8>, change: Option<Entry>) {
        if let Some(Some(earlier)) = self.overlay.changes.get(&key) {
            self.overlay.bytes -= size(&key, earlier);
        }
        self.overlay.changes.insert(key, change);
    }

    /// For each key: true, and stored (empty value, `ttl_ms`), when it was not there.
    pub fn insert_new(&mut self, keys: Vec<Vec<u8>>, ttl_ms: u64) -> Vec<bool> {
        keys.into_iter()
            .map(|key| {
                let new = self.get(&key).is_none();
                if new {
                    self.set(key, Vec::new(), Some(ttl_ms));
                }
                new
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view<'a>(state: &'a State, overlay: &'a mut Overlay, now_ms: u64) -> View<'a> {
        View {
            state,
            overlay,
            now_ms,
        }
    }

    #[test]
    fn changes_count_only_once_applied() {
        let state = State::new(10);
        let mut overlay = Overlay::default();
        let mut v = view(&state, &mut overlay, 1_000);
        assert_eq!(
            v.insert_new(vec![b"a".to_vec(), b"a".to_vec()], 500),
            [true, false]
        );
        assert_eq!(v.get(b"a"), Some(vec![]));
        // A second call that does not see the first's overlay: the write it belongs to failed.
        let mut other = Overlay::default();
        assert_eq!(
            view(&state, &mut other, 1_000).insert_new(vec![b"a".to_vec()], 500),
            [true]
        );
        state.apply(overlay, 1_000).unwrap();
        let mut third = Overlay::default();
        assert_eq!(
            view(&state, &mut third, 1_499).insert_new(vec![b"a".to_vec()], 500),
            [false]
        );
        // Expired at 1,500: new again.
        assert_eq!(
            view(&state, &mut third, 1_500).insert_new(vec![b"a".to_vec()], 500),
            [true]
        );
    }

    #[test]
    fn delete_and_set_read_through_the_overlay() {
        let state = State::new(10);
        let mut overlay = Overlay::default();
        let mut v = view(&state, &mut overlay, 0);
        v.set(b"k".to_vec(), b"1".to_vec(), None);
        state.apply(overlay, 0).unwrap();
        let mut overlay = Overlay::default();
        let mut v = view(&state, &mut overlay, 0);
        assert_eq!(v.get(b"k"), Some(b"1".to_vec()));
        v.delete(b"k".to_vec());
        assert_eq!(v.get(b"k"), None);
        assert_eq!(state.get(b"k", 0), Some(b"1".to_vec()), "not applied yet");
        state.apply(overlay, 0).unwrap();
        assert_eq!(state.get(b"k", 0), None);
    }

    #[test]
    fn the_cap_purges_expired_entries_then_refuses() {
        let state = State::new(2);
        for (i, ttl) in [(0u8, Some(10)), (1, None)] {
            let mut overlay = Overlay::default();
            view(&state, &mut overlay, 0).set(vec![i], vec![], ttl);
            state.apply(overlay, 0).unwrap();
        }
        let mut overlay = Overlay::default();
        view(&state, &mut overlay, 20).set(vec![2], vec![], None);
        state.apply(overlay, 20).unwrap();
        assert_eq!(state.len(20), 2);
        let mut overlay = Overlay::default();
        view(&state, &mut overlay, 20).set(vec![3], vec![], None);
        assert_eq!(state.apply(overlay, 20), Err(StateFull::Entries(2)));
        assert_eq!(state.len(20), 2);
    }

    #[test]
    fn a_set_past_the_bytes_cap_is_not_stored_and_marks_the_call() {
        let state = State::new(100).with_max_bytes(10);
        let mut overlay = Overlay::default();
        let mut v = view(&state, &mut overlay, 0);
        v.set(b"k".to_vec(), vec![0; 4], Some(5)); // 5 bytes, expiring at 5
        v.set(b"k".to_vec(), vec![0; 5], Some(5)); // replaces the first: 6 bytes
        assert!(v.overlay.over_limit().is_none());
        state.apply(overlay, 0).unwrap();
        assert_eq!(state.bytes(), 6);
        let mut overlay = Overlay::default();
        let mut v = view(&state, &mut overlay, 1);
        v.set(b"a".to_vec(), vec![0; 4], None); // 6 + 5 > 10: the expiring entry counts
        assert_eq!(v.get(b"a"), None, "not stored");
        assert_eq!(overlay.over_limit(), Some(&StateFull::Bytes(10)));
        // Once the entry expired, it is purged to make room.
        let mut overlay = Overlay::default();
        view(&state, &mut overlay, 5).set(b"a".to_vec(), vec![0; 4], None);
        assert!(overlay.over_limit().is_none());
        state.apply(overlay, 5).unwrap();
        assert_eq!(state.bytes(), 5);
    }

    #[test]
    fn changes_that_pass_the_bytes_cap_together_are_refused_whole() {
        let state = State::new(100).with_max_bytes(10);
        let (mut first, mut second) = (Overlay::default(), Overlay::default());
        view(&state, &mut first, 0).set(b"a".to_vec(), vec![0; 5], None);
        view(&state, &mut second, 0).set(b"b".to_vec(), vec![0; 5], None);
        state.apply(first, 0).unwrap();
        assert_eq!(state.apply(second, 0), Err(StateFull::Bytes(10)));
        assert_eq!(state.bytes(), 6);
    }
}
