//! Secrets in the pipeline file: a password is the text itself, `${env:NAME}` or
//! `${file:PATH}`, resolved once at startup ([`resolve_secret`]); [`Credentials`] as written
//! (the kafka buffer's SASL, the http source's and the http sink's `http_basic`) and
//! [`BasicAuth`] resolved. Neither prints its password, and no error holds one.

use serde::Deserialize;

/// A user name and password. The password is never printed.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Credentials {
    /// The user name. Required.
    pub username: String,
    /// The password: the text itself, `${env:NAME}` (an environment variable) or
    /// `${file:PATH}` (a file's first line). Required.
    pub password: String,
}

impl Credentials {
    /// The password, with `${env:...}` / `${file:...}` resolved. Errors never hold it.
    pub fn resolved_password(&self) -> Result<String, SecretError> {
        resolve_secret(&self.password)
    }

    /// The user name and the resolved password; reads the secret, so call once, at startup.
    pub fn resolve(&self) -> Result<BasicAuth, SecretError> {
        Ok(BasicAuth {
            username: self.username.clone(),
            password: self.resolved_password()?,
        })
    }
}

/// Why a secret written as `${env:NAME}` or `${file:PATH}` could not be read. Never holds
/// the secret.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("the environment variable `{name}` is not set")]
    EnvNotSet { name: String },
    #[error("cannot read the secret file `{path}`: {source}")]
    File {
        path: String,
        source: std::io::Error,
    },
}

/// `${env:NAME}` → the variable, `${file:PATH}` → the file's first line, else the text.
pub fn resolve_secret(text: &str) -> Result<String, SecretError> {
    let inner = text.strip_prefix("${").and_then(|t| t.strip_suffix('}'));
    match inner.and_then(|t| t.split_once(':')) {
        Some(("env", name)) => std::env::var(name).map_err(|_| SecretError::EnvNotSet {
            name: name.to_owned(),
        }),
        Some(("file", path)) => std::fs::read_to_string(path)
            .map(|t| t.lines().next().unwrap_or_default().to_owned())
            .map_err(|source| SecretError::File {
                path: path.to_owned(),
                source,
            }),
        _ => Ok(text.to_owned()),
    }
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// A user name and its resolved password. Debug never prints the password.
#[derive(Clone)]
pub struct BasicAuth {
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for BasicAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BasicAuth")
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .finish()
    }
}
