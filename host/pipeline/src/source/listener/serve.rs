//! The accept loop of a listener: each connection takes a permit under
//! `max_connection_count` and a place in `slots`, and is served on its own task
//! (`connection`); at the cap, a connection without a request in flight is shed and its permit
//! handed to the new one at once (`slots`), and only when there is none is the new one refused
//! (`refuse`); on
//! shutdown the loop stops accepting and waits for every connection to close.

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

use super::activity::{Activity, Shed};
use super::connection::connection;
use super::refuse::{MAX_REFUSALS_IN_FLIGHT, Throttle, refusal_response, refuse};
use super::slots::{Open, Slots};
use super::{Limits, Protocols};

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
    let shared = Arc::new(Shared::new(app, limits, tls, pipeline, stop.clone()));
    let mut tasks = JoinSet::new();
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    accept_error(&shared.pipeline, e).await;
                    continue;
                }
            },
            // Reap finished connections so the set does not grow.
            Some(_) = tasks.join_next(), if !tasks.is_empty() => continue,
            () = stopped(&mut stop) => break,
        };
        let place = match shared.permits.clone().try_acquire_owned() {
            Ok(permit) => Some(permit),
            // At the cap: the shed connection's place, at once.
            Err(_) => shared.slots.shed().map(|(class, permit)| {
                shared.shed(class);
                permit
            }),
        };
        if let Some(permit) = place {
            let (activity, open) = shared.open(permit);
            let id = open.id();
            let task = tasks.spawn(shared.clone().serve(stream, activity, open));
            shared.slots.serving(id, task);
        } else if let Some(refusing) = shared.refuse(stream) {
            tasks.spawn(refusing);
        }
    }
    // New connections are refused by the OS from here on.
    drop(listener);
    while tasks.join_next().await.is_some() {}
}

/// What the accept loop and the connection tasks of one listener share.
struct Shared {
    /// The source's routes, cloned into each connection.
    app: Router,
    limits: Limits,
    /// With `ssl: true`, the TLS side of each connection.
    tls: Option<TlsAcceptor>,
    /// Labels the logs and the metrics.
    pipeline: String,
    /// Shutdown, cloned into each connection.
    stop: watch::Receiver<bool>,
    /// A permit per open connection: `max_connection_count` of them.
    permits: Arc<Semaphore>,
    /// The open connections, to choose one to shed at the cap.
    slots: Arc<Slots>,
    /// A permit per refusal lingering: [`MAX_REFUSALS_IN_FLIGHT`].
    refusals: Arc<Semaphore>,
    /// The refusal, written whole to each refused connection.
    refusal: Arc<[u8]>,
    /// `sluice_httpConnections{pipeline}`: open connections.
    open: metrics::Gauge,
    /// `sluice_connectionsRefused{pipeline}`.
    refused: metrics::Counter,
    /// `sluice_connectionsShed{pipeline}`.
    shed: metrics::Counter,
    /// How often refusals are warned of.
    refused_log: Throttle,
    /// How often shed connections are warned of.
    shed_log: Throttle,
}

impl Shared {
    fn new(
        app: Router,
        limits: Limits,
        tls: Option<TlsAcceptor>,
        pipeline: String,
        stop: watch::Receiver<bool>,
    ) -> Self {
        let open = metrics::gauge!("sluice_httpConnections", "pipeline" => pipeline.clone());
        open.set(0.0);
        Self {
            permits: Arc::new(Semaphore::new(
                limits.max_connections.min(Semaphore::MAX_PERMITS),
            )),
            slots: Arc::default(),
            refusals: Arc::new(Semaphore::new(MAX_REFUSALS_IN_FLIGHT)),
            refusal: refusal_response(limits.max_connections).into(),
            open,
            refused: metrics::counter!("sluice_connectionsRefused", "pipeline" => pipeline.clone()),
            shed: metrics::counter!("sluice_connectionsShed", "pipeline" => pipeline.clone()),
            refused_log: Throttle::default(),
            shed_log: Throttle::default(),
            app,
            limits,
            tls,
            pipeline,
            stop,
        }
    }

    /// A new connection's place, for the `permit` it took.
    fn open(&self, permit: OwnedSemaphorePermit) -> (Arc<Activity>, Open) {
        let activity = Arc::new(Activity::new(self.limits.protocols == Protocols::Http1And2));
        let open = Open::new(
            permit,
            self.slots.clone(),
            activity.clone(),
            self.open.clone(),
        );
        (activity, open)
    }

    /// Serves a connection in its place.
    async fn serve(self: Arc<Self>, stream: TcpStream, activity: Arc<Activity>, open: Open) {
        connection(
            stream,
            self.app.clone(),
            self.limits,
            self.tls.clone(),
            self.stop.clone(),
            activity,
            open,
        )
        .await;
    }

    /// Counts and warns of a connection shed (of `class`) to make room for a new one.
    fn shed(&self, class: Shed) {
        self.shed.increment(1);
        tracing::debug!(pipeline = %self.pipeline, ?class, "shedding a connection to make room");
        if let Some(shed) = self.shed_log.count() {
            tracing::warn!(
                pipeline = %self.pipeline,
                max_connection_count = self.limits.max_connections,
                shed,
                "shedding connections: `max_connection_count` is reached, so each new one \
                 closes the oldest without a request in flight, still sending its request head \
                 or else idle (logged at most every 10 s; sluice_connectionsShed counts them all)"
            );
        }
    }

    /// Counts and warns of a refused connection; the lingering refusal to run, or `None` when
    /// too many linger already: then it is answered without waiting (a new socket's send
    /// buffer takes it) and closed at once, at the risk of a reset.
    fn refuse(&self, stream: TcpStream) -> Option<impl Future<Output = ()> + use<>> {
        self.refused.increment(1);
        if let Some(refused) = self.refused_log.count() {
            tracing::warn!(
                pipeline = %self.pipeline,
                max_connection_count = self.limits.max_connections,
                refused,
                "refusing connections: `max_connection_count` is reached and no open connection \
                 can be shed, all serve requests (logged at most every 10 s; \
                 sluice_connectionsRefused counts them all)"
            );
        }
        match self.refusals.clone().try_acquire_owned() {
            Ok(permit) => Some(refuse(stream, self.refusal.clone(), permit)),
            Err(_) => {
                let _ = stream.try_write(&self.refusal);
                None
            }
        }
    }
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
