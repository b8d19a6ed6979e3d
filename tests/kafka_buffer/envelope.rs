//! Records the buffer reads but cannot open (an unknown envelope version) and records
//! written by other producers (no envelope), read raw.

#[allow(unused_imports, reason = "the parent's imports, taken whole")]
use super::*;

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
    let timeout = Duration::from_secs(60);
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
    while readable.len() + unreadable.len() < 2 && started.elapsed() < READ_WAIT {
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
                Duration::from_secs(60),
            )
            .await
            .unwrap();

        let read_all = |buffer: KafkaBuffer| async move {
            let mut reader = buffer.reader();
            let mut ok = Vec::new();
            let mut bad = Vec::new();
            let started = std::time::Instant::now();
            while ok.len() + bad.len() < 4 && started.elapsed() < crate::kafka_buffer::READ_WAIT {
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
