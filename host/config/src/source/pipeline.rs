//! The `pipeline` source (Data Prepper's): what upstream pipelines send with their `pipeline`
//! sinks. The rules of the chains it ends are [`crate::connection`]'s.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, SeqAccess, Visitor};

use super::deserializer::DeserializerConfig;
use super::{CheckSource, SourceConfig, SourceKind};
use crate::context::Context;
use crate::error::Errors;
use crate::location::join;
use crate::secret::SecretError;

/// The `pipeline` source: what upstream pipelines send with their `pipeline` sinks.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineSource {
    /// The upstream pipeline: the one whose `pipeline` sink names this pipeline. Several are
    /// written as a list (`name: [a, b]`). Required.
    pub name: Names,
}

/// One pipeline name or a list of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names(pub Vec<String>);

impl<'de> Deserialize<'de> for Names {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Names;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a pipeline name, or a list of pipeline names")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Names, E> {
                Ok(Names(vec![v.to_owned()]))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Names, A::Error> {
                let mut names = Vec::new();
                while let Some(name) = seq.next_element::<String>()? {
                    names.push(name);
                }
                Ok(Names(names))
            }
        }
        d.deserialize_any(V)
    }
}

/// What the `pipeline` source reads: the pipelines that send to it.
#[derive(Debug, Clone)]
pub struct PipelineSourceSettings {
    pub upstream: Vec<String>,
}

impl SourceConfig for PipelineSource {
    // Written to by other pipelines, never re-read: it may use the kafka buffer.
    const KIND: SourceKind = SourceKind::Push;
    const CARRIES_EVENTS: bool = true;
    fn read<'de, D: Deserializer<'de>>(_: &'static str, d: D) -> Result<Self, D::Error> {
        Self::deserialize(d)
    }
    fn deserializer(&self) -> Cow<'_, DeserializerConfig> {
        // Upstream pipelines send records of events, one JSON object per line.
        Cow::Owned(DeserializerConfig {
            name: "ndjson".to_owned(),
            ..DeserializerConfig::default()
        })
    }
}

impl crate::Resolve for PipelineSource {
    type Settings = PipelineSourceSettings;
    type Error = SecretError;
    fn resolve(&self, _pipeline: &str) -> Result<PipelineSourceSettings, SecretError> {
        Ok(PipelineSourceSettings {
            upstream: self.name.0.clone(),
        })
    }
}

impl CheckSource for PipelineSource {
    fn check(&self, path: &str, errors: &mut Errors, _: Context<'_>) {
        if self.name.0.is_empty() || self.name.0.iter().any(|n| n.trim().is_empty()) {
            errors.at(
                &join(path, "name"),
                format!(
                    "`{path}.name` must name the upstream pipeline, e.g. `name: entry-pipeline`"
                ),
            );
        }
    }
}
