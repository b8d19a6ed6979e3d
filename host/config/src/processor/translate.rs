//! `translate`: looks values up in maps (single keys, comma-separated keys, number ranges) and
//! regular expressions and writes what they map to, as Data Prepper's
//! `TranslateProcessorConfig`, `MappingsParameterConfig`, `TargetsParameterConfig`,
//! `RegexParameterConfiguration` and `FileParameterConfig`. A mappings `file` is read when the
//! processor is built (`sluice validate` builds it), in the same shape as `mappings`.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use sluice_event::Expression;

use super::convert_entry_type::TargetType;
use super::{ProcessorConfig, Unsupported};
use crate::error::Errors;
use crate::location::join;

/// ```yaml
/// - translate:
///     mappings:
///       - source: status
///         targets:
///           - target: status_text
///             map:
///               404: "Not Found"
///               "500-599": "Server error"
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Translate {
    /// The translations: each a `source` and its `targets`. Default: none (then `file` is
    /// required).
    #[serde(default)]
    pub mappings: Vec<Mapping>,
    /// A YAML file holding more `mappings:` (same shape). A mapping whose `source` is also
    /// in `mappings` adds only the targets `mappings` does not name. Default: none.
    #[serde(default)]
    pub file: Option<MappingsFile>,
}

/// `file`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MappingsFile {
    /// The path of the YAML file (`mappings:` and its list). Required.
    pub name: String,
    /// Data Prepper's S3 object (`bucket`, `region`, `sts_role_arn`): not supported by sluice
    /// yet (the mappings file is read from the local disk only).
    #[serde(default)]
    pub aws: Option<Unsupported>,
}

/// The shape of a mappings `file`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileMappings {
    /// The translations, as `mappings` writes them.
    pub mappings: Vec<Mapping>,
}

impl FileMappings {
    /// Reads the mappings file `name`; the error says why it cannot be used.
    pub fn read(name: &str) -> Result<Self, String> {
        let text = std::fs::read_to_string(name)
            .map_err(|e| format!("cannot read mappings file `{name}`: {e}"))?;
        let parsed: FileMappings = serde_yaml::from_str(&text).map_err(|e| {
            format!("mappings file `{name}` is not `mappings:` and a list of mappings: {e}")
        })?;
        for (i, mapping) in parsed.mappings.iter().enumerate() {
            if let Some((key, message)) = mapping.problems().into_iter().next() {
                return Err(format!(
                    "mappings file `{name}`: `mappings[{i}].{key}` {message}"
                ));
            }
        }
        Ok(parsed)
    }
}

/// One item of `mappings`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mapping {
    /// The key whose value is looked up, or a list of keys under one parent (`a/b/x`,
    /// `a/b/y`): each value found is looked up, and the target gets the list of what they map
    /// to. Under a parent path (`a/b/code`), each object at the parent (lists are walked) is
    /// translated in place: its target is written beside the source. Required.
    pub source: Source,
    /// Where the translations go and how they are found. Required, at least one.
    pub targets: Vec<Target>,
}

/// `source`: one key or a list of them (Data Prepper's `Object`: a string or a list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    One(String),
    List(Vec<String>),
}

impl Source {
    /// The keys as written.
    pub fn keys(&self) -> &[String] {
        match self {
            Source::One(key) => std::slice::from_ref(key),
            Source::List(keys) => keys,
        }
    }
}

/// A string or a list of strings, read without `untagged` so the error says which.
impl<'de> Deserialize<'de> for Source {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Source;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key or a list of keys")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Source, E> {
                Ok(Source::One(v.to_owned()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Source, A::Error> {
                Vec::<String>::deserialize(de::value::SeqAccessDeserializer::new(seq))
                    .map(Source::List)
            }
        }
        d.deserialize_any(V)
    }
}

/// One item of `targets`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Target {
    /// The key the translation is written to. Required.
    pub target: String,
    /// Translations by value: a key (`ok`, `120`), several separated by commas (`"a,b"`),
    /// or a range of numbers (`"100-199"`, both ends included; ranges cannot overlap each
    /// other or a number key). Tried first. `map` or `regex` is required.
    #[serde(default, deserialize_with = "ordered")]
    pub map: Option<Vec<(String, Value)>>,
    /// Translate only events (or, under a parent path, objects) for which this condition
    /// is true.
    #[serde(default, deserialize_with = "crate::event::opt_condition")]
    pub translate_when: Option<Expression>,
    /// Translations by regular expression, tried after `map`.
    #[serde(default)]
    pub regex: Option<Regex>,
    /// What the target gets when nothing matches. Default: none (the target is not
    /// written).
    #[serde(default)]
    pub default: Option<String>,
    /// The type of what is written: `string` (the default), `integer`, `long`, `double` or
    /// `boolean`; every mapped value must convert to it.
    #[serde(default = "string", rename = "type")]
    pub r#type: TargetType,
}

const fn string() -> TargetType {
    TargetType::String
}

/// `regex`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Regex {
    /// Regular expressions and what a value they match maps to, tried in order. Required.
    #[serde(deserialize_with = "ordered_required")]
    pub patterns: Vec<(String, Value)>,
    /// `true` (the default): a pattern must match the whole value. `false`: a pattern
    /// matching part of the value replaces each match with its translation (`$1` is a
    /// group), and the target gets the result.
    #[serde(default = "crate::yes")]
    pub exact: bool,
}

fn ordered_required<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(String, Value)>, D::Error> {
    ordered(d).map(Option::unwrap_or_default)
}

/// A map in its written order, its keys read as text (YAML's `404:` is the key `404`).
fn ordered<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<(String, Value)>>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Option<Vec<(String, Value)>>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a map of values to what they translate to")
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(ScalarText(key)) = map.next_key()? {
                out.push((key, map.next_value()?));
            }
            Ok(Some(out))
        }
    }
    d.deserialize_any(V)
}

/// A map key: text, or a number or boolean as its text.
struct ScalarText(String);

impl<'de> Deserialize<'de> for ScalarText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ScalarText;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("text or a number")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ScalarText, E> {
                Ok(ScalarText(v.to_owned()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ScalarText, E> {
                Ok(ScalarText(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ScalarText, E> {
                Ok(ScalarText(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<ScalarText, E> {
                Ok(ScalarText(v.to_string()))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<ScalarText, E> {
                Ok(ScalarText(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

impl Mapping {
    /// The mapping's rules (Data Prepper's `@AssertTrue`s), each as (key inside the mapping,
    /// message); for the pipeline's `mappings` and a mappings file's alike.
    pub fn problems(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let keys = self.source.keys();
        if keys.is_empty() {
            out.push((
                "source".to_owned(),
                "is an empty list; name the key(s) to translate".to_owned(),
            ));
        } else if keys.iter().any(|k| k.trim().is_empty()) {
            out.push(("source".to_owned(), "has an empty key".to_owned()));
        } else {
            let parent = parent_path(&keys[0]);
            if keys.iter().any(|k| parent_path(k) != parent) {
                out.push((
                    "source".to_owned(),
                    "lists keys with different parents; the keys of one mapping must share their parent path (`a/b/x`, `a/b/y`)".to_owned(),
                ));
            }
        }
        if self.targets.is_empty() {
            out.push((
                "targets".to_owned(),
                "is empty; write at least one `- target: <key>` with a `map` or `regex`".to_owned(),
            ));
        }
        for (i, target) in self.targets.iter().enumerate() {
            let at = format!("targets[{i}]");
            if target.target.trim().is_empty() {
                out.push((
                    format!("{at}.target"),
                    "is empty; name the key to write".to_owned(),
                ));
            }
            if target.map.is_none() && target.regex.is_none() {
                out.push((at.clone(), "needs `map` or `regex` (or both)".to_owned()));
            }
            if target.r#type == TargetType::BigDecimal {
                out.push((
                    format!("{at}.type"),
                    "`big_decimal` is not supported by sluice (numbers are 64-bit integers or doubles); use `double` or `long`".to_owned(),
                ));
            }
        }
        out
    }
}

/// Data Prepper's `JsonExtractor.getParentPath`: the key without its last segment (`""` for
/// a top-level key), a leading `/` ignored.
pub fn parent_path(key: &str) -> String {
    let key = key.trim();
    let key = key.strip_prefix('/').unwrap_or(key);
    let fields: Vec<&str> = key.split('/').collect();
    if fields.len() <= 1 {
        String::new()
    } else {
        fields[..fields.len() - 1].join("/")
    }
}

impl ProcessorConfig for Translate {
    fn check(&self, path: &str, errors: &mut Errors) {
        if self.mappings.is_empty() && self.file.is_none() {
            errors.at(
                path,
                format!("`{path}` needs `mappings` or `file` (or both): what to translate"),
            );
        }
        for (i, mapping) in self.mappings.iter().enumerate() {
            let at = format!("{}[{i}]", join(path, "mappings"));
            for (key, message) in mapping.problems() {
                let key = join(&at, &key);
                errors.at(&key, format!("`{key}` {message}"));
            }
        }
        if let Some(file) = &self.file
            && file.name.trim().is_empty()
        {
            let at = join(path, "file.name");
            errors.at(
                &at,
                format!("`{at}` is empty; write the path of the mappings file"),
            );
        }
    }
}
