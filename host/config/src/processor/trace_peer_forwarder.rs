//! `trace_peer_forwarder`: Data Prepper's `TracePeerForwarderProcessorConfig`, which has no
//! keys. Data Prepper forwards each span to the peer that owns its trace id, so that
//! `otel_traces` and `service_map` see whole traces across hosts; in sluice the Kafka buffer
//! already does this for the OTLP sources (their protobuf trace exports are keyed by trace id),
//! so the processor passes events on unchanged (see `sluice-processors`).

use serde::Deserialize;

use super::ProcessorConfig;

/// ```yaml
/// - trace_peer_forwarder:
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TracePeerForwarder {}

impl ProcessorConfig for TracePeerForwarder {}
