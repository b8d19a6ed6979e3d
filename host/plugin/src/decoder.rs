//! [`Decoder`]: the typed front the pipeline's workers call for a deserializer plugin,
//! whichever contract it implements (0.1.0's `deserializer`, 0.2's `deserializer-plugin`): it
//! picks the world's adapter from the plugin's world and gives one [`Decoded`] per record.
//!
//! Data flow: [`Plugin`] → [`Decoder::new`] (instantiate, `configure`) per worker →
//! [`Decoder::decode`] per batch → one [`Decoded`] per record.

use crate::batch::Runner;
use crate::engine::Plugin;
use crate::error::PluginError;
use crate::events::Events;
use crate::instance::{CallStats, option_entries};
use crate::sandbox::Limits;
use crate::worlds::deserializer::{self as v1, Deserializer, RawRecord};
use crate::worlds::deserializer_v2::{self as v2, DeserializerV2};

/// What became of one record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded {
    /// The events the plugin parsed (JSON object text, not yet checked by the host).
    Events(Events),
    /// The plugin said the record is malformed, and why.
    Malformed(String),
    /// The plugin trapped on this record alone (after a retry on a fresh instance).
    Trapped(String),
}

/// Counters of one decoder, for metrics and tests.
pub type DecoderStats = CallStats;

/// A deserializer instance plus the call policy. Not shared: each worker owns one.
pub struct Decoder {
    runner: Contract,
}

/// The runner of the plugin's contract.
enum Contract {
    V1(Runner<Deserializer>),
    V2(Runner<DeserializerV2>),
}

impl Decoder {
    /// Instantiates `plugin` and calls its `configure` export with `options`. Fails when the
    /// plugin is not a deserializer, refuses the options (or takes none and some were given),
    /// or cannot start. Blocks: call it off the async reactor.
    pub fn new(
        plugin: Plugin,
        options: Vec<(String, String)>,
        limits: Limits,
    ) -> Result<Self, PluginError> {
        // Which contract: the world's descriptor (a plugin of another kind is refused by the
        // runner, naming the deserializer worlds).
        let runner = if std::ptr::eq(plugin.inner.descriptor, &v1::DESCRIPTOR) {
            if !options.is_empty() && plugin.world() != v1::CONFIGURABLE_WORLD {
                let keys = options
                    .iter()
                    .map(|(k, _)| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ");
                return Err(PluginError::NotConfigurable {
                    name: plugin.name().to_owned(),
                    keys,
                });
            }
            let options = option_entries(options, |key, value| v1::OptionEntry { key, value });
            Contract::V1(Runner::new(plugin, options, limits)?)
        } else {
            let options = option_entries(options, |key, value| v2::OptionEntry { key, value });
            Contract::V2(Runner::new(plugin, options, limits)?)
        };
        Ok(Self { runner })
    }

    /// The plugin this decoder runs.
    pub fn plugin(&self) -> &Plugin {
        match &self.runner {
            Contract::V1(r) => r.plugin(),
            Contract::V2(r) => r.plugin(),
        }
    }

    /// Counters since this decoder was made.
    pub fn stats(&self) -> DecoderStats {
        match &self.runner {
            Contract::V1(r) => r.stats(),
            Contract::V2(r) => r.stats(),
        }
    }

    /// Deserializes `batch`: exactly one [`Decoded`] per record, in order. Blocks: call it off
    /// the async reactor.
    pub fn decode(&mut self, batch: &[RawRecord]) -> Vec<Decoded> {
        self.decode_typed(batch, &[])
    }

    /// [`Decoder::decode`], with each record's content type (one per record) for the plugins
    /// that take it (contract 0.2).
    pub fn decode_typed(
        &mut self,
        batch: &[RawRecord],
        content_types: &[Option<String>],
    ) -> Vec<Decoded> {
        let trapped = |reason| Decoded::Trapped(reason);
        match &mut self.runner {
            Contract::V1(runner) => runner
                .run(batch)
                .into_iter()
                .map(|result| match result {
                    Ok(v1::Outcome::Events(events)) => Decoded::Events(events.into()),
                    Ok(v1::Outcome::Malformed(reason)) => Decoded::Malformed(reason),
                    Err(reason) => trapped(reason),
                })
                .collect(),
            Contract::V2(runner) => runner
                .run(&v2::stage(batch, content_types).inputs())
                .into_iter()
                .map(|result| match result {
                    Ok(v2::Output::Events(events)) => Decoded::Events(events),
                    Ok(v2::Output::Malformed(reason)) => Decoded::Malformed(reason),
                    Err(reason) => trapped(reason),
                })
                .collect(),
        }
    }
}
