//! What a request must pass before its body is taken: its credentials (`authentication:
//! http_basic`: 401 with `WWW-Authenticate` without the right ones) and its encoding
//! (`compression: gzip`: the body is inflated here, and `max_request_length` applies to what
//! comes out, so a small body that inflates to gigabytes gets 413, never the memory), and its
//! length ([`too_long`]: 413 before the body is read, when `Content-Length` is over
//! `max_request_length`). Also the `GET /health` answer ([`health`]), behind the same
//! credentials unless `unauthenticated_health_check`.

use std::io::Read as _;

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use sluice_config::http::Compression;
use sluice_config::secret::BasicAuth;

/// The realm clients are told to authenticate for.
const REALM: &str = "sluice";

pub struct Guard {
    /// `user:password`, as a client's `Authorization: Basic` carries it (base64-decoded).
    basic: Option<Vec<u8>>,
    compression: Compression,
}

impl Guard {
    /// Asks for `basic` credentials (none: anyone may send), takes bodies compressed as
    /// `compression` allows.
    pub fn new(basic: Option<&BasicAuth>, compression: Compression) -> Self {
        let basic = basic.map(|b| format!("{}:{}", b.username, b.password).into_bytes());
        Self { basic, compression }
    }

    /// `Ok` when no credentials are required or the request has the right ones; else the 401.
    #[allow(clippy::result_large_err, reason = "the error is the response itself")]
    pub fn authenticate(&self, headers: &HeaderMap) -> Result<(), Response> {
        self.check(headers).map_err(|why| {
            (
                StatusCode::UNAUTHORIZED,
                [(
                    header::WWW_AUTHENTICATE,
                    format!("Basic realm=\"{REALM}\", charset=\"UTF-8\""),
                )],
                format!("{why}\n"),
            )
                .into_response()
        })
    }

    /// `Ok` when no credentials are required or the request has the right ones; else why not
    /// (gRPC answers it as `UNAUTHENTICATED`).
    pub fn check(&self, headers: &HeaderMap) -> Result<(), &'static str> {
        let Some(expected) = &self.basic else {
            return Ok(());
        };
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                let (scheme, token) = v.split_once(' ')?;
                scheme
                    .eq_ignore_ascii_case("basic")
                    .then(|| {
                        base64::engine::general_purpose::STANDARD
                            .decode(token.trim())
                            .ok()
                    })
                    .flatten()
            });
        match given {
            Some(given) if same(&given, expected) => Ok(()),
            Some(_) => Err("wrong user name or password"),
            None => Err("credentials required (HTTP Basic)"),
        }
    }

    /// The body as the buffer should hold it: inflated when it is gzip and `compression: gzip`,
    /// at most `max` bytes.
    #[allow(clippy::result_large_err, reason = "the error is the response itself")]
    pub fn decode(&self, encoding: Option<&str>, body: Bytes, max: u64) -> Result<Bytes, Response> {
        let encoding = encoding.map(|v| v.trim().to_ascii_lowercase());
        match (encoding.as_deref(), self.compression) {
            (None | Some("identity" | ""), _) => Ok(body),
            (Some("gzip" | "x-gzip"), Compression::Gzip) => inflate(&body, max),
            (Some(other), compression) => Err((
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!(
                    "Content-Encoding `{other}` is not accepted here: the http source's \
                     `compression` is `{}`{}\n",
                    match compression {
                        Compression::None => "none",
                        Compression::Gzip => "gzip",
                    },
                    if compression == Compression::None && other.contains("gzip") {
                        " (set `compression: gzip` to accept gzip bodies)"
                    } else {
                        ""
                    }
                ),
            )
                .into_response()),
        }
    }
}

/// Whether two byte strings are equal, in time that depends only on their lengths.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0_u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// Inflates a gzip body, refusing it (413) as soon as it passes `max` bytes.
#[allow(clippy::result_large_err, reason = "the error is the response itself")]
fn inflate(body: &[u8], max: u64) -> Result<Bytes, Response> {
    let mut out = Vec::new();
    let read = flate2::read::MultiGzDecoder::new(body)
        .take(max.saturating_add(1))
        .read_to_end(&mut out);
    match read {
        Err(e) => Err((
            StatusCode::BAD_REQUEST,
            format!("the body is not valid gzip: {e}\n"),
        )
            .into_response()),
        Ok(_) if out.len() as u64 > max => Err((
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "the gzip body inflates to more than the http source's `max_request_length` of \
                 {max} bytes\n"
            ),
        )
            .into_response()),
        Ok(_) => Ok(Bytes::from(out)),
    }
}

/// `GET /health` of a source with `health_check_service`: 200 `{"healthy":true}` while it
/// runs; with `guard`'s credentials unless `open` (`unauthenticated_health_check`).
pub fn health(guard: &Guard, open: bool, headers: &HeaderMap) -> Response {
    if !open && let Err(refused) = guard.authenticate(headers) {
        return refused;
    }
    (
        [(header::CONTENT_TYPE, "application/json")],
        "{\"healthy\":true}\n",
    )
        .into_response()
}

/// The answer to a request whose `Content-Length` is over `max` bytes (the `source`'s
/// `max_request_length`), given before its body is read so the client is not kept sending it.
pub fn too_long(headers: &HeaderMap, max: u64, source: &str) -> Option<Response> {
    let length: u64 = headers
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse()
        .ok()?;
    (length > max).then(|| {
        let message = format!(
            "the body is {length} bytes (Content-Length), over the {source} source's \
             `max_request_length` of {max} bytes\n"
        );
        (
            StatusCode::PAYLOAD_TOO_LARGE,
            [(header::CONNECTION, "close")],
            message,
        )
            .into_response()
    })
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn a_gzip_bomb_is_refused_at_the_limit_not_inflated_whole() {
        let bomb = gzip(&vec![0_u8; 64 << 20]);
        assert!(bomb.len() < 100 << 10, "{} bytes compressed", bomb.len());
        let err = inflate(&bomb, 1 << 20).unwrap_err();
        assert_eq!(err.status(), StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(&inflate(&gzip(b"[1,2]"), 1 << 20).unwrap()[..], b"[1,2]");
        assert_eq!(
            inflate(b"not gzip", 100).unwrap_err().status(),
            StatusCode::BAD_REQUEST
        );
    }

    #[test]
    fn credentials_compare_whole() {
        assert!(same(b"u:p", b"u:p"));
        assert!(!same(b"u:p", b"u:q"));
        assert!(!same(b"u:p", b"u:pp"));
    }
}
