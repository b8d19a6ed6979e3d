//! A running `sluice run` process: started on a pipeline file written to a fresh folder,
//! killed when dropped; and [`close`], the one way the tests end a process they started
//! (`sluice run`, a broker of a test's own).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::metrics::prometheus_value;
use super::{free_ports, run_plugin_dir, sluice_bin};

/// `sluice run DIR/pipelines.yaml` with its data in `DIR/data` and `/metrics` on
/// `metrics_port`; the caller sets stderr and spawns it.
fn run_command(dir: &Path, metrics_port: u16, extra: &[&str]) -> Command {
    let mut command = Command::new(sluice_bin());
    command
        .arg("run")
        .arg(dir.join("pipelines.yaml"))
        .arg("--metrics-addr")
        .arg(format!("127.0.0.1:{metrics_port}"))
        // For the KMS server of the tests (moto takes any credentials).
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .arg("--data-dir")
        .arg(dir.join("data"))
        .args(extra)
        .stdout(Stdio::null());
    if !extra.contains(&"--plugins") {
        command.arg("--plugins").arg(run_plugin_dir());
    }
    command
}

/// How [`close`] ends a process.
#[derive(Clone, Copy, Debug)]
pub enum Signal {
    /// SIGTERM: the process drains, commits and exits on its own.
    Term,
    /// SIGKILL: no drain, no commit, as in a crash.
    Kill,
}

/// Ends a process a test started: sends `signal`, then waits for it to exit, at most 60 s.
/// Returns its exit code (`-1` when a signal ended it), or `None` when it was still running
/// after 60 s. A process that has already exited is only reaped.
pub fn close(child: &mut Child, signal: Signal) -> Option<i32> {
    match signal {
        // `Child::kill` ignores a process that has exited already.
        Signal::Kill => {
            let _ = child.kill();
        }
        Signal::Term => {
            let status = Command::new("kill")
                .arg("-TERM")
                .arg(child.id().to_string())
                .status()
                .unwrap();
            assert!(status.success(), "kill -TERM {}", child.id());
        }
    }
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status.code().unwrap_or(-1));
        }
        if started.elapsed() > Duration::from_secs(60) {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A running `sluice run`.
pub struct Sluice {
    pub child: Child,
    pub dir: tempfile::TempDir,
    pub port: u16,
    /// Where `/metrics` and `/health` are served.
    pub metrics_port: u16,
    /// The environment it was started with, for [`restart`](Self::restart).
    env: Vec<(String, String)>,
    /// Its pipelines have no http listener: it is ready once its log says so.
    without_listener: bool,
    /// How many times its log said every pipeline was ready (a restart appends to the log).
    ready_seen: usize,
}

impl Sluice {
    /// Writes `pipeline_yaml` (with `{port}` and `{dir}` replaced) and runs it; returns once
    /// the http port accepts connections.
    pub fn start(pipeline_yaml: &str) -> Self {
        Self::start_with(pipeline_yaml, &[])
    }

    /// Writes the pipeline file (with `{port}` and `{dir}` replaced) and starts `sluice run`
    /// on it with `extra` arguments and `env` variables, its standard input `input` (then
    /// closed) or none; does not wait.
    fn spawn(
        pipeline_yaml: &str,
        extra: &[&str],
        env: &[(&str, &str)],
        input: Option<Vec<u8>>,
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let ports = free_ports(2);
        let (port, metrics_port) = (ports[0], ports[1]);
        let yaml = pipeline_yaml
            .replace("{port}", &port.to_string())
            .replace("{dir}", &dir.path().display().to_string());
        std::fs::write(dir.path().join("pipelines.yaml"), yaml).unwrap();
        let mut command = run_command(dir.path(), metrics_port, extra);
        command.stderr(std::fs::File::create(dir.path().join("sluice.log")).unwrap());
        for (k, v) in env {
            command.env(k, v);
        }
        command.stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        let mut child = command.spawn().expect("starting sluice");
        if let Some(input) = input {
            let mut stdin = child.stdin.take().expect("piped");
            // A thread of its own: the input may be more than the pipe holds.
            std::thread::spawn(move || {
                use std::io::Write as _;
                let _ = stdin.write_all(&input);
            });
        }
        Self {
            child,
            dir,
            port,
            metrics_port,
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            without_listener: false,
            ready_seen: 0,
        }
    }

    /// Starts `sluice run` with `input` as its standard input (closed after it); does not wait
    /// (see [`Sluice::exit_code_within`]).
    pub fn start_reading(pipeline_yaml: &str, input: Vec<u8>) -> Self {
        Self::spawn(pipeline_yaml, &[], &[], Some(input))
    }

    /// [`Sluice::start`] with extra environment variables for the process.
    pub fn start_with_env(pipeline_yaml: &str, env: &[(&str, &str)]) -> Self {
        let mut s = Self::spawn(pipeline_yaml, &[], env, None);
        s.wait_ready();
        s
    }

    /// [`Sluice::start`] with extra environment variables and `sluice run` arguments.
    pub fn start_with_env_and_args(
        pipeline_yaml: &str,
        env: &[(&str, &str)],
        extra: &[&str],
    ) -> Self {
        let mut s = Self::spawn(pipeline_yaml, extra, env, None);
        s.wait_ready();
        s
    }

    /// [`Sluice::start`] with extra `sluice run` arguments.
    pub fn start_with(pipeline_yaml: &str, extra: &[&str]) -> Self {
        let mut s = Self::spawn(pipeline_yaml, extra, &[], None);
        s.wait_ready();
        s
    }

    /// [`Sluice::start`] for pipelines without an http source: returns once the log says
    /// every pipeline is ready.
    pub fn start_without_listener(pipeline_yaml: &str) -> Self {
        Self::start_without_listener_with(pipeline_yaml, &[])
    }

    /// [`Sluice::start_without_listener`] with extra environment variables.
    pub fn start_without_listener_env(pipeline_yaml: &str, env: &[(&str, &str)]) -> Self {
        Self::start_without_listener_env_and_args(pipeline_yaml, env, &[])
    }

    /// [`Sluice::start_without_listener`] with extra environment variables and `sluice run`
    /// arguments.
    pub fn start_without_listener_env_and_args(
        pipeline_yaml: &str,
        env: &[(&str, &str)],
        extra: &[&str],
    ) -> Self {
        let mut s = Self::spawn(pipeline_yaml, extra, env, None);
        s.without_listener = true;
        s.wait_ready();
        s
    }

    /// [`Sluice::start_without_listener`] with extra `sluice run` arguments.
    pub fn start_without_listener_with(pipeline_yaml: &str, extra: &[&str]) -> Self {
        let mut s = Self::spawn(pipeline_yaml, extra, &[], None);
        s.without_listener = true;
        s.wait_ready();
        s
    }

    fn wait_ready(&mut self) {
        if self.without_listener {
            return self.wait_logged_ready();
        }
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!(
                    "sluice exited with {status} before listening:\n{}",
                    self.log()
                );
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "sluice did not listen within 60 s:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until the log says every pipeline is ready once more than before.
    fn wait_logged_ready(&mut self) {
        const READY: &str = "all pipelines ready";
        let started = Instant::now();
        while self.log().matches(READY).count() <= self.ready_seen {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("sluice exited with {status}:\n{}", self.log());
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "not ready:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        self.ready_seen += 1;
    }

    /// Polls `check` every 50 ms until it holds; fails with `what` and the log after `within`.
    pub fn wait_for(&self, what: &str, within: Duration, mut check: impl FnMut() -> bool) {
        let started = std::time::Instant::now();
        while !check() {
            assert!(
                started.elapsed() < within,
                "timed out waiting for {what}:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.path("sluice.log")).unwrap_or_default()
    }

    /// POSTs `body` to `path`; returns the status code.
    pub fn post(&self, path: &str, body: &[u8]) -> u16 {
        self.post_with(path, &[], body)
    }

    /// POSTs `body` with `headers` to the source; returns the status.
    pub fn post_with(&self, path: &str, headers: &[(&str, &str)], body: &[u8]) -> u16 {
        self.post_full(path, headers, body).0
    }

    /// POSTs `body` with `headers`; returns the status and the `Retry-After` header, if any.
    pub fn post_full(
        &self,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> (u16, Option<String>) {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let mut request = agent.post(&format!("http://127.0.0.1:{}{path}", self.port));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        match request.send(body) {
            Ok(response) => {
                let retry_after = response
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                (response.status().as_u16(), retry_after)
            }
            Err(e) => panic!("POST failed: {e}"),
        }
    }

    /// Waits, at most `within`, for the process to exit on its own; returns its exit code.
    pub fn exit_code_within(&mut self, within: Duration) -> i32 {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code().unwrap_or(-1);
            }
            assert!(
                started.elapsed() < within,
                "sluice still running after {within:?}:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGTERM, then waits for exit; returns the exit code.
    pub fn terminate(&mut self) -> i32 {
        close(&mut self.child, Signal::Term)
            .unwrap_or_else(|| panic!("sluice did not exit after SIGTERM:\n{}", self.log()))
    }
}

impl Drop for Sluice {
    fn drop(&mut self) {
        self.kill9();
    }
}

impl Sluice {
    /// SIGKILL: no drain, no commit, as in a crash.
    pub fn kill9(&mut self) {
        close(&mut self.child, Signal::Kill);
    }

    /// SIGSTOP: the process does nothing more (no commit, no write) until [`Sluice::thaw`] or
    /// a SIGKILL, so a test can look at what it left before deciding to kill it.
    pub fn freeze(&self) {
        self.signal("-STOP");
    }

    /// SIGCONT after [`Sluice::freeze`].
    pub fn thaw(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(signal)
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        assert!(status.success(), "kill {signal} {}", self.child.id());
    }

    /// Starts `sluice run` again on the same pipeline file, data dir, port, environment and log
    /// (appended).
    pub fn restart(&mut self, extra: &[&str]) {
        let log = std::fs::OpenOptions::new()
            .append(true)
            .open(self.path("sluice.log"))
            .unwrap();
        self.child = run_command(self.dir.path(), self.metrics_port, extra)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stderr(log)
            .spawn()
            .expect("starting sluice");
        self.wait_ready();
    }

    /// GETs `path` on the metrics server: (status, body).
    pub fn get_metrics_server(&self, path: &str) -> (u16, String) {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let mut response = agent
            .get(&format!("http://127.0.0.1:{}{path}", self.metrics_port))
            .call()
            .unwrap_or_else(|e| panic!("GET {path}: {e}"));
        let status = response.status().as_u16();
        (status, response.body_mut().read_to_string().unwrap())
    }

    /// The value of the Prometheus sample `name{...pipeline="PIPELINE"...}`, if exported.
    pub fn metric(&self, name: &str, pipeline: &str) -> Option<f64> {
        let (_, text) = self.get_metrics_server("/metrics");
        prometheus_value(&text, name, &[("pipeline", pipeline)])
    }

    /// The process's resident memory now (VmRSS), in MiB.
    pub fn rss_mib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("sluice is running");
        let kib: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS in /proc/PID/status");
        kib / 1024
    }

    /// POSTs with a deadline: `Err` for a transport error or no answer within `timeout`.
    pub fn try_post(&self, path: &str, body: &[u8], timeout: Duration) -> Result<u16, String> {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(timeout))
            .build()
            .into();
        agent
            .post(&format!("http://127.0.0.1:{}{path}", self.port))
            .send(body)
            .map(|r| r.status().as_u16())
            .map_err(|e| e.to_string())
    }
}
