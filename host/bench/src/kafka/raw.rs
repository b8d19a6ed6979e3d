//! The baseline: raw librdkafka on the same broker and payload set.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::ensure;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::producer::{FutureProducer, FutureRecord};
use sluice_tests::{create_topic, unique};

use super::Args;
use crate::measure::Cpu;

/// Produces every body while a group consumer reads them; the time until it has all.
/// `senders`: `None` sends everything at once; `Some(n)` has n senders that each wait for
/// their record's acknowledgement, as concurrent HTTP clients of a Kafka-backed source do.
pub(super) async fn raw_librdkafka(
    args: &Args,
    bodies: &[Vec<u8>],
    senders: Option<usize>,
) -> anyhow::Result<Duration> {
    // One topic for each pipeline sluice runs; body `i` goes to topic `i % topics`.
    let mut topics = Vec::with_capacity(args.pipelines);
    for _ in 0..args.pipelines {
        let topic = unique("bench-raw");
        create_topic(&args.bootstrap, &topic, args.partitions)
            .await
            .map_err(anyhow::Error::msg)?;
        topics.push(topic);
    }
    let producer: FutureProducer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", &args.bootstrap)
        .set("acks", "all")
        .set("enable.idempotence", "true")
        .create()?;
    let warm_up = args.warm_up();
    let want = bodies.len() + warm_up;
    let consumed = Arc::new(AtomicUsize::new(0));
    let mut consumers = Vec::new();
    for topic in &topics {
        let group = unique("bench-raw-group");
        for _ in 0..args.consumers() {
            let consumer: BaseConsumer = rdkafka::ClientConfig::new()
                .set("bootstrap.servers", &args.bootstrap)
                .set("group.id", &group)
                .set("enable.auto.commit", "false")
                .set("auto.offset.reset", "earliest")
                .create()?;
            consumer.subscribe(&[topic])?;
            let consumed = consumed.clone();
            consumers.push(std::thread::spawn(move || {
                consume(&consumer, &consumed, want)
            }));
        }
    }
    let topic_of = |i: usize| topics[i % topics.len()].as_str();
    // Warm up until the consumers have joined and read, as sluice's have before its clock
    // starts.
    for (i, body) in bodies[..warm_up].iter().enumerate() {
        let record = FutureRecord::<(), [u8]>::to(topic_of(i)).payload(body.as_slice());
        producer
            .send(record, Duration::from_secs(30))
            .await
            .map_err(|(e, _)| e)?;
    }
    let warm = Instant::now();
    while consumed.load(Ordering::SeqCst) < warm_up {
        ensure!(
            warm.elapsed() < Duration::from_secs(120),
            "raw consumers did not warm up"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let cpu = Cpu::start(None);
    let started = Instant::now();
    match senders {
        // Everything in flight at once: the best librdkafka can do.
        None => {
            let mut deliveries = Vec::with_capacity(bodies.len());
            for (i, body) in bodies.iter().enumerate() {
                let mut record = FutureRecord::<(), [u8]>::to(topic_of(i)).payload(body.as_slice());
                loop {
                    match producer.send_result(record) {
                        Ok(d) => {
                            deliveries.push(d);
                            break;
                        }
                        Err((_, back)) => {
                            record = back;
                            tokio::time::sleep(Duration::from_millis(1)).await;
                        }
                    }
                }
            }
            for d in deliveries {
                d.await?.map_err(|(e, _)| e)?;
            }
        }
        // As an HTTP source must: each sender waits for its record's acknowledgement before
        // it takes the next.
        Some(n) => {
            let bodies = Arc::new(bodies.to_vec());
            let topics = Arc::new(topics.clone());
            let next = Arc::new(AtomicUsize::new(0));
            let mut tasks = tokio::task::JoinSet::new();
            for _ in 0..n {
                let (bodies, next, producer, topics) = (
                    bodies.clone(),
                    next.clone(),
                    producer.clone(),
                    topics.clone(),
                );
                tasks.spawn(async move {
                    loop {
                        let i = next.fetch_add(1, Ordering::SeqCst);
                        let Some(body) = bodies.get(i) else {
                            break;
                        };
                        let topic = &topics[i % topics.len()];
                        let record = FutureRecord::<(), [u8]>::to(topic).payload(body.as_slice());
                        producer
                            .send(record, Duration::from_secs(30))
                            .await
                            .map_err(|(e, _)| e)?;
                    }
                    anyhow::Ok(())
                });
            }
            while let Some(r) = tasks.join_next().await {
                r??;
            }
        }
    }
    tokio::task::block_in_place(|| {
        for c in consumers {
            let _ = c.join();
        }
    });
    let took = started.elapsed();
    println!("  (raw: {})", cpu.report());
    ensure!(
        consumed.load(Ordering::SeqCst) >= want,
        "the raw consumer did not read every record"
    );
    Ok(took)
}

/// A raw consumer's loop: reads and counts until every consumer together has `want` records
/// (at most 10 minutes), committing every 1000 records.
fn consume(consumer: &BaseConsumer, consumed: &AtomicUsize, want: usize) {
    let mut since_commit = 0;
    let started = Instant::now();
    while consumed.load(Ordering::SeqCst) < want && started.elapsed() < Duration::from_secs(600) {
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(_)) => {
                consumed.fetch_add(1, Ordering::SeqCst);
                since_commit += 1;
                if since_commit >= 1000 {
                    let _ = consumer.commit_consumer_state(CommitMode::Async);
                    since_commit = 0;
                }
            }
            Some(Err(e)) => eprintln!("raw consumer: {e}"),
            None => {}
        }
    }
    let _ = consumer.commit_consumer_state(CommitMode::Sync);
}
