//! What every OTLP signal shares: decoding a request, ids and times (the same in both output
//! formats), the output format itself (`Format`) with what differs between its two shapes for
//! every signal (attributes, the resource and scope an item came from), and the `opensearch`
//! shape of those (flat keys, dots written `@`). The `otel` shape of them is in `otel.rs`.

use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use serde_json::{Map, Value};

use super::otel;

/// Which of Data Prepper's output formats the events take (option `output_format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `opensearch`: attributes flattened into the event under prefixed keys with dots written
    /// `@` (`log.attributes.http@method`), arrays and maps as JSON text, `serviceName` on top.
    Opensearch,
    /// `otel`: attributes nested as OpenTelemetry has them (`attributes: {"http.method": ...}`),
    /// the resource and scope as objects.
    Otel,
}

/// Where an item (log record, span, metric) came from: its resource and scope, and the schema
/// URLs of the two.
#[derive(Clone, Copy)]
pub struct Origin<'a> {
    pub resource: Option<&'a Resource>,
    pub resource_schema_url: &'a str,
    pub scope: Option<&'a InstrumentationScope>,
    pub scope_schema_url: &'a str,
}

impl Format {
    /// An item's own attributes: flattened under `prefix` (`log.attributes.`), or the map
    /// `attributes`.
    pub fn attributes(self, into: &mut Map<String, Value>, prefix: &str, list: &[KeyValue]) {
        match self {
            Format::Opensearch => flatten(into, prefix, list),
            Format::Otel => {
                into.insert("attributes".into(), otel::attributes(list));
            }
        }
    }

    /// The attributes of something inside an item (a span's event or link, an exemplar), as a
    /// map: keys under `prefix` with dots written `@`, or as they are.
    pub fn attribute_map(self, prefix: &str, list: &[KeyValue]) -> Value {
        match self {
            Format::Opensearch => {
                let mut m = Map::new();
                flatten(&mut m, prefix, list);
                Value::Object(m)
            }
            Format::Otel => otel::attributes(list),
        }
    }

    /// A value that is no attribute (a log record's body).
    pub fn value(self, v: Option<&AnyValue>) -> Value {
        match self {
            Format::Opensearch => value(v),
            Format::Otel => otel::value(v),
        }
    }

    /// The event's fields from where its item came from: `serviceName`,
    /// `resource.attributes.*` and `instrumentationScope.*`; or the objects `resource` and
    /// `instrumentationScope`. Not `schemaUrl`, which not every signal has (`schema_url`).
    pub fn origin(self, into: &mut Map<String, Value>, origin: &Origin) {
        match self {
            Format::Opensearch => {
                into.insert("serviceName".into(), service_name(origin.resource));
                resource_and_scope(into, origin.resource, origin.scope);
            }
            Format::Otel => {
                into.insert(
                    "resource".into(),
                    otel::resource(origin.resource, origin.resource_schema_url),
                );
                into.insert("instrumentationScope".into(), otel::scope(origin.scope));
            }
        }
    }

    /// The event's `schemaUrl`: the resource's, or the scope's.
    pub fn schema_url(self, origin: &Origin) -> Value {
        match self {
            Format::Opensearch => origin.resource_schema_url.into(),
            Format::Otel => origin.scope_schema_url.into(),
        }
    }
}

/// An export request of type `T`: OTLP/JSON when `json`, else protobuf; the error names
/// `what` (`logs`, `trace`, `metrics`) and the encoding.
pub fn decode<T>(payload: &[u8], json: bool, what: &str) -> Result<T, String>
where
    T: prost::Message + Default + serde::de::DeserializeOwned,
{
    if json {
        serde_json::from_slice(payload)
            .map_err(|e| format!("not an OTLP {what} export request (JSON): {e}"))
    } else {
        T::decode(payload).map_err(|e| format!("not an OTLP {what} export request (protobuf): {e}"))
    }
}

/// An attribute value as Data Prepper's `opensearch` format keeps it: string, bool, integer
/// and double as they are; arrays, maps and bytes as JSON text.
fn value(v: Option<&AnyValue>) -> Value {
    match v.and_then(|v| v.value.as_ref()) {
        None => Value::Null,
        Some(Any::StringValue(s)) => Value::String(s.clone()),
        Some(Any::BoolValue(b)) => Value::Bool(*b),
        Some(Any::IntValue(i)) => Value::from(*i),
        Some(Any::DoubleValue(d)) => Value::from(*d),
        Some(other) => Value::String(nested(other).to_string()),
    }
}

/// An array or map inside a value, as JSON.
fn nested(v: &Any) -> Value {
    match v {
        Any::StringValue(s) => Value::String(s.clone()),
        Any::BoolValue(b) => Value::Bool(*b),
        Any::IntValue(i) => Value::from(*i),
        Any::DoubleValue(d) => Value::from(*d),
        Any::ArrayValue(a) => Value::Array(
            a.values
                .iter()
                .map(|v| v.value.as_ref().map_or(Value::Null, nested))
                .collect(),
        ),
        Any::KvlistValue(kv) => Value::Object(
            kv.values
                .iter()
                .map(|kv| {
                    let v = kv.value.as_ref().and_then(|v| v.value.as_ref());
                    (kv.key.clone(), v.map_or(Value::Null, nested))
                })
                .collect(),
        ),
        Any::BytesValue(b) => Value::String(hex(b)),
        // An index into a profile's string table (profiles only): the index.
        Any::StringValueStrindex(i) => Value::from(*i),
    }
}

/// Adds `attributes` under `prefix` (`log.attributes.`), each key's dots written `@`.
fn flatten(into: &mut Map<String, Value>, prefix: &str, attributes: &[KeyValue]) {
    for kv in attributes {
        into.insert(
            format!("{prefix}{}", kv.key.replace('.', "@")),
            value(kv.value.as_ref()),
        );
    }
}

/// The resource's `service.name`, if it has one.
fn service_name(resource: Option<&Resource>) -> Value {
    resource
        .and_then(|r| r.attributes.iter().find(|kv| kv.key == "service.name"))
        .map_or(Value::Null, |kv| value(kv.value.as_ref()))
}

/// `resource.attributes.*` and `instrumentationScope.*`.
fn resource_and_scope(
    into: &mut Map<String, Value>,
    resource: Option<&Resource>,
    scope: Option<&InstrumentationScope>,
) {
    if let Some(r) = resource {
        flatten(into, "resource.attributes.", &r.attributes);
    }
    if let Some(s) = scope {
        if !s.name.is_empty() {
            into.insert("instrumentationScope.name".into(), s.name.clone().into());
        }
        if !s.version.is_empty() {
            into.insert(
                "instrumentationScope.version".into(),
                s.version.clone().into(),
            );
        }
        flatten(into, "instrumentationScope.attributes.", &s.attributes);
    }
}

/// Lowercase hex ("" for none), as Data Prepper writes trace and span ids.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Nanoseconds since the Unix epoch as Java's `Instant.toString()` writes them (Data
/// Prepper's times): `2024-05-06T07:08:09Z`, with `.123`, `.123456` or `.123456789` when the
/// fraction needs them.
pub fn iso_time(unix_nanos: u64) -> String {
    let secs = unix_nanos / 1_000_000_000;
    let nanos = unix_nanos % 1_000_000_000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    let mut out = format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    );
    if nanos > 0 {
        if nanos.is_multiple_of(1_000_000) {
            out += &format!(".{:03}", nanos / 1_000_000);
        } else if nanos.is_multiple_of(1_000) {
            out += &format!(".{:06}", nanos / 1_000);
        } else {
            out += &format!(".{nanos:09}");
        }
    }
    out + "Z"
}

/// Howard Hinnant's days-to-civil: (year, month, day) of a day count since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}
