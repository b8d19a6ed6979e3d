//! What a buffer policy is to the tiered buffer: the [`Policy`] trait (implemented by the Wasm
//! adapter of the `buffer-plugin` world, and by in-process fakes in tests), what it sees of the
//! records and the tiers, and what it may answer.

use std::sync::Arc;
use std::time::Duration;

use super::state::{Overlay, State, View};
use crate::Record;

/// What a policy sees of one tier (WIT `tier-state`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TierState {
    /// `kafka` or `bounded_blocking`.
    pub name: String,
    /// Whether what it holds survives sluice crashing.
    pub durable: bool,
    /// Whether it takes writes now.
    pub available: bool,
    /// Records written and not yet acknowledged.
    pub held: u64,
    /// The most records it holds, if it has a limit.
    pub capacity: Option<u64>,
    /// Records written and not yet read.
    pub lag: u64,
}

/// One written record as a policy sees it (WIT `incoming`): metadata, never the bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incoming {
    pub size: u32,
    /// XXH3-64 (seed 0) of the payload: the same bytes, the same hash, on every host.
    pub payload_hash: u64,
    /// The request headers the policy asked for, as sent.
    pub headers: Vec<(String, String)>,
    pub origin: String,
    pub content_type: Option<String>,
    pub received_at_ms: u64,
}

impl Incoming {
    pub fn of(record: &Record) -> Self {
        Self {
            size: u32::try_from(record.payload.len()).unwrap_or(u32::MAX),
            payload_hash: xxhash_rust::xxh3::xxh3_64(&record.payload),
            headers: record.headers.clone(),
            origin: record.origin.clone(),
            content_type: record.content_type.clone(),
            received_at_ms: record.received_at_ms,
        }
    }
}

/// Where one record goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// Into tier `tier` (an index of the tiers), with this key if given (Kafka: records with one
    /// key stay in order).
    Tier { tier: usize, key: Option<Vec<u8>> },
    /// Not kept, on purpose: counted and dead-lettered with the reason.
    Drop(String),
}

/// Why a whole write is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Over a rate or quota: 429 with `Retry-After`.
    Throttled {
        retry_after: Duration,
        reason: String,
    },
    /// Cannot take it now: 503 with `Retry-After`.
    Unavailable(String),
}

/// Records to move from one tier to another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Move {
    pub from: usize,
    pub to: usize,
    pub max_records: usize,
}

/// A policy failed: it trapped, ran past its deadline or memory cap, or broke the contract.
/// The write it was called for is refused; reads and ticks go on without it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PolicyFault(pub String);

/// What one policy call can reach: the tiers' state when the call began, the clock, and the
/// state (read through the changes this call made, which the buffer applies only when the
/// write succeeds).
pub struct Context {
    pub tiers: Vec<TierState>,
    pub now_ms: u64,
    pub(crate) state: Arc<State>,
    pub(crate) overlay: Overlay,
}

impl Context {
    /// A call's context over `state`, with no changes yet.
    pub fn new(tiers: Vec<TierState>, now_ms: u64, state: Arc<State>) -> Self {
        Self {
            tiers,
            now_ms,
            state,
            overlay: Overlay::default(),
        }
    }

    /// Moves this context out (into a Wasm store for the call), leaving one with no tiers and
    /// no changes over the same state.
    pub fn take(&mut self) -> Context {
        let empty = Context::new(Vec::new(), self.now_ms, self.state.clone());
        std::mem::replace(self, empty)
    }

    /// Keeps the state changes this call made, as the buffer does after a write every tier
    /// held (dropping a context undoes them).
    pub fn keep(self) -> Result<(), super::state::StateFull> {
        self.state.apply(self.overlay, self.now_ms)
    }

    /// The call's answer, or a fault if one of its `state-set`s did not fit in the state's
    /// bytes cap (the write is refused, none of its changes kept).
    pub(crate) fn checked<T>(&self, answer: Result<T, PolicyFault>) -> Result<T, PolicyFault> {
        match self.overlay.over_limit() {
            Some(full) => Err(PolicyFault(full.to_string())),
            None => answer,
        }
    }

    /// The state as this call sees it.
    pub fn state(&mut self) -> View<'_> {
        View {
            state: &self.state,
            overlay: &mut self.overlay,
            now_ms: self.now_ms,
        }
    }
}

/// A buffer's policy. Calls are made one at a time, off the async reactor.
pub trait Policy: Send {
    /// Its name, for logs (a component's: its plugin's).
    fn name(&self) -> &str {
        "policy"
    }

    /// The request headers it reads (case-insensitive names), asked once.
    fn wanted_headers(&self) -> Vec<String> {
        Vec::new()
    }

    /// One write, all or none: one placement per record, in order, or a refusal.
    fn on_write(
        &mut self,
        cx: &mut Context,
        records: &[Incoming],
    ) -> Result<Result<Vec<Placement>, Refusal>, PolicyFault>;

    /// The tier worker `worker` should read next, if the policy prefers one.
    fn next_read(&mut self, cx: &mut Context, worker: u32) -> Result<Option<usize>, PolicyFault>;

    /// Moves to make now; called about once a second.
    fn tick(&mut self, _cx: &mut Context) -> Result<Vec<Move>, PolicyFault> {
        Ok(Vec::new())
    }

    /// The buffer found a reply that breaks the contract: start afresh (the Wasm adapter
    /// replaces its instance). Nothing to do for a policy that cannot lie.
    fn recycle(&mut self) {}
}
