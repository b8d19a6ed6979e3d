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

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{Deserializer, EnumAccess, VariantAccess, Visitor};

use crate::error::{Errors, closest};
use crate::explain::list;
use crate::parse::Context;
use crate::source::option_text;

/// One processor.
#[derive(Debug, Clone, PartialEq)]
pub struct Processor {
    /// The plugin's name: the file stem of its `.wasm` file in the plugin folder.
    pub name: String,
    /// Options passed to the plugin's `configure` export once per instance.
    pub options: BTreeMap<String, serde_yaml::Value>,
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
                Ok(Processor {
                    name,
                    options: options.unwrap_or_default(),
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
