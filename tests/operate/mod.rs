//! The operator's commands against the real binary and broker: `sluice dlq list|show|replay`
//! over a dead-letter file a failing deserializer made, replayed after the plugin is fixed
//! (hot reload), through the admin endpoint of the running process or, with it stopped,
//! straight into the buffer topic; interrupted by kill -9 and replayed again.

mod buffer;
mod dlq;
mod watch;
