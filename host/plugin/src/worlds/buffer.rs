//! The `buffer-plugin` world of contract 0.2 (`wit/v0.2/buffer.wit`): a buffer's policy. Its
//! `bindgen!`, the `buffer-host` imports it gets (the tiers, the clock, the state: read from the
//! call's [`Context`] the store holds for the duration of one call), and [`BufferPolicy`], the
//! Wasm implementation of `sluice_buffer::tiered::Policy`.
//!
//! Unlike the batch worlds, a policy call is never retried or split: `on-write` is all or none,
//! so a fault refuses that write (the tiered buffer answers 503) and the instance is dropped; the
//! next call gets a fresh, configured one. State lives in the host, so nothing is lost with it.

use std::time::Duration;

use sluice_buffer::tiered::{Context, Incoming, Move, Placement, Policy, PolicyFault, Refusal};
use wasmtime::Store;
use wasmtime::component::{Component, HasSelf, InstancePre, Linker};

use crate::engine::{HostState, Plugin};
use crate::error::PluginError;
use crate::sandbox::{
    self, Limits, deadline_reason, deadline_ticks, describe_trap, load_failed, with_deadline,
};

#[allow(
    unsafe_code,
    reason = "bindgen! output builds typed functions with unsafe blocks (seen when WASMTIME_DEBUG_BINDGEN=1)"
)]
mod bindings {
    wasmtime::component::bindgen!({
        path: "../../wit/v0.2",
        world: "buffer-plugin",
        // Exports async, as for every world (the deadline must end a guest waiting in a host
        // call); the imports are plain functions over the call's context.
        exports: { default: async },
    });
}

use bindings::exports::sluice::plugin::buffer_policy::{self, Guest as PolicyGuest};
use bindings::exports::sluice::plugin::configure::{self, OptionEntry};
use bindings::sluice::plugin::buffer_host;

/// The interface that makes a component a buffer policy.
pub(crate) const INTERFACE: &str = "sluice:plugin/buffer-policy@0.2.0";

/// The world's name, as `sluice plugins inspect` shows it.
pub(crate) const WORLD: &str = "sluice:plugin/buffer-plugin@0.2.0";

/// What a policy imports from the host.
pub(crate) const HOST_INTERFACE: &str = "sluice:plugin/buffer-host@0.2.0";

/// Whether `component` implements the world (both exports, with their exact types).
pub(crate) fn identify(
    pre: &InstancePre<HostState>,
    _: &Component,
) -> Result<&'static str, String> {
    buffer_policy::GuestIndices::new(pre).map_err(|e| format!("{e:#}"))?;
    configure::GuestIndices::new(pre).map_err(|e| format!("{e:#}"))?;
    Ok(WORLD)
}

/// Links `buffer-host` (every store has it; only policies import it).
pub(crate) fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    buffer_host::add_to_linker::<HostState, HasSelf<HostState>>(linker, |state| state)
}

impl HostState {
    /// The call's context; outside a call (configure, describe) an empty one.
    fn policy_context(&mut self) -> &mut Context {
        self.policy.get_or_insert_with(|| {
            Context::new(
                Vec::new(),
                0,
                std::sync::Arc::new(sluice_buffer::tiered::State::new(0)),
            )
        })
    }
}

impl buffer_host::Host for HostState {
    fn tiers(&mut self) -> Vec<buffer_host::TierState> {
        self.policy_context()
            .tiers
            .iter()
            .map(|t| buffer_host::TierState {
                name: t.name.clone(),
                durable: t.durable,
                available: t.available,
                held: t.held,
                capacity: t.capacity,
                lag: t.lag,
            })
            .collect()
    }

    fn now_ms(&mut self) -> u64 {
        self.policy_context().now_ms
    }

    fn state_get(&mut self, key: Vec<u8>) -> Option<Vec<u8>> {
        self.policy_context().state().get(&key)
    }

    fn state_set(&mut self, key: Vec<u8>, value: Vec<u8>, ttl_ms: Option<u64>) {
        self.policy_context().state().set(key, value, ttl_ms);
    }

    fn state_delete(&mut self, key: Vec<u8>) {
        self.policy_context().state().delete(key);
    }

    fn insert_new(&mut self, keys: Vec<Vec<u8>>, ttl_ms: u64) -> Vec<bool> {
        self.policy_context().state().insert_new(keys, ttl_ms)
    }
}

/// One live, configured instance.
struct Live {
    store: Store<HostState>,
    policy: PolicyGuest,
    calls: u64,
}

/// A buffer policy component: one instance, replaced after a fault or every
/// `limits.recycle_after` calls.
pub struct BufferPolicy {
    plugin: Plugin,
    options: Vec<OptionEntry>,
    limits: Limits,
    headers: Vec<String>,
    live: Option<Live>,
}

impl BufferPolicy {
    /// Instantiates and configures `plugin` and asks what it needs (`describe`); fails if it
    /// cannot start or refuses its options.
    pub fn new(
        plugin: Plugin,
        options: Vec<(String, String)>,
        limits: Limits,
    ) -> Result<Self, PluginError> {
        let options = options
            .into_iter()
            .map(|(key, value)| OptionEntry { key, value })
            .collect();
        let mut policy = Self {
            plugin,
            options,
            limits,
            headers: Vec::new(),
            live: None,
        };
        let live = policy.instantiate()?;
        policy.live = Some(live);
        Ok(policy)
    }

    /// The request headers it reads (from `describe`).
    pub fn headers(&self) -> &[String] {
        &self.headers
    }

    /// The plugin it runs.
    pub fn plugin(&self) -> &Plugin {
        &self.plugin
    }

    /// The most linear memory its live instance holds, in bytes.
    pub fn memory(&self) -> u64 {
        self.live
            .as_ref()
            .map_or(0, |live| live.store.data().limits.peak as u64)
    }

    fn instantiate(&mut self) -> Result<Live, PluginError> {
        let plugin = &self.plugin;
        let limits = self.limits;
        let mut store = sandbox::store(plugin, limits);
        let instance = with_deadline(
            limits.timeout,
            plugin.inner.pre.instantiate_async(&mut store),
        )
        .map_err(|_| PluginError::Instantiate {
            name: plugin.name().to_owned(),
            reason: deadline_reason(limits.timeout),
        })?
        .map_err(|e| load_failed(plugin, &e, limits))?;
        let wrong_world = |e| plugin.wrong_world(e);
        let policy = buffer_policy::GuestIndices::new(&plugin.inner.pre)
            .map_err(wrong_world)?
            .load(&mut store, &instance)
            .map_err(|e| load_failed(plugin, &e, limits))?;
        let configure = configure::GuestIndices::new(&plugin.inner.pre)
            .map_err(wrong_world)?
            .load(&mut store, &instance)
            .map_err(|e| load_failed(plugin, &e, limits))?;
        let options = &self.options;
        sandbox::configure(plugin, &mut store, limits, |store| {
            configure.call_configure(store, options)
        })?;
        store.set_epoch_deadline(deadline_ticks(limits.timeout));
        let info = with_deadline(limits.timeout, policy.call_describe(&mut store))
            .map_err(|_| PluginError::Instantiate {
                name: plugin.name().to_owned(),
                reason: deadline_reason(limits.timeout),
            })?
            .map_err(|e| load_failed(plugin, &e, limits))?;
        self.headers = info.headers;
        Ok(Live {
            store,
            policy,
            calls: 0,
        })
    }

    /// One call on the live instance (a fresh one if there is none), with `cx` in the store
    /// for its imports. A trap, the deadline or the memory cap drops the instance.
    fn call<T>(
        &mut self,
        cx: &mut Context,
        call: impl AsyncFnOnce(&PolicyGuest, &mut Store<HostState>) -> wasmtime::Result<T>,
    ) -> Result<T, PolicyFault> {
        let mut live = match self.live.take() {
            Some(live) => live,
            None => self.instantiate().map_err(|e| PolicyFault(e.to_string()))?,
        };
        let timeout = self.limits.timeout;
        live.store.data_mut().policy = Some(cx.take());
        live.store.set_epoch_deadline(deadline_ticks(timeout));
        let result = with_deadline(timeout, call(&live.policy, &mut live.store));
        if let Some(back) = live.store.data_mut().policy.take() {
            *cx = back;
        }
        match result {
            Ok(Ok(answer)) => {
                live.calls += 1;
                if self.limits.recycle_after == 0 || live.calls < self.limits.recycle_after {
                    self.live = Some(live);
                }
                Ok(answer)
            }
            Ok(Err(e)) => Err(PolicyFault(format!(
                "plugin `{}` trapped: {}",
                self.plugin.name(),
                describe_trap(&e, self.limits)
            ))),
            Err(_) => Err(PolicyFault(format!(
                "plugin `{}`: {}",
                self.plugin.name(),
                deadline_reason(timeout)
            ))),
        }
    }
}

impl Policy for BufferPolicy {
    fn wanted_headers(&self) -> Vec<String> {
        self.headers.clone()
    }

    fn on_write(
        &mut self,
        cx: &mut Context,
        records: &[Incoming],
    ) -> Result<Result<Vec<Placement>, Refusal>, PolicyFault> {
        let incoming: Vec<buffer_policy::Incoming> = records
            .iter()
            .map(|r| buffer_policy::Incoming {
                size: r.size,
                payload_hash: r.payload_hash,
                headers: r.headers.clone(),
                origin: r.origin.clone(),
                content_type: r.content_type.clone(),
                received_at_ms: r.received_at_ms,
            })
            .collect();
        let answer = self.call(cx, async |policy, store| {
            policy.call_on_write(store, &incoming).await
        })?;
        Ok(match answer {
            Ok(placements) => Ok(placements
                .into_iter()
                .map(|p| match p {
                    buffer_policy::Placement::Tier((tier, key)) => Placement::Tier {
                        tier: usize::from(tier),
                        key,
                    },
                    buffer_policy::Placement::Drop(reason) => Placement::Drop(reason),
                })
                .collect()),
            Err(buffer_policy::Refusal::Throttled((ms, reason))) => Err(Refusal::Throttled {
                retry_after: Duration::from_millis(u64::from(ms)),
                reason,
            }),
            Err(buffer_policy::Refusal::Unavailable(reason)) => Err(Refusal::Unavailable(reason)),
        })
    }

    fn next_read(&mut self, cx: &mut Context, worker: u32) -> Result<Option<usize>, PolicyFault> {
        let tier = self.call(cx, async |policy, store| {
            policy.call_next_read(store, worker).await
        })?;
        Ok(tier.map(usize::from))
    }

    fn tick(&mut self, cx: &mut Context) -> Result<Vec<Move>, PolicyFault> {
        let moves = self.call(cx, async |policy, store| policy.call_tick(store).await)?;
        Ok(moves
            .into_iter()
            .map(|m| Move {
                from: usize::from(m.from),
                to: usize::from(m.to),
                max_records: m.max_records as usize,
            })
            .collect())
    }

    fn recycle(&mut self) {
        self.live = None;
    }
}

impl std::fmt::Debug for BufferPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufferPolicy")
            .field("plugin", &self.plugin.name())
            .field("headers", &self.headers)
            .finish_non_exhaustive()
    }
}
