//! OTLP/HTTP: a POST of an `Export…ServiceRequest`, protobuf (`application/x-protobuf`) or
//! OTLP/JSON (`application/json`), optionally gzip (`Content-Encoding: gzip`, with
//! `compression: gzip`). The body, inflated, goes to the buffer as it is.
//!
//! Answers, as OTLP/HTTP clients read them: 200 with an empty `Export…ServiceResponse` in the
//! request's encoding once the buffer holds the body (no partial success: a request is taken
//! whole); 429 with `Retry-After` while too many requests are in progress or the buffer's policy
//! throttles the client; 503 with `Retry-After` while the buffer is full, shutting down or cannot
//! be reached (both retryable); 413 for a body over `max_request_length` (before or after gzip)
//! or larger than the buffer takes; 415 for another content type or encoding; 401 with
//! `WWW-Authenticate` without the right credentials. Error bodies are a `google.rpc.Status` in
//! the request's encoding.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{FromRequest as _, Request};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse as _, Response};
use prost::Message as _;
use sluice_config::source::otlp::Signal;

use super::OtlpState;
use crate::source::intake::{Refusal, retry_after_seconds};
use crate::source::listener;

/// The body's encoding, from its `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Encoding {
    Protobuf,
    Json,
}

impl Encoding {
    pub(super) fn of(content_type: Option<&str>) -> Option<Self> {
        let essence = content_type?.split(';').next()?.trim().to_ascii_lowercase();
        match essence.as_str() {
            "application/x-protobuf" | "application/protobuf" => Some(Encoding::Protobuf),
            "application/json" => Some(Encoding::Json),
            _ => None,
        }
    }

    fn content_type(self) -> &'static str {
        match self {
            Encoding::Protobuf => "application/x-protobuf",
            Encoding::Json => "application/json",
        }
    }
}

/// Answers one OTLP/HTTP export of `signal`.
pub(super) async fn export(state: Arc<OtlpState>, signal: Signal, request: Request) -> Response {
    if let Err(refused) = state.guard.authenticate(request.headers()) {
        return refused;
    }
    let content_type = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    let Some(encoding) = Encoding::of(content_type) else {
        let message = format!(
            "OTLP/HTTP takes `application/x-protobuf` or `application/json`, not `{}`",
            content_type.unwrap_or("(no Content-Type)")
        );
        return answer(
            Encoding::Protobuf,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            None,
            &message,
        );
    };
    let _pending = match state.intake.admit(state.source) {
        Ok(permit) => permit,
        Err(refusal) => return refused(encoding, &refusal),
    };
    if let Some(response) = listener::too_long(request.headers(), state.max_length, state.source) {
        return response;
    }
    let headers = state.intake.headers(request.headers());
    let content_encoding = request
        .headers()
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = match Bytes::from_request(request, &()).await {
        Ok(body) => body,
        Err(rejection) => return rejection.into_response(),
    };
    let body = match state
        .guard
        .decode(content_encoding.as_deref(), body, state.max_length)
    {
        Ok(body) => body,
        Err(refused) => return refused,
    };
    // An empty body is an export of nothing: nothing to keep.
    if !body.is_empty() {
        if let Some(max) = state.intake.max_record_size()
            && body.len() > max
        {
            let refusal = state.intake.too_large(format!(
                "the request is {} bytes, over the buffer's `max_request_size` of {max} bytes; \
                 export smaller batches",
                body.len()
            ));
            return refused(encoding, &refusal);
        }
        let records = state.records(
            signal,
            Vec::from(body),
            encoding == Encoding::Json,
            headers,
            "http",
        );
        if let Err(refusal) = state.intake.write(records).await {
            return refused(encoding, &refusal);
        }
    }
    let empty: &'static [u8] = match encoding {
        Encoding::Protobuf => b"",
        Encoding::Json => b"{}",
    };
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, encoding.content_type())],
        empty,
    )
        .into_response()
}

/// A refusal as OTLP/HTTP answers it.
fn refused(encoding: Encoding, refusal: &Refusal) -> Response {
    let status = match refusal {
        Refusal::Busy { .. } | Refusal::Throttled { .. } => StatusCode::TOO_MANY_REQUESTS,
        Refusal::Unavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
        Refusal::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
    };
    answer(encoding, status, refusal.retry_after(), refusal.message())
}

/// An error answer: a `google.rpc.Status` with `message`, in `encoding`.
fn answer(
    encoding: Encoding,
    status: StatusCode,
    retry_after: Option<std::time::Duration>,
    message: &str,
) -> Response {
    let code = rpc_code(status);
    let body = match encoding {
        Encoding::Protobuf => tonic_types::Status {
            code,
            message: message.to_owned(),
            details: Vec::new(),
        }
        .encode_to_vec(),
        Encoding::Json => serde_json::json!({ "code": code, "message": message })
            .to_string()
            .into_bytes(),
    };
    let mut response = (
        status,
        [(header::CONTENT_TYPE, encoding.content_type())],
        body,
    )
        .into_response();
    if let Some(after) = retry_after
        && let Ok(value) = retry_after_seconds(after).parse()
    {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    response
}

/// The `google.rpc.Code` an error status stands for.
fn rpc_code(status: StatusCode) -> i32 {
    match status {
        StatusCode::TOO_MANY_REQUESTS => tonic::Code::ResourceExhausted as i32,
        StatusCode::SERVICE_UNAVAILABLE => tonic::Code::Unavailable as i32,
        StatusCode::PAYLOAD_TOO_LARGE | StatusCode::UNSUPPORTED_MEDIA_TYPE => {
            tonic::Code::InvalidArgument as i32
        }
        _ => tonic::Code::Unknown as i32,
    }
}

#[cfg(test)]
mod tests {
    use super::Encoding;

    #[test]
    fn content_types_name_the_encoding() {
        assert_eq!(
            Encoding::of(Some("application/x-protobuf")),
            Some(Encoding::Protobuf)
        );
        assert_eq!(
            Encoding::of(Some("Application/JSON; charset=utf-8")),
            Some(Encoding::Json)
        );
        assert_eq!(Encoding::of(Some("text/plain")), None);
        assert_eq!(Encoding::of(None), None);
    }
}
