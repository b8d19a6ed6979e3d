//! A strict stand-in for the OpenSearch REST API, for the `opensearch` sink's tests: no
//! OpenSearch or Elasticsearch-compatible server can be installed where the tests run
//! (issue 44). It implements the endpoints the sink uses as OpenSearch's REST reference
//! describes them, keeps documents by index and id, and can be told to fail. A request it
//! does not understand is answered 400 and recorded, and [`OpenSearch::assert_understood`]
//! fails the test on it: never a silent 200.
//!
//! Implemented so far: `GET /` (cluster info), `GET /_cluster/health`, `POST /_bulk` and
//! `POST /<index>/_bulk` (NDJSON action and source lines, `index`, `create`, `update`,
//! `delete`, per-item results with OpenSearch's error objects, `errors: true`), HTTP basic
//! authentication (401 without credentials, 403 with wrong ones) and gzip request bodies.
//! Index templates, ISM policies and aliases come with the index types that need them.

use std::collections::{BTreeMap, VecDeque};
use std::io::Read as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine as _;
use serde_json::{Map, Value, json};

/// A document as stored: its source and version.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    pub source: Value,
    pub version: u64,
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
}

#[derive(Default)]
struct Inner {
    /// index → id → document.
    documents: BTreeMap<String, BTreeMap<String, Document>>,
    faults: Faults,
    /// `user:password` the server requires, if any.
    credentials: Option<String>,
    /// Requests it did not understand: method, path and why.
    not_understood: Vec<String>,
    /// Bulk requests answered (any status), and their items.
    bulk_requests: usize,
    bulk_items: usize,
    /// Ids it made for items without one.
    next_id: u64,
    /// The last sequence number given.
    seq_no: u64,
}

/// A running test server on a free port; it stops when the test process ends.
pub struct OpenSearch {
    address: SocketAddr,
    inner: Arc<Mutex<Inner>>,
}

impl OpenSearch {
    /// Starts a server that takes any client.
    pub fn start() -> Self {
        Self::start_with(None)
    }

    /// Starts a server that requires HTTP basic authentication with `user` and `password`.
    pub fn start_with_credentials(user: &str, password: &str) -> Self {
        Self::start_with(Some(format!("{user}:{password}")))
    }

    fn start_with(credentials: Option<String>) -> Self {
        let inner = Arc::new(Mutex::new(Inner {
            credentials,
            ..Inner::default()
        }));
        let app = Router::new()
            .route("/", get(info))
            .route("/_cluster/health", get(health))
            .route("/_bulk", post(bulk_any))
            .route("/{index}/_bulk", post(bulk_index))
            .fallback(unknown)
            .with_state(inner.clone());
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
                axum::serve(listener, app).await.unwrap();
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

    /// Stores a document, as if indexed before the test.
    pub fn seed(&self, index: &str, id: &str, source: Value) {
        let mut inner = self.inner.lock().unwrap();
        let documents = inner.documents.entry(index.to_owned()).or_default();
        documents.insert(id.to_owned(), Document { source, version: 1 });
    }

    /// The documents of `index`, by id.
    pub fn documents(&self, index: &str) -> BTreeMap<String, Document> {
        let inner = self.inner.lock().unwrap();
        inner.documents.get(index).cloned().unwrap_or_default()
    }

    /// How many bulk requests and items it answered.
    pub fn bulk_counts(&self) -> (usize, usize) {
        let inner = self.inner.lock().unwrap();
        (inner.bulk_requests, inner.bulk_items)
    }

    /// Fails if any request was not understood.
    pub fn assert_understood(&self) {
        let inner = self.inner.lock().unwrap();
        assert!(
            inner.not_understood.is_empty(),
            "the test OpenSearch did not understand: {:#?}",
            inner.not_understood
        );
    }
}

type Shared = Arc<Mutex<Inner>>;

/// A JSON answer.
fn answer(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [("content-type", "application/json; charset=UTF-8")],
        body.to_string(),
    )
        .into_response()
}

/// An OpenSearch error answer: `{"error": {"type", "reason"}, "status"}`.
fn error(status: u16, kind: &str, reason: &str) -> Response {
    let code = StatusCode::from_u16(status).unwrap();
    let body = json!({
        "error": {"root_cause": [{"type": kind, "reason": reason}], "type": kind, "reason": reason},
        "status": status,
    });
    answer(code, &body)
}

/// Authentication, then an injected whole-request fault, if any.
fn admit(inner: &mut Inner, headers: &HeaderMap) -> Option<Response> {
    if let Some(want) = &inner.credentials {
        let given = headers
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

async fn info(State(inner): State<Shared>, headers: HeaderMap) -> Response {
    if let Some(refused) = admit(&mut inner.lock().unwrap(), &headers) {
        return refused;
    }
    answer(
        StatusCode::OK,
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

async fn health(State(inner): State<Shared>, headers: HeaderMap) -> Response {
    if let Some(refused) = admit(&mut inner.lock().unwrap(), &headers) {
        return refused;
    }
    answer(
        StatusCode::OK,
        &json!({"cluster_name": "sluice-test", "status": "green", "number_of_nodes": 1}),
    )
}

async fn unknown(
    State(inner): State<Shared>,
    method: axum::http::Method,
    uri: axum::http::Uri,
) -> Response {
    let why = format!("{method} {uri}: no such endpoint in the test server");
    inner.lock().unwrap().not_understood.push(why.clone());
    error(400, "illegal_argument_exception", &why)
}

async fn bulk_any(State(inner): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    bulk(&inner, None, &headers, &body)
}

async fn bulk_index(
    State(inner): State<Shared>,
    Path(index): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    bulk(&inner, Some(index), &headers, &body)
}

/// The keys an action line's metadata may have, as `_bulk` documents them.
const ACTION_KEYS: &[&str] = &[
    "_index",
    "_require_alias",
    "_id",
    "routing",
    "version",
    "version_type",
    "if_seq_no",
    "if_primary_term",
    "pipeline",
    "require_alias",
    "retry_on_conflict",
];

/// `_bulk`: the body parsed strictly first (a malformed body is the whole request's 400, and
/// not understood), then each item applied in order.
fn bulk(inner: &Shared, index: Option<String>, headers: &HeaderMap, body: &[u8]) -> Response {
    let mut inner = inner.lock().unwrap();
    if let Some(refused) = admit(&mut inner, headers) {
        return refused;
    }
    let items = match parse_bulk(
        index.as_deref(),
        headers,
        body,
        inner.faults.max_content_length,
    ) {
        Ok(items) => items,
        Err(Refusal::TooLarge) => {
            return error(
                413,
                "content_too_long_exception",
                "the request body is too large",
            );
        }
        Err(Refusal::Malformed(why)) => {
            inner.not_understood.push(format!("_bulk: {why}"));
            return error(400, "illegal_argument_exception", &why);
        }
    };
    inner.bulk_requests += 1;
    inner.bulk_items += items.len();
    let results: Vec<Value> = items
        .into_iter()
        .map(|item| apply(&mut inner, item))
        .collect();
    let errors = results.iter().any(|r| {
        r.as_object()
            .unwrap()
            .values()
            .any(|v| v.get("error").is_some())
    });
    answer(
        StatusCode::OK,
        &json!({"took": 1, "errors": errors, "items": results}),
    )
}

/// One item of a bulk request.
struct Item {
    action: String,
    index: String,
    id: Option<String>,
    source: Option<Value>,
}

enum Refusal {
    TooLarge,
    Malformed(String),
}

fn parse_bulk(
    default_index: Option<&str>,
    headers: &HeaderMap,
    body: &[u8],
    max: Option<usize>,
) -> Result<Vec<Item>, Refusal> {
    let malformed = |why: String| Refusal::Malformed(why);
    let content_type = headers
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
    let body = match headers
        .get("content-encoding")
        .and_then(|v| v.to_str().ok())
    {
        None | Some("identity") => body.to_vec(),
        Some("gzip") => {
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(body)
                .read_to_end(&mut out)
                .map_err(|e| malformed(format!("gzip body: {e}")))?;
            out
        }
        Some(other) => return Err(malformed(format!("Content-Encoding `{other}`"))),
    };
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
            Some(Value::String(id)) if !id.is_empty() => Some(id.clone()),
            Some(other) => {
                return Err(at(&format!(
                    "`_id` must be a non-empty string, got {other}"
                )));
            }
        };
        if name != "index" && name != "create" && id.is_none() && name != "update" {
            return Err(at("a `delete` needs an `_id`"));
        }
        if name == "update" && id.is_none() {
            return Err(at("an `update` needs an `_id`"));
        }
        let source = if name == "delete" {
            None
        } else {
            let (m, line) = lines
                .next()
                .ok_or_else(|| at(&format!("the `{name}` action has no source line")))?;
            let source: Value = serde_json::from_str(line)
                .map_err(|e| malformed(format!("line {}: source: {e}", m + 1)))?;
            if !source.is_object() {
                return Err(malformed(format!("line {}: a source is an object", m + 1)));
            }
            Some(source)
        };
        items.push(Item {
            action: name,
            index,
            id,
            source,
        });
    }
    Ok(items)
}

/// Applies one item; its result as `_bulk` answers it.
fn apply(inner: &mut Inner, item: Item) -> Value {
    let Item {
        action,
        index,
        id,
        source,
    } = item;
    inner.seq_no += 1;
    let seq_no = inner.seq_no;
    let result = |status: u16, id: &str, extra: Value| {
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
    let failed = |status: u16, id: &str, kind: &str, reason: String| {
        result(
            status,
            id,
            json!({"error": {"type": kind, "reason": reason, "index": index}}),
        )
    };
    let id = id.unwrap_or_else(|| {
        inner.next_id += 1;
        format!("auto-{}", inner.next_id)
    });
    if inner.faults.rejected_items > 0 {
        inner.faults.rejected_items -= 1;
        let reason = "rejected execution of coordinating operation".to_owned();
        return failed(429, &id, "es_rejected_execution_exception", reason);
    }
    if let (Some(marker), Some(source)) = (&inner.faults.unmappable, &source)
        && source.to_string().contains(marker.as_str())
    {
        let reason = format!("failed to parse field [{marker}]");
        return failed(400, &id, "mapper_parsing_exception", reason);
    }
    let documents = inner.documents.entry(index.clone()).or_default();
    let existing = documents.get(&id).map(|d| d.version);
    match (action.as_str(), existing) {
        ("create", Some(_)) => {
            let reason = format!("[{id}]: version conflict, document already exists");
            failed(409, &id, "version_conflict_engine_exception", reason)
        }
        ("delete", None) => result(404, &id, json!({"result": "not_found", "_version": 1})),
        ("delete", Some(version)) => {
            documents.remove(&id);
            result(
                200,
                &id,
                json!({"result": "deleted", "_version": version + 1}),
            )
        }
        ("update", None) => {
            let upsert = source.as_ref().and_then(|s| {
                if s.get("doc_as_upsert") == Some(&Value::Bool(true)) {
                    s.get("doc").cloned()
                } else {
                    s.get("upsert").cloned()
                }
            });
            match upsert {
                Some(document) => {
                    let version = 1;
                    documents.insert(
                        id.clone(),
                        Document {
                            source: document,
                            version,
                        },
                    );
                    result(201, &id, json!({"result": "created", "_version": version}))
                }
                None => failed(
                    404,
                    &id,
                    "document_missing_exception",
                    format!("[{id}]: document missing"),
                ),
            }
        }
        ("update", Some(version)) => {
            let Some(Value::Object(doc)) = source.as_ref().and_then(|s| s.get("doc")).cloned()
            else {
                return failed(
                    400,
                    &id,
                    "action_request_validation_exception",
                    "an update needs `doc`".to_owned(),
                );
            };
            let stored = documents.get_mut(&id).unwrap();
            if let Value::Object(map) = &mut stored.source {
                map.extend(doc);
            }
            stored.version = version + 1;
            result(
                200,
                &id,
                json!({"result": "updated", "_version": version + 1}),
            )
        }
        (_, existing) => {
            // `index`, and `create` of a new id.
            let version = existing.map_or(1, |v| v + 1);
            let source = source.expect("parsed with its source");
            documents.insert(id.clone(), Document { source, version });
            let (status, outcome) = if existing.is_some() {
                (200, "updated")
            } else {
                (201, "created")
            };
            result(status, &id, json!({"result": outcome, "_version": version}))
        }
    }
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
}
