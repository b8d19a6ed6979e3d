//! The events a plugin returned for one record, wherever they sit: one string each (contract
//! 0.1.0), or spans into the buffers of the call that made them (0.2: the batch's input bytes
//! and the reply's own), shared by every record of that call. Either way the pipeline reads
//! them as byte slices and never allocates per event.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

/// One record's events, in order: JSON object text, not yet checked by the host.
#[derive(Clone)]
pub struct Events(Repr);

#[derive(Clone)]
enum Repr {
    Strings(Vec<String>),
    Spans {
        call: Arc<CallBuffers>,
        /// This record's entries of `call.events`.
        range: Range<usize>,
    },
}

/// What one 0.2 call left: the bytes it was given, the bytes it wrote, and where each event is.
#[derive(Debug, Default)]
pub(crate) struct CallBuffers {
    pub(crate) input: Arc<Vec<u8>>,
    pub(crate) output: Vec<u8>,
    /// Every event of the call: which buffer, and the byte range in it (checked in bounds).
    pub(crate) events: Vec<(Side, Range<usize>)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Input,
    Output,
}

impl CallBuffers {
    /// A 0.2 reply's buffers, after checking what every world's reply must hold: exactly the
    /// `claimed` events its `what` (outcomes, verdicts) announce, each `(buffer, offset, len)`
    /// inside its buffer. Anything else is a plugin fault, described for the log.
    pub(crate) fn from_reply(
        input: Arc<Vec<u8>>,
        output: Vec<u8>,
        events: Vec<(Side, u32, u32)>,
        claimed: u64,
        what: &str,
    ) -> Result<Arc<Self>, String> {
        if claimed != events.len() as u64 {
            return Err(format!(
                "the plugin's {what} claim {claimed} events but it returned {}",
                events.len()
            ));
        }
        let events = events
            .into_iter()
            .enumerate()
            .map(|(i, (side, offset, len))| {
                let size = match side {
                    Side::Input => input.len(),
                    Side::Output => output.len(),
                };
                let (start, end) = (offset as usize, offset as usize + len as usize);
                if end > size {
                    return Err(format!(
                        "event {i} points at bytes {start}..{end} of a {size}-byte buffer"
                    ));
                }
                Ok((side, start..end))
            })
            .collect::<Result<_, String>>()?;
        Ok(Arc::new(Self {
            input,
            output,
            events,
        }))
    }

    fn event(&self, i: usize) -> &[u8] {
        let (side, range) = &self.events[i];
        match side {
            Side::Input => &self.input[range.clone()],
            Side::Output => &self.output[range.clone()],
        }
    }
}

impl Events {
    /// Entries `range` of `call.events` (in bounds: the adapter checked).
    pub(crate) fn spans(call: Arc<CallBuffers>, range: Range<usize>) -> Self {
        Self(Repr::Spans { call, range })
    }

    /// How many events.
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Strings(s) => s.len(),
            Repr::Spans { range, .. } => range.len(),
        }
    }

    /// Whether the record held no events.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The events' bytes, in order.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> {
        (0..self.len()).map(move |i| match &self.0 {
            Repr::Strings(s) => s[i].as_bytes(),
            Repr::Spans { call, range } => call.event(range.start + i),
        })
    }
}

impl From<Vec<String>> for Events {
    fn from(strings: Vec<String>) -> Self {
        Self(Repr::Strings(strings))
    }
}

impl PartialEq for Events {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for Events {}

impl fmt::Debug for Events {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.iter().map(String::from_utf8_lossy))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_read_from_the_buffer_they_name_and_equal_the_same_strings() {
        let call = Arc::new(CallBuffers {
            input: Arc::new(br#"[{"a":1},{"b":2}]"#.to_vec()),
            output: br#"{"c":3}"#.to_vec(),
            events: vec![
                (Side::Input, 1..8),
                (Side::Output, 0..7),
                (Side::Input, 9..16),
            ],
        });
        let first = Events::spans(call.clone(), 0..2);
        let second = Events::spans(call, 2..3);
        assert_eq!(
            first,
            Events::from(vec![r#"{"a":1}"#.to_owned(), r#"{"c":3}"#.to_owned()])
        );
        assert_eq!(second.iter().collect::<Vec<_>>(), vec![br#"{"b":2}"#]);
        assert_ne!(first, second);
        assert_eq!(format!("{second:?}"), r#"["{\"b\":2}"]"#);
    }
}
