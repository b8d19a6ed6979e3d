//! `dissect`, as Data Prepper's `DissectProcessor` and `Dissector`: a pattern is fields
//! (`%{...}`) and the literal text between them (delimiters). Each delimiter is found in
//! turn, from where the previous one ended; a delimiter of white space only moves to the end
//! of the white space run it starts (so `%{a->} %{b}` reads padded columns). The text before
//! each delimiter goes to the next field; what follows the last one goes to the field after
//! it. A delimiter not found leaves the event as it was (Data Prepper logs nothing).
//!
//! Data Prepper's quirks kept: empty literals between two fields (`%{a}%{b}`) are not
//! delimiters; when the text starts with the first delimiter, the (empty) text before it goes
//! to no field, whether or not the pattern starts with that delimiter (Data Prepper checks the
//! text, not the pattern); `%{?}` and `%{+}` (a prefix and nothing else) are normal
//! fields named `?` and `+`; an append field with no value appends nothing, but its key is
//! written (empty when none of its parts had a value). A key written twice (a normal field and
//! an indirect field naming it) gets the indirect field's value.
//!
//! Refused at `validate` where Data Prepper accepts the pattern and then fails on every event:
//! a pattern without a field, and one without a delimiter.

use serde_json::{Map, Value};
use sluice_config::processor::convert_entry_type::TargetType;
use sluice_config::processor::dissect as config;
use sluice_event::{Event, Expression, Key};

use crate::convert_entry_type::convert_one;
use crate::{Apply, BuildError, BuildProcessor, Failure, Fate, java_string};

/// `dissect`, built: one [`Dissector`] per key of `map`.
pub struct Dissect {
    dissectors: Vec<(Key, Dissector)>,
    target_types: Vec<(String, TargetType)>,
    delete_source: bool,
}

impl BuildProcessor for config::Dissect {
    type Processor = Dissect;

    fn when(&self) -> Option<&Expression> {
        self.dissect_when.as_ref()
    }

    fn build(&self) -> Result<Dissect, BuildError> {
        let dissectors = self
            .sources()
            .map(|(key, pattern)| {
                Dissector::new(pattern)
                    .map(|d| (key.clone(), d))
                    .map_err(|message| BuildError {
                        key: format!("map.{}", key.as_str()),
                        message,
                    })
            })
            .collect::<Result<_, _>>()?;
        Ok(Dissect {
            dissectors,
            target_types: self
                .target_types
                .iter()
                .map(|(k, t)| (k.clone(), *t))
                .collect(),
            delete_source: self.delete_source,
        })
    }
}

impl Apply for Dissect {
    fn apply(&self, event: &mut Event, _: &'static str) -> Result<Fate, Failure> {
        for (source, dissector) in &self.dissectors {
            if !event.contains(source) {
                continue;
            }
            // Data Prepper's `event.get(key, String.class)`: an object or a list fails the
            // event (its other keys are not dissected), logged.
            let text = java_string(event.get(source)).map_err(|()| {
                Failure::untagged(format!(
                    "`{}` is an object or a list, not text",
                    source.as_str()
                ))
            })?;
            let Some(text) = text else { continue };
            let Some(fields) = dissector.dissect(&text)? else {
                continue;
            };
            for (name, value) in fields {
                let key = Key::parse(&name).map_err(|e| Failure::untagged(e.to_string()))?;
                let value = self.convert(&name, value);
                event
                    .put(&key, value)
                    .map_err(|e| Failure::untagged(e.to_string()))?;
            }
            if self.delete_source {
                event.delete(source);
            }
        }
        Ok(Fate::Keep)
    }
}

impl Dissect {
    /// A captured value as its `target_types` type; text when it has none or does not read
    /// as it (Data Prepper logs that and keeps the text).
    fn convert(&self, name: &str, text: Value) -> Value {
        let Some((_, target)) = self.target_types.iter().find(|(k, _)| k == name) else {
            return text;
        };
        match convert_one(&text, *target) {
            Ok(converted) => converted,
            Err(reason) => {
                tracing::debug!(processor = "dissect", field = name, %reason, "kept as text");
                text
            }
        }
    }
}

/// What a field does with its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Normal,
    Skip,
    /// `%{+key/n}`: `n`, 0 without one.
    Append(u32),
    Indirect,
    /// `%{}`: captured and dropped.
    Empty,
}

#[derive(Debug)]
struct Field {
    kind: Kind,
    key: String,
    /// `->`: trailing white space removed from the value.
    strip_trailing: bool,
}

/// One pattern, read.
#[derive(Debug)]
pub(crate) struct Dissector {
    fields: Vec<Field>,
    delimiters: Vec<String>,
}

/// Java's `String.trim().isEmpty()`: only characters up to U+0020.
fn blank(text: &str) -> bool {
    text.chars().all(|c| c <= ' ')
}

/// `^(.*?)->`: the key before the first `->`, if there is one.
fn strip_arrow(key: &str) -> (String, bool) {
    match key.find("->") {
        Some(at) => (key[..at].to_owned(), true),
        None => (key.to_owned(), false),
    }
}

impl Dissector {
    /// Reads `pattern` as Data Prepper's `Dissector` constructor and `FieldHelper` do.
    pub(crate) fn new(pattern: &str) -> Result<Self, String> {
        let mut fields = Vec::new();
        let mut delimiters = Vec::new();
        let mut rest = pattern;
        // `%\{([^}]*)}`
        while let Some(open) = rest.find("%{") {
            let Some(close) = rest[open + 2..].find('}') else {
                break;
            };
            let literal = &rest[..open];
            if !literal.is_empty() {
                delimiters.push(literal.to_owned());
            }
            fields.push(Self::field(&rest[open + 2..open + 2 + close]));
            rest = &rest[open + 2 + close + 1..];
        }
        if !rest.is_empty() {
            delimiters.push(rest.to_owned());
        }
        if fields.is_empty() {
            return Err(format!(
                "dissect pattern `{pattern}` has no field; write at least one `%{{name}}`"
            ));
        }
        if delimiters.is_empty() {
            return Err(format!(
                "dissect pattern `{pattern}` has no text between or around its fields to split at; add a delimiter (`%{{a}} %{{b}}`)"
            ));
        }
        Ok(Self { fields, delimiters })
    }

    /// `FieldHelper.getField`.
    fn field(text: &str) -> Field {
        if blank(text) {
            return Field {
                kind: Kind::Empty,
                key: String::new(),
                strip_trailing: false,
            };
        }
        // `([+&?])(.+)`
        let mut chars = text.chars();
        let prefix = chars.next().filter(|c| "+&?".contains(*c));
        match prefix {
            Some(notation) if text.len() > 1 => {
                let mut key = &text[1..];
                let mut index = 0;
                if notation == '+'
                    && let Some(slash) = key.rfind('/')
                    && slash + 1 < key.len()
                    && key[slash + 1..].bytes().all(|b| b.is_ascii_digit())
                {
                    // Java's `Integer.parseInt` fails past its range (the pattern is then
                    // refused by Data Prepper); the largest index is kept here.
                    index = key[slash + 1..].parse().unwrap_or(u32::MAX);
                    key = &key[..slash];
                }
                let (key, strip_trailing) = strip_arrow(key);
                let kind = match notation {
                    '+' => Kind::Append(index),
                    '?' => Kind::Skip,
                    _ => Kind::Indirect,
                };
                Field {
                    kind,
                    key,
                    strip_trailing,
                }
            }
            _ => {
                let (key, strip_trailing) = strip_arrow(text);
                Field {
                    kind: Kind::Normal,
                    key,
                    strip_trailing,
                }
            }
        }
    }

    /// The fields `text` gives, in order (`None`: a delimiter is not in it).
    pub(crate) fn dissect(&self, text: &str) -> Result<Option<Map<String, Value>>, Failure> {
        let n = self.delimiters.len();
        let mut starts = Vec::with_capacity(n);
        let mut ends: Vec<usize> = Vec::with_capacity(n);
        for delimiter in &self.delimiters {
            let from = ends.last().map_or(0, |end| end + 1);
            let Some(found) = text.get(from..).and_then(|t| t.find(delimiter.as_str())) else {
                return Ok(None);
            };
            let mut start = from + found;
            if blank(delimiter) {
                start += last_white_space(&text[start..], delimiter.len());
            }
            starts.push(start);
            ends.push(start + delimiter.len() - 1);
        }
        let mut values: Vec<Option<String>> = vec![None; self.fields.len()];
        let mut head = 0;
        let mut capture = |head: &mut usize, value: &str| -> Result<(), Failure> {
            let Some(field) = self.fields.get(*head) else {
                return Err(Failure::untagged(
                    "the text has more delimited parts than the dissect pattern has fields",
                ));
            };
            values[*head] = Some(if field.strip_trailing {
                value.trim_end().to_owned()
            } else {
                value.to_owned()
            });
            *head += 1;
            Ok(())
        };
        for i in 0..n {
            if i == 0 && starts[0] == 0 {
                continue;
            }
            let from = if i > 0 { ends[i - 1] + 1 } else { 0 };
            capture(&mut head, &text[from..starts[i]])?;
        }
        if ends[n - 1] + 1 != text.len() {
            capture(&mut head, &text[ends[n - 1] + 1..])?;
        }
        Ok(Some(self.results(&values)))
    }

    /// `getDissectedFields`: normal fields, then appended ones, then indirect ones (which
    /// replace a key already written).
    fn results(&self, values: &[Option<String>]) -> Map<String, Value> {
        // Data Prepper keeps one field per key and kind (a map): the last of the pattern.
        let last = |kind: fn(Kind) -> bool, key: &str| {
            self.fields
                .iter()
                .rposition(|f| kind(f.kind) && f.key == key)
        };
        let mut out = Map::new();
        let mut seen = Vec::new();
        for field in &self.fields {
            if field.kind == Kind::Normal && !seen.contains(&field.key) {
                seen.push(field.key.clone());
                let i = last(|k| k == Kind::Normal, &field.key).expect("itself");
                if let Some(value) = &values[i] {
                    out.insert(field.key.clone(), Value::String(value.clone()));
                }
            }
        }
        let appended = self.appended(values);
        for (key, value) in &appended {
            out.insert(key.clone(), Value::String(value.clone()));
        }
        let mut seen = Vec::new();
        for field in &self.fields {
            if field.kind != Kind::Indirect || seen.contains(&field.key) {
                continue;
            }
            seen.push(field.key.clone());
            let i = last(|k| k == Kind::Indirect, &field.key).expect("itself");
            let name = if let Some(n) = last(|k| k == Kind::Normal, &field.key) {
                values[n].clone()
            } else if let Some(s) = last(|k| k == Kind::Skip, &field.key) {
                values[s].clone()
            } else {
                appended
                    .iter()
                    .find(|(k, _)| *k == field.key)
                    .map(|(_, v)| v.clone())
            };
            match (name, &values[i]) {
                (Some(name), Some(value)) if !name.is_empty() => {
                    out.insert(name, Value::String(value.clone()));
                }
                _ => tracing::debug!(
                    processor = "dissect",
                    field = field.key,
                    "indirect field not resolved; dropped"
                ),
            }
        }
        out
    }

    /// Each append key with its parts joined in order of their `/n` (a stable sort: the
    /// pattern's order among equal ones); a part with no value is empty.
    fn appended(&self, values: &[Option<String>]) -> Vec<(String, String)> {
        let mut keys: Vec<&str> = Vec::new();
        for field in &self.fields {
            if matches!(field.kind, Kind::Append(_)) && !keys.contains(&field.key.as_str()) {
                keys.push(&field.key);
            }
        }
        keys.into_iter()
            .map(|key| {
                let mut parts: Vec<(u32, usize)> = self
                    .fields
                    .iter()
                    .enumerate()
                    .filter_map(|(i, f)| match f.kind {
                        Kind::Append(n) if f.key == key => Some((n, i)),
                        _ => None,
                    })
                    .collect();
                parts.sort_by_key(|(n, _)| *n);
                let joined = parts
                    .iter()
                    .map(|(_, i)| values[*i].as_deref().unwrap_or(""))
                    .collect();
                (key.to_owned(), joined)
            })
            .collect()
    }
}

/// `findLastWhitespaceIndex`: how far a white space delimiter of `width` moves right to end
/// where the white space run at the start of `text` ends.
fn last_white_space(text: &str, width: usize) -> usize {
    // Java's `\S` split: white space is ` \t\n\x0B\f\r`.
    let run = text
        .bytes()
        .take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | 0x0B | 0x0C | b'\r'))
        .count();
    run.saturating_sub(width)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::Dissector;
    use crate::testing::{invalid, processor, run};

    fn dissect(pattern: &str, text: &str) -> Option<serde_json::Value> {
        Dissector::new(pattern)
            .unwrap()
            .dissect(text)
            .unwrap()
            .map(serde_json::Value::Object)
    }

    #[test]
    fn the_documented_field_notations() {
        assert_eq!(
            dissect(
                "%{Date} %{Time} %{Log_Type}: %{Message}",
                "07-25-2023 10:00:00 ERROR: error message"
            ),
            Some(
                json!({"Date": "07-25-2023", "Time": "10:00:00", "Log_Type": "ERROR", "Message": "error message"})
            )
        );
        assert_eq!(
            dissect("%{+field_name}, %{+field_name}", "foo, bar"),
            Some(json!({"field_name": "foobar"}))
        );
        assert_eq!(
            dissect("%{+field_name/2}, %{+field_name/1}", "foo, bar"),
            Some(json!({"field_name": "barfoo"}))
        );
        assert_eq!(
            dissect("%{?field_name}, %{&field_name}", "foo, bar"),
            Some(json!({"foo": "bar"}))
        );
        assert_eq!(
            dissect("%{field1->} %{field2}", "firstname    lastname"),
            Some(json!({"field1": "firstname", "field2": "lastname"}))
        );
        assert_eq!(dissect("%{} %{b}", "x y"), Some(json!({"b": "y"})));
    }

    #[test]
    fn padding_without_the_arrow_stays_on_the_field() {
        assert_eq!(
            dissect("%{a} %{b}", "x   y"),
            Some(json!({"a": "x  ", "b": "y"}))
        );
    }

    #[test]
    fn a_missing_delimiter_leaves_the_event_and_extra_text_fails() {
        assert_eq!(dissect("%{a}: %{b}", "no colon here"), None);
        // The text ends with the last delimiter: the field after it has no value.
        assert_eq!(dissect("%{a}, %{b}", "x, "), Some(json!({"a": "x"})));
        // Leading delimiter in the pattern.
        assert_eq!(
            dissect("[%{a}] %{b}", "[x] y z"),
            Some(json!({"a": "x", "b": "y z"}))
        );
        // Two literals, one field: the text after the last delimiter has no field.
        let d = Dissector::new("%{a} and ").unwrap();
        assert!(d.dissect("x and y").is_err());
        assert_eq!(
            d.dissect("x and ").unwrap().map(serde_json::Value::Object),
            Some(json!({"a": "x"}))
        );
    }

    #[test]
    fn the_processor_writes_converts_and_deletes() {
        let p = processor(
            "dissect:\n  map:\n    log: '%{ip} %{status} %{bytes} %{ok}'\n  target_types:\n    status: integer\n    bytes: double\n    ok: boolean\n  delete_source: true",
        );
        assert_eq!(
            run(&*p, json!({"log": "1.2.3.4 200 1.5 true"})),
            Some(json!({"ip": "1.2.3.4", "status": 200, "bytes": 1.5, "ok": true}))
        );
        // Not a number: kept as text; a failed match keeps the source.
        assert_eq!(
            run(&*p, json!({"log": "1.2.3.4 OK 1.5 true"})),
            Some(json!({"ip": "1.2.3.4", "status": "OK", "bytes": 1.5, "ok": true}))
        );
        assert_eq!(run(&*p, json!({"log": "x"})), Some(json!({"log": "x"})));
        assert_eq!(run(&*p, json!({"other": 1})), Some(json!({"other": 1})));
        // Nested keys in and out.
        let p = processor("dissect:\n  map:\n    /a/b: '%{/out/x}-%{y}'");
        assert_eq!(
            run(&*p, json!({"a": {"b": "1-2"}})),
            Some(json!({"a": {"b": "1-2"}, "out": {"x": "1"}, "y": "2"}))
        );
    }

    #[test]
    fn dissect_when_and_refused_configs() {
        let p = processor("dissect:\n  map:\n    m: '%{a} %{b}'\n  dissect_when: '/go == true'");
        assert_eq!(run(&*p, json!({"m": "1 2"})), Some(json!({"m": "1 2"})));
        assert_eq!(
            run(&*p, json!({"m": "1 2", "go": true})),
            Some(json!({"m": "1 2", "go": true, "a": "1", "b": "2"}))
        );
        assert!(invalid("dissect:\n  map:\n    m: '%{a}'").contains("no text between"));
        assert!(invalid("dissect:\n  map:\n    m: 'abc'").contains("has no field"));
        assert!(
            invalid("dissect:\n  map:\n    m: '%{a} %{b}'\n  target_types:\n    a: big_decimal")
                .contains("`big_decimal` is not supported")
        );
        assert!(
            invalid("dissect:\n  map:\n    m: '%{a} %{b}'\n  target_types:\n    a: float")
                .contains("write one of `integer`")
        );
        assert!(invalid("dissect:\n  map: {}").contains("dissect.map` is empty"));
        assert!(invalid("dissect:\n  patterns: {}").contains("unknown field"));
    }
}
