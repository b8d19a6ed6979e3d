//! `grok`, as Data Prepper's `GrokProcessor` (on java-grok): for each `match` key in order, each
//! of its patterns in order is searched for (unanchored) in the key's text; the named captures
//! of the patterns that match are merged into the event (or into `target_key`), stopping at
//! the first pattern that captured anything when `break_on_match`. A capture wrapped in one
//! pair of quotes loses them; `%{NUMBER:bytes:int}` converts (`int`, `long`, `float`,
//! `double`, `boolean`, `string`); a conversion that fails keeps the text and adds
//! `<name>_grokfailure`. An event nothing captured from is tagged `tags_on_match_failure`.
//!
//! Patterns: the standard set (the `grok` crate's, logstash's, which java-grok's is drawn
//! from: `COMMONAPACHELOG`, `COMBINEDAPACHELOG`, `SYSLOGBASE`, `IPORHOST`, ...), then files of
//! `patterns_directories`, then `pattern_definitions`. A match cannot be interrupted: the
//! `timeout_millis` budget is checked between patterns, and an event past it is tagged
//! `tags_on_timeout` and left as it was.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use sluice_config::processor::grok as config;
use sluice_event::{Event, Expression, Key};

use crate::{Apply, BuildError, BuildProcessor, Failure, Fate};

/// `grok`, built: the config, with its patterns compiled. Its tags are its own
/// (`tags_on_match_failure`, `tags_on_timeout`), not the frame's `tags_on_failure`.
pub struct Grok {
    config: config::Grok,
    matches: Vec<(Key, Vec<Compiled>)>,
    timeout: Option<Duration>,
    /// `tags_on_timeout`, else `tags_on_match_failure`.
    tags_on_timeout: Vec<String>,
}

/// One pattern of a `match` key, compiled.
struct Compiled {
    pattern: grok::Pattern,
    /// `name` → its conversion (`%{X:name:int}`).
    types: HashMap<String, Conversion>,
}

#[derive(Debug, Clone, Copy)]
enum Conversion {
    Int,
    Float,
    Boolean,
    Text,
}

impl BuildProcessor for config::Grok {
    type Processor = Grok;

    fn when(&self) -> Option<&Expression> {
        self.grok_when.as_ref()
    }

    fn build(&self) -> Result<Grok, BuildError> {
        let mut grok = grok::Grok::with_default_patterns();
        for dir in &self.patterns_directories {
            load_directory(&mut grok, dir, &self.patterns_files_glob)?;
        }
        for (name, regex) in &self.pattern_definitions {
            grok.add_pattern(name.as_str(), regex.as_str());
        }
        let mut matches = Vec::with_capacity(self.r#match.len());
        for (key, patterns) in &self.r#match {
            let mut compiled = Vec::with_capacity(patterns.len());
            for text in patterns {
                let (stripped, types) = conversions(text).map_err(|message| BuildError {
                    key: format!("match.{key}"),
                    message,
                })?;
                let pattern = grok
                    .compile(&stripped, self.named_captures_only)
                    .map_err(|e| BuildError {
                        key: format!("match.{key}"),
                        message: format!("grok pattern `{text}` does not compile: {e}"),
                    })?;
                compiled.push(Compiled { pattern, types });
            }
            matches.push((key.clone(), compiled));
        }
        let tags_on_timeout = if self.tags_on_timeout.is_empty() {
            self.tags_on_match_failure.clone()
        } else {
            self.tags_on_timeout.clone()
        };
        Ok(Grok {
            config: self.clone(),
            matches,
            timeout: (self.timeout_millis > 0).then(|| Duration::from_millis(self.timeout_millis)),
            tags_on_timeout,
        })
    }
}

/// Reads the pattern files of `dir` whose names match `glob` (`*`, `*.txt`, `name`): lines
/// `NAME regex`; blank lines and `#` comments skipped.
fn load_directory(grok: &mut grok::Grok, dir: &Path, glob: &str) -> Result<(), BuildError> {
    let error = |message: String| BuildError {
        key: "patterns_directories".to_owned(),
        message,
    };
    let entries = std::fs::read_dir(dir).map_err(|e| {
        error(format!(
            "cannot read pattern folder `{}`: {e}",
            dir.display()
        ))
    })?;
    let mut files: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| glob_matches(glob, n))
        })
        .collect();
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file).map_err(|e| {
            error(format!(
                "cannot read pattern file `{}`: {e}",
                file.display()
            ))
        })?;
        for line in text.lines() {
            let line = line.trim_start();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if let Some((name, regex)) = line.split_once(char::is_whitespace) {
                grok.add_pattern(name, regex.trim_start());
            }
        }
    }
    Ok(())
}

/// `*` and `?` wildcards, as a file glob.
fn glob_matches(glob: &str, name: &str) -> bool {
    fn go(g: &[u8], n: &[u8]) -> bool {
        match (g.first(), n.first()) {
            (None, None) => true,
            (Some(b'*'), _) => go(&g[1..], n) || (!n.is_empty() && go(g, &n[1..])),
            (Some(b'?'), Some(_)) => go(&g[1..], &n[1..]),
            (Some(a), Some(b)) if a == b => go(&g[1..], &n[1..]),
            _ => false,
        }
    }
    go(glob.as_bytes(), name.as_bytes())
}

/// The pattern with each `%{X:name:type}` written `%{X:name}`, and the types by name.
fn conversions(pattern: &str) -> Result<(String, HashMap<String, Conversion>), String> {
    let mut out = String::with_capacity(pattern.len());
    let mut types = HashMap::new();
    let mut rest = pattern;
    while let Some(start) = rest.find("%{") {
        out.push_str(&rest[..start]);
        let Some(len) = rest[start..].find('}') else {
            out.push_str(&rest[start..]);
            rest = "";
            break;
        };
        let inner = &rest[start + 2..start + len];
        let (head, definition) = match inner.split_once('=') {
            Some((head, def)) => (head, Some(def)),
            None => (inner, None),
        };
        let parts: Vec<&str> = head.split([':', ';']).collect();
        let head = match parts.as_slice() {
            [pattern, name, kind, ..] => {
                let conversion = match kind.to_ascii_lowercase().as_str() {
                    "int" | "integer" | "long" | "short" | "byte" => Conversion::Int,
                    "float" | "double" => Conversion::Float,
                    "boolean" => Conversion::Boolean,
                    "string" | "text" => Conversion::Text,
                    other => {
                        return Err(format!(
                            "`%{{{inner}}}`: unknown type `{other}`; the types are int, long, float, double, boolean, string"
                        ));
                    }
                };
                types.insert((*name).to_owned(), conversion);
                format!("{pattern}:{name}")
            }
            _ => head.to_owned(),
        };
        out.push_str("%{");
        out.push_str(&head);
        if let Some(def) = definition {
            out.push('=');
            out.push_str(def);
        }
        out.push('}');
        rest = &rest[start + len + 1..];
    }
    out.push_str(rest);
    Ok((out, types))
}

impl Apply for Grok {
    fn apply(&self, event: &mut Event, _: &'static str) -> Result<Fate, Failure> {
        let started = Instant::now();
        let mut attempted = 0u64;
        self.grok(event, started, &mut attempted);
        if self.config.performance_metadata {
            let attributes = &mut event.metadata.attributes;
            let add = |attributes: &mut Map<String, Value>, key: &str, n: u64| {
                let before = attributes.get(key).and_then(Value::as_u64).unwrap_or(0);
                attributes.insert(key.to_owned(), Value::from(before + n));
            };
            add(attributes, "_total_grok_patterns_attempted", attempted);
            let millis = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            add(attributes, "_total_grok_processing_time", millis);
        }
        Ok(Fate::Keep)
    }
}

impl Grok {
    /// Matches and merges; `attempted` counts the patterns tried.
    fn grok(&self, event: &mut Event, started: Instant, attempted: &mut u64) {
        let config = &self.config;
        let mut captures: Vec<(String, Value)> = Vec::new();
        let mut failed = None;
        'keys: for (key, patterns) in &self.matches {
            // Borrowed while matching: the captures are owned, and the event changes after.
            let number;
            let text: &str = match event.get(key) {
                Some(Value::String(s)) if !s.is_empty() => s,
                Some(v @ (Value::Number(_) | Value::Bool(_))) => {
                    number = v.to_string();
                    &number
                }
                Some(Value::Array(_) | Value::Object(_)) => {
                    failed = Some(&config.tags_on_match_failure);
                    break;
                }
                _ => continue,
            };
            for compiled in patterns {
                if self.timeout.is_some_and(|t| started.elapsed() > t) {
                    failed = Some(&self.tags_on_timeout);
                    break 'keys;
                }
                *attempted += 1;
                let before = captures.len();
                compiled.capture(text, config.keep_empty_captures, &mut captures);
                if captures.len() > before && config.break_on_match {
                    break 'keys;
                }
            }
        }
        if let Some(tags) = failed {
            event.metadata.add_tags(tags);
            return;
        }
        if captures.is_empty() {
            event.metadata.add_tags(&config.tags_on_match_failure);
            if let Some(target) = &config.target_key {
                let _ = event.put(target, Value::Object(Map::new()));
            }
            return;
        }
        match &config.target_key {
            Some(target) => {
                let mut object = Value::Object(Map::new());
                for (name, value) in captures {
                    merge(&mut object, &name, value, true);
                }
                let _ = event.put(target, object);
            }
            None => {
                for (name, value) in captures {
                    let overwrite = config.keys_to_overwrite.contains(&name);
                    merge(&mut event.data, &name, value, overwrite);
                }
            }
        }
    }
}

impl Compiled {
    /// Appends the captures of the first match in `text`, if any.
    fn capture(&self, text: &str, keep_empty: bool, out: &mut Vec<(String, Value)>) {
        let Some(matches) = self.pattern.match_against(text) else {
            return;
        };
        if keep_empty {
            for name in self.pattern.capture_names() {
                let value = matches.get(name);
                self.push(name, value, out);
            }
        } else {
            for (name, value) in matches.iter() {
                self.push(name, Some(value), out);
            }
        }
    }

    /// Appends the capture `name` as it goes into the event: quotes stripped, converted.
    fn push(&self, name: &str, text: Option<&str>, out: &mut Vec<(String, Value)>) {
        let Some(text) = text else {
            out.push((name.to_owned(), Value::Null));
            return;
        };
        let text = strip_quotes(text);
        let conversion = if self.types.is_empty() {
            None
        } else {
            self.types.get(name)
        };
        let converted = match conversion {
            None | Some(Conversion::Text) => Ok(Value::String(text.to_owned())),
            Some(Conversion::Int) => text
                .parse::<i64>()
                .map(Value::from)
                .map_err(|e| e.to_string()),
            Some(Conversion::Float) => {
                text.parse::<f64>()
                    .map_err(|e| e.to_string())
                    .and_then(|f| {
                        serde_json::Number::from_f64(f)
                            .map(Value::Number)
                            .ok_or_else(|| format!("`{text}` is not a finite number"))
                    })
            }
            Some(Conversion::Boolean) => Ok(Value::Bool(text.eq_ignore_ascii_case("true"))),
        };
        match converted {
            Ok(value) => out.push((name.to_owned(), value)),
            Err(reason) => {
                out.push((name.to_owned(), Value::String(text.to_owned())));
                out.push((format!("{name}_grokfailure"), Value::String(reason)));
            }
        }
    }
}

/// One pair of matching quotes around a capture goes, as java-grok does.
fn strip_quotes(text: &str) -> &str {
    for q in ['"', '\''] {
        if text.len() >= 2 && text.starts_with(q) && text.ends_with(q) {
            return &text[1..text.len() - 1];
        }
    }
    text
}

/// Puts a capture at `name` in `data`: set when absent or `overwrite`, else the existing value
/// and the capture become a list (or the capture joins the existing list).
fn merge(data: &mut Value, name: &str, value: Value, overwrite: bool) {
    // Most names are one level: no key to parse.
    if !name.contains('/')
        && let Value::Object(map) = data
    {
        match map.get_mut(name) {
            Some(slot) if !overwrite => append(slot, value),
            Some(slot) => *slot = value,
            None => {
                map.insert(name.to_owned(), value);
            }
        }
        return;
    }
    let key = Key::unchecked(name);
    match key.get_mut(data) {
        Some(slot) if !overwrite => append(slot, value),
        _ => {
            let _ = key.put(data, value);
        }
    }
}

/// The existing value and the capture become a list (or the capture joins the list).
fn append(slot: &mut Value, value: Value) {
    match slot {
        Value::Array(list) => list.push(value),
        other => {
            let old = other.take();
            *other = Value::Array(vec![old, value]);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{conversions, glob_matches};
    use crate::testing::{processor, run};

    #[test]
    fn common_apache_log_is_captured_by_name() {
        let p = processor("grok:\n  match:\n    message: ['%{COMMONAPACHELOG}']");
        let line = r#"127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326"#;
        let out = run(&*p, json!({"message": line})).unwrap();
        assert_eq!(out["clientip"], "127.0.0.1");
        assert_eq!(out["auth"], "frank");
        assert_eq!(out["timestamp"], "10/Oct/2000:13:55:36 -0700");
        assert_eq!(out["verb"], "GET");
        assert_eq!(out["request"], "/apache_pb.gif");
        assert_eq!(out["response"], "200");
        assert_eq!(out["bytes"], "2326");
        assert_eq!(out["message"], line, "the source key stays");
    }

    #[test]
    fn types_quotes_targets_and_failures() {
        let p =
            processor("grok:\n  match:\n    m: ['%{NUMBER:n:int} %{QS:q}']\n  target_key: parsed");
        assert_eq!(
            run(&*p, json!({"m": "42 \"hi there\""})),
            Some(json!({"m": "42 \"hi there\"", "parsed": {"n": 42, "q": "hi there"}}))
        );
        let p = processor(
            "grok:\n  match:\n    m: ['%{NUMBER:n}']\n  tags_on_match_failure: [no_match]",
        );
        let mut event =
            sluice_event::Event::new(json!({"m": "abc"}), sluice_event::Metadata::new("LOG", 0));
        p.process(&mut event);
        assert_eq!(event.metadata.tags, ["no_match"]);
        assert_eq!(event.data, json!({"m": "abc"}));
    }

    #[test]
    fn an_existing_key_becomes_a_list_unless_overwritten() {
        let p = processor("grok:\n  match:\n    m: ['%{WORD:m}']");
        assert_eq!(
            run(&*p, json!({"m": "abc"})),
            Some(json!({"m": ["abc", "abc"]}))
        );
        let p = processor("grok:\n  match:\n    m: ['%{WORD:m}']\n  keys_to_overwrite: [m]");
        assert_eq!(run(&*p, json!({"m": "abc def"})), Some(json!({"m": "abc"})));
    }

    #[test]
    fn break_on_match_stops_at_the_first_pattern_that_captures() {
        let p = processor("grok:\n  match:\n    m: ['%{INT:a}', '%{WORD:b}']");
        assert_eq!(
            run(&*p, json!({"m": "12"})),
            Some(json!({"m": "12", "a": "12"}))
        );
        let p =
            processor("grok:\n  match:\n    m: ['%{INT:a}', '%{WORD:b}']\n  break_on_match: false");
        assert_eq!(
            run(&*p, json!({"m": "12"})),
            Some(json!({"m": "12", "a": "12", "b": "12"}))
        );
    }

    #[test]
    fn pattern_definitions_and_type_suffixes_are_read() {
        let p = processor(
            "grok:\n  match:\n    m: ['%{CODE:c}']\n  pattern_definitions:\n    CODE: '[A-Z]{3}-\\d+'",
        );
        assert_eq!(
            run(&*p, json!({"m": "x ABC-12 y"})),
            Some(json!({"m": "x ABC-12 y", "c": "ABC-12"}))
        );
        let (stripped, types) = conversions("%{NUMBER:a:float} %{X:b}").unwrap();
        assert_eq!(stripped, "%{NUMBER:a} %{X:b}");
        assert_eq!(types.len(), 1);
        assert!(
            conversions("%{NUMBER:a:bignum}")
                .unwrap_err()
                .contains("unknown type `bignum`")
        );
        assert!(glob_matches("*.txt", "a.txt") && !glob_matches("*.txt", "a.log"));
    }
}
