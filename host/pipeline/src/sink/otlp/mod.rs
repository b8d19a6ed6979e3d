//! The `otlp` sink: collected spans, log records and metric data points go to an OTLP endpoint
//! as export requests (protobuf), over OTLP/HTTP (`POST` to `endpoint`) or OTLP/gRPC (the
//! signal's `Export` method), gzip unless `compression: none`, signed with SigV4 when `aws` is
//! set.
//!
//! Each event's line is its type (`TRACE`, `LOG`, `METRIC`: Data Prepper picks the signal by
//! the event's class, sluice by the type its source gave it), a newline and the event; a request
//! holds one signal, so a batch of several signals is sent as one request per signal. What
//! cannot be made into an item (no `traceId`, a time that is not one, another event type) goes
//! to the dead-letter file with the reason. An answer outside success: no connection, HTTP 429,
//! 502, 503, 504 (Data Prepper's `RETRYABLE_STATUS_CODES`) or a retryable gRPC status is
//! retried; any other is final. A partial success is counted (`rejectedRecordsCount`) and
//! logged, as Data Prepper does: the answer does not say which items were refused.
//!
//! # Layout
//! - this file: building the client and signer, [`Output`] (grouping, counting), the two
//!   transports.
//! - `encode`: events back into OTLP items.

mod encode;

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http_body_util::BodyExt;
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use prost::Message;
use sluice_config::sink::otlp::{OtlpProtocol, OtlpSettings};

use super::{Encode, Output, Provenance, Retry, SendError, Shape, Threshold, error_chain};

/// The three signals, in the order a mixed batch's requests are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Signal {
    Traces,
    Logs,
    Metrics,
}

impl Signal {
    /// The signal of an event type, as sluice's OTLP sources set it.
    fn of(event_type: &[u8]) -> Option<Self> {
        match event_type {
            b"TRACE" => Some(Self::Traces),
            b"LOG" => Some(Self::Logs),
            b"METRIC" => Some(Self::Metrics),
            _ => None,
        }
    }

    /// The gRPC method of the signal's export.
    fn grpc_path(self) -> &'static str {
        match self {
            Self::Traces => "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
            Self::Logs => "/opentelemetry.proto.collector.logs.v1.LogsService/Export",
            Self::Metrics => "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export",
        }
    }

    /// The export request of `events` (JSON objects), and those refused with why.
    fn request(self, events: &[(usize, &[u8])]) -> (Vec<u8>, Vec<usize>, Vec<(usize, String)>) {
        let mut taken = Vec::new();
        let mut refused = Vec::new();
        let object = |json: &[u8]| match serde_json::from_slice(json) {
            Ok(serde_json::Value::Object(m)) => Ok(m),
            _ => Err("the event is not a JSON object".to_owned()),
        };
        macro_rules! build {
            ($request:ident, $field:ident, $encode:path) => {{
                let mut request = $request::default();
                for &(i, json) in events {
                    match object(json).and_then(|event| $encode(&event)) {
                        Ok(item) => {
                            request.$field.push(item);
                            taken.push(i);
                        }
                        Err(reason) => refused.push((i, reason)),
                    }
                }
                request.encode_to_vec()
            }};
        }
        let body = match self {
            Self::Traces => build!(ExportTraceServiceRequest, resource_spans, encode::span),
            Self::Logs => build!(ExportLogsServiceRequest, resource_logs, encode::log),
            Self::Metrics => build!(ExportMetricsServiceRequest, resource_metrics, encode::metric),
        };
        (body, taken, refused)
    }

    /// The items a successful answer says were refused, and its message.
    fn partial_success(self, answer: &[u8]) -> Option<(i64, String)> {
        match self {
            Self::Traces => ExportTraceServiceResponse::decode(answer)
                .ok()?
                .partial_success
                .map(|p| (p.rejected_spans, p.error_message)),
            Self::Logs => ExportLogsServiceResponse::decode(answer)
                .ok()?
                .partial_success
                .map(|p| (p.rejected_log_records, p.error_message)),
            Self::Metrics => ExportMetricsServiceResponse::decode(answer)
                .ok()?
                .partial_success
                .map(|p| (p.rejected_data_points, p.error_message)),
        }
    }
}

/// Why the otlp sink cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum OtlpSinkError {
    #[error("ssl_certificate_file {}: {source}", .path.display())]
    CaFile {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("ssl_certificate_file {}: {source}", .path.display())]
    CaCertificate {
        path: std::path::PathBuf,
        source: reqwest::Error,
    },
    #[error(transparent)]
    Client(reqwest::Error),
    #[error("additional_headers `{0}`: not a valid header")]
    Header(String),
    #[error("aws: {0}")]
    Signing(#[from] sluice_sigv4::Error),
}

/// Data Prepper's metrics of the sink (`OtlpSinkMetrics`), prefixed `sluice_otlp_`.
struct Metrics {
    records_out: metrics::Counter,
    rejected_records: metrics::Counter,
    failed_records: metrics::Counter,
    errors: metrics::Counter,
    latency: metrics::Histogram,
    payload_size: metrics::Histogram,
    payload_gzip_size: metrics::Histogram,
    /// `http1xxResponses` .. `http5xxResponses`.
    responses: [metrics::Counter; 5],
}

impl Metrics {
    fn new(pipeline: &str, sink: &str) -> Self {
        let labels = [
            ("pipeline", pipeline.to_owned()),
            ("sink", sink.to_owned()),
        ];
        let c = |name: &'static str| metrics::counter!(name, &labels);
        let h = |name: &'static str| metrics::histogram!(name, &labels);
        Self {
            records_out: c("sluice_otlp_recordsOut"),
            rejected_records: c("sluice_otlp_rejectedRecordsCount"),
            failed_records: c("sluice_otlp_failedRecordsCount"),
            errors: c("sluice_otlp_errorsCount"),
            latency: h("sluice_otlp_httpLatency"),
            payload_size: h("sluice_otlp_payloadSize"),
            payload_gzip_size: h("sluice_otlp_payloadGzipSize"),
            responses: [
                "sluice_otlp_http1xxResponses",
                "sluice_otlp_http2xxResponses",
                "sluice_otlp_http3xxResponses",
                "sluice_otlp_http4xxResponses",
                "sluice_otlp_http5xxResponses",
            ]
            .map(c),
        }
    }

    fn response(&self, status: u16) {
        if let Some(c) = self.responses.get(usize::from(status / 100).wrapping_sub(1)) {
            c.increment(1);
        }
    }
}

pub struct OtlpSink {
    client: reqwest::Client,
    settings: OtlpSettings,
    /// `additional_headers`, added after signing.
    headers: reqwest::header::HeaderMap,
    signer: Option<sluice_sigv4::Signer>,
    metrics: Metrics,
}

impl super::BuildOutput for OtlpSettings {
    type Error = OtlpSinkError;
    async fn build(
        self,
        name: &str,
        cx: &super::SinkBuild<'_>,
    ) -> Result<Arc<dyn Output>, OtlpSinkError> {
        let mut builder = reqwest::Client::builder()
            .timeout(self.request_timeout)
            .connect_timeout(self.request_timeout)
            .tls_danger_accept_invalid_certs(self.insecure);
        if self.protocol == OtlpProtocol::Grpc && self.endpoint.starts_with("http://") {
            // gRPC is HTTP/2; without TLS there is no ALPN to agree on it (h2c).
            builder = builder.http2_prior_knowledge();
        }
        if let Some(ca) = &self.ca {
            let pem = std::fs::read(ca).map_err(|source| OtlpSinkError::CaFile {
                path: ca.clone(),
                source,
            })?;
            let cert = reqwest::Certificate::from_pem(&pem).map_err(|source| {
                OtlpSinkError::CaCertificate {
                    path: ca.clone(),
                    source,
                }
            })?;
            builder = builder.tls_certs_merge([cert]);
        }
        let client = builder.build().map_err(OtlpSinkError::Client)?;
        let mut headers = reqwest::header::HeaderMap::new();
        for (key, value) in &self.headers {
            let (Ok(k), Ok(v)) = (
                reqwest::header::HeaderName::from_bytes(key.as_bytes()),
                reqwest::header::HeaderValue::from_str(value),
            ) else {
                return Err(OtlpSinkError::Header(key.clone()));
            };
            headers.append(k, v);
        }
        let signer = match &self.aws {
            Some(aws) => Some(
                sluice_sigv4::Signer::new(sluice_sigv4::Settings {
                    region: aws.region.clone(),
                    service: sluice_sigv4::Service::Other(signing_name(&aws.service)),
                    sts_role_arn: aws.sts_role_arn.clone(),
                    sts_external_id: aws.sts_external_id.clone(),
                    sts_header_overrides: aws.sts_header_overrides.clone(),
                })
                .await?,
            ),
            None => None,
        };
        Ok(Arc::new(OtlpSink {
            client,
            headers,
            signer,
            metrics: Metrics::new(cx.pipeline, name),
            settings: self,
        }))
    }
}

/// The signing name as `'static`: the common ones as they are; another (a `service_name` of the
/// user's) is leaked, a few bytes once per sink built.
fn signing_name(name: &str) -> &'static str {
    match name {
        "xray" => "xray",
        "logs" => "logs",
        "osis" => "osis",
        other => Box::leak(other.to_owned().into_boxed_str()),
    }
}

/// Writes each event as its type, a newline, and its JSON.
struct TypedLines;

impl Encode for TypedLines {
    /// `shape`: the sink's `include_keys`, `exclude_keys` and `tags_target_key` apply to the
    /// event before it becomes an item.
    fn encode(&self, event: &sluice_event::Event, shape: Option<Shape<'_>>) -> Vec<u8> {
        let mut line = event.metadata.event_type.as_bytes().to_vec();
        line.push(b'\n');
        match (shape, event.data.as_object()) {
            (Some(shape), Some(data)) => serde_json::to_writer(&mut line, &shape(data)),
            _ => serde_json::to_writer(&mut line, &event.data),
        }
        .expect("JSON serializes");
        line
    }
}

/// A line's event type and event.
fn split(line: &[u8]) -> (&[u8], &[u8]) {
    match memchr::memchr(b'\n', line) {
        Some(i) => (&line[..i], &line[i + 1..]),
        None => (b"", line),
    }
}

/// What became of one request.
enum Sent {
    Taken,
    Retry(String),
    Reject(String),
}

impl OtlpSink {
    /// Sends one signal's export request; `count` items.
    async fn export(&self, signal: Signal, body: Vec<u8>, count: usize) -> Sent {
        self.metrics.payload_size.record(body.len() as f64);
        let gzip = self.settings.gzip;
        let body = if gzip {
            let zipped = gzip_bytes(&body);
            self.metrics.payload_gzip_size.record(zipped.len() as f64);
            zipped
        } else {
            body
        };
        let started = Instant::now();
        let sent = match self.settings.protocol {
            OtlpProtocol::Http => self.http(signal, body).await,
            OtlpProtocol::Grpc => self.grpc(signal, body).await,
        };
        self.metrics.latency.record(started.elapsed().as_secs_f64());
        match &sent {
            Sent::Taken => self.metrics.records_out.increment(count as u64),
            Sent::Retry(_) => self.metrics.errors.increment(1),
            Sent::Reject(_) => {
                self.metrics.errors.increment(1);
                self.metrics.failed_records.increment(count as u64);
            }
        }
        sent
    }

    /// The headers a request is signed with, and the signature's; then `additional_headers`.
    async fn headers(
        &self,
        url: &str,
        signed: Vec<(String, String)>,
        body: &[u8],
    ) -> Result<reqwest::header::HeaderMap, String> {
        let mut headers = reqwest::header::HeaderMap::new();
        let signature = match &self.signer {
            Some(signer) => signer
                .sign("POST", url, &signed, body)
                .await
                .map_err(|e| e.to_string())?,
            None => Vec::new(),
        };
        for (k, v) in signed.into_iter().chain(signature) {
            let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
                .map_err(|e| e.to_string())?;
            let value = reqwest::header::HeaderValue::from_str(&v).map_err(|e| e.to_string())?;
            headers.insert(name, value);
        }
        for (k, v) in &self.headers {
            headers.append(k, v.clone());
        }
        Ok(headers)
    }

    async fn http(&self, signal: Signal, body: Vec<u8>) -> Sent {
        let url = &self.settings.endpoint;
        let mut signed = vec![(
            "content-type".to_owned(),
            "application/x-protobuf".to_owned(),
        )];
        if self.settings.gzip {
            signed.push(("content-encoding".to_owned(), "gzip".to_owned()));
        }
        let headers = match self.headers(url, signed, &body).await {
            Ok(h) => h,
            // No credentials yet (a role STS refuses, a chain not ready): may pass.
            Err(reason) => return Sent::Retry(reason),
        };
        let response = match self.client.post(url).headers(headers).body(body).send().await {
            Ok(r) => r,
            Err(e) => return Sent::Retry(error_chain(&e)),
        };
        let status = response.status().as_u16();
        self.metrics.response(status);
        let gzipped = response
            .headers()
            .get(reqwest::header::CONTENT_ENCODING)
            .is_some_and(|v| v == "gzip");
        let answer = response.bytes().await.unwrap_or_default();
        if (200..300).contains(&status) {
            let answer = if gzipped {
                gunzip(&answer).unwrap_or_default()
            } else {
                answer.to_vec()
            };
            self.partial(signal, &answer);
            return Sent::Taken;
        }
        let excerpt: String = String::from_utf8_lossy(&answer).chars().take(200).collect();
        let reason = format!("{url} answered {status}: {excerpt}");
        if matches!(status, 429 | 502 | 503 | 504) {
            Sent::Retry(reason)
        } else {
            Sent::Reject(reason)
        }
    }

    async fn grpc(&self, signal: Signal, body: Vec<u8>) -> Sent {
        let base = self.settings.endpoint.trim_end_matches('/');
        // The endpoint's scheme, host and port; the method is the path.
        let origin = match base.find("://").map(|i| i + 3) {
            Some(start) => match base[start..].find('/') {
                Some(slash) => &base[..start + slash],
                None => base,
            },
            None => base,
        };
        let url = format!("{origin}{}", signal.grpc_path());
        // The length-prefixed message: compressed or not, its length, its bytes.
        let mut framed = Vec::with_capacity(body.len() + 5);
        framed.push(u8::from(self.settings.gzip));
        framed.extend_from_slice(&(body.len() as u32).to_be_bytes());
        framed.extend_from_slice(&body);
        let mut signed = vec![("content-type".to_owned(), "application/grpc".to_owned())];
        if self.settings.gzip {
            signed.push(("grpc-encoding".to_owned(), "gzip".to_owned()));
        }
        let mut headers = match self.headers(&url, signed, &framed).await {
            Ok(h) => h,
            Err(reason) => return Sent::Retry(reason),
        };
        headers.insert("te", reqwest::header::HeaderValue::from_static("trailers"));
        let response = match self.client.post(&url).headers(headers).body(framed).send().await
        {
            Ok(r) => r,
            Err(e) => return Sent::Retry(error_chain(&e)),
        };
        let status = response.status().as_u16();
        self.metrics.response(status);
        let response: hyper::Response<reqwest::Body> = response.into();
        let (parts, body) = response.into_parts();
        let collected = match body.collect().await {
            Ok(c) => c,
            Err(e) => return Sent::Retry(format!("{url}: reading the answer: {e}")),
        };
        let trailers = collected.trailers().cloned().unwrap_or_default();
        let answer = collected.to_bytes();
        // A "trailers-only" answer has its status in the headers.
        let header = |name: &str| {
            trailers
                .get(name)
                .or_else(|| parts.headers.get(name))
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let Some(code) = header("grpc-status").and_then(|c| c.parse::<u32>().ok()) else {
            let reason = format!("{url} answered HTTP {status} without a gRPC status");
            return if matches!(status, 429 | 502 | 503 | 504) {
                Sent::Retry(reason)
            } else {
                Sent::Reject(reason)
            };
        };
        if code == 0 {
            if answer.len() >= 5 {
                let message = &answer[5..];
                let message = if answer[0] == 1 {
                    gunzip(message).unwrap_or_default()
                } else {
                    message.to_vec()
                };
                self.partial(signal, &message);
            }
            return Sent::Taken;
        }
        let message = header("grpc-message").unwrap_or_default();
        let reason = format!("{url} answered gRPC status {code}: {message}");
        // OTLP/gRPC's retryable codes: CANCELLED, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED,
        // ABORTED, OUT_OF_RANGE, UNAVAILABLE, DATA_LOSS.
        if matches!(code, 1 | 4 | 8 | 10 | 11 | 14 | 15) {
            Sent::Retry(reason)
        } else {
            Sent::Reject(reason)
        }
    }

    /// Counts and logs what a successful answer says was refused.
    fn partial(&self, signal: Signal, answer: &[u8]) {
        if let Some((rejected, message)) = signal.partial_success(answer)
            && rejected > 0
        {
            self.metrics.rejected_records.increment(rejected as u64);
            tracing::error!(
                endpoint = %self.settings.endpoint,
                rejected,
                message = %message,
                "OTLP partial success"
            );
        }
    }
}

fn gzip_bytes(body: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(body).expect("writing to memory");
    gz.finish().expect("writing to memory")
}

fn gunzip(body: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(body)
        .read_to_end(&mut out)
        .ok()?;
    Some(out)
}

#[async_trait::async_trait]
impl Output for OtlpSink {
    async fn send(&self, events: &[Bytes], _from: &Provenance) -> Result<(), SendError> {
        let mut rejected = Vec::new();
        let mut retry = Vec::new();
        let mut reasons = Vec::new();
        for signal in [Signal::Traces, Signal::Logs, Signal::Metrics] {
            let mine: Vec<(usize, &[u8])> = events
                .iter()
                .enumerate()
                .filter_map(|(i, line)| {
                    let (kind, json) = split(line);
                    (Signal::of(kind) == Some(signal)).then_some((i, json))
                })
                .collect();
            if mine.is_empty() {
                continue;
            }
            let (body, taken, refused) = signal.request(&mine);
            rejected.extend(refused);
            if taken.is_empty() {
                continue;
            }
            match self.export(signal, body, taken.len()).await {
                Sent::Taken => {}
                Sent::Retry(reason) => {
                    retry.extend(taken);
                    reasons.push(reason);
                }
                Sent::Reject(reason) => {
                    rejected.extend(taken.into_iter().map(|i| (i, reason.clone())));
                }
            }
        }
        for (i, line) in events.iter().enumerate() {
            let (kind, _) = split(line);
            if Signal::of(kind).is_none() {
                let kind = String::from_utf8_lossy(kind);
                rejected.push((
                    i,
                    format!("the event's type is `{kind}`, not TRACE, LOG or METRIC"),
                ));
            }
        }
        if rejected.is_empty() && retry.is_empty() {
            return Ok(());
        }
        if rejected.is_empty() && retry.len() == events.len() {
            return Err(SendError::Retry(reasons.join("; ")));
        }
        if retry.is_empty() && rejected.len() == events.len() {
            let first = rejected[0].1.clone();
            if rejected.iter().all(|(_, r)| *r == first) {
                return Err(SendError::Reject(first));
            }
        }
        Err(SendError::Partial {
            rejected,
            retry,
            reason: reasons.join("; "),
        })
    }

    fn threshold(&self) -> Option<Threshold> {
        Some(self.settings.threshold)
    }

    fn retry(&self) -> Retry {
        self.settings.retry
    }

    fn encoder(&self) -> Option<Arc<dyn Encode>> {
        Some(Arc::new(TypedLines))
    }

    /// The event, without its type.
    fn payload(&self, line: &Bytes) -> Bytes {
        match memchr::memchr(b'\n', line) {
            Some(i) => line.slice(i + 1..),
            None => line.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(kind: &str, json: serde_json::Value) -> Bytes {
        let mut l = kind.as_bytes().to_vec();
        l.push(b'\n');
        l.extend(serde_json::to_vec(&json).unwrap());
        Bytes::from(l)
    }

    #[test]
    fn a_request_holds_the_signal_s_items_and_refuses_the_rest() {
        let span = serde_json::json!({
            "traceId": "0102030405060708090a0b0c0d0e0f10",
            "spanId": "0102030405060708",
            "name": "a",
        });
        let lines = [
            line("TRACE", span.clone()),
            line("TRACE", serde_json::json!({"name": "no ids"})),
            line("TRACE", span),
        ];
        let mine: Vec<(usize, &[u8])> = lines
            .iter()
            .enumerate()
            .map(|(i, l)| (i, split(l).1))
            .collect();
        let (body, taken, refused) = Signal::Traces.request(&mine);
        assert_eq!(taken, [0, 2]);
        assert_eq!(refused.len(), 1);
        assert_eq!(refused[0].0, 1);
        let request = ExportTraceServiceRequest::decode(&body[..]).unwrap();
        assert_eq!(request.resource_spans.len(), 2);
        assert_eq!(request.resource_spans[1].scope_spans[0].spans[0].name, "a");
    }

    #[test]
    fn the_event_type_picks_the_signal_and_the_payload_is_the_event() {
        let mut event = sluice_event::Event::new(
            serde_json::json!({"body": "hi"}),
            sluice_event::Metadata::new("METRIC", 0),
        );
        let encoded = Bytes::from(TypedLines.encode(&event, None));
        assert_eq!(split(&encoded), (&b"METRIC"[..], &br#"{"body":"hi"}"#[..]));
        event.metadata.event_type = "LOG".into();
        let encoded = TypedLines.encode(&event, None);
        assert_eq!(Signal::of(split(&encoded).0), Some(Signal::Logs));
        assert_eq!(Signal::of(b"DOCUMENT"), None);
    }
}
