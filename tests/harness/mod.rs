//! Test harness, shared by the integration tests and `host/bench`: where the binary and the
//! built plugins are, free ports, a running `sluice` process that is killed when dropped, the
//! test broker and KMS server.
//!
//! # Layout
//! - this file: paths (repository, binary, plugins, plugin cache), free ports, JSON lines.
//! - [`cli`]: `sluice plugins new|build` with the real component tools.
//! - [`process`]: [`Sluice`], a running `sluice run` (start, post, metrics, restart, kill), and
//!   [`close`], the one way a test ends a process it started (SIGTERM or SIGKILL, then reap).
//! - [`kafka`]: the test broker's address, unique names, topics, a [`Broker`] of a test's own,
//!   and what Kafka holds (committed offsets; records, read with the one [`TopicReader`]).
//! - [`kms`]: the test KMS server.
//! - [`metrics`]: reading a Prometheus sample.
//! - [`opensearch`]: a strict test server for the OpenSearch REST API (the opensearch sink).
//! - [`sigv4`]: an independent SigV4 verifier, for test servers that check signed requests.

pub mod cli;
pub mod kafka;
pub mod kms;
pub mod metrics;
pub mod opensearch;
pub mod process;
pub mod s3;
pub mod sigv4;
pub mod sqs;
pub mod sts;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub use cli::{built_template, sluice_cli, tools_path};
pub use kafka::{
    Broker, TopicReader, committed_and_end, create_topic, kafka_bootstrap, stored_records, unique,
};
pub use kms::{kms_client, kms_endpoint, kms_key};
pub use metrics::prometheus_value;
pub use opensearch::OpenSearch;
pub use process::{Signal, Sluice, close};
pub use s3::S3Store;

/// The repository root: from `CARGO_MANIFEST_DIR` at run time when cargo runs these tests (a
/// test binary that a shared target folder kept from another checkout would otherwise use that
/// checkout's path, built in), else as built (the bench binary, or another crate's run).
pub fn root() -> PathBuf {
    let tests = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .filter(|dir| dir.join("harness").is_dir())
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    tests.parent().expect("tests/ has a parent").to_owned()
}

/// Every component `scripts/build-plugins` makes, in Rust, Python and JavaScript.
pub const PLUGINS: [&str; 19] = [
    "csv",
    "dedup",
    "hostile",
    "hostile_buffer",
    "hostile_processor",
    "json",
    "logfmt",
    "logfmt_js",
    "logfmt_python",
    "logfmt_v0_1",
    "ndjson",
    "otlp",
    "passthrough",
    "passthrough_buffer",
    "plain",
    "priority_shed",
    "redact",
    "tagger",
    "tenant_quota",
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

/// `target/<profile>` of this build: test executables run from its `deps/` folder, the bench
/// binary from the folder itself.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("executable path");
    let dir = exe.parent().expect("target/<profile>");
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir.parent().expect("target/<profile>/deps").to_owned()
    } else {
        dir.to_owned()
    }
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
    free_ports(1)[0]
}

/// `n` ports that were free a moment ago, no two alike: each is held until all are picked
/// (picked and released one at a time, 50 ports collided now and then).
pub fn free_ports(n: usize) -> Vec<u16> {
    let listeners: Vec<std::net::TcpListener> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    listeners
        .iter()
        .map(|l| l.local_addr().unwrap().port())
        .collect()
}

/// The plugin folder `sluice run` gets in these tests: the small Rust components only
/// (copies), so a test's fresh data dir does not recompile the 12-18 MB Python and JavaScript
/// components at every start. Tests of those pass `--plugins` themselves.
pub fn run_plugin_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = plugin_cache().with_file_name("run-plugins");
        std::fs::create_dir_all(&dir).unwrap();
        for name in [
            "dedup",
            "hostile",
            "hostile_buffer",
            "hostile_processor",
            "json",
            "logfmt",
            "ndjson",
            "otlp",
            "passthrough_buffer",
            "redact",
            "tagger",
            "tenant_quota",
        ] {
            let file = format!("{name}.wasm");
            let tmp = dir.join(format!("{file}.{}", std::process::id()));
            std::fs::copy(plugin_dir().join(&file), &tmp).unwrap();
            std::fs::rename(&tmp, dir.join(&file)).unwrap();
        }
        dir
    })
    .clone()
}

/// The JSON lines of a file (empty if it does not exist). Only whole lines: a last line without
/// its newline is one a sink is still writing, read again next time.
pub fn json_lines(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let whole = text.rfind('\n').map_or("", |end| &text[..end]);
    whole
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON line {l:?}: {e}")))
        .collect()
}

/// `text` with every line indented by `n` spaces.
pub fn indent(text: &str, n: usize) -> String {
    text.lines().map(|l| format!("{:n$}{l}\n", "")).collect()
}

/// A `buffer:` block's body (indented by 4, for a pipeline's `buffer:` key) holding the `kafka`
/// keys `kafka` (YAML from column 0): as the built-in `kafka` buffer, or as the one tier of the
/// buffer policy component `policy`.
pub fn kafka_buffer_yaml(kafka: &str, policy: Option<&str>) -> String {
    let buffer = match policy {
        None => format!("kafka:\n{}", indent(kafka, 2)),
        Some(name) => format!("{name}:\n  tiers:\n    - kafka:\n{}", indent(kafka, 8)),
    };
    indent(&buffer, 4)
}

/// A test CA and a server certificate for 127.0.0.1 signed by it, made with openssl: (the CA,
/// the certificate, its PKCS#8 key), PEM files in `dir`.
pub fn test_certificates(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let run = |args: &[&str]| {
        let out = std::process::Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("openssl");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca-key.pem",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=sluice test CA",
    ]);
    run(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "broker-key-rsa.pem",
        "-out",
        "broker.csr",
        "-subj",
        "/CN=127.0.0.1",
    ]);
    std::fs::write(dir.join("san.ext"), "subjectAltName=IP:127.0.0.1\n").unwrap();
    run(&[
        "x509",
        "-req",
        "-in",
        "broker.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca-key.pem",
        "-CAcreateserial",
        "-out",
        "broker.pem",
        "-days",
        "2",
        "-extfile",
        "san.ext",
    ]);
    run(&[
        "pkcs8",
        "-topk8",
        "-nocrypt",
        "-in",
        "broker-key-rsa.pem",
        "-out",
        "broker-key.pem",
    ]);
    (
        dir.join("ca.pem"),
        dir.join("broker.pem"),
        dir.join("broker-key.pem"),
    )
}

/// The python of the OpenTelemetry clients' virtualenv, from `SLUICE_OTEL_PYTHON` (set by
/// `scripts/test`, which installs them). Panics when unset: OTLP tests fail loudly, never skip.
pub fn otel_python() -> PathBuf {
    std::env::var_os("SLUICE_OTEL_PYTHON").map(PathBuf::from).unwrap_or_else(|| {
        panic!("SLUICE_OTEL_PYTHON is not set: run the tests with ./scripts/test, which installs the OpenTelemetry clients (scripts/otel-clients)")
    })
}
