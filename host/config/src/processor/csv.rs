//! `csv`: parses one line of comma-separated values from a key into the event's keys, as
//! Data Prepper's `CsvProcessorConfig`.

use serde::Deserialize;
use sluice_event::{Expression, Key};

use super::ProcessorConfig;
use crate::error::Errors;
use crate::location::join;

/// ```yaml
/// - csv:
///     column_names: ["ip", "status", "bytes"]
///     delete_source: true
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Csv {
    /// The key holding the CSV text; only its first record is read. Default `message`.
    #[serde(default = "message", deserialize_with = "crate::event::key")]
    pub source: Key,
    /// The character between columns. Exactly one character. Default `,`.
    #[serde(default = "comma")]
    pub delimiter: String,
    /// The character quoting a column (a delimiter or line break inside is kept; the quote
    /// written twice is one quote). Exactly one character, not the delimiter. Default `"`.
    #[serde(default = "double_quote")]
    pub quote_character: String,
    /// Remove `column_names_source_key` from the event after parsing (when the event has
    /// it). Default true.
    #[serde(default = "crate::yes")]
    pub delete_header: bool,
    /// A key of the event holding the header: a CSV line of column names, read with the
    /// same delimiter and quote. Takes precedence over `column_names`. Default: none.
    #[serde(default, deserialize_with = "crate::event::opt_key")]
    pub column_names_source_key: Option<Key>,
    /// The column names, in order. Columns past the names are `column<n>` (from 1); names
    /// past the columns are ignored. Default: none (every column is `column<n>`).
    #[serde(default)]
    pub column_names: Option<Vec<String>>,
    /// Remove `source` after parsing. Default false.
    #[serde(default)]
    pub delete_source: bool,
    /// Replace the characters a key cannot have with `_` in the column names read from
    /// `column_names_source_key` or `column_names`. Default false.
    #[serde(default)]
    pub normalize_keys: bool,
    /// Data Prepper's `multiline` (a header line, then one new event per line): not
    /// supported by sluice, where a processor changes or drops one event and cannot make
    /// several; only `false` (the default) is accepted.
    #[serde(default)]
    pub multiline: bool,
    /// Parse only events for which this condition is true.
    #[serde(default, deserialize_with = "crate::event::opt_condition")]
    pub csv_when: Option<Expression>,
}

fn message() -> Key {
    Key::unchecked("message")
}

fn comma() -> String {
    ",".to_owned()
}

fn double_quote() -> String {
    "\"".to_owned()
}

impl ProcessorConfig for Csv {
    fn check(&self, path: &str, errors: &mut Errors) {
        if self.source.as_str().trim().is_empty() {
            errors.at(
                &join(path, "source"),
                format!("`{path}.source` is empty; write the key holding the CSV text"),
            );
        }
        for (name, value) in [
            ("delimiter", &self.delimiter),
            ("quote_character", &self.quote_character),
        ] {
            if value.chars().count() != 1 {
                errors.at(
                    &join(path, name),
                    format!("`{path}.{name}` must be exactly one character, not `{value}`"),
                );
            }
        }
        if self.delimiter == self.quote_character {
            errors.at(
                &join(path, "quote_character"),
                format!("`{path}`: `quote_character` and `delimiter` cannot be the same character"),
            );
        }
        if self.multiline {
            errors.at(
                &join(path, "multiline"),
                format!("`{path}.multiline`: this Data Prepper option is not supported by sluice yet (it makes one event per line); remove it"),
            );
        }
    }
}
