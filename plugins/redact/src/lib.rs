//! `redact`: an example processor. Every top-level key named in the `keys` option has its value
//! replaced by `"***"`; an event without such a key is kept as it is (nothing is copied back).
//! An event fails with a reason (and goes to the dead-letter file) when it is not a JSON object,
//! or when a named key holds an object or a list: masking it whole would hide its structure
//! from whoever reads the dead end, so the operator decides.
//!
//! ```yaml
//! processor:
//!   - redact:
//!       keys: ["password", "token"]
//! ```

wit_bindgen::generate!({ world: "processor-plugin", path: "../../wit/v0.2" });

use std::cell::RefCell;

use exports::sluice::plugin::configure::Guest as Configure;
use exports::sluice::plugin::processor::{Event, Guest, Reply, Verdict};
use serde_json::{Map, Value};
use sluice::plugin::types::{EventRef, OptionEntry, Span};

thread_local! {
    /// The keys to mask, from `configure`.
    static KEYS: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

struct Redact;

impl Configure for Redact {
    fn configure(options: Vec<OptionEntry>) -> Result<(), String> {
        let mut keys = None;
        for o in options {
            match o.key.as_str() {
                "keys" => {
                    let list: Vec<String> = serde_json::from_str(&o.value).map_err(|_| {
                        format!("`keys` must be a list of key names, got `{}`", o.value)
                    })?;
                    keys = Some(list);
                }
                other => return Err(format!("unknown option `{other}`: redact takes `keys`")),
            }
        }
        let keys = keys.ok_or("`keys` is required: the keys whose values to mask")?;
        KEYS.with(|k| *k.borrow_mut() = keys);
        Ok(())
    }
}

impl Guest for Redact {
    fn process(data: Vec<u8>, events: Vec<Event>) -> Reply {
        KEYS.with(|keys| {
            let keys = keys.borrow();
            let mut out = Vec::new();
            let mut replaced = Vec::new();
            let verdicts = events
                .iter()
                .map(|e| {
                    let body = &data[e.body.offset as usize..][..e.body.len as usize];
                    let mut event: Map<String, Value> = match serde_json::from_slice(body) {
                        Ok(event) => event,
                        Err(err) => return Verdict::Failed(format!("not a JSON object: {err}")),
                    };
                    let mut changed = false;
                    for key in keys.iter() {
                        match event.get_mut(key) {
                            Some(Value::Object(_) | Value::Array(_)) => {
                                return Verdict::Failed(format!(
                                    "`{key}` holds an object or a list; redact masks single values only"
                                ));
                            }
                            Some(value) => {
                                *value = Value::from("***");
                                changed = true;
                            }
                            None => {}
                        }
                    }
                    if !changed {
                        return Verdict::Keep;
                    }
                    let offset = out.len() as u32;
                    serde_json::to_writer(&mut out, &event).expect("a map serializes");
                    replaced.push(EventRef::Output(Span {
                        offset,
                        len: out.len() as u32 - offset,
                    }));
                    Verdict::Replace(1)
                })
                .collect();
            Reply {
                data: out,
                events: replaced,
                verdicts,
            }
        })
    }
}

export!(Redact);
