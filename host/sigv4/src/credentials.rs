//! The credentials cache in front of the provider.
//!
//! `aws-config`'s providers (the default chain, [`AssumeRoleProvider`]) do not cache: an SDK
//! client wraps them in its identity cache, and a plain HTTP client has none. So the first
//! signature fetches credentials, later ones reuse them, and they are fetched again
//! [`REFRESH_BEFORE_EXPIRY`] before they expire (credentials without an expiry, such as static
//! keys from the environment, are kept for [`NO_EXPIRY_LIFETIME`]). One lock serialises the
//! fetches, so a burst of requests at expiry makes one STS call, not one per request.
//!
//! [`AssumeRoleProvider`]: aws_config::sts::AssumeRoleProvider

use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use tokio::sync::Mutex;

use crate::{Error, error_chain};

/// The AWS SDK for Java's STS providers prefetch five minutes before expiry (Data Prepper
/// signs with those).
pub(crate) const REFRESH_BEFORE_EXPIRY: Duration = Duration::from_secs(5 * 60);

/// The Rust SDK's lazy identity cache keeps credentials without an expiry for 15 minutes.
pub(crate) const NO_EXPIRY_LIFETIME: Duration = Duration::from_secs(15 * 60);

/// Credentials from a provider, kept until they are due for refresh.
#[derive(Debug)]
pub(crate) struct CachedCredentials {
    provider: SharedCredentialsProvider,
    cached: Mutex<Option<Cached>>,
}

#[derive(Debug)]
struct Cached {
    credentials: Credentials,
    refresh_at: SystemTime,
}

impl CachedCredentials {
    pub(crate) fn new(provider: SharedCredentialsProvider) -> Self {
        Self {
            provider,
            cached: Mutex::new(None),
        }
    }

    /// The cached credentials, or fresh ones from the provider when due.
    pub(crate) async fn get(&self) -> Result<Credentials, Error> {
        self.get_at(SystemTime::now).await
    }

    /// [`Self::get`] with the clock given, for tests.
    pub(crate) async fn get_at(&self, now: impl Fn() -> SystemTime) -> Result<Credentials, Error> {
        let mut cached = self.cached.lock().await;
        if let Some(entry) = cached.as_ref()
            && now() < entry.refresh_at
        {
            return Ok(entry.credentials.clone());
        }
        let credentials = self
            .provider
            .provide_credentials()
            .await
            .map_err(|e| Error::Credentials(error_chain(&e)))?;
        let fetched = now();
        let refresh_at = match credentials.expiry() {
            Some(expiry) => expiry.checked_sub(REFRESH_BEFORE_EXPIRY).unwrap_or(expiry),
            None => fetched + NO_EXPIRY_LIFETIME,
        };
        tracing::debug!(
            access_key_id = credentials.access_key_id(),
            expiry = ?credentials.expiry(),
            "fetched AWS credentials for signing"
        );
        *cached = Some(Cached {
            credentials: credentials.clone(),
            refresh_at,
        });
        Ok(credentials)
    }
}
