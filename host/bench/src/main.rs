//! `sluice-bench`: benchmarks printed as ratios measured in one run on one machine. Not
//! tests: the figures depend on the machine; compare them only within one run.
//!
//! - `kafka`: sluice end to end (HTTP → kafka buffer → json → file) against raw librdkafka on
//!   the same broker, with and without encryption; peak RSS; a 30 s stalled sink.
//! - `wasm`: the json component against the same Rust compiled natively at batch sizes 1 to
//!   1000; logfmt in Rust, Python and JavaScript.
//! - `startup`: `sluice run` to ready with three plugins: cold, until optimized, cached and
//!   precompiled.
//! - `abi`: the candidate batch ABIs of contract 0.2, each against native code.
//! - `policy`: what a buffer policy component adds to each source write.
//! - `otlp`: OTLP spans end to end against their protobuf through raw librdkafka; the otlp
//!   component against its own code compiled natively.
//! - `sinks`: the s3 and kafka sinks against aws-sdk-s3 and raw librdkafka doing the same.
//! - `opensearch`: the opensearch sink against a plain bulk client posting the same documents
//!   to the same test server; exactly once against `exactly_once: false`.
//! - `processors`: Data Prepper's processors built in (grok, date, drop_events, add_entries)
//!   end to end against the same pipeline without them, and tapped (`sluice tap`) against
//!   untapped; grok against the grok crate natively.
//! - `curves`: how cost grows with the work (workers, event size, partitions, pipelines in
//!   one process, spans per OTLP request), each point against raw librdkafka, drawn as SVG.
//! - `pull`: the `kafka` source (→ json → file) against raw librdkafka consumers writing the
//!   same records to a file.

use clap::{Parser, Subcommand};

mod abi;
mod chart;
mod kafka;
mod measure;
mod opensearch;
mod otlp_native;
mod policy;
mod s3_source;
mod sinks;
mod startup;
mod wasm;

#[derive(Parser)]
#[command(about = "sluice benchmarks, as ratios measured in one run")]
struct Cli {
    #[command(subcommand)]
    command: Bench,
}

#[derive(Subcommand)]
enum Bench {
    /// End to end against raw librdkafka, peak memory, stalled sink.
    Kafka(kafka::Args),
    /// The Wasm boundary: component vs native, and plugins in three languages.
    Wasm(wasm::Args),
    /// Time to ready, cold and cached.
    Startup(startup::Args),
    /// Candidate batch ABIs for contract 0.2, each against native code.
    Abi(abi::Args),
    /// What a buffer policy component adds to each source write.
    Policy(policy::Args),
    /// OTLP spans end to end against their protobuf through raw librdkafka.
    Otlp(kafka::otlp::Args),
    /// The s3 and kafka sinks against aws-sdk-s3 and raw librdkafka doing the same.
    Sinks(sinks::Args),
    /// The opensearch sink against a plain bulk client; exactly once against at least once.
    Opensearch(opensearch::Args),
    /// Built-in processors end to end, and grok against the grok crate natively.
    Processors(kafka::processors::Args),
    /// How cost grows with the work, against raw librdkafka, with SVG charts.
    Curves(kafka::curves::Args),
    /// The `kafka` source against raw librdkafka reading the same records.
    Pull(kafka::pull::Args),
    /// The `s3` source against aws-sdk-s3 reading the same objects; peak memory on a large one.
    S3Source(s3_source::Args),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Bench::Kafka(args) => kafka::run(&args),
        Bench::Wasm(args) => wasm::run(&args),
        Bench::Startup(args) => startup::run(&args),
        Bench::Abi(args) => abi::run(&args),
        Bench::Policy(args) => policy::run(&args),
        Bench::Otlp(args) => kafka::otlp::run(&args),
        Bench::Sinks(args) => sinks::run(&args),
        Bench::Opensearch(args) => opensearch::run(&args),
        Bench::Processors(args) => kafka::processors::run(&args),
        Bench::Curves(args) => kafka::curves::run(&args),
        Bench::Pull(args) => kafka::pull::run(&args),
        Bench::S3Source(args) => s3_source::run(&args),
    }
}
