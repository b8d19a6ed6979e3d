//! Buffer records by trace: an OTLP/protobuf trace export is split by trace id, each part keeps
//! its spans' resource and scope, and the record is keyed by a trace id (hex). A Kafka buffer
//! partitions by key, so every span of a trace lands on one partition, hence on one
//! host of the consumer group: `otel_traces` and `service_map` see whole traces however many
//! hosts share the buffer (Data Prepper forwards to peers for this).
//!
//! An export of one trace is kept as the client encoded it; one of several is re-encoded, one
//! message per partition its traces go to (the traces whose keys go to the same partition
//! share one record): an export of 100 traces makes as many records as the topic has
//! partitions at most, not 100. A buffer that cannot tell the partition gets one per trace. OTLP/JSON bodies, and protobuf that does not decode, stay whole and
//! unkeyed (the deserializer reports what is wrong with them). Only for a Kafka buffer: an
//! in-memory one has no partitions, and counts its room in records.

use std::collections::HashMap;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans};
use prost::Message;

/// `payload` as (trace id in hex, message) parts: one per partition its traces go to
/// (`partition` of a trace id in hex, as the buffer answers it), keyed by the first trace of
/// the part; one per trace where `partition` is `None`. In the order their first span came.
/// An export whose traces all go to one part is kept as the client encoded it. `None` when it
/// does not decode or has no span.
pub(crate) fn split(
    payload: &[u8],
    partition: impl Fn(&[u8]) -> Option<u32>,
) -> Option<Vec<(String, Vec<u8>)>> {
    let request = ExportTraceServiceRequest::decode(payload).ok()?;
    // Each trace id once, with its part; each part's key (its first trace) and partition.
    let mut part_of: HashMap<Vec<u8>, usize> = HashMap::new();
    let mut parts: Vec<(String, Option<u32>)> = Vec::new();
    for span in request
        .resource_spans
        .iter()
        .flat_map(|rs| &rs.scope_spans)
        .flat_map(|ss| &ss.spans)
    {
        if part_of.contains_key(&span.trace_id) {
            continue;
        }
        let trace = hex::encode(&span.trace_id);
        let p = partition(trace.as_bytes());
        let part = match parts.iter().position(|(_, q)| p.is_some() && *q == p) {
            Some(part) => part,
            None => {
                parts.push((trace, p));
                parts.len() - 1
            }
        };
        part_of.insert(span.trace_id.clone(), part);
    }
    match parts.len() {
        0 => return None,
        1 => return Some(vec![(parts.remove(0).0, payload.to_vec())]),
        _ => {}
    }
    let mut messages: Vec<ExportTraceServiceRequest> =
        vec![ExportTraceServiceRequest::default(); parts.len()];
    // The spans are moved, not copied; a part gets a copy of each resource and scope its spans
    // came under.
    for rs in request.resource_spans {
        let (resource, resource_schema) = (rs.resource, rs.schema_url);
        for ss in rs.scope_spans {
            let (scope, scope_schema) = (ss.scope, ss.schema_url);
            for span in ss.spans {
                let message = &mut messages[part_of[&span.trace_id]];
                let same_resource = message
                    .resource_spans
                    .last()
                    .is_some_and(|r| r.resource == resource && r.schema_url == resource_schema);
                if !same_resource {
                    message.resource_spans.push(ResourceSpans {
                        resource: resource.clone(),
                        scope_spans: Vec::new(),
                        schema_url: resource_schema.clone(),
                    });
                }
                let resource_spans = message.resource_spans.last_mut().expect("pushed above");
                let same_scope = resource_spans
                    .scope_spans
                    .last()
                    .is_some_and(|s| s.scope == scope && s.schema_url == scope_schema);
                if !same_scope {
                    resource_spans.scope_spans.push(ScopeSpans {
                        scope: scope.clone(),
                        spans: Vec::new(),
                        schema_url: scope_schema.clone(),
                    });
                }
                let scope_spans = resource_spans.scope_spans.last_mut().expect("pushed above");
                scope_spans.spans.push(span);
            }
        }
    }
    Some(
        parts
            .into_iter()
            .zip(messages)
            .map(|((key, _), message)| (key, message.encode_to_vec()))
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
        let parts = split(&whole.encode_to_vec(), |_| None).unwrap();
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
        assert_eq!(
            split(&bytes, |_| None),
            Some(vec![("07".repeat(16), bytes)])
        );
        assert_eq!(split(b"\xff not protobuf", |_| None), None);
        assert_eq!(
            split(&request(vec![]).encode_to_vec(), |_| None),
            None,
            "no span"
        );
    }

    #[test]
    fn traces_going_to_one_partition_share_a_record_keyed_by_the_first() {
        let whole = request(vec![(
            "a",
            vec![span(1, 1), span(2, 2), span(3, 3), span(1, 4), span(4, 5)],
        )]);
        // Traces 1 and 3 go to partition 0, 2 and 4 to partition 1.
        let partition = |key: &[u8]| {
            let id = hex::decode(key).unwrap()[0];
            Some(u32::from(id.is_multiple_of(2)))
        };
        let grouped = split(&whole.encode_to_vec(), partition).unwrap();
        let keys: Vec<&str> = grouped.iter().map(|(k, _)| &k[..2]).collect();
        assert_eq!(keys, ["01", "02"]);
        let decoded: Vec<ExportTraceServiceRequest> = grouped
            .iter()
            .map(|(_, m)| ExportTraceServiceRequest::decode(m.as_slice()).unwrap())
            .collect();
        assert_eq!(
            decoded[0],
            request(vec![("a", vec![span(1, 1), span(3, 3), span(1, 4)])])
        );
        assert_eq!(
            decoded[1],
            request(vec![("a", vec![span(2, 2), span(4, 5)])])
        );

        // Every trace to one partition: the export as it was sent, keyed by its first trace.
        let bytes = whole.encode_to_vec();
        assert_eq!(
            split(&bytes, |_| Some(3)),
            Some(vec![("01".repeat(16), bytes)])
        );
    }
}
