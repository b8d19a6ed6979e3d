//! Assuming a role with extra headers on the `AssumeRole` request (Data Prepper's
//! `sts_header_overrides`): the STS client's own call, its request changed before it is signed.

use std::collections::BTreeMap;
use std::time::SystemTime;

use aws_credential_types::Credentials;
use aws_credential_types::provider::{self, ProvideCredentials, error::CredentialsError};

/// A credentials provider that calls `AssumeRole` for `role_arn` with `headers` added.
#[derive(Debug)]
pub(crate) struct AssumeRoleWithHeaders {
    pub(crate) client: aws_sdk_sts::Client,
    pub(crate) role_arn: String,
    pub(crate) external_id: Option<String>,
    pub(crate) headers: BTreeMap<String, String>,
}

impl AssumeRoleWithHeaders {
    async fn assume(&self) -> provider::Result {
        let headers = self.headers.clone();
        let answer = self
            .client
            .assume_role()
            .role_arn(&self.role_arn)
            .role_session_name(super::session_name(SystemTime::now()))
            .set_external_id(self.external_id.clone())
            .customize()
            .mutate_request(move |request| {
                for (name, value) in &headers {
                    request.headers_mut().insert(name.clone(), value.clone());
                }
            })
            .send()
            .await
            .map_err(|e| {
                CredentialsError::provider_error(format!(
                    "AssumeRole {}: {}",
                    self.role_arn,
                    super::error_chain(&e)
                ))
            })?;
        let c = answer.credentials().ok_or_else(|| {
            CredentialsError::provider_error(format!(
                "AssumeRole {} answered without credentials",
                self.role_arn
            ))
        })?;
        let expiry = SystemTime::try_from(*c.expiration()).ok();
        Ok(Credentials::new(
            c.access_key_id(),
            c.secret_access_key(),
            Some(c.session_token().to_owned()),
            expiry,
            "sluice-assume-role-with-headers",
        ))
    }
}

impl ProvideCredentials for AssumeRoleWithHeaders {
    fn provide_credentials<'a>(&'a self) -> provider::future::ProvideCredentials<'a>
    where
        Self: 'a,
    {
        provider::future::ProvideCredentials::new(self.assume())
    }
}
