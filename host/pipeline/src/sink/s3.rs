//! The `s3` sink: collected events become one object (`ndjson` or `json`, optionally gzip)
//! under `path_prefix` with the upload time's date patterns filled in. An object is uploaded
//! whole (multipart when large) before its batches are acknowledged; a failed upload is sent
//! again as a new object, so an object is never half there.

use std::sync::Arc;
use std::time::SystemTime;

use bytes::Bytes;
use sluice_config::sink::s3::S3Sink as Config;
use sluice_config::sink::{Codec, Compression};
use sluice_s3::{Bucket, BucketConfig};

use super::{Output, Retry, SendError, SinkError, Threshold, codec};

pub struct S3Sink {
    name: String,
    bucket: Bucket,
    prefix: String,
    codec: Codec,
    compression: Compression,
    threshold: Threshold,
    max_retries: Option<u32>,
}

impl S3Sink {
    /// Connects and checks the bucket: wrong credentials or a missing bucket stop the start
    /// with the store's reason; a store that does not answer is only warned about (the sink
    /// retries until it does).
    pub async fn connect(config: &Config) -> Result<Self, SinkError> {
        let name = format!("s3://{}/{}", config.bucket, config.object_key.path_prefix);
        let bucket = Bucket::connect(BucketConfig {
            bucket: config.bucket.clone(),
            region: config.aws.region.clone(),
            endpoint: config.aws.endpoint.clone(),
            part_size: usize::try_from(config.multipart_part_size.bytes()).unwrap_or(usize::MAX),
            request_timeout: config.request_timeout,
        })
        .await;
        match bucket.check().await {
            Ok(()) => {}
            Err(e) if e.is_configuration() => {
                return Err(SinkError::new(
                    &name,
                    format!(
                        "{e}; check the bucket name and the AWS credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY or the profile)"
                    ),
                ));
            }
            Err(e) => {
                tracing::warn!(sink = %name, error = %e, "the store does not answer yet; uploads are retried until it does");
            }
        }
        let threshold = &config.threshold;
        Ok(Self {
            name,
            bucket,
            prefix: config.object_key.path_prefix.clone(),
            codec: config
                .codec
                .as_ref()
                .map(|c| c.codec())
                .unwrap_or(Codec::Ndjson),
            compression: config.compression,
            threshold: Threshold {
                event_count: (threshold.event_count > 0).then_some(threshold.event_count),
                maximum_size: Some(threshold.maximum_size.bytes()),
                event_collect_timeout: Some(threshold.event_collect_timeout),
            },
            max_retries: config.max_retries,
        })
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

impl super::BuildOutput for Config {
    async fn build(&self, _pipeline: &str) -> Result<Arc<dyn Output>, SinkError> {
        Ok(Arc::new(S3Sink::connect(self).await?))
    }
}

#[async_trait::async_trait]
impl Output for S3Sink {
    fn name(&self) -> &str {
        &self.name
    }

    async fn send(&self, events: &[Bytes]) -> Result<(), SendError> {
        let body = codec::encode(&self.codec, self.compression, events);
        let extension = codec::extension(&self.codec, self.compression);
        let key = object_key(&self.prefix, &extension, SystemTime::now());
        let encoding = (self.compression == Compression::Gzip).then_some("gzip");
        match self
            .bucket
            .put(&key, body, codec::content_type(&self.codec), encoding)
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
        Some(self.threshold)
    }

    fn retry(&self) -> Retry {
        Retry {
            max_retries: self.max_retries,
            ..Retry::default()
        }
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
