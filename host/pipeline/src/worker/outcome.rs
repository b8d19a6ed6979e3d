//! Splitting a batch's plugin outcomes into event lines for the sinks and dead-letter entries.
//! A record whose plugin output is not all JSON objects is dead-lettered whole, so a record is
//! never half-delivered.

use serde_json::{Map, Value};
use sluice_event::{Event, Metadata};
use sluice_plugin::{Decoded, Events, RawRecord};

use crate::sink::dlq::{self, Rejected};

/// What a batch becomes.
#[derive(Debug, Default)]
pub(crate) struct Split {
    /// The events, one JSON object per line, ready for every sink (stale while `parsed`
    /// holds them).
    pub(crate) events: Vec<u8>,
    /// For each event, the index of the record it came from.
    pub(crate) owners: Vec<usize>,
    /// For each line of `events`, its metadata (stale while `parsed` holds them).
    pub(crate) metadata: Vec<Metadata>,
    /// The events parsed, while built-in processors or routes work on them: a run of
    /// built-ins parses once and serializes once.
    pub(crate) parsed: Option<Vec<Event>>,
    /// Events that are JSON objects but cannot be read into values (a number past `f64`,
    /// `1e400`): their owner, their text and why; the worker dead-letters them.
    pub(crate) unreadable: Vec<(usize, Vec<u8>, String)>,
    /// One dead-letter entry per record that gave no events (or event a processor failed
    /// on), with the index of its record.
    pub(crate) dead: Vec<(usize, Value)>,
    /// Shares of earlier batches' acknowledgements whose events a stateful processor let go
    /// in this one: released once its sinks took it.
    pub(crate) done: Vec<sluice_buffer::Share>,
}

impl Split {
    /// How many events there are (each has its owner).
    pub(crate) fn event_count(&self) -> usize {
        self.owners.len()
    }

    /// Adds to each event its record's `decorations` (per record: metadata attributes, and
    /// fields to set by path): a kafka or s3 source's. The fields go into the events' text
    /// when no event has their keys yet (`splice`), else into the parsed events.
    pub(crate) fn decorate(&mut self, decorations: &[std::sync::Arc<crate::source::Decoration>]) {
        for (metadata, &owner) in self.metadata.iter_mut().zip(&self.owners) {
            if let Some(d) = decorations.get(owner) {
                metadata
                    .attributes
                    .extend(d.attributes.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
        }
        if decorations.iter().all(|d| d.fields.is_empty())
            || (self.parsed.is_none() && self.splice(decorations))
        {
            return;
        }
        self.parsed();
        let events = self.parsed.as_mut().expect("parsed above");
        for (event, &owner) in events.iter_mut().zip(&self.owners) {
            let Some(d) = decorations.get(owner) else {
                continue;
            };
            for (path, value) in &d.fields {
                put(&mut event.data, path, value.clone());
            }
        }
    }

    /// Adds the decorations' fields to the events' text, each line's `{...}` becoming
    /// `{...,<fields>}`: no parse, no serialization. Only when no line may hold one of the
    /// fields' top-level keys already (nor a `\u` escape that could spell one): returns
    /// false, changing nothing, otherwise.
    fn splice(&mut self, decorations: &[std::sync::Arc<crate::source::Decoration>]) -> bool {
        // Each distinct decoration's fields as JSON (`"s3":{"bucket":..}`) and their
        // top-level keys quoted; records of one object share one.
        let mut fragments: Vec<(Vec<u8>, Vec<memchr::memmem::Finder<'static>>)> =
            Vec::with_capacity(decorations.len());
        let mut of_record = Vec::with_capacity(decorations.len());
        for (i, d) in decorations.iter().enumerate() {
            if i > 0 && std::sync::Arc::ptr_eq(d, &decorations[i - 1]) {
                of_record.push(fragments.len() - 1);
                continue;
            }
            let mut object = Value::Object(Map::new());
            for (path, value) in &d.fields {
                put(&mut object, path, value.clone());
            }
            let Value::Object(map) = object else {
                unreachable!("made an object above")
            };
            let keys = map
                .keys()
                .map(|k| {
                    let quoted = serde_json::to_vec(k).expect("a string serializes");
                    memchr::memmem::Finder::new(&quoted).into_owned()
                })
                .collect();
            let text = serde_json::to_vec(&Value::Object(map)).expect("a value serializes");
            let inner = text[1..text.len() - 1].to_vec();
            of_record.push(fragments.len());
            fragments.push((inner, keys));
        }
        // Searchers built once a batch, not once a line.
        let escapes = [b"\\u".as_slice(), b"\\/"].map(memchr::memmem::Finder::new);
        let mut out = Vec::with_capacity(self.events.len() + self.owners.len() * 64);
        for (line, &owner) in crate::sink::split_lines(&self.events).zip(&self.owners) {
            let Some((fragment, keys)) = of_record.get(owner).map(|&f| &fragments[f]) else {
                out.extend_from_slice(line);
                out.push(b'\n');
                continue;
            };
            if fragment.is_empty() {
                out.extend_from_slice(line);
                out.push(b'\n');
                continue;
            }
            // An escaped `\u` or `\/` may spell a key the search below would miss.
            let taken = escapes.iter().any(|f| f.find(line).is_some())
                || keys.iter().any(|k| k.find(line).is_some());
            if taken || line.len() < 2 {
                return false;
            }
            let inner = &line[1..line.len() - 1];
            out.push(b'{');
            if !inner.trim_ascii().is_empty() {
                out.extend_from_slice(inner);
                out.push(b',');
            }
            out.extend_from_slice(fragment);
            out.extend_from_slice(b"}\n");
        }
        self.events = out;
        true
    }

    /// The events parsed (parsing the lines the first time). An event that cannot be read
    /// into a value leaves the batch for `unreadable`.
    pub(crate) fn parsed(&mut self) -> &mut Vec<Event> {
        if self.parsed.is_none() {
            let lines = std::mem::take(&mut self.events);
            let metadata = std::mem::take(&mut self.metadata);
            let owners = std::mem::take(&mut self.owners);
            let mut events = Vec::with_capacity(owners.len());
            for ((line, metadata), owner) in
                crate::sink::split_lines(&lines).zip(metadata).zip(owners)
            {
                // Every line is a JSON object (checked when it was appended), but a value
                // holds less than JSON text can say.
                match serde_json::from_slice::<Value>(line) {
                    Ok(data) if data.is_object() => {
                        events.push(Event::new(data, metadata));
                        self.owners.push(owner);
                    }
                    read => self.unreadable.push((
                        owner,
                        line.to_vec(),
                        format!(
                            "the event cannot be read for the processors and routes: {}",
                            read.err()
                                .map_or("not an object".to_owned(), |e| e.to_string())
                        ),
                    )),
                }
            }
            self.parsed = Some(events);
        }
        self.parsed.as_mut().expect("parsed above")
    }

    /// Takes out the events whose record `wait` picks, to [`restore`](Self::restore) after a
    /// stage they skip; `None` (nothing taken) when it picks none.
    pub(crate) fn hold(&mut self, wait: impl Fn(usize) -> bool) -> Option<Waiting> {
        if !self.owners.iter().any(|&owner| wait(owner)) {
            return None;
        }
        let events = std::mem::take(self.parsed());
        let owners = std::mem::take(&mut self.owners);
        let mut waiting = Waiting::default();
        let mut kept = Vec::with_capacity(events.len());
        for (event, owner) in events.into_iter().zip(owners) {
            if wait(owner) {
                waiting.events.push(event);
                waiting.owners.push(owner);
            } else {
                kept.push(event);
                self.owners.push(owner);
            }
        }
        self.parsed = Some(kept);
        Some(waiting)
    }

    /// Puts back events [`hold`](Self::hold) took out, after the others.
    pub(crate) fn restore(&mut self, waiting: Waiting) {
        self.parsed().extend(waiting.events);
        self.owners.extend(waiting.owners);
    }

    /// The first `n` events, one JSON object each (for `sluice tap`).
    pub(crate) fn sample(&self, n: usize) -> Vec<bytes::Bytes> {
        match &self.parsed {
            Some(events) => events
                .iter()
                .take(n)
                .map(|e| bytes::Bytes::from(e.data.to_string()))
                .collect(),
            None => crate::sink::split_lines(&self.events)
                .take(n.min(self.owners.len()))
                .map(bytes::Bytes::copy_from_slice)
                .collect(),
        }
    }

    /// Makes `events` and `metadata` current (serializing parsed events once).
    pub(crate) fn lines(&mut self) {
        if let Some(events) = self.parsed.take() {
            let mut lines = Vec::with_capacity(events.len() * 128);
            let mut metadata = Vec::with_capacity(events.len());
            for event in events {
                serde_json::to_writer(&mut lines, &event.data).expect("a Value serializes");
                lines.push(b'\n');
                metadata.push(event.metadata);
            }
            self.events = lines;
            self.metadata = metadata;
        }
    }
}

/// Events [`Split::hold`] took out while a stage runs without them.
#[derive(Debug, Default)]
pub(crate) struct Waiting {
    events: Vec<Event>,
    owners: Vec<usize>,
}

/// The record as the dead-letter file shows it.
pub(crate) fn rejected<'a>(record: &'a RawRecord, content_type: Option<&'a str>) -> Rejected<'a> {
    Rejected {
        stage: dlq::Stage::Deserializer,
        origin: &record.origin,
        payload: &record.payload,
        key: record.key.as_deref(),
        content_type,
        received_at_ms: record.received_at_ms,
    }
}

/// Splits `decoded` (one outcome per record of `records`, in order) into events and dead
/// letters. `content_types` has one entry per record; every event gets the metadata of an
/// event of `event_type` received when its record was.
pub(crate) fn split_outcomes(
    pipeline: &str,
    event_type: &'static str,
    records: &[RawRecord],
    content_types: &[Option<String>],
    decoded: Vec<Decoded>,
) -> Split {
    let mut out = Split::default();
    for (i, ((record, outcome), content_type)) in
        records.iter().zip(decoded).zip(content_types).enumerate()
    {
        let reason = match outcome {
            Decoded::Events(texts) => {
                let mark = out.events.len();
                match append_events(&texts, &mut out.events) {
                    Ok(()) => {
                        out.owners.extend(std::iter::repeat_n(i, texts.len()));
                        let metadata = Metadata::new(
                            event_type_of(content_type.as_deref(), event_type),
                            record.received_at_ms,
                        );
                        out.metadata
                            .extend(std::iter::repeat_n(metadata, texts.len()));
                        continue;
                    }
                    Err(reason) => {
                        out.events.truncate(mark);
                        reason
                    }
                }
            }
            Decoded::Malformed(reason) => reason,
            Decoded::Trapped(reason) => format!("plugin trapped: {reason}"),
        };
        tracing::debug!(pipeline, origin = %record.origin, %reason, "dead-lettering record");
        out.dead.push((
            i,
            dlq::entry(pipeline, rejected(record, content_type.as_deref()), &reason),
        ));
    }
    out
}

/// A batch of a `pipeline` source's records, read natively into parsed events, no plugin
/// call: the events upstream pipelines of this process handed over (`handed`, per record) as
/// they are; records of NDJSON lines of events with their metadata (from a `pipeline` sink
/// into a buffer of bytes) with one parse per event. A record with a line that is not a JSON
/// object is dead-lettered whole.
pub(crate) fn split_connected(
    pipeline: &str,
    event_type: &'static str,
    records: &[RawRecord],
    content_types: &[Option<String>],
    mut handed: Vec<Vec<Event>>,
) -> Split {
    let mut out = Split::default();
    let mut parsed = Vec::new();
    for (i, (record, content_type)) in records.iter().zip(content_types).enumerate() {
        if let Some(events) = handed.get_mut(i).filter(|e| !e.is_empty()) {
            out.owners.extend(std::iter::repeat_n(i, events.len()));
            parsed.append(events);
            continue;
        }
        let mark = parsed.len();
        let mut failed = None;
        for (n, line) in crate::sink::split_lines(&record.payload)
            .filter(|l| !l.is_empty())
            .enumerate()
        {
            match serde_json::from_slice::<Value>(line) {
                Ok(data @ Value::Object(_)) => {
                    let mut event =
                        Event::new(data, Metadata::new(event_type, record.received_at_ms));
                    crate::sink::pipeline::unwrap(&mut event);
                    parsed.push(event);
                }
                Ok(_) => failed = Some(format!("line {}: not a JSON object", n + 1)),
                Err(e) => failed = Some(format!("line {}: {e}", n + 1)),
            }
            if failed.is_some() {
                break;
            }
        }
        match failed {
            None => out
                .owners
                .extend(std::iter::repeat_n(i, parsed.len() - mark)),
            Some(reason) => {
                parsed.truncate(mark);
                tracing::debug!(pipeline, origin = %record.origin, %reason, "dead-lettering record");
                out.dead.push((
                    i,
                    dlq::entry(pipeline, rejected(record, content_type.as_deref()), &reason),
                ));
            }
        }
    }
    out.parsed = Some(parsed);
    out
}

/// The type of a record's events: what its content type says for the OTLP sources
/// (`application/x-protobuf; otlp=traces`), else the source's.
fn event_type_of(content_type: Option<&str>, source: &'static str) -> &'static str {
    match content_type.and_then(|t| t.split("otlp=").nth(1)) {
        Some(signal) if signal.starts_with("traces") => "TRACE",
        Some(signal) if signal.starts_with("metrics") => "METRIC",
        Some(signal) if signal.starts_with("logs") => "LOG",
        _ => source,
    }
}

/// Checks that each text is one JSON object and appends it as one line. The plugin's text is
/// kept as it is (validated, not rebuilt) unless it spans lines.
pub(crate) fn append_events(texts: &Events, out: &mut Vec<u8>) -> Result<(), String> {
    for (i, text) in texts.iter().enumerate() {
        // One pass checks the text (the scan; serde_json only to word a refusal), and the same
        // bytes are copied into the line.
        let raw = match sluice_scan::object(text) {
            Some(object) => &text[object],
            None => return Err(not_an_object(i, text)),
        };
        if raw.contains(&b'\n') {
            // Whitespace between tokens (strings cannot hold a raw newline): re-serialize.
            let v: Value = serde_json::from_slice(raw).map_err(|e| e.to_string())?;
            out.extend_from_slice(v.to_string().as_bytes());
        } else {
            out.extend_from_slice(raw);
        }
        out.push(b'\n');
    }
    Ok(())
}

/// Why event `i` (refused by the scan) is not one JSON object, in serde_json's words.
fn not_an_object(i: usize, text: &[u8]) -> String {
    match serde_json::from_slice::<&serde_json::value::RawValue>(text) {
        Err(e) => format!("plugin returned event {i} that is not valid JSON: {e}"),
        Ok(_) => format!("plugin returned event {i} that is not a JSON object"),
    }
}

/// Sets the field at `path` of `data` (an object), making the objects on the way (Data
/// Prepper's `event.put("s3/bucket", ...)`); a value on the way that is no object is
/// replaced by one.
fn put(data: &mut Value, path: &[String], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut at = data;
    for part in parents {
        let Value::Object(map) = at else {
            return;
        };
        let next = map
            .entry(part.clone())
            .or_insert_with(|| Value::Object(Map::new()));
        if !next.is_object() {
            *next = Value::Object(Map::new());
        }
        at = next;
    }
    if let Value::Object(map) = at {
        map.insert(last.clone(), value);
    }
}

#[cfg(test)]
mod connected_tests {
    use serde_json::json;
    use sluice_event::Metadata;

    use super::*;

    fn record(payload: &[u8]) -> RawRecord {
        RawRecord {
            payload: payload.to_vec(),
            key: None,
            received_at_ms: 5,
            origin: "pipeline:up".into(),
        }
    }

    #[test]
    fn events_from_a_pipeline_come_back_with_their_metadata_and_a_bad_record_is_dead_lettered_whole()
     {
        let mut tagged = Metadata::new("TRACE", 1);
        tagged.add_tag("t");
        let mut good = crate::sink::pipeline::wrap(&json!({"a": 1}), &tagged);
        good.push(b'\n');
        good.extend_from_slice(br#"{"b": 2}"#);
        let records = [record(&good), record(b"{\"c\": 3}\n[4]\n")];
        let mut split = split_connected("p", "LOG", &records, &[None, None], Vec::new());
        assert_eq!(split.owners, [0, 0]);
        let events = split.parsed().clone();
        assert_eq!(events[0], Event::new(json!({"a": 1}), tagged));
        assert_eq!(
            events[1],
            Event::new(json!({"b": 2}), Metadata::new("LOG", 5)),
            "a line without metadata keeps the record's"
        );
        assert_eq!(split.dead.len(), 1);
        assert_eq!(split.dead[0].1["reason"], "line 2: not a JSON object");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(n: u8) -> RawRecord {
        RawRecord {
            payload: vec![b'0' + n],
            key: None,
            received_at_ms: u64::from(n),
            origin: format!("test:{n}"),
        }
    }

    fn events(texts: &[&str]) -> Decoded {
        Decoded::Events(
            texts
                .iter()
                .map(|t| (*t).to_owned())
                .collect::<Vec<_>>()
                .into(),
        )
    }

    fn run(decoded: Vec<Decoded>) -> Split {
        let records: Vec<RawRecord> = (0..decoded.len() as u8).map(record).collect();
        let types = vec![Some("application/json".to_owned()); records.len()];
        split_outcomes("p", "LOG", &records, &types, decoded)
    }

    fn reasons(split: &Split) -> Vec<(&str, &str)> {
        split
            .dead
            .iter()
            .map(|(_, d)| (d["origin"].as_str().unwrap(), d["reason"].as_str().unwrap()))
            .collect()
    }

    #[test]
    fn events_of_good_records_become_lines_in_record_order() {
        let split = run(vec![
            events(&[r#"{"a":1}"#, r#" {"b":2} "#]),
            events(&[]),
            events(&[r#"{"c":3}"#]),
        ]);
        assert_eq!(
            String::from_utf8(split.events.clone()).unwrap(),
            "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n"
        );
        assert_eq!(split.event_count(), 3);
        assert!(split.dead.is_empty());
    }

    #[test]
    fn an_event_spanning_lines_is_rewritten_on_one() {
        let split = run(vec![events(&["{\n  \"a\": \"x y\"\n}"])]);
        assert_eq!(split.events, b"{\"a\":\"x y\"}\n");
    }

    #[test]
    fn a_record_with_one_bad_event_is_dead_lettered_whole() {
        let split = run(vec![
            events(&[r#"{"ok":1}"#]),
            events(&[r#"{"kept":false}"#, "not json"]),
            events(&[r#"{"ok":2}"#, "[1,2]"]),
        ]);
        assert_eq!(
            String::from_utf8(split.events.clone()).unwrap(),
            "{\"ok\":1}\n",
            "no event of a rejected record reaches the sinks"
        );
        assert_eq!(split.event_count(), 1);
        let reasons = reasons(&split);
        assert_eq!(reasons.len(), 2);
        assert_eq!(reasons[0].0, "test:1");
        assert!(
            reasons[0]
                .1
                .starts_with("plugin returned event 1 that is not valid JSON"),
            "{}",
            reasons[0].1
        );
        assert_eq!(
            reasons[1],
            (
                "test:2",
                "plugin returned event 1 that is not a JSON object"
            )
        );
    }

    #[test]
    fn an_event_a_value_cannot_hold_leaves_the_parsed_batch_with_its_reason() {
        let mut split = run(vec![
            events(&[r#"{"n":1}"#]),
            events(&[r#"{"big":1e400}"#, r#"{"n":2}"#]),
        ]);
        let parsed: Vec<Value> = split.parsed().iter().map(|e| e.data.clone()).collect();
        assert_eq!(
            parsed,
            [serde_json::json!({"n": 1}), serde_json::json!({"n": 2})]
        );
        assert_eq!(split.owners, [0, 1]);
        assert_eq!(split.event_count(), 2);
        let (owner, body, reason) = &split.unreadable[0];
        assert_eq!((*owner, &body[..]), (1, &br#"{"big":1e400}"#[..]));
        assert!(reason.contains("number out of range"), "{reason}");
        split.lines();
        assert_eq!(split.events, b"{\"n\":1}\n{\"n\":2}\n");
    }

    #[test]
    fn malformed_and_trapped_records_are_dead_lettered_with_the_reason() {
        let split = run(vec![
            Decoded::Malformed("expected `=` at column 4".to_owned()),
            events(&[r#"{"n":1}"#]),
            Decoded::Trapped("wasm trap: unreachable".to_owned()),
        ]);
        assert_eq!(split.event_count(), 1);
        assert_eq!(
            reasons(&split),
            [
                ("test:0", "expected `=` at column 4"),
                ("test:2", "plugin trapped: wasm trap: unreachable"),
            ]
        );
        let first = &split.dead[0].1;
        assert_eq!(first["payload"], "MA==", "the original bytes, base64");
        assert_eq!(first["content_type"], "application/json");
        assert_eq!(first["pipeline"], "p");
    }
}

#[cfg(test)]
mod decorate_tests {
    use std::sync::Arc;

    use serde_json::json;
    use sluice_event::Metadata;

    use super::*;
    use crate::source::Decoration;

    fn split(lines: &[&str]) -> Split {
        Split {
            events: lines
                .iter()
                .flat_map(|l| format!("{l}\n").into_bytes())
                .collect(),
            owners: (0..lines.len()).collect(),
            metadata: vec![Metadata::new("LOG", 1); lines.len()],
            ..Split::default()
        }
    }

    fn object(bucket: &str) -> Arc<Decoration> {
        Arc::new(Decoration {
            attributes: [("a".to_owned(), json!(1))].into_iter().collect(),
            fields: vec![
                (vec!["s3".into(), "bucket".into()], json!(bucket)),
                (vec!["s3".into(), "key".into()], json!("k")),
            ],
        })
    }

    #[test]
    fn fields_go_into_the_text_unparsed_when_no_event_has_their_keys() {
        let mut s = split(&[r#"{"m":"x"}"#, "{}", r#"{"m":"y"}"#]);
        let (one, two) = (object("b1"), object("b2"));
        s.decorate(&[one.clone(), one, two]);
        assert!(s.parsed.is_none(), "not parsed");
        assert_eq!(
            String::from_utf8(s.events.clone()).unwrap(),
            "{\"m\":\"x\",\"s3\":{\"bucket\":\"b1\",\"key\":\"k\"}}\n\
             {\"s3\":{\"bucket\":\"b1\",\"key\":\"k\"}}\n\
             {\"m\":\"y\",\"s3\":{\"bucket\":\"b2\",\"key\":\"k\"}}\n"
        );
        assert_eq!(s.metadata[2].attributes["a"], 1);
    }

    #[test]
    fn an_event_that_has_a_key_already_gets_it_replaced_as_data_prepper_puts_it() {
        let mut s = split(&[r#"{"m":"x"}"#, r#"{"s3":"old","n":1}"#]);
        let d = object("b");
        s.decorate(&[d.clone(), d]);
        let events = s.parsed().clone();
        assert_eq!(
            events[0].data,
            json!({"m": "x", "s3": {"bucket": "b", "key": "k"}})
        );
        assert_eq!(
            events[1].data,
            json!({"s3": {"bucket": "b", "key": "k"}, "n": 1})
        );
    }
}
