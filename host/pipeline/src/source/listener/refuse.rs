//! Refusing a connection over `max_connection_count` (when no open one can be shed to make
//! room, see `slots`): a whole `503` with `Retry-After: 1`, written before its request is read,
//! then a lingering close; and [`Throttle`], which keeps the warnings of refusals and of shed
//! connections to one every [`LOG_EVERY`], since a flood of them must not flood the log too.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::AsyncWriteExt as _;
use tokio::net::TcpStream;
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::Instant;

use super::connection::linger;

/// How many refusals may linger at once; past that a connection over the limit is answered
/// and closed at once. Each one takes a task for up to [`LINGER`], so a flood of connections
/// cannot make the refusals themselves unbounded.
pub(super) const MAX_REFUSALS_IN_FLIGHT: usize = 64;

/// Refused and shed connections are each warned of at most this often (the warnings say
/// "10 s").
const LOG_EVERY: Duration = Duration::from_secs(10);

/// The answer to a connection over the limit, written before its request is read.
pub(super) fn refusal_response(max_connections: usize) -> Vec<u8> {
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
pub(super) async fn refuse(
    mut stream: TcpStream,
    answer: Arc<[u8]>,
    _permit: OwnedSemaphorePermit,
) {
    // A new socket's send buffer is empty, so this does not wait for the client.
    if stream.write_all(&answer).await.is_ok() {
        linger(stream).await;
    }
}

/// Counts events (refused or shed connections) and says when to warn of them: at most once
/// per [`LOG_EVERY`].
#[derive(Default)]
pub(super) struct Throttle {
    /// A std mutex: held for a few instructions, never across an `.await`. `(when the last
    /// warning was, events since)`.
    state: Mutex<(Option<Instant>, u64)>,
}

impl Throttle {
    /// Counts one event; `Some(n)` when a warning is due, `n` the events since the last one.
    pub(super) fn count(&self) -> Option<u64> {
        // A panic while holding the lock cannot leave the pair half-written.
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let (last, unlogged) = &mut *state;
        *unlogged += 1;
        if last.is_some_and(|at| at.elapsed() < LOG_EVERY) {
            return None;
        }
        *last = Some(Instant::now());
        Some(std::mem::take(unlogged))
    }
}

#[cfg(test)]
mod tests {
    use super::{Throttle, refusal_response};

    #[test]
    fn the_refusal_is_a_whole_http_response() {
        let answer = String::from_utf8(refusal_response(4)).unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 503 Service Unavailable\r\n"));
        assert!(head.contains(&format!("\r\nContent-Length: {}", body.len())));
        assert!(body.contains("`max_connection_count` = 4"), "{body}");
        assert_eq!(body.lines().count(), 1);
    }

    #[test]
    fn the_throttle_warns_once_per_interval_and_counts_the_rest() {
        let throttle = Throttle::default();
        assert_eq!(throttle.count(), Some(1), "the first event is warned of");
        for _ in 0..99 {
            assert_eq!(throttle.count(), None);
        }
    }
}
