//! The Kafka buffer library against a real broker: what is written comes back once with its
//! metadata; acknowledged offsets are committed and a restart resumes after them;
//! unacknowledged batches are read again; a consumer whose workers are stalled stays in the
//! group; an unreachable broker fails fast; a keyed record lands in the partition the buffer
//! says it will; buffers with the same client settings share a producer.

mod envelope;

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
        // Shorter than the 45 s default, so a member that went away without leaving does not
        // hold the group long, yet three heartbeats long (3 s each): a loaded machine or
        // broker that answers one late does not make the group evict a live member.
        session_timeout: Duration::from_secs(10),
        max_poll_interval: Duration::from_secs(10),
        group_instance_id: None,
        // Generous: a loaded broker creates a topic and answers a produce slowly.
        produce_timeout: Duration::from_secs(30),
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
        headers: Vec::new(),
        ..Default::default()
    }
}

async fn write(buffer: &KafkaBuffer, range: std::ops::Range<usize>) {
    let records = range.map(record).collect();
    buffer
        .writer()
        .write(records, Duration::from_secs(60))
        .await
        .unwrap();
}

/// How long a test waits for records it wrote to be read: a group's join and a loaded broker's
/// fetches included, generous for a loaded 2-core machine.
const READ_WAIT: Duration = Duration::from_secs(120);

/// Reads until `want` records arrived (copies counted) or [`READ_WAIT`] passed,
/// acknowledging each batch if `ack`.
async fn read(reader: &mut Box<dyn BufferReader>, want: usize, ack: bool) -> Vec<Record> {
    let mut got = Vec::new();
    let started = Instant::now();
    while got.len() < want && started.elapsed() < READ_WAIT {
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

/// Reads, acknowledging, until every payload of `want` arrived (a copy a rebalance handed out
/// twice is not counted twice); fails after [`READ_WAIT`] with what it read and the buffer's
/// counts.
async fn read_all(
    buffer: &KafkaBuffer,
    reader: &mut Box<dyn BufferReader>,
    want: BTreeSet<Vec<u8>>,
) -> Vec<Record> {
    let mut got = Vec::new();
    let started = Instant::now();
    while !payloads(&got).is_superset(&want) {
        let stats = buffer.stats();
        assert!(
            started.elapsed() < READ_WAIT,
            "read {} of {} records ({} with copies) within {READ_WAIT:?}; consumed {}, \
             committed {}, revoked {}, poll errors {}",
            payloads(&got).intersection(&want).count(),
            want.len(),
            got.len(),
            stats.records_consumed.get(),
            stats.records_committed.get(),
            stats.partitions_revoked.get(),
            stats.poll_errors.get(),
        );
        if let Ok(Some(batch)) = tokio::time::timeout(Duration::from_secs(5), reader.read()).await {
            got.extend(batch.records);
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
    // Its drain (`drain_timeout`), the last commit and leaving the group, on a loaded broker.
    let end = tokio::time::timeout(Duration::from_secs(90), async {
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
async fn acknowledged_batches_are_committed_while_the_buffer_runs() {
    // Read from the broker before the close (whose commit waits for the broker whatever the
    // schedule did): each round's scheduled commit reaches it. Scheduled commits sent
    // asynchronously, whose results rust-rdkafka 0.38 never reports, stopped after the first.
    let (topic, group) = (unique("sluice-running"), unique("group"));
    let buffer = KafkaBuffer::connect(config(kafka_bootstrap(), &topic, &group))
        .await
        .unwrap();
    let stats = buffer.stats();
    let mut reader = buffer.reader();
    for round in 0..3 {
        let range = round * 30..(round + 1) * 30;
        write(&buffer, range.clone()).await;
        read_all(&buffer, &mut reader, expected(range.clone())).await;
        let want = range.end as i64;
        let started = Instant::now();
        loop {
            let (bootstrap, topic, group) = (kafka_bootstrap(), topic.clone(), group.clone());
            let committed = tokio::task::spawn_blocking(move || {
                sluice_tests::committed_and_end(&bootstrap, &topic, &group)[0].1
            })
            .await
            .unwrap();
            if committed == want && stats.records_committed.get() == want as u64 {
                break;
            }
            assert!(
                started.elapsed() < READ_WAIT,
                "round {round}: committed {committed} of {want} (counted {}) within \
                 {READ_WAIT:?}, the buffer still running",
                stats.records_committed.get()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    close(buffer, reader).await;
    assert_eq!(stats.records_committed.get(), 90);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buffers_with_the_same_client_settings_share_a_producer_and_keep_their_records_apart() {
    let connect = |linger: Option<&str>| {
        let mut c = config(
            kafka_bootstrap(),
            &unique("sluice-shared"),
            &unique("group"),
        );
        if let Some(ms) = linger {
            c.producer_properties
                .insert("linger.ms".to_owned(), ms.to_owned());
        }
        async move { KafkaBuffer::connect(c).await.unwrap() }
    };
    let a = connect(None).await;
    let b = connect(None).await;
    let other = connect(Some("7")).await;
    assert!(
        a.shares_producer_with(&b),
        "same settings, other topic: one producer"
    );
    assert!(
        !a.shares_producer_with(&other),
        "other producer_properties: a producer of its own"
    );
    // Each buffer's records go to its own topic and come back from it alone.
    write(&a, 0..20).await;
    write(&b, 100..130).await;
    write(&other, 200..210).await;
    for (buffer, range) in [(a, 0..20), (b, 100..130), (other, 200..210)] {
        let mut reader = buffer.reader();
        let got = read_all(&buffer, &mut reader, expected(range.clone())).await;
        assert_eq!(payloads(&got), expected(range.clone()), "{range:?}");
        close(buffer, reader).await;
    }
    // The producer went with the last buffer using it; the next buffer makes a new one.
    let again = connect(None).await;
    write(&again, 300..305).await;
    let mut reader = again.reader();
    assert_eq!(
        payloads(&read_all(&again, &mut reader, expected(300..305)).await),
        expected(300..305)
    );
    close(again, reader).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyed_record_lands_in_the_partition_the_buffer_says() {
    // The OTLP trace sources put traces together by this answer: it must be the partition
    // librdkafka's default partitioner picks.
    let topic = unique("sluice-keyed");
    let mut config = config(kafka_bootstrap(), &topic, &unique("group"));
    config.create_topic = Some(sluice_kafka::CreateTopic {
        partitions: 5,
        replication_factor: 1,
    });
    config.consumers = 2;
    let buffer = KafkaBuffer::connect(config).await.unwrap();
    write(&buffer, 0..60).await;
    let mut reader = buffer.reader();
    let got = read(&mut reader, 60, true).await;
    assert_eq!(got.len(), 60);
    let writer = buffer.writer();
    let mut partitions = BTreeSet::new();
    for r in &got {
        let (key, at) = (r.key.as_ref().unwrap(), r.position.as_ref().unwrap());
        assert_eq!(
            writer.partition_of(key),
            Some(u32::try_from(at.partition).unwrap()),
            "key {}",
            String::from_utf8_lossy(key)
        );
        partitions.insert(at.partition);
    }
    assert_eq!(partitions.len(), 5, "60 keys spread over every partition");
    assert_eq!(writer.partition_of(b""), None, "an empty key goes anywhere");
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
    let first = tokio::time::timeout(READ_WAIT, reader.read())
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
    let stall = c.max_poll_interval + Duration::from_secs(5);
    let buffer = KafkaBuffer::connect(c).await.unwrap();
    write(&buffer, 0..50).await;
    let mut reader = buffer.reader();
    let first = read(&mut reader, 1, false).await;
    assert!(!first.is_empty(), "nothing read within {READ_WAIT:?}");
    // Workers take nothing for longer than max.poll.interval: the channel fills, the consumer
    // pauses but keeps polling, so it is not kicked out of the group. (The stall is the
    // premise: a loaded machine only makes it longer.)
    tokio::time::sleep(stall).await;
    let stats = buffer.stats();
    assert!(
        stats.records_consumed.get() < 50,
        "a paused consumer still read everything"
    );
    let unacknowledged = &expected(0..50) - &payloads(&first);
    let rest = read_all(&buffer, &mut reader, unacknowledged).await;
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
        // Not the minutes librdkafka would keep trying (a generous bound for a loaded machine).
        started.elapsed() < Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );
}
