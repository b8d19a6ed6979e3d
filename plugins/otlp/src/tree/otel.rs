//! Data Prepper's `otel` output format (`OTelProtoStandardCodec`, the `JacksonStandard*`
//! events) for what every signal shares: attribute values and maps kept as OpenTelemetry has
//! them, and the objects `resource` and `instrumentationScope`. The signals' own fields are in
//! `logs.rs`, `traces.rs` and `metrics.rs`, beside their `opensearch` shapes.

use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use serde_json::{Map, Value, json};

use super::common::hex;

/// A value as JSON: arrays and maps nested, an unset value `""` (as Data Prepper's
/// `convertAnyValue`). Data Prepper refuses bytes; they are kept here, as lowercase hex like
/// the ids.
pub fn value(v: Option<&AnyValue>) -> Value {
    match v.and_then(|v| v.value.as_ref()) {
        None => Value::String(String::new()),
        Some(Any::StringValue(s)) => Value::String(s.clone()),
        Some(Any::BoolValue(b)) => Value::Bool(*b),
        Some(Any::IntValue(i)) => Value::from(*i),
        Some(Any::DoubleValue(d)) => Value::from(*d),
        Some(Any::ArrayValue(a)) => a.values.iter().map(|v| value(Some(v))).collect(),
        Some(Any::KvlistValue(kv)) => attributes(&kv.values),
        Some(Any::BytesValue(b)) => Value::String(hex(b)),
        // An index into a profile's string table (profiles only): the index.
        Some(Any::StringValueStrindex(i)) => Value::from(*i),
    }
}

/// Attributes as one map, keys as they are (a repeated key: the last value).
pub fn attributes(list: &[KeyValue]) -> Value {
    list.iter()
        .map(|kv| (kv.key.clone(), value(kv.value.as_ref())))
        .collect::<Map<_, _>>()
        .into()
}

/// `{attributes, droppedAttributesCount, schemaUrl}`, also for a request without a resource.
pub fn resource(resource: Option<&Resource>, schema_url: &str) -> Value {
    json!({
        "attributes": attributes(resource.map_or(&[], |r| &r.attributes)),
        "droppedAttributesCount": resource.map_or(0, |r| r.dropped_attributes_count),
        "schemaUrl": schema_url,
    })
}

/// `{name, version, droppedAttributesCount, attributes}`, the name, version and attributes only
/// when not empty (`{"droppedAttributesCount": 0}` without a scope).
pub fn scope(scope: Option<&InstrumentationScope>) -> Value {
    let mut m = Map::new();
    let default = InstrumentationScope::default();
    let s = scope.unwrap_or(&default);
    if !s.name.is_empty() {
        m.insert("name".into(), s.name.clone().into());
    }
    if !s.version.is_empty() {
        m.insert("version".into(), s.version.clone().into());
    }
    m.insert(
        "droppedAttributesCount".into(),
        s.dropped_attributes_count.into(),
    );
    if !s.attributes.is_empty() {
        m.insert("attributes".into(), attributes(&s.attributes));
    }
    Value::Object(m)
}
