//! The Kafka buffer library against a real broker: what is written comes back once with its
//! metadata; acknowledged offsets are committed and a restart resumes after them;
//! unacknowledged batches are read again; a consumer whose workers are stalled stays in the
//! group; an unreachable broker fails fast.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use sluice_buffer::{Buffer, BufferReader, Record};
use sluice_kafka::{KafkaBuffer, KafkaBufferConfig};
use sluice_tests::{free_port, kafka_bootstrap, unique};

pub(crate) fn config(bootstrap: String, topic: &str, group: &str) -> KafkaBufferConfig {
    KafkaBufferConfig {
        bootstrap_servers: vec![bootstrap],
        topic: topic.to_owned(),
        group_id: group.to_owned(),
        consumers: 1,
        batch_size: 16,
        delay: Duration::from_millis(50),
        commit_interval: Duration::from_millis(200),
        auto_offset_reset: "earliest".to_owned(),
        // Short, so a member that went away without leaving does not hold the group for 45 s.
        session_timeout: Duration::from_secs(6),
        max_poll_interval: Duration::from_secs(7),
        group_instance_id: None,
        produce_timeout: Duration::from_secs(10),
        drain_timeout: Duration::from_secs(10),
        max_request_size: 1 << 20,
        create_topic: Some(sluice_kafka::CreateTopic {
            partitions: 1,
            replication_factor: 1,
        }),
        sasl: None,
        tls: None,
        producer_properties: BTreeMap::new(),
        consumer_properties: BTreeMap::new(),
        encryption: None,
        pipeline: "test".to_owned(),
        metric_prefix: "kafka_buffer".to_owned(),
    }
}

fn record(i: usize) -> Record {
    Record {
        payload: format!("{{\"n\":{i}}}").into_bytes(),
        key: Some(format!("k{i}").into_bytes()),
        received_at_ms: 1_700_000_000_000 + i as u64,
        origin: "http:/log/ingest".to_owned(),
        content_type: Some("application/json".to_owned()),
    }
}

async fn write(buffer: &KafkaBuffer, range: std::ops::Range<usize>) {
    let records = range.map(record).collect();
    buffer
        .writer()
        .write(records, Duration::from_secs(15))
        .await
        .unwrap();
}

/// Reads until `want` records arrived or 60 s passed, acknowledging each batch if `ack`.
async fn read(reader: &mut Box<dyn BufferReader>, want: usize, ack: bool) -> Vec<Record> {
    let mut got = Vec::new();
    let started = Instant::now();
    while got.len() < want && started.elapsed() < Duration::from_secs(60) {
        let Ok(Some(batch)) = tokio::time::timeout(Duration::from_secs(5), reader.read()).await
        else {
            continue;
        };
        got.extend(batch.records);
        if ack {
            batch.ack.acknowledge();
        }
    }
    got
}

fn payloads(records: &[Record]) -> BTreeSet<Vec<u8>> {
    records.iter().map(|r| r.payload.clone()).collect()
}

fn expected(range: std::ops::Range<usize>) -> BTreeSet<Vec<u8>> {
    range.map(|i| record(i).payload).collect()
}

/// Closes the buffer; the reader must end (after the last commit).
async fn close(buffer: KafkaBuffer, mut reader: Box<dyn BufferReader>) {
    buffer.close();
    let end = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(batch) = reader.read().await {
            batch.ack.acknowledge();
        }
    })
    .await;
    assert!(end.is_ok(), "the reader did not end after close");
    buffer.join().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_round_trip_once_and_a_restart_resumes_after_the_commit() {
    let topic = unique("sluice-rt");
    let group = unique("group");
    let buffer = KafkaBuffer::connect(config(kafka_bootstrap(), &topic, &group))
        .await
        .unwrap();
    write(&buffer, 0..40).await;
    let mut reader = buffer.reader();
    let got = read(&mut reader, 40, true).await;
    assert_eq!(got.len(), 40, "each record exactly once");
    assert_eq!(payloads(&got), expected(0..40));
    let first = got.iter().find(|r| r.payload == record(0).payload).unwrap();
    assert_eq!(first.key, record(0).key);
    assert_eq!(
        first.received_at_ms,
        record(0).received_at_ms,
        "receive time survives the buffer"
    );
    assert_eq!(
        first.content_type.as_deref(),
        Some("application/json"),
        "the content type survives the buffer"
    );
    assert_eq!(
        first.origin,
        format!("http:/log/ingest via kafka:{topic}/0@0"),
        "the source's origin survives, with the Kafka position"
    );
    let stats = buffer.stats();
    close(buffer, reader).await;
    assert_eq!(stats.records_committed.get(), 40);
    assert!(stats.positive_acknowledgements.get() >= 3);

    // The same group again: only what was written after the commit.
    let buffer = KafkaBuffer::connect(config(kafka_bootstrap(), &topic, &group))
        .await
        .unwrap();
    write(&buffer, 40..50).await;
    let mut reader = buffer.reader();
    let got = read(&mut reader, 10, true).await;
    // Anything more would arrive within the batch delay; give it a moment.
    let more = tokio::time::timeout(Duration::from_secs(2), reader.read()).await;
    assert!(more.is_err(), "read a record again after it was committed");
    assert_eq!(payloads(&got), expected(40..50));
    assert_eq!(got.len(), 10);
    close(buffer, reader).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unacknowledged_batches_are_not_committed_and_are_read_again() {
    let topic = unique("sluice-nack");
    let group = unique("group");
    let buffer = KafkaBuffer::connect(config(kafka_bootstrap(), &topic, &group))
        .await
        .unwrap();
    write(&buffer, 0..30).await;
    let mut reader = buffer.reader();
    // The first batch is acknowledged, the rest dropped (as when a sink never recovered).
    let first = tokio::time::timeout(Duration::from_secs(30), reader.read())
        .await
        .unwrap()
        .unwrap();
    let acked = payloads(&first.records);
    first.ack.acknowledge();
    let dropped = read(&mut reader, 30 - acked.len(), false).await;
    assert_eq!(acked.len() + dropped.len(), 30);
    let stats = buffer.stats();
    close(buffer, reader).await;
    assert_eq!(stats.records_committed.get(), acked.len() as u64);
    assert!(stats.negative_acknowledgements.get() >= 1);

    let buffer = KafkaBuffer::connect(config(kafka_bootstrap(), &topic, &group))
        .await
        .unwrap();
    let mut reader = buffer.reader();
    // Everything not acknowledged, and nothing that was. (Compared with the whole set rather
    // than with `dropped`: a rebalance under load may hand a batch out twice, which is
    // at-least-once working, not a loss.)
    let not_acked: BTreeSet<Vec<u8>> = expected(0..30).difference(&acked).cloned().collect();
    let again = read(&mut reader, not_acked.len(), true).await;
    assert_eq!(
        payloads(&again),
        not_acked,
        "exactly the unacknowledged records come back ({} acknowledged, {} dropped, {} read again)",
        acked.len(),
        dropped.len(),
        again.len()
    );
    close(buffer, reader).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_with_stalled_workers_keeps_polling_and_stays_in_the_group() {
    let topic = unique("sluice-stall");
    let group = unique("group");
    let mut c = config(kafka_bootstrap(), &topic, &group);
    c.batch_size = 5;
    let buffer = KafkaBuffer::connect(c).await.unwrap();
    write(&buffer, 0..50).await;
    let mut reader = buffer.reader();
    let first = read(&mut reader, 1, false).await;
    // Workers take nothing for longer than max.poll.interval (7 s): the channel fills, the
    // consumer pauses but keeps polling, so it is not kicked out of the group.
    tokio::time::sleep(Duration::from_secs(10)).await;
    let stats = buffer.stats();
    assert!(
        stats.records_consumed.get() < 50,
        "a paused consumer still read everything"
    );
    let rest = read(&mut reader, 50 - first.len(), true).await;
    assert_eq!(
        stats.partitions_revoked.get(),
        0,
        "the stalled consumer lost its partitions"
    );
    let mut all = payloads(&first);
    all.extend(payloads(&rest));
    assert_eq!(all, expected(0..50));
    close(buffer, reader).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_broker_fails_connect_within_the_timeout() {
    let mut c = config(format!("127.0.0.1:{}", free_port()), "nowhere", "g");
    c.produce_timeout = Duration::from_secs(2);
    c.create_topic = None;
    let started = Instant::now();
    let Err(err) = KafkaBuffer::connect(c).await else {
        panic!("connected to nothing")
    };
    let text = err.to_string();
    assert!(text.contains("cannot reach kafka at `127.0.0.1:"), "{text}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_of_an_unknown_envelope_version_are_unreadable_and_raw_records_are_read() {
    use rdkafka::message::{Header, OwnedHeaders};
    use rdkafka::producer::{FutureProducer, FutureRecord};
    let topic = unique("sluice-envelope");
    let group = unique("group");
    let buffer = KafkaBuffer::connect(config(kafka_bootstrap(), &topic, &group))
        .await
        .unwrap();
    // Another producer writes to the topic: once with no envelope (plain bytes, as kcat
    // would), once with a version this build does not know.
    let producer: FutureProducer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", kafka_bootstrap())
        .create()
        .unwrap();
    let timeout = Duration::from_secs(10);
    producer
        .send(
            FutureRecord::<(), _>::to(&topic).payload("{\"plain\":1}"),
            timeout,
        )
        .await
        .unwrap();
    let future = OwnedHeaders::new().insert(Header {
        key: "sluice-envelope",
        value: Some("9"),
    });
    producer
        .send(
            FutureRecord::<(), _>::to(&topic)
                .payload("sealed by a future sluice")
                .headers(future),
            timeout,
        )
        .await
        .unwrap();

    let mut reader = buffer.reader();
    let mut readable = Vec::new();
    let mut unreadable = Vec::new();
    let started = Instant::now();
    while readable.len() + unreadable.len() < 2 && started.elapsed() < Duration::from_secs(60) {
        if let Ok(Some(batch)) = tokio::time::timeout(Duration::from_secs(5), reader.read()).await {
            readable.extend(batch.records);
            unreadable.extend(batch.unreadable);
            batch.ack.acknowledge();
        }
    }
    assert_eq!(
        payloads(&readable),
        BTreeSet::from([b"{\"plain\":1}".to_vec()])
    );
    assert_eq!(unreadable.len(), 1);
    assert_eq!(unreadable[0].record.payload, b"sealed by a future sluice");
    assert!(
        unreadable[0]
            .reason
            .contains("unknown sluice envelope version `9`"),
        "{}",
        unreadable[0].reason
    );
    let stats = buffer.stats();
    close(buffer, reader).await;
    assert_eq!(
        stats.records_committed.get(),
        2,
        "an unreadable record does not stall commits"
    );
}

mod encrypted {
    //! The kafka buffer with envelope encryption, against the real broker and moto's KMS.

    use std::collections::{BTreeSet, HashMap};
    use std::sync::Arc;
    use std::time::Duration;

    use rdkafka::message::{Header, Headers, OwnedHeaders};
    use rdkafka::producer::{FutureProducer, FutureRecord};
    use sluice_buffer::Buffer;
    use sluice_kafka::{Encryption, KafkaBuffer};
    use sluice_tests::{kafka_bootstrap, kms_client, kms_key, unique};

    use super::{close, config, expected, payloads, read, write};

    async fn kms(key_id: &str, context: &[(&str, &str)]) -> Arc<dyn sluice_crypt::KeySource> {
        let context: HashMap<String, String> = context
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Arc::new(sluice_crypt::KmsKeys::with_client(
            kms_client().await,
            key_id.to_owned(),
            context,
        ))
    }

    async fn encrypted_buffer(
        topic: &str,
        group: &str,
        keys: Arc<dyn sluice_crypt::KeySource>,
        lifetime: Duration,
    ) -> KafkaBuffer {
        let mut c = config(kafka_bootstrap(), topic, group);
        c.encryption = Some(Encryption {
            keys,
            data_key_lifetime: lifetime,
        });
        KafkaBuffer::connect(c).await.unwrap()
    }

    fn raw_records(topic: &str, want: usize) -> Vec<(String, Vec<u8>, OwnedHeaders)> {
        sluice_tests::stored_records(&kafka_bootstrap(), topic, want)
    }

    /// The (key id, wrapped key) a sealed payload carries (format: crate docs of sluice-crypt).
    fn data_key_of(sealed: &[u8]) -> Vec<u8> {
        let id_len = usize::from(u16::from_be_bytes([sealed[1], sealed[2]]));
        let at = 3 + id_len;
        let wrapped_len = usize::from(u16::from_be_bytes([sealed[at], sealed[at + 1]]));
        sealed[1..at + 2 + wrapped_len].to_vec()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn records_are_sealed_at_rest_and_open_for_the_reader() {
        let (topic, group) = (unique("sealed"), unique("group"));
        let key = kms_key().await;
        let keys = kms(&key, &[("pipeline", "log-pipeline")]).await;
        let buffer = encrypted_buffer(&topic, &group, keys, Duration::from_secs(3600)).await;
        write(&buffer, 0..20).await;

        let stored = raw_records(&topic, 20);
        assert_eq!(stored.len(), 20);
        for (version, payload, _) in &stored {
            assert_eq!(version, "2", "sealed envelope version");
            assert!(
                !String::from_utf8_lossy(payload).contains("\"n\":"),
                "a record is stored in the clear"
            );
        }
        let one_key: BTreeSet<Vec<u8>> = stored.iter().map(|(_, p, _)| data_key_of(p)).collect();
        assert_eq!(
            one_key.len(),
            1,
            "one data key per lifetime, not per record"
        );

        let mut reader = buffer.reader();
        let got = read(&mut reader, 20, true).await;
        assert_eq!(payloads(&got), expected(0..20));
        let stats = buffer.stats();
        close(buffer, reader).await;
        assert_eq!(stats.decrypt_failures.get(), 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn keys_rotate_and_a_restarted_reader_opens_records_under_every_old_key() {
        let (topic, group) = (unique("rotate"), unique("group"));
        let key = kms_key().await;
        let context = [("pipeline", "rotation")];
        let writer = encrypted_buffer(
            &topic,
            &unique("writer"),
            kms(&key, &context).await,
            Duration::from_millis(800),
        )
        .await;
        for round in 0..3 {
            write(&writer, round * 5..round * 5 + 5).await;
            tokio::time::sleep(Duration::from_millis(1000)).await;
        }
        let stored = raw_records(&topic, 15);
        let keys: BTreeSet<Vec<u8>> = stored.iter().map(|(_, p, _)| data_key_of(p)).collect();
        assert!(keys.len() >= 3, "{} data keys over 3 lifetimes", keys.len());
        writer.close();
        writer.join().await;

        // A new process: nothing cached; every key comes from the records themselves.
        let reader_buffer = encrypted_buffer(
            &topic,
            &group,
            kms(&key, &context).await,
            Duration::from_secs(3600),
        )
        .await;
        let mut reader = reader_buffer.reader();
        let got = read(&mut reader, 15, true).await;
        assert_eq!(payloads(&got), expected(0..15));
        close(reader_buffer, reader).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_changed_byte_or_a_wrong_context_makes_a_record_unreadable_never_garbage() {
        let (topic, group) = (unique("tamper"), unique("group"));
        let key = kms_key().await;
        let context = [("pipeline", "p")];
        let buffer = encrypted_buffer(
            &topic,
            &unique("writer"),
            kms(&key, &context).await,
            Duration::from_secs(3600),
        )
        .await;
        write(&buffer, 0..3).await;
        buffer.close();
        buffer.join().await;

        // Read one stored record, flip a byte of its ciphertext, write it back.
        let stored = raw_records(&topic, 3);
        let (_, payload, headers) = &stored[0];
        let mut tampered = payload.clone();
        let last = tampered.len() - 1;
        tampered[last] ^= 0x01;
        let producer: FutureProducer = rdkafka::ClientConfig::new()
            .set("bootstrap.servers", kafka_bootstrap())
            .create()
            .unwrap();
        let mut copy = OwnedHeaders::new();
        for h in headers.iter() {
            copy = copy.insert(Header {
                key: h.key,
                value: h.value,
            });
        }
        producer
            .send(
                FutureRecord::<(), _>::to(&topic)
                    .payload(&tampered)
                    .headers(copy),
                Duration::from_secs(10),
            )
            .await
            .unwrap();

        let read_all = |buffer: KafkaBuffer| async move {
            let mut reader = buffer.reader();
            let mut ok = Vec::new();
            let mut bad = Vec::new();
            let started = std::time::Instant::now();
            while ok.len() + bad.len() < 4 && started.elapsed() < Duration::from_secs(60) {
                if let Ok(Some(batch)) =
                    tokio::time::timeout(Duration::from_secs(5), reader.read()).await
                {
                    ok.extend(batch.records);
                    bad.extend(batch.unreadable);
                    batch.ack.acknowledge();
                }
            }
            let stats = buffer.stats();
            close(buffer, reader).await;
            (ok, bad, stats.decrypt_failures.get())
        };

        let reader = encrypted_buffer(
            &topic,
            &group,
            kms(&key, &context).await,
            Duration::from_secs(3600),
        )
        .await;
        let (ok, bad, failures) = read_all(reader).await;
        assert_eq!(payloads(&ok), expected(0..3), "the untouched records open");
        assert_eq!(bad.len(), 1, "the tampered copy");
        assert!(bad[0].reason.contains("does not open"), "{}", bad[0].reason);
        assert_eq!(bad[0].record.payload, tampered, "dead-lettered as stored");
        assert_eq!(failures, 1);

        let wrong = encrypted_buffer(
            &topic,
            &unique("group"),
            kms(&key, &[("pipeline", "another")]).await,
            Duration::from_secs(3600),
        )
        .await;
        let (ok, bad, failures) = read_all(wrong).await;
        assert!(ok.is_empty(), "a wrong encryption context opened a record");
        assert_eq!(bad.len(), 4);
        assert!(
            bad.iter().all(|b| b.reason.contains("Decrypt")),
            "{:?}",
            bad[0].reason
        );
        assert_eq!(failures, 4);
    }
}
