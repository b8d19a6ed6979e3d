//! The http source ready for production (issue 15): HTTP Basic authentication (401 with
//! `WWW-Authenticate`, the password from the environment and never logged), gzip bodies (the
//! size limit on the inflated size: a gzip bomb gets 413), TLS checked by a real client (curl)
//! against a certificate the test makes, and the health check on the source's port.

use std::io::Write as _;
use std::process::Command;

use sluice_tests::{Sluice, json_lines};

const SECS_30: std::time::Duration = std::time::Duration::from_secs(30);

fn pipeline(source_keys: &str) -> String {
    let keys: String = source_keys
        .lines()
        .map(|l| format!("      {l}\n"))
        .collect();
    format!(
        r#"
p:
  delay: 20ms
  source:
    http:
      port: {{port}}
{keys}  sink:
    - file:
        path: {{dir}}/out/events.jsonl
  dlq_path: {{dir}}/dlq.jsonl
"#
    )
}

/// `user:password` as an `Authorization` header value.
fn basic(credentials: &str) -> String {
    use base64::Engine as _;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(credentials)
    )
}

/// GET on the source's port: (status, `WWW-Authenticate`).
fn get(s: &Sluice, path: &str, authorization: Option<&str>) -> (u16, Option<String>) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut request = agent.get(&format!("http://127.0.0.1:{}{path}", s.port));
    if let Some(a) = authorization {
        request = request.header("Authorization", a);
    }
    let response = request.call().unwrap();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned());
    (response.status().as_u16(), challenge)
}

#[test]
fn http_basic_refuses_without_the_right_credentials_and_never_logs_the_password() {
    let s = Sluice::start_with_env(
        &pipeline(
            "authentication:\n  http_basic:\n    username: shipper\n    password: \"${env:SLUICE_TEST_HTTP_PASSWORD}\"\nhealth_check_service: true",
        ),
        &[("SLUICE_TEST_HTTP_PASSWORD", "hunter2-s3cret")],
    );
    let body = br#"[{"n":1}]"#;
    assert_eq!(s.post("/log/ingest", body), 401);
    let wrong = basic("shipper:wrong");
    assert_eq!(
        s.post_with("/log/ingest", &[("Authorization", &wrong)], body),
        401
    );
    let right = basic("shipper:hunter2-s3cret");
    assert_eq!(
        s.post_with("/log/ingest", &[("Authorization", &right)], body),
        200
    );
    // The health check asks for the same credentials (`unauthenticated_health_check` is off).
    let (status, challenge) = get(&s, "/health", None);
    assert_eq!(status, 401);
    assert_eq!(
        challenge.as_deref(),
        Some("Basic realm=\"sluice\", charset=\"UTF-8\"")
    );
    assert_eq!(get(&s, "/health", Some(&right)).0, 200);
    let out = s.path("out/events.jsonl");
    s.wait_for("the one accepted event", SECS_30, || {
        json_lines(&out).len() == 1
    });
    assert!(!s.log().contains("hunter2"), "the password is in the log");
}

#[test]
fn gzip_bodies_are_inflated_and_a_gzip_bomb_gets_413() {
    let gzip = |data: &[u8]| {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    };
    let s = Sluice::start(&pipeline(
        "compression: gzip\nmax_request_length: 1mb\nhealth_check_service: true\nunauthenticated_health_check: true",
    ));
    let zipped = [("Content-Encoding", "gzip")];
    assert_eq!(
        s.post_with("/log/ingest", &zipped, &gzip(br#"[{"n":1},{"n":2}]"#)),
        200
    );
    // 64 MiB of zeros is ~64 KiB compressed: under the limit as sent, far over it inflated.
    let bomb = gzip(&vec![b' '; 64 << 20]);
    assert!(bomb.len() < 1 << 20);
    assert_eq!(s.post_with("/log/ingest", &zipped, &bomb), 413);
    assert_eq!(s.post_with("/log/ingest", &zipped, b"not gzip"), 400);
    assert_eq!(
        s.post_with("/log/ingest", &[("Content-Encoding", "br")], b"x"),
        415
    );
    assert_eq!(get(&s, "/health", None).0, 200);
    let out = s.path("out/events.jsonl");
    s.wait_for("the two events", SECS_30, || json_lines(&out).len() == 2);
    assert_eq!(
        json_lines(&out),
        [serde_json::json!({"n": 1}), serde_json::json!({"n": 2})]
    );
}

#[test]
fn without_compression_gzip_a_gzip_body_gets_415_naming_the_key() {
    let s = Sluice::start(&pipeline(""));
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut response = agent
        .post(&format!("http://127.0.0.1:{}/log/ingest", s.port))
        .header("Content-Encoding", "gzip")
        .send(&b"\x1f\x8b"[..])
        .unwrap();
    assert_eq!(response.status().as_u16(), 415);
    let text = response.body_mut().read_to_string().unwrap();
    assert!(text.contains("set `compression: gzip`"), "{text}");
}

#[test]
fn tls_serves_a_client_that_verifies_the_certificate_and_refuses_one_that_cannot() {
    let certs = tempfile::tempdir().unwrap();
    let (ca, cert, key) = sluice_tests::test_certificates(certs.path());
    let s = Sluice::start(&pipeline(&format!(
        "ssl: true\nssl_certificate_file: {}\nssl_key_file: {}",
        cert.display(),
        key.display()
    )));
    let url = format!("https://127.0.0.1:{}/log/ingest", s.port);
    let curl = |extra: &[&str]| {
        Command::new("curl")
            .args([
                "-sS",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                "--data",
                r#"[{"tls":true}]"#,
            ])
            .args(extra)
            .arg(&url)
            .output()
            .unwrap()
    };
    let out = curl(&["--cacert", ca.to_str().unwrap()]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "200",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Without the CA, curl cannot verify the certificate (exit 60) and sends nothing.
    let out = curl(&[]);
    assert_eq!(
        out.status.code(),
        Some(60),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Plain HTTP on the TLS port is not served.
    assert!(
        s.try_post("/log/ingest", b"[1]", std::time::Duration::from_secs(5))
            .is_err()
    );
    let events = s.path("out/events.jsonl");
    s.wait_for("the event sent over TLS", SECS_30, || {
        json_lines(&events) == [serde_json::json!({"tls": true})]
    });
}

#[test]
fn tls_with_a_key_that_is_not_one_fails_startup_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let (_, cert, _) = sluice_tests::test_certificates(dir.path());
    let bad_key = dir.path().join("not-a-key.pem");
    std::fs::write(&bad_key, "hello\n").unwrap();
    let yaml = dir.path().join("p.yaml");
    std::fs::write(
        &yaml,
        pipeline(&format!(
            "ssl: true\nssl_certificate_file: {}\nssl_key_file: {}",
            cert.display(),
            bad_key.display()
        ))
        .replace("{port}", &sluice_tests::free_port().to_string())
        .replace("{dir}", &dir.path().display().to_string()),
    )
    .unwrap();
    let out = Command::new(sluice_tests::sluice_bin())
        .arg("run")
        .arg(&yaml)
        .args(["--metrics-addr", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path().join("data"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "`ssl_key_file` {}: not a PEM private key",
            bad_key.display()
        )),
        "{stderr}"
    );
}

#[test]
fn metrics_and_health_can_be_served_over_tls_with_http_basic() {
    let certs = tempfile::tempdir().unwrap();
    let (ca, cert, key) = sluice_tests::test_certificates(certs.path());
    let (cert, key) = (cert.display().to_string(), key.display().to_string());
    let mut s = Sluice::start_with_env_and_args(
        &pipeline(""),
        &[("SLUICE_TEST_METRICS_PASSWORD", "scrape-s3cret")],
        &[
            "--metrics-ssl-certificate-file",
            &cert,
            "--metrics-ssl-key-file",
            &key,
            "--metrics-username",
            "prometheus",
            "--metrics-password",
            "${env:SLUICE_TEST_METRICS_PASSWORD}",
        ],
    );
    let port = s.metrics_port;
    // (status, body) of a GET with curl, verifying the certificate against the test CA.
    let curl = |path: &str, user: Option<&str>| {
        let mut c = Command::new("curl");
        c.args(["-sS", "-w", "\n%{http_code}", "--cacert"])
            .arg(&ca)
            .arg(format!("https://127.0.0.1:{port}{path}"));
        if let Some(u) = user {
            c.args(["-u", u]);
        }
        let out = c.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let (body, status) = text.rsplit_once('\n').unwrap_or(("", "000"));
        (status.to_owned(), body.to_owned())
    };
    s.wait_for("/health over TLS", SECS_30, || {
        curl("/health", Some("prometheus:scrape-s3cret")).0 == "200"
    });
    let (status, body) = curl("/metrics", Some("prometheus:scrape-s3cret"));
    assert_eq!(status, "200");
    assert!(body.contains("sluice_"), "{body}");
    assert_eq!(curl("/metrics", None).0, "401");
    assert_eq!(curl("/metrics", Some("prometheus:wrong")).0, "401");
    // Plain HTTP is not served.
    let plain = ureq::get(&format!("http://127.0.0.1:{port}/metrics")).call();
    assert!(plain.is_err(), "{plain:?}");
    s.kill9();
    assert!(
        !s.log().contains("scrape-s3cret"),
        "the password is in the log"
    );
}
