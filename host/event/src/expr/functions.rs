//! Data Prepper's expression functions (`*ExpressionFunction.java`): their names, how many
//! arguments each takes and of which kind (checked when the expression is parsed, where the
//! argument is a literal or a key), and what each does per event.
//!
//! Arguments reach a function as Data Prepper passes them: a bare key as the key itself (so
//! `length(/list)` measures the list, and `contains(/missing, "x")` can say false), anything
//! else as its value. `subList` is in Data Prepper's documentation but not in its source at the
//! commit this follows; it is implemented as documented. `formatDateTime` (Java date patterns)
//! is left out.

use std::borrow::Cow;
use std::net::IpAddr;

use serde_json::{Map, Value};

use super::EvalError;
use super::eval::{Rv, eval};
use super::tree::Arg;
use crate::event::Event;
use crate::key::Key;

/// A function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Func {
    Length,
    HasTags,
    GetMetadata,
    Contains,
    StartsWith,
    SubstringAfter,
    SubstringAfterLast,
    SubstringBefore,
    SubstringBeforeLast,
    CidrContains,
    Join,
    SubList,
    GenerateUuid,
    GetEventType,
    Now,
    ToJsonString,
}

/// What an argument must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Want {
    /// A key, or a value that is a string.
    KeyOrString,
    /// A string (a key is refused: Data Prepper hands the function the key, not its value).
    String,
    /// A tag: a non-empty string.
    Tag,
    /// A CIDR block or an IP address, as a string.
    Cidr,
    /// A bare key.
    Key,
    /// An integer.
    Integer,
}

impl Func {
    pub(super) fn lookup(name: &str) -> Option<Func> {
        Some(match name {
            "length" => Func::Length,
            "hasTags" => Func::HasTags,
            "getMetadata" => Func::GetMetadata,
            "contains" => Func::Contains,
            "startsWith" => Func::StartsWith,
            "substringAfter" => Func::SubstringAfter,
            "substringAfterLast" => Func::SubstringAfterLast,
            "substringBefore" => Func::SubstringBefore,
            "substringBeforeLast" => Func::SubstringBeforeLast,
            "cidrContains" => Func::CidrContains,
            "join" => Func::Join,
            "subList" => Func::SubList,
            "generateUuid" => Func::GenerateUuid,
            "getEventType" => Func::GetEventType,
            "now" => Func::Now,
            "toJsonString" => Func::ToJsonString,
            _ => return None,
        })
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Func::Length => "length",
            Func::HasTags => "hasTags",
            Func::GetMetadata => "getMetadata",
            Func::Contains => "contains",
            Func::StartsWith => "startsWith",
            Func::SubstringAfter => "substringAfter",
            Func::SubstringAfterLast => "substringAfterLast",
            Func::SubstringBefore => "substringBefore",
            Func::SubstringBeforeLast => "substringBeforeLast",
            Func::CidrContains => "cidrContains",
            Func::Join => "join",
            Func::SubList => "subList",
            Func::GenerateUuid => "generateUuid",
            Func::GetEventType => "getEventType",
            Func::Now => "now",
            Func::ToJsonString => "toJsonString",
        }
    }

    /// What each of `count` arguments must be, or why that many will not do.
    pub(super) fn signature(self, count: usize) -> Result<Vec<Want>, &'static str> {
        use Want::*;
        let exactly = |wants: &[Want], says: &'static str| {
            if count == wants.len() {
                Ok(wants.to_vec())
            } else {
                Err(says)
            }
        };
        match self {
            Func::Length => exactly(&[KeyOrString], "takes one argument, a key or a string"),
            Func::HasTags if count >= 1 => Ok(vec![Tag; count]),
            Func::HasTags => Err("takes one or more tags"),
            Func::GetMetadata => exactly(&[String], "takes one argument, the attribute's name"),
            Func::Contains | Func::StartsWith => exactly(
                &[KeyOrString, KeyOrString],
                "takes two arguments, each a key or a string",
            ),
            Func::SubstringAfter
            | Func::SubstringAfterLast
            | Func::SubstringBefore
            | Func::SubstringBeforeLast => exactly(
                &[KeyOrString, KeyOrString],
                "takes two arguments: the string (or its key) and the delimiter",
            ),
            Func::CidrContains if count >= 2 => {
                let mut wants = vec![Cidr; count];
                wants[0] = Key;
                Ok(wants)
            }
            Func::CidrContains => Err("takes a key and one or more CIDR blocks"),
            Func::Join => match count {
                1 => Ok(vec![Key]),
                2 => Ok(vec![String, Key]),
                _ => Err("takes a key, or a delimiter and a key"),
            },
            Func::SubList => exactly(
                &[Key, Integer, Integer],
                "takes three arguments: a key, a start index and an end index (-1 for the end)",
            ),
            Func::GenerateUuid | Func::GetEventType | Func::Now | Func::ToJsonString => {
                exactly(&[], "takes no arguments")
            }
        }
    }
}

fn fail(func: Func, message: impl Into<String>) -> EvalError {
    EvalError::Function {
        function: func.name(),
        message: message.into(),
    }
}

/// An argument as the function receives it.
enum ArgValue<'a> {
    Key(&'a Key),
    Value(Rv<'a>),
}

/// Calls `func` on `args` for `event`.
pub(super) fn call<'a>(func: Func, args: &'a [Arg], event: &'a Event) -> Result<Rv<'a>, EvalError> {
    let values = args
        .iter()
        .map(|arg| match arg {
            Arg::Key(key, _) => Ok(ArgValue::Key(key)),
            Arg::Value(node) => eval(node, event).map(ArgValue::Value),
        })
        .collect::<Result<Vec<_>, _>>()?;
    apply(func, &values, event)
}

/// `func` on its evaluated arguments.
fn apply<'a>(func: Func, values: &[ArgValue<'a>], event: &'a Event) -> Result<Rv<'a>, EvalError> {
    // The parser checked the count; a function never sees another.
    if func.signature(values.len()).is_err() {
        return Err(fail(func, "was called with the wrong number of arguments"));
    }
    match func {
        Func::Length => length(&values[0], event),
        Func::HasTags => {
            let mut all = true;
            for value in values {
                match value {
                    ArgValue::Value(Rv::Str(tag)) if !tag.is_empty() => {
                        all &= event.metadata.has_tag(tag);
                    }
                    ArgValue::Value(Rv::Str(_)) => return Err(fail(func, "takes non-empty tags")),
                    other => {
                        return Err(fail(
                            func,
                            format!("takes strings, not {}", describe(other)),
                        ));
                    }
                }
            }
            Ok(Rv::Bool(all))
        }
        Func::GetMetadata => match &values[0] {
            ArgValue::Value(Rv::Str(name)) => metadata(name, event),
            other => Err(fail(
                func,
                format!("takes a string, not {}", describe(other)),
            )),
        },
        Func::Contains | Func::StartsWith => {
            // Data Prepper reads the arguments in order and answers false at the first key
            // that has no value.
            let mut texts = Vec::with_capacity(2);
            for value in values {
                match string_arg(func, value, event)? {
                    Some(text) => texts.push(text),
                    None => return Ok(Rv::Bool(false)),
                }
            }
            Ok(Rv::Bool(if func == Func::Contains {
                texts[0].contains(texts[1].as_ref())
            } else {
                texts[0].starts_with(texts[1].as_ref())
            }))
        }
        Func::SubstringAfter
        | Func::SubstringAfterLast
        | Func::SubstringBefore
        | Func::SubstringBeforeLast => {
            let source = string_arg(func, &values[0], event)?;
            let delimiter = string_arg(func, &values[1], event)?;
            let Some(source) = source else {
                return Ok(Rv::Null);
            };
            let delimiter = match delimiter {
                Some(d) if !d.is_empty() => d,
                _ => return Ok(Rv::Str(source)),
            };
            let found = match func {
                Func::SubstringAfter | Func::SubstringBefore => source.find(delimiter.as_ref()),
                _ => source.rfind(delimiter.as_ref()),
            };
            let Some(at) = found else {
                return Ok(Rv::Str(source));
            };
            let part = match func {
                Func::SubstringAfter | Func::SubstringAfterLast => {
                    slice(source, at + delimiter.len()..)
                }
                _ => slice(source, ..at),
            };
            Ok(Rv::Str(part))
        }
        Func::CidrContains => {
            let ArgValue::Key(key) = &values[0] else {
                return Err(fail(func, "takes a key as its first argument"));
            };
            let address = match event.get(key) {
                None | Some(Value::Null) => return Ok(Rv::Bool(false)),
                Some(Value::String(text)) => text.parse::<IpAddr>().map_err(|_| {
                    fail(
                        func,
                        format!(
                            "the value at `{key}`, \"{}\", is not an IP address",
                            shorten(text)
                        ),
                    )
                })?,
                Some(other) => {
                    return Err(fail(
                        func,
                        format!(
                            "the value at `{key}` is {}, not an IP address",
                            json_type(other)
                        ),
                    ));
                }
            };
            let mut any = false;
            for value in &values[1..] {
                let ArgValue::Value(Rv::Str(block)) = value else {
                    return Err(fail(
                        func,
                        format!("takes CIDR blocks as strings, not {}", describe(value)),
                    ));
                };
                let block = Cidr::parse(block).map_err(|message| fail(func, message))?;
                any |= block.contains(address);
            }
            Ok(Rv::Bool(any))
        }
        Func::Join => {
            let (delimiter, key) = match values {
                [ArgValue::Key(key)] => (Cow::Borrowed(","), *key),
                // Data Prepper removes the backslashes that escape a comma (`"\\,"`).
                [ArgValue::Value(Rv::Str(d)), ArgValue::Key(key)] => {
                    (Cow::Owned(d.replace("\\\\,", ",")), *key)
                }
                _ => return Err(fail(func, "takes a key, or a delimiter string and a key")),
            };
            join(key, &delimiter, event)
        }
        Func::SubList => {
            let ArgValue::Key(key) = &values[0] else {
                return Err(fail(func, "takes a key as its first argument"));
            };
            let index = |value: &ArgValue<'_>| match value {
                ArgValue::Value(Rv::Int(n)) => Ok(i64::from(*n)),
                ArgValue::Value(Rv::Long(n)) => Ok(*n),
                other => Err(fail(
                    func,
                    format!("takes integer indexes, not {}", describe(other)),
                )),
            };
            let (start, end) = (index(&values[1])?, index(&values[2])?);
            let Some(Value::Array(list)) = event.get(key) else {
                return Err(fail(func, format!("the value at `{key}` is not a list")));
            };
            let len = list.len() as i64;
            let end = if end == -1 { len } else { end };
            if start < 0 || start > end || end > len {
                return Err(fail(
                    func,
                    format!(
                        "the range {start}..{end} is outside the list at `{key}` ({len} items)"
                    ),
                ));
            }
            // Both are within 0..=len, which came from a usize.
            let range = usize::try_from(start).unwrap_or(0)..usize::try_from(end).unwrap_or(0);
            Ok(Rv::Json(Cow::Owned(Value::Array(list[range].to_vec()))))
        }
        Func::GenerateUuid => Ok(Rv::Str(Cow::Owned(uuid::Uuid::new_v4().to_string()))),
        Func::GetEventType => Ok(Rv::Str(Cow::Borrowed(&event.metadata.event_type))),
        Func::Now => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
            Ok(Rv::Long(now))
        }
        Func::ToJsonString => Ok(Rv::Str(Cow::Owned(event.data.to_string()))),
    }
}

/// Part of a string, borrowed when the string is.
fn slice<'a>(
    text: Cow<'a, str>,
    range: impl std::slice::SliceIndex<str, Output = str>,
) -> Cow<'a, str> {
    match text {
        Cow::Borrowed(s) => Cow::Borrowed(&s[range]),
        Cow::Owned(s) => Cow::Owned(s[range].to_owned()),
    }
}

fn shorten(text: &str) -> String {
    const MAX: usize = 40;
    if text.chars().count() <= MAX {
        text.to_owned()
    } else {
        format!("{}...", text.chars().take(MAX).collect::<String>())
    }
}

fn describe(value: &ArgValue<'_>) -> String {
    match value {
        ArgValue::Key(key) => format!("a key (`{key}`)"),
        ArgValue::Value(rv) => rv.type_name().to_owned(),
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    }
}

/// A string argument: a key's string value (`None` when the key has none) or a string.
fn string_arg<'a>(
    func: Func,
    value: &ArgValue<'a>,
    event: &'a Event,
) -> Result<Option<Cow<'a, str>>, EvalError> {
    match value {
        ArgValue::Key(key) => match event.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(Cow::Borrowed(text))),
            Some(other) => Err(fail(
                func,
                format!(
                    "takes strings, but the value at `{key}` is {}",
                    json_type(other)
                ),
            )),
        },
        ArgValue::Value(Rv::Str(text)) => Ok(Some(text.clone())),
        ArgValue::Value(other) => Err(fail(
            func,
            format!("takes strings, not {}", other.type_name()),
        )),
    }
}

/// `length()`: a string's length in UTF-16 code units (Java's `String.length`), a list's or
/// a map's size; `null` for a key with no value.
fn length<'a>(value: &ArgValue<'a>, event: &'a Event) -> Result<Rv<'a>, EvalError> {
    let size = match value {
        ArgValue::Key(key) => match event.get(key) {
            None | Some(Value::Null) => return Ok(Rv::Null),
            Some(Value::String(text)) => text.encode_utf16().count(),
            Some(Value::Array(list)) => list.len(),
            Some(Value::Object(map)) => map.len(),
            Some(other) => {
                return Err(fail(
                    Func::Length,
                    format!(
                        "takes a string, a list or a map, but the value at `{key}` is {}",
                        json_type(other)
                    ),
                ));
            }
        },
        ArgValue::Value(Rv::Str(text)) => text.encode_utf16().count(),
        ArgValue::Value(other) => {
            return Err(fail(
                Func::Length,
                format!("takes a string or a key, not {}", other.type_name()),
            ));
        }
    };
    Ok(i32::try_from(size).map_or(Rv::Long(size as i64), Rv::Int))
}

/// `getMetadata("name")`: an attribute, `a/b` reaching into maps; a leading `/` is ignored.
fn metadata<'a>(name: &str, event: &'a Event) -> Result<Rv<'a>, EvalError> {
    let name = name.trim();
    if name.is_empty() {
        return Ok(Rv::Null);
    }
    let path = name.strip_prefix('/').unwrap_or(name);
    let mut segments = path.split('/');
    let first = segments.next().unwrap_or_default();
    let mut value = match event.metadata.attributes.get(first) {
        Some(value) => value,
        None => return Ok(Rv::Null),
    };
    for segment in segments {
        value = match value {
            Value::Object(map) => match map.get(segment) {
                Some(inner) => inner,
                None => return Ok(Rv::Null),
            },
            _ => return Ok(Rv::Null),
        };
    }
    Rv::from_json(value, &format_args!("metadata `{name}`"))
}

/// `join()`: a list's items as Java prints them, between `delimiter`; for a map, each of its
/// lists joined (other values kept).
fn join<'a>(key: &Key, delimiter: &str, event: &'a Event) -> Result<Rv<'a>, EvalError> {
    let joined = |list: &[Value]| -> Option<String> {
        let mut items = Vec::with_capacity(list.len());
        for item in list {
            if item.is_null() {
                // Java's `Object::toString` on null throws.
                return None;
            }
            items.push(java_string(item));
        }
        Some(items.join(delimiter))
    };
    match event.get(key) {
        Some(Value::Array(list)) => joined(list)
            .map(|s| Rv::Str(Cow::Owned(s)))
            .ok_or_else(|| fail(Func::Join, format!("the list at `{key}` holds a null"))),
        Some(Value::Object(map)) => {
            let mut out = Map::new();
            for (name, value) in map {
                let value = match value {
                    Value::Array(list) => joined(list).map_or_else(|| value.clone(), Value::String),
                    other => other.clone(),
                };
                out.insert(name.clone(), value);
            }
            Ok(Rv::Json(Cow::Owned(Value::Object(out))))
        }
        None => Err(fail(Func::Join, format!("`{key}` has no value"))),
        Some(other) => Err(fail(
            Func::Join,
            format!(
                "takes a list or a map, but the value at `{key}` is {}",
                json_type(other)
            ),
        )),
    }
}

/// A JSON value as Java's `toString` prints what Jackson read (`1.0E10`, `{a=1}`, `[1, 2]`):
/// how Data Prepper writes a value as text (expressions, `convert_type`).
pub fn java_string(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::String(s) => s.clone(),
        Value::Number(n) => match n.as_f64() {
            Some(d) if n.is_f64() => java_double(d),
            _ => n.to_string(),
        },
        Value::Array(list) => {
            let items: Vec<String> = list.iter().map(java_string).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(map) => {
            let items: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{k}={}", java_string(v)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
    }
}

/// Java's `Double.toString`: the shortest digits, plain from 10^-3 to 10^7, else `d.dddE±n`.
/// How Data Prepper writes a double as text (expressions, `convert_type`).
pub fn java_double(d: f64) -> String {
    if d.is_nan() {
        return "NaN".to_owned();
    }
    if d.is_infinite() {
        return if d > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    let magnitude = d.abs();
    if magnitude == 0.0 || (1e-3..1e7).contains(&magnitude) {
        let text = d.to_string();
        return if text.contains('.') {
            text
        } else {
            format!("{text}.0")
        };
    }
    // `{:e}` is the shortest digits too: `1.5e10`, `1e-5`.
    let text = format!("{d:e}");
    let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
    let mantissa = if mantissa.contains('.') {
        mantissa.to_owned()
    } else {
        format!("{mantissa}.0")
    };
    format!("{mantissa}E{exponent}")
}

/// A CIDR block, or one address (`10.0.0.1`, or `10.0.0.1/8`, which Data Prepper's IP
/// library reads as the address with a prefix length, not the block).
pub(super) struct Cidr {
    address: IpAddr,
    prefix: u8,
}

impl Cidr {
    pub(super) fn parse(text: &str) -> Result<Self, String> {
        let invalid = || {
            format!(
                "\"{}\" is not a CIDR block such as \"10.0.0.0/8\"",
                shorten(text)
            )
        };
        let (address, prefix) = match text.trim().split_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (text.trim(), None),
        };
        let address: IpAddr = address.parse().map_err(|_| invalid())?;
        let bits = if address.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => bits,
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= bits)
                .ok_or_else(invalid)?,
        };
        let block = Cidr { address, prefix };
        // A non-zero host part makes it one address.
        if block.network_bits(address) != to_bits(address) {
            return Ok(Cidr {
                address,
                prefix: bits,
            });
        }
        Ok(block)
    }

    fn network_bits(&self, address: IpAddr) -> u128 {
        let bits = if address.is_ipv4() { 32 } else { 128 };
        let host_bits = u32::from(bits - self.prefix);
        let value = to_bits(address);
        if host_bits >= 128 {
            0
        } else {
            value >> host_bits << host_bits
        }
    }

    fn contains(&self, address: IpAddr) -> bool {
        address.is_ipv4() == self.address.is_ipv4()
            && self.network_bits(address) == self.network_bits(self.address)
    }
}

fn to_bits(address: IpAddr) -> u128 {
    match address {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        IpAddr::V6(v6) => u128::from(v6),
    }
}
