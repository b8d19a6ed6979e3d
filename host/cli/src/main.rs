//! `sluice`: the command line. Arguments → config → `sluice_pipeline::run` → exit code.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::{Parser, Subcommand, ValueEnum};
use sluice_plugin::{Catalog, Code, PluginHost};

mod admin;
mod operate;
mod plugins;
mod server;

mod builtin {
    include!(concat!(env!("OUT_DIR"), "/builtin.rs"));
}

/// A pipeline host with a durable buffer and sandboxed WebAssembly deserializers.
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
    Run {
        /// The pipeline file.
        file: PathBuf,
        #[command(flatten)]
        plugins: PluginArgs,
        /// Where dead-letter files and the compiled-plugin cache go.
        #[arg(long, default_value = "./data")]
        data_dir: PathBuf,
        /// How long shutdown may spend draining the buffers through the sinks.
        #[arg(long, default_value = "30s", value_parser = humantime_duration)]
        drain_timeout: Duration,
        /// Where to serve `/metrics` (Prometheus) and `/health`.
        #[arg(long, default_value = "0.0.0.0:4900")]
        metrics_addr: std::net::SocketAddr,
        #[command(flatten)]
        metrics_protection: MetricsProtection,
        /// How often to look for new or changed `.wasm` files in the plugin folder (hot reload;
        /// a changed file is compiled and checked, then used from the next batch). `0s` turns
        /// hot reload off.
        #[arg(long, default_value = "1s", value_parser = humantime_duration)]
        reload_interval: Duration,
        /// Serve the admin endpoint (`/admin/...`: what `sluice dlq replay` uses against a
        /// running process) on the metrics listener, behind its TLS and credentials, which it
        /// requires (`--metrics-username`, `--metrics-password`). Off by default.
        #[arg(long, requires = "metrics_username")]
        admin: bool,
    },
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
    /// Check a pipeline file: exit 0, or print every error and exit 2.
    Validate {
        /// The pipeline file.
        file: PathBuf,
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

#[derive(clap::Args)]
struct PluginArgs {
    /// The folder of `.wasm` deserializers (default `./plugins`, if it exists). They are loaded
    /// after the built-ins (`json`, `ndjson`, `otlp`), and a file of the same name replaces a
    /// built-in.
    #[arg(long)]
    plugins: Option<PathBuf>,
    /// The compiled-plugin cache folder. Default: `run` uses `<data-dir>/plugin-cache`; the
    /// other commands use the per-user cache, `$XDG_CACHE_HOME/sluice/plugin-cache` or else
    /// `~/.cache/sluice/plugin-cache`.
    #[arg(long, value_name = "DIR")]
    plugin_cache: Option<PathBuf>,
}

impl PluginArgs {
    /// The cache folder for a command without a data dir: the one asked for, or the
    /// per-user one.
    fn cache_or_per_user(&self) -> Option<PathBuf> {
        self.plugin_cache.clone().or_else(per_user_plugin_cache)
    }
}

/// The per-user compiled-plugin cache, for the commands that have no data dir (`validate`,
/// `plugins list`), so the second call loads the built-ins instead of compiling them:
/// `$XDG_CACHE_HOME/sluice/plugin-cache`, or `$HOME/.cache/sluice/plugin-cache` (the XDG
/// default). `None` without either: every call compiles. Sharing it between processes is
/// safe: an entry is written to a temporary file and renamed (see `sluice_plugin`'s cache).
fn per_user_plugin_cache() -> Option<PathBuf> {
    // The XDG spec says to ignore a relative XDG_CACHE_HOME.
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|home| home.is_absolute())
                .map(|home| home.join(".cache"))
        });
    if base.is_none() {
        tracing::debug!(
            "neither XDG_CACHE_HOME nor HOME is set; compiling plugins without a cache"
        );
    }
    Some(base?.join("sluice").join("plugin-cache"))
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
        Command::Run { .. } => "info",
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

/// Holds `<data-dir>/sluice.lock` for the life of the process, so two running processes never
/// share a data dir: dead-letter files, the plugin cache and the default Kafka group instance
/// id (static membership) all derive from it. The lock goes with the process, even on kill -9.
fn lock_data_dir(dir: &Path) -> anyhow::Result<std::fs::File> {
    match try_lock_data_dir(dir)? {
        Some(file) => Ok(file),
        None => {
            let pid = std::fs::read_to_string(dir.join("sluice.lock")).unwrap_or_default();
            bail!(
                "the data dir `{}` is in use by another running sluice (pid {}); give each \
                 process its own `--data-dir`",
                dir.display(),
                pid.trim()
            )
        }
    }
}

/// [`lock_data_dir`], or `None` when a running process holds it.
fn try_lock_data_dir(dir: &Path) -> anyhow::Result<Option<std::fs::File>> {
    use std::io::{Seek as _, Write as _};
    std::fs::create_dir_all(dir)
        .with_context(|| format!("creating the data dir `{}`", dir.display()))?;
    let path = dir.join("sluice.lock");
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .with_context(|| format!("opening `{}`", path.display()))?;
    match file.try_lock() {
        Ok(()) => {
            file.set_len(0)?;
            file.rewind()?;
            writeln!(file, "{}", std::process::id())?;
            Ok(Some(file))
        }
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(e).with_context(|| format!("locking `{}`", path.display()))
        }
    }
}

/// Large allocations (4 MiB and up) come straight from the OS and go back to it when freed.
/// A plugin's big values (a buffer policy's `state-set`, an event of many MiB) are copied out
/// of guest memory and freed within one call; glibc would otherwise raise its mmap threshold
/// after the first such free and keep them in its per-thread arenas (a policy refused for
/// hoarding state left sluice ~300 MiB larger that way, though nothing was kept).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn return_large_allocations() {
    #[expect(
        unsafe_code,
        reason = "mallopt only sets an allocator parameter; called first in main, before any thread"
    )]
    // SAFETY: no allocation is in flight and no other thread exists yet.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 4 << 20);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn return_large_allocations() {}

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
        Command::Run {
            file,
            plugins,
            data_dir,
            drain_timeout,
            metrics_addr,
            metrics_protection,
            reload_interval,
            admin,
        } => {
            let _lock = lock_data_dir(&data_dir)?;
            let metrics = server::install_recorder()?;
            let cache = plugins
                .plugin_cache
                .clone()
                .unwrap_or_else(|| data_dir.join("plugin-cache"));
            let host = PluginHost::new(Some(cache))?;
            let (plugins, folder) = load_plugins(host, plugins.plugins.as_deref(), Start::Quickly)?;
            optimize_in_background(&plugins);
            let Some(config) = load_config(&file, &plugins)? else {
                return Ok(ExitCode::from(EXIT_INVALID));
            };
            let watchdog = sluice_pipeline::Watchdog::default();
            let registry = sluice_pipeline::operate::Registry::default();
            let location = admin::Location::path(&data_dir);
            // A stale one (the last run had --admin, this one not) would point elsewhere.
            let _ = std::fs::remove_file(&location);
            let options = sluice_pipeline::RunOptions {
                registry: registry.clone(),
                data_dir,
                drain_timeout,
                reload: folder
                    .filter(|_| !reload_interval.is_zero())
                    .map(|dir| (dir, reload_interval)),
                watchdog: watchdog.clone(),
            };
            let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
            let health = server::Health::new(watchdog);
            runtime.block_on(async {
                let (bound, https) = server::serve(
                    metrics_addr,
                    metrics,
                    health.clone(),
                    metrics_protection.protection()?,
                    admin.then(|| admin::router(registry)),
                )
                .await?;
                if admin {
                    let url = admin::Location::of(bound, https);
                    std::fs::write(&location, serde_json::to_string(&url)?)
                        .with_context(|| format!("writing `{}`", location.display()))?;
                    tracing::info!(url = %url.url, "serving the admin endpoint");
                }
                let draining = health.clone();
                let shutdown = async move {
                    shutdown_signal().await;
                    draining.set(false);
                };
                sluice_pipeline::run(config, &plugins, options, shutdown, || {
                    health.set(true);
                    tracing::info!("all pipelines ready");
                })
                .await?;
                anyhow::Ok(())
            })?;
            Ok(ExitCode::SUCCESS)
        }
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
        Command::Validate { file, plugins } => {
            let host = PluginHost::new(plugins.cache_or_per_user())?;
            let (plugins, _) = load_plugins(host, plugins.plugins.as_deref(), Start::Optimized)?;
            Ok(match load_config(&file, &plugins)? {
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

/// Parses and validates; prints the errors and returns `None` when there are any.
fn load_config(file: &Path, plugins: &Catalog) -> anyhow::Result<Option<sluice_config::Config>> {
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("reading pipeline file `{}`", file.display()))?;
    let names = plugins.names();
    let context = sluice_config::Context {
        deserializers: Some(&names),
        builtins: Some(sluice_pipeline::check_builtin),
    };
    match sluice_config::parse(&file.display().to_string(), &text, context) {
        Ok(config) => Ok(Some(config)),
        Err(errors) => {
            eprintln!("{errors}");
            Ok(None)
        }
    }
}

/// The built-ins, then the plugin folder (returned when there is one, for hot reload). A plugin
/// that fails to load stops startup: running without the deserializer a pipeline names would
/// only fail later. With [`Start::Quickly`], what the cache does not hold is compiled by Winch
/// (see `sluice_plugin::engine`), for a command that starts pipelines and then calls
/// [`optimize_in_background`]; the commands that only check plugins compile with Cranelift
/// and fill the cache. Logs one line at the end: what is loaded, and where its code came from.
pub(crate) fn load_plugins(
    host: PluginHost,
    dir: Option<&Path>,
    start: Start,
) -> anyhow::Result<(Arc<Catalog>, Option<PathBuf>)> {
    let started = std::time::Instant::now();
    let catalog = Arc::new(Catalog::new(Arc::new(host)));
    let mut loaded = catalog.load_builtins(builtin::BUILTIN, start == Start::Quickly)?;
    let dir = match dir {
        Some(dir) if !dir.is_dir() => bail!("plugin folder `{}` does not exist", dir.display()),
        Some(dir) => Some(dir.to_owned()),
        None => Some(PathBuf::from("./plugins")).filter(|dir| dir.is_dir()),
    };
    if let Some(dir) = &dir {
        loaded.extend(load_folder(&catalog, dir, start)?);
    }
    let count = |code: Code| loaded.iter().filter(|p| p.code() == code).count();
    tracing::info!(
        plugins = %catalog.names().join(", "),
        folder = dir.as_deref().map(|dir| tracing::field::display(dir.display())),
        compiled = count(Code::Compiled),
        compiled_quickly = count(Code::Quick),
        from_cache = count(Code::Cached),
        precompiled = count(Code::Precompiled),
        elapsed = ?started.elapsed(),
        "plugins loaded"
    );
    Ok((catalog, dir))
}

/// How [`load_plugins`] compiles what the cache does not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Start {
    /// With Winch, for a process that runs events: it starts in seconds, then optimizes.
    Quickly,
    /// With Cranelift, cached: for a command that only checks plugins and config.
    Optimized,
}

/// Compiles the plugins [`load_plugins`] compiled quickly with Cranelift, on a thread of its
/// own, and publishes the optimized code (workers switch to it between batches).
pub(crate) fn optimize_in_background(catalog: &Arc<Catalog>) {
    let catalog = Arc::clone(catalog);
    let spawned = std::thread::Builder::new()
        .name("sluice-optimize".into())
        .spawn(move || {
            let started = std::time::Instant::now();
            let optimized = catalog.optimize();
            if optimized > 0 {
                tracing::info!(optimized, elapsed = ?started.elapsed(), "plugins optimized");
            }
        });
    if let Err(error) = spawned {
        tracing::warn!(%error, "cannot start the thread that optimizes plugins; they keep running their baseline code");
    }
}

/// Loads the plugin folder into `catalog`; says which files replace a built-in.
fn load_folder(
    catalog: &Catalog,
    dir: &Path,
    start: Start,
) -> anyhow::Result<Vec<sluice_plugin::Plugin>> {
    let loaded = catalog.load_dir(dir, start == Start::Quickly)?;
    for plugin in &loaded {
        if builtin::BUILTIN
            .iter()
            .any(|(name, _)| *name == plugin.name())
        {
            tracing::info!(
                plugin = plugin.name(),
                file = plugin.origin(),
                "plugin file replaces the built-in of the same name"
            );
        }
    }
    Ok(loaded)
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("installing the SIGTERM handler");
    tokio::select! {
        _ = ctrl_c => {}
        _ = term.recv() => {}
    }
}
