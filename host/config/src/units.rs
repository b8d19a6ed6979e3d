//! Durations and sizes as people write them: `250ms`, `30s`, `10mb`, `64MiB`.
//!
//! A bare integer is milliseconds for a duration (as Data Prepper's `delay: 3000`) and bytes for
//! a size, so configs written for Data Prepper keep working.

use std::fmt;
use std::time::Duration;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

/// Deserializes a [`Duration`] from a humantime string, an ISO-8601 duration as Java's
/// `Duration.parse` reads it (`PT15S`, Data Prepper's defaults), or integer milliseconds.
pub fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    d.deserialize_any(DurationVisitor {
        bare: Duration::from_millis,
        unit: "milliseconds",
    })
}

/// [`duration`] for keys Data Prepper reads as integer seconds (`window_duration: 180`,
/// `trace_flush_interval`): a bare integer is seconds; text with a unit is read as
/// [`duration`] reads it.
pub fn seconds<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    d.deserialize_any(DurationVisitor {
        bare: Duration::from_secs,
        unit: "seconds",
    })
}

/// A duration, with what a bare integer counts.
struct DurationVisitor {
    bare: fn(u64) -> Duration,
    unit: &'static str,
}

impl Visitor<'_> for DurationVisitor {
    type Value = Duration;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a duration such as `250ms`, `30s` or `1m`, or integer {}",
            self.unit
        )
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Duration, E> {
        Ok((self.bare)(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Duration, E> {
        u64::try_from(v).map(self.bare).map_err(|_| {
            E::custom(format!(
                "a duration cannot be negative, got {v}; write e.g. `30s`, or integer {}",
                self.unit
            ))
        })
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Duration, E> {
        if let Ok(n) = v.trim().parse::<u64>() {
            return Ok((self.bare)(n));
        }
        if let Some(d) = iso8601(v.trim()) {
            return d.map_err(E::custom);
        }
        humantime::parse_duration(v.trim()).map_err(|e| {
            E::custom(format!(
                "invalid duration `{v}` ({e}); write e.g. `250ms`, `30s`, `1m`, or integer {}",
                self.unit
            ))
        })
    }
}

/// An ISO-8601 duration as Java's `Duration.parse` reads it: `P`, then days (`nD`), then `T`
/// and hours, minutes, seconds (`nH`, `nM`, `n.nS`), case-insensitive. `None` when the text
/// does not start with `P` (not meant as ISO-8601); an error when it does but is not one, or
/// is negative.
fn iso8601(text: &str) -> Option<Result<Duration, String>> {
    let rest = text.strip_prefix(['P', 'p'])?;
    let invalid = || format!("invalid ISO-8601 duration `{text}`; write e.g. `PT15S`, `PT1M30S`");
    let (days, time) = match rest.split_once(['T', 't']) {
        Some((days, time)) if !time.is_empty() => (days, Some(time)),
        Some(_) => return Some(Err(invalid())),
        None => (rest, None),
    };
    let mut total = 0f64;
    let mut parts = 0;
    let mut read = |text: &str, units: &[(char, f64)]| -> Result<(), String> {
        let mut text = text;
        let mut allowed = units;
        while !text.is_empty() {
            let end = text
                .find(|c: char| c.is_ascii_alphabetic())
                .ok_or_else(invalid)?;
            let (number, unit) = (&text[..end], text[end..].chars().next().unwrap_or(' '));
            let at = allowed
                .iter()
                .position(|(u, _)| u.eq_ignore_ascii_case(&unit))
                .ok_or_else(invalid)?;
            let value: f64 = number.parse().map_err(|_| invalid())?;
            if value < 0.0 || (number.contains('.') && !unit.eq_ignore_ascii_case(&'S')) {
                return Err(invalid());
            }
            total += value * allowed[at].1;
            parts += 1;
            allowed = &allowed[at + 1..];
            text = &text[end + 1..];
        }
        Ok(())
    };
    let result = read(days, &[('D', 86_400.0)]).and_then(|()| {
        read(
            time.unwrap_or(""),
            &[('H', 3600.0), ('M', 60.0), ('S', 1.0)],
        )
    });
    Some(match result {
        Ok(()) if parts > 0 => Ok(Duration::from_secs_f64(total)),
        Ok(()) => Err(invalid()),
        Err(e) => Err(e),
    })
}

/// Deserializes an optional [`Duration`] as [`duration`] does.
pub fn optional_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    duration(d).map(Some)
}

/// Deserializes librdkafka properties: a map of text keys to scalars (`linger.ms: 5`,
/// `compression.type: lz4`, `enable.ssl.certificate.verification: false`), kept as text.
pub fn properties<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<std::collections::BTreeMap<String, String>, D::Error> {
    let map = std::collections::BTreeMap::<String, serde_yaml::Value>::deserialize(d)?;
    map.into_iter()
        .map(|(k, v)| {
            let text = match v {
                serde_yaml::Value::String(s) => s,
                serde_yaml::Value::Bool(b) => b.to_string(),
                serde_yaml::Value::Number(n) => n.to_string(),
                _ => {
                    return Err(de::Error::custom(format!(
                        "the value of `{k}` must be text, a number or true/false"
                    )));
                }
            };
            Ok((k, text))
        })
        .collect()
}

/// A size in bytes, written `10mb`, `1MiB`, `512kb` or as a plain number of bytes. `kb`/`mb`/`gb`
/// are powers of 1024, as in Data Prepper's `max_request_length: 10mb`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ByteSize(pub u64);

impl ByteSize {
    pub const fn mib(n: u64) -> Self {
        Self(n * 1024 * 1024)
    }

    pub fn bytes(self) -> u64 {
        self.0
    }

    fn parse(text: &str) -> Result<Self, String> {
        let t = text.trim();
        let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let (number, unit) = t.split_at(split);
        let number: u64 = number
            .parse()
            .map_err(|_| format!("invalid size `{text}`; write e.g. `512kb`, `10mb`, `1gb`"))?;
        let factor: u64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1,
            "k" | "kb" | "kib" => 1 << 10,
            "m" | "mb" | "mib" => 1 << 20,
            "g" | "gb" | "gib" => 1 << 30,
            _ => {
                return Err(format!(
                    "invalid size unit in `{text}`; use b, kb, mb or gb"
                ));
            }
        };
        number
            .checked_mul(factor)
            .map(Self)
            .ok_or_else(|| format!("size `{text}` is too large"))
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            b if b >= 1 << 20 && b % (1 << 20) == 0 => write!(f, "{}mb", b >> 20),
            b if b >= 1 << 10 && b % (1 << 10) == 0 => write!(f, "{}kb", b >> 10),
            b => write!(f, "{b}b"),
        }
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ByteSize;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a size such as `512kb` or `10mb`, or a number of bytes")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ByteSize, E> {
                Ok(ByteSize(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ByteSize, E> {
                u64::try_from(v)
                    .map(ByteSize)
                    .map_err(|_| E::custom(format!("a size cannot be negative, got {v}")))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ByteSize, E> {
                ByteSize::parse(v).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(ByteSize::parse("10mb"), Ok(ByteSize::mib(10)));
        assert_eq!(ByteSize::parse("64MiB"), Ok(ByteSize::mib(64)));
        assert_eq!(ByteSize::parse("512"), Ok(ByteSize(512)));
        assert!(ByteSize::parse("ten").is_err());
        assert!(ByteSize::parse("1tb").is_err());
        assert_eq!(ByteSize::mib(10).to_string(), "10mb");
    }

    #[test]
    fn durations() {
        let d = |s: &str| duration(serde_yaml::Deserializer::from_str(s));
        assert_eq!(d("3000").unwrap(), Duration::from_secs(3));
        assert_eq!(d("250ms").unwrap(), Duration::from_millis(250));
        // Java's `Duration.parse`, as Data Prepper's defaults are written.
        assert_eq!(d("PT15S").unwrap(), Duration::from_secs(15));
        assert_eq!(d("pt1m30.5s").unwrap(), Duration::from_millis(90_500));
        assert_eq!(d("P1DT2H").unwrap(), Duration::from_secs(93_600));
        assert!(d("PT").is_err() && d("P").is_err() && d("PT5X").is_err());
        assert_eq!(d("PT15S").unwrap(), Duration::from_secs(15));
        assert_eq!(d("pt1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(d("PT20.345S").unwrap(), Duration::from_millis(20_345));
        assert_eq!(d("P1DT2H").unwrap(), Duration::from_secs(93_600));
        assert_eq!(d("\"180s\"").unwrap(), Duration::from_secs(180));
        assert_eq!(d("1500ms").unwrap(), Duration::from_millis(1500));
        for bad in ["PT", "P", "PT1.5M", "PTS", "PT-5S", "PT5S5M"] {
            assert!(
                d(bad).unwrap_err().to_string().contains("ISO-8601"),
                "{bad}"
            );
        }
        assert!(
            d("soon")
                .unwrap_err()
                .to_string()
                .contains("invalid duration `soon`")
        );
    }
}
