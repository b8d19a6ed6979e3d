//! The `deserializer` world (`wit/deserializer.wit`): raw bytes in, events out. Its one
//! `bindgen!`, how a component is recognised as implementing it (with or without the optional
//! `configure` export), and [`Decoder`], the typed front the pipeline's workers call.
//!
//! Data flow: [`Plugin`] → [`Decoder::new`] (instantiate, `configure`) per worker →
//! [`Decoder::decode`] per batch → one [`Decoded`] per record.

use std::future::Future;

use wasmtime::Store;
use wasmtime::component::{Component, Instance, InstancePre};

use crate::engine::{HostState, Plugin};
use crate::error::PluginError;
use crate::runner::{CallStats, Runner, World};
use crate::sandbox::{Limits, deadline_reason, deadline_ticks, describe_trap, with_deadline};

#[allow(
    unsafe_code,
    reason = "bindgen! output builds typed functions with unsafe blocks (seen when WASMTIME_DEBUG_BINDGEN=1)"
)]
mod bindings {
    //! Generated for the `configurable-deserializer` world, which exports both interfaces;
    //! the host loads each interface on its own, so `configure` stays optional.
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "configurable-deserializer",
        // Calls are async so a guest waiting in a host call (a sleep, `poll`, a blocking
        // stream) can be cancelled at the deadline: see `crate::sandbox`.
        exports: { default: async },
    });
}

use bindings::exports::sluice::plugin::configure::{self, OptionEntry};
pub use bindings::exports::sluice::plugin::raw_byte_handler::RawRecord;
use bindings::exports::sluice::plugin::raw_byte_handler::{self, Outcome};

const CONFIGURE: &str = "sluice:plugin/configure@0.1.0";
const WORLD: &str = "sluice:plugin/deserializer@0.1.0";
const CONFIGURABLE_WORLD: &str = "sluice:plugin/configurable-deserializer@0.1.0";

/// Whether `component` implements the world, and which variant: `configure` may be absent,
/// but present and mistyped is an error, like a missing or mistyped `raw-byte-handler`.
pub(crate) fn identify(
    pre: &InstancePre<HostState>,
    component: &Component,
) -> Result<&'static str, String> {
    raw_byte_handler::GuestIndices::new(pre).map_err(|e| format!("{e:#}"))?;
    match configure::GuestIndices::new(pre) {
        Ok(_) => Ok(CONFIGURABLE_WORLD),
        Err(_) if component.get_export_index(None, CONFIGURE).is_none() => Ok(WORLD),
        Err(e) => Err(format!("{e:#}")),
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

/// The deserializer world on the generic host.
pub(crate) struct Deserializer;

pub(crate) struct Exports {
    handler: raw_byte_handler::GuestIndices,
    configure: Option<configure::GuestIndices>,
}

pub(crate) struct Guest {
    handler: raw_byte_handler::Guest,
}

impl World for Deserializer {
    const CALL: &'static str = "deserialize-batch";
    type Exports = Exports;
    type Setup = Vec<OptionEntry>;
    type Guest = Guest;
    type Input = RawRecord;
    type Output = Outcome;

    fn origin(input: &RawRecord) -> &str {
        &input.origin
    }

    fn exports(plugin: &Plugin) -> Result<Exports, PluginError> {
        let pre = &plugin.inner.pre;
        let wrong_world = |e: wasmtime::Error| PluginError::WrongWorld {
            origin: plugin.origin().to_owned(),
            reason: format!("{e:#}"),
        };
        Ok(Exports {
            handler: raw_byte_handler::GuestIndices::new(pre).map_err(wrong_world)?,
            configure: match plugin.world() {
                CONFIGURABLE_WORLD => Some(configure::GuestIndices::new(pre).map_err(wrong_world)?),
                _ => None,
            },
        })
    }

    fn load(
        plugin: &Plugin,
        exports: &Exports,
        store: &mut Store<HostState>,
        instance: &Instance,
        options: &Vec<OptionEntry>,
        limits: Limits,
    ) -> Result<Guest, PluginError> {
        let name = || plugin.name().to_owned();
        let fail = |e: wasmtime::Error| PluginError::Instantiate {
            name: name(),
            reason: describe_trap(&e, limits),
        };
        let handler = exports.handler.load(&mut *store, instance).map_err(fail)?;
        if let Some(configure) = &exports.configure {
            let configure = configure.load(&mut *store, instance).map_err(fail)?;
            store.set_epoch_deadline(deadline_ticks(limits.timeout));
            let configured = with_deadline(
                limits.timeout,
                configure.call_configure(&mut *store, options),
            )
            .map_err(|_| PluginError::Instantiate {
                name: name(),
                reason: deadline_reason(limits.timeout),
            })?;
            match configured {
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
        Ok(Guest { handler })
    }

    fn call<'a>(
        guest: &'a Guest,
        store: &'a mut Store<HostState>,
        batch: &'a [RawRecord],
    ) -> impl Future<Output = wasmtime::Result<Vec<Outcome>>> + Send + 'a {
        guest.handler.call_deserialize_batch(store, batch)
    }
}

/// Counters of one decoder, for metrics and tests.
pub type DecoderStats = CallStats;

/// A deserializer instance plus the call policy. Not shared: each worker owns one.
pub struct Decoder {
    runner: Runner<Deserializer>,
}

impl Decoder {
    /// Instantiates `plugin` and calls its `configure` export with `options`. Fails when the
    /// plugin refuses the options (or takes none and some were given), or cannot start.
    /// Blocks: call it off the async reactor.
    pub fn new(
        plugin: Plugin,
        options: Vec<(String, String)>,
        limits: Limits,
    ) -> Result<Self, PluginError> {
        if !options.is_empty() && plugin.world() != CONFIGURABLE_WORLD {
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
        Ok(Self {
            runner: Runner::new(plugin, options, limits)?,
        })
    }

    /// The plugin this decoder runs.
    pub fn plugin(&self) -> &Plugin {
        self.runner.plugin()
    }

    /// Counters since this decoder was made.
    pub fn stats(&self) -> DecoderStats {
        self.runner.stats()
    }

    /// Deserializes `batch`: exactly one [`Decoded`] per record, in order. Blocks: call it off
    /// the async reactor.
    pub fn decode(&mut self, batch: &[RawRecord]) -> Vec<Decoded> {
        self.runner
            .run(batch)
            .into_iter()
            .map(|result| match result {
                Ok(Outcome::Events(events)) => Decoded::Events(events),
                Ok(Outcome::Malformed(reason)) => Decoded::Malformed(reason),
                Err(reason) => Decoded::Trapped(reason),
            })
            .collect()
    }
}
