//! `sluice top`: each running pipeline's stages, refreshed each second, from the process's
//! `/metrics` (behind the same TLS and credentials as the admin endpoint): records in and
//! events out per second, dead letters, lag; each plugin's batches per second, time per batch
//! and traps; each sink's events per second, retries and failures.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

use super::{Reach, Remote};

#[derive(clap::Args)]
pub(crate) struct TopArgs {
    /// The data dir of the running process, as `sluice run --data-dir` had it.
    #[arg(long, default_value = "./data")]
    data_dir: std::path::PathBuf,
    /// Print one view (after a second of counting) and exit.
    #[arg(long)]
    once: bool,
    #[command(flatten)]
    remote: Remote,
}

/// One sample: `name`, its labels, its value.
type Sample = (String, Vec<(String, String)>, f64);

pub(crate) fn run(args: TopArgs) -> anyhow::Result<()> {
    let Reach::Running(client) = super::reach(&args.data_dir, &args.remote)? else {
        bail!(
            "no sluice runs on the data dir `{}`: top reads a running process",
            args.data_dir.display()
        );
    };
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(async {
        let mut before = (Instant::now(), scrape(&client).await?);
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let now = (Instant::now(), scrape(&client).await?);
            let seconds = now.0.duration_since(before.0).as_secs_f64();
            let view = render(&before.1, &now.1, seconds);
            let mut out = std::io::stdout().lock();
            if !args.once {
                // Clear the screen, top left.
                write!(out, "\x1b[2J\x1b[H")?;
            }
            write!(out, "{view}")?;
            out.flush()?;
            if args.once {
                return Ok(());
            }
            before = now;
        }
    })
}

async fn scrape(client: &super::Client) -> anyhow::Result<Vec<Sample>> {
    let response = client.get("/metrics").await?;
    let text = response.text().await.context("reading /metrics")?;
    Ok(parse(&text))
}

/// The samples of a Prometheus text exposition.
fn parse(text: &str) -> Vec<Sample> {
    let mut samples = Vec::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let Some((head, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let Ok(value) = value.parse::<f64>() else {
            continue;
        };
        let (name, labels) = match head.split_once('{') {
            Some((name, rest)) => (name, labels(rest.trim_end_matches('}'))),
            None => (head, Vec::new()),
        };
        samples.push((name.to_owned(), labels, value));
    }
    samples
}

fn labels(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some((key, after)) = rest.split_once("=\"") {
        let mut value = String::new();
        let mut chars = after.char_indices();
        let mut end = after.len();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, next)) = chars.next() {
                        value.push(if next == 'n' { '\n' } else { next });
                    }
                }
                '"' => {
                    end = i + 1;
                    break;
                }
                c => value.push(c),
            }
        }
        out.push((key.trim_start_matches(',').trim().to_owned(), value));
        rest = &after[end..];
    }
    out
}

fn label<'a>(sample: &'a Sample, key: &str) -> Option<&'a str> {
    sample
        .1
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// The sum of `name`'s samples whose labels include all of `with`.
fn sum(samples: &[Sample], name: &str, with: &[(&str, &str)]) -> f64 {
    samples
        .iter()
        .filter(|s| s.0 == name && with.iter().all(|(k, v)| label(s, k) == Some(*v)))
        .fold(0.0, |total, s| total + s.2)
}

/// The view of `now`, with rates over the `seconds` since `before`.
fn render(before: &[Sample], now: &[Sample], seconds: f64) -> String {
    let rate = |name: &str, with: &[(&str, &str)]| {
        ((sum(now, name, with) - sum(before, name, with)) / seconds.max(0.001)).max(0.0)
    };
    // Each pipeline's buffer prefix: its `<prefix>_recordsWritten`.
    let mut pipelines: BTreeMap<String, String> = BTreeMap::new();
    for s in now {
        if let (Some(prefix), Some(p)) = (s.0.strip_suffix("_recordsWritten"), label(s, "pipeline"))
            && !prefix.starts_with("sluice")
        {
            pipelines.insert(p.to_owned(), prefix.to_owned());
        }
    }
    let mut out = String::new();
    out.push_str(&format!(
        "{:<34} {:>10} {:>10} {:>8} {:>8} {:>10} {:>8}\n",
        "PIPELINE / STAGE", "IN/s", "OUT/s", "DLQ", "LAG", "ms/BATCH", "RETRIES"
    ));
    for (p, prefix) in &pipelines {
        let me = [("pipeline", p.as_str())];
        // A kafka source's pipeline takes in what its topics' consumers read
        // (`kafka_topic_<topic>_numberOfRecordsConsumed`), and lags on those topics.
        let topics = |samples: &[Sample], metric: &str| -> f64 {
            samples
                .iter()
                .filter(|s| {
                    s.0.strip_prefix("kafka_topic_")
                        .is_some_and(|rest| rest.ends_with(&format!("_{metric}")))
                        && label(s, "pipeline") == Some(p.as_str())
                })
                .fold(0.0, |total, s| total + s.2)
        };
        let lag = sum(now, &format!("{prefix}_consumerLag"), &me) + topics(now, "consumerLag");
        let consumed = ((topics(now, "numberOfRecordsConsumed")
            - topics(before, "numberOfRecordsConsumed"))
            / seconds.max(0.001))
        .max(0.0);
        out.push_str(&format!(
            "{:<34} {:>10.1} {:>10.1} {:>8} {:>8} {:>10} {:>8}\n",
            p,
            // An s3 source's takes in the lines its readers read.
            rate(&format!("{prefix}_recordsWritten"), &me) + consumed + rate("s3_recordsRead", &me),
            rate("sluice_eventsWritten", &me),
            sum(now, "sluice_recordsDeadLettered", &me),
            lag,
            "",
            ""
        ));
        let mut plugins: Vec<(&str, &str)> = now
            .iter()
            .filter(|s| s.0 == "sluice_plugin_calls" && label(s, "pipeline") == Some(p))
            .filter_map(|s| Some((label(s, "kind")?, label(s, "plugin")?)))
            .collect();
        plugins.sort();
        plugins.dedup();
        for (kind, plugin) in plugins {
            let with = [("pipeline", p.as_str()), ("plugin", plugin), ("kind", kind)];
            let batches = rate("sluice_plugin_batch_seconds_count", &with);
            let ms = if batches > 0.0 {
                format!(
                    "{:.2}",
                    rate("sluice_plugin_batch_seconds_sum", &with) / batches * 1000.0
                )
            } else {
                "-".to_owned()
            };
            let traps = sum(now, "sluice_plugin_traps", &with);
            out.push_str(&format!(
                "  {:<32} {:>10.1} {:>10} {:>8} {:>8} {:>10} {:>8}\n",
                format!("{kind} {plugin}"),
                batches,
                "",
                format!("{traps} trap"),
                "",
                ms,
                ""
            ));
        }
        let mut sinks: Vec<&str> = now
            .iter()
            .filter(|s| s.0 == "sluice_sink_eventsWritten" && label(s, "pipeline") == Some(p))
            .filter_map(|s| label(s, "sink"))
            .collect();
        sinks.sort_unstable();
        sinks.dedup();
        for sink in sinks {
            let with = [("pipeline", p.as_str()), ("sink", sink)];
            out.push_str(&format!(
                "  {:<32} {:>10} {:>10.1} {:>8} {:>8} {:>10} {:>8}\n",
                format!("sink {sink}"),
                "",
                rate("sluice_sink_eventsWritten", &with),
                sum(now, "sluice_sink_eventsFailed", &with),
                "",
                "",
                sum(now, "sluice_sink_retries", &with)
            ));
        }
    }
    if pipelines.is_empty() {
        out.push_str("(no pipeline has written anything yet)\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = r#"
# TYPE kafka_buffer_recordsWritten counter
kafka_buffer_recordsWritten{pipeline="p"} 10
sluice_eventsWritten{pipeline="p"} 20
sluice_plugin_calls{pipeline="p",plugin="json",kind="deserializer"} 1
sluice_plugin_batch_seconds_sum{pipeline="p",plugin="json",kind="deserializer"} 0.5
sluice_plugin_batch_seconds_count{pipeline="p",plugin="json",kind="deserializer"} 1
sluice_sink_eventsWritten{pipeline="p",sink="file:/a \"b\""} 20
"#;

    const NOW: &str = r#"
kafka_buffer_recordsWritten{pipeline="p"} 30
kafka_buffer_consumerLag{pipeline="p",partition="0"} 4
kafka_buffer_consumerLag{pipeline="p",partition="1"} 3
sluice_eventsWritten{pipeline="p"} 60
sluice_recordsDeadLettered{pipeline="p"} 2
sluice_plugin_calls{pipeline="p",plugin="json",kind="deserializer"} 3
sluice_plugin_batch_seconds_sum{pipeline="p",plugin="json",kind="deserializer"} 0.504
sluice_plugin_batch_seconds_count{pipeline="p",plugin="json",kind="deserializer"} 3
sluice_sink_eventsWritten{pipeline="p",sink="file:/a \"b\""} 60
sluice_sink_retries{pipeline="p",sink="file:/a \"b\""} 5
"#;

    #[test]
    fn a_kafka_source_pipeline_takes_in_what_its_topics_consumers_read() {
        let before = "bounded_blocking_recordsWritten{pipeline=\"k\"} 0\n\
                      kafka_topic_logs_v1_numberOfRecordsConsumed{pipeline=\"k\"} 100\n";
        let now = "bounded_blocking_recordsWritten{pipeline=\"k\"} 0\n\
                   kafka_topic_logs_v1_numberOfRecordsConsumed{pipeline=\"k\"} 300\n\
                   kafka_topic_logs_v1_consumerLag{pipeline=\"k\",partition=\"0\"} 9\n\
                   kafka_topic_other_numberOfRecordsConsumed{pipeline=\"x\"} 999\n";
        let view = render(&parse(before), &parse(now), 2.0);
        let row: Vec<&str> = view.lines().nth(1).unwrap().split_whitespace().collect();
        assert_eq!(row, ["k", "100.0", "0.0", "0", "9"], "{view}");
    }

    #[test]
    fn an_s3_source_pipeline_takes_in_the_lines_its_readers_read() {
        let before = "bounded_blocking_recordsWritten{pipeline=\"s\"} 0\n\
                      s3_recordsRead{pipeline=\"s\"} 1000\n";
        let now = "bounded_blocking_recordsWritten{pipeline=\"s\"} 0\n\
                   s3_recordsRead{pipeline=\"s\"} 5000\n";
        let view = render(&parse(before), &parse(now), 2.0);
        let row: Vec<&str> = view.lines().nth(1).unwrap().split_whitespace().collect();
        assert_eq!(row, ["s", "2000.0", "0.0", "0", "0"], "{view}");
    }

    #[test]
    fn the_view_shows_rates_lag_plugin_time_and_sink_retries() {
        let view = render(&parse(BEFORE), &parse(NOW), 2.0);
        let lines: Vec<&str> = view.lines().collect();
        let pipeline: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(pipeline, ["p", "10.0", "20.0", "2", "7"], "{view}");
        let plugin: Vec<&str> = lines[2].split_whitespace().collect();
        assert_eq!(
            plugin,
            ["deserializer", "json", "1.0", "0", "trap", "2.00"],
            "{view}"
        );
        let sink: Vec<&str> = lines[3].split_whitespace().collect();
        assert_eq!(
            sink,
            ["sink", "file:/a", "\"b\"", "20.0", "0", "5"],
            "{view}"
        );
    }
}
