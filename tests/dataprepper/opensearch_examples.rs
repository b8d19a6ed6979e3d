//! `sluice validate`, the real binary, on every YAML example of Data Prepper's `opensearch` sink
//! docs: the documentation site's sink page and the plugin's README, copied into
//! `tests/data/dataprepper/opensearch-sink-examples/` (one file each, as published; fragments
//! wrapped into a pipeline, see its README).
//!
//! Each example is validated in a temporary folder of its own, holding an empty file at each
//! relative path it names (`cert: path/to/cert`, `template_file`, `ism_policy_file`,
//! `dlq_file`): sluice checks that those files exist, and the docs' paths are placeholders.
//! An example refused only for a source sluice lacks is validated again with the source
//! replaced by `http` (an unknown source stops the pipeline's check before its sink).

use std::path::Path;
use std::process::Command;

use serde_yaml::Value;
use sluice_tests::{plugin_cache, root, sluice_bin};

use super::refused_on_purpose;

/// Keys whose values are paths of files the sink reads (or, `dlq_file`, writes).
const FILE_KEYS: &[&str] = &["cert", "template_file", "ism_policy_file", "dlq_file"];

/// Sources the examples read from that sluice has no built-in for: an example whose only errors
/// name them (unknown source `opensearch`) names what sluice lacks, as
/// [`super::NOT_BUILT_IN`]'s processors do.
const SOURCES_NOT_BUILT_IN: &[&str] = &["opensearch"];

/// Examples whose source the docs get wrong, with Data Prepper's reason: each must fail, every
/// error about its source, and is then validated with the source replaced by `http` (as an
/// example of a source sluice lacks), so its sink is still checked.
const SOURCE_FAULTS: &[(&str, &str)] = &[(
    "readme-11-msk-source.yaml",
    "`acknowledgement`, not KafkaSourceConfig's `acknowledgments`",
)];

/// Examples that are not YAML as published (the README's `actions` example: `- opensearch`
/// without its `:`, `when:` indented deeper than its `type:`). Not validated; checked to still
/// not load, so that a corrected doc is noticed and copied again.
const NOT_YAML_AS_PUBLISHED: &[&str] = &["readme-06-actions.yaml"];

/// Examples the docs get wrong, with the keys at fault: each must fail, every error naming one
/// of those keys (so every other key of the example is still checked), since Data Prepper
/// refuses them too:
/// - a sink without `hosts` ("hosts cannot be null") or, with the default `index_type`
///   `custom`, without `index` ("Missing required properties:indexAlias"): fragments written
///   to show other keys;
/// - `document_id_field` given an expression (Data Prepper reads it as a key, which cannot
///   hold `"`), and an `index` whose `getMetadata(` is never closed.
const DOC_FAULTS: &[(&str, &[&str])] = &[
    ("docs-04-cluster-security.yaml", &["hosts", "index"]),
    ("docs-05-fgac-iam-master-user.yaml", &["index"]),
    ("docs-06-fgac-internal-master-user.yaml", &["index"]),
    ("readme-07-routing-string.yaml", &["index"]),
    ("readme-08-routing-event-key.yaml", &["index"]),
    ("readme-09-routing-expression.yaml", &["index"]),
    (
        "readme-10-opensearch-source-metadata.yaml",
        &["document_id_field", "index"],
    ),
];

/// Whether a `validate` error names only something sluice lacks on purpose.
fn names_what_sluice_lacks(message: &str) -> bool {
    refused_on_purpose(message)
        || SOURCES_NOT_BUILT_IN
            .iter()
            .any(|name| message.contains(&format!("unknown source `{name}`")))
}

/// Every string value of `keys` anywhere in `value`.
fn values_of(value: &Value, keys: &[&str], out: &mut Vec<String>) {
    match value {
        Value::Mapping(map) => {
            for (key, inner) in map {
                if let (Some(key), Some(text)) = (key.as_str(), inner.as_str())
                    && keys.contains(&key)
                {
                    out.push(text.to_owned());
                }
                values_of(inner, keys, out);
            }
        }
        Value::Sequence(items) => items.iter().for_each(|v| values_of(v, keys, out)),
        Value::Tagged(tagged) => values_of(&tagged.value, keys, out),
        _ => {}
    }
}

/// Creates an empty file in `dir` at each relative path of [`FILE_KEYS`] that `doc` names;
/// returns those paths. Absolute paths (`/your/local/dlq-file`) are left alone.
fn placeholder_files(doc: &Value, dir: &Path) -> Vec<String> {
    let mut paths = Vec::new();
    values_of(doc, FILE_KEYS, &mut paths);
    paths.retain(|p| Path::new(p).is_relative() && !p.contains("://"));
    for path in &paths {
        let file = dir.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "").unwrap();
    }
    paths
}

/// `doc` with each pipeline's source replaced by `http: {}`, written into `dir`: an unknown
/// source stops the pipeline's check, and the sink is what is tested here.
fn with_http_source(doc: &Value, dir: &Path, name: &str) -> std::path::PathBuf {
    let mut doc = doc.clone();
    for (_, pipeline) in doc.as_mapping_mut().into_iter().flatten() {
        if let Some(pipeline) = pipeline.as_mapping_mut() {
            pipeline.insert("source".into(), serde_yaml::from_str("http: {}").unwrap());
        }
    }
    let file = dir.join(format!("http-source-{name}"));
    std::fs::write(&file, serde_yaml::to_string(&doc).unwrap()).unwrap();
    file
}

/// `sluice validate FILE` run in `cwd`: `Ok` when valid, else every error line it prints (or
/// its whole output, when it failed another way).
fn sluice_validate(file: &Path, cwd: &Path) -> Result<(), Vec<String>> {
    let out = Command::new(sluice_bin())
        .arg("validate")
        .arg(file)
        .arg("--plugin-cache")
        .arg(plugin_cache())
        .current_dir(cwd)
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    match out.status.code() {
        Some(0) => Ok(()),
        // `<file> has N errors:`, then `  <file>: line L, column C: message` each.
        Some(2) => Err(stderr
            .lines()
            .skip(1)
            .filter(|line| !line.trim().is_empty())
            .map(|line| line.trim().to_owned())
            .collect()),
        code => Err(vec![format!(
            "`sluice validate` exited with {code:?}: {stderr}{}",
            String::from_utf8_lossy(&out.stdout)
        )]),
    }
}

#[test]
fn every_opensearch_sink_example_of_the_docs_validates() {
    let dir = root().join("tests/data/dataprepper/opensearch-sink-examples");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".yaml"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 19,
        "only {} examples in {}",
        files.len(),
        dir.display()
    );
    let (mut passed, mut refused, mut failures) = (Vec::new(), Vec::new(), Vec::new());
    let mut doc_faults = Vec::new();
    for name in &files {
        let file = dir.join(name);
        let text = std::fs::read_to_string(&file).unwrap();
        let doc = serde_yaml::from_str::<Value>(&text);
        if NOT_YAML_AS_PUBLISHED.contains(&name.as_str()) {
            assert!(
                doc.is_err(),
                "{name} loads as YAML now: validate it (remove it from NOT_YAML_AS_PUBLISHED)"
            );
            continue;
        }
        let doc = doc.unwrap_or_else(|e| panic!("{name} is not YAML: {e}"));
        let cwd = tempfile::tempdir().unwrap();
        let placeholders = placeholder_files(&doc, cwd.path());
        let mut result = sluice_validate(&file, cwd.path());
        let mut note = String::new();
        if let Some((_, why)) = SOURCE_FAULTS.iter().find(|(n, _)| n == name) {
            let errors = result.clone().err().unwrap_or_default();
            if errors.is_empty() || !errors.iter().all(|e| e.contains(".source.")) {
                failures.push(format!(
                    "{name}: expected errors about its source only ({why}), got:\n  {}",
                    errors.join("\n  ")
                ));
                continue;
            }
            doc_faults.push(format!("{name}: {}", errors.join("; ")));
            note = " (its source replaced by `http`)".to_owned();
            result = sluice_validate(&with_http_source(&doc, cwd.path(), name), cwd.path());
        } else if let Err(errors) = &result
            && errors.iter().all(|e| names_what_sluice_lacks(e))
            && errors.iter().any(|e| e.contains("unknown source"))
        {
            refused.push(format!("{name}: {}", errors.join("; ")));
            note = " (its source replaced by `http`)".to_owned();
            result = sluice_validate(&with_http_source(&doc, cwd.path(), name), cwd.path());
        }
        let at = format!("{name}{note} (placeholder files: {placeholders:?})");
        if let Some((_, keys)) = DOC_FAULTS.iter().find(|(n, _)| n == name) {
            let errors = result.err().unwrap_or_default();
            let about_keys = |e: &String| keys.iter().any(|k| e.contains(&format!("`{k}`")));
            if errors.is_empty() || !errors.iter().all(about_keys) {
                failures.push(format!(
                    "{at}: expected errors about {keys:?} only (a fault of the doc), got:\n  {}",
                    errors.join("\n  ")
                ));
            } else {
                doc_faults.push(format!("{name}: {}", errors.join("; ")));
            }
            continue;
        }
        match result {
            Ok(()) => passed.push(format!("{name}{note}")),
            Err(errors) if errors.iter().all(|e| names_what_sluice_lacks(e)) => {
                refused.push(format!("{name}{note}: {}", errors.join("; ")));
            }
            Err(errors) => failures.push(format!("{at}:\n  {}", errors.join("\n  "))),
        }
    }
    eprintln!(
        "{} opensearch sink examples validate: {}\n{} name what sluice lacks:\n  {}\n\
         {} fail as the docs' faults:\n  {}\nnot YAML as published: {}",
        passed.len(),
        passed.join(", "),
        refused.len(),
        refused.join("\n  "),
        doc_faults.len(),
        doc_faults.join("\n  "),
        NOT_YAML_AS_PUBLISHED.join(", ")
    );
    assert!(
        failures.is_empty(),
        "{} of {} opensearch sink examples fail `sluice validate`:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}
