//! `translate`, as Data Prepper's `TranslateProcessor` and `MappingsParser`. For each mapping
//! and each of its targets, in order: the `translate_when` is checked, each source value (as
//! text) is looked up in the target's single keys, then its number ranges (a value that reads
//! as a number: `-`, digits, one `.`), then its patterns (in the order written), then it
//! takes the `default`; what was found is converted to the target's `type` and written: the
//! value for a single `source`, the list of what the values found mapped to for a list.
//!
//! A source under a parent path (`a/list/code`) translates each object at the parent (a list
//! on the way is walked, each element in turn): the condition is checked against the object,
//! and the target is written into it, beside the source, as a plain name. A target key with
//! `${...}` is a format filled in from the event (top-level sources only, as Data Prepper).
//!
//! Where Data Prepper fails on a mapping (a source that is an object or a list, a value that
//! does not convert), the failure is logged and the mapping's later targets are skipped; the
//! other mappings go on. Data Prepper has no `tags_on_failure` here. Differences: a leading
//! `/` on a nested source is read as a path from the top (Data Prepper finds nothing), and a
//! key (`source`, `target`) is checked when built, not failed on each event.

use std::collections::HashMap;

use serde_json::{Map, Value};
use sluice_config::processor::convert_entry_type::TargetType;
use sluice_config::processor::translate::{self as config, FileMappings, Source, parent_path};
use sluice_event::{Event, Expression, Key, Metadata, Template, java_double};

use crate::convert_entry_type::convert_one;
use crate::substitute_string::java_replacement;
use crate::{Apply, BuildError, BuildProcessor, Failure, Failures, Fate, java_string, when};

/// `translate`, built: the pipeline's and the file's mappings, combined.
pub struct Translate {
    mappings: Vec<Mapping>,
}

struct Mapping {
    /// The source as written, for the logs.
    source: String,
    /// Each source's last segment.
    leaves: Vec<String>,
    /// The top-level keys of the sources (when `parent` is empty).
    keys: Vec<Key>,
    /// Whether `source` was a list (the target gets a list).
    list: bool,
    /// The segments of the sources' parent path; empty for top-level sources.
    parent: Vec<String>,
    targets: Vec<Target>,
}

enum TargetKey {
    Key(Key),
    Format(Template),
}

struct Target {
    name: String,
    key: TargetKey,
    when: Option<Expression>,
    single: HashMap<String, Value>,
    ranges: Vec<(f32, f32, Value)>,
    patterns: Vec<Pattern>,
    exact: bool,
    default: Option<String>,
    r#type: TargetType,
}

struct Pattern {
    whole: regex::Regex,
    part: regex::Regex,
    value: Value,
}

impl BuildProcessor for config::Translate {
    type Processor = Translate;

    fn build(&self) -> Result<Translate, BuildError> {
        let mut combined = self.mappings.clone();
        if let Some(file) = &self.file {
            let parsed = FileMappings::read(&file.name).map_err(|message| BuildError {
                key: "file.name".to_owned(),
                message,
            })?;
            combine(&mut combined, parsed.mappings);
        }
        let from_file = self.mappings.len();
        let mappings = combined
            .iter()
            .enumerate()
            .map(|(i, m)| {
                Mapping::build(m).map_err(|(key, message)| BuildError {
                    key: if i < from_file {
                        format!("mappings[{i}].{key}")
                    } else {
                        "file.name".to_owned()
                    },
                    message,
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Translate { mappings })
    }
}

/// Data Prepper's `MappingsHandler.getCombinedMappings`: a file mapping with the same source
/// as a pipeline mapping adds the targets the pipeline's does not name; any other is added.
fn combine(mappings: &mut Vec<config::Mapping>, from_file: Vec<config::Mapping>) {
    for file_mapping in from_file {
        let mut duplicate = false;
        for mapping in mappings.iter_mut() {
            if mapping.source == file_mapping.source {
                duplicate = true;
                for target in &file_mapping.targets {
                    if !mapping.targets.iter().any(|t| t.target == target.target) {
                        mapping.targets.push(target.clone());
                    }
                }
            }
        }
        if !duplicate {
            mappings.push(file_mapping);
        }
    }
}

impl Mapping {
    fn build(config: &config::Mapping) -> Result<Self, (String, String)> {
        let sources = config.source.keys();
        let parent = parent_path(&sources[0]);
        let parent: Vec<String> = if parent.is_empty() {
            Vec::new()
        } else {
            parent.split('/').map(str::to_owned).collect()
        };
        let leaves: Vec<String> = sources
            .iter()
            .map(|s| s.trim().rsplit('/').next().unwrap_or("").trim().to_owned())
            .collect();
        let keys = if parent.is_empty() {
            leaves
                .iter()
                .map(|leaf| Key::parse(leaf).map_err(|e| ("source".to_owned(), e.to_string())))
                .collect::<Result<_, _>>()?
        } else {
            Vec::new()
        };
        let targets = config
            .targets
            .iter()
            .enumerate()
            .map(|(i, t)| {
                Target::build(t, !parent.is_empty())
                    .map_err(|(key, message)| (format!("targets[{i}]{key}"), message))
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            source: sources.join(", "),
            leaves,
            keys,
            list: matches!(config.source, Source::List(_)),
            parent,
            targets,
        })
    }
}

impl Target {
    fn build(config: &config::Target, nested: bool) -> Result<Self, (String, String)> {
        let key = if config.target.contains("${") && !nested {
            TargetKey::Format(
                Template::parse(&config.target)
                    .map_err(|e| (".target".to_owned(), e.to_string()))?,
            )
        } else if nested {
            TargetKey::Key(Key::field(&config.target))
        } else {
            TargetKey::Key(
                Key::parse(&config.target).map_err(|e| (".target".to_owned(), e.to_string()))?,
            )
        };
        let r#type = config.r#type;
        let typed = |value: &Value, at: &str| {
            convert_one(value, r#type).map(drop).map_err(|e| {
                (
                    at.to_owned(),
                    format!("the value `{value}` does not convert to the target's `type` ({e})"),
                )
            })
        };
        let mut single = HashMap::new();
        let mut ranges: Vec<(f32, f32, Value)> = Vec::new();
        for (keys, value) in config.map.iter().flatten() {
            typed(value, ".map")?;
            for key in keys.split(',') {
                match range(key) {
                    Range::Not => {
                        if single.contains_key(key) {
                            return Err((".map".to_owned(), format!("has the key `{key}` twice")));
                        }
                        single.insert(key.trim().to_owned(), value.clone());
                    }
                    Range::Bad => {
                        return Err((
                            ".map".to_owned(),
                            format!("`{key}` is not a range of two numbers (`100-199`)"),
                        ));
                    }
                    Range::Between(low, high) => {
                        if ranges.iter().any(|&(l, h, _)| overlap((l, h), (low, high))) {
                            return Err((
                                ".map".to_owned(),
                                format!("the range `{key}` overlaps another range"),
                            ));
                        }
                        ranges.push((low, high, value.clone()));
                    }
                }
            }
        }
        for key in single.keys() {
            if let Some(n) = parsable(key)
                && ranges.iter().any(|&(l, h, _)| overlap((l, h), (n, n)))
            {
                return Err((
                    ".map".to_owned(),
                    format!("the key `{key}` is in one of the ranges"),
                ));
            }
        }
        let mut patterns = Vec::new();
        for (pattern, value) in config.regex.iter().flat_map(|r| &r.patterns) {
            typed(value, ".regex.patterns")?;
            let compile = |p: &str| {
                regex::Regex::new(p).map_err(|e| {
                    (
                        ".regex.patterns".to_owned(),
                        format!("regular expression `{pattern}` does not compile: {e}"),
                    )
                })
            };
            let part = compile(pattern)?;
            let whole = compile(&format!("^(?:{pattern})$"))?;
            patterns.push(Pattern {
                whole,
                part,
                value: value.clone(),
            });
        }
        if let Some(default) = &config.default {
            typed(&Value::String(default.clone()), ".default")?;
        }
        Ok(Self {
            name: config.target.clone(),
            key,
            when: config.translate_when.clone(),
            single,
            ranges,
            patterns,
            exact: config.regex.as_ref().is_none_or(|r| r.exact),
            default: config.default.clone(),
            r#type,
        })
    }

    /// What `value` translates to, if anything (`Err`: a non-exact pattern whose translation
    /// is not text, which Data Prepper fails on).
    fn lookup(&self, value: &str) -> Result<Option<Value>, Failure> {
        if let Some(found) = self.single.get(value) {
            return Ok(Some(found.clone()));
        }
        if let Some(n) = parsable(value)
            && let Some((_, _, found)) = self.ranges.iter().find(|(l, h, _)| *l <= n && n <= *h)
        {
            return Ok(Some(found.clone()));
        }
        for pattern in &self.patterns {
            if pattern.whole.is_match(value) {
                return Ok(Some(pattern.value.clone()));
            }
            if !self.exact && pattern.part.is_match(value) {
                let Value::String(to) = &pattern.value else {
                    return Err(Failure::untagged(format!(
                        "the translation of a partial match must be text, not `{}`",
                        pattern.value
                    )));
                };
                let replaced = pattern
                    .part
                    .replace_all(value, java_replacement(to).as_str());
                return Ok(Some(Value::String(replaced.into_owned())));
            }
        }
        Ok(self.default.clone().map(Value::String))
    }

    /// What the target gets from the values found: converted to `type`.
    fn output(&self, found: Vec<Value>, list: bool) -> Result<Value, Failure> {
        let convert = |v: &Value| {
            convert_one(v, self.r#type)
                .map_err(|e| Failure::untagged(format!("target `{}`: {e}", self.name)))
        };
        if list {
            found
                .iter()
                .map(convert)
                .collect::<Result<_, _>>()
                .map(Value::Array)
        } else {
            convert(&found[0])
        }
    }
}

enum Range {
    Not,
    Bad,
    Between(f32, f32),
}

/// A `map` key as `MappingsParser` reads it: with a `-` and exactly two parts of digits and
/// spaces, a range (ends in either order); a part that is empty (`-5`) fails, as Java's
/// `Float.parseFloat("")`.
fn range(key: &str) -> Range {
    if !key.contains('-') {
        return Range::Not;
    }
    // Java's `split` drops trailing empty parts.
    let mut parts: Vec<&str> = key.split('-').collect();
    while parts.len() > 1 && parts.last() == Some(&"") {
        parts.pop();
    }
    let numeric = |p: &str| p.chars().all(|c| c.is_numeric() || c == ' ');
    if parts.len() != 2 || !numeric(parts[0]) || !numeric(parts[1]) {
        return Range::Not;
    }
    match (
        parts[0].trim().parse::<f32>(),
        parts[1].trim().parse::<f32>(),
    ) {
        (Ok(a), Ok(b)) => Range::Between(a.min(b), a.max(b)),
        _ => Range::Bad,
    }
}

/// commons-lang's `Range.isOverlappedBy`.
fn overlap(a: (f32, f32), b: (f32, f32)) -> bool {
    let contains = |r: (f32, f32), n: f32| r.0 <= n && n <= r.1;
    contains(a, b.0) || contains(a, b.1) || contains(b, a.0)
}

/// commons-lang's `NumberUtils.isParsable`, then `Float.parseFloat`: an optional `-`, digits
/// and at most one `.`, not last.
fn parsable(text: &str) -> Option<f32> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let ok = !digits.is_empty()
        && !text.ends_with('.')
        && digits.chars().filter(|&c| c == '.').count() <= 1
        && digits.chars().all(|c| c.is_ascii_digit() || c == '.');
    ok.then(|| text.parse().ok()).flatten()
}

/// A value of a nested object as Java's `toString()` writes it (`null`: none).
fn object_text(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        Value::Number(n) if n.is_f64() => Some(java_double(n.as_f64().unwrap_or(f64::NAN))),
        other => Some(other.to_string()),
    }
}

impl Apply for Translate {
    fn apply(&self, event: &mut Event, name: &'static str) -> Result<Fate, Failure> {
        let mut failures = Failures::default();
        for mapping in &self.mappings {
            let result = if mapping.parent.is_empty() {
                self.top_level(mapping, event, name)
            } else {
                self.nested(mapping, event, name)
            };
            if let Err(e) = result {
                failures.add(Failure::untagged(format!(
                    "source `{}`: {e}",
                    mapping.source
                )));
            }
        }
        failures.into_result()
    }
}

impl Translate {
    fn top_level(&self, mapping: &Mapping, event: &mut Event, name: &str) -> Result<(), Failure> {
        for target in &mapping.targets {
            if !when(name, target.when.as_ref(), event) {
                continue;
            }
            let mut found = Vec::new();
            for key in &mapping.keys {
                let text = java_string(event.get(key)).map_err(|()| {
                    Failure::untagged(format!("`{}` is an object or a list", key.as_str()))
                })?;
                if let Some(text) = text
                    && let Some(value) = target.lookup(&text)?
                {
                    found.push(value);
                }
            }
            if found.is_empty() {
                continue;
            }
            let value = target.output(found, mapping.list)?;
            let key = match &target.key {
                TargetKey::Key(key) => key.clone(),
                TargetKey::Format(format) => {
                    let text = format
                        .render(event)
                        .map_err(|e| Failure::untagged(e.to_string()))?;
                    Key::parse(&text).map_err(|e| Failure::untagged(e.to_string()))?
                }
            };
            event
                .put(&key, value)
                .map_err(|e| Failure::untagged(e.to_string()))?;
        }
        Ok(())
    }

    fn nested(&self, mapping: &Mapping, event: &mut Event, name: &str) -> Result<(), Failure> {
        let root = Key::field(&mapping.parent[0]);
        if !event.contains(&root) {
            return Ok(());
        }
        let mut objects = Vec::new();
        objects_at(&mut event.data, &mapping.parent, &mut objects);
        for object in objects {
            for target in &mapping.targets {
                if target.when.is_some() {
                    let view = Event::new(Value::Object(object.clone()), Metadata::new("event", 0));
                    if !when(name, target.when.as_ref(), &view) {
                        continue;
                    }
                }
                let mut found = Vec::new();
                for leaf in &mapping.leaves {
                    if let Some(text) = object.get(leaf).and_then(object_text)
                        && let Some(value) = target.lookup(&text)?
                    {
                        found.push(value);
                    }
                }
                if found.is_empty() {
                    continue;
                }
                let value = target.output(found, mapping.list)?;
                object.insert(target.name.clone(), value);
            }
        }
        Ok(())
    }
}

/// `JsonExtractor.getObjectFromPath`: the objects at `path` under `value`, lists walked.
fn objects_at<'v>(
    value: &'v mut Value,
    path: &[String],
    out: &mut Vec<&'v mut Map<String, Value>>,
) {
    match value {
        Value::Array(items) => {
            for item in items {
                objects_at(item, path, out);
            }
        }
        Value::Object(map) => match path.split_first() {
            None => out.push(map),
            Some((first, rest)) => {
                if let Some(inner) = map.get_mut(first) {
                    objects_at(inner, rest, out);
                }
            }
        },
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::testing::{invalid, processor, run};

    #[test]
    fn the_documented_basic_example() {
        let p = processor(
            "translate:\n  mappings:\n    - source: status\n      targets:\n        - target: translated_result\n          map:\n            404: Not Found",
        );
        assert_eq!(
            run(&*p, json!({"status": "404"})),
            Some(json!({"status": "404", "translated_result": "Not Found"}))
        );
        // A number is looked up as its text.
        assert_eq!(
            run(&*p, json!({"status": 404})),
            Some(json!({"status": 404, "translated_result": "Not Found"}))
        );
        assert_eq!(
            run(&*p, json!({"status": "200"})),
            Some(json!({"status": "200"}))
        );
    }

    #[test]
    fn keys_ranges_patterns_default_in_that_order() {
        let p = processor(
            "translate:\n  mappings:\n    - source: code\n      targets:\n        - target: out\n          map:\n            'a, b': letter\n            '100-199': hundreds\n            '250': exact\n          regex:\n            patterns:\n              '2[0-9]{2}': two\n              'x.*': starts_x\n          default: other",
        );
        for (code, out) in [
            (json!("a"), "letter"),
            (json!("b"), "letter"),
            (json!(150), "hundreds"),
            (json!("150.5"), "hundreds"),
            (json!("250"), "exact"),
            (json!("299"), "two"),
            (json!("xyz"), "starts_x"),
            (json!("axe"), "other"),
        ] {
            assert_eq!(
                run(&*p, json!({"code": code.clone()})).unwrap()["out"],
                json!(out),
                "{code}"
            );
        }
    }

    #[test]
    fn partial_patterns_replace_the_match() {
        let p = processor(
            "translate:\n  mappings:\n    - source: m\n      targets:\n        - target: t\n          regex:\n            exact: false\n            patterns:\n              '(\\d+)ms': '$1 milliseconds'",
        );
        assert_eq!(
            run(&*p, json!({"m": "took 5ms"})).unwrap()["t"],
            json!("took 5 milliseconds")
        );
        assert_eq!(
            run(&*p, json!({"m": "5ms"})).unwrap()["t"],
            json!("$1 milliseconds")
        );
    }

    #[test]
    fn a_list_source_gives_a_list_and_types_convert() {
        let p = processor(
            "translate:\n  mappings:\n    - source: [a, b, c]\n      targets:\n        - target: t\n          type: integer\n          map:\n            one: 1\n            two: '2'",
        );
        assert_eq!(
            run(&*p, json!({"a": "one", "b": "nope", "c": "two"})).unwrap()["t"],
            json!([1, 2])
        );
    }

    #[test]
    fn nested_sources_translate_each_object_in_place() {
        let p = processor(
            "translate:\n  mappings:\n    - source: /c/items/code\n      targets:\n        - target: label\n          translate_when: '/skip != true'\n          map:\n            '1': one\n            '2': two",
        );
        assert_eq!(
            run(
                &*p,
                json!({"c": {"items": [{"code": 1}, {"code": "2", "skip": true}, {"code": 2}]}})
            ),
            Some(
                json!({"c": {"items": [{"code": 1, "label": "one"}, {"code": "2", "skip": true}, {"code": 2, "label": "two"}]}})
            )
        );
    }

    #[test]
    fn translate_when_and_dynamic_targets() {
        let p = processor(
            "translate:\n  mappings:\n    - source: s\n      targets:\n        - target: 'out_${/kind}'\n          translate_when: '/response != null'\n          map:\n            a: A",
        );
        assert_eq!(
            run(&*p, json!({"s": "a", "kind": "x"})),
            Some(json!({"s": "a", "kind": "x"}))
        );
        assert_eq!(
            run(&*p, json!({"s": "a", "kind": "x", "response": 1})),
            Some(json!({"s": "a", "kind": "x", "response": 1, "out_x": "A"}))
        );
    }

    #[test]
    fn a_mappings_file_adds_to_the_pipelines_mappings() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("m.yaml");
        std::fs::write(
            &file,
            "mappings:\n  - source: s\n    targets:\n      - target: t\n        map: {a: from_file}\n      - target: u\n        map: {a: U}\n  - source: other\n    targets:\n      - target: o\n        map: {x: X}\n",
        )
        .unwrap();
        let p = processor(&format!(
            "translate:\n  file:\n    name: '{}'\n  mappings:\n    - source: s\n      targets:\n        - target: t\n          map: {{a: inline}}",
            file.display()
        ));
        assert_eq!(
            run(&*p, json!({"s": "a", "other": "x"})),
            Some(json!({"s": "a", "other": "x", "t": "inline", "u": "U", "o": "X"}))
        );
        assert!(
            invalid("translate:\n  file:\n    name: /nonexistent/m.yaml")
                .contains("cannot read mappings file")
        );
        std::fs::write(&file, "mappings:\n  - source: s\n    targets: []\n").unwrap();
        assert!(
            invalid(&format!(
                "translate:\n  file:\n    name: '{}'",
                file.display()
            ))
            .contains("`mappings[0].targets` is empty")
        );
    }

    #[test]
    fn bad_configs_are_refused() {
        let t = |rest: &str| {
            format!(
                "translate:\n  mappings:\n    - source: s\n      targets:\n        - target: t\n{rest}"
            )
        };
        assert!(
            invalid(&t(
                "          map:\n            '1-10': a\n            '5-20': b"
            ))
            .contains("overlaps")
        );
        assert!(
            invalid(&t(
                "          map:\n            '1-10': a\n            '5': b"
            ))
            .contains("is in one of the ranges")
        );
        assert!(
            invalid(&t(
                "          type: integer\n          map:\n            a: x"
            ))
            .contains("does not convert")
        );
        assert!(
            invalid(&t(
                "          regex:\n            patterns:\n              '(': x"
            ))
            .contains("does not compile")
        );
        assert!(invalid(&t("          default: x")).contains("needs `map` or `regex`"));
        assert!(invalid("translate:\n  mappings: []").contains("needs `mappings` or `file`"));
        assert!(invalid("translate:\n  mappings:\n    - source: [a/x, b/y]\n      targets:\n        - target: t\n          map: {a: b}").contains("different parents"));
        assert!(invalid("translate:\n  file:\n    name: m.yaml\n    aws:\n      bucket: b\n      region: r\n      sts_role_arn: a").contains("not supported by sluice"));
    }
}
