//! Running pipelines: source → buffer → deserializer plugin → (processors) → sinks, with a
//! dead-letter file beside them.
//!
//! # Layout (the data flow)
//! - [`source`]: the `Source` trait; push sources (`http`) and the `file` source, each built
//!   from its config, writing raw bytes to the buffer.
//! - [`buffer`]: builds the configured `sluice_buffer::Buffer` (in memory, or Kafka through
//!   `sluice-kafka`).
//! - [`worker`]: reads batches, calls the deserializer, sends events to the sinks, dead-letters
//!   what cannot be parsed, and only then acknowledges the batch.
//! - [`processor`]: the processor stages (built-in, or plugins), each built from its config;
//!   the workers run them between the deserializer and the sinks.
//! - [`sink`]: the `Sink` trait; `stdout`, `file`, and the dead-letter file (`dlq`).
//! - [`counters`]: a pipeline's counts, shared by its source and workers.
//! - [`watchdog`]: which workers have been in their plugin longer than its deadline (`/health`).
//! - [`reload`]: watches the plugin folder and publishes new plugin versions; workers switch
//!   to them between batches.
//! - [`mod@run`]: builds every pipeline from the validated config, runs them, and shuts down:
//!   stop the sources, drain the buffers through the sinks within a deadline, exit. It names
//!   no concrete source, buffer or sink.

pub mod buffer;
pub mod counters;
pub mod processor;
pub mod reload;
pub mod run;
pub mod sink;
pub mod source;
pub mod watchdog;
pub mod worker;

pub use buffer::kafka::default_instance_id;
pub use run::{PipelineError, RunOptions, run};
pub use watchdog::{Stall, Watchdog};
