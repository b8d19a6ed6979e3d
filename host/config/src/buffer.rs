//! The `buffer` of a pipeline: the list of built-in buffers
//! ([`for_each_buffer!`](crate::for_each_buffer)) and the [`Tier`] it makes, [`Buffer`] (a
//! built-in, or a buffer policy component over built-ins as its tiers), and the in-memory
//! buffer's shape and rules. The kafka buffer's are in [`crate::kafka`].

use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::Deserializer;

use crate::component::{WithPlugins, kind_enum};
use crate::error::Errors;
use crate::limits::{PluginLimits, take_limits};
use crate::location::join;
use crate::units::ByteSize;

/// The built-in buffers, one line each: `Variant(config type) = "name in the file"`, its doc
/// the user doc. This one list makes [`Tier`] (a built-in buffer, as a pipeline's buffer or as
/// one tier of a buffer policy) and the pipeline crate's builder; adding a buffer is its config
/// file, its runtime file and a line here.
#[macro_export]
macro_rules! for_each_buffer {
    ($m:ident $($prefix:tt)*) => {
        $m! {
            $($prefix)*
            /// In memory: a bounded queue of raw records. Fast; lost if the process dies.
            BoundedBlocking($crate::buffer::BoundedBlocking) = "bounded_blocking",
            /// A Kafka topic: accepted records survive a crash of sluice; offsets are committed
            /// only after the sinks took the events.
            Kafka($crate::kafka::KafkaBuffer) = "kafka",
        }
    };
}

crate::for_each_buffer! {
    kind_enum
    /// A built-in buffer (see [`for_each_buffer!`](crate::for_each_buffer)): a
    /// pipeline's buffer, or one tier of a buffer policy, with the same keys and rules.
    #[expect(
        clippy::large_enum_variant,
        reason = "a few per pipeline, parsed once at start"
    )]
    pub enum Tier: dyn BufferConfig;
}

/// What a built-in buffer's config tells the rest of the config; each config type of the list
/// implements it.
pub(crate) trait BufferConfig {
    /// Checks the buffer's rules; `path` is its key path (`<pipeline>.buffer.<name>`, or a
    /// tier's `<pipeline>.buffer.<policy>.tiers[i].<name>`).
    fn check(&self, path: &str, errors: &mut Errors);
    /// The start of its metric names.
    fn metric_prefix(&self) -> String;
    /// Whether a source that pulls its data (the `file` source) can write to it.
    fn takes_pull_sources(&self) -> bool {
        true
    }
    /// Whether what it holds outlives a crash of sluice (Kafka).
    fn durable(&self) -> bool {
        false
    }
    /// Whether it partitions records by their key, so that records with one key stay
    /// together (Kafka).
    fn partitions_by_key(&self) -> bool {
        false
    }
}

/// A buffer: one key naming it. The built-ins are [`Tier`]'s; any other name is a buffer
/// policy component (`NAME.wasm` of the `buffer-plugin` world) over the tiers its block lists.
#[derive(Debug, Clone)]
#[expect(
    clippy::large_enum_variant,
    reason = "one value per pipeline, parsed once at start: boxing saves nothing that matters"
)]
pub enum Buffer {
    /// A built-in buffer.
    Builtin(Tier),
    /// A buffer policy component deciding over built-in buffers (its tiers).
    Plugin(PluginBuffer),
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
    /// `max_state_size`: the most bytes the policy's key-value state may keep (keys and
    /// values, entries that will expire included until they do). A write whose `state-set`
    /// would pass it is refused as a plugin fault (the client gets 503, nothing of the write
    /// kept). Default `64mb`.
    pub max_state_size: ByteSize,
    /// Every other key: options for the plugin's `configure`.
    pub options: BTreeMap<String, serde_yaml::Value>,
}

/// The default `max_state_size` of a buffer policy.
pub const DEFAULT_MAX_STATE_SIZE: ByteSize = ByteSize::mib(64);

impl PluginBuffer {
    /// The plugin resolved, as the pipeline starts it.
    pub fn settings(&self) -> crate::limits::PluginSettings {
        crate::limits::PluginSettings::new(&self.name, &self.options, self.limits)
    }

    /// Reads the block of the policy `name`: `tiers` and the limits out, the rest options.
    fn from_block(
        name: String,
        mut block: BTreeMap<String, serde_yaml::Value>,
    ) -> Result<Self, String> {
        let limits = take_limits(&mut block)?;
        let max_state_size = match block.remove("max_state_size") {
            None => DEFAULT_MAX_STATE_SIZE,
            Some(v) => serde_yaml::from_value(v).map_err(|e| format!("`max_state_size`: {e}"))?,
        };
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
            max_state_size,
            options: block,
        })
    }
}

/// One `tiers` item: a one-key map, read like a `buffer:` block.
fn tier(item: serde_yaml::Value) -> Result<Tier, String> {
    let serde_yaml::Value::Mapping(map) = item else {
        return Err(format!("a tier is {}", tier_examples()));
    };
    if map.len() != 1 {
        return Err(format!("a tier names one buffer: {}", tier_examples()));
    }
    let (name, settings) = map.into_iter().next().expect("one entry");
    let name = name.as_str().unwrap_or_default().to_owned();
    serde_yaml::from_value(crate::component::tagged(&name, settings)).map_err(|e| e.to_string())
}

/// `kafka: {...}` or `bounded_blocking: {...}`: every built-in, last first.
fn tier_examples() -> String {
    let examples: Vec<String> = Tier::NAMES
        .iter()
        .rev()
        .map(|name| format!("`{name}: {{...}}`"))
        .collect();
    or_list(&examples)
}

/// `a`, `a or b`, `a, b or c`.
fn or_list(items: &[String]) -> String {
    joined(items, "or")
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(items: &[String]) -> String {
    joined(items, "and")
}

fn joined(items: &[String], word: &str) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [first @ .., last] => format!("{} {word} {last}", first.join(", ")),
    }
}

/// Read from the parser's tagged form (`!kafka {...}`): a built-in's own shape, or a plugin's
/// block.
impl<'de> Deserialize<'de> for Buffer {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        crate::component::deserialize_with_plugins(deserializer, "buffer")
    }
}

impl WithPlugins for Buffer {
    type Builtin = Tier;
    fn expecting() -> String {
        let names: Vec<String> = Tier::NAMES.iter().map(|n| format!("`{n}`")).collect();
        format!("a buffer: {} or a buffer plugin's name", names.join(", "))
    }
    fn builtin(tier: Tier) -> Self {
        Buffer::Builtin(tier)
    }
    fn plugin(name: String, block: BTreeMap<String, serde_yaml::Value>) -> Result<Self, String> {
        PluginBuffer::from_block(name, block).map(Buffer::Plugin)
    }
}

impl Buffer {
    /// The start of the buffer's metric names: the kafka buffer's `custom_metric_prefix`, else
    /// the buffer's name (`kafka_buffer`, `bounded_blocking`). A buffer policy's are its first
    /// tier's, so putting a policy in front of a Kafka buffer keeps its dashboards' names (the
    /// policy's own counts are `sluice_buffer_*`).
    pub fn metric_prefix(&self) -> String {
        match self {
            Buffer::Builtin(tier) => tier.config().metric_prefix(),
            Buffer::Plugin(p) => match p.tiers.first() {
                Some(tier) => tier.config().metric_prefix(),
                None => BoundedBlocking::default().metric_prefix(),
            },
        }
    }

    /// Whether it partitions records by their key (a source that can keys its records so
    /// related ones stay together). A buffer policy's tiers may not all do.
    pub fn partitions_by_key(&self) -> bool {
        match self {
            Buffer::Builtin(tier) => tier.config().partitions_by_key(),
            Buffer::Plugin(_) => false,
        }
    }

    /// Whether every tier keeps what it holds across a crash of sluice.
    pub fn durable(&self) -> bool {
        self.tiers("")
            .iter()
            .all(|(_, tier)| tier.config().durable())
    }

    /// The buffer's name, as written in the file.
    pub fn plugin_name(&self) -> &str {
        match self {
            Buffer::Builtin(tier) => tier.plugin_name(),
            Buffer::Plugin(p) => &p.name,
        }
    }

    /// The built-in buffers it writes to, each with its key path; `path` is the buffer's
    /// (`<pipeline>.buffer`).
    pub(crate) fn tiers(&self, path: &str) -> Vec<(String, &Tier)> {
        match self {
            Buffer::Builtin(tier) => vec![(join(path, tier.plugin_name()), tier)],
            Buffer::Plugin(plugin) => plugin
                .tiers
                .iter()
                .enumerate()
                .map(|(i, tier)| {
                    let tiers = join(path, &format!("{}.tiers", plugin.name));
                    (format!("{tiers}[{i}].{}", tier.plugin_name()), tier)
                })
                .collect(),
        }
    }
}

impl Default for Buffer {
    fn default() -> Self {
        Buffer::Builtin(Tier::BoundedBlocking(BoundedBlocking::default()))
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

impl BufferConfig for BoundedBlocking {
    fn check(&self, path: &str, errors: &mut Errors) {
        check_bounded_blocking(self, path, errors);
    }
    fn metric_prefix(&self) -> String {
        "bounded_blocking".to_owned()
    }
}

/// The in-memory buffer's rules; `path` is its key path (`<pipeline>.buffer.bounded_blocking`).
fn check_bounded_blocking(b: &BoundedBlocking, path: &str, errors: &mut Errors) {
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
    context: crate::context::Context<'_>,
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
    let names = Tier::NAMES
        .iter()
        .copied()
        .chain(known.iter().map(String::as_str));
    let hint = match crate::error::closest(&p.name, names) {
        Some(best) => format!(", did you mean `{best}`?"),
        None => {
            let builtins: Vec<String> = Tier::NAMES.iter().map(|n| format!("`{n}`")).collect();
            format!(
                " (the built-in buffers are {}; any other name is a buffer plugin from the plugin folder)",
                and_list(&builtins)
            )
        }
    };
    errors.at(
        &at,
        format!("unknown buffer `{}` in `{path}`{hint}", p.name),
    );
}
