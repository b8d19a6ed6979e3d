//! The record envelope, format version 1: the payload is the raw bytes exactly as received,
//! and metadata travels in Kafka headers so it survives the buffer (Data Prepper loses it,
//! issue #4092). A reader refuses a record whose version it does not know rather than guess.
//! The next format (encryption) will change the version header, not the payload of version 1.

use rdkafka::message::{Header, Headers, Message, OwnedHeaders};

pub(crate) const VERSION: &str = "sluice-envelope";
pub(crate) const RECEIVED_AT: &str = "sluice-received-at-ms";
pub(crate) const ORIGIN: &str = "sluice-origin";
pub(crate) const CONTENT_TYPE: &str = "sluice-content-type";

/// Plain records: the payload is the raw bytes.
pub(crate) const PLAIN: &str = "1";
/// Sealed records: the payload is a `sluice_crypt` envelope.
pub(crate) const SEALED: &str = "2";

pub(crate) fn headers(
    version: &str,
    received_at_ms: u64,
    origin: &str,
    content_type: Option<&str>,
) -> OwnedHeaders {
    let received = received_at_ms.to_string();
    let headers = OwnedHeaders::new_with_capacity(4)
        .insert(Header {
            key: VERSION,
            value: Some(version),
        })
        .insert(Header {
            key: RECEIVED_AT,
            value: Some(&received),
        })
        .insert(Header {
            key: ORIGIN,
            value: Some(origin),
        });
    match content_type {
        Some(value) => headers.insert(Header {
            key: CONTENT_TYPE,
            value: Some(value),
        }),
        None => headers,
    }
}

/// Whether this build can read a record with this version header. A record with no envelope
/// (written to the topic by another producer) is read as raw bytes.
pub(crate) fn readable(version: Option<&str>) -> Result<(), String> {
    match version {
        None | Some(PLAIN) | Some(SEALED) => Ok(()),
        Some(other) => Err(format!(
            "unknown sluice envelope version `{other}` (this sluice reads versions {PLAIN} and \
             {SEALED}); upgrade sluice to read it"
        )),
    }
}

/// The metadata a sealed record authenticates with its payload: the header values, so that a
/// changed receive time, origin or content type fails to open too.
pub(crate) fn sealed_metadata(received_at_ms: &str, origin: &str, content_type: &str) -> Vec<u8> {
    [received_at_ms, origin, content_type]
        .join("\n")
        .into_bytes()
}

/// A header's text value.
pub(crate) fn header<'a>(m: &'a impl Message, name: &str) -> Option<&'a str> {
    m.headers()?
        .iter()
        .find(|h| h.key == name)
        .and_then(|h| h.value)
        .and_then(|v| std::str::from_utf8(v).ok())
}
