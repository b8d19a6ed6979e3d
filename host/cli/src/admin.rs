//! The admin endpoint: what `sluice dlq replay` (and the other operator commands) ask of a
//! running sluice. Served on the metrics listener only with `sluice run --admin`, which
//! requires the listener's credentials (and takes its TLS): every request without them is
//! refused (401) before it reaches a route here. Off, `/admin/...` does not exist (404).
//!
//! - `GET /admin/pipelines`: the running pipelines' names.
//! - `POST /admin/pipelines/{pipeline}/dlq/replay`: body `{"select": {...}, "dry_run": bool}`
//!   (`sluice_pipeline::operate::dead_letters::Select`); answers the replay's report.
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
