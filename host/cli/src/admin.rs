//! The admin endpoint: what `sluice dlq replay` (and the other operator commands) ask of a
//! running sluice. Served on the metrics listener only with `sluice run --admin`, which
//! requires the listener's credentials (and takes its TLS): every request without them is
//! refused (401) before it reaches a route here. Off, `/admin/...` does not exist (404).
//!
//! - `GET /admin/pipelines`: the running pipelines' names.
//! - `POST /admin/pipelines/{pipeline}/dlq/replay`: body `{"select": {...}, "dry_run": bool}`
//!   (`sluice_pipeline::operate::dead_letters::Select`); answers the replay's report.
//! - `GET /admin/pipelines/{pipeline}/tap?stage=deserializer|processor|sink&name=N&limit=N`:
//!   events at that point as they pass, one JSON line each
//!   (`{"stage":...,"name":...,"event":{...}}`), until `limit` of them or the client leaves; a
//!   processor or sink the pipeline lacks gets 404 at once, naming the points it has.
//!
//! The running process writes `<data-dir>/admin.json` (`{"url": ...}`), so the commands find
//! it from the data dir.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use sluice_pipeline::operate::Registry;
use sluice_pipeline::operate::dead_letters::Select;

/// A replay request.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReplayRequest {
    pub(crate) select: Select,
    #[serde(default)]
    pub(crate) dry_run: bool,
}

/// The admin routes over the running pipelines.
pub(crate) fn router(registry: Registry) -> Router {
    Router::new()
        .route("/admin/pipelines", get(pipelines))
        .route("/admin/pipelines/{pipeline}/dlq/replay", post(replay))
        .route("/admin/pipelines/{pipeline}/tap", get(tap))
        .with_state(registry)
}

async fn pipelines(State(registry): State<Registry>) -> Response {
    json(
        StatusCode::OK,
        &serde_json::json!({"pipelines": registry.names()}),
    )
}

async fn replay(
    State(registry): State<Registry>,
    Path(pipeline): Path<String>,
    body: Bytes,
) -> Response {
    let Some(handle) = registry.get(&pipeline) else {
        return error(
            StatusCode::NOT_FOUND,
            format!(
                "no pipeline `{pipeline}` runs here (running: {})",
                registry.names().join(", ")
            ),
        );
    };
    let request: ReplayRequest = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(e) => return error(StatusCode::BAD_REQUEST, format!("the request: {e}")),
    };
    match handle.replay(&request.select, request.dry_run).await {
        Ok(report) => json(StatusCode::OK, &report),
        Err(e @ sluice_pipeline::operate::replay::ReplayError::Select(_)) => {
            error(StatusCode::BAD_REQUEST, e.to_string())
        }
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// Where and how much to tap.
#[derive(serde::Deserialize)]
pub(crate) struct TapQuery {
    stage: Option<String>,
    name: Option<String>,
    limit: Option<u64>,
}

async fn tap(
    State(registry): State<Registry>,
    Path(pipeline): Path<String>,
    axum::extract::RawQuery(raw): axum::extract::RawQuery,
) -> Response {
    use sluice_pipeline::operate::tap::Point;
    let Some(handle) = registry.get(&pipeline) else {
        return error(
            StatusCode::NOT_FOUND,
            format!("no pipeline `{pipeline}` runs here"),
        );
    };
    let query: TapQuery = match query(raw.as_deref().unwrap_or_default()) {
        Ok(q) => q,
        Err(e) => return error(StatusCode::BAD_REQUEST, e),
    };
    let point = match (query.stage.as_deref().unwrap_or("deserializer"), query.name) {
        ("deserializer", None) => Point::Deserializer,
        ("processor", Some(name)) => Point::Processor(name),
        ("sink", Some(name)) => Point::Sink(name),
        (stage, _) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!(
                    "stage `{stage}`: give `deserializer`, or `processor` or `sink` with a `name`"
                ),
            );
        }
    };
    if let Err(there) = handle.tap.check(&point) {
        return error(
            StatusCode::NOT_FOUND,
            format!(
                "pipeline `{pipeline}` has no {point}; tap one of: {}",
                there
                    .iter()
                    .map(Point::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
    }
    let listener = handle.tap.listen(point);
    let limit = query.limit.unwrap_or(u64::MAX);
    // Lines of one tapped batch at a time, until `limit` events went out.
    let stream =
        futures_util::stream::unfold((listener, 0_u64), move |(mut listener, sent)| async move {
            if sent >= limit {
                return None;
            }
            let tapped = listener.next().await?;
            let (stage, name) = match &tapped.point {
                Point::Deserializer => ("deserializer", None),
                Point::Processor(n) => ("processor", Some(n.as_str())),
                Point::Sink(n) => ("sink", Some(n.as_str())),
            };
            let head = serde_json::json!({"stage": stage, "name": name}).to_string();
            let mut out = Vec::new();
            let mut n = sent;
            for event in &tapped.events {
                if n >= limit {
                    break;
                }
                // `{"stage":..,"name":..,"event":<the event>}`
                out.extend_from_slice(&head.as_bytes()[..head.len() - 1]);
                out.extend_from_slice(b",\"event\":");
                out.extend_from_slice(event);
                out.extend_from_slice(b"}\n");
                n += 1;
            }
            Some((
                Ok::<_, std::convert::Infallible>(Bytes::from(out)),
                (listener, n),
            ))
        });
    (
        [("content-type", "application/x-ndjson")],
        axum::body::Body::from_stream(stream),
    )
        .into_response()
}

/// `a=1&b=x` into `T` (numbers read as numbers).
fn query<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, String> {
    let fields: serde_json::Map<String, serde_json::Value> =
        form_urlencoded::parse(text.as_bytes())
            .map(|(key, value)| {
                let value = match value.parse::<u64>() {
                    Ok(n) => serde_json::Value::from(n),
                    Err(_) => serde_json::Value::from(value.into_owned()),
                };
                (key.into_owned(), value)
            })
            .collect();
    serde_json::from_value(serde_json::Value::Object(fields)).map_err(|e| format!("the query: {e}"))
}

fn json(status: StatusCode, value: &impl serde::Serialize) -> Response {
    let body = serde_json::to_string(value).expect("a report serializes");
    (status, [("content-type", "application/json")], body + "\n").into_response()
}

fn error(status: StatusCode, message: String) -> Response {
    json(status, &serde_json::json!({"error": message}))
}

/// What `<data-dir>/admin.json` says: where the running process serves the admin endpoint.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct Location {
    pub(crate) url: String,
}

impl Location {
    pub(crate) fn path(data_dir: &std::path::Path) -> std::path::PathBuf {
        data_dir.join("admin.json")
    }

    /// The URL of a listener bound to `addr`: one on every address is reached on loopback.
    pub(crate) fn of(addr: std::net::SocketAddr, https: bool) -> Self {
        let ip = match addr.ip() {
            ip if ip.is_unspecified() && ip.is_ipv4() => std::net::Ipv4Addr::LOCALHOST.into(),
            ip if ip.is_unspecified() => std::net::Ipv6Addr::LOCALHOST.into(),
            ip => ip,
        };
        let scheme = if https { "https" } else { "http" };
        Self {
            url: format!("{scheme}://{}", std::net::SocketAddr::new(ip, addr.port())),
        }
    }
}
