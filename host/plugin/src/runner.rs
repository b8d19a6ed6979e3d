//! The call policy, the same for every world: one live instance per [`Runner`], one call per
//! batch under the sandbox's deadline, and what happens when the guest fails.
//!
//! A trap (panic, out-of-bounds access, deadline, memory cap, `exit`) or a reply of the wrong
//! length poisons the instance: it is dropped and a fresh one is built from the
//! pre-instantiated handle. The batch is retried once (unless the fault was the deadline: a
//! plugin that sleeps or spins on a record does so again, and a retry would only double the
//! stall); if it fails again it is split in halves, recursively, to find the records that fail
//! on their own. Those come back as `Err(reason)`; every other record gets its real outcome.
//! An instance is also replaced after `recycle_after` batches. Nothing here panics or returns
//! an error because of what a plugin did.
//!
//! What differs between worlds (the bindings, which export is the batch call, setup such as
//! `configure`) is a [`World`], implemented once per world under `crate::worlds`.

use std::future::Future;

use wasmtime::Store;
use wasmtime::component::Instance;

use crate::engine::{HostState, Plugin};
use crate::error::PluginError;
use crate::sandbox::{self, Limits, deadline_reason, deadline_ticks, describe_trap, with_deadline};

/// One WIT world, as the generic host calls it: one batch function taking a list of inputs
/// and returning one output per input.
pub(crate) trait World: 'static {
    /// The export function, for messages (`deserialize-batch`).
    const CALL: &'static str;
    /// Export indices, looked up once per [`Runner`] (type-checked at load time already).
    type Exports: Send;
    /// What setting up an instance takes besides the component (e.g. `configure` options).
    type Setup: Send;
    /// The typed exports of one live instance.
    type Guest: Send;
    /// One input record of a batch.
    type Input: Sync;
    /// One result of a batch call.
    type Output: Send;

    /// Where an input came from, for logs (`http:/log/ingest`).
    fn origin(input: &Self::Input) -> &str;

    /// The world's export indices in `plugin`.
    fn exports(plugin: &Plugin) -> Result<Self::Exports, PluginError>;

    /// Loads a fresh instance's exports and sets it up (within `limits.timeout`).
    fn load(
        plugin: &Plugin,
        exports: &Self::Exports,
        store: &mut Store<HostState>,
        instance: &Instance,
        setup: &Self::Setup,
        limits: Limits,
    ) -> Result<Self::Guest, PluginError>;

    /// Calls the batch function.
    fn call<'a>(
        guest: &'a Self::Guest,
        store: &'a mut Store<HostState>,
        batch: &'a [Self::Input],
    ) -> impl Future<Output = wasmtime::Result<Vec<Self::Output>>> + Send + 'a;
}

/// How many sub-batch calls one batch may spend isolating failing records. A plugin that
/// fails on every record would otherwise cost about two calls (and deadlines) per record; past
/// the budget the remaining records are reported failed unisolated.
const ISOLATION_BUDGET: usize = 64;

/// Counters of one runner, for metrics and tests.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CallStats {
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
    /// The most linear memory any instance of this runner has held, in bytes.
    pub peak_memory: u64,
}

struct Live<W: World> {
    store: Store<HostState>,
    guest: W::Guest,
    /// Successful calls on this instance.
    calls: u64,
}

/// A plugin instance of world `W` plus the policy around it. Not shared: each worker owns one.
pub(crate) struct Runner<W: World> {
    plugin: Plugin,
    exports: W::Exports,
    setup: W::Setup,
    limits: Limits,
    live: Option<Live<W>>,
    stats: CallStats,
}

/// Why a call failed, and whether it was the deadline (which is not retried whole).
struct Fault {
    reason: String,
    deadline: bool,
}

impl<W: World> Runner<W> {
    /// Instantiates `plugin` and sets it up; fails if it cannot start.
    pub(crate) fn new(
        plugin: Plugin,
        setup: W::Setup,
        limits: Limits,
    ) -> Result<Self, PluginError> {
        let exports = W::exports(&plugin)?;
        let mut runner = Self {
            plugin,
            exports,
            setup,
            limits,
            live: None,
            stats: CallStats::default(),
        };
        runner.live = Some(runner.instantiate()?);
        Ok(runner)
    }

    pub(crate) fn plugin(&self) -> &Plugin {
        &self.plugin
    }

    pub(crate) fn stats(&self) -> CallStats {
        self.stats
    }

    /// Runs `batch`: exactly one result per input, in order; `Err` holds why that input fails
    /// on its own.
    pub(crate) fn run(&mut self, batch: &[W::Input]) -> Vec<Result<W::Output, String>> {
        if batch.is_empty() {
            return Vec::new();
        }
        let first = match self.call(batch) {
            Ok(outputs) => return outputs.into_iter().map(Ok).collect(),
            Err(fault) => fault,
        };
        let second = if first.deadline {
            // Sleeping or spinning on a record is not transient: go straight to isolation.
            tracing::warn!(plugin = self.plugin.name(), records = batch.len(), reason = %first.reason, "plugin hit its deadline; isolating the records that cause it");
            first
        } else {
            tracing::warn!(plugin = self.plugin.name(), records = batch.len(), reason = %first.reason, "plugin faulted; retrying the batch on a fresh instance");
            match self.call(batch) {
                Ok(outputs) => return outputs.into_iter().map(Ok).collect(),
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
        batch: &[W::Input],
        reason: String,
        budget: &mut usize,
        out: &mut Vec<Result<W::Output, String>>,
    ) {
        if batch.len() == 1 {
            tracing::warn!(plugin = self.plugin.name(), origin = %W::origin(&batch[0]), %reason, "plugin faults on this record; dead-lettering it");
            out.push(Err(reason));
            return;
        }
        let (left, right) = batch.split_at(batch.len() / 2);
        for half in [left, right] {
            if *budget == 0 {
                let why = format!("{reason} (isolation budget spent; not retried alone)");
                out.extend(half.iter().map(|_| Err(why.clone())));
                continue;
            }
            *budget -= 1;
            match self.call(half) {
                Ok(outputs) => out.extend(outputs.into_iter().map(Ok)),
                Err(fault) => self.isolate(half, fault.reason, budget, out),
            }
        }
    }

    /// One call on the current instance (built if there is none). A fault drops the instance
    /// and returns the reason.
    fn call(&mut self, batch: &[W::Input]) -> Result<Vec<W::Output>, Fault> {
        let mut live = match self.live.take() {
            Some(live) => live,
            None => self.instantiate().map_err(|e| Fault {
                reason: e.to_string(),
                deadline: false,
            })?,
        };
        self.stats.calls += 1;
        let timeout = self.limits.timeout;
        live.store.set_epoch_deadline(deadline_ticks(timeout));
        let result = with_deadline(timeout, W::call(&live.guest, &mut live.store, batch));
        self.stats.peak_memory = self
            .stats
            .peak_memory
            .max(live.store.data().limits.peak as u64);
        let fault = match result {
            Ok(Ok(outputs)) if outputs.len() == batch.len() => {
                live.calls += 1;
                if self.limits.recycle_after > 0 && live.calls >= self.limits.recycle_after {
                    // Dropped here; the next call builds a fresh one.
                    self.stats.recycled += 1;
                } else {
                    self.live = Some(live);
                }
                return Ok(outputs);
            }
            Ok(Ok(outputs)) => Fault {
                reason: format!(
                    "plugin fault: `{}` returned {} outcomes for {} records",
                    W::CALL,
                    outputs.len(),
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
                deadline: matches!(
                    e.downcast_ref::<wasmtime::Trap>(),
                    Some(wasmtime::Trap::Interrupt)
                ),
            },
        };
        self.stats.faults += 1;
        if fault.deadline {
            self.stats.deadline_hits += 1;
        }
        Err(fault)
    }

    fn instantiate(&mut self) -> Result<Live<W>, PluginError> {
        let mut store = sandbox::store(&self.plugin, self.limits);
        self.stats.instances += 1;
        let limits = self.limits;
        let name = self.plugin.name().to_owned();
        let instance = with_deadline(
            limits.timeout,
            self.plugin.inner.pre.instantiate_async(&mut store),
        );
        self.stats.peak_memory = self.stats.peak_memory.max(store.data().limits.peak as u64);
        let instance = instance
            .map_err(|_| PluginError::Instantiate {
                name: name.clone(),
                reason: deadline_reason(limits.timeout),
            })?
            .map_err(|e| PluginError::Instantiate {
                name,
                reason: describe_trap(&e, limits),
            })?;
        let guest = W::load(
            &self.plugin,
            &self.exports,
            &mut store,
            &instance,
            &self.setup,
            limits,
        )?;
        Ok(Live {
            store,
            guest,
            calls: 0,
        })
    }
}
