//! Calling a plugin: one instance per [`Decoder`], one call per batch, and the trap policy.
//!
//! A trap (panic, out-of-bounds access, deadline, memory cap, `exit`) or a reply of the wrong
//! length poisons the instance: it is dropped and a fresh one is built from the
//! pre-instantiated handle. The batch is retried once (unless the fault was the deadline: a
//! plugin that sleeps or spins on a record does so again, and a retry would only double the
//! stall); if it fails again it is split in halves, recursively, to find the records that fail
//! on their own. Those come back as [`Decoded::Trapped`]; every other record gets its real
//! outcome. Nothing here panics or returns an error because of what a plugin did.
//!
//! # The deadline
//! A guest can spend its time in two places, and each is bounded by the same `timeout`:
//! - **computing** in wasm: the epoch deadline traps it (the engine's epoch ticks every 10 ms);
//! - **waiting** in a host call (`sleep`, `wasi:io/poll` on any pollable, a blocking stream
//!   read or write): every call is async (the WASI p2 async linker, `instantiate_async`),
//!   and runs under `tokio::time::timeout`. WASI's waits are tokio futures, so when the
//!   timeout fires the call's future is dropped, which cancels the wait and unwinds the guest's
//!   fiber; the instance is then discarded like after any other fault.
//!
//! This covers every way to wait that WASI has, present and future, without auditing or
//! re-implementing each host function (the alternative), and without unlinking interfaces
//! that Rust, Python and JavaScript runtimes import on start. The calls stay synchronous for
//! callers: [`Decoder::decode`] drives them to completion on the calling thread with
//! `Handle::block_on` (the pipeline calls it on a blocking-pool thread), so guest code never
//! runs on the async reactor.

use std::sync::OnceLock;
use std::time::Duration;

use tokio::runtime::{Handle, Runtime};
use wasmtime::component::ResourceTable;
use wasmtime::{Store, StoreLimitsBuilder, Trap};
use wasmtime_wasi::WasiCtxBuilder;

use crate::bindings::exports::sluice::plugin::raw_byte_handler;
use crate::bindings::{OptionEntry, Outcome, RawRecord};
use crate::engine::{EPOCH_TICK, HostState, Limiter, Plugin};
use crate::error::PluginError;
use crate::guest_log::GuestLog;

/// The sandbox limits of one instance.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The most linear memory the instance may grow to, in bytes.
    pub max_memory: usize,
    /// The longest one call may run (wall clock).
    pub timeout: Duration,
    /// Replace the instance with a fresh one after this many batches (0: only after a fault).
    /// Guest heaps never shrink, so a long-lived Python or JavaScript instance keeps its high
    /// water mark; recycling returns it.
    pub recycle_after: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_memory: 64 << 20,
            timeout: Duration::from_secs(1),
            recycle_after: 10_000,
        }
    }
}

/// What became of one record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded {
    /// The events the plugin parsed (JSON object text, not yet checked by the host).
    Events(Vec<String>),
    /// The plugin said the record is malformed, and why.
    Malformed(String),
    /// The plugin trapped on this record alone (after a retry on a fresh instance).
    Trapped(String),
}

/// How many sub-batch calls one batch may spend isolating trapping records. A plugin that
/// traps on every record would otherwise cost about two calls (and deadlines) per record; past
/// the budget the remaining records are dead-lettered unisolated.
const ISOLATION_BUDGET: usize = 64;

/// Counters of one decoder, for metrics and tests.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct DecoderStats {
    /// Calls into the plugin (batches and sub-batches).
    pub calls: u64,
    /// Calls that trapped or replied with the wrong length.
    pub faults: u64,
    /// Of those, calls stopped at the deadline.
    pub deadline_hits: u64,
    /// Instances created, the first included.
    pub instances: u64,
    /// Of those, instances replaced after `recycle_after` batches.
    pub recycled: u64,
    /// The most linear memory any instance of this decoder has held, in bytes.
    pub peak_memory: u64,
}

struct Instance {
    store: Store<HostState>,
    handler: raw_byte_handler::Guest,
    /// Successful calls on this instance.
    calls: u64,
}

/// A plugin instance plus the policy around it. Not shared: each worker owns one.
pub struct Decoder {
    plugin: Plugin,
    options: Vec<OptionEntry>,
    limits: Limits,
    instance: Option<Instance>,
    stats: DecoderStats,
}

impl Decoder {
    /// Instantiates `plugin` and calls its `configure` export with `options`. Fails when the
    /// plugin refuses the options (or takes none and some were given), or cannot start.
    pub fn new(
        plugin: Plugin,
        options: Vec<(String, String)>,
        limits: Limits,
    ) -> Result<Self, PluginError> {
        if !options.is_empty() && plugin.inner.configure.is_none() {
            let keys = options
                .iter()
                .map(|(k, _)| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ");
            return Err(PluginError::NotConfigurable {
                name: plugin.name().to_owned(),
                keys,
            });
        }
        let options = options
            .into_iter()
            .map(|(key, value)| OptionEntry { key, value })
            .collect();
        let mut decoder = Self {
            plugin,
            options,
            limits,
            instance: None,
            stats: DecoderStats::default(),
        };
        let instance = decoder.instantiate()?;
        decoder.instance = Some(instance);
        Ok(decoder)
    }

    /// The plugin this decoder runs.
    pub fn plugin(&self) -> &Plugin {
        &self.plugin
    }

    /// Counters since this decoder was made.
    pub fn stats(&self) -> DecoderStats {
        self.stats
    }

    /// Deserializes `batch`: exactly one [`Decoded`] per record, in order.
    pub fn decode(&mut self, batch: &[RawRecord]) -> Vec<Decoded> {
        if batch.is_empty() {
            return Vec::new();
        }
        let first = match self.call(batch) {
            Ok(outcomes) => return convert(outcomes),
            Err(fault) => fault,
        };
        let second = if first.deadline {
            // Sleeping or spinning on a record is not transient: go straight to isolation.
            tracing::warn!(plugin = self.plugin.name(), records = batch.len(), reason = %first.reason, "plugin hit its deadline; isolating the records that cause it");
            first
        } else {
            tracing::warn!(plugin = self.plugin.name(), records = batch.len(), reason = %first.reason, "plugin faulted; retrying the batch on a fresh instance");
            match self.call(batch) {
                Ok(outcomes) => return convert(outcomes),
                Err(fault) => fault,
            }
        };
        let mut budget = ISOLATION_BUDGET;
        let mut out = Vec::with_capacity(batch.len());
        self.isolate(batch, second.reason, &mut budget, &mut out);
        out
    }

    /// `batch` faulted with `reason`: find the records that fault alone.
    fn isolate(
        &mut self,
        batch: &[RawRecord],
        reason: String,
        budget: &mut usize,
        out: &mut Vec<Decoded>,
    ) {
        if batch.len() == 1 {
            tracing::warn!(plugin = self.plugin.name(), origin = %batch[0].origin, %reason, "plugin faults on this record; dead-lettering it");
            out.push(Decoded::Trapped(reason));
            return;
        }
        let (left, right) = batch.split_at(batch.len() / 2);
        for half in [left, right] {
            if *budget == 0 {
                let why = format!("{reason} (isolation budget spent; not retried alone)");
                out.extend(half.iter().map(|_| Decoded::Trapped(why.clone())));
                continue;
            }
            *budget -= 1;
            match self.call(half) {
                Ok(outcomes) => out.extend(convert(outcomes)),
                Err(fault) => self.isolate(half, fault.reason, budget, out),
            }
        }
    }

    /// One call on the current instance (built if there is none). A fault drops the instance
    /// and returns the reason.
    fn call(&mut self, batch: &[RawRecord]) -> Result<Vec<Outcome>, Fault> {
        let mut instance = match self.instance.take() {
            Some(instance) => instance,
            None => self.instantiate().map_err(|e| Fault {
                reason: e.to_string(),
                deadline: false,
            })?,
        };
        self.stats.calls += 1;
        let timeout = self.limits.timeout;
        instance.store.set_epoch_deadline(deadline_ticks(timeout));
        let result = with_deadline(
            timeout,
            instance
                .handler
                .call_deserialize_batch(&mut instance.store, batch),
        );
        self.stats.peak_memory = self
            .stats
            .peak_memory
            .max(instance.store.data().limits.peak as u64);
        let fault = match result {
            Ok(Ok(outcomes)) if outcomes.len() == batch.len() => {
                instance.calls += 1;
                if self.limits.recycle_after > 0 && instance.calls >= self.limits.recycle_after {
                    // Dropped here; the next call builds a fresh one.
                    self.stats.recycled += 1;
                } else {
                    self.instance = Some(instance);
                }
                return Ok(outcomes);
            }
            Ok(Ok(outcomes)) => Fault {
                reason: format!(
                    "plugin fault: `deserialize-batch` returned {} outcomes for {} records",
                    outcomes.len(),
                    batch.len()
                ),
                deadline: false,
            },
            // Waiting in a host call past the deadline: the call was cancelled.
            Err(_elapsed) => Fault {
                reason: deadline_reason(timeout),
                deadline: true,
            },
            Ok(Err(e)) => Fault {
                reason: describe_trap(&e, self.limits),
                deadline: matches!(e.downcast_ref::<Trap>(), Some(Trap::Interrupt)),
            },
        };
        self.stats.faults += 1;
        if fault.deadline {
            self.stats.deadline_hits += 1;
        }
        Err(fault)
    }

    fn instantiate(&mut self) -> Result<Instance, PluginError> {
        let inner = &self.plugin.inner;
        let name = || inner.name.clone();
        let limits = StoreLimitsBuilder::new()
            .memory_size(self.limits.max_memory)
            // A failed memory.grow becomes a trap, not -1: a guest allocator would abort anyway,
            // and a trap carries the reason.
            .trap_on_grow_failure(true)
            .build();
        // Deny everything: no preopened dirs, env, args or network, stdin closed; stdout and
        // stderr go to the debug log.
        let wasi = WasiCtxBuilder::new()
            .stdout(GuestLog::new(&inner.name, "stdout"))
            .stderr(GuestLog::new(&inner.name, "stderr"))
            .build();
        let state = HostState {
            wasi,
            table: ResourceTable::new(),
            limits: Limiter { limits, peak: 0 },
        };
        let mut store = Store::new(&inner.engine, state);
        store.limiter(|s| &mut s.limits);
        store.epoch_deadline_trap();
        store.set_epoch_deadline(deadline_ticks(self.limits.timeout));
        self.stats.instances += 1;
        let fail = |e: wasmtime::Error| PluginError::Instantiate {
            name: name(),
            reason: describe_trap(&e, self.limits),
        };
        let timeout = self.limits.timeout;
        let deadline = |_| PluginError::Instantiate {
            name: name(),
            reason: deadline_reason(timeout),
        };
        let instance = with_deadline(timeout, inner.pre.instantiate_async(&mut store));
        self.stats.peak_memory = self.stats.peak_memory.max(store.data().limits.peak as u64);
        let instance = instance.map_err(deadline)?.map_err(fail)?;
        let handler = inner.handler.load(&mut store, &instance).map_err(fail)?;
        if let Some(configure) = &inner.configure {
            let configure = configure.load(&mut store, &instance).map_err(fail)?;
            store.set_epoch_deadline(deadline_ticks(timeout));
            let configured =
                with_deadline(timeout, configure.call_configure(&mut store, &self.options));
            match configured.map_err(deadline)? {
                Ok(Ok(())) => {}
                Ok(Err(message)) => {
                    return Err(PluginError::Configure {
                        name: name(),
                        message,
                    });
                }
                Err(e) => return Err(fail(e)),
            }
        }
        Ok(Instance {
            store,
            handler,
            calls: 0,
        })
    }
}

/// Why a call failed, and whether it was the deadline (which is not retried whole).
struct Fault {
    reason: String,
    deadline: bool,
}

/// Runs `future` on this thread until it is done or `timeout` has passed (`Err`), in which
/// case the future is dropped: a guest waiting in a host call is cancelled.
fn with_deadline<F: std::future::Future>(
    timeout: Duration,
    future: F,
) -> Result<F::Output, tokio::time::error::Elapsed> {
    // The timer is made inside the runtime (`timeout` needs one when it is called).
    block_on(async move { tokio::time::timeout(timeout, future).await })
}

/// Drives a plugin call to completion on this thread. The runtime's drivers (the timers that
/// end WASI's sleeps, and the deadline) run on the current runtime when there is one (the
/// pipeline calls in from its blocking pool), else on a small runtime of this crate's own
/// (tests, the bench, `sluice plugins inspect`). Must not be called from async code.
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    match Handle::try_current() {
        // A current-thread runtime's timers run only inside its own `block_on`: not here.
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            handle.block_on(future)
        }
        _ => fallback_runtime().block_on(future),
    }
}

/// A runtime for callers that have none; made once, never dropped.
fn fallback_runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("sluice-plugin-timers")
            .enable_all()
            .build()
            .expect("starting the plugin timer runtime")
    })
}

/// The reason a record gets when a call runs out of time.
fn deadline_reason(timeout: Duration) -> String {
    format!("exceeded the deadline of {timeout:?} per call")
}

/// Epoch ticks for `timeout`, rounded up, plus one for the tick already under way.
fn deadline_ticks(timeout: Duration) -> u64 {
    let tick = EPOCH_TICK.as_nanos();
    (timeout.as_nanos().div_ceil(tick) as u64).max(1) + 1
}

fn convert(outcomes: Vec<Outcome>) -> Vec<Decoded> {
    outcomes
        .into_iter()
        .map(|o| match o {
            Outcome::Events(events) => Decoded::Events(events),
            Outcome::Malformed(reason) => Decoded::Malformed(reason),
        })
        .collect()
}

/// A short, operator-facing reason for a trap.
fn describe_trap(e: &wasmtime::Error, limits: Limits) -> String {
    if let Some(exit) = e.downcast_ref::<wasmtime_wasi::I32Exit>() {
        return format!("plugin called exit({})", exit.0);
    }
    match e.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) => deadline_reason(limits.timeout),
        Some(Trap::StackOverflow) => "stack overflow".to_owned(),
        Some(Trap::UnreachableCodeReached) => {
            "wasm `unreachable` executed (a Rust plugin panics this way)".to_owned()
        }
        Some(trap) => trap.to_string(),
        None => {
            let text = format!("{e:#}");
            if text.contains("forcing trap when growing memory") {
                format!(
                    "exceeded the memory limit of {} MiB",
                    limits.max_memory >> 20
                )
            } else {
                text.lines().next().unwrap_or("unknown fault").to_owned()
            }
        }
    }
}
