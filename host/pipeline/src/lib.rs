//! Running pipelines: source → buffer → deserializer plugin → (processors) → sinks, with a
//! dead-letter file beside them.
//!
//! # Layout (the data flow)
//! - [`source`]: push sources (`http`) that write raw bytes to the buffer.
//! - `sluice_buffer`: the buffer (in-memory now, Kafka next).
//! - [`worker`]: reads batches, calls the deserializer, sends events to the sinks, dead-letters
//!   what cannot be parsed, and only then acknowledges the batch.
//! - [`sink`]: `stdout`, `file`, and the dead-letter file.
//! - [`watchdog`]: which workers have been in their plugin longer than its deadline (`/health`).
//! - [`reload`]: watches the plugin folder and publishes new plugin versions; workers switch
//!   to them between batches.
//! - [`mod@run`]: builds every pipeline from the validated config, runs them, and shuts down:
//!   stop the sources, drain the buffers through the sinks within a deadline, exit.

pub mod reload;
pub mod run;
pub mod sink;
pub mod source;
pub mod watchdog;
pub mod worker;

pub use run::{PipelineError, RunOptions, run};
pub use watchdog::{Stall, Watchdog};
