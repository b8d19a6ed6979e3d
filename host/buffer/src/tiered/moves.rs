//! Moves between tiers, asked for by the policy's `tick` (about once a second): records are
//! taken from a tier that can hand them over (memory; never Kafka, whose records are its
//! consumer group's), written to the other tier, and acknowledged in the first only once the
//! second holds them. A crash mid-move can duplicate a record, never lose one. A move takes
//! only what its target has room for now (a policy asking for more moves the rest on later
//! ticks, if it asks again); a batch its target still does not take goes to the readers at
//! once, so records waiting to move are delivered from where they are and a move never holds
//! them back.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{Inner, Move, PolicyFault};
use crate::Batch;

/// How often the policy's `tick` is called.
pub(super) const TICK_EVERY: Duration = Duration::from_secs(1);

/// How long one move's write may wait for room in its target tier.
const MOVE_WRITE_TIMEOUT: Duration = Duration::from_secs(1);

/// The moves under way.
#[derive(Default)]
pub(super) struct Moves {
    /// One tick at a time; held for a whole tick, so readers can tell one is under way.
    running: tokio::sync::Mutex<()>,
    /// Batches taken from a tier that their target did not take, for the readers to deliver.
    returned: Mutex<VecDeque<Batch>>,
    /// Wakes a reader waiting for its tiers when a batch is returned.
    pub(super) returned_ready: tokio::sync::Notify,
}

impl Moves {
    /// Gives a batch its target did not take to the readers.
    fn give_back(&self, batch: Batch) {
        self.returned
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(batch);
        self.returned_ready.notify_one();
    }

    /// A batch a move gave back, for a reader.
    pub(super) fn take_returned(&self) -> Option<Batch> {
        self.returned
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop_front()
    }

    /// Whether a tick is moving records now (a reader waits for it before saying the buffer is
    /// drained).
    pub(super) fn under_way(&self) -> bool {
        self.running.try_lock().is_err()
    }
}

impl Inner {
    /// One tick: ask the policy for moves and make what its targets have room for.
    pub(super) async fn tick(self: &Arc<Self>) {
        let _one = self.moves.running.lock().await;
        if self.closed.load(Ordering::SeqCst) {
            return;
        }
        let (answer, _) = self.call(|policy, cx| policy.tick(cx)).await;
        let moves = match answer {
            Ok(moves) => moves,
            Err(fault) => return self.fault("tick", &fault),
        };
        for m in moves {
            if let Err(fault) = self.check_move(&m) {
                self.fault("tick", &fault);
                continue;
            }
            let mut left = m.max_records.min(self.room(m.to));
            while left > 0 {
                let Some(batch) = self.tiers[m.from].take_now(left) else {
                    break;
                };
                left = left.saturating_sub(batch.records.len());
                if !self.move_batch(m.to, batch).await {
                    break;
                }
            }
        }
    }

    /// How many records tier `to` can take now: its capacity less what it holds (no limit for
    /// a tier without a capacity).
    fn room(&self, to: usize) -> usize {
        let target = self.tiers[to].tier_state();
        match target.capacity {
            Some(capacity) => {
                usize::try_from(capacity.saturating_sub(target.held)).unwrap_or(usize::MAX)
            }
            None => usize::MAX,
        }
    }

    /// A move must name two tiers that exist, and take from one that can hand records over.
    fn check_move(&self, m: &Move) -> Result<(), PolicyFault> {
        let n = self.tiers.len();
        if m.from >= n || m.to >= n {
            return Err(PolicyFault(format!(
                "the policy moved records from tier {} to tier {}; the buffer has {n} (0 to {})",
                m.from,
                m.to,
                n - 1
            )));
        }
        if m.from == m.to {
            return Err(PolicyFault(format!(
                "the policy moved records from tier {} to itself",
                m.from
            )));
        }
        let from = self.tiers[m.from].tier_state();
        if from.durable {
            return Err(PolicyFault(format!(
                "the policy moved records out of tier {} ({}): a durable tier's records are read by its consumers, never moved",
                m.from, from.name
            )));
        }
        Ok(())
    }

    /// Writes `batch`'s records to tier `to` and, once it holds them, acknowledges the batch
    /// where it came from. Otherwise gives the batch to the readers. Whether it moved.
    async fn move_batch(&self, to: usize, batch: Batch) -> bool {
        let n = batch.records.len();
        match self.writers[to]
            .write(batch.records.clone(), MOVE_WRITE_TIMEOUT)
            .await
        {
            Ok(()) => {
                self.stats.records_moved.add(n as u64);
                batch.ack.acknowledge();
                true
            }
            Err(e) => {
                tracing::warn!(
                    pipeline = %self.pipeline,
                    tier = to,
                    records = n,
                    error = %e,
                    "buffer policy's move not written; the records are delivered from where they were"
                );
                self.moves.give_back(batch);
                false
            }
        }
    }
}
