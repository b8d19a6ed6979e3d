//! Format strings, as Data Prepper's `Event.formatString` reads them (`add_entries`' `format`
//! and `key`, ...): text with `${name}` parts, where `name` is a key of the event (`${/host}`)
//! or, failing that, an expression (`${getMetadata("source")}`, `${length(/message)}`).

use std::fmt::Write as _;

use serde_json::Value;

use crate::event::Event;
use crate::expr::Expression;
use crate::key::Key;

/// A format string, read once.
#[derive(Debug, Clone)]
pub struct Template {
    text: String,
    parts: Vec<Part>,
}

#[derive(Debug, Clone)]
enum Part {
    Text(String),
    /// `${name}`: the key's value if the event has it, else the expression's (when `name` is
    /// one), else the format fails.
    Value {
        name: String,
        key: Option<Key>,
        expression: Option<Expression>,
    },
}

/// Why a format string cannot be read, or cannot be filled in for an event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("format `{format}` has `${{` at character {at} without its closing `}}`")]
    Unclosed { format: String, at: usize },
    #[error("`${{{name}}}` in format `{format}` is neither a key nor an expression: {reason}")]
    Name {
        format: String,
        name: String,
        reason: String,
    },
    #[error("the key `{name}` could not be found in the event when formatting")]
    Missing { name: String },
}

impl Template {
    /// Reads `format`.
    pub fn parse(format: &str) -> Result<Self, TemplateError> {
        let mut parts = Vec::new();
        let mut rest = format;
        while let Some(start) = rest.find("${") {
            let Some(len) = rest[start + 2..].find('}') else {
                return Err(TemplateError::Unclosed {
                    format: format.to_owned(),
                    at: format.len() - rest.len() + start,
                });
            };
            if start > 0 {
                parts.push(Part::Text(rest[..start].to_owned()));
            }
            let name = &rest[start + 2..start + 2 + len];
            let key = Key::parse(name).ok();
            let expression = Expression::parse(name);
            if key.is_none()
                && let Err(e) = &expression
            {
                return Err(TemplateError::Name {
                    format: format.to_owned(),
                    name: name.to_owned(),
                    reason: e.to_string(),
                });
            }
            parts.push(Part::Value {
                name: name.to_owned(),
                key,
                expression: expression.ok(),
            });
            rest = &rest[start + 2 + len + 1..];
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_owned()));
        }
        Ok(Self {
            text: format.to_owned(),
            parts,
        })
    }

    /// As written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether it has no `${...}` part.
    pub fn is_literal(&self) -> bool {
        self.parts.iter().all(|p| matches!(p, Part::Text(_)))
    }

    /// The text for `event`. A missing key that is also an expression (`${/a}`) reads as
    /// nothing, as in Data Prepper; an expression that fails to evaluate fails the format.
    pub fn render(&self, event: &Event) -> Result<String, TemplateError> {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(text) => out.push_str(text),
                Part::Value {
                    name,
                    key,
                    expression,
                } => {
                    let found = key.as_ref().and_then(|k| event.get(k));
                    let value = match (found, expression) {
                        (Some(v), _) if !v.is_null() => std::borrow::Cow::Borrowed(v),
                        (_, Some(e)) => std::borrow::Cow::Owned(
                            e.evaluate(event)
                                .map_err(|_| TemplateError::Missing { name: name.clone() })?,
                        ),
                        _ => return Err(TemplateError::Missing { name: name.clone() }),
                    };
                    push_text(&mut out, &value);
                }
            }
        }
        Ok(out)
    }
}

/// A value as Data Prepper's `toString()` writes it into text: strings bare, `null` as
/// nothing, the rest as JSON.
pub fn push_text(out: &mut String, value: &Value) {
    match value {
        Value::Null => {}
        Value::String(s) => out.push_str(s),
        other => {
            let _ = write!(out, "{other}");
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::Metadata;

    fn event(data: Value) -> Event {
        Event::new(data, Metadata::new("LOG", 0))
    }

    #[test]
    fn keys_and_expressions_fill_a_format() {
        let t = Template::parse("${/a}-${b/c}:${length(/a)}").unwrap();
        let e = event(json!({"a": "xyz", "b": {"c": 4}}));
        assert_eq!(t.render(&e).unwrap(), "xyz-4:3");
    }

    #[test]
    fn a_missing_key_reads_as_nothing_and_an_unclosed_part_is_refused() {
        let t = Template::parse("[${/nope}]").unwrap();
        assert_eq!(t.render(&event(json!({}))).unwrap(), "[]");
        let err = Template::parse("a ${/b").unwrap_err();
        assert_eq!(
            err.to_string(),
            "format `a ${/b` has `${` at character 2 without its closing `}`"
        );
    }

    #[test]
    fn a_format_without_parts_is_literal() {
        assert!(Template::parse("plain").unwrap().is_literal());
        assert!(!Template::parse("${/x}").unwrap().is_literal());
    }
}
