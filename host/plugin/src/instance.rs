//! One instance lifecycle, the same for every world: instantiate under the deadline, load the
//! world's exports and set the instance up (`configure`, a policy's `describe`), call it under
//! the deadline, recycle it after `recycle_after` calls, discard it after a fault (the next
//! call builds a fresh one from the pre-instantiated handle), and count all of it.
//!
//! What differs between worlds (which exports, what setting up takes) is a [`World`],
//! implemented once per world under `crate::worlds`. What to do about a fault is the caller's:
//! the batch worlds retry and isolate (`crate::batch`); a buffer policy refuses that one call.

use sluice_buffer::tiered::Context;
use wasmtime::Store;
use wasmtime::component::Instance;

use crate::engine::{HostState, Plugin};
use crate::error::PluginError;
use crate::sandbox::{self, Limits, deadline_reason, deadline_ticks, describe_trap, with_deadline};
use crate::worlds::PluginKind;

/// One WIT world, as the lifecycle sets up an instance of it.
pub(crate) trait World: 'static {
    /// The kind of plugin the world is for: [`Instances::new`] refuses a plugin of another.
    const KIND: PluginKind;
    /// Export indices, looked up once per [`Instances`] (type-checked at load time already).
    type Exports: Send;
    /// What setting up an instance takes besides the component (e.g. `configure` options).
    type Setup: Send;
    /// The typed exports of one live instance (and what its setup answered).
    type Guest: Send;

    /// The world's export indices in `plugin`.
    fn exports(plugin: &Plugin) -> Result<Self::Exports, PluginError>;

    /// Loads a fresh instance's exports and sets it up (each call within `limits.timeout`).
    fn load(
        plugin: &Plugin,
        exports: &Self::Exports,
        store: &mut Store<HostState>,
        instance: &Instance,
        setup: &Self::Setup,
        limits: Limits,
    ) -> Result<Self::Guest, PluginError>;
}

/// Counters of one plugin's instances, for metrics and tests.
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
    /// Of those, instances replaced after `recycle_after` calls.
    pub recycled: u64,
    /// The most linear memory any instance has held, in bytes.
    pub peak_memory: u64,
}

/// Why a call failed.
#[derive(Debug)]
pub(crate) struct Fault {
    pub(crate) reason: String,
    pub(crate) kind: FaultKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FaultKind {
    /// No instance could be built (instantiation or setup failed).
    Start,
    /// The guest trapped (panic, out of bounds, memory cap, `exit`), or its reply broke the
    /// world's rules.
    Trap,
    /// The call ran out of time, computing or waiting.
    Deadline,
}

struct Live<W: World> {
    store: Store<HostState>,
    guest: W::Guest,
    /// Successful calls on this instance.
    calls: u64,
}

/// The instances of one plugin of world `W`: at most one live at a time. Not shared: each
/// worker (or buffer) owns one.
pub(crate) struct Instances<W: World> {
    plugin: Plugin,
    exports: W::Exports,
    setup: W::Setup,
    limits: Limits,
    live: Option<Live<W>>,
    stats: CallStats,
}

impl<W: World> Instances<W> {
    /// Checks that `plugin` is of the world's kind, then instantiates and sets it up; fails if
    /// it is of another kind or cannot start.
    pub(crate) fn new(
        plugin: Plugin,
        setup: W::Setup,
        limits: Limits,
    ) -> Result<Self, PluginError> {
        if plugin.kind() != W::KIND {
            return Err(PluginError::WrongWorld {
                origin: plugin.origin().to_owned(),
                expected: W::KIND.worlds(),
                reason: format!(
                    "it is a `{}` plugin, not a {}",
                    plugin.world(),
                    W::KIND.as_str()
                ),
            });
        }
        let exports = W::exports(&plugin)?;
        let mut instances = Self {
            plugin,
            exports,
            setup,
            limits,
            live: None,
            stats: CallStats::default(),
        };
        instances.live = Some(instances.instantiate()?);
        Ok(instances)
    }

    pub(crate) fn plugin(&self) -> &Plugin {
        &self.plugin
    }

    pub(crate) fn stats(&self) -> CallStats {
        self.stats
    }

    /// The live instance's setup answer, if one is live.
    pub(crate) fn guest(&self) -> Option<&W::Guest> {
        self.live.as_ref().map(|live| &live.guest)
    }

    /// The most linear memory the live instance holds, in bytes (0 when none is live).
    pub(crate) fn live_memory(&self) -> u64 {
        self.live
            .as_ref()
            .map_or(0, |live| live.store.data().limits.peak as u64)
    }

    /// Drops the live instance; the next call builds a fresh one.
    pub(crate) fn discard(&mut self) {
        self.live = None;
    }

    /// A call that returned but broke the world's rules (a reply of the wrong length): counted
    /// as a fault, and the instance is dropped.
    pub(crate) fn fault(&mut self, reason: String) -> Fault {
        self.live = None;
        self.stats.faults += 1;
        Fault {
            reason,
            kind: FaultKind::Trap,
        }
    }

    /// One call on the live instance (a fresh one if there is none) under the deadline, with
    /// `context` in the store for the call's host imports (a buffer policy's tiers and state;
    /// it is back in `context` afterwards, whatever happened). A fault drops the instance.
    pub(crate) fn call<T>(
        &mut self,
        context: Option<&mut Context>,
        call: impl AsyncFnOnce(&W::Guest, &mut Store<HostState>) -> wasmtime::Result<T>,
    ) -> Result<T, Fault> {
        let mut live = match self.live.take() {
            Some(live) => live,
            None => self.instantiate().map_err(|e| Fault {
                reason: e.to_string(),
                kind: FaultKind::Start,
            })?,
        };
        self.stats.calls += 1;
        let timeout = self.limits.timeout;
        let mut context = context;
        if let Some(cx) = context.as_mut() {
            live.store.data_mut().policy = Some(cx.take());
        }
        live.store.set_epoch_deadline(deadline_ticks(timeout));
        let result = with_deadline(timeout, call(&live.guest, &mut live.store));
        if let Some(cx) = context
            && let Some(back) = live.store.data_mut().policy.take()
        {
            *cx = back;
        }
        self.note_memory(&live.store);
        let fault = match result {
            Ok(Ok(answer)) => {
                live.calls += 1;
                if self.limits.recycle_after > 0 && live.calls >= self.limits.recycle_after {
                    // Dropped here; the next call builds a fresh one.
                    self.stats.recycled += 1;
                } else {
                    self.live = Some(live);
                }
                return Ok(answer);
            }
            // Waiting in a host call past the deadline: the call was cancelled.
            Err(_elapsed) => Fault {
                reason: deadline_reason(timeout),
                kind: FaultKind::Deadline,
            },
            Ok(Err(e)) => Fault {
                reason: describe_trap(&e, self.limits),
                kind: match e.downcast_ref::<wasmtime::Trap>() {
                    Some(wasmtime::Trap::Interrupt) => FaultKind::Deadline,
                    _ => FaultKind::Trap,
                },
            },
        };
        self.stats.faults += 1;
        if fault.kind == FaultKind::Deadline {
            self.stats.deadline_hits += 1;
        }
        Err(fault)
    }

    fn note_memory(&mut self, store: &Store<HostState>) {
        self.stats.peak_memory = self.stats.peak_memory.max(store.data().limits.peak as u64);
    }

    fn instantiate(&mut self) -> Result<Live<W>, PluginError> {
        let mut store = sandbox::store(&self.plugin, self.limits);
        self.stats.instances += 1;
        let limits = self.limits;
        let instance = with_deadline(
            limits.timeout,
            self.plugin.inner.pre.instantiate_async(&mut store),
        );
        self.note_memory(&store);
        let instance = instance
            .map_err(|_| start_failed(&self.plugin, deadline_reason(limits.timeout)))?
            .map_err(|e| load_failed(&self.plugin, &e, limits))?;
        let guest = W::load(
            &self.plugin,
            &self.exports,
            &mut store,
            &instance,
            &self.setup,
            limits,
        );
        self.note_memory(&store);
        Ok(Live {
            store,
            guest: guest?,
            calls: 0,
        })
    }
}

/// Runs one setup call of a fresh instance (`configure`, a policy's `describe`) under the
/// per-call deadline: a trap or the deadline become the [`PluginError`] that names the plugin.
pub(crate) fn setup_call<'a, T, F>(
    plugin: &Plugin,
    store: &'a mut Store<HostState>,
    limits: Limits,
    call: impl FnOnce(&'a mut Store<HostState>) -> F,
) -> Result<T, PluginError>
where
    F: std::future::Future<Output = wasmtime::Result<T>>,
{
    store.set_epoch_deadline(deadline_ticks(limits.timeout));
    with_deadline(limits.timeout, call(store))
        .map_err(|_| start_failed(plugin, deadline_reason(limits.timeout)))?
        .map_err(|e| load_failed(plugin, &e, limits))
}

/// Runs a fresh instance's `configure` under the deadline: the plugin refusing its options is
/// [`PluginError::Configure`].
pub(crate) fn configure<'a, F>(
    plugin: &Plugin,
    store: &'a mut Store<HostState>,
    limits: Limits,
    call: impl FnOnce(&'a mut Store<HostState>) -> F,
) -> Result<(), PluginError>
where
    F: std::future::Future<Output = wasmtime::Result<Result<(), String>>>,
{
    setup_call(plugin, store, limits, call)?.map_err(|message| PluginError::Configure {
        name: plugin.name().to_owned(),
        message,
    })
}

/// The error for a fresh instance that could not be built or set up, and why.
fn start_failed(plugin: &Plugin, reason: String) -> PluginError {
    PluginError::Instantiate {
        name: plugin.name().to_owned(),
        reason,
    }
}

/// The error for a fresh instance whose instantiation, exports or setup trapped.
pub(crate) fn load_failed(plugin: &Plugin, e: &wasmtime::Error, limits: Limits) -> PluginError {
    start_failed(plugin, describe_trap(e, limits))
}

/// The 0.2 `configure` options as the bindings take them.
pub(crate) fn option_entries<E>(
    options: Vec<(String, String)>,
    entry: impl Fn(String, String) -> E,
) -> Vec<E> {
    options.into_iter().map(|(k, v)| entry(k, v)).collect()
}
