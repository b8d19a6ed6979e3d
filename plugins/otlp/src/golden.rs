//! The golden comparison: a large export of every signal, with every kind of value and the
//! awkward cases (keys that collide once their dots are written `@`, repeated keys, escapes,
//! numbers that are not finite, missing resources and scopes), written directly and through
//! the old `serde_json::Value` tree (`tree`), in both formats and both encodings: the bytes
//! of every event must be the same.

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::{
    AnyValue, ArrayValue, InstrumentationScope, KeyValue, KeyValueList,
};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use opentelemetry_proto::tonic::metrics::v1::{
    Exemplar, ExponentialHistogram, ExponentialHistogramDataPoint, Gauge, Histogram,
    HistogramDataPoint, Metric, NumberDataPoint, ResourceMetrics, ScopeMetrics, Sum, Summary,
    SummaryDataPoint, exemplar, exponential_histogram_data_point::Buckets, metric,
    number_data_point, summary_data_point::ValueAtQuantile,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status, span};
use prost::Message;

use crate::common::Format;
use crate::tree;
use crate::write::Events;

/// A small deterministic generator (xorshift), so a failure can be reproduced.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a, T>(&mut self, from: &'a [T]) -> &'a T {
        &from[self.below(from.len() as u64) as usize]
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn text(&mut self) -> String {
        self.pick(TEXTS).to_string()
    }
    fn bytes(&mut self) -> Vec<u8> {
        let len = *self.pick(&[0, 8, 16]);
        (0..len).map(|_| self.next() as u8).collect()
    }
    fn time(&mut self) -> u64 {
        match self.below(4) {
            0 => 0,
            1 => 1_700_000_000_000_000_000 + self.below(1_000) * 1_000_000,
            2 => 1_700_000_000_000_000_000 + self.below(1_000_000) * 1_000,
            _ => self.next() >> 1,
        }
    }
    fn double(&mut self) -> f64 {
        *self.pick(&[
            0.0,
            -0.0,
            0.1,
            1.5,
            -3.25e-7,
            1e300,
            f64::MAX,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            12345.678,
        ])
    }
    fn any(&mut self, depth: u32) -> Option<Any> {
        let kinds = if depth > 2 { 5 } else { 8 };
        Some(match self.below(kinds + 1) {
            0 => return None,
            1 => Any::StringValue(self.text()),
            2 => Any::BoolValue(self.chance(50)),
            3 => Any::IntValue(*self.pick(&[0, -1, 42, i64::MIN, i64::MAX])),
            4 => Any::DoubleValue(self.double()),
            5 => Any::StringValueStrindex(self.below(9) as i32),
            6 => Any::ArrayValue(ArrayValue {
                values: (0..self.below(4))
                    .map(|_| AnyValue {
                        value: self.any(depth + 1),
                    })
                    .collect(),
            }),
            7 => Any::KvlistValue(KeyValueList {
                values: self.attributes(depth + 1),
            }),
            _ => Any::BytesValue(self.bytes()),
        })
    }
    fn attributes(&mut self, depth: u32) -> Vec<KeyValue> {
        (0..self.below(6))
            .map(|_| KeyValue {
                key: self.pick(KEYS).to_string(),
                value: if self.chance(10) {
                    None
                } else {
                    Some(AnyValue {
                        value: self.any(depth),
                    })
                },
                ..Default::default()
            })
            .collect()
    }
    fn resource(&mut self) -> Option<Resource> {
        self.chance(80).then(|| {
            let mut attributes = self.attributes(0);
            if self.chance(70) {
                attributes.push(KeyValue {
                    key: "service.name".into(),
                    value: Some(AnyValue {
                        value: self.any(2),
                    }),
                    ..Default::default()
                });
            }
            Resource {
                attributes,
                dropped_attributes_count: self.below(3) as u32,
                ..Default::default()
            }
        })
    }
    fn scope(&mut self) -> Option<InstrumentationScope> {
        self.chance(80).then(|| InstrumentationScope {
            name: if self.chance(70) { self.text() } else { String::new() },
            version: if self.chance(50) { "1.2.3".into() } else { String::new() },
            attributes: self.attributes(0),
            dropped_attributes_count: self.below(2) as u32,
        })
    }
    fn exemplars(&mut self) -> Vec<Exemplar> {
        (0..self.below(3))
            .map(|_| Exemplar {
                filtered_attributes: self.attributes(0),
                time_unix_nano: self.time(),
                span_id: self.bytes(),
                trace_id: self.bytes(),
                value: match self.below(3) {
                    0 => None,
                    1 => Some(exemplar::Value::AsInt(-7)),
                    _ => Some(exemplar::Value::AsDouble(self.double())),
                },
            })
            .collect()
    }
}

/// Keys, among them some that collide once dots are written `@`, and some to escape.
const KEYS: &[&str] = &[
    "http.method",
    "http@method",
    "a",
    "a.b.c",
    "",
    "ключ",
    "quote\"d",
    "back\\slash",
    "ctl\u{1}\u{1f}",
    "service.name",
    "z",
];

const TEXTS: &[&str] = &[
    "",
    "GET",
    "checkout",
    "line\nbreak\ttab\r",
    "\u{8}\u{c}\u{0}\u{7f}",
    "émoji 🚀",
    "\"quoted\" and \\",
    "</script>",
];

fn logs(g: &mut Gen) -> ExportLogsServiceRequest {
    ExportLogsServiceRequest {
        resource_logs: (0..4)
            .map(|_| ResourceLogs {
                resource: g.resource(),
                scope_logs: (0..3)
                    .map(|_| ScopeLogs {
                        scope: g.scope(),
                        log_records: (0..20)
                            .map(|_| LogRecord {
                                time_unix_nano: g.time(),
                                observed_time_unix_nano: g.time(),
                                severity_number: g.below(25) as i32,
                                severity_text: g.text(),
                                body: g.chance(90).then(|| AnyValue { value: g.any(0) }),
                                attributes: g.attributes(0),
                                dropped_attributes_count: g.below(3) as u32,
                                flags: g.below(2) as u32,
                                trace_id: g.bytes(),
                                span_id: g.bytes(),
                                ..Default::default()
                            })
                            .collect(),
                        schema_url: g.text(),
                    })
                    .collect(),
                schema_url: g.text(),
            })
            .collect(),
    }
}

fn traces(g: &mut Gen) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: (0..4)
            .map(|_| ResourceSpans {
                resource: g.resource(),
                scope_spans: (0..3)
                    .map(|_| ScopeSpans {
                        scope: g.scope(),
                        spans: (0..20)
                            .map(|_| {
                                let start = g.time();
                                Span {
                                    trace_id: g.bytes(),
                                    span_id: g.bytes(),
                                    trace_state: g.text(),
                                    parent_span_id: if g.chance(40) { vec![] } else { g.bytes() },
                                    flags: g.below(3) as u32,
                                    name: g.text(),
                                    kind: g.below(7) as i32,
                                    start_time_unix_nano: start,
                                    end_time_unix_nano: start.wrapping_add(g.below(1 << 40)),
                                    attributes: g.attributes(0),
                                    dropped_attributes_count: g.below(2) as u32,
                                    events: (0..g.below(3))
                                        .map(|_| span::Event {
                                            time_unix_nano: g.time(),
                                            name: g.text(),
                                            attributes: g.attributes(0),
                                            dropped_attributes_count: g.below(2) as u32,
                                        })
                                        .collect(),
                                    dropped_events_count: g.below(2) as u32,
                                    links: (0..g.below(3))
                                        .map(|_| span::Link {
                                            trace_id: g.bytes(),
                                            span_id: g.bytes(),
                                            trace_state: g.text(),
                                            attributes: g.attributes(0),
                                            dropped_attributes_count: g.below(2) as u32,
                                            flags: 0,
                                        })
                                        .collect(),
                                    dropped_links_count: g.below(2) as u32,
                                    status: g.chance(70).then(|| Status {
                                        message: if g.chance(50) { g.text() } else { String::new() },
                                        code: g.below(3) as i32,
                                    }),
                                }
                            })
                            .collect(),
                        schema_url: g.text(),
                    })
                    .collect(),
                schema_url: g.text(),
            })
            .collect(),
    }
}

fn metric(g: &mut Gen) -> Metric {
    let data = match g.below(6) {
        0 => None,
        1 | 2 => {
            let points = (0..g.below(4))
                .map(|_| NumberDataPoint {
                    attributes: g.attributes(0),
                    start_time_unix_nano: g.time(),
                    time_unix_nano: g.time(),
                    exemplars: g.exemplars(),
                    flags: g.below(2) as u32,
                    value: match g.below(3) {
                        0 => None,
                        1 => Some(number_data_point::Value::AsInt(g.next() as i64)),
                        _ => Some(number_data_point::Value::AsDouble(g.double())),
                    },
                })
                .collect();
            Some(if g.chance(50) {
                metric::Data::Gauge(Gauge {
                    data_points: points,
                })
            } else {
                metric::Data::Sum(Sum {
                    data_points: points,
                    aggregation_temporality: g.below(4) as i32,
                    is_monotonic: g.chance(50),
                })
            })
        }
        3 => Some(metric::Data::Histogram(Histogram {
            data_points: (0..g.below(4))
                .map(|_| HistogramDataPoint {
                    attributes: g.attributes(0),
                    start_time_unix_nano: g.time(),
                    time_unix_nano: g.time(),
                    count: g.below(1000),
                    sum: g.chance(80).then(|| g.double()),
                    bucket_counts: (0..g.below(6)).map(|_| g.below(100)).collect(),
                    explicit_bounds: (0..g.below(6)).map(|_| g.double()).collect(),
                    exemplars: g.exemplars(),
                    flags: 0,
                    min: g.chance(50).then(|| g.double()),
                    max: g.chance(50).then(|| g.double()),
                })
                .collect(),
            aggregation_temporality: g.below(4) as i32,
        })),
        4 => Some(metric::Data::Summary(Summary {
            data_points: (0..g.below(4))
                .map(|_| SummaryDataPoint {
                    attributes: g.attributes(0),
                    start_time_unix_nano: g.time(),
                    time_unix_nano: g.time(),
                    count: g.below(1000),
                    sum: g.double(),
                    quantile_values: (0..g.below(4))
                        .map(|_| ValueAtQuantile {
                            quantile: g.double(),
                            value: g.double(),
                        })
                        .collect(),
                    flags: 0,
                })
                .collect(),
        })),
        _ => {
            let buckets = |g: &mut Gen| {
                g.chance(80).then(|| Buckets {
                    offset: g.below(40) as i32 - 20,
                    bucket_counts: (0..g.below(6)).map(|_| g.below(50)).collect(),
                })
            };
            Some(metric::Data::ExponentialHistogram(ExponentialHistogram {
                data_points: (0..g.below(4))
                    .map(|_| ExponentialHistogramDataPoint {
                        attributes: g.attributes(0),
                        start_time_unix_nano: g.time(),
                        time_unix_nano: g.time(),
                        count: g.below(1000),
                        sum: g.chance(80).then(|| g.double()),
                        scale: g.below(25) as i32 - 12,
                        zero_count: g.below(5),
                        positive: buckets(g),
                        negative: buckets(g),
                        flags: 0,
                        exemplars: g.exemplars(),
                        min: g.chance(50).then(|| g.double()),
                        max: g.chance(50).then(|| g.double()),
                        zero_threshold: g.double(),
                    })
                    .collect(),
                aggregation_temporality: g.below(4) as i32,
            }))
        }
    };
    Metric {
        name: g.text(),
        description: g.text(),
        unit: g.text(),
        metadata: g.attributes(0),
        data,
    }
}

fn metrics(g: &mut Gen) -> ExportMetricsServiceRequest {
    ExportMetricsServiceRequest {
        resource_metrics: (0..4)
            .map(|_| ResourceMetrics {
                resource: g.resource(),
                scope_metrics: (0..3)
                    .map(|_| ScopeMetrics {
                        scope: g.scope(),
                        metrics: (0..20).map(|_| metric(g)).collect(),
                        schema_url: g.text(),
                    })
                    .collect(),
                schema_url: g.text(),
            })
            .collect(),
    }
}

type Direct = fn(&[u8], bool, Format, &mut Events) -> Result<u32, String>;
type Tree = fn(&[u8], bool, tree::common::Format) -> Result<Vec<serde_json::Value>, String>;

/// Both implementations on `payload`, in both formats: the same events, byte for byte.
fn same(what: &str, payload: &[u8], json: bool, direct: Direct, tree: Tree) -> usize {
    let mut compared = 0;
    for (format, old) in [
        (Format::Opensearch, tree::common::Format::Opensearch),
        (Format::Otel, tree::common::Format::Otel),
    ] {
        let mut events = Events::default();
        let count = direct(payload, json, format, &mut events).expect("a valid request");
        let expected = tree(payload, json, old).expect("a valid request");
        assert_eq!(count as usize, expected.len(), "{what} {format:?}");
        for (i, (&(offset, len), value)) in events.spans.iter().zip(&expected).enumerate() {
            let written = std::str::from_utf8(&events.out[offset..][..len]).unwrap();
            let serialized = serde_json::to_string(value).unwrap();
            assert_eq!(written, serialized, "{what} {format:?} json={json}: event {i}");
        }
        compared += expected.len();
    }
    compared
}

#[test]
fn writing_events_directly_gives_the_bytes_the_value_tree_gave() {
    let mut compared = 0;
    for seed in 1..=20u64 {
        let mut g = Gen(0x9e37_79b9_7f4a_7c15 ^ seed);
        let (logs, traces, metrics) = (logs(&mut g), traces(&mut g), metrics(&mut g));
        let proto = [
            logs.encode_to_vec(),
            traces.encode_to_vec(),
            metrics.encode_to_vec(),
        ];
        compared += same("logs", &proto[0], false, crate::logs::events, tree::logs::events);
        compared += same("traces", &proto[1], false, crate::traces::events, tree::traces::events);
        compared += same(
            "metrics",
            &proto[2],
            false,
            crate::metrics::events,
            tree::metrics::events,
        );
        // OTLP/JSON decodes to the same request; once is enough to cover that path.
        if seed == 1 {
            let json = serde_json::to_vec(&traces).unwrap();
            compared += same("traces", &json, true, crate::traces::events, tree::traces::events);
        }
    }
    // 20 seeds x 240 logs and 240 spans each, x 2 formats, and the metrics' points.
    assert!(compared > 20_000, "{compared}");
}
