//! Request bodies from events: `ndjson` (one event per line) or `json` (one object holding the
//! events in an array under a key), then optionally gzip.

use std::io::Write as _;

use bytes::Bytes;
use sluice_config::sink::{Codec, Compression};

/// The events as JSON lines, each ending in `\n`.
pub(crate) fn lines(events: &[Bytes]) -> Vec<u8> {
    let mut out = Vec::with_capacity(events.iter().map(|e| e.len() + 1).sum());
    for e in events {
        out.extend_from_slice(e);
        out.push(b'\n');
    }
    out
}

/// The body of `events` in `codec`, compressed with `compression`.
pub(crate) fn encode(codec: &Codec, compression: Compression, events: &[Bytes]) -> Vec<u8> {
    let body = match codec {
        Codec::Ndjson => lines(events),
        Codec::Json { key_name } => {
            let key = serde_json::to_string(key_name).expect("a string serializes");
            let mut out = Vec::with_capacity(
                key.len() + 8 + events.iter().map(|e| e.len() + 1).sum::<usize>(),
            );
            out.push(b'{');
            out.extend_from_slice(key.as_bytes());
            out.extend_from_slice(b":[");
            for (i, e) in events.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(e);
            }
            out.extend_from_slice(b"]}");
            out
        }
    };
    match compression {
        Compression::None => body,
        Compression::Gzip => gzip(&body),
    }
}

/// `body` gzipped (fast level: request bodies, sent once).
pub(crate) fn gzip(body: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(
        Vec::with_capacity(body.len() / 4),
        flate2::Compression::fast(),
    );
    gz.write_all(body).expect("writing to memory does not fail");
    gz.finish().expect("writing to memory does not fail")
}

/// The file name extension of a body: `ndjson` / `json`, then `.gz` when gzipped.
pub(crate) fn extension(codec: &Codec, compression: Compression) -> String {
    let base = match codec {
        Codec::Ndjson => "ndjson",
        Codec::Json { .. } => "json",
    };
    match compression {
        Compression::None => base.to_owned(),
        Compression::Gzip => format!("{base}.gz"),
    }
}

/// The `Content-Type` of a body in `codec`.
pub(crate) fn content_type(codec: &Codec) -> &'static str {
    match codec {
        Codec::Ndjson => "application/x-ndjson",
        Codec::Json { .. } => "application/json",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read as _;

    fn events() -> Vec<Bytes> {
        vec![
            Bytes::from_static(br#"{"a":1}"#),
            Bytes::from_static(br#"{"b":"x"}"#),
        ]
    }

    #[test]
    fn ndjson_is_one_event_per_line_and_json_one_document() {
        assert_eq!(
            encode(&Codec::Ndjson, Compression::None, &events()),
            b"{\"a\":1}\n{\"b\":\"x\"}\n"
        );
        let json = encode(
            &Codec::Json {
                key_name: "events".into(),
            },
            Compression::None,
            &events(),
        );
        let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(v, serde_json::json!({"events": [{"a": 1}, {"b": "x"}]}));
        let empty = encode(
            &Codec::Json {
                key_name: "events".into(),
            },
            Compression::None,
            &[],
        );
        assert_eq!(empty, b"{\"events\":[]}");
    }

    #[test]
    fn gzip_inflates_to_the_same_body() {
        let gz = encode(&Codec::Ndjson, Compression::Gzip, &events());
        let mut text = String::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "{\"a\":1}\n{\"b\":\"x\"}\n");
        assert_eq!(extension(&Codec::Ndjson, Compression::Gzip), "ndjson.gz");
    }
}
