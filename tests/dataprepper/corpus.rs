//! Data Prepper's published pipeline configurations (164 files from its repository and its
//! documentation site, third-party data kept outside this repository, in `../shared/dp-corpus`
//! or where `SLUICE_DP_CORPUS` points), each through `sluice validate` unchanged: a file passes,
//! or is refused only because it names a plugin sluice does not have, by that plugin's name,
//! and nothing else. The files Data Prepper refuses too are listed with the reason, and must be
//! refused.
//!
//! Plain `validate`, as a user runs it: the certificates the files name
//! (`/usr/share/data-prepper/root-ca.pem`) are not on this machine, which is a warning, not an
//! error.
//!
//! Ignored in a plain `cargo test` (the folder is not part of a clone); `scripts/test` runs it
//! when the folder is beside the checkout or beside the one it was cloned from (CI's clean
//! clone), and says so when it is not.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use sluice_tests::{root, sluice_bin};

/// The files Data Prepper itself refuses, each with where in its source or docs.
const REFUSED_BY_DATA_PREPPER: &[(&str, &str)] = &[
    // The three the corpus's README names.
    (
        "dp-docs__configuration-2.yaml",
        "Data Prepper 1.x's `prepper:` (2.x reads `processor:`)",
    ),
    (
        "dp-plugin-readme__obfuscate-processor-2.yaml",
        "a `/<key>` placeholder where a key goes",
    ),
    (
        "osdocs-pipelines__get-eventtype.yaml",
        "its sinks name pipelines the file leaves out",
    ),
    // Found since: each fails Data Prepper's own checks at startup.
    (
        "dp-plugin-readme__drop-events-processor-3.yaml",
        "`/headers/content-type`: `-` is no JsonPointerCharacter (DataPrepperExpression.g4), \
         so DropEventsProcessor refuses the drop_when",
    ),
    (
        "osdocs-config__processors-service-map.yaml",
        "otel_trace_source's ssl defaults to true without sslKeyCertChainFile \
         (OTelTraceSourceConfig.validateSSLCertificateFiles)",
    ),
    (
        "osdocs-config__processors-otel-apm-service-map.yaml",
        "otel_trace_source's ssl defaults to true without sslKeyCertChainFile",
    ),
    (
        "osdocs-config__processors-trace-peer-forwarder.yaml",
        "otel_trace_source's ssl defaults to true without sslKeyCertChainFile",
    ),
    (
        "dp-plugin-readme__otlp-sink-2.yaml",
        "otel_trace_source's ssl defaults to true without sslKeyCertChainFile",
    ),
    (
        "dp-plugin-readme__otlp-sink-3.yaml",
        "otel_metrics_source's ssl defaults to true without sslKeyCertChainFile \
         (OTelMetricsSourceConfig.validateSSLCertificateFiles)",
    ),
    (
        "dp-plugin-readme__otlp-sink-4.yaml",
        "otel_logs_source's ssl defaults to true without sslKeyCertChainFile \
         (OTelLogsSourceConfig.validateSSLCertificateFiles)",
    ),
    (
        "dp-plugin-readme__otlp-sink-6.yaml",
        "its OTel sources' ssl defaults to true without sslKeyCertChainFile",
    ),
    (
        "osdocs-config__sources-otlp-source-3.yaml",
        "an opensearch sink without hosts (ConnectionConfiguration: \"hosts cannot be null\")",
    ),
    (
        "osdocs-config__sources-otlp-source-4.yaml",
        "an opensearch sink without hosts",
    ),
    (
        "osdocs-config__sources-otlp-source-5.yaml",
        "an opensearch sink without hosts",
    ),
    (
        "osdocs-config__sources-otlp-source-6.yaml",
        "an opensearch sink without hosts",
    ),
    (
        "osdocs-other__latency-1.yaml",
        "the http source has no sslKeyCertChainFile (HTTPSourceConfig: ssl_certificate_file)",
    ),
    (
        "osdocs-pipelines__cidrcontains.yaml",
        "the http source has no sslKeyCertChainFile",
    ),
    (
        "osdocs-usecases__trace-analytics-2.yaml",
        "a pipeline sink names `entry-pipeline`, which the file leaves out",
    ),
    (
        "dp-plugin-readme__kafka-connect-plugins.yaml",
        "four plugins under one `source:` (the README's indentation)",
    ),
    (
        "dp-plugin-test__kafka-sample-pipelines-sink.yaml",
        "`sink:` is a map, not a list (PipelineModel's List<SinkModel>)",
    ),
    (
        "dp-plugin-test__kafka-sample-pipelines-int.yaml",
        "keys the kafka source does not have (auth_type, group_name, autocommit, ...; \
         SourceTopicConfig fails on unknown fields) and durations without units",
    ),
    (
        "dp-plugin-test__kafka-sample-pipelines.yaml",
        "four SASL mechanisms at once (AuthConfig: \"Only one of AwsIam, oAuth, SCRAM, \
         PlainText or azure_federated auth config must be specified\")",
    ),
    (
        "dp-plugin-readme__opensearch-2.yaml",
        "`acknowledgement`, not KafkaSourceConfig's `acknowledgments`",
    ),
    (
        "osdocs-config__sources-kafka-5.yaml",
        "`auto_offset_reset` at the source's top level (it is a topic key) and \
         `schema.registry_name` (SchemaConfig has no such key)",
    ),
    (
        "osdocs-config__sources-kafka-6.yaml",
        "`auto_offset_reset` at the source's top level (it is a topic key)",
    ),
];

/// Where the corpus is: `SLUICE_DP_CORPUS`, else `../shared/dp-corpus` beside the clone.
fn corpus() -> PathBuf {
    std::env::var_os("SLUICE_DP_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("../shared/dp-corpus"))
}

/// The plugin a `validate` error line says sluice lacks, if that is what it says.
fn lacking(line: &str) -> Option<String> {
    [
        "unknown source `",
        "unknown sink `",
        "unknown processor `",
        "extension `",
    ]
    .iter()
    .find_map(|start| {
        let rest = &line[line.find(start)? + start.len()..];
        let name = &rest[..rest.find('`')?];
        let kind = start.split(' ').next().unwrap_or_default();
        let lacking =
            start.starts_with("unknown") || rest.contains("is not supported by sluice yet");
        lacking.then(|| format!("{} {name}", kind.trim_start_matches("unknown ")))
    })
}

#[test]
#[ignore = "needs Data Prepper's published configurations (../shared/dp-corpus or SLUICE_DP_CORPUS); scripts/test runs it when they are there"]
fn data_preppers_published_configurations_start_or_name_the_plugin_sluice_lacks() {
    let dir = corpus();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 100,
        "{} holds {} files",
        dir.display(),
        files.len()
    );
    let cwd = tempfile::tempdir().unwrap(); // no ./plugins folder of the test's
    let (mut valid, mut warned, mut dp_refused) = (0, 0, 0);
    let mut lacked: BTreeMap<String, usize> = BTreeMap::new();
    let mut wrong = Vec::new();
    let mut slowest = (Duration::ZERO, String::new());
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let started = Instant::now();
        let out = Command::new(sluice_bin())
            .arg("validate")
            .arg(file)
            .current_dir(cwd.path())
            .output()
            .unwrap();
        if started.elapsed() > slowest.0 {
            slowest = (started.elapsed(), name.clone());
        }
        let stderr = String::from_utf8_lossy(&out.stderr);
        let errors: Vec<&str> = stderr
            .lines()
            .filter(|l| l.trim_start().starts_with(&format!("{}:", file.display())))
            .collect();
        if let Some((_, why)) = REFUSED_BY_DATA_PREPPER.iter().find(|(f, _)| *f == name) {
            if out.status.success() {
                wrong.push(format!(
                    "{name}: Data Prepper refuses it ({why}), sluice takes it"
                ));
            }
            dp_refused += 1;
            continue;
        }
        if out.status.success() {
            valid += 1;
            warned += usize::from(stderr.contains("warning: "));
            continue;
        }
        let names: Vec<Option<String>> = errors.iter().map(|l| lacking(l)).collect();
        if errors.is_empty() || names.iter().any(Option::is_none) {
            wrong.push(format!(
                "{name}: refused for more than a plugin sluice lacks:\n{stderr}"
            ));
            continue;
        }
        for plugin in names.into_iter().flatten() {
            *lacked.entry(plugin).or_default() += 1;
        }
    }
    println!(
        "{} files: {valid} valid ({warned} with a warning: a file it names is not on this \
         machine), {} refused for plugins sluice lacks, {dp_refused} refused by Data Prepper \
         too; slowest validate {:?} ({})",
        files.len(),
        files.len() - valid - dp_refused - wrong.len(),
        slowest.0,
        slowest.1
    );
    println!("plugins lacked (files): {lacked:?}");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
