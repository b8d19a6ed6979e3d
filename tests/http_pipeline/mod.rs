//! The real binary: POST bodies, read what the file sink and the dead-letter file hold.

mod limits;
mod security;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::json;
use sluice_tests::{Sluice, json_lines};

const PIPELINE: &str = r#"
http-pipeline:
  workers: 2
  delay: 20ms
  source:
    http:
      port: {port}
      max_request_length: 1kb
  buffer:
    bounded_blocking:
      buffer_size: 100
      batch_size: 4
  sink:
    - file:
        path: {dir}/out/events.jsonl
  dlq_path: {dir}/dlq.jsonl
"#;

#[test]
fn events_reach_the_file_sink_and_malformed_bodies_the_dlq() {
    let mut s = Sluice::start(PIPELINE);
    let mut expected = Vec::new();
    for i in 0..20 {
        let body = json!([{"n": i, "log": "a"}, {"n": i, "log": "b"}]).to_string();
        assert_eq!(s.post("/log/ingest", body.as_bytes()), 200);
        expected.push(json!({"n": i, "log": "a"}));
        expected.push(json!({"n": i, "log": "b"}));
    }
    assert_eq!(
        s.post("/log/ingest", b"{\"oops\": "),
        200,
        "accepted, then dead-lettered"
    );
    assert_eq!(s.post("/log/ingest", b""), 400);
    assert_eq!(s.post("/log/ingest", &vec![b' '; 2048]), 413);
    assert_eq!(s.post("/other/path", b"{}"), 404);
    // Metrics count what happened, once the workers are through.
    let started = std::time::Instant::now();
    while s.metric("sluice_eventsWritten", "http-pipeline") != Some(40.0)
        || s.metric("sluice_recordsDeadLettered", "http-pipeline") != Some(1.0)
    {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "{}",
            s.log()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let p = "http-pipeline";
    assert_eq!(s.metric("bounded_blocking_recordsWritten", p), Some(21.0));
    assert_eq!(
        s.metric("bounded_blocking_numberOfRecordsFailedToParse", p),
        Some(1.0)
    );
    assert_eq!(
        s.metric("bounded_blocking_numberOfBufferSizeOverflows", p),
        Some(0.0),
        "413 comes from max_request_length, before the buffer"
    );
    assert_eq!(s.get_metrics_server("/health").0, 200);
    let started = std::time::Instant::now();
    while s.metric("bounded_blocking_bufferUsage", p).is_none() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "no bufferUsage gauge"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let usage = s.metric("bounded_blocking_bufferUsage", p).unwrap();
    assert!((0.0..=1.0).contains(&usage), "{usage}");
    // Shutdown drains everything accepted.
    assert_eq!(s.terminate(), 0, "{}", s.log());

    let mut got = json_lines(&s.path("out/events.jsonl"));
    got.sort_by_key(|v| (v["n"].as_i64(), v["log"].as_str().map(str::to_owned)));
    assert_eq!(got, expected, "every accepted event exactly once");

    let dlq = json_lines(&s.path("dlq.jsonl"));
    assert_eq!(dlq.len(), 1, "{dlq:?}");
    assert_eq!(dlq[0]["origin"], "http:/log/ingest");
    assert_eq!(dlq[0]["payload"], "eyJvb3BzIjog"); // base64 of the body
    assert!(
        dlq[0]["reason"]
            .as_str()
            .unwrap()
            .starts_with("invalid JSON"),
        "{dlq:?}"
    );
}

#[test]
fn a_failing_sink_holds_the_batch_so_the_full_buffer_answers_503() {
    // /dev/full refuses every write: the first record's batch is retried, never acknowledged,
    // so the one-record buffer stays full.
    let mut s = Sluice::start_with(
        r#"
full-pipeline:
  delay: 10ms
  source:
    http:
      port: {port}
      request_timeout: 100ms
  buffer:
    bounded_blocking:
      buffer_size: 1
      batch_size: 1
  sink:
    - file:
        path: /dev/full
"#,
        &["--drain-timeout", "1s"],
    );
    assert_eq!(s.post("/log/ingest", br#"{"first":true}"#), 200);
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let response = agent
        .post(&format!("http://127.0.0.1:{}/log/ingest", s.port))
        .send(&br#"{"second":true}"#[..])
        .unwrap();
    assert_eq!(response.status().as_u16(), 503);
    assert_eq!(response.headers().get("retry-after").unwrap(), "1");
    // Shutdown gives up after the drain timeout and says what it could not drain.
    assert_eq!(s.terminate(), 0);
    let log = s.log();
    assert!(
        log.contains("the sink failed to take events; retrying"),
        "{log}"
    );
    assert!(log.contains("drain timed out"), "{log}");
}

#[test]
fn validate_reports_every_error_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.yaml");
    std::fs::write(
        &file,
        "p:\n  source:\n    http:\n      prot: 1\n  sink:\n    - stdot:\n",
    )
    .unwrap();
    let out = std::process::Command::new(sluice_tests::sluice_bin())
        .arg("validate")
        .arg(&file)
        .arg("--plugin-cache")
        .arg(sluice_tests::plugin_cache())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "line 4, column 7: unknown field `prot` in `p.source.http`, did you mean `port`?"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "line 6, column 7: unknown sink `stdot` in `p.sink[0]`, did you mean `stdout`?"
        ),
        "{stderr}"
    );
}

/// A certificate the file names that this machine lacks: the file is valid (a warning naming
/// the key, the line and the file), `--no-environment` says nothing of it, and `sluice run`
/// refuses to start.
#[test]
fn validate_warns_of_a_missing_certificate_and_run_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.yaml");
    std::fs::write(
        &file,
        "p:\n  source:\n    http:\n      ssl: true\n      ssl_certificate_file: /nowhere/cert.pem\n      ssl_key_file: /nowhere/key.pem\n  sink:\n    - stdout:\n",
    )
    .unwrap();
    let sluice = |args: &[&str]| {
        let out = std::process::Command::new(sluice_tests::sluice_bin())
            .args(args)
            .arg(&file)
            .arg("--plugin-cache")
            .arg(sluice_tests::plugin_cache())
            .current_dir(dir.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        (out.status.code(), stderr)
    };
    let (code, stderr) = sluice(&["validate"]);
    assert_eq!(code, Some(0), "{stderr}");
    let warning = format!(
        "warning: {}: line 5, column 7: `p.source.http.ssl_certificate_file`: `/nowhere/cert.pem` is not a readable file on this machine; `sluice run` refuses to start here until it is",
        file.display()
    );
    assert!(stderr.contains(&warning), "{stderr}");
    assert!(stderr.contains("`/nowhere/key.pem`"), "{stderr}");
    assert_eq!(
        sluice(&["validate", "--no-environment"]),
        (Some(0), String::new())
    );
    let (code, stderr) = sluice(&["run"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("line 5, column 7: `p.source.http.ssl_certificate_file`: `/nowhere/cert.pem` is not a readable file"),
        "{stderr}"
    );
}

#[test]
fn validate_twice_compiles_once_and_prints_only_the_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.yaml");
    std::fs::write(
        &file,
        "p:\n  source:\n    http:\n      port: 2021\n  sink:\n    - stdout:\n",
    )
    .unwrap();
    let cache = dir.path().join("cache");
    // In a folder without `./plugins`: only the built-ins, the same on every call.
    let validate = |rust_log: Option<&str>| {
        let mut command = std::process::Command::new(sluice_tests::sluice_bin());
        command
            .arg("validate")
            .arg(&file)
            .arg("--plugin-cache")
            .arg(&cache)
            .current_dir(dir.path())
            .env_remove("RUST_LOG");
        if let Some(filter) = rust_log {
            command.env("RUST_LOG", filter);
        }
        let out = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        (String::from_utf8_lossy(&out.stdout).into_owned(), stderr)
    };
    let verdict = format!("{}: 1 pipeline(s) valid\n", file.display());

    // The first call compiles the built-ins into the cache, quietly.
    assert_eq!(validate(None), (verdict.clone(), String::new()));
    let entries = cache_entries(&cache);
    assert!(!entries.is_empty(), "nothing cached in {}", cache.display());

    // The second loads them from it: the same verdict alone, and no entry written again.
    assert_eq!(validate(None), (verdict.clone(), String::new()));
    assert_eq!(cache_entries(&cache), entries, "an entry was rewritten");

    // What the host did, as its debug log tells: every built-in from the cache, none compiled.
    let (stdout, stderr) = validate(Some("sluice_plugin=debug"));
    assert_eq!(stdout, verdict);
    assert_eq!(
        stderr.matches("loaded compiled plugin from cache").count(),
        entries.len(),
        "{stderr}"
    );
    assert!(!stderr.contains(": compiled plugin"), "{stderr}");
    assert_eq!(cache_entries(&cache), entries, "an entry was rewritten");
}

/// The compiled entries in a plugin cache folder, each with its inode and modification time
/// (an entry written again is a new file renamed over the old one: both change).
fn cache_entries(cache: &std::path::Path) -> Vec<(std::path::PathBuf, u64, std::time::SystemTime)> {
    use std::os::unix::fs::MetadataExt;
    let mut entries: Vec<_> = std::fs::read_dir(cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "cwasm"))
        .map(|p| {
            let meta = std::fs::metadata(&p).unwrap();
            (p, meta.ino(), meta.modified().unwrap())
        })
        .collect();
    entries.sort();
    entries
}

fn sluice(args: &[&str]) -> (Option<i32>, String, String) {
    let out = std::process::Command::new(sluice_tests::sluice_bin())
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn startup_names_the_plugin_and_pipeline_when_options_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.yaml");
    let port = sluice_tests::free_port();
    std::fs::write(
        &file,
        format!("picky:\n  source:\n    http:\n      port: {port}\n      deserializer:\n        name: json\n        options: {{flatten: true}}\n  sink:\n    - stdout:\n"),
    )
    .unwrap();
    let data = dir.path().join("data");
    let (code, _, stderr) = sluice(&[
        "run",
        file.to_str().unwrap(),
        "--data-dir",
        data.to_str().unwrap(),
        "--metrics-addr",
        "127.0.0.1:0",
    ]);
    assert_eq!(code, Some(1));
    assert!(
        stderr.contains(
            "pipeline `picky`: plugin `json` refused its options: unknown option `flatten`"
        ),
        "{stderr}"
    );
}

#[test]
fn a_file_that_is_not_a_component_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("broken.wasm"), b"not wasm at all").unwrap();
    let cache = sluice_tests::plugin_cache();
    let (code, _, stderr) = sluice(&[
        "plugins",
        "list",
        "--plugins",
        dir.path().to_str().unwrap(),
        "--plugin-cache",
        cache.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(1));
    assert!(
        stderr.contains("broken.wasm") && stderr.contains("not a valid WebAssembly component"),
        "{stderr}"
    );
}

#[test]
fn plugins_list_shows_built_ins_and_folder_plugins() {
    let (code, stdout, stderr) = sluice(&[
        "plugins",
        "list",
        "--plugins",
        sluice_tests::plugin_dir().to_str().unwrap(),
        "--plugin-cache",
        sluice_tests::plugin_cache().to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    // Each line names the plugin's contract version and world: the bundled json and ndjson
    // are 0.2, as is logfmt; logfmt_v0_1 is the same parser built for 0.1.0.
    assert!(
        lines.iter().any(|l| l.starts_with("json\t")
            && l.contains("json.wasm")
            && l.contains("sluice:plugin/deserializer-plugin@0.2.0")),
        "{stdout}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("ndjson\t")
                && l.contains("sluice:plugin/deserializer-plugin@0.2.0")),
        "{stdout}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("logfmt_v0_1\t") && l.contains("deserializer@0.1.0")),
        "{stdout}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("logfmt\t")
                && l.contains("sluice:plugin/deserializer-plugin@0.2.0")),
        "{stdout}"
    );
    // The folder's files replace the built-ins of the same name: one line each.
    assert_eq!(lines.len(), sluice_tests::PLUGINS.len(), "{stdout}");
}

#[test]
fn the_file_source_reads_every_line_and_dead_letters_the_bad_one() {
    let input = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        input.path(),
        "{\"n\":1}\n{\"n\":2}\r\n\nnot json\n{\"n\":3}",
    )
    .unwrap();
    let yaml = format!(
        "file-pipeline:\n  delay: 20ms\n  source:\n    file:\n      path: {}\n  sink:\n    - file:\n        path: {{dir}}/out.jsonl\n  dlq_path: {{dir}}/dlq.jsonl\n# port {{port}} unused\n",
        input.path().display()
    );
    let mut s = Sluice::start_without_listener(&yaml);
    let started = std::time::Instant::now();
    while json_lines(&s.path("out.jsonl")).len() < 3 || json_lines(&s.path("dlq.jsonl")).is_empty()
    {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "{}",
            s.log()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(s.terminate(), 0, "{}", s.log());
    let got = json_lines(&s.path("out.jsonl"));
    assert_eq!(got, vec![json!({"n":1}), json!({"n":2}), json!({"n":3})]);
    let dlq = json_lines(&s.path("dlq.jsonl"));
    assert_eq!(dlq.len(), 1);
    assert_eq!(
        dlq[0]["origin"],
        format!("file:{}:4", input.path().display()),
        "the origin names the file and line"
    );
}

// Connection limits and timeouts, seen through raw sockets as a misbehaving client sees them.
