//! `convert_type` (deprecated name `convert_entry_type`), as Data Prepper's
//! `ConvertEntryTypeProcessor`: when `convert_when` holds, first (`coerce_strings`) every text
//! in the event that reads as a boolean, a number or a date becomes one, then the value at
//! each key is converted to `type`. A value whose text is one of `null_conversion_values` is
//! deleted; a missing or `null` value is left alone; a list is converted element by element,
//! all or nothing. A value that cannot be converted is left as it was and the event is
//! tagged `tags_on_failure`; the other keys are still converted.
//!
//! Values are typed as Java sees the JSON Jackson read: an integer that fits 32 bits is an
//! `Integer`, else a `Long` (or, past 2^63, a `BigInteger`), a number with a fraction or
//! exponent a `Double`. So, as in Data Prepper, `integer` refuses a `Long` or a `Double` (it
//! converts text, booleans and `Integer`s), and `long` refuses a `BigInteger` but truncates a
//! `Double` (saturating). A `double` that is not finite (`"1e400"`, `"NaN"`) is written as the
//! text `"Infinity"`/`"NaN"`, as Jackson writes it. Text is read as Java's `parseInt`,
//! `parseLong`, `parseDouble` (with its `d`/`f` suffixes and surrounding white space), and
//! `Boolean.parseBoolean` (`"true"` in any case is true, any other text false). Not read:
//! digits other than ASCII ones, and hexadecimal doubles (`0x1p3`): they fail and tag.
//! One difference no event could show as Java would: an integer literal past 2^64 in the
//! input is a `BigInteger` to Java but a double to sluice's JSON.
//!
//! `coerce_strings` times are read in UTC (Data Prepper's container zone) with today's date
//! (taken per event) for fields a pattern lacks; a value under a key Data Prepper cannot
//! write (a character outside its key set, a `/` in a name, a path over 2048 characters, text
//! right under a name of digits) is left as is, as there. In a list, text that looks like a number but is not one (`"1.2.3"`)
//! ends the list's coercion, as Java's exception does.

use chrono::Utc;
use serde_json::{Map, Value};
use sluice_config::processor::convert_entry_type::{self as config, TargetType};
use sluice_event::{Event, Expression, Key, java_double, java_string};

use crate::java_time::{JavaPattern, Zone};
use crate::{Apply, BuildError, BuildProcessor, Failure, Failures, Fate};

/// `convert_type`, built: the config, with its keys in one list and its
/// `coerce_strings.time_formats` compiled.
pub struct ConvertEntryType {
    config: config::ConvertEntryType,
    /// `key` or `keys`.
    keys: Vec<Key>,
    coerce: Option<Vec<JavaPattern>>,
}

impl BuildProcessor for config::ConvertEntryType {
    type Processor = ConvertEntryType;

    fn when(&self) -> Option<&Expression> {
        self.convert_when.as_ref()
    }

    fn tags_on_failure(&self) -> &[String] {
        &self.tags_on_failure
    }

    fn build(&self) -> Result<ConvertEntryType, BuildError> {
        let coerce = match &self.coerce_strings {
            None => None,
            Some(c) => Some(
                c.time_formats
                    .iter()
                    .map(|p| {
                        JavaPattern::compile(p).map_err(|e| BuildError {
                            key: "coerce_strings.time_formats".to_owned(),
                            message: format!("`{p}`: {e}"),
                        })
                    })
                    .collect::<Result<_, _>>()?,
            ),
        };
        let keys = match (&self.key, &self.keys) {
            (Some(key), _) => vec![key.clone()],
            (None, Some(keys)) => keys.clone(),
            (None, None) => Vec::new(),
        };
        Ok(ConvertEntryType {
            config: self.clone(),
            keys,
            coerce,
        })
    }
}

impl Apply for ConvertEntryType {
    fn apply(&self, event: &mut Event, _: &'static str) -> Result<Fate, Failure> {
        if let Some(formats) = &self.coerce {
            let today = Zone::from(chrono_tz::Tz::UTC).date_of(Utc::now());
            let coerce = Coerce { formats, today };
            if let Value::Object(map) = &mut event.data {
                coerce.map(map, 0);
            }
        }
        let target = self.config.r#type;
        let null_values = &self.config.null_conversion_values;
        let mut failures = Failures::default();
        for key in &self.keys {
            if let Some(list) = &self.config.iterate_on {
                if let Err(reason) = self.iterate(event, list, key, &mut failures) {
                    // Data Prepper's outer catch: tagged, the remaining keys skipped.
                    failures.add(reason);
                    break;
                }
                continue;
            }
            let Some(slot) = event.get_mut(key) else {
                continue;
            };
            if slot.is_null() {
                continue;
            }
            if !null_values.is_empty() && null_values.contains(&java_string(slot)) {
                event.delete(key);
                continue;
            }
            match convert(slot, target) {
                Ok(value) => *slot = value,
                Err(reason) => failures.add(format!("`{key}`: {reason}")),
            }
        }
        failures.into_result()
    }
}

impl ConvertEntryType {
    /// `iterate_on`: `key` (a name, not a path) converted in each object of the list at
    /// `list`. A failed element is logged only (in `failures`, untagged); a list with an
    /// element that is not an object (or `null`) is left whole and is `Err`.
    fn iterate(
        &self,
        event: &mut Event,
        list: &Key,
        key: &Key,
        failures: &mut Failures,
    ) -> Result<(), String> {
        let items = match event.get_mut(list) {
            None | Some(Value::Null) => return Ok(()),
            Some(Value::Array(items)) => items,
            Some(_) => return Err(format!("`{}` is not a list", list.as_str())),
        };
        if items.iter().any(|i| !(i.is_object() || i.is_null())) {
            return Err(format!(
                "`{}` has an element that is not an object",
                list.as_str()
            ));
        }
        for (i, item) in items.iter_mut().enumerate() {
            let Some(slot) = item.as_object_mut().and_then(|o| o.get_mut(key.as_str())) else {
                continue;
            };
            if slot.is_null() {
                continue;
            }
            match convert_one(slot, self.config.r#type) {
                Ok(value) => *slot = value,
                Err(reason) => failures.add(Failure::untagged(format!(
                    "`{list}` element {i}, `{key}`: {reason}"
                ))),
            }
        }
        Ok(())
    }
}

/// A value converted to `target`: a list element by element (all or nothing), anything else
/// by [`convert_one`].
fn convert(value: &Value, target: TargetType) -> Result<Value, String> {
    match value {
        Value::Array(items) => items
            .iter()
            .map(|item| convert_one(item, target))
            .collect::<Result<_, _>>()
            .map(Value::Array),
        other => convert_one(other, target),
    }
}

/// A JSON value as the Java type Jackson reads it as.
enum Java<'a> {
    Text(&'a str),
    Boolean(bool),
    Integer(i32),
    Long(i64),
    /// An integer past `Long`'s range.
    BigInteger(u64),
    Double(f64),
    /// `null`, a list or a map: no converter takes them.
    Other(&'static str),
}

fn java(value: &Value) -> Java<'_> {
    match value {
        Value::String(s) => Java::Text(s),
        Value::Bool(b) => Java::Boolean(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i32::try_from(i).map_or(Java::Long(i), Java::Integer),
            (None, Some(u), _) => Java::BigInteger(u),
            (None, None, d) => Java::Double(d.unwrap_or(f64::NAN)),
        },
        Value::Null => Java::Other("null"),
        Value::Array(_) => Java::Other("a list"),
        Value::Object(_) => Java::Other("an object"),
    }
}

/// Data Prepper's converters (`IntegerConverter`, ...) on one value.
pub(crate) fn convert_one(value: &Value, target: TargetType) -> Result<Value, String> {
    let source = java(value);
    let unsupported = |what: &str| Err(format!("cannot convert {what} to {target:?}"));
    let bad_text = |text: &str| Err(format!("`{text}` is not a {target:?}"));
    match target {
        TargetType::Integer => match source {
            Java::Text(s) => s.parse::<i32>().map(Value::from).or_else(|_| bad_text(s)),
            Java::Boolean(b) => Ok(Value::from(i32::from(b))),
            Java::Integer(i) => Ok(Value::from(i)),
            Java::Long(_) => unsupported("a long"),
            Java::BigInteger(_) => unsupported("a big integer"),
            Java::Double(_) => unsupported("a double"),
            Java::Other(what) => unsupported(what),
        },
        TargetType::Long => match source {
            Java::Text(s) => s.parse::<i64>().map(Value::from).or_else(|_| bad_text(s)),
            Java::Boolean(b) => Ok(Value::from(i64::from(b))),
            Java::Integer(i) => Ok(Value::from(i)),
            Java::Long(i) => Ok(Value::from(i)),
            // Java's `(long) d`: saturating, NaN is 0; as Rust's `as`.
            Java::Double(d) => Ok(Value::from(d as i64)),
            Java::BigInteger(_) => unsupported("a big integer"),
            Java::Other(what) => unsupported(what),
        },
        TargetType::Double => match source {
            Java::Text(s) => parse_double(s)
                .map(double)
                .ok_or_else(|| format!("`{s}` is not a double")),
            Java::Boolean(b) => Ok(double(if b { 1.0 } else { 0.0 })),
            Java::Integer(i) => Ok(double(f64::from(i))),
            Java::Long(i) => Ok(double(i as f64)),
            Java::BigInteger(u) => Ok(double(u as f64)),
            Java::Double(d) => Ok(double(d)),
            Java::Other(what) => unsupported(what),
        },
        TargetType::Boolean => match source {
            Java::Text(s) => Ok(Value::Bool(s.eq_ignore_ascii_case("true"))),
            Java::Boolean(b) => Ok(Value::Bool(b)),
            Java::Integer(i) => Ok(Value::Bool(i != 0)),
            Java::Long(i) => Ok(Value::Bool(i != 0)),
            Java::BigInteger(u) => Ok(Value::Bool(u != 0)),
            Java::Double(d) => Ok(Value::Bool(d != 0.0)),
            Java::Other(what) => unsupported(what),
        },
        TargetType::String => match source {
            Java::Other(what) => unsupported(what),
            _ => Ok(Value::String(java_string(value))),
        },
        TargetType::BigDecimal => Err("big_decimal is not supported".to_owned()),
    }
}

/// A Java `double` as Jackson writes it: a number, or the text `NaN`, `Infinity`,
/// `-Infinity` (`WRITE_NAN_AS_STRINGS`).
fn double(d: f64) -> Value {
    serde_json::Number::from_f64(d).map_or_else(|| Value::String(java_double(d)), Value::Number)
}

/// Java's `Double.parseDouble`: white space (up to U+0020) trimmed, an optional sign, `NaN`,
/// `Infinity`, or decimal digits with an optional `.` and exponent, and an optional
/// `d`/`D`/`f`/`F` suffix. Hexadecimal (`0x1p3`) is not read.
fn parse_double(text: &str) -> Option<f64> {
    let text = text.trim_matches(|c: char| c <= ' ');
    let (negative, rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let magnitude = match rest {
        "NaN" => f64::NAN,
        "Infinity" => f64::INFINITY,
        _ => {
            let digits = rest.strip_suffix(['d', 'D', 'f', 'F']).unwrap_or(rest);
            // Rust would also read `inf`, `nan` and a second sign; Java reads only these.
            if digits.is_empty()
                || !digits
                    .bytes()
                    .all(|b| b.is_ascii_digit() || b".eE+-".contains(&b))
                || digits.starts_with(['+', '-'])
            {
                return None;
            }
            digits.parse::<f64>().ok()?
        }
    };
    Some(if negative { -magnitude } else { magnitude })
}

/// `coerce_strings`, over the whole event.
struct Coerce<'a> {
    formats: &'a [JavaPattern],
    today: chrono::NaiveDate,
}

/// Data Prepper's limit on a key's length (`JacksonEventKey`).
const MAX_KEY_LENGTH: usize = 2048;

/// Text that looked like a number and was not one: Java's exception, which ends a list.
struct NotANumber;

impl Coerce<'_> {
    /// Each value of an object, on its own (Java catches per entry). `depth` is the length of
    /// the key path so far, `a/b/`.
    fn map(&self, map: &mut Map<String, Value>, depth: usize) {
        for (name, value) in map.iter_mut() {
            let path = depth + name.chars().count();
            if path > MAX_KEY_LENGTH || !name.chars().all(key_char) {
                continue;
            }
            // Java writes to a name of digits as to a list index, and fails on an object:
            // text right under such a name stays text (objects and lists under it do not).
            if value.is_string() && name.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            let _ = self.value(value, path + 1);
        }
    }

    /// One value: text converted in place, objects and lists gone into.
    fn value(&self, value: &mut Value, depth: usize) -> Result<(), NotANumber> {
        match value {
            Value::String(text) => {
                if let Some(new) = self.text(text)? {
                    *value = new;
                }
                Ok(())
            }
            Value::Object(map) => {
                self.map(map, depth);
                Ok(())
            }
            Value::Array(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    let path = depth + decimal_len(i);
                    if path > MAX_KEY_LENGTH {
                        break;
                    }
                    self.value(item, path + 1)?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// What `text` becomes, if anything (`ConvertEntryTypeProcessor.autoConvert`).
    fn text(&self, text: &str) -> Result<Option<Value>, NotANumber> {
        let Some(first) = text.chars().next() else {
            return Ok(None);
        };
        let lower = text.to_lowercase();
        if lower == "true" || lower == "false" {
            return Ok(Some(Value::Bool(lower == "true")));
        }
        if text.contains(':') {
            let utc = Zone::from(chrono_tz::Tz::UTC);
            return Ok(self
                .formats
                .iter()
                .find_map(|f| f.parse(text, utc, self.today).ok())
                .map(|t| Value::from(t.timestamp_millis())));
        }
        if lower.contains('.') || lower.contains('e') {
            return parse_double(&lower)
                .map(|d| Some(double(d)))
                .ok_or(NotANumber);
        }
        if first.is_ascii_digit() || first == '-' || first == '+' {
            return text
                .parse::<i64>()
                .map(|n| Some(Value::from(n)))
                .map_err(|_| NotANumber);
        }
        Ok(None)
    }
}

/// A character Data Prepper's keys allow in a name (`/` separates names).
fn key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || ".-_~@[] $()".contains(c)
}

fn decimal_len(i: usize) -> usize {
    i.checked_ilog10().map_or(1, |l| l as usize + 1)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::parse_double;
    use crate::testing::{invalid, processor, run, tagged};
    use sluice_event::java_double;

    /// convert-entry-type.md:43.
    #[test]
    fn documented_example() {
        let p = processor("convert_type:\n  key: response_status\n  type: integer");
        assert_eq!(
            run(&*p, json!({"message": "value", "response_status": "200"})),
            Some(json!({"message": "value", "response_status": 200}))
        );
    }

    #[test]
    fn the_deprecated_name_works_the_same() {
        let p = processor("convert_entry_type:\n  key: response_status");
        assert_eq!(p.name(), "convert_type");
        assert_eq!(
            run(&*p, json!({"response_status": "200"})),
            Some(json!({"response_status": 200}))
        );
    }

    #[test]
    fn integer_takes_text_booleans_and_ints_only() {
        let p =
            processor("convert_type:\n  keys: [a, b, c, d, e, f, g, h]\n  tags_on_failure: [bad]");
        let (data, tags) = tagged(
            &*p,
            json!({"a": "-12", "b": true, "c": 7, "d": "+3", "e": "x"}),
        );
        assert_eq!(data, json!({"a": -12, "b": 1, "c": 7, "d": 3, "e": "x"}));
        assert_eq!(tags, ["bad"]);
        for bad in [
            json!({"a": 1.5}),
            json!({"a": 3_000_000_000_i64}),
            json!({"a": "2147483648"}),
            json!({"a": "1.0"}),
            json!({"a": " 1"}),
            json!({"a": ""}),
            json!({"a": {"b": 1}}),
            json!({"a": u64::MAX}),
        ] {
            let (data, tags) = tagged(&*p, bad.clone());
            assert_eq!((data, tags), (bad, vec!["bad".to_owned()]));
        }
    }

    #[test]
    fn long_truncates_doubles_and_saturates() {
        let p = processor(
            "convert_type:\n  keys: [a, b, c, d]\n  type: long\n  tags_on_failure: [bad]",
        );
        let (data, tags) = tagged(
            &*p,
            json!({"a": "9223372036854775807", "b": -2.9, "c": 1e300, "d": false}),
        );
        assert_eq!(data, json!({"a": i64::MAX, "b": -2, "c": i64::MAX, "d": 0}));
        assert!(tags.is_empty());
        let (data, tags) = tagged(&*p, json!({"a": "1.5", "b": u64::MAX}));
        assert_eq!(data, json!({"a": "1.5", "b": u64::MAX}));
        assert_eq!(tags, ["bad"]);
    }

    #[test]
    fn double_reads_java_text_and_writes_non_finite_as_text() {
        let p = processor("convert_type:\n  keys: [a, b, c, d, e, f, g]\n  type: double");
        assert_eq!(
            run(
                &*p,
                json!({"a": "1.5", "b": " 2e3 ", "c": "1e400", "d": "-NaN", "e": 7, "f": true, "g": "3f"})
            ),
            Some(
                json!({"a": 1.5, "b": 2000.0, "c": "Infinity", "d": "NaN", "e": 7.0, "f": 1.0, "g": 3.0})
            )
        );
        for bad in [
            "inf", "nan", "infinity", "1e", ".", "", "--1", "0x1p3", "1.5dd",
        ] {
            assert_eq!(parse_double(bad), None, "{bad}");
        }
        assert_eq!(parse_double("-Infinity"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_double(".5"), Some(0.5));
        assert_eq!(parse_double("5."), Some(5.0));
        assert_eq!(parse_double("+1E-2D"), Some(0.01));
    }

    #[test]
    fn boolean_is_true_only_for_true_text_or_non_zero() {
        let p = processor("convert_type:\n  keys: [a, b, c, d, e, f]\n  type: boolean");
        assert_eq!(
            run(
                &*p,
                json!({"a": "TRUE", "b": "yes", "c": 0, "d": 0.001, "e": "", "f": false})
            ),
            Some(json!({"a": true, "b": false, "c": false, "d": true, "e": false, "f": false}))
        );
    }

    #[test]
    fn string_prints_as_java_does() {
        let p = processor(
            "convert_type:\n  keys: [a, b, c, d, e, f]\n  type: string\n  tags_on_failure: [bad]",
        );
        let (data, tags) = tagged(
            &*p,
            json!({"a": 200, "b": 1.0, "c": 1e20, "d": true, "e": [1, 0.0001], "f": "x"}),
        );
        assert_eq!(
            data,
            json!({"a": "200", "b": "1.0", "c": "1.0E20", "d": "true", "e": ["1", "1.0E-4"], "f": "x"})
        );
        assert!(tags.is_empty());
        let (data, tags) = tagged(&*p, json!({"a": {"x": 1}, "b": [1, [2]], "c": [1, null]}));
        assert_eq!(data, json!({"a": {"x": 1}, "b": [1, [2]], "c": [1, null]}));
        assert_eq!(tags, ["bad"]);
        assert_eq!(java_double(-0.0), "-0.0");
        assert_eq!(java_double(1234567.0), "1234567.0");
        assert_eq!(java_double(12345678.0), "1.2345678E7");
    }

    #[test]
    fn lists_are_all_or_nothing_and_other_keys_go_on() {
        let p = processor("convert_type:\n  keys: [a, b]\n  tags_on_failure: [bad]");
        let (data, tags) = tagged(&*p, json!({"a": ["1", "x"], "b": ["1", "2"]}));
        assert_eq!(data, json!({"a": ["1", "x"], "b": [1, 2]}));
        assert_eq!(tags, ["bad"]);
    }

    #[test]
    fn null_values_delete_and_missing_or_null_values_are_left() {
        let p = processor(
            "convert_type:\n  keys: [a, b, c, d, e]\n  null_values: ['-', '1.0', '[x]']\n  tags_on_failure: [bad]",
        );
        let (data, tags) = tagged(
            &*p,
            json!({"a": "-", "b": 1.0, "c": ["x"], "d": null, "keep": "-"}),
        );
        assert_eq!(data, json!({"d": null, "keep": "-"}));
        assert!(tags.is_empty());
    }

    #[test]
    fn convert_when_and_nested_keys() {
        let p =
            processor("convert_type:\n  key: /a/b\n  type: double\n  convert_when: '/go == true'");
        assert_eq!(
            run(&*p, json!({"a": {"b": "2"}, "go": true})),
            Some(json!({"a": {"b": 2.0}, "go": true}))
        );
        assert_eq!(
            run(&*p, json!({"a": {"b": "2"}, "go": 1})),
            Some(json!({"a": {"b": "2"}, "go": 1}))
        );
    }

    #[test]
    fn iterate_on_converts_a_name_in_each_object_and_only_logs_failures() {
        let p = processor("convert_type:\n  key: n\n  iterate_on: items\n  tags_on_failure: [bad]");
        let (data, tags) = tagged(
            &*p,
            json!({"items": [{"n": "1"}, {"n": "x"}, {"m": "2"}, null, {"n": null}], "n": "5"}),
        );
        assert_eq!(
            data,
            json!({"items": [{"n": 1}, {"n": "x"}, {"m": "2"}, null, {"n": null}], "n": "5"})
        );
        assert!(tags.is_empty());
        // Not a list, or an element that is not an object: left whole, tagged.
        for bad in [json!({"items": "x"}), json!({"items": [{"n": "1"}, 3]})] {
            let (data, tags) = tagged(&*p, bad.clone());
            assert_eq!((data, tags), (bad, vec!["bad".to_owned()]));
        }
    }

    #[test]
    fn coerce_strings_reads_booleans_numbers_and_dates_everywhere() {
        let p = processor("convert_type:\n  coerce_strings:");
        assert_eq!(
            run(
                &*p,
                json!({
                    "b": "TRUE", "i": "42", "l": "-9000000000", "d": "1.5", "e": "2E3",
                    "t": "2024-01-02T03:04:05.678Z", "apache": "10/Oct/2000:13:55:36 -0700",
                    "colon": "a:b", "word": "hello", "empty": "", "bad": "12abc",
                    "nested": {"x": "7", "list": ["1", "false", {"y": "2.5"}]},
                    "n": 5, "bad:key": "1", "123": "4"
                })
            ),
            Some(json!({
                "b": true, "i": 42, "l": -9_000_000_000_i64, "d": 1.5, "e": 2000.0,
                "t": 1_704_164_645_678_i64, "apache": 971_211_336_000_i64,
                "colon": "a:b", "word": "hello", "empty": "", "bad": "12abc",
                "nested": {"x": 7, "list": [1, false, {"y": 2.5}]},
                "n": 5, "bad:key": "1", "123": "4"
            }))
        );
        // In a list, a number that is not one ends the list's coercion.
        assert_eq!(
            run(&*p, json!({"l": ["1", "1.2.3", "2"], "m": "3"})),
            Some(json!({"l": [1, "1.2.3", "2"], "m": 3}))
        );
    }

    #[test]
    fn coerce_strings_runs_before_the_keys() {
        let p = processor(
            "convert_type:\n  key: a\n  type: string\n  coerce_strings:\n    time_formats: ['yyyy-MM-dd HH:mm']",
        );
        assert_eq!(
            run(&*p, json!({"a": "1.50", "t": "2000-01-01 00:01"})),
            Some(json!({"a": "1.5", "t": 946_684_860_000_i64}))
        );
    }

    #[test]
    fn bad_configs_are_refused() {
        for (yaml, want) in [
            ("convert_type:\n  type: integer", "needs `key`"),
            (
                "convert_type:\n  key: a\n  keys: [b]",
                "both `key` and `keys`",
            ),
            ("convert_type:\n  key: ''", "cannot be empty"),
            (
                "convert_type:\n  key: a\n  type: Integer",
                "did you mean `integer`",
            ),
            (
                "convert_type:\n  key: a\n  type: big_decimal",
                "not supported by sluice yet",
            ),
            (
                "convert_type:\n  key: a\n  scale: 2",
                "not supported by sluice yet",
            ),
            ("convert_type:\n  key: a\n  nope: 2", "nope"),
            ("convert_type:\n  key: 'a#b'", "`#`"),
            (
                "convert_type:\n  coerce_strings:\n    time_formats: ['yyyy-MM-dd{']",
                "coerce_strings.time_formats",
            ),
        ] {
            let err = invalid(yaml);
            assert!(err.contains(want), "{yaml}: {err}");
        }
        // `keys: []` and `null_conversion_values` are accepted.
        processor("convert_type:\n  keys: []\n  null_conversion_values: [x]");
    }
}
