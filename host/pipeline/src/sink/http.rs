//! The `http` sink: collected events become one request body (`ndjson` or `json`, optionally
//! gzip) sent with `http_method` to `url`. A 2xx answer means taken; a connection error, 408,
//! 429 or 5xx is retried; any other answer dead-letters the events with the status and the
//! start of the body.

use std::sync::Arc;

use bytes::Bytes;
use sluice_config::sink::http::{HttpMethod, HttpSink as Config};
use sluice_config::sink::{Codec, Compression};

use super::{Output, Retry, SendError, SinkError, Threshold, codec};

pub struct HttpSink {
    name: String,
    client: reqwest::Client,
    url: String,
    method: reqwest::Method,
    codec: Codec,
    compression: Compression,
    headers: reqwest::header::HeaderMap,
    basic: Option<(String, String)>,
    threshold: Threshold,
    max_retries: Option<u32>,
    max_backoff: std::time::Duration,
}

impl HttpSink {
    pub fn new(config: &Config) -> Result<Self, SinkError> {
        let name = format!("http:{}", config.url);
        let fail = |e: String| SinkError::new(&name, e);
        let mut builder = reqwest::Client::builder()
            .timeout(config.request_timeout)
            .connect_timeout(config.connection_timeout)
            .tls_danger_accept_invalid_certs(config.insecure_skip_verify);
        if let Some(ca) = &config.ssl_certificate_file {
            let pem = std::fs::read(ca)
                .map_err(|e| fail(format!("ssl_certificate_file {}: {e}", ca.display())))?;
            let cert = reqwest::Certificate::from_pem(&pem)
                .map_err(|e| fail(format!("ssl_certificate_file {}: {e}", ca.display())))?;
            builder = builder.tls_certs_merge([cert]);
        }
        let client = builder.build().map_err(|e| fail(e.to_string()))?;
        let mut headers = reqwest::header::HeaderMap::new();
        for (key, values) in &config.custom_headers {
            let key = reqwest::header::HeaderName::from_bytes(key.as_bytes())
                .map_err(|e| fail(format!("custom_header `{key}`: {e}")))?;
            for value in values {
                let value = reqwest::header::HeaderValue::from_str(value)
                    .map_err(|e| fail(format!("custom_header `{key}`: {e}")))?;
                headers.append(key.clone(), value);
            }
        }
        let basic = match &config.authentication {
            Some(auth) => {
                let password = auth
                    .http_basic
                    .resolved_password()
                    .map_err(|e| fail(format!("authentication: {e}")))?;
                Some((auth.http_basic.username.clone(), password))
            }
            None => None,
        };
        let t = &config.threshold;
        Ok(Self {
            name,
            client,
            url: config.url.clone(),
            method: match config.http_method {
                HttpMethod::POST => reqwest::Method::POST,
                HttpMethod::PUT => reqwest::Method::PUT,
            },
            codec: config
                .codec
                .as_ref()
                .map(|c| c.codec())
                .unwrap_or(Codec::Ndjson),
            compression: config.compression,
            headers,
            basic,
            threshold: Threshold {
                event_count: Some(t.max_events),
                maximum_size: Some(t.max_request_size.bytes()),
                event_collect_timeout: Some(t.flush_timeout),
            },
            max_retries: config.max_retries,
            max_backoff: config.http_retry_interval,
        })
    }
}

impl super::BuildOutput for Config {
    async fn build(&self, _pipeline: &str) -> Result<Arc<dyn Output>, SinkError> {
        Ok(Arc::new(HttpSink::new(self)?))
    }
}

#[async_trait::async_trait]
impl Output for HttpSink {
    fn name(&self) -> &str {
        &self.name
    }

    async fn send(&self, events: &[Bytes]) -> Result<(), SendError> {
        let body = codec::encode(&self.codec, self.compression, events);
        let mut request = self
            .client
            .request(self.method.clone(), &self.url)
            .headers(self.headers.clone())
            .header(
                reqwest::header::CONTENT_TYPE,
                codec::content_type(&self.codec),
            )
            .body(body);
        if self.compression == Compression::Gzip {
            request = request.header(reqwest::header::CONTENT_ENCODING, "gzip");
        }
        if let Some((user, password)) = &self.basic {
            request = request.basic_auth(user, Some(password));
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
        Some(self.threshold)
    }

    fn retry(&self) -> Retry {
        Retry {
            max_retries: self.max_retries,
            max_backoff: self.max_backoff,
            ..Retry::default()
        }
    }
}

/// The error and its causes, as one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
