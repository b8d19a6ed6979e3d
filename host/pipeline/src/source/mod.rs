//! Sources write raw bytes to the pipeline's buffer.
//!
//! - [`http`] (push): clients POST; "accepted" only once the buffer holds the body. Its
//!   [`http::server`] caps connections and closes those that hold it open without sending.
//! - [`mod@file`] (pull): reads a file line by line; it can re-read its input, so it only uses
//!   the in-memory buffer.

pub mod file;
pub mod http;

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, in ms since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
