//! The OTLP sources (`otel_logs_source`, `otel_trace_source`, `otel_metrics_source`, and
//! `otlp` for all three): OTLP/gRPC (`grpc`) and OTLP/HTTP (`http`) on one port, HTTP/1.1
//! and HTTP/2, with or without TLS, through the same [`listener`] as the http source.
//!
//! Routes: each signal's gRPC path (the method's own, `/opentelemetry.proto.collector.
//! trace.v1.TraceService/Export`, unless `path` / `traces_path`... say otherwise) takes gRPC
//! calls, and OTLP/HTTP bodies too with `unframed_requests: true`; `http_path`
//! (`otel_logs_source`) takes OTLP/HTTP. With `health_check_service`, `grpc.health.v1.Health/
//! Check` and `GET /health` answer while the source runs.
//!
//! A request's message goes to the buffer whole, undecoded (after gzip), with a content type
//! that says its encoding and signal (`application/x-protobuf; otlp=traces`), so the `otlp`
//! deserializer knows what it reads even when one source takes all three signals. The client is
//! answered only once the buffer holds it.
//!
//! Where sluice answers differently from Data Prepper: a full buffer is gRPC `UNAVAILABLE` and
//! HTTP 503 with `Retry-After` (Data Prepper: `RESOURCE_EXHAUSTED`, and HTTP 507, which OTLP/HTTP
//! clients do not retry); both carry the `retry_info` back-off.

mod by_trace;
mod grpc;
mod http;

use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse as _, Response};
use axum::routing::{get, post};
use sluice_buffer::Record;
use sluice_config::http::Compression;
use sluice_config::source::otlp::{OtlpSettings, Signal};

use super::intake::{Backoff, Intake};
use super::listener::{self, Guard, Protocols};
use super::{Build, Source, SourceContext, SourceError};

/// What every request of one OTLP source shares.
struct OtlpState {
    /// The plugin name, for messages and record origins.
    source: &'static str,
    intake: Intake,
    guard: Guard,
    compression: Compression,
    /// `max_request_length` in bytes.
    max_length: u64,
    /// Records keyed by trace id, each holding the traces of one partition
    /// (`SourceContext::keyed`: a Kafka buffer).
    by_trace: bool,
}

impl OtlpState {
    /// The buffer records for one request's message: one, or for an OTLP/protobuf trace export
    /// into a Kafka buffer one per partition its traces go to, keyed by a trace id (`by_trace`).
    fn records(
        &self,
        signal: Signal,
        payload: Vec<u8>,
        json: bool,
        headers: Vec<(String, String)>,
        transport: &str,
    ) -> Vec<Record> {
        let encoding = if json {
            "application/json"
        } else {
            "application/x-protobuf"
        };
        let record = |payload, key| Record {
            payload,
            key,
            received_at_ms: super::now_ms(),
            origin: format!("{}:{transport}/{signal}", self.source),
            content_type: Some(format!("{encoding}; otlp={signal}")),
            headers: headers.clone(),
            ..Default::default()
        };
        match (signal, json, self.by_trace) {
            (Signal::Traces, false, true) => {
                match by_trace::split(&payload, |key| self.intake.partition_of(key)) {
                    Some(parts) => parts
                        .into_iter()
                        .map(|(trace, part)| record(part, Some(trace.into_bytes())))
                        .collect(),
                    None => vec![record(payload, None)],
                }
            }
            _ => vec![record(payload, None)],
        }
    }
}

impl Build for OtlpSettings {
    async fn build(self, cx: SourceContext) -> Result<Box<dyn Source>, SourceError> {
        Ok(Box::new(bind(&self, cx).await?))
    }
}

/// Binds an OTLP source's port (so a port in use fails the start, before any pipeline runs).
pub async fn bind(
    settings: &OtlpSettings,
    cx: SourceContext,
) -> Result<listener::Server, SourceError> {
    let listener = &settings.listener;
    let bound = listener::bind(listener, Protocols::Http1And2).await?;
    let state = Arc::new(OtlpState {
        source: settings.source,
        intake: Intake::new(
            &cx.pipeline,
            cx.writer,
            cx.counters,
            // As Data Prepper: the buffer gets 80% of the request's time, so the client
            // hears why before its own deadline.
            listener.request_timeout.mul_f64(0.8),
            listener.max_pending_requests,
            Backoff::new(settings.retry_info.min_delay, settings.retry_info.max_delay),
        ),
        guard: Guard::new(listener.authentication.as_ref(), listener.compression),
        compression: listener.compression,
        max_length: listener.max_request_length.bytes(),
        by_trace: cx.keyed,
    });
    tracing::info!(
        pipeline = %cx.pipeline,
        source = settings.source,
        port = listener.port,
        tls = bound.tls(),
        grpc = ?settings.grpc,
        http = ?settings.http,
        "OTLP source listening"
    );
    if settings.proto_reflection_service {
        tracing::warn!(
            pipeline = %cx.pipeline,
            source = settings.source,
            "proto_reflection_service is true, but sluice serves no gRPC reflection (OTLP \
             clients do not need it)"
        );
    }
    Ok(bound.serve(router(settings, state), cx.pipeline))
}

/// gRPC calls are told from OTLP/HTTP by their content type (`application/grpc`,
/// `application/grpc+proto`).
fn is_grpc(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/grpc"))
}

fn router(settings: &OtlpSettings, state: Arc<OtlpState>) -> Router<()> {
    let mut router = Router::new();
    let unframed = settings.unframed_requests;
    for (signal, path) in settings.grpc.clone() {
        let grpc_path = path.clone();
        router = router.route(
            &path,
            post(
                move |State(state): State<Arc<OtlpState>>, request: Request| async move {
                    if is_grpc(request.headers()) {
                        grpc::export(state, signal, request).await
                    } else if unframed {
                        http::export(state, signal, request).await
                    } else {
                        not_grpc(&grpc_path)
                    }
                },
            ),
        );
    }
    for (signal, path) in settings.http.clone() {
        router = router.route(
            &path,
            post(
                move |State(state): State<Arc<OtlpState>>, request: Request| {
                    http::export(state, signal, request)
                },
            ),
        );
    }
    if settings.listener.health_check_service {
        let open = settings.listener.unauthenticated_health_check;
        router = router
            .route(
                "/grpc.health.v1.Health/Check",
                post(
                    move |State(state): State<Arc<OtlpState>>, request: Request| {
                        grpc::health(state, open, request)
                    },
                ),
            )
            .route(
                "/health",
                get(
                    move |State(state): State<Arc<OtlpState>>, headers: HeaderMap| async move {
                        listener::health(&state.guard, open, &headers)
                    },
                ),
            );
    }
    let limit = usize::try_from(settings.listener.max_request_length.bytes()).unwrap_or(usize::MAX);
    router.layer(DefaultBodyLimit::max(limit)).with_state(state)
}

/// A plain HTTP request at a gRPC path without `unframed_requests`.
fn not_grpc(path: &str) -> Response {
    (
        axum::http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
        format!(
            "`{path}` takes gRPC (Content-Type: application/grpc); to post OTLP/HTTP (protobuf or \
             JSON) here, set the source's `unframed_requests: true`\n"
        ),
    )
        .into_response()
}
