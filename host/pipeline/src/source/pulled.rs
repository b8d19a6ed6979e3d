//! The read side of a pipeline whose source reads its input itself (the `kafka` source's
//! consumers, the `s3` source's queue readers), in place of a buffer: [`Pulled`] puts an
//! in-memory buffer for `sluice dlq replay` beside the source's reader, and each worker reads
//! both ([`Either`]).

use std::sync::Arc;

use sluice_buffer::memory::MemoryBuffer;
use sluice_buffer::{Batch, Buffer, BufferReader, BufferWriter};

/// The read side of a source that reads its input itself: its readers, and an in-memory
/// buffer for the records `sluice dlq replay` writes (they cannot go back into topics other
/// producers own, or into objects).
pub(crate) struct Pulled {
    topics: Box<dyn Buffer>,
    replays: MemoryBuffer,
}

impl Pulled {
    /// `source`'s readers beside an in-memory buffer sized as pipeline `p`'s `buffer`.
    pub(crate) fn new(
        p: &sluice_config::Pipeline,
        source: Box<dyn Buffer>,
        buffer: &sluice_config::BoundedBlocking,
    ) -> Self {
        Self {
            topics: source,
            replays: MemoryBuffer::new(&p.name, buffer.buffer_size, buffer.batch_size, p.delay),
        }
    }
}

#[async_trait::async_trait]
impl Buffer for Pulled {
    fn writer(&self) -> Arc<dyn BufferWriter> {
        self.replays.writer()
    }

    fn reader(&self) -> Box<dyn BufferReader> {
        Box::new(Either {
            topics: Some(self.topics.reader()),
            replays: Some(self.replays.reader()),
        })
    }

    fn close(&self) {
        self.topics.close();
        self.replays.close();
    }

    async fn join(&self) {
        self.topics.join().await;
        self.replays.join().await;
    }

    fn drain_timeout(&self) -> Option<std::time::Duration> {
        self.topics.drain_timeout()
    }

    fn update_gauges(&self) {
        self.topics.update_gauges();
        self.replays.update_gauges();
    }

    fn log_summary(&self) {
        self.topics.log_summary();
    }

    fn tier_state(&self) -> sluice_buffer::TierState {
        self.topics.tier_state()
    }
}

/// A worker's reader of both: the next batch of either, until both are closed and empty.
struct Either {
    topics: Option<Box<dyn BufferReader>>,
    replays: Option<Box<dyn BufferReader>>,
}

#[async_trait::async_trait]
impl BufferReader for Either {
    async fn read(&mut self) -> Option<Batch> {
        loop {
            // Both reads are cancel safe: the one that loses the race has taken nothing. Not
            // biased: steady topic traffic must not starve a replay.
            let (topics, replays) = match (&mut self.topics, &mut self.replays) {
                (Some(t), Some(r)) => (t, r),
                (Some(t), None) => return t.read().await,
                (None, Some(r)) => return r.read().await,
                (None, None) => return None,
            };
            tokio::select! {
                batch = topics.read() => match batch {
                    Some(b) => return Some(b),
                    None => self.topics = None,
                },
                batch = replays.read() => match batch {
                    Some(b) => return Some(b),
                    None => self.replays = None,
                },
            }
        }
    }
}
