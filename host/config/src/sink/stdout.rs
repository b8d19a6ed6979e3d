//! The `stdout` sink: each event as one JSON line on standard output.

use serde::Deserialize;

/// The `stdout` sink. It takes no options.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StdoutSink {}

impl super::SinkConfig for StdoutSink {
    fn name(&self) -> String {
        "stdout".to_owned()
    }
}

crate::resolve::resolves_to_itself!(StdoutSink);
