//! The integration tests: one binary, one module per concern.

// Golden error messages for invalid pipeline files, and the valid examples.
mod config_errors;
// The real example plugins (built from plugins/) through the host.
mod decode;
// Processors (contract 0.2) through the real host.
mod process;
// One conformance suite per format across the Rust, Python and JavaScript plugins.
mod conformance;
// The real `sluice` binary: HTTP in, file sink and dead-letter file out, shutdown drains.
mod http_pipeline;
// Buffer policies (contract 0.2) as real components, through the tiered buffer.
mod buffer_policy;
// The Kafka buffer against a real broker (Nisshi, started by scripts/test).
mod kafka_buffer;
// The binary with the kafka buffer: round trip, kill -9, broker outage, failing sink, scale-out.
mod kafka_pipeline;
// The binary with real plugins: hot reload of the plugin folder, hostile plugins contained.
mod plugin_host;
// `sluice plugins new|build|inspect` in Rust, Python and JavaScript, with the real tools.
mod plugin_cli;
// OTLP from real OpenTelemetry clients through the Kafka buffer and the otlp component.
mod otlp;
// Sinks that leave the machine (kafka, s3, http) against real servers, with their faults.
mod sinks;
// Sources with nothing to POST to (`stdin`, `random`), through the binary.
mod sources;
// Pipelines feeding pipelines (`pipeline` sink and source), through Kafka buffers.
mod chained;
// Processors that keep events past their batch (`otel_traces`, `aggregate`, `service_map`).
mod stateful;
// Data Prepper's documented processor examples: `validate` on each, and each input → output
// through the real binary.
mod dataprepper;
// The operator's commands: dead letters listed, shown and replayed (running and stopped).
mod operate;
