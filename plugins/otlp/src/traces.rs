//! An `ExportTraceServiceRequest` to one event per span, as Data Prepper's `otel_trace_source`
//! writes them: `JacksonSpan` (`opensearch`: with the trace group, `status.code`) or
//! `JacksonStandardSpan` (`otel`: `status` an object, `flags` and `schemaUrl`; Data Prepper
//! keeps its service name and trace group in the event's metadata, which sluice events do not
//! have).

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;

use super::common::{Format, Origin, decode};
use super::write::{Events, Object, Value, array};

/// Writes the events of one request (protobuf, or OTLP/JSON when `json`) into `events`: how
/// many, or why it is not one (then nothing is written).
pub(crate) fn events(
    payload: &[u8],
    json: bool,
    format: Format,
    events: &mut Events,
) -> Result<u32, String> {
    let request: ExportTraceServiceRequest = decode(payload, json, "trace")?;
    let mut count = 0;
    for rs in &request.resource_spans {
        for ss in &rs.scope_spans {
            let origin = Origin {
                resource: rs.resource.as_ref(),
                resource_schema_url: &rs.schema_url,
                scope: ss.scope.as_ref(),
                scope_schema_url: &ss.schema_url,
            };
            for span in &ss.spans {
                let duration = span
                    .end_time_unix_nano
                    .saturating_sub(span.start_time_unix_nano);
                let root = span.parent_span_id.is_empty();
                let status_code = span.status.as_ref().map_or(0, |s| s.code);
                let span_events = |out: &mut Vec<u8>| {
                    array(out, &span.events, |out, ev| {
                        let mut o = Object::new();
                        o.put("name", Value::Str(&ev.name));
                        o.put("time", Value::Time(ev.time_unix_nano));
                        o.put("attributes", format.attribute_map("", &ev.attributes));
                        o.put(
                            "droppedAttributesCount",
                            Value::U64(ev.dropped_attributes_count.into()),
                        );
                        o.write(out);
                    });
                };
                let links = |out: &mut Vec<u8>| {
                    array(out, &span.links, |out, l| {
                        let mut o = Object::new();
                        o.put("traceId", Value::Hex(&l.trace_id));
                        o.put("spanId", Value::Hex(&l.span_id));
                        o.put("traceState", Value::Str(&l.trace_state));
                        o.put("attributes", format.attribute_map("", &l.attributes));
                        o.put(
                            "droppedAttributesCount",
                            Value::U64(l.dropped_attributes_count.into()),
                        );
                        o.write(out);
                    });
                };
                // The trace's group is its root span's name, and its fields the root's.
                let group_fields = |out: &mut Vec<u8>| {
                    let mut o = Object::new();
                    if root {
                        o.put("endTime", Value::Time(span.end_time_unix_nano));
                        o.put("durationInNanos", Value::U64(duration));
                        o.put("statusCode", Value::I64(status_code.into()));
                    }
                    o.write(out);
                };
                let status = |out: &mut Vec<u8>| {
                    let mut o = Object::new();
                    o.put("code", Value::I64(status_code.into()));
                    let message = span.status.as_ref().map_or("", |s| s.message.as_str());
                    o.put("message", Value::Str(message));
                    o.write(out);
                };
                let mut e = Object::new();
                e.put("traceId", Value::Hex(&span.trace_id));
                e.put("spanId", Value::Hex(&span.span_id));
                e.put("parentSpanId", Value::Hex(&span.parent_span_id));
                e.put("traceState", Value::Str(&span.trace_state));
                e.put("name", Value::Str(&span.name));
                e.put(
                    "kind",
                    Value::Str(
                        SpanKind::try_from(span.kind)
                            .map_or("SPAN_KIND_UNSPECIFIED", |k| k.as_str_name()),
                    ),
                );
                e.put("startTime", Value::Time(span.start_time_unix_nano));
                e.put("endTime", Value::Time(span.end_time_unix_nano));
                e.put("durationInNanos", Value::U64(duration));
                e.put(
                    "droppedAttributesCount",
                    Value::U64(span.dropped_attributes_count.into()),
                );
                e.put("events", Value::With(&span_events));
                e.put(
                    "droppedEventsCount",
                    Value::U64(span.dropped_events_count.into()),
                );
                e.put("links", Value::With(&links));
                e.put(
                    "droppedLinksCount",
                    Value::U64(span.dropped_links_count.into()),
                );
                match format {
                    Format::Opensearch => {
                        let group = if root {
                            Value::Str(&span.name)
                        } else {
                            Value::Null
                        };
                        e.put("traceGroup", group);
                        e.put("traceGroupFields", Value::With(&group_fields));
                        e.put("status.code", Value::I64(status_code.into()));
                        if let Some(s) = span.status.as_ref().filter(|s| !s.message.is_empty()) {
                            e.put("status.message", Value::Str(&s.message));
                        }
                    }
                    Format::Otel => {
                        e.put("status", Value::With(&status));
                        e.put("flags", Value::U64(span.flags.into()));
                        e.put("schemaUrl", format.schema_url(&origin));
                    }
                }
                format.attributes(&mut e, "span.attributes.", &span.attributes);
                format.origin(&mut e, &origin);
                events.push(e);
                count += 1;
            }
        }
    }
    Ok(count)
}
