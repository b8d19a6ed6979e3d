//! The write path: every record of a write is handed to librdkafka, then every delivery report
//! is awaited. The write succeeds only if Kafka acknowledged all of them (acks=all); the
//! source tells its client "accepted" only then.

use std::sync::atomic::Ordering;
use std::time::Duration;

use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::FutureRecord;
use sluice_buffer::{BufferWriter, Record, WriteError};

use crate::{KafkaBuffer, envelope};

#[async_trait::async_trait]
impl BufferWriter for KafkaBuffer {
    async fn write(&self, records: Vec<Record>, timeout: Duration) -> Result<(), WriteError> {
        let inner = &self.inner;
        if inner.closed.load(Ordering::SeqCst) {
            return Err(WriteError::Closed);
        }
        let max = self.max_payload();
        if let Some(r) = records
            .iter()
            .find(|r| r.payload.len() + r.key.as_ref().map_or(0, Vec::len) > max)
        {
            return Err(WriteError::RecordTooLarge {
                size: r.payload.len(),
                max,
            });
        }
        let result = self.produce(&records, timeout).await;
        let stats = &inner.stats;
        match &result {
            Ok(()) => stats.records_written.add(records.len() as u64),
            Err(WriteError::Full(_)) => stats.write_timeouts.add(1),
            Err(_) => stats.write_failures.add(1),
        };
        stats
            .produce_failing
            .store(result.is_err(), std::sync::atomic::Ordering::Relaxed);
        result
    }

    fn max_record_size(&self) -> Option<usize> {
        Some(self.max_payload())
    }

    fn partition_of(&self, key: &[u8]) -> Option<u32> {
        // librdkafka's default partitioner (`consistent_random`) puts a record with a non-empty
        // key in the partition CRC-32(key) modulo the topic's partitions.
        let partitions = self.inner.key_partitions.filter(|_| !key.is_empty())?;
        Some(crc32fast::hash(key) % partitions)
    }
}

/// Room kept in a Kafka record for the envelope headers and the record's framing, so that a
/// whole record, not only its payload, stays within `max_request_size`.
const ENVELOPE_ROOM: usize = 4096;

impl KafkaBuffer {
    /// The largest payload (plus key) that fits in one record of `max_request_size`.
    fn max_payload(&self) -> usize {
        self.inner
            .config
            .max_request_size
            .saturating_sub(ENVELOPE_ROOM)
            .max(1)
    }

    async fn produce(&self, records: &[Record], timeout: Duration) -> Result<(), WriteError> {
        let inner = &self.inner;
        let deadline = tokio::time::Instant::now() + timeout;
        let mut deliveries = Vec::with_capacity(records.len());
        for record in records {
            // One text for the header and, when sealed, the authenticated metadata.
            let received_at = record.received_at_ms.to_string();
            let dead_lettered = (!record.dead_lettered.is_empty())
                .then(|| serde_json::to_string(&record.dead_lettered).expect("strings serialize"));
            let (version, payload) = match &inner.sealer {
                None => (
                    envelope::PLAIN,
                    std::borrow::Cow::Borrowed(&record.payload[..]),
                ),
                Some(sealer) => {
                    let metadata = envelope::sealed_metadata(
                        &received_at,
                        &record.origin,
                        record.content_type.as_deref().unwrap_or_default(),
                    );
                    let sealed = sealer
                        .seal(&record.payload, &metadata)
                        .await
                        .map_err(|e| WriteError::Unavailable(format!("encryption: {e}")))?;
                    (envelope::SEALED, std::borrow::Cow::Owned(sealed))
                }
            };
            let mut future = FutureRecord::<[u8], [u8]>::to(&inner.config.topic)
                .payload(&payload[..])
                .headers(envelope::headers(
                    version,
                    &received_at,
                    &record.origin,
                    record.content_type.as_deref(),
                    dead_lettered.as_deref(),
                ))
                .timestamp(i64::try_from(record.received_at_ms).unwrap_or(i64::MAX));
            if let Some(key) = &record.key {
                future = future.key(key);
            }
            loop {
                match inner.producer.send_result(future) {
                    Ok(delivery) => {
                        deliveries.push(delivery);
                        break;
                    }
                    // The local queue is full: backpressure. Wait for room, up to the deadline.
                    Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                        if tokio::time::Instant::now() >= deadline {
                            return Err(WriteError::Full(timeout));
                        }
                        future = back;
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                    Err((e, _)) => return Err(WriteError::Unavailable(e.to_string())),
                }
            }
        }
        // Records already handed over may still be delivered after a failure here; the client
        // was told "not accepted", so a retry can duplicate them (at-least-once), never lose.
        for delivery in deliveries {
            match tokio::time::timeout_at(deadline, delivery).await {
                Ok(Ok(Ok(_))) => {}
                Ok(Ok(Err((e, _)))) => {
                    return Err(WriteError::Unavailable(format!(
                        "kafka did not take the record: {e}"
                    )));
                }
                Ok(Err(_)) => {
                    return Err(WriteError::Unavailable(
                        "the producer was dropped".to_owned(),
                    ));
                }
                Err(_) => {
                    return Err(WriteError::Unavailable(format!(
                        "no acknowledgement from kafka within {timeout:?}"
                    )));
                }
            }
        }
        Ok(())
    }
}
