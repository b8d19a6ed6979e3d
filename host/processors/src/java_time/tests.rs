//! `java_time`'s shared tests: the helpers the parts' tests use too, Data Prepper's
//! documented examples, the tests that go through more than one part (parse and format),
//! round trips and the no-panic fuzz. A part's own tests are in its file.

use chrono::{DateTime, Datelike, FixedOffset, NaiveDate, Utc};

use super::*;

fn p(s: &str) -> JavaPattern {
    JavaPattern::compile(s).unwrap_or_else(|e| panic!("compile {s:?}: {e}"))
}
pub(super) fn z(s: &str) -> Zone {
    zone(s).unwrap_or_else(|e| panic!("zone {s:?}: {e}"))
}
fn today() -> NaiveDate {
    NaiveDate::from_ymd_opt(2025, 10, 13).unwrap()
}
pub(super) fn parse(
    pat: &str,
    text: &str,
    zone_id: &str,
) -> Result<DateTime<FixedOffset>, ParseError> {
    p(pat).parse(text, z(zone_id), today())
}
pub(super) fn rfc(pat: &str, text: &str, zone_id: &str) -> String {
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
pub(super) fn fmt(pat: &str, instant: &str, zone_id: &str) -> String {
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
    let text_chars: Vec<char> = "0123456789+-:/.TZ ZAMPMJanOctMonGMTUTCESTAmerica/New_York[]'é²٣"
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
        let day = NaiveDate::from_ymd_opt(rng.range(-5000, 5000) as i32, 2, 29).unwrap_or(today());
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
