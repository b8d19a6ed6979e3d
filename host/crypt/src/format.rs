//! The sealed record's byte layout (see the crate docs).

type Nonce = aes_gcm::aead::Nonce<aes_gcm::Aes256Gcm>;

use crate::CryptError;

/// The envelope version of a sealed record (version 1 is a plain payload).
pub const VERSION: u8 = 2;

const NONCE_LEN: usize = 12;
const TAG_LEN: usize = 16;

/// The header: version, key id, wrapped key, nonce.
pub(crate) fn header(key_id: &str, wrapped: &[u8], nonce: &Nonce) -> Vec<u8> {
    let mut out = Vec::with_capacity(5 + key_id.len() + wrapped.len() + NONCE_LEN);
    out.push(VERSION);
    push_field(&mut out, key_id.as_bytes());
    push_field(&mut out, wrapped);
    out.extend_from_slice(nonce.as_slice());
    out
}

fn push_field(out: &mut Vec<u8>, bytes: &[u8]) {
    let len = u16::try_from(bytes.len()).expect("key ids and wrapped keys are short");
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(bytes);
}

/// A parsed sealed record, borrowing from it.
pub(crate) struct Parts<'a> {
    pub(crate) key_id: &'a str,
    pub(crate) wrapped: &'a [u8],
    pub(crate) nonce: &'a Nonce,
    pub(crate) header_len: usize,
    pub(crate) ciphertext: &'a [u8],
}

pub(crate) fn parse(sealed: &[u8]) -> Result<Parts<'_>, CryptError> {
    let bad = |what: &str| CryptError::Malformed(what.to_owned());
    let (&version, rest) = sealed.split_first().ok_or_else(|| bad("empty"))?;
    if version != VERSION {
        return Err(CryptError::Malformed(format!(
            "sealed format version {version}, this build reads {VERSION}"
        )));
    }
    let (key_id, rest) = take_field(rest).ok_or_else(|| bad("truncated key id"))?;
    let key_id = std::str::from_utf8(key_id).map_err(|_| bad("key id is not text"))?;
    let (wrapped, rest) = take_field(rest).ok_or_else(|| bad("truncated wrapped key"))?;
    if rest.len() < NONCE_LEN + TAG_LEN {
        return Err(bad("truncated nonce or ciphertext"));
    }
    let (nonce, ciphertext) = rest.split_at(NONCE_LEN);
    let nonce = nonce.try_into().map_err(|_| bad("nonce"))?;
    Ok(Parts {
        key_id,
        wrapped,
        nonce,
        header_len: sealed.len() - ciphertext.len(),
        ciphertext,
    })
}

fn take_field(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, rest) = bytes.split_at_checked(2)?;
    let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
    rest.split_at_checked(len)
}
