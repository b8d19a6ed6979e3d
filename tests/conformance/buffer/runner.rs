//! Drives a policy through the tiered buffer's `Policy` trait, as the host drives it, in a
//! world the case controls ([`Run`]: tiers, a clock, a state): the steps of a case, the suites
//! and their refusals, and the contract every buffer policy keeps.

use std::sync::Arc;

use serde_json::Value;
use sluice_buffer::Record;
use sluice_buffer::tiered::{
    Context, Incoming, Move, Placement, Policy, PolicyFault, State, TierState,
};
use sluice_plugin::{BufferPolicy, Limits, Plugin, PluginError};

use super::expect::{WriteReply, Written, differs, show};
use super::suite::{Options, Subject, Suite, index, list, load, record, text, tiers};

/// When every case's clock starts (ms since the Unix epoch).
const START_MS: u64 = 1_700_000_000_000;

/// Entries a case's state may hold: far more than any case writes.
const STATE_ENTRIES: usize = 10_000;

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

/// A policy instance of `plugin` configured with `options`, under the default limits.
fn configure(plugin: &Plugin, options: &Options) -> Result<BufferPolicy, PluginError> {
    BufferPolicy::new(plugin.clone(), options.clone(), Limits::default())
}

/// Runs one step of a case; `Err` says what differs.
fn step(run: &mut Run, step: &Value) -> Result<(), String> {
    if let Some(records) = step["write"].as_array() {
        let records: Vec<Record> = records.iter().map(|r| record(r, run.now_ms)).collect();
        let want = Written::parse(step);
        let got = run.write(&records, step["keep"].as_bool().unwrap_or(true));
        return differs(&want, &got).map_or(Ok(()), Err);
    }
    if step["set_tier"].is_u64() {
        let tier = &mut run.tiers[index(&step["set_tier"])];
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
                from: index(&m["from"]),
                to: index(&m["to"]),
                max_records: index(&m["max_records"]),
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
pub(super) fn check(suite: &Suite, subject: &Subject) -> Result<usize, String> {
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
        let policy =
            configure(&plugin, &case.options).map_err(|e| format!("{}: {e}", at(&case.name)))?;
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
        let at = at(&format!("refused {options:?}"));
        match configure(&plugin, options) {
            Err(e) if e.to_string() == want => checked += 1,
            Err(e) => return Err(format!("{at}: expected `{want}`, got `{e}`")),
            Ok(_) => return Err(format!("{at}: accepted; expected `{want}`")),
        }
    }
    Ok(checked)
}

/// Runs the suites named in `names` against each of their subjects.
pub(super) fn run_suites(names: &[&str]) {
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
pub(super) fn keeps_the_contract(
    subject: &Subject,
    options: &Options,
    contract: &Value,
) -> Result<usize, String> {
    let plugin = subject.load();
    let name = plugin.name().to_owned();
    let at = format!("contract, {} (plugin `{name}`)", subject.lang());
    let records = list(&contract["records"]);
    let mut checked = 0;
    for tier_set in list(&contract["tiers"]) {
        let tiers = tiers(tier_set);
        let n = tiers.len();
        let with = |what: String| {
            let names: Vec<&str> = tiers.iter().map(|t| t.name.as_str()).collect();
            format!("{at}, tiers {names:?}: {what}")
        };
        let policy = configure(&plugin, options).map_err(|e| with(e.to_string()))?;
        let mut run = Run::new(policy, tiers.clone());
        for size in list(&contract["writes"]) {
            let size = index(size);
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
    match configure(&plugin, &with_unknown) {
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
