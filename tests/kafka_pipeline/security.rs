//! Security with the kafka buffer: envelope encryption with KMS, SASL/SCRAM and TLS to the
//! broker, each with the failure a user would see when it is wrong.

#[allow(unused_imports, reason = "the parent's imports, taken whole")]
use super::*;

fn kms_encryption(key_id: &str) -> String {
    format!(
        "encryption:\n  kms:\n    key_id: {key_id}\n    region: us-east-1\n    endpoint: {}\n    encryption_context: {{pipeline: kafka-pipeline}}\n",
        sluice_tests::kms_endpoint()
    )
}

fn with_kms_encryption_events_flow_and_kafka_holds_only_sealed_records(via: Via) {
    let bootstrap = kafka_bootstrap();
    let (topic, group) = (unique("kms"), unique("g"));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let key = runtime.block_on(sluice_tests::kms_key());
    let setup = Setup {
        extra: kms_encryption(&key),
        ..Setup::new(via, &bootstrap, &topic, &group, 1)
    };
    let mut s = Sluice::start(&pipeline(&setup));
    let mut want = Vec::new();
    for i in 0..5 {
        let (body, ids) = events("sealed", i * 4, 4);
        assert_eq!(s.post("/log/ingest", &body), 200, "{}", s.log());
        want.extend(ids);
    }
    let sink = vec![s.path("out/events.jsonl")];
    let (missing, _) = wait_for_ids(&sink, &want, Duration::from_secs(60));
    assert!(missing.is_empty(), "lost {missing:?}:\n{}", s.log());
    assert_eq!(
        s.metric(
            "kafka_buffer_numberOfRecordsFailedToDecrypt",
            "kafka-pipeline"
        ),
        Some(0.0)
    );
    assert_eq!(s.terminate(), 0, "{}", s.log());

    // What Kafka stores: envelope version 2, no event text.
    let stored = sluice_tests::stored_records(&bootstrap, &topic, 5);
    assert_eq!(stored.len(), 5);
    for (version, payload, _) in &stored {
        assert_eq!(version, "2");
        let text = String::from_utf8_lossy(payload);
        assert!(
            !text.contains("sealed-"),
            "an event is stored in the clear: {text}"
        );
    }
}

fn an_unusable_kms_key_fails_startup_naming_the_key(via: Via) {
    let bootstrap = kafka_bootstrap();
    let (topic, group) = (unique("nokey"), unique("g"));
    let setup = Setup {
        extra: kms_encryption("alias/does-not-exist"),
        ..Setup::new(via, &bootstrap, &topic, &group, 1)
    };
    let (code, stderr, _) = failed_start(&pipeline(&setup));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("KMS GenerateDataKey with key `alias/does-not-exist` failed"),
        "{stderr}"
    );
}

/// Runs `sluice run` on `yaml` (with `{port}`/`{dir}` filled) expecting a startup failure;
/// returns (exit code, stderr, how long it took). The test KMS's credentials are set, as for
/// every sluice the tests start.
fn failed_start(yaml: &str) -> (Option<i32>, String, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.yaml");
    let yaml = yaml
        .replace("{port}", &sluice_tests::free_port().to_string())
        .replace("{dir}", &dir.path().display().to_string());
    std::fs::write(&file, yaml).unwrap();
    let started = Instant::now();
    let out = std::process::Command::new(sluice_tests::sluice_bin())
        .args([
            "run",
            file.to_str().unwrap(),
            "--metrics-addr",
            "127.0.0.1:0",
            "--plugins",
        ])
        .arg(sluice_tests::run_plugin_dir())
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        started.elapsed(),
    )
}

fn authenticated(setup: &Setup<'_>, user: &str, password: &str, tls: &str) -> String {
    pipeline(&Setup {
        extra: format!(
            "authentication:\n  sasl:\n    scram_sha_512: {{username: {user}, password: {password}}}\n{tls}"
        ),
        ..setup.clone()
    })
}

fn sasl_scram_right_credentials_flow_and_a_wrong_password_fails_startup_naming_the_mechanism(
    via: Via,
) {
    let mut broker = Broker::start();
    broker.create_scram_user("sluice", "s3cret");
    broker.stop();
    broker.args = vec!["--authentication".to_owned()];
    broker.resume();
    let bootstrap = broker.bootstrap();
    let (topic, group) = (unique("sasl"), unique("g"));
    let setup = Setup::new(via, &bootstrap, &topic, &group, 1);

    // The password from an environment variable, as a deployment would give it.
    let yaml = authenticated(
        &setup,
        "sluice",
        "\"${env:SLUICE_TEST_KAFKA_PASSWORD}\"",
        "",
    );
    let mut s = Sluice::start_with_env(&yaml, &[("SLUICE_TEST_KAFKA_PASSWORD", "s3cret")]);
    let (body, ids) = events("sasl", 0, 5);
    assert_eq!(s.post("/log/ingest", &body), 200, "{}", s.log());
    let (missing, _) = wait_for_ids(&[s.path("out/events.jsonl")], &ids, Duration::from_secs(60));
    assert!(missing.is_empty(), "{}", s.log());
    assert!(!s.log().contains("s3cret"), "the password is in the log");
    assert_eq!(s.terminate(), 0, "{}", s.log());

    let (code, stderr, took) = failed_start(&authenticated(&setup, "sluice", "wrong", ""));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("SASL SCRAM-SHA-512 credentials of user `sluice`"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("wrong"),
        "the password is printed: {stderr}"
    );
    assert!(took < Duration::from_secs(30), "took {took:?}");
}

fn tls_with_the_right_ca_flows_and_an_untrusted_broker_fails_startup(via: Via) {
    let certs = tempfile::tempdir().unwrap();
    let (ca, cert, key) = sluice_tests::test_certificates(certs.path());
    let mut broker = Broker::start_tls(&cert, &key);
    let bootstrap = broker.bootstrap();
    let (topic, group) = (unique("tls"), unique("g"));
    let setup = Setup::new(via, &bootstrap, &topic, &group, 1);
    let with_tls = |ca: &str| {
        pipeline(&Setup {
            extra: format!("encryption_in_transit: {{type: ssl, certificate: {ca}}}"),
            ..setup.clone()
        })
    };
    let mut s = Sluice::start(&with_tls(&ca.display().to_string()));
    let (body, ids) = events("tls", 0, 5);
    assert_eq!(s.post("/log/ingest", &body), 200, "{}", s.log());
    let (missing, _) = wait_for_ids(&[s.path("out/events.jsonl")], &ids, Duration::from_secs(60));
    assert!(missing.is_empty(), "{}", s.log());
    assert_eq!(s.terminate(), 0, "{}", s.log());

    // Another CA: the broker's certificate is not trusted.
    let other = tempfile::tempdir().unwrap();
    let (other_ca, _, _) = sluice_tests::test_certificates(other.path());
    let (code, stderr, took) = failed_start(&with_tls(&other_ca.display().to_string()));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("TLS certificates are signed by"),
        "{stderr}"
    );
    assert!(took < Duration::from_secs(30), "took {took:?}");
    broker.stop();
}

both_buffers!(
    with_kms_encryption_events_flow_and_kafka_holds_only_sealed_records,
    an_unusable_kms_key_fails_startup_naming_the_key,
    sasl_scram_right_credentials_flow_and_a_wrong_password_fails_startup_naming_the_mechanism,
    tls_with_the_right_ca_flows_and_an_untrusted_broker_fails_startup,
);
