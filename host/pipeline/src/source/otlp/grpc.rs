//! OTLP/gRPC: `Export` calls of the collector services, over HTTP/2. tonic does the gRPC part
//! (framing, `grpc-encoding: gzip`, the message size limit, statuses) with a codec that keeps
//! the message as the client encoded it: its bytes go to the buffer undecoded, the `otlp`
//! deserializer decodes them after the buffer.
//!
//! Statuses, as OTLP/gRPC clients read them: `OK` with an empty `Export…ServiceResponse` once
//! the buffer holds the request (there is no partial success: a request is taken whole, and
//! what the deserializer later cannot use goes to the dead-letter file); `UNAVAILABLE` with
//! `RetryInfo` (retryable) while too many requests are in progress or the buffer is full,
//! shutting down or cannot be reached; `RESOURCE_EXHAUSTED` with `RetryInfo` (retryable) when the
//! buffer's policy throttles the client; `INVALID_ARGUMENT` (not retryable) for a message over
//! `max_request_length` (before or after gzip) or larger than the buffer takes;
//! `UNAUTHENTICATED` without the right credentials; `UNIMPLEMENTED` for a compression the source
//! does not accept.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::HeaderValue;
use axum::response::{IntoResponse as _, Response};
use bytes::{Buf as _, BufMut as _};
use prost::Message as _;
use sluice_config::http::Compression;
use sluice_config::source::otlp::Signal;
use tonic::codec::{Codec, CompressionEncoding, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::metadata::{MetadataMap, MetadataValue};
use tonic::server::UnaryService;
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt as _};

use super::OtlpState;
use crate::source::intake::Refusal;

/// Answers one gRPC `Export` call of `signal`.
pub(super) async fn export(state: Arc<OtlpState>, signal: Signal, request: Request) -> Response {
    if let Err(why) = state.guard.check(request.headers()) {
        return status(Status::unauthenticated(why));
    }
    let permit = match state.intake.admit(state.source) {
        Ok(permit) => permit,
        Err(refusal) => return status(refused(&refusal)),
    };
    let headers = state.intake.headers(request.headers());
    let max = usize::try_from(state.max_length).unwrap_or(usize::MAX);
    let mut grpc =
        tonic::server::Grpc::new(RawCodec).apply_max_message_size_config(Some(max), None);
    if state.compression == Compression::Gzip {
        grpc = grpc.accept_compressed(CompressionEncoding::Gzip);
    }
    let called = Arc::new(AtomicBool::new(false));
    let call = Call {
        state: state.clone(),
        signal,
        headers,
        called: called.clone(),
    };
    let mut response = grpc.unary(call, request).await.map(Body::new);
    drop(permit);
    if !called.load(Ordering::Relaxed) {
        // tonic refused the message before it reached the source: over the size limit
        // (`OUT_OF_RANGE`, or `RESOURCE_EXHAUSTED` while inflating), which OTLP clients would
        // retry. Sending it again cannot help.
        let headers = response.headers_mut();
        if let Some(code) = headers.get("grpc-status")
            && (code == "11" || code == "8")
        {
            state.intake.too_large(String::new());
            // INVALID_ARGUMENT
            headers.insert("grpc-status", HeaderValue::from_static("3"));
        }
    }
    response
}

/// `grpc.health.v1.Health/Check`: `SERVING` while the source runs (with credentials unless
/// `open`).
pub(super) async fn health(state: Arc<OtlpState>, open: bool, request: Request) -> Response {
    if !open && let Err(why) = state.guard.check(request.headers()) {
        return status(Status::unauthenticated(why));
    }
    tonic::server::Grpc::new(RawCodec)
        .unary(Serving, request)
        .await
        .map(Body::new)
}

/// The health service: `SERVING`, whatever the request.
struct Serving;

impl UnaryService<Bytes> for Serving {
    type Response = Bytes;
    type Future = std::future::Ready<Result<tonic::Response<Bytes>, Status>>;

    fn call(&mut self, _: tonic::Request<Bytes>) -> Self::Future {
        /// `HealthCheckResponse { status: SERVING }`, encoded.
        const SERVING: &[u8] = &[0x08, 0x01];
        std::future::ready(Ok(tonic::Response::new(Bytes::from_static(SERVING))))
    }
}

/// A trailers-only gRPC answer.
fn status(status: Status) -> Response {
    status.into_http::<Body>().into_response()
}

/// A refusal as an OTLP/gRPC status. Retryable ones carry `RetryInfo` twice: among the
/// status details (`grpc-status-details-bin`, as Data Prepper sends it) and as the
/// `google.rpc.retryinfo-bin` trailer, the one OpenTelemetry's exporters read.
pub(super) fn refused(refusal: &Refusal) -> Status {
    let code = match refusal {
        Refusal::Busy { .. } | Refusal::Unavailable { .. } => Code::Unavailable,
        Refusal::Throttled { .. } => Code::ResourceExhausted,
        Refusal::TooLarge { .. } => Code::InvalidArgument,
    };
    let Some(after) = refusal.retry_after() else {
        return Status::new(code, refusal.message());
    };
    let mut metadata = MetadataMap::new();
    let retry_info = tonic_types::pb::RetryInfo {
        retry_delay: prost_types::Duration::try_from(after).ok(),
    };
    metadata.insert_bin(
        "google.rpc.retryinfo-bin",
        MetadataValue::from_bytes(&retry_info.encode_to_vec()),
    );
    Status::with_error_details_and_metadata(
        code,
        refusal.message(),
        ErrorDetails::with_retry_info(Some(after)),
        metadata,
    )
}

/// One call: writes the message to the buffer, answers once it holds it.
struct Call {
    state: Arc<OtlpState>,
    signal: Signal,
    headers: Vec<(String, String)>,
    /// Set once tonic hands over the message.
    called: Arc<AtomicBool>,
}

type CallFuture = Pin<Box<dyn Future<Output = Result<tonic::Response<Bytes>, Status>> + Send>>;

impl UnaryService<Bytes> for Call {
    type Response = Bytes;
    type Future = CallFuture;

    fn call(&mut self, request: tonic::Request<Bytes>) -> CallFuture {
        self.called.store(true, Ordering::Relaxed);
        let state = self.state.clone();
        let signal = self.signal;
        let headers = std::mem::take(&mut self.headers);
        Box::pin(async move {
            let message = request.into_inner();
            // An empty message is an export of nothing: nothing to keep.
            if !message.is_empty() {
                let records = state.records(signal, message.into(), false, headers, "grpc");
                state.intake.write(records).await.map_err(|r| refused(&r))?;
            }
            // An empty `Export…ServiceResponse`: no partial success to report.
            Ok(tonic::Response::new(Bytes::new()))
        })
    }
}

/// Messages as bytes, both ways: requests are kept as the client encoded them, responses are
/// encoded by the caller.
#[derive(Debug, Clone, Copy)]
struct RawCodec;

impl Codec for RawCodec {
    type Encode = Bytes;
    type Decode = Bytes;
    type Encoder = RawCodec;
    type Decoder = RawCodec;

    fn encoder(&mut self) -> RawCodec {
        RawCodec
    }

    fn decoder(&mut self) -> RawCodec {
        RawCodec
    }
}

impl Encoder for RawCodec {
    type Item = Bytes;
    type Error = Status;

    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put(item);
        Ok(())
    }
}

impl Decoder for RawCodec {
    type Item = Bytes;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}
