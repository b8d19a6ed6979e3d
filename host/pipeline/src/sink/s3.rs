//! The `s3` sink: collected events become one object (`ndjson` or `json`, optionally gzip)
//! under `path_prefix` with the upload time's date patterns filled in. An object is uploaded
//! whole (multipart when large) before its batches are acknowledged; a failed upload is sent
//! again as a new object, so an object is never half there.

use std::sync::Arc;
use std::time::SystemTime;

use bytes::Bytes;
use sluice_config::sink::Compression;
use sluice_config::sink::resolved::{Batching, S3Settings};
use sluice_config::sink::s3::S3Sink as Config;
use sluice_s3::{Bucket, BucketConfig};

use super::{Output, Retry, SendError, SinkError, Threshold, codec};

pub struct S3Sink {
    name: String,
    bucket: Bucket,
    prefix: String,
    batching: Batching,
}

impl S3Sink {
    /// Connects and checks the bucket: wrong credentials or a missing bucket stop the start
    /// with the store's reason; a store that does not answer is only warned about (the sink
    /// retries until it does).
    pub async fn connect(settings: S3Settings) -> Result<Self, SinkError> {
        let name = format!("s3://{}/{}", settings.bucket, settings.path_prefix);
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
            Err(e) if e.is_configuration() => return Err(SinkError::new(&name, e)),
            Err(e) => {
                tracing::warn!(sink = %name, error = %e, "the store does not answer yet; uploads are retried until it does");
            }
        }
        Ok(Self {
            name,
            bucket,
            prefix: settings.path_prefix,
            batching: settings.batching,
        })
    }
}

impl super::BuildOutput for Config {
    async fn build(&self, _: &super::SinkBuild<'_>) -> Result<Arc<dyn Output>, SinkError> {
        Ok(Arc::new(S3Sink::connect(self.resolve()).await?))
    }
}

/// A new object's key: `prefix` with its date patterns filled from `now` (UTC), then
/// `events-<time>-<epoch nanos>-<UUID>.<extension>`.
fn object_key(prefix: &str, extension: &str, now: SystemTime) -> String {
    let stamp = humantime::format_rfc3339_seconds(now).to_string(); // 2026-12-04T13:48:40Z
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
    // Data Prepper's name: `events-<time>-<epoch nanos>-<UUID>.<extension>`.
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

#[async_trait::async_trait]
impl Output for S3Sink {
    fn name(&self) -> &str {
        &self.name
    }

    async fn send(&self, events: &[Bytes]) -> Result<(), SendError> {
        let b = &self.batching;
        let body = codec::encode(&b.codec, b.compression, events);
        let extension = codec::extension(&b.codec, b.compression);
        let key = object_key(&self.prefix, &extension, SystemTime::now());
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
}
