//! `dissect`: splits text at the literal text between `%{field}`s of a pattern, as Data
//! Prepper's `DissectProcessorConfig`. The patterns are read when the processor is built
//! (`sluice-processors`); only the keys and types are checked here.

use std::collections::BTreeMap;

use serde::Deserialize;
use sluice_event::{Expression, Key};

use super::ProcessorConfig;
use super::convert_entry_type::TargetType;
use crate::error::Errors;
use crate::location::join;

/// ```yaml
/// - dissect:
///     map:
///       log: "%{Date} %{Time} %{Log_Type}: %{Message}"
///     target_types:
///       status: integer
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dissect {
    /// The keys to dissect, each with its pattern: `%{name}` captures up to the text that
    /// follows it, `%{}` / `%{?name}` skip, `%{+name}` (`%{+name/2}`) append to `name` (in
    /// order of their `/n`), `%{&name}` names a key with the value captured by `name`, and a
    /// `->` suffix (`%{name->}`) trims the padding after it. Required.
    pub map: BTreeMap<String, String>,
    /// The type of captured fields, by field name: `integer`, `long`, `double`, `boolean` or
    /// `string` (Data Prepper's `big_decimal` is refused). A value that does not read as its
    /// type is kept as text. Default: every field is text.
    #[serde(default)]
    pub target_types: BTreeMap<String, TargetType>,
    /// Dissect only events for which this condition is true.
    #[serde(default, deserialize_with = "crate::event::opt_condition")]
    pub dissect_when: Option<Expression>,
    /// Remove each key of `map` once its text was dissected. Default false.
    #[serde(default)]
    pub delete_source: bool,
}

impl Dissect {
    /// The keys of `map`, each with its pattern (checked by `ProcessorConfig::check`).
    pub fn sources(&self) -> impl Iterator<Item = (Key, &str)> {
        self.map
            .iter()
            .map(|(key, pattern)| (Key::unchecked(key), pattern.as_str()))
    }
}

impl ProcessorConfig for Dissect {
    fn check(&self, path: &str, errors: &mut Errors) {
        if self.map.is_empty() {
            errors.at(
                &join(path, "map"),
                format!("`{path}.map` is empty; write `<key>: <pattern>`, e.g. `log: \"%{{date}} %{{message}}\"`"),
            );
        }
        for key in self.map.keys() {
            if let Err(e) = Key::parse(key) {
                let at = join(&join(path, "map"), key);
                errors.at(&at, format!("`{at}`: {e}"));
            }
        }
        for (field, target) in &self.target_types {
            if *target == TargetType::BigDecimal {
                let at = join(&join(path, "target_types"), field);
                errors.at(
                    &at,
                    format!("`{at}`: `big_decimal` is not supported by sluice (numbers are 64-bit integers or doubles); use `double` or `long`"),
                );
            }
        }
    }
}
