//! `validate` on every processor example of Data Prepper's docs: each fixture's processor list
//! (and route list, with the sinks' `routes`) inside a pipeline of sluice's own source and
//! sinks, since the docs' sources and sinks (`s3`, `opensearch`) are not what is tested here.

use serde_yaml::{Mapping, Value};
use sluice_tests::root;

use super::{refused_on_purpose, validate};

/// The pipeline of `processors`, `routes` and sinks' `routes` lists, as sluice's YAML.
fn wrapped(processors: &Value, routes: Option<&Value>, sink_routes: &[Value]) -> String {
    let mut p = Mapping::new();
    let mut source = Mapping::new();
    source.insert("http".into(), Value::Mapping(Mapping::new()));
    p.insert("source".into(), Value::Mapping(source));
    p.insert("processor".into(), processors.clone());
    if let Some(routes) = routes {
        p.insert("route".into(), routes.clone());
    }
    let mut sinks: Vec<Value> = sink_routes
        .iter()
        .map(|routes| {
            let mut stdout = Mapping::new();
            stdout.insert("routes".into(), routes.clone());
            let mut sink = Mapping::new();
            sink.insert("stdout".into(), Value::Mapping(stdout));
            Value::Mapping(sink)
        })
        .collect();
    if sinks.is_empty() {
        sinks.push(serde_yaml::from_str("stdout: {}").unwrap());
    }
    p.insert("sink".into(), Value::Sequence(sinks));
    let mut file = Mapping::new();
    file.insert("p".into(), Value::Mapping(p));
    serde_yaml::to_string(&file).unwrap()
}

#[test]
fn every_processor_example_of_the_docs_validates_or_names_what_sluice_lacks() {
    let dir = root().join("tests/data/dataprepper/pipelines");
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("index.json")).unwrap()).unwrap();
    let (mut passed, mut refused, mut failures) = (0, Vec::new(), Vec::new());
    for entry in index.as_array().unwrap() {
        let file = entry["file"].as_str().unwrap();
        if !entry["file_is_valid_yaml"].as_bool().unwrap() {
            continue;
        }
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        let doc: Value = serde_yaml::from_str(&text).unwrap();
        for (name, pipeline) in doc.as_mapping().into_iter().flatten() {
            let Some(pipeline) = pipeline.as_mapping() else {
                continue;
            };
            let processors = pipeline.get("processor");
            let routes = pipeline.get("route").or_else(|| pipeline.get("routes"));
            if processors.is_none() && routes.is_none() {
                continue;
            }
            let sink_routes: Vec<Value> = pipeline
                .get("sink")
                .and_then(Value::as_sequence)
                .into_iter()
                .flatten()
                .filter_map(|sink| {
                    sink.as_mapping()?
                        .values()
                        .next()?
                        .as_mapping()?
                        .get("routes")
                        .cloned()
                })
                .collect();
            let yaml = wrapped(
                processors.unwrap_or(&Value::Sequence(Vec::new())),
                routes,
                &sink_routes,
            );
            let at = format!("{file} ({})", name.as_str().unwrap_or("?"));
            match validate(file, &yaml) {
                Ok(_) => passed += 1,
                Err(errors) => {
                    let messages: Vec<String> =
                        errors.errors.iter().map(|e| e.message.clone()).collect();
                    if messages.iter().all(|m| refused_on_purpose(m)) {
                        refused.push(format!("{at}: {}", messages.join("; ")));
                    } else {
                        failures.push(format!("{at}:\n{errors}\n{yaml}"));
                    }
                }
            }
        }
    }
    eprintln!(
        "{passed} doc examples validate; {} name what sluice lacks:\n  {}",
        refused.len(),
        refused.join("\n  ")
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(passed >= 50, "only {passed} examples validated");
}
