//! The sandbox limits of a plugin whose block holds its own options (a processor, a buffer
//! policy): the keys `max_memory`, `timeout` and `recycle_after` are sluice's, taken out of the
//! block before the rest goes to the plugin's `configure`. Same keys, rules and defaults as a
//! deserializer's. [`PluginSettings`] is a plugin block resolved: what the pipeline starts a
//! plugin with, whatever its kind.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::units::{self, ByteSize};

/// A plugin component as the pipeline starts it (a deserializer, a processor, a buffer
/// policy): its name, its options as its `configure` receives them, its sandbox limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginSettings {
    /// The plugin's name: the file stem of its `.wasm` file in the plugin folder.
    pub name: String,
    /// The options, in key order: scalars as their text, lists and maps as JSON text.
    pub options: Vec<(String, String)>,
    /// Its sandbox limits.
    pub limits: PluginLimits,
}

impl PluginSettings {
    /// The block of plugin `name` resolved: `options` as `configure` receives them.
    pub(crate) fn new(
        name: &str,
        options: &BTreeMap<String, serde_yaml::Value>,
        limits: PluginLimits,
    ) -> Self {
        Self {
            name: name.to_owned(),
            options: options
                .iter()
                .map(|(k, v)| (k.clone(), option_text(v)))
                .collect(),
            limits,
        }
    }
}

/// An option's value as a plugin's `configure` receives it: scalars as their text, lists and
/// maps as JSON text.
fn option_text(value: &serde_yaml::Value) -> String {
    match value {
        serde_yaml::Value::String(s) => s.clone(),
        serde_yaml::Value::Bool(b) => b.to_string(),
        serde_yaml::Value::Number(n) => n.to_string(),
        serde_yaml::Value::Null => String::new(),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

/// The keys of a plugin's block that are sluice's, not the plugin's.
pub const LIMIT_KEYS: [&str; 3] = ["max_memory", "timeout", "recycle_after"];

/// One plugin's sandbox limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PluginLimits {
    /// `max_memory`: the most linear memory one instance may use. Default `64mb`.
    pub max_memory: ByteSize,
    /// `timeout`: the longest one call may run before the instance is stopped. Default `1s`.
    pub timeout: Duration,
    /// `recycle_after`: replace an instance after this many calls (Python and JavaScript heaps
    /// never shrink); `0` only after a trap. Default `10000`.
    pub recycle_after: u64,
}

impl Default for PluginLimits {
    fn default() -> Self {
        Self {
            max_memory: default_max_memory(),
            timeout: default_plugin_timeout(),
            recycle_after: default_recycle_after(),
        }
    }
}

/// Takes the limit keys out of `block`, parsed; an error names the key.
pub(crate) fn take_limits(
    block: &mut BTreeMap<String, serde_yaml::Value>,
) -> Result<PluginLimits, String> {
    let mut limits = PluginLimits::default();
    let named = |key: &str, error: serde_yaml::Error| format!("`{key}`: {error}");
    if let Some(v) = block.remove("max_memory") {
        limits.max_memory = serde_yaml::from_value(v).map_err(|e| named("max_memory", e))?;
    }
    if let Some(v) = block.remove("timeout") {
        limits.timeout = units::duration(v).map_err(|e| named("timeout", e))?;
    }
    if let Some(v) = block.remove("recycle_after") {
        limits.recycle_after = serde_yaml::from_value(v).map_err(|e| named("recycle_after", e))?;
    }
    Ok(limits)
}

/// The default `recycle_after` of every plugin block.
pub(crate) const fn default_recycle_after() -> u64 {
    10_000
}

/// The default `max_memory` of every plugin block.
pub(crate) const fn default_max_memory() -> ByteSize {
    ByteSize::mib(64)
}

/// The default `timeout` of every plugin block.
pub(crate) const fn default_plugin_timeout() -> Duration {
    Duration::from_secs(1)
}
