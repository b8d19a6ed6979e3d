//! The Kafka buffer library against a real broker: what is written comes back once, with its
//! metadata; closing ends the reader; an unreachable broker fails the write.
//!
//! Not yet covered: a second consumer of the same group after a commit. Against Nisshi 0.8.1 it
//! received nothing within 60 s (also with a 6 s session timeout); not yet investigated.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use sluice_buffer::{Buffer, Record, WriteError};
use sluice_kafka::{KafkaBuffer, KafkaBufferConfig};
use sluice_tests::{free_port, kafka_bootstrap, unique};

fn config(bootstrap: String, topic: &str, group: &str) -> KafkaBufferConfig {
    KafkaBufferConfig {
        bootstrap_servers: vec![bootstrap],
        topic: topic.to_owned(),
        group_id: group.to_owned(),
        batch_size: 16,
        delay: Duration::from_millis(50),
        commit_interval: Duration::from_millis(200),
        auto_offset_reset: "earliest".to_owned(),
        delivery_timeout: Duration::from_secs(10),
        producer_properties: BTreeMap::new(),
        // Short, so a member that went away without leaving does not hold the group for 45 s.
        consumer_properties: BTreeMap::from([("session.timeout.ms".to_owned(), "6000".to_owned())]),
    }
}

fn record(i: usize) -> Record {
    Record {
        payload: format!("{{\"n\":{i}}}").into_bytes(),
        key: Some(format!("k{i}").into_bytes()),
        received_at_ms: 1_700_000_000_000 + i as u64,
        origin: "http:/log/ingest".to_owned(),
    }
}

/// Reads with one reader until `want` records arrived or 60 s passed, acknowledging each batch.
async fn read_all(
    group_reader: &mut Box<dyn sluice_buffer::BufferReader>,
    want: usize,
) -> Vec<Record> {
    let mut got = Vec::new();
    let started = Instant::now();
    while got.len() < want && started.elapsed() < Duration::from_secs(60) {
        let Ok(Some(batch)) =
            tokio::time::timeout(Duration::from_secs(5), group_reader.read()).await
        else {
            continue;
        };
        got.extend(batch.records);
        batch.ack.acknowledge();
    }
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_round_trip_once_with_their_metadata() {
    let topic = unique("sluice-rt");
    let group = unique("group");
    let buffer = KafkaBuffer::new(config(kafka_bootstrap(), &topic, &group)).unwrap();
    let writer = buffer.writer();
    for i in 0..40 {
        writer
            .write(vec![record(i)], Duration::from_secs(15))
            .await
            .unwrap();
    }

    let mut reader = buffer.reader();
    let got = read_all(&mut reader, 40).await;
    let payloads: BTreeSet<Vec<u8>> = got.iter().map(|r| r.payload.clone()).collect();
    assert_eq!(got.len(), 40, "each record exactly once");
    assert_eq!(payloads, (0..40).map(|i| record(i).payload).collect());
    let first = got.iter().find(|r| r.payload == record(0).payload).unwrap();
    assert_eq!(first.key, record(0).key);
    assert_eq!(
        first.received_at_ms,
        record(0).received_at_ms,
        "receive time survives the buffer"
    );
    // `topic/partition@offset`; an auto-created topic may have several partitions.
    let (partition, offset) = first
        .origin
        .strip_prefix(&format!("{topic}/"))
        .and_then(|r| r.split_once('@'))
        .unwrap();
    assert!(
        partition.parse::<i32>().is_ok() && offset.parse::<i64>().is_ok(),
        "{}",
        first.origin
    );

    // Closing commits what was acknowledged and ends the reader.
    buffer.close();
    assert!(reader.read().await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_broker_fails_the_write_within_the_timeout() {
    let mut c = config(format!("127.0.0.1:{}", free_port()), "nowhere", "g");
    c.delivery_timeout = Duration::from_secs(1);
    let buffer = KafkaBuffer::new(c).unwrap();
    let started = Instant::now();
    let err = buffer
        .writer()
        .write(vec![record(1)], Duration::from_secs(3))
        .await
        .unwrap_err();
    assert!(matches!(err, WriteError::Unavailable(_)), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
}
