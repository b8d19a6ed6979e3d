//! `sluice-bench policy`: what a buffer policy costs per source write. One writer writes
//! `writes` times through a tiered buffer over one memory tier (a reader drains it at once),
//! with: no policy (the memory tier written directly), a native pass-through policy (what the
//! tiered buffer itself costs: a blocking-thread hop and the lock), and the components
//! `passthrough_buffer`, `dedup` and `tenant_quota`. Prints microseconds per write and the
//! component's share on top of the native policy; a Kafka write is acknowledged in ~1-2 ms, so
//! this is what a policy adds to each HTTP request.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_buffer::memory::MemoryBuffer;
use sluice_buffer::tiered::testing::AllTo;
use sluice_buffer::tiered::{Policy, State, SystemClock, TieredBuffer};
use sluice_buffer::{Buffer, BufferWriter, Record};
use sluice_plugin::{BufferPolicy, Limits, PluginHost};

#[derive(clap::Args, Clone)]
pub(crate) struct Args {
    /// The folder of built plugins (`plugins/target/wasm32-wasip2/release`).
    #[arg(long)]
    plugins: PathBuf,
    /// The compiled-component cache.
    #[arg(long)]
    cache: Option<PathBuf>,
    /// Writes per measurement.
    #[arg(long, default_value_t = 20_000)]
    writes: usize,
}

fn record(i: usize, records_per_write: usize) -> Vec<Record> {
    (0..records_per_write)
        .map(|j| Record {
            payload: format!(r#"[{{"n":{i},"j":{j},"msg":"a log line of about a hundred bytes, as in the end-to-end run"}}]"#)
                .into_bytes(),
            key: None,
            received_at_ms: 0,
            origin: "http:/log/ingest".to_owned(),
            content_type: Some("application/json".to_owned()),
            headers: vec![("x-tenant".to_owned(), format!("t{}", i % 8))],
        ..Default::default()
        })
        .collect()
}

/// Microseconds per write of `records_per_write` records through `writer`, with `tier`
/// drained by a reader meanwhile.
async fn measure(
    writer: Arc<dyn BufferWriter>,
    reader_of: &dyn Buffer,
    writes: usize,
    records_per_write: usize,
) -> anyhow::Result<f64> {
    let mut reader = reader_of.reader();
    let drain = tokio::spawn(async move {
        while let Some(batch) = reader.read().await {
            batch.ack.acknowledge();
        }
    });
    let started = Instant::now();
    for i in 0..writes {
        writer
            .write(record(i, records_per_write), Duration::from_secs(5))
            .await?;
    }
    let took = started.elapsed();
    reader_of.close();
    drain.await?;
    Ok(took.as_secs_f64() * 1e6 / writes as f64)
}

fn memory() -> MemoryBuffer {
    MemoryBuffer::new("bench", 100_000, 500, Duration::from_millis(1))
}

fn tiered(memory: &MemoryBuffer, policy: Box<dyn Policy>) -> TieredBuffer {
    TieredBuffer::new(
        "bench",
        vec![Arc::new(memory.clone()) as Arc<dyn Buffer>],
        policy,
        Arc::new(State::new(10_000_000)),
        Arc::new(SystemClock),
        Arc::new(|_| Box::pin(async {})),
    )
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Runtime::new()?;
    let host = PluginHost::new(args.cache.clone())?;
    let components: [(&str, &[(&str, &str)]); 3] = [
        ("passthrough_buffer", &[]),
        ("dedup", &[("ttl", "10m")]),
        ("tenant_quota", &[("rate", "1000000000")]),
    ];
    println!(
        "{} sequential writes per figure, one memory tier, {} cores",
        args.writes,
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    for records_per_write in [1, 100] {
        println!("-- {records_per_write} record(s) per write: microseconds per write");
        let direct = memory();
        let base = runtime.block_on(measure(
            Arc::new(direct.clone()),
            &direct,
            args.writes,
            records_per_write,
        ))?;
        println!("  {:<36} {base:>8.1}", "memory tier, no policy");
        // Writes through a tiered buffer over a fresh memory tier run by `policy`.
        let through = |policy: Box<dyn Policy>| {
            let buffer = tiered(&memory(), policy);
            runtime.block_on(measure(
                buffer.writer(),
                &buffer,
                args.writes,
                records_per_write,
            ))
        };
        let native = through(Box::new(AllTo(0)))?;
        println!("  {:<36} {native:>8.1}", "native pass-through policy");
        for (name, options) in components {
            let plugin = host.load_file(&args.plugins.join(format!("{name}.wasm")))?;
            let options = options
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            let took = through(Box::new(BufferPolicy::new(
                plugin,
                options,
                Limits::default(),
            )?))?;
            println!(
                "  {:<36} {took:>8.1}   (+{:.1} µs over the native policy)",
                format!("component {name}"),
                took - native
            );
        }
    }
    Ok(())
}
