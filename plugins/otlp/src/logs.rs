//! An `ExportLogsServiceRequest` to one event per log record, as Data Prepper's
//! `otel_logs_source` writes them in its `opensearch` format (`JacksonOtelLog`).

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use serde_json::{Map, Value};

use crate::common::{decode, flatten, hex, iso_time, resource_and_scope, service_name, value};

/// The events of one request (protobuf, or OTLP/JSON when `json`), or why it is not one.
pub fn events(payload: &[u8], json: bool) -> Result<Vec<Value>, String> {
    let request: ExportLogsServiceRequest = decode(payload, json, "logs")?;
    let mut events = Vec::new();
    for rl in &request.resource_logs {
        let resource = rl.resource.as_ref();
        let service = service_name(resource);
        for sl in &rl.scope_logs {
            for log in &sl.log_records {
                let mut e = Map::new();
                e.insert("time".into(), iso_time(log.time_unix_nano).into());
                e.insert(
                    "observedTimestamp".into(),
                    iso_time(log.observed_time_unix_nano).into(),
                );
                e.insert("serviceName".into(), service.clone());
                e.insert("schemaUrl".into(), rl.schema_url.clone().into());
                e.insert("flags".into(), log.flags.into());
                e.insert("traceId".into(), hex(&log.trace_id).into());
                e.insert("spanId".into(), hex(&log.span_id).into());
                e.insert("severityNumber".into(), log.severity_number.into());
                e.insert("severityText".into(), log.severity_text.clone().into());
                e.insert(
                    "droppedAttributesCount".into(),
                    log.dropped_attributes_count.into(),
                );
                e.insert("body".into(), value(log.body.as_ref()));
                flatten(&mut e, "log.attributes.", &log.attributes);
                resource_and_scope(&mut e, resource, sl.scope.as_ref());
                events.push(Value::Object(e));
            }
        }
    }
    Ok(events)
}
