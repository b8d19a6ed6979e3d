#![allow(
    unsafe_code,
    reason = "bindgen! output builds typed functions with unsafe blocks (seen when WASMTIME_DEBUG_BINDGEN=1)"
)]
//! The one `bindgen!` of the host: Rust types and call stubs for `wit/deserializer.wit`.
//!
//! Generated for the `configurable-deserializer` world, which exports both interfaces; the host
//! loads each interface on its own, so `configure` stays optional (see `engine.rs`).

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "configurable-deserializer",
    // Calls are async so a guest waiting in a host call (a sleep, `poll`, a blocking stream)
    // can be cancelled at the deadline: see `decoder.rs`.
    exports: { default: async },
});

pub(crate) use exports::sluice::plugin::configure::OptionEntry;
pub(crate) use exports::sluice::plugin::raw_byte_handler::Outcome;
pub use exports::sluice::plugin::raw_byte_handler::RawRecord;
