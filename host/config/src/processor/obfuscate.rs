//! `obfuscate`: masks or hashes a value, or the parts of it regular expressions match, as
//! Data Prepper's `ObfuscationProcessorConfig` with its `mask` and `hash` actions.

use serde::Deserialize;
use serde::de::Deserializer;
use sluice_event::{Expression, Key};

use super::ProcessorConfig;
use crate::error::Errors;
use crate::location::join;

/// ```yaml
/// - obfuscate:
///     source: "log"
///     target: "new_log"
///     patterns: ["%{EMAIL_ADDRESS}"]
///     action:
///       mask:
///         mask_character: "#"
///         mask_character_length: 6
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Obfuscate {
    /// The key whose value is obfuscated (a number or boolean is read as its text).
    /// Required.
    #[serde(deserialize_with = "crate::event::key")]
    pub source: Key,
    /// Where the obfuscated text goes, leaving `source` as it was. Default (or `""`):
    /// `source` itself.
    #[serde(default, deserialize_with = "target")]
    pub target: Option<Key>,
    /// Regular expressions (Java syntax); only what they match is obfuscated, each in turn on
    /// the previous one's output. `%{NAME}` alone is a built-in: `EMAIL_ADDRESS`,
    /// `IP_ADDRESS_V4`, `BASE_NUMBER`, `CREDIT_CARD_NUMBER`, `US_PHONE_NUMBER`,
    /// `US_SSN_NUMBER`. Default none: the whole value is obfuscated.
    #[serde(default)]
    pub patterns: Vec<String>,
    /// How: `mask: {...}` (the default, `***`) or `hash: {...}`.
    #[serde(default)]
    pub action: Action,
    /// Obfuscate only whole words: each pattern is wrapped in `\b...\b`. Default false.
    #[serde(default)]
    pub single_word_only: bool,
    /// Tags added when the obfuscated text is the same as before (nothing matched).
    /// Default none.
    #[serde(default)]
    pub tags_on_match_failure: Vec<String>,
    /// Obfuscate only in events for which this condition is true.
    #[serde(default, deserialize_with = "crate::event::opt_condition")]
    pub obfuscate_when: Option<Expression>,
}

/// `action`: one of Data Prepper's obfuscation actions, `name: {options}` (the options may
/// be left out).
#[derive(Debug, Clone)]
pub enum Action {
    /// Replaces the value, or each match, with `mask_character` × `mask_character_length`.
    Mask(Mask),
    /// Replaces the value, or each match, with the base64 of its salted SHA-512 hash.
    Hash(Hash),
}

/// `mask: {...}` or `hash: {...}` (a one-key map, or the parser's `!mask {...}`); no options
/// are the defaults.
impl<'de> Deserialize<'de> for Action {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        use serde_yaml::Value;
        let (name, options) = match Value::deserialize(d)? {
            Value::Mapping(map) if map.len() == 1 => {
                let (name, options) = map.into_iter().next().expect("one key");
                (name.as_str().unwrap_or_default().to_owned(), options)
            }
            Value::Tagged(tagged) => (
                tagged.tag.to_string().trim_start_matches('!').to_owned(),
                tagged.value,
            ),
            _ => {
                return Err(D::Error::custom(
                    "`action` takes one action: `mask: {...}` or `hash: {...}`",
                ));
            }
        };
        let options = if options.is_null() {
            Value::Mapping(serde_yaml::Mapping::new())
        } else {
            options
        };
        let error = |e: serde_yaml::Error| D::Error::custom(format!("`{name}`: {e}"));
        match name.as_str() {
            "mask" => serde_yaml::from_value(options)
                .map(Action::Mask)
                .map_err(error),
            "hash" => serde_yaml::from_value(options)
                .map(Action::Hash)
                .map_err(error),
            other => Err(D::Error::custom(format!(
                "unknown action `{other}`; the actions are `mask` and `hash`"
            ))),
        }
    }
}

impl Default for Action {
    fn default() -> Self {
        Action::Mask(Mask::default())
    }
}

/// The `mask` action.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mask {
    /// The masking character: one of `*`, `#`, `!`, `%`, `&`, `@`. Default `*`.
    #[serde(default = "default_mask_character")]
    pub mask_character: String,
    /// How many times it is repeated, 1 to 10. Default 3.
    #[serde(default = "default_mask_length")]
    pub mask_character_length: i32,
}

impl Default for Mask {
    fn default() -> Self {
        Self {
            mask_character: default_mask_character(),
            mask_character_length: default_mask_length(),
        }
    }
}

fn default_mask_character() -> String {
    "*".to_owned()
}

const fn default_mask_length() -> i32 {
    3
}

/// The `hash` action.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hash {
    /// The salt hashed before the text, 16 to 64 characters. Default: 64 random bytes drawn
    /// when the pipeline starts, so hashes differ from one run to the next.
    #[serde(default)]
    pub salt: Option<String>,
    /// A key whose value (its text, cut or padded to 64 bytes) is the salt for its event;
    /// events without it use `salt`. Default none.
    #[serde(default, deserialize_with = "crate::event::opt_key")]
    pub salt_key: Option<Key>,
    /// The hash: `SHA-512`, the only one. Default `SHA-512`.
    #[serde(default)]
    pub format: Option<String>,
}

/// Data Prepper's `CommonPattern`s: `%{NAME}` in `patterns`.
pub const COMMON_PATTERNS: &[(&str, &str)] = &[
    ("EMAIL_ADDRESS", r"[A-Za-z0-9+_.-]+@([\w-]+\.)+[\w-]{2,4}"),
    (
        "IP_ADDRESS_V4",
        r"((25[0-5]|(2[0-4]|1\d|[1-9]|)\d)\.?\b){4}",
    ),
    ("BASE_NUMBER", r"[0-9]*\.?[0-9]+"),
    ("CREDIT_CARD_NUMBER", r"(\d[ -]*?){13,16}"),
    (
        "US_PHONE_NUMBER",
        r"\+?\d?[\s-]?(\(\d{3}\)|\d{3})[\s-]?\d{3}[\s-]?\d{4}",
    ),
    ("US_SSN_NUMBER", r"[0-9]{3}-[0-9]{2}-[0-9]{4}"),
];

impl Obfuscate {
    /// The regular expressions as Data Prepper compiles them: `%{NAME}` replaced by its
    /// built-in, each wrapped in `\b...\b` with `single_word_only`. An unknown `%{NAME}` is
    /// `Err` with Data Prepper's message.
    pub fn regexes(&self) -> Result<Vec<String>, String> {
        self.patterns
            .iter()
            .map(|raw| {
                let regex = match common_name(raw) {
                    Some(name) => COMMON_PATTERNS
                        .iter()
                        .find(|(n, _)| *n == name)
                        .map(|(_, regex)| (*regex).to_owned())
                        .ok_or_else(|| {
                            format!(
                                "unable to find a predefined pattern for \"{raw}\"; the predefined patterns are {}",
                                COMMON_PATTERNS
                                    .iter()
                                    .map(|(n, _)| format!("%{{{n}}}"))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            )
                        })?,
                    None => raw.clone(),
                };
                Ok(if self.single_word_only {
                    format!(r"\b{regex}\b")
                } else {
                    regex
                })
            })
            .collect()
    }
}

/// `NAME` of a pattern that is exactly `%{NAME}` (`^%\{([A-Z_0-9]+)}$`).
fn common_name(raw: &str) -> Option<&str> {
    let name = raw.strip_prefix("%{")?.strip_suffix('}')?;
    (!name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_'))
    .then_some(name)
}

/// `target`: `""` is no target.
fn target<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Key>, D::Error> {
    use serde::de::Error as _;
    match Option::<String>::deserialize(d)? {
        None => Ok(None),
        Some(text) if text.is_empty() => Ok(None),
        Some(text) => Key::parse(&text).map(Some).map_err(D::Error::custom),
    }
}

impl ProcessorConfig for Obfuscate {
    fn check(&self, path: &str, errors: &mut Errors) {
        if self.source.is_root() {
            let at = join(path, "source");
            errors.at(
                &at,
                format!("`{at}` cannot be empty: name the key whose value to obfuscate"),
            );
        }
        if self.target.as_ref().is_some_and(Key::is_root) {
            let at = join(path, "target");
            errors.at(
                &at,
                format!("`{at}` cannot be the whole event: name a key, or leave `target` out to write to `source`"),
            );
        }
        let at = join(path, "patterns");
        match self.regexes() {
            Err(message) => errors.at(&at, format!("`{at}`: {message}")),
            Ok(regexes) => super::regexes(&regexes, &at, errors),
        }
        match &self.action {
            Action::Mask(mask) => {
                let at = join(path, "action.mask");
                if !matches!(
                    mask.mask_character.as_str(),
                    "*" | "#" | "!" | "%" | "&" | "@"
                ) {
                    errors.at(
                        &join(&at, "mask_character"),
                        format!(
                            "`{at}.mask_character` is `{}`; valid characters are *, #, !, %, & and @",
                            mask.mask_character
                        ),
                    );
                }
                if !(1..=10).contains(&mask.mask_character_length) {
                    errors.at(
                        &join(&at, "mask_character_length"),
                        format!(
                            "`{at}.mask_character_length` is {}; it must be from 1 to 10",
                            mask.mask_character_length
                        ),
                    );
                }
            }
            Action::Hash(hash) => {
                let at = join(path, "action.hash");
                if let Some(salt) = &hash.salt {
                    // Java counts a string's length in UTF-16 units.
                    let len = salt.encode_utf16().count();
                    if !(16..=64).contains(&len) {
                        errors.at(
                            &join(&at, "salt"),
                            format!("`{at}.salt` has {len} characters; a salt has 16 to 64 (or leave `salt` out for a random one)"),
                        );
                    }
                }
                if let Some(format) = &hash.format
                    && format != "SHA-512"
                {
                    errors.at(
                        &join(&at, "format"),
                        format!("`{at}.format` is `{format}`; the only format is `SHA-512`"),
                    );
                }
            }
        }
    }
}
