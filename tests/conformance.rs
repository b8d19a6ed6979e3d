//! One conformance suite per format, run against every implementation of it: the logfmt suite
//! against the Rust, Python and JavaScript plugins, the csv suite against the JavaScript one;
//! one suite for processors ([`processor`]) and one for buffer policies ([`buffer`]). Cases live
//! in `tests/conformance/*.json`; a plugin that fails is reported with the first record, event
//! or step whose outcome differs.

mod buffer;
mod processor;

use std::path::Path;

use serde_json::Value;
use sluice_plugin::{Decoded, Decoder, Limits, PluginHost, RawRecord};
use sluice_tests::{plugin_cache, plugin_dir, root};

/// What a case expects.
#[derive(Debug)]
enum Expect {
    /// These events, compared as JSON values (key order and spacing do not matter).
    Events(Vec<Value>),
    /// A malformed outcome whose reason starts with this.
    Malformed(String),
}

struct Case {
    name: String,
    payload: Vec<u8>,
    expect: Expect,
}

/// One suite: options for `configure`, and cases.
struct Suite {
    options: Vec<(String, String)>,
    cases: Vec<Case>,
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("payload_hex is hex"))
        .collect()
}

fn cases(list: &Value) -> Vec<Case> {
    list.as_array()
        .expect("cases is a list")
        .iter()
        .map(|c| Case {
            name: c["name"].as_str().expect("a case has a name").to_owned(),
            payload: match (&c["payload"], &c["payload_hex"]) {
                (Value::String(text), _) => text.as_bytes().to_vec(),
                (_, Value::String(h)) => hex(h),
                _ => panic!("case {c} has neither payload nor payload_hex"),
            },
            expect: match (&c["events"], &c["malformed"]) {
                (Value::Array(events), _) => Expect::Events(events.clone()),
                (_, Value::String(prefix)) => Expect::Malformed(prefix.clone()),
                _ => panic!("case {c} has neither events nor malformed"),
            },
        })
        .collect()
}

/// Reads `tests/conformance/NAME.json`: the plugins it covers and its suites.
fn load(name: &str) -> (Vec<String>, Vec<Suite>) {
    let path = root().join(format!("tests/conformance/{name}.json"));
    let doc: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let plugins = doc["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_owned())
        .collect();
    let mut suites = vec![Suite {
        options: vec![],
        cases: cases(&doc["cases"]),
    }];
    for extra in doc["with_options"].as_array().into_iter().flatten() {
        let options = extra["options"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
            .collect();
        suites.push(Suite {
            options,
            cases: cases(&extra["cases"]),
        });
    }
    (plugins, suites)
}

/// Why `got` does not meet `expect`, or `None` when it does.
fn differs(expect: &Expect, got: &Decoded) -> Option<String> {
    match (expect, got) {
        (Expect::Events(want), Decoded::Events(texts)) => {
            let parsed: Result<Vec<Value>, _> = texts.iter().map(serde_json::from_slice).collect();
            match parsed {
                Ok(parsed) if &parsed == want => None,
                Ok(_) => Some(format!("expected events {want:?}, got {texts:?}")),
                Err(e) => Some(format!("an event is not JSON ({e}): {texts:?}")),
            }
        }
        (Expect::Malformed(prefix), Decoded::Malformed(reason)) if reason.starts_with(prefix) => {
            None
        }
        (Expect::Malformed(prefix), other) => Some(format!(
            "expected malformed with a reason starting `{prefix}`, got {other:?}"
        )),
        (Expect::Events(want), other) => Some(format!("expected events {want:?}, got {other:?}")),
    }
}

fn record(payload: &[u8], i: usize) -> RawRecord {
    RawRecord {
        payload: payload.to_vec(),
        key: None,
        received_at_ms: 1_700_000_000_000,
        origin: format!("conformance#{i}"),
    }
}

/// Runs every suite against the plugin in `file`: all cases of a suite in one batch, then the
/// same cases repeated into a batch of 1000 (outcomes must stay aligned with their records).
/// `Err` names the first differing record.
fn check(file: &Path, suites: &[Suite]) -> Result<usize, String> {
    let host = PluginHost::new(Some(plugin_cache())).unwrap();
    let plugin = host.load_file(file).map_err(|e| e.to_string())?;
    let name = plugin.name().to_owned();
    let mut checked = 0;
    for suite in suites {
        let mut decoder = Decoder::new(plugin.clone(), suite.options.clone(), Limits::default())
            .map_err(|e| e.to_string())?;
        let batch: Vec<RawRecord> = suite
            .cases
            .iter()
            .enumerate()
            .map(|(i, c)| record(&c.payload, i))
            .collect();
        let big: Vec<RawRecord> = (0..1000)
            .map(|i| record(&suite.cases[i % suite.cases.len()].payload, i))
            .collect();
        for records in [batch, big] {
            let outcomes = decoder.decode(&records);
            assert_eq!(outcomes.len(), records.len());
            for (i, got) in outcomes.iter().enumerate() {
                let case = &suite.cases[i % suite.cases.len()];
                if let Some(why) = differs(&case.expect, got) {
                    return Err(format!(
                        "plugin `{name}` fails at record {i} of a batch of {} (case `{}`, payload {:?}, options {:?}): {why}",
                        records.len(),
                        case.name,
                        String::from_utf8_lossy(&case.payload),
                        suite.options,
                    ));
                }
                checked += 1;
            }
        }
    }
    Ok(checked)
}

fn run_suite(format: &str) {
    let (plugins, suites) = load(format);
    let mut failures = Vec::new();
    for name in &plugins {
        match check(&plugin_dir().join(format!("{name}.wasm")), &suites) {
            Ok(n) => eprintln!("{format}: `{name}` passes ({n} records checked)"),
            Err(why) => failures.push(why),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn logfmt_in_rust_python_and_javascript_agree_with_the_suite() {
    run_suite("logfmt");
}

#[test]
fn csv_in_javascript_agrees_with_the_suite() {
    run_suite("csv");
}

#[test]
fn a_plugin_that_fails_the_suite_is_reported_with_the_first_differing_record() {
    // ndjson is not logfmt: the first case (`level=info`) is not JSON.
    let (_, suites) = load("logfmt");
    let err = check(&plugin_dir().join("ndjson.wasm"), &suites).unwrap_err();
    assert!(
        err.starts_with("plugin `ndjson` fails at record 0 of a batch of 27 (case `one pair`, payload \"level=info\""),
        "{err}"
    );
}

#[test]
fn csv_refuses_bad_options_naming_the_option() {
    let host = PluginHost::new(Some(plugin_cache())).unwrap();
    let plugin = host.load_file(&plugin_dir().join("csv.wasm")).unwrap();
    let refuse = |key: &str, value: &str| {
        Decoder::new(
            plugin.clone(),
            vec![(key.to_owned(), value.to_owned())],
            Limits::default(),
        )
        .err()
        .map(|e| e.to_string())
    };
    assert_eq!(
        refuse("delimiter", ";;").as_deref(),
        Some(
            "plugin `csv` refused its options: option `delimiter` must be one character other than a quote or line break, got `;;`"
        )
    );
    assert_eq!(
        refuse("header", "true").as_deref(),
        Some(
            "plugin `csv` refused its options: unknown option `header`; the csv deserializer takes `delimiter` and `columns`"
        )
    );
    assert_eq!(
        refuse("columns", "[\"a\",\"a\"]").as_deref(),
        Some("plugin `csv` refused its options: option `columns` names `a` twice")
    );
}
