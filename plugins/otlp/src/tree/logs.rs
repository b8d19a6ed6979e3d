//! An `ExportLogsServiceRequest` to one event per log record, as Data Prepper's
//! `otel_logs_source` writes them: `JacksonOtelLog` (`opensearch`) or `JacksonStandardOTelLog`
//! (`otel`, which has no `serviceName`).

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use serde_json::{Map, Value};

use super::common::{Format, Origin, decode, hex, iso_time};

/// The events of one request (protobuf, or OTLP/JSON when `json`), or why it is not one.
pub fn events(payload: &[u8], json: bool, format: Format) -> Result<Vec<Value>, String> {
    let request: ExportLogsServiceRequest = decode(payload, json, "logs")?;
    let mut events = Vec::new();
    for rl in &request.resource_logs {
        for sl in &rl.scope_logs {
            let origin = Origin {
                resource: rl.resource.as_ref(),
                resource_schema_url: &rl.schema_url,
                scope: sl.scope.as_ref(),
                scope_schema_url: &sl.schema_url,
            };
            for log in &sl.log_records {
                let mut e = Map::new();
                e.insert("time".into(), iso_time(log.time_unix_nano).into());
                e.insert(
                    "observedTimestamp".into(),
                    iso_time(log.observed_time_unix_nano).into(),
                );
                e.insert("schemaUrl".into(), format.schema_url(&origin));
                e.insert("flags".into(), log.flags.into());
                e.insert("traceId".into(), hex(&log.trace_id).into());
                e.insert("spanId".into(), hex(&log.span_id).into());
                e.insert("severityNumber".into(), log.severity_number.into());
                e.insert("severityText".into(), log.severity_text.clone().into());
                e.insert(
                    "droppedAttributesCount".into(),
                    log.dropped_attributes_count.into(),
                );
                e.insert("body".into(), format.value(log.body.as_ref()));
                format.attributes(&mut e, "log.attributes.", &log.attributes);
                format.origin(&mut e, &origin);
                events.push(Value::Object(e));
            }
        }
    }
    Ok(events)
}
