//! `parse_json`, as Data Prepper's `ParseJsonProcessor`: the text at `source` (a number or
//! boolean as its text) must be a JSON object (what follows it is ignored, as Jackson does);
//! anything else adds `tags_on_failure` and leaves the event as it was. The object (or, with
//! `pointer`, `{last segment: the value there}`) goes to `destination`, whole, or key by key
//! to the top level. `depth` turns objects deeper than it into their JSON text.
//!
//! Without a `destination`, `delete_source` removes the source before the keys are written (a
//! parsed key of the same name survives), and a top-level key that is not a valid key (`a:b`,
//! empty) stops the writing there, logged, untagged: the keys before it stay. With one, the
//! source is removed after. `normalize_keys` does not save an invalid top-level key (Data
//! Prepper checks the key before normalizing) but does normalize nested ones (and with a
//! `destination`, all). A source that is missing or `null` is skipped (tagged when there is a
//! `pointer`, as Data Prepper fails to parse nothing); one that is an object or a list is
//! logged, untagged. Nesting deeper than 128 levels is not parsed (tagged).

use serde_json::{Map, Value};
use sluice_config::processor::parse_json as config;
use sluice_event::{Event, Expression, Key};

use crate::{
    Apply, BuildError, BuildProcessor, Failure, Failures, Fate, java_string, normalize_keys,
};

/// `parse_json`, built: its config as is. `parse_xml` runs the same with its own parser.
pub struct ParseJson {
    pub(crate) config: config::ParseJson,
    /// The text's object (`None`: not one).
    pub(crate) parse: fn(&str) -> Option<Map<String, Value>>,
    /// What the text must be, for the failure (`a JSON object`).
    pub(crate) what: &'static str,
}

impl BuildProcessor for config::ParseJson {
    type Processor = ParseJson;

    fn when(&self) -> Option<&Expression> {
        self.parse_when.as_ref()
    }

    fn tags_on_failure(&self) -> &[String] {
        &self.tags_on_failure
    }

    fn logs_failures(&self) -> bool {
        self.handle_failed_events.logs()
    }

    fn build(&self) -> Result<ParseJson, BuildError> {
        Ok(ParseJson {
            config: self.clone(),
            parse: parse_object,
            what: "a JSON object",
        })
    }
}

impl Apply for ParseJson {
    fn apply(&self, event: &mut Event, _: &'static str) -> Result<Fate, Failure> {
        let config = &self.config;
        let Ok(message) = java_string(event.get(&config.source)) else {
            return Err(Failure::untagged(format!(
                "the source is an object or a list, not {} as text",
                self.what
            )));
        };
        if message.is_none() && config.pointer.is_none() {
            return Ok(Fate::Keep);
        }
        let Some(mut parsed) = message.as_deref().and_then(self.parse) else {
            return Err(Failure::new(format!("the source is not {}", self.what)));
        };
        if config.depth > 0 {
            parsed = stringify_below(parsed, 1, config.depth);
        }
        // Logged only, and the event goes on: a pointer not in the object, a key not written.
        let mut failures = Failures::default();
        if let Some(pointer) = &config.pointer {
            parsed = self.at_pointer(event, parsed, pointer, &mut failures);
        }
        match &config.destination {
            None => {
                if config.delete_source {
                    event.delete(&config.source);
                }
                if let Err(reason) = self.write_to_root(event, parsed) {
                    failures.add(Failure::untagged(reason));
                }
            }
            Some(destination) => {
                if config.overwrite_if_destination_exists || !event.contains(destination) {
                    let mut value = Value::Object(parsed);
                    if config.normalize_keys {
                        value = normalize_keys(value);
                    }
                    if let Err(e) = event.put(destination, value) {
                        failures.add(Failure::untagged(e.to_string()));
                        return failures.into_result();
                    }
                }
                if config.delete_source {
                    event.delete(&config.source);
                }
            }
        }
        failures.into_result()
    }
}

impl ParseJson {
    /// `{name: value at pointer}`, or the whole object when the pointer is not in it.
    fn at_pointer(
        &self,
        event: &Event,
        parsed: Map<String, Value>,
        pointer: &str,
        failures: &mut Failures,
    ) -> Map<String, Value> {
        let trimmed = pointer.strip_prefix('/').unwrap_or(pointer);
        let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
        let object = Value::Object(parsed);
        // Data Prepper looks the pointer up in the object as it would write it.
        let looked_up = if self.config.normalize_keys {
            std::borrow::Cow::Owned(normalize_keys(object.clone()))
        } else {
            std::borrow::Cow::Borrowed(&object)
        };
        let Some(value) = Key::unchecked(trimmed).get(&looked_up).cloned() else {
            failures.add(Failure::untagged(format!(
                "pointer `{pointer}` is not in the object; the whole object is written"
            )));
            let Value::Object(parsed) = object else {
                unreachable!("made an object above")
            };
            return parsed;
        };
        let end = end_of_pointer(trimmed);
        let whole = self.config.destination.is_none() && event.contains(&Key::unchecked(&end));
        let name = if whole { trimmed } else { &end };
        let mut out = Map::new();
        out.insert(name.replace('/', "."), value);
        out
    }

    fn write_to_root(&self, event: &mut Event, parsed: Map<String, Value>) -> Result<(), String> {
        for (name, mut value) in parsed {
            let key = Key::parse(&name).map_err(|e| e.to_string())?;
            if key.is_root() {
                return Err("a parsed key is empty".to_owned());
            }
            if self.config.overwrite_if_destination_exists || !event.contains(&key) {
                if self.config.normalize_keys {
                    value = normalize_keys(value);
                }
                event.put(&key, value).map_err(|e| e.to_string())?;
            }
        }
        Ok(())
    }
}

/// The first JSON value of `text` if it is an object (Jackson's `readValue` into a map: what
/// follows the value is not read).
fn parse_object(text: &str) -> Option<Map<String, Value>> {
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    match values.next() {
        Some(Ok(Value::Object(map))) => Some(map),
        _ => None,
    }
}

/// The pointer's last segment, or its last two (`list/0`) when the last is a list index.
fn end_of_pointer(trimmed: &str) -> String {
    let mut parts: Vec<&str> = trimmed.split('/').collect();
    while parts.len() > 1 && parts.last() == Some(&"") {
        parts.pop();
    }
    match parts.as_slice() {
        [] | [_] => trimmed.to_owned(),
        [.., parent, last] if !last.is_empty() && last.bytes().all(|b| b.is_ascii_digit()) => {
            format!("{parent}/{last}")
        }
        [.., last] => (*last).to_owned(),
    }
}

/// Data Prepper's `convertNestedObjectToString`: objects at level `target` (1 = the values of
/// the top level) become their JSON text; lists are not looked into.
fn stringify_below(map: Map<String, Value>, level: u8, target: u8) -> Map<String, Value> {
    map.into_iter()
        .map(|(k, v)| {
            let v = match v {
                Value::Object(inner) if level == target => {
                    Value::String(Value::Object(inner).to_string())
                }
                Value::Object(inner) => Value::Object(stringify_below(inner, level + 1, target)),
                other => other,
            };
            (k, v)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::testing::{invalid, processor, run, run_event};

    const DOC: &str = "{\"outer_key\": {\"inner_key\": \"inner_value\"}}";

    #[test]
    fn the_documented_examples() {
        // parse-json.md:39
        let p = processor("parse_json:");
        assert_eq!(
            run(&*p, json!({"message": DOC})),
            Some(json!({"message": DOC, "outer_key": {"inner_key": "inner_value"}}))
        );
        // parse-json.md:73
        let p = processor("parse_json:\n  delete_source: true");
        assert_eq!(
            run(&*p, json!({"message": DOC})),
            Some(json!({"outer_key": {"inner_key": "inner_value"}}))
        );
        // parse-json.md:99
        let p = processor("parse_json:\n  pointer: /outer_key/inner_key");
        assert_eq!(
            run(&*p, json!({"message": DOC})),
            Some(json!({"message": DOC, "inner_key": "inner_value"}))
        );
    }

    #[test]
    fn destination_overwrite_and_delete_source() {
        let p = processor(
            "parse_json:\n  source: raw\n  destination: /parsed/here\n  delete_source: true",
        );
        assert_eq!(
            run(&*p, json!({"raw": "{\"a\": [1, {\"b\": null}]}"})),
            Some(json!({"parsed": {"here": {"a": [1, {"b": null}]}}}))
        );
        let p =
            processor("parse_json:\n  destination: d\n  overwrite_if_destination_exists: false");
        assert_eq!(
            run(&*p, json!({"message": "{\"a\": 1}", "d": 0})),
            Some(json!({"message": "{\"a\": 1}", "d": 0}))
        );
        let p = processor("parse_json:\n  overwrite_if_destination_exists: false");
        assert_eq!(
            run(&*p, json!({"message": "{\"a\": 1, \"b\": 2}", "a": 0})),
            Some(json!({"message": "{\"a\": 1, \"b\": 2}", "a": 0, "b": 2}))
        );
        // At the top level the source goes first: a parsed key of its name survives.
        let p = processor("parse_json:\n  delete_source: true");
        assert_eq!(
            run(&*p, json!({"message": "{\"message\": \"inner\"}"})),
            Some(json!({"message": "inner"}))
        );
    }

    #[test]
    fn what_is_not_an_object_is_tagged_and_left() {
        let p = processor("parse_json:\n  tags_on_failure: [bad_json]\n  delete_source: true");
        for text in [
            "not json", "[1, 2]", "42", "null", "", "{\"a\": ", "\"text\"",
        ] {
            let event = run_event(&*p, json!({"message": text}));
            assert_eq!(event.data, json!({"message": text}), "{text}");
            assert_eq!(event.metadata.tags, ["bad_json"], "{text}");
        }
        // A number is read as its text, which is not an object.
        let event = run_event(&*p, json!({"message": 7}));
        assert_eq!(event.metadata.tags, ["bad_json"]);
        // Missing, null, or an object: not tagged.
        for data in [
            json!({}),
            json!({"message": null}),
            json!({"message": {"a": 1}}),
        ] {
            let event = run_event(&*p, data.clone());
            assert_eq!(event.data, data);
            assert!(event.metadata.tags.is_empty());
        }
        // What follows the object is not read, as Jackson.
        assert_eq!(
            run(&*p, json!({"message": "{\"a\": 1} trailing"})),
            Some(json!({"a": 1}))
        );
        // Deep nesting is refused, not a stack overflow.
        let deep = format!("{}{}", "{\"a\":".repeat(10_000), "}".repeat(10_000));
        let event = run_event(&*p, json!({"message": deep}));
        assert_eq!(event.metadata.tags, ["bad_json"]);
    }

    #[test]
    fn an_invalid_top_level_key_stops_the_writing_untagged() {
        let p = processor("parse_json:\n  tags_on_failure: [bad]\n  normalize_keys: true");
        let event = run_event(
            &*p,
            json!({"message": "{\"ok\": {\"x y:z\": 1}, \"a:b\": 2, \"after\": 3}"}),
        );
        assert_eq!(
            event.data,
            json!({"message": "{\"ok\": {\"x y:z\": 1}, \"a:b\": 2, \"after\": 3}", "ok": {"x_y_z": 1}})
        );
        assert!(event.metadata.tags.is_empty());
        // With a destination, every key is normalized.
        let p = processor("parse_json:\n  destination: d\n  normalize_keys: true");
        assert_eq!(
            run(
                &*p,
                json!({"message": "{\"a:b\": {\"c d$\": 1, \"e f:\": 2}}"})
            ),
            Some(
                json!({"message": "{\"a:b\": {\"c d$\": 1, \"e f:\": 2}}", "d": {"a_b": {"c d$": 1, "e_f_": 2}}})
            )
        );
    }

    #[test]
    fn pointers() {
        let text = "{\"list\": [{\"x\": 1}, {\"x\": 2}], \"o\": {\"x\": 3}}";
        let p = processor("parse_json:\n  pointer: /list/1");
        assert_eq!(
            run(&*p, json!({"message": text})),
            Some(json!({"message": text, "list.1": {"x": 2}}))
        );
        // The event has `x`: the whole pointer names the key.
        let p = processor("parse_json:\n  pointer: o/x/");
        assert_eq!(
            run(&*p, json!({"message": text, "x": 0})),
            Some(json!({"message": text, "x": 0, "o.x": 3}))
        );
        // Not there: the whole object.
        let p = processor("parse_json:\n  pointer: /nope\n  destination: d");
        assert_eq!(
            run(&*p, json!({"message": "{\"a\": 1}"})),
            Some(json!({"message": "{\"a\": 1}", "d": {"a": 1}}))
        );
        // A missing source with a pointer is a failure to parse, as Data Prepper.
        let p = processor("parse_json:\n  pointer: /a\n  tags_on_failure: [t]");
        assert_eq!(run_event(&*p, json!({})).metadata.tags, ["t"]);
    }

    #[test]
    fn depth_turns_deeper_objects_into_text() {
        let text = "{\"a\": {\"b\": {\"c\": 1}}, \"l\": [{\"x\": {}}], \"n\": 1}";
        let p = processor("parse_json:\n  depth: 1\n  destination: d");
        assert_eq!(
            run(&*p, json!({"message": text}))
                .unwrap()
                .get("d")
                .cloned(),
            Some(json!({"a": "{\"b\":{\"c\":1}}", "l": [{"x": {}}], "n": 1}))
        );
        let p = processor("parse_json:\n  depth: 2\n  destination: d");
        assert_eq!(
            run(&*p, json!({"message": text}))
                .unwrap()
                .get("d")
                .cloned(),
            Some(json!({"a": {"b": "{\"c\":1}"}, "l": [{"x": {}}], "n": 1}))
        );
    }

    #[test]
    fn parse_when_and_config_errors() {
        let p = processor("parse_json:\n  parse_when: '/go == true'");
        assert_eq!(
            run(&*p, json!({"message": "{\"a\": 1}"})),
            Some(json!({"message": "{\"a\": 1}"}))
        );
        assert_eq!(
            run(&*p, json!({"go": true, "message": "{\"a\": 1}"})),
            Some(json!({"go": true, "message": "{\"a\": 1}", "a": 1}))
        );
        let p = processor("parse_json:\n  handle_failed_events: skip_silently");
        assert_eq!(
            run(&*p, json!({"message": "x"})),
            Some(json!({"message": "x"}))
        );
        assert!(invalid("parse_json:\n  destination: '/'").contains("cannot be empty"));
        assert!(invalid("parse_json:\n  depth: 11").contains("0 (every level) to 10"));
        assert!(
            invalid("parse_json:\n  handle_failed_events: drop")
                .contains("`skip` or `skip_silently`")
        );
    }
}
