//! The `s3` sink: collected events become one object (`ndjson` or `json`, optionally gzip)
//! under `path_prefix`. An object is uploaded whole (multipart when large) before its batches
//! are acknowledged, so an object is never half there.
//!
//! From a Kafka buffer (`exactly_once`, the default), an object holds a run of one partition's
//! records, cut where the records say (`sink::keyed`), and is named by it:
//! `<prefix><topic>+<partition>+<first offset>.<extension>`, the prefix's date patterns from
//! the first record's receive time. A batch read again after a crash makes the same object,
//! which overwrites the first. Otherwise Data Prepper's names: the upload time's date
//! patterns, then `events-<time>-<epoch nanos>-<UUID>`; a failed upload is sent again as a
//! new object.

use std::sync::Arc;
use std::time::SystemTime;

use bytes::Bytes;
use sluice_config::sink::Compression;
use sluice_config::sink::batching::Batching;
use sluice_config::sink::s3::S3Settings;
use sluice_s3::{Bucket, BucketConfig};

use super::{Extent, Output, Provenance, Retry, SendError, Threshold, codec};

pub struct S3Sink {
    name: String,
    bucket: Bucket,
    prefix: String,
    batching: Batching,
    exactly_once: bool,
}

/// The bucket refused the credentials or does not exist.
#[derive(Debug, thiserror::Error)]
#[error(
    "{0}; check the bucket name and the AWS credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY or the profile)"
)]
pub struct BucketRefused(#[from] sluice_s3::PutError);

/// Connects and checks the bucket: wrong credentials or a missing bucket stop the start with
/// the store's reason; a store that does not answer is only warned about (the sink retries
/// until it does).
impl super::BuildOutput for S3Settings {
    type Error = BucketRefused;
    async fn build(
        self,
        name: &str,
        _: &super::SinkBuild<'_>,
    ) -> Result<Arc<dyn Output>, BucketRefused> {
        let settings = self;
        let bucket = Bucket::connect(BucketConfig {
            bucket: settings.bucket,
            region: settings.region,
            endpoint: settings.endpoint,
            part_size: settings.part_size,
            request_timeout: settings.request_timeout,
        })
        .await;
        match bucket.check().await {
            Ok(()) => {}
            Err(e) if e.is_configuration() => return Err(e.into()),
            Err(e) => {
                tracing::warn!(sink = %name, error = %e, "the store does not answer yet; uploads are retried until it does");
            }
        }
        Ok(Arc::new(S3Sink {
            name: name.to_owned(),
            bucket,
            prefix: settings.path_prefix,
            batching: settings.batching,
            exactly_once: settings.exactly_once,
        }))
    }
}

/// `prefix` with its date patterns filled from `at` (UTC), and `at` as RFC 3339 seconds.
fn fill_prefix(prefix: &str, at: SystemTime) -> (String, String) {
    let stamp = humantime::format_rfc3339_seconds(at).to_string(); // 2026-12-04T13:48:40Z
    let part = |range: std::ops::Range<usize>| stamp.get(range).unwrap_or("00").to_owned();
    let mut prefix = prefix.to_owned();
    for (pattern, value) in [
        ("%{yyyy}", part(0..4)),
        ("%{MM}", part(5..7)),
        ("%{dd}", part(8..10)),
        ("%{HH}", part(11..13)),
        ("%{mm}", part(14..16)),
        ("%{ss}", part(17..19)),
    ] {
        prefix = prefix.replace(pattern, &value);
    }
    (prefix, stamp)
}

/// A new object's key, Data Prepper's way: `prefix` with its date patterns filled from `now`
/// (UTC), then `events-<time>-<epoch nanos>-<UUID>.<extension>`.
fn object_key(prefix: &str, extension: &str, now: SystemTime) -> String {
    let (prefix, stamp) = fill_prefix(prefix, now);
    let time = stamp.replace(':', "-");
    let nanos = now
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let r = fastrand::u128(..);
    let uuid = format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        (r >> 96) as u32,
        (r >> 80) as u16,
        (r >> 68) as u16 & 0xfff,
        ((r >> 52) as u16 & 0x3fff) | 0x8000,
        r as u64 & 0xffff_ffff_ffff
    );
    format!("{prefix}events-{time}-{nanos}-{uuid}.{extension}")
}

/// The key of the object holding `extent` (Kafka Connect's scheme): `prefix` with its date
/// patterns filled from the first record's receive time, then
/// `<topic>+<partition>+<first offset, 20 digits>.<extension>`. The same records give the same
/// key.
fn extent_key(prefix: &str, extension: &str, extent: &Extent) -> String {
    let received = std::time::UNIX_EPOCH + std::time::Duration::from_millis(extent.received_at_ms);
    let (prefix, _) = fill_prefix(prefix, received);
    format!(
        "{prefix}{}+{}+{:020}.{extension}",
        extent.topic, extent.partition, extent.first
    )
}

#[async_trait::async_trait]
impl Output for S3Sink {
    async fn send(&self, events: &[Bytes], from: &Provenance) -> Result<(), SendError> {
        let b = &self.batching;
        let body = codec::encode(&b.codec, b.compression, events);
        let extension = codec::extension(&b.codec, b.compression);
        let key = match &from.extent {
            Some(extent) => extent_key(&self.prefix, &extension, extent),
            None => object_key(&self.prefix, &extension, SystemTime::now()),
        };
        let encoding = (b.compression == Compression::Gzip).then_some("gzip");
        match self
            .bucket
            .put(&key, body, codec::content_type(&b.codec), encoding)
            .await
        {
            Ok(()) => {
                tracing::debug!(sink = %self.name, key, events = events.len(), "uploaded an object");
                Ok(())
            }
            Err(e) if e.retryable() => Err(SendError::Retry(e.to_string())),
            Err(e) => Err(SendError::Reject(e.to_string())),
        }
    }

    fn threshold(&self) -> Option<Threshold> {
        Some(self.batching.threshold)
    }

    fn retry(&self) -> Retry {
        self.batching.retry
    }

    fn keyed(&self) -> bool {
        self.exactly_once
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn date_patterns_fill_from_the_upload_time_and_names_are_unique() {
        let now = humantime::parse_rfc3339("2026-12-04T13:48:40Z").unwrap();
        let a = object_key(
            "logs/%{yyyy}/%{MM}/%{dd}/%{HH}%{mm}%{ss}/",
            "ndjson.gz",
            now,
        );
        let b = object_key(
            "logs/%{yyyy}/%{MM}/%{dd}/%{HH}%{mm}%{ss}/",
            "ndjson.gz",
            now,
        );
        assert!(
            a.starts_with("logs/2026/12/04/134840/events-2026-12-04T13-48-40Z-"),
            "{a}"
        );
        assert!(a.ends_with(".ndjson.gz"), "{a}");
        let nanos = now
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let rest = a.rsplit('/').next().unwrap();
        let parts: Vec<&str> = rest.trim_end_matches(".ndjson.gz").split('-').collect();
        // events, 2026, 12, 04T13, 48, 40Z, nanos, then the five groups of a UUID.
        assert_eq!(parts.len(), 12, "{a}");
        assert_eq!(parts[6], nanos.to_string(), "{a}");
        assert_ne!(a, b, "two objects in the same second get different names");
    }

    #[test]
    fn an_extent_is_named_by_its_first_offset_and_first_receive_time() {
        let received = humantime::parse_rfc3339("2026-12-04T13:48:40Z").unwrap();
        let extent = Extent {
            topic: "buf".into(),
            partition: 3,
            first: 1234,
            last: 1300,
            received_at_ms: received
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_millis() as u64,
            events: 70,
        };
        let key = extent_key("logs/%{yyyy}/%{MM}/%{dd}/%{HH}/", "ndjson", &extent);
        assert_eq!(key, "logs/2026/12/04/13/buf+3+00000000000000001234.ndjson");
        let later = Extent {
            last: 1400,
            events: 90,
            ..extent.clone()
        };
        assert_eq!(
            extent_key("logs/%{yyyy}/%{MM}/%{dd}/%{HH}/", "ndjson", &later),
            key,
            "an object that grew after a restart overwrites the first"
        );
    }
}
