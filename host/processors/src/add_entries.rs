//! `add_entries`, as Data Prepper's `AddEntryProcessor`: for each entry in order, if its
//! `add_when` holds, the value (fixed, formatted, or an expression's) goes to the key or
//! metadata attribute: added when absent, replaced with `overwrite_if_key_exists`, made a
//! list with `append_if_key_exists`, else left as it was. An entry that fails (a format whose
//! key is missing, a key through a non-object) is skipped and logged; the rest still apply.

use serde_json::Value;
use sluice_config::processor::add_entries::{AddEntries, AddEntry, Target};
use sluice_event::{Event, Expression, Key, Template};

use crate::{BuildProcessor, Fate, Processor, when};

struct Add {
    entries: Vec<Entry>,
}

struct Entry {
    target: Where,
    value: What,
    overwrite: bool,
    append: bool,
    when: Option<Expression>,
}

enum Where {
    Key(Key),
    Format(Template),
    Metadata(String),
}

enum What {
    Value(Value),
    Format(Template),
    Expression(Expression),
}

impl BuildProcessor for AddEntries {
    fn build(&self) -> Result<Box<dyn Processor>, crate::BuildError> {
        Ok(Box::new(Add {
            entries: self.entries.iter().map(entry).collect(),
        }))
    }
}

fn entry(e: &AddEntry) -> Entry {
    let template = |t: &str| Template::parse(t).expect("checked at validate");
    Entry {
        target: match e.target() {
            Target::Key(key) => Where::Key(key),
            Target::Format(format) => Where::Format(template(&format)),
            Target::Metadata(name) => Where::Metadata(name),
        },
        value: match (&e.value, &e.format, &e.value_expression) {
            (Some(v), _, _) => What::Value(v.clone()),
            (_, Some(f), _) => What::Format(template(f)),
            (_, _, Some(x)) => What::Expression(x.clone()),
            _ => unreachable!("checked: one of value, format, value_expression"),
        },
        overwrite: e.overwrite_if_key_exists,
        append: e.append_if_key_exists,
        when: e.add_when.clone(),
    }
}

impl Processor for Add {
    fn name(&self) -> &'static str {
        "add_entries"
    }

    fn process(&self, event: &mut Event) -> Fate {
        for entry in &self.entries {
            if !when(entry.when.as_ref(), event) {
                continue;
            }
            if let Err(reason) = entry.apply(event) {
                tracing::debug!(%reason, "add_entries: entry skipped");
            }
        }
        Fate::Keep
    }
}

impl Entry {
    fn apply(&self, event: &mut Event) -> Result<(), String> {
        let value = match &self.value {
            What::Value(v) => v.clone(),
            What::Format(t) => Value::String(t.render(event).map_err(|e| e.to_string())?),
            What::Expression(x) => x.evaluate(event).map_err(|e| e.to_string())?,
        };
        let key = match &self.target {
            Where::Metadata(name) => {
                let attributes = &mut event.metadata.attributes;
                match attributes.get_mut(name) {
                    None => {
                        attributes.insert(name.clone(), value);
                    }
                    Some(slot) if self.overwrite => *slot = value,
                    Some(slot) if self.append => merge(slot, value),
                    Some(_) => {}
                }
                return Ok(());
            }
            Where::Key(key) => std::borrow::Cow::Borrowed(key),
            Where::Format(t) => {
                let text = t.render(event).map_err(|e| e.to_string())?;
                std::borrow::Cow::Owned(Key::parse(&text).map_err(|e| e.to_string())?)
            }
        };
        match event.get_mut(&key) {
            None => event.put(&key, value).map_err(|e| e.to_string()),
            Some(slot) if self.overwrite => {
                *slot = value;
                Ok(())
            }
            Some(slot) if self.append => {
                merge(slot, value);
                Ok(())
            }
            Some(_) => Ok(()),
        }
    }
}

/// `append_if_key_exists`: the existing value becomes a list (if it is not one) with the new
/// value at its end, as one element even when it is a list (as Data Prepper).
fn merge(slot: &mut Value, value: Value) {
    let mut list = match slot.take() {
        Value::Array(list) => list,
        other => vec![other],
    };
    list.push(value);
    *slot = Value::Array(list);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::testing::{processor, run};

    #[test]
    fn adds_a_value_and_leaves_an_existing_key_unless_told() {
        let p = processor("add_entries:\n  entries:\n    - key: newMessage\n      value: 3");
        assert_eq!(
            run(&*p, json!({"message": "hello"})),
            Some(json!({"message": "hello", "newMessage": 3}))
        );
        assert_eq!(
            run(&*p, json!({"newMessage": 1})),
            Some(json!({"newMessage": 1}))
        );
        let p = processor(
            "add_entries:\n  entries:\n    - key: m\n      value: 3\n      overwrite_if_key_exists: true",
        );
        assert_eq!(run(&*p, json!({"m": 1})), Some(json!({"m": 3})));
    }

    #[test]
    fn appends_to_make_a_list() {
        let p = processor(
            "add_entries:\n  entries:\n    - key: m\n      value: [b, c]\n      append_if_key_exists: true",
        );
        assert_eq!(
            run(&*p, json!({"m": "a"})),
            Some(json!({"m": ["a", ["b", "c"]]}))
        );
        assert_eq!(
            run(&*p, json!({"m": ["a"]})),
            Some(json!({"m": ["a", ["b", "c"]]}))
        );
    }

    #[test]
    fn formats_expressions_and_conditions() {
        let p = processor(
            "add_entries:\n  entries:\n    - key: /n/id\n      format: \"${/a}-${/b}\"\n    - key: len\n      value_expression: length(/a)\n      add_when: /b == 2",
        );
        assert_eq!(
            run(&*p, json!({"a": "xy", "b": 2})),
            Some(json!({"a": "xy", "b": 2, "n": {"id": "xy-2"}, "len": 2}))
        );
        assert_eq!(
            run(&*p, json!({"a": "xy", "b": 3})),
            Some(json!({"a": "xy", "b": 3, "n": {"id": "xy-3"}}))
        );
    }
}
