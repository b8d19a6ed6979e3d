use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, SystemTime};

use super::ok;
use sluice_tests::{Sluice, committed_and_end, json_lines, kafka_bootstrap, sluice_bin, unique};

/// http → kafka buffer (3 partitions) → json → two files.
fn pipeline(topic: &str, group: &str) -> String {
    format!(
        r#"
ops:
  delay: 20ms
  source:
    http:
      port: {{port}}
{buffer}  sink:
    - file:
        path: "{{dir}}/out/events.jsonl"
    - file:
        path: "{{dir}}/out/other.jsonl"
"#,
        buffer = super::kafka_buffer(topic, group, 3)
    )
}

fn buffer(dir: &Path, args: &[&str]) -> Output {
    Command::new(sluice_bin())
        .arg("buffer")
        .args(args)
        .arg("-f")
        .arg(dir.join("pipelines.yaml"))
        .arg("--data-dir")
        .arg(dir.join("data"))
        .output()
        .unwrap()
}

fn counts(path: &Path) -> HashMap<String, usize> {
    let mut ids = HashMap::new();
    for e in json_lines(path) {
        *ids.entry(e["id"].as_str().unwrap().to_owned()).or_default() += 1;
    }
    ids
}

fn now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

#[test]
fn a_window_of_the_buffer_is_replayed_into_one_sink_event_by_event_and_the_group_stays_put() {
    let (topic, group) = (unique("rw"), unique("g"));
    let s = Sluice::start(&pipeline(&topic, &group));
    // Three waves of 30 events, one per record, a second apart; the window is the second.
    let mut marks = Vec::new();
    for wave in 0..3 {
        marks.push(now());
        for i in 0..30 {
            let body = format!(r#"[{{"id": "w{wave}-{i}"}}]"#);
            assert_eq!(s.post("/log/ingest", body.as_bytes()), 200);
        }
        std::thread::sleep(Duration::from_millis(1100));
    }
    let (events, other) = (s.path("out/events.jsonl"), s.path("out/other.jsonl"));
    s.wait_for("every event in both files", Duration::from_secs(60), || {
        counts(&events).len() == 90 && counts(&other).len() == 90
    });
    let bootstrap = kafka_bootstrap();
    s.wait_for("all committed", Duration::from_secs(30), || {
        committed_and_end(&bootstrap, &topic, &group)
            .iter()
            .all(|(_, committed, end)| committed == end)
    });
    let before = committed_and_end(&bootstrap, &topic, &group);

    let status: Vec<serde_json::Value> =
        serde_json::from_str(&ok(&buffer(s.dir.path(), &["status", "ops", "--json"]))).unwrap();
    assert_eq!(status.len(), 3);
    let held: i64 = status.iter().map(|p| p["high"].as_i64().unwrap()).sum();
    assert_eq!(held, 90);
    for p in &status {
        assert_eq!(p["lag"], 0, "{p}");
        assert_eq!(p["committed"], p["high"], "{p}");
        let oldest = p["oldest_ms"].as_u64().unwrap();
        let first = humantime::parse_rfc3339(&marks[0]).unwrap();
        let first = first
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        assert!(oldest >= first, "the oldest record came in this test: {p}");
    }
    let table = ok(&buffer(s.dir.path(), &["status", "ops"]));
    assert!(table.contains("total lag: 0"), "{table}");

    let sink = format!("file:{}", events.display());
    let said = ok(&buffer(
        s.dir.path(),
        &[
            "replay", "ops", "--from", &marks[1], "--to", &marks[2], "--sink", &sink,
        ],
    ));
    assert!(said.contains("read 30 records again into file:"), "{said}");
    let got = counts(&events);
    for (id, n) in &got {
        let want = if id.starts_with("w1-") { 2 } else { 1 };
        assert_eq!(*n, want, "{id}: {got:?}");
    }
    assert_eq!(got.len(), 90);
    assert_eq!(
        json_lines(&other).len(),
        90,
        "the other sink was not chosen"
    );
    assert_eq!(
        committed_and_end(&bootstrap, &topic, &group),
        before,
        "the live group's offsets did not move"
    );
    let wrong = buffer(
        s.dir.path(),
        &["replay", "ops", "--from", "1h", "--sink", "s3"],
    );
    assert!(!wrong.status.success());
    let said = String::from_utf8_lossy(&wrong.stderr);
    assert!(
        said.contains("has no sink `s3` (its sinks: file:"),
        "{said}"
    );
}
