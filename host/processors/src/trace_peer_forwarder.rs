//! `trace_peer_forwarder`, as Data Prepper's `TracePeerForwarderProcessor`: passes every
//! event on unchanged. In Data Prepper the processor itself does nothing either; it marks the
//! pipeline for its peer forwarder, which sends each span to the host owning its `traceId`.
//! sluice has no peer forwarder: with a Kafka buffer, the OTLP sources key a protobuf trace
//! export's records by trace id, so a trace's spans go to one partition, hence to one host of
//! the consumer group (`sluice-pipeline`'s `source/otlp/by_trace.rs`). What that does not
//! cover is said in docs/processors.md.

use sluice_config::processor::trace_peer_forwarder as config;
use sluice_event::Event;

use crate::{Apply, BuildError, BuildProcessor, Failure, Fate};

/// `trace_peer_forwarder`, built: nothing to keep.
pub struct TracePeerForwarder;

impl BuildProcessor for config::TracePeerForwarder {
    type Processor = TracePeerForwarder;

    fn build(&self) -> Result<TracePeerForwarder, BuildError> {
        Ok(TracePeerForwarder)
    }
}

impl Apply for TracePeerForwarder {
    fn apply(&self, _event: &mut Event, _name: &'static str) -> Result<Fate, Failure> {
        Ok(Fate::Keep)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::testing::{invalid, processor, run};

    #[test]
    fn spans_pass_unchanged_and_the_processor_takes_no_keys() {
        let p = processor("trace_peer_forwarder:");
        let span = json!({"traceId": "ab", "spanId": "cd", "parentSpanId": ""});
        assert_eq!(run(&*p, span.clone()), Some(span));
        let e = invalid("trace_peer_forwarder:\n  discovery_mode: dns");
        assert!(e.contains("unknown field `discovery_mode`"), "{e}");
    }
}
