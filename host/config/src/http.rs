//! How a listener is protected, with Data Prepper's shapes: [`Authentication`] (`http_basic`
//! or `unauthenticated`) and its rules, [`Compression`] (`none`, `gzip`) and [`Tls`] (the
//! certificate and key files, resolved). The push sources take them as listener keys
//! ([`crate::listener`]); the same shapes protect `/metrics` when the command line asks for it.

use std::path::PathBuf;

use serde::Deserialize;

use crate::error::Errors;
use crate::location::join;
use crate::secret::{BasicAuth, Credentials, SecretError, resolve_secret};

/// `authentication`: how clients prove who they are. One key: `http_basic` or
/// `unauthenticated`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Authentication {
    /// `http_basic: {username, password}`: HTTP Basic authentication; a request without the
    /// right credentials gets 401 with `WWW-Authenticate: Basic`. The password may be
    /// `${env:NAME}` or `${file:PATH}`; it is never logged.
    #[serde(default)]
    pub http_basic: Option<Credentials>,
    /// `unauthenticated:`: no authentication (the default). Takes no options.
    #[serde(default, deserialize_with = "present")]
    pub unauthenticated: Option<serde_yaml::Value>,
}

/// A key that is there, even with no value (`unauthenticated:`).
pub(crate) fn present<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<serde_yaml::Value>, D::Error> {
    serde_yaml::Value::deserialize(d).map(Some)
}

impl Authentication {
    /// The Basic credentials to check, with the password resolved; `None` when unauthenticated.
    pub fn basic(&self) -> Result<Option<BasicAuth>, SecretError> {
        self.http_basic
            .as_ref()
            .map(Credentials::resolve)
            .transpose()
    }
}

/// `compression`: what request bodies may be compressed with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Compression {
    /// Bodies are taken as sent; a `Content-Encoding` other than `identity` gets 415.
    #[default]
    None,
    /// Bodies with `Content-Encoding: gzip` are decompressed; `max_request_length` applies to
    /// the decompressed size (a body that inflates past it gets 413).
    Gzip,
}

/// A listener's TLS: certificate chain and private key, PEM files.
#[derive(Debug, Clone)]
pub struct Tls {
    pub certificate_file: PathBuf,
    pub key_file: PathBuf,
}

/// Checks `authentication` at `path`: one of its keys, a password that resolves.
pub(crate) fn check_authentication(auth: &Authentication, path: &str, errors: &mut Errors) {
    let path = join(path, "authentication");
    if auth.http_basic.is_some() == auth.unauthenticated.is_some() {
        errors.at(
            &path,
            format!("`{path}` takes one of `http_basic` and `unauthenticated`"),
        );
    }
    if let Some(value) = &auth.unauthenticated
        && !(value.is_null()
            || value
                .as_mapping()
                .is_some_and(serde_yaml::Mapping::is_empty))
    {
        errors.at(
            &join(&path, "unauthenticated"),
            format!("`{path}.unauthenticated` takes no options"),
        );
    }
    if let Some(c) = &auth.http_basic {
        if c.username.is_empty() || c.username.contains(':') {
            errors.at(
                &join(&path, "http_basic.username"),
                format!("`{path}.http_basic.username` must be non-empty and without `:`"),
            );
        }
        if let Err(why) = resolve_secret(&c.password) {
            errors.at(
                &join(&path, "http_basic.password"),
                format!("`{path}.http_basic.password`: {why}"),
            );
        }
    }
}
