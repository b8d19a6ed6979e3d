//! Formatting: [`JavaPattern::format`] prints an instant in a zone item by item (English
//! names, optional sections printed).

use chrono::{DateTime, Datelike, Duration, NaiveDateTime, TimeZone, Timelike, Utc};
use chrono_tz::OffsetName;

use super::parse::names;
use super::pattern::{Field, Item, SignStyle};
use super::{JavaPattern, Zone};

impl JavaPattern {
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
}

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

#[cfg(test)]
mod tests {
    use crate::java_time::tests::fmt;

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
}
