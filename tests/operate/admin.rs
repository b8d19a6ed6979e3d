//! The admin endpoint: off unless `--admin`; never without the metrics listener's credentials;
//! over its TLS when it has some.

use std::process::Command;

use sluice_tests::{Sluice, sluice_bin};

const PIPELINE: &str = r#"
ops:
  source:
    http:
      port: {port}
  sink:
    - file:
        path: "{dir}/out/events.jsonl"
"#;

const CREDENTIALS: [&str; 4] = ["--metrics-username", "op", "--metrics-password", "s3cret"];

/// The status of a GET of `url` with curl (`-k`: any certificate).
fn status(url: &str, user: Option<&str>) -> String {
    let mut c = Command::new("curl");
    c.args(["-sS", "-k", "-o", "/dev/null", "-w", "%{http_code}"])
        .arg(url);
    if let Some(u) = user {
        c.args(["-u", u]);
    }
    String::from_utf8_lossy(&c.output().unwrap().stdout).into_owned()
}

#[test]
fn the_admin_endpoint_is_off_unless_asked_and_never_served_without_credentials() {
    // Asked for without credentials: sluice does not start.
    let dir = tempfile::tempdir().unwrap();
    let yaml = dir.path().join("pipelines.yaml");
    std::fs::write(
        &yaml,
        PIPELINE.replace("{port}", "0").replace("{dir}", "/tmp"),
    )
    .unwrap();
    let out = Command::new(sluice_bin())
        .arg("run")
        .arg(&yaml)
        .args(["--admin", "--data-dir"])
        .arg(dir.path().join("data"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("--metrics-username"), "{said}");

    // Not asked for: /admin does not exist, even with the credentials.
    let plain = Sluice::start_with(PIPELINE, &CREDENTIALS);
    let url = format!("http://127.0.0.1:{}/admin/pipelines", plain.metrics_port);
    assert_eq!(status(&url, Some("op:s3cret")), "404");
    assert!(!plain.path("data/admin.json").exists());
    let said = Command::new(sluice_bin())
        .args(["dlq", "replay", "ops", "-f"])
        .arg(plain.path("pipelines.yaml"))
        .arg("--data-dir")
        .arg(plain.path("data"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&said.stderr);
    assert!(said.contains("start it with `--admin`"), "{said}");
}

#[test]
fn over_tls_the_commands_need_the_ca_and_the_credentials() {
    let certs = tempfile::tempdir().unwrap();
    let (ca, cert, key) = sluice_tests::test_certificates(certs.path());
    let (cert, key) = (cert.display().to_string(), key.display().to_string());
    let mut args = vec![
        "--admin",
        "--metrics-ssl-certificate-file",
        &cert,
        "--metrics-ssl-key-file",
        &key,
    ];
    args.extend(CREDENTIALS);
    let s = Sluice::start_with(PIPELINE, &args);
    let location: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(s.path("data/admin.json")).unwrap()).unwrap();
    let url = location["url"].as_str().unwrap().to_owned();
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    assert_eq!(status(&format!("{url}/admin/pipelines"), None), "401");
    assert_eq!(
        status(&format!("{url}/admin/pipelines"), Some("op:wrong")),
        "401"
    );
    assert_eq!(
        status(&format!("{url}/admin/pipelines"), Some("op:s3cret")),
        "200"
    );
    let replay = |extra: &[&str]| {
        let out = Command::new(sluice_bin())
            .args(["dlq", "replay", "ops", "--dry-run", "-f"])
            .arg(s.path("pipelines.yaml"))
            .arg("--data-dir")
            .arg(s.path("data"))
            .args(["--username", "op", "--password", "s3cret"])
            .args(extra)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
        )
    };
    let (ok, said) = replay(&[]);
    assert!(!ok, "a certificate of an unknown CA is refused: {said}");
    let ca = ca.display().to_string();
    let (ok, said) = replay(&["--ca-file", &ca]);
    assert!(ok, "{said}");
    assert!(said.contains("would replay 0 of 0"), "{said}");
}
