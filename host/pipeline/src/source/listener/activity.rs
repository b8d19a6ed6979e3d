//! What an http connection is doing, and how long it may stay silent in each phase: the
//! [`Activity`] a connection's socket ([`Watched`]), its service ([`RouterService`]) and its
//! request body ([`WatchedBody`]) report to, and the deadline it gives the loop that drives the
//! connection (`connection`). At `max_connection_count` the accept loop reads it too (`slots`):
//! a connection without a request in flight may be shed to make room ([`Activity::shed`]).

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{Request, Response};
use hyper::body::{Body as _, Frame, Incoming, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::time::Instant;
use tower_service::Service as _;

use super::Limits;

/// What a connection is doing, which decides how long it may stay silent.
#[derive(Debug, Clone, Copy)]
pub(super) enum Phase {
    /// Reading a request head, since the connection opened or the head's first byte.
    Head { since: Instant },
    /// Between requests, since the last answer.
    Idle { since: Instant },
    /// Serving `requests` requests (more than one only over HTTP/2). `body` is when a request
    /// body last made progress, while the handler waits for it; `None` once the body ended or
    /// was dropped (the handler then answers within `request_timeout`).
    Request {
        body: Option<Instant>,
        requests: usize,
    },
}

/// The timeout that closes a connection in its current [`Phase`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Timeout {
    HeaderRead,
    Idle,
}

impl Timeout {
    /// The config key, for logs.
    pub(super) fn key(self) -> &'static str {
        match self {
            Timeout::HeaderRead => "header_read_timeout",
            Timeout::Idle => "idle_timeout",
        }
    }
}

/// How readily a connection is shed to make room at `max_connection_count`: lowest first,
/// then the longest in that phase first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Shed {
    /// Still sending a request head (or, with TLS, its handshake): nothing of it was accepted,
    /// and a slowloris stays here.
    Head,
    /// Between requests: its answers are written, but the client may be about to send another.
    Idle,
}

/// What a connection is doing, and whether it was shed.
struct State {
    /// What the connection is doing.
    phase: Phase,
    /// Chosen to make room at `max_connection_count`: the connection closes as on shutdown (at
    /// once without a request in flight; a request that began meanwhile is answered first).
    shed: bool,
}

/// One connection's [`Phase`], shared by its socket, service, request body and timer.
pub(super) struct Activity {
    /// A std mutex: held for a few instructions, never across an `.await`.
    state: Mutex<State>,
    /// HTTP/2 may be spoken: bytes between requests (pings, window updates, settings) do not
    /// start a request head, so an idle connection is closed after `idle_timeout`.
    multiplexed: bool,
    /// Woken when the deadline may have come closer, so the timer re-arms.
    pub(super) changed: Notify,
}

impl Activity {
    pub(super) fn new(multiplexed: bool) -> Self {
        Self {
            state: Mutex::new(State {
                phase: Phase::Head {
                    since: Instant::now(),
                },
                shed: false,
            }),
            multiplexed,
            changed: Notify::new(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave a `State` half-written.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How readily the connection may be shed, and since when it is in that phase; `None` while
    /// it serves a request (never shed) or once it was shed.
    pub(super) fn sheddable(&self) -> Option<(Shed, Instant)> {
        let state = self.state();
        match state.phase {
            _ if state.shed => None,
            Phase::Head { since } => Some((Shed::Head, since)),
            Phase::Idle { since } => Some((Shed::Idle, since)),
            Phase::Request { .. } => None,
        }
    }

    /// Sheds the connection if it is still [`sheddable`](Self::sheddable) (its phase may have
    /// changed since it was chosen); wakes the loop that drives it to close it.
    pub(super) fn shed(&self) -> bool {
        let mut state = self.state();
        if matches!(state.phase, Phase::Request { .. }) || state.shed {
            return false;
        }
        state.shed = true;
        drop(state);
        self.changed.notify_one();
        true
    }

    /// Whether the connection was shed.
    pub(super) fn is_shed(&self) -> bool {
        self.state().shed
    }

    /// When the connection is closed if nothing changes, and the timeout that closes it.
    pub(super) fn deadline(&self, limits: Limits) -> Option<(Instant, Timeout)> {
        match self.state().phase {
            Phase::Head { since } => {
                Some((since + limits.header_read_timeout, Timeout::HeaderRead))
            }
            Phase::Idle { since } => Some((since + limits.idle_timeout, Timeout::Idle)),
            Phase::Request { body: Some(at), .. } => {
                Some((at + limits.idle_timeout, Timeout::Idle))
            }
            Phase::Request { body: None, .. } => None,
        }
    }

    /// Bytes arrived on the socket. Between requests, they start the next request's head.
    /// Not exact at the edges: a head that arrived with the previous request is read from
    /// hyper's buffer, not the socket, and stays under `idle_timeout`; the rest of a body that
    /// hyper drains after an early answer (413, 404) counts as the next head.
    pub(super) fn read(&self) {
        if self.multiplexed {
            return;
        }
        let mut state = self.state();
        if let Phase::Idle { .. } = state.phase {
            state.phase = Phase::Head {
                since: Instant::now(),
            };
            drop(state);
            self.changed.notify_one();
        }
    }

    /// hyper parsed a request head and called the service.
    pub(super) fn request(&self, has_body: bool) {
        let mut state = self.state();
        let body = has_body.then(Instant::now);
        state.phase = match state.phase {
            Phase::Request {
                body: other,
                requests,
            } => Phase::Request {
                body: body.or(other),
                requests: requests + 1,
            },
            _ => Phase::Request { body, requests: 1 },
        };
        drop(state);
        self.changed.notify_one();
    }

    /// A frame of the request body arrived. The deadline only moves later, so the timer is not
    /// woken: it finds the new deadline when the old one passes.
    pub(super) fn body_progress(&self) {
        if let Phase::Request { body: Some(at), .. } = &mut self.state().phase {
            *at = Instant::now();
        }
    }

    /// The request body ended, or the handler dropped it.
    pub(super) fn body_done(&self) {
        if let Phase::Request { body, .. } = &mut self.state().phase {
            *body = None;
        }
    }

    /// The service answered; the answer is being written.
    pub(super) fn answered(&self) {
        let mut state = self.state();
        state.phase = match state.phase {
            Phase::Request { body, requests } if requests > 1 => Phase::Request {
                body,
                requests: requests - 1,
            },
            _ => Phase::Idle {
                since: Instant::now(),
            },
        };
        drop(state);
        self.changed.notify_one();
    }
}

/// The socket, reporting to the connection's [`Activity`] when bytes arrive.
pub(super) struct Watched {
    pub(super) stream: TcpStream,
    pub(super) activity: Arc<Activity>,
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
pub(super) struct RouterService {
    pub(super) app: Router,
    pub(super) activity: Arc<Activity>,
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
pub(super) struct WatchedBody {
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
    use std::time::Duration;

    use tokio::time::Instant;

    use super::{Activity, Timeout};
    use crate::source::listener::{Limits, Protocols};

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
}
