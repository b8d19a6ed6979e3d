//! Serving a push source's listener (the http and OTLP sources, and `/metrics`) so that
//! clients cannot hold it open or make it wait; `guard` checks a request's credentials and
//! encoding before its body is taken.
//!
//! - With `ssl: true`, every connection is TLS (rustls; the handshake must finish within
//!   `header_read_timeout`). [`Protocols`] says what is spoken: HTTP/1.1 only (the http
//!   source), or HTTP/1.1 and HTTP/2 (the OTLP sources: gRPC needs HTTP/2), told apart by ALPN
//!   with TLS and by the HTTP/2 preface without.
//! - At most `max_connection_count` connections are open at once (a [`Semaphore`] permit per
//!   connection). One more is answered `503` with `Retry-After: 1` and closed, without reading
//!   its request, and counted in `sluice_connectionsRefused{pipeline}`.
//! - A request's line and headers must arrive within `header_read_timeout` of the connection
//!   opening, or of the first byte of a following request.
//! - A connection silent for `idle_timeout` while sluice waits for it (a keep-alive connection
//!   between requests, or a request body that stopped arriving) is closed.
//! - On shutdown, connections without a request in flight close at once; requests in flight
//!   are answered, then their connections close.
//!
//! hyper's own `header_read_timeout` also runs while a keep-alive connection waits for its next
//! request (hyper 1.12 starts it as soon as the previous response is written), so it cannot keep
//! the two timeouts apart. It is off, and each connection has an `Activity` instead: its
//! socket reports the first byte of a request, its service a request starting and being
//! answered, its request body progress and the end; a timer closes the connection when the
//! current phase's deadline passes.

use std::future::Future as _;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse as _, Response};
use hyper_util::rt::TokioIo;
use sluice_config::ListenerSettings;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject as _;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

mod activity;
mod guard;

pub use guard::Guard;

use activity::{Activity, RouterService, Timeout, Watched};

/// How many refusals may linger at once; past that a connection over the limit is answered
/// and closed at once. Each one takes a task for up to [`LINGER`], so a flood of connections
/// cannot make the refusals themselves unbounded.
const MAX_REFUSALS_IN_FLIGHT: usize = 64;

/// How long a closing connection waits for the client to close its side (see [`linger`]).
/// nginx's `lingering_timeout` is 5 s; 1 s is enough for a client to read a short answer.
const LINGER: Duration = Duration::from_secs(1);

/// Refused connections are warned of at most this often.
const REFUSAL_LOG_EVERY: Duration = Duration::from_secs(10);

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
    /// `max_connection_count`: the most connections open at once.
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

/// `GET /health` of a source with `health_check_service`: 200 `{"healthy":true}` while it
/// runs; with `guard`'s credentials unless `open` (`unauthenticated_health_check`).
pub fn health(guard: &Guard, open: bool, headers: &HeaderMap) -> Response {
    if !open && let Err(refused) = guard.authenticate(headers) {
        return refused;
    }
    (
        [(header::CONTENT_TYPE, "application/json")],
        "{\"healthy\":true}\n",
    )
        .into_response()
}

/// The answer to a request whose `Content-Length` is over `max` bytes (the `source`'s
/// `max_request_length`), given before its body is read so the client is not kept sending it.
pub fn too_long(headers: &HeaderMap, max: u64, source: &str) -> Option<Response> {
    let length: u64 = headers
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse()
        .ok()?;
    (length > max).then(|| {
        let message = format!(
            "the body is {length} bytes (Content-Length), over the {source} source's \
             `max_request_length` of {max} bytes\n"
        );
        (
            StatusCode::PAYLOAD_TOO_LARGE,
            [(header::CONNECTION, "close")],
            message,
        )
            .into_response()
    })
}

/// The TLS side of a listener with `ssl: true`: the certificate chain and key, read and
/// checked once, at start (a file that cannot be used fails the start, naming it).
pub fn tls_acceptor(
    tls: &sluice_config::http::Tls,
    protocols: Protocols,
) -> Result<TlsAcceptor, String> {
    let (cert_file, key_file) = (&tls.certificate_file, &tls.key_file);
    let certificates: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert_file)
        .and_then(|certs| certs.collect())
        .map_err(|e| {
            format!(
                "`ssl_certificate_file` {}: not a PEM certificate chain: {e}",
                cert_file.display()
            )
        })?;
    if certificates.is_empty() {
        return Err(format!(
            "`ssl_certificate_file` {}: no certificate in it",
            cert_file.display()
        ));
    }
    let key = PrivateKeyDer::from_pem_file(key_file).map_err(|e| {
        format!(
            "`ssl_key_file` {}: not a PEM private key: {e}",
            key_file.display()
        )
    })?;
    let mut config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certificates, key)
        .map_err(|e| {
            format!(
                "`ssl_certificate_file` {} and `ssl_key_file` {}: {e}",
                cert_file.display(),
                key_file.display()
            )
        })?;
    config.alpn_protocols = match protocols {
        Protocols::Http1 => vec![b"http/1.1".to_vec()],
        Protocols::Http1And2 => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
    };
    Ok(TlsAcceptor::from(Arc::new(config)))
}

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
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|stopping| *stopping).await;
}

/// The answer to a connection over the limit, written before its request is read.
fn refusal_response(max_connections: usize) -> Vec<u8> {
    let body = format!(
        "too many connections: the http source's connection limit `max_connection_count` = \
         {max_connections} is reached; retry later\n"
    );
    format!(
        "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nConnection: close\r\n\
         Content-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Answers a connection over the limit, then closes it.
async fn refuse(mut stream: TcpStream, answer: Arc<[u8]>, _permit: OwnedSemaphorePermit) {
    // A new socket's send buffer is empty, so this does not wait for the client.
    if stream.write_all(&answer).await.is_ok() {
        linger(stream).await;
    }
}

/// Warns of refused connections, at most once per [`REFUSAL_LOG_EVERY`].
#[derive(Default)]
struct RefusalLog {
    last: Option<Instant>,
    unlogged: u64,
}

impl RefusalLog {
    fn refused(&mut self, pipeline: &str, max_connection_count: usize) {
        self.unlogged += 1;
        if self.last.is_some_and(|at| at.elapsed() < REFUSAL_LOG_EVERY) {
            return;
        }
        tracing::warn!(
            pipeline,
            max_connection_count,
            refused = self.unlogged,
            "refusing connections: `max_connection_count` is reached (logged at most every 10 s; \
             sluice_connectionsRefused counts them all)"
        );
        self.last = Some(Instant::now());
        self.unlogged = 0;
    }
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
struct Open {
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

/// Serves one connection until the client closes it, a timeout closes it, or shutdown.
async fn connection(
    stream: TcpStream,
    app: Router,
    limits: Limits,
    tls: Option<TlsAcceptor>,
    stop: watch::Receiver<bool>,
    _open: Open,
) {
    let activity = Arc::new(Activity::new(limits.protocols == Protocols::Http1And2));
    let watched = Watched {
        stream,
        activity: activity.clone(),
    };
    let transport = match tls {
        None => Transport::Plain(watched),
        Some(acceptor) => {
            match tokio::time::timeout(limits.header_read_timeout, acceptor.accept(watched)).await {
                Ok(Ok(tls)) => Transport::Tls(Box::new(tls)),
                Ok(Err(e)) => {
                    tracing::debug!(error = %e, "TLS handshake failed");
                    return;
                }
                Err(_) => {
                    tracing::debug!("TLS handshake did not finish within `header_read_timeout`");
                    return;
                }
            }
        }
    };
    let io = TokioIo::new(transport);
    let service = RouterService {
        app,
        activity: activity.clone(),
    };
    match limits.protocols {
        Protocols::Http1 => {
            let mut builder = hyper::server::conn::http1::Builder::new();
            // Off (see the module doc). hyper's 30 s default needs a timer, which is not set
            // either; this says so rather than relying on it.
            builder
                .keep_alive(true)
                .header_read_timeout(None::<Duration>);
            let mut conn = builder.serve_connection(io, service);
            // Without shutdown: `linger` closes the socket once hyper is done with it.
            let served = drive(
                &mut conn,
                |conn, cx| conn.poll_without_shutdown(cx).map_err(Into::into),
                |conn| Pin::new(conn).graceful_shutdown(),
                &activity,
                limits,
                stop,
            )
            .await;
            if served {
                close(conn.into_parts().io.into_inner()).await;
            }
        }
        Protocols::Http1And2 => {
            let mut builder =
                hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new());
            builder
                .http1()
                .keep_alive(true)
                .header_read_timeout(None::<Duration>);
            // A request is small and answered within `request_timeout`: a few streams at once
            // are plenty, and bound what one connection can hold.
            builder.http2().max_concurrent_streams(MAX_STREAMS);
            let conn = builder.serve_connection(io, service);
            let mut conn = std::pin::pin!(conn);
            drive(
                &mut conn,
                |conn, cx| conn.as_mut().poll(cx),
                |conn| conn.as_mut().graceful_shutdown(),
                &activity,
                limits,
                stop,
            )
            .await;
        }
    }
}

/// The most HTTP/2 streams (requests) in flight on one connection.
const MAX_STREAMS: u32 = 32;

/// Drives `conn` until it ends (`true` when it ended without an error), a timeout closes it,
/// or, on shutdown, its requests in flight are answered.
async fn drive<C>(
    conn: &mut C,
    mut poll: impl FnMut(&mut C, &mut Context<'_>) -> Poll<Result<(), BoxError>>,
    mut graceful_shutdown: impl FnMut(&mut C),
    activity: &Activity,
    limits: Limits,
    mut stop: watch::Receiver<bool>,
) -> bool {
    let mut stopping = false;
    let served = loop {
        let deadline = activity.deadline(limits);
        if stopping && deadline.is_some_and(|(_, timeout)| timeout == Timeout::HeaderRead) {
            // A request head still coming in: nothing was accepted from it yet.
            return false;
        }
        let at = deadline.map_or_else(Instant::now, |(at, _)| at);
        tokio::select! {
            result = std::future::poll_fn(|cx| poll(conn, cx)) => break result,
            () = activity.changed.notified() => {}
            () = tokio::time::sleep_until(at), if deadline.is_some() => {
                if let Some((at, timeout)) = activity.deadline(limits)
                    && at <= Instant::now()
                {
                    tracing::debug!(timeout = timeout.key(), "closing a connection: timed out");
                    return false;
                }
            }
            () = stopped(&mut stop), if !stopping => {
                stopping = true;
                // Idle: closed now. A request in flight: answered, then closed.
                graceful_shutdown(conn);
            }
        }
    };
    if let Err(e) = served {
        tracing::debug!(error = %e, "connection closed on an error");
        return false;
    }
    true
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Closes an HTTP/1.1 connection hyper is done with.
async fn close(transport: Transport) {
    match transport {
        Transport::Plain(watched) => linger(watched.stream).await,
        Transport::Tls(mut tls) => {
            // close_notify first, then the same lingering close of the socket.
            let _ = tokio::time::timeout(LINGER, tls.shutdown()).await;
            linger(tls.into_inner().0.stream).await;
        }
    }
}

/// A connection's transport: plain TCP, or TLS over it.
enum Transport {
    Plain(Watched),
    Tls(Box<tokio_rustls::server::TlsStream<Watched>>),
}

impl AsyncRead for Transport {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Transport::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Transport {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Transport::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Transport::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(s) => Pin::new(s).poll_flush(cx),
            Transport::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Transport::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// Closes a connection that has its last answer: sends FIN, then reads and drops what the
/// client still sends, until it closes too or for at most [`LINGER`]. Closing a socket with
/// unread data resets the connection, and a reset can reach the client before it read the
/// answer: a 413 sent before the body, or a refusal sent before the request.
async fn linger(mut stream: TcpStream) {
    let _ = tokio::time::timeout(LINGER, async {
        stream.shutdown().await?;
        let mut discard = [0; 4096];
        while stream.read(&mut discard).await? > 0 {}
        Ok::<_, io::Error>(())
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        max_connections: 1,
        header_read_timeout: Duration::from_secs(10),
        idle_timeout: Duration::from_secs(75),
        protocols: Protocols::Http1,
    };

    fn timeout(a: &Activity) -> Option<(Duration, Timeout)> {
        a.deadline(LIMITS)
            .map(|(at, t)| (at.saturating_duration_since(Instant::now()), t))
    }

    #[test]
    fn each_phase_has_its_timeout() {
        let a = Activity::new(false);
        let (left, t) = timeout(&a).unwrap();
        assert_eq!(t, Timeout::HeaderRead, "a new connection reads a head");
        assert!(left <= LIMITS.header_read_timeout);

        a.request(true);
        assert_eq!(
            timeout(&a).unwrap().1,
            Timeout::Idle,
            "waiting for the body"
        );
        a.body_progress();
        a.body_done();
        assert_eq!(timeout(&a), None, "the handler is at work");

        a.answered();
        let (left, t) = timeout(&a).unwrap();
        assert_eq!(t, Timeout::Idle, "between requests");
        assert!(left > LIMITS.header_read_timeout);

        a.read();
        assert_eq!(
            timeout(&a).unwrap().1,
            Timeout::HeaderRead,
            "the next head began"
        );
        a.request(false);
        assert_eq!(timeout(&a), None, "no body to wait for");
    }

    #[test]
    fn the_refusal_is_a_whole_http_response() {
        let answer = String::from_utf8(refusal_response(4)).unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 503 Service Unavailable\r\n"));
        assert!(head.contains(&format!("\r\nContent-Length: {}", body.len())));
        assert!(body.contains("`max_connection_count` = 4"), "{body}");
        assert_eq!(body.lines().count(), 1);
    }
}
