//! Objects into and out of S3 or an S3-compatible store, through aws-sdk-s3.
//!
//! - the s3 sink's [`Bucket`]: [`Bucket::put`] uploads one
//!   object whole: a single `PutObject` for small bodies, a multipart upload (aborted on
//!   failure, so no part is left behind) for large ones. An object is visible only once
//!   complete, so a sink acknowledging after `put` returns never acknowledges half an object.
//!   Errors say whether sending again can help ([`PutError::retryable`]).
//! - the s3 source's [`source::S3Source`]: the objects an SQS queue announces
//!   ([`notification`]), streamed and cut into lines ([`lines`]).

pub mod codec;
pub mod lines;
pub mod notification;
pub mod source;

use std::time::Duration;

use aws_sdk_s3::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};

/// Where and how to connect.
#[derive(Debug, Clone)]
pub struct BucketConfig {
    pub bucket: String,
    pub region: String,
    /// An S3-compatible endpoint instead of AWS's (`http://127.0.0.1:8333`); path-style
    /// addressing is used with it.
    pub endpoint: Option<String>,
    /// Bodies of at least this many bytes go up in parts of this size.
    pub part_size: usize,
    /// How long one request may take.
    pub request_timeout: Duration,
}

/// Why an object was not stored.
#[derive(Debug, thiserror::Error)]
#[error("s3://{bucket}/{key}: {operation}: {reason}")]
pub struct PutError {
    pub bucket: String,
    pub key: String,
    pub operation: &'static str,
    pub reason: String,
    /// The HTTP status, if the store answered.
    pub status: Option<u16>,
    /// The store's error code (`SignatureDoesNotMatch`, `NoSuchBucket`, `SlowDown`).
    pub code: Option<String>,
}

impl PutError {
    /// Whether sending again may succeed: no answer, a 5xx, throttling, and also credentials
    /// or a bucket that may be fixed while the data waits. Only a request the store calls
    /// malformed or too large (another 4xx) is not.
    pub fn retryable(&self) -> bool {
        match self.status {
            None => true,
            Some(s) if s >= 500 || s == 408 || s == 429 => true,
            Some(401 | 403 | 404) => true,
            Some(_) => false,
        }
    }

    /// Whether the credentials or the bucket are wrong (checked at start).
    pub fn is_configuration(&self) -> bool {
        matches!(self.status, Some(401 | 403 | 404))
            || self.code.as_deref().is_some_and(|c| {
                matches!(
                    c,
                    "SignatureDoesNotMatch"
                        | "InvalidAccessKeyId"
                        | "AccessDenied"
                        | "NoSuchBucket"
                        | "InvalidBucketName"
                )
            })
    }
}

/// The AWS settings of `region` from the standard chain (credentials from the environment,
/// profile or instance role); requests time out after `timeout`, if given, and are not retried
/// by the SDK (the sink and source retry with their own counters and backoff).
pub(crate) async fn aws_defaults(region: &str, timeout: Option<Duration>) -> aws_config::SdkConfig {
    let mut timeouts =
        aws_config::timeout::TimeoutConfig::builder().connect_timeout(Duration::from_secs(5));
    if let Some(timeout) = timeout {
        timeouts = timeouts.operation_attempt_timeout(timeout);
    }
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .region(aws_config::Region::new(region.to_owned()))
        .timeout_config(timeouts.build())
        .retry_config(aws_config::retry::RetryConfig::disabled())
        .load()
        .await
}

/// An S3 client; with `endpoint` (an S3-compatible store), path-style.
pub(crate) fn s3_client(
    shared: &aws_config::SdkConfig,
    endpoint: Option<&str>,
) -> aws_sdk_s3::Client {
    let mut builder = aws_sdk_s3::config::Builder::from(shared);
    if let Some(endpoint) = endpoint {
        builder = builder.endpoint_url(endpoint).force_path_style(true);
    }
    aws_sdk_s3::Client::from_conf(builder.build())
}

/// A bucket to put objects in.
#[derive(Debug, Clone)]
pub struct Bucket {
    client: aws_sdk_s3::Client,
    config: BucketConfig,
}

impl Bucket {
    /// Credentials come from the standard AWS chain (environment, profile, instance role).
    pub async fn connect(config: BucketConfig) -> Self {
        let shared = aws_defaults(&config.region, Some(config.request_timeout)).await;
        Self {
            client: s3_client(&shared, config.endpoint.as_deref()),
            config,
        }
    }

    pub fn name(&self) -> &str {
        &self.config.bucket
    }

    /// Checks that the bucket exists and the credentials are accepted (`HeadBucket`).
    pub async fn check(&self) -> Result<(), PutError> {
        self.client
            .head_bucket()
            .bucket(&self.config.bucket)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| self.error("", "HeadBucket", e))
    }

    /// Stores `body` under `key`; the object exists, complete, once this returns `Ok`.
    pub async fn put(
        &self,
        key: &str,
        body: Vec<u8>,
        content_type: &str,
        content_encoding: Option<&str>,
    ) -> Result<(), PutError> {
        if body.len() < self.config.part_size {
            let mut put = self
                .client
                .put_object()
                .bucket(&self.config.bucket)
                .key(key)
                .content_type(content_type)
                .body(ByteStream::from(body));
            if let Some(encoding) = content_encoding {
                put = put.content_encoding(encoding);
            }
            return put
                .send()
                .await
                .map(|_| ())
                .map_err(|e| self.error(key, "PutObject", e));
        }
        self.put_multipart(key, body, content_type, content_encoding)
            .await
    }

    async fn put_multipart(
        &self,
        key: &str,
        body: Vec<u8>,
        content_type: &str,
        content_encoding: Option<&str>,
    ) -> Result<(), PutError> {
        let mut create = self
            .client
            .create_multipart_upload()
            .bucket(&self.config.bucket)
            .key(key)
            .content_type(content_type);
        if let Some(encoding) = content_encoding {
            create = create.content_encoding(encoding);
        }
        let upload = create
            .send()
            .await
            .map_err(|e| self.error(key, "CreateMultipartUpload", e))?;
        let Some(upload_id) = upload.upload_id() else {
            return Err(PutError {
                bucket: self.config.bucket.clone(),
                key: key.to_owned(),
                operation: "CreateMultipartUpload",
                reason: "the store returned no upload id".to_owned(),
                status: None,
                code: None,
            });
        };
        let result = self.upload_parts(key, upload_id, &body).await;
        match result {
            Ok(parts) => self
                .client
                .complete_multipart_upload()
                .bucket(&self.config.bucket)
                .key(key)
                .upload_id(upload_id)
                .multipart_upload(
                    CompletedMultipartUpload::builder()
                        .set_parts(Some(parts))
                        .build(),
                )
                .send()
                .await
                .map(|_| ())
                .map_err(|e| self.error(key, "CompleteMultipartUpload", e)),
            Err(e) => {
                // Best effort: a store that is down keeps the parts until its lifecycle rule
                // removes incomplete uploads; the retry uploads a new object.
                if let Err(abort) = self
                    .client
                    .abort_multipart_upload()
                    .bucket(&self.config.bucket)
                    .key(key)
                    .upload_id(upload_id)
                    .send()
                    .await
                {
                    tracing::debug!(key, error = %DisplayErrorContext(abort), "aborting the multipart upload failed");
                }
                Err(e)
            }
        }
    }

    async fn upload_parts(
        &self,
        key: &str,
        upload_id: &str,
        body: &[u8],
    ) -> Result<Vec<CompletedPart>, PutError> {
        let mut parts = Vec::new();
        for (i, chunk) in body.chunks(self.config.part_size).enumerate() {
            let number = i as i32 + 1;
            let part = self
                .client
                .upload_part()
                .bucket(&self.config.bucket)
                .key(key)
                .upload_id(upload_id)
                .part_number(number)
                .body(ByteStream::from(chunk.to_vec()))
                .send()
                .await
                .map_err(|e| self.error(key, "UploadPart", e))?;
            parts.push(
                CompletedPart::builder()
                    .part_number(number)
                    .set_e_tag(part.e_tag().map(str::to_owned))
                    .build(),
            );
        }
        Ok(parts)
    }

    fn error<E, R>(&self, key: &str, operation: &'static str, e: SdkError<E, R>) -> PutError
    where
        E: ProvideErrorMetadata + std::error::Error + 'static,
        R: std::fmt::Debug + HasStatus,
    {
        let status = e.raw_response().map(HasStatus::status);
        let code = e.code().map(str::to_owned);
        let reason = match (&code, e.message()) {
            (Some(code), Some(message)) => format!("{code}: {message}"),
            (Some(code), None) => code.clone(),
            _ => DisplayErrorContext(&e).to_string(),
        };
        PutError {
            bucket: self.config.bucket.clone(),
            key: key.to_owned(),
            operation,
            reason,
            status,
            code,
        }
    }
}

/// The HTTP status of a raw response.
pub trait HasStatus {
    fn status(&self) -> u16;
}

impl HasStatus for aws_sdk_s3::config::http::HttpResponse {
    fn status(&self) -> u16 {
        self.status().as_u16()
    }
}
