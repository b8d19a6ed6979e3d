//! One event: its data, a JSON object, and its metadata, which travels beside the data through
//! every stage (it is not part of what the sinks write unless a sink asks, `tags_target_key`).

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::key::Key;

/// An event: a JSON object and what Data Prepper keeps beside it.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// The event's data; always a JSON object.
    pub data: Value,
    pub metadata: Metadata,
}

/// What Data Prepper's `EventMetadata` holds: read by `getEventType()`, `getMetadata("k")`,
/// `hasTags("t")`; set by sources (the type, the time) and built-in processors
/// (`tags_on_failure`, attributes). Plugin processors (contract 0.2) do not see it yet.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Metadata {
    /// `LOG`, `TRACE`, `METRIC`, ... as the source sets it (`getEventType()`). Borrowed:
    /// every event of a source has the same, and a batch makes one per event.
    pub event_type: Cow<'static, str>,
    /// When the source received the record the event came from, in milliseconds since the
    /// Unix epoch.
    pub time_received_ms: u64,
    /// Attributes (`getMetadata("key")`), set by processors.
    pub attributes: Map<String, Value>,
    /// Tags, in the order they were first added, each once (`hasTags`).
    pub tags: Vec<String>,
    /// When what the event records happened, in milliseconds since the Unix epoch (negative
    /// before 1970), as the `date` processor read it with `origination_timestamp_to_metadata`
    /// (Data Prepper's `EventMetadata.getExternalOriginationTime()`); none until then. Nothing
    /// reads it yet.
    pub external_origination_time_ms: Option<i64>,
}

impl Metadata {
    /// Metadata of an event of type `event_type` received at `time_received_ms`.
    pub fn new(event_type: impl Into<Cow<'static, str>>, time_received_ms: u64) -> Self {
        Self {
            event_type: event_type.into(),
            time_received_ms,
            attributes: Map::new(),
            tags: Vec::new(),
            external_origination_time_ms: None,
        }
    }

    /// Adds `tag` unless the event has it.
    pub fn add_tag(&mut self, tag: &str) {
        if !self.has_tag(tag) {
            self.tags.push(tag.to_owned());
        }
    }

    /// Adds each of `tags` (as `tags_on_failure` does).
    pub fn add_tags(&mut self, tags: &[String]) {
        for tag in tags {
            self.add_tag(tag);
        }
    }

    pub fn has_tag(&self, tag: &str) -> bool {
        self.tags.iter().any(|t| t == tag)
    }
}

impl Event {
    /// An event of `data` (a JSON object) with `metadata`.
    pub fn new(data: Value, metadata: Metadata) -> Self {
        debug_assert!(data.is_object(), "an event's data is a JSON object");
        Self { data, metadata }
    }

    /// The value at `key`, if there is one.
    pub fn get(&self, key: &Key) -> Option<&Value> {
        key.get(&self.data)
    }

    /// The value at `key` to change in place, if there is one.
    pub fn get_mut(&mut self, key: &Key) -> Option<&mut Value> {
        key.get_mut(&mut self.data)
    }

    /// Whether there is a value (possibly `null`) at `key`.
    pub fn contains(&self, key: &Key) -> bool {
        self.get(key).is_some()
    }

    /// Sets `key` to `value`, making the objects on the way; fails (changing nothing) when a
    /// value on the way is not an object.
    pub fn put(&mut self, key: &Key, value: Value) -> Result<(), crate::key::PutError> {
        key.put(&mut self.data, value)
    }

    /// Removes and returns the value at `key`.
    pub fn delete(&mut self, key: &Key) -> Option<Value> {
        key.delete(&mut self.data)
    }
}
