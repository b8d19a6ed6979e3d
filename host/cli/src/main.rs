//! `sluice`: the command line. This file parses the arguments and dispatches each command.
//!
//! # Layout
//! - `start`: `sluice run` (data dir locked, plugins loaded, config checked, endpoints served,
//!   pipelines run, drained at a signal).
//! - `catalog`: the plugins a command loads and the config checked against them; `data_dir`:
//!   a data dir held for the life of the process. What the commands share.
//! - `server`: `/metrics` and `/health` (TLS, credentials); `admin`: the admin endpoint on it.
//! - `operate`: `dlq`, `buffer`, `tap`, `top`; `plugins`: `plugins new|build|inspect`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Parser, Subcommand, ValueEnum};
use sluice_plugin::PluginHost;

use crate::catalog::{
    Environment, PluginArgs, Start, load_config, load_plugins, per_user_plugin_cache,
};

/// mimalloc: records are made on a source's thread and freed on a worker's, which glibc's
/// allocator serializes with a lock per arena (Cargo.toml says more).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod admin;
mod catalog;
mod data_dir;
mod operate;
mod plugins;
mod server;
mod start;

/// A pipeline host with a durable buffer and sandboxed WebAssembly plugins.
#[derive(Parser)]
#[command(name = "sluice", version, about)]
struct Args {
    #[command(subcommand)]
    command: Command,
    /// Log format.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

#[derive(Clone, Copy, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Run the pipelines of a file until Ctrl-C or SIGTERM, then drain and exit.
    Run(start::Run),
    /// A pipeline's dead letters: list them, show them, replay them through the pipeline.
    Dlq {
        #[command(subcommand)]
        command: operate::dlq::DlqCommand,
    },
    /// A live sample of a running pipeline's events at one point, as JSON lines.
    Tap(operate::tap::TapArgs),
    /// Each running pipeline's stages, refreshed each second: rates, dead letters, lag,
    /// plugin time, sink retries.
    Top(operate::top::TopArgs),
    /// A pipeline's Kafka buffer: its partitions and lag, or a window of its history replayed.
    Buffer {
        #[command(subcommand)]
        command: operate::buffer::BufferCommand,
    },
    /// Check a pipeline file: exit 0, or print every error and exit 2. Files it names
    /// (certificates, templates) that are not on this machine are warnings: the file is valid,
    /// `sluice run` will not start here without them.
    Validate {
        /// The pipeline file.
        file: PathBuf,
        /// Check the file only, not this machine: no warning about the files it names. For a
        /// file written for another machine.
        #[arg(long)]
        no_environment: bool,
        #[command(flatten)]
        plugins: PluginArgs,
    },
    /// Plugin tools.
    Plugins {
        #[command(subcommand)]
        command: PluginsCommand,
    },
}

/// `/metrics` and `/health` protected as an http source can be: TLS and HTTP Basic.
#[derive(clap::Args)]
struct MetricsProtection {
    /// Serve `/metrics` and `/health` over HTTPS with this certificate chain (PEM).
    #[arg(long, requires = "metrics_ssl_key_file")]
    metrics_ssl_certificate_file: Option<PathBuf>,
    /// The certificate's private key (PEM).
    #[arg(long, requires = "metrics_ssl_certificate_file")]
    metrics_ssl_key_file: Option<PathBuf>,
    /// Ask for HTTP Basic credentials on `/metrics` and `/health`: this user name.
    #[arg(long, requires = "metrics_password")]
    metrics_username: Option<String>,
    /// The password: `${env:NAME}` (best: not in the process list), `${file:PATH}`, or the
    /// text. Never logged.
    #[arg(long, requires = "metrics_username")]
    metrics_password: Option<String>,
}

impl MetricsProtection {
    /// The protection asked for, the password resolved.
    fn protection(self) -> anyhow::Result<server::Protection> {
        Ok(server::Protection {
            tls: self
                .metrics_ssl_certificate_file
                .zip(self.metrics_ssl_key_file)
                .map(|(certificate_file, key_file)| sluice_config::http::Tls {
                    certificate_file,
                    key_file,
                }),
            basic: self
                .metrics_username
                .zip(self.metrics_password)
                .map(|(username, password)| {
                    sluice_config::Credentials { username, password }.resolve()
                })
                .transpose()
                .context("--metrics-password")?,
        })
    }
}

#[derive(Subcommand)]
enum PluginsCommand {
    /// List the plugins sluice would load: name, file, size, world, imports.
    List {
        #[command(flatten)]
        plugins: PluginArgs,
    },
    /// Write a ready-to-build plugin folder NAME/ (source, WIT, build files).
    New {
        /// The plugin's name: its file will be NAME.wasm, and pipelines name it so.
        name: String,
        /// The language of the skeleton.
        #[arg(long, value_enum)]
        lang: plugins::Lang,
        /// What the plugin is: a deserializer (raw bytes in, events out), a processor (events
        /// in, a verdict per event out) or a buffer policy (where each written record goes).
        /// All are written for contract 0.2.
        #[arg(long, value_enum, default_value = "deserializer")]
        kind: plugins::Kind,
        /// Where to write it (default `./NAME`).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Build a plugin folder into DIR/NAME.wasm with the language's component tool, and
    /// compile it into DIR/NAME.cwasm, which `run` loads instead of compiling the component
    /// (when it is owner-only and was built from that `.wasm` by the same sluice).
    Build {
        /// The plugin folder (as `sluice plugins new` wrote it).
        dir: PathBuf,
    },
    /// Show a component's world, imports (and what sluice grants each), size and start cost;
    /// with --sample, run it on sample records and show the outcomes.
    Inspect {
        /// The `.wasm` component.
        file: PathBuf,
        /// A file whose content is one record (repeat for more records).
        #[arg(long)]
        sample: Vec<PathBuf>,
        /// Make each line of the sample files its own record.
        #[arg(long)]
        lines: bool,
        /// An option for `configure`, as KEY=VALUE (repeat for more).
        #[arg(long = "option", value_parser = key_value)]
        options: Vec<(String, String)>,
        /// The memory limit, in MiB, as `deserializer: max_memory:` sets it.
        #[arg(long, default_value_t = 64)]
        max_memory_mib: usize,
        /// The per-call deadline, as `deserializer: timeout:` sets it.
        #[arg(long, default_value = "1s", value_parser = humantime_duration)]
        timeout: Duration,
    },
}

fn key_value(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .ok_or_else(|| format!("`{s}` is not KEY=VALUE"))
}

fn humantime_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s)
        .map_err(|e| format!("invalid duration `{s}` ({e}); write e.g. `30s`"))
}

/// Exit code for a config that does not validate.
const EXIT_INVALID: u8 = 2;

fn main() -> ExitCode {
    return_large_allocations();
    let args = Args::parse();
    // `run` reports its start and what it does; the other commands print their result, and
    // log only what went wrong (warnings and errors) unless RUST_LOG asks for more.
    let default_level = match args.command {
        Command::Run(_) => "info",
        _ => "warn",
    };
    init_tracing(args.log_format, default_level);
    match run(args.command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Large allocations (4 MiB and up) come straight from the OS and go back to it when freed. A
/// plugin's big values (a buffer policy's `state-set`, an event of many MiB) are copied out of
/// guest memory and freed within one call; mimalloc would otherwise keep them in its arena
/// for a second after (its `purge_delay`), and a policy refused for hoarding state would
/// leave sluice hundreds of MiB larger meanwhile. Smaller memory stays in the arena: purging
/// it at once cost the s3 source a fifth of its speed.
fn return_large_allocations() {
    /// `mi_option_arena_max_object_size` in mimalloc 3's `mi_option_e` (libmimalloc-sys names
    /// no constant for it): the largest object its arenas hold, in KiB (default 2 GiB);
    /// larger ones are mapped from the OS and unmapped when freed.
    const ARENA_MAX_OBJECT_SIZE: libmimalloc_sys::mi_option_t = 45;
    #[expect(
        unsafe_code,
        reason = "mi_option_set only sets an allocator parameter; called first in main, before any thread"
    )]
    // SAFETY: no other thread exists yet (options are not set thread-safely).
    unsafe {
        libmimalloc_sys::mi_option_set(ARENA_MAX_OBJECT_SIZE, 4 << 10);
    }
}

/// Logs to stderr at `default_level`, or as `RUST_LOG` says.
fn init_tracing(format: LogFormat, default_level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour only on a terminal: log files and journald get plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Run(args) => start::run(args),
        Command::Dlq { command } => {
            operate::dlq::run(command)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Tap(args) => {
            operate::tap::run(args)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Top(args) => {
            operate::top::run(args)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Buffer { command } => {
            operate::buffer::run(command)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Validate {
            file,
            no_environment,
            plugins,
        } => {
            let host = PluginHost::new(plugins.cache_or_per_user())?;
            let (plugins, _) = load_plugins(host, plugins.plugins.as_deref(), Start::Optimized)?;
            let environment = if no_environment {
                Environment::Unchecked
            } else {
                Environment::Warn
            };
            Ok(match load_config(&file, &plugins, environment)? {
                Some(config) => {
                    println!(
                        "{}: {} pipeline(s) valid",
                        file.display(),
                        config.pipelines.len()
                    );
                    ExitCode::SUCCESS
                }
                None => ExitCode::from(EXIT_INVALID),
            })
        }
        Command::Plugins {
            command: PluginsCommand::List { plugins },
        } => {
            let host = PluginHost::new(plugins.cache_or_per_user())?;
            let (plugins, _) = load_plugins(host, plugins.plugins.as_deref(), Start::Optimized)?;
            for p in plugins.plugins() {
                println!(
                    "{}\t{}\t{} bytes\t{}\timports: {}",
                    p.name(),
                    p.origin(),
                    p.size(),
                    p.world(),
                    p.imports().join(", ")
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Plugins {
            command:
                PluginsCommand::New {
                    name,
                    lang,
                    kind,
                    dir,
                },
        } => {
            let root = plugins::new(&name, kind, lang, dir.as_deref())?;
            println!(
                "wrote {lang:?} {} `{name}` in {}; build it with `sluice plugins build {}`",
                kind.label(),
                root.display(),
                root.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Plugins {
            command: PluginsCommand::Build { dir },
        } => {
            let out = plugins::build(&dir)?;
            let size = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
            // Cranelift's code for it, so that `run` on a machine with an empty cache loads
            // instead of compiling (the component is type-checked on the way).
            let artefact = PluginHost::new(per_user_plugin_cache())?.precompile_beside(&out)?;
            println!(
                "built {} ({size} bytes) and its compiled code {}; drop both into the plugin folder",
                out.display(),
                artefact.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Plugins {
            command:
                PluginsCommand::Inspect {
                    file,
                    sample,
                    lines,
                    options,
                    max_memory_mib,
                    timeout,
                },
        } => {
            let limits = sluice_plugin::Limits {
                max_memory: max_memory_mib << 20,
                timeout,
                ..sluice_plugin::Limits::default()
            };
            print!(
                "{}",
                plugins::inspect(&file, &sample, lines, &options, limits)?
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}
