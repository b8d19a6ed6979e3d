//! Zones: [`Zone`] (Java's `ZoneId`: a region, an offset, or an offset with a `UTC`/`GMT`/`UT`
//! prefix), [`zone()`] reading a zone id as `ZoneId.of` does, and offset ids (`+05:30`).

use std::fmt;
use std::str::FromStr;

use chrono::{
    DateTime, Duration, FixedOffset, LocalResult, NaiveDate, NaiveDateTime, Offset, TimeZone, Utc,
};
use chrono_tz::Tz;

// Named only by the doc of `Zone::date_of`.
#[cfg(doc)]
use super::JavaPattern;
use super::PatternError;
use super::parse::two_digits;

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

pub(super) fn fixed(secs: i32) -> Option<FixedOffset> {
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

pub(super) fn prefix_zone(p: ZonePrefix, secs: i32) -> Option<Zone> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::java_time::tests::{rfc, z};

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
}
