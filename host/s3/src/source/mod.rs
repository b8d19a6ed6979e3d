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
//! stops the download (TCP backpressure). A parquet object goes to a temporary file instead
//! (its size on disk, deleted when read), whose rows are then read the same way.
//!
//! `queue`: the queue's URL, the deleter and the visibility keeper; `object`: a queue reader,
//! streaming each object into batches of lines.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_sdk_s3::error::DisplayErrorContext;
use sluice_buffer::{Batch, Buffer, BufferReader, BufferWriter, Count, Record, WriteError};
use tokio::sync::{mpsc, watch};

use crate::notification;

mod object;
mod queue;
mod scan;

use object::Reading;
use queue::{Delete, Queue, QueueUrl, delete_loop};
pub use scan::{ScanBucket, ScanConfig};

/// How an object's bytes are compressed: `compression`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    /// By the key: `.gz` is gzip.
    Automatic,
}

/// How an object's bytes become records: the codec.
#[derive(Debug, Clone)]
pub enum Lines {
    /// Every line.
    Newline,
    /// Blank lines skipped, and `{}` unless kept.
    Ndjson { include_empty_objects: bool },
    /// Each element of its arrays (`codec: json`), numbered from 1.
    Json(crate::codec::json::JsonOptions),
    /// Each row as a JSON object (`codec: csv`), numbered by the line it starts on.
    Csv(crate::codec::csv::CsvOptions),
    /// Each row of a parquet file as a JSON object (`codec: parquet`), numbered from 1. The
    /// object is spooled to a temporary file first (a parquet file is read from its footer).
    Parquet,
}

/// One s3 source's settings.
#[derive(Debug, Clone)]
pub struct S3SourceConfig {
    pub pipeline: String,
    /// The queue whose notifications announce objects (`sqs.queue_url`).
    pub queue_url: Option<String>,
    /// Buckets to list (`scan`).
    pub scan: Option<ScanConfig>,
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

/// Whole seconds for SQS, rounded up (`500ms` is 1 s, not 0: visible at once).
fn seconds(d: Duration) -> i32 {
    i32::try_from(d.as_millis().div_ceil(1000)).unwrap_or(i32::MAX)
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
    #[error("scan: the record of objects read, {path}: {reason}")]
    ScanRecord { path: String, reason: String },
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
    /// The queue and the buckets read, for messages.
    what: String,
    config: S3SourceConfig,
    stats: Arc<S3Stats>,
    stop: watch::Sender<bool>,
    batches: Arc<tokio::sync::Mutex<mpsc::Receiver<Batch>>>,
    workers: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// The deleter's inbox, when a queue is read.
    deletes: Option<mpsc::UnboundedSender<Delete>>,
    deleter: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl S3Source {
    /// Checks that the queue answers and opens the scan's record, then starts `workers`
    /// queue readers and the deleter, and the scan.
    pub async fn connect(config: S3SourceConfig) -> Result<Self, S3SourceError> {
        let url = config
            .queue_url
            .as_deref()
            .map(QueueUrl::parse)
            .transpose()?;
        // `aws.region`, else the queue URL's, else the AWS chain's, else `us-east-1`.
        let region = match config
            .region
            .clone()
            .or_else(|| url.as_ref().and_then(|u| u.region.clone()))
        {
            Some(region) => region,
            None => aws_config::default_provider::region::DefaultRegionChain::builder()
                .build()
                .region()
                .await
                .map_or_else(|| "us-east-1".to_owned(), |r| r.to_string()),
        };
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
        let s3 = crate::s3_client(&shared, config.endpoint.as_deref());
        let s3 = aws_sdk_s3::Client::from_conf(
            s3.config().to_builder().retry_config(retry.clone()).build(),
        );
        let stats = Arc::new(S3Stats::new(&config.pipeline));
        let (stop, stopped) = watch::channel(false);
        let (tx, rx) = mpsc::channel(config.queued.max(1));
        // The queue URL's account, else the role's: the default expected bucket owner.
        let account = url.as_ref().and_then(|u| u.account.clone()).or_else(|| {
            let arn = config.sts_role_arn.as_deref()?;
            arn.split(':')
                .nth(4)
                .filter(|a| a.len() == 12)
                .map(str::to_owned)
        });
        let reading = Arc::new(Reading {
            config: config.clone(),
            stats: stats.clone(),
            s3,
            account,
            batches: tx,
            stop: stopped.clone(),
            reads: Arc::new(AtomicU64::new(0)),
        });
        let mut workers = Vec::new();
        let mut deletes = None;
        let mut deleter = None;
        if let (Some(queue_url), Some(url)) = (&config.queue_url, &url) {
            // A long poll waits `wait_time`; past that, an attempt that does not answer is cut.
            let timeouts = aws_config::timeout::TimeoutConfig::builder()
                .connect_timeout(Duration::from_secs(5))
                .operation_attempt_timeout(config.wait_time + Duration::from_secs(30))
                .build();
            let mut sqs = aws_sdk_sqs::config::Builder::from(&shared)
                .retry_config(retry)
                .timeout_config(timeouts);
            if let Some(endpoint) = &url.endpoint {
                sqs = sqs.endpoint_url(endpoint);
            }
            let sqs = aws_sdk_sqs::Client::from_conf(sqs.build());
            sqs.get_queue_attributes()
                .queue_url(queue_url)
                .attribute_names(
                    aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages,
                )
                .send()
                .await
                .map_err(|e| S3SourceError::Queue {
                    url: queue_url.clone(),
                    reason: DisplayErrorContext(&e).to_string(),
                })?;
            // Unbounded, yet bounded by the messages in flight: at most one entry per message
            // received, and a reader receives again only once it handled what it received (an
            // object's reading waits for room in the channel of batches).
            let (tx, deletes_rx) = mpsc::unbounded_channel();
            deleter = Some(tokio::spawn(delete_loop(
                sqs.clone(),
                queue_url.clone(),
                stats.clone(),
                deletes_rx,
            )));
            let queue = Arc::new(Queue {
                reading: reading.clone(),
                sqs,
                url: queue_url.clone(),
                deletes: tx.clone(),
            });
            deletes = Some(tx);
            workers.extend((0..config.workers).map(|_| tokio::spawn(queue.clone().run())));
            tracing::info!(pipeline = %config.pipeline, queue = %queue_url, workers = config.workers,
                "s3 source reading the objects the queue announces");
        }
        if let Some(scan) = config.scan.clone() {
            let scanned =
                scan::Scanned::open(&scan.record).map_err(|e| S3SourceError::ScanRecord {
                    path: scan.record.display().to_string(),
                    reason: e.to_string(),
                })?;
            tracing::info!(pipeline = %config.pipeline, buckets = ?scan.buckets.iter().map(|b| &b.name).collect::<Vec<_>>(),
                record = %scan.record.display(), workers = config.workers, "s3 source scanning buckets");
            workers.push(tokio::spawn(scan::scan(
                reading,
                scan,
                Arc::new(scanned),
                stopped,
            )));
        }
        Ok(Self {
            inner: Arc::new(Inner {
                what: config.what(),
                config,
                stats,
                stop,
                batches: Arc::new(tokio::sync::Mutex::new(rx)),
                workers: Mutex::new(workers),
                deletes,
                deleter: Mutex::new(deleter),
            }),
        })
    }
}

impl S3SourceConfig {
    /// Whether `key` of `bucket` passes the top-level `filters`: one of its bucket's
    /// prefixes (if any) and none of its suffixes.
    fn passes_filters(&self, bucket: &str, key: &str) -> bool {
        self.filters.get(bucket).is_none_or(|(include, exclude)| {
            (include.is_empty() || include.iter().any(|p| key.starts_with(p.as_str())))
                && !exclude.iter().any(|s| key.ends_with(s.as_str()))
        })
    }

    /// What the source reads, for messages: the queue, the buckets.
    fn what(&self) -> String {
        let mut what: Vec<String> = self
            .queue_url
            .iter()
            .map(|u| format!("queue {u}"))
            .collect();
        if let Some(scan) = &self.scan {
            let buckets: Vec<&str> = scan.buckets.iter().map(|b| b.name.as_str()).collect();
            what.push(format!("the buckets {}", buckets.join(", ")));
        }
        what.join(" and ")
    }
}

/// What a source that reads its queue itself answers a write (`sluice dlq replay` goes to the
/// pipeline's in-memory buffer beside it).
struct Unwritable(String);

#[async_trait::async_trait]
impl BufferWriter for Unwritable {
    async fn write(&self, _: Vec<Record>, _: Duration) -> Result<(), WriteError> {
        Err(WriteError::Unavailable(format!(
            "the pipeline reads the objects of {} itself and has no buffer to write to",
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
        Arc::new(Unwritable(self.inner.what.clone()))
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

    /// Waits for the queue readers and the scan, then sends the last deletes (of what the
    /// sinks took), for at most `shutdown_timeout`: what is not deleted by then comes back and
    /// is read again. (The scan records each object as its lines reach the sinks.)
    async fn join(&self) {
        let workers = std::mem::take(&mut *self.inner.workers.lock().expect("not poisoned"));
        for w in workers {
            let _ = w.await;
        }
        let (done, flushed) = tokio::sync::oneshot::channel();
        if let Some(deletes) = &self.inner.deletes
            && deletes.send(Delete::Flush(done)).is_ok()
            && tokio::time::timeout(self.inner.config.drain_timeout, flushed)
                .await
                .is_err()
        {
            tracing::warn!(source = %self.inner.what, timeout = ?self.inner.config.drain_timeout,
                "the last deletes did not finish in time; their messages come back and their objects are read again");
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
            reads = %self.inner.what,
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
