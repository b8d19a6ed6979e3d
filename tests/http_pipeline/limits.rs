//! The http source under abuse: connections that never finish their headers, idle
//! keep-alive connections, too many connections (and a slowloris holding more than
//! `max_connection_count` of them), and a body over `max_request_length`.

#[allow(unused_imports, reason = "the parent's imports, taken whole")]
use super::*;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A pipeline with short connection timeouts; `{extra}` adds http source keys.
fn limits_pipeline(extra: &str) -> String {
    format!(
        r#"
limits-pipeline:
  delay: 20ms
  source:
    http:
      port: {{port}}
      max_request_length: 1kb
      header_read_timeout: 1s
      idle_timeout: 4s
{extra}
  sink:
    - file:
        path: {{dir}}/out.jsonl
"#
    )
}

/// How long the test waits for an answer or a count it expects: generous for a loaded 2-core
/// machine.
const ANSWER: Duration = Duration::from_secs(30);

fn connect(s: &Sluice) -> TcpStream {
    TcpStream::connect(("127.0.0.1", s.port)).unwrap()
}

/// A complete POST of `body` on a keep-alive connection.
fn request(body: &str) -> Vec<u8> {
    format!(
        "POST /log/ingest HTTP/1.1\r\nHost: sluice\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// One response: (status, lowercase head, body). Panics if none comes within `within`.
fn read_response(stream: &mut TcpStream, within: Duration) -> (u16, String, String) {
    stream.set_read_timeout(Some(within)).unwrap();
    let mut got = Vec::new();
    let mut buf = [0; 4096];
    let head_end = loop {
        if let Some(i) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        match stream.read(&mut buf) {
            Ok(0) => panic!(
                "closed before a response: {:?}",
                String::from_utf8_lossy(&got)
            ),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => panic!("no response within {within:?}: {e}"),
        }
    };
    let head = String::from_utf8_lossy(&got[..head_end]).to_lowercase();
    let status = head[9..12].parse().unwrap();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .map_or(0, |v| v.trim().parse().unwrap());
    while got.len() < head_end + length {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => panic!("response body cut short: {e}"),
        }
    }
    let body = String::from_utf8_lossy(&got[head_end..]).into_owned();
    (status, head, body)
}

/// Whether the server closed the connection (EOF or reset) within `within`; data that arrives
/// instead is a failure.
fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    stream.set_read_timeout(Some(within)).unwrap();
    match stream.read(&mut [0; 64]) {
        Ok(0) => true,
        Ok(n) => panic!("{n} unexpected bytes from the server"),
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => false,
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted
            ) =>
        {
            true
        }
        Err(e) => panic!("reading: {e}"),
    }
}

/// Waits until the open-connections gauge is `n` (the harness's readiness probes close).
fn wait_for_connections(s: &Sluice, n: f64) {
    let started = Instant::now();
    while s.metric("sluice_httpConnections", "limits-pipeline") != Some(n) {
        assert!(
            started.elapsed() < ANSWER,
            "sluice_httpConnections is {:?}, not {n}",
            s.metric("sluice_httpConnections", "limits-pipeline")
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn connections_that_never_finish_their_headers_are_closed_after_header_read_timeout() {
    let s = Sluice::start(
        &limits_pipeline("").replace("header_read_timeout: 1s", "header_read_timeout: 2s"),
    );
    wait_for_connections(&s, 0.0);
    let started = Instant::now();
    let mut slow: Vec<TcpStream> = (0..300)
        .map(|i| {
            let mut c = connect(&s);
            let partial: &[u8] = match i % 3 {
                0 => b"",
                1 => b"POST /log/ing",
                _ => b"POST /log/ingest HTTP/1.1\r\nHost: sluice\r\nContent-Len",
            };
            c.write_all(partial).unwrap();
            c
        })
        .collect();
    assert!(
        !closed_within(slow.last_mut().unwrap(), Duration::from_millis(500)),
        "closed before `header_read_timeout`"
    );
    // Meanwhile, good requests are answered.
    for i in 0..5 {
        let body = format!(r#"{{"n":{i}}}"#);
        assert_eq!(s.post("/log/ingest", body.as_bytes()), 200);
    }
    let mut first_closed = None;
    for (i, c) in slow.iter_mut().enumerate() {
        // Without the timeout they would stay open for ever; 30 s leaves a loaded machine room.
        let left = Duration::from_secs(30).saturating_sub(started.elapsed());
        assert!(
            closed_within(c, left.max(Duration::from_millis(1))),
            "connection {i} still open 30 s after a 2 s `header_read_timeout`"
        );
        first_closed.get_or_insert(started.elapsed());
    }
    let first_closed = first_closed.unwrap();
    assert!(
        first_closed >= Duration::from_millis(1800),
        "closed after {first_closed:?}, before `header_read_timeout`"
    );
    eprintln!(
        "300 slow connections: first seen closed after {first_closed:?}, all after {:?}",
        started.elapsed()
    );
    wait_for_connections(&s, 0.0);
    assert_eq!(s.post("/log/ingest", br#"{"n":5}"#), 200);
}

#[test]
fn an_idle_keep_alive_connection_is_closed_after_idle_timeout() {
    let s = Sluice::start(&limits_pipeline(""));
    let mut c = connect(&s);
    c.write_all(&request(r#"{"n":1}"#)).unwrap();
    assert_eq!(read_response(&mut c, ANSWER).0, 200);
    // Silent for twice `header_read_timeout`: the wait between requests is `idle_timeout`.
    assert!(
        !closed_within(&mut c, Duration::from_secs(2)),
        "a keep-alive connection closed by `header_read_timeout`"
    );
    // Timed from before the request: the server's idle time starts after its answer, so the
    // connection cannot close sooner than `idle_timeout` after this, however loaded the machine.
    let sent = Instant::now();
    c.write_all(&request(r#"{"n":2}"#)).unwrap();
    assert_eq!(read_response(&mut c, ANSWER).0, 200);
    assert!(
        closed_within(&mut c, Duration::from_secs(30)),
        "an idle connection still open 30 s after a 4 s `idle_timeout`"
    );
    let idle = sent.elapsed();
    assert!(idle >= Duration::from_secs(4), "closed after {idle:?}");
    eprintln!("idle keep-alive connection closed after {idle:?}");

    // A body that stops arriving is silence too.
    let mut c = connect(&s);
    let sent = Instant::now();
    c.write_all(b"POST /log/ingest HTTP/1.1\r\nHost: sluice\r\nContent-Length: 100\r\n\r\n{\"n\":")
        .unwrap();
    assert!(
        closed_within(&mut c, Duration::from_secs(30)),
        "a stalled body still open 30 s after a 4 s `idle_timeout`"
    );
    let stalled = sent.elapsed();
    assert!(
        stalled >= Duration::from_secs(4),
        "closed after {stalled:?}"
    );
    eprintln!("stalled body closed after {stalled:?}");
}

#[test]
fn at_max_connection_count_an_idle_connection_makes_room_and_busy_ones_get_a_clear_503() {
    // Long timeouts: only the limit is under test.
    let s = Sluice::start(
        &limits_pipeline("      max_connection_count: 4")
            .replace("header_read_timeout: 1s", "header_read_timeout: 60s")
            .replace("idle_timeout: 4s", "idle_timeout: 60s"),
    );
    wait_for_connections(&s, 0.0);
    // Four idle keep-alive connections: a fifth takes the place of the one idle the longest.
    let mut idle: Vec<TcpStream> = (0..4)
        .map(|i| {
            let mut c = connect(&s);
            c.write_all(&request(&format!(r#"{{"n":{i}}}"#))).unwrap();
            assert_eq!(read_response(&mut c, ANSWER).0, 200);
            c
        })
        .collect();
    assert_eq!(
        s.metric("sluice_httpConnections", "limits-pipeline"),
        Some(4.0)
    );
    assert_eq!(s.post("/log/ingest", br#"{"n":4}"#), 200);
    assert!(
        closed_within(&mut idle[0], Duration::from_secs(5)),
        "the connection idle the longest is still open"
    );
    for c in &mut idle[1..] {
        assert!(!closed_within(c, Duration::from_millis(100)));
    }
    assert_eq!(
        s.metric("sluice_connectionsShed", "limits-pipeline"),
        Some(1.0)
    );
    assert!(s.log().contains("shedding connections"), "{}", s.log());
    drop(idle);
    wait_for_connections(&s, 0.0);

    // Four connections serving a request (its body still arriving) are never shed: a fifth
    // gets a clear 503.
    let mut busy: Vec<TcpStream> = (0..4)
        .map(|_| {
            let mut c = connect(&s);
            c.write_all(
                b"POST /log/ingest HTTP/1.1\r\nHost: sluice\r\nContent-Type: application/json\r\n\
                  Content-Length: 7\r\nExpect: 100-continue\r\n\r\n",
            )
            .unwrap();
            // `100 Continue` once the handler reads the body: the request is in flight.
            assert_eq!(read_response(&mut c, ANSWER).0, 100);
            c.write_all(br#"{"n":"#).unwrap();
            c
        })
        .collect();
    let mut fifth = connect(&s);
    fifth.write_all(&request(r#"{"n":5}"#)).unwrap();
    let (status, head, body) = read_response(&mut fifth, Duration::from_secs(5));
    assert_eq!(status, 503, "{head}{body}");
    assert!(head.contains("\r\nretry-after: 1\r\n"), "{head}");
    assert!(head.contains("\r\nconnection: close\r\n"), "{head}");
    assert!(
        body.contains("`max_connection_count` = 4 is reached"),
        "{body}"
    );
    assert!(closed_within(&mut fifth, Duration::from_secs(5)));
    // An ordinary client is refused the same way.
    assert_eq!(s.post("/log/ingest", br#"{"n":6}"#), 503);
    assert_eq!(
        s.metric("sluice_connectionsRefused", "limits-pipeline"),
        Some(2.0)
    );
    assert!(s.log().contains("refusing connections"), "{}", s.log());

    // The busy connections were left alone: each request completes.
    for c in &mut busy {
        c.write_all(b"7}").unwrap();
        assert_eq!(read_response(c, ANSWER).0, 200);
    }
    // Idle now, they make room again.
    assert_eq!(s.post("/log/ingest", br#"{"n":8}"#), 200);
    s.wait_for("the accepted events", ANSWER, || {
        json_lines(&s.path("out.jsonl")).len() == 10
    });
}

/// The request head a slow connection trickles, never finished.
const SLOW_HEAD: &[u8] = b"POST /log/ingest HTTP/1.1\r\nHost: sluice\r\nX-Slow: ";

/// How often the slowloris sends each connection one more byte of its head.
const SLOW_ROUND: Duration = Duration::from_millis(50);

/// How many closed connections the slowloris reopens per round. Paced so each new connection's
/// head has a moment (the time `max_connection_count` new connections take to arrive) before
/// it is the oldest still sending one, even on a loaded machine.
const SLOW_REOPEN_PER_ROUND: usize = 2;

/// A slowloris: `n` connections to `port` trickling a request head that never ends, one byte
/// per [`SLOW_ROUND`] each, reopening those the server closes, until `stop`. Returns how
/// many it reopened.
fn slowloris(port: u16, n: usize, stop: &AtomicBool) -> usize {
    let open = || {
        let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
        c.write_all(SLOW_HEAD).unwrap();
        c.set_nonblocking(true).unwrap();
        c
    };
    let mut slow: Vec<Option<TcpStream>> = (0..n).map(|_| Some(open())).collect();
    let mut reopened = 0;
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(SLOW_ROUND);
        let mut reopening = SLOW_REOPEN_PER_ROUND;
        for c in &mut slow {
            // Closed (EOF or reset), or answered (a 503): gone either way.
            let gone = c.as_mut().is_none_or(|c| match c.read(&mut [0; 512]) {
                Err(e) if e.kind() == ErrorKind::WouldBlock => c.write_all(b"a").is_err(),
                _ => true,
            });
            if gone {
                *c = None;
                if reopening > 0 {
                    reopening -= 1;
                    reopened += 1;
                    *c = Some(open());
                }
            }
        }
    }
    reopened
}

#[test]
fn a_prompt_client_is_served_while_more_slow_connections_than_max_connection_count_are_open() {
    // `header_read_timeout` is long: only shedding frees a slow connection's place here.
    let s = Sluice::start(
        &limits_pipeline("      max_connection_count: 20")
            .replace("header_read_timeout: 1s", "header_read_timeout: 60s"),
    );
    wait_for_connections(&s, 0.0);
    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let attack = std::thread::spawn({
        let (port, stop) = (s.port, stop.clone());
        move || slowloris(port, 40, &stop)
    });
    let open = || {
        let open = s.metric("sluice_httpConnections", "limits-pipeline");
        assert!(open.unwrap() <= 20.0, "{open:?} open, over the cap of 20");
        open
    };
    // Twice as many slow connections as places: they fill the cap, and each new one takes the
    // place of the oldest.
    s.wait_for(
        "the slow connections to fill the cap",
        Duration::from_secs(60),
        || {
            let shed = s.metric("sluice_connectionsShed", "limits-pipeline");
            open() == Some(20.0) && shed.is_some_and(|shed| shed >= 40.0)
        },
    );
    let waits = prompt_clients(&s, 0..5);
    eprintln!("served in {waits:?} while 40 slow connections keep coming");
    open();
    s.wait_for(
        "the five events in the sink",
        Duration::from_secs(60),
        || json_lines(&s.path("out.jsonl")).len() == 5,
    );
    stop.store(true, Ordering::Relaxed);
    let reopened = attack.join().unwrap();
    open();
    let shed = s
        .metric("sluice_connectionsShed", "limits-pipeline")
        .unwrap();
    eprintln!(
        "{shed} slow connections shed, {reopened} reopened, in {:?}",
        started.elapsed()
    );
    assert!(
        reopened >= 20,
        "only {reopened} slow connections were closed"
    );
    // One warning per 10 s, not one per shed connection.
    let warnings = s.log().matches("shedding connections").count();
    let allowed = 1 + started.elapsed().as_secs() / 10;
    assert!(
        (1..=allowed as usize).contains(&warnings),
        "{warnings} warnings for {shed} shed connections"
    );
}

/// Posts `n` events one at a time, each on a new connection; how long each took to be answered
/// (200).
fn prompt_clients(s: &Sluice, n: std::ops::Range<usize>) -> Vec<Duration> {
    n.map(|n| {
        let body = format!(r#"{{"n":{n}}}"#);
        let sent = Instant::now();
        assert_eq!(
            s.try_post("/log/ingest", body.as_bytes(), Duration::from_secs(30)),
            Ok(200),
            "{}",
            s.log()
        );
        sent.elapsed()
    })
    .collect()
}

#[test]
fn prompt_clients_are_answered_at_once_beside_800_slow_connections_at_the_default_cap() {
    // The default `max_connection_count` (500), and a `header_read_timeout` long enough that
    // only shedding frees a slow connection's place.
    let s = Sluice::start(
        &limits_pipeline("").replace("header_read_timeout: 1s", "header_read_timeout: 60s"),
    );
    wait_for_connections(&s, 0.0);
    // What a prompt client takes on this machine now, with nothing slow open: the bound below
    // grows with it on a loaded machine.
    let reference = prompt_clients(&s, 0..20).into_iter().max().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let attack = std::thread::spawn({
        let (port, stop) = (s.port, stop.clone());
        move || slowloris(port, 800, &stop)
    });
    s.wait_for(
        "800 slow connections to fill the cap of 500",
        Duration::from_secs(120),
        || {
            let open = s.metric("sluice_httpConnections", "limits-pipeline");
            let shed = s.metric("sluice_connectionsShed", "limits-pipeline");
            open == Some(500.0) && shed.is_some_and(|shed| shed >= 300.0)
        },
    );
    let waits = prompt_clients(&s, 20..40);
    stop.store(true, Ordering::Relaxed);
    attack.join().unwrap();
    let bound = Duration::from_secs(1).max(reference * 10);
    eprintln!(
        "20 prompt clients beside 800 slow connections: {waits:?} (alone: at most {reference:?})"
    );
    assert!(
        waits.iter().all(|w| *w < bound),
        "a prompt client waited over {bound:?} behind slow connections: {waits:?} (alone: at \
         most {reference:?})"
    );
    let open = s
        .metric("sluice_httpConnections", "limits-pipeline")
        .unwrap();
    assert!(
        open <= 500.0,
        "{open} connections hold a place, over the cap"
    );
    s.wait_for("the 40 events in the sink", Duration::from_secs(60), || {
        json_lines(&s.path("out.jsonl")).len() == 40
    });
}

#[test]
fn a_content_length_over_max_request_length_gets_413_before_the_body() {
    let s = Sluice::start(&limits_pipeline(""));
    let mut c = connect(&s);
    c.write_all(b"POST /log/ingest HTTP/1.1\r\nHost: sluice\r\nContent-Length: 100000000\r\n\r\n")
        .unwrap();
    let sent = Instant::now();
    // No byte of the body is sent: the answer cannot wait for it.
    let (status, head, body) = read_response(&mut c, Duration::from_secs(5));
    let waited = sent.elapsed();
    assert_eq!(status, 413, "{head}{body}");
    assert!(
        body.contains("`max_request_length` of 1024 bytes"),
        "{body}"
    );
    assert!(head.contains("\r\nconnection: close\r\n"), "{head}");
    assert!(closed_within(&mut c, Duration::from_secs(5)));
    eprintln!("413 for Content-Length: 100000000 after {waited:?}");

    // A chunked body has no length to check up front: 413 once over the limit.
    let mut c = connect(&s);
    let mut chunked =
        b"POST /log/ingest HTTP/1.1\r\nHost: sluice\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for _ in 0..4 {
        chunked.extend_from_slice(b"200\r\n");
        chunked.extend_from_slice(&[b' '; 0x200]);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    c.write_all(&chunked).unwrap();
    assert_eq!(read_response(&mut c, Duration::from_secs(5)).0, 413);

    // Within the limit, chunked or not, a body is accepted.
    let mut c = connect(&s);
    c.write_all(
        b"POST /log/ingest HTTP/1.1\r\nHost: sluice\r\nTransfer-Encoding: chunked\r\n\r\n\
          7\r\n{\"n\":1}\r\n0\r\n\r\n",
    )
    .unwrap();
    assert_eq!(read_response(&mut c, ANSWER).0, 200);
    assert_eq!(s.post("/log/ingest", br#"{"n":2}"#), 200);
}

#[test]
fn past_max_pending_requests_a_request_gets_429_at_once_and_the_waiting_ones_are_served() {
    // The sink fails until the test replaces its link, so the one-record buffer stays full and
    // requests wait in the source for room.
    let out = tempfile::tempdir().unwrap();
    let sink = out.path().join("events.jsonl");
    std::os::unix::fs::symlink("/dev/full", &sink).unwrap();
    let yaml = format!(
        r#"
p:
  delay: 20ms
  source:
    http:
      port: {{port}}
      request_timeout: 20s
      max_pending_requests: 2
  buffer:
    bounded_blocking:
      buffer_size: 1
      batch_size: 1
  sink:
    - file:
        path: {}
"#,
        sink.display()
    );
    let s = std::sync::Arc::new(Sluice::start(&yaml));
    assert_eq!(s.post("/log/ingest", br#"[{"n":0}]"#), 200);
    let waiting: Vec<_> = (1..=2)
        .map(|n| {
            let s = s.clone();
            std::thread::spawn(move || {
                s.post("/log/ingest", format!(r#"[{{"n":{n}}}]"#).as_bytes())
            })
        })
        .collect();
    // Both waiting for room, each holding a place: a third is refused at once (not after
    // `request_timeout`, 20 s, as a request that waited would be).
    s.wait_for("the two waiting requests", Duration::from_secs(60), || {
        s.metric("sluice_requestsInProgress", "p") == Some(2.0)
    });
    let started = Instant::now();
    let (status, retry_after) = s.post_full("/log/ingest", &[], br#"[{"n":3}]"#);
    assert_eq!(status, 429, "{}", s.log());
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "refused at once"
    );
    assert_eq!(retry_after.as_deref(), Some("1"));
    std::fs::remove_file(&sink).unwrap();
    for w in waiting {
        assert_eq!(w.join().unwrap(), 200);
    }
    s.wait_for("the three accepted events", Duration::from_secs(30), || {
        json_lines(&sink).len() == 3
    });
}
