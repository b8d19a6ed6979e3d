//! An `ExportLogsServiceRequest` to one event per log record, as Data Prepper's
//! `otel_logs_source` writes them: `JacksonOtelLog` (`opensearch`) or `JacksonStandardOTelLog`
//! (`otel`, which has no `serviceName`).

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;

use super::common::{Format, Origin, decode};
use super::write::{Events, Object, Value};

/// Writes the events of one request (protobuf, or OTLP/JSON when `json`) into `events`: how
/// many, or why it is not one (then nothing is written).
pub(crate) fn events(
    payload: &[u8],
    json: bool,
    format: Format,
    events: &mut Events,
) -> Result<u32, String> {
    let request: ExportLogsServiceRequest = decode(payload, json, "logs")?;
    let mut count = 0;
    for rl in &request.resource_logs {
        for sl in &rl.scope_logs {
            let origin = Origin {
                resource: rl.resource.as_ref(),
                resource_schema_url: &rl.schema_url,
                scope: sl.scope.as_ref(),
                scope_schema_url: &sl.schema_url,
            };
            for log in &sl.log_records {
                let mut e = Object::new();
                e.put("time", Value::Time(log.time_unix_nano));
                e.put("observedTimestamp", Value::Time(log.observed_time_unix_nano));
                e.put("schemaUrl", format.schema_url(&origin));
                e.put("flags", Value::U64(log.flags.into()));
                e.put("traceId", Value::Hex(&log.trace_id));
                e.put("spanId", Value::Hex(&log.span_id));
                e.put("severityNumber", Value::I64(log.severity_number.into()));
                e.put("severityText", Value::Str(&log.severity_text));
                e.put(
                    "droppedAttributesCount",
                    Value::U64(log.dropped_attributes_count.into()),
                );
                e.put("body", format.value(log.body.as_ref()));
                format.attributes(&mut e, "log.attributes.", &log.attributes);
                format.origin(&mut e, &origin);
                events.push(e);
                count += 1;
            }
        }
    }
    Ok(count)
}
