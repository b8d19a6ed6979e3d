//! `sluice buffer status|replay`: a pipeline's Kafka buffer described, and a window of its
//! history sent through the pipeline again (`sluice_pipeline::operate::rewind`). Both read the
//! topic beside the live consumer group, whether sluice runs or not, and never move its
//! committed offsets.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, bail};
use sluice_kafka::rewind::{Progress, Window};

use super::PipelineArgs;
use crate::catalog::{Start, load_plugins, optimize_in_background, per_user_plugin_cache};

#[derive(clap::Subcommand)]
pub(crate) enum BufferCommand {
    /// Each partition of the pipeline's Kafka buffer: the group's committed offset, the end
    /// offset, the lag, and the receive time of the oldest record the topic still holds.
    Status {
        #[command(flatten)]
        pipeline: PipelineArgs,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Reads the records received in a window of time again, through the pipeline's
    /// deserializer and processors, into its sinks (or the `--sink`s named). The live consumer
    /// group's committed offsets do not move.
    Replay {
        #[command(flatten)]
        pipeline: PipelineArgs,
        /// From this receive time on: RFC 3339 (`2026-12-05T10:00:00Z`) or a time ago (`2h`).
        #[arg(long)]
        from: String,
        /// Up to this receive time (not included); default: up to the end as it is now.
        #[arg(long)]
        to: Option<String>,
        /// Only into this sink: its type (`file`) or name (`file:/var/out.jsonl`); repeat
        /// for more.
        #[arg(long = "sink")]
        sinks: Vec<String>,
        /// The plugin folder, as `sluice run --plugins`.
        #[arg(long)]
        plugins: Option<PathBuf>,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) fn run(command: BufferCommand) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    match command {
        BufferCommand::Status { pipeline, json } => {
            let p = pipeline.config()?;
            let config = runtime.block_on(kafka_settings(&p, &pipeline))?;
            let partitions = sluice_kafka::rewind::status(&config)
                .with_context(|| format!("pipeline `{}`", p.name))?;
            if json {
                println!("{}", serde_json::to_string(&partitions)?);
                return Ok(());
            }
            let mut out = std::io::stdout().lock();
            writeln!(
                out,
                "{:>9}  {:>12}  {:>12}  {:>10}  OLDEST RETAINED",
                "PARTITION", "COMMITTED", "END", "LAG"
            )?;
            for s in &partitions {
                writeln!(
                    out,
                    "{:>9}  {:>12}  {:>12}  {:>10}  {}",
                    s.partition,
                    s.committed.map_or("-".to_owned(), |c| c.to_string()),
                    s.high,
                    s.lag,
                    s.oldest_ms.map_or("-".to_owned(), rfc3339)
                )?;
            }
            let lag: i64 = partitions.iter().map(|s| s.lag).sum();
            writeln!(out, "total lag: {lag}")?;
            Ok(())
        }
        BufferCommand::Replay {
            pipeline,
            from,
            to,
            sinks,
            plugins,
            json,
        } => {
            let window = Window {
                from_ms: time(&from).context("--from")?,
                to_ms: to.as_deref().map(time).transpose().context("--to")?,
            };
            if window.to_ms.is_some_and(|to| to <= window.from_ms) {
                bail!("--to must come after --from");
            }
            let p = pipeline.config()?;
            let host = sluice_plugin::PluginHost::new(per_user_plugin_cache())?;
            let (catalog, _) = load_plugins(host, plugins.as_deref(), Start::Quickly)?;
            optimize_in_background(&catalog);
            let started = Instant::now();
            let bar = std::io::IsTerminal::is_terminal(&std::io::stderr());
            let done = runtime.block_on(sluice_pipeline::operate::rewind::rewind(
                p,
                &catalog,
                window,
                &sinks,
                &pipeline.data_dir,
                |progress| {
                    if bar {
                        draw(progress, started);
                    }
                },
            ))?;
            if bar {
                eprintln!();
            }
            if json {
                println!("{}", serde_json::to_string(&done)?);
            } else {
                let seconds = started.elapsed().as_secs_f64().max(0.001);
                println!(
                    "read {} records again into {}: {} events written ({:.0} events/s), {} dead-lettered (into {})",
                    done.records,
                    done.sinks.join(", "),
                    done.events,
                    done.events as f64 / seconds,
                    done.dead_lettered,
                    done.dead_letters.display()
                );
            }
            Ok(())
        }
    }
}

async fn kafka_settings(
    p: &sluice_config::Pipeline,
    args: &PipelineArgs,
) -> anyhow::Result<sluice_kafka::KafkaBufferConfig> {
    let sluice_config::Buffer::Builtin(sluice_config::Tier::Kafka(kafka)) = &p.buffer else {
        bail!("pipeline `{}`: its buffer is not kafka", p.name);
    };
    Ok(sluice_pipeline::buffer::kafka::settings(p, kafka, &args.data_dir).await?)
}

/// `text` as ms since the Unix epoch: an RFC 3339 time, or a duration ago (`2h`).
fn time(text: &str) -> anyhow::Result<u64> {
    let at = match humantime::parse_rfc3339_weak(text) {
        Ok(at) => at,
        Err(_) => {
            let ago = humantime::parse_duration(text).map_err(|_| {
                anyhow::anyhow!(
                    "`{text}` is neither an RFC 3339 time (`2026-12-05T10:00:00Z`) nor a time ago (`2h`)"
                )
            })?;
            SystemTime::now() - ago
        }
    };
    Ok(at
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64))
}

fn rfc3339(ms: u64) -> String {
    let at = UNIX_EPOCH + std::time::Duration::from_millis(ms);
    humantime::format_rfc3339_millis(at).to_string()
}

/// One line of progress on stderr: a bar, records read of all, events/s so far.
fn draw(progress: &Progress, started: Instant) {
    let (read, total) = (
        progress.read.load(Ordering::Relaxed),
        progress.total.load(Ordering::Relaxed).max(1),
    );
    let width = 30;
    let filled = ((read * width) / total).min(width) as usize;
    let rate = read as f64 / started.elapsed().as_secs_f64().max(0.001);
    eprint!(
        "\r[{}{}] {read}/{total} records  {rate:.0} records/s",
        "#".repeat(filled),
        " ".repeat(width as usize - filled)
    );
}
