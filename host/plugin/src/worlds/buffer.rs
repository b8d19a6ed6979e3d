//! The `buffer-plugin` world of contract 0.2 (`wit/v0.2/buffer.wit`): a buffer's policy. Its
//! `bindgen!`, the `buffer-host` imports it gets (the tiers, the clock, the state: read from the
//! call's [`Context`] the store holds for the duration of one call), and [`BufferPolicy`], the
//! Wasm implementation of `sluice_buffer::tiered::Policy`.
//!
//! The instance lifecycle is the one every world has (`crate::instance`). Unlike the batch
//! worlds, a policy call is never retried or split: `on-write` is all or none, so a fault
//! refuses that write (the tiered buffer answers 503) and the instance is dropped; the next call
//! gets a fresh, configured one. State lives in the host, so nothing is lost with it.

use std::time::Duration;

use sluice_buffer::tiered::{Context, Incoming, Move, Placement, Policy, PolicyFault, Refusal};
use wasmtime::Store;
use wasmtime::component::{HasSelf, Instance, Linker};

use crate::engine::{HostState, Plugin};
use crate::error::PluginError;
use crate::instance::{self, CallStats, FaultKind, Instances, World, option_entries};
use crate::sandbox::Limits;
use crate::worlds::{Descriptor, PluginKind};

bindings!("../../wit/v0.2", "buffer-plugin");

use bindings::exports::sluice::plugin::buffer_policy::{self, Guest as PolicyGuest};
use bindings::exports::sluice::plugin::configure::{self, OptionEntry};
use bindings::sluice::plugin::buffer_host;

/// What a policy imports from the host.
const HOST_INTERFACE: &str = "sluice:plugin/buffer-host@0.2.0";

/// The world on the list of `crate::worlds`.
pub(crate) static DESCRIPTOR: Descriptor = Descriptor {
    interface: "sluice:plugin/buffer-policy@0.2.0",
    world: "sluice:plugin/buffer-plugin@0.2.0",
    kind: PluginKind::BufferPolicy,
    host_imports: &[HOST_INTERFACE],
    add_to_linker,
    identify,
};

/// Links `buffer-host` (every store has it; only policies import it).
fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
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

/// The buffer policy world on the generic host.
struct PolicyWorld;

configured_world!(buffer_policy);

/// A live instance's exports, and what its `describe` answered.
struct Guest {
    policy: PolicyGuest,
    headers: Vec<String>,
}

impl World for PolicyWorld {
    const KIND: PluginKind = PluginKind::BufferPolicy;
    type Exports = Exports;
    type Setup = Vec<OptionEntry>;
    type Guest = Guest;

    fn exports(plugin: &Plugin) -> Result<Exports, PluginError> {
        Exports::new(plugin)
    }

    fn load(
        plugin: &Plugin,
        exports: &Exports,
        store: &mut Store<HostState>,
        instance: &Instance,
        options: &Vec<OptionEntry>,
        limits: Limits,
    ) -> Result<Guest, PluginError> {
        let policy = exports.load(plugin, store, instance, options, limits)?;
        let info =
            instance::setup_call(plugin, store, limits, |store| policy.call_describe(store))?;
        Ok(Guest {
            policy,
            headers: info.headers,
        })
    }
}

/// A buffer policy component: one instance, replaced after a fault or every
/// `limits.recycle_after` calls.
pub struct BufferPolicy {
    instances: Instances<PolicyWorld>,
    headers: Vec<String>,
}

impl BufferPolicy {
    /// Instantiates and configures `plugin` and asks what it needs (`describe`); fails if it is
    /// not a buffer policy, cannot start or refuses its options.
    pub fn new(
        plugin: Plugin,
        options: Vec<(String, String)>,
        limits: Limits,
    ) -> Result<Self, PluginError> {
        let options = option_entries(options, |key, value| OptionEntry { key, value });
        let instances: Instances<PolicyWorld> = Instances::new(plugin, options, limits)?;
        let headers = instances
            .guest()
            .map(|guest| guest.headers.clone())
            .unwrap_or_default();
        Ok(Self { instances, headers })
    }

    /// The request headers it reads (from `describe`).
    pub fn headers(&self) -> &[String] {
        &self.headers
    }

    /// The plugin it runs.
    pub fn plugin(&self) -> &Plugin {
        self.instances.plugin()
    }

    /// The most linear memory its live instance holds, in bytes.
    pub fn memory(&self) -> u64 {
        self.instances.live_memory()
    }

    /// Counters since this policy was made.
    pub fn stats(&self) -> CallStats {
        self.instances.stats()
    }

    /// One call with `cx` in the store for its imports. A trap, the deadline or the memory cap
    /// drops the instance and refuses this call.
    fn call<T>(
        &mut self,
        cx: &mut Context,
        call: impl AsyncFnOnce(&PolicyGuest, &mut Store<HostState>) -> wasmtime::Result<T>,
    ) -> Result<T, PolicyFault> {
        let name = self.plugin().name().to_owned();
        self.instances
            .call(Some(cx), async |guest, store| {
                call(&guest.policy, store).await
            })
            .map_err(|fault| {
                PolicyFault(match fault.kind {
                    FaultKind::Start => fault.reason,
                    FaultKind::Trap => format!("plugin `{name}` trapped: {}", fault.reason),
                    FaultKind::Deadline => format!("plugin `{name}`: {}", fault.reason),
                })
            })
    }
}

impl Policy for BufferPolicy {
    fn name(&self) -> &str {
        self.plugin().name()
    }

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
        self.instances.discard();
    }
}

impl std::fmt::Debug for BufferPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufferPolicy")
            .field("plugin", &self.plugin().name())
            .field("headers", &self.headers)
            .finish_non_exhaustive()
    }
}
