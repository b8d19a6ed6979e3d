//! Pipeline configuration: the YAML file a user writes, parsed strictly and validated.
//!
//! # Layout
//! - `component`: how each kind's one list (`for_each_sink!`, `for_each_buffer!`,
//!   `for_each_processor!`) becomes its enum, names and rules (`for_each_source!`, whose
//!   sources may have several keys, makes its enum in [`source`]); `sluice-pipeline` makes its
//!   builders from the same lists.
//! - [`mod@parse`]: text → [`Config`] (YAML, then each component through serde, strictly),
//!   collecting every error; then `validate`.
//! - [`context`]: what validation checks beyond the file (the plugins that exist, a built-in
//!   processor's build), which every component's rules take.
//! - `explain`: serde's messages reworded to name the key path and suggest the fix.
//! - `validate`: the rules that span fields and pipelines; it runs each component's own rules.
//! - [`pipeline`]: [`Config`] and [`Pipeline`], the file's top-level shape.
//! - `resolve`: [`Resolve`], how every component's config becomes the settings its runtime
//!   reads.
//! - [`source`], [`buffer`], [`kafka`], [`sink`]: each component's shape (every field
//!   documented), its rules, and the resolved settings the runtime reads (for [`kafka`] also
//!   the librdkafka properties sluice owns); sources and sinks one file each.
//! - [`limits`]: a plugin block's sandbox limits (`max_memory`, `timeout`, `recycle_after`)
//!   taken out of its options, and [`PluginSettings`], a plugin block resolved.
//! - [`secret`]: passwords as text, `${env:NAME}` or `${file:PATH}`, read at startup.
//! - [`listener`]: the keys the push sources' listener shares (limits, timeouts, TLS,
//!   `authentication`), their one check, and [`ListenerSettings`]; [`http`]: the shapes that
//!   protect a listener.
//! - [`processor`]: the processor list; Data Prepper's built-in processors, one file each.
//! - `route`: the pipeline's `route:` list and the sinks' `routes`.
//! - [`connection`]: the rules of the chains of pipelines feeding pipelines (the `pipeline`
//!   sink and source).
//! - `event`: keys and expressions (`sluice-event`) read from the file.
//! - [`location`]: which line each key is on, for errors found after parsing.
//! - [`error`]: [`ConfigError`]s that name the key path and line, and suggest the fix.
//! - [`units`]: durations (`250ms`) and sizes (`10mb`).

pub mod buffer;
mod component;
pub mod connection;
pub mod context;
pub mod error;
mod event;
mod explain;
mod extension;
pub mod http;
pub mod kafka;
pub mod limits;
pub mod listener;
pub mod location;
pub mod parse;
pub mod pipeline;
pub mod processor;
mod resolve;
mod route;
pub mod secret;
pub mod sink;
pub mod source;
pub mod units;
mod validate;

pub use buffer::{BoundedBlocking, Buffer, PluginBuffer, Tier};
pub use context::{CheckBuiltin, Context};
pub use error::{ConfigError, ConfigErrors};
pub use kafka::{
    AutoOffsetReset, BufferEncryption, Credentials, InTransit, KafkaAuthentication, KafkaBuffer,
    KafkaSasl, KafkaTopic, KmsEncryption, Secret, SecretError, TransitType, resolve_secret,
};
pub use limits::{PluginLimits, PluginSettings};
pub use listener::ListenerSettings;
pub use parse::parse;
pub use pipeline::{
    Config, DEFAULT_ROUTE, PIPELINE_FIELDS, Pipeline, Route, RoutedSink, SinkContext,
};
pub use processor::{BuiltinProcessor, PluginProcessor, Processor};
pub use resolve::Resolve;
pub use sink::{Codec, CodecConfig, Compression as SinkCompression, Sink};
pub use source::file::{FileSettings, FileSource};
pub use source::http::{HttpSettings, HttpSource};
pub use source::{DeserializerConfig, Source, SourceConfig, SourceKind};
pub use units::ByteSize;

/// serde's default for the keys whose default is `true`.
pub(crate) const fn yes() -> bool {
    true
}
