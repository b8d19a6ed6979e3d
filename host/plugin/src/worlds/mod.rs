//! The WIT worlds sluice hosts, one adapter each on the generic host (the `World` trait of
//! the crate's `runner`): the world's `bindgen!`, how to find its exports, its setup, its
//! batch call, and the typed front the pipeline uses.
//!
//! Adding a world (a processor, a buffer policy) is a new file here that implements `World`,
//! plus one line in `identify` so a loaded component is recognised as implementing it. The
//! engine, sandbox, cache, catalog and call policy do not change.

pub mod buffer;
pub mod deserializer;
pub mod deserializer_v2;
pub mod processor;

use wasmtime::component::{Component, InstancePre};

use crate::engine::HostState;

/// Which world a component implements: its name (as `sluice plugins inspect` shows it), or why
/// it implements none.
pub(crate) fn identify(
    pre: &InstancePre<HostState>,
    component: &Component,
) -> Result<&'static str, String> {
    // A component that exports a 0.2 interface is judged against 0.2, any other against
    // 0.1.0, so the error names what the plugin's author aimed at.
    let exports = |name| component.get_export_index(None, name).is_some();
    if exports(processor::INTERFACE) {
        processor::identify(pre, component)
    } else if exports(buffer::INTERFACE) {
        buffer::identify(pre, component)
    } else if exports(deserializer_v2::INTERFACE) {
        deserializer_v2::identify(pre, component)
    } else {
        deserializer::identify(pre, component)
    }
}
