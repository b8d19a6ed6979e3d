//! The old implementation, kept verbatim as the golden test's reference.

pub mod common;
pub mod logs;
pub mod metrics;
pub mod otel;
pub mod traces;
