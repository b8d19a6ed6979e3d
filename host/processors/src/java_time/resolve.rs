//! Resolving parsed fields into a date-time, as Java's SMART resolver does, after Data
//! Prepper's defaults (`parseDefaulting`) fill the fields the text did not have.

use chrono::{DateTime, Datelike, FixedOffset, NaiveDate, NaiveTime, TimeZone, Timelike};

use super::parse::Parsed;
use super::pattern::Field;
use super::zone::fixed;
use super::{JavaPattern, ParseError, Zone};

impl JavaPattern {
    pub(super) fn resolve(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::java_time::tests::{parse, rfc};

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
}
