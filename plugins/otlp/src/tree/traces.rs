//! An `ExportTraceServiceRequest` to one event per span, as Data Prepper's `otel_trace_source`
//! writes them: `JacksonSpan` (`opensearch`: with the trace group, `status.code`) or
//! `JacksonStandardSpan` (`otel`: `status` an object, `flags` and `schemaUrl`; Data Prepper
//! keeps its service name and trace group in the event's metadata, which sluice events do not
//! have).

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use serde_json::{Map, Value, json};

use super::common::{Format, Origin, decode, hex, iso_time};

/// The events of one request (protobuf, or OTLP/JSON when `json`), or why it is not one.
pub fn events(payload: &[u8], json: bool, format: Format) -> Result<Vec<Value>, String> {
    let request: ExportTraceServiceRequest = decode(payload, json, "trace")?;
    let mut events = Vec::new();
    for rs in &request.resource_spans {
        for ss in &rs.scope_spans {
            let origin = Origin {
                resource: rs.resource.as_ref(),
                resource_schema_url: &rs.schema_url,
                scope: ss.scope.as_ref(),
                scope_schema_url: &ss.schema_url,
            };
            for span in &ss.spans {
                let mut e = Map::new();
                let duration = span
                    .end_time_unix_nano
                    .saturating_sub(span.start_time_unix_nano);
                let end = iso_time(span.end_time_unix_nano);
                let root = span.parent_span_id.is_empty();
                let status_code = span.status.as_ref().map_or(0, |s| s.code);
                e.insert("traceId".into(), hex(&span.trace_id).into());
                e.insert("spanId".into(), hex(&span.span_id).into());
                e.insert("parentSpanId".into(), hex(&span.parent_span_id).into());
                e.insert("traceState".into(), span.trace_state.clone().into());
                e.insert("name".into(), span.name.clone().into());
                e.insert(
                    "kind".into(),
                    SpanKind::try_from(span.kind)
                        .map_or("SPAN_KIND_UNSPECIFIED", |k| k.as_str_name())
                        .into(),
                );
                e.insert(
                    "startTime".into(),
                    iso_time(span.start_time_unix_nano).into(),
                );
                e.insert("endTime".into(), end.clone().into());
                e.insert("durationInNanos".into(), duration.into());
                e.insert(
                    "droppedAttributesCount".into(),
                    span.dropped_attributes_count.into(),
                );
                e.insert(
                    "events".into(),
                    span.events
                        .iter()
                        .map(|ev| {
                            json!({
                                "name": ev.name,
                                "time": iso_time(ev.time_unix_nano),
                                "attributes": format.attribute_map("", &ev.attributes),
                                "droppedAttributesCount": ev.dropped_attributes_count,
                            })
                        })
                        .collect(),
                );
                e.insert(
                    "droppedEventsCount".into(),
                    span.dropped_events_count.into(),
                );
                e.insert(
                    "links".into(),
                    span.links
                        .iter()
                        .map(|l| {
                            json!({
                                "traceId": hex(&l.trace_id),
                                "spanId": hex(&l.span_id),
                                "traceState": l.trace_state,
                                "attributes": format.attribute_map("", &l.attributes),
                                "droppedAttributesCount": l.dropped_attributes_count,
                            })
                        })
                        .collect(),
                );
                e.insert("droppedLinksCount".into(), span.dropped_links_count.into());
                match format {
                    Format::Opensearch => {
                        // The trace's group is its root span's name, and its fields the root's.
                        if root {
                            e.insert("traceGroup".into(), span.name.clone().into());
                            e.insert(
                                "traceGroupFields".into(),
                                json!({"endTime": end, "durationInNanos": duration, "statusCode": status_code}),
                            );
                        } else {
                            e.insert("traceGroup".into(), Value::Null);
                            e.insert("traceGroupFields".into(), json!({}));
                        }
                        e.insert("status.code".into(), status_code.into());
                        if let Some(s) = span.status.as_ref().filter(|s| !s.message.is_empty()) {
                            e.insert("status.message".into(), s.message.clone().into());
                        }
                    }
                    Format::Otel => {
                        let message = span.status.as_ref().map_or("", |s| s.message.as_str());
                        e.insert(
                            "status".into(),
                            json!({"code": status_code, "message": message}),
                        );
                        e.insert("flags".into(), span.flags.into());
                        e.insert("schemaUrl".into(), format.schema_url(&origin));
                    }
                }
                format.attributes(&mut e, "span.attributes.", &span.attributes);
                format.origin(&mut e, &origin);
                events.push(Value::Object(e));
            }
        }
    }
    Ok(events)
}
