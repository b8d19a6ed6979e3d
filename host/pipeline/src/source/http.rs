//! The `http` source: each POST body on `path` is one raw record.
//!
//! Status codes: 200 once the buffer holds the body; 400 for an empty body (or gzip that is
//! not); 401 with `WWW-Authenticate` without the right credentials (`authentication`); 413 for
//! a body over `max_request_length` (at once, before reading the body, when `Content-Length`
//! says so; after inflating, for gzip); 429 with `Retry-After` past `max_pending_requests`
//! requests in progress; 415 for a `Content-Encoding` that `compression` does not
//! allow; 503 with `Retry-After` when the buffer stays full for `request_timeout` or is
//! shutting down. Never 200 for data the buffer does not have. [`server`] serves the router:
//! TLS, connection limit and timeouts; `guard` checks credentials and encodings.

mod activity;
pub mod guard;
pub mod server;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, FromRequest, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use sluice_buffer::{BufferWriter, Record, WriteError};
use sluice_config::HttpSource;

use super::{Source, SourceContext, SourceError};
use crate::counters::Counters;

struct HttpState {
    pipeline: String,
    origin: String,
    /// Request headers the buffer's policy reads (lowercase names).
    wanted_headers: Vec<String>,
    writer: Arc<dyn BufferWriter>,
    timeout: Duration,
    /// `max_request_length` in bytes.
    max_length: u64,
    counters: Arc<Counters>,
    guard: guard::Guard,
    /// `max_pending_requests`: a permit per request being handled.
    pending: Arc<tokio::sync::Semaphore>,
    max_pending: usize,
}

/// The http source, listening.
pub struct HttpServer {
    listener: tokio::net::TcpListener,
    router: Router,
    limits: server::Limits,
    tls: Option<tokio_rustls::TlsAcceptor>,
    pipeline: String,
}

impl HttpServer {
    /// Binds the port (so a port in use fails the start, before any pipeline runs).
    pub async fn bind(config: &HttpSource, cx: SourceContext) -> Result<Self, SourceError> {
        let listener = tokio::net::TcpListener::bind(("0.0.0.0", config.port))
            .await
            .map_err(|error| SourceError::Listen {
                port: config.port,
                error,
            })?;
        let limits = server::Limits::of(config);
        let tls = config
            .tls()
            .map(|tls| server::tls_acceptor(&tls))
            .transpose()
            .map_err(SourceError::Tls)?;
        tracing::info!(pipeline = %cx.pipeline, port = config.port, path = %config.path, tls = config.ssl, "http source listening");
        Ok(Self {
            listener,
            router: router(&cx.pipeline, config, cx.writer, cx.counters)?,
            limits,
            tls,
            pipeline: cx.pipeline,
        })
    }
}

#[async_trait::async_trait]
impl Source for HttpServer {
    async fn run(self: Box<Self>, stop: tokio::sync::watch::Receiver<bool>) {
        server::serve(
            self.listener,
            self.router,
            self.limits,
            self.tls,
            self.pipeline,
            stop,
        )
        .await;
    }
}

/// The router for one pipeline's http source.
pub fn router(
    pipeline: &str,
    config: &HttpSource,
    writer: Arc<dyn BufferWriter>,
    counters: Arc<Counters>,
) -> Result<Router, SourceError> {
    let guard = guard::Guard::new(config.authentication.as_ref(), config.compression)?;
    let state = Arc::new(HttpState {
        pipeline: pipeline.to_owned(),
        origin: format!("http:{}", config.path),
        wanted_headers: writer.wanted_headers(),
        writer,
        timeout: config.request_timeout,
        max_length: config.max_request_length.bytes(),
        counters,
        guard,
        pending: Arc::new(tokio::sync::Semaphore::new(
            config
                .max_pending_requests
                .min(tokio::sync::Semaphore::MAX_PERMITS),
        )),
        max_pending: config.max_pending_requests,
    });
    let limit = usize::try_from(config.max_request_length.bytes()).unwrap_or(usize::MAX);
    let mut router = Router::new().route(&config.path, post(ingest));
    if config.health_check_service {
        router = if config.unauthenticated_health_check {
            router.route("/health", get(health_open))
        } else {
            router.route("/health", get(health))
        };
    }
    Ok(router.layer(DefaultBodyLimit::max(limit)).with_state(state))
}

/// `health_check_service`: 200 while the source takes requests (with credentials, when the
/// source asks for them and `unauthenticated_health_check` is false).
async fn health(State(state): State<Arc<HttpState>>, headers: HeaderMap) -> Response {
    match state.guard.authenticate(&headers) {
        Ok(()) => health_open().await,
        Err(refused) => refused,
    }
}

async fn health_open() -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        "{\"healthy\":true}\n",
    )
        .into_response()
}

async fn ingest(State(state): State<Arc<HttpState>>, request: Request) -> Response {
    if let Err(refused) = state.guard.authenticate(request.headers()) {
        return refused;
    }
    let Ok(_pending) = state.pending.clone().try_acquire_owned() else {
        state.counters.refused.add(1);
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, "1")],
            format!(
                "too many requests in progress: the http source's `max_pending_requests` = {} is \
                 reached; retry later\n",
                state.max_pending
            ),
        )
            .into_response();
    };
    // Refused before reading the body, so the client is not kept sending it (or, with
    // `Expect: 100-continue`, waiting to). A chunked body over the limit is refused by
    // `DefaultBodyLimit` once that much has arrived.
    if let Some(length) = content_length(request.headers())
        && length > state.max_length
    {
        let message = format!(
            "the body is {length} bytes (Content-Length), over the http source's \
             `max_request_length` of {} bytes\n",
            state.max_length
        );
        return (
            StatusCode::PAYLOAD_TOO_LARGE,
            [(header::CONNECTION, "close")],
            message,
        )
            .into_response();
    }
    let content_type = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    // The headers the buffer's policy reads (`X-Tenant`, `Idempotency-Key`), and no others.
    let headers: Vec<(String, String)> = state
        .wanted_headers
        .iter()
        .filter_map(|name| {
            let value = request.headers().get(name.as_str())?.to_str().ok()?;
            Some((name.clone(), value.to_owned()))
        })
        .collect();
    let encoding = request
        .headers()
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = match Bytes::from_request(request, &state).await {
        Ok(body) => body,
        Err(rejection) => return rejection.into_response(),
    };
    let body = match state
        .guard
        .decode(encoding.as_deref(), body, state.max_length)
    {
        Ok(body) => body,
        Err(refused) => return refused,
    };
    if body.is_empty() {
        return (StatusCode::BAD_REQUEST, "empty request body\n").into_response();
    }
    let received_at_ms = super::now_ms();
    let payloads = match state.writer.max_record_size() {
        Some(max) if body.len() > max => match split_json_array(&body, max) {
            Ok(parts) => parts,
            Err(why) => {
                state.counters.overflows.add(1);
                return (StatusCode::PAYLOAD_TOO_LARGE, format!("{why}\n")).into_response();
            }
        },
        // No copy when the body is uniquely owned, which it is here.
        _ => vec![Vec::from(body)],
    };
    let n = payloads.len() as u64;
    let records = payloads
        .into_iter()
        .map(|payload| Record {
            payload,
            key: None,
            received_at_ms,
            origin: state.origin.clone(),
            content_type: content_type.clone(),
            headers: headers.clone(),
        })
        .collect();
    match state.writer.write(records, state.timeout).await {
        Ok(()) => {
            state.counters.accepted.add(n);
            StatusCode::OK.into_response()
        }
        Err(e @ (WriteError::TooLarge { .. } | WriteError::RecordTooLarge { .. })) => {
            state.counters.overflows.add(1);
            (StatusCode::PAYLOAD_TOO_LARGE, format!("{e}\n")).into_response()
        }
        Err(WriteError::Throttled {
            retry_after,
            reason,
        }) => {
            state.counters.refused.add(1);
            // Whole seconds, rounded up: a client never retries too early.
            let seconds = retry_after.as_millis().div_ceil(1000).max(1).to_string();
            (
                StatusCode::TOO_MANY_REQUESTS,
                [(header::RETRY_AFTER, seconds)],
                format!("{reason}; retry later\n"),
            )
                .into_response()
        }
        Err(e) => {
            if let WriteError::Full(_) = e {
                state.counters.write_timeouts.add(1);
            }
            state.counters.refused.add(1);
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

/// The request's `Content-Length`, if it has a valid one (hyper refuses invalid ones).
fn content_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse()
        .ok()
}

/// Splits a JSON array body into smaller JSON arrays of whole elements, none over `max`
/// bytes, so each fits in one buffer record. Anything else that is too large is refused.
fn split_json_array(body: &[u8], max: usize) -> Result<Vec<Vec<u8>>, String> {
    let elements: Vec<&serde_json::value::RawValue> = serde_json::from_slice(body).map_err(|_| {
        format!(
            "the body is {} bytes, over the buffer's `max_request_size` of {max} bytes, and is not \
             a JSON array that could be split into records; send smaller requests",
            body.len()
        )
    })?;
    let mut parts = Vec::new();
    let mut part = vec![b'['];
    for element in elements {
        let text = element.get().as_bytes();
        if text.len() + 2 > max {
            return Err(format!(
                "one JSON array element is {} bytes, over the buffer's `max_request_size` of \
                 {max} bytes",
                text.len()
            ));
        }
        if part.len() > 1 && part.len() + 1 + text.len() + 1 > max {
            part.push(b']');
            parts.push(std::mem::replace(&mut part, vec![b'[']));
        }
        if part.len() > 1 {
            part.push(b',');
        }
        part.extend_from_slice(text);
    }
    part.push(b']');
    parts.push(part);
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::split_json_array;

    #[test]
    fn splits_arrays_on_element_boundaries_within_the_limit() {
        let body = br#"[{"a":1},{"b":"two"},{"c":[3,3,3]},{"d":4}]"#;
        let parts = split_json_array(body, 24).unwrap();
        assert!(parts.len() > 1);
        let mut elements = Vec::new();
        for part in &parts {
            assert!(part.len() <= 24, "{}", String::from_utf8_lossy(part));
            let v: Vec<serde_json::Value> = serde_json::from_slice(part).unwrap();
            elements.extend(v);
        }
        let whole: Vec<serde_json::Value> = serde_json::from_slice(body).unwrap();
        assert_eq!(elements, whole, "every element once, in order");
    }

    #[test]
    fn refuses_what_cannot_be_split() {
        let err = split_json_array(br#"{"one":"object that is long"}"#, 10).unwrap_err();
        assert!(err.contains("not a JSON array"), "{err}");
        let err = split_json_array(br#"[{"one":"element that is long"}]"#, 10).unwrap_err();
        assert!(err.contains("one JSON array element is"), "{err}");
    }
}
