//! `sluice run`: the data dir locked, plugins loaded, the config checked, the metrics (and
//! admin) endpoint served, every pipeline run until SIGTERM or Ctrl-C, then drained.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use sluice_plugin::PluginHost;

use crate::catalog::{
    Environment, PluginArgs, Start, load_config, load_plugins, optimize_in_background,
};
use crate::data_dir::lock_data_dir;
use crate::{EXIT_INVALID, MetricsProtection, admin, humantime_duration, server};

/// `sluice run`'s arguments.
#[derive(clap::Args)]
pub(crate) struct Run {
    /// The pipeline file.
    pub(crate) file: PathBuf,
    #[command(flatten)]
    pub(crate) plugins: PluginArgs,
    /// Where dead-letter files and the compiled-plugin cache go.
    #[arg(long, default_value = "./data")]
    pub(crate) data_dir: PathBuf,
    /// How long shutdown may spend draining the buffers through the sinks.
    #[arg(long, default_value = "30s", value_parser = humantime_duration)]
    pub(crate) drain_timeout: Duration,
    /// Where to serve `/metrics` (Prometheus) and `/health`.
    #[arg(long, default_value = "0.0.0.0:4900")]
    pub(crate) metrics_addr: SocketAddr,
    #[command(flatten)]
    pub(crate) metrics_protection: MetricsProtection,
    /// How often to look for new or changed `.wasm` files in the plugin folder (hot reload;
    /// a changed file is compiled and checked, then used from the next batch). `0s` turns
    /// hot reload off.
    #[arg(long, default_value = "1s", value_parser = humantime_duration)]
    pub(crate) reload_interval: Duration,
    /// Serve the admin endpoint (`/admin/...`: what `sluice dlq replay` uses against a
    /// running process) on the metrics listener, behind its TLS and credentials, which it
    /// requires (`--metrics-username`, `--metrics-password`). Off by default.
    #[arg(long, requires = "metrics_username")]
    pub(crate) admin: bool,
}

/// Runs every pipeline of `run.file` until a signal, then drains.
pub(crate) fn run(run: Run) -> anyhow::Result<ExitCode> {
    let Run {
        file,
        plugins,
        data_dir,
        drain_timeout,
        metrics_addr,
        metrics_protection,
        reload_interval,
        admin,
    } = run;
    let _lock = lock_data_dir(&data_dir)?;
    let metrics = server::install_recorder()?;
    let cache = plugins
        .plugin_cache
        .clone()
        .unwrap_or_else(|| data_dir.join("plugin-cache"));
    let host = PluginHost::new(Some(cache))?;
    let (plugins, folder) = load_plugins(host, plugins.plugins.as_deref(), Start::Quickly)?;
    optimize_in_background(&plugins);
    let Some(config) = load_config(&file, &plugins, Environment::Required)? else {
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

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("installing the SIGTERM handler");
    tokio::select! {
        _ = ctrl_c => {}
        _ = term.recv() => {}
    }
}
