//! Push sources: they receive data and write the raw bytes to the pipeline's buffer, telling
//! the client "accepted" only once the buffer holds them.

pub mod http;
