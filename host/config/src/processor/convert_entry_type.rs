//! `convert_type` (and its deprecated name `convert_entry_type`): converts values to another
//! type (`"200"` → `200`), as Data Prepper's `ConvertEntryTypeProcessorConfig`. The
//! `coerce_strings` time formats are checked when the pipeline is (`sluice validate`), by the
//! processors crate.

use serde::Deserialize;
use serde::de::Deserializer;
use sluice_event::{Expression, Key};

use super::{ProcessorConfig, Unsupported};
use crate::error::Errors;
use crate::location::join;

/// ```yaml
/// - convert_type:
///     key: "response_status"
///     type: "integer"
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConvertEntryType {
    /// The key whose value is converted. One of `key`, `keys` and `coerce_strings` is
    /// required; not with `keys`.
    #[serde(default, deserialize_with = "crate::event::opt_key")]
    pub key: Option<Key>,
    /// The keys whose values are converted. Not with `key`.
    #[serde(default, deserialize_with = "crate::event::opt_keys")]
    pub keys: Option<Vec<Key>>,
    /// The type to convert to: `integer` (32-bit), `long` (64-bit), `double`, `boolean` or
    /// `string`. Default `integer`. A list is converted element by element.
    #[serde(default)]
    pub r#type: TargetType,
    /// Values that mean "no value": a value whose text is one of these is deleted instead of
    /// converted (`["-", "N/A"]`). Also written `null_values`. Default none.
    #[serde(default, alias = "null_values")]
    pub null_conversion_values: Vec<String>,
    /// Before the keys are converted, turn every text value in the event that reads as one
    /// into a boolean (`"true"`), a number (`"1.5"`, `"42"`) or, when it has a `:` and fits
    /// one of `time_formats`, epoch milliseconds. `coerce_strings:` alone uses the default
    /// formats. Default off.
    #[serde(default, deserialize_with = "coerce_strings")]
    pub coerce_strings: Option<CoerceStrings>,
    /// Data Prepper's scale for `big_decimal`, which sluice does not support.
    #[serde(default)]
    pub scale: Option<Unsupported>,
    /// Tags added to an event when a value cannot be converted (the value is left as it
    /// was). Default none.
    #[serde(default)]
    pub tags_on_failure: Vec<String>,
    /// Convert only in events for which this condition is true.
    #[serde(default, deserialize_with = "crate::event::opt_condition")]
    pub convert_when: Option<Expression>,
    /// A list of objects: `key`/`keys` are then keys of each object of it (written as is,
    /// not paths), converted in each. A failure is logged, not tagged. Default none.
    #[serde(default, deserialize_with = "crate::event::opt_key")]
    pub iterate_on: Option<Key>,
}

/// `coerce_strings`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoerceStrings {
    /// Java `DateTimeFormatter` patterns tried, in order, on text that has a `:`; fields a
    /// pattern lacks come from today (UTC) and midnight. Default `MMM d HH:mm:ss`,
    /// `yyyy-MM-dd'T'HH:mm:ss.SSSXXX`, `yyyy-MM-dd'T'HH:mm:ss.SSSSSSX`,
    /// `dd/MMM/yyyy:HH:mm:ss Z`.
    #[serde(default = "default_time_formats")]
    pub time_formats: Vec<String>,
}

impl Default for CoerceStrings {
    fn default() -> Self {
        Self {
            time_formats: default_time_formats(),
        }
    }
}

/// Data Prepper's `ConvertEntryTypeProcessorConfig.DEFAULT_TIME_STRING_FORMATS`.
fn default_time_formats() -> Vec<String> {
    [
        "MMM d HH:mm:ss",
        "yyyy-MM-dd'T'HH:mm:ss.SSSXXX",
        "yyyy-MM-dd'T'HH:mm:ss.SSSSSSX",
        "dd/MMM/yyyy:HH:mm:ss Z",
    ]
    .map(str::to_owned)
    .to_vec()
}

/// The type values are converted to (`type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetType {
    #[default]
    Integer,
    String,
    Double,
    Boolean,
    Long,
    /// Refused by `check`: sluice's numbers are 64-bit integers or doubles, not Java's
    /// `BigDecimal` with its exact digits and scale.
    BigDecimal,
}

/// `coerce_strings:` written with no value turns it on with the defaults (Data Prepper's
/// `@JsonSetter(nulls = AS_EMPTY)`).
fn coerce_strings<'de, D: Deserializer<'de>>(d: D) -> Result<Option<CoerceStrings>, D::Error> {
    Ok(Some(
        Option::<CoerceStrings>::deserialize(d)?.unwrap_or_default(),
    ))
}

impl ProcessorConfig for ConvertEntryType {
    fn check(&self, path: &str, errors: &mut Errors) {
        match (&self.key, &self.keys) {
            (None, None) if self.coerce_strings.is_none() => errors.at(
                path,
                format!(
                    "`{path}` needs `key` (or `keys`, or `coerce_strings`): which values to convert"
                ),
            ),
            (Some(_), Some(_)) => errors.at(
                path,
                format!("`{path}` has both `key` and `keys`; keep one"),
            ),
            _ => {}
        }
        if let Some(key) = &self.key
            && key.is_root()
        {
            let at = join(path, "key");
            errors.at(
                &at,
                format!("`{at}` cannot be empty: name the key whose value to convert"),
            );
        }
        for (i, key) in self.keys.iter().flatten().enumerate() {
            if key.is_root() {
                let at = format!("{}[{i}]", join(path, "keys"));
                errors.at(
                    &at,
                    format!("`{at}` cannot be empty: name the key whose value to convert"),
                );
            }
        }
        if self.r#type == TargetType::BigDecimal {
            let at = join(path, "type");
            errors.at(
                &at,
                format!(
                    "`{at}`: `big_decimal` is not supported by sluice yet: its numbers are 64-bit integers or doubles, without a big decimal's exact digits and scale; use `double`, or `string` to keep the digits"
                ),
            );
        }
    }
}
