//! Data Prepper's documented processor examples through the real binary: one pipeline per case
//! (a file of the input event, the case's processor block or chain, a file sink), all in one
//! `sluice run`; each output file must hold the documented event (compared as JSON: key
//! order does not matter), or nothing when the docs say the event is dropped.
//!
//! Cases run when every processor of theirs is built in; a stateful processor's cases of
//! several events (`inputs`, `outputs`) run in its own crate's tests; those whose output
//! depends on the clock (`nondeterministic`) or whose documented output is wrong (`doc_suspect`, listed in
//! the data's README) are left out, and counted.

use std::time::Duration;

use serde_json::Value;
use sluice_tests::{Sluice, json_lines, root};

use super::{NOT_BUILT_IN, refused_on_purpose, validate};

struct Case {
    id: String,
    processors: Vec<Value>,
    input: Value,
    /// The events the sink gets: none when dropped.
    output: Vec<Value>,
}

fn load() -> (Vec<Case>, usize) {
    let dir = root().join("tests/data/dataprepper/conformance");
    let mut cases = Vec::new();
    let mut left_out = 0;
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    for file in files {
        let list: Vec<Value> = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        for case in list {
            let Some(processor) = case.get("processor") else {
                continue; // routes: `route.json`, covered by the routing tests
            };
            if case.get("input").is_none() {
                // A stateful processor's case (several events in, several out, over time):
                // run by its unit test in sluice-processors.
                continue;
            }
            let processors = match processor {
                Value::Array(list) => list.clone(),
                one => vec![one.clone()],
            };
            let names: Vec<&str> = processors
                .iter()
                .filter_map(|p| p.as_object()?.keys().next().map(String::as_str))
                .collect();
            let skip = names.iter().any(|n| NOT_BUILT_IN.contains(n))
                || case["notes"]
                    .as_str()
                    .is_some_and(|n| n.contains("nondeterministic"))
                || case
                    .get("doc_suspect")
                    .is_some_and(|s| s != &Value::Bool(false) && !s.is_null());
            if skip {
                left_out += 1;
                continue;
            }
            // A block with a Data Prepper key sluice refuses on purpose: counted, not run.
            let one = format!(
                "p:\n  source:\n    http:\n  processor: {}\n  sink: [stdout]\n",
                serde_json::to_string(&processors).unwrap()
            );
            if let Err(errors) = validate("case", &one) {
                assert!(
                    errors.errors.iter().all(|e| refused_on_purpose(&e.message)),
                    "{}: {errors}",
                    case["id"]
                );
                left_out += 1;
                continue;
            }
            let output = match &case["output"] {
                Value::Null => Vec::new(),
                Value::Array(events) => events.clone(),
                event => vec![event.clone()],
            };
            cases.push(Case {
                id: case["id"].as_str().unwrap().to_owned(),
                processors,
                input: case["input"].clone(),
                output,
            });
        }
    }
    (cases, left_out)
}

#[test]
fn the_documented_examples_give_the_documented_events() {
    let (cases, left_out) = load();
    assert!(cases.len() >= 30, "only {} cases run", cases.len());
    let inputs = tempfile::tempdir().unwrap();
    let mut yaml = String::new();
    for (i, case) in cases.iter().enumerate() {
        let input = inputs.path().join(format!("in-{i}.jsonl"));
        std::fs::write(&input, format!("{}\n", case.input)).unwrap();
        // JSON is YAML: the block goes in as the docs wrote it.
        let processors = serde_json::to_string(&case.processors).unwrap();
        yaml.push_str(&format!(
            "case-{i}:\n  delay: 10ms\n  source:\n    file:\n      path: {}\n  processor: {processors}\n  sink:\n    - file:\n        path: {{dir}}/out-{i}.jsonl\n  dlq_path: {{dir}}/dlq-{i}.jsonl\n",
            input.display()
        ));
    }
    yaml.push_str("# port {port} unused\n");
    let mut s = Sluice::start_without_listener(&yaml);
    let done = |s: &Sluice, i: usize, case: &Case| {
        if case.output.is_empty() {
            s.metric("sluice_eventsDropped", &format!("case-{i}")) == Some(1.0)
        } else {
            json_lines(&s.path(&format!("out-{i}.jsonl"))).len() >= case.output.len()
        }
    };
    s.wait_for("every case's output", Duration::from_secs(60), || {
        cases.iter().enumerate().all(|(i, case)| done(&s, i, case))
    });
    assert_eq!(s.terminate(), 0, "{}", s.log());
    let mut wrong = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let got = json_lines(&s.path(&format!("out-{i}.jsonl")));
        if got != case.output {
            wrong.push(format!(
                "{}\n  processor: {}\n  input:     {}\n  expected:  {}\n  got:       {}",
                case.id,
                serde_json::to_string(&case.processors).unwrap(),
                case.input,
                serde_json::to_string(&case.output).unwrap(),
                serde_json::to_string(&got).unwrap(),
            ));
        }
    }
    eprintln!("{} documented cases run, {left_out} left out", cases.len());
    assert!(
        wrong.is_empty(),
        "{} of {} cases differ:\n{}",
        wrong.len(),
        cases.len(),
        wrong.join("\n")
    );
}
