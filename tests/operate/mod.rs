//! The operator's commands against the real binary and broker:
//! - `dlq`: `sluice dlq list|show|replay` over a dead-letter file a failing deserializer made,
//!   replayed after the plugin is fixed (hot reload), through the admin endpoint of the running
//!   process or, with it stopped, straight into the buffer topic; interrupted by kill -9 and
//!   replayed again.
//! - `buffer`: `sluice buffer status|replay`, a window read again event by event.
//! - `watch`: `sluice tap` and `sluice top` in a terminal.
//! - `admin`: the admin endpoint's switch, credentials and TLS.

mod admin;
mod buffer;
mod dlq;
mod watch;
