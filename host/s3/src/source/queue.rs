//! The queue side of the s3 source: what a queue URL says, the queue readers (each message's
//! object read by [`Reading`]), the deleter (what reached the sinks, up to ten messages a
//! request) and the keeper of a message's visibility.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use aws_sdk_s3::error::DisplayErrorContext;
use aws_sdk_sqs::types::DeleteMessageBatchRequestEntry;
use tokio::sync::{mpsc, watch};

use super::object::{InFlight, ReadError, Reading};
use super::{S3SourceError, S3Stats};
use crate::notification::{self, Notice};

/// What the deleter is asked.
pub(super) enum Delete {
    /// Delete this message (its receipt handle).
    Message(String),
    /// Everything asked before was sent: say so.
    Flush(tokio::sync::oneshot::Sender<()>),
}

/// What the queue URL says: where to send SQS requests, the account and region.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct QueueUrl {
    /// `scheme://host:port` of a queue not on AWS (a local SQS-compatible server); `None`:
    /// AWS's endpoint for the region.
    pub(super) endpoint: Option<String>,
    pub(super) account: Option<String>,
    pub(super) region: Option<String>,
}

impl QueueUrl {
    pub(super) fn parse(url: &str) -> Result<Self, S3SourceError> {
        let error = |reason: &str| S3SourceError::QueueUrl {
            url: url.to_owned(),
            reason: reason.to_owned(),
        };
        let (scheme, rest) = url.split_once("://").ok_or_else(|| {
            error("not a URL; give the queue's URL (`https://sqs.<region>.amazonaws.com/<account>/<name>`), not its ARN")
        })?;
        if scheme != "https" && scheme != "http" {
            return Err(error("not an http(s) URL"));
        }
        let (host, path) = rest
            .split_once('/')
            .ok_or_else(|| error("No path for the SQS queue URL."))?;
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        let [account, _name] = parts[..] else {
            return Err(error("Not enough path parts for the SQS queue URL."));
        };
        let name = host.split(':').next().unwrap_or(host);
        if name.ends_with(".amazonaws.com") || name.ends_with(".amazonaws.com.cn") {
            if account.len() != 12 {
                return Err(error("SQS queue URL has accountId of invalid length."));
            }
            if !account.bytes().all(|b| b.is_ascii_digit()) {
                return Err(error(
                    "SQS queue URL has accountId with invalid characters.",
                ));
            }
            // `sqs.<region>.amazonaws.com[.cn]`: the SDK's endpoint for the region; any other
            // AWS host (a VPC endpoint, `<region>.queue.amazonaws.com`) as it is.
            let parts: Vec<&str> = name.split('.').collect();
            let regional = parts.len() >= 4 && parts[0] == "sqs" && parts[2] == "amazonaws";
            return Ok(Self {
                endpoint: (!regional).then(|| format!("{scheme}://{host}")),
                account: Some(account.to_owned()),
                region: regional.then(|| parts[1].to_owned()),
            });
        }
        Ok(Self {
            endpoint: Some(format!("{scheme}://{host}")),
            account: Some(account.to_owned()).filter(|a| a.len() == 12),
            region: None,
        })
    }
}

/// One queue reader: receives messages and reads the object each announces.
pub(super) struct Queue {
    pub(super) reading: Arc<Reading>,
    pub(super) sqs: aws_sdk_sqs::Client,
    pub(super) url: String,
    pub(super) deletes: mpsc::UnboundedSender<Delete>,
}

impl Queue {
    /// One queue reader: receive, read each announced object, until stopped.
    pub(super) async fn run(self: Arc<Self>) {
        let mut stop = self.reading.stop.clone();
        let mut backoff = Duration::from_secs(1);
        loop {
            if *stop.borrow() {
                return;
            }
            let receive = self
                .sqs
                .receive_message()
                .queue_url(&self.url)
                .max_number_of_messages(self.reading.config.maximum_messages)
                .visibility_timeout(super::seconds(self.reading.config.visibility_timeout))
                .wait_time_seconds(super::seconds(self.reading.config.wait_time))
                .message_system_attribute_names(
                    aws_sdk_sqs::types::MessageSystemAttributeName::ApproximateReceiveCount,
                )
                .send();
            let received = tokio::select! {
                r = receive => r,
                _ = stop.wait_for(|s| *s) => return,
            };
            let messages = match received {
                Ok(out) => {
                    backoff = Duration::from_secs(1);
                    out.messages.unwrap_or_default()
                }
                Err(e) => {
                    self.reading.stats.receive_failed.add(1);
                    tracing::warn!(queue = %self.url, error = %DisplayErrorContext(&e), retry_in = ?backoff,
                        "receiving from the queue failed");
                    tokio::select! {
                        _ = tokio::time::sleep(backoff) => {}
                        _ = stop.wait_for(|s| *s) => return,
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(60));
                    continue;
                }
            };
            self.reading
                .stats
                .messages_received
                .add(messages.len() as u64);
            let any = !messages.is_empty();
            // Each message's object in flight from its receipt: with
            // `visibility_duplication_protection`, the later messages of one receive are kept
            // hidden while the first objects are read.
            let messages: Vec<_> = messages
                .into_iter()
                .filter_map(|m| {
                    let object = self.in_flight(m.receipt_handle.clone()?);
                    Some((m, object))
                })
                .collect();
            for (message, object) in messages {
                if *stop.borrow() {
                    // Not started: it comes back after its visibility timeout.
                    return;
                }
                self.handle(message, object).await;
            }
            if any && !self.reading.config.poll_delay.is_zero() {
                tokio::select! {
                    _ = tokio::time::sleep(self.reading.config.poll_delay) => {}
                    _ = stop.wait_for(|s| *s) => return,
                }
            }
        }
    }

    /// A received message's object in flight: done, its message is deleted; its visibility
    /// is kept (with protection) until the object is done or dropped.
    fn in_flight(&self, receipt: String) -> Arc<InFlight> {
        let deletes = self.deletes.clone();
        let handle = receipt.clone();
        let object = Arc::new(InFlight::new(move |done| {
            if done {
                let _ = deletes.send(Delete::Message(handle.clone()));
            }
        }));
        if let Some(limit) = self.reading.config.protect_visibility {
            // It stops by itself once the object is done or dropped.
            tokio::spawn(keep_hidden(
                self.sqs.clone(),
                self.url.clone(),
                receipt,
                self.reading.config.visibility_timeout,
                limit,
                Arc::downgrade(&object),
                self.reading.stop.clone(),
                self.reading.stats.clone(),
            ));
        }
        object
    }

    /// Reads the object one message announces, or decides it has none.
    async fn handle(&self, message: aws_sdk_sqs::types::Message, object: Arc<InFlight>) {
        let receipt = message.receipt_handle.clone().unwrap_or_default();
        let body = message.body.as_deref().unwrap_or_default();
        let delete = |why: &str| {
            tracing::debug!(queue = %self.url, why, "deleting a message unread");
            let _ = self.deletes.send(Delete::Message(receipt.clone()));
        };
        if let (Some(most), Some(count)) = (
            self.reading.config.max_receive_attempts,
            message
                .attributes
                .as_ref()
                .and_then(|a| {
                    a.get(&aws_sdk_sqs::types::MessageSystemAttributeName::ApproximateReceiveCount)
                })
                .and_then(|c| c.parse::<u32>().ok()),
        ) && count > most
        {
            tracing::warn!(queue = %self.url, received = count, max_receive_attempts = most,
                "deleting a message received more than `max_receive_attempts` times, unread");
            return delete("max_receive_attempts");
        }
        let announced = match notification::parse(body, self.reading.config.from) {
            Ok(Notice::Created(a)) => a,
            Ok(Notice::Skip(why)) => return delete(why),
            Err(reason) => {
                self.reading.stats.messages_failed.add(1);
                let head: String = body.chars().take(200).collect();
                if self.reading.config.delete_unreadable {
                    tracing::warn!(queue = %self.url, %reason, body = %head,
                        "deleting a message that is no S3 notification (`on_error: delete_messages`)");
                    return delete("unreadable");
                }
                tracing::warn!(queue = %self.url, %reason, body = %head,
                    "a message is no S3 notification; it stays in the queue (`on_error: retain_messages`)");
                return;
            }
        };
        if announced.size == 0 {
            self.reading.stats.objects_empty.add(1);
            return delete("an empty object");
        }
        if !self
            .reading
            .config
            .passes_filters(&announced.bucket, &announced.key)
        {
            self.reading.stats.objects_filtered.add(1);
            return delete("filtered out");
        }
        match self.reading.read_object(&announced, &object).await {
            Ok(()) => {}
            Err(ReadError::Stopped) => {
                tracing::info!(bucket = %announced.bucket, key = %announced.key,
                    "stopped while reading an object; its message stays in the queue, and the object is read again (lines the sinks hold are skipped by file and opensearch sinks)");
            }
            Err(ReadError::Failed(reason) | ReadError::Missing(reason)) => {
                tracing::warn!(bucket = %announced.bucket, key = %announced.key, %reason,
                    "reading an object failed; its message stays in the queue and comes back after its visibility timeout");
            }
        }
    }
}

/// Deletes what reached the sinks, up to ten messages a request, until flushed at `join`.
pub(super) async fn delete_loop(
    sqs: aws_sdk_sqs::Client,
    queue_url: String,
    stats: Arc<S3Stats>,
    mut asks: mpsc::UnboundedReceiver<Delete>,
) {
    while let Some(first) = asks.recv().await {
        let mut handles = Vec::new();
        let mut flushed = Vec::new();
        let mut next = Some(first);
        while let Some(ask) = next.take() {
            match ask {
                Delete::Message(h) => handles.push(h),
                Delete::Flush(done) => flushed.push(done),
            }
            if handles.len() < 10 {
                next = asks.try_recv().ok();
            }
        }
        if !handles.is_empty() {
            let entries: Vec<_> = handles
                .iter()
                .enumerate()
                .map(|(i, h)| {
                    DeleteMessageBatchRequestEntry::builder()
                        .id(i.to_string())
                        .receipt_handle(h)
                        .build()
                        .expect("id and receipt handle are set")
                })
                .collect();
            let result = sqs
                .delete_message_batch()
                .queue_url(&queue_url)
                .set_entries(Some(entries))
                .send()
                .await;
            match result {
                Ok(out) => {
                    stats.messages_deleted.add(out.successful().len() as u64);
                    for failed in out.failed() {
                        stats.messages_delete_failed.add(1);
                        tracing::warn!(queue = %queue_url, code = %failed.code(), reason = ?failed.message(),
                            "deleting a message failed; its object is read again when it comes back (the file and opensearch sinks skip the lines they hold)");
                    }
                }
                Err(e) => {
                    stats.messages_delete_failed.add(handles.len() as u64);
                    tracing::warn!(queue = %queue_url, error = %DisplayErrorContext(&e), messages = handles.len(),
                        "deleting messages failed; their objects are read again when they come back (the file and opensearch sinks skip the lines they hold)");
                }
            }
        }
        for done in flushed {
            let _ = done.send(());
        }
    }
}

/// Keeps a message hidden while its object is in flight (`visibility_duplication_protection`):
/// every half visibility timeout it resets the timeout, until the object is done or dropped,
/// the source stops, or `limit` passed.
#[expect(
    clippy::too_many_arguments,
    reason = "one task's inputs, each used once"
)]
pub(super) async fn keep_hidden(
    sqs: aws_sdk_sqs::Client,
    queue_url: String,
    receipt: String,
    visibility: Duration,
    limit: Duration,
    object: Weak<InFlight>,
    mut stop: watch::Receiver<bool>,
    stats: Arc<S3Stats>,
) {
    let every = (visibility / 2)
        .saturating_sub(Duration::from_secs(1))
        .max(Duration::from_secs(1));
    let started = Instant::now();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        match object.upgrade() {
            Some(o) if !o.done() => {}
            _ => return,
        }
        if started.elapsed() + visibility > limit {
            return;
        }
        let result = sqs
            .change_message_visibility()
            .queue_url(&queue_url)
            .receipt_handle(&receipt)
            .visibility_timeout(super::seconds(visibility))
            .send()
            .await;
        match result {
            Ok(_) => stats.visibility_changed.add(1),
            Err(e) => {
                stats.visibility_change_failed.add(1);
                tracing::warn!(queue = %queue_url, error = %DisplayErrorContext(&e),
                    "extending a message's visibility failed; its object may be read twice");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_url_gives_the_endpoint_region_and_account() {
        let aws = QueueUrl::parse("https://sqs.eu-west-1.amazonaws.com/123456789012/q").unwrap();
        assert_eq!(
            aws,
            QueueUrl {
                endpoint: None,
                account: Some("123456789012".to_owned()),
                region: Some("eu-west-1".to_owned())
            }
        );
        let china =
            QueueUrl::parse("https://sqs.cn-north-1.amazonaws.com.cn/123456789012/q").unwrap();
        assert_eq!(
            (china.endpoint, china.region.as_deref()),
            (None, Some("cn-north-1"))
        );
        let vpce = "https://vpce-1a2b-x.sqs.us-east-1.vpce.amazonaws.com/123456789012/q";
        let vpce = QueueUrl::parse(vpce).unwrap();
        assert_eq!(vpce.region, None, "a VPC endpoint is reached as it is");
        assert!(vpce.endpoint.unwrap().starts_with("https://vpce-"));
        let local = QueueUrl::parse("http://127.0.0.1:9324/123456789012/q").unwrap();
        assert_eq!(local.endpoint.as_deref(), Some("http://127.0.0.1:9324"));
        for (url, want) in [
            ("arn:aws:sqs:us-east-1:123456789012:q", "not its ARN"),
            ("https://sqs.us-east-1.amazonaws.com", "No path"),
            (
                "https://sqs.us-east-1.amazonaws.com/q",
                "Not enough path parts",
            ),
            (
                "https://sqs.us-east-1.amazonaws.com/1234/q",
                "invalid length",
            ),
            (
                "https://sqs.us-east-1.amazonaws.com/<account id>/q",
                "invalid",
            ),
        ] {
            let err = QueueUrl::parse(url).unwrap_err().to_string();
            assert!(err.contains(want), "{url}: {err}");
        }
    }
}
