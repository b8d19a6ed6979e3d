//! `string_converter`: upper- or lowercases the text values at an event's top level, as Data
//! Prepper's `StringProcessor.Configuration` (its example processor, in its `common` plugins).

use serde::Deserialize;

use super::ProcessorConfig;

/// ```yaml
/// - string_converter:
///     upper_case: true
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StringConverter {
    /// Uppercase (`true`, the default) or lowercase (`false`) every text value at the event's
    /// top level; nested objects, lists and other values are left as they are.
    #[serde(default = "crate::yes")]
    pub upper_case: bool,
}

impl ProcessorConfig for StringConverter {}
