//! The dead-letter file: one JSON line per record that could not be delivered (the
//! deserializer rejected it or trapped on it, it returned something that is not JSON objects,
//! or the buffer could not open it), with the reason and the original bytes, so nothing is
//! lost and the record can be replayed. From a Kafka buffer each entry also says where its
//! record sits (`buffer`: topic, partition, offset), and a batch read again after a crash
//! dead-letters none of its records twice (the file keeps its record of offsets, as the
//! file sink does).

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use base64::Engine as _;
use bytes::Bytes;
use serde_json::{Value, json};
use sluice_buffer::Position;

use super::file::FileSink;
use super::{Provenance, SinkError, Span};

/// Where in the pipeline an entry was dead-lettered: what its payload is, and so where
/// `sluice dlq replay` sends it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage<'a> {
    /// The buffer could not open the record (`"stage": "buffer"`): the payload is the record's
    /// bytes as the buffer holds them.
    Buffer,
    /// The deserializer rejected the record (`"deserializer"`): the payload is the raw bytes.
    Deserializer,
    /// An event, as it came to the processor at `index` (counting from 0) of the pipeline's
    /// processors, named `name` (`"processor"`, with `processor` and `processor_index`). An
    /// event that cannot be read into values for the processors is at index 0.
    Processor { index: usize, name: &'a str },
    /// An event the sink `name` refused or had no retries left for (`"sink"`).
    Sink { name: &'a str },
}

/// A record that did not become events, as the pipeline read it.
#[derive(Debug, Clone, Copy)]
pub struct Rejected<'a> {
    /// Where it was dead-lettered.
    pub stage: Stage<'a>,
    /// Where it came from (`http:/log/ingest`).
    pub origin: &'a str,
    pub payload: &'a [u8],
    pub key: Option<&'a [u8]>,
    /// What the source was told the bytes are, when known.
    pub content_type: Option<&'a str>,
    pub received_at_ms: u64,
}

/// The dead-letter line of `record` in `pipeline`, rejected for `reason`: the payload and key
/// in base64 (they may not be text), and when it was dead-lettered.
pub fn entry(pipeline: &str, record: Rejected<'_>, reason: &str) -> Value {
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut entry = json!({
        "pipeline": pipeline,
        "origin": record.origin,
        "reason": reason,
        "payload": b64.encode(record.payload),
        "key": record.key.map(|k| b64.encode(k)),
        "content_type": record.content_type,
        "received_at_ms": record.received_at_ms,
        "time": humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
    });
    let fields = entry.as_object_mut().expect("an object");
    let stage = match record.stage {
        Stage::Buffer => "buffer",
        Stage::Deserializer => "deserializer",
        Stage::Processor { index, name } => {
            fields.insert("processor".to_owned(), json!(name));
            fields.insert("processor_index".to_owned(), json!(index));
            "processor"
        }
        Stage::Sink { name } => {
            fields.insert("sink".to_owned(), json!(name));
            "sink"
        }
    };
    fields.insert("stage".to_owned(), json!(stage));
    entry
}

/// Adds to `entry` the reasons its record was dead-lettered before it was replayed (oldest
/// first; none: unchanged), so a record that fails again shows every reason.
pub fn add_earlier_reasons(entry: &mut Value, earlier: &[String]) {
    if let (false, Value::Object(fields)) = (earlier.is_empty(), entry) {
        fields.insert("earlier_reasons".to_owned(), json!(earlier));
    }
}

/// The default dead-letter path of a pipeline.
pub fn default_path(data_dir: &Path, pipeline: &str) -> PathBuf {
    data_dir.join("dlq").join(format!("{pipeline}.jsonl"))
}

/// A pipeline's dead-letter file.
pub struct DeadLetters {
    file: FileSink,
}

impl DeadLetters {
    /// Opens (appends to) `pipeline`'s dead-letter file `path`, creating it and its folder.
    pub async fn open(path: &Path, pipeline: &str) -> Result<Self, SinkError> {
        let scope = format!("dead letters of {pipeline}");
        let file = FileSink::open_with(path, true, &scope)
            .await
            .map_err(|e| SinkError::new(&sluice_config::sink::file::name(path), e))?;
        Ok(Self { file })
    }

    /// Writes `entries`, one line each. Resolves once the file holds them all.
    pub async fn write(&self, entries: &[Value]) -> Result<(), SinkError> {
        self.file.write(&lines(entries)).await
    }

    /// Writes `entries`, retrying with backoff until the file holds them (what is
    /// dead-lettered is not acknowledged before).
    pub async fn write_until_held(&self, entries: &[Value]) {
        let lines = lines(entries);
        self.until_held(|| self.file.write(&lines)).await;
    }

    /// [`write_until_held`](Self::write_until_held) for a batch's dead letters, each with its
    /// record's position in a Kafka buffer (written into the entry as `buffer`): those whose
    /// record the file already holds (a batch read again after a crash) are left out, and the
    /// records written are recorded as held. Only those: a record that gave events the first
    /// time and is dead-lettered when read again (a new plugin version) is not skipped.
    pub async fn write_from_until_held(&self, entries: &[(Option<Position>, Value)]) {
        let lines: Vec<Bytes> = entries
            .iter()
            .map(|(at, entry)| {
                let mut entry = entry.clone();
                if let (Some(at), Value::Object(fields)) = (at, &mut entry) {
                    fields.insert(
                        "buffer".to_owned(),
                        json!({"topic": &*at.topic, "partition": at.partition, "offset": at.offset}),
                    );
                }
                Bytes::from(entry.to_string())
            })
            .collect();
        let from = Provenance {
            at: entries
                .iter()
                .map(|(at, _)| at.clone().map(|p| (p, 0)))
                .collect(),
            covers: Span::runs(entries.iter().filter_map(|(at, _)| at.as_ref())),
            extent: None,
        };
        self.until_held(|| self.file.write_from(&lines, &from))
            .await;
    }

    async fn until_held<F, E>(&self, mut write: impl FnMut() -> F)
    where
        F: std::future::Future<Output = Result<(), E>>,
        E: std::fmt::Display,
    {
        let mut backoff = std::time::Duration::from_millis(100);
        while let Err(e) = write().await {
            tracing::warn!(sink = self.name(), error = %e, retry_in = ?backoff, "the dead-letter file refused entries; retrying");
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(std::time::Duration::from_secs(10));
        }
    }

    /// For logs.
    pub fn name(&self) -> &str {
        self.file.name()
    }
}

fn lines(values: &[Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for v in values {
        out.extend_from_slice(v.to_string().as_bytes());
        out.push(b'\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_keeps_the_bytes_the_reason_and_where_they_came_from() {
        let record = Rejected {
            stage: Stage::Deserializer,
            origin: "http:/log/ingest",
            payload: b"\xff not json",
            key: Some(b"k1"),
            content_type: Some("application/json"),
            received_at_ms: 1_700_000_000_123,
        };
        let e = entry("log-pipeline", record, "expected value at line 1 column 1");
        assert_eq!(e["pipeline"], "log-pipeline");
        assert_eq!(e["origin"], "http:/log/ingest");
        assert_eq!(e["reason"], "expected value at line 1 column 1");
        let b64 = base64::engine::general_purpose::STANDARD;
        assert_eq!(
            b64.decode(e["payload"].as_str().unwrap()).unwrap(),
            b"\xff not json"
        );
        assert_eq!(b64.decode(e["key"].as_str().unwrap()).unwrap(), b"k1");
        assert_eq!(e["content_type"], "application/json");
        assert_eq!(e["received_at_ms"], 1_700_000_000_123_u64);
        let time = humantime::parse_rfc3339(e["time"].as_str().unwrap()).unwrap();
        assert!(SystemTime::now().duration_since(time).unwrap().as_secs() < 60);
    }

    #[test]
    fn a_record_without_key_or_content_type_has_nulls_there() {
        let record = Rejected {
            stage: Stage::Processor {
                index: 1,
                name: "grok",
            },
            origin: "file:in.log",
            payload: b"x",
            key: None,
            content_type: None,
            received_at_ms: 0,
        };
        let e = entry("p", record, "r");
        assert!(e["key"].is_null() && e["content_type"].is_null());
        assert_eq!(e["stage"], "processor");
        assert_eq!(e["processor"], "grok");
        assert_eq!(e["processor_index"], 1);
    }

    #[tokio::test]
    async fn a_batch_read_again_dead_letters_none_of_its_records_twice() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dlq.jsonl");
        let at = |offset| Position {
            topic: std::sync::Arc::from("t"),
            partition: 1,
            offset,
        };
        let record = |reason: &str| {
            let rejected = Rejected {
                stage: Stage::Deserializer,
                origin: "o",
                payload: b"x",
                key: None,
                content_type: None,
                received_at_ms: 1,
            };
            entry("p", rejected, reason)
        };
        // Records 10..=14 read, 11 and 13 dead-lettered; then the same batch read again after
        // a restart, with 15..=16 (16 dead-lettered) now in it too.
        let dlq = DeadLetters::open(&path, "p").await.unwrap();
        let first = [(Some(at(11)), record("11")), (Some(at(13)), record("13"))];
        dlq.write_from_until_held(&first).await;
        drop(dlq);
        let dlq = DeadLetters::open(&path, "p").await.unwrap();
        // 12 gave events the first time and is dead-lettered now (a new plugin version): it
        // was never in the file, so it is written.
        let again = [
            (Some(at(11)), record("11")),
            (Some(at(12)), record("12")),
            (Some(at(13)), record("13")),
            (Some(at(16)), record("16")),
        ];
        dlq.write_from_until_held(&again).await;
        let text = std::fs::read_to_string(&path).unwrap();
        let entries: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let reasons: Vec<&str> = entries
            .iter()
            .map(|e| e["reason"].as_str().unwrap())
            .collect();
        assert_eq!(reasons, ["11", "13", "12", "16"]);
        assert_eq!(
            entries[3]["buffer"],
            json!({"topic": "t", "partition": 1, "offset": 16})
        );
    }

    #[tokio::test]
    async fn entries_are_appended_one_json_line_each() {
        let dir = tempfile::tempdir().unwrap();
        let path = default_path(dir.path(), "p");
        assert_eq!(path, dir.path().join("dlq/p.jsonl"));
        let dlq = DeadLetters::open(&path, "p").await.unwrap();
        let record = Rejected {
            stage: Stage::Buffer,
            origin: "o",
            payload: b"a\nb",
            key: None,
            content_type: None,
            received_at_ms: 1,
        };
        dlq.write(&[entry("p", record, "one"), entry("p", record, "two")])
            .await
            .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let reasons: Vec<String> = text
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap()["reason"].to_string())
            .collect();
        assert_eq!(reasons, ["\"one\"", "\"two\""]);
    }
}
