//! Java `java.time.format.DateTimeFormatter` patterns, as Data Prepper's `date`
//! processor uses them.
//!
//! * [`JavaPattern::compile`] accepts the pattern syntax of
//!   `DateTimeFormatter.ofPattern` (letters, `'quoted'` text, `''`, `[optional]`
//!   sections) and refuses, with the letter and its position, what it does not
//!   support.
//! * [`JavaPattern::parse`] follows Java's strict, case-sensitive, SMART-resolver
//!   parsing plus the defaults Data Prepper adds with `parseDefaulting`
//!   (month, day, minute, second; hour unless the pattern string contains `a`
//!   or `k`; year unless it contains `y` or `u`), with Java's adjacent value
//!   parsing (`yyyyMMddHHmmss` works).
//! * [`JavaPattern::format`] prints an instant in a zone, in English (Java's
//!   `Locale.ROOT` and English names are the same).
//!
//! Positions in [`PatternError`] are 0-based character indices into the
//! pattern; positions in [`ParseError`] are byte offsets into the text.
//!
//! # Layout
//! - this file: the errors, [`JavaPattern`] and [`check_locale`].
//! - `zone.rs`: [`Zone`], [`ZonePrefix`] and [`zone()`] (Java's `ZoneId`), offset ids.
//! - `pattern.rs`: [`JavaPattern::compile`], the pattern letters made into items.
//! - `parse.rs`: [`JavaPattern::parse`], the text read item by item into fields.
//! - `resolve.rs`: those fields, with Data Prepper's defaults, made into a date-time.
//! - `format.rs`: [`JavaPattern::format`], the items printed.
//! - `tests.rs`: the helpers the tests share, and the tests of more than one part.

mod format;
mod parse;
mod pattern;
mod resolve;
mod zone;

#[cfg(test)]
mod tests;

pub use zone::{Zone, ZonePrefix, zone};

use pattern::Item;

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// A pattern, locale or zone id that cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PatternError {
    /// A letter that is not a `DateTimeFormatter` pattern letter (Java refuses it too).
    #[error("unknown pattern letter `{letter}` at position {position}")]
    UnknownLetter { letter: char, position: usize },
    /// A valid Java pattern letter that this implementation does not support.
    #[error("unsupported pattern letter `{letter}` at position {position}: {reason}")]
    UnsupportedLetter {
        letter: char,
        position: usize,
        reason: &'static str,
    },
    /// A letter repeated a number of times Java does not accept (e.g. `ddd`, `aa`, `V`).
    #[error("invalid count {count} of pattern letter `{letter}` at position {position}")]
    BadLetterCount {
        letter: char,
        count: usize,
        position: usize,
    },
    /// A `'` that opens quoted text which is never closed.
    #[error("unclosed quote starting at position {position}")]
    UnclosedQuote { position: usize },
    /// A `]` without a matching `[`.
    #[error("`]` at position {position} without a matching `[`")]
    UnmatchedBracket { position: usize },
    /// `{`, `}` or `#`, which Java reserves.
    #[error("reserved character `{ch}` at position {position}")]
    ReservedChar { ch: char, position: usize },
    /// A well-formed locale whose month and day names are not available (only English/ROOT are).
    #[error("unsupported locale `{0}`: only ROOT and English (en, en-*, en_*) are supported")]
    UnsupportedLocale(String),
    /// A locale string that is not a locale.
    #[error("invalid locale `{0}`")]
    InvalidLocale(String),
    /// A zone id that `ZoneId.of` would refuse.
    #[error("invalid zone id `{0}`")]
    InvalidZone(String),
}

/// Text that does not match a pattern, or whose fields do not make a date-time.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParseError {
    /// The text does not match the pattern at `position` (a byte offset).
    #[error("text does not match the pattern at byte {position}: expected {expected}")]
    Mismatch {
        position: usize,
        expected: &'static str,
    },
    /// The pattern matched a prefix only; text is left from `position`.
    #[error("unparsed text found at byte {position}")]
    TrailingText { position: usize },
    /// A field value outside its range (month 13, hour 25, offset beyond ±18:00, …).
    #[error("value {value} out of range for {field}")]
    OutOfRange { field: &'static str, value: i64 },
    /// Two fields disagree (e.g. the day-of-week does not match the date).
    #[error("conflicting values for {field}")]
    Conflict { field: &'static str },
    /// Not enough fields to build a date-time (e.g. no hour although the pattern mentions `a`).
    #[error("cannot build a date-time: {0}")]
    Unresolved(&'static str),
}

// ---------------------------------------------------------------------------
// Compiled pattern
// ---------------------------------------------------------------------------

/// A compiled Java `DateTimeFormatter` pattern.
#[derive(Debug, Clone)]
pub struct JavaPattern {
    items: Vec<Item>,
    pattern: String,
    /// Data Prepper defaults HOUR_OF_DAY to 0 unless the pattern string contains `a` or `k`.
    default_hour: bool,
    /// Data Prepper defaults the year to today's unless the pattern string contains `y` or `u`.
    default_year: bool,
}

impl JavaPattern {
    /// The pattern string this was compiled from.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }
}

// ---------------------------------------------------------------------------
// Locale
// ---------------------------------------------------------------------------

/// Data Prepper's `locale` option. `ROOT` (any case) and English (`en`, `en-US`,
/// `en_GB`, up to language/country/variant) are accepted; other well-formed
/// locales are refused with [`PatternError::UnsupportedLocale`] (month and day
/// names are English only); malformed ones with [`PatternError::InvalidLocale`].
pub fn check_locale(locale: &str) -> Result<(), PatternError> {
    if locale.eq_ignore_ascii_case("root") {
        return Ok(());
    }
    let sep = if locale.contains('-') { '-' } else { '_' };
    let parts: Vec<&str> = locale.split(sep).collect();
    let invalid = || PatternError::InvalidLocale(locale.to_string());
    if parts.len() > 3 {
        return Err(invalid());
    }
    let lang = parts[0];
    let country = parts.get(1).copied().unwrap_or("");
    if !(lang.is_empty()
        || ((2..=8).contains(&lang.len()) && lang.bytes().all(|c| c.is_ascii_alphabetic())))
    {
        return Err(invalid());
    }
    if !(country.is_empty()
        || (country.len() == 2 && country.bytes().all(|c| c.is_ascii_alphabetic()))
        || (country.len() == 3 && country.bytes().all(|c| c.is_ascii_digit())))
    {
        return Err(invalid());
    }
    if lang.is_empty() || lang.eq_ignore_ascii_case("en") {
        Ok(())
    } else {
        Err(PatternError::UnsupportedLocale(locale.to_string()))
    }
}
