//! One connection, from its accept to its close: TLS first if configured, then HTTP/1.1 or
//! HTTP/1.1 and HTTP/2 (hyper), driven until the client closes it, the timeout of its current
//! phase passes (`activity`), it is shed to make room at `max_connection_count` (`slots`), or
//! shutdown; then, for HTTP/1.1, a lingering close so the last answer is read before the socket
//! goes. A connection shed while it sends a request head (or its TLS handshake) is closed by
//! the accept loop, which aborts its task; one shed between requests closes as on shutdown,
//! once hyper has written its last answer (an HTTP/2 one after a `GOAWAY`).
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
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;

use super::activity::{Activity, RouterService, Timeout, Watched};
use super::serve::stopped;
use super::slots::Open;
use super::tls::Transport;
use super::{Limits, Protocols};

/// How long a closing connection waits for the client to close its side (see [`linger`]).
/// nginx's `lingering_timeout` is 5 s; 1 s is enough for a client to read a short answer.
const LINGER: Duration = Duration::from_secs(1);

/// Serves one connection until the client closes it, a timeout closes it, it is shed, or
/// shutdown. `activity` is what it is doing, `_open` its place under `max_connection_count`.
pub(super) async fn connection(
    stream: TcpStream,
    app: Router,
    limits: Limits,
    tls: Option<TlsAcceptor>,
    stop: watch::Receiver<bool>,
    activity: Arc<Activity>,
    _open: Open,
) {
    let watched = Watched {
        stream,
        activity: activity.clone(),
    };
    let transport = match tls {
        None => Transport::Plain(watched),
        Some(acceptor) => {
            // Shed meanwhile, the task is aborted (`slots`).
            let handshake =
                tokio::time::timeout(limits.header_read_timeout, acceptor.accept(watched)).await;
            match handshake {
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
/// or, on shutdown or once shed, its requests in flight are answered.
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
        if !stopping && activity.is_shed() {
            // Shed to make room at `max_connection_count`: closed as on shutdown.
            tracing::debug!("closing a connection: shed at `max_connection_count`");
            stopping = true;
            graceful_shutdown(conn);
        }
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

/// Closes a connection that has its last answer: sends FIN, then reads and drops what the
/// client still sends, until it closes too or for at most [`LINGER`]. Closing a socket with
/// unread data resets the connection, and a reset can reach the client before it read the
/// answer: a 413 sent before the body, or a refusal sent before the request.
pub(super) async fn linger(mut stream: TcpStream) {
    let _ = tokio::time::timeout(LINGER, async {
        stream.shutdown().await?;
        let mut discard = [0; 4096];
        while stream.read(&mut discard).await? > 0 {}
        Ok::<_, io::Error>(())
    })
    .await;
}
