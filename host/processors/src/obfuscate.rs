//! `obfuscate`, as Data Prepper's `ObfuscationProcessor`: when `obfuscate_when` holds and
//! `source` is in the event, its text (a number or boolean as Java prints it) is masked or
//! hashed, whole when there are no `patterns`, else each pattern in turn replaces its matches
//! in the previous one's output. The result goes to `target` (default `source`); when it is the
//! same as the text (nothing matched), the event is tagged `tags_on_match_failure`. A `null`,
//! a list or an object is left as it is, untagged (Data Prepper fails on it and logs).
//!
//! - `mask`: each match (or the whole text) becomes `mask_character` × `mask_character_length`.
//! - `hash`: each match becomes base64(SHA-512(salt ‖ UTF-8 text)). The salt is `salt`'s UTF-8
//!   bytes, or 64 random bytes drawn when the processor is built (from the OS, as Java's
//!   `SecureRandom`; `fastrand` only if the OS has none to give); with `salt_key` in the event,
//!   its text's UTF-8 bytes cut or padded with 0x80 to 64 bytes. A `salt_key` whose value is
//!   `null`, a list or an object leaves the event as it is (Data Prepper fails and logs).
//!
//! Patterns are Java regular expressions run on the `regex` crate: `\d`, `\w`, `\s` (and
//! `\D`, `\W`, `\S`) are rewritten to Java's ASCII classes; `\b` stays Unicode, as Java 17's;
//! constructs the `regex` crate lacks (look-around, back-references) are refused at
//! `validate`.

use std::io::Read as _;

use base64::Engine as _;
use regex::{NoExpand, Regex};
use serde_json::Value;
use sha2::{Digest as _, Sha512};
use sluice_config::processor::obfuscate as config;
use sluice_event::{Event, Expression, Key, java_string};

use crate::{Apply, BuildError, BuildProcessor, Failure, Fate};

/// `obfuscate`, built: the config, with its patterns compiled and its action's mask or salt
/// made. Its tags are its own (`tags_on_match_failure`), not the frame's `tags_on_failure`.
pub struct Obfuscate {
    config: config::Obfuscate,
    patterns: Vec<Regex>,
    action: Action,
}

/// What is done to each match (or the whole text).
enum Action {
    /// The mask text.
    Mask(String),
    Hash {
        salt: Vec<u8>,
        salt_key: Option<Key>,
    },
}

/// Data Prepper's salt length for `salt_key` values (and its random salt's).
const SALT_BYTES: usize = 64;

impl BuildProcessor for config::Obfuscate {
    type Processor = Obfuscate;

    fn when(&self) -> Option<&Expression> {
        self.obfuscate_when.as_ref()
    }

    fn build(&self) -> Result<Obfuscate, BuildError> {
        let error = |message: String| BuildError {
            key: "patterns".to_owned(),
            message,
        };
        let patterns = self
            .regexes()
            .map_err(error)?
            .iter()
            .map(|p| {
                Regex::new(&java_regex(p))
                    .map_err(|e| error(format!("regular expression `{p}` does not compile: {e}")))
            })
            .collect::<Result<_, _>>()?;
        let action = match &self.action {
            config::Action::Mask(mask) => Action::Mask(
                mask.mask_character
                    .repeat(usize::try_from(mask.mask_character_length).unwrap_or(1)),
            ),
            config::Action::Hash(hash) => Action::Hash {
                salt: match &hash.salt {
                    Some(salt) if !salt.is_empty() => salt.as_bytes().to_vec(),
                    _ => random_salt(),
                },
                salt_key: hash.salt_key.clone(),
            },
        };
        Ok(Obfuscate {
            config: self.clone(),
            patterns,
            action,
        })
    }
}

impl Apply for Obfuscate {
    fn apply(&self, event: &mut Event, _: &'static str) -> Result<Fate, Failure> {
        let source = &self.config.source;
        let Some(value) = event.get(source) else {
            return Ok(Fate::Keep);
        };
        let Some(text) = scalar_text(value) else {
            return Err(Failure::new(format!(
                "`{source}` is not text, a number or a boolean; left as it is"
            )));
        };
        let obfuscated = match &self.action {
            Action::Mask(mask) => self.mask(&text, mask),
            Action::Hash { salt, salt_key } => {
                let salt = match salt_key.as_ref().and_then(|k| event.get(k)) {
                    None => std::borrow::Cow::Borrowed(salt.as_slice()),
                    Some(value) => match scalar_text(value) {
                        Some(text) => std::borrow::Cow::Owned(padded_salt(&text)),
                        None => {
                            return Err(Failure::new(
                                "the salt_key value is not text, a number or a boolean; event left as it is",
                            ));
                        }
                    },
                };
                self.hash(&text, &salt)
            }
        };
        if obfuscated == text {
            event.metadata.add_tags(&self.config.tags_on_match_failure);
        }
        let key = self.config.target.as_ref().unwrap_or(source);
        event
            .put(key, Value::String(obfuscated))
            .map_err(|e| format!("`{key}` not written: {e}"))?;
        Ok(Fate::Keep)
    }
}

impl Obfuscate {
    fn mask(&self, text: &str, mask: &str) -> String {
        if self.patterns.is_empty() {
            return mask.to_owned();
        }
        let mut text = text.to_owned();
        for pattern in &self.patterns {
            if let std::borrow::Cow::Owned(changed) = pattern.replace_all(&text, NoExpand(mask)) {
                text = changed;
            }
        }
        text
    }

    fn hash(&self, text: &str, salt: &[u8]) -> String {
        if self.patterns.is_empty() {
            return hash(text, salt);
        }
        let mut text = text.to_owned();
        for pattern in &self.patterns {
            if let std::borrow::Cow::Owned(changed) =
                pattern.replace_all(&text, |m: &regex::Captures<'_>| hash(&m[0], salt))
            {
                text = changed;
            }
        }
        text
    }
}

/// A value read as Java's `get(key, String.class)` reads it; `None` for `null`, lists and
/// objects.
fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(_) | Value::Bool(_) => Some(java_string(value)),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

/// base64(SHA-512(salt ‖ text)).
fn hash(text: &str, salt: &[u8]) -> String {
    let mut digest = Sha512::new();
    digest.update(salt);
    digest.update(text.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(digest.finalize().as_slice())
}

/// A `salt_key` value as salt: its UTF-8 bytes, cut or padded with 0x80 to 64 bytes.
fn padded_salt(text: &str) -> Vec<u8> {
    let mut salt = vec![0x80; SALT_BYTES];
    let bytes = text.as_bytes();
    let n = bytes.len().min(SALT_BYTES);
    salt[..n].copy_from_slice(&bytes[..n]);
    salt
}

/// 64 random bytes from the OS; from `fastrand` only where the OS has none.
fn random_salt() -> Vec<u8> {
    let mut salt = vec![0; SALT_BYTES];
    let os = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut salt));
    if os.is_err() {
        salt.iter_mut().for_each(|b| *b = fastrand::u8(..));
    }
    salt
}

/// A Java regular expression with Java's ASCII `\d`, `\w`, `\s` (the `regex` crate's are
/// Unicode). Inside `[...]` the class nests (`[\d-]` → `[[0-9]-]`), which the crate allows.
fn java_regex(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('d') => out.push_str("[0-9]"),
            Some('D') => out.push_str("[^0-9]"),
            Some('w') => out.push_str("[0-9A-Za-z_]"),
            Some('W') => out.push_str("[^0-9A-Za-z_]"),
            Some('s') => out.push_str(r"[\t\n\x0B\x0C\r ]"),
            Some('S') => out.push_str(r"[^\t\n\x0B\x0C\r ]"),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{java_regex, padded_salt};
    use crate::testing::{invalid, processor, run, tagged};

    /// obfuscate.md:30: two processors. The docs show the target as `newLog`; the config
    /// says `new_log`, which is where Data Prepper writes (`doc_suspect`).
    #[test]
    fn documented_example() {
        let first = processor(
            "obfuscate:\n  source: log\n  target: new_log\n  patterns: ['[A-Za-z0-9+_.-]+@([\\w-]+\\.)+[\\w-]{2,4}']\n  action:\n    mask:\n      mask_character: '#'\n      mask_character_length: 6",
        );
        let second = processor("obfuscate:\n  source: phone");
        let input = json!({"id": 1, "phone": "(555) 555 5555", "log": "My name is Bob and my email address is abc@example.com"});
        let output = run(&*second, run(&*first, input).unwrap());
        assert_eq!(
            output,
            Some(json!({
                "id": 1,
                "phone": "***",
                "log": "My name is Bob and my email address is abc@example.com",
                "new_log": "My name is Bob and my email address is ######"
            }))
        );
    }

    #[test]
    fn built_in_patterns_each_match_is_one_mask() {
        let p = processor(
            "obfuscate:\n  source: m\n  patterns: ['%{US_SSN_NUMBER}', '%{IP_ADDRESS_V4}', '%{EMAIL_ADDRESS}']",
        );
        assert_eq!(
            run(
                &*p,
                json!({"m": "ssn 123-45-6789 from 10.0.0.1 and 192.168.1.254, a@b.io"})
            ),
            Some(json!({"m": "ssn *** from *** and ***, ***"}))
        );
        let p = processor(
            "obfuscate:\n  source: m\n  patterns: ['%{US_PHONE_NUMBER}', '%{CREDIT_CARD_NUMBER}']",
        );
        assert_eq!(
            run(
                &*p,
                json!({"m": "call (555) 555-5555, card 4111 1111 1111 1111"})
            ),
            Some(json!({"m": "call***, card ***"}))
        );
    }

    #[test]
    fn later_patterns_see_earlier_output() {
        let p = processor(
            "obfuscate:\n  source: m\n  patterns: ['abc', '\\*\\*\\*']\n  action:\n    mask:\n      mask_character: '@'",
        );
        assert_eq!(run(&*p, json!({"m": "xabcx"})), Some(json!({"m": "x@@@x"})));
        let p = processor("obfuscate:\n  source: m\n  patterns: ['a', '\\*']");
        assert_eq!(run(&*p, json!({"m": "a"})), Some(json!({"m": "*********"})));
    }

    #[test]
    fn single_word_only_wraps_patterns_in_word_boundaries() {
        let p = processor("obfuscate:\n  source: m\n  patterns: ['cat']\n  single_word_only: true");
        assert_eq!(
            run(&*p, json!({"m": "cat concat cat."})),
            Some(json!({"m": "*** concat ***."}))
        );
    }

    #[test]
    fn nothing_matched_or_already_masked_is_tagged_and_still_written() {
        let p = processor(
            "obfuscate:\n  source: m\n  target: t\n  patterns: ['\\d+']\n  tags_on_match_failure: [none]",
        );
        let (data, tags) = tagged(&*p, json!({"m": "no digits"}));
        assert_eq!(data, json!({"m": "no digits", "t": "no digits"}));
        assert_eq!(tags, ["none"]);
        let p = processor("obfuscate:\n  source: m\n  tags_on_match_failure: [none]");
        let (data, tags) = tagged(&*p, json!({"m": "***"}));
        assert_eq!((data, tags), (json!({"m": "***"}), vec!["none".to_owned()]));
    }

    #[test]
    fn java_classes_are_ascii() {
        assert_eq!(
            java_regex(r"\d[\w-]\\d\S"),
            r"[0-9][[0-9A-Za-z_]-]\\d[^\t\n\x0B\x0C\r ]"
        );
        let p = processor("obfuscate:\n  source: m\n  patterns: ['\\d+']");
        // Arabic-Indic digits are not Java's `\d`.
        assert_eq!(
            run(&*p, json!({"m": "١٢٣ 123"})),
            Some(json!({"m": "١٢٣ ***"}))
        );
    }

    #[test]
    fn numbers_and_booleans_are_read_as_text_other_values_left() {
        let p = processor(
            "obfuscate:\n  source: m\n  patterns: ['%{BASE_NUMBER}']\n  tags_on_match_failure: [none]",
        );
        assert_eq!(run(&*p, json!({"m": 12.5})), Some(json!({"m": "***"})));
        assert_eq!(run(&*p, json!({"m": 1e20})), Some(json!({"m": "***E***"})));
        for left in [
            json!({"m": null}),
            json!({"m": [1]}),
            json!({"m": {"a": 1}}),
            json!({"x": 1}),
        ] {
            let (data, tags) = tagged(&*p, left.clone());
            assert_eq!((data, tags), (left, vec![]));
        }
        let p = processor("obfuscate:\n  source: m\n  obfuscate_when: '/go == true'");
        assert_eq!(
            run(&*p, json!({"m": true, "go": true})),
            Some(json!({"m": "***", "go": true}))
        );
        assert_eq!(
            run(&*p, json!({"m": true, "go": 1})),
            Some(json!({"m": true, "go": 1}))
        );
    }

    #[test]
    fn hash_is_base64_of_salted_sha512() {
        let p = processor(
            "obfuscate:\n  source: m\n  action:\n    hash:\n      salt: '0123456789abcdef'",
        );
        assert_eq!(
            run(&*p, json!({"m": "hello"})),
            Some(
                json!({"m": "NhWiECMIwSbOF1P6EzLIiy9M/yA66casUIJr9+WS11GR94bxtUnHUe894DIrXk0HHa40RPcfJmNVPF3dfv/tUA=="})
            )
        );
        let p = processor(
            "obfuscate:\n  source: m\n  patterns: ['%{EMAIL_ADDRESS}']\n  action:\n    hash:\n      salt: '0123456789abcdef'\n      format: SHA-512",
        );
        assert_eq!(
            run(&*p, json!({"m": "to abc@example.com."})),
            Some(
                json!({"m": "to xg6+DagTKOudlowokg1fuYg1AJ/YtloEpCLxGf6VTuIS3L0gf4RYAjv3aFXCFgOY1wnVEYc1l2YV5O0x/bduVw==."})
            )
        );
    }

    #[test]
    fn hash_salt_key_pads_or_cuts_to_64_bytes() {
        assert_eq!(padded_salt("ab")[..3], [b'a', b'b', 0x80]);
        assert_eq!(padded_salt(&"x".repeat(70)), vec![b'x'; 64]);
        let p = processor(
            "obfuscate:\n  source: m\n  action:\n    hash:\n      salt_key: s\n      salt: '0123456789abcdef'",
        );
        assert_eq!(
            run(&*p, json!({"m": "hello", "s": "pepper"})),
            Some(
                json!({"m": "rElYsw+dpEIgv5V/jzqQnJSQv/tXxCFva4M3VPktE8C4v724QgNWPyCG+dmdP+RwyFvaf+Op/Pe2AMfsQ/A8NA==", "s": "pepper"})
            )
        );
        assert_eq!(
            run(&*p, json!({"m": "hello", "s": "x".repeat(70)})),
            Some(
                json!({"m": "h43PiTSCxiZRKVz4S6YuVrpJOmNViy4ww+sL7SOus3IChnffMhqZ/2MhZMbrHYzPBuPKEg65EfCcDCd1wsX6fA==", "s": "x".repeat(70)})
            )
        );
        // Without the key: the configured salt.
        assert_eq!(
            run(&*p, json!({"m": "hello"})),
            Some(
                json!({"m": "NhWiECMIwSbOF1P6EzLIiy9M/yA66casUIJr9+WS11GR94bxtUnHUe894DIrXk0HHa40RPcfJmNVPF3dfv/tUA=="})
            )
        );
        // A salt that is not text: left as it is.
        assert_eq!(
            run(&*p, json!({"m": "hello", "s": {"a": 1}})),
            Some(json!({"m": "hello", "s": {"a": 1}}))
        );
    }

    #[test]
    fn a_random_salt_is_stable_within_a_processor_and_differs_between_them() {
        let yaml = "obfuscate:\n  source: m\n  action:\n    hash:";
        let (a, b) = (processor(yaml), processor(yaml));
        let once = run(&*a, json!({"m": "x"}));
        assert_eq!(once, run(&*a, json!({"m": "x"})));
        assert_ne!(once, run(&*b, json!({"m": "x"})));
    }

    #[test]
    fn bad_configs_are_refused() {
        for (yaml, want) in [
            ("obfuscate:\n  patterns: [a]", "source"),
            ("obfuscate:\n  source: ''", "cannot be empty"),
            (
                "obfuscate:\n  source: m\n  patterns: ['%{NOPE}']",
                "unable to find a predefined pattern for \"%{NOPE}\"",
            ),
            (
                "obfuscate:\n  source: m\n  patterns: ['(']",
                "does not compile",
            ),
            (
                "obfuscate:\n  source: m\n  action:\n    mask:\n      mask_character: '$'",
                "valid characters",
            ),
            (
                "obfuscate:\n  source: m\n  action:\n    mask:\n      mask_character: '**'",
                "valid characters",
            ),
            (
                "obfuscate:\n  source: m\n  action:\n    mask:\n      mask_character_length: 11",
                "from 1 to 10",
            ),
            (
                "obfuscate:\n  source: m\n  action:\n    mask:\n      mask_character_length: 0",
                "from 1 to 10",
            ),
            (
                "obfuscate:\n  source: m\n  action:\n    hash:\n      salt: short",
                "16 to 64",
            ),
            (
                "obfuscate:\n  source: m\n  action:\n    hash:\n      salt: ''",
                "16 to 64",
            ),
            (
                "obfuscate:\n  source: m\n  action:\n    hash:\n      format: MD5",
                "SHA-512",
            ),
            (
                "obfuscate:\n  source: m\n  action:\n    shuffle:",
                "unknown action `shuffle`",
            ),
            (
                "obfuscate:\n  source: m\n  action:\n    mask:\n      nope: 1",
                "nope",
            ),
        ] {
            let err = invalid(yaml);
            assert!(err.contains(want), "{yaml}: {err}");
        }
        processor("obfuscate:\n  source: m\n  target: ''");
        processor("obfuscate:\n  source: m\n  action:\n    mask:");
    }
}
