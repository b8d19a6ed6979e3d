//! Each `fixtures/config/invalid/NAME.yaml` must fail with exactly `NAME.expected`.

use std::path::Path;

use sluice_tests::root;

fn known() -> Vec<String> {
    // The built-ins (`sluice plugins list` shows them).
    ["json", "ndjson", "otlp", "plain"]
        .map(str::to_owned)
        .to_vec()
}

fn check(path: &Path) -> Result<sluice_config::Config, String> {
    check_with(path, &known())
}

fn check_with(path: &Path, known: &[String]) -> Result<sluice_config::Config, String> {
    let text = std::fs::read_to_string(path).unwrap();
    let name = path.file_name().unwrap().to_string_lossy();
    sluice_config::parse(
        &name,
        &text,
        sluice_config::Context {
            deserializers: Some(known),
            processors: None,
            no_environment: false,
            builtins: Some(sluice_pipeline::check_builtin),
        },
    )
    .map_err(|e| e.to_string())
}

#[test]
fn invalid_configs_give_the_expected_errors() {
    let dir = root().join("tests/fixtures/config/invalid");
    let mut cases: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    cases.sort();
    assert!(
        cases.len() >= 8,
        "expected at least 8 invalid fixtures, found {}",
        cases.len()
    );
    let mut failures = Vec::new();
    for case in &cases {
        let expected_path = case.with_extension("expected");
        let actual = match check(case) {
            Ok(_) => "(parsed without error)".to_owned(),
            Err(e) => e,
        };
        if std::env::var_os("SLUICE_BLESS").is_some() {
            std::fs::write(&expected_path, format!("{actual}\n")).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path)
            .unwrap_or_else(|_| panic!("missing {}", expected_path.display()));
        if expected.trim_end() != actual {
            failures.push(format!(
                "{}:\n--- expected\n{}\n--- actual\n{actual}\n",
                case.display(),
                expected.trim_end()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn valid_configs_and_examples_parse() {
    let mut files = Vec::new();
    for dir in ["tests/fixtures/config/valid", "examples/pipelines"] {
        for e in std::fs::read_dir(root().join(dir)).unwrap() {
            files.push(e.unwrap().path());
        }
    }
    assert!(files.len() >= 3);
    // The examples may name every plugin scripts/build-plugins makes.
    let known: Vec<String> = sluice_tests::PLUGINS
        .iter()
        .map(|p| (*p).to_owned())
        .collect();
    for f in files {
        check_with(&f, &known).unwrap_or_else(|e| panic!("{} should be valid:\n{e}", f.display()));
    }
}

#[test]
fn defaults_follow_data_prepper() {
    let known = known();
    let config = sluice_config::parse(
        "t.yaml",
        "p:\n  source:\n    http:\n  sink:\n    - stdout:\n",
        sluice_config::Context {
            deserializers: Some(&known),
            processors: None,
            no_environment: false,
            builtins: Some(sluice_pipeline::check_builtin),
        },
    )
    .unwrap();
    let p = &config.pipelines[0];
    let sluice_config::Source::Http(http) = &p.source else {
        panic!("expected the http source")
    };
    assert_eq!(
        (
            http.port,
            http.path.as_str(),
            http.deserializer.name.as_str()
        ),
        (2021, "/log/ingest", "json")
    );
    assert_eq!(http.max_request_length, sluice_config::ByteSize::mib(10));
    assert_eq!(http.max_connection_count, 500);
    assert_eq!(
        (
            http.header_read_timeout.as_secs(),
            http.idle_timeout.as_secs()
        ),
        (10, 75)
    );
    let sluice_config::Buffer::Builtin(sluice_config::Tier::BoundedBlocking(b)) = &p.buffer else {
        panic!("the default buffer is bounded_blocking")
    };
    assert_eq!((b.buffer_size, b.batch_size), (12_800, 200));
    assert_eq!((p.workers, p.delay.as_millis()), (1, 3000));
}

#[test]
fn data_prepper_kafka_block_parses_with_its_defaults() {
    let config =
        check(&root().join("tests/fixtures/config/valid/data-prepper-kafka.yaml")).unwrap();
    let p = &config.pipelines[0];
    let sluice_config::Buffer::Builtin(sluice_config::Tier::Kafka(k)) = &p.buffer else {
        panic!("expected the kafka buffer, got {:?}", p.buffer)
    };
    assert_eq!(k.bootstrap_servers, ["127.0.0.1:9092"]);
    assert_eq!(k.drain_timeout.as_secs(), 30);
    assert_eq!(k.max_request_size, sluice_config::ByteSize::mib(1));
    let t = &k.topics[0];
    assert_eq!(
        (t.name.as_str(), t.group_id.as_str()),
        ("dns-ip-pipeline-buffer", "data-prepper-group")
    );
    assert_eq!(
        (
            t.workers,
            t.create_topic,
            t.number_of_partitions,
            t.replication_factor
        ),
        (2, false, 1, 1)
    );
    assert_eq!(
        t.auto_offset_reset,
        sluice_config::AutoOffsetReset::Earliest
    );
    assert_eq!(t.commit_interval.as_secs(), 5);
    assert_eq!(t.max_poll_records, 500);
    // Static membership is on, with an id derived per process at run time.
    assert!(t.static_membership);
    assert_eq!(t.group_instance_id, None);
}

#[test]
fn data_prepper_otel_sources_parse_with_their_defaults() {
    use sluice_config::source::otlp::{OtlpKind, Signal};
    let config = check(&root().join("tests/fixtures/config/valid/data-prepper-otel.yaml")).unwrap();
    let settings: Vec<_> = config
        .pipelines
        .iter()
        .map(|p| {
            let (kind, otlp) = p.source.otlp().expect("an OTLP source");
            (
                kind,
                otlp.settings(kind, &p.name).unwrap(),
                p.source.deserializer(),
            )
        })
        .collect();
    let (kind, logs, d) = &settings[0];
    assert_eq!(*kind, OtlpKind::One(Signal::Logs));
    assert_eq!(logs.listener.port, 21892, "Data Prepper's logs port");
    assert_eq!(
        logs.listener.request_timeout.as_millis(),
        10_000,
        "integer ms"
    );
    assert_eq!(
        logs.grpc,
        [(
            Signal::Logs,
            "/opentelemetry.proto.collector.logs.v1.LogsService/Export".to_owned()
        )]
    );
    assert_eq!(logs.http, [(Signal::Logs, "/v1/logs".to_owned())]);
    assert_eq!(d.name, "otlp");
    assert_eq!(
        d.settings().options,
        [("output_format".to_owned(), "otel".to_owned())]
    );
    let (_, traces, d) = &settings[1];
    assert_eq!(traces.listener.port, 21890);
    assert_eq!(traces.retry_info.max_delay.as_secs(), 2);
    assert_eq!(
        d.settings().options,
        [("output_format".to_owned(), "opensearch".to_owned())],
        "the single-signal sources' default"
    );
    let (kind, all, d) = &settings[2];
    assert_eq!((*kind, all.listener.port), (OtlpKind::All, 21893));
    assert_eq!(
        all.grpc[0],
        (Signal::Logs, "/otlp-pipeline/v1/logs".to_owned())
    );
    assert_eq!(all.grpc.len(), 3);
    assert_eq!(
        d.settings().options,
        [
            ("output_format".to_owned(), "otel".to_owned()),
            ("traces_output_format".to_owned(), "opensearch".to_owned())
        ],
        "`otlp` defaults to otel"
    );
}

#[test]
fn the_default_group_instance_id_is_stable_per_data_dir_and_differs_between_them() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let id = |dir: &Path| sluice_pipeline::default_instance_id("log-pipeline", dir);
    assert_eq!(id(a.path()), id(a.path()), "the same across restarts");
    assert_ne!(id(a.path()), id(b.path()), "two data dirs, two ids");
    assert_ne!(
        id(a.path()),
        sluice_pipeline::default_instance_id("other", a.path()),
        "two pipelines, two ids"
    );
    let text = id(a.path());
    assert!(
        text.starts_with("sluice-") && text.contains("-log-pipeline-"),
        "{text}"
    );
    assert!(
        text.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')),
        "{text}"
    );
}

/// Every librdkafka key the kafka buffer sets, with SASL and TLS (insecure, with a CA file) on
/// so that each conditional key is set too, is refused in the matching `*_properties` by the
/// validation a pipeline file goes through, and the error names it.
#[test]
fn every_kafka_key_sluice_sets_is_refused_in_the_properties() {
    use sluice_config::kafka::{KafkaClient, owned_property};

    let mut config = crate::kafka_buffer::config("127.0.0.1:9092".to_owned(), "t", "g");
    config.sasl = Some(sluice_kafka::Sasl {
        mechanism: "SCRAM-SHA-512".to_owned(),
        username: "user".to_owned(),
        password: "secret".to_owned(),
    });
    config.tls = Some(sluice_kafka::Tls {
        ca: Some("/etc/sluice/ca.pem".into()),
        insecure: true,
    });
    for (field, client, settings) in [
        (
            "producer_properties",
            KafkaClient::Producer,
            config.producer_client_config(),
        ),
        (
            "consumer_properties",
            KafkaClient::Consumer,
            config.consumer_client_config(0),
        ),
    ] {
        let mut keys: Vec<&String> = settings.config_map().keys().collect();
        keys.sort();
        // bootstrap, protocol, 3 SASL, 3 TLS, and at least the 4 producer keys.
        assert!(keys.len() >= 12, "{field}: {keys:?}");
        for key in &keys {
            assert!(
                owned_property(client, key).is_some(),
                "`{key}` is set by sluice but passes through `{field}`"
            );
        }
        let properties: String = keys
            .iter()
            .map(|k| format!("        \"{k}\": \"x\"\n"))
            .collect();
        let yaml = format!(
            "p:\n  source:\n    http:\n  buffer:\n    kafka:\n      bootstrap_servers: [127.0.0.1:9092]\n      \
             topics:\n        - name: t\n          group_id: g\n      {field}:\n{properties}  sink:\n    - stdout:\n"
        );
        let errors = sluice_config::parse(
            "t.yaml",
            &yaml,
            sluice_config::Context {
                deserializers: Some(&known()),
                processors: None,
                no_environment: false,
                builtins: Some(sluice_pipeline::check_builtin),
            },
        )
        .map(|_| "(parsed without error)".to_owned())
        .unwrap_or_else(|e| e.to_string());
        for key in &keys {
            let refused = format!(
                "`{key}` in `p.buffer.kafka.{field}` is set by sluice and cannot be overridden"
            );
            assert!(
                errors.contains(&refused),
                "{field}: `{key}` is not refused:\n{errors}"
            );
        }
    }
}
