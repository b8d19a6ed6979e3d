//! Each event as the sink sends it: its bulk action line (action, index, id, routing,
//! version, all from the whole event with its metadata), a newline, and its document (after
//! `document_root_key`, then the sink's `include_keys`/`exclude_keys`/`tags_target_key`), as
//! Data Prepper's `BulkIngester` and `DocumentBuilder` make them. An event whose index, action
//! or version cannot be made becomes an error line that the sink dead-letters with the reason.

use serde_json::{Map, Value};
use sluice_config::sink::opensearch::{
    Action, ActionSource, IndexName, OpenSearchSettings, ValueSource, VersionType,
};
use sluice_event::{Event, Expression, Key, Template};

use crate::sink::Shape;

/// The key of an error line's only member.
pub(super) const ERROR_KEY: &str = "_sluice_error";

/// The action metadata key that marks a document to look up first (`query_lookup`), with the
/// value of its `query_term`; the sink removes it before sending.
pub(super) const LOOKUP_KEY: &str = "_sluice_lookup";

/// What makes each event's line.
pub(super) struct Encoder {
    /// `None`: the index type's alias (already the whole name).
    index: Option<IndexName>,
    /// The name for the types with their own alias.
    alias: String,
    normalize: bool,
    actions: Vec<(ActionSource, Option<Expression>)>,
    document_id: Option<ValueSource>,
    routing: Option<ValueSource>,
    pipeline: Option<Template>,
    version: Option<Template>,
    version_type: Option<VersionType>,
    root: Option<Key>,
    lookup: Option<sluice_config::sink::opensearch::Lookup>,
    /// Fill the date pattern from the record's receive time (so a record read again goes to the
    /// same index), not the clock.
    receive_time: bool,
}

impl Encoder {
    pub(super) fn new(s: &OpenSearchSettings, alias: &str, forced_id: Option<Template>) -> Self {
        Self {
            index: s.index.clone(),
            alias: alias.to_owned(),
            normalize: s.normalize_index,
            actions: s.actions.clone(),
            // Data Prepper: `document_id_field` first, then the type's id, then `document_id`.
            document_id: match (&s.document_id, forced_id) {
                (Some(ValueSource::Field(k)), _) => Some(ValueSource::Field(k.clone())),
                (_, Some(forced)) => Some(ValueSource::Format(forced)),
                (other, None) => other.clone(),
            },
            routing: s.routing.clone(),
            pipeline: s.pipeline.clone(),
            version: s.document_version.clone(),
            version_type: s.version_type,
            root: s.document_root_key.clone(),
            lookup: s.query_lookup.clone(),
            receive_time: s.exactly_once,
        }
    }

    /// The index `event` goes to.
    pub(super) fn index(&self, event: &Event) -> Result<String, String> {
        let Some(index) = &self.index else {
            return Ok(self.alias.clone());
        };
        let mut name = index
            .format
            .render(event)
            .map_err(|e| format!("the index `{}` could not be made: {e}", index.format.as_str()))?;
        if let Some(date) = &index.date {
            let ms = if self.receive_time {
                event.metadata.time_received_ms as i64
            } else {
                chrono::Utc::now().timestamp_millis()
            };
            let time = chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default();
            name = name.replacen("%{}", &time.format(date).to_string(), 1);
        }
        if self.normalize && index.dynamic {
            name = normalize(&name)?;
        }
        Ok(name)
    }

    fn action(&self, event: &Event) -> Result<Action, String> {
        let chosen = self
            .actions
            .iter()
            .find(|(_, when)| {
                when.as_ref()
                    .is_some_and(|w| w.matches(event).unwrap_or(false))
            })
            .or(self.actions.last())
            .map(|(action, _)| action);
        match chosen {
            None => Ok(Action::Index),
            Some(ActionSource::Fixed(a)) => Ok(*a),
            Some(ActionSource::Format(t)) => {
                let name = t.render(event).map_err(|e| e.to_string())?;
                Action::parse(&name).ok_or_else(|| {
                    format!(
                        "the action `{}` gave `{name}`, which is none of create, upsert, update, delete, index",
                        t.as_str()
                    )
                })
            }
        }
    }

    /// The line of `event`, or why there is none.
    fn line(
        &self,
        event: &Event,
        shape: Option<Shape<'_>>,
    ) -> Result<Vec<u8>, String> {
        let index = self.index(event)?;
        let action = self.action(event)?;
        let mut meta = Map::new();
        meta.insert("_index".into(), Value::String(index));
        if let Some(id) = value(&self.document_id, event) {
            meta.insert("_id".into(), Value::String(id));
        }
        if let Some(routing) = value(&self.routing, event) {
            meta.insert("routing".into(), Value::String(routing));
        }
        if matches!(action, Action::Index | Action::Create)
            && let Some(pipeline) = self.pipeline.as_ref().and_then(|p| p.render(event).ok())
            && !pipeline.is_empty()
        {
            meta.insert("pipeline".into(), Value::String(pipeline));
        }
        if let Some(lookup) = &self.lookup
            && lookup.when.matches(event).unwrap_or(false)
            && let Some(term) = event.get(&lookup.term).filter(|v| !v.is_null())
        {
            meta.insert(LOOKUP_KEY.into(), term.clone());
        }
        if action != Action::Create {
            if let Some(version) = &self.version {
                let text = version.render(event).map_err(|e| {
                    format!(
                        "there was an exception when evaluating the document_version `{}`: {e}",
                        version.as_str()
                    )
                })?;
                let number: i64 = text.trim().parse().map_err(|_| {
                    format!(
                        "the document_version `{}` gave `{text}`, which is not a whole number",
                        version.as_str()
                    )
                })?;
                meta.insert("version".into(), Value::from(number));
            }
            if let Some(t) = self.version_type {
                meta.insert("version_type".into(), Value::String(t.as_str().into()));
            }
        }
        let op = match action {
            Action::Index => "index",
            Action::Create => "create",
            Action::Update | Action::Upsert => "update",
            Action::Delete => "delete",
        };
        let mut out = serde_json::to_vec(&Value::Object(Map::from_iter([(
            op.to_owned(),
            Value::Object(meta),
        )])))
        .expect("JSON serializes");
        if action == Action::Delete {
            return Ok(out);
        }
        let document = self.document(event, shape);
        let body = match action {
            Action::Update => serde_json::json!({ "doc": document }),
            Action::Upsert => serde_json::json!({ "doc": document, "upsert": document }),
            _ => document,
        };
        out.push(b'\n');
        serde_json::to_writer(&mut out, &body).expect("JSON serializes");
        Ok(out)
    }

    /// The document: the root key's value (or the event), shaped; `{"data": value}` when it is
    /// not an object.
    fn document(
        &self,
        event: &Event,
        shape: Option<Shape<'_>>,
    ) -> Value {
        let base = self
            .root
            .as_ref()
            .and_then(|k| event.get(k))
            .unwrap_or(&event.data);
        match (base, shape) {
            (Value::Object(object), Some(shape)) => shape(object),
            (Value::Object(_), None) => base.clone(),
            (other, _) => serde_json::json!({ "data": other }),
        }
    }
}

impl crate::sink::Encode for Encoder {
    fn encode(
        &self,
        event: &Event,
        shape: Option<Shape<'_>>,
    ) -> Vec<u8> {
        self.line(event, shape).unwrap_or_else(|reason| {
            serde_json::to_vec(&serde_json::json!({ ERROR_KEY: reason, "document": event.data }))
                .expect("JSON serializes")
        })
    }
}

/// An `_id` or routing: a key's value, or a format; none when it cannot be made (Data
/// Prepper lets OpenSearch choose then) or is empty.
fn value(source: &Option<ValueSource>, event: &Event) -> Option<String> {
    let text = match source.as_ref()? {
        ValueSource::Field(key) => {
            let mut out = String::new();
            sluice_event::template::push_text(&mut out, event.get(key)?);
            out
        }
        ValueSource::Format(t) => t.render(event).ok()?,
    };
    (!text.is_empty()).then_some(text)
}

/// Data Prepper's `normalize_index`: lower case, without `: " * + / \ | ? # > <`, without
/// leading `_` and `-`.
pub(super) fn normalize(name: &str) -> Result<String, String> {
    let cleaned: String = name
        .to_lowercase()
        .chars()
        .filter(|c| !":\"*+/\\|?#><".contains(*c))
        .collect();
    let cleaned = cleaned.trim_start_matches(['_', '-']).to_owned();
    if cleaned.is_empty() {
        return Err(format!(
            "unable to normalize index `{name}`: the result after normalization was an empty string"
        ));
    }
    Ok(cleaned)
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use sluice_config::Resolve;
    use sluice_config::sink::opensearch::OpenSearchSink;
    use sluice_event::Metadata;

    use super::*;
    use crate::sink::Encode;

    fn encoder(yaml: &str) -> Encoder {
        let config: OpenSearchSink = serde_yaml::from_str(yaml).unwrap();
        Encoder::new(&config.resolve("p").unwrap(), "", None)
    }

    fn event(data: Value) -> Event {
        let mut metadata = Metadata::new("LOG", 1_767_225_600_000); // 2026-01-01T00:00:00Z
        metadata.tags = vec!["t1".into()];
        Event::new(data, metadata)
    }

    fn lines(out: Vec<u8>) -> Vec<Value> {
        out.split(|&b| b == b'\n')
            .map(|l| serde_json::from_slice(l).unwrap())
            .collect()
    }

    #[test]
    fn index_id_routing_come_from_the_event_and_the_date_from_its_receive_time() {
        let e = encoder(
            "hosts: [http://x]\nindex: logs-${/service}-%{yyyy.MM}\ndocument_id: ${/id}\nrouting: ${/service}\npipeline: ingest-${/service}\n",
        );
        let out = e.encode(&event(json!({"service": "web", "id": "a1", "n": 1})), None);
        assert_eq!(
            lines(out),
            [
                json!({"index": {"_index": "logs-web-2026.01", "_id": "a1", "routing": "web", "pipeline": "ingest-web"}}),
                json!({"service": "web", "id": "a1", "n": 1}),
            ]
        );
    }

    #[test]
    fn actions_pick_the_first_true_condition_else_the_last_and_shape_the_body() {
        let e = encoder(
            "hosts: [http://x]\nindex: i\ndocument_id: ${/id}\nactions:\n  - type: delete\n    when: '/op == \"d\"'\n  - type: upsert\n",
        );
        assert_eq!(
            lines(e.encode(&event(json!({"op": "d", "id": "1"})), None)),
            [json!({"delete": {"_index": "i", "_id": "1"}})]
        );
        let shape = |m: &Map<String, Value>| {
            Value::Object(m.iter().filter(|(k, _)| *k != "op").map(|(k, v)| (k.clone(), v.clone())).collect())
        };
        assert_eq!(
            lines(e.encode(&event(json!({"op": "u", "id": "1"})), Some(&shape))),
            [
                json!({"update": {"_index": "i", "_id": "1"}}),
                json!({"doc": {"id": "1"}, "upsert": {"id": "1"}}),
            ]
        );
    }

    #[test]
    fn the_root_key_is_the_document_and_a_bad_version_is_an_error_line() {
        let e = encoder(
            "hosts: [http://x]\nindex: i\ndocument_root_key: inner\ndocument_version: ${/v}\ndocument_version_type: external\n",
        );
        assert_eq!(
            lines(e.encode(&event(json!({"inner": {"a": 1}, "v": 7})), None)),
            [
                json!({"index": {"_index": "i", "version": 7, "version_type": "external"}}),
                json!({"a": 1}),
            ]
        );
        let bad = lines(e.encode(&event(json!({"inner": "text", "v": "x"})), None));
        assert!(bad[0][ERROR_KEY].as_str().unwrap().contains("not a whole number"));
    }

    #[test]
    fn normalize_index_cleans_dynamic_names() {
        let e = encoder("hosts: [http://x]\nindex: '${/name}'\nnormalize_index: true\n");
        let out = lines(e.encode(&event(json!({"name": "_My:Index*"})), None));
        assert_eq!(out[0]["index"]["_index"], "myindex");
        assert!(normalize("_-").is_err());
    }
}
