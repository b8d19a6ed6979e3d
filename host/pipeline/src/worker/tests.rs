//! The worker loop over an in-memory buffer, file sinks and the inline WAT deserializer
//! (`sluice_plugin::testing`): what reaches the sinks, what reaches the dead-letter file, and
//! that a batch is acknowledged only after both.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use sluice_buffer::memory::MemoryBuffer;
use sluice_buffer::{Buffer, Record};
use sluice_plugin::testing::hostile_component;
use sluice_plugin::{Decoder, Limits, PluginHost};

use super::Delivery;
use crate::counters::Counters;
use crate::follow::Following;
use crate::sink::Sink;
use crate::sink::dlq::DeadLetters;
use crate::sink::file::FileSink;
use crate::watchdog::Watchdog;

fn record(payload: &[u8]) -> Record {
    Record {
        payload: payload.to_vec(),
        key: None,
        received_at_ms: 7,
        origin: format!("test:{}", String::from_utf8_lossy(payload)),
        content_type: Some("text/plain".to_owned()),
        headers: Vec::new(),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_go_to_every_sink_rejects_to_the_dlq_and_the_batch_is_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let host = PluginHost::new(None).unwrap();
    let plugin = host
        .load_bytes(
            "hostile",
            "hostile.wat",
            hostile_component(false).as_bytes(),
        )
        .unwrap();
    let limits = Limits::default();
    // Instantiating blocks on the decoder's own runtime: off the reactor, as `run` does.
    let p = plugin.clone();
    let decoder = tokio::task::spawn_blocking(move || Decoder::new(p, vec![], limits))
        .await
        .unwrap()
        .unwrap();
    let (_publish, updates) = tokio::sync::watch::channel(plugin);

    let dlq_path = dir.path().join("dlq.jsonl");
    let dead_letters = Arc::new(DeadLetters::open(&dlq_path, "p").await.unwrap());
    let mut sinks = Vec::new();
    for name in ["a.jsonl", "b.jsonl"] {
        let path = dir.path().join(name);
        let file = Arc::new(FileSink::open(&path).await.unwrap());
        sinks.push(Arc::new(Sink::new(
            "p",
            sluice_config::sink::file::name(&path),
            file,
            dead_letters.clone(),
            Duration::ZERO,
        )));
    }
    let delivery = Arc::new(Delivery {
        pipeline: "p".to_owned(),
        event_type: "LOG",
        connected: false,
        router: super::Router::every_event(sinks.len()),
        sinks,
        dead_letters,
        counters: Arc::new(Counters::new("p", "bounded_blocking")),
        per_record: false,
        tap: Arc::default(),
        decorate: None,
    });
    // Tapped at the deserializer and at sink `b`: each hears the batch's two events.
    use crate::operate::tap::Point;
    let mut parsed = delivery.tap.listen(Point::Deserializer);
    let sink_b = format!("file:{}", dir.path().join("b.jsonl").display());
    let mut at_b = delivery.tap.listen(Point::Sink(sink_b.clone()));

    let buffer = MemoryBuffer::new("p", 10, 10, Duration::from_millis(20));
    buffer
        .writer()
        .write(
            vec![record(b"one"), record(b"M"), record(b"T"), record(b"two")],
            Duration::from_secs(1),
        )
        .await
        .unwrap();
    buffer.close();
    let slot = Watchdog::default().slot("p", 0);
    let decoder = Following::new("p", decoder, updates, vec![], limits);
    tokio::time::timeout(
        Duration::from_secs(30),
        super::run(buffer.reader(), decoder, Vec::new(), delivery.clone(), slot),
    )
    .await
    .expect("the worker ends once the closed buffer is drained");

    for sink in ["a.jsonl", "b.jsonl"] {
        assert_eq!(
            std::fs::read_to_string(dir.path().join(sink)).unwrap(),
            "{\"wat\":true}\n{\"wat\":true}\n",
            "{sink} holds the events of the two good records"
        );
    }
    let dead: Vec<Value> = std::fs::read_to_string(&dlq_path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let reasons: Vec<(&str, &str)> = dead
        .iter()
        .map(|d| (d["origin"].as_str().unwrap(), d["reason"].as_str().unwrap()))
        .collect();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert_eq!(reasons[0], ("test:M", "bad record"));
    assert_eq!(reasons[1].0, "test:T");
    assert!(
        reasons[1].1.starts_with("plugin trapped: "),
        "{}",
        reasons[1].1
    );
    assert_eq!(dead[1]["content_type"], "text/plain");
    for (listener, point) in [
        (&mut parsed, Point::Deserializer),
        (&mut at_b, Point::Sink(sink_b)),
    ] {
        let heard = listener.next().await.unwrap();
        assert_eq!(heard.point, point);
        assert_eq!(heard.events, ["{\"wat\":true}", "{\"wat\":true}"]);
    }
    assert_eq!(buffer.used(), 0, "every record was acknowledged");
    let c = &delivery.counters;
    assert_eq!(
        (
            c.consumed.get(),
            c.events.get(),
            c.dead_lettered.get(),
            c.failed_to_parse.get()
        ),
        (4, 2, 2, 2)
    );
}
