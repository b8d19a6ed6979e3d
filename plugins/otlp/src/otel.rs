//! Data Prepper's `otel` output format (`OTelProtoStandardCodec`, the `JacksonStandard*`
//! events) for what every signal shares: attribute values and maps kept as OpenTelemetry has
//! them, and the objects `resource` and `instrumentationScope`. The signals' own fields are in
//! `logs.rs`, `traces.rs` and `metrics.rs`, beside their `opensearch` shapes.

use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;

use super::write::{Object, Value, array, double, number, string};

/// A value as JSON: arrays and maps nested, an unset value `""` (as Data Prepper's
/// `convertAnyValue`). Data Prepper refuses bytes; they are kept here, as lowercase hex like
/// the ids.
pub(crate) fn write_value(out: &mut Vec<u8>, v: Option<&AnyValue>) {
    match v.and_then(|v| v.value.as_ref()) {
        None => out.extend_from_slice(b"\"\""),
        Some(Any::StringValue(s)) => string(out, s),
        Some(Any::BoolValue(b)) => Value::Bool(*b).write(out),
        Some(Any::IntValue(i)) => number(out, *i),
        Some(Any::DoubleValue(d)) => double(out, *d),
        Some(Any::ArrayValue(a)) => array(out, &a.values, |out, v| write_value(out, Some(v))),
        Some(Any::KvlistValue(kv)) => write_attributes(out, &kv.values),
        Some(Any::BytesValue(b)) => Value::Hex(b).write(out),
        // An index into a profile's string table (profiles only): the index.
        Some(Any::StringValueStrindex(i)) => number(out, *i),
    }
}

/// Attributes as one map, keys as they are (a repeated key: the last value).
pub(crate) fn write_attributes(out: &mut Vec<u8>, list: &[KeyValue]) {
    let mut o = Object::new();
    for kv in list {
        o.put(&kv.key, Value::OtelAny(kv.value.as_ref()));
    }
    o.write(out);
}

/// `{attributes, droppedAttributesCount, schemaUrl}`, also for a request without a resource.
pub(crate) fn write_resource(out: &mut Vec<u8>, resource: Option<&Resource>, schema_url: &str) {
    let mut o = Object::new();
    o.put(
        "attributes",
        Value::OtelAttributes(resource.map_or(&[], |r| &r.attributes)),
    );
    o.put(
        "droppedAttributesCount",
        Value::U64(resource.map_or(0, |r| r.dropped_attributes_count).into()),
    );
    o.put("schemaUrl", Value::Str(schema_url));
    o.write(out);
}

/// `{name, version, droppedAttributesCount, attributes}`, the name, version and attributes only
/// when not empty (`{"droppedAttributesCount": 0}` without a scope).
pub(crate) fn write_scope(out: &mut Vec<u8>, scope: Option<&InstrumentationScope>) {
    let mut o = Object::new();
    let (name, version, dropped, attributes) = scope.map_or(("", "", 0, &[][..]), |s| {
        (
            s.name.as_str(),
            s.version.as_str(),
            s.dropped_attributes_count,
            &s.attributes[..],
        )
    });
    if !name.is_empty() {
        o.put("name", Value::Str(name));
    }
    if !version.is_empty() {
        o.put("version", Value::Str(version));
    }
    o.put("droppedAttributesCount", Value::U64(dropped.into()));
    if !attributes.is_empty() {
        o.put("attributes", Value::OtelAttributes(attributes));
    }
    o.write(out);
}
