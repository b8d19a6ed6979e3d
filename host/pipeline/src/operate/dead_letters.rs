//! Reading a pipeline's dead-letter file back: its entries, numbered from 1 in file order,
//! which of them were replayed, and choosing some (`sluice dlq list|show|replay`).
//!
//! The file is only ever appended to. A replay appends a mark line, `{"replayed": [numbers],
//! "to": ..., "time": ...}`, once what it sent of those entries is held (by the buffer, or by
//! their sink): an entry is never marked before, so a replay cut short (kill -9) leaves its
//! last entries unmarked and the next replay sends them again (at least once, none lost).

use std::path::Path;
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use serde_json::Value;

/// One dead-letter entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Its number: 1 for the first entry of the file (mark lines are not counted).
    pub number: usize,
    /// The entry as written (see `crate::sink::dlq::entry`).
    pub value: Value,
    /// Whether a replay sent it back already.
    pub replayed: bool,
}

/// What an entry's payload is, and so where a replay sends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A record's bytes (the deserializer or the buffer refused it): back into the buffer.
    Record,
    /// An event a processor failed: back into the buffer as an event for the processors from
    /// `processor` (its index) on.
    Event { processor: usize },
    /// An event the sink `sink` did not take: back into that sink.
    Sink { sink: String },
}

impl Entry {
    /// Why it was dead-lettered.
    pub fn reason(&self) -> &str {
        self.value["reason"].as_str().unwrap_or_default()
    }

    /// Where its record came from (`http:/log/ingest via kafka:t/0@12`).
    pub fn origin(&self) -> &str {
        self.value["origin"].as_str().unwrap_or_default()
    }

    /// When it was dead-lettered (to the second), if the entry says.
    pub fn time(&self) -> Option<SystemTime> {
        humantime::parse_rfc3339_weak(self.value["time"].as_str()?).ok()
    }

    /// The stage that dead-lettered it: `buffer`, `deserializer`, `processor` or `sink`. An
    /// entry written before entries said so is a sink's when its origin is `sink:...`, else
    /// the deserializer's.
    pub fn stage(&self) -> &str {
        match self.value["stage"].as_str() {
            Some(stage) => stage,
            None if self.origin().starts_with("sink:") => "sink",
            None => "deserializer",
        }
    }

    /// Where a replay sends it.
    pub fn kind(&self) -> Kind {
        match self.stage() {
            "processor" => Kind::Event {
                processor: self.value["processor_index"].as_u64().unwrap_or(0) as usize,
            },
            "sink" => Kind::Sink {
                sink: match self.value["sink"].as_str() {
                    Some(sink) => sink.to_owned(),
                    None => self.origin().trim_start_matches("sink:").to_owned(),
                },
            },
            _ => Kind::Record,
        }
    }

    /// The payload's bytes (the record's, or the event's JSON).
    pub fn payload(&self) -> Vec<u8> {
        decode(&self.value["payload"])
    }

    /// What the source was told the record's bytes are, if it was told.
    pub fn content_type(&self) -> Option<String> {
        self.value["content_type"].as_str().map(str::to_owned)
    }

    /// The record's key, if it had one.
    pub fn key(&self) -> Option<Vec<u8>> {
        self.value["key"]
            .as_str()
            .map(|_| decode(&self.value["key"]))
    }

    /// Every reason the record was dead-lettered for, oldest first: those of earlier
    /// replays, then this entry's.
    pub fn reasons(&self) -> Vec<String> {
        let mut reasons: Vec<String> = self.value["earlier_reasons"]
            .as_array()
            .map(|earlier| {
                earlier
                    .iter()
                    .filter_map(|r| r.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        reasons.push(self.reason().to_owned());
        reasons
    }
}

fn decode(value: &Value) -> Vec<u8> {
    let b64 = base64::engine::general_purpose::STANDARD;
    value
        .as_str()
        .and_then(|text| b64.decode(text).ok())
        .unwrap_or_default()
}

/// Why the dead-letter file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("reading the dead-letter file `{path}`: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

/// The entries of the dead-letter file at `path`, with the marks of earlier replays applied.
/// A file that does not exist has none. A line that is not a JSON object (a torn last line)
/// is skipped.
pub fn read(path: &Path) -> Result<Vec<Entry>, ReadError> {
    let text = match std::fs::read(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(ReadError::Io {
                path: path.display().to_string(),
                source,
            });
        }
    };
    let mut entries = Vec::new();
    let mut marked = Vec::new();
    for line in crate::sink::split_lines(&text) {
        let Ok(value) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        if let Some(numbers) = value["replayed"].as_array() {
            marked.extend(numbers.iter().filter_map(Value::as_u64));
        } else if value.is_object() {
            entries.push(Entry {
                number: entries.len() + 1,
                value,
                replayed: false,
            });
        }
    }
    for number in marked {
        if let Some(entry) = (number as usize)
            .checked_sub(1)
            .and_then(|i| entries.get_mut(i))
        {
            entry.replayed = true;
        }
    }
    Ok(entries)
}

/// The mark line of a replay that sent `numbers` to `to` (`buffer`, or `sink:<name>`).
pub fn mark(numbers: &[usize], to: &str) -> Value {
    serde_json::json!({
        "replayed": numbers,
        "to": to,
        "time": humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
    })
}

/// Which entries to list, show or replay. Every condition given must hold.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Select {
    /// Only these entry numbers (none: any).
    #[serde(default)]
    pub numbers: Vec<usize>,
    /// Only entries whose reason matches this regular expression.
    #[serde(default)]
    pub reason: Option<String>,
    /// Only entries dead-lettered this long ago or less.
    #[serde(default, with = "humantime_serde_opt")]
    pub since: Option<Duration>,
    /// At most this many (the oldest first).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Entries already replayed too.
    #[serde(default)]
    pub again: bool,
}

/// Why a selection is not valid.
#[derive(Debug, thiserror::Error)]
pub enum SelectError {
    #[error("--reason `{pattern}` is not a regular expression: {source}")]
    Reason {
        pattern: String,
        source: regex::Error,
    },
}

impl Select {
    /// The entries of `entries` it picks, in file order.
    pub fn pick<'a>(&self, entries: &'a [Entry]) -> Result<Vec<&'a Entry>, SelectError> {
        let reason = self
            .reason
            .as_deref()
            .map(|pattern| {
                regex::Regex::new(pattern).map_err(|source| SelectError::Reason {
                    pattern: pattern.to_owned(),
                    source,
                })
            })
            .transpose()?;
        let since = self.since.map(|ago| SystemTime::now() - ago);
        let picked = entries
            .iter()
            .filter(|e| self.again || !e.replayed)
            .filter(|e| self.numbers.is_empty() || self.numbers.contains(&e.number))
            .filter(|e| reason.as_ref().is_none_or(|r| r.is_match(e.reason())))
            .filter(|e| since.is_none_or(|since| e.time().is_some_and(|t| t >= since)))
            .take(self.limit.unwrap_or(usize::MAX))
            .collect();
        Ok(picked)
    }
}

/// `since` as humantime text in JSON (`"2h"`), for the admin endpoint's requests.
mod humantime_serde_opt {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(
        value: &Option<Duration>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(d) => serializer.serialize_some(&humantime::format_duration(*d).to_string()),
            None => serializer.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Duration>, D::Error> {
        Option::<String>::deserialize(deserializer)?
            .map(|text| humantime::parse_duration(&text).map_err(serde::de::Error::custom))
            .transpose()
    }
}

/// One group of `sluice dlq list`: entries of one stage, origin and reason.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Group {
    pub stage: String,
    /// The origin without where it sat in the buffer (`http:/log/ingest`).
    pub origin: String,
    pub reason: String,
    pub entries: usize,
    /// How many of them were replayed.
    pub replayed: usize,
    /// The first and last entry numbers.
    pub first: usize,
    pub last: usize,
}

/// `entries` grouped by stage, origin (without its buffer position) and reason, the biggest
/// group first.
pub fn groups(entries: &[&Entry]) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    let mut index = std::collections::HashMap::new();
    for e in entries {
        let key = (
            e.stage().to_owned(),
            source_origin(e.origin()).to_owned(),
            e.reason().to_owned(),
        );
        let i = *index.entry(key.clone()).or_insert_with(|| {
            groups.push(Group {
                stage: key.0,
                origin: key.1,
                reason: key.2,
                entries: 0,
                replayed: 0,
                first: e.number,
                last: e.number,
            });
            groups.len() - 1
        });
        let g = &mut groups[i];
        g.entries += 1;
        g.replayed += usize::from(e.replayed);
        g.last = e.number;
    }
    groups.sort_by(|a, b| b.entries.cmp(&a.entries).then(a.first.cmp(&b.first)));
    groups
}

/// Where a record came from, without where it then sat in a Kafka buffer: the origin a replayed
/// record is written with (the buffer adds its new position when it is read).
pub fn source_origin(origin: &str) -> &str {
    match origin.rfind(" via kafka:") {
        Some(at) => &origin[..at],
        None => origin,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn file(lines: &[Value]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dlq.jsonl");
        let mut text = String::new();
        for l in lines {
            text.push_str(&l.to_string());
            text.push('\n');
        }
        // A torn last line (a crash mid-write) is not an entry.
        text.push_str("{\"reason\": \"to");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    fn entry(reason: &str, origin: &str) -> Value {
        json!({"reason": reason, "origin": origin, "payload": "aGk=", "time": "2026-12-05T10:00:00Z"})
    }

    #[test]
    fn entries_are_numbered_in_file_order_and_marks_say_which_were_replayed() {
        let (_dir, path) = file(&[
            entry("bad", "http:/a via kafka:t/0@4"),
            entry("worse", "http:/a"),
            mark(&[1], "buffer"),
            entry("bad", "http:/b"),
        ]);
        let entries = read(&path).unwrap();
        let numbers: Vec<(usize, bool)> = entries.iter().map(|e| (e.number, e.replayed)).collect();
        assert_eq!(numbers, [(1, true), (2, false), (3, false)]);
        assert_eq!(entries[0].payload(), b"hi");
        assert_eq!(entries[0].kind(), Kind::Record);
        // Not replayed yet: 2 and 3; with `again`, 1 too.
        let picked = Select::default().pick(&entries).unwrap();
        assert_eq!(picked.iter().map(|e| e.number).collect::<Vec<_>>(), [2, 3]);
        let again = Select {
            again: true,
            reason: Some("^bad$".into()),
            ..Select::default()
        };
        let picked = again.pick(&entries).unwrap();
        assert_eq!(picked.iter().map(|e| e.number).collect::<Vec<_>>(), [1, 3]);
        let limited = Select {
            limit: Some(1),
            ..Select::default()
        };
        assert_eq!(limited.pick(&entries).unwrap()[0].number, 2);
        assert!(read(&path.with_extension("missing")).unwrap().is_empty());
    }

    #[test]
    fn since_picks_entries_dead_lettered_that_recently() {
        let now = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
        let mut recent = entry("r", "o");
        recent["time"] = json!(now);
        let (_dir, path) = file(&[entry("old", "o"), recent]);
        let entries = read(&path).unwrap();
        let select = Select {
            since: Some(Duration::from_secs(3600)),
            ..Select::default()
        };
        let picked = select.pick(&entries).unwrap();
        assert_eq!(picked.iter().map(|e| e.reason()).collect::<Vec<_>>(), ["r"]);
    }

    #[test]
    fn a_bad_reason_pattern_is_named() {
        let select = Select {
            reason: Some("(".into()),
            ..Select::default()
        };
        let e = select.pick(&[]).unwrap_err().to_string();
        assert!(e.contains("--reason `(`"), "{e}");
    }

    #[test]
    fn groups_are_by_stage_origin_without_position_and_reason() {
        let (_dir, path) = file(&[
            entry("bad", "http:/a via kafka:t/0@4"),
            entry("bad", "http:/a via kafka:t/1@9"),
            json!({"reason": "503", "origin": "sink:http:x", "stage": "sink", "sink": "http:x"}),
        ]);
        let entries = read(&path).unwrap();
        let all: Vec<&Entry> = entries.iter().collect();
        let groups = groups(&all);
        assert_eq!(groups.len(), 2);
        assert_eq!(
            (groups[0].origin.as_str(), groups[0].entries, groups[0].last),
            ("http:/a", 2, 2)
        );
        assert_eq!(
            entries[2].kind(),
            Kind::Sink {
                sink: "http:x".into()
            }
        );
    }

    #[test]
    fn every_reason_of_a_record_replayed_before_is_kept() {
        let e = Entry {
            number: 1,
            value: json!({"reason": "second", "earlier_reasons": ["first"], "stage": "processor", "processor_index": 2}),
            replayed: false,
        };
        assert_eq!(e.reasons(), ["first", "second"]);
        assert_eq!(e.kind(), Kind::Event { processor: 2 });
    }
}
