use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;

use super::*;

fn key(byte: u8) -> Arc<dyn KeySource> {
    Arc::new(StaticKey::new(&[byte; 32]).unwrap())
}

fn pair(source: Arc<dyn KeySource>, runtime: &tokio::runtime::Runtime) -> (Sealer, Opener) {
    (
        Sealer::new(source.clone(), Duration::from_secs(3600)),
        Opener::new(source, runtime.handle().clone()),
    )
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever the payload and metadata: open(seal(x)) == x, and changing any one byte of the
    /// sealed record, or the metadata, makes it fail to open.
    #[test]
    fn seal_then_open_round_trips_and_any_changed_byte_fails(
        payload in proptest::collection::vec(any::<u8>(), 0..2048),
        metadata in proptest::collection::vec(any::<u8>(), 0..64),
        flip in any::<usize>(),
        bit in 0u8..8,
    ) {
        let rt = runtime();
        let (sealer, opener) = pair(key(7), &rt);
        let sealed = rt.block_on(sealer.seal(&payload, &metadata)).unwrap();
        // (An empty payload is in no clear: nothing to compare.)
        if !payload.is_empty() {
            prop_assert_ne!(&sealed[sealed.len() - payload.len().min(sealed.len())..], &payload[..], "not in the clear");
        }
        prop_assert_eq!(opener.open(&sealed, &metadata).unwrap(), payload.clone());

        let mut tampered = sealed.clone();
        let at = flip % tampered.len();
        tampered[at] ^= 1 << bit;
        prop_assert!(opener.open(&tampered, &metadata).is_err(), "byte {} changed and it still opened", at);
        let mut other = metadata.clone();
        other.push(0);
        prop_assert!(opener.open(&sealed, &other).is_err(), "metadata changed and it still opened");
    }
}

#[test]
fn each_record_gets_its_own_nonce() {
    let rt = runtime();
    let (sealer, _) = pair(key(1), &rt);
    let a = rt.block_on(sealer.seal(b"same", b"")).unwrap();
    let b = rt.block_on(sealer.seal(b"same", b"")).unwrap();
    assert_ne!(a, b);
}

#[test]
fn another_key_refuses_by_name_and_never_yields_garbage() {
    let rt = runtime();
    let (sealer, _) = pair(key(1), &rt);
    let (_, other) = pair(key(2), &rt);
    let sealed = rt.block_on(sealer.seal(b"secret", b"")).unwrap();
    let err = other.open(&sealed, b"").unwrap_err();
    assert!(matches!(err, CryptError::UnknownKey(_)), "{err}");
}

#[test]
fn keys_are_never_printed() {
    let k = DataKey::new("k".into(), vec![1, 2], zeroize::Zeroizing::new([0x41; 32]));
    let text = format!("{k:?}");
    assert!(
        text.contains("<redacted>") && !text.contains("65, 65"),
        "{text}"
    );
}
