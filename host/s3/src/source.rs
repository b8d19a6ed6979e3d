//! The `s3` source's reader: receives the S3 event notifications of an SQS queue, streams
//! each announced object (gzip undone on the way), and hands its lines to the pipeline in
//! batches through one bounded channel, as the pipeline's read side in place of a buffer.
//!
//! # Positions, and when a message is deleted
//! Each line is a record at position `{topic: "s3://<bucket>/<key>", partition: <hash of the
//! object's ETag>, offset: <line number from 1>}`: the same line of the same object has the
//! same position on every read, and a rewritten object (a new ETag) new ones. A file or
//! opensearch sink holds each position once, so an object read again after a crash or a
//! redelivery adds no line twice. An object's message is deleted once it was read to its end
//! and every batch of its lines was acknowledged (the sinks took them); until then it stays
//! in the queue and comes back after its visibility timeout (extended while reading with
//! `visibility_duplication_protection`). A shutdown, a kill or a failed read deletes nothing.
//!
//! # Memory
//! An object is never held whole: the body is read chunk by chunk, and a reader waits for room
//! in the channel (at most `queued` batches of `batch_size` lines) before it reads on, which
//! stops the download (TCP backpressure).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant, SystemTime};

use aws_sdk_s3::error::{DisplayErrorContext, ProvideErrorMetadata};
use aws_sdk_sqs::types::DeleteMessageBatchRequestEntry;
use sluice_buffer::{
    Acknowledgement, Batch, Buffer, BufferReader, BufferWriter, Count, Position, Read, Record,
    Unreadable, WriteError,
};
use tokio::sync::{mpsc, watch};

use crate::lines::{Inflate, LINE_LIMIT, Piece, Splitter};
use crate::notification::{self, Announced, Notice};

/// How an object's bytes are compressed: `compression`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    /// By the key: `.gz` is gzip.
    Automatic,
}

/// How lines become records: the codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lines {
    /// Every line.
    Newline,
    /// Blank lines skipped, and `{}` unless kept.
    Ndjson { include_empty_objects: bool },
}

/// One s3 source's settings.
#[derive(Debug, Clone)]
pub struct S3SourceConfig {
    pub pipeline: String,
    pub queue_url: String,
    /// The region (else the queue URL's, else the AWS chain's, else `us-east-1`).
    pub region: Option<String>,
    /// An S3-compatible store, path-style.
    pub endpoint: Option<String>,
    /// A role to assume for S3 and SQS (`aws.sts_role_arn`), with its external id and the
    /// headers of the `AssumeRole` request; else the AWS chain's credentials.
    pub sts_role_arn: Option<String>,
    pub sts_external_id: Option<String>,
    pub sts_header_overrides: BTreeMap<String, String>,
    pub from: notification::From,
    pub compression: Compression,
    pub lines: Lines,
    pub skip_lines: usize,
    /// The line after the skipped ones is each other line's header (`header_destination`):
    /// it goes in each record's `headers` as [`HEADER`].
    pub header: bool,
    pub workers: usize,
    pub maximum_messages: i32,
    pub visibility_timeout: Duration,
    /// Extend the visibility while an object is in flight, up to this long in all.
    pub protect_visibility: Option<Duration>,
    pub wait_time: Duration,
    pub poll_delay: Duration,
    pub max_receive_attempts: Option<u32>,
    /// Delete messages that are no S3 notification (`on_error: delete_messages`).
    pub delete_unreadable: bool,
    /// Check each bucket's owner (`GetObject`'s expected bucket owner).
    pub check_owner: bool,
    pub bucket_owners: BTreeMap<String, String>,
    pub default_bucket_owner: Option<String>,
    /// Per bucket: the key prefixes to read (any, when empty) and suffixes to skip.
    pub filters: BTreeMap<String, (Vec<String>, Vec<String>)>,
    /// Lines per batch.
    pub batch_size: usize,
    /// Batches waiting for the workers, at most.
    pub queued: usize,
    pub drain_timeout: Duration,
}

/// The name under which a line's header travels in its record's `headers`.
pub const HEADER: &str = "s3_header";

/// Why the source could not start.
#[derive(Debug, thiserror::Error)]
pub enum S3SourceError {
    #[error("sqs.queue_url `{url}`: {reason}")]
    QueueUrl { url: String, reason: String },
    #[error("sqs.queue_url `{url}`: the queue cannot be reached: {reason}")]
    Queue { url: String, reason: String },
    #[error("aws: {0}")]
    Role(#[from] sluice_sigv4::Error),
}

/// Counts with Data Prepper's names: `s3_<name>{pipeline}` (Data Prepper's
/// `<pipeline>.s3.<name>`).
pub struct S3Stats {
    pub messages_received: Count,
    pub messages_deleted: Count,
    pub messages_failed: Count,
    pub messages_delete_failed: Count,
    pub receive_failed: Count,
    pub objects_empty: Count,
    pub objects_filtered: Count,
    pub objects_succeeded: Count,
    pub objects_failed: Count,
    pub objects_not_found: Count,
    pub objects_access_denied: Count,
    pub visibility_changed: Count,
    pub visibility_change_failed: Count,
    /// sluice's: lines read into records (`sluice top`).
    pub records_read: Count,
    object_size: metrics::Histogram,
    processed_bytes: metrics::Histogram,
    object_events: metrics::Histogram,
    read_time: metrics::Histogram,
}

impl S3Stats {
    pub fn new(pipeline: &str) -> Self {
        let count = |name: &str| Count::new(&format!("s3_{name}"), pipeline);
        let histogram = |name: &str| metrics::histogram!(format!("s3_{name}"), "pipeline" => pipeline.to_owned());
        Self {
            messages_received: count("sqsMessagesReceived"),
            messages_deleted: count("sqsMessagesDeleted"),
            messages_failed: count("sqsMessagesFailed"),
            messages_delete_failed: count("sqsMessagesDeleteFailed"),
            receive_failed: count("sqsReceiveMessageFailed"),
            objects_empty: count("s3ObjectsEmpty"),
            objects_filtered: count("s3ObjectsFiltered"),
            objects_succeeded: count("s3ObjectsSucceeded"),
            objects_failed: count("s3ObjectsFailed"),
            objects_not_found: count("s3ObjectsNotFound"),
            objects_access_denied: count("s3ObjectsAccessDenied"),
            visibility_changed: count("sqsVisibilityTimeoutChangedCount"),
            visibility_change_failed: count("sqsVisibilityTimeoutChangeFailedCount"),
            records_read: count("recordsRead"),
            object_size: histogram("s3ObjectSizeBytes"),
            processed_bytes: histogram("s3ObjectProcessedBytes"),
            object_events: histogram("s3ObjectsEvents"),
            read_time: histogram("s3ObjectReadTimeElapsed"),
        }
    }
}

/// The reader of one s3 source.
#[derive(Clone)]
pub struct S3Source {
    inner: Arc<Inner>,
}

struct Inner {
    config: S3SourceConfig,
    stats: Arc<S3Stats>,
    stop: watch::Sender<bool>,
    batches: Arc<tokio::sync::Mutex<mpsc::Receiver<Batch>>>,
    workers: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    deletes: mpsc::UnboundedSender<Delete>,
    deleter: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// What the deleter is asked.
enum Delete {
    /// Delete this message (its receipt handle).
    Message(String),
    /// Everything asked before was sent: say so.
    Flush(tokio::sync::oneshot::Sender<()>),
}

/// Everything a queue reader needs.
struct Reading {
    config: S3SourceConfig,
    stats: Arc<S3Stats>,
    sqs: aws_sdk_sqs::Client,
    s3: aws_sdk_s3::Client,
    /// The queue URL's account: the default expected bucket owner.
    account: Option<String>,
    batches: mpsc::Sender<Batch>,
    deletes: mpsc::UnboundedSender<Delete>,
    stop: watch::Receiver<bool>,
    /// Each read of an object gets the next (the `epoch` of its [`Read`]s).
    reads: Arc<AtomicU64>,
}

impl S3Source {
    /// Checks that the queue answers, then starts `workers` queue readers and the deleter.
    pub async fn connect(config: S3SourceConfig) -> Result<Self, S3SourceError> {
        let url = QueueUrl::parse(&config.queue_url)?;
        let region = config
            .region
            .clone()
            .or_else(|| url.region.clone())
            .unwrap_or_else(|| "us-east-1".to_owned());
        let mut shared = crate::aws_defaults(&region, None).await;
        if config.sts_role_arn.is_some() {
            let role = sluice_sigv4::Settings {
                region: region.clone(),
                service: sluice_sigv4::Service::Other("s3"),
                sts_role_arn: config.sts_role_arn.clone(),
                sts_external_id: config.sts_external_id.clone(),
                sts_header_overrides: config.sts_header_overrides.clone(),
            };
            let provider = sluice_sigv4::credentials_provider(&role).await?;
            shared = shared.into_builder().credentials_provider(provider).build();
        }
        // The SDK's standard retries (3 attempts): a delete lost to a blip means an object
        // read again.
        let retry = aws_config::retry::RetryConfig::standard();
        let mut sqs = aws_sdk_sqs::config::Builder::from(&shared).retry_config(retry.clone());
        if let Some(endpoint) = &url.endpoint {
            sqs = sqs.endpoint_url(endpoint);
        }
        let sqs = aws_sdk_sqs::Client::from_conf(sqs.build());
        let s3 = crate::s3_client(&shared, config.endpoint.as_deref());
        let s3 =
            aws_sdk_s3::Client::from_conf(s3.config().to_builder().retry_config(retry).build());
        sqs.get_queue_attributes()
            .queue_url(&config.queue_url)
            .attribute_names(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages)
            .send()
            .await
            .map_err(|e| S3SourceError::Queue {
                url: config.queue_url.clone(),
                reason: DisplayErrorContext(&e).to_string(),
            })?;
        let stats = Arc::new(S3Stats::new(&config.pipeline));
        let (stop, stopped) = watch::channel(false);
        let (tx, rx) = mpsc::channel(config.queued.max(1));
        // Unbounded, yet bounded by what is in flight: one entry per message whose object
        // was read, and messages are received only while the channel of batches has room.
        let (deletes, deletes_rx) = mpsc::unbounded_channel();
        let deleter = tokio::spawn(delete_loop(
            sqs.clone(),
            config.queue_url.clone(),
            stats.clone(),
            deletes_rx,
        ));
        let reading = Arc::new(Reading {
            config: config.clone(),
            stats: stats.clone(),
            sqs,
            s3,
            account: url.account,
            batches: tx,
            deletes: deletes.clone(),
            stop: stopped,
            reads: Arc::new(AtomicU64::new(0)),
        });
        let workers = (0..config.workers)
            .map(|_| tokio::spawn(reading.clone().run()))
            .collect();
        tracing::info!(pipeline = %config.pipeline, queue = %config.queue_url, workers = config.workers,
            "s3 source reading the objects the queue announces");
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                stats,
                stop,
                batches: Arc::new(tokio::sync::Mutex::new(rx)),
                workers: Mutex::new(workers),
                deletes,
                deleter: Mutex::new(Some(deleter)),
            }),
        })
    }
}

/// What the queue URL says: where to send SQS requests, the account and region.
#[derive(Debug, PartialEq, Eq)]
struct QueueUrl {
    /// `scheme://host:port` of a queue not on AWS (a local SQS-compatible server); `None`:
    /// AWS's endpoint for the region.
    endpoint: Option<String>,
    account: Option<String>,
    region: Option<String>,
}

impl QueueUrl {
    fn parse(url: &str) -> Result<Self, S3SourceError> {
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
        if name.ends_with(".amazonaws.com") {
            if account.len() != 12 {
                return Err(error("SQS queue URL has accountId of invalid length."));
            }
            if !account.bytes().all(|b| b.is_ascii_digit()) {
                return Err(error(
                    "SQS queue URL has accountId with invalid characters.",
                ));
            }
            // sqs.<region>.amazonaws.com
            let region = name.split('.').nth(1).map(str::to_owned);
            return Ok(Self {
                endpoint: None,
                account: Some(account.to_owned()),
                region,
            });
        }
        Ok(Self {
            endpoint: Some(format!("{scheme}://{host}")),
            account: Some(account.to_owned()).filter(|a| a.len() == 12),
            region: None,
        })
    }
}

/// Deletes what reached the sinks, up to ten messages a request, until flushed at `join`.
async fn delete_loop(
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

/// One object in flight: its message is deleted once it was read to the end and every batch
/// of its lines was acknowledged. Dropped otherwise (a batch dropped unacknowledged, a failed
/// or stopped read): the message stays and comes back.
struct InFlight {
    state: Mutex<(usize, bool)>,
    receipt: String,
    deletes: mpsc::UnboundedSender<Delete>,
}

impl InFlight {
    /// One more batch out.
    fn sent(&self) {
        self.state.lock().expect("not poisoned").0 += 1;
    }

    /// A batch was acknowledged.
    fn acknowledged(&self) {
        let mut s = self.state.lock().expect("not poisoned");
        s.0 -= 1;
        if s.0 == 0 && s.1 {
            let _ = self.deletes.send(Delete::Message(self.receipt.clone()));
        }
    }

    /// The object was read to its end.
    fn read_whole(&self) {
        let mut s = self.state.lock().expect("not poisoned");
        s.1 = true;
        if s.0 == 0 {
            let _ = self.deletes.send(Delete::Message(self.receipt.clone()));
        }
    }

    fn done(&self) -> bool {
        let s = self.state.lock().expect("not poisoned");
        s.1 && s.0 == 0
    }
}

/// Why an object was not read whole.
#[derive(Debug)]
enum ReadError {
    /// Shutting down.
    Stopped,
    /// The store refused or failed (the message stays for another try).
    Failed(String),
}

impl Reading {
    /// One queue reader: receive, read each announced object, until stopped.
    async fn run(self: Arc<Self>) {
        let mut stop = self.stop.clone();
        let mut backoff = Duration::from_secs(1);
        loop {
            if *stop.borrow() {
                return;
            }
            let receive = self
                .sqs
                .receive_message()
                .queue_url(&self.config.queue_url)
                .max_number_of_messages(self.config.maximum_messages)
                .visibility_timeout(self.config.visibility_timeout.as_secs() as i32)
                .wait_time_seconds(self.config.wait_time.as_secs() as i32)
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
                    self.stats.receive_failed.add(1);
                    tracing::warn!(queue = %self.config.queue_url, error = %DisplayErrorContext(&e), retry_in = ?backoff,
                        "receiving from the queue failed");
                    tokio::select! {
                        _ = tokio::time::sleep(backoff) => {}
                        _ = stop.wait_for(|s| *s) => return,
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(60));
                    continue;
                }
            };
            self.stats.messages_received.add(messages.len() as u64);
            let any = !messages.is_empty();
            for message in messages {
                if *stop.borrow() {
                    // Not started: it comes back after its visibility timeout.
                    return;
                }
                self.handle(message).await;
            }
            if any && !self.config.poll_delay.is_zero() {
                tokio::select! {
                    _ = tokio::time::sleep(self.config.poll_delay) => {}
                    _ = stop.wait_for(|s| *s) => return,
                }
            }
        }
    }

    /// Reads the object one message announces, or decides it has none.
    async fn handle(&self, message: aws_sdk_sqs::types::Message) {
        let Some(receipt) = message.receipt_handle.clone() else {
            return;
        };
        let body = message.body.as_deref().unwrap_or_default();
        let delete = |why: &str| {
            tracing::debug!(queue = %self.config.queue_url, why, "deleting a message unread");
            let _ = self.deletes.send(Delete::Message(receipt.clone()));
        };
        if let (Some(most), Some(count)) = (
            self.config.max_receive_attempts,
            message
                .attributes
                .as_ref()
                .and_then(|a| {
                    a.get(&aws_sdk_sqs::types::MessageSystemAttributeName::ApproximateReceiveCount)
                })
                .and_then(|c| c.parse::<u32>().ok()),
        ) && count > most
        {
            tracing::warn!(queue = %self.config.queue_url, received = count, max_receive_attempts = most,
                "deleting a message received more than `max_receive_attempts` times, unread");
            return delete("max_receive_attempts");
        }
        let announced = match notification::parse(body, self.config.from) {
            Ok(Notice::Created(a)) => a,
            Ok(Notice::Skip(why)) => return delete(why),
            Err(reason) => {
                self.stats.messages_failed.add(1);
                let head: String = body.chars().take(200).collect();
                if self.config.delete_unreadable {
                    tracing::warn!(queue = %self.config.queue_url, %reason, body = %head,
                        "deleting a message that is no S3 notification (`on_error: delete_messages`)");
                    return delete("unreadable");
                }
                tracing::warn!(queue = %self.config.queue_url, %reason, body = %head,
                    "a message is no S3 notification; it stays in the queue (`on_error: retain_messages`)");
                return;
            }
        };
        if announced.size == 0 {
            self.stats.objects_empty.add(1);
            return delete("an empty object");
        }
        if let Some((include, exclude)) = self.config.filters.get(&announced.bucket) {
            let key = &announced.key;
            let passes = (include.is_empty()
                || include.iter().any(|p| key.starts_with(p.as_str())))
                && !exclude.iter().any(|s| key.ends_with(s.as_str()));
            if !passes {
                self.stats.objects_filtered.add(1);
                return delete("filtered out");
            }
        }
        let object = Arc::new(InFlight {
            state: Mutex::new((0, false)),
            receipt: receipt.clone(),
            deletes: self.deletes.clone(),
        });
        let keeper = self.config.protect_visibility.map(|limit| {
            tokio::spawn(keep_hidden(
                self.sqs.clone(),
                self.config.queue_url.clone(),
                receipt.clone(),
                self.config.visibility_timeout,
                limit,
                Arc::downgrade(&object),
                self.stop.clone(),
                self.stats.clone(),
            ))
        });
        let started = Instant::now();
        match self.read(&announced, &object).await {
            Ok((bytes, lines)) => {
                self.stats.objects_succeeded.add(1);
                self.stats.object_size.record(bytes as f64);
                self.stats.processed_bytes.record(bytes as f64);
                self.stats.object_events.record(lines as f64);
                self.stats.read_time.record(started.elapsed().as_secs_f64());
                tracing::debug!(bucket = %announced.bucket, key = %announced.key, bytes, lines, "object read");
                object.read_whole();
            }
            Err(ReadError::Stopped) => {
                tracing::info!(bucket = %announced.bucket, key = %announced.key,
                    "stopped while reading an object; its message stays in the queue, and the object is read again (lines the sinks hold are skipped by file and opensearch sinks)");
            }
            Err(ReadError::Failed(reason)) => {
                self.stats.objects_failed.add(1);
                tracing::warn!(bucket = %announced.bucket, key = %announced.key, %reason,
                    "reading an object failed; its message stays in the queue and comes back after its visibility timeout");
            }
        }
        // The keeper stops by itself once the object is done or dropped.
        drop(keeper);
    }

    /// The owner the bucket must have, if checked.
    fn expected_owner(&self, bucket: &str) -> Option<String> {
        if !self.config.check_owner {
            return None;
        }
        self.config
            .bucket_owners
            .get(bucket)
            .or(self.config.default_bucket_owner.as_ref())
            .or(self.account.as_ref())
            .cloned()
    }

    /// Streams the object, sending its lines in batches; returns its bytes and lines.
    async fn read(&self, a: &Announced, object: &Arc<InFlight>) -> Result<(u64, i64), ReadError> {
        let gzip = match self.config.compression {
            Compression::Gzip => true,
            Compression::None => false,
            Compression::Automatic => a.key.ends_with(".gz"),
        };
        let mut stop = self.stop.clone();
        let mut body = None;
        let mut etag = None;
        let mut got: u64 = 0;
        let mut attempts = 0;
        let mut inflate = Inflate::new(gzip);
        let mut splitter = Splitter::default();
        let mut lines = Batcher::new(self, a, object);
        loop {
            if body.is_none() {
                let get = self.get(a, got, etag.as_deref());
                let out = tokio::select! {
                    out = get => out?,
                    _ = stop.wait_for(|s| *s) => return Err(ReadError::Stopped),
                };
                if etag.is_none() {
                    lines.partition = partition(out.e_tag().unwrap_or_default());
                    etag = out.e_tag().map(str::to_owned);
                }
                body = Some(out.body);
            }
            let stream = body.as_mut().expect("set above");
            let chunk = tokio::select! {
                c = stream.next() => c,
                _ = stop.wait_for(|s| *s) => return Err(ReadError::Stopped),
            };
            match chunk {
                None => break,
                Some(Ok(chunk)) => {
                    got += chunk.len() as u64;
                    let mut pieces = Vec::new();
                    let fed = inflate.feed(&chunk, &mut |text| {
                        splitter.feed(text, &mut |p| pieces.push(owned(p)));
                    });
                    if let Err(e) = fed {
                        return Err(ReadError::Failed(format!("inflating gzip: {e}")));
                    }
                    for p in pieces {
                        lines.take(p).await?;
                    }
                }
                Some(Err(e)) => {
                    attempts += 1;
                    if attempts > 5 {
                        return Err(ReadError::Failed(format!("reading the body: {e}")));
                    }
                    tracing::warn!(bucket = %a.bucket, key = %a.key, at = got, error = %e,
                        "reading an object broke off; resuming where it stopped");
                    body = None;
                }
            }
        }
        let mut pieces = Vec::new();
        inflate
            .finish(&mut |text| splitter.feed(text, &mut |p| pieces.push(owned(p))))
            .map_err(|e| ReadError::Failed(format!("inflating gzip: {e}")))?;
        splitter.finish(&mut |p| pieces.push(owned(p)));
        for p in pieces {
            lines.take(p).await?;
        }
        lines.flush().await?;
        Ok((got, lines.number))
    }

    /// `GetObject` from byte `from` on (`If-Match` the first read's ETag when resuming).
    async fn get(
        &self,
        a: &Announced,
        from: u64,
        etag: Option<&str>,
    ) -> Result<aws_sdk_s3::operation::get_object::GetObjectOutput, ReadError> {
        let mut get = self.s3.get_object().bucket(&a.bucket).key(&a.key);
        if let Some(owner) = self.expected_owner(&a.bucket) {
            get = get.expected_bucket_owner(owner);
        }
        if from > 0 {
            get = get.range(format!("bytes={from}-"));
        }
        if let Some(etag) = etag {
            get = get.if_match(etag);
        }
        get.send().await.map_err(|e| {
            match e.code() {
                Some("NoSuchKey" | "NotFound") => self.stats.objects_not_found.add(1),
                Some("AccessDenied") => self.stats.objects_access_denied.add(1),
                _ => {}
            }
            ReadError::Failed(format!(
                "GetObject s3://{}/{}: {}",
                a.bucket,
                a.key,
                DisplayErrorContext(&e)
            ))
        })
    }
}

/// A piece of text, owned (the splitter's borrow ends with the chunk).
enum Owned {
    Line(Vec<u8>),
    TooLong(Vec<u8>),
}

fn owned(p: Piece<'_>) -> Owned {
    match p {
        Piece::Line(l) => Owned::Line(l.to_vec()),
        Piece::TooLong(l) => Owned::TooLong(l.to_vec()),
    }
}

/// The partition of an object's positions: a hash of its ETag (non-negative).
fn partition(etag: &str) -> i32 {
    (crc32fast::hash(etag.trim_matches('"').as_bytes()) & 0x7fff_ffff) as i32
}

/// An object's lines on their way into batches.
struct Batcher<'a> {
    reading: &'a Reading,
    object: &'a Arc<InFlight>,
    topic: Arc<str>,
    partition: i32,
    /// The last line's number.
    number: i64,
    header: Option<String>,
    /// The batch being filled, and the first line number it covers.
    records: Vec<Record>,
    unreadable: Vec<Unreadable>,
    start: i64,
    epoch: u64,
    first: bool,
}

impl<'a> Batcher<'a> {
    fn new(reading: &'a Reading, a: &Announced, object: &'a Arc<InFlight>) -> Self {
        Self {
            reading,
            object,
            topic: Arc::from(format!("s3://{}/{}", a.bucket, a.key)),
            partition: 0,
            number: 0,
            header: None,
            records: Vec::new(),
            unreadable: Vec::new(),
            start: 1,
            epoch: reading.reads.fetch_add(1, Ordering::Relaxed),
            first: true,
        }
    }

    fn record(&self, payload: Vec<u8>) -> Record {
        Record {
            payload,
            key: None,
            received_at_ms: SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
            position: Some(Position {
                topic: self.topic.clone(),
                partition: self.partition,
                offset: self.number,
            }),
            origin: format!("{}:{}", self.topic, self.number),
            headers: self
                .header
                .iter()
                .map(|h| (HEADER.to_owned(), h.clone()))
                .collect(),
            ..Record::default()
        }
    }

    /// Takes the next piece of the object's text.
    async fn take(&mut self, piece: Owned) -> Result<(), ReadError> {
        self.number += 1;
        let config = &self.reading.config;
        let skipped = self.number as usize <= config.skip_lines;
        let line = match piece {
            Owned::Line(line) => line,
            Owned::TooLong(head) => {
                if !skipped {
                    let reason = format!(
                        "the line is longer than {LINE_LIMIT} bytes (its first {LINE_LIMIT} are kept here)"
                    );
                    let record = self.record(head);
                    self.unreadable.push(Unreadable { record, reason });
                }
                return self.full().await;
            }
        };
        if skipped {
            return self.full().await;
        }
        if config.header && self.header.is_none() {
            self.header = Some(String::from_utf8_lossy(&line).into_owned());
            return self.full().await;
        }
        if let Lines::Ndjson {
            include_empty_objects,
        } = config.lines
        {
            let blank = line.iter().all(u8::is_ascii_whitespace);
            let empty = !include_empty_objects && {
                let text: Vec<u8> = line
                    .iter()
                    .copied()
                    .filter(|b| !b.is_ascii_whitespace())
                    .collect();
                text == b"{}"
            };
            if blank || empty {
                return self.full().await;
            }
        }
        let record = self.record(line);
        self.records.push(record);
        self.full().await
    }

    /// Sends the batch once it holds `batch_size` lines.
    async fn full(&mut self) -> Result<(), ReadError> {
        if self.records.len() + self.unreadable.len() >= self.reading.config.batch_size {
            self.flush().await
        } else {
            Ok(())
        }
    }

    /// Sends what the batch holds (the lines read since the last one, skipped ones included).
    async fn flush(&mut self) -> Result<(), ReadError> {
        let end = self.number + 1;
        if end == self.start {
            return Ok(());
        }
        let read = Read {
            topic: self.topic.clone(),
            partition: self.partition,
            epoch: self.epoch,
            start: self.start,
            end,
            begins: self.first,
        };
        let object = self.object.clone();
        object.sent();
        let records = std::mem::take(&mut self.records);
        self.reading.stats.records_read.add(records.len() as u64);
        let batch = Batch {
            records,
            unreadable: std::mem::take(&mut self.unreadable),
            ack: Acknowledgement::new(move || object.acknowledged()),
            room: None,
            parts: None,
            reads: vec![read],
        };
        self.start = end;
        self.first = false;
        let mut stop = self.reading.stop.clone();
        tokio::select! {
            sent = self.reading.batches.send(batch) => sent.map_err(|_| ReadError::Stopped),
            _ = stop.wait_for(|s| *s) => Err(ReadError::Stopped),
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
async fn keep_hidden(
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
            .visibility_timeout(visibility.as_secs() as i32)
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

/// What a source that reads its queue itself answers a write (`sluice dlq replay` goes to the
/// pipeline's in-memory buffer beside it).
struct Unwritable(String);

#[async_trait::async_trait]
impl BufferWriter for Unwritable {
    async fn write(&self, _: Vec<Record>, _: Duration) -> Result<(), WriteError> {
        Err(WriteError::Unavailable(format!(
            "the pipeline reads the objects queue {} announces itself and has no buffer to write to",
            self.0
        )))
    }
}

struct Reader {
    batches: Arc<tokio::sync::Mutex<mpsc::Receiver<Batch>>>,
}

#[async_trait::async_trait]
impl BufferReader for Reader {
    async fn read(&mut self) -> Option<Batch> {
        self.batches.lock().await.recv().await
    }
}

#[async_trait::async_trait]
impl Buffer for S3Source {
    fn writer(&self) -> Arc<dyn BufferWriter> {
        Arc::new(Unwritable(self.inner.config.queue_url.clone()))
    }

    fn reader(&self) -> Box<dyn BufferReader> {
        Box::new(Reader {
            batches: self.inner.batches.clone(),
        })
    }

    /// Stops receiving; an object being read is abandoned (its message stays).
    fn close(&self) {
        let _ = self.inner.stop.send(true);
    }

    /// Waits for the queue readers, then sends the last deletes (of what the sinks took).
    async fn join(&self) {
        let workers = std::mem::take(&mut *self.inner.workers.lock().expect("not poisoned"));
        for w in workers {
            let _ = w.await;
        }
        let (done, flushed) = tokio::sync::oneshot::channel();
        if self.inner.deletes.send(Delete::Flush(done)).is_ok() {
            let _ = flushed.await;
        }
        let deleter = self.inner.deleter.lock().expect("not poisoned").take();
        if let Some(d) = deleter {
            d.abort();
        }
    }

    fn drain_timeout(&self) -> Option<Duration> {
        Some(self.inner.config.drain_timeout)
    }

    fn log_summary(&self) {
        let s = &self.inner.stats;
        tracing::info!(
            pipeline = %self.inner.config.pipeline,
            queue = %self.inner.config.queue_url,
            messages_received = s.messages_received.get(),
            messages_deleted = s.messages_deleted.get(),
            objects_read = s.objects_succeeded.get(),
            objects_failed = s.objects_failed.get(),
            lines_read = s.records_read.get(),
            "s3 source stopped"
        );
    }

    /// Not a tier: a buffer policy cannot sit over a source (validation refuses it).
    fn tier_state(&self) -> sluice_buffer::TierState {
        sluice_buffer::TierState {
            name: "s3 source".to_owned(),
            durable: true,
            available: !*self.inner.stop.borrow(),
            held: 0,
            capacity: None,
            lag: 0,
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

    #[test]
    fn an_object_is_deleted_only_read_whole_and_every_batch_acknowledged() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let o = InFlight {
            state: Mutex::new((0, false)),
            receipt: "r".to_owned(),
            deletes: tx,
        };
        o.sent();
        o.sent();
        o.acknowledged();
        o.read_whole();
        assert!(rx.try_recv().is_err(), "one batch is still out");
        o.acknowledged();
        assert!(matches!(rx.try_recv(), Ok(Delete::Message(r)) if r == "r"));
        let (tx, mut rx) = mpsc::unbounded_channel();
        let o = InFlight {
            state: Mutex::new((0, false)),
            receipt: "r".to_owned(),
            deletes: tx,
        };
        o.sent();
        o.acknowledged();
        assert!(rx.try_recv().is_err(), "not read to its end");
    }
}
