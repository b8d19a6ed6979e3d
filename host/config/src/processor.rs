//! The `processor`s of a pipeline, in Data Prepper's shape: a list of one-key maps, the key the
//! plugin's name (its file stem in the plugin folder), the value its options:
//!
//! ```yaml
//! processor:
//!   - redact:
//!       keys: ["password"]
//!   - my_enricher:          # no options
//! ```
//!
//! Processors run in order on every event between the deserializer and the sinks.
//!
//! Three keys of the block are sluice's, not the plugin's: the sandbox limits `max_memory`,
//! `timeout` and `recycle_after`, as a deserializer has them (same defaults). Every other key is
//! an option for the plugin's `configure`.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{Deserializer, EnumAccess, VariantAccess, Visitor};

use crate::error::{Errors, closest};
use crate::explain::list;
use crate::limits::{PluginLimits, take_limits};
use crate::parse::Context;
use crate::source::option_text;

/// One processor.
#[derive(Debug, Clone, PartialEq)]
pub struct Processor {
    /// The plugin's name: the file stem of its `.wasm` file in the plugin folder.
    pub name: String,
    /// Options passed to the plugin's `configure` export once per instance.
    pub options: BTreeMap<String, serde_yaml::Value>,
    /// Its sandbox limits: the block's `max_memory`, `timeout` and `recycle_after`.
    pub limits: PluginLimits,
}

impl Processor {
    /// The options as the plugin's `configure` receives them: scalars as their text, lists and
    /// maps as JSON text.
    pub fn option_pairs(&self) -> Vec<(String, String)> {
        self.options
            .iter()
            .map(|(k, v)| (k.clone(), option_text(v)))
            .collect()
    }
}

/// Read from the parser's tagged form of `- name: {options}` (the name is the tag), like every
/// component; the name is any plugin's, checked against the loaded plugins by `validate`.
impl<'de> Deserialize<'de> for Processor {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Named;
        impl<'de> Visitor<'de> for Named {
            type Value = Processor;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a processor: its plugin's name, then its options")
            }
            fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Processor, A::Error> {
                let (name, options): (String, _) = data.variant()?;
                let options: Option<BTreeMap<String, serde_yaml::Value>> =
                    options.newtype_variant()?;
                let mut options = options.unwrap_or_default();
                let limits = take_limits(&mut options).map_err(serde::de::Error::custom)?;
                Ok(Processor {
                    name,
                    options,
                    limits,
                })
            }
        }
        deserializer.deserialize_enum("processor", &[], Named)
    }
}

/// A processor's rules: its plugin must be loaded. `path` is its key path
/// (`<pipeline>.processor[<i>]`).
pub(crate) fn check_processor(
    p: &Processor,
    path: &str,
    errors: &mut Errors,
    context: Context<'_>,
) {
    let Some(known) = context.deserializers else {
        return;
    };
    if known.contains(&p.name) {
        return;
    }
    let names: Vec<&str> = known.iter().map(String::as_str).collect();
    let hint = match closest(&p.name, names.iter().copied()) {
        Some(best) => format!(", did you mean `{best}`?"),
        None if names.is_empty() => {
            "; no plugins are loaded (see `sluice plugins list`)".to_owned()
        }
        None => format!("; the loaded plugins are {}", list(&names)),
    };
    errors.at(
        path,
        format!(
            "unknown processor `{}` in `{path}`{hint} (processors are plugins from the plugin folder)",
            p.name
        ),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first processor of a pipeline whose `processor:` list is `list`.
    fn parse(list: &str) -> Result<Processor, String> {
        let yaml =
            format!("p:\n  source:\n    http:\n  processor:\n{list}  sink:\n    - stdout:\n");
        crate::parse("t.yaml", &yaml, Context::default())
            .map(|mut config| config.pipelines.remove(0).processor.remove(0))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn the_limit_keys_are_sluices_and_the_rest_go_to_the_plugin() {
        let p = parse(
            "    - redact:\n        keys: [a]\n        max_memory: 128mb\n        timeout: 2500ms\n        recycle_after: 5\n",
        )
        .unwrap();
        assert_eq!(p.name, "redact");
        assert_eq!(
            p.option_pairs(),
            [("keys".to_owned(), "[\"a\"]".to_owned())]
        );
        assert_eq!(p.limits.max_memory, crate::ByteSize::mib(128));
        assert_eq!(p.limits.timeout, std::time::Duration::from_millis(2500));
        assert_eq!(p.limits.recycle_after, 5);
    }

    #[test]
    fn without_limit_keys_a_processor_gets_a_deserializers_defaults() {
        let p = parse("    - passthrough:\n").unwrap();
        assert!(p.options.is_empty());
        assert_eq!(p.limits, PluginLimits::default());
    }

    #[test]
    fn a_bad_limit_names_its_key() {
        let err = parse("    - redact:\n        timeout: soon\n").unwrap_err();
        assert!(
            err.contains("invalid value for `p.processor[0]`: `timeout`: "),
            "{err}"
        );
    }
}
