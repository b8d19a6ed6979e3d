//! `buffer.json` as data: the subjects a suite runs against (a plugin, or the template in one
//! language), the cases with their tiers, records and steps, and the contract part, which
//! stays JSON for [`super::runner::keeps_the_contract`] to read.

use std::path::PathBuf;

use serde_json::Value;
use sluice_buffer::Record;
use sluice_buffer::tiered::TierState;
use sluice_plugin::{Plugin, PluginHost};
use sluice_tests::{built_template, plugin_cache, plugin_dir, root};

/// The name of the template's builds: `spill_rust`, `spill_python`, `spill_js`.
const TEMPLATE: &str = "spill";

/// `configure`'s options: (key, value).
pub(super) type Options = Vec<(String, String)>;

/// What a suite runs against: a plugin from plugins/, or the template in one language.
#[derive(Debug, Clone)]
pub(super) enum Subject {
    Plugin { name: String, lang: String },
    Template { lang: String },
}

impl Subject {
    pub(super) fn parse(v: &Value) -> Self {
        match (&v["plugin"], &v["template"]) {
            (Value::String(name), _) => Subject::Plugin {
                name: name.clone(),
                lang: text(&v["lang"]),
            },
            (_, Value::String(lang)) => Subject::Template { lang: lang.clone() },
            _ => panic!("subject {v} names neither a plugin nor a template"),
        }
    }

    pub(super) fn lang(&self) -> &str {
        match self {
            Subject::Plugin { lang, .. } | Subject::Template { lang } => lang,
        }
    }

    /// The component: built by scripts/build-plugins, or by `sluice plugins new|build`.
    fn file(&self) -> PathBuf {
        match self {
            Subject::Plugin { name, .. } => {
                let file = plugin_dir().join(format!("{name}.wasm"));
                assert!(
                    file.is_file(),
                    "{} is missing: run ./scripts/build-plugins",
                    file.display()
                );
                file
            }
            Subject::Template { lang } => built_template("buffer", TEMPLATE, lang),
        }
    }

    /// Loads (compiles, or takes from the test cache) the component.
    pub(super) fn load(&self) -> Plugin {
        let host = PluginHost::new(Some(plugin_cache())).unwrap();
        let plugin = host.load_file(&self.file()).unwrap();
        assert_eq!(plugin.world(), "sluice:plugin/buffer-plugin@0.2.0");
        plugin
    }
}

impl std::fmt::Display for Subject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Subject::Plugin { name, lang } => write!(f, "`{name}` ({lang})"),
            Subject::Template { lang } => write!(f, "the template in {lang}"),
        }
    }
}

pub(super) fn text(v: &Value) -> String {
    v.as_str()
        .unwrap_or_else(|| panic!("{v} is not text"))
        .to_owned()
}

pub(super) fn list(v: &Value) -> &[Value] {
    v.as_array().unwrap_or_else(|| panic!("{v} is not a list"))
}

/// A tier index, a record count: a whole number the case gives.
pub(super) fn index(v: &Value) -> usize {
    usize::try_from(
        v.as_u64()
            .unwrap_or_else(|| panic!("{v} is not a whole number")),
    )
    .unwrap()
}

pub(super) fn options(v: &Value) -> Options {
    v.as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), text(v)))
        .collect()
}

/// A tier: its name, and what the case says of it; a `kafka` tier is durable unless told.
fn tier(v: &Value) -> TierState {
    let name = text(&v["name"]);
    TierState {
        durable: v["durable"].as_bool().unwrap_or(name == "kafka"),
        available: v["available"].as_bool().unwrap_or(true),
        held: v["held"].as_u64().unwrap_or(0),
        capacity: v["capacity"].as_u64(),
        lag: v["lag"].as_u64().unwrap_or(0),
        name,
    }
}

pub(super) fn tiers(v: &Value) -> Vec<TierState> {
    list(v).iter().map(tier).collect()
}

/// A written record, as a source would hand it to the buffer.
pub(super) fn record(v: &Value, received_at_ms: u64) -> Record {
    let payload = match (&v["payload"], v["size"].as_u64()) {
        (Value::String(text), _) => text.as_bytes().to_vec(),
        (_, Some(size)) => vec![b'x'; usize::try_from(size).unwrap()],
        _ => b"x".to_vec(),
    };
    let headers = v["headers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|pair| (text(&pair[0]), text(&pair[1])))
        .collect();
    Record {
        payload,
        key: None,
        received_at_ms,
        origin: v["origin"]
            .as_str()
            .unwrap_or("http:/log/ingest")
            .to_owned(),
        content_type: v["content_type"].as_str().map(str::to_owned),
        headers,
        ..Default::default()
    }
}

pub(super) struct Case {
    pub(super) name: String,
    pub(super) options: Options,
    pub(super) tiers: Vec<TierState>,
    /// What `describe` must answer, when the case says.
    pub(super) headers: Option<Vec<String>>,
    pub(super) steps: Vec<Value>,
}

pub(super) struct Suite {
    pub(super) name: String,
    pub(super) subjects: Vec<Subject>,
    pub(super) cases: Vec<Case>,
    /// Options `configure` must refuse, with the error (`{name}`: the plugin).
    pub(super) refused: Vec<(Options, String)>,
}

/// `buffer.json`: the contract part and the suites.
pub(super) fn load() -> (Value, Vec<Suite>) {
    let path = root().join("tests/conformance/buffer.json");
    let doc: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let suites = list(&doc["suites"])
        .iter()
        .map(|s| Suite {
            name: text(&s["name"]),
            subjects: list(&s["subjects"]).iter().map(Subject::parse).collect(),
            cases: list(&s["cases"])
                .iter()
                .map(|c| Case {
                    name: text(&c["name"]),
                    options: options(&c["options"]),
                    tiers: tiers(&c["tiers"]),
                    headers: c["headers"]
                        .as_array()
                        .map(|h| h.iter().map(text).collect()),
                    steps: list(&c["steps"]).to_vec(),
                })
                .collect(),
            refused: s["refused"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|r| (options(&r["options"]), text(&r["reason"])))
                .collect(),
        })
        .collect();
    (doc["contract"].clone(), suites)
}
