//! Pipeline configuration: the YAML file a user writes, parsed strictly and validated.
//!
//! # Layout
//! - [`model`]: the file's shape (Data Prepper's), with every field documented.
//! - [`load`]: text → [`Config`], collecting every error.
//! - [`kafka`]: the librdkafka properties sluice owns, refused in `producer_properties` and
//!   `consumer_properties`.
//! - [`location`]: which line each key is on, for errors found after parsing.
//! - [`error`]: [`ConfigError`]s that name the key path and line, and suggest the fix.
//! - [`units`]: durations (`250ms`) and sizes (`10mb`).

pub mod error;
pub mod kafka;
pub mod load;
pub mod location;
pub mod model;
pub mod units;

pub use error::{ConfigError, ConfigErrors};
pub use load::{Context, parse};
pub use model::*;
pub use units::ByteSize;
