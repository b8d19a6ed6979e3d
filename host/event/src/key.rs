//! Keys: where a value is in an event's data, as Data Prepper's processors and expressions
//! write it: `status`, `/status`, `http/response/status` and `/http/response/status` are the
//! same path; a trailing `/` is ignored; `~1` is a `/` inside a key and `~0` a `~` (JSON
//! pointer escapes); a number indexes into a list on the way (`/list/0`). The empty key and
//! `/` are the whole event.

use std::fmt;

use serde_json::{Map, Value};

/// Data Prepper's limit on a key's length (`JacksonEventKey.MAX_KEY_LENGTH`).
const MAX_KEY_LENGTH: usize = 2048;

/// A path into an event's data, checked once (at `validate`), used per event.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key {
    /// As written.
    text: String,
    /// Its segments, unescaped; none for the whole event.
    segments: Vec<String>,
}

/// Why a key is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("key `{key}` is longer than {MAX_KEY_LENGTH} characters")]
    TooLong { key: String },
    #[error(
        "key `{key}` has `{character}`: a key has letters, digits and `.-_~@/[]()$ ` only, `/` between the levels (`field/to/key`)"
    )]
    Character { key: String, character: char },
}

/// Why a value could not be put at a key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PutError {
    #[error("cannot put a value at `{key}`: `{at}` is not an object")]
    NotAnObject { key: String, at: String },
    #[error("cannot replace the whole event with a value that is not an object")]
    Root,
}

impl Key {
    /// Reads a key as Data Prepper writes it.
    pub fn parse(text: &str) -> Result<Self, KeyError> {
        if text.chars().count() > MAX_KEY_LENGTH {
            return Err(KeyError::TooLong {
                key: text.to_owned(),
            });
        }
        if let Some(character) = text.chars().find(|&c| !valid_char(c)) {
            return Err(KeyError::Character {
                key: text.to_owned(),
                character,
            });
        }
        Ok(Self::unchecked(text))
    }

    /// A key from trusted text (a key found in an event), any character allowed.
    pub fn unchecked(text: &str) -> Self {
        let trimmed = text.strip_prefix('/').unwrap_or(text);
        let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
        let segments = if trimmed.is_empty() {
            Vec::new()
        } else {
            trimmed.split('/').map(unescape).collect()
        };
        Self {
            text: text.to_owned(),
            segments,
        }
    }

    /// A key of one level named `name` verbatim (no escapes read: `a/b` is one key).
    pub fn field(name: &str) -> Self {
        Self {
            text: name.replace('~', "~0").replace('/', "~1"),
            segments: vec![name.to_owned()],
        }
    }

    /// As written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Its levels, unescaped; empty for the whole event.
    pub fn segments(&self) -> &[String] {
        &self.segments
    }

    /// Whether it is the whole event (`""`, `/`).
    pub fn is_root(&self) -> bool {
        self.segments.is_empty()
    }

    /// The value at this key in `data`.
    pub fn get<'v>(&self, data: &'v Value) -> Option<&'v Value> {
        self.segments
            .iter()
            .try_fold(data, |value, segment| step(value, segment))
    }

    /// The value at this key in `data`, to change.
    pub fn get_mut<'v>(&self, data: &'v mut Value) -> Option<&'v mut Value> {
        self.segments
            .iter()
            .try_fold(data, |value, segment| step_mut(value, segment))
    }

    /// Sets the value at this key, making the objects on the way.
    pub fn put(&self, data: &mut Value, value: Value) -> Result<(), PutError> {
        let Some((last, parents)) = self.segments.split_last() else {
            if !value.is_object() {
                return Err(PutError::Root);
            }
            *data = value;
            return Ok(());
        };
        let mut at = data;
        for (i, segment) in parents.iter().enumerate() {
            let not_object = || PutError::NotAnObject {
                key: self.text.clone(),
                at: self.segments[..=i].join("/"),
            };
            at = match at {
                Value::Object(map) => map
                    .entry(segment.clone())
                    .or_insert_with(|| Value::Object(Map::new())),
                Value::Array(list) => match segment.parse::<usize>() {
                    Ok(index) if index < list.len() => &mut list[index],
                    _ => return Err(not_object()),
                },
                _ => return Err(not_object()),
            };
            if at.is_null() {
                *at = Value::Object(Map::new());
            }
        }
        match at {
            Value::Object(map) => {
                map.insert(last.clone(), value);
                Ok(())
            }
            Value::Array(list) => match last.parse::<usize>() {
                Ok(index) if index < list.len() => {
                    list[index] = value;
                    Ok(())
                }
                _ => Err(PutError::NotAnObject {
                    key: self.text.clone(),
                    at: parents.join("/"),
                }),
            },
            _ => Err(PutError::NotAnObject {
                key: self.text.clone(),
                at: parents.join("/"),
            }),
        }
    }

    /// Removes the value at this key from its object (keys keep their order).
    pub fn delete(&self, data: &mut Value) -> Option<Value> {
        let (last, parents) = self.segments.split_last()?;
        let parent = parents
            .iter()
            .try_fold(data, |value, segment| step_mut(value, segment))?;
        match parent {
            Value::Object(map) => map.shift_remove(last),
            _ => None,
        }
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

fn step<'v>(value: &'v Value, segment: &str) -> Option<&'v Value> {
    match value {
        Value::Object(map) => map.get(segment),
        Value::Array(list) => list.get(segment.parse::<usize>().ok()?),
        _ => None,
    }
}

fn step_mut<'v>(value: &'v mut Value, segment: &str) -> Option<&'v mut Value> {
    match value {
        Value::Object(map) => map.get_mut(segment),
        Value::Array(list) => list.get_mut(segment.parse::<usize>().ok()?),
        _ => None,
    }
}

/// JSON pointer escapes: `~1` is `/`, `~0` is `~`.
fn unescape(segment: &str) -> String {
    if segment.contains('~') {
        segment.replace("~1", "/").replace("~0", "~")
    } else {
        segment.to_owned()
    }
}

/// Data Prepper's `JacksonEventKey.isValidKey`.
fn valid_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || ".-_~@/[] $()".contains(c)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn leading_and_trailing_slashes_name_the_same_path() {
        let data = json!({"a": {"b": 1}});
        for text in ["a/b", "/a/b", "/a/b/", "a/b/"] {
            assert_eq!(
                Key::parse(text).unwrap().get(&data),
                Some(&json!(1)),
                "{text}"
            );
        }
        assert_eq!(Key::parse("/").unwrap().get(&data), Some(&data));
        assert_eq!(Key::parse("").unwrap().get(&data), Some(&data));
    }

    #[test]
    fn escapes_and_list_indexes_are_json_pointers() {
        let data = json!({"a/b": {"c~d": [10, 20]}});
        assert_eq!(
            Key::parse("/a~1b/c~0d/1").unwrap().get(&data),
            Some(&json!(20))
        );
        assert_eq!(Key::parse("/a~1b/c~0d/2").unwrap().get(&data), None);
        assert_eq!(Key::field("a/b").get(&data), data.get("a/b"));
    }

    #[test]
    fn put_makes_the_objects_on_the_way_and_refuses_to_go_through_a_value() {
        let mut data = json!({"a": 1});
        Key::parse("x/y/z")
            .unwrap()
            .put(&mut data, json!(true))
            .unwrap();
        assert_eq!(data, json!({"a": 1, "x": {"y": {"z": true}}}));
        let err = Key::parse("a/b")
            .unwrap()
            .put(&mut data, json!(2))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot put a value at `a/b`: `a` is not an object"
        );
        assert_eq!(data["a"], json!(1));
    }

    #[test]
    fn delete_keeps_the_order_of_the_other_keys() {
        let mut data = json!({"c": 1, "b": 2, "a": 3});
        assert_eq!(Key::parse("b").unwrap().delete(&mut data), Some(json!(2)));
        assert_eq!(serde_json::to_string(&data).unwrap(), r#"{"c":1,"a":3}"#);
        assert_eq!(Key::parse("nope/deeper").unwrap().delete(&mut data), None);
    }

    #[test]
    fn a_key_with_a_character_data_prepper_refuses_is_an_error_naming_it() {
        let err = Key::parse("a:b").unwrap_err();
        assert!(err.to_string().starts_with("key `a:b` has `:`"), "{err}");
    }
}
