//! A push source's listener (the http and OTLP sources, and `/metrics`): serving it so that
//! clients cannot hold it open or make it wait. A source resolves its keys into one
//! [`ListenerSettings`]; [`bind`] binds its port and reads its TLS files, [`Bound::serve`] adds
//! the source's router, and running the [`Server`] serves until shutdown.
//!
//! - With `ssl: true`, every connection is TLS (rustls; the handshake must finish within
//!   `header_read_timeout`). [`Protocols`] says what is spoken: HTTP/1.1 only (the http
//!   source), or HTTP/1.1 and HTTP/2 (the OTLP sources: gRPC needs HTTP/2), told apart by ALPN
//!   with TLS and by the HTTP/2 preface without.
//! - At most `max_connection_count` connections are open at once (a semaphore permit per
//!   connection). Below that, nothing else limits them. When one more arrives, the open
//!   connection that most readily gives its place up is shed to make room (as Envoy's overload
//!   manager closes connections early under pressure, and nginx reuses idle ones when its
//!   `worker_connections` run out): the one that has been sending its request head the longest
//!   (a slowloris trickling its headers), else the one idle the longest between requests. It
//!   closes at once (an idle one after its last answer is written), and the new connection
//!   takes its place; counted in `sluice_connectionsShed{pipeline}`, warned of at most every
//!   10 s. A connection serving a request is never shed. So a client that sends its request
//!   promptly is served however many slow connections are open, and the cap still bounds them.
//! - When no open connection can be shed (each serves a request, or is already closing to make
//!   room for another), one more is answered `503` with `Retry-After: 1` and closed, without
//!   reading its request, and counted in `sluice_connectionsRefused{pipeline}`; so is one whose
//!   place did not come free within `header_read_timeout`.
//! - A request's line and headers must arrive within `header_read_timeout` of the connection
//!   opening, or of the first byte of a following request.
//! - A connection silent for `idle_timeout` while sluice waits for it (a keep-alive connection
//!   between requests, or a request body that stopped arriving) is closed.
//! - On shutdown, connections without a request in flight close at once; requests in flight
//!   are answered, then their connections close.
//!
//! # Layout
//! - this file: [`Protocols`], [`Limits`], [`bind`] → [`Bound`] → [`Server`];
//! - `serve`: the accept loop ([`serve`]): a permit per connection, shedding or refusing at the
//!   limit, shutdown;
//! - `slots`: the open connections under the limit, and which one is shed to make room;
//! - `refuse`: the answer to a connection over the limit, and the rate limit of the warnings;
//! - `connection`: one connection, HTTP/1.1 or HTTP/2, driven until it ends, times out or shuts
//!   down, and its lingering close;
//! - `activity`: what a connection is doing, and so which timeout applies;
//! - `tls`: the certificate and key read at start ([`tls_acceptor`]), and a connection's
//!   plain-or-TLS transport;
//! - `guard`: what a request must pass before its body is taken ([`Guard`], [`too_long`]), and
//!   the health check ([`health`]).

mod activity;
mod connection;
mod guard;
mod refuse;
mod serve;
mod slots;
mod tls;

use std::time::Duration;

use axum::Router;
use sluice_config::ListenerSettings;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

pub use guard::{Guard, health, too_long};
pub use serve::serve;
pub use tls::tls_acceptor;

/// What a listener speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocols {
    /// HTTP/1.1 only.
    Http1,
    /// HTTP/1.1 and HTTP/2 (prior knowledge, or ALPN `h2` with TLS), as gRPC needs.
    Http1And2,
}

/// The connection limits of one listener.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// `max_connection_count`: the most connections open at once; at it, a new connection
    /// takes the place of one without a request in flight (`slots`), or is refused.
    pub max_connections: usize,
    /// `header_read_timeout`: how long a request head may take.
    pub header_read_timeout: Duration,
    /// `idle_timeout`: how long sluice waits for a silent client.
    pub idle_timeout: Duration,
    /// What the listener speaks.
    pub protocols: Protocols,
}

impl Limits {
    /// The limits of a source's listener, speaking `protocols`.
    pub fn new(settings: &ListenerSettings, protocols: Protocols) -> Self {
        Self {
            max_connections: settings.max_connection_count,
            header_read_timeout: settings.header_read_timeout,
            idle_timeout: settings.idle_timeout,
            protocols,
        }
    }
}

/// A push source's port, bound, with its TLS ready: [`Bound::serve`] adds the source's router.
pub struct Bound {
    listener: TcpListener,
    limits: Limits,
    tls: Option<TlsAcceptor>,
}

/// Binds a push source's port on all interfaces (so a port in use fails the start, before any
/// pipeline runs), then reads its TLS files (a file that cannot be used fails the start too).
pub async fn bind(
    settings: &ListenerSettings,
    protocols: Protocols,
) -> Result<Bound, crate::source::SourceError> {
    let port = settings.port;
    let listener = TcpListener::bind(("0.0.0.0", port))
        .await
        .map_err(|error| crate::source::SourceError::Listen { port, error })?;
    let tls = settings
        .tls
        .as_ref()
        .map(|tls| tls_acceptor(tls, protocols))
        .transpose()
        .map_err(crate::source::SourceError::Tls)?;
    Ok(Bound {
        listener,
        limits: Limits::new(settings, protocols),
        tls,
    })
}

impl Bound {
    /// Whether connections are TLS.
    pub fn tls(&self) -> bool {
        self.tls.is_some()
    }

    /// The source, ready to serve `router`; `pipeline` labels its logs and metrics.
    pub fn serve(self, router: Router, pipeline: String) -> Server {
        Server {
            listener: self.listener,
            router,
            limits: self.limits,
            tls: self.tls,
            pipeline,
        }
    }
}

/// A push source, listening: its port, its router, how it serves connections. The http and
/// OTLP sources each build one from their [`ListenerSettings`] ([`bind`], then
/// [`Bound::serve`]); running it serves until `stop`.
pub struct Server {
    listener: TcpListener,
    router: Router,
    limits: Limits,
    tls: Option<TlsAcceptor>,
    pipeline: String,
}

#[async_trait::async_trait]
impl crate::source::Source for Server {
    async fn run(self: Box<Self>, stop: watch::Receiver<bool>) {
        serve(
            self.listener,
            self.router,
            self.limits,
            self.tls,
            self.pipeline,
            stop,
        )
        .await;
    }
}
