//! The machinery every sink shares, over a scripted output: retries hold the batch's
//! acknowledgement, refused events reach the dead-letter file with the reason and are not sent
//! again, staging acknowledges a batch only once its events are sent.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;

use super::dlq::DeadLetters;
use super::{Output, Provenance, Receipt, Retry, SendError, Sink, Threshold};

/// Answers from a script (then `Ok`), and records what it was sent.
#[derive(Default)]
struct Scripted {
    answers: Mutex<VecDeque<Result<(), SendError>>>,
    sent: Mutex<Vec<Vec<String>>>,
    threshold: Option<Threshold>,
    max_retries: Option<u32>,
}

#[async_trait::async_trait]
impl Output for Scripted {
    async fn send(&self, events: &[Bytes], _: &Provenance) -> Result<(), SendError> {
        let texts = events
            .iter()
            .map(|e| String::from_utf8_lossy(e).into_owned())
            .collect();
        self.sent.lock().unwrap().push(texts);
        self.answers.lock().unwrap().pop_front().unwrap_or(Ok(()))
    }

    fn threshold(&self) -> Option<Threshold> {
        self.threshold
    }

    fn retry(&self) -> Retry {
        // Real time, kept short.
        Retry {
            initial_backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(4),
            max_retries: self.max_retries,
        }
    }
}

fn events(names: &[&str]) -> Vec<Bytes> {
    names
        .iter()
        .map(|n| Bytes::from(format!("{{\"n\":\"{n}\"}}")))
        .collect()
}

fn receipt() -> (Arc<AtomicUsize>, Receipt) {
    let acked = Arc::new(AtomicUsize::new(0));
    let a = acked.clone();
    let r = Receipt::split(1, move || {
        a.fetch_add(1, Ordering::SeqCst);
    })
    .remove(0);
    (acked, r)
}

async fn sink(output: Arc<Scripted>) -> (Sink, tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dlq.jsonl");
    let dlq = Arc::new(DeadLetters::open(&path, "p").await.unwrap());
    (
        Sink::new("p", "scripted".to_owned(), output, dlq, Duration::ZERO),
        dir,
        path,
    )
}

fn dead(path: &std::path::Path) -> Vec<(String, String)> {
    let b64 = base64::engine::general_purpose::STANDARD;
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            use base64::Engine as _;
            let payload = b64.decode(v["payload"].as_str().unwrap()).unwrap();
            (
                String::from_utf8(payload).unwrap(),
                v["reason"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_retryable_failure_is_sent_again_and_the_batch_waits_for_it() {
    let output = Arc::new(Scripted::default());
    output.answers.lock().unwrap().extend([
        Err(SendError::Retry("503".into())),
        Err(SendError::Retry("503".into())),
    ]);
    let (sink, _dir, dlq) = sink(output.clone()).await;
    let (acked, r) = receipt();
    sink.take(
        super::Take::Lines(events(&["a", "b"]), Default::default()),
        r,
    )
    .await;
    assert_eq!(acked.load(Ordering::SeqCst), 1);
    let sent = output.sent.lock().unwrap().clone();
    assert_eq!(sent.len(), 3, "two failures, then taken");
    assert!(sent.iter().all(|s| s.len() == 2));
    assert!(dead(&dlq).is_empty());
}

#[tokio::test]
async fn refused_events_are_dead_lettered_and_only_the_rest_sent_again() {
    let output = Arc::new(Scripted::default());
    output
        .answers
        .lock()
        .unwrap()
        .push_back(Err(SendError::Partial {
            rejected: vec![(1, "record too large".into())],
            retry: vec![2],
            reason: "timed out".into(),
        }));
    let (sink, _dir, dlq) = sink(output.clone()).await;
    let (acked, r) = receipt();
    sink.take(
        super::Take::Lines(events(&["a", "b", "c"]), Default::default()),
        r,
    )
    .await;
    assert_eq!(acked.load(Ordering::SeqCst), 1);
    let sent = output.sent.lock().unwrap().clone();
    assert_eq!(
        sent[1],
        vec!["{\"n\":\"c\"}"],
        "only the retryable one again"
    );
    assert_eq!(
        dead(&dlq),
        vec![("{\"n\":\"b\"}".to_owned(), "record too large".to_owned())]
    );
}

#[tokio::test]
async fn out_of_retries_the_events_go_to_the_dead_letter_file_with_the_last_reason() {
    let output = Arc::new(Scripted {
        max_retries: Some(2),
        ..Scripted::default()
    });
    output
        .answers
        .lock()
        .unwrap()
        .extend((0..5).map(|i| Err(SendError::Retry(format!("503 #{i}")))));
    let (sink, _dir, dlq) = sink(output.clone()).await;
    let (acked, r) = receipt();
    sink.take(super::Take::Lines(events(&["a"]), Default::default()), r)
        .await;
    assert_eq!(acked.load(Ordering::SeqCst), 1, "dead-lettered is done");
    assert_eq!(output.sent.lock().unwrap().len(), 3);
    let d = dead(&dlq);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].1, "gave up after 3 attempts: 503 #2");
}

#[tokio::test]
async fn a_staged_sink_acknowledges_a_batch_once_the_request_holding_it_is_sent() {
    let output = Arc::new(Scripted {
        threshold: Some(Threshold {
            event_count: Some(3),
            maximum_size: None,
            event_collect_timeout: Some(Duration::from_millis(300)),
        }),
        ..Scripted::default()
    });
    let (sink, _dir, _dlq) = sink(output.clone()).await;
    let (first, r1) = receipt();
    let (second, r2) = receipt();
    let (third, r3) = receipt();
    sink.take(
        super::Take::Lines(events(&["a", "b"]), Default::default()),
        r1,
    )
    .await;
    sink.take(
        super::Take::Lines(events(&["c", "d"]), Default::default()),
        r2,
    )
    .await;
    // Let the sink's task send (well before the collect timeout).
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        first.load(Ordering::SeqCst),
        1,
        "a, b, c went in one request"
    );
    assert_eq!(second.load(Ordering::SeqCst), 0, "d is still staged");
    sink.take(super::Take::Lines(events(&["e"]), Default::default()), r3)
        .await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(
        (second.load(Ordering::SeqCst), third.load(Ordering::SeqCst)),
        (1, 1),
        "event_collect_timeout sent d and e"
    );
    let sent = output.sent.lock().unwrap().clone();
    assert_eq!(sent.iter().map(Vec::len).collect::<Vec<_>>(), [3, 2]);
    sink.close().await;
}

#[tokio::test]
async fn close_sends_what_is_staged() {
    let output = Arc::new(Scripted {
        threshold: Some(Threshold {
            event_count: Some(100),
            maximum_size: None,
            event_collect_timeout: None,
        }),
        ..Scripted::default()
    });
    let (sink, _dir, _dlq) = sink(output.clone()).await;
    let (acked, r) = receipt();
    sink.take(super::Take::Lines(events(&["a"]), Default::default()), r)
        .await;
    assert_eq!(acked.load(Ordering::SeqCst), 0);
    sink.close().await;
    assert_eq!(acked.load(Ordering::SeqCst), 1);
    assert_eq!(output.sent.lock().unwrap().len(), 1);
}

#[test]
fn a_batch_splits_into_its_lines_as_slice_split_does() {
    let texts: [&[u8]; 7] = [
        b"",
        b"\n",
        b"{\"a\":1}",
        b"{\"a\":1}\n",
        b"{\"a\":1}\n\n{\"b\":2}",
        b"\n\n{\"a\":1}\n{\"b\":\"a long line past one vector block\"}\n\n",
        &[b'x'; 100],
    ];
    for text in texts {
        let want: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
        assert_eq!(super::split_lines(text).collect::<Vec<_>>(), want);
        // A sink gets each non-empty line as one event, in order.
        let events: Vec<Bytes> = super::events(text.to_vec());
        let want: Vec<&[u8]> = want.into_iter().filter(|l| !l.is_empty()).collect();
        assert_eq!(events.iter().map(|e| &e[..]).collect::<Vec<_>>(), want);
    }
}
