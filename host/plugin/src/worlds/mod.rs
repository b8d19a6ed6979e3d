//! The WIT worlds sluice hosts: one file each, and `WORLDS`, the one list of them.
//!
//! A world's file holds its `bindgen!`, its `Descriptor` (which export makes a component one
//! of it, its name, its kind, the host interfaces it imports), how a fresh instance is set up
//! (the `World` trait of the crate's `instance` module) and, for the batch worlds, its batch
//! call (`BatchWorld` in `batch`), plus the typed front the pipeline uses.
//!
//! `WORLDS` serves recognising a component at load (`judged_against`, then the world's own
//! `identify`), the linker (each world's host imports) and the import allow-list. Adding a
//! world is a new file here plus one line in `WORLDS`; the engine, sandbox, cache, catalog,
//! instance lifecycle and batch policy do not change.
//!
//! - [`deserializer`]: contract 0.1.0's `deserializer` (and `configurable-deserializer`).
//! - [`deserializer_v2`]: 0.2's `deserializer-plugin`.
//! - [`processor`]: 0.2's `processor-plugin`, and the processor front for both contracts.
//! - [`processor_v3`]: 0.3's `processor-plugin` (0.2's with event metadata).
//! - [`buffer`]: 0.2's `buffer-plugin` (a buffer policy), with its `buffer-host` imports.
//! - `spans`: what the 0.2 batch worlds share: a batch staged in one buffer, parts of it for
//!   isolating a fault, and a reply's spans checked.

/// A world's `bindgen!` of the WIT at `$path` (from this crate), in a module `bindings`. Its
/// exports are async in every world, so the deadline can end a guest waiting in a host call
/// (a sleep, `poll`, a blocking stream): see `crate::sandbox`. Imports are plain functions
/// over the call's context. More `bindgen!` options may follow.
macro_rules! bindings {
    ($path:literal, $world:literal $(, $($more:tt)*)?) => {
        #[allow(
            unsafe_code,
            reason = "bindgen! output builds typed functions with unsafe blocks (seen when WASMTIME_DEBUG_BINDGEN=1)"
        )]
        mod bindings {
            wasmtime::component::bindgen!({
                path: $path,
                world: $world,
                exports: { default: async },
                $($($more)*)?
            });
        }
    };
}

/// What every 0.2 world's file has the same way, for the interface module `$main` of its
/// bindings (each `bindgen!` makes its own types, so this is a macro, not a generic): its
/// `identify` (the interface and `configure`, with exact types), its `Exports` (their indices,
/// looked up once), and loading a fresh instance (both exports, then `configure` with the
/// options under the deadline). Expects `configure` and `$main` in scope.
///
/// `configured_world!($main, $world, $kind)` also makes `$world` the `World` whose live
/// instance is `$main`'s guest and whose setup is the options, for a world with nothing else
/// to set up (the buffer policy asks its `describe` too, so writes its own).
macro_rules! configured_world {
    ($main:ident, $world:ident, $kind:ident) => {
        configured_world!($main);

        impl crate::instance::World for $world {
            const KIND: crate::worlds::PluginKind = crate::worlds::PluginKind::$kind;
            type Exports = Exports;
            type Setup = Vec<configure::OptionEntry>;
            type Guest = $main::Guest;

            fn exports(
                plugin: &crate::engine::Plugin,
            ) -> Result<Exports, crate::error::PluginError> {
                Exports::new(plugin)
            }

            fn load(
                plugin: &crate::engine::Plugin,
                exports: &Exports,
                store: &mut wasmtime::Store<crate::engine::HostState>,
                instance: &wasmtime::component::Instance,
                options: &Vec<configure::OptionEntry>,
                limits: crate::sandbox::Limits,
            ) -> Result<$main::Guest, crate::error::PluginError> {
                exports.load(plugin, store, instance, options, limits)
            }
        }
    };
    ($main:ident) => {
        /// Whether `component` implements the world (both exports, with their exact types).
        fn identify(
            pre: &wasmtime::component::InstancePre<crate::engine::HostState>,
            _: &wasmtime::component::Component,
        ) -> Result<&'static str, String> {
            $main::GuestIndices::new(pre).map_err(|e| format!("{e:#}"))?;
            configure::GuestIndices::new(pre).map_err(|e| format!("{e:#}"))?;
            Ok(DESCRIPTOR.world)
        }

        /// The world's export indices in one plugin.
        pub(crate) struct Exports {
            main: $main::GuestIndices,
            configure: configure::GuestIndices,
        }

        impl Exports {
            fn new(plugin: &crate::engine::Plugin) -> Result<Self, crate::error::PluginError> {
                let pre = &plugin.inner.pre;
                Ok(Self {
                    main: $main::GuestIndices::new(pre).map_err(|e| plugin.wrong_world(e))?,
                    configure: configure::GuestIndices::new(pre)
                        .map_err(|e| plugin.wrong_world(e))?,
                })
            }

            /// Loads a fresh instance's `$main` export and runs its `configure`.
            fn load(
                &self,
                plugin: &crate::engine::Plugin,
                store: &mut wasmtime::Store<crate::engine::HostState>,
                instance: &wasmtime::component::Instance,
                options: &[configure::OptionEntry],
                limits: crate::sandbox::Limits,
            ) -> Result<$main::Guest, crate::error::PluginError> {
                let failed = |e| crate::instance::load_failed(plugin, &e, limits);
                let main = self.main.load(&mut *store, instance).map_err(failed)?;
                let configure = self.configure.load(&mut *store, instance).map_err(failed)?;
                crate::instance::configure(plugin, store, limits, |store| {
                    configure.call_configure(store, options)
                })?;
                Ok(main)
            }
        }
    };
}

pub mod buffer;
pub mod deserializer;
pub mod deserializer_v2;
pub mod processor;
pub mod processor_v3;
pub(crate) mod spans;

use wasmtime::component::{Component, InstancePre, Linker};

use crate::engine::HostState;

/// What a plugin is for, whichever contract version its world belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PluginKind {
    /// Raw bytes in, events out: a source's `deserializer`.
    Deserializer,
    /// Events in, verdicts out: a pipeline's `processor` entry.
    Processor,
    /// Decides placement, admission and moves over a buffer's tiers.
    BufferPolicy,
}

impl PluginKind {
    /// As messages and `sluice plugins` name it.
    pub fn as_str(self) -> &'static str {
        match self {
            PluginKind::Deserializer => "deserializer",
            PluginKind::Processor => "processor",
            PluginKind::BufferPolicy => "buffer policy",
        }
    }

    /// The worlds of this kind, newest first, as an error names them (`` `a` or `b` ``).
    pub fn worlds(self) -> String {
        WORLDS
            .iter()
            .filter(|w| w.kind == self)
            .map(|w| format!("`{}`", w.world))
            .collect::<Vec<_>>()
            .join(" or ")
    }
}

impl std::fmt::Display for PluginKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One world sluice hosts.
pub(crate) struct Descriptor {
    /// The exported interface that makes a component one of this world (a component is judged
    /// against the first world whose interface it exports, so an error names what its author
    /// aimed at).
    pub(crate) interface: &'static str,
    /// The world's name, as `sluice plugins inspect` shows it.
    pub(crate) world: &'static str,
    pub(crate) kind: PluginKind,
    /// The host interfaces the world imports (beyond WASI and the contract's types), linked for
    /// every store and allowed as imports.
    pub(crate) host_imports: &'static [&'static str],
    /// Links those host interfaces.
    pub(crate) add_to_linker: fn(&mut Linker<HostState>) -> wasmtime::Result<()>,
    /// Whether a component implements the world, with exact types: the world's name (a world
    /// may have variants, as 0.1.0's optional `configure`), or why not.
    pub(crate) identify: fn(&InstancePre<HostState>, &Component) -> Result<&'static str, String>,
}

/// Every world sluice hosts. The last is the fallback a component that exports none of the
/// interfaces is judged against (the oldest contract, whose authors wrote no 0.2 export).
pub(crate) static WORLDS: &[&Descriptor] = &[
    &processor_v3::DESCRIPTOR,
    &processor::DESCRIPTOR,
    &buffer::DESCRIPTOR,
    &deserializer_v2::DESCRIPTOR,
    &deserializer::DESCRIPTOR,
];

/// The WIT names (`processor-plugin`) of the worlds of contract `version` (`0.2.0`), for tools
/// that build components (`sluice plugins build` passes the one a plugin's `wit/` declares).
pub fn wit_names(version: &str) -> impl Iterator<Item = &'static str> {
    WORLDS.iter().filter_map(move |w| {
        let (name, v) = w.world.strip_prefix("sluice:plugin/")?.split_once('@')?;
        (v == version).then_some(name)
    })
}

/// For worlds that import nothing from the host.
pub(crate) fn no_host_imports(_: &mut Linker<HostState>) -> wasmtime::Result<()> {
    Ok(())
}

/// Links every world's host interfaces.
pub(crate) fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    WORLDS.iter().try_for_each(|w| (w.add_to_linker)(linker))
}

/// Whether `import` is a host interface some world imports.
pub(crate) fn is_host_import(import: &str) -> bool {
    WORLDS.iter().any(|w| w.host_imports.contains(&import))
}

/// The world a component is judged against: the first whose interface it exports, else the
/// last (the fallback).
pub(crate) fn judged_against(component: &Component) -> &'static Descriptor {
    WORLDS
        .iter()
        .copied()
        .find(|w| component.get_export_index(None, w.interface).is_some())
        .unwrap_or(WORLDS[WORLDS.len() - 1])
}
