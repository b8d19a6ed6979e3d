//! The `otlp` component's code for traces, compiled natively: the plugin's own files, included
//! by path, so `sluice-bench otlp` can show what the Wasm boundary costs it.

#[path = "../../../plugins/otlp/src/common.rs"]
#[allow(
    dead_code,
    reason = "the plugin's file; the bench uses its traces path"
)]
pub(crate) mod common;
#[path = "../../../plugins/otlp/src/otel.rs"]
pub(crate) mod otel;
#[path = "../../../plugins/otlp/src/traces.rs"]
pub(crate) mod traces;
#[path = "../../../plugins/otlp/src/write.rs"]
#[allow(
    dead_code,
    reason = "the plugin's file; the bench uses its traces path"
)]
pub(crate) mod write;
