//! Writing events as JSON straight into the reply's buffer: no `serde_json::Value` tree, no
//! `String` per field. The bytes are those `serde_json::to_writer` gives for the tree this
//! component used to build (the golden test in `tests.rs` compares them on a large export):
//! - an object's keys come out sorted byte-wise, a repeated key keeping its last value, as a
//!   `serde_json::Map` without `preserve_order` (a `BTreeMap`) orders them; [`Object`]
//!   collects its fields, sorts them and writes them;
//! - strings are escaped as serde_json escapes them ([`string`]);
//! - numbers are written by serde_json itself, a double that is not finite as `null`.

use std::cmp::Ordering;

use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;

use super::{common, otel};
/// JSON strings and their contents, escaped as serde_json escapes them.
pub(crate) use sluice_scan::{write_string as string, write_string_contents as contents};

/// A field's key: a fixed name, or an attribute's key under a prefix with its dots written `@`
/// (Data Prepper's flattened `opensearch` keys, `log.attributes.http@method`).
#[derive(Clone, Copy)]
pub(crate) enum Key<'a> {
    Fixed(&'a str),
    Flat { prefix: &'a str, key: &'a str },
}

/// An attribute key's byte as it is written: a dot as `@`.
fn flat(b: u8) -> u8 {
    if b == b'.' { b'@' } else { b }
}

impl Key<'_> {
    /// The key's bytes as they are written (before escaping).
    fn bytes(&self) -> impl Iterator<Item = u8> + '_ {
        let (prefix, key, at) = match *self {
            Key::Fixed(name) => (name, "", false),
            Key::Flat { prefix, key } => (prefix, key, true),
        };
        prefix
            .bytes()
            .chain(key.bytes().map(move |b| if at { flat(b) } else { b }))
    }

    /// The first 8 bytes as written, zero-padded, as a number: keys whose heads differ are in
    /// the order of their heads (a shorter key padded with zeros sorts before one it starts).
    fn head(&self) -> u64 {
        let mut head = [0; 8];
        let (first, rest) = match *self {
            Key::Fixed(name) => (name.as_bytes(), ""),
            Key::Flat { prefix, key } => (prefix.as_bytes(), key),
        };
        let n = first.len().min(8);
        head[..n].copy_from_slice(&first[..n]);
        for (slot, b) in head[n..].iter_mut().zip(rest.bytes()) {
            *slot = flat(b);
        }
        u64::from_be_bytes(head)
    }

    fn cmp(&self, other: &Key<'_>) -> Ordering {
        match (*self, *other) {
            (Key::Fixed(a), Key::Fixed(b)) => a.cmp(b),
            // Attributes under one prefix (the common case): compare the keys alone.
            (Key::Flat { prefix: p, key: a }, Key::Flat { prefix: q, key: b }) if p == q => a
                .bytes()
                .zip(b.bytes())
                .map(|(x, y)| flat(x).cmp(&flat(y)))
                .find(|o| o.is_ne())
                .unwrap_or_else(|| a.len().cmp(&b.len())),
            _ => self.bytes().cmp(other.bytes()),
        }
    }

    fn write(&self, out: &mut Vec<u8>) {
        out.push(b'"');
        match *self {
            Key::Fixed(name) => contents(out, name),
            Key::Flat { prefix, key } => {
                contents(out, prefix);
                let mut rest = key;
                while let Some(dot) = rest.find('.') {
                    contents(out, &rest[..dot]);
                    out.push(b'@');
                    rest = &rest[dot + 1..];
                }
                contents(out, rest);
            }
        }
        out.push(b'"');
    }
}

/// Lowercase hex digits, for ids and `\u00xx` escapes.
const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// A field's value.
pub(crate) enum Value<'a> {
    Null,
    Bool(bool),
    U64(u64),
    I64(i64),
    /// `null` when not finite, as `serde_json::Value::from(f64)`.
    F64(f64),
    Str(&'a str),
    /// Lowercase hex, as Data Prepper writes ids.
    Hex(&'a [u8]),
    /// Nanoseconds since the epoch as Java's `Instant.toString()` (see `common::iso_time`).
    Time(u64),
    /// An attribute value in the `opensearch` shape (arrays and maps as JSON text).
    Attribute(Option<&'a AnyValue>),
    /// An array's or map's element inside that JSON text.
    Nested(Option<&'a Any>),
    /// Attributes as one map, keys under a prefix with dots written `@` (`opensearch`).
    FlatAttributes(&'a str, &'a [KeyValue]),
    /// A value in the `otel` shape (nested as OpenTelemetry has it).
    OtelAny(Option<&'a AnyValue>),
    /// Attributes as one map, keys as they are (`otel`).
    OtelAttributes(&'a [KeyValue]),
    /// The `otel` shape's `resource` object, with the resource's schema URL.
    OtelResource(Option<&'a Resource>, &'a str),
    /// The `otel` shape's `instrumentationScope` object.
    OtelScope(Option<&'a InstrumentationScope>),
    /// JSON text, written as it is.
    Raw(&'a [u8]),
    /// Anything else: it writes itself.
    With(&'a dyn Fn(&mut Vec<u8>)),
}

impl Value<'_> {
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        match *self {
            Value::Null => out.extend_from_slice(b"null"),
            Value::Bool(b) => out.extend_from_slice(if b { b"true" } else { b"false" }),
            Value::U64(n) => number(out, n),
            Value::I64(n) => number(out, n),
            Value::F64(d) => double(out, d),
            Value::Str(s) => string(out, s),
            Value::Hex(bytes) => {
                out.reserve(bytes.len() * 2 + 2);
                out.push(b'"');
                out.extend(
                    bytes
                        .iter()
                        .flat_map(|b| [DIGITS[usize::from(b >> 4)], DIGITS[usize::from(b & 0xf)]]),
                );
                out.push(b'"');
            }
            Value::Time(nanos) => {
                out.push(b'"');
                common::iso_time(out, nanos);
                out.push(b'"');
            }
            Value::Attribute(v) => common::write_attribute(out, v),
            Value::Nested(None) => out.extend_from_slice(b"null"),
            Value::Nested(Some(v)) => common::write_nested(out, v),
            Value::FlatAttributes(prefix, list) => {
                let mut o = Object::new();
                common::flatten(&mut o, prefix, list);
                o.write(out);
            }
            Value::OtelAny(v) => otel::write_value(out, v),
            Value::OtelAttributes(list) => otel::write_attributes(out, list),
            Value::OtelResource(resource, schema_url) => {
                otel::write_resource(out, resource, schema_url)
            }
            Value::OtelScope(scope) => otel::write_scope(out, scope),
            Value::Raw(json) => out.extend_from_slice(json),
            Value::With(write) => write(out),
        }
    }
}

/// An object's fields, written sorted by key (see the module's doc).
pub(crate) struct Object<'a> {
    /// Each field with its key's [`Key::head`], which decides most comparisons.
    fields: Vec<(u64, Key<'a>, Value<'a>)>,
}

impl Default for Object<'_> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'a> Object<'a> {
    pub(crate) fn new() -> Self {
        Object {
            fields: Vec::with_capacity(32),
        }
    }

    pub(crate) fn put(&mut self, key: &'a str, value: Value<'a>) {
        self.push(Key::Fixed(key), value);
    }

    /// `key` under `prefix`, its dots written `@`.
    pub(crate) fn put_flat(&mut self, prefix: &'a str, key: &'a str, value: Value<'a>) {
        self.push(Key::Flat { prefix, key }, value);
    }

    fn push(&mut self, key: Key<'a>, value: Value<'a>) {
        self.fields.push((key.head(), key, value));
    }

    pub(crate) fn write(mut self, out: &mut Vec<u8>) {
        let order = |a: &(u64, Key<'_>, Value<'_>), b: &(u64, Key<'_>, Value<'_>)| {
            a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1))
        };
        // Stable: of fields with one key, the last put stays last, and is the one written.
        self.fields.sort_by(order);
        out.push(b'{');
        let mut first = true;
        for (i, field) in self.fields.iter().enumerate() {
            if let Some(next) = self.fields.get(i + 1)
                && order(next, field) == Ordering::Equal
            {
                continue;
            }
            let (_, key, value) = field;
            if !first {
                out.push(b',');
            }
            first = false;
            key.write(out);
            out.push(b':');
            value.write(out);
        }
        out.push(b'}');
    }
}

/// The events of a call: their JSON one after the other in `out`, and where each is.
#[derive(Default)]
pub(crate) struct Events {
    pub(crate) out: Vec<u8>,
    /// Each event's offset and length in `out`.
    pub(crate) spans: Vec<(usize, usize)>,
}

impl Events {
    /// Writes `event` as the next event.
    pub(crate) fn push(&mut self, event: Object<'_>) {
        let start = self.out.len();
        event.write(&mut self.out);
        self.spans.push((start, self.out.len() - start));
    }
}

/// `[item, item, ...]`, each written by `write`.
pub(crate) fn array<T>(out: &mut Vec<u8>, items: &[T], mut write: impl FnMut(&mut Vec<u8>, &T)) {
    out.push(b'[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write(out, item);
    }
    out.push(b']');
}

/// An integer, as serde_json writes it.
pub(crate) fn number(out: &mut Vec<u8>, n: impl serde::Serialize) {
    serde_json::to_writer(out, &n).expect("writing to a Vec cannot fail");
}

/// A double as serde_json writes it; `null` when not finite.
pub(crate) fn double(out: &mut Vec<u8>, d: f64) {
    if d.is_finite() {
        serde_json::to_writer(out, &d).expect("writing to a Vec cannot fail");
    } else {
        out.extend_from_slice(b"null");
    }
}
