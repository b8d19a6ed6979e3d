//! `truncate`, as Data Prepper's `TruncateProcessor`: for each entry in order, when its
//! `truncate_when` holds, the text at each of `source_keys` (default: every key at the top of
//! the event) keeps `length` characters from `start_at`; in a list each text element is cut
//! and the rest kept; an object is gone into only with `recursive`. Missing keys and other
//! values are left as they are; nothing is tagged.
//!
//! Positions count as Java's do, in UTF-16 units (`String.substring`): a character beyond
//! U+FFFF (an emoji) counts 2. Java cuts such a character in half when a position falls inside
//! it, leaving half a surrogate pair that is not text; sluice never splits a character, it
//! leaves out the half Java would keep. So the result is always Java's, less any lone half.
//!
//! A `start_at` past the end of a text (Java throws) stops the event's remaining truncations
//! (earlier ones stay), logged, as in Data Prepper. Two deliberate differences: `start_at +
//! length` past 2^31 means "to the end" (Java's `int` overflows and throws), and keys with
//! characters Data Prepper's keys do not allow (`:`, `é`) are truncated too (Data Prepper
//! fails to write them back and stops).

use serde_json::Value;
use sluice_config::processor::truncate::{self as config, TruncateEntry};
use sluice_event::Event;

use crate::{Apply, BuildError, BuildProcessor, Failure, Fate, when};

/// `truncate`, built: its entries.
pub struct Truncate {
    entries: Vec<Entry>,
}

/// One entry: its config, with `start_at` and `length` as sizes.
struct Entry {
    config: TruncateEntry,
    start: usize,
    length: Option<usize>,
}

/// A `start_at` past the end of a text: the event's remaining truncations are skipped.
#[derive(Debug)]
struct PastEnd {
    start: usize,
    len: usize,
}

impl BuildProcessor for config::Truncate {
    type Processor = Truncate;

    fn build(&self) -> Result<Truncate, BuildError> {
        // `check` refused negative values.
        let size = |v: i32| usize::try_from(v).unwrap_or(0);
        Ok(Truncate {
            entries: self
                .entries
                .iter()
                .map(|e| Entry {
                    config: e.clone(),
                    start: e.start_at.map_or(0, size),
                    length: e.length.map(size),
                })
                .collect(),
        })
    }
}

impl Apply for Truncate {
    fn apply(&self, event: &mut Event, name: &'static str) -> Result<Fate, Failure> {
        for entry in &self.entries {
            if !when(name, entry.config.truncate_when.as_ref(), event) {
                continue;
            }
            entry.apply(event).map_err(|PastEnd { start, len }| {
                format!("start_at {start} is past the end of a text of length {len}; the event's remaining truncations are skipped")
            })?;
        }
        Ok(Fate::Keep)
    }
}

impl Entry {
    fn apply(&self, event: &mut Event) -> Result<(), PastEnd> {
        match &self.config.source_keys {
            None => match &mut event.data {
                Value::Object(map) => map.values_mut().try_for_each(|v| self.truncate(v)),
                _ => Ok(()),
            },
            Some(keys) => keys.iter().try_for_each(|key| match event.get_mut(key) {
                Some(value) => self.truncate(value),
                None => Ok(()),
            }),
        }
    }

    /// Truncates `value`: a text, the texts of a list, or (`recursive`) an object's values.
    fn truncate(&self, value: &mut Value) -> Result<(), PastEnd> {
        match value {
            Value::String(text) => {
                let cut = cut(text, self.start, self.length)?;
                if cut.len() != text.len() {
                    *text = cut.to_owned();
                }
                Ok(())
            }
            Value::Array(list) => {
                // All or nothing, as Java builds the new list before writing it.
                let mut cuts = Vec::with_capacity(list.len());
                for item in list.iter() {
                    cuts.push(match item {
                        Value::String(text) => Some(cut(text, self.start, self.length)?.to_owned()),
                        _ => None,
                    });
                }
                for (item, cut) in list.iter_mut().zip(cuts) {
                    if let Some(cut) = cut {
                        *item = Value::String(cut);
                    }
                }
                Ok(())
            }
            Value::Object(map) if self.config.recursive => {
                map.values_mut().try_for_each(|v| self.truncate(v))
            }
            _ => Ok(()),
        }
    }
}

/// Java's `substring(start, min(start + length, len))` in UTF-16 units, without the half of a
/// character a position falls inside (see the module doc).
fn cut(text: &str, start: usize, length: Option<usize>) -> Result<&str, PastEnd> {
    let ascii = text.is_ascii();
    let len = if ascii {
        text.len()
    } else {
        text.encode_utf16().count()
    };
    if start > len {
        return Err(PastEnd { start, len });
    }
    let end = match length {
        Some(length) if start.saturating_add(length) < len => start + length,
        _ => len,
    };
    if ascii {
        return Ok(&text[start..end]);
    }
    // `from`: the first character starting at or after `start`; `to`: the end of the last
    // character ending at or before `end`.
    let (mut unit, mut from, mut to) = (0, None, 0);
    for (i, c) in text.char_indices() {
        if from.is_none() && unit >= start {
            from = Some(i);
        }
        unit += c.len_utf16();
        if unit > end {
            break;
        }
        to = i + c.len_utf8();
    }
    let from = from.unwrap_or(text.len());
    Ok(&text[from..to.max(from)])
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::cut;
    use crate::testing::{processor, run};

    /// truncate.md:42 (the docs' input has `"info", "new information"`, repaired).
    #[test]
    fn documented_entries_with_length_and_start_at() {
        let p = processor(
            "truncate:\n  entries:\n    - source_keys: [message1, message2]\n      length: 5\n    - source_keys: [info]\n      length: 6\n      start_at: 4\n    - source_keys: [log]\n      start_at: 5",
        );
        assert_eq!(
            run(
                &*p,
                json!({"message1": "hello,world", "message2": "test message", "info": "new information", "log": "test log message"})
            ),
            Some(
                json!({"message1": "hello", "message2": "test ", "info": "inform", "log": "log message"})
            )
        );
    }

    /// truncate.md:84. The docs show `"world"`, but index 8 of "hello, world" is its `o`: Data
    /// Prepper's code gives `"orld"` (the conformance case is marked `doc_suspect`).
    #[test]
    fn documented_truncate_when() {
        let p = processor(
            "truncate:\n  entries:\n    - source_keys: [message]\n      length: 5\n      start_at: 8\n      truncate_when: '/id == 1'",
        );
        assert_eq!(
            run(&*p, json!({"message": "hello, world", "id": 1})),
            Some(json!({"message": "orld", "id": 1}))
        );
        assert_eq!(
            run(
                &*p,
                json!({"message": "hello, world,not-truncated", "id": 2})
            ),
            Some(json!({"message": "hello, world,not-truncated", "id": 2}))
        );
    }

    #[test]
    fn without_source_keys_every_top_level_text_and_list_is_cut() {
        let p = processor("truncate:\n  entries:\n    - length: 2");
        assert_eq!(
            run(
                &*p,
                json!({"a": "abcd", "b": ["abc", 5, {"c": "abc"}, null], "n": 12345, "o": {"c": "abc"}, "z": null})
            ),
            Some(
                json!({"a": "ab", "b": ["ab", 5, {"c": "abc"}, null], "n": 12345, "o": {"c": "abc"}, "z": null})
            )
        );
    }

    #[test]
    fn an_empty_source_keys_list_cuts_nothing() {
        let p = processor("truncate:\n  entries:\n    - source_keys: []\n      length: 1");
        assert_eq!(run(&*p, json!({"a": "abc"})), Some(json!({"a": "abc"})));
    }

    #[test]
    fn recursive_goes_into_objects_at_any_depth() {
        let p = processor(
            "truncate:\n  entries:\n    - source_keys: [o]\n      length: 1\n      recursive: true",
        );
        assert_eq!(
            run(
                &*p,
                json!({"o": {"a": "xyz", "b": {"c": "xyz", "d": ["xyz", {"e": "xyz"}]}}, "p": "xyz"})
            ),
            Some(json!({"o": {"a": "x", "b": {"c": "x", "d": ["x", {"e": "xyz"}]}}, "p": "xyz"}))
        );
    }

    #[test]
    fn nested_keys_and_missing_keys() {
        let p = processor(
            "truncate:\n  entries:\n    - source_keys: [/a/b, missing, /a/list/1]\n      start_at: 1",
        );
        assert_eq!(
            run(&*p, json!({"a": {"b": "xyz", "list": ["xyz", "xyz"]}})),
            Some(json!({"a": {"b": "yz", "list": ["xyz", "yz"]}}))
        );
    }

    #[test]
    fn start_at_past_the_end_stops_the_events_remaining_truncations() {
        let p = processor(
            "truncate:\n  entries:\n    - source_keys: [a, b, c]\n      start_at: 3\n    - source_keys: [d]\n      length: 1",
        );
        // `a` is cut, `b` is too short (Java throws): `c` and the second entry are skipped.
        assert_eq!(
            run(
                &*p,
                json!({"a": "abcd", "b": "ab", "c": "abcd", "d": "abcd"})
            ),
            Some(json!({"a": "d", "b": "ab", "c": "abcd", "d": "abcd"}))
        );
        // At the end exactly is the empty text; a list with a short text is left whole.
        assert_eq!(
            run(&*p, json!({"a": "abc", "b": ["abcd", "a"], "d": "xy"})),
            Some(json!({"a": "", "b": ["abcd", "a"], "d": "xy"}))
        );
    }

    #[test]
    fn positions_count_utf16_units_and_never_split_a_character() {
        // ASCII and the BMP: one unit a character.
        assert_eq!(cut("héllo", 1, Some(3)).unwrap(), "éll");
        assert_eq!(cut("日本語テキスト", 2, Some(2)).unwrap(), "語テ");
        // An emoji is two units.
        assert_eq!(cut("a😀b", 0, Some(3)).unwrap(), "a😀");
        assert_eq!(cut("a😀b", 3, None).unwrap(), "b");
        // A position inside the emoji leaves the half out (Java would keep a lone surrogate).
        assert_eq!(cut("a😀b", 0, Some(2)).unwrap(), "a");
        assert_eq!(cut("a😀b", 2, None).unwrap(), "b");
        assert_eq!(cut("😀", 1, Some(0)).unwrap(), "");
        assert_eq!(cut("😀", 1, None).unwrap(), "");
        assert_eq!(cut("😀", 2, None).unwrap(), "");
        // Past the end in units, not bytes or characters.
        assert!(cut("😀", 3, None).is_err());
        assert!(cut("é", 2, None).is_err());
        assert_eq!(cut("", 0, Some(5)).unwrap(), "");
        // No overflow at the largest values.
        let max = i32::MAX as usize;
        assert_eq!(cut("abc", 1, Some(max)).unwrap(), "bc");
        assert!(cut("abc", max, Some(max)).is_err());
    }

    #[test]
    fn every_cut_of_mixed_text_is_valid_text() {
        let text = "a😀é日\u{10FFFF}b";
        let len = text.encode_utf16().count();
        for start in 0..=len {
            for length in 0..=len + 1 {
                let out = cut(text, start, Some(length)).unwrap();
                assert!(out.encode_utf16().count() <= length);
                assert!(text.contains(out));
            }
        }
    }

    #[test]
    fn bad_entries_are_refused() {
        for (yaml, want) in [
            (
                "truncate:\n  entries:\n    - source_keys: [a]",
                "at least one of `start_at` or `length`",
            ),
            (
                "truncate:\n  entries:\n    - length: -1",
                "positive integers",
            ),
            (
                "truncate:\n  entries:\n    - start_at: -1",
                "positive integers",
            ),
            ("truncate:\n  entries: []", "is empty"),
            (
                "truncate:\n  entries:\n    - length: 1\n      nope: 1",
                "nope",
            ),
            (
                "truncate:\n  entries:\n    - length: 3000000000",
                "3000000000",
            ),
        ] {
            let text = format!(
                "p:\n  source:\n    http:\n  processor:\n    - {}\n  sink:\n    - stdout:\n",
                yaml.replace('\n', "\n      ")
            );
            let err = sluice_config::parse("t.yaml", &text, Default::default())
                .err()
                .unwrap_or_else(|| panic!("{yaml} was accepted"))
                .to_string();
            assert!(err.contains(want), "{yaml}: {err}");
        }
    }
}
