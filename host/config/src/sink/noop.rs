//! The `noop` sink (Data Prepper's): takes every event and keeps none.

use serde::Deserialize;

/// The `noop` sink: acknowledges every event it takes and writes it nowhere, for a pipeline
/// whose point is what its processors do (or that is measured without a destination). It
/// takes no options.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoopSink {}

impl super::SinkConfig for NoopSink {
    fn name(&self) -> String {
        "noop".to_owned()
    }
}

crate::resolve::resolves_to_itself!(NoopSink);
