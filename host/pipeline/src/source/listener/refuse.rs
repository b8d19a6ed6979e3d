//! Refusing a connection over `max_connection_count`: a whole `503` with `Retry-After: 1`,
//! written before its request is read, then a lingering close; and a warning at most every
//! [`REFUSAL_LOG_EVERY`], since a flood of refusals must not flood the log too.

use std::sync::Arc;
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

/// Refused connections are warned of at most this often.
const REFUSAL_LOG_EVERY: Duration = Duration::from_secs(10);

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

/// Warns of refused connections, at most once per [`REFUSAL_LOG_EVERY`].
#[derive(Default)]
pub(super) struct RefusalLog {
    last: Option<Instant>,
    unlogged: u64,
}

impl RefusalLog {
    pub(super) fn refused(&mut self, pipeline: &str, max_connection_count: usize) {
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

#[cfg(test)]
mod tests {
    use super::refusal_response;

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
