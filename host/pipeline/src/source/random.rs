//! The `random` source: Data Prepper's load generator, one record `{"message": "<UUID>"}`
//! every `wait_delay` (a random version 4 UUID, as Java's `UUID.randomUUID()` writes it), until
//! the run stops. With no delay it writes as fast as the buffer takes them.

use std::time::Duration;

use sluice_buffer::Record;
use sluice_config::source::random::RandomSettings;
use tokio::sync::watch;

use super::{Build, Source, SourceContext, SourceError, write_waiting};

/// Records per write when `wait_delay` is zero.
const BURST: usize = 100;

/// How long one write waits for room before it tries again.
const EACH_TRY: Duration = Duration::from_secs(1);

/// The `random` source, ready to generate.
pub struct RandomEvents {
    settings: RandomSettings,
    cx: SourceContext,
}

impl Build for RandomSettings {
    async fn build(self, cx: SourceContext) -> Result<Box<dyn Source>, SourceError> {
        Ok(Box::new(RandomEvents { settings: self, cx }))
    }
}

#[async_trait::async_trait]
impl Source for RandomEvents {
    async fn run(self: Box<Self>, mut stop: watch::Receiver<bool>) {
        let SourceContext {
            writer, counters, ..
        } = self.cx;
        let delay = self.settings.wait_delay;
        let per_write = if delay.is_zero() { BURST } else { 1 };
        let mut made = 0u64;
        loop {
            let records = (0..per_write)
                .map(|_| {
                    made += 1;
                    Record {
                        payload: serde_json::json!({ "message": uuid_v4() })
                            .to_string()
                            .into_bytes(),
                        received_at_ms: super::now_ms(),
                        origin: format!("random:{made}"),
                        ..Default::default()
                    }
                })
                .collect();
            if write_waiting(&*writer, records, &counters, EACH_TRY).await.is_err() {
                break;
            }
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                _ = stop.wait_for(|s| *s) => break,
            }
        }
    }
}

/// A random version 4 UUID in its text form (`8-4-4-4-12` lowercase hex digits).
fn uuid_v4() -> String {
    let mut bytes = fastrand::u128(..).to_be_bytes();
    bytes[6] = (bytes[6] & 0x0f) | 0x40; // version 4
    bytes[8] = (bytes[8] & 0x3f) | 0x80; // RFC 4122 variant
    let hex = |part: &[u8]| part.iter().map(|b| format!("{b:02x}")).collect::<String>();
    format!(
        "{}-{}-{}-{}-{}",
        hex(&bytes[..4]),
        hex(&bytes[4..6]),
        hex(&bytes[6..8]),
        hex(&bytes[8..10]),
        hex(&bytes[10..])
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn uuids_are_version_4_and_differ() {
        let a = super::uuid_v4();
        let b = super::uuid_v4();
        assert_ne!(a, b);
        let parts: Vec<&str> = a.split('-').collect();
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            [8, 4, 4, 4, 12]
        );
        assert!(parts[2].starts_with('4'), "{a}");
        assert!("89ab".contains(&parts[3][..1]), "{a}");
        assert!(a.chars().all(|c| c == '-' || c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
    }
}
