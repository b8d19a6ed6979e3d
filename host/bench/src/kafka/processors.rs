//! `sluice-bench processors`: Data Prepper's processors, built in, on Apache access log lines
//! (~300 bytes):
//! 1. end to end, http → kafka buffer → json → `grok` (COMBINEDAPACHELOG) + `date` +
//!    `drop_events` + `add_entries` → file, against the same pipeline without processors, on
//!    one broker, in one run (goal: ratio ≥ 0.7). `drop_events` drops none of these lines, so
//!    both runs deliver every event; its condition is still evaluated on each.
//! 2. the same four processors split over a chain of two pipelines (`grok` + `date`, then a
//!    `pipeline` sink into a pipeline with an in-memory buffer running `drop_events` +
//!    `add_entries` → file) against the one pipeline doing it all (goal: ratio ≥ 0.8).
//! 3. the pipeline with the four processors while `sluice tap` reads what `add_entries` leaves,
//!    against it untapped (goal: ratio ≥ 0.95).
//! 4. the grok step alone: the `grok` processor on events against the same pattern compiled
//!    with the grok crate, matched natively and its captures put into a JSON map.
//! 5. `split_event`, `translate`, `user_agent` and `dissect`, each alone on the same lines end
//!    to end, against the pipeline without processors (goal: each ratio ≥ 0.7). Events/s
//!    counts the events posted: `split_event` makes two of each (at its one `&`).
//!    `user_agent` parses an `agent` field beside `log`, one of [`AGENTS`] browsers' user
//!    agents (a log's user agents repeat, and the processor caches what it parsed), against the
//!    pipeline without processors on those events; and, printed without a goal, the worst
//!    case: the whole line, different on every event, so nothing is ever found in the cache.

use std::hint::black_box;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use sluice_event::{Event, Metadata};

use super::sluice::{Shape, sluice_end_to_end};

/// The first two processors of the end-to-end run, as `processor:` takes them.
const PARSE: &str = r#"{grok: {match: {log: ['%{COMBINEDAPACHELOG}']}}}, {date: {match: [{key: timestamp, patterns: ['dd/MMM/yyyy:HH:mm:ss Z']}], destination: '@timestamp'}}"#;
/// Section 5: a processor alone, and the events it makes of each.
const ALONE: [(&str, &str, usize); 4] = [
    (
        "split_event",
        r#"{split_event: {field: log, delimiter: '&'}}"#,
        2,
    ),
    (
        "translate",
        r#"{translate: {mappings: [{source: log, targets: [{target: access, regex: {exact: false, patterns: {'"GET ': read, '"(POST|PUT) ': write}}, default: other}]}]}}"#,
        1,
    ),
    ("user_agent", r#"{user_agent: {source: agent}}"#, 1),
    (
        "dissect",
        r#"{dissect: {map: {log: '%{client} %{ident} %{auth} [%{timestamp}] "%{verb} %{request} %{protocol}" %{response} %{bytes} "%{referrer}" "%{agent}"'}}}"#,
        1,
    ),
];
/// How many different user agents the events of `user_agent` alone carry.
const AGENTS: usize = 40;

/// The user agent of event `i`: one of [`AGENTS`], browsers and versions as a web log has them.
fn agent(i: usize) -> String {
    let k = i % AGENTS;
    match k % 4 {
        0 => format!(
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{}.0.0.0 Safari/537.36",
            100 + k
        ),
        1 => format!(
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/{}.1 Safari/605.1.15",
            10 + k / 4
        ),
        2 => format!(
            "Mozilla/5.0 (X11; Linux x86_64; rv:{0}.0) Gecko/20100101 Firefox/{0}.0",
            100 + k
        ),
        _ => format!(
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_{} like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148",
            k / 4
        ),
    }
}

/// The last two.
const ENRICH: &str = r#"{drop_events: {drop_when: '/verb == "HEAD"'}}, {add_entries: {entries: [{key: pipeline, value: apache}, {key: status_class, format: '${/response}'}]}}"#;

#[derive(clap::Args, Clone)]
pub(crate) struct Args {
    #[command(flatten)]
    runs: super::Runs,
    /// Log lines per request body.
    #[arg(long, default_value_t = 100)]
    events: usize,
    /// Lines for the grok step alone.
    #[arg(long, default_value_t = 200_000)]
    lines: usize,
    /// A folder of Data Prepper configurations (`../shared/dp-corpus`): times `sluice
    /// validate` on each (plugins already cached), the slowest and the median.
    #[arg(long)]
    corpus: Option<std::path::PathBuf>,
}

/// Apache combined log line `i`, about 300 bytes.
fn line(i: usize) -> String {
    let verbs = ["GET", "POST", "PUT", "GET"];
    format!(
        r#"192.168.{}.{} - user{} [10/Oct/2000:13:{:02}:{:02} -0700] "{} /shop/catalog/item-{i}/details?ref=campaign-{}&page={} HTTP/1.1" {} {} "https://www.example.com/shop/catalog/start" "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36""#,
        i % 256,
        (i / 256) % 256,
        i % 1000,
        i % 60,
        (i / 60) % 60,
        verbs[i % 4],
        i % 97,
        i % 13,
        [200, 304, 404, 500][i % 4],
        1000 + i % 50_000,
    )
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let runs = &args.runs;
    let bodies: Vec<Vec<u8>> = (0..runs.requests)
        .map(|r| {
            let events: Vec<Value> = (0..args.events)
                .map(|e| json!({"log": line(r * args.events + e)}))
                .collect();
            serde_json::to_vec(&events).expect("serializable")
        })
        .collect();
    let with_agents: Vec<Vec<u8>> = (0..runs.requests)
        .map(|r| {
            let events: Vec<Value> = (0..args.events)
                .map(|e| {
                    let i = r * args.events + e;
                    json!({"log": line(i), "agent": agent(i)})
                })
                .collect();
            serde_json::to_vec(&events).expect("serializable")
        })
        .collect();
    let bytes: usize = bodies.iter().map(Vec::len).sum();
    println!(
        "payload set: {} requests x {} Apache log lines ({} bytes a line, {:.1} MB), {} partitions, {} clients",
        runs.requests,
        args.events,
        line(12345).len(),
        bytes as f64 / 1e6,
        runs.partitions,
        runs.clients,
    );
    let kafka = runs.kafka(args.events);
    let (mut bare, mut processed, mut chained) = (Duration::MAX, Duration::MAX, Duration::MAX);
    let (mut tapped, mut sampled) = (Duration::MAX, 0);
    let mut alone = [Duration::MAX; ALONE.len()];
    let (mut bare_agents, mut never_cached) = (Duration::MAX, Duration::MAX);
    let all = format!("{PARSE}, {ENRICH}");
    let with = Shape {
        processor_list: Some(&all),
        ..Shape::default()
    };
    let chain = Shape {
        processor_list: Some(PARSE),
        then: Some(ENRICH),
        ..Shape::default()
    };
    let tap = Shape {
        tap: Some(&["processor", "add_entries"]),
        ..with
    };
    for round in 1..=runs.rounds {
        println!("round {round} of {}", runs.rounds);
        bare = bare.min(sluice_end_to_end(&kafka, &bodies, Shape::default())?.took);
        processed = processed.min(sluice_end_to_end(&kafka, &bodies, with)?.took);
        chained = chained.min(sluice_end_to_end(&kafka, &bodies, chain)?.took);
        let run = sluice_end_to_end(&kafka, &bodies, tap)?;
        tapped = tapped.min(run.took);
        sampled = sampled.max(run.tapped);
        for ((_, list, out_per_event), best) in ALONE.iter().zip(&mut alone) {
            let shape = Shape {
                processor_list: Some(list),
                out_per_event: *out_per_event,
                ..Shape::default()
            };
            let bodies = if list.contains("source: agent") {
                &with_agents
            } else {
                &bodies
            };
            *best = (*best).min(sluice_end_to_end(&kafka, bodies, shape)?.took);
        }
        let plain = sluice_end_to_end(&kafka, &with_agents, Shape::default())?;
        bare_agents = bare_agents.min(plain.took);
        let whole_line = Shape {
            processor_list: Some("{user_agent: {source: log}}"),
            ..Shape::default()
        };
        never_cached = never_cached.min(sluice_end_to_end(&kafka, &bodies, whole_line)?.took);
    }
    let events = (runs.requests * args.events) as f64;
    println!("best of {} rounds:", runs.rounds);
    for (label, took) in [
        ("sluice http→kafka→json→file", bare),
        ("... + grok, date, drop_events, add_entries", processed),
        ("... the same over a chain of two pipelines", chained),
        ("... one pipeline, tapped after add_entries", tapped),
    ] {
        println!(
            "{label:<44} {:>6.2} s  {:>9.0} events/s",
            took.as_secs_f64(),
            events / took.as_secs_f64()
        );
    }
    println!(
        "ratio with the four processors/without: {:.2} (goal >= 0.70)",
        bare.as_secs_f64() / processed.as_secs_f64()
    );
    println!(
        "ratio of the chain of two pipelines/one pipeline doing the same: {:.2} (goal >= 0.80)",
        processed.as_secs_f64() / chained.as_secs_f64()
    );
    println!(
        "ratio tapped/untapped (sluice tap at processor add_entries, {sampled} events printed): {:.2} (goal >= 0.95)",
        processed.as_secs_f64() / tapped.as_secs_f64()
    );
    for ((name, list, _), took) in ALONE.iter().zip(alone) {
        let (without, label) = if list.contains("source: agent") {
            (bare_agents, format!("... + {name} alone ({AGENTS} agents)"))
        } else {
            (bare, format!("... + {name} alone"))
        };
        println!(
            "{label:<44} {:>6.2} s  {:>9.0} events/s  ratio {:.2} (goal >= 0.70)",
            took.as_secs_f64(),
            events / took.as_secs_f64(),
            without.as_secs_f64() / took.as_secs_f64()
        );
    }
    println!(
        "{:<44} {:>6.2} s  {:>9.0} events/s",
        "sluice http→kafka→json→file, events + agent",
        bare_agents.as_secs_f64(),
        events / bare_agents.as_secs_f64(),
    );
    println!(
        "{:<44} {:>6.2} s  {:>9.0} events/s  ratio {:.2} (worst case, no goal)",
        "... + user_agent on the whole line, uncached",
        never_cached.as_secs_f64(),
        events / never_cached.as_secs_f64(),
        bare.as_secs_f64() / never_cached.as_secs_f64()
    );
    grok_alone(args.lines)?;
    args.corpus.as_deref().map_or(Ok(()), validate_corpus)
}

/// `sluice validate` on every `.yaml` of `dir`, as a user runs it (the environment checked,
/// built-in plugins only), each after one untimed run that fills the plugin cache.
fn validate_corpus(dir: &std::path::Path) -> anyhow::Result<()> {
    let mut files: Vec<_> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    files.retain(|f| f.extension().is_some_and(|e| e == "yaml" || e == "yml"));
    files.sort();
    anyhow::ensure!(!files.is_empty(), "no .yaml file in {}", dir.display());
    let validate = |file: &std::path::Path| {
        let started = Instant::now();
        let out = std::process::Command::new(sluice_tests::sluice_bin())
            .arg("validate")
            .arg(file)
            .output()?;
        anyhow::Ok((started.elapsed(), out.status.success()))
    };
    validate(&files[0])?;
    let mut times = Vec::with_capacity(files.len());
    let mut valid = 0;
    for file in &files {
        let (took, ok) = validate(file)?;
        times.push((took, file));
        valid += usize::from(ok);
    }
    times.sort();
    let (slowest, file) = times[times.len() - 1];
    println!(
        "sluice validate on {} Data Prepper configurations ({valid} valid): median {:.0} ms, slowest {:.0} ms ({})",
        files.len(),
        times[times.len() / 2].0.as_secs_f64() * 1e3,
        slowest.as_secs_f64() * 1e3,
        file.file_name().unwrap_or_default().to_string_lossy(),
    );
    Ok(())
}

/// The grok processor against the grok crate on the same pattern, best of three each.
fn grok_alone(n: usize) -> anyhow::Result<()> {
    let lines: Vec<String> = (0..n).map(line).collect();
    let yaml = "p:\n  source:\n    http:\n  processor:\n    - grok:\n        match:\n          log: ['%{COMBINEDAPACHELOG}']\n  sink:\n    - stdout:\n";
    let mut config = sluice_config::parse("bench.yaml", yaml, Default::default())
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let sluice_config::Processor::Builtin(builtin) = config.pipelines.remove(0).processor.remove(0)
    else {
        anyhow::bail!("grok is built in");
    };
    let sluice_processors::Built::Each(processor) =
        sluice_processors::build(&builtin).map_err(|e| anyhow::anyhow!("{e}"))?
    else {
        anyhow::bail!("grok keeps no events");
    };
    let pattern = grok::Grok::with_default_patterns().compile("%{COMBINEDAPACHELOG}", true)?;
    let (mut ours, mut native) = (Duration::MAX, Duration::MAX);
    for _ in 0..3 {
        let started = Instant::now();
        for l in &lines {
            let mut data = Map::new();
            data.insert("log".to_owned(), Value::String(l.clone()));
            let mut event = Event::new(Value::Object(data), Metadata::new("LOG", 0));
            processor.process(&mut event);
            black_box(&event);
        }
        ours = ours.min(started.elapsed());
        let started = Instant::now();
        for l in &lines {
            let mut data = Map::new();
            data.insert("log".to_owned(), Value::String(l.clone()));
            if let Some(m) = pattern.match_against(l) {
                for (name, value) in m.iter() {
                    data.insert(name.to_owned(), Value::String(value.to_owned()));
                }
            }
            black_box(&data);
        }
        native = native.min(started.elapsed());
    }
    let check = {
        let mut event = Event::new(json!({"log": lines[0]}), Metadata::new("LOG", 0));
        processor.process(&mut event);
        event.data
    };
    anyhow::ensure!(check["verb"] == "GET", "grok captured: {check}");
    println!(
        "grok COMBINEDAPACHELOG, {n} lines: processor {:.0} lines/s, grok crate natively {:.0} lines/s, ratio {:.2}",
        n as f64 / ours.as_secs_f64(),
        n as f64 / native.as_secs_f64(),
        native.as_secs_f64() / ours.as_secs_f64()
    );
    Ok(())
}
