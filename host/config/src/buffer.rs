//! The `buffer` of a pipeline: which one (`bounded_blocking`, `kafka`, or a buffer policy
//! component over those as its tiers) and the in-memory buffer's shape and rules. The kafka
//! buffer's are in [`crate::kafka`].

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{Deserializer, EnumAccess, VariantAccess, Visitor};

use crate::error::Errors;
use crate::kafka::KafkaBuffer;
use crate::limits::{PluginLimits, take_limits};
use crate::location::join;
use crate::source::option_text;

/// A buffer: one key naming it. `bounded_blocking` and `kafka` are built in; any other name is
/// a buffer policy component (`NAME.wasm` of the `buffer-plugin` world) over the tiers its block
/// lists.
#[derive(Debug, Clone)]
#[expect(
    clippy::large_enum_variant,
    reason = "one value per pipeline, parsed once at start: boxing saves nothing that matters"
)]
pub enum Buffer {
    /// An in-memory bounded queue of raw records. Fast; lost if the process dies.
    BoundedBlocking(BoundedBlocking),
    /// A Kafka topic: accepted records survive a crash of sluice; offsets are committed only
    /// after the sinks took the events.
    Kafka(KafkaBuffer),
    /// A buffer policy component deciding over built-in buffers (its tiers).
    Plugin(PluginBuffer),
}

/// One tier of a plugin buffer: a built-in buffer's block, with the same keys and rules.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
#[expect(
    clippy::large_enum_variant,
    reason = "a few per pipeline, parsed once at start"
)]
pub enum Tier {
    /// In memory: not durable. Used only because the YAML lists it.
    BoundedBlocking(BoundedBlocking),
    /// A Kafka topic.
    Kafka(KafkaBuffer),
}

impl Tier {
    /// The tier's name, as written in the file.
    pub fn plugin_name(&self) -> &'static str {
        match self {
            Tier::BoundedBlocking(_) => "bounded_blocking",
            Tier::Kafka(_) => "kafka",
        }
    }
}

/// `buffer: { NAME: { tiers: [...], max_memory, timeout, recycle_after, options... } }`.
#[derive(Debug, Clone)]
pub struct PluginBuffer {
    /// The policy plugin's name: the file stem of its `.wasm` file.
    pub name: String,
    /// `tiers`: the built-in buffers it places records in, in order (a policy names a tier by
    /// its index). At least one.
    pub tiers: Vec<Tier>,
    /// The block's `max_memory`, `timeout` and `recycle_after`.
    pub limits: PluginLimits,
    /// Every other key: options for the plugin's `configure`.
    pub options: BTreeMap<String, serde_yaml::Value>,
}

impl PluginBuffer {
    /// The options as the plugin's `configure` receives them.
    pub fn option_pairs(&self) -> Vec<(String, String)> {
        self.options
            .iter()
            .map(|(k, v)| (k.clone(), option_text(v)))
            .collect()
    }

    /// Reads the block of the policy `name`: `tiers` and the limits out, the rest options.
    fn from_block(
        name: String,
        mut block: BTreeMap<String, serde_yaml::Value>,
    ) -> Result<Self, String> {
        let limits = take_limits(&mut block)?;
        // Missing or empty `tiers` is reported by `check_buffer_plugin`, after the name is
        // known to be a plugin's (a misspelt built-in is told so first).
        let tiers = match block.remove("tiers") {
            None | Some(serde_yaml::Value::Null) => Vec::new(),
            Some(serde_yaml::Value::Sequence(items)) => items
                .into_iter()
                .enumerate()
                .map(|(i, item)| tier(item).map_err(|e| format!("`tiers[{i}]`: {e}")))
                .collect::<Result<Vec<_>, _>>()?,
            Some(_) => {
                return Err("`tiers` must be a list, e.g. `tiers: [{kafka: {...}}]`".to_owned());
            }
        };
        Ok(Self {
            name,
            tiers,
            limits,
            options: block,
        })
    }
}

/// One `tiers` item: a one-key map, read like a `buffer:` block.
fn tier(item: serde_yaml::Value) -> Result<Tier, String> {
    let serde_yaml::Value::Mapping(map) = item else {
        return Err("a tier is `kafka: {...}` or `bounded_blocking: {...}`".to_owned());
    };
    if map.len() != 1 {
        return Err(
            "a tier names one buffer: `kafka: {...}` or `bounded_blocking: {...}`".to_owned(),
        );
    }
    let (name, settings) = map.into_iter().next().expect("one entry");
    let name = name.as_str().unwrap_or_default().to_owned();
    serde_yaml::from_value(crate::parse::tagged(&name, settings)).map_err(|e| e.to_string())
}

/// Read from the parser's tagged form (`!kafka {...}`): a built-in's own shape, or a plugin's
/// block.
impl<'de> Deserialize<'de> for Buffer {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Named;
        impl<'de> Visitor<'de> for Named {
            type Value = Buffer;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a buffer: `bounded_blocking`, `kafka` or a buffer plugin's name")
            }
            fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Buffer, A::Error> {
                let (name, variant): (String, _) = data.variant()?;
                match name.as_str() {
                    "bounded_blocking" => variant.newtype_variant().map(Buffer::BoundedBlocking),
                    "kafka" => variant.newtype_variant().map(Buffer::Kafka),
                    _ => {
                        let block: Option<BTreeMap<String, serde_yaml::Value>> =
                            variant.newtype_variant()?;
                        PluginBuffer::from_block(name, block.unwrap_or_default())
                            .map(Buffer::Plugin)
                            .map_err(serde::de::Error::custom)
                    }
                }
            }
        }
        deserializer.deserialize_enum("buffer", &[], Named)
    }
}

impl Buffer {
    /// The start of the buffer's metric names: the kafka buffer's `custom_metric_prefix`, else
    /// the buffer's name (`kafka_buffer`, `bounded_blocking`). A buffer policy's are its first
    /// tier's, so putting a policy in front of a Kafka buffer keeps its dashboards' names (the
    /// policy's own counts are `sluice_buffer_*`).
    pub fn metric_prefix(&self) -> String {
        match self {
            Buffer::Kafka(k) => k.metric_prefix(),
            Buffer::BoundedBlocking(_) => "bounded_blocking".to_owned(),
            Buffer::Plugin(p) => match p.tiers.first() {
                Some(Tier::Kafka(k)) => k.metric_prefix(),
                Some(Tier::BoundedBlocking(_)) | None => "bounded_blocking".to_owned(),
            },
        }
    }

    /// The buffer's name, as written in the file.
    pub fn plugin_name(&self) -> &str {
        match self {
            Buffer::BoundedBlocking(_) => "bounded_blocking",
            Buffer::Kafka(_) => "kafka",
            Buffer::Plugin(p) => &p.name,
        }
    }
}

impl Default for Buffer {
    fn default() -> Self {
        Buffer::BoundedBlocking(BoundedBlocking::default())
    }
}

/// The `bounded_blocking` buffer, as in Data Prepper.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BoundedBlocking {
    /// The most records (request bodies) held at once, counting those being processed. When
    /// full, sources refuse new data (http answers 503 with `Retry-After`). Default 12800.
    #[serde(default = "default_buffer_size")]
    pub buffer_size: usize,
    /// The most records handed to the deserializer in one batch. Default 200.
    #[serde(default = "default_batch_size")]
    pub batch_size: usize,
}

/// Data Prepper's bounded_blocking defaults.
const fn default_buffer_size() -> usize {
    12_800
}

const fn default_batch_size() -> usize {
    200
}

impl Default for BoundedBlocking {
    fn default() -> Self {
        Self {
            buffer_size: default_buffer_size(),
            batch_size: default_batch_size(),
        }
    }
}

/// The in-memory buffer's rules; `path` is its key path (`<pipeline>.buffer.bounded_blocking`).
pub(crate) fn check_bounded_blocking(b: &BoundedBlocking, path: &str, errors: &mut Errors) {
    if b.buffer_size == 0 {
        errors.at(
            &join(path, "buffer_size"),
            format!("`{path}.buffer_size` must be at least 1"),
        );
    }
    if b.batch_size == 0 {
        errors.at(
            &join(path, "batch_size"),
            format!("`{path}.batch_size` must be at least 1"),
        );
    } else if b.batch_size > b.buffer_size && b.buffer_size > 0 {
        errors.at(
            &join(path, "batch_size"),
            format!(
                "`{path}.batch_size` ({}) is larger than `buffer_size` ({}); a batch cannot be larger than the buffer",
                b.batch_size, b.buffer_size
            ),
        );
    }
}

/// A buffer plugin's rules: its plugin must be loaded. `path` is `<pipeline>.buffer`.
pub(crate) fn check_buffer_plugin(
    p: &PluginBuffer,
    path: &str,
    errors: &mut Errors,
    context: crate::parse::Context<'_>,
) {
    let Some(known) = context.deserializers else {
        return;
    };
    // At the plugin's name in the file.
    let at = join(path, &p.name);
    if known.contains(&p.name) {
        if p.tiers.is_empty() {
            errors.at(
                &at,
                format!(
                    "buffer `{}` in `{path}` needs `tiers`: the built-in buffers it places records \
                     in, in order, e.g. `tiers: [{{kafka: {{bootstrap_servers: [...], topics: [...]}}}}]`",
                    p.name
                ),
            );
        }
        return;
    }
    let names = ["bounded_blocking", "kafka"]
        .into_iter()
        .chain(known.iter().map(String::as_str));
    let hint = match crate::error::closest(&p.name, names) {
        Some(best) => format!(", did you mean `{best}`?"),
        None => " (the built-in buffers are `bounded_blocking` and `kafka`; any other name is a buffer plugin from the plugin folder)".to_owned(),
    };
    errors.at(
        &at,
        format!("unknown buffer `{}` in `{path}`{hint}", p.name),
    );
}
