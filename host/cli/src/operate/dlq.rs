//! `sluice dlq list|show|replay`: a pipeline's dead-letter file, grouped, shown, and sent back
//! through the pipeline (`sluice_pipeline::operate::replay`).

use std::io::Write as _;
use std::time::Duration;

use anyhow::Context as _;
use sluice_pipeline::operate::dead_letters::{self, Entry, Select};
use sluice_pipeline::operate::replay::Report;

use super::{PipelineArgs, Reach, Remote};

/// Which entries.
#[derive(clap::Args)]
pub(crate) struct Selection {
    /// Only these entry numbers (as `dlq show` numbers them).
    numbers: Vec<usize>,
    /// Only entries whose reason matches this regular expression.
    #[arg(long)]
    reason: Option<String>,
    /// Only entries dead-lettered this long ago or less (`2h`, `30m`).
    #[arg(long, value_parser = crate::humantime_duration)]
    since: Option<Duration>,
    /// At most this many, the oldest first.
    #[arg(long)]
    limit: Option<usize>,
    /// Entries already replayed too.
    #[arg(long)]
    again: bool,
}

impl Selection {
    fn select(self) -> Select {
        Select {
            numbers: self.numbers,
            reason: self.reason,
            since: self.since,
            limit: self.limit,
            again: self.again,
        }
    }
}

#[derive(clap::Subcommand)]
pub(crate) enum DlqCommand {
    /// The dead letters grouped by stage, origin and reason, with how many were replayed.
    List {
        #[command(flatten)]
        pipeline: PipelineArgs,
        /// Entries already replayed too.
        #[arg(long)]
        again: bool,
    },
    /// The chosen dead letters, each with its number, reasons and payload (as text where it is
    /// UTF-8, else base64).
    Show {
        #[command(flatten)]
        pipeline: PipelineArgs,
        #[command(flatten)]
        selection: Selection,
        /// One JSON entry per line, as the file has them (with `number` and `replayed`).
        #[arg(long)]
        json: bool,
    },
    /// Sends the chosen dead letters back: records and events into the pipeline's buffer (to
    /// be deserialized and processed again), a sink's events into that sink. Through the
    /// running process's admin endpoint, or, with sluice stopped, straight into the pipeline's
    /// Kafka topic. Each is marked replayed once held; a replay cut short is replayed again.
    Replay {
        #[command(flatten)]
        pipeline: PipelineArgs,
        #[command(flatten)]
        selection: Selection,
        /// Say what would be replayed; send nothing.
        #[arg(long)]
        dry_run: bool,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        remote: Remote,
    },
}

pub(crate) fn run(command: DlqCommand) -> anyhow::Result<()> {
    match command {
        DlqCommand::List { pipeline, again } => {
            let path = sluice_pipeline::operate::dlq_path(&pipeline.config()?, &pipeline.data_dir);
            let entries = dead_letters::read(&path)?;
            let shown = Select {
                again,
                ..Select::default()
            }
            .pick(&entries)?;
            let mut out = std::io::stdout().lock();
            let replayed = entries.iter().filter(|e| e.replayed).count();
            writeln!(
                out,
                "{}: {} entries, {} replayed",
                path.display(),
                entries.len(),
                replayed
            )?;
            let groups = dead_letters::groups(&shown);
            if !groups.is_empty() {
                writeln!(
                    out,
                    "{:>8} {:>8}  {:<12}  {:<24}  REASON (entries)",
                    "ENTRIES", "REPLAYED", "STAGE", "ORIGIN"
                )?;
            }
            for g in groups {
                writeln!(
                    out,
                    "{:>8} {:>8}  {:<12}  {:<24}  {} (#{}..#{})",
                    g.entries, g.replayed, g.stage, g.origin, g.reason, g.first, g.last
                )?;
            }
            Ok(())
        }
        DlqCommand::Show {
            pipeline,
            selection,
            json,
        } => {
            let path = sluice_pipeline::operate::dlq_path(&pipeline.config()?, &pipeline.data_dir);
            let entries = dead_letters::read(&path)?;
            let select = selection.select();
            let mut out = std::io::stdout().lock();
            for e in select.pick(&entries)? {
                if json {
                    let mut value = e.value.clone();
                    value["number"] = e.number.into();
                    value["replayed"] = e.replayed.into();
                    writeln!(out, "{value}")?;
                } else {
                    show(&mut out, e)?;
                }
            }
            Ok(())
        }
        DlqCommand::Replay {
            pipeline,
            selection,
            dry_run,
            json,
            remote,
        } => {
            let config = pipeline.config()?;
            let select = selection.select();
            let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
            let report: Report = runtime.block_on(async {
                match super::reach(&pipeline.data_dir, &remote)? {
                    Reach::Running(client) => {
                        let request = crate::admin::ReplayRequest { select, dry_run };
                        let path = format!("/admin/pipelines/{}/dlq/replay", config.name);
                        let answer = client.post(&path, &request).await?;
                        Ok::<_, anyhow::Error>(serde_json::from_value(answer)?)
                    }
                    Reach::Stopped(_lock) => {
                        let handle =
                            sluice_pipeline::operate::offline(&config, &pipeline.data_dir).await?;
                        Ok(handle.replay(&select, dry_run).await?)
                    }
                }
            })?;
            if json {
                println!("{}", serde_json::to_string(&report)?);
            } else {
                print_report(&report);
            }
            Ok(())
        }
    }
}

fn show(out: &mut impl std::io::Write, e: &Entry) -> std::io::Result<()> {
    let time = e.value["time"].as_str().unwrap_or("?");
    let replayed = if e.replayed { "  [replayed]" } else { "" };
    writeln!(
        out,
        "#{}  {time}  {}  {}{replayed}",
        e.number,
        e.stage(),
        e.origin()
    )?;
    let reasons = e.reasons();
    for (i, reason) in reasons.iter().enumerate() {
        let label = if i + 1 == reasons.len() {
            "reason"
        } else {
            "earlier"
        };
        writeln!(out, "  {label}: {reason}")?;
    }
    let payload = e.payload();
    match std::str::from_utf8(&payload) {
        Ok(text) => writeln!(out, "  payload: {}", text.escape_debug())?,
        Err(_) => writeln!(
            out,
            "  payload (base64, not text): {}",
            e.value["payload"].as_str().unwrap_or_default()
        )?,
    }
    writeln!(out)
}

fn print_report(report: &Report) {
    let verb = if report.dry_run {
        "would replay"
    } else {
        "replayed"
    };
    let mut to: Vec<String> = Vec::new();
    if report.to_buffer > 0 {
        to.push(format!("{} into the buffer", report.to_buffer));
    }
    for (sink, n) in &report.to_sinks {
        to.push(format!("{n} to the sink {sink}"));
    }
    println!(
        "{verb} {} of {} chosen entries{}{}",
        report.to_buffer + report.to_sinks.values().sum::<usize>(),
        report.picked,
        if to.is_empty() {
            String::new()
        } else {
            format!(": {}", to.join(", "))
        },
        if report.dead_lettered_again > 0 {
            format!(
                "; {} refused by their sink again and dead-lettered anew",
                report.dead_lettered_again
            )
        } else {
            String::new()
        }
    );
    for (number, why) in &report.left {
        println!("  #{number} left: {why}");
    }
}
