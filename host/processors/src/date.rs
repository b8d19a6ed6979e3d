//! `date`, as Data Prepper's `DateProcessor`: the text (or number) at the `match` key is read
//! with the first of its patterns that fits (Java `DateTimeFormatter` patterns, `java_time`),
//! in `source_timezone` unless the text has its own zone; fields the pattern lacks come from
//! today (the year, when the pattern has no `y`); or the event's receive time is taken
//! (`from_time_received`). The instant goes to `destination` in `output_format`, in
//! `destination_timezone`.
//!
//! Epoch patterns read numbers as Data Prepper does, by their digits: up to 10 are seconds,
//! 11–13 milliseconds (`epoch_milli` needed), 14–16 microseconds, more nanoseconds. A date
//! that fits no pattern changes nothing (Data Prepper counts it, tags nothing).

use chrono::{DateTime, TimeZone, Utc};
use serde_json::Value;
use sluice_config::processor::date::{self as config, EPOCHS};
use sluice_event::{Event, Expression, Key};

use crate::java_time::{JavaPattern, Zone, check_locale, zone};
use crate::{Apply, BuildError, BuildProcessor, Failure, Fate};

/// `date`, built: the config, with its patterns compiled and zones read.
pub struct Date {
    config: config::Date,
    source: Source,
    output: Output,
    source_zone: Zone,
    destination_zone: Zone,
}

/// Where the date comes from: the event's receive time, or the `match` key read with its
/// patterns.
enum Source {
    Received,
    Key {
        key: Key,
        patterns: Vec<JavaPattern>,
        epoch: Option<Epoch>,
    },
}

/// How the date is written: a Java pattern, or an epoch unit's digits.
enum Output {
    Pattern(JavaPattern),
    Epoch(Epoch),
}

/// An epoch unit, by how many of it make a second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Epoch {
    Second,
    Milli,
    Micro,
    Nano,
}

impl Epoch {
    fn named(name: &str) -> Option<Self> {
        Some(match name {
            "epoch_second" => Epoch::Second,
            "epoch_milli" => Epoch::Milli,
            "epoch_micro" => Epoch::Micro,
            "epoch_nano" => Epoch::Nano,
            _ => return None,
        })
    }

    fn per_second(self) -> i64 {
        match self {
            Epoch::Second => 1,
            Epoch::Milli => 1_000,
            Epoch::Micro => 1_000_000,
            Epoch::Nano => 1_000_000_000,
        }
    }
}

impl BuildProcessor for config::Date {
    type Processor = Date;

    fn when(&self) -> Option<&Expression> {
        self.date_when.as_ref()
    }

    fn build(&self) -> Result<Date, BuildError> {
        let error = |key: &str, message: String| BuildError {
            key: key.to_owned(),
            message,
        };
        let zone_of = |key: &str, id: &Option<String>| match id {
            None => Ok(Zone::from(chrono_tz::Tz::UTC)),
            Some(id) => zone(id).map_err(|e| error(key, e.to_string())),
        };
        if let Some(locale) = &self.locale {
            check_locale(locale).map_err(|e| error("locale", e.to_string()))?;
        }
        let output = match Epoch::named(&self.output_format) {
            Some(epoch) => Output::Epoch(epoch),
            None => {
                Output::Pattern(JavaPattern::compile(&self.output_format).map_err(|e| {
                    error("output_format", format!("`{}`: {e}", self.output_format))
                })?)
            }
        };
        let source = match self.r#match.first() {
            None => Source::Received,
            Some(m) => {
                let mut patterns = Vec::new();
                let mut epoch = None;
                for p in &m.patterns {
                    match Epoch::named(p) {
                        Some(e) => epoch = Some(e),
                        None if p.starts_with("epoch_") => {
                            return Err(error(
                                "match",
                                format!("`{p}` is not one of {}", EPOCHS.join(", ")),
                            ));
                        }
                        None => patterns.push(
                            JavaPattern::compile(p)
                                .map_err(|e| error("match", format!("pattern `{p}`: {e}")))?,
                        ),
                    }
                }
                Source::Key {
                    key: m.key.clone(),
                    patterns,
                    epoch,
                }
            }
        };
        Ok(Date {
            config: self.clone(),
            source,
            output,
            source_zone: zone_of("source_timezone", &self.source_timezone)?,
            destination_zone: zone_of("destination_timezone", &self.destination_timezone)?,
        })
    }
}

impl Apply for Date {
    fn apply(&self, event: &mut Event, _: &'static str) -> Result<Fate, Failure> {
        let destination = &self.config.destination;
        let instant = match &self.source {
            Source::Received => {
                let ms = i64::try_from(event.metadata.time_received_ms).unwrap_or(i64::MAX);
                Utc.timestamp_millis_opt(ms).single()
            }
            Source::Key {
                key,
                patterns,
                epoch,
            } => {
                let text = match event.get(key) {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Number(n)) => n.to_string(),
                    _ => return Ok(Fate::Keep),
                };
                self.read(&text, patterns, *epoch)
            }
        };
        let instant = instant.ok_or_else(|| format!("no pattern matched for `{destination}`"))?;
        // Data Prepper sets it for a date read from `match` only, not `from_time_received`.
        if self.config.origination_timestamp_to_metadata
            && matches!(self.source, Source::Key { .. })
        {
            event.metadata.external_origination_time_ms = Some(instant.timestamp_millis());
        }
        let text = match &self.output {
            Output::Pattern(p) => p.format(instant, self.destination_zone),
            Output::Epoch(e) => epoch_text(instant, *e),
        };
        event
            .put(destination, Value::String(text))
            .map_err(|e| format!("`{destination}` not written: {e}"))?;
        Ok(Fate::Keep)
    }
}

impl Date {
    fn read(
        &self,
        text: &str,
        patterns: &[JavaPattern],
        epoch: Option<Epoch>,
    ) -> Option<DateTime<Utc>> {
        if let (Some(configured), Ok(n)) = (epoch, text.parse::<i64>()) {
            let digits = text.len();
            let needed = match digits {
                0..=10 => Epoch::Second,
                11..=13 => Epoch::Milli,
                14..=16 => Epoch::Micro,
                _ => Epoch::Nano,
            };
            // Up to 10 digits are seconds whatever epoch pattern is given (as Data Prepper).
            if needed != Epoch::Second && needed != configured {
                return None;
            }
            let per = needed.per_second();
            let nanos = n.rem_euclid(per) * (1_000_000_000 / per);
            return Utc
                .timestamp_opt(n.div_euclid(per), u32::try_from(nanos).ok()?)
                .single();
        }
        let today = self.source_zone.date_of(Utc::now());
        patterns
            .iter()
            .find_map(|p| p.parse(text, self.source_zone, today).ok())
            .map(|t| t.with_timezone(&Utc))
    }
}

/// `instant` as digits of `unit` since the epoch.
fn epoch_text(instant: DateTime<Utc>, unit: Epoch) -> String {
    let nanos = i128::from(instant.timestamp()) * 1_000_000_000
        + i128::from(instant.timestamp_subsec_nanos());
    (nanos / i128::from(1_000_000_000 / unit.per_second())).to_string()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::testing::{processor, run, run_event};

    #[test]
    fn reads_a_pattern_and_writes_the_default_format() {
        let p =
            processor("date:\n  match:\n    - key: t\n      patterns: ['dd/MMM/yyyy:HH:mm:ss Z']");
        let out = run(&*p, json!({"t": "10/Oct/2000:13:55:36 -0700"})).unwrap();
        assert_eq!(out["@timestamp"], "2000-10-10T20:55:36.000Z");
    }

    #[test]
    fn zones_destinations_and_the_second_pattern() {
        let p = processor(
            "date:\n  match:\n    - key: t\n      patterns: ['yyyy-MM-dd', 'yyyy-MM-dd HH:mm']\n  source_timezone: America/New_York\n  destination_timezone: '+01:00'\n  destination: /out/at\n  output_format: 'yyyy-MM-dd HH:mm XXX'",
        );
        let out = run(&*p, json!({"t": "2024-01-15 08:30"})).unwrap();
        assert_eq!(out["out"]["at"], "2024-01-15 14:30 +01:00");
    }

    #[test]
    fn epochs_are_read_by_their_digits() {
        let p = processor(
            "date:\n  match:\n    - key: t\n      patterns: [epoch_milli]\n  output_format: epoch_second",
        );
        assert_eq!(
            run(&*p, json!({"t": 1_700_000_000_123_i64})).unwrap()["@timestamp"],
            "1700000000"
        );
        assert_eq!(
            run(&*p, json!({"t": "1700000000"})).unwrap()["@timestamp"],
            "1700000000"
        );
        // 16 digits need epoch_micro, which is not given: nothing is written.
        assert!(
            run(&*p, json!({"t": 1_700_000_000_123_456_i64}))
                .unwrap()
                .get("@timestamp")
                .is_none()
        );
    }

    #[test]
    fn a_date_no_pattern_fits_changes_nothing() {
        let p = processor("date:\n  match:\n    - key: t\n      patterns: ['yyyy-MM-dd']");
        assert_eq!(
            run(&*p, json!({"t": "yesterday"})),
            Some(json!({"t": "yesterday"}))
        );
    }

    /// date.md:348: the date read is also the event's origination time; not so for
    /// `from_time_received`, nor when nothing matched.
    #[test]
    fn origination_timestamp_to_metadata() {
        for key in [
            "origination_timestamp_to_metadata",
            "to_origination_metadata",
        ] {
            let p = processor(&format!(
                "date:\n  match:\n    - key: t\n      patterns: ['dd/MMM/yyyy:HH:mm:ss Z']\n  {key}: true"
            ));
            let event = run_event(&*p, json!({"t": "10/Oct/2000:13:55:36 -0700"}));
            assert_eq!(
                event.metadata.external_origination_time_ms,
                Some(971_211_336_000)
            );
            let event = run_event(&*p, json!({"t": "nope"}));
            assert_eq!(event.metadata.external_origination_time_ms, None);
        }
        let p = processor(
            "date:\n  match:\n    - key: t\n      patterns: [epoch_second]\n  origination_timestamp_to_metadata: true",
        );
        assert_eq!(
            run_event(&*p, json!({"t": -100}))
                .metadata
                .external_origination_time_ms,
            Some(-100_000)
        );
        let p = processor("date:\n  from_time_received: true\n  to_origination_metadata: true");
        assert_eq!(
            run_event(&*p, json!({}))
                .metadata
                .external_origination_time_ms,
            None
        );
        let p =
            processor("date:\n  match:\n    - key: t\n      patterns: ['dd/MMM/yyyy:HH:mm:ss Z']");
        let event = run_event(&*p, json!({"t": "10/Oct/2000:13:55:36 -0700"}));
        assert_eq!(event.metadata.external_origination_time_ms, None);
    }
}
