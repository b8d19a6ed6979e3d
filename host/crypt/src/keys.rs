//! Where data keys come from: AWS KMS (`GenerateDataKey` / `Decrypt`), or one static key.

use std::collections::HashMap;

use aws_sdk_kms::primitives::Blob;
use aws_sdk_kms::types::DataKeySpec;
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use crate::CryptError;

/// A data key: its plaintext (memory only, zeroized on drop, never printed), the id of the key
/// that wraps it, and its wrapped form (what records carry).
pub struct DataKey {
    pub key_id: String,
    pub wrapped: Vec<u8>,
    plaintext: Zeroizing<[u8; 32]>,
}

impl DataKey {
    pub fn new(key_id: String, wrapped: Vec<u8>, plaintext: Zeroizing<[u8; 32]>) -> Self {
        Self {
            key_id,
            wrapped,
            plaintext,
        }
    }

    pub(crate) fn plaintext(&self) -> &[u8; 32] {
        &self.plaintext
    }
}

impl std::fmt::Debug for DataKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataKey")
            .field("key_id", &self.key_id)
            .field("wrapped_len", &self.wrapped.len())
            .field("plaintext", &"<redacted>")
            .finish()
    }
}

/// Produces data keys for writers and unwraps them for readers.
#[async_trait::async_trait]
pub trait KeySource: Send + Sync {
    /// A new data key.
    async fn generate(&self) -> Result<DataKey, CryptError>;
    /// The plaintext of a wrapped data key that a record carries.
    async fn unwrap(&self, key_id: &str, wrapped: &[u8]) -> Result<DataKey, CryptError>;
}

/// Data keys from AWS KMS (or a KMS-compatible endpoint).
pub struct KmsKeys {
    client: aws_sdk_kms::Client,
    key_id: String,
    context: HashMap<String, String>,
}

impl KmsKeys {
    /// Credentials come from the standard AWS chain (environment, profile, instance role).
    pub async fn new(
        key_id: String,
        region: String,
        endpoint: Option<String>,
        context: HashMap<String, String>,
    ) -> Self {
        let shared = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .region(aws_config::Region::new(region))
            .load()
            .await;
        let mut config = aws_sdk_kms::config::Builder::from(&shared);
        if let Some(endpoint) = endpoint {
            config = config.endpoint_url(endpoint);
        }
        Self {
            client: aws_sdk_kms::Client::from_conf(config.build()),
            key_id,
            context,
        }
    }

    /// With a client configured by the caller (credentials, retries, endpoint).
    pub fn with_client(
        client: aws_sdk_kms::Client,
        key_id: String,
        context: HashMap<String, String>,
    ) -> Self {
        Self {
            client,
            key_id,
            context,
        }
    }

    fn fail(&self, operation: &'static str, e: impl std::error::Error) -> CryptError {
        CryptError::Kms {
            operation,
            key_id: self.key_id.clone(),
            reason: aws_sdk_kms::error::DisplayErrorContext(e).to_string(),
        }
    }
}

fn to_key(
    operation: &'static str,
    key_id: &str,
    bytes: Option<&Blob>,
) -> Result<Zeroizing<[u8; 32]>, CryptError> {
    let bytes = bytes.map(Blob::as_ref).unwrap_or_default();
    let mut key = Zeroizing::new([0u8; 32]);
    if bytes.len() != 32 {
        return Err(CryptError::Kms {
            operation,
            key_id: key_id.to_owned(),
            reason: format!("expected a 32-byte AES-256 key, got {} bytes", bytes.len()),
        });
    }
    key.copy_from_slice(bytes);
    Ok(key)
}

#[async_trait::async_trait]
impl KeySource for KmsKeys {
    async fn generate(&self) -> Result<DataKey, CryptError> {
        let out = self
            .client
            .generate_data_key()
            .key_id(&self.key_id)
            .key_spec(DataKeySpec::Aes256)
            .set_encryption_context(Some(self.context.clone()))
            .send()
            .await
            .map_err(|e| self.fail("GenerateDataKey", e))?;
        let plaintext = to_key("GenerateDataKey", &self.key_id, out.plaintext())?;
        let wrapped = out
            .ciphertext_blob()
            .map(|b| b.as_ref().to_vec())
            .unwrap_or_default();
        // KMS answers with the key's ARN, which Decrypt accepts.
        let key_id = out.key_id().unwrap_or(&self.key_id).to_owned();
        Ok(DataKey::new(key_id, wrapped, plaintext))
    }

    async fn unwrap(&self, key_id: &str, wrapped: &[u8]) -> Result<DataKey, CryptError> {
        let out = self
            .client
            .decrypt()
            .key_id(key_id)
            .ciphertext_blob(Blob::new(wrapped))
            .set_encryption_context(Some(self.context.clone()))
            .send()
            .await
            .map_err(|e| self.fail("Decrypt", e))?;
        let plaintext = to_key("Decrypt", key_id, out.plaintext())?;
        Ok(DataKey::new(key_id.to_owned(), wrapped.to_vec(), plaintext))
    }
}

/// One key from the config (`key:` base64 or `key_file:`), without KMS. Records carry its
/// fingerprint as the key id, so a reader with another key refuses them by name.
pub struct StaticKey {
    key_id: String,
    key: Zeroizing<[u8; 32]>,
}

impl StaticKey {
    /// From the 32 raw key bytes.
    pub fn new(bytes: &[u8]) -> Result<Self, CryptError> {
        let mut key = Zeroizing::new([0u8; 32]);
        if bytes.len() != 32 {
            return Err(CryptError::InvalidKey(format!(
                "an AES-256 key is 32 bytes, this one is {}",
                bytes.len()
            )));
        }
        key.copy_from_slice(bytes);
        let digest = Sha256::digest(*key);
        let fingerprint: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        Ok(Self {
            key_id: format!("static:{fingerprint}"),
            key,
        })
    }
}

#[async_trait::async_trait]
impl KeySource for StaticKey {
    async fn generate(&self) -> Result<DataKey, CryptError> {
        Ok(DataKey::new(
            self.key_id.clone(),
            Vec::new(),
            self.key.clone(),
        ))
    }

    async fn unwrap(&self, key_id: &str, _wrapped: &[u8]) -> Result<DataKey, CryptError> {
        if key_id != self.key_id {
            return Err(CryptError::UnknownKey(key_id.to_owned()));
        }
        self.generate().await
    }
}
