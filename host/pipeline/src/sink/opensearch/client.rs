//! Requests to the cluster: spread over `hosts` in turn, a host that failed to answer skipped
//! for the next request; basic, bearer or SigV4 authentication; gzip bodies.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use sluice_config::secret::BasicAuth;
use sluice_config::sink::opensearch::OpenSearchSettings;

use crate::sink::error_chain;

/// Why the client cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cert {}: {source}", .path.display())]
    CaFile {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("cert {}: {source}", .path.display())]
    CaCertificate {
        path: std::path::PathBuf,
        source: reqwest::Error,
    },
    #[error("proxy `{proxy}`: {source}")]
    Proxy {
        proxy: String,
        source: reqwest::Error,
    },
    #[error(transparent)]
    Client(reqwest::Error),
    #[error("aws: {0}")]
    Signing(#[from] sluice_sigv4::Error),
}

/// How requests are authenticated.
enum Auth {
    None,
    Basic(BasicAuth),
    Bearer(String),
    SigV4(sluice_sigv4::Signer),
}

/// An answer: its status and body.
pub(super) struct Answer {
    pub(super) status: u16,
    pub(super) body: Bytes,
}

impl Answer {
    pub(super) fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The error type and reason of an OpenSearch error body, or the start of the body.
    pub(super) fn reason(&self) -> String {
        let parsed: Option<serde_json::Value> = serde_json::from_slice(&self.body).ok();
        match parsed.as_ref().and_then(|v| v.get("error")) {
            Some(serde_json::Value::Object(e)) => super::cause_chain(e),
            Some(other) => other.to_string(),
            None => String::from_utf8_lossy(&self.body[..self.body.len().min(200)]).into_owned(),
        }
    }
}

pub(super) struct Client {
    http: reqwest::Client,
    hosts: Vec<String>,
    next: AtomicUsize,
    /// Per host, until when (ms after `epoch`) it is skipped: it failed to answer.
    down_until: Vec<AtomicU64>,
    epoch: Instant,
    auth: Auth,
    compression: bool,
}

impl Client {
    pub(super) async fn new(s: &OpenSearchSettings) -> Result<Self, ClientError> {
        let mut builder = reqwest::Client::builder()
            .connect_timeout(s.connect_timeout)
            .read_timeout(s.socket_timeout)
            .tls_danger_accept_invalid_certs(s.insecure);
        if let Some(ca) = &s.cert {
            let pem = std::fs::read(ca).map_err(|source| ClientError::CaFile {
                path: ca.clone(),
                source,
            })?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|source| {
                ClientError::CaCertificate {
                    path: ca.clone(),
                    source,
                }
            })?;
            builder = builder.tls_certs_merge(certs);
        }
        if let Some(proxy) = &s.proxy {
            let p = reqwest::Proxy::all(proxy).map_err(|source| ClientError::Proxy {
                proxy: proxy.clone(),
                source,
            })?;
            builder = builder.proxy(p);
        } else {
            builder = builder.no_proxy();
        }
        let auth = if let Some(aws) = &s.aws {
            Auth::SigV4(
                sluice_sigv4::Signer::new(sluice_sigv4::Settings {
                    region: aws.region.clone(),
                    service: if aws.serverless {
                        sluice_sigv4::Service::Aoss
                    } else {
                        sluice_sigv4::Service::Es
                    },
                    sts_role_arn: aws.sts_role_arn.clone(),
                    sts_external_id: aws.sts_external_id.clone(),
                    sts_header_overrides: aws.sts_header_overrides.clone(),
                })
                .await?,
            )
        } else if let Some(basic) = &s.basic {
            Auth::Basic(basic.clone())
        } else if let Some(token) = &s.api_token {
            Auth::Bearer(token.clone())
        } else {
            Auth::None
        };
        Ok(Self {
            http: builder.build().map_err(ClientError::Client)?,
            hosts: s.hosts.clone(),
            next: AtomicUsize::new(fastrand::usize(..s.hosts.len().max(1))),
            down_until: s.hosts.iter().map(|_| AtomicU64::new(0)).collect(),
            epoch: Instant::now(),
            auth,
            compression: s.compression,
        })
    }

    /// Sends `method path` (path with its query) to the next host, with `body` as JSON or
    /// NDJSON. A host that does not answer is left for the next request.
    pub(super) async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<(&[u8], &'static str)>,
    ) -> Result<Answer, String> {
        let mut headers: Vec<(String, String)> = Vec::new();
        let mut payload = Vec::new();
        if let Some((bytes, content_type)) = body {
            headers.push(("content-type".into(), content_type.into()));
            if self.compression {
                payload = super::super::codec::gzip(bytes);
                headers.push(("content-encoding".into(), "gzip".into()));
            } else {
                payload = bytes.to_vec();
            }
        }
        let payload = Bytes::from(payload);
        // Each host once, from the next in turn, those that did not fail lately first: a
        // host that does not answer (or cuts its answer) is left for the next one, as Data
        // Prepper's REST client does.
        let turn = self.next.fetch_add(1, Ordering::Relaxed);
        let now = self.epoch.elapsed().as_millis() as u64;
        let n = self.hosts.len();
        let mut order: Vec<usize> = (0..n).map(|k| (turn + k) % n).collect();
        order.sort_by_key(|&h| self.down_until[h].load(Ordering::Relaxed) > now);
        let mut last = String::new();
        for chosen in order {
            match self
                .send_to(chosen, &method, path, &headers, &payload, body.is_some())
                .await
            {
                Ok(answer) => return Ok(answer),
                Err(Failure::Signing(reason)) => return Err(reason),
                Err(Failure::Host(reason)) => {
                    let until = self.epoch.elapsed() + HOST_DOWN_FOR;
                    self.down_until[chosen].store(until.as_millis() as u64, Ordering::Relaxed);
                    last = reason;
                }
            }
        }
        Err(last)
    }

    /// One request to host `chosen`.
    async fn send_to(
        &self,
        chosen: usize,
        method: &reqwest::Method,
        path: &str,
        headers: &[(String, String)],
        payload: &Bytes,
        has_body: bool,
    ) -> Result<Answer, Failure> {
        let host = &self.hosts[chosen];
        let url = format!("{host}{path}");
        let mut request = self.http.request(method.clone(), &url);
        for (name, value) in headers {
            request = request.header(name, value);
        }
        match &self.auth {
            Auth::None => {}
            Auth::Basic(b) => request = request.basic_auth(&b.username, Some(&b.password)),
            Auth::Bearer(t) => request = request.bearer_auth(t),
            Auth::SigV4(signer) => {
                let signed = signer
                    .sign(method.as_str(), &url, headers, payload)
                    .await
                    .map_err(|e| Failure::Signing(format!("signing the request: {e}")))?;
                for (name, value) in signed {
                    request = request.header(name, value);
                }
            }
        }
        if has_body {
            request = request.body(payload.clone());
        }
        let failed = |e: reqwest::Error| Failure::Host(format!("{host}: {}", error_chain(&e)));
        let response = request.send().await.map_err(failed)?;
        let status = response.status().as_u16();
        let body = response.bytes().await.map_err(failed)?;
        Ok(Answer { status, body })
    }
}

/// Why one host did not answer, or the request could not be made.
enum Failure {
    Host(String),
    Signing(String),
}

/// How long a host that failed to answer is left out.
const HOST_DOWN_FOR: Duration = Duration::from_secs(5);
