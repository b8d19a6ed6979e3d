//! The `s3` source: its queue readers ([`sluice_s3::source::S3Source`]) are the pipeline's
//! read side, connected by `connect` in place of its buffer (`crate::buffer::build`); the
//! source itself runs nothing. Each line's events get the object's `bucket` and `key` under
//! `metadata_root_key` (`Objects::decorate`), and the codec's header line under
//! `header_destination`. What `sluice dlq replay` sends back goes to a small in-memory buffer
//! beside the readers (`Pulled`).

use std::sync::Arc;

use serde_json::{Map, Value};
use sluice_config::source::s3::{Compression, Lines, NotificationSource, OnError, S3SourceSettings};
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
) -> Result<Pulled, s3::S3SourceError> {
    let config = S3SourceConfig {
        pipeline: p.name.clone(),
        queue_url: s.queue_url,
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

/// Where an s3 source's events get their object's bucket and key, and the header line.
#[derive(Debug)]
pub(crate) struct Objects {
    /// The path of `bucket` and `key`'s parent (`None`: not added).
    root: Option<Vec<String>>,
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
