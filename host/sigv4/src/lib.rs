//! AWS Signature Version 4 for plain HTTP requests to Amazon OpenSearch Service (`es`) and
//! OpenSearch Serverless (`aoss`), as Data Prepper's `aws` block does for its opensearch sink.
//!
//! A [`Signer`] is built once from [`Settings`] (region, service, optional role to assume). It
//! holds a credentials provider: the AWS SDK default chain (environment, profile, web identity,
//! ECS, instance metadata) from `aws-config`, or, with `sts_role_arn`, `aws-config`'s
//! [`AssumeRoleProvider`] on top of that chain. Nothing is fetched until the first
//! [`Signer::sign`]; credentials are then kept until shortly before they expire. Each request is
//! signed with the `aws-sigv4` crate, in headers: the caller adds the returned headers
//! (`authorization`, `x-amz-date`, `x-amz-security-token` with temporary credentials, and
//! `x-amz-content-sha256` for `aoss`, which requires it) to the request it sends, with the same
//! method, URL, headers and body it passed.
//!
//! [`sign_with`] is the pure step under [`Signer::sign`]: given credentials and a time it always
//! gives the same headers, which the tests check against AWS's published test vectors.
//!
//! # Layout
//! - this file: [`Settings`], [`Service`], [`Signer`], [`sign_with`], [`Error`].
//! - `credentials`: the provider cache.

use std::collections::BTreeMap;
use std::time::SystemTime;

use aws_config::sts::AssumeRoleProvider;
use aws_credential_types::Credentials;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_sigv4::http_request::{
    PayloadChecksumKind, SignableBody, SignableRequest, SigningSettings, sign,
};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;

mod credentials;
mod sts;
#[cfg(test)]
mod tests;

use credentials::CachedCredentials;

/// Which OpenSearch offering the requests go to: it names the signing service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Service {
    /// Amazon OpenSearch Service (a managed domain), signing name `es`.
    Es,
    /// Amazon OpenSearch Serverless (a collection), signing name `aoss`. Its requests also carry
    /// `x-amz-content-sha256`, the body's SHA-256, which Serverless requires.
    Aoss,
    /// Any other signing name (the otlp sink's `service_name`: `xray`, `logs`, `osis`).
    Other(&'static str),
}

impl Service {
    /// The name in the credential scope: `es` or `aoss`.
    pub const fn signing_name(self) -> &'static str {
        match self {
            Self::Es => "es",
            Self::Aoss => "aoss",
            Self::Other(name) => name,
        }
    }
}

/// What a [`Signer`] needs: Data Prepper's `aws` block, resolved (`serverless: true` is
/// [`Service::Aoss`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The AWS region of the domain or collection (`us-east-1`); also the region of the STS
    /// endpoint when a role is assumed.
    pub region: String,
    /// The signing service.
    pub service: Service,
    /// An IAM role to assume through STS `AssumeRole`, with the default chain's credentials; the
    /// requests are then signed with the role's temporary credentials.
    pub sts_role_arn: Option<String>,
    /// The external id sent with `AssumeRole` (only with `sts_role_arn`).
    pub sts_external_id: Option<String>,
    /// Headers sent with the `AssumeRole` request, as Data Prepper does (only with
    /// `sts_role_arn`). `aws-config`'s [`AssumeRoleProvider`] cannot add headers, so with these
    /// the role is assumed by the STS client itself (`sts.rs`), the headers set on the request
    /// before it is signed.
    pub sts_header_overrides: BTreeMap<String, String>,
}

/// Why a signer could not be built or a request not signed. Never holds a secret key or token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// `region` is empty.
    #[error("`region` is empty: set the AWS region of the domain or collection, e.g. `us-east-1`")]
    EmptyRegion,
    /// `sts_role_arn` is not an IAM role ARN.
    #[error(
        "`sts_role_arn` `{0}` is not an IAM role ARN: expected `arn:<partition>:iam::<account \
         id>:role/<name>`"
    )]
    InvalidRoleArn(String),
    /// `sts_external_id` without `sts_role_arn`: it would never be sent.
    #[error(
        "`sts_external_id` is set without `sts_role_arn`: the external id is only sent when \
         assuming a role; set `sts_role_arn` or remove `sts_external_id`"
    )]
    ExternalIdWithoutRole,
    /// `sts_header_overrides` without `sts_role_arn`: there is no AssumeRole call to send them
    /// with.
    #[error("`sts_header_overrides` goes with `sts_role_arn`; give the role, or remove it")]
    StsHeaderOverridesWithoutRole,
    /// The credentials provider failed (no credentials in the chain, or STS refused the role).
    #[error("no AWS credentials for signing: {0}")]
    Credentials(String),
    /// The request cannot be signed as given (a relative or malformed URL, an invalid header).
    #[error("cannot sign {method} `{url}`: {reason}")]
    Request {
        /// The request's method.
        method: String,
        /// The request's URL.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// Validates `settings` and builds their credentials provider: the AWS SDK default chain, and
/// with `sts_role_arn` an [`AssumeRoleProvider`] for that role on top of it, calling STS in
/// `settings.region` (with `sts_header_overrides`, the STS client itself). No network call is
/// made here. Also what AWS SDK clients of other services take (the s3 source's S3 and SQS).
pub async fn credentials_provider(settings: &Settings) -> Result<SharedCredentialsProvider, Error> {
    validate(settings)?;
    let region = aws_config::Region::new(settings.region.clone());
    let shared = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .region(region.clone())
        .load()
        .await;
    Ok(match settings.sts_role_arn.clone() {
        Some(role_arn) if !settings.sts_header_overrides.is_empty() => {
            SharedCredentialsProvider::new(sts::AssumeRoleWithHeaders {
                client: aws_sdk_sts::Client::new(&shared),
                role_arn,
                external_id: settings.sts_external_id.clone(),
                headers: settings.sts_header_overrides.clone(),
            })
        }
        Some(role_arn) => {
            let mut builder = AssumeRoleProvider::builder(role_arn)
                .session_name(session_name(SystemTime::now()))
                .region(region)
                .configure(&shared);
            if let Some(external_id) = settings.sts_external_id.clone() {
                builder = builder.external_id(external_id);
            }
            SharedCredentialsProvider::new(builder.build().await)
        }
        None => shared.credentials_provider().ok_or_else(|| {
            Error::Credentials("the AWS SDK default credentials chain is not available".into())
        })?,
    })
}

/// Signs requests for one region and service with credentials from the provider it was built
/// with. Cheap to share (`Arc`) between tasks: signing takes a lock only to read or refresh the
/// cached credentials.
#[derive(Debug)]
pub struct Signer {
    region: String,
    service: Service,
    credentials: CachedCredentials,
}

impl Signer {
    /// A signer with [`credentials_provider`]'s credentials for `settings`. No network call is
    /// made here; the first [`Signer::sign`] fetches the credentials.
    pub async fn new(settings: Settings) -> Result<Self, Error> {
        let provider = credentials_provider(&settings).await?;
        Ok(Self::with_provider(
            settings.region,
            settings.service,
            provider,
        ))
    }

    /// A signer with credentials from `provider` (a caller's own chain, or static credentials in
    /// tests), cached as [`Signer::new`]'s are. `region` is not validated.
    pub fn with_provider(
        region: String,
        service: Service,
        provider: impl ProvideCredentials + 'static,
    ) -> Self {
        Self {
            region,
            service,
            credentials: CachedCredentials::new(SharedCredentialsProvider::new(provider)),
        }
    }

    /// The signing service.
    pub fn service(&self) -> Service {
        self.service
    }

    /// Signs a request now and returns the headers to add to it, names in lower case:
    /// `authorization`, `x-amz-date`, `x-amz-security-token` (temporary credentials) and, for
    /// [`Service::Aoss`], `x-amz-content-sha256`.
    ///
    /// `url` is absolute and already percent-encoded (`https://host/index/_bulk?refresh=true`);
    /// `host` is signed from it unless `headers` has one. Every header in `headers` is signed
    /// except `authorization`, `user-agent`, `x-amzn-trace-id` and `transfer-encoding`, so the
    /// request must be sent with exactly these values (and this body).
    pub async fn sign(
        &self,
        method: &str,
        url: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Result<Vec<(String, String)>, Error> {
        let credentials = self.credentials.get().await?;
        sign_credentials(
            &credentials,
            &Scope {
                region: &self.region,
                service: self.service.signing_name(),
                checksum: checksum_kind(self.service.signing_name()),
                time: SystemTime::now(),
            },
            &Request {
                method,
                url,
                headers,
                body,
            },
        )
    }
}

/// Signs a request with the given credentials `(access key id, secret access key, session
/// token)` at `time` and returns the headers to add, as [`Signer::sign`] does. `service` is the
/// raw signing name (`es`, `aoss`, or any other, as in AWS's test suite); `aoss` adds
/// `x-amz-content-sha256`.
#[expect(
    clippy::too_many_arguments,
    reason = "a pure function of everything a signature depends on, called by tests with literals"
)]
pub fn sign_with(
    credentials: (&str, &str, Option<&str>),
    region: &str,
    service: &str,
    time: SystemTime,
    method: &str,
    url: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> Result<Vec<(String, String)>, Error> {
    let (access_key_id, secret_access_key, session_token) = credentials;
    let credentials = Credentials::new(
        access_key_id,
        secret_access_key,
        session_token.map(str::to_owned),
        None,
        "sluice-sigv4",
    );
    sign_credentials(
        &credentials,
        &Scope {
            region,
            service,
            checksum: checksum_kind(service),
            time,
        },
        &Request {
            method,
            url,
            headers,
            body,
        },
    )
}

/// What a signature is scoped to, besides the credentials.
struct Scope<'a> {
    region: &'a str,
    service: &'a str,
    checksum: PayloadChecksumKind,
    time: SystemTime,
}

/// The request as it will be sent.
struct Request<'a> {
    method: &'a str,
    url: &'a str,
    headers: &'a [(String, String)],
    body: &'a [u8],
}

impl Request<'_> {
    fn error(&self, reason: impl Into<String>) -> Error {
        Error::Request {
            method: self.method.to_owned(),
            url: self.url.to_owned(),
            reason: reason.into(),
        }
    }
}

/// Serverless requires the body's hash in `x-amz-content-sha256`; the managed service takes it
/// but does not require it, so it is left out there as Data Prepper's signer does.
fn checksum_kind(service: &str) -> PayloadChecksumKind {
    if service == Service::Aoss.signing_name() {
        PayloadChecksumKind::XAmzSha256
    } else {
        PayloadChecksumKind::NoHeader
    }
}

fn sign_credentials(
    credentials: &Credentials,
    scope: &Scope<'_>,
    request: &Request<'_>,
) -> Result<Vec<(String, String)>, Error> {
    // aws-sigv4 panics on a URL without a host (it signs `host` from it), so that is checked
    // here first.
    if !has_host(request.url) {
        return Err(request.error("the URL is not absolute (`https://host/path`)"));
    }
    let mut settings = SigningSettings::default();
    settings.payload_checksum_kind = scope.checksum;
    let identity: Identity = credentials.clone().into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(scope.region)
        .name(scope.service)
        .time(scope.time)
        .settings(settings)
        .build()
        .map_err(|e| request.error(error_chain(&e)))?
        .into();
    let signable = SignableRequest::new(
        request.method,
        request.url,
        request
            .headers
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str())),
        SignableBody::Bytes(request.body),
    )
    .map_err(|e| request.error(error_chain(&e)))?;
    let (instructions, _signature) = sign(signable, &params)
        .map_err(|e| request.error(error_chain(&e)))?
        .into_parts();
    Ok(instructions
        .headers()
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect())
}

/// Whether `url` is `scheme://host...` with a non-empty host.
fn has_host(url: &str) -> bool {
    let Some((scheme, rest)) = url.split_once("://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = authority.rsplit('@').next().unwrap_or_default();
    !scheme.is_empty() && !host.is_empty() && !host.starts_with(':')
}

/// Data Prepper checks `sts_role_arn` the same way (`Arn.fromString`, service `iam`, resource
/// type `role`).
fn validate(settings: &Settings) -> Result<(), Error> {
    if settings.region.trim().is_empty() {
        return Err(Error::EmptyRegion);
    }
    match &settings.sts_role_arn {
        Some(arn) if !is_role_arn(arn) => return Err(Error::InvalidRoleArn(arn.clone())),
        Some(_) => {}
        None if settings.sts_external_id.is_some() => return Err(Error::ExternalIdWithoutRole),
        None => {}
    }
    if !settings.sts_header_overrides.is_empty() && settings.sts_role_arn.is_none() {
        return Err(Error::StsHeaderOverridesWithoutRole);
    }
    Ok(())
}

/// `arn:<partition>:iam::<account>:role/<name>`.
fn is_role_arn(arn: &str) -> bool {
    let parts: Vec<&str> = arn.splitn(6, ':').collect();
    matches!(
        parts.as_slice(),
        ["arn", partition, "iam", "", account, resource]
            if !partition.is_empty()
                && !account.is_empty()
                && resource.strip_prefix("role/").is_some_and(|name| !name.is_empty())
    )
}

/// A session name STS accepts (`[\w+=,.@-]{2,64}`) that says who assumed the role and when.
fn session_name(now: SystemTime) -> String {
    let seconds = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    format!("sluice-sigv4-{seconds}")
}

/// An error and its sources, `: `-separated (the SDK's errors say little at the top level).
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}
