//! The process's own HTTP server (Data Prepper's port 4900): `/metrics` in the Prometheus text
//! format, and `/health`, which answers 200 only once every pipeline is ready (buffers
//! connected, plugins loaded, sources listening) and no worker is stuck in its plugin past the
//! plugin's deadline; 503 while starting, shutting down or stalled, naming the stalled
//! pipelines. With `--metrics-ssl-*` it is HTTPS, with `--metrics-username`/`--metrics-password`
//! both paths ask for HTTP Basic credentials: the http source's TLS and authentication, reused.
//! With `--admin` it also serves the admin endpoint (`crate::admin`), behind the same TLS and
//! credentials (which `--admin` requires).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context as _;
use axum::Router;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use sluice_pipeline::Watchdog;
use sluice_pipeline::source::listener::{self as server, Guard};

/// Whether the pipelines are ready (shared with the run loop), and which workers are stuck.
#[derive(Clone)]
pub(crate) struct Health {
    ready: Arc<AtomicBool>,
    watchdog: Watchdog,
}

impl Health {
    pub(crate) fn new(watchdog: Watchdog) -> Self {
        Self {
            ready: Arc::default(),
            watchdog,
        }
    }

    pub(crate) fn set(&self, ready: bool) {
        self.ready.store(ready, Ordering::SeqCst);
    }
}

/// Installs the Prometheus recorder for the `metrics` facade; call before anything records.
pub(crate) fn install_recorder() -> anyhow::Result<PrometheusHandle> {
    PrometheusBuilder::new()
        .install_recorder()
        .context("installing the metrics recorder")
}

/// How `/metrics` and `/health` are protected.
#[derive(Default)]
pub(crate) struct Protection {
    /// HTTPS with this certificate chain and key.
    pub(crate) tls: Option<sluice_config::http::Tls>,
    /// HTTP Basic with these credentials (the password resolved).
    pub(crate) basic: Option<sluice_config::secret::BasicAuth>,
}

/// Binds `addr` and serves until the process ends; `admin`: the admin endpoint's routes, when
/// enabled. Returns the address bound and whether it is HTTPS.
pub(crate) async fn serve(
    addr: SocketAddr,
    metrics: PrometheusHandle,
    health: Health,
    protection: Protection,
    admin: Option<Router>,
) -> anyhow::Result<(SocketAddr, bool)> {
    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| {
        format!("cannot listen on {addr} for /metrics and /health (--metrics-addr)")
    })?;
    let mut app = Router::new()
        .route("/metrics", get(render))
        .with_state(metrics)
        .merge(
            Router::new()
                .route("/health", get(health_check))
                .with_state(health),
        );
    if let Some(admin) = admin {
        anyhow::ensure!(
            protection.basic.is_some(),
            "--admin needs --metrics-username and --metrics-password: the admin endpoint is never served without credentials"
        );
        app = app.merge(admin);
    }
    if let Some(auth) = &protection.basic {
        let guard = Guard::new(Some(auth), sluice_config::http::Compression::None);
        app = app.layer(axum::middleware::from_fn_with_state(
            Arc::new(guard),
            authenticate,
        ));
    }
    let tls = protection
        .tls
        .as_ref()
        .map(|tls| server::tls_acceptor(tls, server::Protocols::Http1))
        .transpose()
        .map_err(|e| anyhow::anyhow!("--metrics-ssl-*: {e}"))?;
    // The port bound, which `--metrics-addr 127.0.0.1:0` leaves to the system.
    let addr = listener.local_addr().unwrap_or(addr);
    tracing::info!(%addr, tls = tls.is_some(), authentication = protection.basic.is_some(), "serving /metrics and /health");
    let Some(tls) = tls else {
        tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::error!(error = %e, "the metrics server stopped");
            }
        });
        return Ok((addr, false));
    };
    // HTTPS through the http source's server (its connection gauges are labelled
    // `pipeline="metrics"`). Never stopped: it serves until the process ends.
    let limits = server::Limits {
        max_connections: 64,
        header_read_timeout: std::time::Duration::from_secs(10),
        idle_timeout: std::time::Duration::from_secs(75),
        protocols: server::Protocols::Http1,
    };
    let (stop_tx, stop) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        let _never_stopped = stop_tx;
        server::serve(listener, app, limits, Some(tls), "metrics".to_owned(), stop).await;
    });
    Ok((addr, true))
}

async fn authenticate(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    match guard.authenticate(request.headers()) {
        Ok(()) => next.run(request).await,
        Err(refused) => refused,
    }
}

async fn render(State(handle): State<PrometheusHandle>) -> impl IntoResponse {
    (
        [("content-type", "text/plain; version=0.0.4")],
        handle.render(),
    )
}

async fn health_check(State(health): State<Health>) -> impl IntoResponse {
    if !health.ready.load(Ordering::SeqCst) {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "{\"status\":\"not ready\"}\n".to_owned(),
        );
    }
    let stalled = health.watchdog.stalled();
    if stalled.is_empty() {
        // A failing sink does not make the process unready: the buffer keeps taking events
        // (a Kafka buffer for as long as it has room) and the sink catches up once its
        // destination is back. The answer says which, and since when.
        let failing = sluice_pipeline::sink::failing();
        if failing.is_empty() {
            return (StatusCode::OK, "{\"status\":\"ready\"}\n".to_owned());
        }
        let sinks: Vec<serde_json::Value> = failing
            .iter()
            .map(|f| {
                serde_json::json!({
                    "pipeline": f.pipeline,
                    "sink": f.sink,
                    "failing_seconds": f.since.elapsed().as_secs(),
                    "reason": f.reason,
                })
            })
            .collect();
        let body = serde_json::json!({
            "status": "degraded",
            "reason": "a sink's destination is failing; its events wait in the buffer",
            "failing_sinks": sinks,
        });
        return (StatusCode::OK, format!("{body}\n"));
    }
    let stalled: Vec<serde_json::Value> = stalled
        .iter()
        .map(|s| {
            serde_json::json!({
                "pipeline": s.pipeline,
                "worker": s.worker,
                "plugin": s.plugin,
                "kind": s.kind,
                "in_plugin_seconds": (s.busy.as_secs_f64() * 10.0).round() / 10.0,
                "deadline_seconds": s.deadline.as_secs_f64(),
            })
        })
        .collect();
    let body = serde_json::json!({
        "status": "not ready",
        "reason": "a worker has been in a plugin longer than the plugin's deadline",
        "stalled": stalled,
    });
    (StatusCode::SERVICE_UNAVAILABLE, format!("{body}\n"))
}
