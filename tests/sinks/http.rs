//! The http sink against an endpoint the test runs: bodies in the codec with the custom
//! headers and Basic credentials; 503 for a while holds the commit and nothing is lost or
//! doubled; a 4xx dead-letters that request with the status and the rest flows on; killed -9
//! after sending and before committing, sluice sends the same requests again with the same
//! `Idempotency-Key`, so an endpoint that drops keys it has seen gets each event once.

use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use sluice_tests::Sluice;

use super::{
    assert_all_once, committed_to_end, counts, kill_before_the_commit, kill_rounds, names,
    pipeline, post_events, sink_metric, slow_commits, two_hosts_writing, wait_until,
};

/// A request as the endpoint saw it: headers (names lowercased) and body.
pub(crate) type Request = (Vec<(String, String)>, Vec<u8>);

/// What the endpoint answers and what it got.
#[derive(Default)]
pub(crate) struct State {
    /// Answer this status to every request while set.
    pub(crate) fail_with: Option<u16>,
    /// Answer 400 to a body containing this.
    pub(crate) reject: Option<String>,
    /// Every request taken (2xx): its headers (names lowercased) and body.
    pub(crate) taken: Vec<Request>,
    /// Requests answered with an error.
    pub(crate) refused: usize,
    /// Answer 200 to a request whose `Idempotency-Key` was taken before, without taking it
    /// again: the bodies first taken under each key.
    dedup: Option<std::collections::HashMap<String, Vec<u8>>>,
    /// Requests dropped as seen before, and how many of them had another body than the first.
    repeated: usize,
    repeated_differently: usize,
}

/// A small HTTP/1.1 endpoint on a free port, one thread per connection.
pub(crate) struct Endpoint {
    port: u16,
    pub(crate) state: Arc<Mutex<State>>,
}

impl Endpoint {
    pub(crate) fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(State::default()));
        let s = state.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let s = s.clone();
                std::thread::spawn(move || serve(conn, &s));
            }
        });
        Self { port, state }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}/ingest", self.port)
    }
}

/// Serves requests on one connection until the client closes it.
fn serve(mut conn: std::net::TcpStream, state: &Mutex<State>) {
    let mut buf = Vec::new();
    loop {
        let head_end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let mut chunk = [0u8; 65536];
            match conn.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        let headers: Vec<(String, String)> = head
            .lines()
            .skip(1)
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_lowercase(), v.trim().to_owned()))
            .collect();
        let length: usize = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        while buf.len() < head_end + length {
            let mut chunk = [0u8; 65536];
            match conn.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let body = buf[head_end..head_end + length].to_vec();
        buf.drain(..head_end + length);
        let status = {
            let mut s = state.lock().unwrap();
            let status = match (&s.fail_with, &s.reject) {
                (Some(code), _) => *code,
                (None, Some(bad)) if String::from_utf8_lossy(&body).contains(bad.as_str()) => 400,
                _ => 200,
            };
            let key = headers
                .iter()
                .find(|(k, _)| k == "idempotency-key")
                .map(|(_, v)| v.clone());
            let seen = match (&mut s.dedup, key) {
                (Some(keys), Some(key)) if status == 200 => match keys.get(&key) {
                    Some(first) => Some(*first == body),
                    None => {
                        keys.insert(key, body.clone());
                        None
                    }
                },
                _ => None,
            };
            if let Some(same) = seen {
                s.repeated += 1;
                s.repeated_differently += usize::from(!same);
            } else if status == 200 {
                s.taken.push((headers, body));
            } else {
                s.refused += 1;
            }
            status
        };
        let answer = format!("HTTP/1.1 {status} X\r\nContent-Length: 2\r\n\r\nno");
        if conn.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

fn http_sink(endpoint: &Endpoint, extra: &str) -> String {
    format!("    - http:\n        url: {}\n{extra}", endpoint.url())
}

#[test]
fn bodies_carry_the_codec_headers_and_credentials_and_503_for_a_while_loses_nothing() {
    let endpoint = Endpoint::start();
    endpoint.state.lock().unwrap().fail_with = Some(503);
    let (buffer, group) = names("hs");
    let sinks = http_sink(
        &endpoint,
        "        codec:\n          json:\n        custom_headers:\n          X-Tenant: [acme]\n        authentication:\n          http_basic:\n            username: sluice\n            password: ${env:SINK_PASSWORD}\n        threshold:\n          max_events: 100\n          max_request_size: 1mb\n          flush_timeout: 1s\n        http_retry_interval: 1s\n",
    );
    let sluice = Sluice::start_with_env(
        &pipeline(&buffer, &group, &sinks),
        &[("SINK_PASSWORD", "s3cret")],
    );
    let ids = post_events(&sluice, "h", 300, 50);
    wait_until(
        "the sink to retry",
        Duration::from_secs(30),
        &sluice,
        || sink_metric(&sluice, "sluice_sink_retries") >= 2.0,
    );
    assert!(
        !committed_to_end(&buffer, &group),
        "nothing is committed while the endpoint answers 503"
    );
    endpoint.state.lock().unwrap().fail_with = None;
    wait_until(
        "every batch acknowledged",
        Duration::from_secs(60),
        &sluice,
        || committed_to_end(&buffer, &group),
    );

    let state = endpoint.state.lock().unwrap();
    let expected_auth = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("sluice:s3cret")
    );
    let mut seen = Vec::new();
    for (headers, body) in &state.taken {
        let header = |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(header("x-tenant"), Some("acme"));
        assert_eq!(header("authorization"), Some(expected_auth.as_str()));
        assert_eq!(header("content-type"), Some("application/json"));
        let doc: serde_json::Value = serde_json::from_slice(body).unwrap();
        let events = doc["events"].as_array().unwrap();
        assert!(events.len() <= 100, "threshold.max_events caps a request");
        seen.extend(events.iter().map(|e| e["id"].as_str().unwrap().to_owned()));
    }
    // A 503 means not taken: nothing comes twice.
    assert_all_once(&counts(seen.iter().map(String::as_str)), &ids, 0);
    assert!(state.refused >= 2);
}

#[test]
fn a_4xx_dead_letters_that_request_with_the_status_and_later_events_flow_on() {
    let endpoint = Endpoint::start();
    endpoint.state.lock().unwrap().reject = Some("poison".to_owned());
    let (buffer, group) = names("h4");
    let sinks = http_sink(
        &endpoint,
        "        threshold:\n          max_events: 1\n          flush_timeout: 1s\n",
    );
    let sluice = Sluice::start(&pipeline(&buffer, &group, &sinks));
    let mut ids = post_events(&sluice, "ok", 20, 10);
    post_events(&sluice, "poison", 1, 1);
    ids.extend(post_events(&sluice, "after", 20, 10));
    wait_until(
        "every batch acknowledged",
        Duration::from_secs(60),
        &sluice,
        || committed_to_end(&buffer, &group),
    );
    let seen = taken_ids(&endpoint.state.lock().unwrap());
    assert_all_once(&counts(seen), &ids, 0);
    let dead = sluice_tests::json_lines(&sluice.path("dlq.jsonl"));
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert!(
        dead[0]["reason"].as_str().unwrap().contains("400"),
        "{}",
        dead[0]
    );
    assert!(
        dead[0]["origin"]
            .as_str()
            .unwrap()
            .starts_with("sink:http:"),
        "{}",
        dead[0]
    );
    let payload = base64::engine::general_purpose::STANDARD
        .decode(dead[0]["payload"].as_str().unwrap())
        .unwrap();
    assert!(String::from_utf8_lossy(&payload).contains("poison-0"));
    assert_eq!(sink_metric(&sluice, "sluice_sink_eventsFailed"), 1.0);

    // The endpoint takes it now; sluice stopped, `dlq replay` sends it to that sink.
    let mut sluice = sluice;
    sluice.terminate();
    endpoint.state.lock().unwrap().reject = None;
    let out = std::process::Command::new(sluice_tests::sluice_bin())
        .args(["dlq", "replay", "sink-pipeline", "-f"])
        .arg(sluice.path("pipelines.yaml"))
        .arg("--data-dir")
        .arg(sluice.path("data"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("replayed 1 of 1 chosen entries: 1 to the sink http:"),
        "{said}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen = taken_ids(&endpoint.state.lock().unwrap());
    assert_eq!(seen.iter().filter(|id| id.starts_with("poison")).count(), 1);
    let marks = sluice_tests::json_lines(&sluice.path("dlq.jsonl"));
    assert!(
        marks[1]["to"].as_str().unwrap().starts_with("sink:http:"),
        "{marks:?}"
    );
}

/// The ids of the events in the requests taken.
fn taken_ids(state: &State) -> Vec<String> {
    state
        .taken
        .iter()
        .flat_map(|(_, body)| {
            String::from_utf8_lossy(body)
                .lines()
                .map(|l| {
                    serde_json::from_str::<serde_json::Value>(l).unwrap()["id"]
                        .as_str()
                        .unwrap()
                        .to_owned()
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Killed -9 three times, each time after the sink sent a round's events and before the buffer
/// committed them: the next start sends the same requests, with the same keys and bodies, and
/// the endpoint, dropping keys it has seen, takes each event once.
#[test]
fn after_kill_9s_requests_come_again_with_the_same_idempotency_key_and_body() {
    let endpoint = Endpoint::start();
    endpoint.state.lock().unwrap().dedup = Some(Default::default());
    let (buffer, group) = names("hx");
    let sinks = http_sink(
        &endpoint,
        "        threshold:\n          max_events: 50\n          flush_timeout: 2s\n",
    );
    let mut sluice = Sluice::start(&slow_commits(&buffer, &group, &sinks, ""));
    let (ids, _) = kill_rounds(&mut sluice, (&buffer, &group), |n| {
        taken_ids(&endpoint.state.lock().unwrap()).len() >= n
    });
    wait_until(
        "the buffer committed every record",
        Duration::from_secs(90),
        &sluice,
        || committed_to_end(&buffer, &group),
    );
    let state = endpoint.state.lock().unwrap();
    eprintln!(
        "{} events, {} requests taken, {} sent again with a key seen before",
        ids.len(),
        state.taken.len(),
        state.repeated
    );
    assert!(state.repeated > 0, "no request came twice: untested");
    assert_eq!(
        state.repeated_differently, 0,
        "a key came again with another body"
    );
    assert_all_once(&counts(taken_ids(&state)), &ids, 0);
    for (headers, _) in &state.taken {
        let key = headers.iter().find(|(k, _)| k == "idempotency-key");
        assert!(
            key.is_some_and(|(_, v)| v.starts_with(&format!("{buffer}+0+"))),
            "{key:?}"
        );
    }
    drop(state);
    assert_eq!(sluice.terminate(), 0, "{}", sluice.log());
}

/// Two hosts in one group on a two-partition buffer; one is killed -9 after its sink sent a
/// round and before its buffer committed it. The survivor reads its partitions again from
/// their last commit, a request boundary, and sends the same requests with the same keys.
#[test]
fn two_hosts_one_killed_send_the_same_requests_again() {
    let endpoint = Endpoint::start();
    endpoint.state.lock().unwrap().dedup = Some(Default::default());
    let (buffer, group) = names("h2");
    let sinks = http_sink(
        &endpoint,
        "        threshold:\n          max_events: 50\n          flush_timeout: 2s\n",
    );
    let two = "          number_of_partitions: 2\n          workers: 1\n";
    let yaml = slow_commits(&buffer, &group, &sinks, two);
    let (a, mut b, mut ids) = two_hosts_writing(&yaml, &[]);
    kill_before_the_commit(&mut b, &a, (&buffer, &group), &mut ids, |n| {
        taken_ids(&endpoint.state.lock().unwrap()).len() >= n
    });
    let state = endpoint.state.lock().unwrap();
    assert_eq!(
        state.repeated_differently, 0,
        "a key came again with another body"
    );
    assert_all_once(&counts(taken_ids(&state)), &ids, 0);
}
