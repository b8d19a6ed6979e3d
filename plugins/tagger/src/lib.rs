//! `tagger`: an example processor of contract 0.3, which reads and sets event metadata. It
//! never changes an event's text (every verdict is `keep`, nothing is copied back); it adds
//! tags and metadata attributes that conditions and routes read (`hasTags("error")`,
//! `getMetadata("level")`) and sinks can write out (`tags_target_key`).
//!
//! ```yaml
//! processor:
//!   - tagger:
//!       tags: ["tagged"]          # optional: added to every event
//!       tag_from_key: level       # optional: the value of this top-level key (a string) is added as a tag
//!       attributes_from_keys: [tenant]  # optional: each key's value becomes the attribute of that name
//!       count_tags_into: tag_count      # optional: attribute set to how many tags the event had when it came in
//! ```
//!
//! The tags the event came with (from `tags_on_failure`, `add_entries`, an earlier tagger) are
//! kept: new ones are added after them, each once. An event that is not a JSON object fails.

wit_bindgen::generate!({ world: "processor-plugin", path: "../../wit/v0.3" });

use std::cell::RefCell;

use exports::sluice::plugin::configure::Guest as Configure;
use exports::sluice::plugin::processor::{Event, Guest, Metadata, Reply, Verdict};
use serde_json::{Map, Value};
use sluice::plugin::types::OptionEntry;

/// The options, from `configure`.
#[derive(Default)]
struct Options {
    tags: Vec<String>,
    tag_from_key: Option<String>,
    attributes_from_keys: Vec<String>,
    count_tags_into: Option<String>,
}

thread_local! {
    static OPTIONS: RefCell<Options> = RefCell::new(Options::default());
}

struct Tagger;

/// A list option: JSON text of a list of strings.
fn list(key: &str, value: &str) -> Result<Vec<String>, String> {
    serde_json::from_str(value)
        .map_err(|_| format!("`{key}` must be a list of strings, got `{value}`"))
}

impl Configure for Tagger {
    fn configure(options: Vec<OptionEntry>) -> Result<(), String> {
        let mut parsed = Options::default();
        for o in options {
            match o.key.as_str() {
                "tags" => parsed.tags = list("tags", &o.value)?,
                "tag_from_key" => parsed.tag_from_key = Some(o.value),
                "attributes_from_keys" => {
                    parsed.attributes_from_keys = list("attributes_from_keys", &o.value)?;
                }
                "count_tags_into" => parsed.count_tags_into = Some(o.value),
                other => {
                    return Err(format!(
                        "unknown option `{other}`: tagger takes `tags`, `tag_from_key`, \
                         `attributes_from_keys` and `count_tags_into`"
                    ));
                }
            }
        }
        OPTIONS.with(|o| *o.borrow_mut() = parsed);
        Ok(())
    }
}

/// `event`'s metadata with what `options` add, or `None` when nothing changes; `Err` when the
/// event is not a JSON object.
fn tagged(options: &Options, data: &[u8], event: &Event) -> Result<Option<Metadata>, String> {
    let body = &data[event.body.offset as usize..][..event.body.len as usize];
    let fields: Map<String, Value> =
        serde_json::from_slice(body).map_err(|e| format!("not a JSON object: {e}"))?;
    let old = &event.metadata;
    let mut tags = old.tags.clone();
    let mut add = |tag: &str| {
        if !tags.iter().any(|t| t == tag) {
            tags.push(tag.to_owned());
        }
    };
    options.tags.iter().for_each(|t| add(t));
    if let Some(Value::String(tag)) = options.tag_from_key.as_ref().and_then(|k| fields.get(k)) {
        add(tag);
    }
    let mut attributes: Map<String, Value> = serde_json::from_str(&old.attributes)
        .map_err(|e| format!("the host sent attributes that are not a JSON object: {e}"))?;
    let before = attributes.clone();
    for key in &options.attributes_from_keys {
        if let Some(value) = fields.get(key) {
            attributes.insert(key.clone(), value.clone());
        }
    }
    if let Some(into) = &options.count_tags_into {
        attributes.insert(into.clone(), Value::from(old.tags.len()));
    }
    if tags == old.tags && attributes == before {
        return Ok(None);
    }
    Ok(Some(Metadata {
        event_type: old.event_type.clone(),
        tags,
        attributes: Value::Object(attributes).to_string(),
    }))
}

impl Guest for Tagger {
    fn process(data: Vec<u8>, events: Vec<Event>) -> Reply {
        OPTIONS.with(|options| {
            let options = options.borrow();
            let mut metadata = Vec::new();
            let verdicts = events
                .iter()
                .enumerate()
                .map(|(i, event)| match tagged(&options, &data, event) {
                    Ok(Some(m)) => {
                        metadata.push((i as u32, m));
                        Verdict::Keep
                    }
                    Ok(None) => Verdict::Keep,
                    Err(reason) => Verdict::Failed(reason),
                })
                .collect();
            Reply {
                data: Vec::new(),
                events: Vec::new(),
                verdicts,
                metadata,
            }
        })
    }
}

export!(Tagger);
