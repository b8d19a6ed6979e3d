//! `otel_traces` (formerly `otel_trace_raw`): fills each span's trace group from its trace's
//! root span, holding the spans that arrive before their root, as Data Prepper's
//! `OtelTraceRawProcessorConfig`.

use std::time::Duration;

use serde::Deserialize;

use super::ProcessorConfig;
use crate::error::Errors;

/// ```yaml
/// - otel_traces:
///     trace_flush_interval: 180
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OtelTraces {
    /// Time between two flushes of the spans held for want of their root span: a flush lets
    /// go (without a trace group) of the held spans of every trace first seen at least this
    /// long ago. Integer seconds as in Data Prepper, or a duration with its unit (`90s`).
    /// Default 180.
    #[serde(default = "flush_interval", deserialize_with = "crate::units::seconds")]
    pub trace_flush_interval: Duration,
    /// How long a root span's trace group is remembered for the spans of its trace that come
    /// after it (Data Prepper's `PT15S`). A span arriving later is held, then let go without.
    #[serde(default = "cache_ttl", deserialize_with = "crate::units::duration")]
    pub trace_group_cache_ttl: Duration,
    /// How many trace groups are remembered at most; past it the oldest is forgotten.
    /// Default 1000000.
    #[serde(default = "cache_max_size")]
    pub trace_group_cache_max_size: u64,
    /// sluice's, not Data Prepper's: how many spans are held at most (each holds back its
    /// batch's acknowledgement); past it the traces held longest are let go early, without a
    /// trace group, as a flush would. Default 100000.
    #[serde(default = "super::default_max_held_events")]
    pub max_held_events: usize,
}

fn flush_interval() -> Duration {
    Duration::from_secs(180)
}

fn cache_ttl() -> Duration {
    Duration::from_secs(15)
}

fn cache_max_size() -> u64 {
    1_000_000
}

impl ProcessorConfig for OtelTraces {
    fn check(&self, path: &str, errors: &mut Errors) {
        super::check_max_held_events(self.max_held_events, path, errors);
    }
}
