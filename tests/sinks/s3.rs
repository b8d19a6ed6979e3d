//! The s3 sink against SeaweedFS, which checks signatures: objects named by their buffer
//! offsets under the date patterns, gzip ndjson read back with every event once, large objects
//! in parts, a wrong secret stopping the start, the store killed and restarted mid-run, and
//! exactly once: sluice killed -9 after uploading and before committing, alone and as one of
//! two hosts, leaves no event twice in the bucket.

use std::io::Read as _;
use std::time::Duration;

use sluice_tests::{S3Store, Sluice, unique};

use super::{
    assert_all_once, committed_to_end, counts, kill_before_the_commit, kill_rounds, names,
    pipeline, post_events, slow_commits, through_an_outage, two_hosts_writing, wait_until,
};

fn s3_sink(store: &S3Store, bucket: &str, extra: &str) -> String {
    format!(
        "    - s3:\n        aws:\n          region: us-east-1\n          endpoint: {endpoint}\n        bucket: {bucket}\n        object_key:\n          path_prefix: logs/%{{yyyy}}/%{{MM}}/%{{dd}}/\n{extra}",
        endpoint = store.endpoint(),
    )
}

/// The ids of the events in every object of `bucket` (gunzipped when the key says `.gz`),
/// and the objects' keys and ETags.
fn stored_ids(store: &S3Store, bucket: &str) -> (Vec<String>, Vec<(String, String)>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let objects = runtime.block_on(store.objects(bucket));
    let mut ids = Vec::new();
    let mut keys = Vec::new();
    for (key, etag, body) in objects {
        let text = if key.ends_with(".gz") {
            let mut t = String::new();
            flate2::read::GzDecoder::new(&body[..])
                .read_to_string(&mut t)
                .unwrap();
            t
        } else {
            String::from_utf8(body).unwrap()
        };
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            ids.push(v["id"].as_str().unwrap().to_owned());
        }
        keys.push((key, etag));
    }
    (ids, keys)
}

fn with_bucket(store: &S3Store) -> String {
    let bucket = unique("bucket").to_lowercase().replace('_', "-");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(store.create_bucket(&bucket));
    bucket
}

#[test]
fn objects_hold_every_event_once_gzip_ndjson_under_the_dated_prefix() {
    let store = S3Store::start();
    let bucket = with_bucket(&store);
    let (buffer, group) = names("s3");
    let sinks = s3_sink(
        &store,
        &bucket,
        "        threshold:\n          event_count: 250\n          maximum_size: 1mb\n          event_collect_timeout: 2s\n        codec:\n          ndjson:\n        compression: gzip\n",
    );
    let sluice = Sluice::start_with_env(&pipeline(&buffer, &group, &sinks), &store.env());
    let ids = post_events(&sluice, "s", 1000, 100);
    wait_until(
        "every batch acknowledged",
        Duration::from_secs(60),
        &sluice,
        || committed_to_end(&buffer, &group),
    );
    let (seen, keys) = stored_ids(&store, &bucket);
    assert_all_once(&counts(seen.iter().map(String::as_str)), &ids, 0);
    let today = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    // Named by the buffer offsets: `<topic>+<partition>+<first offset>`.
    let dated = format!(
        "logs/{}/{}/{}/{buffer}+0+",
        &today[0..4],
        &today[5..7],
        &today[8..10]
    );
    for (key, _) in &keys {
        assert!(
            key.starts_with(&dated) && key.ends_with(".ndjson.gz"),
            "{key} is not under {dated}"
        );
    }
    assert!(
        keys.len() >= 4,
        "event_count 250 makes at least 4 objects of 1000 events, got {}",
        keys.len()
    );
}

#[test]
fn a_large_object_goes_up_in_parts() {
    let store = S3Store::start();
    let bucket = with_bucket(&store);
    let (buffer, group) = names("s3m");
    let sinks = s3_sink(
        &store,
        &bucket,
        "        threshold:\n          event_count: 0\n          maximum_size: 64mb\n          event_collect_timeout: 3s\n        codec:\n          json:\n        multipart_part_size: 5mb\n",
    );
    let sluice = Sluice::start_with_env(&pipeline(&buffer, &group, &sinks), &store.env());
    // ~12 MB of events: one object of three parts.
    let mut ids = Vec::new();
    for batch in 0..12 {
        let (body, batch_ids) = {
            let ids: Vec<String> = (0..1000).map(|i| format!("m-{batch}-{i}")).collect();
            let events: Vec<_> = ids
                .iter()
                .map(|id| serde_json::json!({"id": id, "pad": "x".repeat(1000)}))
                .collect();
            (serde_json::to_vec(&events).unwrap(), ids)
        };
        assert_eq!(sluice.post("/log/ingest", &body), 200, "{}", sluice.log());
        ids.extend(batch_ids);
    }
    wait_until(
        "every batch acknowledged",
        Duration::from_secs(90),
        &sluice,
        || committed_to_end(&buffer, &group),
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let objects = runtime.block_on(store.objects(&bucket));
    let mut seen = Vec::new();
    let mut multipart = 0;
    for (key, etag, body) in &objects {
        assert!(key.ends_with(".json"), "{key}");
        let doc: serde_json::Value = serde_json::from_slice(body).unwrap();
        for e in doc["events"]
            .as_array()
            .expect("the json codec's `events` array")
        {
            seen.push(e["id"].as_str().unwrap().to_owned());
        }
        // S3's ETag of a multipart object is `"<md5 of the part md5s>-<parts>"`.
        if etag.contains('-') && body.len() > 5 * 1024 * 1024 {
            multipart += 1;
        }
    }
    assert_all_once(&counts(seen.iter().map(String::as_str)), &ids, 0);
    assert!(
        multipart >= 1,
        "no object went up in parts: {:?}",
        objects
            .iter()
            .map(|o| (&o.0, &o.1, o.2.len()))
            .collect::<Vec<_>>()
    );
}

#[test]
fn a_wrong_secret_key_stops_the_start_with_the_stores_reason() {
    let store = S3Store::start();
    let bucket = with_bucket(&store);
    let (buffer, group) = names("s3w");
    let sinks = s3_sink(
        &store,
        &bucket,
        "        threshold:\n          event_count: 10\n          maximum_size: 1mb\n          event_collect_timeout: 1s\n",
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("p.yaml"),
        pipeline(&buffer, &group, &sinks)
            .replace("{port}", &sluice_tests::free_port().to_string())
            .replace("{dir}", &dir.path().display().to_string()),
    )
    .unwrap();
    let out = std::process::Command::new(sluice_tests::sluice_bin())
        .arg("run")
        .arg(dir.path().join("p.yaml"))
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .arg("--plugins")
        .arg(sluice_tests::run_plugin_dir())
        .env("AWS_ACCESS_KEY_ID", sluice_tests::s3::S3_ACCESS_KEY)
        .env("AWS_SECRET_ACCESS_KEY", "not-the-secret")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "sluice must not start:\n{stderr}");
    assert!(
        stderr.contains("SignatureDoesNotMatch") || stderr.contains("403"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("s3://{bucket}/")),
        "the message names the sink:\n{stderr}"
    );
}

#[test]
fn the_store_killed_mid_run_holds_the_commit_and_the_sink_recovers_without_a_restart() {
    let store = S3Store::start();
    let bucket = with_bucket(&store);
    let (buffer, group) = names("s3k");
    let sinks = s3_sink(
        &store,
        &bucket,
        "        threshold:\n          event_count: 100\n          maximum_size: 1mb\n          event_collect_timeout: 1s\n        request_timeout: 5s\n",
    );
    let sluice = Sluice::start_with_env(&pipeline(&buffer, &group, &sinks), &store.env());
    let store = std::cell::RefCell::new(store);
    let ids = through_an_outage(
        &sluice,
        &buffer,
        &group,
        100,
        || store.borrow_mut().kill(),
        || store.borrow_mut().resume(),
    );
    let store = store.into_inner();
    let (seen, _) = stored_ids(&store, &bucket);
    // An upload that timed out may have completed on the store: the retry overwrites it.
    assert_all_once(&counts(seen.iter().map(String::as_str)), &ids, 0);
}

fn kill_sinks(store: &S3Store, bucket: &str) -> String {
    s3_sink(
        store,
        bucket,
        "        threshold:\n          event_count: 50\n          event_collect_timeout: 2s\n",
    )
}

/// Killed -9 three times, each time after the sink uploaded a round's events and before the
/// buffer committed them: the next start reads them again and makes the same objects, which
/// overwrite the first ones. With Data Prepper's names (`exactly_once: false`) the same run
/// leaves copies: the test can tell.
#[test]
fn after_kill_9s_the_bucket_holds_every_event_once() {
    let store = S3Store::start();
    for exactly_once in [true, false] {
        let bucket = with_bucket(&store);
        let (buffer, group) = names("s3x");
        let mut sinks = kill_sinks(&store, &bucket);
        if !exactly_once {
            sinks.push_str("        exactly_once: false\n");
        }
        let mut sluice =
            Sluice::start_with_env(&slow_commits(&buffer, &group, &sinks, ""), &store.env());
        let (ids, uncommitted_at_kill) = kill_rounds(&mut sluice, (&buffer, &group), |n| {
            stored_ids(&store, &bucket).0.len() >= n
        });
        wait_until(
            "the buffer committed every record",
            Duration::from_secs(90),
            &sluice,
            || committed_to_end(&buffer, &group),
        );
        assert!(
            uncommitted_at_kill > 0,
            "every kill came after the commit: untested"
        );
        let seen = counts(stored_ids(&store, &bucket).0);
        let copies: usize = seen.values().map(|c| c - 1).sum();
        eprintln!(
            "exactly_once {exactly_once}: {} events, {copies} copies, {uncommitted_at_kill} kills before the commit",
            ids.len()
        );
        if exactly_once {
            assert_all_once(&seen, &ids, 0);
        } else {
            assert!(
                copies > 0,
                "at least once left no copies: the kills proved nothing"
            );
        }
        assert_eq!(sluice.terminate(), 0, "{}", sluice.log());
    }
}

/// Two hosts in one group on a two-partition buffer; one is killed -9 after its sink uploaded
/// a round's events and before its buffer committed them. The survivor reads its partitions
/// again from their last commit, an object boundary, and makes the same objects.
#[test]
fn two_hosts_one_killed_leave_every_event_once_in_the_bucket() {
    let store = S3Store::start();
    let bucket = with_bucket(&store);
    let (buffer, group) = names("s3two");
    let sinks = kill_sinks(&store, &bucket);
    let two = "          number_of_partitions: 2\n          workers: 1\n";
    let yaml = slow_commits(&buffer, &group, &sinks, two);
    let (a, mut b, mut ids) = two_hosts_writing(&yaml, &store.env());
    kill_before_the_commit(&mut b, &a, (&buffer, &group), &mut ids, |n| {
        stored_ids(&store, &bucket).0.len() >= n
    });
    assert_all_once(&counts(stored_ids(&store, &bucket).0), &ids, 0);
}

#[test]
fn shutdown_uploads_what_is_staged_then_commits() {
    let store = S3Store::start();
    let bucket = with_bucket(&store);
    let (buffer, group) = names("s3t");
    // Nothing would reach the store before a minute passes, but for the shutdown.
    let sinks = s3_sink(
        &store,
        &bucket,
        "        threshold:\n          event_count: 100000\n          event_collect_timeout: 60s\n",
    );
    let mut sluice = Sluice::start_with_env(&pipeline(&buffer, &group, &sinks), &store.env());
    let ids = post_events(&sluice, "t", 300, 100);
    // The workers read and stage every record (3 request bodies); nothing can be committed.
    wait_until(
        "the workers to read every record",
        Duration::from_secs(60),
        &sluice,
        || sluice.metric("kafka_buffer_recordsRead", "sink-pipeline") == Some(3.0),
    );
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        !committed_to_end(&buffer, &group),
        "staged events are not committed"
    );
    assert!(stored_ids(&store, &bucket).0.is_empty());
    assert_eq!(sluice.terminate(), 0, "{}", sluice.log());
    let (seen, keys) = stored_ids(&store, &bucket);
    assert_all_once(&counts(seen.iter().map(String::as_str)), &ids, 0);
    assert_eq!(keys.len(), 1, "one object: what was staged");
    assert!(
        committed_to_end(&buffer, &group),
        "the last commit follows the upload"
    );
}
