//! The processor conformance suite (`processor.json`): edits, drops, fan-out, removal,
//! failures, options and event metadata, run against the processor that
//! `sluice plugins new --kind processor` writes in Rust, Python and JavaScript, each built with
//! `sluice plugins build` as an author would.

use std::path::Path;

use serde_json::Value;
use sluice_plugin::{Event, Limits, PluginHost, Processed, Processor};
use sluice_tests::{built_template, plugin_cache, plugin_dir, root};

/// What a case expects.
#[derive(Debug)]
enum Expect {
    Keep,
    Drop,
    /// These events, compared as JSON values.
    Replace(Vec<Value>),
    /// A failure whose reason starts with this.
    Failed(String),
}

struct Case {
    name: String,
    event: String,
    received_at_ms: u64,
    expect: Expect,
}

/// `configure`'s options: (key, value).
type Options = Vec<(String, String)>;

struct Suite {
    options: Options,
    cases: Vec<Case>,
}

fn options(map: &Value) -> Options {
    map.as_object()
        .expect("options is a map")
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                v.as_str().expect("option values are text").to_owned(),
            )
        })
        .collect()
}

/// `processor.json`: the suites, and the option sets that must be refused (with the reason).
fn load() -> (Vec<Suite>, Vec<(Options, String)>) {
    let path = root().join("tests/conformance/processor.json");
    let doc: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let suites = doc["suites"]
        .as_array()
        .unwrap()
        .iter()
        .map(|suite| Suite {
            options: options(&suite["options"]),
            cases: suite["cases"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| Case {
                    name: c["name"].as_str().unwrap().to_owned(),
                    event: c["event"].as_str().unwrap().to_owned(),
                    received_at_ms: c["received_at_ms"].as_u64().unwrap(),
                    expect: if c["keep"] == true {
                        Expect::Keep
                    } else if c["drop"] == true {
                        Expect::Drop
                    } else if let Value::Array(events) = &c["replaced_by"] {
                        Expect::Replace(events.clone())
                    } else if let Value::String(reason) = &c["failed"] {
                        Expect::Failed(reason.clone())
                    } else {
                        panic!("case {c} expects none of keep, drop, replaced_by, failed")
                    },
                })
                .collect(),
        })
        .collect();
    let refused = doc["refused"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                options(&r["options"]),
                r["reason"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    (suites, refused)
}

/// Why `got` does not meet `expect`, or `None` when it does.
fn differs(expect: &Expect, got: &Processed) -> Option<String> {
    match (expect, got) {
        (Expect::Keep, Processed::Keep(None)) | (Expect::Drop, Processed::Drop) => None,
        (Expect::Replace(want), Processed::Replace(events, None)) => {
            let parsed: Result<Vec<Value>, _> = events.iter().map(serde_json::from_slice).collect();
            match parsed {
                Ok(parsed) if &parsed == want => None,
                _ => Some(format!("expected events {want:?}, got {events:?}")),
            }
        }
        (Expect::Failed(prefix), Processed::Failed(reason)) if reason.starts_with(prefix) => None,
        (expect, got) => Some(format!("expected {expect:?}, got {got:?}")),
    }
}

/// Runs every suite against the processor in `file` (one batch of the cases, then 1000 events
/// cycling through them) and checks the refusals. `Err` names the first differing event.
fn check(file: &Path, suites: &[Suite], refused: &[(Options, String)]) -> Result<usize, String> {
    let host = PluginHost::new(Some(plugin_cache())).unwrap();
    let plugin = host.load_file(file).map_err(|e| e.to_string())?;
    let name = plugin.name().to_owned();
    let mut checked = 0;
    for suite in suites {
        let mut processor =
            Processor::new(plugin.clone(), suite.options.clone(), Limits::default())
                .map_err(|e| e.to_string())?;
        for size in [suite.cases.len(), 1000] {
            let cases: Vec<&Case> = suite.cases.iter().cycle().take(size).collect();
            let events: Vec<Event<'_>> = cases
                .iter()
                .map(|c| Event {
                    body: c.event.as_bytes(),
                    received_at_ms: c.received_at_ms,
                    origin: "conformance",
                    metadata: None,
                })
                .collect();
            let results = processor.process(&events);
            if results.len() != events.len() {
                return Err(format!(
                    "plugin `{name}`: {} verdicts for {} events",
                    results.len(),
                    events.len()
                ));
            }
            for (i, (case, got)) in cases.iter().zip(&results).enumerate() {
                if let Some(why) = differs(&case.expect, got) {
                    return Err(format!(
                        "plugin `{name}` fails at event {i} of a batch of {size} (case `{}`, event {}, options {:?}): {why}",
                        case.name, case.event, suite.options,
                    ));
                }
                checked += 1;
            }
        }
    }
    for (options, reason) in refused {
        let want = format!(
            "plugin `{name}` refused its options: {}",
            reason.replace("{name}", &name)
        );
        match Processor::new(plugin.clone(), options.clone(), Limits::default()) {
            Err(e) if e.to_string() == want => checked += 1,
            Err(e) => {
                return Err(format!(
                    "plugin `{name}` with options {options:?}: expected `{want}`, got `{e}`"
                ));
            }
            Ok(_) => {
                return Err(format!(
                    "plugin `{name}` accepted options {options:?}; expected `{want}`"
                ));
            }
        }
    }
    Ok(checked)
}

#[test]
fn the_processor_template_in_rust_python_and_javascript_agrees_with_the_suite() {
    let (suites, refused) = load();
    let mut failures = Vec::new();
    for lang in ["rust", "python", "js"] {
        match check(
            &built_template("processor", "stamp", lang),
            &suites,
            &refused,
        ) {
            Ok(n) => eprintln!("processor suite: `stamp_{lang}` passes ({n} verdicts checked)"),
            Err(why) => failures.push(why),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_processor_that_fails_the_suite_is_reported_with_the_first_differing_event() {
    // passthrough takes no options and keeps every event: the first case expects an edit.
    let (mut suites, _) = load();
    for suite in &mut suites {
        suite.options.clear();
    }
    let err = check(&plugin_dir().join("passthrough.wasm"), &suites, &[]).unwrap_err();
    assert!(
        err.starts_with("plugin `passthrough` fails at event 0 of a batch of 9 (case `an edit adds the tag and the receive time`"),
        "{err}"
    );
}
