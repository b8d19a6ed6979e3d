//! Test harness: where the binary and the built plugins are, free ports, and a running
//! `sluice` process that is killed when dropped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_owned()
}

/// Every component `scripts/build-plugins` makes, in Rust, Python and JavaScript.
pub const PLUGINS: [&str; 7] = [
    "csv",
    "hostile",
    "json",
    "logfmt",
    "logfmt_js",
    "logfmt_python",
    "ndjson",
];

/// Where tests keep compiled plugins between runs, so the big Python and JavaScript components
/// are compiled once (the host keys entries by content hash and engine). Owner-only, as the
/// host requires whatever the umask (it would compile without a group-writable cache).
pub fn plugin_cache() -> PathBuf {
    use std::os::unix::fs::DirBuilderExt;
    let dir = profile_dir().join("plugin-cache");
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .expect("creating the test plugin cache");
    dir
}

/// The folder of built example plugins; builds them when missing (never skips).
pub fn plugin_dir() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let dir = root().join("plugins/target/wasm32-wasip2/release");
            if !PLUGINS
                .iter()
                .all(|p| dir.join(format!("{p}.wasm")).is_file())
            {
                let status = Command::new(root().join("scripts/build-plugins"))
                    .status()
                    .expect("running scripts/build-plugins");
                assert!(status.success(), "scripts/build-plugins failed");
            }
            dir
        })
        .clone()
}

/// `target/<profile>` of this build: the test executable runs from its `deps/` folder.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps")
        .to_owned()
}

/// The `sluice` binary of this build (next to the test executable's `deps/` folder).
pub fn sluice_bin() -> PathBuf {
    let bin = profile_dir().join("sluice");
    assert!(
        bin.is_file(),
        "{} is missing: run `cargo build -p sluice` first (scripts/test does)",
        bin.display()
    );
    bin
}

/// A port that was free a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The plugin folder `sluice run` gets in these tests: the small Rust components only
/// (copies), so a test's fresh data dir does not recompile the 12-18 MB Python and JavaScript
/// components at every start. Tests of those pass `--plugins` themselves.
pub fn run_plugin_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = plugin_cache().with_file_name("run-plugins");
        std::fs::create_dir_all(&dir).unwrap();
        for name in ["hostile", "json", "logfmt", "ndjson"] {
            let file = format!("{name}.wasm");
            let tmp = dir.join(format!("{file}.{}", std::process::id()));
            std::fs::copy(plugin_dir().join(&file), &tmp).unwrap();
            std::fs::rename(&tmp, dir.join(&file)).unwrap();
        }
        dir
    })
    .clone()
}

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

/// A running `sluice run`.
pub struct Sluice {
    pub child: Child,
    pub dir: tempfile::TempDir,
    pub port: u16,
    /// Where `/metrics` and `/health` are served.
    pub metrics_port: u16,
}

impl Sluice {
    /// Writes `pipeline_yaml` (with `{port}` and `{dir}` replaced) and runs it; returns once
    /// the http port accepts connections.
    pub fn start(pipeline_yaml: &str) -> Self {
        Self::start_with(pipeline_yaml, &[])
    }

    /// Writes the pipeline file (with `{port}` and `{dir}` replaced) and starts `sluice run`
    /// on it with `extra` arguments and `env` variables; does not wait.
    fn spawn(pipeline_yaml: &str, extra: &[&str], env: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let yaml = pipeline_yaml
            .replace("{port}", &port.to_string())
            .replace("{dir}", &dir.path().display().to_string());
        std::fs::write(dir.path().join("pipelines.yaml"), yaml).unwrap();
        let metrics_port = free_port();
        let mut command = run_command(dir.path(), metrics_port, extra);
        command.stderr(std::fs::File::create(dir.path().join("sluice.log")).unwrap());
        for (k, v) in env {
            command.env(k, v);
        }
        let child = command.spawn().expect("starting sluice");
        Self {
            child,
            dir,
            port,
            metrics_port,
        }
    }

    /// [`Sluice::start`] with extra environment variables for the process.
    pub fn start_with_env(pipeline_yaml: &str, env: &[(&str, &str)]) -> Self {
        let mut s = Self::spawn(pipeline_yaml, &[], env);
        s.wait_ready();
        s
    }

    /// [`Sluice::start`] with extra `sluice run` arguments.
    pub fn start_with(pipeline_yaml: &str, extra: &[&str]) -> Self {
        let mut s = Self::spawn(pipeline_yaml, extra, &[]);
        s.wait_ready();
        s
    }

    /// [`Sluice::start`] for pipelines without an http source: returns once the log says
    /// every pipeline is ready.
    pub fn start_without_listener(pipeline_yaml: &str) -> Self {
        let mut s = Self::spawn(pipeline_yaml, &[], &[]);
        let started = Instant::now();
        while !s.log().contains("all pipelines ready") {
            if let Some(status) = s.child.try_wait().unwrap() {
                panic!("sluice exited with {status}:\n{}", s.log());
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "not ready:\n{}",
                s.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        s
    }

    fn wait_ready(&mut self) {
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

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.path("sluice.log")).unwrap_or_default()
    }

    /// POSTs `body` to `path`; returns the status code.
    pub fn post(&self, path: &str, body: &[u8]) -> u16 {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        match agent
            .post(&format!("http://127.0.0.1:{}{path}", self.port))
            .send(body)
        {
            Ok(response) => response.status().as_u16(),
            Err(e) => panic!("POST failed: {e}"),
        }
    }

    /// SIGTERM, then waits for exit; returns the exit code.
    pub fn terminate(&mut self) -> i32 {
        let status = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        assert!(status.success());
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code().unwrap_or(-1);
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "sluice did not exit after SIGTERM:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Sluice {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The JSON lines of a file (empty if it does not exist).
pub fn json_lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON line {l:?}: {e}")))
        .collect()
}

/// The test broker's address, from `SLUICE_KAFKA_BOOTSTRAP` (set by `scripts/test`, which starts
/// it). Panics when unset: broker tests fail loudly rather than skip.
pub fn kafka_bootstrap() -> String {
    std::env::var("SLUICE_KAFKA_BOOTSTRAP").unwrap_or_else(|_| {
        panic!("SLUICE_KAFKA_BOOTSTRAP is not set: run the tests with ./scripts/test, which starts a broker")
    })
}

/// A name no other test run uses.
pub fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{prefix}-{}-{nanos}", std::process::id())
}

impl Sluice {
    /// SIGKILL: no drain, no commit, as in a crash.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts `sluice run` again on the same pipeline file, data dir, port and log (appended).
    pub fn restart(&mut self, extra: &[&str]) {
        let log = std::fs::OpenOptions::new()
            .append(true)
            .open(self.path("sluice.log"))
            .unwrap();
        self.child = run_command(self.dir.path(), self.metrics_port, extra)
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

/// A broker of the test's own (Nisshi with SQLite storage), for tests that stop and restart
/// it. Needs `nisshi` on the PATH (`scripts/test` installs it).
pub struct Broker {
    child: Option<Child>,
    pub dir: tempfile::TempDir,
    pub port: u16,
    /// Extra `nisshi broker` arguments (`--authentication`, `--cert`...), used by `resume`.
    pub args: Vec<String>,
    /// `tcp` or `tls`, for the listener URLs.
    pub scheme: &'static str,
}

impl Broker {
    pub fn start() -> Self {
        let mut b = Self {
            child: None,
            dir: tempfile::tempdir().unwrap(),
            port: free_port(),
            args: Vec::new(),
            scheme: "tcp",
        };
        b.resume();
        b
    }

    /// A broker that accepts TLS only, with this certificate chain and PKCS#8 key.
    pub fn start_tls(cert: &Path, key: &Path) -> Self {
        let mut b = Self {
            child: None,
            dir: tempfile::tempdir().unwrap(),
            port: free_port(),
            args: vec![
                "--cert".to_owned(),
                cert.display().to_string(),
                "--key".to_owned(),
                key.display().to_string(),
            ],
            scheme: "tcp",
        };
        b.resume();
        b
    }

    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Starts the broker process (again) on the same port and storage; waits until ready.
    pub fn resume(&mut self) {
        let log_path = self.dir.path().join("broker.log");
        let url = format!("{}://127.0.0.1:{}", self.scheme, self.port);
        let started = Instant::now();
        loop {
            let _ = std::fs::remove_file(&log_path);
            let child = Command::new("nisshi")
                .args([
                    "broker",
                    "--listener-url",
                    &url,
                    "--advertised-listener-url",
                    &url,
                ])
                .args(["--storage-engine", "sqlite://broker.db"])
                .args(&self.args)
                .current_dir(self.dir.path())
                .stdout(std::fs::File::create(&log_path).unwrap())
                .stderr(Stdio::null())
                .spawn()
                .expect("starting nisshi (installed by scripts/test)");
            self.child = Some(child);
            loop {
                let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                if log.contains("ready in") {
                    return;
                }
                if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                    // The port may still be held by the previous process for a moment.
                    assert!(
                        started.elapsed() < Duration::from_secs(30),
                        "nisshi exited with {status}:\n{log}"
                    );
                    std::thread::sleep(Duration::from_millis(200));
                    break;
                }
                assert!(
                    started.elapsed() < Duration::from_secs(30),
                    "nisshi not ready within 30 s:\n{log}"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    /// Provisions a SASL/SCRAM-SHA-512 user, the way Nisshi does it: `nisshi user create`
    /// (Kafka's AlterUserScramCredentials) against the running broker. Call it before the
    /// broker requires authentication, then restart it with `--authentication`.
    pub fn create_scram_user(&self, name: &str, password: &str) {
        let status = Command::new("nisshi")
            .args(["user", "create", name, password, "--mechanism", "scram512"])
            .arg("--broker")
            .arg(format!("tcp://127.0.0.1:{}", self.port))
            .stdout(Stdio::null())
            .status()
            .expect("running nisshi user create");
        assert!(status.success(), "nisshi user create failed");
    }

    /// Kills the broker process (SIGKILL); its storage stays.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.stop();
    }
}

/// What the group `group` has committed on `topic`, and the end offsets, per partition.
pub fn committed_and_end(bootstrap: &str, topic: &str, group: &str) -> Vec<(i32, i64, i64)> {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::topic_partition_list::{Offset, TopicPartitionList};
    let consumer: BaseConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let timeout = Duration::from_secs(10);
    let metadata = consumer.fetch_metadata(Some(topic), timeout).unwrap();
    let partitions: Vec<i32> = metadata.topics()[0]
        .partitions()
        .iter()
        .map(|p| p.id())
        .collect();
    let mut list = TopicPartitionList::new();
    for p in &partitions {
        list.add_partition(topic, *p);
    }
    let committed = consumer.committed_offsets(list, timeout).unwrap();
    partitions
        .iter()
        .map(|p| {
            let (_, high) = consumer.fetch_watermarks(topic, *p, timeout).unwrap();
            let c = match committed.find_partition(topic, *p).map(|e| e.offset()) {
                Some(Offset::Offset(o)) => o,
                _ => 0,
            };
            (*p, c, high)
        })
        .collect()
}

/// The value of sample `name` whose labels include `labels`, from Prometheus text.
pub fn prometheus_value(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let (metric, rest) = series.split_once('{').unwrap_or((series, "}"));
            if metric != name {
                return None;
            }
            let all = labels
                .iter()
                .all(|(k, v)| rest.contains(&format!("{k}=\"{v}\"")));
            all.then(|| value.parse().ok()).flatten()
        })
}

/// The test KMS server's endpoint, from `SLUICE_KMS_ENDPOINT` (set by `scripts/test`, which
/// starts moto). Panics when unset: KMS tests fail loudly rather than skip.
pub fn kms_endpoint() -> String {
    std::env::var("SLUICE_KMS_ENDPOINT").unwrap_or_else(|_| {
        panic!("SLUICE_KMS_ENDPOINT is not set: run the tests with ./scripts/test, which starts a KMS server")
    })
}

/// A KMS client for the test server.
pub async fn kms_client() -> aws_sdk_kms::Client {
    let config = aws_sdk_kms::Config::builder()
        .behavior_version(aws_sdk_kms::config::BehaviorVersion::latest())
        .region(aws_sdk_kms::config::Region::new("us-east-1"))
        .endpoint_url(kms_endpoint())
        .credentials_provider(aws_sdk_kms::config::Credentials::new(
            "test", "test", None, None, "tests",
        ))
        .build();
    aws_sdk_kms::Client::from_conf(config)
}

/// Creates a KMS key on the test server; returns its id.
pub async fn kms_key() -> String {
    let out = kms_client()
        .await
        .create_key()
        .description("sluice test")
        .send()
        .await
        .expect("CreateKey on the test KMS");
    out.key_metadata()
        .expect("key metadata")
        .key_id()
        .to_owned()
}

/// The records of `topic` as Kafka stores them, read from the start by a fresh group until
/// `want` arrived or 60 s passed: (envelope version header, payload, headers).
pub fn stored_records(
    bootstrap: &str,
    topic: &str,
    want: usize,
) -> Vec<(String, Vec<u8>, rdkafka::message::OwnedHeaders)> {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::message::{Headers, Message};
    let consumer: BaseConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", unique("raw-reader"))
        .set("auto.offset.reset", "earliest")
        .create()
        .unwrap();
    consumer.subscribe(&[topic]).unwrap();
    let mut out = Vec::new();
    let started = Instant::now();
    while out.len() < want && started.elapsed() < Duration::from_secs(60) {
        if let Some(Ok(m)) = consumer.poll(Duration::from_millis(200)) {
            let headers = m.headers().map(|h| h.detach()).unwrap_or_default();
            let version = headers
                .iter()
                .find(|h| h.key == "sluice-envelope")
                .and_then(|h| h.value)
                .map(|v| String::from_utf8_lossy(v).into_owned())
                .unwrap_or_default();
            out.push((version, m.payload().unwrap_or_default().to_vec(), headers));
        }
    }
    out
}
