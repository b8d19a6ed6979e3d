//! The key-value state a buffer policy keeps, stored by the host so that it outlives the
//! policy's instances (traps, recycling, hot reload), with a TTL per entry and a cap on entries.
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

/// The committed state of one buffer.
#[derive(Debug)]
pub struct State {
    entries: Mutex<HashMap<Vec<u8>, Entry>>,
    max_entries: usize,
}

/// Why a change to the state was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the buffer policy's state is full ({0} entries, none expired)")]
pub struct StateFull(pub usize);

impl State {
    /// An empty state that holds at most `max_entries` live entries.
    pub fn new(max_entries: usize) -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
            max_entries,
        }
    }

    /// Live entries now.
    pub fn len(&self, now_ms: u64) -> usize {
        let entries = self.entries.lock().expect("state lock");
        entries.values().filter(|e| e.live(now_ms)).count()
    }

    /// Whether no entry is live.
    pub fn is_empty(&self, now_ms: u64) -> bool {
        self.len(now_ms) == 0
    }

    fn get(&self, key: &[u8], now_ms: u64) -> Option<Vec<u8>> {
        let entries = self.entries.lock().expect("state lock");
        entries
            .get(key)
            .filter(|e| e.live(now_ms))
            .map(|e| e.value.clone())
    }

    /// Applies the changes of a successful write. Expired entries are purged first when the
    /// cap is reached; past the cap, the changes are refused whole.
    pub fn apply(&self, overlay: Overlay, now_ms: u64) -> Result<(), StateFull> {
        let mut entries = self.entries.lock().expect("state lock");
        let added = overlay
            .changes
            .iter()
            .filter(|(k, v)| v.is_some() && !entries.contains_key(*k))
            .count();
        if entries.len() + added > self.max_entries {
            entries.retain(|_, e| e.live(now_ms));
            if entries.len() + added > self.max_entries {
                return Err(StateFull(self.max_entries));
            }
        }
        for (key, change) in overlay.changes {
            match change {
                Some(entry) => entries.insert(key, entry),
                None => entries.remove(&key),
            };
        }
        Ok(())
    }
}

/// The changes one call made, not yet applied: `None` deletes.
#[derive(Debug, Default)]
pub struct Overlay {
    changes: HashMap<Vec<u8>, Option<Entry>>,
}

impl Overlay {
    /// Whether the call changed nothing.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
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

    pub fn set(&mut self, key: Vec<u8>, value: Vec<u8>, ttl_ms: Option<u64>) {
        let expires_at_ms = ttl_ms.map(|ttl| self.now_ms.saturating_add(ttl));
        self.overlay.changes.insert(
            key,
            Some(Entry {
                value,
                expires_at_ms,
            }),
        );
    }

    pub fn delete(&mut self, key: Vec<u8>) {
        self.overlay.changes.insert(key, None);
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
        assert_eq!(state.apply(overlay, 20), Err(StateFull(2)));
        assert_eq!(state.len(20), 2);
    }
}
