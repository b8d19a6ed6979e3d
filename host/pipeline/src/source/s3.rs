//! The `s3` source: its queue readers ([`sluice_s3::source::S3Source`]) are the pipeline's
//! read side, connected by `connect` in place of its buffer (`crate::buffer::build`); the
//! source itself runs nothing. Each line's events get the object's `bucket` and `key` under
//! `metadata_root_key` (`Objects::decorate`), and the codec's header line under
//! `header_destination`. What `sluice dlq replay` sends back goes to a small in-memory buffer
//! beside the readers (`Pulled`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::{Map, Value};
use sluice_config::source::s3::{
    Compression, Lines, NotificationSource, OnError, S3SourceSettings,
};
use sluice_s3::codec::{csv, json};
use sluice_s3::source::{self as s3, S3SourceConfig};
use tokio::sync::watch;

use super::pulled::Pulled;
use super::{Build, Decorate, Decoration, Source, SourceContext, SourceError};

/// The source: nothing to run, its queue readers read for the pipeline.
struct Read;

impl Build for S3SourceSettings {
    async fn build(self, _: SourceContext) -> Result<Box<dyn Source>, SourceError> {
        Ok(Box::new(Read))
    }
}

#[async_trait::async_trait]
impl Source for Read {
    async fn run(self: Box<Self>, mut stop: watch::Receiver<bool>) {
        let _ = stop.wait_for(|s| *s).await;
    }
}

/// Connects the queue readers of pipeline `p`'s s3 source, beside an in-memory buffer for
/// replayed records of `buffer` (its `bounded_blocking`). At most `queued` batches of lines
/// wait for the workers.
pub(crate) async fn connect(
    p: &sluice_config::Pipeline,
    s: S3SourceSettings,
    queued: usize,
    buffer: &sluice_config::BoundedBlocking,
    data_dir: &std::path::Path,
) -> Result<Pulled, s3::S3SourceError> {
    let started = SystemTime::now();
    let scan = s.scan.map(|scan| s3::ScanConfig {
        buckets: scan
            .buckets
            .into_iter()
            .map(|b| {
                // `range`: the time before the start (with `scheduling`, no end: later scans
                // read what was written since).
                let (after, before) = match b.range {
                    Some(range) => (
                        started.checked_sub(range),
                        scan.scheduling.is_none().then_some(started),
                    ),
                    None => (b.start_time.map(local), b.end_time.map(local)),
                };
                s3::ScanBucket {
                    name: b.name,
                    include_prefix: b.include_prefix,
                    exclude_suffix: b.exclude_suffix,
                    after,
                    before,
                }
            })
            .collect(),
        scheduling: scan.scheduling,
        backoff: scan.backoff,
        record: data_dir.join("s3-scan").join(format!("{}.jsonl", p.name)),
    });
    let config = S3SourceConfig {
        pipeline: p.name.clone(),
        queue_url: s.queue_url,
        scan,
        region: s.region,
        endpoint: s.endpoint,
        sts_role_arn: s.sts_role_arn,
        sts_external_id: s.sts_external_id,
        sts_header_overrides: s.sts_header_overrides,
        from: match s.notification_source {
            NotificationSource::S3 => sluice_s3::notification::From::S3,
            NotificationSource::Eventbridge => sluice_s3::notification::From::EventBridge,
        },
        compression: match s.compression {
            Compression::Gzip => s3::Compression::Gzip,
            Compression::Automatic => s3::Compression::Automatic,
            // Validation refuses the others.
            _ => s3::Compression::None,
        },
        lines: match s.lines {
            Lines::Newline => s3::Lines::Newline,
            Lines::Ndjson {
                include_empty_objects,
            } => s3::Lines::Ndjson {
                include_empty_objects,
            },
            Lines::Json {
                key_name,
                include_keys,
                max_event_length,
            } => {
                let defaults = json::JsonOptions::default();
                let longest = max_event_length.unwrap_or(defaults.max_string_length);
                s3::Lines::Json(json::JsonOptions {
                    key_name,
                    include_keys,
                    max_string_length: longest,
                    // An element holding one string as long as allowed is kept whole.
                    element_limit: defaults.element_limit.max(longest),
                    ..defaults
                })
            }
            Lines::Csv {
                delimiter,
                quote_character,
                header,
                detect_header,
            } => s3::Lines::Csv(csv::CsvOptions {
                delimiter,
                quote_character,
                header,
                detect_header,
                ..csv::CsvOptions::default()
            }),
            Lines::Parquet => s3::Lines::Parquet,
        },
        skip_lines: s.skip_lines,
        header: s.header_destination.is_some(),
        workers: s.workers,
        maximum_messages: s.maximum_messages,
        visibility_timeout: s.visibility_timeout,
        protect_visibility: s.protect_visibility,
        wait_time: s.wait_time,
        poll_delay: s.poll_delay,
        max_receive_attempts: s.max_receive_attempts,
        delete_unreadable: s.on_error == OnError::DeleteMessages,
        check_owner: s.check_owner,
        bucket_owners: s.bucket_owners,
        default_bucket_owner: s.default_bucket_owner,
        filters: s
            .filters
            .into_iter()
            .map(|(bucket, f)| (bucket, (f.include_prefix, f.exclude_suffix)))
            .collect(),
        batch_size: buffer.batch_size,
        queued,
        drain_timeout: s.drain_timeout,
    };
    let source = s3::S3Source::connect(config).await?;
    Ok(Pulled::new(p, Box::new(source), buffer))
}

/// A local date and time (Data Prepper's `LocalDateTime`, in the host's zone) as a time.
fn local(t: chrono::NaiveDateTime) -> SystemTime {
    use chrono::TimeZone as _;
    let at = chrono::Local
        .from_local_datetime(&t)
        .earliest()
        // A time skipped by a clock change: as UTC.
        .map_or_else(|| t.and_utc().timestamp_millis(), |l| l.timestamp_millis());
    SystemTime::UNIX_EPOCH + Duration::from_millis(u64::try_from(at).unwrap_or(0))
}

/// Where an s3 source's events get their object's bucket and key, and the header line.
#[derive(Debug)]
pub(crate) struct Objects {
    /// The path of `bucket` and `key`'s parent (`None`: not added).
    root: Option<Vec<String>>,
    /// `data_selection: data_only`: not added, unless the bucket says otherwise.
    data_only: bool,
    /// Each scanned bucket's `data_selection: data_only`.
    bucket_data_only: BTreeMap<String, bool>,
    /// `header_destination`.
    header: Option<String>,
    /// The last object's decoration, with its position's topic and header: the lines of one
    /// object share it.
    last: std::sync::Mutex<Option<Last>>,
}

/// The last object an [`Objects`] decorated: its topic, its header, and what its lines got.
type Last = (Arc<str>, Option<String>, Arc<Decoration>);

impl Objects {
    /// The decorator of an s3 source.
    pub(crate) fn of(source: &sluice_config::source::s3::S3Source) -> Option<Arc<dyn Decorate>> {
        let s = sluice_config::Resolve::resolve(source, "").ok()?;
        Some(Arc::new(Self {
            root: s.metadata_root,
            data_only: s.data_only,
            bucket_data_only: s.bucket_data_only,
            header: s.header_destination,
            last: std::sync::Mutex::new(None),
        }))
    }
}

impl Decorate for Objects {
    fn decorate(&self, record: &sluice_buffer::Record) -> Arc<Decoration> {
        let header = record
            .headers
            .iter()
            .find(|(k, _)| k == s3::HEADER)
            .map(|(_, h)| h);
        let mut last = self.last.lock().expect("not poisoned");
        if let (Some((topic, h, decoration)), Some(position)) = (&*last, &record.position)
            && Arc::ptr_eq(topic, &position.topic)
            && h.as_ref() == header
        {
            return decoration.clone();
        }
        let decoration = Arc::new(self.make(record, header));
        if let Some(position) = &record.position {
            *last = Some((position.topic.clone(), header.cloned(), decoration.clone()));
        }
        decoration
    }
}

impl Objects {
    fn make(&self, record: &sluice_buffer::Record, header: Option<&String>) -> Decoration {
        let mut fields = Vec::new();
        if let (Some(root), Some(position)) = (&self.root, &record.position)
            && let Some((bucket, key)) = position
                .topic
                .strip_prefix("s3://")
                .and_then(|rest| rest.split_once('/'))
            && !self
                .bucket_data_only
                .get(bucket)
                .copied()
                .unwrap_or(self.data_only)
        {
            let at = |name: &str| {
                let mut path = root.clone();
                path.push(name.to_owned());
                path
            };
            fields.push((at("bucket"), Value::String(bucket.to_owned())));
            fields.push((at("key"), Value::String(key.to_owned())));
        }
        if let Some(destination) = &self.header
            && let Some(header) = header
        {
            // A path, as `metadata_root_key` (Data Prepper's `event.put`).
            let path = destination
                .split('/')
                .filter(|p| !p.is_empty())
                .map(str::to_owned)
                .collect();
            fields.push((path, Value::String(header.clone())));
        }
        Decoration {
            attributes: Map::new(),
            fields,
        }
    }
}
