//! Envelope encryption of buffer records.
//!
//! A writer seals each record's payload with AES-256-GCM under a data key and a fresh random
//! 96-bit nonce. The data key comes from a [`KeySource`]: AWS KMS `GenerateDataKey` (once per
//! `data_key_lifetime`, not per record), or a static key from the config. The plaintext key
//! stays in memory only (zeroized on drop, never printed); the record carries the key id and
//! the KMS-wrapped key, so any reader, including one restarted long after a rotation, can open
//! it by unwrapping the key with KMS `Decrypt` (cached by the wrapped key's digest).
//!
//! # Sealed format (version 2 of the record envelope)
//! ```text
//! 0x02 | u16 key id length | key id | u16 wrapped key length | wrapped key | 12-byte nonce | ciphertext+tag
//! ```
//! Everything before the ciphertext, followed by the caller's metadata (receive time, origin,
//! content type), is the associated data: a changed byte anywhere fails the tag check.
//!
//! # Layout
//! - this file: [`Sealer`], [`Opener`], [`CryptError`].
//! - `keys`: [`KeySource`], [`KmsKeys`], [`StaticKey`], [`DataKey`].
//! - `format`: the byte layout above.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aes_gcm::Aes256Gcm;
use aes_gcm::aead::{Aead, Generate, KeyInit, Payload};

type Nonce = aes_gcm::aead::Nonce<Aes256Gcm>;
use sha2::{Digest, Sha256};

mod format;
mod keys;

pub use format::VERSION;
pub use keys::{DataKey, KeySource, KmsKeys, StaticKey};

/// Why a record could not be sealed or opened, or a key not obtained. Never holds key bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CryptError {
    #[error("KMS {operation} with key `{key_id}` failed: {reason}")]
    Kms {
        operation: &'static str,
        key_id: String,
        reason: String,
    },
    #[error("the record is not a sealed envelope: {0}")]
    Malformed(String),
    #[error(
        "the record does not open (wrong key or encryption context, or a changed byte): the \
         authentication tag does not match"
    )]
    Tag,
    #[error("the record was sealed with key `{0}`, which this static key is not")]
    UnknownKey(String),
    #[error("invalid key: {0}")]
    InvalidKey(String),
}

/// The data key in use by a writer, with the cipher built from it.
struct Current {
    key: Arc<DataKey>,
    cipher: Aes256Gcm,
    since: Instant,
}

/// Seals payloads; shared by a buffer's writers. Rotates the data key every `lifetime`.
pub struct Sealer {
    source: Arc<dyn KeySource>,
    lifetime: Duration,
    current: tokio::sync::RwLock<Option<Arc<Current>>>,
    rotate: tokio::sync::Mutex<()>,
}

impl Sealer {
    pub fn new(source: Arc<dyn KeySource>, lifetime: Duration) -> Self {
        Self {
            source,
            lifetime,
            current: tokio::sync::RwLock::new(None),
            rotate: tokio::sync::Mutex::new(()),
        }
    }

    /// The key to seal with now: the current one, or a new one when it has expired.
    async fn key(&self) -> Result<Arc<Current>, CryptError> {
        if let Some(c) = &*self.current.read().await
            && c.since.elapsed() < self.lifetime
        {
            return Ok(c.clone());
        }
        // One writer fetches the next key; the others wait for it.
        let _rotating = self.rotate.lock().await;
        if let Some(c) = &*self.current.read().await
            && c.since.elapsed() < self.lifetime
        {
            return Ok(c.clone());
        }
        let key = Arc::new(self.source.generate().await?);
        tracing::info!(key_id = %key.key_id, "new data key");
        let current = Arc::new(Current {
            cipher: Aes256Gcm::new(key.plaintext().into()),
            key,
            since: Instant::now(),
        });
        *self.current.write().await = Some(current.clone());
        Ok(current)
    }

    /// Seals `payload`; `metadata` is authenticated too and must be given again to open.
    pub async fn seal(&self, payload: &[u8], metadata: &[u8]) -> Result<Vec<u8>, CryptError> {
        let current = self.key().await?;
        let nonce = Nonce::generate();
        let mut out = format::header(&current.key.key_id, &current.key.wrapped, &nonce);
        let aad = [out.as_slice(), metadata].concat();
        let sealed = current
            .cipher
            .encrypt(
                &nonce,
                Payload {
                    msg: payload,
                    aad: &aad,
                },
            )
            .map_err(|_| CryptError::Malformed("the payload is too large to seal".to_owned()))?;
        out.extend_from_slice(&sealed);
        Ok(out)
    }

    /// Fetches the first data key now and unwraps it again, so a KMS problem (no such key, no
    /// permission, an encryption context KMS refuses) fails startup, not the first request.
    pub async fn warm_up(&self) -> Result<(), CryptError> {
        let current = self.key().await?;
        let again = self
            .source
            .unwrap(&current.key.key_id, &current.key.wrapped)
            .await?;
        if again.plaintext() != current.key.plaintext() {
            return Err(CryptError::InvalidKey(
                "the key source unwrapped a different data key than it generated".to_owned(),
            ));
        }
        Ok(())
    }
}

/// Opens sealed payloads; one per consumer (it runs on the consumer's thread). Unwrapped keys
/// are cached by the digest of the wrapped key.
pub struct Opener {
    source: Arc<dyn KeySource>,
    runtime: tokio::runtime::Handle,
    ciphers: Mutex<HashMap<[u8; 32], Aes256Gcm>>,
}

/// The most unwrapped data keys an opener keeps (older ones are dropped, and unwrapped again
/// if a record still needs them).
const MAX_CACHED_KEYS: usize = 64;

impl Opener {
    /// `runtime` runs the KMS calls; `open` must not be called on one of its threads.
    pub fn new(source: Arc<dyn KeySource>, runtime: tokio::runtime::Handle) -> Self {
        Self {
            source,
            runtime,
            ciphers: Mutex::new(HashMap::new()),
        }
    }

    /// Opens a payload sealed by [`Sealer::seal`] with the same `metadata`. Blocks on KMS
    /// when the record's data key is not cached.
    pub fn open(&self, sealed: &[u8], metadata: &[u8]) -> Result<Vec<u8>, CryptError> {
        let parts = format::parse(sealed)?;
        let digest: [u8; 32] = Sha256::digest(parts.wrapped).into();
        let cached = self
            .ciphers
            .lock()
            .expect("not poisoned")
            .get(&digest)
            .cloned();
        let cipher = match cached {
            Some(c) => c,
            None => {
                let key = self
                    .runtime
                    .block_on(self.source.unwrap(parts.key_id, parts.wrapped))?;
                let cipher = Aes256Gcm::new(key.plaintext().into());
                let mut ciphers = self.ciphers.lock().expect("not poisoned");
                if ciphers.len() >= MAX_CACHED_KEYS {
                    ciphers.clear();
                }
                ciphers.insert(digest, cipher.clone());
                cipher
            }
        };
        let aad = [&sealed[..parts.header_len], metadata].concat();
        cipher
            .decrypt(
                parts.nonce,
                Payload {
                    msg: parts.ciphertext,
                    aad: &aad,
                },
            )
            .map_err(|_| CryptError::Tag)
    }
}

#[cfg(test)]
mod tests;
