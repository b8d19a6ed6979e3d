//! Keys and expressions as processors, routes and sinks write them, read through
//! `sluice_event` when the file is parsed: a bad key or expression is an error at `validate`
//! naming its key path (serde's path) and, for an expression, the column inside it.
//!
//! Each function is a `deserialize_with` for one shape: `key`, `opt_key`, `keys`,
//! `opt_keys`, `condition` (`*_when`, routes: must be able to be true or false), `opt_condition`,
//! `expression`, `opt_expression`.

use serde::de::{Deserialize, Deserializer, Error as _};
use sluice_event::{Expression, Key};

/// A key (`/a/b`, `a/b`).
pub(crate) fn key<'de, D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
    let text = String::deserialize(d)?;
    Key::parse(&text).map_err(D::Error::custom)
}

pub(crate) fn opt_key<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Key>, D::Error> {
    Option::<String>::deserialize(d)?
        .map(|text| Key::parse(&text).map_err(D::Error::custom))
        .transpose()
}

/// A list of keys.
pub(crate) fn keys<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Key>, D::Error> {
    Vec::<String>::deserialize(d)?
        .iter()
        .map(|text| Key::parse(text).map_err(D::Error::custom))
        .collect()
}

/// A list of keys, or none (`null`, or the key left out, with `#[serde(default)]`).
pub(crate) fn opt_keys<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Key>>, D::Error> {
    Option::<Vec<String>>::deserialize(d)?
        .map(|keys| {
            keys.iter()
                .map(|text| Key::parse(text).map_err(D::Error::custom))
                .collect()
        })
        .transpose()
}

/// A condition (`*_when`, a route).
pub(crate) fn condition<'de, D: Deserializer<'de>>(d: D) -> Result<Expression, D::Error> {
    let text = d.deserialize_any(ExpressionText)?;
    Expression::parse_condition(&text)
        .map_err(|e| D::Error::custom(format!("expression `{text}` {e}")))
}

/// An expression's text. A YAML scalar that is not a string (`drop_when: true`, `1 == 1`
/// never is, but `true` and `42` are) is read as its text, as Data Prepper's Jackson does.
struct ExpressionText;

impl serde::de::Visitor<'_> for ExpressionText {
    type Value = String;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an expression, e.g. `/status == 200`")
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<String, E> {
        Ok(v.to_owned())
    }
    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<String, E> {
        Ok(v.to_string())
    }
}

pub(crate) fn opt_condition<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Expression>, D::Error> {
    condition(d).map(Some)
}

/// An expression whose value is used (`value_expression`).
pub(crate) fn opt_expression<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Expression>, D::Error> {
    let text = String::deserialize(d)?;
    Expression::parse(&text)
        .map(Some)
        .map_err(|e| D::Error::custom(format!("expression `{text}` {e}")))
}
