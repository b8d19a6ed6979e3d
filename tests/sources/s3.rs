//! The `s3` source through the real binary: objects in a real S3 store (SeaweedFS, which
//! checks signatures) announced on a real SQS queue (moto's server), with the notification
//! JSON S3 sends (SeaweedFS cannot send it itself). Each line's position is its object and
//! line number, so the exactly-once file sink holds every line once under `kill -9`
//! mid-object; the message is deleted only once the sinks took every line.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::time::Duration;

use serde_json::{Value, json};
use sluice_tests::sqs::{create_queue, object_created, queue_counts, send};
use sluice_tests::{S3Store, Sluice, json_lines, unique};

/// A fresh bucket name (lowercase, no `_`).
fn bucket_name(prefix: &str) -> String {
    unique(prefix).to_lowercase().replace('_', "-")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Runtime::new().unwrap()
}

/// Puts `body` at `bucket/key`.
async fn put(store: &S3Store, bucket: &str, key: &str, body: Vec<u8>) {
    store
        .client(sluice_tests::s3::S3_SECRET_KEY)
        .await
        .put_object()
        .bucket(bucket)
        .key(key)
        .body(body.into())
        .send()
        .await
        .unwrap_or_else(|e| {
            panic!(
                "putting {key}: {}",
                aws_sdk_s3::error::DisplayErrorContext(e)
            )
        });
}

fn gzip(text: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(text).unwrap();
    e.finish().unwrap()
}

/// Lines `<prefix>-<i>` for `i` in `0..n`, each ending in `\n` (`\r\n` for every third).
fn text(prefix: &str, n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..n {
        let end = if i % 3 == 0 { "\r\n" } else { "\n" };
        out.extend_from_slice(format!("{prefix}-{i}{end}").as_bytes());
    }
    out
}

/// An s3 source pipeline reading `queue` into `{dir}/<out>`, with `extra` keys.
fn pipeline(name: &str, queue: &str, endpoint: &str, out: &str, extra: &str) -> String {
    let extra: String = extra.lines().map(|l| format!("      {l}\n")).collect();
    format!(
        r#"
{name}:
  delay: 50ms
  source:
    s3:
      notification_type: sqs
      sqs:
        queue_url: "{queue}"
        wait_time: 1s
        visibility_timeout: 2s
      aws:
        region: us-east-1
        endpoint: {endpoint}
{extra}  sink:
    - file:
        path: {{dir}}/{out}
  dlq_path: {{dir}}/{name}-dlq.jsonl
"#
    )
}

#[test]
fn objects_announced_over_sqs_become_events_with_data_preppers_metadata() {
    let store = S3Store::start();
    let bucket = bucket_name("b");
    let rt = runtime();
    let (lines_q, ndjson_q, csv_q) = rt.block_on(async {
        store.create_bucket(&bucket).await;
        put(&store, &bucket, "plain.log", text("p", 20)).await;
        put(&store, &bucket, "dir/a b+c.log.gz", gzip(&text("g", 3000))).await;
        put(
            &store,
            &bucket,
            "events.ndjson",
            b"{\"a\":1}\n{}\nnot json {\n\n{\"a\":2}\n".to_vec(),
        )
        .await;
        put(&store, &bucket, "people.csv", b"# export\nname,age\nada,36\nbob,41".to_vec()).await;
        let queues = (
            create_queue(&unique("lines")).await,
            create_queue(&unique("ndjson")).await,
            create_queue(&unique("csv")).await,
        );
        let q = &queues.0;
        send(q, &object_created(&bucket, "plain.log", 200)).await;
        send(q, &object_created(&bucket, "dir/a b+c.log.gz", 100)).await;
        // Not there yet: the message stays until the object is.
        send(q, &object_created(&bucket, "late.log", 10)).await;
        // Nothing to read: each is deleted unread.
        send(
            q,
            r#"{"Service":"Amazon S3","Event":"s3:TestEvent","Time":"2026-12-07T10:00:00.000Z","Bucket":"b"}"#,
        )
        .await;
        send(q, &object_created(&bucket, "empty.log", 0)).await;
        send(
            q,
            &object_created(&bucket, "plain.log", 200).replace("ObjectCreated:Put", "ObjectRemoved:Delete"),
        )
        .await;
        send(q, "this is no notification").await;
        send(&queues.1, &object_created(&bucket, "events.ndjson", 40)).await;
        send(&queues.2, &object_created(&bucket, "people.csv", 30)).await;
        queues
    });
    let endpoint = store.endpoint();
    let yaml = [
        pipeline(
            "lines",
            &lines_q,
            &endpoint,
            "lines.jsonl",
            "compression: automatic\ncodec:\n  newline:\non_error: delete_messages",
        ),
        pipeline(
            "ndjson",
            &ndjson_q,
            &endpoint,
            "ndjson.jsonl",
            "codec:\n  ndjson:\nmetadata_root_key: \"\"",
        ),
        pipeline(
            "csv",
            &csv_q,
            &endpoint,
            "csv.jsonl",
            "codec:\n  newline:\n    skip_lines: 1\n    header_destination: header\ndata_selection: data_only",
        ),
    ]
    .concat();
    let sluice = Sluice::start_without_listener_env(&yaml, &store.env());
    let (lines, ndjson, csv) = (
        sluice.path("lines.jsonl"),
        sluice.path("ndjson.jsonl"),
        sluice.path("csv.jsonl"),
    );
    let count = |path: &std::path::Path| {
        if path.is_file() {
            json_lines(path).len()
        } else {
            0
        }
    };
    sluice.wait_for("both objects' lines", Duration::from_secs(60), || {
        count(&lines) >= 3020
    });
    sluice.wait_for("the ndjson and csv lines", Duration::from_secs(60), || {
        count(&ndjson) >= 2 && count(&csv) >= 2
    });
    sluice.wait_for(
        "the missing object counted",
        Duration::from_secs(30),
        || sluice.metric("s3_s3ObjectsFailed", "lines").unwrap_or(0.0) >= 1.0,
    );
    rt.block_on(put(&store, &bucket, "late.log", text("l", 5)));
    sluice.wait_for(
        "the late object, once it exists",
        Duration::from_secs(60),
        || count(&lines) >= 3025,
    );
    sluice.wait_for("every message deleted", Duration::from_secs(60), || {
        [&lines_q, &ndjson_q, &csv_q]
            .iter()
            .all(|q| rt.block_on(queue_counts(q)) == (0, 0))
    });

    let mut seen: BTreeMap<String, (usize, Value)> = BTreeMap::new();
    for e in json_lines(&lines) {
        let message = e["message"].as_str().unwrap().to_owned();
        let entry = seen.entry(message).or_insert((0, e.clone()));
        entry.0 += 1;
    }
    assert_eq!(seen.len(), 3025, "every line of the three objects");
    assert!(seen.values().all(|(n, _)| *n == 1), "each once");
    assert_eq!(
        seen["p-0"].1["s3"],
        json!({"bucket": bucket, "key": "plain.log"})
    );
    assert_eq!(
        seen["g-2999"].1["s3"],
        json!({"bucket": bucket, "key": "dir/a b+c.log.gz"}),
        "the key form-decoded, the object gunzipped by its name"
    );
    // At least: on a loaded machine a message may come back (2 s visibility) before its
    // delete lands, and is then counted again.
    for (metric, least) in [
        ("s3_s3ObjectsEmpty", 1.0),
        ("s3_sqsMessagesFailed", 1.0),
        ("s3_s3ObjectsSucceeded", 3.0),
    ] {
        let value = sluice.metric(metric, "lines").unwrap_or(0.0);
        assert!(value >= least, "{metric} is {value}, at least {least}");
    }
    assert!(sluice.metric("s3_sqsMessagesDeleted", "lines").unwrap() >= 7.0);

    // ndjson: `{}` and the blank line skipped, bucket and key at the top; the line that is
    // no JSON dead-lettered with its object and line.
    let events = json_lines(&ndjson);
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(
        events[0],
        json!({"a": 1, "bucket": bucket, "key": "events.ndjson"})
    );
    let dead = json_lines(&sluice.path("ndjson-dlq.jsonl"));
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(
        dead[0]["origin"],
        format!("s3://{bucket}/events.ndjson:3"),
        "{}",
        dead[0]
    );
    assert_eq!(dead[0]["buffer"]["offset"], 3, "{}", dead[0]);

    // newline with a header: the first line skipped, the second each event's `header`.
    let events = json_lines(&csv);
    assert_eq!(
        events,
        [
            json!({"message": "ada,36", "header": "name,age"}),
            json!({"message": "bob,41", "header": "name,age"}),
        ]
    );
    let mut sluice = sluice;
    assert_eq!(sluice.terminate(), 0, "{}", sluice.log());
}

/// Lines per big object, and their width (`big-<9 digits> ` and padding).
const BIG_LINES: usize = 200_000;
const WIDTH: usize = 100;

fn big_text(prefix: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(BIG_LINES * (WIDTH + 1));
    write_lines(&mut out, prefix, BIG_LINES).unwrap();
    out
}

/// Writes `n` lines `<prefix>-<9 digits> xxx…` of [`WIDTH`] bytes (and a newline) to `out`.
fn write_lines(out: &mut impl std::io::Write, prefix: &str, n: usize) -> std::io::Result<()> {
    let pad = [b'x'; WIDTH];
    for i in 0..n {
        let line = format!("{prefix}-{i:09} ");
        out.write_all(line.as_bytes())?;
        out.write_all(&pad[line.len()..])?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

#[test]
fn kill_9_mid_object_every_line_once_in_an_exactly_once_file_and_the_message_redelivered() {
    let store = S3Store::start();
    let bucket = bucket_name("big");
    let rt = runtime();
    let queue = rt.block_on(async {
        store.create_bucket(&bucket).await;
        put(&store, &bucket, "one.log", big_text("one")).await;
        put(&store, &bucket, "two.log.gz", gzip(&big_text("two"))).await;
        let q = create_queue(&unique("big")).await;
        send(
            &q,
            &object_created(&bucket, "one.log", BIG_LINES * (WIDTH + 1)),
        )
        .await;
        send(&q, &object_created(&bucket, "two.log.gz", 1000)).await;
        q
    });
    let yaml = pipeline(
        "big",
        &queue,
        &store.endpoint(),
        "out.jsonl",
        "compression: automatic\ncodec:\n  newline:",
    )
    .replace("visibility_timeout: 2s", "visibility_timeout: 10s\n        maximum_messages: 1\n        visibility_duplication_protection: true");
    let mut sluice = Sluice::start_without_listener_env(&yaml, &store.env());
    let out = sluice.path("out.jsonl");
    // Each event is about the same size: `{"message":"<100 bytes>","s3":{...}}`.
    let event = format!(
        "{}\n",
        json!({"message": "x".repeat(WIDTH), "s3": {"bucket": bucket, "key": "one.log"}})
    )
    .len() as u64;
    let total = event * 2 * BIG_LINES as u64;
    let size = || std::fs::metadata(&out).map_or(0, |m| m.len());
    let mut mid_object_kills = 0;
    for (from, to) in [(0.15, 0.4), (0.6, 0.85)] {
        sluice.wait_for("the file part way", Duration::from_secs(120), || {
            size() as f64 >= total as f64 * from
        });
        sluice.freeze();
        let at = size() as f64 / total as f64;
        let (visible, hidden) = rt.block_on(queue_counts(&queue));
        if at < to && hidden > 0 {
            mid_object_kills += 1;
        }
        eprintln!(
            "kill at {:.0}% of the lines, queue {visible} visible {hidden} in flight",
            at * 100.0
        );
        sluice.kill9();
        sluice.restart(&[]);
    }
    assert!(
        mid_object_kills > 0,
        "no kill came in the middle of an object"
    );
    sluice.wait_for("every message deleted", Duration::from_secs(180), || {
        rt.block_on(queue_counts(&queue)) == (0, 0)
    });
    assert_eq!(sluice.terminate(), 0, "{}", sluice.log());
    let mut seen = [vec![0u8; BIG_LINES], vec![0u8; BIG_LINES]];
    for line in std::fs::read_to_string(&out).unwrap().lines() {
        let e: Value = serde_json::from_str(line).unwrap();
        let message = e["message"].as_str().unwrap();
        let object = usize::from(message.starts_with("two"));
        let i: usize = message[4..13].parse().unwrap();
        seen[object][i] += 1;
    }
    for (object, counts) in seen.iter().enumerate() {
        let lost = counts.iter().filter(|n| **n == 0).count();
        let twice = counts.iter().filter(|n| **n > 1).count();
        assert_eq!(
            (lost, twice),
            (0, 0),
            "object {object}: lines lost, lines twice"
        );
    }
    assert!(
        sluice
            .log()
            .contains("skipping events the file already holds"),
        "the object was read again after a kill, and what the file held was skipped"
    );
}

/// `aws.sts_role_arn`: the role is assumed through STS with the chain's credentials, and S3
/// is called with the role's, not the chain's. The chain's are the store's own (a read with
/// them would succeed); the role's, handed out by an STS stand-in, are unknown to the store,
/// so the read is refused, counted, and the message kept for another try.
#[test]
fn a_role_is_assumed_and_its_credentials_call_the_store() {
    let store = S3Store::start();
    let bucket = bucket_name("role");
    let rt = runtime();
    let queue = rt.block_on(async {
        store.create_bucket(&bucket).await;
        put(&store, &bucket, "a.log", text("r", 10)).await;
        let q = create_queue(&unique("role")).await;
        send(&q, &object_created(&bucket, "a.log", 50)).await;
        q
    });
    let (sts_port, seen) = sluice_tests::sts::fake_sts("ASIASLUICEROLE", "role/secret");
    let yaml = pipeline(
        "role",
        &queue,
        &store.endpoint(),
        "out.jsonl",
        "codec:\n  newline:",
    )
    .replace(
        "        region: us-east-1\n",
        "        region: us-east-1\n        sts_role_arn: arn:aws:iam::123456789012:role/reader\n",
    );
    let sts = format!("http://127.0.0.1:{sts_port}");
    let mut env = store.env().to_vec();
    env.extend([
        ("AWS_PROFILE", "sluice-none"),
        ("AWS_EC2_METADATA_DISABLED", "true"),
        ("AWS_ENDPOINT_URL_STS", sts.as_str()),
    ]);
    let mut sluice = Sluice::start_without_listener_env(&yaml, &env);
    sluice.wait_for("the read refused", Duration::from_secs(60), || {
        sluice.metric("s3_s3ObjectsFailed", "role").unwrap_or(0.0) >= 1.0
    });
    assert!(
        sluice.log().contains("InvalidAccessKeyId"),
        "the store did not know the role's key: {}",
        sluice.log()
    );
    assert_eq!(sluice.terminate(), 0, "{}", sluice.log());
    let (visible, hidden) = rt.block_on(queue_counts(&queue));
    assert_eq!(visible + hidden, 1, "the message is kept");
    let seen = seen.lock().unwrap();
    let header = |name: &str| seen.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    let body = header("body").unwrap_or_default();
    assert!(
        body.contains("Action=AssumeRole")
            && body.contains("RoleArn=arn%3Aaws%3Aiam%3A%3A123456789012%3Arole%2Freader"),
        "{body}"
    );
    let base = format!("Credential={}/", sluice_tests::s3::S3_ACCESS_KEY);
    assert!(
        header("authorization").is_some_and(|a| a.contains(&base)),
        "AssumeRole is signed with the chain's credentials: {seen:?}"
    );
}

/// Lines of the large object: 500 MiB of text.
const LARGE_LINES: usize = 500 * (1 << 20) / (WIDTH + 1);

/// A 500 MiB object (gzip, made and put without holding it: its lines compress well), read
/// by a process killed part way: its message stays in flight, the object is read again from
/// its first line after the restart, and the file holds every line once.
#[test]
fn a_500_mib_object_killed_mid_way_reaches_the_file_once() {
    let store = S3Store::start();
    let bucket = bucket_name("large");
    let rt = runtime();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    write_lines(&mut gz, "big", LARGE_LINES).unwrap();
    let gz = gz.finish().unwrap();
    let queue = rt.block_on(async {
        store.create_bucket(&bucket).await;
        put(&store, &bucket, "large.log.gz", gz).await;
        let q = create_queue(&unique("large")).await;
        send(&q, &object_created(&bucket, "large.log.gz", 500 << 20)).await;
        q
    });
    let yaml = pipeline(
        "large",
        &queue,
        &store.endpoint(),
        "out.jsonl",
        "compression: automatic\ncodec:\n  newline:",
    )
    .replace(
        "visibility_timeout: 2s",
        "visibility_timeout: 10s\n        visibility_duplication_protection: true",
    );
    let mut sluice = Sluice::start_without_listener_env(&yaml, &store.env());
    let out = sluice.path("out.jsonl");
    let event = format!(
        "{}\n",
        json!({"message": "x".repeat(WIDTH), "s3": {"bucket": bucket, "key": "large.log.gz"}})
    )
    .len() as u64;
    let total = event * LARGE_LINES as u64;
    let size = || std::fs::metadata(&out).map_or(0, |m| m.len());
    sluice.wait_for(
        "a third of the object in the file",
        Duration::from_secs(600),
        || size() >= total / 3,
    );
    sluice.freeze();
    let (_, hidden) = rt.block_on(queue_counts(&queue));
    assert_eq!(
        hidden, 1,
        "the message is in flight, not deleted, while the object is read"
    );
    assert!(size() < total, "killed before the end of the object");
    sluice.kill9();
    sluice.restart(&[]);
    sluice.wait_for("the message deleted", Duration::from_secs(900), || {
        rt.block_on(queue_counts(&queue)) == (0, 0)
    });
    assert_eq!(sluice.terminate(), 0, "{}", sluice.log());
    let mut counts = vec![0u8; LARGE_LINES];
    let file = std::io::BufReader::new(std::fs::File::open(&out).unwrap());
    for line in std::io::BufRead::lines(file) {
        let line = line.unwrap();
        let at = line.find("big-").expect("a line of the object") + 4;
        let i: usize = line[at..at + 9].parse().unwrap();
        counts[i] = counts[i].saturating_add(1);
    }
    let lost = counts.iter().filter(|n| **n == 0).count();
    let twice = counts.iter().filter(|n| **n > 1).count();
    assert_eq!((lost, twice), (0, 0), "lines lost, lines twice");
}

/// Shutdown drains: an object read while its sink refuses (503) keeps its message in flight;
/// on SIGTERM the sink delivers once the endpoint takes requests again, and the message is
/// deleted before the process exits (the deletes come after the sinks, in the buffer's join).
#[test]
fn sigterm_delivers_what_was_read_then_deletes_its_message() {
    let store = S3Store::start();
    let bucket = bucket_name("drain");
    let rt = runtime();
    let queue = rt.block_on(async {
        store.create_bucket(&bucket).await;
        put(&store, &bucket, "a.log", text("d", 50)).await;
        let q = create_queue(&unique("drain")).await;
        send(&q, &object_created(&bucket, "a.log", 300)).await;
        q
    });
    let endpoint = crate::sinks::http::Endpoint::start();
    endpoint.state.lock().unwrap().fail_with = Some(503);
    let yaml = pipeline(
        "drain",
        &queue,
        &store.endpoint(),
        "unused.jsonl",
        "codec:\n  newline:",
    )
    .replace(
        "  sink:\n    - file:\n        path: {dir}/unused.jsonl\n",
        &format!("  sink:\n    - http:\n        url: {}\n", endpoint.url()),
    )
    .replace(
        "visibility_timeout: 2s",
        "visibility_timeout: 10s\n        visibility_duplication_protection: true",
    );
    let mut sluice = Sluice::start_without_listener_env(&yaml, &store.env());
    sluice.wait_for(
        "the object read, the sink refused",
        Duration::from_secs(60),
        || {
            sluice.metric("s3_s3ObjectsSucceeded", "drain") == Some(1.0)
                && endpoint.state.lock().unwrap().refused >= 2
        },
    );
    let (_, hidden) = rt.block_on(queue_counts(&queue));
    assert_eq!(hidden, 1, "in flight, not deleted, while the sink refuses");
    let status = std::process::Command::new("kill")
        .args(["-TERM", &sluice.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    sluice.wait_for("the shutdown begun", Duration::from_secs(30), || {
        sluice.log().contains("shutting down")
    });
    endpoint.state.lock().unwrap().fail_with = None;
    let code = sluice.exit_code_within(Duration::from_secs(90));
    assert_eq!(code, 0, "{}", sluice.log());
    let bodies: String = endpoint
        .state
        .lock()
        .unwrap()
        .taken
        .iter()
        .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
        .collect();
    for i in 0..50 {
        assert!(
            bodies.contains(&format!("\"d-{i}\"")),
            "line {i} delivered: {bodies}"
        );
    }
    assert_eq!(
        rt.block_on(queue_counts(&queue)),
        (0, 0),
        "deleted before the exit: {}",
        sluice.log()
    );
}

/// `scan`: a bucket listed on a schedule, through its prefix, suffix and start time. Killed
/// mid-object, the object is listed and read again (every line once in the exactly-once
/// file); an object written later is read by a later scan; after a restart, what was read is
/// recorded and not read again.
#[test]
fn a_scanned_bucket_is_read_once_across_kills_and_later_scans() {
    let store = S3Store::start();
    let bucket = bucket_name("scan");
    let rt = runtime();
    let client = rt.block_on(store.client(sluice_tests::s3::S3_SECRET_KEY));
    // Written before `start_time` (its own last-modified second: both ends are excluded).
    let start_time = rt.block_on(async {
        store.create_bucket(&bucket).await;
        put(&store, &bucket, "logs/old.log", text("old", 10)).await;
        let head = client
            .head_object()
            .bucket(&bucket)
            .key("logs/old.log")
            .send()
            .await
            .unwrap();
        let modified = std::time::SystemTime::try_from(*head.last_modified().unwrap()).unwrap();
        // The others are written a whole second later.
        while std::time::SystemTime::now() < modified + Duration::from_millis(1500) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        put(&store, &bucket, "logs/a.log", text("a", 50)).await;
        put(&store, &bucket, "logs/b.log.gz", gzip(&text("b", 3000))).await;
        put(&store, &bucket, "logs/big.log", big_text("big")).await;
        put(&store, &bucket, "logs/skip.tmp", text("tmp", 5)).await;
        put(&store, &bucket, "other/c.log", text("c", 5)).await;
        // The process runs in UTC (`TZ`): Data Prepper's times are the host's local ones.
        chrono::DateTime::<chrono::Utc>::from(modified)
            .format("%Y-%m-%dT%H:%M:%S")
            .to_string()
    });
    let yaml = format!(
        r#"
scan:
  delay: 50ms
  source:
    s3:
      compression: automatic
      codec:
        newline:
      workers: 2
      scan:
        start_time: {start_time}
        scheduling:
          interval: 1s
          count: 1000
        buckets:
          - bucket:
              name: s3://{bucket}
              filter:
                include_prefix: [logs/]
                exclude_suffix: [.tmp]
      aws:
        region: us-east-1
        endpoint: {endpoint}
  sink:
    - file:
        path: {{dir}}/out.jsonl
"#,
        endpoint = store.endpoint()
    );
    let mut env = store.env().to_vec();
    env.push(("TZ", "UTC"));
    let mut sluice = Sluice::start_without_listener_env(&yaml, &env);
    let out = sluice.path("out.jsonl");
    let lines = || std::fs::read_to_string(&out).map_or(0, |t| t.lines().count());
    let all = 50 + 3000 + BIG_LINES;
    sluice.wait_for("the big object part way", Duration::from_secs(120), || {
        lines() >= all / 3
    });
    sluice.freeze();
    let cut_at = lines();
    sluice.kill9();
    sluice.restart(&[]);
    sluice.wait_for("every line", Duration::from_secs(180), || lines() >= all);
    rt.block_on(put(&store, &bucket, "logs/late.log", text("late", 7)));
    sluice.wait_for(
        "a later scan reads the new object",
        Duration::from_secs(60),
        || lines() >= all + 7,
    );
    // Recorded once the sinks took them: a restart reads nothing again.
    assert_eq!(sluice.terminate(), 0, "{}", sluice.log());
    sluice.restart(&[]);
    let since_restart = || {
        let log = sluice.log();
        log[log.rfind("scanning buckets").unwrap()..].to_owned()
    };
    sluice.wait_for(
        "two scans after the restart",
        Duration::from_secs(60),
        || {
            since_restart()
                .matches("s3 scan listed its buckets")
                .count()
                >= 2
        },
    );
    assert!(
        since_restart().contains("read=0 read_before=4"),
        "the 4 objects are recorded as read: {}",
        since_restart()
    );
    assert_eq!(
        sluice
            .metric("s3_s3ObjectsSucceeded", "scan")
            .unwrap_or(0.0),
        0.0
    );
    assert_eq!(sluice.terminate(), 0, "{}", sluice.log());
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for line in std::fs::read_to_string(&out).unwrap().lines() {
        let e: Value = serde_json::from_str(line).unwrap();
        assert_eq!(e["s3"]["bucket"], json!(bucket));
        let key = e["s3"]["key"].as_str().unwrap();
        assert!(
            key.starts_with("logs/") && !key.ends_with(".tmp") && key != "logs/old.log",
            "{key} was not to be read"
        );
        let message = e["message"].as_str().unwrap();
        let id = message.split(' ').next().unwrap();
        *seen.entry(id.to_owned()).or_default() += 1;
    }
    let twice: Vec<_> = seen
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(k, _)| k)
        .take(5)
        .collect();
    assert!(twice.is_empty(), "lines read twice: {twice:?}");
    assert_eq!(
        seen.len(),
        all + 7,
        "every line once (killed at {cut_at} of {all})"
    );
    assert!(
        sluice
            .log()
            .contains("skipping events the file already holds"),
        "the object cut off by the kill was read again, and what the file held was skipped"
    );
}

/// The `json` and `csv` codecs (Data Prepper's): each element of an array, each row, is an
/// event. A malformed object gives what comes before the fault, then counts as failed and is
/// read again after `backoff_time`: the exactly-once file holds its first element once.
#[test]
fn json_and_csv_objects_become_one_event_per_element_and_row() {
    let store = S3Store::start();
    let bucket = bucket_name("codecs");
    let rt = runtime();
    rt.block_on(async {
        store.create_bucket(&bucket).await;
        let records =
            r#"{"owner": "ada", "records": [{"a": 1}, {"a": 2, "owner": "x"}, null], "after": 1}"#;
        put(
            &store,
            &bucket,
            "json/good.json",
            records.as_bytes().to_vec(),
        )
        .await;
        put(
            &store,
            &bucket,
            "json/broken.json",
            br#"{"records": [{"a": 3}, {"a": "#.to_vec(),
        )
        .await;
        let rows = "name,age\nada,36\n\"bob, jr\",41\n\"two\nlines\",7\n";
        put(&store, &bucket, "csv/people.csv", rows.as_bytes().to_vec()).await;
    });
    let pipeline = |name: &str, prefix: &str, codec: &str| {
        format!(
            r#"
{name}:
  delay: 50ms
  source:
    s3:
      codec:
        {codec}
      backoff_time: 1s
      scan:
        buckets:
          - bucket:
              name: {bucket}
              filter: {{include_prefix: [{prefix}]}}
      aws:
        region: us-east-1
        endpoint: {endpoint}
  sink:
    - file:
        path: {{dir}}/{name}.jsonl
"#,
            endpoint = store.endpoint()
        )
    };
    let yaml = pipeline(
        "json",
        "json/",
        "json: {key_name: records, include_keys: [owner]}",
    ) + &pipeline("csv", "csv/", "csv:");
    let sluice = Sluice::start_without_listener_env(&yaml, &store.env());
    sluice.wait_for(
        "the broken object read twice",
        Duration::from_secs(60),
        || sluice.metric("s3_s3ObjectsFailed", "json").unwrap_or(0.0) >= 2.0,
    );
    sluice.wait_for("every row", Duration::from_secs(60), || {
        json_lines(&sluice.path("csv.jsonl")).len() >= 3
    });
    let strip = |mut e: Value| {
        let key = e["s3"]["key"].as_str().unwrap().to_owned();
        e.as_object_mut().unwrap().remove("s3");
        (key, e)
    };
    let events: Vec<_> = json_lines(&sluice.path("json.jsonl"))
        .into_iter()
        .map(strip)
        .collect();
    assert_eq!(
        events,
        [
            ("json/broken.json".to_owned(), json!({"a": 3})),
            ("json/good.json".to_owned(), json!({"a": 1, "owner": "ada"})),
            ("json/good.json".to_owned(), json!({"a": 2, "owner": "ada"})),
            ("json/good.json".to_owned(), json!({"owner": "ada"})),
        ],
        "each element once, `owner` put in; the broken object's first element once"
    );
    let rows: Vec<_> = json_lines(&sluice.path("csv.jsonl"))
        .into_iter()
        .map(|e| strip(e).1)
        .collect();
    assert_eq!(
        rows,
        [
            json!({"name": "ada", "age": "36"}),
            json!({"name": "bob, jr", "age": "41"}),
            json!({"name": "two\nlines", "age": "7"}),
        ]
    );
    let mut sluice = sluice;
    assert_eq!(sluice.terminate(), 0, "{}", sluice.log());
}

/// A parquet file of `groups` row groups of `rows` rows each: `id` (0 on), `name` (`n<id>`,
/// null for every seventh) and `point.x` (`id / 2`).
fn parquet_rows(groups: i64, rows: i64) -> Vec<u8> {
    use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    let schema = "message m { required int64 id; optional binary name (UTF8); \
                  required group point { required double x; } }";
    let schema = std::sync::Arc::new(parquet::schema::parser::parse_message_type(schema).unwrap());
    let props = WriterProperties::builder()
        .set_compression(parquet::basic::Compression::SNAPPY)
        .build();
    let mut out = Vec::new();
    let mut writer = SerializedFileWriter::new(&mut out, schema, props.into()).unwrap();
    for g in 0..groups {
        let ids: Vec<i64> = (g * rows..(g + 1) * rows).collect();
        let names: Vec<ByteArray> = ids
            .iter()
            .filter(|i| *i % 7 != 0)
            .map(|i| ByteArray::from(format!("n{i}").as_str()))
            .collect();
        let defined: Vec<i16> = ids.iter().map(|i| i16::from(*i % 7 != 0)).collect();
        let xs: Vec<f64> = ids.iter().map(|i| *i as f64 / 2.0).collect();
        let mut group = writer.next_row_group().unwrap();
        let mut c = group.next_column().unwrap().unwrap();
        c.typed::<Int64Type>()
            .write_batch(&ids, None, None)
            .unwrap();
        c.close().unwrap();
        let mut c = group.next_column().unwrap().unwrap();
        c.typed::<ByteArrayType>()
            .write_batch(&names, Some(&defined), None)
            .unwrap();
        c.close().unwrap();
        let mut c = group.next_column().unwrap().unwrap();
        c.typed::<DoubleType>()
            .write_batch(&xs, None, None)
            .unwrap();
        c.close().unwrap();
        group.close().unwrap();
    }
    writer.close().unwrap();
    out
}

/// The `parquet` codec: each row of a parquet object announced over SQS is one event, every
/// row once, across row groups; a gzipped one (`compression: automatic`, by its name) too.
#[test]
fn a_parquet_object_announced_over_sqs_becomes_one_event_per_row() {
    let store = S3Store::start();
    let bucket = bucket_name("parquet");
    let rt = runtime();
    let file = parquet_rows(3, 400);
    let queue = rt.block_on(async {
        store.create_bucket(&bucket).await;
        put(&store, &bucket, "rows.parquet", file.clone()).await;
        put(&store, &bucket, "rows.parquet.gz", gzip(&file)).await;
        let queue = create_queue(&unique("parquet")).await;
        send(&queue, &object_created(&bucket, "rows.parquet", file.len())).await;
        send(
            &queue,
            &object_created(&bucket, "rows.parquet.gz", file.len()),
        )
        .await;
        queue
    });
    let yaml = pipeline(
        "parquet",
        &queue,
        &store.endpoint(),
        "parquet.jsonl",
        "compression: automatic\ncodec:\n  parquet:",
    );
    let sluice = Sluice::start_without_listener_env(&yaml, &store.env());
    let out = sluice.path("parquet.jsonl");
    sluice.wait_for("every row of both objects", Duration::from_secs(60), || {
        out.is_file() && json_lines(&out).len() >= 2400
    });
    sluice.wait_for("the messages deleted", Duration::from_secs(60), || {
        rt.block_on(queue_counts(&queue)) == (0, 0)
    });
    let mut seen: BTreeMap<(String, i64), usize> = BTreeMap::new();
    for mut e in json_lines(&out) {
        let key = e["s3"]["key"].as_str().unwrap().to_owned();
        let id = e["id"].as_i64().unwrap();
        e.as_object_mut().unwrap().remove("s3");
        let name = if id % 7 == 0 {
            Value::Null
        } else {
            json!(format!("n{id}"))
        };
        assert_eq!(
            e,
            json!({"id": id, "name": name, "point": {"x": id as f64 / 2.0}})
        );
        *seen.entry((key, id)).or_default() += 1;
    }
    assert_eq!(seen.len(), 2400, "every row of both objects");
    assert!(seen.values().all(|n| *n == 1), "each once");
    let mut sluice = sluice;
    assert_eq!(sluice.terminate(), 0, "{}", sluice.log());
}
