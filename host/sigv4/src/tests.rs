//! Signatures against AWS's published SigV4 test suite, the settings checks, and the cache.
//!
//! The vectors are from the CRT signing test suite,
//! <https://github.com/awslabs/aws-c-auth/tree/v0.9.0/tests/aws-signing-test-suite/v4> (the
//! copy `aws-sigv4` 1.6.4 ships in `aws-signing-test-suite/v4`): each case's `request.txt`,
//! `context.json` and `header-signed-request.txt`. `get-vanilla` is also in AWS's original
//! `aws-sig-v4-test-suite` with the same signature.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use aws_credential_types::credential_fn::provide_credentials_fn;
use aws_sigv4::http_request::PayloadChecksumKind;

use super::*;
use crate::credentials::{CachedCredentials, NO_EXPIRY_LIFETIME};

const ACCESS_KEY: &str = "AKIDEXAMPLE";
const SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

/// 2015-08-30T12:36:00Z, every vector's `timestamp`.
fn vector_time() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_440_938_160)
}

fn headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect()
}

fn header<'a>(signed: &'a [(String, String)], name: &str) -> Option<&'a str> {
    signed
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

#[test]
fn get_vanilla() {
    let signed = sign_with(
        (ACCESS_KEY, SECRET, None),
        "us-east-1",
        "service",
        vector_time(),
        "GET",
        "https://example.amazonaws.com/",
        &headers(&[("Host", "example.amazonaws.com")]),
        b"",
    )
    .unwrap();
    assert_eq!(
        signed,
        headers(&[
            ("x-amz-date", "20150830T123600Z"),
            (
                "authorization",
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
                 SignedHeaders=host;x-amz-date, \
                 Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
            ),
        ])
    );
}

/// Without a `host` header, it is signed from the URL: the same signature.
#[test]
fn get_vanilla_host_from_url() {
    let signed = sign_with(
        (ACCESS_KEY, SECRET, None),
        "us-east-1",
        "service",
        vector_time(),
        "GET",
        "https://example.amazonaws.com/",
        &[],
        b"",
    )
    .unwrap();
    assert!(
        header(&signed, "authorization").unwrap().ends_with(
            "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
        )
    );
}

#[test]
fn get_vanilla_with_session_token() {
    let token = "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267";
    let signed = sign_with(
        (ACCESS_KEY, SECRET, Some(token)),
        "us-east-1",
        "service",
        vector_time(),
        "GET",
        "https://example.amazonaws.com/",
        &headers(&[("Host", "example.amazonaws.com")]),
        b"",
    )
    .unwrap();
    assert_eq!(header(&signed, "x-amz-security-token"), Some(token));
    assert_eq!(
        header(&signed, "authorization"),
        Some(
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
             SignedHeaders=host;x-amz-date;x-amz-security-token, \
             Signature=07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8"
        )
    );
}

#[test]
fn get_vanilla_query_order_encoded() {
    let signed = sign_with(
        (ACCESS_KEY, SECRET, None),
        "us-east-1",
        "service",
        vector_time(),
        "GET",
        "https://example.amazonaws.com/?Param-3=Value3&Param=Value2&%E1%88%B4=Value1",
        &headers(&[("Host", "example.amazonaws.com")]),
        b"",
    )
    .unwrap();
    assert!(
        header(&signed, "authorization").unwrap().ends_with(
            "Signature=371d3713e185cc334048618a97f809c9ffe339c62934c032af5a0e595648fcac"
        )
    );
}

/// `post-x-www-form-urlencoded`: a body, signed with `x-amz-content-sha256` as `aoss` requests
/// are (the vector's `sign_body: true`), under the suite's service name.
#[test]
fn post_x_www_form_urlencoded_with_content_sha256() {
    let body = b"Param1=value1";
    let credentials = Credentials::new(ACCESS_KEY, SECRET, None, None, "test");
    let signed = sign_credentials(
        &credentials,
        &Scope {
            region: "us-east-1",
            service: "service",
            checksum: PayloadChecksumKind::XAmzSha256,
            time: vector_time(),
        },
        &Request {
            method: "POST",
            url: "https://example.amazonaws.com/",
            headers: &headers(&[
                ("Content-Type", "application/x-www-form-urlencoded"),
                ("Host", "example.amazonaws.com"),
                ("Content-Length", "13"),
            ]),
            body,
        },
    )
    .unwrap();
    assert_eq!(
        header(&signed, "x-amz-content-sha256"),
        Some("9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e")
    );
    assert_eq!(
        header(&signed, "authorization"),
        Some(
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
             SignedHeaders=content-length;content-type;host;x-amz-content-sha256;x-amz-date, \
             Signature=d3875051da38690788ef43de4db0d8f280229d82040bfac253562e56c3f20e0b"
        )
    );
}

#[test]
fn aoss_adds_the_content_hash_and_es_does_not() {
    let sign = |service| {
        sign_with(
            (ACCESS_KEY, SECRET, None),
            "eu-west-1",
            service,
            vector_time(),
            "POST",
            "https://search.example.com/_bulk",
            &headers(&[("content-type", "application/x-ndjson")]),
            b"{}\n",
        )
        .unwrap()
    };
    let aoss = sign("aoss");
    // SHA-256 of "{}\n".
    assert_eq!(
        header(&aoss, "x-amz-content-sha256"),
        Some("ca3d163bab055381827226140568f3bef7eaac187cebd76878e0b63e9e442356")
    );
    assert!(header(&aoss, "authorization").unwrap().contains(
        "/20150830/eu-west-1/aoss/aws4_request, \
         SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date,"
    ));
    let es = sign("es");
    assert_eq!(header(&es, "x-amz-content-sha256"), None);
    assert!(header(&es, "authorization").unwrap().contains(
        "/20150830/eu-west-1/es/aws4_request, SignedHeaders=content-type;host;x-amz-date,"
    ));
}

#[test]
fn a_relative_url_is_an_error_not_a_panic() {
    for url in ["/index/_doc/1", "", "https:///path", "https://:443/"] {
        let error = sign_with(
            (ACCESS_KEY, SECRET, None),
            "us-east-1",
            "es",
            vector_time(),
            "GET",
            url,
            &[],
            b"",
        )
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("cannot sign GET `{url}`: the URL is not absolute (`https://host/path`)")
        );
    }
}

#[test]
fn an_invalid_header_is_an_error() {
    let error = sign_with(
        (ACCESS_KEY, SECRET, None),
        "us-east-1",
        "es",
        vector_time(),
        "GET",
        "https://example.com/",
        &headers(&[("bad name", "x")]),
        b"",
    )
    .unwrap_err();
    assert!(
        matches!(&error, Error::Request { reason, .. } if reason.contains("header")),
        "{error}"
    );
}

fn settings() -> Settings {
    Settings {
        region: "us-east-1".into(),
        service: Service::Es,
        sts_role_arn: None,
        sts_external_id: None,
        sts_header_overrides: BTreeMap::new(),
    }
}

#[test]
fn settings_errors_name_the_key() {
    let cases = [
        (
            Settings {
                region: " ".into(),
                ..settings()
            },
            Error::EmptyRegion,
        ),
        (
            Settings {
                sts_role_arn: Some("arn:aws:iam::123456789012:user/someone".into()),
                ..settings()
            },
            Error::InvalidRoleArn("arn:aws:iam::123456789012:user/someone".into()),
        ),
        (
            Settings {
                sts_role_arn: Some("my-role".into()),
                ..settings()
            },
            Error::InvalidRoleArn("my-role".into()),
        ),
        (
            Settings {
                sts_external_id: Some("id".into()),
                ..settings()
            },
            Error::ExternalIdWithoutRole,
        ),
        (
            Settings {
                sts_header_overrides: BTreeMap::from([("x-trace".into(), "1".into())]),
                ..settings()
            },
            Error::StsHeaderOverridesWithoutRole,
        ),
    ];
    for (settings, expected) in cases {
        assert_eq!(validate(&settings), Err(expected));
    }
    assert_eq!(
        Error::InvalidRoleArn("my-role".into()).to_string(),
        "`sts_role_arn` `my-role` is not an IAM role ARN: expected \
         `arn:<partition>:iam::<account id>:role/<name>`"
    );
}

#[test]
fn role_arns() {
    for arn in [
        "arn:aws:iam::123456789012:role/sink",
        "arn:aws-cn:iam::123456789012:role/path/to/sink",
        "arn:aws-us-gov:iam::123456789012:role/a",
    ] {
        assert!(is_role_arn(arn), "{arn}");
    }
    for arn in [
        "arn:aws:iam::123456789012:role/",
        "arn:aws:sts::123456789012:role/sink",
        "arn:aws:iam:us-east-1:123456789012:role/sink",
        "arn:aws:iam:::role/sink",
        "arn::iam::123456789012:role/sink",
        "aws:iam::123456789012:role/sink",
    ] {
        assert!(!is_role_arn(arn), "{arn}");
    }
}

/// Building a signer (default chain, and an assumed role) makes no network call.
#[tokio::test]
async fn new_builds_without_calling_aws() {
    let signer = Signer::new(settings()).await.unwrap();
    assert_eq!(signer.service(), Service::Es);
    let signer = Signer::new(Settings {
        service: Service::Aoss,
        sts_role_arn: Some("arn:aws:iam::123456789012:role/sink".into()),
        sts_external_id: Some("external".into()),
        ..settings()
    })
    .await
    .unwrap();
    assert_eq!(signer.service(), Service::Aoss);
}

#[tokio::test]
async fn signer_signs_with_its_provider() {
    let signer = Signer::with_provider(
        "us-west-2".into(),
        Service::Aoss,
        Credentials::new("AKID", "secret", Some("token".into()), None, "test"),
    );
    let signed = signer
        .sign(
            "PUT",
            "https://abc.us-west-2.aoss.amazonaws.com/index",
            &[],
            b"{}",
        )
        .await
        .unwrap();
    let mut names: Vec<&str> = signed.iter().map(|(n, _)| n.as_str()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "authorization",
            "x-amz-content-sha256",
            "x-amz-date",
            "x-amz-security-token",
        ]
    );
    assert!(
        header(&signed, "authorization")
            .unwrap()
            .starts_with("AWS4-HMAC-SHA256 Credential=AKID/")
    );
    assert!(header(&signed, "authorization").unwrap().contains(
        "/us-west-2/aoss/aws4_request, \
         SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token,"
    ));
}

#[tokio::test]
async fn provider_errors_are_credentials_errors() {
    let signer = Signer::with_provider(
        "us-east-1".into(),
        Service::Es,
        provide_credentials_fn(|| async {
            Err(aws_credential_types::provider::error::CredentialsError::not_loaded("nothing set"))
        }),
    );
    let error = signer
        .sign("GET", "https://example.com/", &[], b"")
        .await
        .unwrap_err();
    assert!(
        matches!(&error, Error::Credentials(reason) if reason.contains("nothing set")),
        "{error}"
    );
}

#[tokio::test]
async fn credentials_are_cached_until_shortly_before_expiry() {
    let start = vector_time();
    let expiry = start + Duration::from_secs(3600);
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let cache = CachedCredentials::new(SharedCredentialsProvider::new(provide_credentials_fn(
        move || {
            let n = counted.fetch_add(1, Ordering::SeqCst);
            async move {
                Ok(Credentials::new(
                    format!("AKID{n}"),
                    "secret",
                    Some("token".into()),
                    Some(expiry),
                    "test",
                ))
            }
        },
    )));
    let at = |offset: u64| move || start + Duration::from_secs(offset);
    assert_eq!(cache.get_at(at(0)).await.unwrap().access_key_id(), "AKID0");
    assert_eq!(
        cache.get_at(at(3000)).await.unwrap().access_key_id(),
        "AKID0"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // Within five minutes of expiry: fetched again.
    assert_eq!(
        cache.get_at(at(3301)).await.unwrap().access_key_id(),
        "AKID1"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn credentials_without_expiry_are_kept_for_fifteen_minutes() {
    let start = vector_time();
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let cache = CachedCredentials::new(SharedCredentialsProvider::new(provide_credentials_fn(
        move || {
            counted.fetch_add(1, Ordering::SeqCst);
            async { Ok(Credentials::new("AKID", "secret", None, None, "test")) }
        },
    )));
    let lifetime = NO_EXPIRY_LIFETIME.as_secs();
    cache.get_at(|| start).await.unwrap();
    cache
        .get_at(|| start + Duration::from_secs(lifetime - 1))
        .await
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    cache
        .get_at(|| start + Duration::from_secs(lifetime))
        .await
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}
