//! `key_value`: parses `key=value&key=value` text from a key into an object, as Data
//! Prepper's `KeyValueProcessorConfig`. Its regular expressions are checked when the pipeline
//! is (`sluice validate`).

use std::collections::BTreeSet;

use serde::Deserialize;
use serde_json::{Map, Value};
use sluice_event::{Expression, Key};

use super::{ProcessorConfig, regexes};
use crate::error::Errors;
use crate::location::join;

/// ```yaml
/// - key_value:
///     source: message
///     destination: parsed
///     field_split_characters: "&"
///     value_split_characters: "="
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyValue {
    /// The key holding the text to parse (a number or boolean is read as its text). Default
    /// `message`.
    #[serde(default = "message", deserialize_with = "crate::event::key")]
    pub source: Key,
    /// Where the parsed object goes. Default `parsed_message`; `null` writes each parsed key
    /// to the event's top level.
    #[serde(default = "parsed_message", deserialize_with = "crate::event::opt_key")]
    pub destination: Option<Key>,
    /// The characters between pairs, each one a delimiter (`&;` splits at `&` and at `;`).
    /// As in Data Prepper they make a regular expression unescaped: a regular expression
    /// character must be escaped with `\`. Empty is `&`. Default `&`; set it to `""` (or
    /// `null`) to use `field_delimiter_regex`.
    #[serde(default = "ampersand")]
    pub field_split_characters: Option<String>,
    /// A regular expression between pairs (`&+`), instead of `field_split_characters`
    /// (which must then be `""` or `null`). Cannot be used with `value_grouping`.
    #[serde(default)]
    pub field_delimiter_regex: Option<String>,
    /// The characters between a key and its value, as `field_split_characters`; a pair is
    /// split at the first. Empty is `=`. Default `=`; set it to `""` (or `null`) to use
    /// `key_value_delimiter_regex`.
    #[serde(default = "equals")]
    pub value_split_characters: Option<String>,
    /// A regular expression between a key and its value (`=+`), instead of
    /// `value_split_characters` (which must then be `""` or `null`).
    #[serde(default)]
    pub key_value_delimiter_regex: Option<String>,
    /// Keys and values added when the text has no such key (not prefixed or transformed).
    /// Default: none.
    #[serde(default)]
    pub default_values: Box<Map<String, Value>>,
    /// The value of a pair with no key-value delimiter (`novalue`). Default `null`.
    #[serde(default)]
    pub non_match_value: Option<Box<Value>>,
    /// Replace the characters a key cannot have with `_` in the keys written. Default false.
    #[serde(default)]
    pub normalize_keys: bool,
    /// Only these parsed keys are kept (compared before any change to the key). Default:
    /// all.
    #[serde(default)]
    pub include_keys: Vec<String>,
    /// These parsed keys are left out. Cannot name an `include_keys` or `default_values` key.
    /// Default: none.
    #[serde(default)]
    pub exclude_keys: Vec<String>,
    /// Text put before every parsed key. Default: none.
    #[serde(default)]
    pub prefix: Option<String>,
    /// A regular expression whose matches are removed from keys. Default: none.
    #[serde(default)]
    pub delete_key_regex: Option<String>,
    /// A regular expression whose matches are removed from text values. Default: none.
    #[serde(default)]
    pub delete_value_regex: Option<String>,
    /// `none` (the default), `lowercase`, `uppercase` or `capitalize` (first letter): applied
    /// to the key after `prefix`.
    #[serde(default)]
    pub transform_key: TransformKey,
    /// `lenient` (the default: white space around the delimiter stays in the key and the
    /// value) or `strict` (trimmed).
    #[serde(default)]
    pub whitespace: Whitespace,
    /// A repeated key keeps each value only once. Default false (a repeated key's values make
    /// a list).
    #[serde(default)]
    pub skip_duplicate_values: bool,
    /// Remove `[]`, `()` and `<>` characters from values. Default false.
    #[serde(default)]
    pub remove_brackets: bool,
    /// Never split pairs inside `{}`, `[]`, `<>`, `()`, `""`, `''`, or after `http://` or
    /// `https://` up to a space, in a value. Default false.
    #[serde(default)]
    pub value_grouping: bool,
    /// A value in `[]`, `()` or `<>` is itself parsed into an object, nested up to 64 levels.
    /// The other options apply to the outer keys only. Default false.
    #[serde(default)]
    pub recursive: bool,
    /// Replace the `destination` (or top-level keys) that already exist. Default true.
    #[serde(default = "crate::yes")]
    pub overwrite_if_destination_exists: bool,
    /// Leave out keys whose value is `null` (a pair with no delimiter, without
    /// `non_match_value`). Default false.
    #[serde(default)]
    pub drop_keys_with_no_value: bool,
    /// With `value_grouping`, a group that is never closed fails the event (tagged
    /// `tags_on_failure`, nothing written). Default false.
    #[serde(default)]
    pub strict_grouping: bool,
    /// `"` or `'`: with `value_grouping`, a pair wrapped whole in it is a key with value
    /// `null`, never split. Default: none.
    #[serde(default)]
    pub string_literal_character: Option<String>,
    /// Tags added to an event that could not be parsed. Default: none.
    #[serde(default)]
    pub tags_on_failure: Vec<String>,
    /// Parse only events for which this condition is true.
    #[serde(default, deserialize_with = "crate::event::opt_condition")]
    pub key_value_when: Option<Expression>,
}

/// Data Prepper's `TransformOption` (`""` is `none`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TransformKey {
    #[default]
    None,
    Lowercase,
    Uppercase,
    Capitalize,
}

impl<'de> Deserialize<'de> for TransformKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match String::deserialize(d)?.as_str() {
            "" | "none" => Ok(Self::None),
            "lowercase" => Ok(Self::Lowercase),
            "uppercase" => Ok(Self::Uppercase),
            "capitalize" => Ok(Self::Capitalize),
            other => Err(serde::de::Error::custom(format!(
                "`{other}` is not a transform; write `none`, `lowercase`, `uppercase` or `capitalize`"
            ))),
        }
    }
}

/// Data Prepper's `WhitespaceOption`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Whitespace {
    #[default]
    Lenient,
    Strict,
}

fn message() -> Key {
    Key::unchecked("message")
}

fn parsed_message() -> Option<Key> {
    Some(Key::unchecked("parsed_message"))
}

fn ampersand() -> Option<String> {
    Some("&".to_owned())
}

fn equals() -> Option<String> {
    Some("=".to_owned())
}

/// Data Prepper's `buildRegexFromCharacters`: each character an alternative, a `\` kept with
/// the next one (`"&;"` is `&|;`, `"\\|"` is `\|`).
pub fn regex_from_characters(characters: &str) -> String {
    let mut regex = String::new();
    for c in characters.chars() {
        regex.push(c);
        if c != '\\' {
            regex.push('|');
        }
    }
    regex.pop();
    regex
}

/// How pairs (or a key from its value) are split: a regular expression and the characters it
/// was made of (`None` when written as a regex).
pub struct Split {
    pub regex: String,
    pub characters: Option<String>,
}

impl KeyValue {
    /// The regular expression between pairs.
    pub fn field_split(&self) -> Split {
        split(
            self.field_delimiter_regex.as_deref(),
            self.field_split_characters.as_deref(),
            "&",
        )
    }

    /// The regular expression between a key and its value.
    pub fn value_split(&self) -> Split {
        split(
            self.key_value_delimiter_regex.as_deref(),
            self.value_split_characters.as_deref(),
            "=",
        )
    }
}

fn split(regex: Option<&str>, characters: Option<&str>, default: &str) -> Split {
    match (regex, characters) {
        (Some(regex), _) if !regex.is_empty() => Split {
            regex: regex.to_owned(),
            characters: None,
        },
        (_, Some(c)) if !c.is_empty() => Split {
            regex: regex_from_characters(c),
            characters: Some(c.to_owned()),
        },
        _ => Split {
            regex: default.to_owned(),
            characters: Some(default.to_owned()),
        },
    }
}

impl ProcessorConfig for KeyValue {
    fn check(&self, path: &str, errors: &mut Errors) {
        let at = |key: &str| join(path, key);
        if self.source.as_str().is_empty() {
            errors.at(
                &at("source"),
                format!("`{path}.source` is empty; write the key holding the text"),
            );
        }
        for (regex_key, chars_key, regex, chars) in [
            (
                "field_delimiter_regex",
                "field_split_characters",
                &self.field_delimiter_regex,
                &self.field_split_characters,
            ),
            (
                "key_value_delimiter_regex",
                "value_split_characters",
                &self.key_value_delimiter_regex,
                &self.value_split_characters,
            ),
        ] {
            let has_regex = regex.as_deref().is_some_and(|r| !r.is_empty());
            match chars.as_deref() {
                Some(c) if has_regex && !c.is_empty() => errors.at(
                    &at(regex_key),
                    format!("`{path}`: `{regex_key}` and `{chars_key}` cannot both be set (`{chars_key}` is `{c}`, its default, unless written); add `{chars_key}: \"\"`"),
                ),
                None if !has_regex => errors.at(
                    &at(chars_key),
                    format!("`{path}.{chars_key}` is null; write the characters, or leave it out for its default"),
                ),
                Some(c) if self.recursive && !has_regex && !c.is_empty() && c.chars().count() != 1 => errors.at(
                    &at(chars_key),
                    format!("`{path}.{chars_key}` must be one character with `recursive: true`, not `{c}`"),
                ),
                _ => {}
            }
        }
        let field = self.field_split();
        let value = self.value_split();
        for (key, regex) in [
            (
                if field.characters.is_some() {
                    "field_split_characters"
                } else {
                    "field_delimiter_regex"
                },
                Some(&field.regex),
            ),
            (
                if value.characters.is_some() {
                    "value_split_characters"
                } else {
                    "key_value_delimiter_regex"
                },
                Some(&value.regex),
            ),
            ("delete_key_regex", self.delete_key_regex.as_ref()),
            ("delete_value_regex", self.delete_value_regex.as_ref()),
        ] {
            if let Some(regex) = regex {
                regexes(std::slice::from_ref(regex), &at(key), errors);
            }
        }
        if self.value_grouping
            && self
                .field_delimiter_regex
                .as_deref()
                .is_some_and(|r| !r.is_empty())
        {
            errors.at(
                &at("value_grouping"),
                format!("`{path}`: `value_grouping` and `field_delimiter_regex` cannot be used together; split pairs with `field_split_characters`"),
            );
        }
        if self.value_grouping && self.field_split_characters.is_none() {
            errors.at(
                &at("field_split_characters"),
                format!("`{path}.field_split_characters` is needed with `value_grouping`"),
            );
        }
        if let Some(literal) = &self.string_literal_character {
            if literal != "\"" && literal != "'" {
                errors.at(
                    &at("string_literal_character"),
                    format!("`{path}.string_literal_character` is `\"` or `'`, not `{literal}`"),
                );
            } else if !self.value_grouping {
                errors.at(
                    &at("string_literal_character"),
                    format!(
                        "`{path}.string_literal_character` works only with `value_grouping: true`"
                    ),
                );
            }
        }
        if self.recursive && self.remove_brackets {
            errors.at(
                &at("remove_brackets"),
                format!("`{path}`: `remove_brackets` cannot be true with `recursive: true`: the brackets mark the levels"),
            );
        }
        let include: BTreeSet<&str> = self.include_keys.iter().map(String::as_str).collect();
        let exclude: BTreeSet<&str> = self.exclude_keys.iter().map(String::as_str).collect();
        if let Some(both) = include.intersection(&exclude).next() {
            errors.at(
                &at("exclude_keys"),
                format!("`{path}`: `{both}` is in both `include_keys` and `exclude_keys`"),
            );
        }
        if let Some(both) = self
            .default_values
            .keys()
            .find(|k| exclude.contains(k.as_str()))
        {
            errors.at(
                &at("exclude_keys"),
                format!("`{path}`: `{both}` is in both `default_values` and `exclude_keys`; a default key cannot be excluded"),
            );
        }
    }
}
