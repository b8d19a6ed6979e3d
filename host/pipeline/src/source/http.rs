//! The `http` source: each POST body on `path` is one raw record.
//!
//! Status codes: 200 once the buffer holds the body; 400 for an empty body (or gzip that is
//! not); 401 with `WWW-Authenticate` without the right credentials (`authentication`); 413 for
//! a body over `max_request_length` (at once, before reading the body, when `Content-Length`
//! says so; after inflating, for gzip); 429 with `Retry-After` past `max_pending_requests`
//! requests in progress; 415 for a `Content-Encoding` that `compression` does not
//! allow; 503 with `Retry-After` when the buffer stays full for `request_timeout` or is
//! shutting down. Never 200 for data the buffer does not have. [`super::listener`] serves the
//! router (TLS, connection limit and timeouts) and checks credentials and encodings;
//! [`super::intake`] writes to the buffer.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, FromRequest, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use sluice_buffer::{BufferWriter, Record};
use sluice_config::HttpSettings;

use super::intake::{Backoff, Intake, Refusal, retry_after_seconds};
use super::listener::{self, Guard, Protocols};
use super::{Build, Source, SourceContext, SourceError};
use crate::counters::Counters;

/// The http source's `Retry-After`: 1 s, whatever the cause.
const RETRY_AFTER: Duration = Duration::from_secs(1);

struct HttpState {
    origin: String,
    /// `max_request_length` in bytes.
    max_length: u64,
    guard: Guard,
    intake: Intake,
}

impl Build for HttpSettings {
    async fn build(self, cx: SourceContext) -> Result<Box<dyn Source>, SourceError> {
        Ok(Box::new(bind(&self, cx).await?))
    }
}

/// Binds the http source's port (so a port in use fails the start, before any pipeline runs).
pub async fn bind(
    settings: &HttpSettings,
    cx: SourceContext,
) -> Result<listener::Server, SourceError> {
    let bound = listener::bind(&settings.listener, Protocols::Http1).await?;
    tracing::info!(pipeline = %cx.pipeline, port = settings.listener.port, path = %settings.path, tls = bound.tls(), "http source listening");
    let router = router(&cx.pipeline, settings, cx.writer, cx.counters)?;
    Ok(bound.serve(router, cx.pipeline))
}

/// The router for one pipeline's http source.
pub fn router(
    pipeline: &str,
    settings: &HttpSettings,
    writer: Arc<dyn BufferWriter>,
    counters: Arc<Counters>,
) -> Result<Router, SourceError> {
    let listener = &settings.listener;
    let guard = Guard::new(listener.authentication.as_ref(), listener.compression);
    let state = Arc::new(HttpState {
        origin: format!("http:{}", settings.path),
        max_length: listener.max_request_length.bytes(),
        guard,
        intake: Intake::new(
            pipeline,
            writer,
            counters,
            listener.request_timeout,
            listener.max_pending_requests,
            Backoff::new(RETRY_AFTER, RETRY_AFTER),
        ),
    });
    let limit = usize::try_from(listener.max_request_length.bytes()).unwrap_or(usize::MAX);
    let mut router = Router::new().route(&settings.path, post(ingest));
    if listener.health_check_service {
        let open = listener.unauthenticated_health_check;
        router = router.route(
            "/health",
            get(
                move |State(state): State<Arc<HttpState>>, headers: HeaderMap| async move {
                    listener::health(&state.guard, open, &headers)
                },
            ),
        );
    }
    Ok(router.layer(DefaultBodyLimit::max(limit)).with_state(state))
}

async fn ingest(State(state): State<Arc<HttpState>>, request: Request) -> Response {
    if let Err(refused) = state.guard.authenticate(request.headers()) {
        return refused;
    }
    let _pending = match state.intake.admit("http") {
        Ok(permit) => permit,
        Err(refusal) => return refused(&refusal),
    };
    // Refused before reading the body, so the client is not kept sending it (or, with
    // `Expect: 100-continue`, waiting to). A chunked body over the limit is refused by
    // `DefaultBodyLimit` once that much has arrived.
    if let Some(response) = listener::too_long(request.headers(), state.max_length, "http") {
        return response;
    }
    let content_type = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let headers = state.intake.headers(request.headers());
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
    let payloads = match state.intake.max_record_size() {
        Some(max) if body.len() > max => match split_json_array(&body, max) {
            Ok(parts) => parts,
            Err(why) => return refused(&state.intake.too_large(why)),
        },
        // No copy when the body is uniquely owned, which it is here.
        _ => vec![Vec::from(body)],
    };
    let records = payloads
        .into_iter()
        .map(|payload| Record {
            payload,
            key: None,
            received_at_ms,
            origin: state.origin.clone(),
            content_type: content_type.clone(),
            headers: headers.clone(),
            ..Default::default()
        })
        .collect();
    match state.intake.write(records).await {
        Ok(()) => StatusCode::OK.into_response(),
        Err(refusal) => refused(&refusal),
    }
}

/// A refusal as the http source answers it.
fn refused(refusal: &Refusal) -> Response {
    let status = match refusal {
        Refusal::Busy { .. } | Refusal::Throttled { .. } => StatusCode::TOO_MANY_REQUESTS,
        Refusal::Unavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
        Refusal::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
    };
    let body = format!("{}\n", refusal.message());
    match refusal.retry_after() {
        Some(after) => (
            status,
            [(header::RETRY_AFTER, retry_after_seconds(after))],
            body,
        )
            .into_response(),
        None => (status, body).into_response(),
    }
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
