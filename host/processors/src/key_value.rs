//! `key_value`, as Data Prepper's `KeyValueProcessor`, step for step:
//!
//! 1. The text at `source` (a number or boolean as its text; missing or `null`: skipped) is
//!    split into pairs: at matches of the field delimiter (Java's `Pattern.split`: trailing
//!    empty pieces dropped, nothing trimmed), or with `value_grouping` by a scan that never
//!    splits inside a group that opens in a value (`{}` `[]` `<>` `()` `""` `''`,
//!    `http://`/`https://` up to a space), pieces trimmed.
//! 2. Each pair is split at the first key-value delimiter; with none its value is
//!    `non_match_value`. A repeated key makes a list (`skip_duplicate_values`: each value
//!    once). An empty key, or a `null` value with `drop_keys_with_no_value`, is left out.
//!    With `recursive`, pairs are split at delimiters outside brackets instead, and a value
//!    wrapped in `[]`, `()` or `<>` is parsed the same way into an object (nested at most
//!    [`MAX_DEPTH`] levels; deeper fails the event).
//! 3. Per key: `include_keys`/`exclude_keys` (the key as parsed), `delete_key_regex`,
//!    `prefix`, `delete_value_regex` (text values), `whitespace: strict` (key trimmed at the
//!    end, value at the start: a value not text becomes its Java text, `[a, b]`, `{k=v}`),
//!    `transform_key`, `remove_brackets` (on the value's Java text); keys that become equal
//!    merge into lists. Then `default_values` for keys not there.
//! 4. The object goes to `destination` (when absent, or `overwrite_if_destination_exists`),
//!    or with `destination: null` key by key to the top level (an invalid key is skipped).
//!
//! What fails (a group never closed with `strict_grouping`, a `null` value with
//! `whitespace: strict`, a source that is an object or a list) adds `tags_on_failure` and
//! writes nothing; a `recursive` parse that fails adds them and writes `{}` with the
//! defaults, as Data Prepper.

use regex::Regex;
use serde_json::{Map, Value};
use sluice_config::processor::key_value::{self as config, TransformKey, Whitespace};
use sluice_event::{Event, Expression, Key};

use crate::{
    Apply, BuildError, BuildProcessor, Failure, Failures, Fate, java_string, normalize_key,
    normalize_keys, whole,
};

/// How deep `recursive` goes: Data Prepper's documentation names three levels (`[]`, `()`,
/// `<>`); this bounds the work a hostile text can ask for.
pub(crate) const MAX_DEPTH: usize = 64;

/// `key_value`, built: the config, with its delimiters and regexes compiled.
pub struct KeyValue {
    config: config::KeyValue,
    field_split: Regex,
    /// The field delimiter matching one whole character (`recursive`).
    field_char: OneChar,
    value_split: Regex,
    value_char: OneChar,
    /// `value_grouping`: the characters of `field_split_characters`.
    grouping: Option<Vec<char>>,
    /// `string_literal_character`.
    literal: Option<char>,
    non_match_value: Value,
    delete_key: Option<Regex>,
    delete_value: Option<Regex>,
}

impl BuildProcessor for config::KeyValue {
    type Processor = KeyValue;

    fn when(&self) -> Option<&Expression> {
        self.key_value_when.as_ref()
    }

    fn tags_on_failure(&self) -> &[String] {
        &self.tags_on_failure
    }

    fn build(&self) -> Result<KeyValue, BuildError> {
        let field = self.field_split();
        let value = self.value_split();
        let regex = |r: &str| Regex::new(r).expect("checked at validate");
        let nonempty = |r: &Option<String>| r.as_deref().filter(|r| !r.is_empty()).map(regex);
        Ok(KeyValue {
            config: self.clone(),
            field_split: regex(&field.regex),
            field_char: OneChar::new(&field.regex),
            value_split: regex(&value.regex),
            value_char: OneChar::new(&value.regex),
            grouping: self.value_grouping.then(|| {
                self.field_split_characters
                    .as_deref()
                    .unwrap_or_default()
                    .chars()
                    .collect()
            }),
            literal: self
                .string_literal_character
                .as_deref()
                .and_then(|s| s.chars().next()),
            non_match_value: self
                .non_match_value
                .as_deref()
                .cloned()
                .unwrap_or(Value::Null),
            delete_key: nonempty(&self.delete_key_regex),
            delete_value: nonempty(&self.delete_value_regex),
        })
    }
}

impl Apply for KeyValue {
    fn apply(&self, event: &mut Event, _: &'static str) -> Result<Fate, Failure> {
        let mut failures = Failures::default();
        if let Err(reason) = self.parse(event, &mut failures) {
            failures.add(reason);
        }
        failures.into_result()
    }
}

impl KeyValue {
    /// Parses and writes; an error tags the event (what was written stays). A key skipped at
    /// the top level goes to `failures`, untagged.
    fn parse(&self, event: &mut Event, failures: &mut Failures) -> Result<(), String> {
        let config = &self.config;
        let text = match java_string(event.get(&config.source)) {
            Ok(Some(text)) => text,
            Ok(None) => return Ok(()),
            Err(()) => return Err("the source is an object or a list, not text".to_owned()),
        };
        let pairs: Vec<String> = match &self.grouping {
            Some(delimiters) => self.split_grouped(&text, delimiters)?,
            None => java_split(&self.field_split, &text, 0)
                .into_iter()
                .map(str::to_owned)
                .collect(),
        };
        let mut failed = None;
        let parsed = if config.recursive {
            match self.recurse(&text, 0) {
                Ok(map) => map,
                Err(reason) => {
                    failed = Some(reason);
                    Map::new()
                }
            }
        } else {
            self.pairs_to_map(&pairs)
        };
        let processed = self.apply_options(parsed)?;
        match &config.destination {
            None => self.write_to_root(event, processed, failures),
            Some(destination) => {
                if config.overwrite_if_destination_exists || !event.contains(destination) {
                    let mut value = Value::Object(processed);
                    if config.normalize_keys {
                        value = normalize_keys(value);
                    }
                    event.put(destination, value).map_err(|e| e.to_string())?;
                }
            }
        }
        failed.map_or(Ok(()), Err)
    }

    fn write_to_root(
        &self,
        event: &mut Event,
        processed: Map<String, Value>,
        failures: &mut Failures,
    ) {
        let config = &self.config;
        for (name, mut value) in processed {
            let name = if config.normalize_keys {
                normalize_key(&name)
            } else {
                name
            };
            let key = match Key::parse(&name) {
                Ok(key) if !key.is_root() => key,
                _ => {
                    failures.add(Failure::untagged(format!(
                        "`{name}` is not a valid key; skipped"
                    )));
                    continue;
                }
            };
            if config.overwrite_if_destination_exists || !event.contains(&key) {
                if config.normalize_keys {
                    value = normalize_keys(value);
                }
                if let Err(e) = event.put(&key, value) {
                    failures.add(Failure::untagged(format!("`{name}` skipped: {e}")));
                }
            }
        }
    }

    /// Data Prepper's `parseWithValueGrouping`, on characters (Java indexes UTF-16 units; the
    /// same for every character but those past U+FFFF).
    fn split_grouped(&self, text: &str, delimiters: &[char]) -> Result<Vec<String>, String> {
        const STARTS: [&str; 8] = ["\"", "'", "(", "[", "<", "{", "http://", "https://"];
        const ENDS: [char; 8] = ['"', '\'', ')', ']', '>', '}', ' ', ' '];
        let chars: Vec<char> = text.chars().collect();
        // Byte offset of each character, and of the end.
        let mut at: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
        at.push(text.len());
        let n = chars.len();
        let escaped_quote =
            |i: usize| i > 0 && matches!(chars[i], '"' | '\'') && chars[i - 1] == '\\';
        let starts_group = |i: usize| STARTS.iter().position(|s| text[at[i]..].starts_with(s));
        let mut delimiter = DelimiterCache::default();
        let mut parts = Vec::new();
        let add = |parts: &mut Vec<String>, from: usize, to: usize| {
            let part = java_trim(&text[at[from]..at[to.min(n)]]);
            if !part.is_empty() {
                parts.push(part.to_owned());
            }
        };
        let (mut i, mut start) = (0, 0);
        while i < n {
            if escaped_quote(i) {
                i += 1;
                continue;
            }
            let mut skipped = false;
            if let Some(group) = starts_group(i) {
                let in_value = delimiter.splits(&self.value_split, text, at[start], at[i]);
                let literal = self.literal.is_some_and(|l| STARTS[group].starts_with(l));
                if in_value || literal {
                    // Data Prepper's `skipGroup`: to the closing character.
                    let mut j = i + 1;
                    loop {
                        if j >= n {
                            if self.config.strict_grouping {
                                return Err(format!(
                                    "no closing `{}` after character {i}",
                                    ENDS[group]
                                ));
                            }
                            j = n - 1;
                            break;
                        }
                        if escaped_quote(j) {
                            j += 1;
                        } else if chars[j] == ENDS[group] {
                            break;
                        } else {
                            j += 1;
                        }
                    }
                    i = j;
                    skipped = true;
                }
            }
            if delimiters.contains(&chars[i]) {
                if skipped {
                    i += 1;
                }
                add(&mut parts, start, i);
                i += 1;
                start = i;
            } else {
                i += 1;
            }
        }
        if start != i {
            add(&mut parts, start, i);
        }
        Ok(parts)
    }

    /// Data Prepper's `createNonRecursedMap`.
    fn pairs_to_map(&self, pairs: &[String]) -> Map<String, Value> {
        let mut map = Map::new();
        for pair in pairs {
            if let Some(l) = self.literal
                && pair.starts_with(l)
                && pair.ends_with(l)
            {
                if self.valid(pair, &Value::Null) {
                    map.insert(pair.clone(), Value::Null);
                }
                continue;
            }
            let terms = java_split(&self.value_split, pair, 2);
            let key = terms[0];
            let value = match terms.get(1) {
                Some(v) => Value::String((*v).to_owned()),
                None => self.non_match_value.clone(),
            };
            match map.get_mut(key) {
                Some(existing) => {
                    if !existing.is_array() {
                        *existing = Value::Array(vec![existing.take()]);
                    }
                    let Value::Array(list) = existing else {
                        unreachable!("made a list above")
                    };
                    if !self.config.skip_duplicate_values || !list.contains(&value) {
                        list.push(value);
                    }
                }
                None => {
                    if self.valid(key, &value) {
                        map.insert(key.to_owned(), value);
                    }
                }
            }
        }
        map
    }

    /// Data Prepper's `recurse`: pairs split at field delimiters outside brackets; a value in
    /// brackets is parsed into an object. Errors as Data Prepper's exceptions: a pair with no
    /// key and no `non_match_value`, a key with no value.
    fn recurse(&self, input: &str, depth: usize) -> Result<Map<String, Value>, String> {
        if depth >= MAX_DEPTH {
            return Err(format!("`recursive`: more than {MAX_DEPTH} levels"));
        }
        let mut stack: Vec<char> = Vec::new();
        let mut pairs = Vec::new();
        let mut pair_start = 0;
        for (i, c) in input.char_indices() {
            if closing(c).is_some() {
                stack.push(c);
            }
            if is_closing(c) && stack.last().and_then(|&o| closing(o)) == Some(c) {
                stack.pop();
            }
            if stack.is_empty() && self.field_char.matches(c) {
                pairs.push(&input[pair_start..i]);
                pair_start = i + c.len_utf8();
            }
        }
        pairs.push(&input[pair_start..]);
        let mut root = Map::new();
        for pair in pairs {
            let mut key = "";
            let mut value_start = None;
            for (i, c) in pair.char_indices() {
                if self.value_char.matches(c) {
                    key = strip_trailing(&pair[..i]);
                    let rest = &pair[i + c.len_utf8()..];
                    let spaces = rest.len() - rest.trim_start_matches(' ').len();
                    if spaces == rest.len() {
                        return Err(format!("`recursive`: no value in `{pair}`"));
                    }
                    value_start = Some(i + c.len_utf8() + spaces);
                    break;
                }
            }
            let (false, Some(start)) = (is_blank(key), value_start) else {
                if self.non_match_value.is_null() {
                    return Err(format!("`recursive`: no key in `{pair}`"));
                }
                continue;
            };
            let value = &pair[start..];
            let first = value.chars().next().expect("checked: not empty");
            match closing(first) {
                Some(close) => {
                    // Written only when the brackets close at the pair's end.
                    if value.len() > first.len_utf8() && value.ends_with(close) {
                        let inner = &value[first.len_utf8()..value.len() - close.len_utf8()];
                        let nested = self.recurse(strip_leading(inner), depth + 1)?;
                        root.insert(key.to_owned(), Value::Object(nested));
                    }
                }
                None => {
                    root.insert(
                        key.to_owned(),
                        Value::String(strip_leading(value).to_owned()),
                    );
                }
            }
        }
        Ok(root)
    }

    /// Data Prepper's `executeConfigs`.
    fn apply_options(&self, parsed: Map<String, Value>) -> Result<Map<String, Value>, String> {
        let mut out = Map::new();
        for (key, mut value) in parsed {
            if !self.config.include_keys.is_empty() && !self.config.include_keys.contains(&key) {
                continue;
            }
            if self.config.exclude_keys.contains(&key) {
                continue;
            }
            let key = match &self.delete_key {
                Some(re) => re.replace_all(&key, "").into_owned(),
                None => key,
            };
            let prefix = self.config.prefix.as_deref().unwrap_or_default();
            let mut key = format!("{prefix}{key}");
            if let (Some(re), Value::String(text)) = (&self.delete_value, &value) {
                value = Value::String(re.replace_all(text, "").into_owned());
            }
            if self.config.whitespace == Whitespace::Strict {
                if value.is_null() {
                    return Err(format!("`whitespace: strict`: key `{key}` has no value"));
                }
                key = strip_trailing(&key).to_owned();
                value = Value::String(strip_leading(&java_to_string(&value)).to_owned());
            }
            key = match self.config.transform_key {
                TransformKey::None => key,
                TransformKey::Lowercase => key.to_lowercase(),
                TransformKey::Uppercase => key.to_uppercase(),
                TransformKey::Capitalize => {
                    let mut chars = key.chars();
                    let Some(first) = chars.next() else {
                        return Err("`transform_key: capitalize`: a key is empty".to_owned());
                    };
                    first.to_uppercase().chain(chars).collect()
                }
            };
            if self.config.remove_brackets && !value.is_null() {
                value = Value::String(
                    java_to_string(&value)
                        .chars()
                        .filter(|c| !"[]()<>".contains(*c))
                        .collect(),
                );
            }
            self.add(&mut out, key, value);
        }
        for (key, value) in self.config.default_values.iter() {
            if !out.contains_key(key) && self.valid(key, value) {
                out.insert(key.clone(), value.clone());
            }
        }
        Ok(out)
    }

    /// Data Prepper's `addKeyValueToMap`.
    fn add(&self, map: &mut Map<String, Value>, key: String, value: Value) {
        if !self.valid(&key, &value) {
            return;
        }
        let value = match value {
            Value::Array(mut list) if list.len() == 1 => list.remove(0),
            other => other,
        };
        if !map.contains_key(&key) {
            map.insert(key, value);
            return;
        }
        // As Data Prepper: a scalar meets a value equal to any in the map (not only this key's).
        if self.config.skip_duplicate_values
            && !map[&key].is_array()
            && map.values().any(|v| *v == value)
        {
            return;
        }
        let existing = map.get_mut(&key).expect("checked above");
        match existing {
            Value::Array(list) => {
                if !self.config.skip_duplicate_values || !list.contains(&value) {
                    list.push(value);
                }
            }
            other => *other = Value::Array(vec![other.take(), value]),
        }
    }

    /// Data Prepper's `validKeyAndValue`.
    fn valid(&self, key: &str, value: &Value) -> bool {
        !(key.is_empty() || self.config.drop_keys_with_no_value && value.is_null())
    }
}

/// A regular expression asked whether it matches one whole character (Data Prepper's
/// `pattern.matcher(String.valueOf(c)).matches()`), answered from a table for ASCII.
struct OneChar {
    ascii: [bool; 128],
    regex: Regex,
}

impl OneChar {
    fn new(regex: &str) -> Self {
        let regex = whole(regex);
        let mut ascii = [false; 128];
        for (b, slot) in ascii.iter_mut().enumerate() {
            *slot = regex.is_match(&char::from(b as u8).to_string());
        }
        Self { ascii, regex }
    }

    fn matches(&self, c: char) -> bool {
        match self.ascii.get(c as usize) {
            Some(&m) => m,
            None => self.regex.is_match(c.encode_utf8(&mut [0; 4])),
        }
    }
}

/// Whether there is a non-empty match of the key-value delimiter in `text[from..to]`, as
/// Data Prepper's `keyValueDelimiterPattern.split(text.substring(start, i + 1)).length > 1`
/// asks (the character at `to` is the group's opening one). The first match from a position
/// is remembered, so a long text with many groups is scanned once, not once per group.
#[derive(Default)]
struct DelimiterCache {
    /// The position searched from, and the first non-empty match there.
    from: usize,
    found: Option<Option<(usize, usize)>>,
}

impl DelimiterCache {
    fn splits(&mut self, re: &Regex, text: &str, from: usize, to: usize) -> bool {
        let reuse = match self.found {
            Some(None) => from >= self.from,
            Some(Some((start, _))) => from >= self.from && start >= from,
            None => false,
        };
        if !reuse {
            let mut at = from;
            let mut found = None;
            while at <= text.len() {
                match re.find_at(text, at) {
                    Some(m) if m.start() == m.end() => {
                        at = m.end() + text[m.end()..].chars().next().map_or(1, char::len_utf8);
                    }
                    Some(m) => {
                        found = Some((m.start(), m.end()));
                        break;
                    }
                    None => break,
                }
            }
            self.from = from;
            self.found = Some(found);
        }
        matches!(self.found, Some(Some((_, end))) if end <= to)
    }
}

/// Java's `Pattern.split(text, limit)`: `limit` 0 drops trailing empty pieces, 2 splits once;
/// no match is the whole text; a zero-width match at the start makes no empty first piece.
fn java_split<'t>(re: &Regex, text: &'t str, limit: usize) -> Vec<&'t str> {
    let mut pieces = Vec::new();
    let mut index = 0;
    for m in re.find_iter(text) {
        if limit > 0 && pieces.len() + 1 >= limit {
            break;
        }
        if m.end() == 0 {
            continue;
        }
        pieces.push(&text[index..m.start()]);
        index = m.end();
    }
    if index == 0 {
        return vec![text];
    }
    pieces.push(&text[index..]);
    if limit == 0 {
        while pieces.last() == Some(&"") {
            pieces.pop();
        }
    }
    pieces
}

/// The closing bracket of an opening one (`recursive`'s brackets).
fn closing(c: char) -> Option<char> {
    match c {
        '[' => Some(']'),
        '(' => Some(')'),
        '<' => Some('>'),
        _ => None,
    }
}

fn is_closing(c: char) -> bool {
    matches!(c, ']' | ')' | '>')
}

/// Java's `Character.isWhitespace` (`strip*`, `isBlank`): Unicode white space but the
/// no-break spaces.
fn java_whitespace(c: char) -> bool {
    c.is_whitespace() && !matches!(c, '\u{a0}' | '\u{2007}' | '\u{202f}')
        || matches!(c, '\u{1c}'..='\u{1f}')
}

fn strip_leading(s: &str) -> &str {
    s.trim_start_matches(java_whitespace)
}

fn strip_trailing(s: &str) -> &str {
    s.trim_end_matches(java_whitespace)
}

fn is_blank(s: &str) -> bool {
    s.chars().all(java_whitespace)
}

/// Java's `String.trim`: control characters and spaces.
fn java_trim(s: &str) -> &str {
    s.trim_matches(|c| c <= ' ')
}

/// A value's Java `toString()`: lists `[a, b]`, maps `{k=v}`, `null`.
fn java_to_string(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Array(list) => {
            let items: Vec<String> = list.iter().map(java_to_string).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(map) => {
            let items: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{k}={}", java_to_string(v)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::MAX_DEPTH;
    use crate::testing::{invalid, processor, run, run_event};

    /// `parsed_message` after a `key_value` block of `options` on `{"message": text}`.
    fn parsed(options: &str, text: &str) -> Value {
        let p = processor(&format!("key_value:{options}"));
        let mut out = run(&*p, json!({ "message": text })).unwrap();
        out.as_object_mut()
            .unwrap()
            .remove("parsed_message")
            .unwrap_or(Value::Null)
    }

    const DOC25: &str = "key_value:\n  source: message\n  destination: parsed_kv\n  field_split_characters: '&'\n  value_split_characters: '='\n  transform_key: lowercase\n  delete_key_regex: '\\s+'\n  delete_value_regex: '^\\s+|\\s+$'\n  prefix: meta_\n  skip_duplicate_values: true\n  drop_keys_with_no_value: true";

    #[test]
    fn the_documented_cleanup_example() {
        // key-value.md:25: `drop_keys_with_no_value` drops `novalue` (null), not `empty=`.
        let p = processor(DOC25);
        let text = "key1=value1&key1=value1&Key Two = value two & empty=&novalue";
        assert_eq!(
            run(&*p, json!({"message": text})),
            Some(
                json!({"message": text, "parsed_kv": {"meta_key1": "value1", "meta_keytwo": "value two", "meta_empty": ""}})
            )
        );
        let text = "ENV = prod & TEAM = core & owner = alice ";
        assert_eq!(
            run(&*p, json!({"message": text})),
            Some(
                json!({"message": text, "parsed_kv": {"meta_env": "prod", "meta_team": "core", "meta_owner": "alice"}})
            )
        );
    }

    #[test]
    fn the_documented_value_grouping_example_to_the_top_level() {
        // key-value.md:127
        let p = processor(
            "key_value:\n  source: payload\n  destination: null\n  field_split_characters: '&&'\n  value_split_characters: null\n  key_value_delimiter_regex: '=='\n  value_grouping: true\n  remove_brackets: false\n  overwrite_if_destination_exists: false\n  non_match_value: null",
        );
        let payload = "a==1&&b==[x=y,z=w]&&c==(inner=thing)&&http==http://example.com path";
        assert_eq!(
            run(&*p, json!({"payload": payload, "a": "keep-me"})),
            Some(
                json!({"payload": payload, "a": "keep-me", "b": "[x=y,z=w]", "c": "(inner=thing)", "http": "http://example.com path"})
            )
        );
        let payload = "good==yes&&broken-token&&url==https://opensearch.org home";
        assert_eq!(
            run(&*p, json!({"payload": payload, "note": "second doc"})),
            Some(
                json!({"payload": payload, "note": "second doc", "broken-token": null, "good": "yes", "url": "https://opensearch.org home"})
            )
        );
    }

    const DOC222: &str = "key_value:\n  source: body\n  destination: parsed\n  key_value_when: '/type == \"nested\"'\n  recursive: true\n  field_split_characters: '&'\n  value_split_characters: '='\n  value_grouping: true\n  string_literal_character: '\"'\n  remove_brackets: false\n  include_keys: [item1, item2, owner]\n  default_values:\n    owner: unknown\n    region: eu-west-1\n  strict_grouping: true\n  tags_on_failure: [keyvalueprocessor_failure]";

    #[test]
    fn the_documented_recursive_example() {
        // key-value.md:222
        let p = processor(DOC222);
        let body = "item1=[a=1&b=(c=3&d=<e=5>)]&item2=2&owner=alice";
        assert_eq!(
            run(&*p, json!({"type": "nested", "body": body})),
            Some(json!({"type": "nested", "body": body, "parsed": {
                "owner": "alice", "item2": "2", "region": "eu-west-1",
                "item1": {"a": "1", "b": {"c": "3", "d": {"e": "5"}}}
            }}))
        );
        let flat = json!({"type": "flat", "body": "item1=[should=not&be=parsed]&item2=42"});
        assert_eq!(run(&*p, flat.clone()), Some(flat));
        let body = "item1=[desc=\"a=b + c=d\"&x=1]&item2=2";
        assert_eq!(
            run(&*p, json!({"type": "nested", "body": body})),
            Some(json!({"type": "nested", "body": body, "parsed": {
                "owner": "unknown", "item2": "2", "region": "eu-west-1",
                "item1": {"desc": "\"a=b + c=d\"", "x": "1"}
            }}))
        );
    }

    #[test]
    fn the_documented_options_table() {
        // key-value.md:356-377, one option each.
        let p = processor("key_value:\n  source: message1");
        assert_eq!(
            run(
                &*p,
                json!({"message1": "key1=value1", "message2": "key2=value2"})
            ),
            Some(
                json!({"message1": "key1=value1", "message2": "key2=value2", "parsed_message": {"key1": "value1"}})
            )
        );
        let p = processor("key_value:\n  destination: parsed_data");
        assert_eq!(
            run(&*p, json!({"message": "key1=value1"})),
            Some(json!({"message": "key1=value1", "parsed_data": {"key1": "value1"}}))
        );
        let kv12 = json!({"key1": "value1", "key2": "value2"});
        assert_eq!(
            parsed(
                "\n  field_split_characters: '&&'",
                "key1=value1&&key2=value2"
            ),
            kv12
        );
        assert_eq!(
            parsed("", "key1value1&key2=value2"),
            json!({"key1value1": null, "key2": "value2"})
        );
        assert_eq!(
            parsed("\n  prefix: custom", "key1=value1"),
            json!({"customkey1": "value1"})
        );
        assert_eq!(
            parsed("\n  delete_key_regex: '\\s'", "key1 =value1"),
            json!({"key1": "value1"})
        );
        assert_eq!(
            parsed("\n  delete_value_regex: '\\s'", "key1=value1 "),
            json!({"key1": "value1"})
        );
        assert_eq!(
            parsed("\n  include_keys: [key2]", "key1=value1&key2=value2"),
            json!({"key2": "value2"})
        );
        assert_eq!(
            parsed("\n  exclude_keys: [key2]", "key1=value1&key2=value2"),
            json!({"key1": "value1"})
        );
        assert_eq!(
            parsed(
                "\n  default_values:\n    defaultkey: defaultvalue",
                "key1=value1"
            ),
            json!({"key1": "value1", "defaultkey": "defaultvalue"})
        );
        assert_eq!(
            parsed("\n  default_values:\n    key1: abc", "key1=value1"),
            json!({"key1": "value1"})
        );
        assert_eq!(
            parsed(
                "\n  include_keys: [key1]\n  default_values:\n    key2: value2",
                "key1=value1&key2=abc"
            ),
            kv12
        );
        assert_eq!(
            parsed("\n  transform_key: lowercase", "Key1=value1"),
            json!({"key1": "value1"})
        );
        assert_eq!(
            parsed("\n  transform_key: uppercase", "key1=value1"),
            json!({"KEY1": "value1"})
        );
        assert_eq!(
            parsed("\n  transform_key: capitalize", "key1=value1"),
            json!({"Key1": "value1"})
        );
        assert_eq!(
            parsed("\n  whitespace: lenient", "key1  =  value1"),
            json!({"key1  ": "  value1"})
        );
        assert_eq!(
            parsed("\n  whitespace: strict", "key1  =  value1"),
            json!({"key1": "value1"})
        );
        assert_eq!(
            parsed(
                "\n  skip_duplicate_values: false",
                "key1=value1&key1=value1"
            ),
            json!({"key1": ["value1", "value1"]})
        );
        assert_eq!(
            parsed("\n  skip_duplicate_values: true", "key1=value1&key1=value1"),
            json!({"key1": "value1"})
        );
        assert_eq!(
            parsed("\n  remove_brackets: true", "key1=(value1)"),
            json!({"key1": "value1"})
        );
        assert_eq!(
            parsed("\n  remove_brackets: false", "key1=(value1)"),
            json!({"key1": "(value1)"})
        );
        let p =
            processor("key_value:\n  overwrite_if_destination_exists: true\n  destination: null");
        assert_eq!(
            run(
                &*p,
                json!({"message": "key1=new_value", "key1": "old_value"})
            ),
            Some(json!({"message": "key1=new_value", "key1": "new_value"}))
        );
        assert_eq!(
            parsed("\n  value_grouping: true", "key1=[a=b,c=d]&key2=value2"),
            json!({"key1": "[a=b,c=d]", "key2": "value2"})
        );
        assert_eq!(
            parsed("\n  drop_keys_with_no_value: true", "key1=value1&key2"),
            json!({"key1": "value1"})
        );
    }

    #[test]
    fn the_doubtful_documented_examples_as_data_prepper_runs_them() {
        // key-value.md:373 (`recursive`): the documented output leaves out `item2`.
        let text = "item1=[item1-subitem1=item1-subitem1-value&item1-subitem2=(item1-subitem2-subitem2A=item1-subitem2-subitem2A-value&item1-subitem2-subitem2B=item1-subitem2-subitem2B-value)]&item2=item2-value";
        assert_eq!(
            parsed("\n  recursive: true", text),
            json!({
                "item1": {
                    "item1-subitem1": "item1-subitem1-value",
                    "item1-subitem2": {
                        "item1-subitem2-subitem2A": "item1-subitem2-subitem2A-value",
                        "item1-subitem2-subitem2B": "item1-subitem2-subitem2B-value"
                    }
                },
                "item2": "item2-value"
            })
        );
        // key-value.md:361: `==` is two one-character delimiters; the pair splits at the
        // first `=`.
        assert_eq!(
            parsed("\n  value_split_characters: '=='", "key1==value1"),
            json!({"key1": "=value1"})
        );
        // key-value.md:358 and :360: `&\{2\}` is the text `&{2}`; and the `*_split_characters`
        // default must be emptied to use a regex.
        assert!(
            invalid("key_value:\n  field_delimiter_regex: '&\\{2\\}'")
                .contains("add `field_split_characters: \"\"`")
        );
        assert_eq!(
            parsed(
                "\n  field_split_characters: ''\n  field_delimiter_regex: '&{2}'",
                "key1=value1&&key2=value2"
            ),
            json!({"key1": "value1", "key2": "value2"})
        );
        assert_eq!(
            parsed(
                "\n  value_split_characters: ''\n  key_value_delimiter_regex: '={2}'",
                "key1==value1"
            ),
            json!({"key1": "value1"})
        );
        // key-value.md:379: a string literal needs `value_grouping`, and the example needs a
        // space between pairs and no null values.
        assert!(
            invalid("key_value:\n  string_literal_character: '\"'")
                .contains("only with `value_grouping: true`")
        );
        assert_eq!(
            parsed(
                "\n  string_literal_character: '\"'\n  value_grouping: true\n  field_split_characters: ' '",
                "text1 \"key1=value1\" text2 key2=value2"
            ),
            json!({"text1": null, "\"key1=value1\"": null, "text2": null, "key2": "value2"})
        );
        assert_eq!(
            parsed(
                "\n  string_literal_character: '\"'\n  value_grouping: true\n  field_split_characters: ' '\n  drop_keys_with_no_value: true",
                "text1 \"key1=value1\" text2 key2=value2"
            ),
            json!({"key2": "value2"})
        );
    }

    #[test]
    fn splits_as_java() {
        // Each character a delimiter; empty pieces and empty keys are left out; the leading
        // empty piece too.
        assert_eq!(
            parsed("\n  field_split_characters: '&;'", "&a=1;b=2&&"),
            json!({"a": "1", "b": "2"})
        );
        // A regular expression character must be escaped, as in Data Prepper.
        assert_eq!(
            parsed("\n  field_split_characters: '\\|'", "a=1|b=2"),
            json!({"a": "1", "b": "2"})
        );
        assert_eq!(parsed("", ""), json!({}));
        assert_eq!(parsed("", "=x&a=b=c"), json!({"a": "b=c"}));
        assert_eq!(
            parsed("\n  non_match_value: none", "flag&a=1"),
            json!({"flag": "none", "a": "1"})
        );
    }

    #[test]
    fn strict_whitespace_makes_text_of_lists_and_fails_on_null() {
        let p = processor("key_value:\n  whitespace: strict\n  tags_on_failure: [kv_fail]");
        let event = run_event(&*p, json!({"message": "a= 1&a= 2"}));
        assert_eq!(event.data["parsed_message"], json!({"a": "[ 1,  2]"}));
        let event = run_event(&*p, json!({"message": "a=1&flag"}));
        assert_eq!(event.data, json!({"message": "a=1&flag"}));
        assert_eq!(event.metadata.tags, ["kv_fail"]);
    }

    #[test]
    fn grouping_honours_quotes_and_strict_grouping_fails_the_event() {
        assert_eq!(
            parsed(
                "\n  value_grouping: true",
                "a=\"x&y\"&b='p&q'&c={1&2}&d=<e&f>"
            ),
            json!({"a": "\"x&y\"", "b": "'p&q'", "c": "{1&2}", "d": "<e&f>"})
        );
        // An escaped quote does not close the group; a group in a key does not count.
        assert_eq!(
            parsed("\n  value_grouping: true", "a=\"x\\\"&y\"&(k=v"),
            json!({"a": "\"x\\\"&y\"", "(k": "v"})
        );
        // Never closed: to the end, or with strict_grouping a failure.
        assert_eq!(
            parsed("\n  value_grouping: true", "a=[x&b=1"),
            json!({"a": "[x&b=1"})
        );
        let p = processor(
            "key_value:\n  value_grouping: true\n  strict_grouping: true\n  tags_on_failure: [t]",
        );
        let event = run_event(&*p, json!({"message": "a=[x&b=1"}));
        assert_eq!(event.data, json!({"message": "a=[x&b=1"}));
        assert_eq!(event.metadata.tags, ["t"]);
    }

    #[test]
    fn failures_are_tagged_and_never_panic() {
        let p = processor("key_value:\n  tags_on_failure: [t]");
        for data in [json!({"message": {"a": 1}}), json!({"message": [1]})] {
            let event = run_event(&*p, data.clone());
            assert_eq!(event.data, data);
            assert_eq!(event.metadata.tags, ["t"]);
        }
        // Missing or null: skipped, untagged; a number is its text.
        assert!(run_event(&*p, json!({})).metadata.tags.is_empty());
        assert!(
            run_event(&*p, json!({"message": null}))
                .metadata
                .tags
                .is_empty()
        );
        assert_eq!(
            run(&*p, json!({"message": 5})).unwrap()["parsed_message"],
            json!({"5": null})
        );
        // A destination through a value that is not an object.
        let p = processor("key_value:\n  destination: a/b\n  tags_on_failure: [t]");
        assert_eq!(
            run_event(&*p, json!({"message": "k=v", "a": 1}))
                .metadata
                .tags,
            ["t"]
        );
        // `capitalize` on a key that became empty.
        let p = processor(
            "key_value:\n  transform_key: capitalize\n  delete_key_regex: 'x'\n  tags_on_failure: [t]",
        );
        assert_eq!(
            run_event(&*p, json!({"message": "x=1"})).metadata.tags,
            ["t"]
        );
    }

    #[test]
    fn recursive_failures_write_the_defaults_and_depth_is_bounded() {
        let p = processor(
            "key_value:\n  recursive: true\n  tags_on_failure: [t]\n  default_values:\n    d: 1",
        );
        // A key with no value, as Data Prepper's index error.
        let event = run_event(&*p, json!({"message": "a=1&b="}));
        assert_eq!(event.data["parsed_message"], json!({"d": 1}));
        assert_eq!(event.metadata.tags, ["t"]);
        // A pair with no key (`non_match_value` null) fails too.
        let event = run_event(&*p, json!({"message": "a=1&&b=2"}));
        assert_eq!(event.metadata.tags, ["t"]);
        // Nesting: fine to the limit, a failure past it; a megabyte of brackets is quick.
        let nest = |n: usize| format!("{}v=1{}", "k=[".repeat(n), "]".repeat(n));
        let event = run_event(&*p, json!({"message": nest(MAX_DEPTH - 1)}));
        assert!(event.metadata.tags.is_empty());
        let event = run_event(&*p, json!({"message": nest(MAX_DEPTH)}));
        assert_eq!(event.metadata.tags, ["t"]);
        let started = std::time::Instant::now();
        let event = run_event(&*p, json!({"message": nest(100_000)}));
        assert_eq!(event.metadata.tags, ["t"]);
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
    }

    #[test]
    fn hostile_grouping_text_is_linear() {
        let p = processor("key_value:\n  value_grouping: true");
        let text = "(&".repeat(200_000) + &"a(".repeat(200_000);
        let started = std::time::Instant::now();
        let out = run(&*p, json!({"message": text})).unwrap();
        assert!(out["parsed_message"].is_object());
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
    }

    #[test]
    fn root_writes_skip_invalid_keys_and_normalize() {
        let p =
            processor("key_value:\n  destination: null\n  overwrite_if_destination_exists: false");
        assert_eq!(
            run(&*p, json!({"message": "a:b=1&x=2&k=3", "k": 0})),
            Some(json!({"message": "a:b=1&x=2&k=3", "k": 0, "x": "2"}))
        );
        let p = processor("key_value:\n  destination: null\n  normalize_keys: true");
        assert_eq!(
            run(&*p, json!({"message": "a:b=1"})),
            Some(json!({"message": "a:b=1", "a_b": "1"}))
        );
        assert_eq!(
            parsed("\n  normalize_keys: true", "a:b=1"),
            json!({"a_b": "1"})
        );
        // Skipping duplicates compares with every value, as Data Prepper.
        assert_eq!(
            parsed(
                "\n  skip_duplicate_values: true\n  transform_key: lowercase",
                "b=1&A=2&a=1"
            ),
            json!({"b": "1", "a": "2"})
        );
    }

    #[test]
    fn config_errors() {
        for (yaml, message) in [
            (
                "key_value:\n  include_keys: [a]\n  exclude_keys: [a]",
                "both `include_keys` and `exclude_keys`",
            ),
            (
                "key_value:\n  default_values: {a: 1}\n  exclude_keys: [a]",
                "a default key cannot be excluded",
            ),
            (
                "key_value:\n  recursive: true\n  remove_brackets: true",
                "brackets mark the levels",
            ),
            (
                "key_value:\n  recursive: true\n  field_split_characters: '&;'",
                "one character with `recursive: true`",
            ),
            (
                "key_value:\n  value_grouping: true\n  field_split_characters: ''\n  field_delimiter_regex: '&+'",
                "cannot be used together",
            ),
            (
                "key_value:\n  string_literal_character: x\n  value_grouping: true",
                "is `\"` or `'`",
            ),
            ("key_value:\n  delete_key_regex: '('", "does not compile"),
            (
                "key_value:\n  field_split_characters: '['",
                "does not compile",
            ),
            ("key_value:\n  value_split_characters: null", "is null"),
            (
                "key_value:\n  transform_key: title",
                "write `none`, `lowercase`",
            ),
        ] {
            let errors = invalid(yaml);
            assert!(errors.contains(message), "{yaml}: {errors}");
        }
    }
}
