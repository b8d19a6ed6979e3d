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

/// Posts `ids` one request each; the ids the source accepted (200).
fn post_ids(s: &Sluice, ids: impl IntoIterator<Item = String>) -> Vec<String> {
    ids.into_iter()
        .filter(|id| {
            let body = format!(r#"[{{"id": "{id}"}}]"#);
            s.try_post("/log/ingest", body.as_bytes(), Duration::from_secs(30)) == Ok(200)
        })
        .collect()
}

/// Waits until every partition of the live group is committed to its end.
fn all_committed(s: &Sluice, topic: &str, group: &str) {
    let bootstrap = kafka_bootstrap();
    s.wait_for(
        "the group committed everything",
        Duration::from_secs(120),
        || {
            committed_and_end(&bootstrap, topic, group)
                .iter()
                .all(|(_, committed, end)| committed == end)
        },
    );
}

#[test]
fn a_replay_into_the_live_file_loses_nothing_committed_after_it() {
    // The operator's case: a window replayed into the running pipeline's file, more events
    // committed, then a restart. The replay is a second writer of the file; what the running
    // process records of it must stay true.
    let (topic, group) = (unique("rl"), unique("g"));
    let mut s = Sluice::start(&pipeline(&topic, &group));
    let events = s.path("out/events.jsonl");
    let mut marks = Vec::new();
    for wave in ["a", "b", "c"] {
        marks.push(now());
        assert_eq!(
            post_ids(&s, (0..40).map(|i| format!("{wave}-{i}"))).len(),
            40
        );
        std::thread::sleep(Duration::from_millis(1100));
    }
    s.wait_for(
        "waves a, b and c in the file",
        Duration::from_secs(60),
        || counts(&events).len() == 120,
    );
    all_committed(&s, &topic, &group);
    let sink = format!("file:{}", events.display());
    ok(&buffer(
        s.dir.path(),
        &[
            "replay", "ops", "--from", &marks[1], "--to", &marks[2], "--sink", &sink,
        ],
    ));
    assert_eq!(post_ids(&s, (0..40).map(|i| format!("d-{i}"))).len(), 40);
    s.wait_for("wave d in the file", Duration::from_secs(60), || {
        counts(&events)
            .keys()
            .filter(|id| id.starts_with("d-"))
            .count()
            == 40
    });
    all_committed(&s, &topic, &group);
    assert_eq!(s.terminate(), 0, "{}", s.log());
    s.restart(&[]);
    // A write after the restart: the sink has opened the file again (and cut what it cuts).
    assert_eq!(post_ids(&s, ["e-0".to_owned()]).len(), 1);
    s.wait_for("e-0 in the file", Duration::from_secs(60), || {
        counts(&events).contains_key("e-0")
    });
    let got = counts(&events);
    for wave in ["a", "b", "c", "d"] {
        let want = if wave == "b" { 2 } else { 1 };
        for i in 0..40 {
            let id = format!("{wave}-{i}");
            assert_eq!(got.get(&id), Some(&want), "{id}: {got:?}\n{}", s.log());
        }
    }
    assert!(
        !s.log().contains("cutting them"),
        "the restart cut committed lines:\n{}",
        s.log()
    );
    // The other sink was not opened by the replay: it holds each event once.
    assert_eq!(json_lines(&s.path("out/other.jsonl")).len(), 161);
}

#[test]
fn a_replay_beside_a_live_writer_loses_nothing_when_either_is_killed() {
    let (topic, group) = (unique("rk"), unique("g"));
    let mut s = Sluice::start(&pipeline(&topic, &group));
    let events = s.path("out/events.jsonl");
    let (from, window) = (now(), post_ids(&s, (0..60).map(|i| format!("w-{i}"))));
    std::thread::sleep(Duration::from_millis(1100));
    let to = now();
    s.wait_for("the window in the file", Duration::from_secs(60), || {
        counts(&events).len() == 60
    });
    let sink = format!("file:{}", events.display());
    let replay = |dir: &Path| {
        Command::new(sluice_bin())
            .args([
                "buffer", "replay", "ops", "--from", &from, "--to", &to, "--sink", &sink,
            ])
            .arg("-f")
            .arg(dir.join("pipelines.yaml"))
            .arg("--data-dir")
            .arg(dir.join("data"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    // Events keep coming while the replays write beside the live pipeline: the first replay
    // is killed -9 once it has written (the file grew past the live events), the second runs
    // to its end, then the live process is killed -9 and started again.
    let mut accepted = Vec::new();
    let mut next = 0;
    let mut more = |s: &Sluice, n: usize| {
        let ids = post_ids(s, (next..next + n).map(|i| format!("live-{i}")));
        next += n;
        ids
    };
    let mut first = replay(s.dir.path());
    let started = std::time::Instant::now();
    let replayed = || {
        counts(&events)
            .iter()
            .any(|(id, n)| id.starts_with("w-") && *n >= 2)
    };
    while !replayed() && first.try_wait().unwrap().is_none() {
        accepted.extend(more(&s, 5));
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the replay wrote nothing"
        );
    }
    let _ = first.kill();
    let _ = first.wait();
    let mut second = replay(s.dir.path());
    while second.try_wait().unwrap().is_none() {
        accepted.extend(more(&s, 5));
        assert!(
            started.elapsed() < Duration::from_secs(240),
            "the replay did not end"
        );
    }
    assert!(second.wait().unwrap().success());
    accepted.extend(more(&s, 20));
    s.kill9();
    s.restart(&[]);
    accepted.extend(more(&s, 20));
    s.wait_for(
        "every accepted event in the file",
        Duration::from_secs(120),
        || {
            let got = counts(&events);
            accepted.iter().all(|id| got.contains_key(id))
        },
    );
    all_committed(&s, &topic, &group);
    let got = counts(&events);
    for id in &accepted {
        assert_eq!(
            got[id],
            1,
            "{id}: the live pipeline wrote it once\n{}",
            s.log()
        );
    }
    for id in &window {
        // Once live, once by the second replay, and what the killed one wrote whole.
        assert!((2..=3).contains(&got[id]), "{id}: {}\n{}", got[id], s.log());
    }
}
