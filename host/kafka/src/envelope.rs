//! The record envelope. Metadata travels in Kafka headers so it survives the buffer (Data
//! Prepper loses it, issue #4092); the version header says what the payload is: version 1 the
//! raw bytes exactly as received, version 2 a `sluice_crypt` sealed envelope. A reader refuses
//! a record whose version it does not know rather than guess.

use rdkafka::message::{Header, Headers, Message, OwnedHeaders};

pub(crate) const VERSION: &str = "sluice-envelope";
pub(crate) const RECEIVED_AT: &str = "sluice-received-at-ms";
pub(crate) const ORIGIN: &str = "sluice-origin";
pub(crate) const CONTENT_TYPE: &str = "sluice-content-type";
/// A record replayed from the dead-letter file: why it was dead-lettered before, a JSON array
/// of reasons (oldest first). In clear, as the origin is; not authenticated by a seal.
pub(crate) const DEAD_LETTERED: &str = "sluice-dead-lettered";

/// Plain records: the payload is the raw bytes.
pub(crate) const PLAIN: &str = "1";
/// Sealed records: the payload is a `sluice_crypt` envelope.
pub(crate) const SEALED: &str = "2";

/// The headers of a record; `received_at_ms` is the receive time as its decimal text.
pub(crate) fn headers(
    version: &str,
    received_at_ms: &str,
    origin: &str,
    content_type: Option<&str>,
    dead_lettered: Option<&str>,
) -> OwnedHeaders {
    let headers = OwnedHeaders::new_with_capacity(4)
        .insert(Header {
            key: VERSION,
            value: Some(version),
        })
        .insert(Header {
            key: RECEIVED_AT,
            value: Some(received_at_ms),
        })
        .insert(Header {
            key: ORIGIN,
            value: Some(origin),
        });
    let headers = match content_type {
        Some(value) => headers.insert(Header {
            key: CONTENT_TYPE,
            value: Some(value),
        }),
        None => headers,
    };
    match dead_lettered {
        Some(value) => headers.insert(Header {
            key: DEAD_LETTERED,
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

/// The envelope headers of a consumed record, read in one pass over its headers.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Meta<'a> {
    pub(crate) version: Option<&'a str>,
    pub(crate) received_at_ms: Option<&'a str>,
    pub(crate) origin: Option<&'a str>,
    pub(crate) content_type: Option<&'a str>,
    pub(crate) dead_lettered: Option<&'a str>,
}

impl<'a> Meta<'a> {
    pub(crate) fn read(m: &'a impl Message) -> Self {
        let mut meta = Meta::default();
        let Some(headers) = m.headers() else {
            return meta;
        };
        for h in headers.iter() {
            let slot = match h.key {
                VERSION => &mut meta.version,
                RECEIVED_AT => &mut meta.received_at_ms,
                ORIGIN => &mut meta.origin,
                CONTENT_TYPE => &mut meta.content_type,
                DEAD_LETTERED => &mut meta.dead_lettered,
                _ => continue,
            };
            if slot.is_none() {
                *slot = h.value.and_then(|v| std::str::from_utf8(v).ok());
            }
        }
        meta
    }

    /// What a sealed record authenticated with its payload ([`sealed_metadata`]).
    pub(crate) fn sealed_metadata(&self) -> Vec<u8> {
        sealed_metadata(
            self.received_at_ms.unwrap_or_default(),
            self.origin.unwrap_or_default(),
            self.content_type.unwrap_or_default(),
        )
    }
}

/// The record a consumed message holds, as the workers get it (still sealed, if it was): its
/// payload, key, receive time (the header, or else the Kafka timestamp), origin (where the
/// source got it, and where it sits in Kafka) and position.
pub(crate) fn record(
    m: &impl Message,
    meta: &Meta<'_>,
    topic: &std::sync::Arc<str>,
) -> sluice_buffer::Record {
    let (partition, offset) = (m.partition(), m.offset());
    let received_at_ms = meta
        .received_at_ms
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            m.timestamp()
                .to_millis()
                .and_then(|t| u64::try_from(t).ok())
                .unwrap_or(0)
        });
    let position = format!("kafka:{}/{partition}@{offset}", m.topic());
    sluice_buffer::Record {
        events: Vec::new(),
        position: Some(sluice_buffer::Position {
            topic: topic.clone(),
            partition,
            offset,
        }),
        payload: m.payload().unwrap_or_default().to_vec(),
        key: m.key().map(<[u8]>::to_vec),
        received_at_ms,
        origin: match meta.origin {
            Some(source) => format!("{source} via {position}"),
            None => position,
        },
        content_type: meta.content_type.map(str::to_owned),
        dead_lettered: meta
            .dead_lettered
            .and_then(|reasons| serde_json::from_str(reasons).ok())
            .unwrap_or_default(),
        headers: Vec::new(),
    }
}

/// A record's Kafka headers as text: a value that is UTF-8 as it is, any other in base64 (as
/// Data Prepper's JSON writes the bytes it keeps), a header without a value as empty text.
pub(crate) fn kafka_headers(m: &impl Message) -> Vec<(String, String)> {
    use base64::Engine as _;
    let Some(headers) = m.headers() else {
        return Vec::new();
    };
    headers
        .iter()
        .map(|h| {
            let value = match h.value.map(std::str::from_utf8) {
                None => String::new(),
                Some(Ok(text)) => text.to_owned(),
                Some(Err(_)) => {
                    base64::engine::general_purpose::STANDARD.encode(h.value.unwrap_or_default())
                }
            };
            (h.key.to_owned(), value)
        })
        .collect()
}

/// `record` as the workers get it: a sealed one opened with `opener`. What cannot be read comes
/// back with the reason (and whether it failed to decrypt), to go to the dead-letter file as it
/// was stored.
#[expect(
    clippy::result_large_err,
    reason = "both sides carry the record by value: the error hands it to the dead-letter file"
)]
pub(crate) fn open(
    opener: Option<&sluice_crypt::Opener>,
    meta: &Meta<'_>,
    mut record: sluice_buffer::Record,
) -> Result<sluice_buffer::Record, (sluice_buffer::Unreadable, bool)> {
    use sluice_buffer::Unreadable;
    if let Err(reason) = readable(meta.version) {
        return Err((Unreadable { record, reason }, false));
    }
    if meta.version != Some(SEALED) {
        return Ok(record);
    }
    let Some(opener) = opener else {
        let reason =
            "the record is encrypted and this buffer has no `encryption` configured".to_owned();
        return Err((Unreadable { record, reason }, true));
    };
    match opener.open(&record.payload, &meta.sealed_metadata()) {
        Ok(plain) => {
            record.payload = plain;
            Ok(record)
        }
        Err(e) => {
            let reason = format!("cannot decrypt: {e}");
            Err((Unreadable { record, reason }, true))
        }
    }
}
