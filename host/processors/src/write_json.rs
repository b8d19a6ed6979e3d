//! `write_json`, as Data Prepper's `WriteJsonProcessor`: the value at `source`, when there is
//! one and it is not `null`, is written as compact JSON text (keys in the event's order) to
//! `target` (default: `source` itself). A value that cannot be put there (`target` under a
//! value that is not an object) is logged and counted in `sluice_writeJsonFailedCounter`
//! (Data Prepper's `writeJsonFailedCounter`); the event goes on as it was. Data Prepper has no
//! condition and no `tags_on_failure` for it, nor has this.

use sluice_config::processor::write_json as config;
use sluice_event::Event;

use crate::{Apply, BuildError, BuildProcessor, Failure, Fate};

/// `write_json`, built: its config and its failure counter.
pub struct WriteJson {
    config: config::WriteJson,
    failed: metrics::Counter,
}

impl BuildProcessor for config::WriteJson {
    type Processor = WriteJson;

    fn build(&self) -> Result<WriteJson, BuildError> {
        Ok(WriteJson {
            config: self.clone(),
            failed: metrics::counter!("sluice_writeJsonFailedCounter", "processor" => "write_json"),
        })
    }
}

impl Apply for WriteJson {
    fn apply(&self, event: &mut Event, _: &'static str) -> Result<Fate, Failure> {
        let text = match event.get(&self.config.source) {
            None | Some(serde_json::Value::Null) => return Ok(Fate::Keep),
            Some(value) => value.to_string(),
        };
        event
            .put(self.config.target(), serde_json::Value::String(text))
            .map_err(|e| {
                self.failed.increment(1);
                Failure::untagged(format!("cannot write the JSON text: {e}"))
            })?;
        Ok(Fate::Keep)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::testing::{invalid, processor, run};

    #[test]
    fn writes_the_value_as_json_text() {
        let p = processor("write_json:\n  source: details\n  target: /out/json");
        assert_eq!(
            run(&*p, json!({"details": {"b": [1, 2.5, true], "a": "x\"y"}})),
            Some(json!({
                "details": {"b": [1, 2.5, true], "a": "x\"y"},
                "out": {"json": "{\"b\":[1,2.5,true],\"a\":\"x\\\"y\"}"}
            }))
        );
        let p = processor("write_json:\n  source: payload");
        assert_eq!(
            run(&*p, json!({"payload": "text"})),
            Some(json!({"payload": "\"text\""}))
        );
        assert_eq!(
            run(&*p, json!({"payload": null})),
            Some(json!({"payload": null}))
        );
        assert_eq!(run(&*p, json!({"other": 1})), Some(json!({"other": 1})));
    }

    #[test]
    fn a_target_that_cannot_be_written_leaves_the_event() {
        let p = processor("write_json:\n  source: a\n  target: b/c");
        assert_eq!(
            run(&*p, json!({"a": [1], "b": "text"})),
            Some(json!({"a": [1], "b": "text"}))
        );
    }

    #[test]
    fn source_is_required() {
        let e = invalid("write_json:\n  target: t");
        assert!(e.contains("missing field `source`"), "{e}");
        let e = invalid("write_json:\n  source: /");
        assert!(e.contains("write_json.source` is empty or `/`"), "{e}");
    }
}
