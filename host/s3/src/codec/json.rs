//! Data Prepper's `json` input codec as a streaming splitter: [`JsonSplitter`] is fed an
//! object's bytes chunk by chunk and hands out each event's JSON object text, holding at most
//! one element ([`JsonOptions::element_limit`] bytes) and a chunk, never the object.
//!
//! # Configuration
//!
//! The keys of `codec: json:` (`data-prepper-plugins/parse-json-processor/src/main/java/org/
//! opensearch/dataprepper/plugins/codec/json/JsonInputCodecConfig.java`); all are optional:
//!
//! | key | type | default | validation (Data Prepper's message) |
//! |---|---|---|---|
//! | `key_name` | string | none: every array | `@Size(min = 1, max = 2048)`, in UTF-16 units: `keyName size must be between 1 and 2048` |
//! | `include_keys` | list of strings | none | none |
//! | `include_keys_metadata` | list of strings | none | none |
//! | `max_event_length` | int (Java `Integer`) | none: Jackson's 20000000 | `@Min(20000000)`: `maxEventLength must be greater than or equal to 20000000` |
//!
//! Data Prepper reports violations as `Plugin json in pipeline <pipeline> is configured
//! incorrectly: <messages joined by ". ">` (`data-prepper-plugin-framework/.../plugin/
//! PluginConfigurationConverter.java:80-118`; `@AssertTrue` messages print bare, the others
//! after the Java field name, hence `keyName`), as the config (`sluice_config::source::s3::JsonCodec`) gives them. An empty list is the
//! same as none.
//!
//! Mapping onto [`JsonOptions`]: `key_name`, `include_keys` and `include_keys_metadata` as they
//! are; `max_event_length` is [`JsonOptions::max_string_length`] (it is Jackson's
//! `StreamReadConstraints.maxStringLength`, the longest *string value*, not an event's length;
//! default [`DEFAULT_MAX_STRING_LENGTH`]); [`JsonOptions::element_limit`] is sluice's own bound
//! on memory (Data Prepper has none): suggested `max(ELEMENT_LIMIT, max_event_length)`, so an
//! element holding one string Data Prepper allows is not cut.
//!
//! # What becomes an event
//!
//! Data Prepper's `JsonDecoder.parse` (`data-prepper-api/src/main/java/org/opensearch/
//! dataprepper/model/codec/JsonDecoder.java:55-107`) walks the tokens of the document with
//! Jackson's streaming parser, and this splitter runs the same loop on its own tokenizer:
//!
//! - The walk visits every token at any depth, in order, and **stops at the first end of an
//!   object it meets** (`nextToken() != END_OBJECT`), reading nothing after it. So a top-level
//!   object is read up to its end (trailing garbage is never seen), but a field whose value is
//!   an object (`{"meta": {...}, "records": [...]}`) ends the walk at that inner `}`: arrays
//!   after it give nothing, and no error.
//! - Each token has a name (Jackson's `currentName()`): a field name is its own; a value's or a
//!   container's start is the name of the field it is the value of (none in an array or at the
//!   root); an array's or object's end is the field name of the container it closed.
//! - A token whose name is in `include_keys` or `include_keys_metadata` makes the walk take the
//!   next token's value as a string (Jackson's `getValueAsString()`): a string as decoded, a
//!   number as written (`1.50` stays `"1.50"`), `true`/`false` as text, a field name as its
//!   name, and `null`, an object or an array as `null`. The walk goes on after that token
//!   (into the object or array it may open, whose end object then ends the walk). Only keys
//!   met before an array apply to it, each with the last value met.
//! - Otherwise an array start (of the `key_name` field if set; every one if not, the root one
//!   included) is read as records: each element becomes one event. An object element is the
//!   event; a `null` element an empty event `{}`; any other element (a string, number, boolean
//!   or array, as in `[1, "a"]`) fails the object ([`Error::NotAnObject`]; Jackson's
//!   `MismatchedInputException`) after the elements before it were handed out. After the
//!   array's end the walk goes on: another array (another field, another root value) gives
//!   its own events, an array of scalars without `key_name` fails the object.
//! - `include_keys` values are put into each event (`Event.put`): a key the element has gets
//!   the included value in its place, the others are added after the element's keys in the
//!   order Java's `HashMap` iterates them (sorted by bucket of `String.hashCode`, then in the
//!   order met). `include_keys_metadata` go to the event's metadata attributes: sluice has no
//!   metadata, so they are handed out beside the event ([`Element::Event::metadata`]) for the
//!   source to map (onto record attributes, say).
//! - Jackson's limits: a string value (in an element, or taken for a key) over
//!   `max_event_length` UTF-16 units, a nesting deeper than 1000, a number of more than 1000
//!   digits or a field name of more than 50000 bytes fail the object ([`Error::Constraint`]).
//!   Jackson is strict: no comments, trailing commas, single quotes, `NaN` or leading zeroes;
//!   several root values in a row are allowed. Any syntax error fails the object
//!   ([`Error::Malformed`], naming the byte).
//!
//! Data Prepper's events are then what Jackson made of each element (`1.10` becomes `1.1`);
//! here an element's text is handed out as it is in the object (`include_keys` values spliced
//! in), for the deserializer to parse.
//!
//! # Not matched
//!
//! - Encodings: UTF-8 only (a byte order mark is skipped); Jackson also detects UTF-16/32.
//! - UTF-8 is checked strictly (overlong forms and encoded surrogates are malformed here,
//!   Jackson decodes them). A `\u` escape of a lone surrogate is kept in an element's text (the
//!   deserializer decides), and becomes U+FFFD in a value taken for `include_keys`.
//! - Jackson takes a field name that starts with the invalid byte 0xFF and otherwise equals a
//!   short name met before as that name (a bug in its symbol table); here it is malformed.
//! - `include_keys` entries are put as plain keys; Data Prepper's `Event.put` reads them as
//!   paths (`a/b` nests) and fails the object on characters outside `[A-Za-z0-9 .\-_@/~\[\]$()]`
//!   (the config layer may reject such entries up front). The `HashMap` order is exact unless
//!   eight or more keys share a bucket (Java then grows or treeifies the table).
//! - An element longer than `element_limit` is reported ([`Element::TooLong`], its head) and
//!   skipped, where Data Prepper has no bound.

use std::collections::HashMap;

use super::{show_byte, write_json_string};

/// The longest element kept by default (as [`crate::lines::LINE_LIMIT`]).
pub const ELEMENT_LIMIT: usize = 16 << 20;

/// Jackson's default longest string value (`StreamReadConstraints.DEFAULT_MAX_STRING_LEN`),
/// and the least `max_event_length` Data Prepper accepts.
pub const DEFAULT_MAX_STRING_LENGTH: usize = 20_000_000;

/// Jackson's fixed limits (`StreamReadConstraints`): Data Prepper sets none of them.
const MAX_DEPTH: usize = 1000;
const MAX_NUMBER_LENGTH: usize = 1000;
const MAX_NAME_LENGTH: usize = 50_000;

const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];
const REPLACEMENT: &[u8] = "\u{FFFD}".as_bytes();

/// What [`JsonSplitter`] reads (see the module doc for the YAML keys).
#[derive(Debug, Clone)]
pub struct JsonOptions {
    /// `key_name`: only arrays of this field are read.
    pub key_name: Option<String>,
    /// `include_keys`: top-level keys copied into each event.
    pub include_keys: Vec<String>,
    /// `include_keys_metadata`: top-level keys handed out beside each event.
    pub include_keys_metadata: Vec<String>,
    /// `max_event_length`: the longest string value, in UTF-16 units.
    pub max_string_length: usize,
    /// The longest element kept, in bytes; a longer one is reported and skipped.
    pub element_limit: usize,
}

impl Default for JsonOptions {
    fn default() -> Self {
        Self {
            key_name: None,
            include_keys: Vec::new(),
            include_keys_metadata: Vec::new(),
            max_string_length: DEFAULT_MAX_STRING_LENGTH,
            element_limit: ELEMENT_LIMIT,
        }
    }
}

/// One element of an array read as records.
#[derive(Debug, PartialEq, Eq)]
pub enum Element<'a> {
    Event {
        /// The element's number in the object, from 1 (too long ones counted): a stable
        /// position.
        ordinal: u64,
        /// Where the element starts in the object's bytes.
        offset: u64,
        /// The event: the element's JSON object text as in the object (`{}` for `null`),
        /// `include_keys` values put in.
        json: &'a [u8],
        /// `include_keys_metadata` values (`None`: JSON `null`), in Java's `HashMap` order.
        metadata: &'a [(String, Option<String>)],
    },
    /// An element longer than [`JsonOptions::element_limit`]: its first that many bytes.
    TooLong {
        ordinal: u64,
        offset: u64,
        head: &'a [u8],
    },
}

/// Why the object is not read on (Data Prepper fails the object there too).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("malformed JSON at byte {offset}: {reason}")]
    Malformed { offset: u64, reason: String },
    #[error(
        "the array element at byte {offset} is {found}, not an object: Data Prepper's `json` codec takes only objects (and `null`) from an array"
    )]
    NotAnObject { offset: u64, found: &'static str },
    #[error("{what} ({length}) at byte {offset} exceeds the maximum allowed ({limit}, {from})")]
    Constraint {
        offset: u64,
        what: &'static str,
        length: usize,
        limit: usize,
        from: &'static str,
    },
}

fn malformed(offset: u64, reason: impl Into<String>) -> Error {
    Error::Malformed {
        offset,
        reason: reason.into(),
    }
}

/// What a configured name is for.
#[derive(Debug, Default, Clone, Copy)]
struct Role {
    key_name: bool,
    include: bool,
    metadata: bool,
}

/// The tokenizer's place in the grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lex {
    /// At the very start: this many bytes of a UTF-8 byte order mark seen.
    Bom(u8),
    /// A value is expected (at the root, after `:`, after `,` in an array).
    Value,
    /// After `[`: a value or `]`.
    ValueOrEnd,
    /// After `{`: a name or `}`.
    NameOrEnd,
    /// After `,` in an object.
    Name,
    Colon,
    /// After a value: `,` or the container's end (or, at the root, another value).
    After,
    /// In a string (a name if `in_name`).
    Str,
    /// After `\` in a string.
    Escape,
    /// In `\uXXXX`: this many hex digits read.
    Hex(u8),
    /// In a UTF-8 sequence of a string: `need` more bytes, the next in `lo..=hi`.
    Utf8 {
        need: u8,
        lo: u8,
        hi: u8,
    },
    Number(Num),
    /// In `true`, `false` or `null`: `at` bytes of `word` matched.
    Word {
        word: &'static [u8],
        at: u8,
    },
    /// Just after a whole `true`, `false` or `null` (its first byte): the next byte must not
    /// go on the word.
    WordEnd(u8),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Num {
    Minus,
    Zero,
    Int,
    Dot,
    Frac,
    Exp,
    ExpSign,
    ExpDigits,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    StartObject,
    EndObject,
    StartArray,
    EndArray,
    Name,
    Str,
    Num,
    True,
    False,
    Null,
}

/// An open object or array; an object knows its current field name if it is a configured
/// one (`None` before the first name, or for any other name).
#[derive(Debug, Clone, Copy)]
struct Frame {
    object: bool,
    name: Option<u16>,
}

/// Data Prepper's loop (`JsonDecoder.parse`), as a state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// The walk over every token.
    Walk,
    /// The next token's value is taken for this configured name.
    Take(u16),
    /// In an array read as records (`parseRecordsArray`), opened at this depth.
    Records { depth: usize },
    /// In an object element whose own fields are at this depth.
    Element { depth: usize },
    /// The walk met an end of object: nothing after it is read.
    Done,
}

/// The values taken for `include_keys` (or `include_keys_metadata`): Java's
/// `HashMap<String, Object>`, so its iteration order too.
#[derive(Debug, Default)]
struct JavaMap {
    /// In the order first put.
    entries: Vec<(String, Option<String>)>,
    /// In the order Java iterates them.
    ordered: Vec<(String, Option<String>)>,
}

impl JavaMap {
    fn put(&mut self, key: &str, value: Option<String>) {
        match self.entries.iter_mut().find(|(k, _)| k == key) {
            Some(entry) => entry.1 = value,
            None => self.entries.push((key.to_owned(), value)),
        }
        // Java's table starts at 16 buckets and doubles past a load of 0.75; a bucket keeps
        // its entries in the order put, through every doubling.
        let mut buckets = 16;
        while self.entries.len() > buckets / 4 * 3 {
            buckets *= 2;
        }
        self.ordered = self.entries.clone();
        self.ordered
            .sort_by_key(|(k, _)| java_hash(k) as usize & (buckets - 1));
    }

    fn get(&self, key: &str) -> Option<&Option<String>> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

/// `HashMap.hash(key)`: `String.hashCode()` with its high half folded in.
fn java_hash(key: &str) -> u32 {
    let h = key.encode_utf16().fold(0u32, |h, unit| {
        h.wrapping_mul(31).wrapping_add(u32::from(unit))
    });
    h ^ (h >> 16)
}

/// The fields of the element being read whose value an `include_keys` value replaces.
#[derive(Debug, Default)]
struct Members {
    /// How many fields the element has (duplicates too).
    count: usize,
    /// The configured name of the current field and where its (container) value started.
    current: Option<(u16, Option<u64>)>,
    /// Spans of values to replace, from the element's start, and the name's index.
    replace: Vec<(usize, usize, u16)>,
}

/// Cuts an object's JSON into events, chunk by chunk (one splitter per object).
pub struct JsonSplitter {
    /// The configured names (`key_name`, `include_keys`, `include_keys_metadata`).
    names: HashMap<Box<[u8]>, u16>,
    roles: Vec<(String, Role)>,
    key_name: bool,
    includes: bool,
    max_string: usize,
    limit: usize,

    // The tokenizer.
    lex: Lex,
    stack: Vec<Frame>,
    /// The offset of the next chunk's first byte.
    offset: u64,
    /// Where the current token started.
    start: u64,
    in_name: bool,
    /// Keep the current string's (decoded) or number's text in `text`.
    decode: bool,
    /// Check the current string against `max_string`.
    limited: bool,
    text: Vec<u8>,
    /// A `\u` high surrogate waiting for its low half.
    high: Option<u16>,
    hex: u16,
    /// The current string's length in UTF-16 units and, for a name, in UTF-8 bytes.
    units: usize,
    name_bytes: usize,
    /// The current number's digits: before the point, after it, in the exponent.
    digits: [usize; 3],
    float: bool,

    // Data Prepper's loop.
    mode: Mode,
    keys: JavaMap,
    metadata: JavaMap,
    /// Where the current element started, and its start when it began in an earlier chunk.
    element: u64,
    partial: Vec<u8>,
    /// The current element is too long (reported): read to its end, keep nothing.
    skipping: bool,
    members: Members,
    merged: Vec<u8>,
    ordinal: u64,
    failed: Option<Error>,
}

impl JsonSplitter {
    pub fn new(options: JsonOptions) -> Self {
        let mut names = HashMap::new();
        let mut roles: Vec<(String, Role)> = Vec::new();
        let mut role = |name: &str, set: fn(&mut Role)| {
            let next = roles.len() as u16;
            let index = *names
                .entry(name.as_bytes().to_vec().into_boxed_slice())
                .or_insert(next);
            if index == next {
                roles.push((name.to_owned(), Role::default()));
            }
            set(&mut roles[usize::from(index)].1);
        };
        if let Some(name) = &options.key_name {
            role(name, |r| r.key_name = true);
        }
        for name in &options.include_keys {
            role(name, |r| r.include = true);
        }
        for name in &options.include_keys_metadata {
            role(name, |r| r.metadata = true);
        }
        Self {
            names,
            roles,
            key_name: options.key_name.is_some(),
            includes: !options.include_keys.is_empty(),
            max_string: options.max_string_length,
            limit: options.element_limit,
            lex: Lex::Bom(0),
            stack: Vec::new(),
            offset: 0,
            start: 0,
            in_name: false,
            decode: false,
            limited: false,
            text: Vec::new(),
            high: None,
            hex: 0,
            units: 0,
            name_bytes: 0,
            digits: [0; 3],
            float: false,
            mode: Mode::Walk,
            keys: JavaMap::default(),
            metadata: JavaMap::default(),
            element: 0,
            partial: Vec::new(),
            skipping: false,
            members: Members::default(),
            merged: Vec::new(),
            ordinal: 0,
            failed: None,
        }
    }

    /// Feeds the object's next `chunk`, handing each whole element to `out`. After an error
    /// the object is not read on: every later call returns the same error.
    pub fn feed(&mut self, chunk: &[u8], out: &mut impl FnMut(Element<'_>)) -> Result<(), Error> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let result = self.run(chunk, out);
        self.offset += chunk.len() as u64;
        if let Err(e) = &result {
            self.failed = Some(e.clone());
        }
        result
    }

    /// The end of the object: a `null` element its last byte ended (Jackson takes it before
    /// it finds the array unclosed), and an error if it ends inside a value Data Prepper
    /// would read.
    pub fn finish(&mut self, out: &mut impl FnMut(Element<'_>)) -> Result<(), Error> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let result = self.end(out);
        if let Err(e) = &result {
            self.failed = Some(e.clone());
        }
        result
    }

    fn end(&mut self, out: &mut impl FnMut(Element<'_>)) -> Result<(), Error> {
        if self.mode == Mode::Done {
            return Ok(());
        }
        let at = self.offset;
        match self.lex {
            Lex::Number(Num::Zero | Num::Int | Num::Frac | Num::ExpDigits) => {
                self.end_number(b' ', at, &[], at, out)?;
            }
            Lex::WordEnd(first) => {
                self.lex = Lex::After;
                self.token(word_token(first), self.start, at, &[], at, out)?;
            }
            _ => {}
        }
        if self.mode == Mode::Done {
            return Ok(());
        }
        match self.lex {
            Lex::Bom(0) | Lex::Value | Lex::After if self.stack.is_empty() => Ok(()),
            Lex::Str | Lex::Escape | Lex::Hex(_) | Lex::Utf8 { .. } => Err(malformed(
                at,
                format!(
                    "unexpected end of input in the string that starts at byte {}",
                    self.start
                ),
            )),
            _ => Err(malformed(
                at,
                match self.stack.last() {
                    Some(f) if f.object => "unexpected end of input: an object is not closed",
                    Some(_) => "unexpected end of input: an array is not closed",
                    None => "unexpected end of input in a value",
                },
            )),
        }
    }

    fn run(&mut self, chunk: &[u8], out: &mut impl FnMut(Element<'_>)) -> Result<(), Error> {
        let base = self.offset;
        let mut i = 0;
        while i < chunk.len() {
            if self.mode == Mode::Done {
                return Ok(());
            }
            let b = chunk[i];
            let at = base + i as u64;
            match self.lex {
                Lex::Bom(n) => {
                    if b == BOM[usize::from(n)] {
                        i += 1;
                        self.lex = if n == 2 { Lex::Value } else { Lex::Bom(n + 1) };
                    } else if n == 0 {
                        self.lex = Lex::Value;
                    } else {
                        return Err(malformed(at, "an incomplete byte order mark"));
                    }
                }
                Lex::Value | Lex::ValueOrEnd => {
                    i += 1;
                    if is_space(b) {
                        continue;
                    }
                    if b == b']' && self.lex == Lex::ValueOrEnd {
                        self.close(Tok::EndArray, at, chunk, base, out)?;
                    } else {
                        self.value(b, at, chunk, base, out)?;
                    }
                }
                Lex::NameOrEnd | Lex::Name => {
                    i += 1;
                    if is_space(b) {
                        continue;
                    }
                    match b {
                        b'"' => self.begin_string(true, at),
                        b'}' if self.lex == Lex::NameOrEnd => {
                            self.close(Tok::EndObject, at, chunk, base, out)?;
                        }
                        _ => {
                            return Err(malformed(
                                at,
                                format!(
                                    "unexpected {}: expected a field name in double quotes",
                                    show_byte(b)
                                ),
                            ));
                        }
                    }
                }
                Lex::Colon => {
                    i += 1;
                    match b {
                        b':' => self.lex = Lex::Value,
                        _ if is_space(b) => {}
                        _ => {
                            return Err(malformed(
                                at,
                                format!("unexpected {}: expected `:`", show_byte(b)),
                            ));
                        }
                    }
                }
                Lex::After => {
                    if is_space(b) {
                        i += 1;
                        continue;
                    }
                    let Some(top) = self.stack.last() else {
                        // Another root value: Jackson reads them one after the other.
                        self.lex = Lex::Value;
                        continue;
                    };
                    i += 1;
                    match (b, top.object) {
                        (b',', true) => self.lex = Lex::Name,
                        (b',', false) => self.lex = Lex::Value,
                        (b'}', true) => self.close(Tok::EndObject, at, chunk, base, out)?,
                        (b']', false) => self.close(Tok::EndArray, at, chunk, base, out)?,
                        (_, object) => {
                            return Err(malformed(
                                at,
                                format!(
                                    "unexpected {}: expected `,` or `{}`",
                                    show_byte(b),
                                    if object { '}' } else { ']' }
                                ),
                            ));
                        }
                    }
                }
                Lex::Str => {
                    let rest = &chunk[i..];
                    let run = rest
                        .iter()
                        .position(|&c| c < 0x20 || c == b'"' || c == b'\\' || c >= 0x80)
                        .unwrap_or(rest.len());
                    if run > 0 {
                        self.plain(&rest[..run])?;
                        i += run;
                        continue;
                    }
                    i += 1;
                    match b {
                        b'"' => self.end_string(at, chunk, base, out)?,
                        b'\\' => self.lex = Lex::Escape,
                        0x00..=0x1F => {
                            return Err(malformed(
                                at,
                                format!(
                                    "control character 0x{b:02X} in a string: it must be escaped"
                                ),
                            ));
                        }
                        _ => {
                            let (need, lo, hi, units) = match b {
                                0xC2..=0xDF => (1, 0x80, 0xBF, 1),
                                0xE0 => (2, 0xA0, 0xBF, 1),
                                0xE1..=0xEC | 0xEE | 0xEF => (2, 0x80, 0xBF, 1),
                                0xED => (2, 0x80, 0x9F, 1),
                                0xF0 => (3, 0x90, 0xBF, 2),
                                0xF1..=0xF3 => (3, 0x80, 0xBF, 2),
                                0xF4 => (3, 0x80, 0x8F, 2),
                                _ => return Err(malformed(at, "invalid UTF-8 in a string")),
                            };
                            self.raw(b, units)?;
                            self.lex = Lex::Utf8 { need, lo, hi };
                        }
                    }
                }
                Lex::Utf8 { need, lo, hi } => {
                    if !(lo..=hi).contains(&b) {
                        return Err(malformed(at, "invalid UTF-8 in a string"));
                    }
                    i += 1;
                    self.raw(b, 0)?;
                    self.lex = if need == 1 {
                        Lex::Str
                    } else {
                        Lex::Utf8 {
                            need: need - 1,
                            lo: 0x80,
                            hi: 0xBF,
                        }
                    };
                }
                Lex::Escape => {
                    i += 1;
                    let c = match b {
                        b'"' | b'\\' | b'/' => b,
                        b'b' => 0x08,
                        b'f' => 0x0C,
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'u' => {
                            self.hex = 0;
                            self.lex = Lex::Hex(0);
                            continue;
                        }
                        _ => {
                            return Err(malformed(
                                at,
                                format!("unrecognized character escape {}", show_byte(b)),
                            ));
                        }
                    };
                    self.escaped(c)?;
                    self.lex = Lex::Str;
                }
                Lex::Hex(n) => {
                    let Some(digit) = char::from(b).to_digit(16) else {
                        return Err(malformed(
                            at,
                            format!(
                                "unexpected {} in a \\u escape: expected a hex digit",
                                show_byte(b)
                            ),
                        ));
                    };
                    i += 1;
                    self.hex = self.hex << 4 | digit as u16;
                    if n == 3 {
                        self.unit(self.hex)?;
                        self.lex = Lex::Str;
                    } else {
                        self.lex = Lex::Hex(n + 1);
                    }
                }
                Lex::Number(num) => {
                    let next = match (num, b) {
                        (Num::Minus, b'0') => Num::Zero,
                        (Num::Minus, b'1'..=b'9') => Num::Int,
                        (Num::Minus, _) => {
                            return Err(malformed(
                                at,
                                format!("unexpected {}: expected a digit after `-`", show_byte(b)),
                            ));
                        }
                        (Num::Zero, b'0'..=b'9') => {
                            return Err(malformed(at, "leading zeroes are not allowed"));
                        }
                        (Num::Int, b'0'..=b'9') => Num::Int,
                        (Num::Zero | Num::Int, b'.') => Num::Dot,
                        (Num::Dot | Num::Frac, b'0'..=b'9') => Num::Frac,
                        (Num::Dot, _) => {
                            return Err(malformed(at, "a decimal point not followed by a digit"));
                        }
                        (Num::Zero | Num::Int | Num::Frac, b'e' | b'E') => Num::Exp,
                        (Num::Exp, b'+' | b'-') => Num::ExpSign,
                        (Num::Exp | Num::ExpSign | Num::ExpDigits, b'0'..=b'9') => Num::ExpDigits,
                        (Num::Exp | Num::ExpSign, _) => {
                            return Err(malformed(
                                at,
                                "an exponent indicator not followed by a digit",
                            ));
                        }
                        // Anything else ends the number; the byte is read again after it.
                        _ => {
                            self.end_number(b, at, chunk, base, out)?;
                            continue;
                        }
                    };
                    let slot = match next {
                        Num::Zero | Num::Int => 0,
                        Num::Frac => 1,
                        Num::ExpDigits => 2,
                        _ => {
                            self.float = true;
                            3
                        }
                    };
                    // The rest of a run of digits at once.
                    let run = if slot < 3 {
                        1 + chunk[i + 1..]
                            .iter()
                            .take_while(|c| c.is_ascii_digit())
                            .count()
                    } else {
                        1
                    };
                    let run = if next == Num::Zero { 1 } else { run };
                    if slot < 3 {
                        self.digits[slot] += run;
                    }
                    if self.decode {
                        self.text.extend_from_slice(&chunk[i..i + run]);
                    }
                    i += run;
                    self.lex = Lex::Number(next);
                }
                Lex::Word { word, at: matched } => {
                    if b != word[usize::from(matched)] {
                        return Err(malformed(
                            self.start,
                            format!(
                                "unrecognized token: expected `{}`",
                                String::from_utf8_lossy(word)
                            ),
                        ));
                    }
                    i += 1;
                    self.lex = if usize::from(matched) + 1 == word.len() {
                        Lex::WordEnd(word[0])
                    } else {
                        Lex::Word {
                            word,
                            at: matched + 1,
                        }
                    };
                }
                Lex::WordEnd(first) => {
                    // As Jackson's `_checkMatchEnd`: a letter, digit, `_` or `$` would go on
                    // the word.
                    if b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80 {
                        return Err(malformed(
                            self.start,
                            format!(
                                "unrecognized token: {} goes on after `{}`",
                                show_byte(b),
                                String::from_utf8_lossy(word_text(first))
                            ),
                        ));
                    }
                    self.lex = Lex::After;
                    self.token(word_token(first), self.start, at, chunk, base, out)?;
                }
            }
        }
        self.keep(chunk, base, out);
        Ok(())
    }

    /// A value starts with `b` at `at` (whitespace skipped).
    fn value(
        &mut self,
        b: u8,
        at: u64,
        chunk: &[u8],
        base: u64,
        out: &mut impl FnMut(Element<'_>),
    ) -> Result<(), Error> {
        self.start = at;
        match b {
            b'{' | b'[' => {
                let object = b == b'{';
                if self.stack.len() >= MAX_DEPTH {
                    return Err(Error::Constraint {
                        offset: at,
                        what: "document nesting depth",
                        length: self.stack.len() + 1,
                        limit: MAX_DEPTH,
                        from: "Jackson's fixed limit",
                    });
                }
                self.stack.push(Frame { object, name: None });
                self.lex = if object {
                    Lex::NameOrEnd
                } else {
                    Lex::ValueOrEnd
                };
                let tok = if object {
                    Tok::StartObject
                } else {
                    Tok::StartArray
                };
                self.token(tok, at, at + 1, chunk, base, out)
            }
            b'"' => {
                self.begin_string(false, at);
                Ok(())
            }
            b'-' | b'0'..=b'9' => {
                self.decode = matches!(self.mode, Mode::Take(_));
                self.text.clear();
                if self.decode {
                    self.text.push(b);
                }
                self.float = false;
                self.digits = [usize::from(b != b'-'), 0, 0];
                self.lex = Lex::Number(match b {
                    b'-' => Num::Minus,
                    b'0' => Num::Zero,
                    _ => Num::Int,
                });
                Ok(())
            }
            b't' | b'f' | b'n' => {
                self.lex = Lex::Word {
                    word: word_text(b),
                    at: 1,
                };
                Ok(())
            }
            _ => Err(malformed(
                at,
                format!("unexpected {}: expected a value", show_byte(b)),
            )),
        }
    }

    /// `]` or `}` at `at` closes the innermost container.
    fn close(
        &mut self,
        tok: Tok,
        at: u64,
        chunk: &[u8],
        base: u64,
        out: &mut impl FnMut(Element<'_>),
    ) -> Result<(), Error> {
        self.stack.pop();
        self.lex = Lex::After;
        self.token(tok, at, at + 1, chunk, base, out)
    }

    fn end_number(
        &mut self,
        b: u8,
        at: u64,
        chunk: &[u8],
        base: u64,
        out: &mut impl FnMut(Element<'_>),
    ) -> Result<(), Error> {
        let [int, frac, exp] = self.digits;
        let length = if self.float { int + frac + exp } else { int };
        if length > MAX_NUMBER_LENGTH {
            return Err(Error::Constraint {
                offset: self.start,
                what: "number value length",
                length,
                limit: MAX_NUMBER_LENGTH,
                from: "Jackson's fixed limit",
            });
        }
        if self.stack.is_empty() && !is_space(b) {
            return Err(malformed(
                at,
                format!(
                    "unexpected {}: expected a space separating root-level values",
                    show_byte(b)
                ),
            ));
        }
        self.lex = Lex::After;
        self.token(Tok::Num, self.start, at, chunk, base, out)
    }

    fn begin_string(&mut self, name: bool, at: u64) {
        self.start = at;
        self.in_name = name;
        self.decode = match self.mode {
            Mode::Walk => name,
            Mode::Take(_) => true,
            Mode::Element { depth } => name && self.includes && self.stack.len() == depth,
            Mode::Records { .. } | Mode::Done => false,
        };
        // Jackson checks the length of the strings it decodes: values in an element (or one
        // an element would be), or taken for a key; names have their own limit.
        self.limited = !name && !matches!(self.mode, Mode::Walk | Mode::Done);
        self.text.clear();
        self.high = None;
        self.units = 0;
        self.name_bytes = 0;
        self.lex = Lex::Str;
    }

    fn end_string(
        &mut self,
        at: u64,
        chunk: &[u8],
        base: u64,
        out: &mut impl FnMut(Element<'_>),
    ) -> Result<(), Error> {
        self.flush_high();
        let (tok, lex) = if self.in_name {
            (Tok::Name, Lex::Colon)
        } else {
            (Tok::Str, Lex::After)
        };
        self.lex = lex;
        self.token(tok, self.start, at + 1, chunk, base, out)
    }

    /// A run of printable ASCII in a string.
    fn plain(&mut self, run: &[u8]) -> Result<(), Error> {
        self.flush_high();
        self.units += run.len();
        self.name_bytes += run.len();
        if self.decode {
            self.text.extend_from_slice(run);
        }
        self.check_string()
    }

    /// One byte of a UTF-8 sequence in a string, `units` UTF-16 units for a lead byte.
    fn raw(&mut self, b: u8, units: usize) -> Result<(), Error> {
        self.flush_high();
        self.units += units;
        self.name_bytes += 1;
        if self.decode {
            self.text.push(b);
        }
        self.check_string()
    }

    /// A one-letter escape, decoded.
    fn escaped(&mut self, c: u8) -> Result<(), Error> {
        self.flush_high();
        self.units += 1;
        self.name_bytes += 1;
        if self.decode {
            self.text.push(c);
        }
        self.check_string()
    }

    /// A `\uXXXX` escape.
    fn unit(&mut self, unit: u16) -> Result<(), Error> {
        self.units += 1;
        // Jackson counts a name's bytes with each escaped unit UTF-8 encoded on its own.
        self.name_bytes += match unit {
            0..0x80 => 1,
            0x80..0x800 => 2,
            _ => 3,
        };
        if self.decode {
            match unit {
                0xD800..=0xDBFF => {
                    self.flush_high();
                    self.high = Some(unit);
                }
                0xDC00..=0xDFFF => match self.high.take() {
                    Some(high) => {
                        let c = 0x10000
                            + ((u32::from(high) - 0xD800) << 10)
                            + (u32::from(unit) - 0xDC00);
                        let c = char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER);
                        self.text
                            .extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                    }
                    None => self.text.extend_from_slice(REPLACEMENT),
                },
                _ => {
                    self.flush_high();
                    let c = char::from_u32(u32::from(unit)).unwrap_or(char::REPLACEMENT_CHARACTER);
                    self.text
                        .extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                }
            }
        }
        self.check_string()
    }

    /// A high surrogate with no low half after it is a lone one.
    fn flush_high(&mut self) {
        if self.high.take().is_some() {
            self.text.extend_from_slice(REPLACEMENT);
        }
    }

    fn check_string(&self) -> Result<(), Error> {
        if self.in_name && self.name_bytes > MAX_NAME_LENGTH {
            return Err(Error::Constraint {
                offset: self.start,
                what: "name length",
                length: self.name_bytes,
                limit: MAX_NAME_LENGTH,
                from: "Jackson's fixed limit",
            });
        }
        if self.limited && self.units > self.max_string {
            return Err(Error::Constraint {
                offset: self.start,
                what: "string value length",
                length: self.units,
                limit: self.max_string,
                from: "`max_event_length`",
            });
        }
        Ok(())
    }

    /// The name Jackson's `currentName()` gives `tok` (if a configured one); the stack is
    /// already past `tok` (a start pushed, an end popped).
    fn current_name(&self, tok: Tok) -> Option<u16> {
        let frame = match tok {
            Tok::StartObject | Tok::StartArray => {
                self.stack.len().checked_sub(2).map(|i| self.stack[i])
            }
            _ => self.stack.last().copied(),
        };
        frame.filter(|f| f.object).and_then(|f| f.name)
    }

    /// A field name (decoded in `text`) becomes its object's current name.
    fn set_name(&mut self) {
        let name = self.names.get(self.text.as_slice()).copied();
        if let Some(frame) = self.stack.last_mut() {
            frame.name = name;
        }
    }

    /// Data Prepper's loop takes the token `tok` (bytes `start..end`).
    fn token(
        &mut self,
        tok: Tok,
        start: u64,
        end: u64,
        chunk: &[u8],
        base: u64,
        out: &mut impl FnMut(Element<'_>),
    ) -> Result<(), Error> {
        match self.mode {
            Mode::Done => {}
            Mode::Walk => {
                if tok == Tok::EndObject {
                    self.mode = Mode::Done;
                    return Ok(());
                }
                if tok == Tok::Name {
                    self.set_name();
                }
                let name = self.current_name(tok);
                if let Some(index) = name {
                    let role = self.roles[usize::from(index)].1;
                    if role.include || role.metadata {
                        self.mode = Mode::Take(index);
                        return Ok(());
                    }
                }
                let wanted = !self.key_name
                    || name.is_some_and(|index| self.roles[usize::from(index)].1.key_name);
                if tok == Tok::StartArray && wanted {
                    self.mode = Mode::Records {
                        depth: self.stack.len(),
                    };
                }
            }
            Mode::Take(index) => {
                if tok == Tok::Name {
                    self.set_name();
                }
                let value = match tok {
                    Tok::Str | Tok::Name | Tok::Num => {
                        Some(String::from_utf8_lossy(&self.text).into_owned())
                    }
                    Tok::True => Some("true".to_owned()),
                    Tok::False => Some("false".to_owned()),
                    _ => None,
                };
                let (key, role) = &self.roles[usize::from(index)];
                if role.include {
                    self.keys.put(key, value.clone());
                }
                if role.metadata {
                    self.metadata.put(key, value);
                }
                self.mode = Mode::Walk;
            }
            Mode::Records { depth } => match tok {
                Tok::EndArray => self.mode = Mode::Walk,
                Tok::StartObject => {
                    self.mode = Mode::Element { depth: depth + 1 };
                    self.element = start;
                    self.skipping = false;
                    self.partial.clear();
                    self.members = Members::default();
                }
                Tok::Null => {
                    self.members = Members::default();
                    self.ordinal += 1;
                    emit(
                        self.ordinal,
                        start,
                        b"{}",
                        &self.members,
                        &self.roles,
                        &self.keys,
                        &self.metadata,
                        &mut self.merged,
                        out,
                    );
                }
                _ => {
                    return Err(Error::NotAnObject {
                        offset: start,
                        found: match tok {
                            Tok::StartArray => "an array",
                            Tok::Str => "a string",
                            Tok::Num => "a number",
                            _ => "a boolean",
                        },
                    });
                }
            },
            Mode::Element { depth } => {
                let level = self.stack.len();
                if self.includes && !self.skipping {
                    let members = &mut self.members;
                    let offset = |at: u64| (at - self.element) as usize;
                    match tok {
                        Tok::Name if level == depth => {
                            members.count += 1;
                            members.current = self
                                .names
                                .get(self.text.as_slice())
                                .filter(|&&i| self.roles[usize::from(i)].1.include)
                                .map(|&i| (i, None));
                        }
                        Tok::StartObject | Tok::StartArray if level == depth + 1 => {
                            if let Some((_, from)) = &mut members.current {
                                *from = Some(start);
                            }
                        }
                        Tok::EndObject | Tok::EndArray if level == depth => {
                            if let Some((index, Some(from))) = members.current.take() {
                                members.replace.push((offset(from), offset(end), index));
                            }
                        }
                        Tok::Str | Tok::Num | Tok::True | Tok::False | Tok::Null
                            if level == depth =>
                        {
                            if let Some((index, _)) = members.current.take() {
                                members.replace.push((offset(start), offset(end), index));
                            }
                        }
                        _ => {}
                    }
                }
                if tok == Tok::EndObject && level + 1 == depth {
                    self.mode = Mode::Records { depth: level };
                    self.element_end(end, chunk, base, out);
                }
            }
        }
        Ok(())
    }

    /// The current element ends before `end` (in `chunk`, which starts at `base`).
    fn element_end(
        &mut self,
        end: u64,
        chunk: &[u8],
        base: u64,
        out: &mut impl FnMut(Element<'_>),
    ) {
        if self.skipping {
            self.skipping = false;
            return;
        }
        let end = (end - base) as usize;
        let raw: &[u8] = if self.element >= base {
            &chunk[(self.element - base) as usize..end]
        } else {
            self.partial.extend_from_slice(&chunk[..end]);
            &self.partial
        };
        self.ordinal += 1;
        if raw.len() > self.limit {
            out(Element::TooLong {
                ordinal: self.ordinal,
                offset: self.element,
                head: &raw[..self.limit],
            });
        } else {
            emit(
                self.ordinal,
                self.element,
                raw,
                &self.members,
                &self.roles,
                &self.keys,
                &self.metadata,
                &mut self.merged,
                out,
            );
        }
        self.partial.clear();
    }

    /// At the end of a chunk: keeps the current element's bytes so far, or reports it once it
    /// is too long.
    fn keep(&mut self, chunk: &[u8], base: u64, out: &mut impl FnMut(Element<'_>)) {
        if !matches!(self.mode, Mode::Element { .. }) || self.skipping {
            return;
        }
        let bytes = &chunk[self.element.saturating_sub(base) as usize..];
        let room = self.limit - self.partial.len();
        if bytes.len() <= room {
            self.partial.extend_from_slice(bytes);
            return;
        }
        self.partial.extend_from_slice(&bytes[..room]);
        self.ordinal += 1;
        out(Element::TooLong {
            ordinal: self.ordinal,
            offset: self.element,
            head: &self.partial,
        });
        self.partial = Vec::new();
        self.skipping = true;
    }
}

/// Hands out the element `raw`, `include_keys` values put in.
#[expect(
    clippy::too_many_arguments,
    reason = "the splitter's fields, borrowed apart from the element's bytes"
)]
fn emit(
    ordinal: u64,
    offset: u64,
    raw: &[u8],
    members: &Members,
    roles: &[(String, Role)],
    keys: &JavaMap,
    metadata: &JavaMap,
    merged: &mut Vec<u8>,
    out: &mut impl FnMut(Element<'_>),
) {
    let json = if keys.ordered.is_empty() {
        raw
    } else {
        merge(raw, members, roles, keys, merged);
        merged.as_slice()
    };
    out(Element::Event {
        ordinal,
        offset,
        json,
        metadata: &metadata.ordered,
    });
}

/// `raw` (an object's text) with each `include_keys` value put as `Event.put` does: in place
/// of the element's own value, else after its fields in the map's order.
fn merge(
    raw: &[u8],
    members: &Members,
    roles: &[(String, Role)],
    keys: &JavaMap,
    out: &mut Vec<u8>,
) {
    out.clear();
    let body = &raw[..raw.len() - 1];
    let mut at = 0;
    for &(from, to, index) in &members.replace {
        if let Some(value) = keys.get(&roles[usize::from(index)].0) {
            out.extend_from_slice(&body[at..from]);
            write_value(out, value.as_deref());
            at = to;
        }
    }
    out.extend_from_slice(&body[at..]);
    let mut comma = members.count > 0;
    for (key, value) in &keys.ordered {
        let present = members
            .replace
            .iter()
            .any(|&(_, _, index)| roles[usize::from(index)].0 == *key);
        if present {
            continue;
        }
        if comma {
            out.push(b',');
        }
        comma = true;
        write_json_string(out, key);
        out.push(b':');
        write_value(out, value.as_deref());
    }
    out.push(b'}');
}

fn write_value(out: &mut Vec<u8>, value: Option<&str>) {
    match value {
        Some(v) => write_json_string(out, v),
        None => out.extend_from_slice(b"null"),
    }
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

fn word_text(first: u8) -> &'static [u8] {
    match first {
        b't' => b"true",
        b'f' => b"false",
        _ => b"null",
    }
}

fn word_token(first: u8) -> Tok {
    match first {
        b't' => Tok::True,
        b'f' => Tok::False,
        _ => Tok::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a splitter hands out for `chunks`: each event's JSON (with `@metadata` when there
    /// is any), `!offset:len` for a too long one, and `ERR ...` for an error.
    fn split_with(options: &JsonOptions, chunks: &[&[u8]]) -> Vec<String> {
        super::super::decode_chunks(JsonSplitter::new(options.clone()), chunks, |e| match e {
            Element::Event { json, metadata, .. } if !metadata.is_empty() => {
                format!("{} @{metadata:?}", String::from_utf8_lossy(json))
            }
            Element::Event { json, .. } => String::from_utf8_lossy(json).into_owned(),
            Element::TooLong { offset, head, .. } => format!("!{offset}:{}", head.len()),
        })
    }

    impl super::super::Decoder for JsonSplitter {
        type Piece<'a> = Element<'a>;
        type Error = Error;
        fn feed(&mut self, chunk: &[u8], out: &mut impl FnMut(Element<'_>)) -> Result<(), Error> {
            JsonSplitter::feed(self, chunk, out)
        }
        fn finish(&mut self, out: &mut impl FnMut(Element<'_>)) -> Result<(), Error> {
            JsonSplitter::finish(self, out)
        }
    }

    fn split(text: &str) -> Vec<String> {
        split_with(&JsonOptions::default(), &[text.as_bytes()])
    }

    fn keyed(key_name: Option<&str>, include: &[&str], metadata: &[&str]) -> JsonOptions {
        JsonOptions {
            key_name: key_name.map(str::to_owned),
            include_keys: include.iter().map(|s| s.to_string()).collect(),
            include_keys_metadata: metadata.iter().map(|s| s.to_string()).collect(),
            ..JsonOptions::default()
        }
    }

    /// Every way of cutting `text` ([`super::super::cuts`]) gives what feeding it whole
    /// gives.
    fn same_when_cut(options: &JsonOptions, text: &[u8]) -> Vec<String> {
        let whole = split_with(options, &[text]);
        for (how, chunks) in super::super::cuts(text, 0x9E37_79B9_7F4A_7C15_u64) {
            assert_eq!(split_with(options, &chunks), whole, "{how}");
        }
        whole
    }

    #[test]
    fn each_object_of_a_top_level_array_is_an_event_as_written() {
        assert_eq!(
            split(" [ {\"a\": 1.50, \"b\" : [1, {\"c\":null}]} ,\n{}, {\"x\":\"y\"} ] "),
            [
                r#"{"a": 1.50, "b" : [1, {"c":null}]}"#,
                "{}",
                r#"{"x":"y"}"#
            ]
        );
        assert_eq!(split("[]"), Vec::<String>::new());
        assert_eq!(split(""), Vec::<String>::new());
        assert_eq!(split("  \n"), Vec::<String>::new());
    }

    #[test]
    fn strings_with_escapes_and_brackets_do_not_end_an_element() {
        let text = r#"[{"a":"]}\"[{\\","b\"}":"\u00e9\ud83d\ude00 é"},{"c":"\/"}]"#;
        assert_eq!(
            split(text),
            [
                r#"{"a":"]}\"[{\\","b\"}":"\u00e9\ud83d\ude00 é"}"#,
                r#"{"c":"\/"}"#
            ]
        );
    }

    #[test]
    fn every_array_of_the_top_level_object_is_read_unless_key_name_picks_one() {
        let text = r#"{"first":[{"a":1}],"n":2,"second":[{"b":2}]}"#;
        assert_eq!(split(text), [r#"{"a":1}"#, r#"{"b":2}"#]);
        let second = keyed(Some("second"), &[], &[]);
        assert_eq!(
            split_with(&second, &[br#"{"first":[1,2],"n":2,"second":[{"b":2}]}"#]),
            [r#"{"b":2}"#]
        );
        // The walk goes into the elements of other arrays: the first end of an object there
        // ends it.
        assert_eq!(
            split_with(&second, &[text.as_bytes()]),
            Vec::<String>::new()
        );
        // A `key_name` array nested there is read, up to the first end of an object.
        let nested = r#"{"outer":[{"second":[{"c":3}]},{"second":[{"d":4}]}]}"#;
        assert_eq!(split_with(&second, &[nested.as_bytes()]), [r#"{"c":3}"#]);
        assert_eq!(
            split_with(&second, &[br#"[{"a":1}]"#]),
            Vec::<String>::new(),
            "with key_name, a top-level array is not read"
        );
    }

    #[test]
    fn the_walk_stops_at_the_first_end_of_an_object_as_data_preppers_does() {
        // An object-valued field before the array ends the read, without an error.
        assert_eq!(
            split(r#"{"meta":{"x":1},"records":[{"a":1}]}"#),
            Vec::<String>::new()
        );
        // After the top-level object nothing is read, not even garbage.
        assert_eq!(split(r#"{"r":[{"a":1}]} garbage"#), [r#"{"a":1}"#]);
        // After a top-level array the next root value is read.
        assert_eq!(
            split(r#"[{"a":1}] [{"b":2}]"#),
            [r#"{"a":1}"#, r#"{"b":2}"#]
        );
        assert_eq!(
            split(r#"[{"a":1}] x"#),
            [
                r#"{"a":1}"#,
                "ERR malformed JSON at byte 10: unexpected `x`: expected a value"
            ]
        );
        assert_eq!(split(r#""just a string" 12 true"#), Vec::<String>::new());
    }

    #[test]
    fn a_null_element_is_an_empty_event_and_a_scalar_or_array_fails_the_object() {
        assert_eq!(split("[null, {\"a\":1}]"), ["{}", r#"{"a":1}"#]);
        assert_eq!(
            split("[null"),
            [
                "{}",
                "ERR malformed JSON at byte 5: unexpected end of input: an array is not closed"
            ],
            "Jackson takes a null at the very end before it finds the array unclosed"
        );
        assert_eq!(
            split(r#"[{"a":1}, 1, {"b":2}]"#),
            [
                r#"{"a":1}"#,
                "ERR the array element at byte 10 is a number, not an object: Data Prepper's `json` codec takes only objects (and `null`) from an array"
            ]
        );
        for (text, found) in [
            (r#"["a"]"#, "a string"),
            ("[true]", "a boolean"),
            ("[[{}]]", "an array"),
        ] {
            let got = split(text);
            assert_eq!(got.len(), 1, "{text}");
            assert!(got[0].contains(found), "{text}: {got:?}");
        }
        // Without key_name, an array of scalars anywhere in the walk fails the object.
        assert!(split(r#"{"tags":["x"],"records":[{"a":1}]}"#)[0].starts_with("ERR"));
        let records = keyed(Some("records"), &[], &[]);
        assert_eq!(
            split_with(&records, &[br#"{"tags":["x"],"records":[{"a":1}]}"#]),
            [r#"{"a":1}"#]
        );
    }

    #[test]
    fn include_keys_seen_before_the_array_are_put_into_each_event() {
        let options = keyed(None, &["bucket", "n", "flag", "none", "obj"], &[]);
        let text = r#"{"bucket":"b\u00e9","n":1.50,"flag":true,"none":null,
            "records":[{"x":1},{"bucket":"own","y":2},{ }],"after":"late"}"#;
        assert_eq!(
            split_with(&options, &[text.as_bytes()]),
            [
                r#"{"x":1,"bucket":"bé","flag":"true","none":null,"n":"1.50"}"#,
                r#"{"bucket":"bé","y":2,"flag":"true","none":null,"n":"1.50"}"#,
                r#"{ "bucket":"bé","flag":"true","none":null,"n":"1.50"}"#,
            ]
        );
        // A key after the array is not known when its elements are read.
        let late = keyed(None, &["after"], &[]);
        assert_eq!(
            split_with(&late, &[br#"{"r":[{"x":1}],"after":"late"}"#]),
            [r#"{"x":1}"#]
        );
        // An object value is taken as null, and its end ends the walk.
        let obj = keyed(None, &["obj"], &[]);
        assert_eq!(
            split_with(&obj, &[br#"{"obj":{"k":1},"r":[{"x":1}]}"#]),
            Vec::<String>::new()
        );
        // An array value is taken as null (not read as records), and the walk goes into it:
        // its end, named after the key, takes the next token (a field name) as the value.
        let arr = keyed(None, &["a"], &[]);
        assert_eq!(
            split_with(&arr, &[br#"{"a":[5],"b":"x","r":[{"x":1}]}"#]),
            [r#"{"x":1,"a":"b"}"#]
        );
        // An element's own value of an included key is replaced where it is, nested values
        // are left alone.
        let bucket = keyed(None, &["bucket"], &[]);
        assert_eq!(
            split_with(
                &bucket,
                &[br#"{"bucket":"b","r":[{"bucket":{"deep":[1]},"in":{"bucket":2}},null]}"#]
            ),
            [r#"{"bucket":"b","in":{"bucket":2}}"#, r#"{"bucket":"b"}"#]
        );
    }

    #[test]
    fn include_keys_are_added_in_java_hashmap_order() {
        // "b" hashes to bucket 2, "aa" (3104) to bucket 0, "z" to 10: Java iterates aa, b, z
        // whatever the order they were met in.
        let options = keyed(None, &["z", "b", "aa"], &[]);
        assert_eq!(
            split_with(&options, &[br#"{"z":"1","b":"2","aa":"3","r":[{}]}"#]),
            [r#"{"aa":"3","b":"2","z":"1"}"#]
        );
        let mut map = JavaMap::default();
        for key in ["c", "b", "a"] {
            map.put(key, None);
        }
        let order: Vec<&str> = map.ordered.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(order, ["a", "b", "c"]);
        // Sixteen buckets hold at most 12 keys: with 13, "a" (97) and "q" (113) part.
        let mut map = JavaMap::default();
        for key in [
            "q", "a", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9", "k10",
        ] {
            map.put(key, None);
        }
        assert_eq!(java_hash("q") & 15, java_hash("a") & 15);
        let position = |map: &JavaMap, key: &str| map.ordered.iter().position(|(k, _)| k == key);
        assert!(
            position(&map, "q") < position(&map, "a"),
            "same bucket: as put"
        );
        map.put("k11", None);
        assert!(
            position(&map, "a") < position(&map, "q"),
            "32 buckets: 1 before 17"
        );
    }

    #[test]
    fn include_keys_metadata_are_handed_out_beside_each_event() {
        let options = keyed(None, &["k"], &["k", "m"]);
        assert_eq!(
            split_with(&options, &[br#"{"m":7,"k":"v","r":[{"a":1}]}"#]),
            [r#"{"a":1,"k":"v"} @[("k", Some("v")), ("m", Some("7"))]"#]
        );
    }

    #[test]
    fn malformed_json_is_an_error_naming_the_byte() {
        let cases = [
            (
                r#"[{"a":1,}]"#,
                "byte 8: unexpected `}`: expected a field name",
            ),
            (r#"[{"a" 1}]"#, "byte 6: unexpected `1`: expected `:`"),
            (r#"[{"a":01}]"#, "byte 7: leading zeroes"),
            (r#"[{"a":1.}]"#, "byte 8: a decimal point"),
            (r#"[{"a":-x}]"#, "byte 7: unexpected `x`: expected a digit"),
            (r#"[{"a":1e}]"#, "byte 8: an exponent"),
            (
                r#"[{"a":tru}]"#,
                "byte 6: unrecognized token: expected `true`",
            ),
            (r#"[{"a":nulls}]"#, "byte 6: unrecognized token"),
            (
                r#"[{"a":"\x"}]"#,
                "byte 8: unrecognized character escape `x`",
            ),
            (
                r#"[{"a":"\u12g4"}]"#,
                "byte 11: unexpected `g` in a \\u escape",
            ),
            ("[{\"a\":\"\n\"}]", "byte 7: control character 0x0A"),
            ("[{\"a\":\"\u{e9}\"}]", ""),
            (r#"[{"a":1]"#, "byte 7: unexpected `]`: expected `,` or `}`"),
            (
                r#"[{"a":1}}"#,
                "byte 8: unexpected `}`: expected `,` or `]`",
            ),
            (
                r#"[{"a":1}"#,
                "byte 8: unexpected end of input: an array is not closed",
            ),
            (
                r#"[{"a":"x"#,
                "byte 8: unexpected end of input in the string that starts at byte 6",
            ),
            ("[{'a':1}]", "byte 2: unexpected `'`"),
            (
                "1x",
                "byte 1: unexpected `x`: expected a space separating root-level values",
            ),
            ("-", "byte 1: unexpected end of input in a value"),
            ("\u{feff}[{}]", ""),
        ];
        for (text, wanted) in cases {
            let got = split(text);
            if wanted.is_empty() {
                assert!(!got.iter().any(|g| g.starts_with("ERR")), "{text}: {got:?}");
            } else {
                let last = got.last().expect("an error");
                assert!(
                    last.starts_with(&format!("ERR malformed JSON at {wanted}")),
                    "{text}: {got:?}"
                );
            }
        }
        let invalid = [
            b"[{\"a\":\"\xC3\x28\"}]".as_slice(),
            b"[{\"a\":\"\xED\xA0\x80\"}]",
        ];
        for text in invalid {
            assert_eq!(
                split_with(&JsonOptions::default(), &[text]),
                ["ERR malformed JSON at byte 8: invalid UTF-8 in a string"]
            );
        }
        assert_eq!(
            split_with(&JsonOptions::default(), &[b"\xEF\xBB["]),
            ["ERR malformed JSON at byte 2: an incomplete byte order mark"]
        );
    }

    #[test]
    fn jacksons_limits_fail_the_object() {
        let deep = format!("{}{}", "[".repeat(1000), "]".repeat(1000));
        let walk_only = keyed(Some("none"), &[], &[]);
        assert_eq!(
            split_with(&walk_only, &[deep.as_bytes()]),
            Vec::<String>::new()
        );
        let deeper = format!("[{}{}]", "{\"a\":".repeat(1000), "}".repeat(1000));
        assert_eq!(
            split(&deeper),
            [
                "ERR document nesting depth (1001) at byte 4996 exceeds the maximum allowed (1000, Jackson's fixed limit)"
            ]
        );
        let long = format!("[{{\"a\":-{}.{}e1}}]", "1".repeat(500), "2".repeat(500));
        assert!(split(&long)[0].starts_with("ERR number value length (1001)"));
        let options = JsonOptions {
            max_string_length: 4,
            ..keyed(None, &["k"], &[])
        };
        assert_eq!(
            split_with(&options, &[r#"[{"a":"1234","b":"\u00e9😀é"}]"#.as_bytes()]),
            [r#"{"a":"1234","b":"\u00e9😀é"}"#],
            "four UTF-16 units each"
        );
        assert_eq!(
            split_with(&options, &[br#"{"long":"12345","r":[{"a":"12345"}]}"#]),
            [
                "ERR string value length (5) at byte 26 exceeds the maximum allowed (4, `max_event_length`)"
            ],
            "only strings Jackson decodes are checked"
        );
        assert!(
            split_with(&options, &[br#"{"k":"12345","r":[]}"#])[0].starts_with("ERR string"),
            "a value taken for a key is"
        );
        let name = format!("[{{\"{}\":1}}]", "n".repeat(50_001));
        assert!(split(&name)[0].starts_with("ERR name length (50001)"));
    }

    #[test]
    fn an_element_past_the_limit_is_reported_and_skipped() {
        let options = JsonOptions {
            element_limit: 10,
            ..JsonOptions::default()
        };
        let text = br#"[{"a":"12345678"},{"b":1},{"c":"123456789012345678901234567890"},{}]"#;
        assert_eq!(
            same_when_cut(&options, text),
            ["!1:10", r#"{"b":1}"#, "!26:10", "{}"]
        );
    }

    #[test]
    fn any_cut_of_the_input_gives_the_same_events() {
        let options = keyed(None, &["k", "n"], &["k"]);
        let texts: [&[u8]; 6] = [
            br#" {"k":"v\"\u00e9\ud83d\ude00","n":-12.5e+3,"r":[{"a":"]}[{","b":[1,{"c":null}]},null,{"k":1,"d":"\u00e9"}],"s":[{}]} "#,
            "\u{feff}[{\"é\":\"😀 \\\\\"}, {\"x\":true}]\n[{\"y\":false}]".as_bytes(),
            br#"[{"a":1},{"b":2},3]"#,
            br#"[{"a":1},{"b":2"#,
            br#"{"m":{"x":1},"r":[{"a":1}]} [ garbage"#,
            b"[{\"a\":\"\xE2\x82\xAC\xF0\x9F\x98\x80\"}, {\"b\":\"\xE2\x82\"}]",
        ];
        for text in texts {
            same_when_cut(&options, text);
        }
        assert_eq!(
            same_when_cut(&options, texts[0]),
            [
                r#"{"a":"]}[{","b":[1,{"c":null}],"k":"v\"é😀","n":"-12.5e+3"} @[("k", Some("v\"é😀"))]"#,
                r#"{"k":"v\"é😀","n":"-12.5e+3"} @[("k", Some("v\"é😀"))]"#,
                r#"{"k":"v\"é😀","d":"\u00e9","n":"-12.5e+3"} @[("k", Some("v\"é😀"))]"#,
                r#"{"k":"v\"é😀","n":"-12.5e+3"} @[("k", Some("v\"é😀"))]"#,
            ]
        );
    }

    #[test]
    fn errors_stick_and_positions_count_elements() {
        let mut splitter = JsonSplitter::new(JsonOptions::default());
        let mut got = Vec::new();
        let mut out = |e: Element<'_>| {
            if let Element::Event {
                ordinal, offset, ..
            } = e
            {
                got.push((ordinal, offset));
            }
        };
        splitter.feed(b"[{}, null,", &mut out).unwrap();
        splitter.feed(b" {}]", &mut out).unwrap();
        assert_eq!(got, [(1, 1), (2, 5), (3, 11)]);
        let error = splitter.feed(b"]", &mut |_| {}).unwrap_err();
        assert_eq!(splitter.feed(b"", &mut |_| {}), Err(error.clone()));
        assert_eq!(splitter.finish(&mut |_| {}), Err(error));
    }
}
