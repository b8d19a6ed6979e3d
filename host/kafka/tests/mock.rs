//! The fast tier of the Kafka buffer: write, read, acknowledge, commit and close on
//! librdkafka's in-process mock cluster (`rdkafka::mocking::MockCluster`), with nothing
//! external. The real-broker tests (`tests/kafka_buffer`) cover what the mock cannot show
//! (restarts, broker outages, other clients' records).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::mocking::MockCluster;
use rdkafka::producer::DefaultProducerContext;
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};
use sluice_buffer::{Batch, Buffer, BufferReader, Record};
use sluice_kafka::{KafkaBuffer, KafkaBufferConfig};

const TOPIC: &str = "mock-buffer";
const GROUP: &str = "mock-group";

/// The one place the tests build the buffer's settings.
fn config(bootstrap: String) -> KafkaBufferConfig {
    KafkaBufferConfig {
        bootstrap_servers: vec![bootstrap],
        topic: TOPIC.to_owned(),
        group_id: GROUP.to_owned(),
        consumers: 1,
        batch_size: 4,
        delay: Duration::from_millis(20),
        commit_interval: Duration::from_millis(100),
        auto_offset_reset: "earliest".to_owned(),
        session_timeout: Duration::from_secs(6),
        max_poll_interval: Duration::from_secs(7),
        group_instance_id: None,
        produce_timeout: Duration::from_secs(10),
        drain_timeout: Duration::from_secs(10),
        max_request_size: 1 << 20,
        // The mock cluster's topics are made with `MockCluster::create_topic`.
        create_topic: None,
        sasl: None,
        tls: None,
        producer_properties: BTreeMap::new(),
        consumer_properties: BTreeMap::new(),
        encryption: None,
        pipeline: "mock".to_owned(),
        metric_prefix: "kafka_buffer".to_owned(),
    }
}

fn record(i: usize) -> Record {
    Record {
        payload: format!("{{\"n\":{i}}}").into_bytes(),
        key: None,
        received_at_ms: 1_700_000_000_000 + i as u64,
        origin: "http:/log/ingest".to_owned(),
        content_type: None,
        headers: Vec::new(),
        ..Default::default()
    }
}

/// The next batch, or `None` if none came within 30 s.
async fn next(reader: &mut Box<dyn BufferReader>) -> Option<Batch> {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(30) {
        if let Ok(batch) = tokio::time::timeout(Duration::from_secs(1), reader.read()).await {
            return batch;
        }
    }
    None
}

/// What `GROUP` has committed on partition 0 of `TOPIC` (0 if nothing), asked off the reactor.
async fn committed(bootstrap: &str) -> i64 {
    let bootstrap = bootstrap.to_owned();
    tokio::task::spawn_blocking(move || committed_blocking(&bootstrap))
        .await
        .unwrap()
}

fn committed_blocking(bootstrap: &str) -> i64 {
    let consumer: BaseConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", GROUP)
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let mut list = TopicPartitionList::new();
    list.add_partition(TOPIC, 0);
    let committed = consumer
        .committed_offsets(list, Duration::from_secs(10))
        .unwrap();
    match committed.find_partition(TOPIC, 0).map(|e| e.offset()) {
        Some(Offset::Offset(o)) => o,
        _ => 0,
    }
}

/// Closes the buffer, acknowledging what is still read, and waits for the last commit.
async fn close(buffer: &KafkaBuffer, mut reader: Box<dyn BufferReader>) {
    buffer.close();
    let drained = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(batch) = reader.read().await {
            batch.ack.acknowledge();
        }
    })
    .await;
    assert!(drained.is_ok(), "the reader did not end after close");
    buffer.join().await;
}

/// A mock cluster with the test topic, a buffer connected to it, and `n` records written
/// through the buffer. The cluster lives as long as the value returned.
async fn written(
    n: usize,
) -> (
    MockCluster<'static, DefaultProducerContext>,
    String,
    KafkaBuffer,
) {
    let cluster = MockCluster::new(1).unwrap();
    cluster.create_topic(TOPIC, 1, 1).unwrap();
    let bootstrap = cluster.bootstrap_servers();
    let buffer = KafkaBuffer::connect(config(bootstrap.clone()))
        .await
        .unwrap();
    buffer
        .writer()
        .write((0..n).map(record).collect(), Duration::from_secs(10))
        .await
        .expect("the mock cluster acknowledges the write");
    (cluster, bootstrap, buffer)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_batches_commit_and_an_unacknowledged_one_holds_the_commit_back() {
    let (_cluster, bootstrap, buffer) = written(10).await;
    let mut reader = buffer.reader();

    // Read everything; hold back the first batch, acknowledge the rest.
    let first = next(&mut reader).await.expect("a first batch");
    let mut seen: Vec<Vec<u8>> = first.records.iter().map(|r| r.payload.clone()).collect();
    let held = first.records.len();
    assert!(held < 10, "batches of at most 4 records, got {held}");
    while seen.len() < 10 {
        let batch = next(&mut reader).await.expect("the rest of the records");
        seen.extend(batch.records.iter().map(|r| r.payload.clone()));
        batch.ack.acknowledge();
    }
    let want: Vec<Vec<u8>> = (0..10).map(|i| record(i).payload).collect();
    assert_eq!(seen, want, "every record once, in order");

    tokio::time::sleep(Duration::from_millis(600)).await;
    let before = committed(&bootstrap).await;
    assert_eq!(
        before, 0,
        "nothing commits past the unacknowledged first batch ({held} records)"
    );

    first.ack.acknowledge();
    let started = Instant::now();
    loop {
        let now = committed(&bootstrap).await;
        if now == 10 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "committed {now} of 10 after the gap was acknowledged"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    close(&buffer, reader).await;
    let stats = buffer.stats();
    assert_eq!(stats.records_written.get(), 10);
    assert_eq!(stats.records_consumed.get(), 10);
}

/// Waits up to 20 s until `GROUP` has committed `want` on partition 0.
async fn wait_committed(bootstrap: &str, want: i64, what: &str) {
    let started = Instant::now();
    loop {
        let now = committed(bootstrap).await;
        if now == want {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{what}: committed {now} of {want} within 20 s, the consumer still running"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_consumer_keeps_committing_round_after_round() {
    // Checked while the consumer runs, not after a close (whose commit waits for the broker
    // whatever the schedule does): every round's scheduled commit must reach the broker.
    // Scheduled commits sent asynchronously, whose results rust-rdkafka 0.38 never reports,
    // stopped after the first.
    let (_cluster, bootstrap, buffer) = written(4).await;
    let (writer, stats) = (buffer.writer(), buffer.stats());
    let mut reader = buffer.reader();
    let (mut written, mut read) = (4, 0);
    for round in 0..5 {
        if round > 0 {
            writer
                .write(
                    (written..written + 4).map(record).collect(),
                    Duration::from_secs(10),
                )
                .await
                .unwrap();
            written += 4;
        }
        while read < written {
            let batch = next(&mut reader).await.expect("the round's records");
            read += batch.records.len();
            batch.ack.acknowledge();
        }
        wait_committed(&bootstrap, written as i64, &format!("round {round}")).await;
    }
    let started = Instant::now();
    while stats.records_committed.get() < written as u64 {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the broker has the commits, the counter says {}",
            stats.records_committed.get()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    close(&buffer, reader).await;
    assert_eq!(stats.records_committed.get(), written as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_drains_what_was_read_then_commits_it() {
    let (_cluster, bootstrap, buffer) = written(5).await;
    let mut reader = buffer.reader();
    let batch = next(&mut reader).await.expect("a batch");
    let mut n = batch.records.len();
    // Acknowledged only after close was called: the drain still commits it.
    buffer.close();
    batch.ack.acknowledge();
    while let Some(batch) = tokio::time::timeout(Duration::from_secs(30), reader.read())
        .await
        .expect("the reader ends after close")
    {
        n += batch.records.len();
        batch.ack.acknowledge();
    }
    buffer.join().await;
    let after = committed(&bootstrap).await;
    assert_eq!(
        after, n as i64,
        "what was read and acknowledged is committed at close"
    );
    assert!(
        buffer
            .writer()
            .write(vec![record(99)], Duration::from_secs(1))
            .await
            .is_err(),
        "a closed buffer refuses writes"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_behind_longer_than_max_poll_interval_pause_reading_but_keep_the_membership() {
    let cluster = MockCluster::new(1).unwrap();
    cluster.create_topic(TOPIC, 1, 1).unwrap();
    let bootstrap = cluster.bootstrap_servers();
    // A consumer that does not poll for `max_poll_interval` (7 s here; the mock broker, like
    // Kafka, refuses sessions under 6 s) is put out of the group by librdkafka.
    let settings = config(bootstrap.clone());
    let stall = settings.max_poll_interval + Duration::from_secs(3);
    let buffer = KafkaBuffer::connect(settings).await.unwrap();
    let writer = buffer.writer();
    writer
        .write((0..10).map(record).collect(), Duration::from_secs(10))
        .await
        .unwrap();
    // A reader that takes nothing: the one batch the channel holds is handed out, then the
    // consumer is behind. More records arrive while it is.
    let mut reader = buffer.reader();
    let stats = buffer.stats();
    let started = Instant::now();
    while stats.records_consumed.get() == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the consumer joined and read nothing in 30 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    writer
        .write((10..20).map(record).collect(), Duration::from_secs(10))
        .await
        .unwrap();
    // Behind for one second before pausing, then past max.poll.interval.
    tokio::time::sleep(stall).await;
    assert_eq!(
        stats.records_consumed.get(),
        4,
        "while behind, nothing is read past the one batch the channel holds"
    );
    assert_eq!(
        stats.partitions_revoked.get(),
        0,
        "the paused consumer kept polling, so it stayed in the group past max.poll.interval"
    );

    let mut seen = Vec::new();
    while seen.len() < 20 {
        let batch = next(&mut reader).await.expect("reading resumes");
        seen.extend(batch.records.iter().map(|r| r.payload.clone()));
        batch.ack.acknowledge();
    }
    let want: Vec<Vec<u8>> = (0..20).map(|i| record(i).payload).collect();
    assert_eq!(seen, want, "after the pause, every record once, in order");
    assert_eq!(stats.partitions_revoked.get(), 0);
    close(&buffer, reader).await;
    assert_eq!(stats.records_consumed.get(), 20);
}
