//! Kafka for the tests: the broker `scripts/test` started, unique names, topics, a broker of
//! a test's own (for stop and restart), and what Kafka holds: committed offsets, and records
//! read with the one [`TopicReader`] (the buffer's topic and the kafka sink's alike).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::free_port;
use super::process::{Signal, close};

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

/// Creates `topic` with `partitions` partitions (replication 1).
pub async fn create_topic(bootstrap: &str, topic: &str, partitions: i32) -> Result<(), String> {
    use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
    let admin: AdminClient<_> = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .map_err(|e| e.to_string())?;
    let topics = [NewTopic::new(topic, partitions, TopicReplication::Fixed(1))];
    let results = admin
        .create_topics(&topics, &AdminOptions::new())
        .await
        .map_err(|e| e.to_string())?;
    for result in results {
        result.map_err(|(t, e)| format!("creating {t}: {e}"))?;
    }
    Ok(())
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
                        started.elapsed() < BROKER_WAIT,
                        "nisshi exited with {status}:\n{log}"
                    );
                    std::thread::sleep(Duration::from_millis(200));
                    break;
                }
                assert!(
                    started.elapsed() < BROKER_WAIT,
                    "nisshi not ready within {BROKER_WAIT:?}:\n{log}"
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
            close(&mut child, Signal::Kill);
        }
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.stop();
    }
}

/// How long a question to the broker may go unanswered before a test fails: a loaded broker
/// on a loaded 2-core machine answers late, not never.
const BROKER_WAIT: Duration = Duration::from_secs(60);

/// `ask` until it answers, for at most [`BROKER_WAIT`] (each try its own timeout): one late
/// answer of a loaded broker is not a failure.
fn retried<T, E: std::fmt::Display>(what: &str, mut ask: impl FnMut() -> Result<T, E>) -> T {
    let started = Instant::now();
    loop {
        match ask() {
            Ok(answer) => return answer,
            Err(e) if started.elapsed() < BROKER_WAIT => {
                eprintln!("{what}: {e}; asking again");
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => panic!("{what}: no answer within {BROKER_WAIT:?}: {e}"),
        }
    }
}

/// The partitions of `topic`, as the broker's metadata lists them.
fn partitions<C: rdkafka::consumer::ConsumerContext>(
    consumer: &rdkafka::consumer::BaseConsumer<C>,
    topic: &str,
) -> Vec<i32> {
    use rdkafka::consumer::Consumer;
    let metadata = retried("the topic's metadata", || {
        consumer.fetch_metadata(Some(topic), Duration::from_secs(10))
    });
    metadata.topics()[0]
        .partitions()
        .iter()
        .map(|p| p.id())
        .collect()
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
    let partitions = partitions(&consumer, topic);
    let mut list = TopicPartitionList::new();
    for p in &partitions {
        list.add_partition(topic, *p);
    }
    let committed = retried("the group's committed offsets", || {
        consumer.committed_offsets(list.clone(), timeout)
    });
    partitions
        .iter()
        .map(|p| {
            let (_, high) = retried("the partition's end offset", || {
                consumer.fetch_watermarks(topic, *p, timeout)
            });
            let c = match committed.find_partition(topic, *p).map(|e| e.offset()) {
                Some(Offset::Offset(o)) => o,
                _ => 0,
            };
            (*p, c, high)
        })
        .collect()
}

/// The one way the tests read what a topic holds (the buffer's records, a sink's output):
/// every partition from the beginning, by a client of a fresh group with `settings` added
/// (SASL, TLS). Assigned, not subscribed: no group to join, so a busy group coordinator
/// cannot keep the reader waiting past the deadline (seen under CI load).
pub struct TopicReader {
    consumer: rdkafka::consumer::BaseConsumer,
}

impl TopicReader {
    pub fn new(bootstrap: &str, topic: &str, settings: &[(&str, &str)]) -> Self {
        use rdkafka::consumer::Consumer;
        let mut config = rdkafka::ClientConfig::new();
        config
            .set("bootstrap.servers", bootstrap)
            .set("group.id", unique("topic-reader"))
            .set("auto.offset.reset", "earliest");
        for (k, v) in settings {
            config.set(*k, *v);
        }
        let consumer: rdkafka::consumer::BaseConsumer = config.create().unwrap();
        let mut list = rdkafka::TopicPartitionList::new();
        for p in partitions(&consumer, topic) {
            list.add_partition_offset(topic, p, rdkafka::Offset::Beginning)
                .unwrap();
        }
        consumer.assign(&list).unwrap();
        Self { consumer }
    }

    /// The next records until `want` arrived or 60 s passed.
    pub fn take(&self, want: usize) -> Vec<rdkafka::message::OwnedMessage> {
        let mut out = Vec::new();
        let started = Instant::now();
        while out.len() < want && started.elapsed() < Duration::from_secs(60) {
            if let Some(Ok(m)) = self.consumer.poll(Duration::from_millis(200)) {
                out.push(m.detach());
            }
        }
        out
    }

    /// Whatever else the topic already holds (duplicates beyond what [`TopicReader::take`]
    /// waited for): the records up to each partition's end offset now (however slowly a
    /// loaded broker serves them, for at most 60 s), then any that come within 500 ms.
    pub fn rest(&self) -> Vec<rdkafka::message::OwnedMessage> {
        use rdkafka::consumer::Consumer;
        let assigned = self.consumer.assignment().unwrap();
        let ends: Vec<(String, i32, i64)> = assigned
            .elements()
            .iter()
            .map(|e| {
                let (topic, partition) = (e.topic().to_owned(), e.partition());
                let (_, high) = retried("the partition's end offset", || {
                    self.consumer
                        .fetch_watermarks(&topic, partition, Duration::from_secs(10))
                });
                (topic, partition, high)
            })
            .collect();
        let at_end = || {
            let Ok(position) = self.consumer.position() else {
                return false;
            };
            ends.iter().all(|(topic, partition, high)| {
                match position
                    .find_partition(topic, *partition)
                    .map(|e| e.offset())
                {
                    Some(rdkafka::Offset::Offset(at)) => at >= *high,
                    _ => *high == 0,
                }
            })
        };
        let mut out = Vec::new();
        let started = Instant::now();
        while !at_end() && started.elapsed() < Duration::from_secs(60) {
            if let Some(Ok(m)) = self.consumer.poll(Duration::from_millis(200)) {
                out.push(m.detach());
            }
        }
        while let Some(Ok(m)) = self.consumer.poll(Duration::from_millis(500)) {
            out.push(m.detach());
        }
        out
    }
}

/// The records of `topic` as Kafka stores them, read from the start until `want` arrived or
/// 60 s passed: (envelope version header, payload, headers).
pub fn stored_records(
    bootstrap: &str,
    topic: &str,
    want: usize,
) -> Vec<(String, Vec<u8>, rdkafka::message::OwnedHeaders)> {
    use rdkafka::message::{Headers, Message};
    TopicReader::new(bootstrap, topic, &[])
        .take(want)
        .into_iter()
        .map(|m| {
            let headers = m.headers().cloned().unwrap_or_default();
            let version = headers
                .iter()
                .find(|h| h.key == "sluice-envelope")
                .and_then(|h| h.value)
                .map(|v| String::from_utf8_lossy(v).into_owned())
                .unwrap_or_default();
            (version, m.payload().unwrap_or_default().to_vec(), headers)
        })
        .collect()
}
