//! `sluice-bench startup`: time from spawning `sluice run` to `/health` answering 200 (every
//! pipeline built, plugins instantiated, sources listening), with three plugins (logfmt in
//! Rust, Python and JavaScript, one pipeline each): cold (empty compile cache: every component
//! is compiled) and cached (the cache from an earlier start).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

use sluice_tests::free_port;

#[derive(clap::Args, Clone)]
pub(crate) struct Args {
    /// The folder of built plugins (`plugins/target/wasm32-wasip2/release`).
    #[arg(long)]
    plugins: PathBuf,
    /// The `sluice` binary (default: beside this one).
    #[arg(long)]
    sluice: Option<PathBuf>,
    /// Starts measured per case; the median is reported.
    #[arg(long, default_value_t = 5)]
    runs: usize,
}

const PLUGINS: [&str; 3] = ["logfmt", "logfmt_python", "logfmt_js"];

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let bin = match &args.sluice {
        Some(bin) => bin.clone(),
        None => std::env::current_exe()?
            .parent()
            .context("the bench binary has a folder")?
            .join("sluice"),
    };
    let work = tempfile::tempdir()?;
    let folder = work.path().join("plugins");
    std::fs::create_dir_all(&folder)?;
    let mut yaml = String::new();
    for name in PLUGINS {
        std::fs::copy(
            args.plugins.join(format!("{name}.wasm")),
            folder.join(format!("{name}.wasm")),
        )
        .with_context(|| format!("copying {name}.wasm"))?;
        let port = free_port();
        yaml.push_str(&format!(
            "{name}:\n  source:\n    http:\n      port: {port}\n      deserializer:\n        name: {name}\n  sink:\n    - stdout:\n"
        ));
    }
    let file = work.path().join("pipelines.yaml");
    std::fs::write(&file, yaml)?;
    let sizes: u64 = PLUGINS
        .iter()
        .map(|n| std::fs::metadata(folder.join(format!("{n}.wasm"))).map_or(0, |m| m.len()))
        .sum();
    println!(
        "startup: 3 pipelines (logfmt in Rust, Python, JavaScript: {:.1} MiB of components), 2 workers each, median of {} starts",
        sizes as f64 / f64::from(1 << 20),
        args.runs
    );
    let mut cold = Vec::new();
    for _ in 0..args.runs {
        let data = tempfile::tempdir()?;
        cold.push(start(&bin, &file, &folder, data.path())?);
    }
    let data = tempfile::tempdir()?;
    start(&bin, &file, &folder, data.path())?; // fills the cache
    let mut cached = Vec::new();
    for _ in 0..args.runs {
        cached.push(start(&bin, &file, &folder, data.path())?);
    }
    let (cold, cached) = (median(&mut cold), median(&mut cached));
    println!("  cold (compiles every component): {cold:>9.2?}");
    println!(
        "  cached (compiled artefacts loaded): {cached:>7.2?}  (target <= 100 ms){}",
        if cached <= Duration::from_millis(100) {
            ""
        } else {
            "  NOT MET"
        }
    );
    Ok(())
}

/// One start: spawn, poll `/health` every millisecond until 200, then kill.
fn start(bin: &Path, file: &Path, plugins: &Path, data: &Path) -> anyhow::Result<Duration> {
    let metrics = free_port();
    let started = Instant::now();
    let mut child = Command::new(bin)
        .arg("run")
        .arg(file)
        .arg("--plugins")
        .arg(plugins)
        .arg("--data-dir")
        .arg(data)
        .arg("--metrics-addr")
        .arg(format!("127.0.0.1:{metrics}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("starting {}", bin.display()))?;
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(1)))
        .build()
        .into();
    let url = format!("http://127.0.0.1:{metrics}/health");
    let took = loop {
        if let Ok(r) = agent.get(&url).call()
            && r.status() == 200
        {
            break started.elapsed();
        }
        if let Some(status) = child.try_wait()? {
            bail!("sluice exited with {status} before it was ready");
        }
        if started.elapsed() > Duration::from_secs(300) {
            let _ = child.kill();
            bail!("sluice was not ready within 300 s");
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let _ = child.kill();
    let _ = child.wait();
    Ok(took)
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}
