//! The WebAssembly plugin host: loads deserializer components that implement
//! `wit/deserializer.wit`, sandboxes them, and calls them once per batch.
//!
//! # Layout
//! - `bindings`: the one `bindgen!` for the WIT world.
//! - [`engine`]: the process-wide engine and linker, the epoch ticker, loading and compiling
//!   components, type-checking them at load.
//! - `cache`: compiled components on disk, by sha256 and engine hash; used only from an
//!   owner-only folder, each entry checked (HMAC) before it is deserialized.
//! - [`decoder`]: one sandboxed instance per worker, the per-call deadline and memory cap, and
//!   the trap policy (fresh instance, one retry, then isolate the record that traps).
//! - [`catalog`]: every plugin by name, and hot reload: a changed file is compiled and
//!   type-checked off the hot path, then published to the workers, who switch between batches.
//! - [`error`]: [`PluginError`], naming the plugin and its file.
//! - `guest_log`: a plugin's stdout/stderr, routed to tracing at debug level.
//!
//! Data flow: `PluginHost::load_*` / [`Catalog::load_dir`] → [`Plugin`] (shared, immutable) → [`Decoder::new`] per
//! worker → [`Decoder::decode`] per batch → one [`Decoded`] per record.

mod bindings;
mod cache;
pub mod catalog;
pub mod decoder;
pub mod engine;
pub mod error;
mod guest_log;
#[doc(hidden)]
pub mod testing;

pub use bindings::RawRecord;
pub use catalog::{Catalog, Reload};
pub use decoder::{Decoded, Decoder, DecoderStats, Limits};
pub use engine::{Plugin, PluginHost, capability};
pub use error::PluginError;
