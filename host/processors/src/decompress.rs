//! `decompress`, as Data Prepper's `DecompressProcessor`: for each key in turn, its text is
//! decoded from base64 (the standard alphabet, padded, as Java's `Base64.getDecoder()`),
//! decompressed (gzip; several members are read one after another, as Java's
//! `GZIPInputStream`) and written back as UTF-8 text (bytes that are not UTF-8 become
//! U+FFFD, as Java's decoder). A key that is missing or `null` is skipped.
//!
//! Failures, as Data Prepper: text that is not gzip adds `tags_on_failure` and the next key
//! goes on; text that is not base64 (or a value that is an object or a list) adds them and
//! stops there (the later keys are left). Each failure counts one
//! `sluice_processor_processingErrors` (labelled `processor`), Data Prepper's
//! `processingErrors`. A decompressed value is at most 64 MiB (sluice's bound against a
//! compression bomb; past it the key fails).

use std::io::Read as _;

use base64::Engine as _;
use serde_json::Value;
use sluice_config::processor::decompress as config;
use sluice_event::{Event, Expression, Key};

use crate::{Apply, BuildError, BuildProcessor, Failure, Failures, Fate, java_string};

/// The most a value decompresses to (sluice's bound, not Data Prepper's).
const MAX_DECOMPRESSED: u64 = 64 << 20;

/// `decompress`, built: its keys.
pub struct Decompress {
    keys: Vec<Key>,
}

impl BuildProcessor for config::Decompress {
    type Processor = Decompress;

    fn when(&self) -> Option<&Expression> {
        self.decompress_when.as_ref()
    }

    fn tags_on_failure(&self) -> &[String] {
        &self.tags_on_failure
    }

    fn build(&self) -> Result<Decompress, BuildError> {
        match self.r#type {
            config::DecompressionType::Gzip => {}
        }
        Ok(Decompress {
            keys: self.keys.clone(),
        })
    }
}

impl Apply for Decompress {
    fn apply(&self, event: &mut Event, _: &'static str) -> Result<Fate, Failure> {
        let mut failures = Failures::default();
        for key in &self.keys {
            let text = match java_string(event.get(key)) {
                Ok(Some(text)) => text,
                Ok(None) => continue,
                Err(()) => {
                    failures.add(fail(format!("`{}` is an object or a list", key.as_str())));
                    break;
                }
            };
            let bytes = match base64::engine::general_purpose::STANDARD.decode(text.as_bytes()) {
                Ok(bytes) => bytes,
                Err(e) => {
                    failures.add(fail(format!("`{}` is not base64: {e}", key.as_str())));
                    break;
                }
            };
            match gunzip(&bytes) {
                Ok(text) => {
                    if let Err(e) = event.put(key, Value::String(text)) {
                        failures.add(fail(e.to_string()));
                    }
                }
                Err(e) => failures.add(fail(format!(
                    "`{}` does not decompress as gzip: {e}",
                    key.as_str()
                ))),
            }
        }
        failures.into_result()
    }
}

/// A failure, counted.
fn fail(reason: String) -> Failure {
    metrics::counter!("sluice_processor_processingErrors", "processor" => "decompress")
        .increment(1);
    Failure::new(reason)
}

/// The text gzip `bytes` hold.
fn gunzip(bytes: &[u8]) -> Result<String, String> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(bytes)
        .take(MAX_DECOMPRESSED + 1)
        .read_to_end(&mut out)
        .map_err(|e| e.to_string())?;
    if out.len() as u64 > MAX_DECOMPRESSED {
        return Err(format!("it is larger than {MAX_DECOMPRESSED} bytes"));
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use base64::Engine as _;
    use serde_json::json;

    use crate::testing::{invalid, processor, run, tagged};

    fn gzip_base64(text: &str) -> String {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(text.as_bytes()).unwrap();
        base64::engine::general_purpose::STANDARD.encode(encoder.finish().unwrap())
    }

    #[test]
    fn the_documented_example() {
        let p = processor(
            "decompress:\n  keys: [compressed_log, compressed_metadata]\n  type: gzip\n  tags_on_failure: [decompression_failed, gzip_error]",
        );
        let log = "{\"message\":\"Application OK\",\"level\":\"INFO\",\"service\":\"api\"}\n";
        let meta = "{\"source_ip\":\"192.168.1.100\",\"ok\":true}\n";
        assert_eq!(
            tagged(
                &*p,
                json!({"compressed_log": gzip_base64(log), "compressed_metadata": gzip_base64(meta), "host": "h"})
            ),
            (
                json!({"compressed_log": log, "compressed_metadata": meta, "host": "h"}),
                vec![]
            )
        );
        // Not gzip: tagged, the next key still decompressed.
        let bad = base64::engine::general_purpose::STANDARD.encode("this is not gzipped");
        assert_eq!(
            tagged(
                &*p,
                json!({"compressed_log": bad, "compressed_metadata": gzip_base64(meta)})
            ),
            (
                json!({"compressed_log": bad, "compressed_metadata": meta}),
                vec!["decompression_failed".to_owned(), "gzip_error".to_owned()]
            )
        );
    }

    #[test]
    fn not_base64_stops_and_tags_with_the_default() {
        let p = processor("decompress:\n  keys: [a, b]\n  type: gzip");
        let b = gzip_base64("x");
        assert_eq!(
            tagged(&*p, json!({"a": "%%%", "b": b.clone()})),
            (
                json!({"a": "%%%", "b": b}),
                vec!["_decompression_failure".to_owned()]
            )
        );
        assert_eq!(
            tagged(&*p, json!({"b": gzip_base64("x")})),
            (json!({"b": "x"}), vec![])
        );
    }

    #[test]
    fn decompress_when_and_refused_configs() {
        let p =
            processor("decompress:\n  keys: [a]\n  type: gzip\n  decompress_when: '/go == true'");
        let a = gzip_base64("hello");
        assert_eq!(
            run(&*p, json!({"a": a.clone()})),
            Some(json!({"a": a.clone()}))
        );
        assert_eq!(
            run(&*p, json!({"a": a, "go": true})),
            Some(json!({"a": "hello", "go": true}))
        );
        assert!(invalid("decompress:\n  keys: [a]").contains("missing field `type`"));
        assert!(invalid("decompress:\n  keys: [a]\n  type: zstd").contains("write one of `gzip`"));
        assert!(invalid("decompress:\n  keys: []\n  type: gzip").contains("is empty"));
    }
}
