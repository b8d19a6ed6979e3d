//! The WebAssembly component host: loads plugin components, knows which WIT world each
//! implements, sandboxes them and calls them once per batch. The host is generic; each world
//! is one adapter under [`worlds`].
//!
//! # Layout
//! - [`engine`]: the process-wide engine and linker, the epoch ticker, loading and compiling
//!   components, and recognising their world at load.
//! - `cache`: compiled components on disk, by sha256 and engine hash; used only from an
//!   owner-only folder, each entry checked (HMAC) before it is deserialized.
//! - `sandbox`: one instance's store (nothing granted, memory capped) and the per-call
//!   deadline that ends computing and waiting alike.
//! - `runner`: the call policy for any world: a fresh instance after a fault, one retry,
//!   then isolating the records that fail alone; recycling; counters.
//! - [`worlds`]: one adapter per WIT world (its `bindgen!`, exports, setup and batch call):
//!   [`worlds::deserializer`] (contract 0.1.0) and [`worlds::deserializer_v2`] (0.2).
//! - `decoder`: [`Decoder`], the deserializer front the workers call, for either contract.
//! - `events`: [`Events`], a record's events as the plugin left them (strings or spans).
//! - [`catalog`]: every plugin by name, and hot reload: a changed file is compiled and
//!   type-checked off the hot path, then published to the workers, who switch between batches.
//! - [`error`]: [`PluginError`], naming the plugin and its file.
//! - `guest_log`: a plugin's stdout/stderr, routed to tracing at debug level.
//!
//! Data flow: `PluginHost::load_*` / [`Catalog::load_dir`] → [`Plugin`] (shared, immutable,
//! knows its world) → a world adapter per worker ([`Decoder::new`]) → one call per batch
//! ([`Decoder::decode`]) → one outcome per record.

mod cache;
pub mod catalog;
mod decoder;
pub mod engine;
pub mod error;
mod events;
mod guest_log;
mod runner;
mod sandbox;
#[doc(hidden)]
pub mod testing;
pub mod worlds;

pub use catalog::{Catalog, Reload};
pub use decoder::{Decoded, Decoder, DecoderStats};
pub use engine::{Plugin, PluginHost, capability};
pub use error::PluginError;
pub use events::Events;
pub use runner::CallStats;
pub use sandbox::Limits;
pub use worlds::buffer::BufferPolicy;
pub use worlds::deserializer::RawRecord;
pub use worlds::processor::{Event, Processed, Processor, ProcessorStats};
