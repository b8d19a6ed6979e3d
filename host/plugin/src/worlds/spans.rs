//! What the batch worlds of contract 0.2 (deserializer, processor) share: a batch staged once
//! into one buffer with an entry per record pointing into it ([`Staged`]), the whole batch or a
//! contiguous part of it as one call sends it ([`view`], rebasing a part onto its own bytes when
//! the batch policy isolates a fault), and a reply's events checked and handed out per entry
//! ([`Reply`]).

use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;

use crate::events::{CallBuffers, Events, Side};

/// One entry of a staged batch as the world's bindings describe it: spans into the batch's
/// buffer (a payload and a key, an event's body) plus plain fields.
pub(crate) trait Entry: Clone + Send + Sync {
    /// The `(offset, len)` of every span the entry holds.
    fn spans(&self) -> impl Iterator<Item = (u32, u32)>;
    /// The entry with every span moved `by` bytes towards the start.
    fn rebased(&self, by: u32) -> Self;
}

/// Copies bytes into a batch's buffer, giving back where each went.
#[derive(Default)]
pub(crate) struct Writer {
    data: Vec<u8>,
}

impl Writer {
    pub(crate) fn with_capacity(size: usize) -> Self {
        Self {
            data: Vec::with_capacity(size),
        }
    }

    /// Appends `bytes`; their `(offset, len)` in the buffer.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> (u32, u32) {
        let at = (self.data.len() as u32, bytes.len() as u32);
        self.data.extend_from_slice(bytes);
        at
    }
}

/// A batch as the plugin gets it: every record's bytes in one buffer, one entry per record,
/// and what the world sends once per call (`shared`: a deserializer's content types).
pub(crate) struct Staged<E, S = ()> {
    pub(crate) data: Arc<Vec<u8>>,
    pub(crate) entries: Vec<E>,
    pub(crate) shared: S,
    origins: Origins,
}

/// Where each record of a batch came from (for logs), in one string: two allocations a batch,
/// not one a record.
#[derive(Default)]
pub(crate) struct Origins {
    text: String,
    /// Where each origin ends in `text`.
    ends: Vec<usize>,
}

impl Origins {
    fn get(&self, index: usize) -> &str {
        let start = index.checked_sub(1).map_or(0, |before| self.ends[before]);
        &self.text[start..self.ends[index]]
    }
}

impl<'a> FromIterator<&'a str> for Origins {
    fn from_iter<I: IntoIterator<Item = &'a str>>(origins: I) -> Self {
        let mut all = Origins::default();
        for origin in origins {
            all.text.push_str(origin);
            all.ends.push(all.text.len());
        }
        all
    }
}

impl<E: Entry, S: Send + Sync> Staged<E, S> {
    pub(crate) fn new(writer: Writer, entries: Vec<E>, shared: S, origins: Origins) -> Self {
        Self {
            data: Arc::new(writer.data),
            entries,
            shared,
            origins,
        }
    }

    /// The inputs of the batch policy: one per record, sharing this staging.
    pub(crate) fn inputs(self) -> Vec<Input<E, S>> {
        let staged = Arc::new(self);
        (0..staged.entries.len())
            .map(|index| Input {
                staged: staged.clone(),
                index,
            })
            .collect()
    }
}

/// One record of a staged batch.
pub(crate) struct Input<E, S = ()> {
    staged: Arc<Staged<E, S>>,
    index: usize,
}

impl<E, S> Input<E, S> {
    /// Where the record came from, for logs.
    pub(crate) fn origin(&self) -> &str {
        self.staged.origins.get(self.index)
    }
}

/// What one call sends: the buffer, the entries pointing into it, and the staging they come
/// from (for what the world sends once per call, `shared`).
pub(crate) struct View<'a, E: Entry, S> {
    pub(crate) data: Arc<Vec<u8>>,
    pub(crate) entries: Cow<'a, [E]>,
    pub(crate) staged: &'a Staged<E, S>,
}

/// What one call sends for `batch`: the whole staged batch, or a contiguous part of it when
/// isolating a fault. `None` for an empty batch.
pub(crate) fn view<E: Entry, S>(batch: &[Input<E, S>]) -> Option<View<'_, E, S>> {
    let first = batch.first()?;
    let staged = &*first.staged;
    if batch.len() == staged.entries.len() {
        return Some(View {
            data: staged.data.clone(),
            entries: Cow::Borrowed(&staged.entries),
            staged,
        });
    }
    let (data, entries) = part(staged, first.index..first.index + batch.len());
    Some(View {
        data,
        entries: Cow::Owned(entries),
        staged,
    })
}

/// Entries `range` of `staged` on their own: their bytes copied out, their spans rebased.
fn part<E: Entry, S>(staged: &Staged<E, S>, range: Range<usize>) -> (Arc<Vec<u8>>, Vec<E>) {
    let entries = &staged.entries[range];
    let spans = || entries.iter().flat_map(Entry::spans);
    let start = spans().map(|(offset, _)| offset).min().unwrap_or(0);
    let end = spans()
        .map(|(offset, len)| offset + len)
        .max()
        .unwrap_or(start);
    let entries = entries.iter().map(|e| e.rebased(start)).collect();
    (
        Arc::new(staged.data[start as usize..end as usize].to_vec()),
        entries,
    )
}

/// A reply's events, checked, handed out to its entries in order.
pub(crate) struct Reply {
    call: Arc<CallBuffers>,
    next: usize,
}

impl Reply {
    /// Checks a reply: `answers` entries (outcomes, verdicts: `what`) for `expected` records
    /// (`of`), exactly as many events as the answers `claimed`, every event inside its buffer.
    /// Anything else is a plugin fault, treated as a trap.
    #[expect(
        clippy::too_many_arguments,
        reason = "one reply's parts, named by the caller"
    )]
    pub(crate) fn check(
        input: Arc<Vec<u8>>,
        output: Vec<u8>,
        events: Vec<(Side, u32, u32)>,
        answers: usize,
        expected: usize,
        claimed: u64,
        what: &str,
        of: &str,
    ) -> Result<Self, String> {
        if answers != expected {
            return Err(format!(
                "the plugin returned {answers} {what} for {expected} {of}"
            ));
        }
        Ok(Self {
            call: CallBuffers::from_reply(input, output, events, claimed, what)?,
            next: 0,
        })
    }

    /// The next `n` events.
    pub(crate) fn take(&mut self, n: u32) -> Events {
        let range = self.next..self.next + n as usize;
        self.next = range.end;
        Events::spans(self.call.clone(), range)
    }
}

#[cfg(test)]
mod tests {
    use super::Origins;

    #[test]
    fn each_origin_is_read_back_from_the_one_string() {
        let origins: Origins = ["topic/0@7", "", "http:/log/ingest"].into_iter().collect();
        let read: Vec<&str> = (0..3).map(|i| origins.get(i)).collect();
        assert_eq!(read, ["topic/0@7", "", "http:/log/ingest"]);
    }
}
