//! An independent SigV4 verifier, for the test servers that stand in for AWS (the OpenSearch
//! server, when the opensearch sink signs its requests): it recomputes a request's signature
//! from the documented algorithm, written out here with `hmac` and `sha2` and sharing no code
//! with `sluice-sigv4` (which signs with the `aws-sigv4` crate), so a mistake in either shows.
//!
//! The algorithm, as AWS's "Create a signed AWS API request" page gives it:
//! 1. canonical request: method, canonical URI, canonical query, `name:value` lines for the
//!    signed headers, the signed header names, the payload's SHA-256 (hex);
//! 2. string to sign: `AWS4-HMAC-SHA256`, the `x-amz-date` time, the credential scope
//!    `date/region/service/aws4_request`, the canonical request's SHA-256;
//! 3. signing key: HMAC-SHA256 chain `"AWS4" + secret` → date → region → service →
//!    `aws4_request`; signature: HMAC of the string to sign, hex.
//!
//! Scope: headers-signed requests to services other than S3 (the path's segments are
//! URI-encoded again, so `%` becomes `%25`, and the path is not normalised: the sink sends
//! normal paths). Beyond the signature it checks what AWS checks before it: the credential
//! scope (access key, date of `x-amz-date`, region, service), that `host`, `x-amz-date` and
//! every `x-amz-*` header sent are signed, that `x-amz-content-sha256` (required for `aoss`)
//! is the body's hash.

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

const ALGORITHM: &str = "AWS4-HMAC-SHA256";

/// Checks the SigV4 `authorization` header of a request as received: `path` and `query` as
/// sent on the request line (percent-encoded, `query` without `?`), every header received
/// (names in any case), the body. `Err` says what does not match, with the canonical request
/// recomputed here when the signature differs.
#[expect(
    clippy::too_many_arguments,
    reason = "the request's parts and the expected scope, each a plain value from a test server"
)]
pub fn verify(
    method: &str,
    path: &str,
    query: &str,
    headers: &[(String, String)],
    body: &[u8],
    access_key: &str,
    secret: &str,
    region: &str,
    service: &str,
) -> Result<(), String> {
    let values = |name: &str| -> Vec<&str> {
        headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect()
    };
    let single = |name: &str| -> Result<&str, String> {
        match values(name).as_slice() {
            [value] => Ok(value),
            [] => Err(format!("no `{name}` header")),
            _ => Err(format!("more than one `{name}` header")),
        }
    };

    let authorization = Authorization::parse(single("authorization")?)?;
    let amz_date = single("x-amz-date")?;
    if amz_date.len() != 16
        || amz_date.as_bytes()[8] != b'T'
        || !amz_date.ends_with('Z')
        || !amz_date[..8].bytes().all(|b| b.is_ascii_digit())
        || !amz_date[9..15].bytes().all(|b| b.is_ascii_digit())
    {
        return Err(format!(
            "`x-amz-date` `{amz_date}` is not `YYYYMMDDTHHMMSSZ`"
        ));
    }
    let date = &amz_date[..8];
    let expected_scope = [access_key, date, region, service, "aws4_request"];
    if authorization.credential != expected_scope {
        return Err(format!(
            "credential `{}` is not `{}`",
            authorization.credential.join("/"),
            expected_scope.join("/")
        ));
    }

    let signed = &authorization.signed_headers;
    if signed.windows(2).any(|pair| pair[0] >= pair[1])
        || signed.iter().any(|name| *name != name.to_ascii_lowercase())
    {
        return Err(format!(
            "SignedHeaders `{}` are not lower case, sorted and unique",
            signed.join(";")
        ));
    }
    for required in ["host", "x-amz-date"] {
        if !signed.iter().any(|name| name == required) {
            return Err(format!("`{required}` is not signed"));
        }
    }
    for (name, _) in headers {
        let lower = name.to_ascii_lowercase();
        if lower.starts_with("x-amz-") && !signed.contains(&lower) {
            return Err(format!("`{lower}` is sent but not signed"));
        }
    }

    let body_hash = hex(&Sha256::digest(body));
    let payload_hash = match values("x-amz-content-sha256").as_slice() {
        [] if service == "aoss" => {
            return Err(
                "no `x-amz-content-sha256` header (OpenSearch Serverless requires it)".into(),
            );
        }
        [] => body_hash,
        [sent] if *sent == body_hash => body_hash,
        [sent] => {
            return Err(format!(
                "`x-amz-content-sha256` `{sent}` is not the body's SHA-256 `{body_hash}`"
            ));
        }
        _ => return Err("more than one `x-amz-content-sha256` header".into()),
    };

    let mut canonical_headers = String::new();
    for name in signed {
        let found = values(name);
        if found.is_empty() {
            return Err(format!("signed header `{name}` is not in the request"));
        }
        let joined: Vec<String> = found.iter().map(|v| collapse_spaces(v)).collect();
        canonical_headers.push_str(&format!("{name}:{}\n", joined.join(",")));
    }
    let canonical_request = format!(
        "{method}\n{}\n{}\n{canonical_headers}\n{}\n{payload_hash}",
        canonical_uri(path),
        canonical_query(query)?,
        signed.join(";"),
    );
    let scope = expected_scope[1..].join("/");
    let string_to_sign = format!(
        "{ALGORITHM}\n{amz_date}\n{scope}\n{}",
        hex(&Sha256::digest(canonical_request.as_bytes()))
    );
    let mut key = hmac(format!("AWS4{secret}").as_bytes(), date.as_bytes());
    for part in [region, service, "aws4_request"] {
        key = hmac(&key, part.as_bytes());
    }
    let signature = hex(&hmac(&key, string_to_sign.as_bytes()));
    if signature != authorization.signature {
        return Err(format!(
            "signature `{}` is not `{signature}`; canonical request:\n{canonical_request}\n\
             string to sign:\n{string_to_sign}",
            authorization.signature
        ));
    }
    Ok(())
}

/// `AWS4-HMAC-SHA256 Credential=AK/date/region/service/aws4_request, SignedHeaders=a;b,
/// Signature=hex`.
struct Authorization {
    credential: Vec<String>,
    signed_headers: Vec<String>,
    signature: String,
}

impl Authorization {
    fn parse(header: &str) -> Result<Self, String> {
        let fields = header
            .strip_prefix(ALGORITHM)
            .and_then(|rest| rest.strip_prefix(' '))
            .ok_or_else(|| format!("`authorization` `{header}` is not {ALGORITHM}"))?;
        let (mut credential, mut signed_headers, mut signature) = (None, None, None);
        for field in fields.split(',').map(str::trim) {
            let (key, value) = field
                .split_once('=')
                .ok_or_else(|| format!("`authorization` field `{field}` has no `=`"))?;
            let slot = match key {
                "Credential" => &mut credential,
                "SignedHeaders" => &mut signed_headers,
                "Signature" => &mut signature,
                _ => return Err(format!("`authorization` has an unknown field `{key}`")),
            };
            if slot.replace(value).is_some() {
                return Err(format!("`authorization` has `{key}` twice"));
            }
        }
        let missing = |name| format!("`authorization` has no `{name}`");
        let signature = signature.ok_or_else(|| missing("Signature"))?;
        if signature.len() != 64 || !signature.bytes().all(|b| b"0123456789abcdef".contains(&b)) {
            return Err(format!(
                "`Signature` `{signature}` is not 64 lower-case hex digits"
            ));
        }
        Ok(Self {
            credential: credential
                .ok_or_else(|| missing("Credential"))?
                .split('/')
                .map(str::to_owned)
                .collect(),
            signed_headers: signed_headers
                .ok_or_else(|| missing("SignedHeaders"))?
                .split(';')
                .map(str::to_owned)
                .collect(),
            signature: signature.to_owned(),
        })
    }
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// RFC 3986 unreserved characters, the only ones SigV4 leaves unencoded.
fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~')
}

fn encode(bytes: &[u8], keep_slash: bool) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if is_unreserved(b) || (keep_slash && b == b'/') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn decode(text: &str) -> Result<Vec<u8>, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let digits = text
                .get(i + 1..i + 3)
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
                .ok_or_else(|| format!("bad percent-encoding in `{text}`"))?;
            out.push(digits);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Ok(out)
}

/// Non-S3 services: the path as sent, each segment URI-encoded once more.
fn canonical_uri(path: &str) -> String {
    if path.is_empty() {
        "/".to_owned()
    } else {
        encode(path.as_bytes(), true)
    }
}

/// Parameters decoded, re-encoded strictly, sorted by name then value; `a` is `a=`.
fn canonical_query(query: &str) -> Result<String, String> {
    let mut pairs = Vec::new();
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        pairs.push((
            encode(&decode(name)?, false),
            encode(&decode(value)?, false),
        ));
    }
    pairs.sort();
    Ok(pairs
        .iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect::<Vec<_>>()
        .join("&"))
}

/// Trimmed, with runs of spaces made one.
fn collapse_spaces(value: &str) -> String {
    value.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    //! The CRT SigV4 test suite's cases
    //! (<https://github.com/awslabs/aws-c-auth/tree/v0.9.0/tests/aws-signing-test-suite/v4>,
    //! `header-signed-request.txt`), and round trips through `sluice_sigv4::sign_with`.

    use std::time::{Duration, SystemTime};

    use super::verify;

    const ACCESS_KEY: &str = "AKIDEXAMPLE";
    const SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

    fn headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect()
    }

    fn get_vanilla(signature: &str) -> Vec<(String, String)> {
        headers(&[
            ("Host", "example.amazonaws.com"),
            ("X-Amz-Date", "20150830T123600Z"),
            (
                "Authorization",
                &format!(
                    "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/\
                     aws4_request, SignedHeaders=host;x-amz-date, Signature={signature}"
                ),
            ),
        ])
    }

    fn check(
        method: &str,
        path: &str,
        query: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Result<(), String> {
        verify(
            method,
            path,
            query,
            headers,
            body,
            ACCESS_KEY,
            SECRET,
            "us-east-1",
            "service",
        )
    }

    #[test]
    fn aws_get_vanilla() {
        let signed =
            get_vanilla("5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
        check("GET", "/", "", &signed, b"").unwrap();
        // `post-vanilla` differs only in the method, and so in the signature.
        let error = check("POST", "/", "", &signed, b"").unwrap_err();
        assert!(error.starts_with("signature `5fa00fa3"), "{error}");
        // Another body changes the payload hash.
        check("GET", "/", "", &signed, b"x").unwrap_err();
        let error = verify(
            "GET",
            "/",
            "",
            &signed,
            b"",
            ACCESS_KEY,
            "wrong",
            "us-east-1",
            "service",
        )
        .unwrap_err();
        assert!(error.starts_with("signature "), "{error}");
        let error = verify(
            "GET",
            "/",
            "",
            &signed,
            b"",
            ACCESS_KEY,
            SECRET,
            "eu-west-1",
            "service",
        )
        .unwrap_err();
        assert_eq!(
            error,
            "credential `AKIDEXAMPLE/20150830/us-east-1/service/aws4_request` is not \
             `AKIDEXAMPLE/20150830/eu-west-1/service/aws4_request`"
        );
    }

    #[test]
    fn aws_post_vanilla() {
        let signed =
            get_vanilla("5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b");
        check("POST", "/", "", &signed, b"").unwrap();
    }

    #[test]
    fn aws_get_vanilla_query_order_encoded() {
        let signed =
            get_vanilla("371d3713e185cc334048618a97f809c9ffe339c62934c032af5a0e595648fcac");
        check(
            "GET",
            "/",
            "Param-3=Value3&Param=Value2&%E1%88%B4=Value1",
            &signed,
            b"",
        )
        .unwrap();
    }

    #[test]
    fn aws_get_vanilla_with_session_token() {
        let token = "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267";
        let mut signed = headers(&[
            ("Host", "example.amazonaws.com"),
            ("X-Amz-Security-Token", token),
            ("X-Amz-Date", "20150830T123600Z"),
            (
                "Authorization",
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
                 SignedHeaders=host;x-amz-date;x-amz-security-token, \
                 Signature=07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8",
            ),
        ]);
        check("GET", "/", "", &signed, b"").unwrap();
        signed.push(("x-amz-meta".into(), "1".into()));
        assert_eq!(
            check("GET", "/", "", &signed, b"").unwrap_err(),
            "`x-amz-meta` is sent but not signed"
        );
    }

    #[test]
    fn aws_post_x_www_form_urlencoded() {
        let signed = headers(&[
            ("Content-Type", "application/x-www-form-urlencoded"),
            ("Host", "example.amazonaws.com"),
            ("Content-Length", "13"),
            ("X-Amz-Date", "20150830T123600Z"),
            (
                "x-amz-content-sha256",
                "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e",
            ),
            (
                "Authorization",
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
                 SignedHeaders=content-length;content-type;host;x-amz-content-sha256;x-amz-date, \
                 Signature=d3875051da38690788ef43de4db0d8f280229d82040bfac253562e56c3f20e0b",
            ),
        ]);
        check("POST", "/", "", &signed, b"Param1=value1").unwrap();
        assert_eq!(
            check("POST", "/", "", &signed, b"Param1=value2").unwrap_err(),
            "`x-amz-content-sha256` \
             `9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e` is not the \
             body's SHA-256 `2625b6c54eccd25adcc945e1e2896a5fd42161860de6fd179d4b3945a57ce417`"
        );
    }

    /// Signs with `sluice-sigv4` (the `aws-sigv4` crate) and checks the result here.
    fn round_trip(
        service: &str,
        token: Option<&str>,
        query: &str,
        body: &[u8],
    ) -> (Vec<(String, String)>, String) {
        let time = SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600);
        let path = "/logs-2026.01.01/_bulk";
        let url = if query.is_empty() {
            format!("https://search.example.com:9200{path}")
        } else {
            format!("https://search.example.com:9200{path}?{query}")
        };
        let mut sent = headers(&[
            ("Content-Type", "application/x-ndjson"),
            ("Content-Encoding", "gzip"),
        ]);
        let added = sluice_sigv4::sign_with(
            ("AKIDROUND", "round/trip+secret", token),
            "ap-southeast-2",
            service,
            time,
            "POST",
            &url,
            &sent,
            body,
        )
        .unwrap();
        sent.extend(added);
        // As an HTTP client sends it: the port is not a default one, so it stays.
        sent.push(("host".into(), "search.example.com:9200".into()));
        (sent, path.to_owned())
    }

    #[test]
    fn round_trip_through_sluice_sigv4() {
        let body = b"{\"index\":{}}\n{\"message\":\"a  b\"}\n";
        for service in ["es", "aoss"] {
            for token in [None, Some("session/token+=")] {
                for query in ["", "refresh=wait_for&pipeline=my%20pipe&a=%2F"] {
                    let (sent, path) = round_trip(service, token, query, body);
                    let verify = |method: &str, body: &[u8], secret: &str| {
                        verify(
                            method,
                            &path,
                            query,
                            &sent,
                            body,
                            "AKIDROUND",
                            secret,
                            "ap-southeast-2",
                            service,
                        )
                    };
                    let case = format!("{service} {token:?} `{query}`");
                    verify("POST", body, "round/trip+secret")
                        .unwrap_or_else(|e| panic!("{case}: {e}"));
                    verify("PUT", body, "round/trip+secret").unwrap_err();
                    verify("POST", b"{}", "round/trip+secret").unwrap_err();
                    verify("POST", body, "another").unwrap_err();
                }
            }
        }
    }

    #[test]
    fn aoss_without_content_hash_is_refused() {
        let (sent, path) = round_trip("aoss", None, "", b"{}");
        let stripped: Vec<_> = sent
            .into_iter()
            .filter(|(name, _)| name != "x-amz-content-sha256")
            .collect();
        let error = verify(
            "POST",
            &path,
            "",
            &stripped,
            b"{}",
            "AKIDROUND",
            "round/trip+secret",
            "ap-southeast-2",
            "aoss",
        )
        .unwrap_err();
        assert_eq!(
            error,
            "no `x-amz-content-sha256` header (OpenSearch Serverless requires it)"
        );
    }
}
