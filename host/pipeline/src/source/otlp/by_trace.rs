//! Buffer records by trace: an OTLP/protobuf trace export is split by trace id, each part keeps
//! its spans' resource and scope, and the record is keyed by a trace id (hex). A Kafka buffer
//! partitions by key, so every span of a trace lands on one partition, hence on one
//! host of the consumer group: `otel_traces` and `service_map` see whole traces however many
//! hosts share the buffer (Data Prepper forwards to peers for this).
//!
//! An export of one trace is kept as the client encoded it; one of several is split at the wire
//! level (its spans, resources and scopes copied as encoded, not decoded and encoded again),
//! one message per partition its traces go to (the traces whose keys go to the same partition
//! share one record): an export of 100 traces makes as many records as the topic has
//! partitions at most, not 100. A buffer that cannot tell the partition gets one per trace.
//! OTLP/JSON bodies, and bytes that are not protobuf, stay whole and unkeyed (the deserializer
//! reports what is wrong with them). Only for a Kafka buffer: an in-memory one has no
//! partitions, and counts its room in records.

use std::collections::HashMap;

/// `payload` as (trace id in hex, message) parts: one per partition its traces go to
/// (`partition` of a trace id in hex, as the buffer answers it), keyed by the first trace of
/// the part; one per trace where `partition` is `None`. In the order their first span came.
/// An export whose traces all go to one part is kept as the client encoded it. `None` when it
/// is not protobuf or has no span.
///
/// The export is read at the wire level, not decoded: the spans, resources and scopes are
/// copied into the parts as the client encoded them, and only their framing (tags and lengths)
/// is written anew. Each part's `ResourceSpans` hold the resource's fields and then its
/// `ScopeSpans`, each holding the scope's fields and then its spans, in the order they came.
pub(crate) fn split(
    payload: &[u8],
    partition: impl Fn(&[u8]) -> Option<u32>,
) -> Option<Vec<(String, Vec<u8>)>> {
    let mut resources = scan(payload)?;
    // Each trace id once, with its part; each part's key (its first trace) and partition.
    let mut part_of: HashMap<&[u8], usize> = HashMap::new();
    let mut parts: Vec<(String, Option<u32>)> = Vec::new();
    for span in resources
        .iter_mut()
        .flat_map(|r| &mut r.scopes)
        .flat_map(|s| &mut s.spans)
    {
        let part = match part_of.get(span.trace) {
            Some(&part) => part,
            None => {
                let trace = hex::encode(span.trace);
                let p = partition(trace.as_bytes());
                let part = match parts.iter().position(|(_, q)| p.is_some() && *q == p) {
                    Some(part) => part,
                    None => {
                        parts.push((trace, p));
                        parts.len() - 1
                    }
                };
                part_of.insert(span.trace, part);
                part
            }
        };
        span.part = part;
    }
    match parts.len() {
        0 => return None,
        1 => return Some(vec![(parts.remove(0).0, payload.to_vec())]),
        _ => {}
    }
    // Each scope's spans by part (in their order within a part), so that part `p` takes the
    // next run of each scope's spans: every span is visited once however many parts there are.
    for scope in resources.iter_mut().flat_map(|r| &mut r.scopes) {
        scope.spans.sort_by_key(|s| s.part);
    }
    let mut cursors: Vec<Vec<usize>> = resources.iter().map(|r| vec![0; r.scopes.len()]).collect();
    let mut out = Vec::with_capacity(parts.len());
    for (part, (key, _)) in parts.into_iter().enumerate() {
        let mut message = Vec::with_capacity(payload.len() / 2);
        for (resource, cursors) in resources.iter().zip(&mut cursors) {
            // This part's run of each scope's spans.
            let runs: Vec<&[Span<'_>]> = resource
                .scopes
                .iter()
                .zip(cursors.iter_mut())
                .map(|(scope, at)| {
                    let run = scope.spans[*at..]
                        .iter()
                        .take_while(|s| s.part == part)
                        .count();
                    *at += run;
                    &scope.spans[*at - run..*at]
                })
                .collect();
            if runs.iter().all(|run| run.is_empty()) {
                continue;
            }
            let scope_lens: Vec<usize> = resource
                .scopes
                .iter()
                .zip(&runs)
                .map(|(scope, run)| {
                    scope.fields.iter().map(|f| f.len()).sum::<usize>()
                        + run.iter().map(|s| framed(s.body.len())).sum::<usize>()
                })
                .collect();
            let resource_len = resource.fields.iter().map(|f| f.len()).sum::<usize>()
                + runs
                    .iter()
                    .zip(&scope_lens)
                    .filter(|(run, _)| !run.is_empty())
                    .map(|(_, &len)| framed(len))
                    .sum::<usize>();
            // ExportTraceServiceRequest.resource_spans = 1
            frame(&mut message, 1, resource_len);
            resource
                .fields
                .iter()
                .for_each(|f| message.extend_from_slice(f));
            for ((scope, run), &len) in resource.scopes.iter().zip(&runs).zip(&scope_lens) {
                if run.is_empty() {
                    continue;
                }
                // ResourceSpans.scope_spans = 2
                frame(&mut message, 2, len);
                scope
                    .fields
                    .iter()
                    .for_each(|f| message.extend_from_slice(f));
                for span in *run {
                    // ScopeSpans.spans = 2
                    frame(&mut message, 2, span.body.len());
                    message.extend_from_slice(span.body);
                }
            }
        }
        out.push((key, message));
    }
    Some(out)
}

/// A `ResourceSpans` as read off the wire: its other fields (the resource, the schema URL, any
/// unknown field) each as encoded, and its scopes.
struct Resource<'a> {
    fields: Vec<&'a [u8]>,
    scopes: Vec<Scope<'a>>,
}

/// A `ScopeSpans`: its other fields (the scope, the schema URL, ...) as encoded, and its spans.
struct Scope<'a> {
    fields: Vec<&'a [u8]>,
    spans: Vec<Span<'a>>,
}

/// A span: its encoding, its trace id, and the part it goes to.
struct Span<'a> {
    body: &'a [u8],
    trace: &'a [u8],
    part: usize,
}

/// Reads an `ExportTraceServiceRequest` down to its spans' trace ids; `None` when it is not
/// protobuf of that shape.
fn scan(payload: &[u8]) -> Option<Vec<Resource<'_>>> {
    let mut resources = Vec::new();
    let mut request = payload;
    while !request.is_empty() {
        // Only `resource_spans` (1) is known; another field would not survive a decode either.
        let body = match field(&mut request)? {
            (1, Some(body), _) => body,
            (1, None, _) => return None,
            _ => continue,
        };
        let mut resource = Resource {
            fields: Vec::new(),
            scopes: Vec::new(),
        };
        let mut rest = body;
        while !rest.is_empty() {
            match field(&mut rest)? {
                (2, Some(body), _) => resource.scopes.push(scan_scope(body)?),
                (2, None, _) => return None,
                (_, _, whole) => resource.fields.push(whole),
            }
        }
        resources.push(resource);
    }
    Some(resources)
}

fn scan_scope(body: &[u8]) -> Option<Scope<'_>> {
    let mut scope = Scope {
        fields: Vec::new(),
        spans: Vec::new(),
    };
    let mut rest = body;
    while !rest.is_empty() {
        match field(&mut rest)? {
            (2, Some(span), _) => {
                // Span.trace_id = 1; the last one wins, as in a decode; none reads as empty.
                let mut trace: &[u8] = &[];
                let mut fields = span;
                while !fields.is_empty() {
                    match field(&mut fields)? {
                        (1, Some(id), _) => trace = id,
                        (1, None, _) => return None,
                        _ => {}
                    }
                }
                scope.spans.push(Span {
                    body: span,
                    trace,
                    part: 0,
                });
            }
            (2, None, _) => return None,
            (_, _, whole) => scope.fields.push(whole),
        }
    }
    Some(scope)
}

/// A field as read off the wire: its number, its value when it is length-delimited, and its
/// whole encoding (tag included).
type Field<'a> = (u64, Option<&'a [u8]>, &'a [u8]);

/// The next field of a message at `buf` (which it moves past); `None` when `buf` does not hold
/// a field.
fn field<'a>(buf: &mut &'a [u8]) -> Option<Field<'a>> {
    let start = *buf;
    let key = varint(buf)?;
    let value = match key & 7 {
        0 => {
            varint(buf)?;
            None
        }
        1 => {
            *buf = buf.get(8..)?;
            None
        }
        2 => {
            let len = usize::try_from(varint(buf)?).ok()?;
            let value = buf.get(..len)?;
            *buf = &buf[len..];
            Some(value)
        }
        5 => {
            *buf = buf.get(4..)?;
            None
        }
        // Groups (3, 4) are not in OTLP; 6 and 7 do not exist.
        _ => return None,
    };
    let number = key >> 3;
    (number != 0).then_some((number, value, &start[..start.len() - buf.len()]))
}

fn varint(buf: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = buf.split_first()?;
        *buf = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Some(value);
        }
    }
    None
}

/// Writes the tag of length-delimited field `number` and `len`.
fn frame(out: &mut Vec<u8>, number: u8, len: usize) {
    out.push(number << 3 | 2);
    let mut v = len as u64;
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The bytes a length-delimited field of `len` bytes takes (field numbers below 16).
fn framed(len: usize) -> usize {
    let mut bytes = 2;
    let mut v = len >> 7;
    while v > 0 {
        bytes += 1;
        v >>= 7;
    }
    bytes + len
}

#[cfg(test)]
mod tests {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::common::v1::{
        AnyValue, InstrumentationScope, KeyValue, any_value,
    };
    use opentelemetry_proto::tonic::resource::v1::Resource;
    use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
    use prost::Message;

    use super::split;

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

    #[test]
    fn the_parts_hold_every_span_as_sent_under_its_own_resource_and_scope() {
        // Two resources, the second with two scopes; spans of four traces interleaved, with
        // fields set that the split never looks at.
        let mut whole = request(vec![
            ("a", (0..6).map(|i| span(i % 4, i)).collect()),
            ("b", (6..9).map(|i| span(i % 4, i)).collect()),
        ]);
        let mut second = whole.resource_spans[1].scope_spans[0].clone();
        second.scope = Some(InstrumentationScope {
            name: "other".into(),
            version: "2".into(),
            ..Default::default()
        });
        second.schema_url = "https://opentelemetry.io/schemas/1.26.0".into();
        second.spans = (9..12).map(|i| span(i % 4, i)).collect();
        whole.resource_spans[1].scope_spans.push(second);
        whole.resource_spans[0].schema_url = "https://example.com/schema".into();
        for s in whole
            .resource_spans
            .iter_mut()
            .flat_map(|r| &mut r.scope_spans)
            .flat_map(|s| &mut s.spans)
        {
            s.start_time_unix_nano = 1_700_000_000_000_000_000 + u64::from(s.span_id[0]);
            s.kind = 2;
        }
        let bytes = whole.encode_to_vec();
        // Traces 0 and 2 to partition 0, 1 and 3 to partition 1.
        let partition = |key: &[u8]| Some(u32::from(hex::decode(key).unwrap()[0] % 2));
        let parts = split(&bytes, partition).unwrap();
        assert_eq!(parts.len(), 2);
        // Every span once, in a part of its partition, under the resource and scope it came
        // under, in the order it came within them.
        for (p, (key, message)) in parts.iter().enumerate() {
            assert_eq!(partition(key.as_bytes()), Some(u32::try_from(p).unwrap()));
            let decoded = ExportTraceServiceRequest::decode(message.as_slice()).unwrap();
            let mut want = whole.clone();
            for rs in &mut want.resource_spans {
                for ss in &mut rs.scope_spans {
                    ss.spans.retain(|s| {
                        partition(hex::encode(&s.trace_id).as_bytes())
                            == Some(u32::try_from(p).unwrap())
                    });
                }
                rs.scope_spans.retain(|ss| !ss.spans.is_empty());
            }
            want.resource_spans.retain(|rs| !rs.scope_spans.is_empty());
            assert_eq!(decoded, want, "part {p}");
        }
        // One trace per part where the buffer cannot tell partitions.
        assert_eq!(split(&bytes, |_| None).unwrap().len(), 4);
    }

    #[test]
    fn bytes_that_are_not_a_whole_export_stay_whole() {
        let bytes = request(vec![("a", vec![span(1, 1), span(2, 2)])]).encode_to_vec();
        for cut in [1, bytes.len() / 2, bytes.len() - 1] {
            assert_eq!(split(&bytes[..cut], |_| None), None, "cut at {cut}");
        }
        // resource_spans as a number, not a message.
        assert_eq!(split(&[0x08, 0x01], |_| None), None);
    }
}
