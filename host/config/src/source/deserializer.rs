//! The `deserializer` a source names: a plugin (or a built-in, `json`, `ndjson`, `otlp`) that
//! turns the source's raw records into events after the buffer, with its options and sandbox
//! limits.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};

use crate::context::Context;
use crate::error::{Errors, closest};
use crate::explain::list;
use crate::limits::{default_max_memory, default_plugin_timeout, default_recycle_after};
use crate::location::join;
use crate::units::{self, ByteSize};

/// Which deserializer plugin a source uses, with its options and sandbox limits.
///
/// Written either as a plugin name (`deserializer: ndjson`) or as a map:
/// ```yaml
/// deserializer:
///   name: csv
///   options: {delimiter: ";"}
///   max_memory: 128mb
///   timeout: 2s
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeserializerConfig {
    /// The plugin's name: the file stem of its `.wasm` file, or a built-in (`json`, `ndjson`).
    pub name: String,
    /// Options passed to the plugin's `configure` export once per instance.
    #[serde(default)]
    pub options: BTreeMap<String, serde_yaml::Value>,
    /// The most linear memory one plugin instance may use. Default `64mb`.
    #[serde(default = "default_max_memory")]
    pub max_memory: ByteSize,
    /// The longest one batch call may run before the instance is stopped. Default `1s`.
    #[serde(
        default = "default_plugin_timeout",
        deserialize_with = "units::duration"
    )]
    pub timeout: Duration,
    /// Replace each worker's plugin instance with a fresh one after this many batches, which
    /// returns the memory a guest heap kept (Python and JavaScript heaps never shrink). `0`
    /// recycles only after a trap. Default `10000`.
    #[serde(default = "default_recycle_after")]
    pub recycle_after: u64,
}

impl DeserializerConfig {
    /// The deserializer resolved, as the pipeline starts it (its limits as a processor's or a
    /// buffer policy's block holds them).
    pub fn settings(&self) -> crate::limits::PluginSettings {
        let limits = crate::PluginLimits {
            max_memory: self.max_memory,
            timeout: self.timeout,
            recycle_after: self.recycle_after,
        };
        crate::limits::PluginSettings::new(&self.name, &self.options, limits)
    }
}

impl Default for DeserializerConfig {
    fn default() -> Self {
        Self {
            name: "json".to_owned(),
            options: BTreeMap::new(),
            max_memory: default_max_memory(),
            timeout: default_plugin_timeout(),
            recycle_after: default_recycle_after(),
        }
    }
}

/// `deserializer: json` or `deserializer: {name: json, ...}`. A hand-written visitor rather
/// than `#[serde(untagged)]`, so errors inside the map still name the field.
pub(crate) fn deserializer_name_or_map<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<DeserializerConfig, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = DeserializerConfig;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a plugin name such as `json`, or a map with `name` and `options`")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(DeserializerConfig {
                name: v.to_owned(),
                ..DeserializerConfig::default()
            })
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            DeserializerConfig::deserialize(de::value::MapAccessDeserializer::new(map))
        }
    }
    d.deserialize_any(V)
}

/// `deserializer_name_or_map` for a key that may be left out.
pub(crate) fn opt_deserializer<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<DeserializerConfig>, D::Error> {
    deserializer_name_or_map(d).map(Some)
}

/// The deserializer's own rules, and that it names a loaded plugin (when `context` knows them).
pub(crate) fn check_deserializer(
    d: &DeserializerConfig,
    path: &str,
    errors: &mut Errors,
    context: Context<'_>,
) {
    if d.timeout.is_zero() {
        errors.at(
            &join(path, "timeout"),
            format!("`{path}.timeout` must be more than zero"),
        );
    }
    if d.max_memory.bytes() < 1 << 20 {
        errors.at(
            &join(path, "max_memory"),
            format!("`{path}.max_memory` must be at least `1mb`"),
        );
    }
    let Some(known) = context.deserializers else {
        return;
    };
    if known.contains(&d.name) {
        return;
    }
    let names: Vec<&str> = known.iter().map(String::as_str).collect();
    let hint = match closest(&d.name, names.iter().copied()) {
        Some(best) => format!(", did you mean `{best}`?"),
        None if names.is_empty() => {
            "; no deserializer plugins are loaded (see `sluice plugins list`)".to_owned()
        }
        None => format!("; the loaded deserializers are {}", list(&names)),
    };
    errors.at(
        path,
        format!("unknown deserializer `{}` in `{path}`{hint}", d.name),
    );
}
