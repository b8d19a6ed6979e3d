//! `{{name}}`: a processor that shows every verdict. Build: `sluice plugins build .`
//!
//! ```yaml
//! processor:
//!   - {{name}}:
//!       tag: blue          # required: written into every event as "tag"
//!       drop_level: debug  # optional: events whose "level" is this are dropped
//!       split: items       # optional: an event whose "items" is a list becomes one event per item
//! ```
//!
//! Per event: `level` equal to `drop_level` -> drop; already holding this `tag` -> keep (nothing
//! is copied back); a `split` field that is not a list -> failed; otherwise replaced by the
//! event (one per item with `split`) with `tag` and `received_at_ms` added.

wit_bindgen::generate!({ world: "processor-plugin", path: "wit" });

use std::cell::RefCell;

use exports::sluice::plugin::configure::Guest as Configure;
use exports::sluice::plugin::processor::{Event, Guest, Reply, Verdict};
use serde_json::{Map, Value};
use sluice::plugin::types::{EventRef, OptionEntry, Span};

/// The options, from `configure` (called on every new instance before the first batch).
#[derive(Default)]
struct Options {
    tag: String,
    drop_level: Option<String>,
    split: Option<String>,
}

thread_local! {
    static OPTIONS: RefCell<Options> = RefCell::new(Options::default());
}

struct Plugin;

impl Configure for Plugin {
    fn configure(options: Vec<OptionEntry>) -> Result<(), String> {
        let (mut tag, mut drop_level, mut split) = (None, None, None);
        for o in options {
            match o.key.as_str() {
                "tag" => tag = Some(o.value),
                "drop_level" => drop_level = Some(o.value),
                "split" => split = Some(o.value),
                other => {
                    return Err(format!(
                        "unknown option `{other}`; {{name}} takes `tag`, `drop_level` and `split`"
                    ));
                }
            }
        }
        let tag = tag.ok_or("option `tag` is required: the value written into every event")?;
        OPTIONS.with(|o| *o.borrow_mut() = Options { tag, drop_level, split });
        Ok(())
    }
}

/// The reply under construction: new events are written into `data` and pointed at.
#[derive(Default)]
struct Out {
    data: Vec<u8>,
    events: Vec<EventRef>,
}

impl Out {
    fn push(&mut self, event: &Map<String, Value>) {
        let offset = self.data.len() as u32;
        serde_json::to_writer(&mut self.data, event).expect("a map serializes");
        let len = self.data.len() as u32 - offset;
        self.events.push(EventRef::Output(Span { offset, len }));
    }
}

impl Guest for Plugin {
    fn process(data: Vec<u8>, events: Vec<Event>) -> Reply {
        OPTIONS.with(|options| {
            let options = options.borrow();
            let mut out = Out::default();
            let verdicts = events
                .iter()
                .map(|e| {
                    let body = &data[e.body.offset as usize..][..e.body.len as usize];
                    verdict(&options, body, e.received_at_ms, &mut out)
                })
                .collect();
            Reply {
                data: out.data,
                events: out.events,
                verdicts,
            }
        })
    }
}

fn verdict(options: &Options, body: &[u8], received_at_ms: u64, out: &mut Out) -> Verdict {
    let Ok(mut event) = serde_json::from_slice::<Map<String, Value>>(body) else {
        return Verdict::Failed("not a JSON object".into());
    };
    let level = event.get("level").and_then(Value::as_str);
    if level.is_some() && level == options.drop_level.as_deref() {
        return Verdict::Drop;
    }
    if event.get("tag").and_then(Value::as_str) == Some(options.tag.as_str()) {
        return Verdict::Keep;
    }
    event.insert("tag".into(), options.tag.clone().into());
    event.insert("received_at_ms".into(), received_at_ms.into());
    let Some(field) = &options.split else {
        out.push(&event);
        return Verdict::Replace(1);
    };
    match event.get(field) {
        None => {
            out.push(&event);
            Verdict::Replace(1)
        }
        Some(Value::Array(items)) => {
            let items = items.clone();
            for item in &items {
                event.insert(field.clone(), item.clone());
                out.push(&event);
            }
            Verdict::Replace(items.len() as u32)
        }
        Some(_) => Verdict::Failed(format!("field `{field}` is not a list")),
    }
}

export!(Plugin);
