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

use std::fmt;
use std::str::FromStr;

use chrono::{
    DateTime, Datelike, Duration, FixedOffset, LocalResult, NaiveDate, NaiveDateTime, NaiveTime,
    Offset, TimeZone, Timelike, Utc,
};
use chrono_tz::{OffsetName, Tz};

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
// Zones
// ---------------------------------------------------------------------------

/// Prefix of an offset-based zone id such as `UTC+02:00`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ZonePrefix {
    Utc,
    Gmt,
    Ut,
}

impl ZonePrefix {
    fn as_str(self) -> &'static str {
        match self {
            ZonePrefix::Utc => "UTC",
            ZonePrefix::Gmt => "GMT",
            ZonePrefix::Ut => "UT",
        }
    }
}

/// A Java `ZoneId`: a tz database region, a bare offset (`ZoneOffset`, e.g. `Z`
/// or `+05:30`), or an offset with a prefix (`UTC+02:00`, `GMT-08:00`, `UT`).
/// `chrono_tz::Tz` cannot hold arbitrary offsets, hence this enum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Zone {
    Named(Tz),
    Offset(FixedOffset),
    Prefixed(ZonePrefix, FixedOffset),
}

impl From<Tz> for Zone {
    fn from(tz: Tz) -> Self {
        Zone::Named(tz)
    }
}

impl From<FixedOffset> for Zone {
    fn from(o: FixedOffset) -> Self {
        Zone::Offset(o)
    }
}

impl FromStr for Zone {
    type Err = PatternError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        zone(s)
    }
}

impl fmt::Display for Zone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.id())
    }
}

impl Zone {
    /// The id Java prints for this zone (`VV`): `America/New_York`, `Z`, `+05:30`, `UTC+02:00`.
    pub fn id(&self) -> String {
        match self {
            Zone::Named(tz) => tz.name().to_string(),
            Zone::Offset(o) => offset_id(o.local_minus_utc()),
            Zone::Prefixed(p, o) => {
                let secs = o.local_minus_utc();
                if secs == 0 {
                    p.as_str().to_string()
                } else {
                    format!("{}{}", p.as_str(), offset_id(secs))
                }
            }
        }
    }

    /// The offset of this zone at a UTC instant.
    pub fn offset_at(&self, utc: &NaiveDateTime) -> FixedOffset {
        match self {
            Zone::Named(tz) => tz.offset_from_utc_datetime(utc).fix(),
            Zone::Offset(o) | Zone::Prefixed(_, o) => *o,
        }
    }

    /// The local date in this zone at `instant` ("today" for [`JavaPattern::parse`]).
    pub fn date_of(&self, instant: DateTime<Utc>) -> NaiveDate {
        let utc = instant.naive_utc();
        let off = self.offset_at(&utc).local_minus_utc();
        utc.checked_add_signed(Duration::seconds(off.into()))
            .unwrap_or(utc)
            .date()
    }

    /// Java's `ZonedDateTime.of(local, zone)`: in an overlap the earlier offset
    /// is used, in a gap the local time is moved later by the gap's length.
    pub fn from_local(&self, local: &NaiveDateTime) -> Option<DateTime<FixedOffset>> {
        match self {
            Zone::Offset(o) | Zone::Prefixed(_, o) => o.from_local_datetime(local).single(),
            Zone::Named(tz) => match tz.from_local_datetime(local) {
                LocalResult::Single(d) => Some(d.fixed_offset()),
                LocalResult::Ambiguous(earliest, _) => Some(earliest.fixed_offset()),
                LocalResult::None => {
                    // In a gap: the instant is `local` read with the offset in force before it.
                    let probe = local.checked_sub_signed(Duration::days(1))?;
                    let before = tz.offset_from_utc_datetime(&probe).fix();
                    let utc = local
                        .checked_sub_signed(Duration::seconds(before.local_minus_utc().into()))?;
                    let off = tz.offset_from_utc_datetime(&utc).fix();
                    Some(DateTime::<Utc>::from_naive_utc_and_offset(utc, Utc).with_timezone(&off))
                }
            },
        }
    }
}

/// Java's `ZoneOffset.getId()`: `Z`, `+05:30`, `-08:00`, `+01:02:03`.
fn offset_id(secs: i32) -> String {
    if secs == 0 {
        return "Z".to_string();
    }
    let a = secs.unsigned_abs();
    let mut s = format!(
        "{}{:02}:{:02}",
        if secs < 0 { '-' } else { '+' },
        a / 3600,
        a / 60 % 60
    );
    if !a.is_multiple_of(60) {
        s.push_str(&format!(":{:02}", a % 60));
    }
    s
}

const MAX_OFFSET_SECS: i32 = 18 * 3600;

fn fixed(secs: i32) -> Option<FixedOffset> {
    if secs.abs() > MAX_OFFSET_SECS {
        None
    } else {
        FixedOffset::east_opt(secs)
    }
}

/// Java's `ZoneOffset.of` for ids starting with `+`/`-`: `+h`, `+hh`, `+hh:mm`,
/// `+hhmm`, `+hh:mm:ss`, `+hhmmss`, within ±18:00.
fn parse_offset_id(id: &str) -> Option<FixedOffset> {
    let b = id.as_bytes();
    if !id.is_ascii() || b.is_empty() {
        return None;
    }
    let neg = match b[0] {
        b'+' => false,
        b'-' => true,
        _ => return None,
    };
    let num = |i: usize, colon: bool| -> Option<i32> {
        if colon && b.get(i.checked_sub(1)?) != Some(&b':') {
            return None;
        }
        two_digits(b, i)
    };
    let (h, m, s) = match b.len() {
        2 if b[1].is_ascii_digit() => (i32::from(b[1] - b'0'), 0, 0),
        3 => (num(1, false)?, 0, 0),
        5 => (num(1, false)?, num(3, false)?, 0),
        6 => (num(1, false)?, num(4, true)?, 0),
        7 => (num(1, false)?, num(3, false)?, num(5, false)?),
        9 => (num(1, false)?, num(4, true)?, num(7, true)?),
        _ => return None,
    };
    if h > 18 || m > 59 || s > 59 {
        return None;
    }
    let total = h * 3600 + m * 60 + s;
    fixed(if neg { -total } else { total })
}

fn prefix_zone(p: ZonePrefix, secs: i32) -> Option<Zone> {
    let off = fixed(secs)?;
    Some(match (p, secs) {
        (ZonePrefix::Utc, 0) => Zone::Named(Tz::UTC),
        (ZonePrefix::Gmt, 0) => Zone::Named(Tz::GMT),
        _ => Zone::Prefixed(p, off),
    })
}

/// Zone ids as Java's `ZoneId.of` accepts them: region ids (`America/New_York`,
/// case-sensitive), `Z`, offsets (`+05:30`, `-08`, `+0530`), `UTC`, `GMT`, `UT`
/// and those followed by an offset (`UTC+2`, `GMT-08:00`).
pub fn zone(id: &str) -> Result<Zone, PatternError> {
    let bad = || PatternError::InvalidZone(id.to_string());
    if id == "Z" {
        return Ok(Zone::Offset(FixedOffset::east_opt(0).ok_or_else(bad)?));
    }
    if id.chars().count() <= 1 || id.starts_with('+') || id.starts_with('-') {
        return parse_offset_id(id).map(Zone::Offset).ok_or_else(bad);
    }
    let prefixed = if id.starts_with("UTC") {
        Some((ZonePrefix::Utc, 3))
    } else if id.starts_with("GMT") {
        Some((ZonePrefix::Gmt, 3))
    } else if id.starts_with("UT") {
        Some((ZonePrefix::Ut, 2))
    } else {
        None
    };
    if let Some((p, n)) = prefixed {
        let rest = &id[n..];
        if rest.is_empty() {
            return prefix_zone(p, 0).ok_or_else(bad);
        }
        if rest.starts_with('+') || rest.starts_with('-') {
            let off = parse_offset_id(rest).ok_or_else(bad)?;
            return prefix_zone(p, off.local_minus_utc()).ok_or_else(bad);
        }
        // e.g. "GMT0", "UCT": a region id.
    }
    let valid_chars = id.bytes().enumerate().all(|(i, c)| {
        c.is_ascii_alphabetic() || (i > 0 && (c.is_ascii_digit() || b"~/._+-".contains(&c)))
    });
    if !valid_chars {
        return Err(bad());
    }
    Tz::from_str(id).map(Zone::Named).map_err(|_| bad())
}

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

// ---------------------------------------------------------------------------
// Compiled pattern
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    YearOfEra,
    Year,
    Month,
    DayOfMonth,
    DayOfYear,
    DayOfWeek,
    HourOfDay,
    ClockHourOfDay,
    HourOfAmPm,
    ClockHourOfAmPm,
    AmPm,
    Minute,
    Second,
    Nano,
}

const N_FIELDS: usize = 14;

impl Field {
    fn name(self) -> &'static str {
        match self {
            Field::YearOfEra => "year-of-era",
            Field::Year => "year",
            Field::Month => "month-of-year",
            Field::DayOfMonth => "day-of-month",
            Field::DayOfYear => "day-of-year",
            Field::DayOfWeek => "day-of-week",
            Field::HourOfDay => "hour-of-day",
            Field::ClockHourOfDay => "clock-hour-of-day",
            Field::HourOfAmPm => "hour-of-am-pm",
            Field::ClockHourOfAmPm => "clock-hour-of-am-pm",
            Field::AmPm => "am-pm-of-day",
            Field::Minute => "minute-of-hour",
            Field::Second => "second-of-minute",
            Field::Nano => "nano-of-second",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SignStyle {
    NotNegative,
    Normal,
    ExceedsPad,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TextStyle {
    Short,
    Full,
    Narrow,
}

#[derive(Debug, Clone)]
enum Item {
    Literal(String),
    /// `appendValue(field, min, max, sign)`; `subsequent` is the width reserved
    /// for the fixed-width numbers that directly follow (adjacent value parsing).
    Number {
        field: Field,
        min: usize,
        max: usize,
        sign: SignStyle,
        subsequent: usize,
    },
    /// `yy`/`uu`: two digits, base year 2000.
    Reduced {
        field: Field,
    },
    /// `S`…: fraction of second, fixed width.
    Fraction {
        width: usize,
    },
    Text {
        field: Field,
        style: TextStyle,
    },
    /// `appendOffset(PATTERNS[kind], no_offset)`, kinds 0..=8 =
    /// `+HH +HHmm +HH:mm +HHMM +HH:MM +HHMMss +HH:MM:ss +HHMMSS +HH:MM:SS`.
    Offset {
        kind: u8,
        no_offset: &'static str,
    },
    /// `O`/`OOOO`/`ZZZZ`: `GMT+8` / `GMT+08:00`.
    LocalizedOffset {
        full: bool,
    },
    /// `VV`
    ZoneId,
    /// `z`, `zz`, `zzz`
    ZoneText,
    Optional(Vec<Item>),
}

impl Item {
    /// Width if this is a fixed-width, non-negative value parser (joins an adjacent run).
    fn fixed_width(&self) -> Option<usize> {
        match self {
            Item::Number {
                min,
                max,
                sign: SignStyle::NotNegative,
                ..
            } if min == max => Some(*min),
            Item::Reduced { .. } => Some(2),
            Item::Fraction { width } => Some(*width),
            _ => None,
        }
    }
    fn is_value(&self) -> bool {
        matches!(
            self,
            Item::Number { .. } | Item::Reduced { .. } | Item::Fraction { .. }
        )
    }
}

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

struct Frame {
    items: Vec<Item>,
    /// Index of the value parser that adjacent fixed-width values attach to.
    active: Option<usize>,
}

impl Frame {
    fn new() -> Self {
        Frame {
            items: Vec::new(),
            active: None,
        }
    }
    fn push(&mut self, item: Item) {
        if item.is_value() {
            match (self.active, item.fixed_width()) {
                (Some(base), Some(w)) => {
                    if let Item::Number { subsequent, .. } = &mut self.items[base] {
                        *subsequent += w;
                    }
                    self.items.push(item);
                }
                _ => {
                    self.items.push(item);
                    self.active = Some(self.items.len() - 1);
                }
            }
        } else {
            self.active = None;
            if let (Item::Literal(new), Some(Item::Literal(last))) = (&item, self.items.last_mut())
            {
                last.push_str(new);
                return;
            }
            self.items.push(item);
        }
    }
}

fn unsupported(letter: char, position: usize, reason: &'static str) -> PatternError {
    PatternError::UnsupportedLetter {
        letter,
        position,
        reason,
    }
}

fn letter_item(letter: char, count: usize, position: usize) -> Result<Item, PatternError> {
    use Field as F;
    let bad = || PatternError::BadLetterCount {
        letter,
        count,
        position,
    };
    let num = |field: Field, min: usize, max: usize, sign: SignStyle| Item::Number {
        field,
        min,
        max,
        sign,
        subsequent: 0,
    };
    let simple = |field: Field| -> Result<Item, PatternError> {
        match count {
            1 => Ok(num(field, 1, 19, SignStyle::Normal)),
            2 => Ok(num(field, 2, 2, SignStyle::NotNegative)),
            _ => Err(bad()),
        }
    };
    let text_style = |field: Field| -> Result<Item, PatternError> {
        let style = match count {
            1..=3 => TextStyle::Short,
            4 => TextStyle::Full,
            5 => TextStyle::Narrow,
            _ => return Err(bad()),
        };
        Ok(Item::Text { field, style })
    };
    Ok(match letter {
        'y' | 'u' => {
            let field = if letter == 'y' { F::YearOfEra } else { F::Year };
            match count {
                2 => Item::Reduced { field },
                1 | 3 => num(field, count, 19, SignStyle::Normal),
                4..=19 => num(field, count, 19, SignStyle::ExceedsPad),
                _ => return Err(bad()),
            }
        }
        'M' | 'L' => match count {
            1 => num(F::Month, 1, 19, SignStyle::Normal),
            2 => num(F::Month, 2, 2, SignStyle::NotNegative),
            3 => Item::Text {
                field: F::Month,
                style: TextStyle::Short,
            },
            4 => Item::Text {
                field: F::Month,
                style: TextStyle::Full,
            },
            5 => Item::Text {
                field: F::Month,
                style: TextStyle::Narrow,
            },
            _ => return Err(bad()),
        },
        'd' => simple(F::DayOfMonth)?,
        'H' => simple(F::HourOfDay)?,
        'k' => simple(F::ClockHourOfDay)?,
        'K' => simple(F::HourOfAmPm)?,
        'h' => simple(F::ClockHourOfAmPm)?,
        'm' => simple(F::Minute)?,
        's' => simple(F::Second)?,
        'D' => match count {
            1 => num(F::DayOfYear, 1, 19, SignStyle::Normal),
            2 => num(F::DayOfYear, 2, 3, SignStyle::NotNegative),
            3 => num(F::DayOfYear, 3, 3, SignStyle::NotNegative),
            _ => return Err(bad()),
        },
        'S' => match count {
            1..=9 => Item::Fraction { width: count },
            _ => return Err(bad()),
        },
        'n' => match count {
            1 => num(F::Nano, 1, 19, SignStyle::Normal),
            2..=19 => num(F::Nano, count, count, SignStyle::NotNegative),
            _ => return Err(bad()),
        },
        'a' => match count {
            1 => Item::Text {
                field: F::AmPm,
                style: TextStyle::Short,
            },
            _ => return Err(bad()),
        },
        'E' => text_style(F::DayOfWeek)?,
        'e' | 'c' => match count {
            1 | 2 if letter == 'e' || count == 1 => {
                return Err(unsupported(
                    letter,
                    position,
                    "localized numeric day-of-week depends on the locale's first day of week",
                ));
            }
            3..=5 => text_style(F::DayOfWeek)?,
            _ => return Err(bad()),
        },
        'z' => match count {
            1..=3 => Item::ZoneText,
            4 => {
                return Err(unsupported(
                    letter,
                    position,
                    "full zone names (zzzz) are not supported; use z, VV or an offset",
                ));
            }
            _ => return Err(bad()),
        },
        'V' => match count {
            2 => Item::ZoneId,
            _ => return Err(bad()),
        },
        'Z' => match count {
            1..=3 => Item::Offset {
                kind: 3,
                no_offset: "+0000",
            },
            4 => Item::LocalizedOffset { full: true },
            5 => Item::Offset {
                kind: 6,
                no_offset: "Z",
            },
            _ => return Err(bad()),
        },
        'O' => match count {
            1 => Item::LocalizedOffset { full: false },
            4 => Item::LocalizedOffset { full: true },
            _ => return Err(bad()),
        },
        'X' | 'x' => {
            const KINDS: [u8; 5] = [1, 3, 4, 5, 6];
            const ZERO_X: [&str; 5] = ["+00", "+0000", "+00:00", "+0000", "+00:00"];
            if !(1..=5).contains(&count) {
                return Err(bad());
            }
            let no_offset = if letter == 'X' {
                "Z"
            } else {
                ZERO_X[count - 1]
            };
            Item::Offset {
                kind: KINDS[count - 1],
                no_offset,
            }
        }
        'G' => return Err(unsupported(letter, position, "era is not supported")),
        'Q' | 'q' => {
            return Err(unsupported(
                letter,
                position,
                "quarter-of-year is not supported",
            ));
        }
        'w' | 'W' | 'Y' => {
            return Err(unsupported(
                letter,
                position,
                "week-based fields are not supported",
            ));
        }
        'F' => {
            return Err(unsupported(
                letter,
                position,
                "aligned week of month is not supported",
            ));
        }
        'g' => {
            return Err(unsupported(
                letter,
                position,
                "modified Julian day is not supported",
            ));
        }
        'A' | 'N' => {
            return Err(unsupported(
                letter,
                position,
                "milli/nano-of-day is not supported",
            ));
        }
        'B' => {
            return Err(unsupported(
                letter,
                position,
                "day periods are not supported",
            ));
        }
        'v' => {
            return Err(unsupported(
                letter,
                position,
                "generic zone names are not supported",
            ));
        }
        'p' => return Err(unsupported(letter, position, "padding is not supported")),
        _ => return Err(PatternError::UnknownLetter { letter, position }),
    })
}

impl JavaPattern {
    /// Compiles a pattern as `DateTimeFormatter.ofPattern` does. Unclosed `[`
    /// sections are closed at the end of the pattern, as in Java.
    pub fn compile(pattern: &str) -> Result<Self, PatternError> {
        let chars: Vec<char> = pattern.chars().collect();
        let mut stack = vec![Frame::new()];
        let mut pos = 0;
        while pos < chars.len() {
            let cur = chars[pos];
            if cur.is_ascii_alphabetic() {
                let start = pos;
                while pos < chars.len() && chars[pos] == cur {
                    pos += 1;
                }
                let item = letter_item(cur, pos - start, start)?;
                stack.last_mut().expect("frame").push(item);
                continue;
            }
            match cur {
                '\'' => {
                    let start = pos;
                    pos += 1;
                    let mut lit = String::new();
                    loop {
                        if pos >= chars.len() {
                            return Err(PatternError::UnclosedQuote { position: start });
                        }
                        if chars[pos] == '\'' {
                            if pos + 1 < chars.len() && chars[pos + 1] == '\'' {
                                lit.push('\'');
                                pos += 2;
                                continue;
                            }
                            break;
                        }
                        lit.push(chars[pos]);
                        pos += 1;
                    }
                    if pos == start + 1 {
                        lit.push('\'');
                    }
                    stack.last_mut().expect("frame").push(Item::Literal(lit));
                }
                '[' => stack.push(Frame::new()),
                ']' => {
                    if stack.len() == 1 {
                        return Err(PatternError::UnmatchedBracket { position: pos });
                    }
                    let inner = stack.pop().expect("frame");
                    stack
                        .last_mut()
                        .expect("frame")
                        .push(Item::Optional(inner.items));
                }
                '{' | '}' | '#' => {
                    return Err(PatternError::ReservedChar {
                        ch: cur,
                        position: pos,
                    });
                }
                _ => stack
                    .last_mut()
                    .expect("frame")
                    .push(Item::Literal(cur.to_string())),
            }
            pos += 1;
        }
        while stack.len() > 1 {
            let inner = stack.pop().expect("frame");
            stack
                .last_mut()
                .expect("frame")
                .push(Item::Optional(inner.items));
        }
        Ok(JavaPattern {
            items: stack.pop().expect("frame").items,
            pattern: pattern.to_string(),
            default_hour: !pattern.contains('a') && !pattern.contains('k'),
            default_year: !pattern.contains('y') && !pattern.contains('u'),
        })
    }

    /// The pattern string this was compiled from.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// Parses `text` (the whole text must be consumed) as Data Prepper does:
    /// missing fields are filled from `today` (a date in `zone`): the year when
    /// the pattern string has no `y`/`u`, the month and the day; minute and
    /// second default to 0, the hour too unless the pattern string contains
    /// `a` or `k`. An offset in the text wins, then a zone in the text, then
    /// `zone`. The result carries the parsed offset if there is one, else the
    /// offset of the (parsed or given) zone at that instant.
    pub fn parse(
        &self,
        text: &str,
        zone: Zone,
        today: NaiveDate,
    ) -> Result<DateTime<FixedOffset>, ParseError> {
        let mut st = Parsed::default();
        let end = parse_items(&self.items, text, 0, &mut st)?;
        if end != text.len() {
            return Err(ParseError::TrailingText { position: end });
        }
        self.resolve(st, zone, today)
    }

    /// Formats `instant` in `zone` (English names; optional sections are printed).
    pub fn format(&self, instant: DateTime<Utc>, zone: Zone) -> String {
        let utc = instant.naive_utc();
        let mut off = zone.offset_at(&utc).local_minus_utc();
        let local = match utc.checked_add_signed(Duration::seconds(off.into())) {
            Some(l) => l,
            None => {
                // Only within hours of chrono's limits: print in UTC rather than panic.
                off = 0;
                utc
            }
        };
        let abbrev = match zone {
            Zone::Named(tz) => tz
                .offset_from_utc_datetime(&utc)
                .abbreviation()
                .map(str::to_string),
            _ => None,
        };
        let ctx = FormatCtx {
            local,
            off,
            zone,
            abbrev,
        };
        let mut out = String::new();
        format_items(&self.items, &ctx, &mut out);
        out
    }

    fn resolve(
        &self,
        mut st: Parsed,
        zone: Zone,
        today: NaiveDate,
    ) -> Result<DateTime<FixedOffset>, ParseError> {
        // Data Prepper's parseDefaulting (only fills fields that were not parsed).
        st.fill(Field::Month, today.month().into());
        st.fill(Field::DayOfMonth, today.day().into());
        st.fill(Field::Minute, 0);
        st.fill(Field::Second, 0);
        if self.default_hour {
            st.fill(Field::HourOfDay, 0);
        }
        if self.default_year {
            st.fill(Field::YearOfEra, today.year().into());
        }

        // --- date (IsoChronology, SMART) ---
        let mut year = st.get(Field::Year);
        if let Some(yoe) = st.get(Field::YearOfEra) {
            check(Field::YearOfEra, yoe, 1, 999_999_999)?;
            let y = match year {
                Some(y) if y <= 0 => 1 - yoe,
                _ => yoe,
            };
            if year.is_some_and(|old| old != y) {
                return Err(ParseError::Conflict {
                    field: Field::Year.name(),
                });
            }
            year = Some(y);
        }
        let year = year.ok_or(ParseError::Unresolved("no year"))?;
        check(Field::Year, year, -999_999_999, 999_999_999)?;
        let month = st
            .get(Field::Month)
            .ok_or(ParseError::Unresolved("no month"))?;
        let day = st
            .get(Field::DayOfMonth)
            .ok_or(ParseError::Unresolved("no day"))?;
        check(Field::Month, month, 1, 12)?;
        check(Field::DayOfMonth, day, 1, 31)?;
        let y32 = i32::try_from(year).map_err(|_| ParseError::OutOfRange {
            field: "year",
            value: year,
        })?;
        let day = (day as u32).min(last_day_of_month(y32, month as u32));
        let mut date =
            NaiveDate::from_ymd_opt(y32, month as u32, day).ok_or(ParseError::OutOfRange {
                field: "year",
                value: year,
            })?;
        if let Some(doy) = st.get(Field::DayOfYear)
            && doy != i64::from(date.ordinal())
        {
            return Err(ParseError::Conflict {
                field: Field::DayOfYear.name(),
            });
        }
        if let Some(dow) = st.get(Field::DayOfWeek)
            && dow != i64::from(date.weekday().number_from_monday())
        {
            return Err(ParseError::Conflict {
                field: Field::DayOfWeek.name(),
            });
        }

        // --- time (Parsed.resolveTimeFields, SMART) ---
        let mut hod = st.get(Field::HourOfDay);
        let merge_hod = |v: i64, hod: &mut Option<i64>| -> Result<(), ParseError> {
            match *hod {
                Some(old) if old != v => Err(ParseError::Conflict {
                    field: Field::HourOfDay.name(),
                }),
                _ => {
                    *hod = Some(v);
                    Ok(())
                }
            }
        };
        if let Some(ch) = st.get(Field::ClockHourOfDay) {
            if ch != 0 {
                check(Field::ClockHourOfDay, ch, 1, 24)?;
            }
            merge_hod(if ch == 24 { 0 } else { ch }, &mut hod)?;
        }
        let mut hap = st.get(Field::HourOfAmPm);
        if let Some(ch) = st.get(Field::ClockHourOfAmPm) {
            if ch != 0 {
                check(Field::ClockHourOfAmPm, ch, 1, 12)?;
            }
            let v = if ch == 12 { 0 } else { ch };
            if hap.is_some_and(|old| old != v) {
                return Err(ParseError::Conflict {
                    field: Field::HourOfAmPm.name(),
                });
            }
            hap = Some(v);
        }
        let mut ampm = st.get(Field::AmPm);
        if let (Some(ap), Some(h)) = (ampm, hap) {
            check(Field::HourOfAmPm, h, 0, 11)?;
            merge_hod(ap * 12 + h, &mut hod)?;
            ampm = None;
            hap = None;
        }
        let hod = hod.ok_or(ParseError::Unresolved(
            "no hour-of-day (the pattern mentions `a` or `k`, so the hour is not defaulted)",
        ))?;
        let moh = st.get(Field::Minute).unwrap_or(0);
        let som = st.get(Field::Second).unwrap_or(0);
        let nos = st.get(Field::Nano).unwrap_or(0);
        check(Field::Minute, moh, 0, 59)?;
        check(Field::Nano, nos, 0, 999_999_999)?;
        let mut extra_day = false;
        let time = if hod == 24 && moh == 0 && som == 0 && nos == 0 {
            extra_day = true;
            NaiveTime::MIN
        } else {
            check(Field::HourOfDay, hod, 0, 23)?;
            check(Field::Second, som, 0, 59)?;
            NaiveTime::from_hms_nano_opt(hod as u32, moh as u32, som as u32, nos as u32)
                .ok_or(ParseError::Unresolved("invalid time"))?
        };
        if let Some(h) = hap {
            check(Field::HourOfAmPm, h, 0, 11)?;
            if h != i64::from(time.hour() % 12) {
                return Err(ParseError::Conflict {
                    field: Field::HourOfAmPm.name(),
                });
            }
        }
        if let Some(ap) = ampm
            && ap != i64::from(time.hour() / 12)
        {
            return Err(ParseError::Conflict {
                field: Field::AmPm.name(),
            });
        }
        if extra_day {
            date = date.succ_opt().ok_or(ParseError::OutOfRange {
                field: "year",
                value: year,
            })?;
        }
        let local = date.and_time(time);

        // --- instant ---
        let overflow = ParseError::OutOfRange {
            field: "year",
            value: year,
        };
        if let Some(secs) = st.offset {
            let off = fixed(secs).ok_or(ParseError::OutOfRange {
                field: "offset-seconds",
                value: secs.into(),
            })?;
            return off.from_local_datetime(&local).single().ok_or(overflow);
        }
        st.zone.unwrap_or(zone).from_local(&local).ok_or(overflow)
    }
}

fn check(field: Field, v: i64, lo: i64, hi: i64) -> Result<(), ParseError> {
    if (lo..=hi).contains(&v) {
        Ok(())
    } else {
        Err(ParseError::OutOfRange {
            field: field.name(),
            value: v,
        })
    }
}

fn last_day_of_month(y: i32, m: u32) -> u32 {
    match m {
        4 | 6 | 9 | 11 => 30,
        2 if y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) => 29,
        2 => 28,
        _ => 31,
    }
}

// ---------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Default)]
struct Parsed {
    fields: [Option<i64>; N_FIELDS],
    offset: Option<i32>,
    zone: Option<Zone>,
}

impl Parsed {
    fn get(&self, f: Field) -> Option<i64> {
        self.fields[f as usize]
    }
    /// Java's `setParsedField`: a second, different value for a field fails.
    fn set(&mut self, f: Field, v: i64) -> Result<(), ParseError> {
        match self.fields[f as usize] {
            Some(old) if old != v => Err(ParseError::Conflict { field: f.name() }),
            _ => {
                self.fields[f as usize] = Some(v);
                Ok(())
            }
        }
    }
    fn fill(&mut self, f: Field, v: i64) {
        self.fields[f as usize].get_or_insert(v);
    }
    fn set_offset(&mut self, secs: i32) -> Result<(), ParseError> {
        match self.offset {
            Some(old) if old != secs => Err(ParseError::Conflict {
                field: "offset-seconds",
            }),
            _ => {
                self.offset = Some(secs);
                Ok(())
            }
        }
    }
}

fn mismatch(position: usize, expected: &'static str) -> ParseError {
    ParseError::Mismatch { position, expected }
}

fn two_digits(b: &[u8], i: usize) -> Option<i32> {
    let d1 = *b.get(i)?;
    let d2 = *b.get(i + 1)?;
    if d1.is_ascii_digit() && d2.is_ascii_digit() {
        Some(i32::from(d1 - b'0') * 10 + i32::from(d2 - b'0'))
    } else {
        None
    }
}

fn parse_items(
    items: &[Item],
    text: &str,
    mut pos: usize,
    st: &mut Parsed,
) -> Result<usize, ParseError> {
    let b = text.as_bytes();
    for item in items {
        match item {
            Item::Literal(lit) => {
                if !text[pos..].starts_with(lit.as_str()) {
                    return Err(mismatch(pos, "literal text"));
                }
                pos += lit.len();
            }
            Item::Number {
                field,
                min,
                max,
                sign,
                subsequent,
            } => {
                let (v, end) = parse_number(b, pos, *min, *max, *sign, *subsequent)?;
                st.set(*field, v)?;
                pos = end;
            }
            Item::Reduced { field } => {
                let v = two_digits(b, pos).ok_or(mismatch(pos, "two-digit year"))?;
                st.set(*field, 2000 + i64::from(v))?;
                pos += 2;
            }
            Item::Fraction { width } => {
                let digits = b[pos..]
                    .iter()
                    .take(*width)
                    .take_while(|c| c.is_ascii_digit())
                    .count();
                if digits < *width {
                    return Err(mismatch(pos, "fraction-of-second digits"));
                }
                let mut v: i64 = 0;
                for &c in &b[pos..pos + width] {
                    v = v * 10 + i64::from(c - b'0');
                }
                v *= 10_i64.pow(9 - *width as u32);
                st.set(Field::Nano, v)?;
                pos += width;
            }
            Item::Text { field, style } => {
                let (v, len) =
                    parse_text(*field, *style, &text[pos..]).ok_or(mismatch(pos, "a name"))?;
                st.set(*field, v)?;
                pos += len;
            }
            Item::Offset { kind, no_offset } => {
                let (secs, end) =
                    parse_offset(b, pos, *kind, no_offset).ok_or(mismatch(pos, "an offset"))?;
                st.set_offset(secs)?;
                pos = end;
            }
            Item::LocalizedOffset { full } => {
                let (secs, end) =
                    parse_localized_offset(b, pos, *full).ok_or(mismatch(pos, "a GMT offset"))?;
                st.set_offset(secs)?;
                pos = end;
            }
            Item::ZoneId | Item::ZoneText => {
                let (z, end) = parse_zone(text, pos, matches!(item, Item::ZoneText))
                    .ok_or(mismatch(pos, "a zone"))?;
                st.zone = Some(z);
                pos = end;
            }
            Item::Optional(inner) => {
                let mut copy = st.clone();
                if let Ok(end) = parse_items(inner, text, pos, &mut copy) {
                    *st = copy;
                    pos = end;
                }
            }
        }
    }
    Ok(pos)
}

/// Java's strict `NumberPrinterParser.parse`, with adjacent value parsing.
fn parse_number(
    b: &[u8],
    start: usize,
    min: usize,
    max: usize,
    sign: SignStyle,
    subsequent: usize,
) -> Result<(i64, usize), ParseError> {
    let err = || mismatch(start, "digits");
    let mut pos = start;
    let (mut negative, mut positive) = (false, false);
    match b.get(pos) {
        None => return Err(err()),
        Some(b'+') => {
            if sign != SignStyle::ExceedsPad {
                return Err(err());
            }
            positive = true;
            pos += 1;
        }
        Some(b'-') => {
            if sign == SignStyle::NotNegative {
                return Err(err());
            }
            negative = true;
            pos += 1;
        }
        _ => {}
    }
    let digits_start = pos;
    let avail = b[pos..]
        .iter()
        .take(max + subsequent)
        .take_while(|c| c.is_ascii_digit())
        .count();
    if avail < min {
        return Err(err());
    }
    let mut take = if subsequent > 0 {
        min.max(avail - subsequent.min(avail))
    } else {
        avail
    };
    let mut total: i128 = 0;
    for &c in &b[digits_start..digits_start + take] {
        total = total * 10 + i128::from(c - b'0');
    }
    if total > i128::from(i64::MAX) {
        // Java drops the last digit when the value does not fit in a long.
        total /= 10;
        take -= 1;
    }
    pos = digits_start + take;
    if negative {
        if total == 0 {
            return Err(err());
        }
        total = -total;
    } else if sign == SignStyle::ExceedsPad {
        if positive && take <= min {
            return Err(err());
        }
        if !positive && take > min {
            return Err(err());
        }
    }
    Ok((total as i64, pos))
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];
const AMPM: [&str; 2] = ["AM", "PM"];

fn style_name(name: &'static str, style: TextStyle) -> &'static str {
    match style {
        TextStyle::Full => name,
        TextStyle::Short => &name[..3],
        TextStyle::Narrow => &name[..1],
    }
}

/// (text, value) pairs for a text field.
fn names(field: Field, style: TextStyle) -> Vec<(&'static str, i64)> {
    match field {
        Field::Month => MONTHS
            .iter()
            .zip(1..)
            .map(|(n, v)| (style_name(n, style), v))
            .collect(),
        Field::DayOfWeek => DAYS
            .iter()
            .zip(1..)
            .map(|(n, v)| (style_name(n, style), v))
            .collect(),
        _ => AMPM.iter().zip(0..).map(|(n, v)| (*n, v)).collect(),
    }
}

/// Longest case-sensitive match; an ambiguous (narrow) match fails.
fn parse_text(field: Field, style: TextStyle, rest: &str) -> Option<(i64, usize)> {
    let mut best: Option<(usize, i64)> = None;
    let mut ambiguous = false;
    for (name, v) in names(field, style) {
        if rest.starts_with(name) {
            match best {
                Some((len, old)) if name.len() == len => ambiguous |= old != v,
                Some((len, _)) if name.len() < len => {}
                _ => {
                    best = Some((name.len(), v));
                    ambiguous = false;
                }
            }
        }
    }
    if ambiguous {
        return None;
    }
    best.map(|(len, v)| (v, len))
}

#[derive(Clone, Copy, PartialEq)]
enum Part {
    No,
    Optional,
    Required,
}

/// Java's strict `OffsetIdPrinterParser.parse`.
fn parse_offset(b: &[u8], pos: usize, kind: u8, no_offset: &str) -> Option<(i32, usize)> {
    if pos >= b.len() {
        return None;
    }
    if b[pos..].starts_with(no_offset.as_bytes()) {
        return Some((0, pos + no_offset.len()));
    }
    let neg = match b[pos] {
        b'+' => false,
        b'-' => true,
        _ => return None,
    };
    let colon = matches!(kind, 2 | 4 | 6 | 8);
    let minutes = match kind {
        0 => Part::No,
        1 | 2 => Part::Optional,
        _ => Part::Required,
    };
    let seconds = match kind {
        5 | 6 => Part::Optional,
        7 | 8 => Part::Required,
        _ => Part::No,
    };
    let mut p = pos + 1;
    let h = two_digits(b, p)?;
    p += 2;
    let part = |mode: Part, p: &mut usize| -> Option<Option<i32>> {
        if mode == Part::No {
            return Some(None);
        }
        let q = if colon { *p + 1 } else { *p };
        let ok = (!colon || b.get(*p) == Some(&b':')) && two_digits(b, q).is_some_and(|v| v <= 59);
        if ok {
            *p = q + 2;
            Some(two_digits(b, q))
        } else if mode == Part::Required {
            None
        } else {
            Some(None)
        }
    };
    let m = part(minutes, &mut p)?;
    let s = if m.is_some() {
        part(seconds, &mut p)?
    } else {
        None
    };
    if h > 23 {
        return None;
    }
    let total = h * 3600 + m.unwrap_or(0) * 60 + s.unwrap_or(0);
    Some((if neg { -total } else { total }, p))
}

fn digit(b: &[u8], i: usize) -> Option<i32> {
    b.get(i)
        .filter(|c| c.is_ascii_digit())
        .map(|c| i32::from(c - b'0'))
}

/// Java's `LocalizedOffsetIdPrinterParser.parse`: `GMT`, `GMT+8`, `GMT+08:00`, `GMT-5:30:15`.
fn parse_localized_offset(b: &[u8], pos: usize, full: bool) -> Option<(i32, usize)> {
    if !b[pos..].starts_with(b"GMT") {
        return None;
    }
    let mut p = pos + 3;
    let neg = match b.get(p) {
        Some(b'+') => false,
        Some(b'-') => true,
        _ => return Some((0, p)),
    };
    p += 1;
    let (h, mut m, mut s);
    let colon_pair = |p: usize| -> Option<i32> {
        if b.get(p) == Some(&b':') {
            two_digits(b, p + 1)
        } else {
            None
        }
    };
    if full {
        h = two_digits(b, p)?;
        p += 2;
        m = colon_pair(p)?;
        p += 3;
        s = 0;
        if let Some(v) = colon_pair(p) {
            s = v;
            p += 3;
        }
    } else {
        let mut hh = digit(b, p)?;
        p += 1;
        if let Some(d) = digit(b, p) {
            hh = hh * 10 + d;
            p += 1;
        }
        h = hh;
        m = 0;
        s = 0;
        if let Some(v) = colon_pair(p) {
            m = v;
            p += 3;
            if let Some(v) = colon_pair(p) {
                s = v;
                p += 3;
            }
        }
    }
    if h > 23 || m > 59 || s > 59 {
        return None;
    }
    m = h * 3600 + m * 60 + s;
    Some((if neg { -m } else { m }, p))
}

/// Names `z` also parses (Java's zone-name tree), mapped to the zone Java picks.
const ZONE_NAMES: &[(&str, Tz)] = &[
    ("UTC", Tz::UTC),
    ("Coordinated Universal Time", Tz::UTC),
    ("Greenwich Mean Time", Tz::GMT),
    ("EST", Tz::America__New_York),
    ("EDT", Tz::America__New_York),
    ("Eastern Standard Time", Tz::America__New_York),
    ("Eastern Daylight Time", Tz::America__New_York),
    ("CST", Tz::America__Chicago),
    ("CDT", Tz::America__Chicago),
    ("Central Standard Time", Tz::America__Chicago),
    ("Central Daylight Time", Tz::America__Chicago),
    ("MST", Tz::America__Denver),
    ("MDT", Tz::America__Denver),
    ("Mountain Standard Time", Tz::America__Denver),
    ("Mountain Daylight Time", Tz::America__Denver),
    ("PST", Tz::America__Los_Angeles),
    ("PDT", Tz::America__Los_Angeles),
    ("Pacific Standard Time", Tz::America__Los_Angeles),
    ("Pacific Daylight Time", Tz::America__Los_Angeles),
    ("AKST", Tz::America__Anchorage),
    ("AKDT", Tz::America__Anchorage),
    ("HST", Tz::Pacific__Honolulu),
    ("HDT", Tz::Pacific__Honolulu),
];

/// Java's `ZoneIdPrinterParser.parse` (`VV`) and `ZoneTextPrinterParser.parse` (`z`).
fn parse_zone(text: &str, pos: usize, is_text: bool) -> Option<(Zone, usize)> {
    let b = text.as_bytes();
    let c = *b.get(pos)?;
    if c == b'+' || c == b'-' {
        return parse_offset_based(b, None, pos, "Z");
    }
    if b.len() >= pos + 2 && c == b'U' && b[pos + 1] == b'T' {
        if b.get(pos + 2) == Some(&b'C') {
            if !is_text {
                return parse_offset_based(b, Some(ZonePrefix::Utc), pos + 3, "0");
            }
        } else {
            return parse_offset_based(b, Some(ZonePrefix::Ut), pos + 2, "0");
        }
    } else if b[pos..].starts_with(b"GMT") {
        if b.get(pos + 3) == Some(&b'0') {
            return Some((Zone::Named(Tz::GMT0), pos + 4));
        }
        return parse_offset_based(b, Some(ZonePrefix::Gmt), pos + 3, "0");
    }
    let rest = &text[pos..];
    let mut best: Option<(usize, Tz)> = None;
    let mut consider = |name: &str, tz: Tz| {
        if rest.starts_with(name) && best.is_none_or(|(len, _)| name.len() > len) {
            best = Some((name.len(), tz));
        }
    };
    for tz in chrono_tz::TZ_VARIANTS.iter() {
        consider(tz.name(), *tz);
    }
    if is_text {
        for (name, tz) in ZONE_NAMES {
            consider(name, *tz);
        }
    }
    match best {
        Some((len, tz)) => Some((Zone::Named(tz), pos + len)),
        None if c == b'Z' => Some((Zone::Offset(FixedOffset::east_opt(0)?), pos + 1)),
        None => None,
    }
}

fn parse_offset_based(
    b: &[u8],
    prefix: Option<ZonePrefix>,
    pos: usize,
    no_offset: &str,
) -> Option<(Zone, usize)> {
    let bare = |p: ZonePrefix| prefix_zone(p, 0).map(|z| (z, pos));
    if pos >= b.len() || b[pos] == b'0' || b[pos] == b'Z' {
        return bare(prefix?);
    }
    match parse_offset(b, pos, 6, no_offset) {
        None => bare(prefix?),
        Some((secs, end)) => {
            let z = match prefix {
                None => Zone::Offset(fixed(secs)?),
                Some(p) => prefix_zone(p, secs)?,
            };
            Some((z, end))
        }
    }
}

// ---------------------------------------------------------------------------
// Formatting
// ---------------------------------------------------------------------------

struct FormatCtx {
    local: NaiveDateTime,
    off: i32,
    zone: Zone,
    abbrev: Option<String>,
}

impl FormatCtx {
    fn value(&self, f: Field) -> i64 {
        let l = &self.local;
        let h = i64::from(l.hour());
        match f {
            Field::Year => l.year().into(),
            Field::YearOfEra => {
                let y = i64::from(l.year());
                if y >= 1 { y } else { 1 - y }
            }
            Field::Month => l.month().into(),
            Field::DayOfMonth => l.day().into(),
            Field::DayOfYear => l.ordinal().into(),
            Field::DayOfWeek => l.weekday().number_from_monday().into(),
            Field::HourOfDay => h,
            Field::ClockHourOfDay => {
                if h == 0 {
                    24
                } else {
                    h
                }
            }
            Field::HourOfAmPm => h % 12,
            Field::ClockHourOfAmPm => {
                if h % 12 == 0 {
                    12
                } else {
                    h % 12
                }
            }
            Field::AmPm => h / 12,
            Field::Minute => l.minute().into(),
            Field::Second => l.second().into(),
            Field::Nano => i64::from(l.nanosecond().min(999_999_999)),
        }
    }
}

fn format_offset(out: &mut String, secs: i32, kind: u8, no_offset: &str) {
    let a = secs.unsigned_abs();
    let (h, m, s) = (a / 3600 % 100, a / 60 % 60, a % 60);
    let colon = matches!(kind, 2 | 4 | 6 | 8);
    let start = out.len();
    out.push(if secs < 0 { '-' } else { '+' });
    out.push_str(&format!("{h:02}"));
    let mut output = h;
    if (3..=8).contains(&kind) || (kind >= 1 && m > 0) || (kind >= 5 && s > 0) {
        if colon {
            out.push(':');
        }
        out.push_str(&format!("{m:02}"));
        output += m;
        if kind == 7 || kind == 8 || (kind >= 5 && s > 0) {
            if colon {
                out.push(':');
            }
            out.push_str(&format!("{s:02}"));
            output += s;
        }
    }
    if output == 0 {
        out.truncate(start);
        out.push_str(no_offset);
    }
}

fn format_localized_offset(out: &mut String, secs: i32, full: bool) {
    out.push_str("GMT");
    if secs == 0 {
        return;
    }
    let a = secs.unsigned_abs();
    let (h, m, s) = (a / 3600 % 100, a / 60 % 60, a % 60);
    out.push(if secs < 0 { '-' } else { '+' });
    if full {
        out.push_str(&format!("{h:02}:{m:02}"));
        if s != 0 {
            out.push_str(&format!(":{s:02}"));
        }
    } else {
        out.push_str(&h.to_string());
        if m != 0 || s != 0 {
            out.push_str(&format!(":{m:02}"));
            if s != 0 {
                out.push_str(&format!(":{s:02}"));
            }
        }
    }
}

fn format_items(items: &[Item], ctx: &FormatCtx, out: &mut String) {
    for item in items {
        match item {
            Item::Literal(s) => out.push_str(s),
            Item::Number {
                field, min, sign, ..
            } => {
                let v = ctx.value(*field);
                let digits = v.unsigned_abs().to_string();
                if v < 0 {
                    out.push('-');
                } else if *sign == SignStyle::ExceedsPad && digits.len() > *min {
                    out.push('+');
                }
                for _ in digits.len()..*min {
                    out.push('0');
                }
                out.push_str(&digits);
            }
            Item::Reduced { field } => {
                out.push_str(&format!("{:02}", ctx.value(*field).unsigned_abs() % 100));
            }
            Item::Fraction { width } => {
                let nanos = format!("{:09}", ctx.value(Field::Nano));
                out.push_str(&nanos[..*width]);
            }
            Item::Text { field, style } => {
                let v = ctx.value(*field);
                let name = names(*field, *style)
                    .into_iter()
                    .find(|(_, value)| *value == v)
                    .map_or("", |(n, _)| n);
                out.push_str(name);
            }
            Item::Offset { kind, no_offset } => format_offset(out, ctx.off, *kind, no_offset),
            Item::LocalizedOffset { full } => format_localized_offset(out, ctx.off, *full),
            Item::ZoneId => out.push_str(&ctx.zone.id()),
            Item::ZoneText => match (&ctx.zone, &ctx.abbrev) {
                (Zone::Named(_), Some(a)) => out.push_str(a),
                (Zone::Named(_), None) => format_localized_offset(out, ctx.off, true),
                (z, _) => out.push_str(&z.id()),
            },
            Item::Optional(inner) => format_items(inner, ctx, out),
        }
    }
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> JavaPattern {
        JavaPattern::compile(s).unwrap_or_else(|e| panic!("compile {s:?}: {e}"))
    }
    fn z(s: &str) -> Zone {
        zone(s).unwrap_or_else(|e| panic!("zone {s:?}: {e}"))
    }
    fn today() -> NaiveDate {
        NaiveDate::from_ymd_opt(2025, 10, 13).unwrap()
    }
    fn parse(pat: &str, text: &str, zone_id: &str) -> Result<DateTime<FixedOffset>, ParseError> {
        p(pat).parse(text, z(zone_id), today())
    }
    fn rfc(pat: &str, text: &str, zone_id: &str) -> String {
        parse(pat, text, zone_id)
            .unwrap_or_else(|e| panic!("parse {text:?} with {pat:?}: {e}"))
            .to_rfc3339_opts(chrono::SecondsFormat::AutoSi, false)
    }
    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }
    fn ymd_utc(y: i32, m: u32, d: u32) -> DateTime<Utc> {
        NaiveDate::from_ymd_opt(y, m, d)
            .unwrap()
            .and_hms_opt(0, 0, 0)
            .unwrap()
            .and_utc()
    }
    fn fmt(pat: &str, instant: &str, zone_id: &str) -> String {
        p(pat).format(utc(instant), z(zone_id))
    }
    const OUT: &str = "yyyy-MM-dd'T'HH:mm:ss.SSSXXX";

    // --- Data Prepper's documented examples ---

    #[test]
    fn apache_common_log() {
        assert_eq!(
            rfc(
                "dd/MMM/yyyy:HH:mm:ss Z",
                "10/Oct/2000:13:55:36 -0700",
                "UTC"
            ),
            "2000-10-10T13:55:36-07:00"
        );
        // docs: 15/Mar/2023:14:30:45 -0500 -> 2023-03-15T15:30:45.000-04:00 in America/New_York
        let t = parse(
            "dd/MMM/yyyy:HH:mm:ss Z",
            "15/Mar/2023:14:30:45 -0500",
            "UTC",
        )
        .unwrap();
        assert_eq!(
            p(OUT).format(t.with_timezone(&Utc), z("America/New_York")),
            "2023-03-15T15:30:45.000-04:00"
        );
    }

    #[test]
    fn iso_output_and_z_for_utc() {
        let t = parse(OUT, "2023-03-15T14:30:45.123-05:00", "UTC").unwrap();
        assert_eq!(
            p(OUT).format(t.with_timezone(&Utc), z("America/New_York")),
            "2023-03-15T15:30:45.123-04:00"
        );
        assert_eq!(
            fmt(OUT, "2023-05-01T19:00:00Z", "America/Los_Angeles"),
            "2023-05-01T12:00:00.000-07:00"
        );
        assert_eq!(
            fmt(OUT, "2025-10-13T09:56:23.090Z", "UTC"),
            "2025-10-13T09:56:23.090Z"
        );
        assert_eq!(
            rfc(OUT, "2023-03-15T14:30:45.123Z", "America/New_York"),
            "2023-03-15T14:30:45.123+00:00"
        );
    }

    #[test]
    fn syslog_missing_year_uses_today() {
        // docs: "Mar 15 14:30:45" in America/Los_Angeles -> 2025-03-15T21:30:45.000Z
        let t = parse("MMM dd HH:mm:ss", "Mar 15 14:30:45", "America/Los_Angeles").unwrap();
        assert_eq!(
            p(OUT).format(t.with_timezone(&Utc), z("UTC")),
            "2025-03-15T21:30:45.000Z"
        );
        assert_eq!(
            rfc("MMM  d HH:mm:ss", "Mar  5 09:15:30", "UTC"),
            "2025-03-05T09:15:30+00:00"
        );
        assert_eq!(
            rfc("MMM d HH:mm:ss", "Mar 25 23:45:12", "UTC"),
            "2025-03-25T23:45:12+00:00"
        );
        assert!(parse("MMM dd HH:mm:ss", "Mar  5 09:15:30", "UTC").is_err());
    }

    #[test]
    fn other_documented_patterns() {
        assert_eq!(
            rfc("yyyy-MM-dd HH:mm:ss", "2023-03-15 14:30:45", "UTC"),
            "2023-03-15T14:30:45+00:00"
        );
        assert_eq!(
            rfc(
                "MM/dd/yyyy HH:mm:ss",
                "03/15/2023 14:30:45",
                "America/New_York"
            ),
            "2023-03-15T14:30:45-04:00"
        );
    }

    // --- defaults ---

    #[test]
    fn defaults_fill_date_and_time() {
        assert_eq!(rfc("HH:mm", "07:45", "UTC"), "2025-10-13T07:45:00+00:00");
        assert_eq!(rfc("yyyy", "2020", "UTC"), "2020-10-13T00:00:00+00:00");
        assert_eq!(
            rfc("yyyy-MM", "2020-02", "UTC"),
            "2020-02-13T00:00:00+00:00"
        );
        assert_eq!(rfc("''", "'", "UTC"), "2025-10-13T00:00:00+00:00");
        // SMART resolver clamps the day to the month's end.
        assert_eq!(
            rfc("yyyy-MM-dd", "2023-02-30", "UTC"),
            "2023-02-28T00:00:00+00:00"
        );
        assert!(matches!(
            parse("yyyy-MM-dd", "2023-02-32", "UTC"),
            Err(ParseError::OutOfRange { .. })
        ));
    }

    #[test]
    fn hour_not_defaulted_when_pattern_mentions_a_or_k() {
        // Data Prepper tests the raw pattern string, quoted text included.
        assert!(matches!(
            parse("yyyy-MM-dd 'at'", "2023-01-02 at", "UTC"),
            Err(ParseError::Unresolved(_))
        ));
        assert_eq!(
            rfc("yyyy-MM-dd 'on'", "2023-01-02 on", "UTC"),
            "2023-01-02T00:00:00+00:00"
        );
        // A year letter inside quotes stops the year default.
        assert!(matches!(
            parse("MM-dd 'yes'", "01-02 yes", "UTC"),
            Err(ParseError::Unresolved(_))
        ));
    }

    // --- numbers, widths, adjacency ---

    #[test]
    fn fraction_widths() {
        assert_eq!(
            rfc("HH:mm:ss.S", "10:00:00.5", "UTC"),
            "2025-10-13T10:00:00.500+00:00"
        );
        assert_eq!(
            rfc("HH:mm:ss.SSSSSS", "10:00:00.123456", "UTC"),
            "2025-10-13T10:00:00.123456+00:00"
        );
        assert_eq!(
            rfc("HH:mm:ss.SSSSSSSSS", "10:00:00.123456789", "UTC"),
            "2025-10-13T10:00:00.123456789+00:00"
        );
        assert!(parse("HH:mm:ss.SSS", "10:00:00.12", "UTC").is_err());
        assert!(parse("HH:mm:ss.SSS", "10:00:00.1234", "UTC").is_err());
        let i = "2023-01-02T03:04:05.987654321Z";
        assert_eq!(fmt("ss.S", i, "UTC"), "05.9");
        assert_eq!(fmt("ss.SSS", i, "UTC"), "05.987");
        assert_eq!(fmt("ss.SSSSSSSSS", i, "UTC"), "05.987654321");
        assert_eq!(fmt("n", i, "UTC"), "987654321");
        assert_eq!(
            rfc("HH:mm:ss n", "10:00:00 5000", "UTC"),
            "2025-10-13T10:00:00.000005+00:00"
        );
    }

    #[test]
    fn adjacent_value_parsing() {
        assert_eq!(
            rfc("yyyyMMddHHmmss", "20230102030405", "UTC"),
            "2023-01-02T03:04:05+00:00"
        );
        assert_eq!(
            rfc("yyyyMMddHHmmssSSS", "20230102030405678", "UTC"),
            "2023-01-02T03:04:05.678+00:00"
        );
        assert_eq!(rfc("yyMMdd", "230102", "UTC"), "2023-01-02T00:00:00+00:00");
        assert_eq!(
            rfc("yyyy-M-d H:m:s", "2023-1-2 3:4:5", "UTC"),
            "2023-01-02T03:04:05+00:00"
        );
        assert!(parse("yyyyMMdd", "2023012", "UTC").is_err());
        // yyyy needs '+' beyond four digits, and refuses it within four
        assert!(parse("yyyy-MM-dd", "12023-01-02", "UTC").is_err());
        assert_eq!(
            rfc("yyyy-MM-dd", "+12023-01-02", "UTC"),
            "+12023-01-02T00:00:00+00:00"
        );
        assert!(parse("yyyy-MM-dd", "+2023-01-02", "UTC").is_err());
        assert!(parse("yyyy-MM-dd", "-2023-01-02", "UTC").is_err()); // year-of-era cannot be negative
        assert_eq!(
            rfc("uuuu-MM-dd", "-0044-03-15", "UTC"),
            "-0044-03-15T00:00:00+00:00"
        );
        assert_eq!(
            p("uuuu yyyy u").format(ymd_utc(-44, 3, 15), z("UTC")),
            "-0044 0045 -44"
        );
    }

    #[test]
    fn two_digit_years() {
        assert_eq!(
            rfc("dd.MM.yy", "05.06.99", "UTC"),
            "2099-06-05T00:00:00+00:00"
        );
        assert_eq!(
            rfc("dd.MM.yy", "05.06.07", "UTC"),
            "2007-06-05T00:00:00+00:00"
        );
        assert!(parse("dd.MM.yy", "05.06.2007", "UTC").is_err());
        assert_eq!(fmt("yy", "1999-01-01T00:00:00Z", "UTC"), "99");
        assert_eq!(
            fmt("y yyy yyyy yyyyy", "2023-01-01T00:00:00Z", "UTC"),
            "2023 2023 2023 02023"
        );
        assert_eq!(
            p("yyyy|uuuu|y").format(ymd_utc(12023, 1, 1), z("UTC")),
            "+12023|+12023|12023"
        );
    }

    #[test]
    fn day_of_year_and_day_of_week() {
        assert_eq!(
            fmt("D DDD E EEEE", "2023-02-01T00:00:00Z", "UTC"),
            "32 032 Wed Wednesday"
        );
        // Data Prepper defaults month/day too, so D conflicts unless it is today's.
        assert!(matches!(
            parse("yyyy DDD", "2023 032", "UTC"),
            Err(ParseError::Conflict { .. })
        ));
        assert_eq!(
            rfc("yyyy DDD", "2023 286", "UTC"),
            "2023-10-13T00:00:00+00:00"
        );
        assert_eq!(
            rfc(
                "EEE, dd MMM yyyy HH:mm:ss",
                "Wed, 01 Feb 2023 10:00:00",
                "UTC"
            ),
            "2023-02-01T10:00:00+00:00"
        );
        assert_eq!(
            rfc("EEEE, MMMM d, yyyy", "Wednesday, February 1, 2023", "UTC"),
            "2023-02-01T00:00:00+00:00"
        );
        assert!(matches!(
            parse("EEE, dd MMM yyyy", "Thu, 01 Feb 2023", "UTC"),
            Err(ParseError::Conflict {
                field: "day-of-week"
            })
        ));
        assert_eq!(
            rfc("eee ccc yyyy-MM-dd", "Wed Wed 2023-02-01", "UTC"),
            "2023-02-01T00:00:00+00:00"
        );
    }

    #[test]
    fn month_names_are_case_sensitive() {
        assert!(matches!(
            parse("dd MMM yyyy", "01 oct 2023", "UTC"),
            Err(ParseError::Mismatch { position: 3, .. })
        ));
        assert!(parse("dd MMM yyyy", "01 Okt 2023", "UTC").is_err());
        assert!(parse("dd MMM yyyy", "01 October 2023", "UTC").is_err());
        assert_eq!(
            rfc("dd MMMM yyyy", "01 September 2023", "UTC"),
            "2023-09-01T00:00:00+00:00"
        );
        assert_eq!(
            rfc("dd LLL yyyy", "01 Sep 2023", "UTC"),
            "2023-09-01T00:00:00+00:00"
        );
        assert_eq!(fmt("MMMMM EEEEE", "2023-09-01T00:00:00Z", "UTC"), "S F");
        assert!(parse("MMMMM yyyy", "J 2023", "UTC").is_err()); // ambiguous narrow name
        assert_eq!(
            rfc("MMMMM yyyy", "F 2023", "UTC"),
            "2023-02-13T00:00:00+00:00"
        );
    }

    // --- 12/24-hour clocks ---

    #[test]
    fn twelve_hour_clock() {
        assert_eq!(
            rfc("yyyy-MM-dd hh:mm a", "2023-01-02 12:30 AM", "UTC"),
            "2023-01-02T00:30:00+00:00"
        );
        assert_eq!(
            rfc("yyyy-MM-dd hh:mm a", "2023-01-02 12:30 PM", "UTC"),
            "2023-01-02T12:30:00+00:00"
        );
        assert_eq!(
            rfc("yyyy-MM-dd h:mm a", "2023-01-02 7:05 PM", "UTC"),
            "2023-01-02T19:05:00+00:00"
        );
        assert_eq!(
            rfc("yyyy-MM-dd K:mm a", "2023-01-02 0:05 PM", "UTC"),
            "2023-01-02T12:05:00+00:00"
        );
        assert!(parse("yyyy-MM-dd hh:mm a", "2023-01-02 13:30 PM", "UTC").is_err());
        assert!(parse("yyyy-MM-dd hh:mm a", "2023-01-02 01:30 pm", "UTC").is_err());
        // H with a: cross-checked
        assert_eq!(
            rfc("HH:mm a", "13:00 PM", "UTC"),
            "2025-10-13T13:00:00+00:00"
        );
        assert!(matches!(
            parse("HH:mm a", "13:00 AM", "UTC"),
            Err(ParseError::Conflict { .. })
        ));
        // h without a: the defaulted hour 0 conflicts unless it is 12 (as in Java)
        assert!(matches!(
            parse("hh:mm", "05:00", "UTC"),
            Err(ParseError::Conflict { .. })
        ));
        assert_eq!(rfc("hh:mm", "12:10", "UTC"), "2025-10-13T00:10:00+00:00");
        assert_eq!(
            fmt("h:mm a|hh|K|k|H", "2023-01-02T00:05:00Z", "UTC"),
            "12:05 AM|12|0|24|0"
        );
        assert_eq!(
            fmt("h:mm a|hh|K|k|H", "2023-01-02T15:05:00Z", "UTC"),
            "3:05 PM|03|3|15|15"
        );
    }

    #[test]
    fn clock_hour_k_and_midnight_24() {
        assert_eq!(
            rfc("yyyy-MM-dd kk:mm", "2023-01-02 24:00", "UTC"),
            "2023-01-02T00:00:00+00:00"
        );
        assert_eq!(
            rfc("yyyy-MM-dd kk:mm", "2023-01-02 13:00", "UTC"),
            "2023-01-02T13:00:00+00:00"
        );
        assert_eq!(
            rfc("yyyy-MM-dd HH:mm", "2023-01-02 24:00", "UTC"),
            "2023-01-03T00:00:00+00:00"
        );
        assert!(parse("yyyy-MM-dd HH:mm", "2023-01-02 24:01", "UTC").is_err());
        assert!(parse("yyyy-MM-dd HH:mm", "2023-01-02 23:60", "UTC").is_err());
    }

    // --- zones and offsets ---

    #[test]
    fn offsets_format() {
        let i = "2023-01-02T03:04:05Z";
        assert_eq!(fmt("X|XX|XXX|XXXX|XXXXX", i, "UTC"), "Z|Z|Z|Z|Z");
        assert_eq!(
            fmt("x|xx|xxx|xxxx|xxxxx", i, "UTC"),
            "+00|+0000|+00:00|+0000|+00:00"
        );
        assert_eq!(fmt("Z|ZZZZ|ZZZZZ|O|OOOO", i, "UTC"), "+0000|GMT|Z|GMT|GMT");
        assert_eq!(
            fmt("X|XX|XXX|x|Z|ZZZZ|ZZZZZ|O|OOOO", i, "Asia/Kolkata"),
            "+0530|+0530|+05:30|+0530|+0530|GMT+05:30|+05:30|GMT+5:30|GMT+05:30"
        );
        assert_eq!(
            fmt("X|XX|XXX|Z|ZZZZ|O", i, "-08:00"),
            "-08|-0800|-08:00|-0800|GMT-08:00|GMT-8"
        );
    }

    #[test]
    fn offsets_parse() {
        let base = "yyyy-MM-dd HH:mm ";
        let cases = [
            ("X", "+05", "+05:00"),
            ("X", "+0530", "+05:30"),
            ("X", "Z", "+00:00"),
            ("XX", "-0800", "-08:00"),
            ("XXX", "-08:00", "-08:00"),
            ("XXXXX", "+01:02", "+01:02"),
            ("x", "+00", "+00:00"),
            ("xxx", "+00:00", "+00:00"),
            ("Z", "+0000", "+00:00"),
            ("Z", "-0700", "-07:00"),
            ("ZZZZ", "GMT+08:00", "+08:00"),
            ("ZZZZ", "GMT", "+00:00"),
            ("ZZZZZ", "Z", "+00:00"),
            ("O", "GMT+8", "+08:00"),
            ("O", "GMT-5:30", "-05:30"),
        ];
        for (letters, text, want) in cases {
            let got = rfc(
                &format!("{base}{letters}"),
                &format!("2023-01-02 03:04 {text}"),
                "America/New_York",
            );
            assert_eq!(
                got,
                format!("2023-01-02T03:04:00{want}"),
                "{letters} {text}"
            );
        }
        let t = parse("HH:mm XXXXX", "03:04 -01:02:03", "UTC").unwrap();
        assert_eq!(t.offset().local_minus_utc(), -3723);
        for (letters, text) in [
            ("XXX", "+0800"),
            ("XX", "+08:00"),
            ("Z", "Z"),
            ("X", "+24"),
            ("x", "Z"),
            ("XXX", "+19:00"),
        ] {
            assert!(
                parse(
                    &format!("{base}{letters}"),
                    &format!("2023-01-02 03:04 {text}"),
                    "UTC"
                )
                .is_err(),
                "{letters} {text}"
            );
        }
    }

    #[test]
    fn zone_ids() {
        assert_eq!(z("America/New_York"), Zone::Named(Tz::America__New_York));
        assert_eq!(z("UTC"), Zone::Named(Tz::UTC));
        assert_eq!(z("GMT"), Zone::Named(Tz::GMT));
        assert_eq!(z("UTC+0"), Zone::Named(Tz::UTC));
        assert_eq!(z("Z").id(), "Z");
        assert_eq!(z("+05:30").id(), "+05:30");
        assert_eq!(z("+5").id(), "+05:00");
        assert_eq!(z("-0830").id(), "-08:30");
        assert_eq!(z("UTC+2").id(), "UTC+02:00");
        assert_eq!(z("GMT-08:00").id(), "GMT-08:00");
        assert_eq!(z("UT").id(), "UT");
        assert_eq!(z("GMT0").id(), "GMT0");
        for bad in [
            "",
            "america/new_york",
            "Mars/Base",
            "+19:00",
            "+5:30",
            "UTC+",
            "UTC+2x",
            "PST",
            "X",
            "+",
            "Europe/Ber lin",
            "é",
        ] {
            assert!(
                matches!(zone(bad), Err(PatternError::InvalidZone(_))),
                "{bad:?}"
            );
        }
        assert!("Europe/Paris".parse::<Zone>().is_ok());
    }

    #[test]
    fn zone_in_text_wins() {
        assert_eq!(
            rfc("yyyy-MM-dd HH:mm VV", "2023-01-02 03:04 Asia/Tokyo", "UTC"),
            "2023-01-02T03:04:00+09:00"
        );
        assert_eq!(
            rfc("yyyy-MM-dd HH:mm VV", "2023-01-02 03:04 UTC+02:00", "UTC"),
            "2023-01-02T03:04:00+02:00"
        );
        assert_eq!(
            rfc("yyyy-MM-dd HH:mm VV", "2023-01-02 03:04 -03:00", "UTC"),
            "2023-01-02T03:04:00-03:00"
        );
        assert_eq!(
            rfc("yyyy-MM-dd HH:mm VV", "2023-01-02 03:04 Z", "Asia/Tokyo"),
            "2023-01-02T03:04:00+00:00"
        );
        assert_eq!(
            rfc("yyyy-MM-dd HH:mm z", "2023-01-02 03:04 PST", "UTC"),
            "2023-01-02T03:04:00-08:00"
        );
        assert_eq!(
            rfc("yyyy-MM-dd HH:mm z", "2023-07-02 03:04 PDT", "UTC"),
            "2023-07-02T03:04:00-07:00"
        );
        assert_eq!(
            rfc("yyyy-MM-dd HH:mm z", "2023-01-02 03:04 EST", "UTC"),
            "2023-01-02T03:04:00-05:00"
        );
        assert_eq!(
            rfc("yyyy-MM-dd HH:mm z", "2023-01-02 03:04 UTC", "Asia/Tokyo"),
            "2023-01-02T03:04:00+00:00"
        );
        assert_eq!(
            rfc("yyyy-MM-dd HH:mm z", "2023-01-02 03:04 GMT", "Asia/Tokyo"),
            "2023-01-02T03:04:00+00:00"
        );
        assert_eq!(
            rfc("yyyy-MM-dd HH:mm z", "2023-01-02 03:04 Z", "Asia/Tokyo"),
            "2023-01-02T03:04:00+00:00"
        );
        assert_eq!(
            rfc("yyyy-MM-dd HH:mm z", "2023-01-02 03:04 Europe/Paris", "UTC"),
            "2023-01-02T03:04:00+01:00"
        );
        // Offset beats zone.
        assert_eq!(
            rfc(
                "yyyy-MM-dd HH:mm VV XXX",
                "2023-01-02 03:04 Asia/Tokyo +01:00",
                "UTC"
            ),
            "2023-01-02T03:04:00+01:00"
        );
        assert!(
            parse(
                "yyyy-MM-dd HH:mm VV",
                "2023-01-02 03:04 Nowhere/Land",
                "UTC"
            )
            .is_err()
        );
    }

    #[test]
    fn zone_names_format() {
        let w = "2023-01-02T12:00:00Z";
        let s = "2023-07-02T12:00:00Z";
        assert_eq!(
            fmt("z|VV", w, "America/Los_Angeles"),
            "PST|America/Los_Angeles"
        );
        assert_eq!(fmt("zzz", s, "America/Los_Angeles"), "PDT");
        assert_eq!(fmt("z|VV", w, "UTC"), "UTC|UTC");
        assert_eq!(fmt("z|VV", w, "Z"), "Z|Z");
        assert_eq!(fmt("z|VV", w, "+05:30"), "+05:30|+05:30");
        assert_eq!(fmt("z|VV", w, "GMT-08:00"), "GMT-08:00|GMT-08:00");
    }

    #[test]
    fn dst_gap_and_overlap_like_java() {
        // 02:30 does not exist on 2023-03-12 in New York: moved to 03:30 EDT.
        assert_eq!(
            rfc("yyyy-MM-dd HH:mm", "2023-03-12 02:30", "America/New_York"),
            "2023-03-12T03:30:00-04:00"
        );
        // 01:30 happens twice on 2023-11-05: the earlier offset (EDT) is used.
        assert_eq!(
            rfc("yyyy-MM-dd HH:mm", "2023-11-05 01:30", "America/New_York"),
            "2023-11-05T01:30:00-04:00"
        );
    }

    // --- optional sections and literals ---

    #[test]
    fn optional_sections() {
        let pat = "yyyy-MM-dd['T'HH:mm[:ss][.SSS]][XXX]";
        assert_eq!(rfc(pat, "2023-01-02", "UTC"), "2023-01-02T00:00:00+00:00");
        assert_eq!(
            rfc(pat, "2023-01-02T03:04", "UTC"),
            "2023-01-02T03:04:00+00:00"
        );
        assert_eq!(
            rfc(pat, "2023-01-02T03:04:05", "UTC"),
            "2023-01-02T03:04:05+00:00"
        );
        assert_eq!(
            rfc(pat, "2023-01-02T03:04:05.678+01:00", "UTC"),
            "2023-01-02T03:04:05.678+01:00"
        );
        assert_eq!(
            rfc(pat, "2023-01-02T03:04.678Z", "Asia/Tokyo"),
            "2023-01-02T03:04:00.678+00:00"
        );
        assert!(parse(pat, "2023-01-02T03", "UTC").is_err()); // optional fails, 'T03' is left
        assert_eq!(
            fmt(pat, "2023-01-02T03:04:05.678Z", "UTC"),
            "2023-01-02T03:04:05.678Z"
        );
        // unclosed '[' is closed at the end, like Java
        assert_eq!(
            rfc("yyyy-MM-dd[ HH:mm", "2023-01-02", "UTC"),
            "2023-01-02T00:00:00+00:00"
        );
        assert_eq!(
            parse("yyyy-MM-dd[ HH:mm'x']", "2023-01-02 05:06", "UTC"),
            Err(ParseError::TrailingText { position: 10 })
        );
        // fields from a failed optional section are discarded (else day 05 would conflict with 02)
        assert_eq!(
            rfc("yyyy-MM-dd[ dd'h'][ HH:mm]", "2023-01-02 05:06", "UTC"),
            "2023-01-02T05:06:00+00:00"
        );
    }

    #[test]
    fn quoting_and_literals() {
        assert_eq!(
            fmt(
                "yyyy-MM-dd'T'HH 'o''clock' ''x''",
                "2023-01-02T03:04:05Z",
                "UTC"
            ),
            "2023-01-02T03 o'clock '+00'"
        );
        assert_eq!(
            rfc("'The' dd 'of' MMMM, yyyy", "The 05 of March, 2023", "UTC"),
            "2023-03-05T00:00:00+00:00"
        );
        // 'Day' contains an `a`, so Data Prepper does not default the hour: no time, no match.
        assert!(matches!(
            parse("'Day' dd 'of' MMMM, yyyy", "Day 05 of March, 2023", "UTC"),
            Err(ParseError::Unresolved(_))
        ));
        assert_eq!(
            fmt("HH:mm é ü → ½", "2023-01-02T03:04:05Z", "UTC"),
            "03:04 é ü → ½"
        );
        assert_eq!(
            rfc("HH:mm é ü", "03:04 é ü", "UTC"),
            "2025-10-13T03:04:00+00:00"
        );
    }

    #[test]
    fn round_trips() {
        let pats = [
            OUT,
            "yyyy-MM-dd'T'HH:mm:ss.SSSSSSSSSxxx",
            "dd/MMM/yyyy:HH:mm:ss Z",
            "EEE, dd MMM yyyy HH:mm:ss ZZZZ",
            "EEEE MMMM d uuuu h:mm:ss.SSS a XXXXX",
            "yyyyMMddHHmmssSSSX",
            "yyyy-MM-dd HH:mm:ss VV",
            "yyyy-MM-dd'T'HH:mm:ss.nnnnnnnnn OOOO",
            "yyyy DDD MM dd kk:mm:ss.SSS O",
            "yyyy-MM-dd HH:mm:ss z",
        ];
        let zones = [
            "UTC",
            "America/New_York",
            "Asia/Kolkata",
            "+05:45",
            "Australia/Lord_Howe",
            "UTC-03:30",
            "America/Los_Angeles",
        ];
        let mut rng = Rng(7);
        for _ in 0..300 {
            let secs = rng.range(-2_000_000_000, 4_000_000_000);
            let nanos = rng.range(0, 1_000_000_000) as u32;
            let instant = DateTime::from_timestamp(secs, nanos).unwrap();
            for pat in pats {
                for zid in zones {
                    let jp = p(pat);
                    let zz = z(zid);
                    let text = jp.format(instant, zz);
                    // `z` prints names it cannot read back (IST, AEST, EWT), and `UTC-03:30` reads as `UTC`
                    if pat.ends_with(" z")
                        && (instant.year() < 1970
                            || !["UTC", "America/New_York", "America/Los_Angeles", "+05:45"]
                                .contains(&zid))
                    {
                        continue;
                    }
                    let back = jp
                        .parse(&text, zz, today())
                        .unwrap_or_else(|e| panic!("{pat} {zid} {text}: {e}"));
                    let prec = if pat.contains("SSSSSSSSS") || pat.contains('n') {
                        1
                    } else if pat.contains("SSS") {
                        1_000_000
                    } else {
                        1_000_000_000
                    };
                    let want = instant.timestamp_nanos_opt().unwrap().div_euclid(prec);
                    let got = back.timestamp_nanos_opt().unwrap().div_euclid(prec);
                    // `z` names are ambiguous in the overlap hour and for zones without abbreviations
                    if pat.ends_with(" z") {
                        continue;
                    }
                    assert_eq!(got, want, "{pat} {zid} {text}");
                }
            }
        }
    }

    // --- pattern errors ---

    #[test]
    fn pattern_errors() {
        use PatternError as E;
        let e = |s: &str| JavaPattern::compile(s).unwrap_err();
        assert_eq!(e("yyyy-MM-dd'T"), E::UnclosedQuote { position: 10 });
        assert_eq!(e("yyyy-MM-dd 'x"), E::UnclosedQuote { position: 11 });
        assert_eq!(
            e("HH:mm:ss t"),
            E::UnknownLetter {
                letter: 't',
                position: 9
            }
        );
        assert_eq!(
            e("yyyy-MM-ddTHH"),
            E::UnknownLetter {
                letter: 'T',
                position: 10
            }
        );
        assert_eq!(
            e("ddd"),
            E::BadLetterCount {
                letter: 'd',
                count: 3,
                position: 0
            }
        );
        assert_eq!(
            e("HH:mm aa"),
            E::BadLetterCount {
                letter: 'a',
                count: 2,
                position: 6
            }
        );
        assert_eq!(
            e("V"),
            E::BadLetterCount {
                letter: 'V',
                count: 1,
                position: 0
            }
        );
        assert_eq!(
            e("SSSSSSSSSS"),
            E::BadLetterCount {
                letter: 'S',
                count: 10,
                position: 0
            }
        );
        assert_eq!(
            e("EEEEEE"),
            E::BadLetterCount {
                letter: 'E',
                count: 6,
                position: 0
            }
        );
        assert_eq!(
            e("XXXXXX"),
            E::BadLetterCount {
                letter: 'X',
                count: 6,
                position: 0
            }
        );
        assert_eq!(
            e("OO"),
            E::BadLetterCount {
                letter: 'O',
                count: 2,
                position: 0
            }
        );
        assert_eq!(
            e("cc"),
            E::BadLetterCount {
                letter: 'c',
                count: 2,
                position: 0
            }
        );
        assert_eq!(
            e("y".repeat(20).as_str()),
            E::BadLetterCount {
                letter: 'y',
                count: 20,
                position: 0
            }
        );
        assert!(matches!(
            e("YYYY-ww"),
            E::UnsupportedLetter {
                letter: 'Y',
                position: 0,
                ..
            }
        ));
        assert!(matches!(
            e("yyyy QQ"),
            E::UnsupportedLetter {
                letter: 'Q',
                position: 5,
                ..
            }
        ));
        assert!(matches!(
            e("G yyyy"),
            E::UnsupportedLetter { letter: 'G', .. }
        ));
        assert!(matches!(
            e("zzzz"),
            E::UnsupportedLetter { letter: 'z', .. }
        ));
        assert!(matches!(e("e"), E::UnsupportedLetter { letter: 'e', .. }));
        assert_eq!(e("yyyy]"), E::UnmatchedBracket { position: 4 });
        assert_eq!(
            e("yyyy{"),
            E::ReservedChar {
                ch: '{',
                position: 4
            }
        );
        assert_eq!(
            e("é#"),
            E::ReservedChar {
                ch: '#',
                position: 1
            }
        );
        assert!(JavaPattern::compile("").is_ok());
        assert_eq!(
            e("HH:mm q").to_string(),
            "unsupported pattern letter `q` at position 6: quarter-of-year is not supported"
        );
        assert_eq!(
            e("HH:mm:ss t").to_string(),
            "unknown pattern letter `t` at position 9"
        );
    }

    // --- parse errors ---

    #[test]
    fn parse_errors() {
        let pat = "dd/MMM/yyyy:HH:mm:ss Z";
        assert_eq!(
            parse(pat, "10/Oct/2000:13:55:36 -0700 extra", "UTC"),
            Err(ParseError::TrailingText { position: 26 })
        );
        assert!(matches!(
            parse(pat, "10/Foo/2000:13:55:36 -0700", "UTC"),
            Err(ParseError::Mismatch { position: 3, .. })
        ));
        assert!(matches!(
            parse(pat, "10/Oct/2000:13:55:36", "UTC"),
            Err(ParseError::Mismatch { position: 20, .. })
        ));
        assert!(matches!(
            parse(pat, "", "UTC"),
            Err(ParseError::Mismatch { position: 0, .. })
        ));
        assert!(matches!(
            parse("yyyy-MM-dd", "2023-13-01", "UTC"),
            Err(ParseError::OutOfRange {
                field: "month-of-year",
                value: 13
            })
        ));
        assert!(matches!(
            parse("yyyy-MM-dd HH", "2023-01-01 25", "UTC"),
            Err(ParseError::OutOfRange { .. })
        ));
        assert!(parse("yyyy-MM-dd", "2023-01-0x", "UTC").is_err());
        assert!(parse("yyyy-MM-dd", "２０２３-01-01", "UTC").is_err()); // non-ASCII digits
        assert!(matches!(
            parse("yyyy-MM-dd yyyy", "2023-01-01 2024", "UTC"),
            Err(ParseError::Conflict { .. })
        ));
        assert!(matches!(
            parse("yyyy-MM-dd uuuu", "2023-01-01 2024", "UTC"),
            Err(ParseError::Conflict { .. })
        ));
        assert!(matches!(
            parse("yyyyy-MM-dd", "999999-01-01", "UTC"),
            Err(ParseError::Mismatch { .. })
        ));
        assert!(matches!(
            parse("uuuu-MM-dd", "+999999999-01-01", "UTC"),
            Err(ParseError::OutOfRange { .. })
        ));
        assert_eq!(
            rfc("uuuu-MM-dd", "+262142-12-31", "UTC"),
            "+262142-12-31T00:00:00+00:00"
        );
        assert_eq!(
            rfc("uuuu-MM-dd", "2024-02-31", "UTC"),
            "2024-02-29T00:00:00+00:00"
        );
        assert_eq!(
            ParseError::TrailingText { position: 3 }.to_string(),
            "unparsed text found at byte 3"
        );
    }

    // --- locale ---

    #[test]
    fn locales() {
        for ok in [
            "ROOT",
            "root",
            "en",
            "EN",
            "en-US",
            "en_US",
            "en_GB",
            "en-US-POSIX",
            "",
        ] {
            assert_eq!(check_locale(ok), Ok(()), "{ok}");
        }
        assert_eq!(
            check_locale("fr-FR"),
            Err(PatternError::UnsupportedLocale("fr-FR".into()))
        );
        assert!(check_locale("de").is_err());
        assert!(matches!(
            check_locale("en-US-x-y"),
            Err(PatternError::InvalidLocale(_))
        ));
        assert!(matches!(
            check_locale("en-USA"),
            Err(PatternError::InvalidLocale(_))
        ));
        assert!(matches!(
            check_locale("e1"),
            Err(PatternError::InvalidLocale(_))
        ));
    }

    // --- no panics on arbitrary input ---

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn range(&mut self, lo: i64, hi: i64) -> i64 {
            lo + (self.next() % (hi - lo) as u64) as i64
        }
        fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
            &xs[(self.next() % xs.len() as u64) as usize]
        }
    }

    #[test]
    fn fuzz_no_panics() {
        let pat_chars: Vec<char> = "yuMLdDHkKhmsSnaEecPzVZXxOGQ'[]{}#-:/. T0é9pqwY"
            .chars()
            .collect();
        let text_chars: Vec<char> =
            "0123456789+-:/.TZ ZAMPMJanOctMonGMTUTCESTAmerica/New_York[]'é²٣"
                .chars()
                .collect();
        let fixed_pats = [
            OUT,
            "yyyyMMddHHmmssSSS",
            "dd/MMM/yyyy:HH:mm:ss Z",
            "[yyyy][MM][dd][HH][mm][ss][SSS][XXX][VV][z][O]",
            "y M d H m s n D",
            "EEEE MMMMM hh a k K ZZZZ",
            "VV z",
            "uuuu-MM-dd OOOO ZZZZZ xxxxx",
        ];
        let zones = [
            z("UTC"),
            z("America/New_York"),
            z("+14:00"),
            z("-18:00"),
            z("UT"),
        ];
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for i in 0..20_000 {
            let plen = rng.range(0, 16) as usize;
            let pat: String = (0..plen).map(|_| *rng.pick(&pat_chars)).collect();
            let tlen = rng.range(0, 30) as usize;
            let mut text: String = (0..tlen).map(|_| *rng.pick(&text_chars)).collect();
            if i % 3 == 0 {
                // a near-valid text: a formatted date with one character changed
                let fp = p(fixed_pats[(rng.next() % fixed_pats.len() as u64) as usize]);
                let secs = rng.range(i64::from(i32::MIN) * 30, i64::from(i32::MAX) * 30);
                let inst = DateTime::from_timestamp(secs, 0).unwrap();
                text = fp.format(inst, *rng.pick(&zones));
                if !text.is_empty() {
                    let cut = rng.range(0, text.chars().count() as i64) as usize;
                    let c = *rng.pick(&text_chars);
                    text = text
                        .chars()
                        .enumerate()
                        .map(|(k, ch)| if k == cut { c } else { ch })
                        .collect();
                }
            }
            let zn = *rng.pick(&zones);
            let day =
                NaiveDate::from_ymd_opt(rng.range(-5000, 5000) as i32, 2, 29).unwrap_or(today());
            if let Ok(jp) = JavaPattern::compile(&pat) {
                let _ = jp.parse(&text, zn, day);
                let inst = DateTime::from_timestamp(
                    rng.range(-8_000_000_000_000, 8_000_000_000_000),
                    999_999_999,
                )
                .unwrap();
                let _ = jp.format(inst, zn);
            }
            let fp = p(fixed_pats[(rng.next() % fixed_pats.len() as u64) as usize]);
            let _ = fp.parse(&text, zn, day);
            let _ = zone(&text);
            let _ = check_locale(&text);
        }
        // extremes
        for jp in fixed_pats.iter().map(|s| p(s)) {
            for zn in zones {
                let _ = jp.format(DateTime::<Utc>::MIN_UTC, zn);
                let _ = jp.format(DateTime::<Utc>::MAX_UTC, zn);
                let _ = jp.parse("+262143-12-31T23:59:59.999+14:00", zn, NaiveDate::MAX);
                let _ = jp.parse("9999999999999999999999999", zn, NaiveDate::MIN);
            }
        }
        let big = p("uuuu-MM-dd HH:mm");
        let _ = big.parse("+262143-12-31 23:59", z("-18:00"), today());
        assert!(
            big.parse("-999999999-01-01 00:00", z("UTC"), today())
                .is_err()
        );
        assert!(
            p("HH:mm n")
                .parse("01:00 9223372036854775807999", z("UTC"), today())
                .is_err()
        );
    }
}
