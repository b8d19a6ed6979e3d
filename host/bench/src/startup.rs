//! `sluice-bench startup`: time from spawning `sluice run` to `/health` answering 200 (every
//! pipeline built, plugins instantiated, sources listening), with three plugins (logfmt in
//! Rust, Python and JavaScript, one pipeline each):
//! - cold: an empty compile cache, so every component is compiled (quickly, by Winch), and
//!   how long until the background compile has swapped in Cranelift's code;
//! - cached: the cache an earlier start filled;
//! - precompiled: an empty cache, with the artefacts `sluice plugins build` leaves beside each
//!   `.wasm`.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
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

/// What `sluice run` logs once the background compile has published Cranelift's code.
const OPTIMIZED: &str = "plugins optimized";

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
    let precompiled = work.path().join("precompiled");
    std::fs::create_dir_all(&folder)?;
    std::fs::create_dir_all(&precompiled)?;
    let mut yaml = String::new();
    for name in PLUGINS {
        let file = format!("{name}.wasm");
        std::fs::copy(args.plugins.join(&file), folder.join(&file))
            .with_context(|| format!("copying {file}"))?;
        std::fs::copy(args.plugins.join(&file), precompiled.join(&file))?;
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
    let (mut cold, mut optimized) = (Vec::new(), Vec::new());
    let mut data = tempfile::tempdir()?;
    for _ in 0..args.runs {
        data = tempfile::tempdir()?;
        let start = Start::new(&bin, &file, &folder, data.path())?;
        cold.push(start.ready);
        // Once optimized, the background compile has also filled this start's cache.
        optimized.push(start.optimized()?);
    }
    let mut cached = Vec::new();
    for _ in 0..args.runs {
        cached.push(Start::new(&bin, &file, &folder, data.path())?.ready);
    }
    // The artefacts `sluice plugins build` would write, from the filled cache (no compile).
    let host = sluice_plugin::PluginHost::new(Some(data.path().join("plugin-cache")))?;
    for name in PLUGINS {
        host.precompile_beside(&precompiled.join(format!("{name}.wasm")))?;
    }
    let mut beside = Vec::new();
    for _ in 0..args.runs {
        let data = tempfile::tempdir()?;
        beside.push(Start::new(&bin, &file, &precompiled, data.path())?.ready);
    }
    let target = |took: Duration, goal: Duration| {
        if took <= goal {
            format!("(target <= {goal:?})")
        } else {
            format!("(target <= {goal:?})  NOT MET")
        }
    };
    let cold = median(&mut cold);
    println!(
        "  cold (compiles every component, baseline):   {cold:>9.2?}  {}",
        target(cold, Duration::from_secs(3))
    );
    println!(
        "  cold, until optimized code is swapped in:    {:>9.2?}",
        median(&mut optimized)
    );
    let cached = median(&mut cached);
    println!(
        "  cached (the compile cache loaded):           {cached:>9.2?}  {}",
        target(cached, Duration::from_millis(100))
    );
    println!(
        "  precompiled (NAME.cwasm beside, no cache):   {:>9.2?}  (the built-ins, with no artefact, are compiled)",
        median(&mut beside)
    );
    Ok(())
}

/// A `sluice run` started and ready (`/health` answered 200), killed when dropped.
struct Start {
    child: Child,
    started: Instant,
    ready: Duration,
    /// Lines of its log, as they come.
    log: mpsc::Receiver<String>,
}

impl Start {
    /// Spawns sluice and polls `/health` every millisecond until 200.
    fn new(bin: &Path, file: &Path, plugins: &Path, data: &Path) -> anyhow::Result<Start> {
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
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        let stderr = child.stderr.take().context("piped stderr")?;
        let (lines, log) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if lines.send(line).is_err() {
                    break;
                }
            }
        });
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(1)))
            .build()
            .into();
        let url = format!("http://127.0.0.1:{metrics}/health");
        let mut start = Start {
            child,
            started,
            ready: Duration::ZERO,
            log,
        };
        start.ready = loop {
            if let Ok(r) = agent.get(&url).call()
                && r.status() == 200
            {
                break started.elapsed();
            }
            if let Some(status) = start.child.try_wait()? {
                bail!("sluice exited with {status} before it was ready");
            }
            if started.elapsed() > Duration::from_secs(300) {
                bail!("sluice was not ready within 300 s");
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        Ok(start)
    }

    /// Waits for the log line saying the background compile published every plugin's
    /// optimized code; the time since the spawn.
    fn optimized(self) -> anyhow::Result<Duration> {
        let deadline = self.started + Duration::from_secs(300);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.log.recv_timeout(left) {
                Ok(line) if line.contains(OPTIMIZED) => return Ok(self.started.elapsed()),
                Ok(_) => {}
                Err(_) => bail!("sluice did not log `{OPTIMIZED}` within 300 s"),
            }
        }
    }
}

impl Drop for Start {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}
