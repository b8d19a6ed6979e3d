//! `sluice plugins inspect`: loads a component as `sluice run` would and reports what it is
//! (world, imports and what sluice grants each, size, compile and start cost) and, given
//! samples, what it does with them, by kind: a deserializer decodes records, a processor
//! judges events, a buffer policy only starts (it has no sample input).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use sluice_plugin::{
    BufferPolicy, Decoded, Decoder, Event, EventMetadata, Limits, Plugin, PluginHost, PluginKind,
    Processed, Processor, RawRecord, capability,
};

/// `sluice plugins inspect`: what a component is and, with samples, what it does.
pub(crate) fn inspect(
    file: &Path,
    samples: &[PathBuf],
    lines: bool,
    options: &[(String, String)],
    limits: Limits,
) -> anyhow::Result<String> {
    let mut out = String::new();
    let host = PluginHost::new(None)?;
    let started = Instant::now();
    let plugin = host.load_file(file)?;
    let compiled = started.elapsed();
    writeln!(out, "plugin   {}", plugin.name())?;
    writeln!(out, "file     {} ({})", file.display(), size(plugin.size()))?;
    writeln!(out, "sha256   {}", plugin.sha256())?;
    writeln!(out, "world    {}", plugin.world())?;
    writeln!(out, "code     {}", plugin.code().as_str())?;
    writeln!(
        out,
        "imports  {} (WASI p2 and the contract's types; sluice grants what is shown)",
        plugin.imports().len()
    )?;
    for import in plugin.imports() {
        match capability(import) {
            Some((asks, grants)) => writeln!(out, "  ! {import}: {asks} -> {grants}")?,
            None => writeln!(out, "    {import}")?,
        }
    }
    let start = Start { compiled, limits };
    match plugin.kind() {
        PluginKind::Processor => {
            inspect_processor(&mut out, plugin, start, samples, lines, options)?
        }
        PluginKind::BufferPolicy => inspect_buffer_policy(&mut out, plugin, start, options)?,
        PluginKind::Deserializer => {
            inspect_deserializer(&mut out, plugin, start, samples, lines, options)?
        }
    }
    Ok(out)
}

/// What the `start` line reports besides the instance's own cost.
#[derive(Clone, Copy)]
struct Start {
    /// How long loading the component took (compiling it, or loading its precompiled code).
    compiled: Duration,
    limits: Limits,
}

impl Start {
    /// The `start` line: compile time, then `steps` (what instantiating did) and how long
    /// they took, then the linear memory against its limit.
    fn write(self, out: &mut String, steps: &str, took: Duration, memory: u64) -> std::fmt::Result {
        writeln!(
            out,
            "start    loaded in {:.2?}, {steps} in {took:.2?}, linear memory {} (limit {})",
            self.compiled,
            size(memory),
            size(self.limits.max_memory as u64),
        )
    }
}

/// `inspect` of a deserializer: each sample (file, or line with `--lines`) is one record.
fn inspect_deserializer(
    out: &mut String,
    plugin: Plugin,
    start: Start,
    samples: &[PathBuf],
    lines: bool,
    options: &[(String, String)],
) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut decoder = Decoder::new(plugin, options.to_vec(), start.limits)?;
    let steps = if options.is_empty() {
        "instantiated"
    } else {
        "instantiated and configured"
    };
    start.write(out, steps, started.elapsed(), decoder.stats().peak_memory)?;
    if samples.is_empty() {
        return Ok(());
    }
    let records = read_samples(samples, lines)?;
    let batch: Vec<RawRecord> = records
        .iter()
        .map(|(origin, payload)| RawRecord {
            payload: payload.clone(),
            key: None,
            received_at_ms: 0,
            origin: format!("sample:{origin}"),
        })
        .collect();
    let started = Instant::now();
    let outcomes = decoder.decode(&batch);
    write_sample(
        out,
        batch.len(),
        "record(s)",
        started.elapsed(),
        decoder.stats().peak_memory,
    )?;
    for ((origin, payload), outcome) in records.iter().zip(outcomes) {
        let head = format!("record {origin} ({} bytes)", payload.len());
        match outcome {
            Decoded::Events(events) => {
                writeln!(out, "{head}: {} event(s)", events.len())?;
                write_events(out, events.iter())?;
            }
            Decoded::Malformed(reason) => writeln!(out, "{head}: malformed: {reason}")?,
            Decoded::Trapped(reason) => writeln!(out, "{head}: trapped: {reason}")?,
        }
    }
    Ok(())
}

/// `inspect` of a processor: each sample (file, or line with `--lines`) is one event.
fn inspect_processor(
    out: &mut String,
    plugin: Plugin,
    start: Start,
    samples: &[PathBuf],
    lines: bool,
    options: &[(String, String)],
) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut processor = Processor::new(plugin, options.to_vec(), start.limits)?;
    start.write(
        out,
        "instantiated and configured",
        started.elapsed(),
        processor.stats().peak_memory,
    )?;
    if samples.is_empty() {
        return Ok(());
    }
    let samples = read_samples(samples, lines)?;
    let events: Vec<Event<'_>> = samples
        .iter()
        .map(|(origin, body)| Event {
            body,
            received_at_ms: 0,
            origin,
            metadata: None,
        })
        .collect();
    let started = Instant::now();
    let results = processor.process(&events);
    write_sample(
        out,
        events.len(),
        "event(s)",
        started.elapsed(),
        processor.stats().peak_memory,
    )?;
    for (event, result) in events.iter().zip(results) {
        let head = format!("event {}", event.origin);
        match result {
            Processed::Keep(metadata) => {
                writeln!(out, "{head}: kept")?;
                write_metadata(out, metadata)?;
            }
            Processed::Drop => writeln!(out, "{head}: dropped")?,
            Processed::Replace(replaced, metadata) => {
                writeln!(out, "{head}: replaced by {} event(s)", replaced.len())?;
                write_events(out, replaced.iter())?;
                write_metadata(out, metadata)?;
            }
            Processed::Failed(reason) => writeln!(out, "{head}: failed: {reason}")?,
            Processed::Trapped(reason) => writeln!(out, "{head}: trapped: {reason}")?,
        }
    }
    Ok(())
}

/// The metadata a 0.3 processor set on a sample event (it saw an `EVENT` with none), if any.
fn write_metadata(out: &mut String, metadata: Option<EventMetadata>) -> std::fmt::Result {
    if let Some(m) = metadata {
        writeln!(
            out,
            "  metadata: event type {}, tags {:?}, attributes {}",
            m.event_type, m.tags, m.attributes
        )?;
    }
    Ok(())
}

/// `inspect` of a buffer policy: it starts, and says which request headers it reads.
fn inspect_buffer_policy(
    out: &mut String,
    plugin: Plugin,
    start: Start,
    options: &[(String, String)],
) -> anyhow::Result<()> {
    let started = Instant::now();
    let policy = BufferPolicy::new(plugin, options.to_vec(), start.limits)?;
    start.write(
        out,
        "instantiated, configured and described",
        started.elapsed(),
        policy.memory(),
    )?;
    let headers = policy.headers();
    writeln!(
        out,
        "reads    {}",
        if headers.is_empty() {
            "no request headers".to_owned()
        } else {
            format!("request headers {}", headers.join(", "))
        }
    )?;
    Ok(())
}

/// The samples as (origin, bytes): each file whole, or each non-empty line of it.
fn read_samples(samples: &[PathBuf], lines: bool) -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    let mut records = Vec::new();
    for sample in samples {
        let bytes = std::fs::read(sample)
            .with_context(|| format!("reading sample `{}`", sample.display()))?;
        if lines {
            for (i, line) in bytes.split(|b| *b == b'\n').enumerate() {
                if !line.is_empty() {
                    records.push((format!("{}:{}", sample.display(), i + 1), line.to_vec()));
                }
            }
        } else {
            records.push((sample.display().to_string(), bytes));
        }
    }
    Ok(records)
}

/// The `sample` line: how many went in one batch, how long it took, the memory after.
fn write_sample(
    out: &mut String,
    count: usize,
    unit: &str,
    took: Duration,
    memory: u64,
) -> std::fmt::Result {
    writeln!(
        out,
        "sample   {count} {unit} in one batch, {took:.2?}, linear memory now {}",
        size(memory)
    )
}

/// The events a record became (or an event was replaced by), one indented line each.
fn write_events<'a>(out: &mut String, events: impl Iterator<Item = &'a [u8]>) -> std::fmt::Result {
    for event in events {
        writeln!(out, "    {}", String::from_utf8_lossy(event))?;
    }
    Ok(())
}

fn size(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
    } else {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    }
}
