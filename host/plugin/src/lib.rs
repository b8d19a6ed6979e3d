//! The WebAssembly component host: loads plugin components, knows which WIT world each
//! implements, sandboxes them and calls them once per batch. The host is generic; each world
//! is one adapter under [`worlds`].
//!
//! # Layout
//! - [`engine`]: the process's engines (Cranelift's, and Winch's for a fast first start) and
//!   linkers, the epoch tickers, loading and compiling components, and recognising their world
//!   at load (from the list in [`worlds`]).
//! - `cache`: compiled components on disk, by sha256 and engine hash; used only from an
//!   owner-only folder, each entry checked (a keyed MAC) before it is deserialized.
//! - `precompiled`: the artefact `sluice plugins build` leaves beside a component, used when
//!   its file and folder are owner-only and it names the component and the engine.
//! - `sandbox`: one instance's store (nothing granted, memory capped) and the per-call
//!   deadline that ends computing and waiting alike.
//! - `instance`: the one instance lifecycle of every world: instantiate and set up under the
//!   deadline, call, recycle, discard after a fault; counters ([`CallStats`]).
//! - `batch`: the batch policy of the batch worlds: retry on a fresh instance, then halve to
//!   isolate the records that fail alone.
//! - [`worlds`]: [`PluginKind`], the one list of worlds (interface, world, kind, host imports)
//!   and one file per world (its `bindgen!`, exports, setup, call and typed front):
//!   [`worlds::deserializer`] (contract 0.1.0), [`worlds::deserializer_v2`],
//!   [`worlds::processor`] ([`Processor`]) and [`worlds::buffer`] ([`BufferPolicy`]), all 0.2,
//!   and [`worlds::processor_v3`] (0.3: a processor that sees event metadata);
//!   `worlds::spans`, the 0.2 batch staging and reply checks they share.
//! - `decoder`: [`Decoder`], the deserializer front the workers call, for either contract.
//! - `events`: [`Events`], a record's events as the plugin left them (strings or spans).
//! - [`catalog`]: every plugin by name, and hot reload: a changed file is compiled and
//!   type-checked off the hot path, then published to the workers, who switch between batches.
//! - [`error`]: [`PluginError`], naming the plugin and its file.
//! - `guest_log`: a plugin's stdout/stderr, routed to tracing at debug level.
//! - [`testing`]: hand-written hostile components for tests (hidden from the docs).
//!
//! Data flow: `PluginHost::load_*` / [`Catalog::load_dir`] → [`Plugin`] (shared, immutable,
//! knows its world and [`Plugin::kind`]) → a world's front per worker ([`Decoder::new`],
//! [`Processor::new`], [`BufferPolicy::new`]: each refuses a plugin of another kind) → one call
//! per batch → one outcome per record (a policy: one answer per call).

mod batch;
mod cache;
pub mod catalog;
mod decoder;
pub mod engine;
pub mod error;
mod events;
mod guest_log;
mod instance;
mod precompiled;
mod sandbox;
#[doc(hidden)]
pub mod testing;
pub mod worlds;

pub use catalog::{Catalog, Reload};
pub use decoder::{Decoded, Decoder, DecoderStats};
pub use engine::{Code, Plugin, PluginHost, capability};
pub use error::PluginError;
pub use events::Events;
pub use instance::CallStats;
pub use sandbox::Limits;
pub use worlds::PluginKind;
pub use worlds::buffer::BufferPolicy;
pub use worlds::deserializer::RawRecord;
pub use worlds::processor::{Event, EventMetadata, Processed, Processor, ProcessorStats};
