//! The `http` source: each POST body on `path` is one raw record.
//!
//! Status codes: 200 once the buffer holds the body; 400 for an empty body; 413 for a body over
//! `max_request_length`; 503 with `Retry-After` when the buffer stays full for
//! `request_timeout` or is shutting down. Never 200 for data the buffer does not have.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use sluice_buffer::{BufferWriter, Record, WriteError};
use sluice_config::HttpSource;

use crate::worker::Counters;

struct HttpState {
    pipeline: String,
    origin: String,
    writer: Arc<dyn BufferWriter>,
    timeout: Duration,
    counters: Arc<Counters>,
}

/// The router for one pipeline's http source.
pub fn router(
    pipeline: &str,
    config: &HttpSource,
    writer: Arc<dyn BufferWriter>,
    counters: Arc<Counters>,
) -> Router {
    let state = Arc::new(HttpState {
        pipeline: pipeline.to_owned(),
        origin: format!("http:{}", config.path),
        writer,
        timeout: config.request_timeout,
        counters,
    });
    let limit = usize::try_from(config.max_request_length.bytes()).unwrap_or(usize::MAX);
    Router::new()
        .route(&config.path, post(ingest))
        .layer(DefaultBodyLimit::max(limit))
        .with_state(state)
}

async fn ingest(State(state): State<Arc<HttpState>>, body: Bytes) -> Response {
    if body.is_empty() {
        return (StatusCode::BAD_REQUEST, "empty request body\n").into_response();
    }
    let received_at_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let record = Record {
        // No copy when the body is uniquely owned, which it is here.
        payload: Vec::from(body),
        key: None,
        received_at_ms,
        origin: state.origin.clone(),
    };
    match state.writer.write(vec![record], state.timeout).await {
        Ok(()) => {
            state
                .counters
                .accepted
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            StatusCode::OK.into_response()
        }
        Err(e @ WriteError::TooLarge { .. }) => {
            (StatusCode::PAYLOAD_TOO_LARGE, format!("{e}\n")).into_response()
        }
        Err(e) => {
            state
                .counters
                .refused
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            tracing::warn!(pipeline = %state.pipeline, error = %e, "refusing request");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, "1")],
                format!("{e}; retry later\n"),
            )
                .into_response()
        }
    }
}
