//! The `http` sink: collected events become one request body (`ndjson` or `json`, optionally
//! gzip) sent with `http_method` to `url`. A 2xx answer means taken; a connection error, 408,
//! 429 or 5xx is retried; any other answer dead-letters the events with the status and the
//! start of the body.

use std::sync::Arc;

use bytes::Bytes;
use sluice_config::secret::BasicAuth;
use sluice_config::sink::Compression;
use sluice_config::sink::batching::Batching;
use sluice_config::sink::http::{HttpMethod, HttpSettings};

use super::{Output, Provenance, Retry, SendError, Threshold, codec, error_chain};

pub struct HttpSink {
    client: reqwest::Client,
    url: String,
    method: reqwest::Method,
    headers: reqwest::header::HeaderMap,
    basic: Option<BasicAuth>,
    batching: Batching,
    exactly_once: bool,
}

/// Why the http sink cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum HttpSinkError {
    /// `ssl_certificate_file` could not be read.
    #[error("ssl_certificate_file {}: {source}", .path.display())]
    CaFile {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    /// `ssl_certificate_file` is not a PEM certificate.
    #[error("ssl_certificate_file {}: {source}", .path.display())]
    CaCertificate {
        path: std::path::PathBuf,
        source: reqwest::Error,
    },
    /// The HTTP client could not be built.
    #[error(transparent)]
    Client(reqwest::Error),
    #[error("custom_header `{name}`: {source}")]
    HeaderName {
        name: String,
        source: reqwest::header::InvalidHeaderName,
    },
    #[error("custom_header `{name}`: {source}")]
    HeaderValue {
        name: String,
        source: reqwest::header::InvalidHeaderValue,
    },
}

impl super::BuildOutput for HttpSettings {
    type Error = HttpSinkError;
    async fn build(
        self,
        _: &str,
        _: &super::SinkBuild<'_>,
    ) -> Result<Arc<dyn Output>, HttpSinkError> {
        let settings = self;
        let mut builder = reqwest::Client::builder()
            .timeout(settings.request_timeout)
            .connect_timeout(settings.connection_timeout)
            .tls_danger_accept_invalid_certs(settings.insecure);
        if let Some(ca) = settings.ca {
            let pem = std::fs::read(&ca).map_err(|source| HttpSinkError::CaFile {
                path: ca.clone(),
                source,
            })?;
            let cert = reqwest::Certificate::from_pem(&pem)
                .map_err(|source| HttpSinkError::CaCertificate { path: ca, source })?;
            builder = builder.tls_certs_merge([cert]);
        }
        let client = builder.build().map_err(HttpSinkError::Client)?;
        let mut headers = reqwest::header::HeaderMap::new();
        for (name, value) in &settings.headers {
            let key =
                reqwest::header::HeaderName::from_bytes(name.as_bytes()).map_err(|source| {
                    HttpSinkError::HeaderName {
                        name: name.clone(),
                        source,
                    }
                })?;
            let value = reqwest::header::HeaderValue::from_str(value).map_err(|source| {
                HttpSinkError::HeaderValue {
                    name: name.clone(),
                    source,
                }
            })?;
            headers.append(key, value);
        }
        Ok(Arc::new(HttpSink {
            client,
            url: settings.url,
            method: match settings.method {
                HttpMethod::POST => reqwest::Method::POST,
                HttpMethod::PUT => reqwest::Method::PUT,
            },
            headers,
            basic: settings.basic,
            batching: settings.batching,
            exactly_once: settings.exactly_once,
        }))
    }
}

#[async_trait::async_trait]
impl Output for HttpSink {
    async fn send(&self, events: &[Bytes], from: &Provenance) -> Result<(), SendError> {
        let b = &self.batching;
        let body = codec::encode(&b.codec, b.compression, events);
        let mut request = self
            .client
            .request(self.method.clone(), &self.url)
            .headers(self.headers.clone())
            .header(reqwest::header::CONTENT_TYPE, codec::content_type(&b.codec))
            .body(body);
        if b.compression == Compression::Gzip {
            request = request.header(reqwest::header::CONTENT_ENCODING, "gzip");
        }
        if let Some(e) = &from.extent {
            request = request.header(
                "Idempotency-Key",
                format!("{}+{}+{}+{}", e.topic, e.partition, e.first, e.last),
            );
        }
        if let Some(basic) = &self.basic {
            request = request.basic_auth(&basic.username, Some(&basic.password));
        }
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) => return Err(SendError::Retry(error_chain(&e))),
        };
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        let text = response.text().await.unwrap_or_default();
        let excerpt: String = text.chars().take(200).collect();
        let reason = format!("{} answered {status}: {excerpt}", self.url);
        if status.is_server_error() || status.as_u16() == 408 || status.as_u16() == 429 {
            Err(SendError::Retry(reason))
        } else {
            Err(SendError::Reject(reason))
        }
    }

    fn threshold(&self) -> Option<Threshold> {
        Some(self.batching.threshold)
    }

    fn retry(&self) -> Retry {
        self.batching.retry
    }

    fn keyed(&self) -> bool {
        self.exactly_once
    }
}
