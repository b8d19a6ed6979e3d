//! `split_event`, as Data Prepper's `SplitEventProcessor`: the value at `field` makes several
//! events, each a copy of the event (data and metadata) with one part at `field`; the copies
//! come first, in order, and the event itself goes on last with the last part.
//!
//! - A list: one event per element; a list of one element becomes that element; an empty list
//!   leaves the event as it was. This needs no delimiter.
//! - Text, with `delimiter` or `delimiter_regex`: split as Java's `Pattern.split` does (empty
//!   parts at the end dropped); text of one part (or none) leaves the event as it was.
//! - Anything else (a missing key, `null`, a number, text without a delimiter configured):
//!   the event goes on unchanged, without a tag (Data Prepper has no `tags_on_failure` here).

use regex::Regex;
use serde_json::Value;
use sluice_config::processor::split_event as config;
use sluice_event::{Event, Expression};

use crate::{Apply, BuildError, BuildProcessor, Failure, Fate};

/// `split_event`, built: its config and its delimiter as a regular expression.
pub struct SplitEvent {
    config: config::SplitEvent,
    splitter: Option<Regex>,
}

impl BuildProcessor for config::SplitEvent {
    type Processor = SplitEvent;

    fn when(&self) -> Option<&Expression> {
        self.split_when.as_ref()
    }

    fn build(&self) -> Result<SplitEvent, BuildError> {
        let pattern = match (self.delimiter(), self.delimiter_regex()) {
            (_, Some(regex)) => Some(regex.to_owned()),
            (Some(d), None) => Some(regex::escape(d)),
            (None, None) => None,
        };
        Ok(SplitEvent {
            config: self.clone(),
            splitter: pattern.map(|p| Regex::new(&p).expect("checked at validate")),
        })
    }
}

impl Apply for SplitEvent {
    fn apply(&self, event: &mut Event, _: &'static str) -> Result<Fate, Failure> {
        let field = &self.config.field;
        let parts: Vec<Value> = match event.get(field) {
            Some(Value::Array(list)) => match list.len() {
                0 => return Ok(Fate::Keep),
                1 => {
                    let only = list[0].clone();
                    event.put(field, only).map_err(|e| e.to_string())?;
                    return Ok(Fate::Keep);
                }
                _ => list.clone(),
            },
            Some(Value::String(text)) => {
                let Some(splitter) = &self.splitter else {
                    return Ok(Fate::Keep);
                };
                let parts = java_split(splitter, text);
                if parts.len() <= 1 {
                    return Ok(Fate::Keep);
                }
                parts.into_iter().map(Value::String).collect()
            }
            _ => return Ok(Fate::Keep),
        };
        let mut parts = parts.into_iter();
        let last = parts.next_back().expect("two or more parts");
        let mut before = Vec::with_capacity(parts.len());
        for part in parts {
            let mut copy = event.clone();
            copy.put(field, part).map_err(|e| e.to_string())?;
            before.push(copy);
        }
        event.put(field, last).map_err(|e| e.to_string())?;
        Ok(Fate::Split(before))
    }
}

/// Java's `Pattern.split(text)`: the parts between matches; a match of no width at the start
/// makes no empty first part; empty parts at the end are dropped (all of them: `" "` split at
/// `" "` is no part at all); text without a match is itself.
fn java_split(at: &Regex, text: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut start = 0;
    for m in at.find_iter(text) {
        if m.end() == 0 {
            continue;
        }
        if m.start() == m.end() && m.start() >= text.len() {
            break;
        }
        parts.push(text[start..m.start()].to_owned());
        start = m.end();
    }
    if parts.is_empty() {
        return vec![text.to_owned()];
    }
    parts.push(text[start..].to_owned());
    while parts.last().is_some_and(String::is_empty) {
        parts.pop();
    }
    parts
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::java_split;
    use crate::testing::{invalid, processor, run_all, run_event};

    #[test]
    fn text_splits_into_events_the_last_part_in_the_event_itself() {
        let p = processor("split_event:\n  field: query\n  delimiter: ' '");
        assert_eq!(
            run_all(&*p, json!({"query": "open source", "other": "abc"})),
            [
                json!({"query": "open", "other": "abc"}),
                json!({"query": "source", "other": "abc"})
            ]
        );
        // One part: the event as it was.
        assert_eq!(
            run_all(&*p, json!({"query": "open"})),
            [json!({"query": "open"})]
        );
        assert_eq!(run_all(&*p, json!({"query": 5})), [json!({"query": 5})]);
        assert_eq!(run_all(&*p, json!({"other": 5})), [json!({"other": 5})]);
    }

    #[test]
    fn a_list_splits_without_a_delimiter_and_a_list_of_one_is_unwrapped() {
        let p = processor("split_event:\n  field: /a/list");
        assert_eq!(
            run_all(&*p, json!({"a": {"list": [1, {"b": 2}, "c"]}})),
            [
                json!({"a": {"list": 1}}),
                json!({"a": {"list": {"b": 2}}}),
                json!({"a": {"list": "c"}})
            ]
        );
        assert_eq!(
            run_all(&*p, json!({"a": {"list": [7]}})),
            [json!({"a": {"list": 7}})]
        );
        assert_eq!(
            run_all(&*p, json!({"a": {"list": []}})),
            [json!({"a": {"list": []}})]
        );
        // Text without a delimiter goes on unchanged.
        assert_eq!(
            run_all(&*p, json!({"a": {"list": "x y"}})),
            [json!({"a": {"list": "x y"}})]
        );
    }

    #[test]
    fn copies_keep_the_metadata_and_split_when_selects() {
        let p = processor(
            "split_event:\n  field: body\n  delimiter_regex: '\\n+'\n  split_when: '/split == true'",
        );
        let mut event = sluice_event::Event::new(
            json!({"body": "a\n\nb\n", "split": true}),
            sluice_event::Metadata::new("LOG", 0),
        );
        event.metadata.add_tag("t");
        match p.process(&mut event) {
            crate::Fate::Split(before) => {
                assert_eq!(before.len(), 1);
                assert_eq!(before[0].data, json!({"body": "a", "split": true}));
                assert_eq!(before[0].metadata.tags, ["t"]);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(event.data, json!({"body": "b", "split": true}));
        let kept = run_event(&*p, json!({"body": "a\nb", "split": false}));
        assert_eq!(kept.data, json!({"body": "a\nb", "split": false}));
    }

    #[test]
    fn splits_as_java_does() {
        let space = regex::Regex::new(" ").unwrap();
        assert_eq!(java_split(&space, " a  b  "), ["", "a", "", "b"]);
        assert_eq!(java_split(&space, "  "), Vec::<String>::new());
        assert_eq!(java_split(&space, "ab"), ["ab"]);
        assert_eq!(java_split(&space, ""), [""]);
        let nothing = regex::Regex::new("").unwrap();
        assert_eq!(java_split(&nothing, "ab"), ["a", "b"]);
    }

    #[test]
    fn the_delimiters_are_checked() {
        let e = invalid("split_event:\n  field: a\n  delimiter: ', '");
        assert!(
            e.contains(
                "`p.processor[0].split_event.delimiter` is \", \"; it must be one character"
            ),
            "{e}"
        );
        let e = invalid("split_event:\n  field: a\n  delimiter: ','\n  delimiter_regex: ';'");
        assert!(
            e.contains("has both `delimiter` and `delimiter_regex`"),
            "{e}"
        );
        let e = invalid("split_event:\n  field: a\n  delimiter_regex: '('");
        assert!(e.contains("does not compile"), "{e}");
        let e = invalid("split_event:\n  delimiter: ','");
        assert!(e.contains("missing field `field`"), "{e}");
    }
}
