//! Parsing text: [`JavaPattern::parse`] reads the text item by item into [`Parsed`] fields
//! (Java's strict printer-parsers: numbers with adjacent value parsing, names, offsets,
//! zones), then has them resolved into a date-time.

use chrono::{DateTime, FixedOffset, NaiveDate};
use chrono_tz::Tz;

use super::pattern::{Field, Item, N_FIELDS, SignStyle, TextStyle};
use super::zone::{fixed, prefix_zone};
use super::{JavaPattern, ParseError, Zone, ZonePrefix};

impl JavaPattern {
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
}

#[derive(Debug, Clone, Default)]
pub(super) struct Parsed {
    fields: [Option<i64>; N_FIELDS],
    pub(super) offset: Option<i32>,
    pub(super) zone: Option<Zone>,
}

impl Parsed {
    pub(super) fn get(&self, f: Field) -> Option<i64> {
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
    pub(super) fn fill(&mut self, f: Field, v: i64) {
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

pub(super) fn two_digits(b: &[u8], i: usize) -> Option<i32> {
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
pub(super) fn names(field: Field, style: TextStyle) -> Vec<(&'static str, i64)> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::java_time::tests::{parse, rfc};

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
}
