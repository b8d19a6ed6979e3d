//! The accept loop of a listener: each connection takes a permit under
//! `max_connection_count` and is served on its own task (`connection`); one more is refused
//! (`refuse`); on shutdown the loop stops accepting and waits for every connection to close.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

use super::Limits;
use super::connection::connection;
use super::refuse::{MAX_REFUSALS_IN_FLIGHT, RefusalLog, refusal_response, refuse};

/// Serves `app` on `listener` within `limits` until `stop` turns true (or its sender is
/// dropped), then stops accepting and returns once every connection has closed. `pipeline`
/// labels the logs and the metrics.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    tls: Option<TlsAcceptor>,
    pipeline: String,
    mut stop: watch::Receiver<bool>,
) {
    let permits = Arc::new(Semaphore::new(
        limits.max_connections.min(Semaphore::MAX_PERMITS),
    ));
    let refusals = Arc::new(Semaphore::new(MAX_REFUSALS_IN_FLIGHT));
    let refusal: Arc<[u8]> = refusal_response(limits.max_connections).into();
    let open = metrics::gauge!("sluice_httpConnections", "pipeline" => pipeline.clone());
    open.set(0.0);
    let refused = metrics::counter!("sluice_connectionsRefused", "pipeline" => pipeline.clone());
    let mut log = RefusalLog::default();
    let mut tasks = JoinSet::new();
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    accept_error(&pipeline, e).await;
                    continue;
                }
            },
            // Reap finished connections so the set does not grow.
            Some(_) = tasks.join_next(), if !tasks.is_empty() => continue,
            () = stopped(&mut stop) => break,
        };
        match permits.clone().try_acquire_owned() {
            Ok(permit) => {
                let open = Open::new(permit, open.clone());
                tasks.spawn(connection(
                    stream,
                    app.clone(),
                    limits,
                    tls.clone(),
                    stop.clone(),
                    open,
                ));
            }
            Err(_) => {
                refused.increment(1);
                log.refused(&pipeline, limits.max_connections);
                if let Ok(permit) = refusals.clone().try_acquire_owned() {
                    tasks.spawn(refuse(stream, refusal.clone(), permit));
                } else {
                    // Too many refusals lingering: answer without waiting (a new socket's
                    // send buffer takes it) and close at once, at the risk of a reset.
                    let _ = stream.try_write(&refusal);
                }
            }
        }
    }
    // New connections are refused by the OS from here on.
    drop(listener);
    while tasks.join_next().await.is_some() {}
}

/// Resolves once `stop` is true or its sender is gone. (A unit future: a `watch::Ref` held in
/// `select!`'s output would make the task not `Send`.)
pub(super) async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|stopping| *stopping).await;
}

/// Accept errors on a listening socket are about one connection (gone before it was
/// accepted) or about the process (out of file descriptors): the first are dropped, the second
/// logged, and accepting pauses a moment so the loop does not spin (as hyper 0.14 and axum do).
async fn accept_error(pipeline: &str, e: io::Error) {
    if matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
    ) {
        return;
    }
    tracing::error!(pipeline, error = %e, "http source cannot accept connections; retrying in 1 s");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// An open connection's place under `max_connection_count`, and in the open-connections gauge.
pub(super) struct Open {
    _permit: OwnedSemaphorePermit,
    gauge: metrics::Gauge,
}

impl Open {
    fn new(permit: OwnedSemaphorePermit, gauge: metrics::Gauge) -> Self {
        gauge.increment(1.0);
        Self {
            _permit: permit,
            gauge,
        }
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.gauge.decrement(1.0);
    }
}
