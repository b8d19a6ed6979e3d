//! What every OTLP signal shares: decoding a request, times (the same in both output formats),
//! the output format itself (`Format`) with what differs between its two shapes for every
//! signal (attributes, the resource and scope an item came from), and the `opensearch` shape of
//! those (flat keys, dots written `@`). The `otel` shape of them is in `otel.rs`. Events are
//! written straight into the reply (`write.rs`).

use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;

use super::write::{Object, Value, array, double, number, string};

/// Which of Data Prepper's output formats the events take (option `output_format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
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
pub(crate) struct Origin<'a> {
    pub(crate) resource: Option<&'a Resource>,
    pub(crate) resource_schema_url: &'a str,
    pub(crate) scope: Option<&'a InstrumentationScope>,
    pub(crate) scope_schema_url: &'a str,
}

impl Format {
    /// An item's own attributes: flattened under `prefix` (`log.attributes.`), or the map
    /// `attributes`.
    pub(crate) fn attributes<'a>(
        self,
        into: &mut Object<'a>,
        prefix: &'a str,
        list: &'a [KeyValue],
    ) {
        match self {
            Format::Opensearch => flatten(into, prefix, list),
            Format::Otel => into.put("attributes", Value::OtelAttributes(list)),
        }
    }

    /// The attributes of something inside an item (a span's event or link, an exemplar), as a
    /// map: keys under `prefix` with dots written `@`, or as they are.
    pub(crate) fn attribute_map<'a>(self, prefix: &'a str, list: &'a [KeyValue]) -> Value<'a> {
        match self {
            Format::Opensearch => Value::FlatAttributes(prefix, list),
            Format::Otel => Value::OtelAttributes(list),
        }
    }

    /// A value that is no attribute (a log record's body).
    pub(crate) fn value(self, v: Option<&AnyValue>) -> Value<'_> {
        match self {
            Format::Opensearch => Value::Attribute(v),
            Format::Otel => Value::OtelAny(v),
        }
    }

    /// The event's fields from where its item came from: `serviceName`,
    /// `resource.attributes.*` and `instrumentationScope.*`; or the objects `resource` and
    /// `instrumentationScope`. Not `schemaUrl`, which not every signal has (`schema_url`).
    pub(crate) fn origin<'a>(self, into: &mut Object<'a>, origin: &Origin<'a>) {
        match self {
            Format::Opensearch => {
                into.put("serviceName", service_name(origin.resource));
                resource_and_scope(into, origin.resource, origin.scope);
            }
            Format::Otel => {
                into.put(
                    "resource",
                    Value::OtelResource(origin.resource, origin.resource_schema_url),
                );
                into.put("instrumentationScope", Value::OtelScope(origin.scope));
            }
        }
    }

    /// The event's `schemaUrl`: the resource's, or the scope's.
    pub(crate) fn schema_url<'a>(self, origin: &Origin<'a>) -> Value<'a> {
        match self {
            Format::Opensearch => Value::Str(origin.resource_schema_url),
            Format::Otel => Value::Str(origin.scope_schema_url),
        }
    }
}

/// An export request of type `T`: OTLP/JSON when `json`, else protobuf; the error names
/// `what` (`logs`, `trace`, `metrics`) and the encoding.
pub(crate) fn decode<T>(payload: &[u8], json: bool, what: &str) -> Result<T, String>
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
pub(crate) fn write_attribute(out: &mut Vec<u8>, v: Option<&AnyValue>) {
    match v.and_then(|v| v.value.as_ref()) {
        None => out.extend_from_slice(b"null"),
        Some(Any::StringValue(s)) => string(out, s),
        Some(Any::BoolValue(b)) => Value::Bool(*b).write(out),
        Some(Any::IntValue(i)) => number(out, *i),
        Some(Any::DoubleValue(d)) => double(out, *d),
        Some(other) => {
            // Rare (arrays, maps, bytes): the JSON text is made first, then written as a string.
            let mut text = Vec::new();
            write_nested(&mut text, other);
            string(out, std::str::from_utf8(&text).expect("JSON is UTF-8"));
        }
    }
}

/// An array or map inside a value, as JSON.
pub(crate) fn write_nested(out: &mut Vec<u8>, v: &Any) {
    match v {
        Any::StringValue(s) => string(out, s),
        Any::BoolValue(b) => Value::Bool(*b).write(out),
        Any::IntValue(i) => number(out, *i),
        Any::DoubleValue(d) => double(out, *d),
        Any::ArrayValue(a) => array(out, &a.values, |out, v| match &v.value {
            Some(v) => write_nested(out, v),
            None => out.extend_from_slice(b"null"),
        }),
        Any::KvlistValue(kv) => {
            let mut o = Object::new();
            for kv in &kv.values {
                let v = kv.value.as_ref().and_then(|v| v.value.as_ref());
                o.put(&kv.key, Value::Nested(v));
            }
            o.write(out);
        }
        Any::BytesValue(b) => Value::Hex(b).write(out),
        // An index into a profile's string table (profiles only): the index.
        Any::StringValueStrindex(i) => number(out, *i),
    }
}

/// Adds `attributes` under `prefix` (`log.attributes.`), each key's dots written `@`.
pub(crate) fn flatten<'a>(into: &mut Object<'a>, prefix: &'a str, attributes: &'a [KeyValue]) {
    for kv in attributes {
        into.put_flat(prefix, &kv.key, Value::Attribute(kv.value.as_ref()));
    }
}

/// The resource's `service.name`, if it has one.
fn service_name(resource: Option<&Resource>) -> Value<'_> {
    resource
        .and_then(|r| r.attributes.iter().find(|kv| kv.key == "service.name"))
        .map_or(Value::Null, |kv| Value::Attribute(kv.value.as_ref()))
}

/// `resource.attributes.*` and `instrumentationScope.*`.
fn resource_and_scope<'a>(
    into: &mut Object<'a>,
    resource: Option<&'a Resource>,
    scope: Option<&'a InstrumentationScope>,
) {
    if let Some(r) = resource {
        flatten(into, "resource.attributes.", &r.attributes);
    }
    if let Some(s) = scope {
        if !s.name.is_empty() {
            into.put("instrumentationScope.name", Value::Str(&s.name));
        }
        if !s.version.is_empty() {
            into.put("instrumentationScope.version", Value::Str(&s.version));
        }
        flatten(into, "instrumentationScope.attributes.", &s.attributes);
    }
}

/// Nanoseconds since the Unix epoch as Java's `Instant.toString()` writes them (Data
/// Prepper's times): `2024-05-06T07:08:09Z`, with `.123`, `.123456` or `.123456789` when the
/// fraction needs them.
pub(crate) fn iso_time(out: &mut Vec<u8>, unix_nanos: u64) {
    let secs = unix_nanos / 1_000_000_000;
    let nanos = unix_nanos % 1_000_000_000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    // Years before 1 or after 9999 cannot come from a u64 of nanoseconds (it ends in 2554).
    digits(out, y as u64, 4);
    out.push(b'-');
    digits(out, u64::from(m), 2);
    out.push(b'-');
    digits(out, u64::from(d), 2);
    out.push(b'T');
    digits(out, rem / 3600, 2);
    out.push(b':');
    digits(out, rem % 3600 / 60, 2);
    out.push(b':');
    digits(out, rem % 60, 2);
    if nanos > 0 {
        out.push(b'.');
        if nanos.is_multiple_of(1_000_000) {
            digits(out, nanos / 1_000_000, 3);
        } else if nanos.is_multiple_of(1_000) {
            digits(out, nanos / 1_000, 6);
        } else {
            digits(out, nanos, 9);
        }
    }
    out.push(b'Z');
}

/// `n` in decimal, zero-padded to `width` digits (`n` has no more).
fn digits(out: &mut Vec<u8>, mut n: u64, width: usize) {
    let start = out.len();
    out.resize(start + width, b'0');
    for slot in out[start..].iter_mut().rev() {
        *slot = b'0' + (n % 10) as u8;
        n /= 10;
    }
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

#[cfg(test)]
mod tests {
    fn iso_time(nanos: u64) -> String {
        let mut out = Vec::new();
        super::iso_time(&mut out, nanos);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn times_read_as_java_instants() {
        assert_eq!(iso_time(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso_time(1_700_000_000_000_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(
            iso_time(1_700_000_000_123_000_000),
            "2023-11-14T22:13:20.123Z"
        );
        assert_eq!(
            iso_time(1_700_000_000_123_456_000),
            "2023-11-14T22:13:20.123456Z"
        );
        assert_eq!(
            iso_time(1_700_000_000_000_000_001),
            "2023-11-14T22:13:20.000000001Z"
        );
        assert_eq!(iso_time(951_782_400_000_000_000), "2000-02-29T00:00:00Z");
        assert_eq!(iso_time(u64::MAX), "2554-07-21T23:34:33.709551615Z");
    }
}
