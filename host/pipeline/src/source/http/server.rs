//! Serving an http source's listener so that clients cannot hold it open or make it wait.
//!
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

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{Request, Response};
use hyper::body::{Body as _, Frame, Incoming, SizeHint};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tower_service::Service as _;

/// How many refusals may linger at once; past that a connection over the limit is answered
/// and closed at once. Each one takes a task for up to [`LINGER`], so a flood of connections
/// cannot make the refusals themselves unbounded.
const MAX_REFUSALS_IN_FLIGHT: usize = 64;

/// How long a closing connection waits for the client to close its side (see [`linger`]).
/// nginx's `lingering_timeout` is 5 s; 1 s is enough for a client to read a short answer.
const LINGER: Duration = Duration::from_secs(1);

/// Refused connections are warned of at most this often.
const REFUSAL_LOG_EVERY: Duration = Duration::from_secs(10);

/// The connection limits of one listener.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// `max_connection_count`: the most connections open at once.
    pub max_connections: usize,
    /// `header_read_timeout`: how long a request head may take.
    pub header_read_timeout: Duration,
    /// `idle_timeout`: how long sluice waits for a silent client.
    pub idle_timeout: Duration,
}

impl Limits {
    /// The limits of an http source's config.
    pub fn of(config: &sluice_config::HttpSource) -> Self {
        Self {
            max_connections: config.max_connection_count,
            header_read_timeout: config.header_read_timeout,
            idle_timeout: config.idle_timeout,
        }
    }
}

/// Serves `app` on `listener` within `limits` until `stop` turns true (or its sender is
/// dropped), then stops accepting and returns once every connection has closed. `pipeline`
/// labels the logs and the metrics.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
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
                tasks.spawn(connection(stream, app.clone(), limits, stop.clone(), open));
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
    mut stop: watch::Receiver<bool>,
    _open: Open,
) {
    let activity = Arc::new(Activity::new());
    let io = TokioIo::new(Watched {
        stream,
        activity: activity.clone(),
    });
    let service = RouterService {
        app,
        activity: activity.clone(),
    };
    let mut builder = hyper::server::conn::http1::Builder::new();
    // Off (see the module doc). hyper's 30 s default needs a timer, which is not set either;
    // this says so rather than relying on it.
    builder
        .keep_alive(true)
        .header_read_timeout(None::<Duration>);
    let mut conn = builder.serve_connection(io, service);
    let mut stopping = false;
    let served = loop {
        let deadline = activity.deadline(limits);
        if stopping && deadline.is_some_and(|(_, timeout)| timeout == Timeout::HeaderRead) {
            // A request head still coming in: nothing was accepted from it yet.
            return;
        }
        let at = deadline.map_or_else(Instant::now, |(at, _)| at);
        tokio::select! {
            // Without shutdown: `linger` closes the socket once hyper is done with it.
            result = std::future::poll_fn(|cx| conn.poll_without_shutdown(cx)) => break result,
            () = activity.changed.notified() => {}
            () = tokio::time::sleep_until(at), if deadline.is_some() => {
                if let Some((at, timeout)) = activity.deadline(limits)
                    && at <= Instant::now()
                {
                    tracing::debug!(timeout = timeout.key(), "closing an http connection: timed out");
                    return;
                }
            }
            () = stopped(&mut stop), if !stopping => {
                stopping = true;
                // Idle: closed now. A request in flight: answered, then closed.
                Pin::new(&mut conn).graceful_shutdown();
            }
        }
    };
    if let Err(e) = served {
        tracing::debug!(error = %e, "http connection closed on an error");
        return;
    }
    linger(conn.into_parts().io.into_inner().stream).await;
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

/// What a connection is doing, which decides how long it may stay silent.
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Reading a request head, since the connection opened or the head's first byte.
    Head { since: Instant },
    /// Between requests, since the last answer.
    Idle { since: Instant },
    /// Serving a request. `body` is when its body last made progress, while the handler
    /// waits for it; `None` once the body ended or was dropped (the handler then answers
    /// within `request_timeout`).
    Request { body: Option<Instant> },
}

/// The timeout that closes a connection in its current [`Phase`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Timeout {
    HeaderRead,
    Idle,
}

impl Timeout {
    /// The config key, for logs.
    fn key(self) -> &'static str {
        match self {
            Timeout::HeaderRead => "header_read_timeout",
            Timeout::Idle => "idle_timeout",
        }
    }
}

/// One connection's [`Phase`], shared by its socket, service, request body and timer.
struct Activity {
    /// A std mutex: held for a few instructions, never across an `.await`.
    phase: Mutex<Phase>,
    /// Woken when the deadline may have come closer, so the timer re-arms.
    changed: Notify,
}

impl Activity {
    fn new() -> Self {
        Self {
            phase: Mutex::new(Phase::Head {
                since: Instant::now(),
            }),
            changed: Notify::new(),
        }
    }

    fn phase(&self) -> MutexGuard<'_, Phase> {
        // A panic while holding the lock cannot leave a `Phase` half-written.
        self.phase.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// When the connection is closed if nothing changes, and the timeout that closes it.
    fn deadline(&self, limits: Limits) -> Option<(Instant, Timeout)> {
        match *self.phase() {
            Phase::Head { since } => {
                Some((since + limits.header_read_timeout, Timeout::HeaderRead))
            }
            Phase::Idle { since } => Some((since + limits.idle_timeout, Timeout::Idle)),
            Phase::Request { body: Some(at) } => Some((at + limits.idle_timeout, Timeout::Idle)),
            Phase::Request { body: None } => None,
        }
    }

    /// Bytes arrived on the socket. Between requests, they start the next request's head.
    /// Not exact at the edges: a head that arrived with the previous request is read from
    /// hyper's buffer, not the socket, and stays under `idle_timeout`; the rest of a body that
    /// hyper drains after an early answer (413, 404) counts as the next head.
    fn read(&self) {
        let mut phase = self.phase();
        if let Phase::Idle { .. } = *phase {
            *phase = Phase::Head {
                since: Instant::now(),
            };
            drop(phase);
            self.changed.notify_one();
        }
    }

    /// hyper parsed a request head and called the service.
    fn request(&self, has_body: bool) {
        *self.phase() = Phase::Request {
            body: has_body.then(Instant::now),
        };
        self.changed.notify_one();
    }

    /// A frame of the request body arrived. The deadline only moves later, so the timer is not
    /// woken: it finds the new deadline when the old one passes.
    fn body_progress(&self) {
        if let Phase::Request { body: Some(at) } = &mut *self.phase() {
            *at = Instant::now();
        }
    }

    /// The request body ended, or the handler dropped it.
    fn body_done(&self) {
        if let Phase::Request { body } = &mut *self.phase() {
            *body = None;
        }
    }

    /// The service answered; the answer is being written.
    fn answered(&self) {
        *self.phase() = Phase::Idle {
            since: Instant::now(),
        };
        self.changed.notify_one();
    }
}

/// The socket, reporting to the connection's [`Activity`] when bytes arrive.
struct Watched {
    stream: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let poll = Pin::new(&mut self.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.read();
        }
        poll
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// The router as one connection's hyper service, reporting requests to its [`Activity`].
struct RouterService {
    app: Router,
    activity: Arc<Activity>,
}

impl hyper::service::Service<Request<Incoming>> for RouterService {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        self.activity.request(!request.body().is_end_stream());
        let activity = self.activity.clone();
        let request = request.map(|body| {
            Body::new(WatchedBody {
                body,
                activity: activity.clone(),
            })
        });
        // A `Router` is always ready (its `poll_ready` returns `Ready` at once).
        let mut app = self.app.clone();
        Box::pin(async move {
            let response = app.call(request).await;
            activity.answered();
            response
        })
    }
}

/// A request body, reporting to the connection's [`Activity`] as it arrives.
struct WatchedBody {
    body: Incoming,
    activity: Arc<Activity>,
}

impl hyper::body::Body for WatchedBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let poll = Pin::new(&mut self.body).poll_frame(cx);
        match &poll {
            Poll::Ready(Some(Ok(_))) if !self.body.is_end_stream() => {
                self.activity.body_progress();
            }
            Poll::Ready(_) => self.activity.body_done(),
            Poll::Pending => {}
        }
        poll
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

impl Drop for WatchedBody {
    fn drop(&mut self) {
        self.activity.body_done();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        max_connections: 1,
        header_read_timeout: Duration::from_secs(10),
        idle_timeout: Duration::from_secs(75),
    };

    fn timeout(a: &Activity) -> Option<(Duration, Timeout)> {
        a.deadline(LIMITS)
            .map(|(at, t)| (at.saturating_duration_since(Instant::now()), t))
    }

    #[test]
    fn each_phase_has_its_timeout() {
        let a = Activity::new();
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
