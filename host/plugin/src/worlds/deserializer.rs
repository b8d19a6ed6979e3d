//! The `deserializer` world of contract 0.1.0 (`wit/deserializer.wit`): raw bytes in, events
//! out, one list entry per record and one string per event. Its one `bindgen!`, and how a
//! component is recognised as implementing it (with or without the optional `configure`
//! export). The pipeline reaches it through [`crate::Decoder`].

use std::future::Future;

use wasmtime::Store;
use wasmtime::component::{Component, Instance, InstancePre};

use crate::batch::BatchWorld;
use crate::engine::{HostState, Plugin};
use crate::error::PluginError;
use crate::instance::{self, World, load_failed};
use crate::sandbox::Limits;
use crate::worlds::{Descriptor, PluginKind, no_host_imports};

// Generated for the `configurable-deserializer` world, which exports both interfaces; the
// host loads each interface on its own, so `configure` stays optional.
bindings!("../../wit", "configurable-deserializer");

pub(crate) use bindings::exports::sluice::plugin::configure::{self, OptionEntry};
pub use bindings::exports::sluice::plugin::raw_byte_handler::RawRecord;
pub(crate) use bindings::exports::sluice::plugin::raw_byte_handler::{self, Outcome};

const CONFIGURE: &str = "sluice:plugin/configure@0.1.0";
pub(crate) const WORLD: &str = "sluice:plugin/deserializer@0.1.0";
pub(crate) const CONFIGURABLE_WORLD: &str = "sluice:plugin/configurable-deserializer@0.1.0";

/// The world on the list of `crate::worlds` (last: the fallback for a component that exports
/// no interface sluice knows).
pub(crate) static DESCRIPTOR: Descriptor = Descriptor {
    interface: "sluice:plugin/raw-byte-handler@0.1.0",
    world: WORLD,
    kind: PluginKind::Deserializer,
    host_imports: &[],
    add_to_linker: no_host_imports,
    identify,
};

/// Whether `component` implements the world, and which variant: `configure` may be absent,
/// but present and mistyped is an error, like a missing or mistyped `raw-byte-handler`.
fn identify(pre: &InstancePre<HostState>, component: &Component) -> Result<&'static str, String> {
    raw_byte_handler::GuestIndices::new(pre).map_err(|e| format!("{e:#}"))?;
    match configure::GuestIndices::new(pre) {
        Ok(_) => Ok(CONFIGURABLE_WORLD),
        Err(_) if component.get_export_index(None, CONFIGURE).is_none() => Ok(WORLD),
        Err(e) => Err(format!("{e:#}")),
    }
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
    const KIND: PluginKind = PluginKind::Deserializer;
    type Exports = Exports;
    type Setup = Vec<OptionEntry>;
    type Guest = Guest;

    fn exports(plugin: &Plugin) -> Result<Exports, PluginError> {
        let pre = &plugin.inner.pre;
        let wrong_world = |e| plugin.wrong_world(e);
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
        let handler = exports
            .handler
            .load(&mut *store, instance)
            .map_err(|e| load_failed(plugin, &e, limits))?;
        if let Some(configure) = &exports.configure {
            let configure = configure
                .load(&mut *store, instance)
                .map_err(|e| load_failed(plugin, &e, limits))?;
            instance::configure(plugin, store, limits, |store| {
                configure.call_configure(store, options)
            })?;
        }
        Ok(Guest { handler })
    }
}

impl BatchWorld for Deserializer {
    const CALL: &'static str = "deserialize-batch";
    type Input = RawRecord;
    type Output = Outcome;

    fn origin(input: &RawRecord) -> &str {
        &input.origin
    }

    fn call<'a>(
        guest: &'a Guest,
        store: &'a mut Store<HostState>,
        batch: &'a [RawRecord],
    ) -> impl Future<Output = wasmtime::Result<Vec<Outcome>>> + Send + 'a {
        guest.handler.call_deserialize_batch(store, batch)
    }
}
