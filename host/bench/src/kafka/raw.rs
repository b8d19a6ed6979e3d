//! The baseline: raw librdkafka on the same broker and payload set.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::ensure;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::producer::{FutureProducer, FutureRecord};
use sluice_tests::{create_topic, unique};

use super::{Args, WARM_UP};
use crate::measure::Cpu;

/// Produces every body while a group consumer reads them; the time until it has all.
/// `senders`: `None` sends everything at once; `Some(n)` has n senders that each wait for
/// their record's acknowledgement, as concurrent HTTP clients of a Kafka-backed source do.
pub(super) async fn raw_librdkafka(
    args: &Args,
    bodies: &[Vec<u8>],
    senders: Option<usize>,
) -> anyhow::Result<Duration> {
    let topic = unique("bench-raw");
    create_topic(&args.bootstrap, &topic, args.partitions)
        .await
        .map_err(anyhow::Error::msg)?;
    let producer: FutureProducer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", &args.bootstrap)
        .set("acks", "all")
        .set("enable.idempotence", "true")
        .create()?;
    let want = bodies.len() + WARM_UP;
    let consumed = Arc::new(AtomicUsize::new(0));
    let mut consumers = Vec::new();
    let group = unique("bench-raw-group");
    for _ in 0..args.partitions {
        let consumer: BaseConsumer = rdkafka::ClientConfig::new()
            .set("bootstrap.servers", &args.bootstrap)
            .set("group.id", &group)
            .set("enable.auto.commit", "false")
            .set("auto.offset.reset", "earliest")
            .create()?;
        consumer.subscribe(&[&topic])?;
        let consumed = consumed.clone();
        consumers.push(std::thread::spawn(move || {
            let mut since_commit = 0;
            let started = Instant::now();
            while consumed.load(Ordering::SeqCst) < want
                && started.elapsed() < Duration::from_secs(600)
            {
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
        }));
    }
    // Warm up until the consumers have joined and read, as sluice's have before its clock
    // starts.
    for body in &bodies[..WARM_UP] {
        let record = FutureRecord::<(), [u8]>::to(&topic).payload(body.as_slice());
        producer
            .send(record, Duration::from_secs(30))
            .await
            .map_err(|(e, _)| e)?;
    }
    let warm = Instant::now();
    while consumed.load(Ordering::SeqCst) < WARM_UP {
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
            for body in bodies {
                let mut record = FutureRecord::<(), [u8]>::to(&topic).payload(body.as_slice());
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
            let next = Arc::new(AtomicUsize::new(0));
            let mut tasks = tokio::task::JoinSet::new();
            for _ in 0..n {
                let (bodies, next, producer, topic) = (
                    bodies.clone(),
                    next.clone(),
                    producer.clone(),
                    topic.clone(),
                );
                tasks.spawn(async move {
                    while let Some(body) = bodies.get(next.fetch_add(1, Ordering::SeqCst)) {
                        let record = FutureRecord::<(), [u8]>::to(&topic).payload(body.as_slice());
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
