//! The buffer policy conformance suite (`buffer.json`). Each policy is driven directly through
//! the tiered buffer's `Policy` trait, as the host drives it, with tiers, a clock and a state the
//! case controls: the contract every buffer policy in plugins/ keeps (and the template that
//! `sluice plugins new --kind buffer` writes in Rust, Python and JavaScript, built with
//! `sluice plugins build` as an author would), then the behaviour of the template,
//! `priority_shed`, `dedup` and `tenant_quota`. A failure names the suite, the case, the
//! language and the step.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use sluice_buffer::Record;
use sluice_buffer::tiered::{
    Context, Incoming, Move, Placement, Policy, PolicyFault, Refusal, State, TierState,
};
use sluice_plugin::{BufferPolicy, Limits, Plugin, PluginHost};
use sluice_tests::{built_template, plugin_cache, plugin_dir, root};

/// The name of the template's builds: `spill_rust`, `spill_python`, `spill_js`.
const TEMPLATE: &str = "spill";

/// When every case's clock starts (ms since the Unix epoch).
const START_MS: u64 = 1_700_000_000_000;

/// Entries a case's state may hold: far more than any case writes.
const STATE_ENTRIES: usize = 10_000;

/// `configure`'s options: (key, value).
type Options = Vec<(String, String)>;

/// What a suite runs against: a plugin from plugins/, or the template in one language.
#[derive(Debug, Clone)]
enum Subject {
    Plugin { name: String, lang: String },
    Template { lang: String },
}

impl Subject {
    fn parse(v: &Value) -> Self {
        match (&v["plugin"], &v["template"]) {
            (Value::String(name), _) => Subject::Plugin {
                name: name.clone(),
                lang: text(&v["lang"]),
            },
            (_, Value::String(lang)) => Subject::Template { lang: lang.clone() },
            _ => panic!("subject {v} names neither a plugin nor a template"),
        }
    }

    fn lang(&self) -> &str {
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
    fn load(&self) -> Plugin {
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

fn text(v: &Value) -> String {
    v.as_str()
        .unwrap_or_else(|| panic!("{v} is not text"))
        .to_owned()
}

fn options(v: &Value) -> Options {
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

fn tiers(v: &Value) -> Vec<TierState> {
    v.as_array()
        .expect("tiers is a list")
        .iter()
        .map(tier)
        .collect()
}

/// A written record, as a source would hand it to the buffer.
fn record(v: &Value, received_at_ms: u64) -> Record {
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
    }
}

/// What a write is expected to get.
#[derive(Debug)]
enum Written {
    Placed(Vec<Expected>),
    Throttled {
        retry_after_ms: u128,
        reason: String,
    },
    Unavailable(String),
}

/// One expected placement: a tier and the key (`None`: the source's own), or a drop whose
/// reason starts with this.
#[derive(Debug)]
enum Expected {
    Tier { tier: usize, key: Option<String> },
    Drop(String),
}

impl Expected {
    fn parse(v: &Value) -> Self {
        match (&v["tier"], &v["drop"]) {
            (Value::Number(n), _) => Expected::Tier {
                tier: usize::try_from(n.as_u64().unwrap()).unwrap(),
                key: v["key"].as_str().map(str::to_owned),
            },
            (_, Value::String(reason)) => Expected::Drop(reason.clone()),
            _ => panic!("placement {v} is neither a tier nor a drop"),
        }
    }

    fn matches(&self, got: &Placement) -> bool {
        match (self, got) {
            (Expected::Tier { tier, key }, Placement::Tier { tier: t, key: k }) => {
                tier == t && key.as_deref().map(str::as_bytes) == k.as_deref()
            }
            (Expected::Drop(prefix), Placement::Drop(reason)) => reason.starts_with(prefix),
            _ => false,
        }
    }
}

impl std::fmt::Display for Expected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Expected::Tier { tier, key: None } => write!(f, "tier {tier}"),
            Expected::Tier {
                tier,
                key: Some(key),
            } => write!(f, "tier {tier} key {key:?}"),
            Expected::Drop(prefix) => write!(f, "drop {prefix:?}..."),
        }
    }
}

/// A placement as the failure messages show it.
fn show(p: &Placement) -> String {
    match p {
        Placement::Tier { tier, key: None } => format!("tier {tier}"),
        Placement::Tier {
            tier,
            key: Some(key),
        } => format!("tier {tier} key {:?}", String::from_utf8_lossy(key)),
        Placement::Drop(reason) => format!("drop {reason:?}"),
    }
}

fn show_all(placements: &[Placement]) -> String {
    let all: Vec<String> = placements.iter().map(show).collect();
    format!("[{}]", all.join(", "))
}

type WriteReply = Result<Result<Vec<Placement>, Refusal>, PolicyFault>;

/// Why `got` does not meet `want`, or `None` when it does.
fn differs(want: &Written, got: &WriteReply) -> Option<String> {
    let got = match got {
        Err(fault) => return Some(format!("expected {want:?}, got a fault: {fault}")),
        Ok(got) => got,
    };
    match (want, got) {
        (Written::Placed(want), Ok(placements))
            if want.len() == placements.len()
                && want.iter().zip(placements).all(|(w, p)| w.matches(p)) =>
        {
            None
        }
        (Written::Placed(want), got) => {
            let want: Vec<String> = want.iter().map(ToString::to_string).collect();
            let got = match got {
                Ok(placements) => show_all(placements),
                Err(refusal) => format!("{refusal:?}"),
            };
            Some(format!("expected [{}], got {got}", want.join(", ")))
        }
        (
            Written::Throttled {
                retry_after_ms,
                reason,
            },
            Err(Refusal::Throttled {
                retry_after,
                reason: r,
            }),
        ) if retry_after.as_millis() == *retry_after_ms && r.starts_with(reason) => None,
        (Written::Unavailable(prefix), Err(Refusal::Unavailable(r))) if r.starts_with(prefix) => {
            None
        }
        (want, Ok(placements)) => Some(format!("expected {want:?}, got {}", show_all(placements))),
        (want, Err(refusal)) => Some(format!("expected {want:?}, got {refusal:?}")),
    }
}

/// One policy instance and the world it sees: its tiers, the clock, its state.
struct Run {
    policy: BufferPolicy,
    tiers: Vec<TierState>,
    now_ms: u64,
    state: Arc<State>,
}

impl Run {
    fn new(policy: BufferPolicy, tiers: Vec<TierState>) -> Self {
        Self {
            policy,
            tiers,
            now_ms: START_MS,
            state: Arc::new(State::new(STATE_ENTRIES)),
        }
    }

    fn cx(&self) -> Context {
        Context::new(self.tiers.clone(), self.now_ms, self.state.clone())
    }

    /// One write; its state changes kept, as the host keeps them once every tier held it,
    /// when it was placed and `keep`.
    fn write(&mut self, records: &[Record], keep: bool) -> WriteReply {
        let incoming: Vec<Incoming> = records.iter().map(Incoming::of).collect();
        let mut cx = self.cx();
        let reply = self.policy.on_write(&mut cx, &incoming);
        if keep && matches!(reply, Ok(Ok(_))) {
            cx.keep().expect("the state has room");
        }
        reply
    }

    fn next_read(&mut self, worker: u32) -> Result<Option<usize>, PolicyFault> {
        let mut cx = self.cx();
        self.policy.next_read(&mut cx, worker)
    }

    fn tick(&mut self) -> Result<Vec<Move>, PolicyFault> {
        let mut cx = self.cx();
        self.policy.tick(&mut cx)
    }
}

struct Case {
    name: String,
    options: Options,
    tiers: Vec<TierState>,
    /// What `describe` must answer, when the case says.
    headers: Option<Vec<String>>,
    steps: Vec<Value>,
}

struct Suite {
    name: String,
    subjects: Vec<Subject>,
    cases: Vec<Case>,
    /// Options `configure` must refuse, with the error (`{name}`: the plugin).
    refused: Vec<(Options, String)>,
}

/// `buffer.json`: the contract part and the suites.
fn load() -> (Value, Vec<Suite>) {
    let path = root().join("tests/conformance/buffer.json");
    let doc: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let suites = doc["suites"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| Suite {
            name: text(&s["name"]),
            subjects: s["subjects"]
                .as_array()
                .unwrap()
                .iter()
                .map(Subject::parse)
                .collect(),
            cases: s["cases"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| Case {
                    name: text(&c["name"]),
                    options: options(&c["options"]),
                    tiers: tiers(&c["tiers"]),
                    headers: c["headers"]
                        .as_array()
                        .map(|h| h.iter().map(text).collect()),
                    steps: c["steps"].as_array().unwrap().clone(),
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

/// Runs one step of a case; `Err` says what differs.
fn step(run: &mut Run, step: &Value) -> Result<(), String> {
    if let Some(records) = step["write"].as_array() {
        let records: Vec<Record> = records.iter().map(|r| record(r, run.now_ms)).collect();
        let want = if let Some(placed) = step["placed"].as_array() {
            Written::Placed(placed.iter().map(Expected::parse).collect())
        } else if step["throttled"].is_object() {
            Written::Throttled {
                retry_after_ms: u128::from(step["throttled"]["retry_after_ms"].as_u64().unwrap()),
                reason: text(&step["throttled"]["reason"]),
            }
        } else if let Value::String(reason) = &step["unavailable"] {
            Written::Unavailable(reason.clone())
        } else {
            panic!("write step {step} expects none of placed, throttled, unavailable");
        };
        let got = run.write(&records, step["keep"].as_bool().unwrap_or(true));
        return differs(&want, &got).map_or(Ok(()), Err);
    }
    if let Some(index) = step["set_tier"].as_u64() {
        let tier = &mut run.tiers[usize::try_from(index).unwrap()];
        if let Some(durable) = step["durable"].as_bool() {
            tier.durable = durable;
        }
        if let Some(available) = step["available"].as_bool() {
            tier.available = available;
        }
        if let Some(held) = step["held"].as_u64() {
            tier.held = held;
        }
        if let Some(lag) = step["lag"].as_u64() {
            tier.lag = lag;
        }
        return Ok(());
    }
    if let Some(ms) = step["advance_ms"].as_u64() {
        run.now_ms += ms;
        return Ok(());
    }
    if let Some(want) = step.get("next_read") {
        let want = want.as_u64().map(|t| usize::try_from(t).unwrap());
        return match run.next_read(0) {
            Ok(got) if got == want => Ok(()),
            got => Err(format!("expected next_read {want:?}, got {got:?}")),
        };
    }
    if let Some(want) = step["tick"].as_array() {
        let want: Vec<Move> = want
            .iter()
            .map(|m| Move {
                from: usize::try_from(m["from"].as_u64().unwrap()).unwrap(),
                to: usize::try_from(m["to"].as_u64().unwrap()).unwrap(),
                max_records: usize::try_from(m["max_records"].as_u64().unwrap()).unwrap(),
            })
            .collect();
        return match run.tick() {
            Ok(got) if got == want => Ok(()),
            got => Err(format!("expected moves {want:?}, got {got:?}")),
        };
    }
    panic!("step {step} is none of write, set_tier, advance_ms, next_read, tick")
}

/// Runs every case and refusal of `suite` against `subject`; `Err` names the suite, case,
/// language, plugin and step of the first difference.
fn check(suite: &Suite, subject: &Subject) -> Result<usize, String> {
    let plugin = subject.load();
    let name = plugin.name().to_owned();
    let at = |case: &str| {
        format!(
            "suite `{}`, case `{case}`, {} (plugin `{name}`)",
            suite.name,
            subject.lang()
        )
    };
    let mut checked = 0;
    for case in &suite.cases {
        let policy = BufferPolicy::new(plugin.clone(), case.options.clone(), Limits::default())
            .map_err(|e| format!("{}: {e}", at(&case.name)))?;
        if let Some(want) = &case.headers
            && policy.headers() != want.as_slice()
        {
            return Err(format!(
                "{}: describe: expected headers {want:?}, got {:?}",
                at(&case.name),
                policy.headers()
            ));
        }
        let mut run = Run::new(policy, case.tiers.clone());
        for (i, s) in case.steps.iter().enumerate() {
            step(&mut run, s)
                .map_err(|why| format!("{}: step {} {s}: {why}", at(&case.name), i + 1))?;
            checked += 1;
        }
    }
    for (options, reason) in &suite.refused {
        let want = format!(
            "plugin `{name}` refused its options: {}",
            reason.replace("{name}", &name)
        );
        match BufferPolicy::new(plugin.clone(), options.clone(), Limits::default()) {
            Err(e) if e.to_string() == want => checked += 1,
            Err(e) => {
                return Err(format!(
                    "{}: expected `{want}`, got `{e}`",
                    at(&format!("refused {options:?}"))
                ));
            }
            Ok(_) => {
                return Err(format!(
                    "{}: accepted; expected `{want}`",
                    at(&format!("refused {options:?}"))
                ));
            }
        }
    }
    Ok(checked)
}

/// Runs the suites named in `names` against each of their subjects.
fn run_suites(names: &[&str]) {
    let (_, suites) = load();
    let mut failures = Vec::new();
    for suite in suites.iter().filter(|s| names.contains(&s.name.as_str())) {
        for subject in &suite.subjects {
            match check(suite, subject) {
                Ok(n) => eprintln!(
                    "buffer suite `{}`: {subject} passes ({n} steps and refusals checked)",
                    suite.name
                ),
                Err(why) => failures.push(why),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The contract: `Err` says which policy broke it, with which tiers, and how.
fn keeps_the_contract(
    subject: &Subject,
    options: &Options,
    contract: &Value,
) -> Result<usize, String> {
    let plugin = subject.load();
    let name = plugin.name().to_owned();
    let at = format!("contract, {} (plugin `{name}`)", subject.lang());
    let records: Vec<&Value> = contract["records"].as_array().unwrap().iter().collect();
    let mut checked = 0;
    for tier_set in contract["tiers"].as_array().unwrap() {
        let tiers = tiers(tier_set);
        let n = tiers.len();
        let with = |what: String| {
            let names: Vec<&str> = tiers.iter().map(|t| t.name.as_str()).collect();
            format!("{at}, tiers {names:?}: {what}")
        };
        let policy = BufferPolicy::new(plugin.clone(), options.clone(), Limits::default())
            .map_err(|e| with(e.to_string()))?;
        let mut run = Run::new(policy, tiers.clone());
        for size in contract["writes"].as_array().unwrap() {
            let size = usize::try_from(size.as_u64().unwrap()).unwrap();
            let batch: Vec<Record> = records
                .iter()
                .cycle()
                .take(size)
                .map(|r| record(r, run.now_ms))
                .collect();
            match run.write(&batch, true) {
                Err(fault) => return Err(with(format!("a write of {size}: fault: {fault}"))),
                Ok(Err(_refused)) => {}
                Ok(Ok(placements)) => {
                    if placements.len() != size {
                        return Err(with(format!(
                            "a write of {size}: {} placements",
                            placements.len()
                        )));
                    }
                    if let Some(p) = placements
                        .iter()
                        .find(|p| matches!(p, Placement::Tier { tier, .. } if *tier >= n))
                    {
                        return Err(with(format!("a write of {size}: {}", show(p))));
                    }
                }
            }
            run.now_ms += 10;
            checked += 1;
        }
        for worker in 0..3 {
            match run.next_read(worker) {
                Ok(Some(tier)) if tier >= n => {
                    return Err(with(format!("next_read({worker}) names tier {tier}")));
                }
                Ok(_) => checked += 1,
                Err(fault) => return Err(with(format!("next_read({worker}): fault: {fault}"))),
            }
        }
        match run.tick() {
            Err(fault) => return Err(with(format!("tick: fault: {fault}"))),
            Ok(moves) => {
                let bad = moves
                    .iter()
                    .find(|m| m.from >= n || m.to >= n || m.from == m.to || tiers[m.from].durable);
                if let Some(m) = bad {
                    return Err(with(format!("tick: the move {m:?}")));
                }
                checked += 1;
            }
        }
    }
    let unknown = text(&contract["unknown_option"]);
    let mut with_unknown = options.clone();
    with_unknown.push((unknown.clone(), "1".to_owned()));
    match BufferPolicy::new(plugin, with_unknown, Limits::default()) {
        Err(e) if e.to_string().contains(&format!("`{unknown}`")) => checked += 1,
        Err(e) => {
            return Err(format!(
                "{at}: the unknown option `{unknown}`: refused without naming it: {e}"
            ));
        }
        Ok(_) => return Err(format!("{at}: the unknown option `{unknown}` was accepted")),
    }
    Ok(checked)
}

#[test]
fn every_buffer_policy_in_plugins_and_the_templates_keep_the_contract() {
    let (contract, _) = load();
    let mut failures = Vec::new();
    for p in contract["policies"].as_array().unwrap() {
        let subject = Subject::parse(p);
        match keeps_the_contract(&subject, &options(&p["options"]), &contract) {
            Ok(n) => eprintln!("buffer contract: {subject} keeps it ({n} calls checked)"),
            Err(why) => failures.push(why),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_buffer_template_in_rust_python_and_javascript_agrees_with_the_suite() {
    run_suites(&["template"]);
}

#[test]
fn priority_shed_agrees_with_the_suite() {
    run_suites(&["priority_shed"]);
}

#[test]
fn dedup_and_tenant_quota_agree_with_their_suites() {
    run_suites(&["dedup", "tenant_quota"]);
}

#[test]
fn a_buffer_policy_that_fails_a_suite_is_reported_with_the_suite_case_language_and_step() {
    // passthrough_buffer places every record in tier 0 and takes no options: priority_shed's
    // second case (two lanes) expects tier 1 for the low priorities at its first step.
    let (_, mut suites) = load();
    let mut suite = suites.swap_remove(
        suites
            .iter()
            .position(|s| s.name == "priority_shed")
            .unwrap(),
    );
    for case in &mut suite.cases {
        case.options.clear();
        case.headers = None;
    }
    suite.refused.clear();
    let subject = Subject::Plugin {
        name: "passthrough_buffer".into(),
        lang: "rust".into(),
    };
    let err = check(&suite, &subject).unwrap_err();
    assert!(
        err.starts_with(
            "suite `priority_shed`, case `two lanes: min_priority and above to tier 0, below to tier 1`, rust (plugin `passthrough_buffer`): step 1 "
        ),
        "{err}"
    );
    assert!(
        err.ends_with("expected [tier 0, tier 1, tier 0, tier 1, tier 1], got [tier 0, tier 0, tier 0, tier 0, tier 0]"),
        "{err}"
    );
}

#[test]
fn a_buffer_policy_that_breaks_the_contract_is_reported_with_its_tiers_and_the_write() {
    // hostile_buffer places a record asking for `nowhere` in tier 9, and accepts any option.
    let (mut contract, _) = load();
    contract["records"] = serde_json::json!([{ "headers": [["X-Hostile", "nowhere"]] }]);
    let subject = Subject::Plugin {
        name: "hostile_buffer".into(),
        lang: "rust".into(),
    };
    let err = keeps_the_contract(&subject, &Options::new(), &contract).unwrap_err();
    assert_eq!(
        err,
        "contract, rust (plugin `hostile_buffer`), tiers [\"kafka\"]: a write of 1: tier 9"
    );
    contract["records"] = serde_json::json!([{ "headers": [["X-Hostile", "no"]] }]);
    let err = keeps_the_contract(&subject, &Options::new(), &contract).unwrap_err();
    assert_eq!(
        err,
        "contract, rust (plugin `hostile_buffer`): the unknown option `no_such_option` was accepted"
    );
}
