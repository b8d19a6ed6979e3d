//! A strict stand-in for the OpenSearch REST API, for the `opensearch` sink's tests: no
//! OpenSearch or Elasticsearch-compatible server can be installed where the tests run
//! (issue 44). It implements the endpoints the sink uses as OpenSearch's REST reference
//! describes them, keeps documents, indices, aliases, templates and ISM policies, and can be
//! told to fail. A request it does not understand is answered 400 and recorded, and
//! [`OpenSearch::assert_understood`] fails the test on it: never a silent 200. A request it
//! understands but OpenSearch refuses (an index that exists, a conflicting version) gets
//! OpenSearch's error answer and is not a failure of the test.
//!
//! Every request goes through one router, `dispatch`: it names the endpoint from the method
//! and path, checks the query parameters that endpoint takes, then authenticates and applies
//! the injected whole-request fault (`admit`) before the endpoint runs on the locked state.
//! A middleware around it (`delivery`) applies the delivery faults: delay and a connection
//! closed partway through the answer.
//!
//! Endpoints: `GET /` (cluster info), `GET /_cluster/health`,
//! `GET /_cluster/settings?include_defaults=true` (ISM on, off or absent), `POST /_bulk` and
//! `POST /<index>/_bulk` (NDJSON, `index`, `create`, `update`, `delete` with document
//! semantics: conflicts, external versions, `if_seq_no`, partial-document updates and upserts,
//! writes through an alias to its write index, `require_alias`, `filter_path`), legacy
//! templates `PUT`/`GET`/`HEAD /_template/<name>`, composable templates
//! `PUT`/`GET`/`HEAD /_index_template/<name>`, ISM policies
//! `PUT /_plugins/_ism/policies/<id>` and `PUT /_opendistro/_ism/policies/<id>`,
//! `HEAD`/`PUT /<index>`, `HEAD /_alias/<name>` and `GET /_data_stream/<name>` (no data
//! streams: always 404), and lookups: `POST /_msearch`, `POST /<index>/_msearch`,
//! `POST /_search` and `POST /<index>/_search` with `term`, `terms` and `ids` queries on
//! top-level source fields or `_id`, `size` and `_source` (see `search`). Either HTTP basic
//! authentication (401 without credentials, 403 with wrong ones) or AWS SigV4, checked by the
//! independent verifier in [`crate::sigv4`] on the body as received (before gzip inflation)
//! and refused as Amazon OpenSearch Service does: 403 `{"message": "The request signature we
//! calculated does not match ..."}`. Gzip request bodies.
//!
//! Not modelled: templates are stored but not applied to new indices, composable templates
//! with overlapping patterns are not refused, settings and mappings are stored as given
//! (OpenSearch normalizes them), scripts and ingest pipelines are not understood. Searches do
//! not analyse text: a term matches a stored value equal to it (numbers and booleans also as
//! their text, as a `keyword` or numeric field would), and every hit scores 1.0.

use std::collections::{BTreeMap, VecDeque};
use std::io::Read as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::connect_info::{ConnectInfo, Connected};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::serve::IncomingStream;
use base64::Engine as _;
use serde_json::{Map, Value, json};

/// A document as stored: its source, version and the sequence number of its last write.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    pub source: Value,
    pub version: u64,
    pub seq_no: u64,
}

/// What the server answers besides the documented behaviour, and what it saw.
#[derive(Debug, Default)]
pub struct Faults {
    /// Answer the next requests (any endpoint) with these statuses, one each.
    pub requests: VecDeque<u16>,
    /// Answer the next bulk items with 429 `es_rejected_execution_exception`, one each.
    pub rejected_items: usize,
    /// Answer 400 `mapper_parsing_exception` to an item whose source contains this text.
    pub unmappable: Option<String>,
    /// Answer 413 to a bulk body (after inflating) larger than this many bytes.
    pub max_content_length: Option<usize>,
    /// Wait this long before every answer.
    pub slow: Option<Duration>,
    /// For the next this many requests (any endpoint, after the request was applied), send
    /// the status line, the headers (with the full `Content-Length`) and the first half of
    /// the body, then close the connection. A client sees the status, and reading the body
    /// fails (reqwest: "error decoding response body"; ureq: an unexpected end of file).
    pub close_mid_response: usize,
}

/// Which cluster it plays, beyond the version `GET /` names.
#[derive(Debug, Clone)]
pub struct Cluster {
    /// `opendistro.index_state_management.enabled` in the cluster settings' `defaults`:
    /// `Some(true)` (the default, as OpenSearch with its ISM plugin answers), `Some(false)`
    /// (turned off), or `None` (no ISM plugin: the setting is absent).
    pub ism_enabled: Option<bool>,
    /// Refuse an ISM policy with an `ism_template` with 400 `Invalid field: [ism_template]
    /// found in Policy.`, as Open Distro's ISM before 1.13 did.
    pub ism_template_unsupported: bool,
}

impl Default for Cluster {
    fn default() -> Self {
        Self {
            ism_enabled: Some(true),
            ism_template_unsupported: false,
        }
    }
}

/// A stored ISM policy: the body as written, and its version for `if_seq_no`.
#[derive(Debug, Clone)]
struct Policy {
    body: Value,
    version: u64,
    seq_no: u64,
}

#[derive(Default)]
struct Inner {
    /// index → id → document.
    documents: BTreeMap<String, BTreeMap<String, Document>>,
    /// Concrete index → the body it was created with (`{}` when a write created it).
    indices: BTreeMap<String, Value>,
    /// Alias → index → the alias's properties (`is_write_index`, ...).
    aliases: BTreeMap<String, BTreeMap<String, Value>>,
    /// Legacy (v1) templates, by name, as written.
    templates: BTreeMap<String, Value>,
    /// Composable templates, by name, as written.
    index_templates: BTreeMap<String, Value>,
    policies: BTreeMap<String, Policy>,
    cluster: Cluster,
    faults: Faults,
    /// `user:password` the server requires, if any.
    credentials: Option<String>,
    /// The SigV4 scope every request must be signed for, if any.
    sigv4: Option<SigV4>,
    /// Requests refused for a missing or bad signature.
    signature_failures: usize,
    /// Requests it did not understand: method, path and why.
    not_understood: Vec<String>,
    /// Bulk requests answered (any status), and their items.
    bulk_requests: usize,
    bulk_items: usize,
    /// Search requests answered (`_search` and `_msearch`), and the searches they carried.
    search_requests: usize,
    search_queries: usize,
    /// Ids it made for items without one.
    next_id: u64,
    /// The next sequence number of each index (one shard each, as OpenSearch's default).
    seq_nos: BTreeMap<String, u64>,
    /// The last sequence number given in the ISM policies' index.
    policy_seq_no: u64,
}

impl Inner {
    /// The next sequence number of `index`, counted from 0.
    fn next_seq_no(&mut self, index: &str) -> u64 {
        let next = self.seq_nos.entry(index.to_owned()).or_default();
        *next += 1;
        *next - 1
    }
}

/// What a SigV4-signing server checks a signature against.
#[derive(Debug, Clone)]
struct SigV4 {
    access_key: String,
    secret: String,
    region: String,
    service: String,
}

/// A running test server on a free port; it stops when the test process ends.
pub struct OpenSearch {
    address: SocketAddr,
    inner: Arc<Mutex<Inner>>,
}

impl OpenSearch {
    /// Starts a server that takes any client.
    pub fn start() -> Self {
        Self::start_with(Inner::default())
    }

    /// Starts a server that requires HTTP basic authentication with `user` and `password`.
    pub fn start_with_credentials(user: &str, password: &str) -> Self {
        Self::start_with(Inner {
            credentials: Some(format!("{user}:{password}")),
            ..Inner::default()
        })
    }

    /// Starts a server that plays Amazon OpenSearch Service (`service` `es`) or Serverless
    /// (`aoss`): every request must be SigV4-signed with `access_key` and `secret` for `region`
    /// and `service`, and no basic authentication is asked for. A missing or bad signature is
    /// answered 403 and counted in [`OpenSearch::signature_failures`]; the answer's `message`
    /// ends with what the verifier found wrong.
    pub fn start_with_sigv4(access_key: &str, secret: &str, region: &str, service: &str) -> Self {
        let sigv4 = SigV4 {
            access_key: access_key.to_owned(),
            secret: secret.to_owned(),
            region: region.to_owned(),
            service: service.to_owned(),
        };
        Self::start_with(Inner {
            sigv4: Some(sigv4),
            ..Inner::default()
        })
    }

    fn start_with(inner: Inner) -> Self {
        let inner = Arc::new(Mutex::new(inner));
        let app = Router::new()
            .fallback(dispatch)
            .layer(axum::middleware::from_fn_with_state(
                inner.clone(),
                delivery,
            ))
            .with_state(inner.clone())
            .into_make_service_with_connect_info::<Cut>();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let address = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                axum::serve(Cutting(listener), app).await.unwrap();
            });
        });
        Self { address, inner }
    }

    /// The URL to give the sink's `hosts`.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Changes what it answers besides the documented behaviour.
    pub fn faults(&self, change: impl FnOnce(&mut Faults)) {
        change(&mut self.inner.lock().unwrap().faults);
    }

    /// Changes which cluster it plays (ISM on, off or absent; old ISM).
    pub fn cluster(&self, change: impl FnOnce(&mut Cluster)) {
        change(&mut self.inner.lock().unwrap().cluster);
    }

    /// Stores a document, as if indexed before the test (its index is created if missing).
    pub fn seed(&self, index: &str, id: &str, source: Value) {
        let mut inner = self.inner.lock().unwrap();
        let seq_no = inner.next_seq_no(index);
        inner
            .indices
            .entry(index.to_owned())
            .or_insert_with(|| json!({}));
        let documents = inner.documents.entry(index.to_owned()).or_default();
        let document = Document {
            source,
            version: 1,
            seq_no,
        };
        documents.insert(id.to_owned(), document);
    }

    /// The documents of the concrete index `index`, by id.
    pub fn documents(&self, index: &str) -> BTreeMap<String, Document> {
        let inner = self.inner.lock().unwrap();
        inner.documents.get(index).cloned().unwrap_or_default()
    }

    /// Every document: concrete index, id and source, by index then id.
    pub fn documents_any(&self) -> Vec<(String, String, Value)> {
        let inner = self.inner.lock().unwrap();
        let by_index = inner.documents.iter();
        by_index
            .flat_map(|(index, documents)| {
                let documents = documents.iter();
                documents.map(|(id, d)| (index.clone(), id.clone(), d.source.clone()))
            })
            .collect()
    }

    /// The concrete indices, each with the body it was created with (`{}` when created by a
    /// write or without a body).
    pub fn indices(&self) -> BTreeMap<String, Value> {
        self.inner.lock().unwrap().indices.clone()
    }

    /// The aliases: alias → index → the alias's properties (`{"is_write_index": true}`).
    pub fn aliases(&self) -> BTreeMap<String, BTreeMap<String, Value>> {
        self.inner.lock().unwrap().aliases.clone()
    }

    /// The legacy (`_template`) templates, by name, as written.
    pub fn templates(&self) -> BTreeMap<String, Value> {
        self.inner.lock().unwrap().templates.clone()
    }

    /// The composable (`_index_template`) templates, by name, as written.
    pub fn index_templates(&self) -> BTreeMap<String, Value> {
        self.inner.lock().unwrap().index_templates.clone()
    }

    /// The ISM policies, by id, as written (`{"policy": {...}}`), through either path.
    pub fn policies(&self) -> BTreeMap<String, Value> {
        let inner = self.inner.lock().unwrap();
        let policies = inner.policies.iter();
        policies
            .map(|(id, p)| (id.clone(), p.body.clone()))
            .collect()
    }

    /// How many bulk requests and items it answered.
    pub fn bulk_counts(&self) -> (usize, usize) {
        let inner = self.inner.lock().unwrap();
        (inner.bulk_requests, inner.bulk_items)
    }

    /// How many requests it refused for a missing or bad SigV4 signature.
    pub fn signature_failures(&self) -> usize {
        self.inner.lock().unwrap().signature_failures
    }

    /// How many search requests (`_search` and `_msearch`, each once however many searches
    /// it carries) it answered.
    pub fn searches(&self) -> usize {
        self.inner.lock().unwrap().search_requests
    }

    /// How many search requests it answered, and the searches in them (one per `_search`,
    /// one per header and body pair of an `_msearch`).
    pub fn search_counts(&self) -> (usize, usize) {
        let inner = self.inner.lock().unwrap();
        (inner.search_requests, inner.search_queries)
    }

    /// Fails if any request was not understood.
    pub fn assert_understood(&self) {
        // Copied out, so that the panic does not poison the lock for the test's later calls.
        let not_understood = self.inner.lock().unwrap().not_understood.clone();
        assert!(
            not_understood.is_empty(),
            "the test OpenSearch did not understand: {not_understood:#?}"
        );
    }
}

type Shared = Arc<Mutex<Inner>>;

/// A JSON answer.
fn answer(status: u16, body: &Value) -> Response {
    (
        StatusCode::from_u16(status).unwrap(),
        [("content-type", "application/json; charset=UTF-8")],
        body.to_string(),
    )
        .into_response()
}

/// An answer with no body (`HEAD`).
fn empty(status: u16) -> Response {
    StatusCode::from_u16(status).unwrap().into_response()
}

/// An OpenSearch error answer:
/// `{"error": {"root_cause": [...], "type", "reason"}, "status"}`.
fn error(status: u16, kind: &str, reason: &str) -> Response {
    error_with(status, kind, reason, json!({}))
}

/// [`error`] with more fields in the cause (`index`, `resource.id`, ...).
fn error_with(status: u16, kind: &str, reason: &str, extra: Value) -> Response {
    answer(status, &error_body(status, kind, reason, extra))
}

/// The body of an [`error_with`] answer, also an `_msearch` response's failure.
fn error_body(status: u16, kind: &str, reason: &str, extra: Value) -> Value {
    let mut cause = json!({"type": kind, "reason": reason});
    let cause_map = cause.as_object_mut().unwrap();
    cause_map.extend(extra.as_object().unwrap().clone());
    let mut outer = cause.clone();
    outer["root_cause"] = json!([cause]);
    json!({"error": outer, "status": status})
}

/// OpenSearch's 404 for a missing index or alias.
fn index_not_found(name: &str) -> Response {
    answer(404, &index_not_found_body(name))
}

/// The body of [`index_not_found`].
fn index_not_found_body(name: &str) -> Value {
    let extra = json!({
        "index": name, "index_uuid": "_na_",
        "resource.id": name, "resource.type": "index_or_alias",
    });
    error_body(
        404,
        "index_not_found_exception",
        &format!("no such index [{name}]"),
        extra,
    )
}

/// Delivery faults around every answer: a delay, and a connection closed partway through.
async fn delivery(State(inner): State<Shared>, request: Request, next: Next) -> Response {
    let slow = inner.lock().unwrap().faults.slow;
    if let Some(slow) = slow {
        tokio::time::sleep(slow).await;
    }
    let cut = request.extensions().get::<ConnectInfo<Cut>>().cloned();
    let response = next.run(request).await;
    let close = {
        let mut inner = inner.lock().unwrap();
        let close = inner.faults.close_mid_response > 0;
        if close {
            inner.faults.close_mid_response -= 1;
        }
        close
    };
    let (true, Some(ConnectInfo(cut))) = (close, cut) else {
        return response;
    };
    let (parts, body) = response.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
    // At least one byte, so that an empty body's answer is cut in its headers.
    let withhold = (body.len() - body.len() / 2).max(1);
    *cut.0.lock().unwrap() = Some(withhold);
    Response::from_parts(parts, Body::from(body))
}

/// The listener: TCP, each connection wrapped so that `delivery` can cut it.
struct Cutting(tokio::net::TcpListener);

/// A connection's cut: armed with how many bytes to hold back from the end of its next write
/// (its answer: status line, headers and body, written in one buffer by hyper since
/// [`CutStream`] does not write vectored). Reaches the middleware as the connection info.
#[derive(Clone, Debug, Default)]
struct Cut(Arc<Mutex<Option<usize>>>);

impl axum::serve::Listener for Cutting {
    type Io = CutStream;
    type Addr = Cut;

    async fn accept(&mut self) -> (CutStream, Cut) {
        loop {
            match self.0.accept().await {
                Ok((stream, _)) => {
                    let cut = Cut::default();
                    let io = CutStream {
                        stream,
                        cut: cut.clone(),
                        closed: false,
                    };
                    return (io, cut);
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Cut> {
        Ok(Cut::default())
    }
}

impl Connected<IncomingStream<'_, Cutting>> for Cut {
    fn connect_info(stream: IncomingStream<'_, Cutting>) -> Self {
        stream.remote_addr().clone()
    }
}

/// A TCP connection that, once its cut is armed, writes all but the held-back tail of the
/// next write and then fails every write, so hyper drops (closes) the connection.
struct CutStream {
    stream: tokio::net::TcpStream,
    cut: Cut,
    closed: bool,
}

fn cut_off() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::BrokenPipe, "cut by the test server")
}

impl tokio::io::AsyncRead for CutStream {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for CutStream {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        use std::task::Poll;
        if self.closed {
            return Poll::Ready(Err(cut_off()));
        }
        let withhold = *self.cut.0.lock().unwrap();
        let Some(withhold) = withhold else {
            return std::pin::Pin::new(&mut self.stream).poll_write(cx, buf);
        };
        // A partial write leaves the tail as it was, so the next call holds back the same.
        let prefix = &buf[..buf.len().saturating_sub(withhold)];
        let written = if prefix.is_empty() {
            0
        } else {
            match std::pin::Pin::new(&mut self.stream).poll_write(cx, prefix) {
                Poll::Ready(Ok(n)) => n,
                other => return other,
            }
        };
        if written < prefix.len() {
            return Poll::Ready(Ok(written));
        }
        self.closed = true;
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        if self.closed {
            return std::task::Poll::Ready(Err(cut_off()));
        }
        std::pin::Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// One request, parsed enough to route it.
struct Call {
    method: Method,
    /// As sent on the request line: percent-encoded.
    path: String,
    segments: Vec<String>,
    query: BTreeMap<String, String>,
    /// The query string as sent (percent-encoded, without `?`), for the signature.
    raw_query: String,
    headers: HeaderMap,
    body: Bytes,
}

/// The endpoints it knows.
enum Endpoint {
    Info,
    Health,
    ClusterSettings,
    Bulk(Option<String>),
    MultiSearch(Option<String>),
    Search(Option<String>),
    Template(String),
    IndexTemplate(String),
    Policy(String),
    DataStream(String),
    Alias(String),
    Index(String),
}

impl Endpoint {
    /// The endpoint for a method and path, and the query parameters it takes.
    fn route(method: &Method, segments: &[String]) -> Option<(Self, &'static [&'static str])> {
        let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
        let (get, head, put, post) = (
            method == Method::GET,
            method == Method::HEAD,
            method == Method::PUT,
            method == Method::POST,
        );
        let template_params: &[&str] = &["create", "cluster_manager_timeout", "master_timeout"];
        Some(match segments[..] {
            [] if get => (Self::Info, &[]),
            ["_cluster", "health"] if get => {
                (Self::Health, &["wait_for_status", "timeout", "local"])
            }
            ["_cluster", "settings"] if get => (
                Self::ClusterSettings,
                &[
                    "include_defaults",
                    "cluster_manager_timeout",
                    "master_timeout",
                ],
            ),
            ["_bulk"] if post || put => (Self::Bulk(None), BULK_PARAMS),
            [index, "_bulk"] if (post || put) && !index.starts_with('_') => {
                (Self::Bulk(Some(index.to_owned())), BULK_PARAMS)
            }
            ["_msearch"] if post => (Self::MultiSearch(None), MSEARCH_PARAMS),
            [index, "_msearch"] if post && !index.starts_with('_') => {
                (Self::MultiSearch(Some(index.to_owned())), MSEARCH_PARAMS)
            }
            ["_search"] if post => (Self::Search(None), &[]),
            [index, "_search"] if post && !index.starts_with('_') => {
                (Self::Search(Some(index.to_owned())), &[])
            }
            ["_template", name] if get || head || put => {
                (Self::Template(name.to_owned()), template_params)
            }
            ["_index_template", name] if get || head || put => {
                (Self::IndexTemplate(name.to_owned()), template_params)
            }
            ["_plugins" | "_opendistro", "_ism", "policies", id] if put => (
                Self::Policy(id.to_owned()),
                &["if_seq_no", "if_primary_term"],
            ),
            ["_data_stream", name] if get => (Self::DataStream(name.to_owned()), &[]),
            ["_alias", name] if head => (Self::Alias(name.to_owned()), &[]),
            [index] if (head || put) && !index.starts_with('_') => (
                Self::Index(index.to_owned()),
                &[
                    "wait_for_active_shards",
                    "timeout",
                    "cluster_manager_timeout",
                    "master_timeout",
                ],
            ),
            _ => return None,
        })
    }
}

/// The query parameters `_bulk` takes (the Bulk API page's, but for `pipeline`, `routing`
/// and `_source*`, which the sink does not send).
const BULK_PARAMS: &[&str] = &[
    "filter_path",
    "refresh",
    "require_alias",
    "timeout",
    "wait_for_active_shards",
];

/// The query parameters `_msearch` takes: only those that do not change the answer.
const MSEARCH_PARAMS: &[&str] = &["max_concurrent_searches"];

/// Every request: routed, its parameters checked, admitted, then answered.
async fn dispatch(
    State(inner): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_owned();
    let segments = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(decode)
        .collect::<Vec<_>>();
    let raw_query = uri.query().unwrap_or("").to_owned();
    let query = raw_query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (decode(k), decode(v)),
            None => (decode(p), String::new()),
        })
        .collect();
    let call = Call {
        method,
        path,
        segments,
        query,
        raw_query,
        headers,
        body,
    };
    let mut inner = inner.lock().unwrap();
    match respond(&mut inner, &call) {
        Ok(response) => response,
        Err(why) => {
            let why = format!("{} {}: {why}", call.method, call.path);
            inner.not_understood.push(why.clone());
            error(400, "illegal_argument_exception", &why)
        }
    }
}

/// Percent-decoding, for paths and query parameters.
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (b'+', _) => {
                out.push(b' ');
                i += 1;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Why a request was not understood.
type NotUnderstood = String;

fn respond(inner: &mut Inner, call: &Call) -> Result<Response, NotUnderstood> {
    let Some((endpoint, params)) = Endpoint::route(&call.method, &call.segments) else {
        return Err("no such endpoint in the test server".to_owned());
    };
    if let Some(key) = call.query.keys().find(|k| !params.contains(&k.as_str())) {
        return Err(format!(
            "request [{}] contains unrecognized parameter: [{key}]",
            call.path
        ));
    }
    if let Some(refused) = admit(inner, call) {
        return Ok(refused);
    }
    let head = call.method == Method::HEAD;
    let put = call.method == Method::PUT;
    match endpoint {
        Endpoint::Info => Ok(info()),
        Endpoint::Health => Ok(answer(
            200,
            &json!({"cluster_name": "sluice-test", "status": "green", "number_of_nodes": 1}),
        )),
        Endpoint::ClusterSettings => Ok(cluster_settings(inner, call)),
        Endpoint::Bulk(index) => bulk(inner, index.as_deref(), call),
        Endpoint::MultiSearch(index) => multi_search(inner, index.as_deref(), call),
        Endpoint::Search(index) => search(inner, index.as_deref(), call),
        Endpoint::Template(name) if put => put_template(inner, &name, call),
        Endpoint::Template(name) => Ok(match inner.templates.get(&name) {
            None if head => empty(404),
            // OpenSearch answers a missing legacy template with an empty object.
            None => answer(404, &json!({})),
            Some(_) if head => empty(200),
            Some(template) => {
                let mut shown = json!({"order": 0, "settings": {}, "mappings": {}, "aliases": {}});
                let shown_map = shown.as_object_mut().unwrap();
                shown_map.extend(template.as_object().unwrap().clone());
                answer(200, &json!({ name: shown }))
            }
        }),
        Endpoint::IndexTemplate(name) if put => put_index_template(inner, &name, call),
        Endpoint::IndexTemplate(name) => Ok(match inner.index_templates.get(&name) {
            None if head => empty(404),
            None => error(
                404,
                "resource_not_found_exception",
                &format!("index template matching [{name}] not found"),
            ),
            Some(_) if head => empty(200),
            Some(template) => answer(
                200,
                &json!({"index_templates": [{"name": name, "index_template": template}]}),
            ),
        }),
        Endpoint::Policy(id) => put_policy(inner, &id, call),
        Endpoint::DataStream(name) => Ok(index_not_found(&name)),
        Endpoint::Alias(name) => Ok(empty(if inner.aliases.contains_key(&name) {
            200
        } else {
            404
        })),
        Endpoint::Index(name) if put => put_index(inner, &name, call),
        Endpoint::Index(name) => {
            let exists = inner.indices.contains_key(&name) || inner.aliases.contains_key(&name);
            Ok(empty(if exists { 200 } else { 404 }))
        }
    }
}

/// What Amazon OpenSearch Service answers (403) to a request whose signature does not check.
const SIGNATURE_MISMATCH: &str = "The request signature we calculated does not match the \
    signature you provided. Check your AWS Secret Access Key and signing method. Consult the \
    service documentation for details.";

/// Authentication (SigV4 or basic), then an injected whole-request fault, if any.
fn admit(inner: &mut Inner, call: &Call) -> Option<Response> {
    if let Some(scope) = &inner.sigv4 {
        let headers: Vec<(String, String)> = call
            .headers
            .iter()
            .map(|(name, value)| {
                let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
                (name.as_str().to_owned(), value)
            })
            .collect();
        // The body as received: SigV4 signs the bytes sent, compressed or not.
        let checked = crate::sigv4::verify(
            call.method.as_str(),
            &call.path,
            &call.raw_query,
            &headers,
            &call.body,
            &scope.access_key,
            &scope.secret,
            &scope.region,
            &scope.service,
        );
        if let Err(why) = checked {
            inner.signature_failures += 1;
            // AWS appends the canonical request and string to sign it computed; this appends
            // what the verifier found, which includes them when only the signature differs.
            let message = format!("{SIGNATURE_MISMATCH}\n\n{why}");
            return Some(answer(403, &json!({ "message": message })));
        }
    }
    if let Some(want) = &inner.credentials {
        let given = call
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Basic "))
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok());
        match given {
            None => {
                let mut response = error(
                    401,
                    "security_exception",
                    "missing authentication credentials",
                );
                response.headers_mut().insert(
                    "www-authenticate",
                    "Basic realm=\"OpenSearch Security\"".parse().unwrap(),
                );
                return Some(response);
            }
            Some(given) if given != want.as_bytes() => {
                return Some(error(403, "security_exception", "no permissions"));
            }
            Some(_) => {}
        }
    }
    inner
        .faults
        .requests
        .pop_front()
        .map(|status| error(status, "injected_fault", "the test asked for this status"))
}

fn info() -> Response {
    answer(
        200,
        &json!({
            "name": "sluice-test",
            "cluster_name": "sluice-test",
            "cluster_uuid": "sluice-test-cluster",
            "version": {
                "distribution": "opensearch",
                "number": "2.19.0",
                "lucene_version": "9.12.1",
                "minimum_wire_compatibility_version": "7.10.0",
                "minimum_index_compatibility_version": "7.0.0",
            },
            "tagline": "The OpenSearch Project: https://opensearch.org/",
        }),
    )
}

/// `GET /_cluster/settings`: nothing set, and with `include_defaults=true` the ISM switch as
/// the cluster has it (a real cluster lists hundreds of defaults; only this one is read).
fn cluster_settings(inner: &Inner, call: &Call) -> Response {
    let mut settings = json!({"persistent": {}, "transient": {}});
    if call.query.get("include_defaults").map(String::as_str) == Some("true") {
        settings["defaults"] = match inner.cluster.ism_enabled {
            Some(on) => {
                json!({"opendistro": {"index_state_management": {"enabled": on.to_string()}}})
            }
            None => json!({}),
        };
    }
    answer(200, &settings)
}

/// The request body as JSON: inflated, with a JSON content type, an object. `None` for no body.
fn json_body(call: &Call) -> Result<Option<Map<String, Value>>, NotUnderstood> {
    if call.body.is_empty() {
        return Ok(None);
    }
    let content_type = call
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !content_type.starts_with("application/json") {
        return Err(format!(
            "Content-Type `{content_type}` is not application/json"
        ));
    }
    let body = inflate(&call.headers, &call.body)?;
    match serde_json::from_slice(&body) {
        Ok(Value::Object(map)) => Ok(Some(map)),
        Ok(_) => Err("the body is not a JSON object".to_owned()),
        Err(e) => Err(format!("the body is not JSON: {e}")),
    }
}

fn inflate(headers: &HeaderMap, body: &[u8]) -> Result<Vec<u8>, NotUnderstood> {
    match headers
        .get("content-encoding")
        .and_then(|v| v.to_str().ok())
    {
        None | Some("identity") => Ok(body.to_vec()),
        Some("gzip") => {
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(body)
                .read_to_end(&mut out)
                .map_err(|e| format!("gzip body: {e}"))?;
            Ok(out)
        }
        Some(other) => Err(format!("Content-Encoding `{other}`")),
    }
}

/// `index_patterns`, a string or a non-empty list of strings, is there.
fn has_index_patterns(body: &Map<String, Value>) -> Result<bool, NotUnderstood> {
    match body.get("index_patterns") {
        None => Ok(false),
        Some(Value::String(_)) => Ok(true),
        Some(Value::Array(patterns)) if patterns.iter().all(Value::is_string) => {
            Ok(!patterns.is_empty())
        }
        Some(other) => Err(format!("`index_patterns` is {other}")),
    }
}

fn patterns_missing() -> Response {
    let reason = "Validation Failed: 1: index patterns are missing;";
    error(400, "action_request_validation_exception", reason)
}

/// `PUT /_template/<name>`: a legacy template.
fn put_template(inner: &mut Inner, name: &str, call: &Call) -> Result<Response, NotUnderstood> {
    let body = json_body(call)?.ok_or("a template needs a body")?;
    const KEYS: &[&str] = &[
        "index_patterns",
        "order",
        "version",
        "settings",
        "mappings",
        "aliases",
    ];
    if let Some(key) = body.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(format!("unknown key `{key}` in a legacy template"));
    }
    if !has_index_patterns(&body)? {
        return Ok(patterns_missing());
    }
    if call.query.get("create").map(String::as_str) == Some("true")
        && inner.templates.contains_key(name)
    {
        let reason = format!("index_template [{name}] already exists");
        return Ok(error(400, "illegal_argument_exception", &reason));
    }
    inner.templates.insert(name.to_owned(), Value::Object(body));
    Ok(answer(200, &json!({"acknowledged": true})))
}

/// `PUT /_index_template/<name>`: a composable template, parsed as OpenSearch's
/// `ComposableIndexTemplate` parser does: settings, mappings and aliases only under `template`.
fn put_index_template(
    inner: &mut Inner,
    name: &str,
    call: &Call,
) -> Result<Response, NotUnderstood> {
    let body = json_body(call)?.ok_or("a template needs a body")?;
    const KEYS: &[&str] = &[
        "index_patterns",
        "template",
        "priority",
        "composed_of",
        "version",
        "_meta",
        "data_stream",
    ];
    let unknown_field = |parser: &str, key: &str| {
        // OpenSearch's reason starts with the line and column; this server does not track them.
        let reason = format!("[1:2] [{parser}] unknown field [{key}]");
        error(400, "x_content_parse_exception", &reason)
    };
    if let Some(key) = body.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Ok(unknown_field("index_template", key));
    }
    match body.get("template") {
        None => {}
        Some(Value::Object(template)) => {
            const TEMPLATE_KEYS: &[&str] = &["settings", "mappings", "aliases"];
            if let Some(key) = template
                .keys()
                .find(|k| !TEMPLATE_KEYS.contains(&k.as_str()))
            {
                return Ok(unknown_field("template", key));
            }
        }
        Some(other) => return Err(format!("`template` is {other}")),
    }
    if !has_index_patterns(&body)? {
        return Ok(patterns_missing());
    }
    if call.query.get("create").map(String::as_str) == Some("true")
        && inner.index_templates.contains_key(name)
    {
        let reason = format!("index template [{name}] already exists");
        return Ok(error(400, "illegal_argument_exception", &reason));
    }
    inner
        .index_templates
        .insert(name.to_owned(), Value::Object(body));
    Ok(answer(200, &json!({"acknowledged": true})))
}

/// `PUT /_plugins/_ism/policies/<id>` (and the `_opendistro` path): a new policy, or with
/// `if_seq_no` and `if_primary_term` an update of an existing one.
fn put_policy(inner: &mut Inner, id: &str, call: &Call) -> Result<Response, NotUnderstood> {
    let body = json_body(call)?.ok_or("a policy needs a body")?;
    let policy = match (body.len(), body.get("policy")) {
        (1, Some(Value::Object(policy))) => policy.clone(),
        _ => return Err("a policy body is `{\"policy\": {...}}`".to_owned()),
    };
    const KEYS: &[&str] = &[
        "policy_id",
        "description",
        "last_updated_time",
        "schema_version",
        "error_notification",
        "default_state",
        "states",
        "ism_template",
        "user",
    ];
    if inner.cluster.ism_template_unsupported && policy.contains_key("ism_template") {
        let reason = "Invalid field: [ism_template] found in Policy.";
        return Ok(error(400, "illegal_argument_exception", reason));
    }
    if let Some(key) = policy.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(format!("unknown key `{key}` in a policy"));
    }
    if !policy.contains_key("default_state") || !policy.contains_key("states") {
        return Err("a policy needs `default_state` and `states`".to_owned());
    }
    let number = |key: &str| -> Result<Option<u64>, NotUnderstood> {
        call.query
            .get(key)
            .map(|v| v.parse().map_err(|_| format!("`{key}` is `{v}`")))
            .transpose()
    };
    let expected = match (number("if_seq_no")?, number("if_primary_term")?) {
        (Some(seq_no), Some(term)) => Some((seq_no, term)),
        (None, None) => None,
        _ => return Err("`if_seq_no` and `if_primary_term` go together".to_owned()),
    };
    let existing = inner.policies.get(id).cloned();
    let version = match (&existing, expected) {
        (Some(existing), None) => {
            let reason = format!(
                "[{id}]: version conflict, document already exists (current version [{}])",
                existing.version
            );
            return Ok(error(409, "version_conflict_engine_exception", &reason));
        }
        (Some(existing), Some((seq_no, term))) if (seq_no, term) != (existing.seq_no, 1) => {
            let reason = format!(
                "[{id}]: version conflict, required seqNo [{seq_no}], primary term [{term}]. \
                 current document has seqNo [{}] and primary term [1]",
                existing.seq_no
            );
            return Ok(error(409, "version_conflict_engine_exception", &reason));
        }
        (None, Some((seq_no, term))) => {
            let reason = format!(
                "[{id}]: version conflict, required seqNo [{seq_no}], primary term [{term}]. \
                 but no document was found"
            );
            return Ok(error(409, "version_conflict_engine_exception", &reason));
        }
        (Some(existing), Some(_)) => existing.version + 1,
        (None, None) => 1,
    };
    inner.policy_seq_no += 1;
    let seq_no = inner.policy_seq_no;
    let stored = Policy {
        body: Value::Object(body),
        version,
        seq_no,
    };
    inner.policies.insert(id.to_owned(), stored);
    let mut shown = policy;
    shown.insert("policy_id".to_owned(), json!(id));
    let status = if version == 1 { 201 } else { 200 };
    Ok(answer(
        status,
        &json!({
            "_id": id, "_version": version, "_primary_term": 1, "_seq_no": seq_no,
            "policy": {"policy": shown},
        }),
    ))
}

/// Why OpenSearch refuses `name` as an index name (`MetadataCreateIndexService`), if it does.
fn invalid_index_name(name: &str) -> Option<String> {
    let why = if name.to_lowercase() != name {
        "must be lowercase"
    } else if name.starts_with(['_', '-', '+']) {
        "must not start with '_', '-', or '+'"
    } else if name == "." || name == ".." {
        "must not be '.' or '..'"
    } else if name.contains(['\\', '/', '*', '?', '"', '<', '>', '|', ' ', ',', '#', ':']) {
        "must not contain the following characters [ , \", *, \\, <, |, ,, >, /, ?]"
    } else {
        return None;
    };
    Some(format!("Invalid index name [{name}], {why}"))
}

/// `PUT /<index>`: a new index, with an optional body of `settings`, `mappings` and `aliases`.
fn put_index(inner: &mut Inner, name: &str, call: &Call) -> Result<Response, NotUnderstood> {
    let body = json_body(call)?.unwrap_or_default();
    if let Some(key) = body
        .keys()
        .find(|k| !["settings", "mappings", "aliases"].contains(&k.as_str()))
    {
        return Err(format!("unknown key `{key}` in a create-index body"));
    }
    let aliases = match body.get("aliases") {
        None => Map::new(),
        Some(Value::Object(aliases)) => aliases.clone(),
        Some(other) => return Err(format!("`aliases` is {other}")),
    };
    const ALIAS_KEYS: &[&str] = &[
        "is_write_index",
        "is_hidden",
        "filter",
        "routing",
        "index_routing",
        "search_routing",
    ];
    for (alias, properties) in &aliases {
        let Value::Object(properties) = properties else {
            return Err(format!("alias `{alias}` is {properties}"));
        };
        if let Some(key) = properties
            .keys()
            .find(|k| !ALIAS_KEYS.contains(&k.as_str()))
        {
            return Err(format!("unknown key `{key}` in alias `{alias}`"));
        }
    }
    if let Some(reason) = invalid_index_name(name) {
        let extra = json!({"index": name, "index_uuid": "_na_"});
        return Ok(error_with(
            400,
            "invalid_index_name_exception",
            &reason,
            extra,
        ));
    }
    if inner.indices.contains_key(name) {
        let reason = format!("index [{name}/{name}-uuid] already exists");
        let extra = json!({"index": name, "index_uuid": format!("{name}-uuid")});
        return Ok(error_with(
            400,
            "resource_already_exists_exception",
            &reason,
            extra,
        ));
    }
    if inner.aliases.contains_key(name) {
        let reason = format!("Invalid index name [{name}], already exists as alias");
        let extra = json!({"index": name, "index_uuid": "_na_"});
        return Ok(error_with(
            400,
            "invalid_index_name_exception",
            &reason,
            extra,
        ));
    }
    for (alias, properties) in &aliases {
        if inner.indices.contains_key(alias) || alias == name {
            let reason = format!(
                "Invalid alias name [{alias}], an index exists with the same name as the alias"
            );
            let extra = json!({"index": alias, "index_uuid": "_na_"});
            return Ok(error_with(
                400,
                "invalid_alias_name_exception",
                &reason,
                extra,
            ));
        }
        let writes = properties.get("is_write_index") == Some(&json!(true));
        let other_writer = inner.aliases.get(alias).and_then(|members| {
            members
                .iter()
                .find(|(_, p)| p.get("is_write_index") == Some(&json!(true)))
        });
        if let (true, Some((other, _))) = (writes, other_writer) {
            let reason = format!("alias [{alias}] has more than one write index [{other},{name}]");
            return Ok(error(400, "illegal_state_exception", &reason));
        }
    }
    for (alias, properties) in aliases {
        let members = inner.aliases.entry(alias).or_default();
        members.insert(name.to_owned(), properties);
    }
    inner.indices.insert(name.to_owned(), Value::Object(body));
    Ok(answer(
        200,
        &json!({"acknowledged": true, "shards_acknowledged": true, "index": name}),
    ))
}

/// The concrete index a write to `alias` goes to: the member marked `is_write_index`, or the
/// only member when none is marked and it is not marked `false`.
fn write_index(inner: &Inner, alias: &str) -> Result<String, String> {
    let members = &inner.aliases[alias];
    let marked = |want: bool| {
        let members = members.iter();
        members.filter(move |(_, p)| p.get("is_write_index") == Some(&json!(want)))
    };
    let mut writers = marked(true);
    match (writers.next(), members.len()) {
        (Some((index, _)), _) => Ok(index.clone()),
        (None, 1) if marked(false).next().is_none() => Ok(members.keys().next().unwrap().clone()),
        _ => Err(format!(
            "no write index is defined for alias [{alias}]. The write index may be explicitly \
             disabled using is_write_index=false or the alias points to multiple indices \
             without one being designated as a write index"
        )),
    }
}

/// The keys an action line's metadata may have, as `_bulk` documents them (but for `pipeline`,
/// which is not understood: the server has no ingest pipelines).
const ACTION_KEYS: &[&str] = &[
    "_index",
    "_require_alias",
    "_id",
    "routing",
    "version",
    "version_type",
    "if_seq_no",
    "if_primary_term",
    "require_alias",
    "retry_on_conflict",
];

/// The keys an `update` source line may have (but for `script`, which is not understood).
const UPDATE_KEYS: &[&str] = &["doc", "upsert", "doc_as_upsert", "detect_noop", "_source"];

/// A bool query parameter: present without a value means `true`.
fn flag(call: &Call, key: &str) -> Result<Option<bool>, NotUnderstood> {
    match call.query.get(key).map(String::as_str) {
        None => Ok(None),
        Some("" | "true") => Ok(Some(true)),
        Some("false") => Ok(Some(false)),
        Some(other) => Err(format!("`{key}` is `{other}`")),
    }
}

/// `_bulk`: the body parsed strictly first (a malformed body is the whole request's 400, and
/// not understood), then each item applied in order.
fn bulk(inner: &mut Inner, index: Option<&str>, call: &Call) -> Result<Response, NotUnderstood> {
    let require_alias = flag(call, "require_alias")?.unwrap_or(false);
    if let Some(refresh) = call.query.get("refresh")
        && !["", "true", "false", "wait_for"].contains(&refresh.as_str())
    {
        return Err(format!("`refresh` is `{refresh}`"));
    }
    let items = match parse_bulk(index, require_alias, call, inner.faults.max_content_length) {
        Ok(items) => items,
        Err(Refusal::TooLarge) => {
            let reason = "the request body is too large";
            return Ok(error(413, "content_too_long_exception", reason));
        }
        Err(Refusal::Malformed(why)) => return Err(why),
    };
    inner.bulk_requests += 1;
    inner.bulk_items += items.len();
    let results: Vec<Value> = items.into_iter().map(|item| apply(inner, item)).collect();
    let errors = results.iter().any(|r| {
        r.as_object()
            .unwrap()
            .values()
            .any(|v| v.get("error").is_some())
    });
    let body = json!({"took": 1, "errors": errors, "items": results});
    let body = match call.query.get("filter_path") {
        None => body,
        Some(paths) => {
            let paths: Vec<Vec<&str>> = paths.split(',').map(|p| p.split('.').collect()).collect();
            let paths: Vec<&[&str]> = paths.iter().map(Vec::as_slice).collect();
            filter(&body, &paths).unwrap_or_else(|| json!({}))
        }
    };
    Ok(answer(200, &body))
}

/// `filter_path`: the parts of `value` the dotted paths name, `*` matching any one key; a
/// list is filtered element by element. `None` when nothing is left.
fn filter(value: &Value, paths: &[&[&str]]) -> Option<Value> {
    if paths.iter().any(|p| p.is_empty()) {
        return Some(value.clone());
    }
    match value {
        Value::Object(map) => {
            let kept: Map<String, Value> = map
                .iter()
                .filter_map(|(key, v)| {
                    let rest: Vec<&[&str]> = paths
                        .iter()
                        .filter(|p| p[0] == "*" || p[0] == key)
                        .map(|p| &p[1..])
                        .collect();
                    if rest.is_empty() {
                        return None;
                    }
                    filter(v, &rest).map(|v| (key.clone(), v))
                })
                .collect();
            (!kept.is_empty()).then_some(Value::Object(kept))
        }
        Value::Array(items) => {
            let kept: Vec<Value> = items.iter().filter_map(|v| filter(v, paths)).collect();
            (!kept.is_empty()).then_some(Value::Array(kept))
        }
        _ => None,
    }
}

/// How an item's `version` is compared with the stored one.
#[derive(Clone, Copy, PartialEq)]
enum VersionType {
    External,
    ExternalGte,
}

/// One item of a bulk request.
struct Item {
    action: String,
    index: String,
    id: Option<String>,
    source: Option<Value>,
    version: Option<(u64, VersionType)>,
    /// `if_seq_no` and `if_primary_term`.
    if_seq_no: Option<(u64, u64)>,
    require_alias: bool,
}

enum Refusal {
    TooLarge,
    Malformed(String),
}

fn parse_bulk(
    default_index: Option<&str>,
    default_require_alias: bool,
    call: &Call,
    max: Option<usize>,
) -> Result<Vec<Item>, Refusal> {
    let malformed = |why: String| Refusal::Malformed(why);
    let content_type = call
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !(content_type.starts_with("application/json")
        || content_type.starts_with("application/x-ndjson"))
    {
        return Err(malformed(format!(
            "Content-Type `{content_type}` is not application/json or application/x-ndjson"
        )));
    }
    let body = inflate(&call.headers, &call.body).map_err(malformed)?;
    if max.is_some_and(|max| body.len() > max) {
        return Err(Refusal::TooLarge);
    }
    if !body.ends_with(b"\n") {
        return Err(malformed("the body must end with a newline".to_owned()));
    }
    let text = std::str::from_utf8(&body).map_err(|e| malformed(format!("not UTF-8: {e}")))?;
    let mut lines = text.lines().enumerate();
    let mut items = Vec::new();
    while let Some((n, line)) = lines.next() {
        let at = |why: &str| malformed(format!("line {}: {why}", n + 1));
        let action: Map<String, Value> =
            serde_json::from_str(line).map_err(|e| at(&format!("action line: {e}")))?;
        let (name, meta) = match action.iter().next() {
            Some((name, Value::Object(meta))) if action.len() == 1 => (name.clone(), meta.clone()),
            _ => {
                return Err(at(
                    "an action line is one key naming the action, its value an object",
                ));
            }
        };
        if !["index", "create", "update", "delete"].contains(&name.as_str()) {
            return Err(at(&format!("unknown action `{name}`")));
        }
        if let Some(key) = meta.keys().find(|k| !ACTION_KEYS.contains(&k.as_str())) {
            return Err(at(&format!("unknown key `{key}` in the `{name}` action")));
        }
        let index = match (meta.get("_index"), default_index) {
            (Some(Value::String(index)), _) => index.clone(),
            (None, Some(index)) => index.to_owned(),
            _ => return Err(at("no `_index`, and the path names none")),
        };
        let id = match meta.get("_id") {
            None => None,
            Some(Value::String(id)) if !id.is_empty() && id.len() <= 512 => Some(id.clone()),
            Some(other) => {
                return Err(at(&format!(
                    "`_id` must be a non-empty string of at most 512 bytes, got {other}"
                )));
            }
        };
        if (name == "delete" || name == "update") && id.is_none() {
            return Err(at(&format!("a `{name}` needs an `_id`")));
        }
        let number = |key: &str| match meta.get(key) {
            None => Ok(None),
            Some(Value::Number(n)) if n.as_u64().is_some() => Ok(n.as_u64()),
            Some(other) => Err(at(&format!("`{key}` must be a whole number, got {other}"))),
        };
        let version = match (number("version")?, meta.get("version_type")) {
            (None, None) => None,
            (Some(version), Some(Value::String(kind))) if kind == "external" => {
                Some((version, VersionType::External))
            }
            (Some(version), Some(Value::String(kind))) if kind == "external_gte" => {
                Some((version, VersionType::ExternalGte))
            }
            (Some(_), None) => {
                return Err(at(
                    "internal versioning can not be used for optimistic concurrency control. \
                     Please use `if_seq_no` and `if_primary_term` instead",
                ));
            }
            (version, kind) => {
                return Err(at(&format!(
                    "`version` {version:?} with `version_type` {kind:?}"
                )));
            }
        };
        if version.is_some() && (name == "create" || name == "update") {
            return Err(at(&format!(
                "a `{name}` takes no external version (create operations only support \
                 internal versioning, and updates none)"
            )));
        }
        let if_seq_no = match (number("if_seq_no")?, number("if_primary_term")?) {
            (None, None) => None,
            (Some(seq_no), Some(term)) if name != "create" => Some((seq_no, term)),
            _ => {
                return Err(at(
                    "`if_seq_no` and `if_primary_term` go together, and not on a `create`",
                ));
            }
        };
        let require_alias = match meta.get("require_alias").or(meta.get("_require_alias")) {
            None => default_require_alias,
            Some(Value::Bool(b)) => *b,
            Some(other) => return Err(at(&format!("`require_alias` is {other}"))),
        };
        let source = if name == "delete" {
            None
        } else {
            let (m, line) = lines
                .next()
                .ok_or_else(|| at(&format!("the `{name}` action has no source line")))?;
            let source: Value = serde_json::from_str(line)
                .map_err(|e| malformed(format!("line {}: source: {e}", m + 1)))?;
            let Value::Object(map) = &source else {
                return Err(malformed(format!("line {}: a source is an object", m + 1)));
            };
            if name == "update" {
                let there = |m: usize, why: String| malformed(format!("line {}: {why}", m + 1));
                if let Some(key) = map.keys().find(|k| !UPDATE_KEYS.contains(&k.as_str())) {
                    return Err(there(m, format!("unknown key `{key}` in an update")));
                }
                if !matches!(map.get("doc"), Some(Value::Object(_))) {
                    return Err(there(m, "an update without a `doc` object".to_owned()));
                }
                if !matches!(map.get("upsert"), None | Some(Value::Object(_))) {
                    return Err(there(m, "`upsert` is not an object".to_owned()));
                }
            }
            Some(source)
        };
        items.push(Item {
            action: name,
            index,
            id,
            source,
            version,
            if_seq_no,
            require_alias,
        });
    }
    Ok(items)
}

/// Merges `patch` into `target` as an update's partial document does: objects key by key,
/// anything else replaced.
fn merge(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(target), Value::Object(patch)) => {
            for (key, value) in patch {
                match target.get_mut(key) {
                    Some(existing) if existing.is_object() && value.is_object() => {
                        merge(existing, value);
                    }
                    _ => {
                        target.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (target, patch) => *target = patch.clone(),
    }
}

/// Applies one item; its result as `_bulk` answers it.
fn apply(inner: &mut Inner, item: Item) -> Value {
    let Item {
        action,
        index: named,
        id,
        source,
        version: external,
        if_seq_no,
        require_alias,
    } = item;
    let id = id.unwrap_or_else(|| {
        inner.next_id += 1;
        format!("auto-{}", inner.next_id)
    });
    // The concrete index: an alias's write index, or the name itself.
    let target = if inner.aliases.contains_key(&named) {
        write_index(inner, &named)
    } else if require_alias {
        Err(String::new())
    } else {
        Ok(named.clone())
    };
    let index = target.clone().unwrap_or_else(|_| named.clone());
    let seq_no = inner.next_seq_no(&index);
    let result = |status: u16, extra: Value| {
        let mut body = json!({"_index": index, "_id": id, "status": status});
        if extra.get("error").is_none() {
            let shards = json!({"total": 1, "successful": 1, "failed": 0});
            body.as_object_mut().unwrap().extend([
                ("_shards".to_owned(), shards),
                ("_seq_no".to_owned(), json!(seq_no)),
                ("_primary_term".to_owned(), json!(1)),
            ]);
        }
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        json!({ action.clone(): body })
    };
    let failed = |status: u16, kind: &str, reason: String| {
        let error = json!({
            "type": kind, "reason": reason, "index": index, "shard": "0",
            "index_uuid": format!("{index}-uuid"),
        });
        result(status, json!({ "error": error }))
    };
    match target {
        Ok(_) => {}
        Err(reason) if reason.is_empty() => {
            let reason = format!(
                "no such index [{named}] and [require_alias] request flag is [true] and \
                 [{named}] is not an alias"
            );
            return failed(404, "index_not_found_exception", reason);
        }
        Err(reason) => return failed(400, "illegal_argument_exception", reason),
    }
    if inner.faults.rejected_items > 0 {
        inner.faults.rejected_items -= 1;
        let reason = "rejected execution of coordinating operation".to_owned();
        return failed(429, "es_rejected_execution_exception", reason);
    }
    if let (Some(marker), Some(source)) = (&inner.faults.unmappable, &source)
        && source.to_string().contains(marker.as_str())
    {
        let reason = format!("failed to parse field [{marker}]");
        return failed(400, "mapper_parsing_exception", reason);
    }
    if !inner.indices.contains_key(&index) {
        if let Some(reason) = invalid_index_name(&index) {
            return failed(400, "invalid_index_name_exception", reason);
        }
        // A write to a missing index creates it, as with `action.auto_create_index`'s default.
        inner.indices.insert(index.clone(), json!({}));
    }
    let documents = inner.documents.entry(index.clone()).or_default();
    let existing = documents.get(&id).cloned();
    let conflict = |reason: String| failed(409, "version_conflict_engine_exception", reason);
    if let Some((want_seq_no, want_term)) = if_seq_no {
        let required = format!(
            "[{id}]: version conflict, required seqNo [{want_seq_no}], primary term [{want_term}]."
        );
        match &existing {
            None => return conflict(format!("{required} but no document was found")),
            Some(d) if (d.seq_no, 1) != (want_seq_no, want_term) => {
                return conflict(format!(
                    "{required} current document has seqNo [{}] and primary term [1]",
                    d.seq_no
                ));
            }
            Some(_) => {}
        }
    }
    if let (Some((given, kind)), Some(stored)) = (external, &existing) {
        let stored = stored.version;
        if kind == VersionType::External && stored >= given {
            return conflict(format!(
                "[{id}]: version conflict, current version [{stored}] is higher or equal to the one provided [{given}]"
            ));
        }
        if kind == VersionType::ExternalGte && stored > given {
            return conflict(format!(
                "[{id}]: version conflict, current version [{stored}] is higher than the one provided [{given}]"
            ));
        }
    }
    let next_version = |existing: Option<u64>| match external {
        Some((given, _)) => given,
        None => existing.map_or(1, |v| v + 1),
    };
    let mut write = |source: Value, version: u64| {
        let document = Document {
            source,
            version,
            seq_no,
        };
        documents.insert(id.clone(), document);
    };
    match (action.as_str(), existing) {
        ("create", Some(existing)) => conflict(format!(
            "[{id}]: version conflict, document already exists (current version [{}])",
            existing.version
        )),
        ("delete", None) => {
            let version = next_version(None);
            result(404, json!({"result": "not_found", "_version": version}))
        }
        ("delete", Some(existing)) => {
            documents.remove(&id);
            let version = next_version(Some(existing.version));
            result(200, json!({"result": "deleted", "_version": version}))
        }
        ("update", None) => {
            let source = source.expect("parsed with its source");
            let upsert = if source.get("doc_as_upsert") == Some(&Value::Bool(true)) {
                source.get("doc").cloned()
            } else {
                source.get("upsert").cloned()
            };
            match upsert {
                Some(document) => {
                    write(document, 1);
                    result(201, json!({"result": "created", "_version": 1}))
                }
                None => failed(
                    404,
                    "document_missing_exception",
                    format!("[{id}]: document missing"),
                ),
            }
        }
        ("update", Some(existing)) => {
            let source = source.expect("parsed with its source");
            let mut merged = existing.source.clone();
            merge(&mut merged, &source["doc"]);
            let detect_noop = source.get("detect_noop") != Some(&Value::Bool(false));
            if detect_noop && merged == existing.source {
                let shards = json!({"total": 0, "successful": 0, "failed": 0});
                return result(
                    200,
                    json!({
                        "result": "noop", "_version": existing.version, "_shards": shards,
                        "_seq_no": existing.seq_no,
                    }),
                );
            }
            let version = existing.version + 1;
            write(merged, version);
            result(200, json!({"result": "updated", "_version": version}))
        }
        (_, existing) => {
            // `index`, and `create` of a new id.
            let version = next_version(existing.as_ref().map(|d| d.version));
            write(source.expect("parsed with its source"), version);
            let (status, outcome) = if existing.is_some() {
                (200, "updated")
            } else {
                (201, "created")
            };
            result(status, json!({"result": outcome, "_version": version}))
        }
    }
}

/// One search: where, what, how many and which source fields. The query forms are the ones a
/// lookup by key sends: `term`, `terms` and `ids`, each a field (or `_id`) equal to one of
/// some values.
struct Search {
    /// Index names, aliases and `*` patterns; `None` for every index.
    indices: Option<Vec<String>>,
    field: String,
    values: Vec<Value>,
    size: usize,
    source: SourceFilter,
}

/// A search body's `_source`.
enum SourceFilter {
    All,
    Nothing,
    Fields(Vec<String>),
}

/// The keys a search body may have.
const SEARCH_KEYS: &[&str] = &["query", "size", "_source"];

/// A search body, parsed strictly: `{"query": {...}, "size": N, "_source": ...}`.
fn parse_search(
    indices: Option<Vec<String>>,
    body: &Map<String, Value>,
) -> Result<Search, NotUnderstood> {
    if let Some(key) = body.keys().find(|k| !SEARCH_KEYS.contains(&k.as_str())) {
        return Err(format!("unknown key `{key}` in a search body"));
    }
    let query = body.get("query").ok_or("a search body without `query`")?;
    let (field, values) = parse_query(query)?;
    let size = match body.get("size") {
        // OpenSearch's default `size`.
        None => 10,
        Some(size) => size
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| format!("`size` is {size}"))?,
    };
    let field_name = |name: &Value| match name.as_str() {
        Some(name) if top_level(name) && !name.starts_with('_') && !name.contains('*') => {
            Ok(name.to_owned())
        }
        _ => Err(format!(
            "`_source` field {name} is not a top-level field name"
        )),
    };
    let source = match body.get("_source") {
        None | Some(Value::Bool(true)) => SourceFilter::All,
        Some(Value::Bool(false)) => SourceFilter::Nothing,
        Some(name @ Value::String(_)) => SourceFilter::Fields(vec![field_name(name)?]),
        Some(Value::Array(names)) => {
            SourceFilter::Fields(names.iter().map(field_name).collect::<Result<_, _>>()?)
        }
        Some(other) => return Err(format!("`_source` is {other}")),
    };
    Ok(Search {
        indices,
        field,
        values,
        size,
        source,
    })
}

/// A field this server can match: a top-level source field (no path into objects).
fn top_level(name: &str) -> bool {
    !name.is_empty() && !name.contains('.')
}

/// `{"terms": {"<field>": [values]}}`, `{"term": {"<field>": value}}` (or `{"value": value}`)
/// or `{"ids": {"values": [ids]}}`: the field (`_id` for the document id) and the values.
fn parse_query(query: &Value) -> Result<(String, Vec<Value>), NotUnderstood> {
    let single = |value: &Value| -> Option<(String, Value)> {
        let map = value.as_object().filter(|m| m.len() == 1)?;
        map.iter().next().map(|(k, v)| (k.clone(), v.clone()))
    };
    let not_understood = || format!("query {query} is not a `term`, `terms` or `ids` query");
    let (kind, body) = single(query).ok_or_else(not_understood)?;
    let scalar =
        |value: &Value| matches!(value, Value::String(_) | Value::Number(_) | Value::Bool(_));
    let (field, values) = match kind.as_str() {
        "ids" => {
            let (key, values) = single(&body).ok_or_else(not_understood)?;
            match (key.as_str(), values) {
                ("values", Value::Array(ids)) if ids.iter().all(Value::is_string) => {
                    ("_id".to_owned(), ids)
                }
                _ => return Err(not_understood()),
            }
        }
        "terms" => match single(&body).ok_or_else(not_understood)? {
            (field, Value::Array(values)) if values.iter().all(scalar) => (field, values),
            _ => return Err(not_understood()),
        },
        "term" => match single(&body).ok_or_else(not_understood)? {
            (field, value) if scalar(&value) => (field, vec![value]),
            (field, long) => match single(&long) {
                Some((key, value)) if key == "value" && scalar(&value) => (field, vec![value]),
                _ => return Err(not_understood()),
            },
        },
        _ => return Err(not_understood()),
    };
    if field != "_id" && (!top_level(&field) || field.starts_with('_')) {
        return Err(format!(
            "query field `{field}` is neither `_id` nor a top-level source field"
        ));
    }
    Ok((field, values))
}

/// A stored value matches a term when equal to it, or (scalars) when their texts are equal,
/// as a `keyword` or numeric field matches a term given as a string; a list matches when one
/// of its elements does.
fn same_term(stored: &Value, term: &Value) -> bool {
    let text = |value: &Value| match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(_) | Value::Bool(_) => Some(value.to_string()),
        _ => None,
    };
    match stored {
        Value::Array(items) => items.iter().any(|item| same_term(item, term)),
        _ => stored == term || text(stored).is_some_and(|s| Some(s) == text(term)),
    }
}

/// `*` matching any run of characters, as index patterns do.
fn glob(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((head, rest)) => name.strip_prefix(head).is_some_and(|tail| {
            (0..=tail.len())
                .filter(|&at| tail.is_char_boundary(at))
                .any(|at| glob(rest, &tail[at..]))
        }),
    }
}

/// The concrete indices an index expression names: names, aliases (their members) and `*`
/// patterns (which may match nothing), comma-separated; `None` is every index. `Err` is the
/// first name that is neither an index nor an alias.
fn resolve(inner: &Inner, expression: Option<&[String]>) -> Result<Vec<String>, String> {
    let Some(expression) = expression else {
        return Ok(inner.indices.keys().cloned().collect());
    };
    let mut found = std::collections::BTreeSet::new();
    let members = |alias: &str| inner.aliases[alias].keys().cloned().collect::<Vec<_>>();
    for name in expression.iter().flat_map(|e| e.split(',')) {
        if name.contains('*') {
            let indices = inner.indices.keys().filter(|i| glob(name, i)).cloned();
            found.extend(indices);
            let aliases = inner.aliases.keys().filter(|a| glob(name, a));
            found.extend(aliases.flat_map(|a| members(a)));
        } else if inner.aliases.contains_key(name) {
            found.extend(members(name));
        } else if inner.indices.contains_key(name) {
            found.insert(name.to_owned());
        } else {
            return Err(name.to_owned());
        }
    }
    Ok(found.into_iter().collect())
}

/// Runs one search: its answer as `_search` gives it (`status` 200 added for `_msearch`), or a
/// missing index's 404 body.
fn run_search(inner: &Inner, search: &Search) -> Result<Value, Value> {
    let indices =
        resolve(inner, search.indices.as_deref()).map_err(|n| index_not_found_body(&n))?;
    let mut hits = Vec::new();
    let mut total = 0;
    for index in &indices {
        let Some(documents) = inner.documents.get(index) else {
            continue;
        };
        for (id, document) in documents {
            let stored = if search.field == "_id" {
                Some(Value::String(id.clone()))
            } else {
                document.source.get(&search.field).cloned()
            };
            let matched = stored.is_some_and(|s| search.values.iter().any(|v| same_term(&s, v)));
            if !matched {
                continue;
            }
            total += 1;
            if hits.len() >= search.size {
                continue;
            }
            let mut hit = json!({"_index": index, "_id": id, "_score": 1.0});
            match &search.source {
                SourceFilter::All => hit["_source"] = document.source.clone(),
                SourceFilter::Nothing => {}
                SourceFilter::Fields(fields) => {
                    let source = document.source.as_object().into_iter().flatten();
                    let kept: Map<String, Value> = source
                        .filter(|(key, _)| fields.contains(key))
                        .map(|(key, value)| (key.clone(), value.clone()))
                        .collect();
                    hit["_source"] = Value::Object(kept);
                }
            }
            hits.push(hit);
        }
    }
    let shards = indices.len();
    let max_score = if hits.is_empty() {
        Value::Null
    } else {
        json!(1.0)
    };
    Ok(json!({
        "took": 1,
        "timed_out": false,
        "_shards": {"total": shards, "successful": shards, "skipped": 0, "failed": 0},
        "hits": {
            "total": {"value": total, "relation": "eq"},
            "max_score": max_score,
            "hits": hits,
        },
    }))
}

/// `POST /_search` and `POST /<index>/_search`: one search; a missing index is the request's 404.
fn search(inner: &mut Inner, index: Option<&str>, call: &Call) -> Result<Response, NotUnderstood> {
    let body = json_body(call)?.ok_or("a search without a body")?;
    let search = parse_search(index.map(|i| vec![i.to_owned()]), &body)?;
    inner.search_requests += 1;
    inner.search_queries += 1;
    Ok(match run_search(inner, &search) {
        Ok(found) => answer(200, &found),
        Err(missing) => answer(404, &missing),
    })
}

/// `POST /_msearch` and `POST /<index>/_msearch`: NDJSON header and body pairs, parsed
/// strictly first, then each search run; a missing index is that response's 404.
fn multi_search(
    inner: &mut Inner,
    index: Option<&str>,
    call: &Call,
) -> Result<Response, NotUnderstood> {
    let content_type = call
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !(content_type.starts_with("application/json")
        || content_type.starts_with("application/x-ndjson"))
    {
        return Err(format!(
            "Content-Type `{content_type}` is not application/json or application/x-ndjson"
        ));
    }
    let body = inflate(&call.headers, &call.body)?;
    let text = std::str::from_utf8(&body).map_err(|e| format!("not UTF-8: {e}"))?;
    let Some(text) = text.strip_suffix('\n') else {
        return Err("the msearch request must be terminated by a newline [\\n]".to_owned());
    };
    let lines: Vec<&str> = text.split('\n').collect();
    if !lines.len().is_multiple_of(2) {
        return Err("a header line without its search body".to_owned());
    }
    let mut searches = Vec::new();
    for (n, pair) in lines.chunks(2).enumerate() {
        let at = |why: String| format!("line {}: {why}", 2 * n + 1);
        // An empty header line is `{}`, as OpenSearch takes it.
        let header: Map<String, Value> = match pair[0] {
            "" => Map::new(),
            line => serde_json::from_str(line).map_err(|e| at(format!("header: {e}")))?,
        };
        if let Some(key) = header.keys().find(|k| k.as_str() != "index") {
            return Err(at(format!("unknown key `{key}` in a header")));
        }
        let indices = match header.get("index") {
            None => index.map(|i| vec![i.to_owned()]),
            Some(Value::String(names)) => Some(vec![names.clone()]),
            Some(Value::Array(names)) if names.iter().all(Value::is_string) => Some(
                names
                    .iter()
                    .map(|n| n.as_str().unwrap().to_owned())
                    .collect(),
            ),
            Some(other) => return Err(at(format!("`index` is {other}"))),
        };
        let at = |why: String| format!("line {}: {why}", 2 * n + 2);
        let body: Map<String, Value> =
            serde_json::from_str(pair[1]).map_err(|e| at(format!("search body: {e}")))?;
        searches.push(parse_search(indices, &body).map_err(at)?);
    }
    if searches.is_empty() {
        return Err("no requests added".to_owned());
    }
    inner.search_requests += 1;
    inner.search_queries += searches.len();
    let responses: Vec<Value> = searches
        .iter()
        .map(|search| match run_search(inner, search) {
            Ok(mut found) => {
                found["status"] = json!(200);
                found
            }
            Err(missing) => missing,
        })
        .collect();
    Ok(answer(200, &json!({"took": 1, "responses": responses})))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::OpenSearch;

    fn post(server: &OpenSearch, path: &str, body: &str, auth: Option<&str>) -> (u16, Value) {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let mut request = agent
            .post(&format!("{}{path}", server.url()))
            .header("content-type", "application/x-ndjson");
        if let Some(auth) = auth {
            use base64::Engine as _;
            let token = base64::engine::general_purpose::STANDARD.encode(auth);
            request = request.header("authorization", &format!("Basic {token}"));
        }
        let mut response = request.send(body).unwrap();
        let status = response.status().as_u16();
        let text = response.body_mut().read_to_string().unwrap();
        (status, serde_json::from_str(&text).unwrap())
    }

    /// Any request; the answer's status and JSON body (`Null` when there is none).
    fn call(server: &OpenSearch, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let url = format!("{}{path}", server.url());
        let response = match (method, body) {
            ("GET", None) => agent.get(&url).call(),
            ("HEAD", None) => agent.head(&url).call(),
            ("PUT", None) => agent.put(&url).send_empty(),
            ("PUT", Some(body)) => agent
                .put(&url)
                .header("content-type", "application/json")
                .send(body.to_string()),
            (method, body) => panic!("no helper for {method} with {body:?}"),
        };
        let mut response = response.unwrap();
        let status = response.status().as_u16();
        let text = response.body_mut().read_to_string().unwrap();
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap()
        };
        (status, body)
    }

    /// Each item's status, in order.
    fn statuses(answer: &Value) -> Vec<u64> {
        let items = answer["items"].as_array().unwrap().iter();
        items
            .map(|i| {
                i.as_object().unwrap().values().next().unwrap()["status"]
                    .as_u64()
                    .unwrap()
            })
            .collect()
    }

    #[test]
    fn bulk_items_are_stored_and_answered_as_opensearch_documents_them() {
        let server = OpenSearch::start();
        let body = concat!(
            "{\"index\":{\"_index\":\"logs\",\"_id\":\"1\"}}\n{\"a\":1}\n",
            "{\"create\":{\"_index\":\"logs\",\"_id\":\"1\"}}\n{\"a\":2}\n",
            "{\"create\":{\"_index\":\"logs\"}}\n{\"a\":3}\n",
            "{\"delete\":{\"_index\":\"logs\",\"_id\":\"nope\"}}\n",
            "{\"update\":{\"_index\":\"logs\",\"_id\":\"1\"}}\n{\"doc\":{\"b\":true}}\n",
        );
        let (status, answer) = post(&server, "/_bulk", body, None);
        assert_eq!(status, 200);
        assert_eq!(answer["errors"], true);
        let statuses: Vec<u64> = answer["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                i.as_object().unwrap().values().next().unwrap()["status"]
                    .as_u64()
                    .unwrap()
            })
            .collect();
        assert_eq!(statuses, [201, 409, 201, 404, 200]);
        assert_eq!(
            answer["items"][1]["create"]["error"]["type"],
            "version_conflict_engine_exception"
        );
        let logs = server.documents("logs");
        assert_eq!(logs["1"].source, json!({"a": 1, "b": true}));
        assert_eq!(logs["1"].version, 2);
        assert_eq!(logs.len(), 2);
        server.assert_understood();
    }

    /// The Bulk API page's example request, answered as its example response (but for
    /// `took`), against a server holding the document it updates.
    #[test]
    fn the_documented_bulk_example_gets_the_documented_answer() {
        let data = crate::root().join("tests/data/opensearch");
        let request = std::fs::read_to_string(data.join("bulk-movies.ndjson")).unwrap();
        let want: Value = serde_json::from_str(
            &std::fs::read_to_string(data.join("bulk-movies-response.json")).unwrap(),
        )
        .unwrap();
        let server = OpenSearch::start();
        server.seed("movies", "tt0816711", json!({"title": "World War Y"}));
        let (status, mut got) = post(&server, "/_bulk", &request, None);
        assert_eq!(status, 200);
        got["took"] = want["took"].clone();
        assert_eq!(got, want);
        assert_eq!(
            server.documents("movies")["tt0816711"].source["title"],
            "World War Z"
        );
        server.assert_understood();
    }

    #[test]
    fn faults_are_answered_as_asked_and_bad_requests_are_not_understood() {
        let server = OpenSearch::start_with_credentials("u", "p");
        let body =
            "{\"index\":{\"_index\":\"x\"}}\n{\"m\":\"BAD\"}\n{\"index\":{\"_index\":\"x\"}}\n{}\n";
        assert_eq!(post(&server, "/_bulk", body, None).0, 401);
        assert_eq!(post(&server, "/_bulk", body, Some("u:wrong")).0, 403);
        server.faults(|f| {
            f.requests.push_back(503);
            f.rejected_items = 1;
            f.unmappable = Some("BAD".to_owned());
        });
        assert_eq!(post(&server, "/_bulk", body, Some("u:p")).0, 503);
        let (_, answer) = post(&server, "/_bulk", body, Some("u:p"));
        assert_eq!(answer["items"][0]["index"]["status"], 429);
        let (_, answer) = post(&server, "/_bulk", body, Some("u:p"));
        assert_eq!(
            answer["items"][0]["index"]["error"]["type"],
            "mapper_parsing_exception"
        );
        assert_eq!(answer["items"][1]["index"]["status"], 201);
        server.assert_understood();

        let (status, _) = post(
            &server,
            "/_bulk",
            "{\"index\":{\"_index\":\"x\",\"op\":1}}\n{}\n",
            Some("u:p"),
        );
        assert_eq!(status, 400);
        let understood = std::panic::catch_unwind(|| server.assert_understood());
        assert!(understood.is_err(), "an unknown action key fails the test");
    }

    #[test]
    fn bulk_items_have_document_semantics() {
        let server = OpenSearch::start();
        server.seed("logs", "1", json!({"a": {"x": 1}, "n": 1}));
        let body = concat!(
            "{\"create\":{\"_index\":\"logs\",\"_id\":\"1\"}}\n{\"a\":2}\n",
            "{\"update\":{\"_index\":\"logs\",\"_id\":\"1\"}}\n{\"doc\":{\"a\":{\"y\":2}}}\n",
            "{\"update\":{\"_index\":\"logs\",\"_id\":\"1\"}}\n{\"doc\":{\"n\":1}}\n",
            "{\"index\":{\"_index\":\"logs\",\"_id\":\"1\"}}\n{\"b\":3}\n",
            "{\"delete\":{\"_index\":\"logs\",\"_id\":\"gone\"}}\n",
            "{\"update\":{\"_index\":\"logs\",\"_id\":\"gone\"}}\n{\"doc\":{\"c\":1}}\n",
            "{\"update\":{\"_index\":\"logs\",\"_id\":\"u\"}}\n{\"doc\":{\"c\":1},\"upsert\":{\"c\":0}}\n",
            "{\"update\":{\"_index\":\"logs\",\"_id\":\"v\"}}\n{\"doc\":{\"d\":1},\"doc_as_upsert\":true}\n",
        );
        let (status, answer) = post(&server, "/_bulk", body, None);
        assert_eq!(status, 200);
        assert_eq!(statuses(&answer), [409, 200, 200, 200, 404, 404, 201, 201]);
        let items = &answer["items"];
        assert_eq!(
            items[0]["create"]["error"]["reason"],
            "[1]: version conflict, document already exists (current version [1])"
        );
        assert_eq!(items[1]["update"]["_version"], 2);
        assert_eq!(items[2]["update"]["result"], "noop");
        assert_eq!(items[3]["index"]["result"], "updated");
        assert_eq!(items[3]["index"]["_version"], 3);
        assert_eq!(items[4]["delete"]["result"], "not_found");
        assert!(items[4]["delete"].get("error").is_none());
        assert_eq!(
            items[5]["update"]["error"]["type"],
            "document_missing_exception"
        );
        let logs = server.documents("logs");
        assert_eq!(logs["1"].source, json!({"b": 3}));
        assert_eq!(logs["u"].source, json!({"c": 0}));
        assert_eq!(logs["v"].source, json!({"d": 1}));

        let body = concat!(
            "{\"update\":{\"_index\":\"logs\",\"_id\":\"u\"}}\n{\"doc\":{\"c\":1},\"upsert\":{\"c\":0}}\n",
            "{\"index\":{\"_index\":\"logs\",\"_id\":\"e\",\"version\":5,\"version_type\":\"external\"}}\n{\"e\":5}\n",
            "{\"index\":{\"_index\":\"logs\",\"_id\":\"e\",\"version\":5,\"version_type\":\"external\"}}\n{\"e\":6}\n",
            "{\"index\":{\"_index\":\"logs\",\"_id\":\"e\",\"version\":5,\"version_type\":\"external_gte\"}}\n{\"e\":7}\n",
            "{\"index\":{\"_index\":\"logs\",\"_id\":\"e\",\"version\":9,\"version_type\":\"external\"}}\n{\"e\":9}\n",
            "{\"index\":{\"_index\":\"logs\",\"_id\":\"e\",\"if_seq_no\":1,\"if_primary_term\":1}}\n{}\n",
        );
        let (_, answer) = post(&server, "/_bulk", body, None);
        assert_eq!(statuses(&answer), [200, 201, 409, 200, 200, 409]);
        assert_eq!(server.documents("logs")["u"].source, json!({"c": 1}));
        assert_eq!(
            answer["items"][2]["index"]["error"]["reason"],
            "[e]: version conflict, current version [5] is higher or equal to the one provided [5]"
        );
        let e = &server.documents("logs")["e"];
        assert_eq!((e.version, &e.source), (9, &json!({"e": 9})));
        let body = format!(
            "{{\"index\":{{\"_index\":\"logs\",\"_id\":\"e\",\"if_seq_no\":{},\"if_primary_term\":1}}}}\n{{}}\n",
            e.seq_no
        );
        let (_, answer) = post(&server, "/_bulk", &body, None);
        assert_eq!(statuses(&answer), [200]);
        assert_eq!(answer["items"][0]["index"]["_version"], 10);
        server.assert_understood();

        let (status, _) = post(
            &server,
            "/_bulk",
            "{\"index\":{\"_index\":\"logs\",\"version\":2}}\n{}\n",
            None,
        );
        assert_eq!(status, 400, "internal versioning is refused");
        assert!(std::panic::catch_unwind(|| server.assert_understood()).is_err());
    }

    #[test]
    fn indices_and_aliases_are_made_and_writes_go_to_the_write_index() {
        let server = OpenSearch::start();
        assert_eq!(call(&server, "HEAD", "/_alias/logs", None).0, 404);
        assert_eq!(call(&server, "HEAD", "/logs-000001", None).0, 404);
        let aliases = json!({"aliases": {"logs": {"is_write_index": true}}});
        let (status, answer) = call(&server, "PUT", "/logs-000001", Some(aliases.clone()));
        assert_eq!((status, &answer["index"]), (200, &json!("logs-000001")));
        let (status, answer) = call(&server, "PUT", "/logs-000001", Some(aliases));
        assert_eq!(status, 400);
        assert_eq!(answer["error"]["type"], "resource_already_exists_exception");
        assert_eq!(answer["status"], 400);
        assert_eq!(call(&server, "HEAD", "/_alias/logs", None).0, 200);
        assert_eq!(call(&server, "HEAD", "/logs-000001", None).0, 200);
        assert_eq!(call(&server, "PUT", "/plain", None).0, 200);
        let (status, answer) = call(&server, "PUT", "/Upper", None);
        assert_eq!(status, 400);
        assert_eq!(answer["error"]["type"], "invalid_index_name_exception");
        let clash = json!({"aliases": {"plain": {}}});
        let (status, answer) = call(&server, "PUT", "/other", Some(clash));
        assert_eq!(status, 400);
        assert_eq!(
            answer["error"]["reason"],
            "Invalid alias name [plain], an index exists with the same name as the alias"
        );

        let body = concat!(
            "{\"index\":{\"_index\":\"logs\",\"_id\":\"a\"}}\n{\"m\":1}\n",
            "{\"index\":{\"_index\":\"plain\",\"_id\":\"b\"}}\n{\"m\":2}\n",
            "{\"index\":{\"_index\":\"fresh\",\"_id\":\"c\",\"require_alias\":false}}\n{\"m\":3}\n",
        );
        let path = "/_bulk?require_alias=true&filter_path=errors,items.*.status,items.*._index";
        let (status, answer) = post(&server, path, body, None);
        assert_eq!(status, 200);
        assert_eq!(
            answer,
            json!({"errors": true, "items": [
                {"index": {"_index": "logs-000001", "status": 201}},
                {"index": {"_index": "plain", "status": 404}},
                {"index": {"_index": "fresh", "status": 201}},
            ]})
        );
        assert_eq!(server.documents("logs-000001")["a"].source, json!({"m": 1}));
        assert_eq!(
            server.documents_any(),
            [
                ("fresh".to_owned(), "c".to_owned(), json!({"m": 3})),
                ("logs-000001".to_owned(), "a".to_owned(), json!({"m": 1})),
            ]
        );
        let indices: Vec<String> = server.indices().into_keys().collect();
        assert_eq!(indices, ["fresh", "logs-000001", "plain"]);
        assert_eq!(
            server.aliases()["logs"]["logs-000001"],
            json!({"is_write_index": true})
        );
        let (status, answer) = call(&server, "GET", "/_data_stream/logs", None);
        assert_eq!(status, 404);
        assert_eq!(answer["error"]["type"], "index_not_found_exception");
        assert_eq!(
            answer["error"]["root_cause"][0]["reason"],
            "no such index [logs]"
        );
        server.assert_understood();
    }

    #[test]
    fn cluster_settings_say_whether_ism_is_on() {
        let server = OpenSearch::start();
        let path = "/_cluster/settings?include_defaults=true";
        let (status, answer) = call(&server, "GET", path, None);
        assert_eq!(status, 200);
        assert_eq!(
            answer,
            json!({"persistent": {}, "transient": {},
                "defaults": {"opendistro": {"index_state_management": {"enabled": "true"}}}})
        );
        server.cluster(|c| c.ism_enabled = Some(false));
        let (_, answer) = call(&server, "GET", path, None);
        assert_eq!(
            answer["defaults"]["opendistro"]["index_state_management"]["enabled"],
            "false"
        );
        server.cluster(|c| c.ism_enabled = None);
        assert_eq!(call(&server, "GET", path, None).1["defaults"], json!({}));
        let (_, answer) = call(&server, "GET", "/_cluster/settings", None);
        assert_eq!(answer, json!({"persistent": {}, "transient": {}}));
        server.assert_understood();
    }

    #[test]
    fn templates_are_checked_stored_and_read_back() {
        let server = OpenSearch::start();
        assert_eq!(
            call(&server, "HEAD", "/_template/logs-index-template", None).0,
            404
        );
        let legacy = json!({"index_patterns": ["logs-*"], "version": 2, "settings": {"number_of_shards": 1}});
        let (status, answer) = call(
            &server,
            "PUT",
            "/_template/logs-index-template",
            Some(legacy),
        );
        assert_eq!((status, answer), (200, json!({"acknowledged": true})));
        assert_eq!(
            call(&server, "HEAD", "/_template/logs-index-template", None).0,
            200
        );
        let (status, answer) = call(&server, "GET", "/_template/logs-index-template", None);
        assert_eq!(status, 200);
        assert_eq!(answer["logs-index-template"]["version"], 2);
        let (status, answer) = call(
            &server,
            "PUT",
            "/_template/bad",
            Some(json!({"version": 1})),
        );
        assert_eq!(status, 400);
        assert_eq!(
            answer["error"]["type"],
            "action_request_validation_exception"
        );

        let misplaced = json!({"index_patterns": ["m-*"], "settings": {"number_of_shards": 1}});
        let (status, answer) = call(&server, "PUT", "/_index_template/m", Some(misplaced));
        assert_eq!(status, 400);
        assert_eq!(answer["error"]["type"], "x_content_parse_exception");
        assert_eq!(call(&server, "HEAD", "/_index_template/m", None).0, 404);
        let (status, answer) = call(&server, "GET", "/_index_template/m", None);
        assert_eq!(status, 404);
        assert_eq!(answer["error"]["type"], "resource_not_found_exception");
        let composable = json!({"index_patterns": ["m-*"], "version": 3,
            "template": {"settings": {"number_of_shards": 1}}});
        let (status, _) = call(
            &server,
            "PUT",
            "/_index_template/m",
            Some(composable.clone()),
        );
        assert_eq!(status, 200);
        assert_eq!(call(&server, "HEAD", "/_index_template/m", None).0, 200);
        let (_, answer) = call(&server, "GET", "/_index_template/m", None);
        assert_eq!(
            answer,
            json!({"index_templates": [{"name": "m", "index_template": composable}]})
        );
        assert_eq!(server.templates().len(), 1);
        assert_eq!(server.index_templates()["m"]["version"], 3);
        server.assert_understood();
    }

    #[test]
    fn ism_policies_are_made_once_and_old_ism_refuses_ism_template() {
        let server = OpenSearch::start();
        let policy = json!({"policy": {"description": "d", "default_state": "hot",
            "states": [{"name": "hot", "actions": [], "transitions": []}],
            "ism_template": [{"index_patterns": ["logs-*"]}]}});
        let path = "/_plugins/_ism/policies/logs-policy";
        let (status, answer) = call(&server, "PUT", path, Some(policy.clone()));
        assert_eq!(status, 201);
        assert_eq!(answer["_id"], "logs-policy");
        assert_eq!(answer["policy"]["policy"]["policy_id"], "logs-policy");
        let legacy_path = "/_opendistro/_ism/policies/logs-policy";
        let (status, answer) = call(&server, "PUT", legacy_path, Some(policy.clone()));
        assert_eq!(status, 409);
        assert_eq!(answer["error"]["type"], "version_conflict_engine_exception");
        let seq_no = server.inner.lock().unwrap().policies["logs-policy"].seq_no;
        let update = format!("{path}?if_seq_no={seq_no}&if_primary_term=1");
        let (status, answer) = call(&server, "PUT", &update, Some(policy.clone()));
        assert_eq!((status, &answer["_version"]), (200, &json!(2)));
        assert_eq!(server.policies()["logs-policy"], policy);

        server.cluster(|c| c.ism_template_unsupported = true);
        let path = "/_opendistro/_ism/policies/other";
        let (status, answer) = call(&server, "PUT", path, Some(policy.clone()));
        assert_eq!(status, 400);
        let reason = answer["error"]["reason"].as_str().unwrap();
        assert!(reason.contains("Invalid field: [ism_template]"), "{reason}");
        let mut without = policy;
        without["policy"]
            .as_object_mut()
            .unwrap()
            .remove("ism_template");
        assert_eq!(call(&server, "PUT", path, Some(without)).0, 201);
        assert_eq!(server.policies().len(), 2);
        server.assert_understood();
    }

    #[test]
    fn slow_answers_wait_and_closed_answers_fail_the_read() {
        use std::io::{Read as _, Write as _};

        let server = OpenSearch::start();
        server.faults(|f| f.slow = Some(std::time::Duration::from_millis(300)));
        let started = std::time::Instant::now();
        assert_eq!(call(&server, "GET", "/", None).0, 200);
        assert!(started.elapsed() >= std::time::Duration::from_millis(300));
        server.faults(|f| {
            f.slow = None;
            f.close_mid_response = 1;
        });
        let agent = ureq::Agent::new_with_defaults();
        let mut response = agent.get(&server.url()).call().unwrap();
        assert_eq!(response.status().as_u16(), 200);
        assert!(response.body_mut().read_to_string().is_err());
        // On the wire: the status line, the headers, then half the declared body, then EOF.
        server.faults(|f| f.close_mid_response = 1);
        let mut raw =
            std::net::TcpStream::connect(server.url().trim_start_matches("http://")).unwrap();
        raw.write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n").unwrap();
        let mut got = String::new();
        raw.read_to_string(&mut got).unwrap();
        let (head, body) = got.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
        let declared: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length: "))
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(body.len(), declared / 2);
        assert_eq!(call(&server, "GET", "/", None).0, 200);
        server.assert_understood();
    }

    #[test]
    fn unknown_endpoints_and_parameters_are_not_understood() {
        let server = OpenSearch::start();
        assert_eq!(
            call(&server, "GET", "/_cluster/health?level=shards", None).0,
            400
        );
        let understood = std::panic::catch_unwind(|| server.assert_understood());
        assert!(understood.is_err());
        let server = OpenSearch::start();
        assert_eq!(call(&server, "GET", "/_cat/indices", None).0, 400);
        let understood = std::panic::catch_unwind(|| server.assert_understood());
        assert!(understood.is_err());
    }

    /// A request signed by `sluice_sigv4::sign_with` as key `AKID` for `us-east-1`: the
    /// answer's status and JSON body. `headers` are sent and signed; `body` is sent as given.
    fn signed(
        server: &OpenSearch,
        (secret, service): (&str, &str),
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> (u16, Value) {
        let url = format!("{}{path}", server.url());
        let mut sent: Vec<(String, String)> = headers
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect();
        let added = sluice_sigv4::sign_with(
            ("AKID", secret, None),
            "us-east-1",
            service,
            std::time::SystemTime::now(),
            method,
            &url,
            &sent,
            body,
        )
        .unwrap();
        sent.extend(added);
        send(method, &url, &sent, body)
    }

    /// Sends a request with exactly these headers (and the client's own, unsigned ones).
    fn send(method: &str, url: &str, headers: &[(String, String)], body: &[u8]) -> (u16, Value) {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let response = match method {
            "GET" => {
                let mut request = agent.get(url);
                for (name, value) in headers {
                    request = request.header(name, value);
                }
                request.call()
            }
            "POST" => {
                let mut request = agent.post(url);
                for (name, value) in headers {
                    request = request.header(name, value);
                }
                request.send(body)
            }
            other => panic!("no helper for {other}"),
        };
        let mut response = response.unwrap();
        let status = response.status().as_u16();
        let text = response.body_mut().read_to_string().unwrap();
        (status, serde_json::from_str(&text).unwrap())
    }

    fn gzip(body: &[u8]) -> Vec<u8> {
        use std::io::Write as _;
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(body).unwrap();
        encoder.finish().unwrap()
    }

    #[test]
    fn sigv4_requests_are_verified_on_the_bytes_sent() {
        let server = OpenSearch::start_with_sigv4("AKID", "secret/key", "us-east-1", "es");
        let good = ("secret/key", "es");
        assert_eq!(signed(&server, good, "GET", "/", &[], b"").0, 200);
        let bulk = b"{\"index\":{\"_index\":\"logs\",\"_id\":\"1\"}}\n{\"m\":1}\n";
        let compressed = gzip(bulk);
        let headers = [
            ("content-type", "application/x-ndjson"),
            ("content-encoding", "gzip"),
        ];
        let path = "/_bulk?refresh=wait_for&filter_path=errors,items.*.status";
        let (status, answer) = signed(&server, good, "POST", path, &headers, &compressed);
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["items"][0]["index"]["status"], 201);
        assert_eq!(server.documents("logs")["1"].source, json!({"m": 1}));
        assert_eq!(server.signature_failures(), 0);

        let (status, answer) = send("GET", &server.url(), &[], b"");
        assert_eq!(status, 403);
        let message = answer["message"].as_str().unwrap();
        assert!(
            message.starts_with(
                "The request signature we calculated does not match the signature you provided."
            ),
            "{message}"
        );
        let wrong = ("another", "es");
        assert_eq!(signed(&server, wrong, "GET", "/", &[], b"").0, 403);
        let other_service = ("secret/key", "aoss");
        assert_eq!(signed(&server, other_service, "GET", "/", &[], b"").0, 403);
        // Signed for one body, sent with another (the inflated one).
        let url = format!("{}/_bulk", server.url());
        let mut sent: Vec<(String, String)> = headers
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect();
        let added = sluice_sigv4::sign_with(
            ("AKID", "secret/key", None),
            "us-east-1",
            "es",
            std::time::SystemTime::now(),
            "POST",
            &url,
            &sent,
            bulk,
        )
        .unwrap();
        sent.extend(added);
        let (status, answer) = send("POST", &url, &sent, &compressed);
        assert_eq!(status, 403);
        let message = answer["message"].as_str().unwrap();
        assert!(message.contains("canonical request"), "{message}");
        assert_eq!(server.signature_failures(), 4);
        assert_eq!(server.bulk_counts(), (1, 1));
        server.assert_understood();
    }

    #[test]
    fn sigv4_for_serverless_needs_the_content_hash() {
        let server = OpenSearch::start_with_sigv4("AKID", "s", "us-east-1", "aoss");
        let body = json!({"query": {"ids": {"values": ["a"]}}}).to_string();
        let headers = [("content-type", "application/json")];
        let (status, answer) = signed(
            &server,
            ("s", "aoss"),
            "POST",
            "/_search",
            &headers,
            body.as_bytes(),
        );
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["hits"]["total"]["value"], 0);
        // Signed for `es`: the wrong scope.
        let (status, answer) = signed(
            &server,
            ("s", "es"),
            "POST",
            "/_search",
            &headers,
            body.as_bytes(),
        );
        assert_eq!(status, 403);
        let message = answer["message"].as_str().unwrap();
        assert!(message.contains("credential `AKID/"), "{message}");
        // Signed (with its hash) for one body, sent with another.
        let url = format!("{}/_search", server.url());
        let mut sent = vec![("content-type".to_owned(), "application/json".to_owned())];
        let added = sluice_sigv4::sign_with(
            ("AKID", "s", None),
            "us-east-1",
            "aoss",
            std::time::SystemTime::now(),
            "POST",
            &url,
            &sent,
            b"{}",
        )
        .unwrap();
        sent.extend(added);
        let (status, answer) = send("POST", &url, &sent, body.as_bytes());
        assert_eq!(status, 403);
        let message = answer["message"].as_str().unwrap();
        assert!(message.contains("`x-amz-content-sha256`"), "{message}");
        assert_eq!(server.signature_failures(), 2);
        assert_eq!(server.searches(), 1);
        // Without basic authentication, and not understood before the signature is checked.
        let (status, _) = send("POST", &format!("{}/_count", server.url()), &[], b"{}");
        assert_eq!(status, 400);
        assert_eq!(server.signature_failures(), 2);
        assert!(std::panic::catch_unwind(|| server.assert_understood()).is_err());
    }

    /// A lookup server: `people` (alias `folk` → `people-1`) and `pets`.
    fn lookup_server() -> OpenSearch {
        let server = OpenSearch::start();
        let aliases = json!({"aliases": {"folk": {}}});
        assert_eq!(call(&server, "PUT", "/people-1", Some(aliases)).0, 200);
        server.seed(
            "people-1",
            "p1",
            json!({"name": "ann", "age": 30, "tags": ["a", "b"]}),
        );
        server.seed(
            "people-1",
            "p2",
            json!({"name": "bob", "age": 40, "tags": ["b"]}),
        );
        server.seed(
            "people-1",
            "p3",
            json!({"name": "cy", "age": 30, "nested": {"name": "ann"}}),
        );
        server.seed("pets", "x1", json!({"name": "ann", "kind": "cat"}));
        server
    }

    fn json_post(server: &OpenSearch, path: &str, body: &Value) -> (u16, Value) {
        let headers = [("content-type".to_owned(), "application/json".to_owned())];
        let url = format!("{}{path}", server.url());
        send("POST", &url, &headers, body.to_string().as_bytes())
    }

    /// Each response's hit ids, or its error type.
    fn found(answer: &Value) -> Vec<Result<Vec<String>, String>> {
        let responses = answer["responses"].as_array().unwrap().iter();
        responses
            .map(|r| match r.get("error") {
                Some(error) => Err(error["type"].as_str().unwrap().to_owned()),
                None => Ok(r["hits"]["hits"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|h| h["_id"].as_str().unwrap().to_owned())
                    .collect()),
            })
            .collect()
    }

    #[test]
    fn msearch_answers_term_terms_and_ids_lookups() {
        let server = lookup_server();
        let body = concat!(
            "{\"index\":\"folk\"}\n",
            "{\"query\":{\"terms\":{\"name\":[\"ann\",\"bob\"]}},\"size\":10,\"_source\":[\"age\"]}\n",
            "{}\n",
            "{\"query\":{\"term\":{\"age\":\"30\"}},\"_source\":false}\n",
            "{\"index\":[\"people-1\",\"pets\"]}\n",
            "{\"query\":{\"terms\":{\"_id\":[\"p2\",\"x1\"]}},\"size\":1}\n",
            "{\"index\":\"pe*\"}\n",
            "{\"query\":{\"ids\":{\"values\":[\"x1\",\"p3\"]}}}\n",
            "{\"index\":\"gone\"}\n",
            "{\"query\":{\"term\":{\"name\":{\"value\":\"ann\"}}}}\n",
            "{\"index\":\"people-1,pets\"}\n",
            "{\"query\":{\"term\":{\"tags\":\"b\"}}}\n",
        );
        let (status, answer) = post(&server, "/people-1/_msearch", body, None);
        assert_eq!(status, 200, "{answer}");
        assert_eq!(
            found(&answer),
            [
                Ok(vec!["p1".to_owned(), "p2".to_owned()]),
                Ok(vec!["p1".to_owned(), "p3".to_owned()]),
                Ok(vec!["p2".to_owned()]),
                Ok(vec!["p3".to_owned(), "x1".to_owned()]),
                Err("index_not_found_exception".to_owned()),
                Ok(vec!["p1".to_owned(), "p2".to_owned()]),
            ]
        );
        let responses = &answer["responses"];
        assert_eq!(
            responses[0]["hits"]["hits"][0],
            json!({"_index": "people-1", "_id": "p1", "_score": 1.0, "_source": {"age": 30}})
        );
        assert_eq!(responses[0]["status"], 200);
        assert!(responses[1]["hits"]["hits"][0].get("_source").is_none());
        assert_eq!(
            responses[2]["hits"]["total"],
            json!({"value": 2, "relation": "eq"})
        );
        assert_eq!(responses[4]["status"], 404);
        assert_eq!(
            responses[4]["error"]["root_cause"][0]["reason"],
            "no such index [gone]"
        );
        assert_eq!(server.search_counts(), (1, 6));
        assert_eq!(server.searches(), 1);

        let gz = gzip(body.as_bytes());
        let headers = [
            ("content-type".to_owned(), "application/x-ndjson".to_owned()),
            ("content-encoding".to_owned(), "gzip".to_owned()),
        ];
        let (status, again) = send("POST", &format!("{}/_msearch", server.url()), &headers, &gz);
        assert_eq!(status, 200);
        // No default index now: the `{}` header searches every index.
        assert_eq!(found(&again)[1], Ok(vec!["p1".to_owned(), "p3".to_owned()]));
        assert_eq!(server.searches(), 2);
        server.assert_understood();
    }

    #[test]
    fn search_answers_one_lookup_and_a_missing_index_is_404() {
        let server = lookup_server();
        let query = json!({"query": {"terms": {"name": ["ann"]}}, "_source": "kind"});
        let (status, answer) = json_post(&server, "/pets/_search", &query);
        assert_eq!(status, 200);
        assert_eq!(
            answer["hits"],
            json!({"total": {"value": 1, "relation": "eq"}, "max_score": 1.0, "hits": [
                {"_index": "pets", "_id": "x1", "_score": 1.0, "_source": {"kind": "cat"}},
            ]})
        );
        let (status, answer) = json_post(&server, "/_search", &query);
        assert_eq!(
            (status, answer["hits"]["total"]["value"].clone()),
            (200, json!(2))
        );
        let (status, answer) = json_post(&server, "/nope/_search", &query);
        assert_eq!(status, 404);
        assert_eq!(answer["error"]["type"], "index_not_found_exception");
        let none = json!({"query": {"term": {"name": "zed"}}, "size": 0});
        let (_, answer) = json_post(&server, "/folk/_search", &none);
        assert_eq!(
            answer["hits"],
            json!({"total": {"value": 0, "relation": "eq"}, "max_score": null, "hits": []})
        );
        assert_eq!(server.searches(), 4);
        server.assert_understood();
    }

    #[test]
    fn other_searches_are_not_understood() {
        let refused = [
            json!({"query": {"match": {"name": "ann"}}}),
            json!({"query": {"terms": {"name": ["ann"], "boost": 2.0}}}),
            json!({"query": {"term": {"nested.name": "ann"}}}),
            json!({"query": {"term": {"name": {"value": "ann", "case_insensitive": true}}}}),
            json!({"query": {"terms": {"name": {"index": "i", "id": "1", "path": "p"}}}}),
            json!({"query": {"ids": {"values": [1]}}}),
            json!({"query": {"ids": {"values": ["a"]}}, "from": 5}),
            json!({"query": {"ids": {"values": ["a"]}}, "_source": {"includes": ["a"]}}),
            json!({"query": {"ids": {"values": ["a"]}}, "size": -1}),
            json!({"size": 1}),
        ];
        for body in refused {
            let server = lookup_server();
            let (status, _) = json_post(&server, "/people-1/_search", &body);
            assert_eq!(status, 400, "{body}");
            let understood = std::panic::catch_unwind(|| server.assert_understood());
            assert!(understood.is_err(), "{body}");
            assert_eq!(server.searches(), 0);
        }
        let malformed = [
            "{\"index\":\"pets\"}\n{\"query\":{\"ids\":{\"values\":[\"a\"]}}}",
            "{\"index\":\"pets\"}\n",
            "{\"index\":\"pets\",\"preference\":\"_local\"}\n{\"query\":{\"ids\":{\"values\":[\"a\"]}}}\n",
            "",
        ];
        for body in malformed {
            let server = lookup_server();
            assert_eq!(post(&server, "/_msearch", body, None).0, 400, "{body:?}");
            let understood = std::panic::catch_unwind(|| server.assert_understood());
            assert!(understood.is_err(), "{body:?}");
        }
    }
}
