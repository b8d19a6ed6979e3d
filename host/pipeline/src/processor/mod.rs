//! Processor stages: what a processor does to a worker's events ([`Process`]), and `build`,
//! made from `sluice_config`'s processor list: a built-in's config type implements
//! [`BuildProcess`] in its runtime file (adding one: its config file, its runtime file here,
//! and its line in the list); any other name is a plugin, built by [`plugin`]. The worker runs
//! the stages in order (`worker::process`) and never names a concrete processor.

pub mod plugin;

use sluice_plugin::{Catalog, Event, Processed};

use crate::run::PipelineError;

/// One processor of one worker, called on the worker's blocking thread.
#[async_trait::async_trait]
pub trait Process: Send {
    /// The processor's name, for dead-letter reasons and logs.
    fn name(&self) -> &str;

    /// Its per-call deadline, if it has one (a plugin's `timeout`): a batch in it for longer
    /// is a stall (`/health`).
    fn deadline(&self) -> Option<std::time::Duration> {
        None
    }

    /// What becomes of each of `events`: one result per event, in order.
    fn process(&mut self, events: &[Event<'_>]) -> Vec<Processed>;

    /// Between batches: switches to a new version of the processor if there is one (a
    /// plugin's hot reload). Nothing by default.
    async fn follow(&mut self) {}
}

/// A processor stage as the workers hold it.
pub type Stage = Box<dyn Process>;

/// How a built-in processor's config type becomes its stage; each type of `sluice_config`'s
/// processor list implements it in its runtime file. It cannot fail: a built-in's rules are
/// its config's (`validate`), checked before anything starts.
pub trait BuildProcess {
    /// The stage of one worker of pipeline `pipeline`.
    fn build(&self, pipeline: &str) -> Stage;
}

macro_rules! build_processor {
    ($( $(#[$doc:meta])* $variant:ident($config:ty) = $name:literal, )*) => {
        /// One worker's stage for the processor `processor` of pipeline `pipeline`: a
        /// built-in's [`BuildProcess`] (one arm per line of the processor list), or a plugin's
        /// instance.
        pub(crate) async fn build(
            pipeline: &str,
            processor: &sluice_config::Processor,
            plugins: &Catalog,
        ) -> Result<Stage, PipelineError> {
            match processor {
                sluice_config::Processor::Builtin(builtin) => match *builtin {
                    $( sluice_config::BuiltinProcessor::$variant(ref config) => Ok(config.build(pipeline)), )*
                },
                sluice_config::Processor::Plugin(p) => plugin::build(pipeline, &p.settings(), plugins).await,
            }
        }
    };
}
sluice_config::for_each_processor!(build_processor);
