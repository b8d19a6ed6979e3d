//! One buffer record per trace: an OTLP/protobuf trace export is split by trace id, each part
//! keeps its spans' resource and scope, and the record is keyed by the trace id (hex). A Kafka
//! buffer partitions by key, so every span of a trace lands on one partition, hence on one
//! host of the consumer group: `otel_traces` and `service_map` see whole traces however many
//! hosts share the buffer (Data Prepper forwards to peers for this).
//!
//! An export of one trace is kept as the client encoded it; one of several is re-encoded, one
//! message per trace. OTLP/JSON bodies, and protobuf that does not decode, stay whole and
//! unkeyed (the deserializer reports what is wrong with them). Only for a Kafka buffer: an
//! in-memory one has no partitions, and counts its room in records.

use std::collections::HashMap;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans};
use prost::Message;

/// `payload` as (trace id in hex, message) parts, one per trace, in the order their first span
/// came; `None` when it does not decode or has no span.
pub(crate) fn split(payload: &[u8]) -> Option<Vec<(String, Vec<u8>)>> {
    let request = ExportTraceServiceRequest::decode(payload).ok()?;
    // Each trace id once, in the order first seen, and where it is in that order.
    let mut ids: Vec<&[u8]> = Vec::new();
    let mut index: HashMap<&[u8], usize> = HashMap::new();
    for rs in &request.resource_spans {
        for ss in &rs.scope_spans {
            for span in &ss.spans {
                index.entry(&span.trace_id).or_insert_with(|| {
                    ids.push(&span.trace_id);
                    ids.len() - 1
                });
            }
        }
    }
    match ids.len() {
        0 => return None,
        1 => return Some(vec![(hex::encode(ids[0]), payload.to_vec())]),
        _ => {}
    }
    let mut parts: Vec<ExportTraceServiceRequest> =
        vec![ExportTraceServiceRequest::default(); ids.len()];
    for rs in &request.resource_spans {
        for ss in &rs.scope_spans {
            for span in &ss.spans {
                let part = &mut parts[index[span.trace_id.as_slice()]];
                // The resource and scope this span came under, made once per part.
                let same_resource = part
                    .resource_spans
                    .last()
                    .is_some_and(|r| r.resource == rs.resource && r.schema_url == rs.schema_url);
                if !same_resource {
                    part.resource_spans.push(ResourceSpans {
                        resource: rs.resource.clone(),
                        scope_spans: Vec::new(),
                        schema_url: rs.schema_url.clone(),
                    });
                }
                let resource = part.resource_spans.last_mut().expect("pushed above");
                let same_scope = resource
                    .scope_spans
                    .last()
                    .is_some_and(|s| s.scope == ss.scope && s.schema_url == ss.schema_url);
                if !same_scope {
                    resource.scope_spans.push(ScopeSpans {
                        scope: ss.scope.clone(),
                        spans: Vec::new(),
                        schema_url: ss.schema_url.clone(),
                    });
                }
                let scope = resource.scope_spans.last_mut().expect("pushed above");
                scope.spans.push(span.clone());
            }
        }
    }
    Some(
        ids.iter()
            .zip(parts)
            .map(|(id, part)| (hex::encode(id), part.encode_to_vec()))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use opentelemetry_proto::tonic::common::v1::{
        AnyValue, InstrumentationScope, KeyValue, any_value,
    };
    use opentelemetry_proto::tonic::resource::v1::Resource;
    use opentelemetry_proto::tonic::trace::v1::Span;

    use super::*;

    fn resource(service: &str) -> Option<Resource> {
        Some(Resource {
            attributes: vec![KeyValue {
                key: "service.name".into(),
                value: Some(AnyValue {
                    value: Some(any_value::Value::StringValue(service.into())),
                }),
                ..Default::default()
            }],
            ..Default::default()
        })
    }

    fn span(trace: u8, id: u8) -> Span {
        Span {
            trace_id: vec![trace; 16],
            span_id: vec![id; 8],
            name: format!("{trace}/{id}"),
            ..Default::default()
        }
    }

    fn request(resources: Vec<(&str, Vec<Span>)>) -> ExportTraceServiceRequest {
        ExportTraceServiceRequest {
            resource_spans: resources
                .into_iter()
                .map(|(service, spans)| ResourceSpans {
                    resource: resource(service),
                    scope_spans: vec![ScopeSpans {
                        scope: Some(InstrumentationScope {
                            name: "lib".into(),
                            ..Default::default()
                        }),
                        spans,
                        schema_url: String::new(),
                    }],
                    schema_url: String::new(),
                })
                .collect(),
        }
    }

    #[test]
    fn an_export_of_several_traces_becomes_one_message_per_trace_with_its_resources() {
        let whole = request(vec![
            ("a", vec![span(1, 1), span(2, 2), span(1, 3)]),
            ("b", vec![span(2, 4), span(3, 5)]),
        ]);
        let parts = split(&whole.encode_to_vec()).unwrap();
        let keys: Vec<&str> = parts.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "01010101010101010101010101010101",
                "02020202020202020202020202020202",
                "03030303030303030303030303030303"
            ]
        );
        let decoded: Vec<ExportTraceServiceRequest> = parts
            .iter()
            .map(|(_, m)| ExportTraceServiceRequest::decode(m.as_slice()).unwrap())
            .collect();
        assert_eq!(
            decoded[0],
            request(vec![("a", vec![span(1, 1), span(1, 3)])])
        );
        assert_eq!(
            decoded[1],
            request(vec![("a", vec![span(2, 2)]), ("b", vec![span(2, 4)])]),
            "each span under its own resource and scope"
        );
        assert_eq!(decoded[2], request(vec![("b", vec![span(3, 5)])]));
    }

    #[test]
    fn an_export_of_one_trace_is_kept_as_sent() {
        let bytes = request(vec![("a", vec![span(7, 1), span(7, 2)])]).encode_to_vec();
        assert_eq!(split(&bytes), Some(vec![("07".repeat(16), bytes)]));
        assert_eq!(split(b"\xff not protobuf"), None);
        assert_eq!(split(&request(vec![]).encode_to_vec()), None, "no span");
    }
}
