//! Data Prepper's `csv` input codec as a streaming splitter: [`CsvSplitter`] is fed an
//! object's bytes chunk by chunk and hands out each record (a row) as a JSON object text,
//! `{"column": "value", ...}`, with the line it starts on; it holds at most one record
//! ([`CsvOptions::row_limit`] bytes) and a chunk, never the object.
//!
//! # Configuration
//!
//! The keys of `codec: csv:` (`data-prepper-plugins/csv-processor/src/main/java/org/
//! opensearch/dataprepper/plugins/codec/csv/CsvInputCodecConfig.java`); all are optional:
//!
//! | key | type | default | meaning |
//! |---|---|---|---|
//! | `delimiter` | string | `","` | the column separator |
//! | `quote_character` | string | `"\""` | the quote around a value |
//! | `header` | list of strings | none | column names, used only with `detect_header: false` |
//! | `detect_header` | boolean | `true` | the first record is the header |
//!
//! Validation (`@AssertTrue`; Data Prepper prints these messages bare, as `Plugin csv in
//! pipeline <pipeline> is configured incorrectly: <messages joined by ". ">`,
//! `PluginConfigurationConverter.java:80-118`), all checked by the config (`sluice_config::source::s3::CsvCodec`):
//!
//! - `delimiter must be exactly one character.` (Java's `length() == 1`: one UTF-16 unit, so
//!   any character of the Basic Multilingual Plane, `\t` included, and none outside it, as
//!   an emoji);
//! - `quote_character must be exactly one character.`;
//! - `quote_character and delimiter cannot be the same character.`;
//! - `header must not be an empty list. To autogenerate columns, set detect_header: false and
//!   delete header from config.`
//!
//! and, sluice's own (Data Prepper accepts them and then reads nonsense), `delimiter must not be
//! a line end.` and `quote_character must not be a line end.`
//!
//! Mapping onto [`CsvOptions`]: `delimiter` and `quote_character` as their one `char` (once
//! the config checked them), `header` and `detect_header` as they are; [`CsvOptions::row_limit`] is
//! sluice's own bound on memory (Data Prepper has none).
//!
//! # What becomes an event
//!
//! Data Prepper's `CsvInputCodec.parse` (`CsvInputCodec.java:53-169`) reads the object with
//! jackson-dataformat-csv (`CsvParser.java`, `impl/CsvDecoder.java`, default features) into one
//! `Map<String, String>` per record; this splitter does the same:
//!
//! - A line ends at `\n`, `\r\n` or `\r`. A record is a line, or more when a quoted value holds
//!   line ends. Lines are numbered from 1, those inside quoted values too; a record's number is
//!   the line it starts on (its position).
//! - Values are split at the delimiter. A value is quoted only if the quote is its very first
//!   character (a space before it makes the quote plain text, as anywhere else in a value);
//!   in a quoted value a doubled quote is one quote, and delimiters and line ends are kept as
//!   they are. After the closing quote only characters up to U+0020 may come before the
//!   delimiter or the line end ([`Error::AfterQuote`] otherwise); a quote never closed fails
//!   the object ([`Error::MissingClosingQuote`]). Nothing is trimmed or unescaped otherwise,
//!   and every value is a string.
//! - `detect_header: true`: the first record holds the column names, each trimmed (Java's
//!   `trim()`: characters up to U+0020); an empty last name (a trailing delimiter) is dropped,
//!   and no name left (an empty first line, or an empty object!) fails the object:
//!   [`Error::EmptyHeader`], Jackson's `Empty header line: can not bind data`. More than 99999
//!   names fail too. `header` is then ignored. A name given twice is one key, with the last
//!   of its values, where the name first stands (a `LinkedHashMap`).
//! - `detect_header: false`: the number of columns is the number of delimiter characters on
//!   the first *line* plus one, counted as plain characters (quotes ignored). They are named
//!   from `header` (cut to that number), then `column<N>` with `N` the column's number from 1.
//!   The first line is also read within Java's `BufferedReader.mark(8192)`: one of 8192
//!   characters or more fails the object in Data Prepper (`Mark invalid`), and here
//!   ([`Error::FirstLineTooLong`]).
//! - A record with fewer values than columns has fewer keys. One with more fails the object
//!   ([`Error::TooManyEntries`], Jackson's message), unless the one extra value is blank and
//!   last (a trailing delimiter); when a blank one is followed by more, Jackson reads the next
//!   value first, so that value's own syntax error is the one reported. Data Prepper's log
//!   says "skipping this line" but it rethrows: the object stops there, the records before it
//!   handed out.
//! - An empty line is a record of one empty value (`{"first column": ""}`); a last line end
//!   makes no record.
//! - The bytes are read as UTF-8 (`InputStreamReader`, the JVM's default charset): invalid
//!   sequences become U+FFFD, and a byte order mark is kept, in the first column's name.
//!
//! # Not matched
//!
//! - A record longer than [`CsvOptions::row_limit`] bytes is reported ([`Row::TooLong`], its
//!   head) and skipped; Data Prepper has no bound. A header record that long fails the object.
//! - The value quoted in [`Error::TooManyEntries`] is cut to its first 1024 bytes.

use std::borrow::Cow;
use std::collections::HashMap;

use super::{java_length, java_trim, show_byte, write_json_chars, write_json_string};

/// The longest record kept by default (as [`crate::lines::LINE_LIMIT`]).
pub const ROW_LIMIT: usize = 16 << 20;

/// Jackson's `CsvParser.MAX_COLUMNS`: the most header names read.
const MAX_HEADER_COLUMNS: usize = 99_999;

/// Data Prepper's `BufferedReader.mark(8192)` before reading the first line.
const FIRST_LINE_LIMIT: usize = 8192;

/// How much of a value an error message quotes.
const VALUE_IN_ERROR: usize = 1024;

/// What [`CsvSplitter`] reads (see the module doc for the YAML keys).
#[derive(Debug, Clone)]
pub struct CsvOptions {
    /// `delimiter`.
    pub delimiter: char,
    /// `quote_character`.
    pub quote_character: char,
    /// `header` (`None`: not set).
    pub header: Option<Vec<String>>,
    /// `detect_header`.
    pub detect_header: bool,
    /// The longest record kept, in bytes; a longer one is reported and skipped.
    pub row_limit: usize,
}

impl Default for CsvOptions {
    fn default() -> Self {
        Self {
            delimiter: ',',
            quote_character: '"',
            header: None,
            detect_header: true,
            row_limit: ROW_LIMIT,
        }
    }
}

/// One record.
#[derive(Debug, PartialEq, Eq)]
pub enum Row<'a> {
    Event {
        /// The line the record starts on, from 1: a stable position.
        line: u64,
        /// Where the record starts in the object's bytes.
        offset: u64,
        /// `{"column": "value", ...}`.
        json: &'a [u8],
    },
    /// A record longer than [`CsvOptions::row_limit`]: its first that many bytes.
    TooLong {
        line: u64,
        offset: u64,
        head: &'a [u8],
    },
}

/// Why the object is not read on (Data Prepper fails the object there too).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error(
        "line {line}: too many entries: expected at most {expected} (value #{index} ({length} chars) \"{value}\")"
    )]
    TooManyEntries {
        line: u64,
        /// Where the extra value starts.
        offset: u64,
        expected: usize,
        index: usize,
        /// The value's length in UTF-16 units, as Java counts.
        length: usize,
        value: String,
    },
    #[error("line {line}: missing closing quote for the value that starts at byte {offset}")]
    MissingClosingQuote { line: u64, offset: u64 },
    #[error(
        "line {line}, byte {offset}: unexpected {found} after a quoted value: expected the delimiter or the end of the line"
    )]
    AfterQuote {
        line: u64,
        offset: u64,
        found: String,
    },
    #[error("line {line}: empty header line: can not bind data")]
    EmptyHeader { line: u64 },
    #[error("line {line}: the header has more than {MAX_HEADER_COLUMNS} columns")]
    TooManyHeaderColumns { line: u64 },
    #[error(
        "the first line is {FIRST_LINE_LIMIT} characters or longer: with `detect_header: false` Data Prepper reads it within an {FIRST_LINE_LIMIT}-character mark and fails longer ones (\"Mark invalid\")"
    )]
    FirstLineTooLong,
    #[error("line {line}: the header record is longer than {limit} bytes")]
    HeaderTooLong { line: u64, limit: usize },
}

/// The delimiter or the quote: one character, as UTF-8.
#[derive(Debug, Clone, Copy)]
struct Special {
    bytes: [u8; 4],
    len: usize,
}

impl Special {
    fn new(c: char) -> Self {
        let mut bytes = [0; 4];
        let len = c.encode_utf8(&mut bytes).len();
        Self { bytes, len }
    }

    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    fn first(&self) -> u8 {
        self.bytes[0]
    }

    /// Whether it stands at `chunk[i]` (whole: a chunk never ends inside it).
    fn at(&self, chunk: &[u8], i: usize) -> bool {
        chunk[i..].starts_with(self.as_bytes())
    }
}

/// The columns, once known.
#[derive(Debug)]
struct Known {
    count: usize,
    /// Each column's key: the first column of its name.
    slot: Vec<usize>,
    /// Each column's name as a JSON string and `:`.
    keys: Vec<Vec<u8>>,
}

impl Known {
    fn new(names: &[String]) -> Self {
        let mut first = HashMap::new();
        let slot = names
            .iter()
            .enumerate()
            .map(|(i, name)| *first.entry(name.as_str()).or_insert(i))
            .collect();
        let keys = names
            .iter()
            .map(|name| {
                let mut key = Vec::with_capacity(name.len() + 3);
                write_json_string(&mut key, name);
                key.push(b':');
                key
            })
            .collect();
        Self {
            count: names.len(),
            slot,
            keys,
        }
    }
}

#[derive(Debug)]
enum Columns {
    /// From the first record (`detect_header`), not read yet.
    Header,
    /// From the first line (`detect_header: false`), being counted.
    Counting {
        delimiters: usize,
        units: usize,
        any: bool,
    },
    Known(Known),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Between records.
    RowStart,
    /// At the start of a value (after a delimiter).
    FieldStart,
    Unquoted,
    Quoted,
    /// A quote in a quoted value: doubled, or the closing one.
    QuoteSeen,
    /// After the closing quote.
    AfterQuoted,
}

/// A value just read: its bytes (in quotes: inside them), and where the delimiter or line
/// end after it is.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: u64,
    end: u64,
    quoted: bool,
    upto: u64,
}

impl Span {
    fn empty(at: u64) -> Self {
        Self::plain(at, at)
    }

    fn plain(start: u64, end: u64) -> Self {
        Self {
            start,
            end,
            quoted: false,
            upto: end,
        }
    }
}

/// A value of the current record: its bytes (in quotes: inside them), from the record's
/// start.
#[derive(Debug, Clone, Copy)]
struct Field {
    start: usize,
    end: usize,
    quoted: bool,
}

/// Cuts an object's CSV into records, chunk by chunk (one splitter per object).
pub struct CsvSplitter {
    delimiter: Special,
    quote: Special,
    /// When the delimiter or the quote is more than a byte: the unfinished UTF-8 sequence
    /// that ended the last chunk, read with the next one, so neither is cut in two.
    carry: Option<Vec<u8>>,
    joined: Vec<u8>,
    configured: Vec<String>,
    limit: usize,
    columns: Columns,
    state: State,
    /// The current line's number, from 1, and where the last `\r` was.
    line: u64,
    last_cr: Option<u64>,
    /// The offset of the next byte read.
    offset: u64,

    // The current record.
    row_line: u64,
    row_start: u64,
    header_row: bool,
    fields: Vec<Field>,
    field_start: u64,
    quote_at: u64,
    quote_line: u64,
    /// Where the current quoted value's closing quote is.
    content_end: u64,
    /// The record's bytes so far, when it began in an earlier chunk.
    partial: Vec<u8>,
    /// The record is too long (reported): read to its end, keep nothing.
    skipping: bool,

    /// A blank extra value followed by a delimiter: Jackson reads the next value before it
    /// fails the record, so a malformed one fails it first.
    pending: Option<Error>,

    json: Vec<u8>,
    values: Vec<Option<usize>>,
    failed: Option<Error>,
}

impl CsvSplitter {
    /// # Panics
    /// If `options` fail the config's checks (the delimiter is the quote, or either is a line end).
    pub fn new(options: CsvOptions) -> Self {
        let line_end = |c: char| matches!(c, '\r' | '\n');
        assert!(
            options.delimiter != options.quote_character
                && !line_end(options.delimiter)
                && !line_end(options.quote_character),
            "csv options not checked: {options:?}"
        );
        let delimiter = Special::new(options.delimiter);
        let quote = Special::new(options.quote_character);
        Self {
            delimiter,
            quote,
            carry: (delimiter.len > 1 || quote.len > 1).then(Vec::new),
            joined: Vec::new(),
            configured: options.header.unwrap_or_default(),
            limit: options.row_limit,
            columns: if options.detect_header {
                Columns::Header
            } else {
                Columns::Counting {
                    delimiters: 0,
                    units: 0,
                    any: false,
                }
            },
            state: State::RowStart,
            line: 1,
            last_cr: None,
            offset: 0,
            row_line: 1,
            row_start: 0,
            header_row: false,
            fields: Vec::new(),
            field_start: 0,
            quote_at: 0,
            quote_line: 0,
            content_end: 0,
            partial: Vec::new(),
            skipping: false,
            pending: None,
            json: Vec::new(),
            values: Vec::new(),
            failed: None,
        }
    }

    /// Feeds the object's next `chunk`, handing each whole record to `out`. After an error
    /// the object is not read on: every later call returns the same error.
    pub fn feed(&mut self, chunk: &[u8], out: &mut impl FnMut(Row<'_>)) -> Result<(), Error> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let result = match self.carry.take() {
            None => self.process(chunk, out),
            Some(mut carry) => {
                let mut joined = std::mem::take(&mut self.joined);
                joined.clear();
                joined.extend_from_slice(&carry);
                joined.extend_from_slice(chunk);
                let whole = whole_chars(&joined);
                carry.clear();
                carry.extend_from_slice(&joined[whole..]);
                self.carry = Some(carry);
                let result = self.process(&joined[..whole], out);
                self.joined = joined;
                result
            }
        };
        if let Err(e) = &result {
            self.failed = Some(e.clone());
        }
        result
    }

    /// The end of the object: its last record, if it has no line end.
    pub fn finish(&mut self, out: &mut impl FnMut(Row<'_>)) -> Result<(), Error> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let result = self.end(out);
        if let Err(e) = &result {
            self.failed = Some(e.clone());
        }
        result
    }

    fn end(&mut self, out: &mut impl FnMut(Row<'_>)) -> Result<(), Error> {
        if let Some(carry) = self.carry.take() {
            let result = self.process(&carry, out);
            self.carry = Some(Vec::new());
            result?;
        }
        if let Columns::Counting {
            delimiters, any, ..
        } = self.columns
        {
            // No line end: the first line is the whole object (`readLine` gives null for an
            // empty one: no columns, and no records either).
            let count = if any { delimiters + 1 } else { 0 };
            self.columns = Columns::Known(self.named(count));
        }
        let at = self.offset;
        let field = match self.state {
            State::RowStart => None,
            State::FieldStart => Some(Span::empty(at)),
            State::Unquoted => Some(Span::plain(self.field_start, at)),
            State::Quoted => {
                return Err(Error::MissingClosingQuote {
                    line: self.quote_line,
                    offset: self.quote_at,
                });
            }
            State::QuoteSeen | State::AfterQuoted => Some(self.quoted(at)),
        };
        if let Some(span) = field {
            self.field(span, true, &[], at)?;
            self.row_end(at, &[], at, out)?;
        }
        if matches!(self.columns, Columns::Header) {
            return Err(Error::EmptyHeader { line: self.line });
        }
        Ok(())
    }

    fn process(&mut self, chunk: &[u8], out: &mut impl FnMut(Row<'_>)) -> Result<(), Error> {
        let base = self.offset;
        self.count_first_line(chunk)?;
        let mut i = 0;
        while i < chunk.len() {
            let b = chunk[i];
            let at = base + i as u64;
            match self.state {
                State::RowStart => {
                    if b == b'\n' && self.last_cr.is_some_and(|cr| cr + 1 == at) {
                        // The end of a record's `\r\n`.
                        i += 1;
                        continue;
                    }
                    self.row_line = self.line;
                    self.row_start = at;
                    self.header_row = matches!(self.columns, Columns::Header);
                    self.fields.clear();
                    self.state = State::FieldStart;
                }
                State::FieldStart => {
                    if b == b'\r' || b == b'\n' {
                        i += 1;
                        self.field(Span::empty(at), true, chunk, base)?;
                        self.newline(b, at);
                        self.row_end(at, chunk, base, out)?;
                    } else if self.quote.at(chunk, i) {
                        i += self.quote.len;
                        self.quote_at = at;
                        self.quote_line = self.line;
                        self.field_start = base + i as u64;
                        self.state = State::Quoted;
                    } else if self.delimiter.at(chunk, i) {
                        i += self.delimiter.len;
                        self.field(Span::empty(at), false, chunk, base)?;
                    } else {
                        self.field_start = at;
                        self.state = State::Unquoted;
                    }
                }
                State::Unquoted => {
                    let Some(n) =
                        memchr::memchr3(self.delimiter.first(), b'\r', b'\n', &chunk[i..])
                    else {
                        i = chunk.len();
                        continue;
                    };
                    i += n;
                    let at = base + i as u64;
                    let b = chunk[i];
                    if b == b'\r' || b == b'\n' {
                        i += 1;
                        self.field(Span::plain(self.field_start, at), true, chunk, base)?;
                        self.newline(b, at);
                        self.row_end(at, chunk, base, out)?;
                    } else if self.delimiter.at(chunk, i) {
                        i += self.delimiter.len;
                        self.field(Span::plain(self.field_start, at), false, chunk, base)?;
                        self.state = State::FieldStart;
                    } else {
                        i += 1;
                    }
                }
                State::Quoted => {
                    let Some(n) = memchr::memchr3(self.quote.first(), b'\r', b'\n', &chunk[i..])
                    else {
                        i = chunk.len();
                        continue;
                    };
                    i += n;
                    let at = base + i as u64;
                    let b = chunk[i];
                    if b == b'\r' || b == b'\n' {
                        i += 1;
                        self.newline(b, at);
                    } else if self.quote.at(chunk, i) {
                        i += self.quote.len;
                        self.content_end = at;
                        self.state = State::QuoteSeen;
                    } else {
                        i += 1;
                    }
                }
                State::QuoteSeen => {
                    if self.quote.at(chunk, i) {
                        i += self.quote.len;
                        self.state = State::Quoted;
                    } else {
                        self.state = State::AfterQuoted;
                    }
                }
                State::AfterQuoted => {
                    if self.delimiter.at(chunk, i) {
                        i += self.delimiter.len;
                        self.field(self.quoted(at), false, chunk, base)?;
                        self.state = State::FieldStart;
                    } else if b == b'\r' || b == b'\n' {
                        i += 1;
                        self.field(self.quoted(at), true, chunk, base)?;
                        self.newline(b, at);
                        self.row_end(at, chunk, base, out)?;
                    } else if b <= b' ' {
                        i += 1;
                    } else {
                        return Err(Error::AfterQuote {
                            line: self.line,
                            offset: at,
                            found: show_byte(b),
                        });
                    }
                }
            }
        }
        self.keep(chunk, base, out)?;
        self.offset = base + chunk.len() as u64;
        Ok(())
    }

    /// Counts the columns on the first line (`detect_header: false`) before its bytes are
    /// read as values: a record ending on it needs them.
    fn count_first_line(&mut self, chunk: &[u8]) -> Result<(), Error> {
        let Columns::Counting {
            delimiters,
            units,
            any,
        } = &mut self.columns
        else {
            return Ok(());
        };
        let end = memchr::memchr2(b'\r', b'\n', chunk);
        let line = &chunk[..end.unwrap_or(chunk.len())];
        *any |= !chunk.is_empty();
        *delimiters += memchr::memmem::find_iter(line, self.delimiter.as_bytes()).count();
        // UTF-16 units: one per UTF-8 lead byte, two for a four-byte sequence.
        *units += line
            .iter()
            .map(|&b| usize::from(b & 0xC0 != 0x80) + usize::from(b >= 0xF0))
            .sum::<usize>();
        if *units >= FIRST_LINE_LIMIT {
            return Err(Error::FirstLineTooLong);
        }
        if end.is_some() {
            let count = *delimiters + 1;
            self.columns = Columns::Known(self.named(count));
        }
        Ok(())
    }

    /// `count` columns named from `header`, then `column<N>`.
    fn named(&self, count: usize) -> Known {
        let names: Vec<String> = (0..count)
            .map(|i| {
                self.configured
                    .get(i)
                    .cloned()
                    .unwrap_or_else(|| format!("column{}", i + 1))
            })
            .collect();
        Known::new(&names)
    }

    /// Counts a line end.
    fn newline(&mut self, b: u8, at: u64) {
        if b == b'\r' {
            self.line += 1;
            self.last_cr = Some(at);
        } else if self.last_cr.is_none_or(|cr| cr + 1 != at) {
            self.line += 1;
        }
    }

    /// The current quoted value, ended by what is at `upto`.
    fn quoted(&self, upto: u64) -> Span {
        Span {
            start: self.field_start,
            end: self.content_end,
            quoted: true,
            upto,
        }
    }

    /// The current record has the value `span`, the last if `ends_row`.
    fn field(&mut self, span: Span, ends_row: bool, chunk: &[u8], base: u64) -> Result<(), Error> {
        if let Some(e) = self.pending.take() {
            return Err(e);
        }
        // Past the limit the record is too long whatever comes: it is reported, not read (and
        // this depends on where the value is, not on where a chunk ended).
        let past = (span.upto - self.row_start) as usize > self.limit;
        if self.header_row && past {
            return Err(Error::HeaderTooLong {
                line: self.row_line,
                limit: self.limit,
            });
        }
        if self.skipping || past {
            return Ok(());
        }
        let Span {
            start, end, quoted, ..
        } = span;
        let index = self.fields.len();
        self.fields.push(Field {
            start: (start - self.row_start) as usize,
            end: (end - self.row_start) as usize,
            quoted,
        });
        if self.header_row {
            if self.fields.len() > MAX_HEADER_COLUMNS {
                return Err(Error::TooManyHeaderColumns {
                    line: self.row_line,
                });
            }
            return Ok(());
        }
        // One more value than columns: Jackson fails the record there, unless it is blank
        // and last. (Before the first line's end the count is not known yet: the record's
        // end checks it.)
        if let Columns::Known(known) = &self.columns
            && index == known.count
        {
            let bytes = self.span(start, end, chunk, base);
            let text = field_text(&bytes, quoted, &self.quote);
            if let Some(e) = extra(known.count, &text, ends_row, self.row_line, start) {
                if java_trim(&text).is_empty() {
                    self.pending = Some(e);
                } else {
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// The bytes at `start..end` of the current record.
    fn span<'a>(&'a self, start: u64, end: u64, chunk: &'a [u8], base: u64) -> Cow<'a, [u8]> {
        if start >= base {
            return Cow::Borrowed(&chunk[(start - base) as usize..(end - base) as usize]);
        }
        let from = (start - self.row_start) as usize;
        if end <= base {
            return Cow::Borrowed(&self.partial[from..(end - self.row_start) as usize]);
        }
        let mut bytes = self.partial[from..].to_vec();
        bytes.extend_from_slice(&chunk[..(end - base) as usize]);
        Cow::Owned(bytes)
    }

    /// The current record ends before `end` (in `chunk`, which starts at `base`).
    fn row_end(
        &mut self,
        end: u64,
        chunk: &[u8],
        base: u64,
        out: &mut impl FnMut(Row<'_>),
    ) -> Result<(), Error> {
        self.state = State::RowStart;
        if self.skipping {
            self.skipping = false;
            return Ok(());
        }
        let end = (end - base) as usize;
        let raw: &[u8] = if self.row_start >= base {
            &chunk[(self.row_start - base) as usize..end]
        } else {
            self.partial.extend_from_slice(&chunk[..end]);
            &self.partial
        };
        if raw.len() > self.limit {
            if self.header_row {
                return Err(Error::HeaderTooLong {
                    line: self.row_line,
                    limit: self.limit,
                });
            }
            out(Row::TooLong {
                line: self.row_line,
                offset: self.row_start,
                head: &raw[..self.limit],
            });
        } else if self.header_row {
            let mut names: Vec<String> = self
                .fields
                .iter()
                .map(|f| {
                    java_trim(&field_text(&raw[f.start..f.end], f.quoted, &self.quote)).to_owned()
                })
                .collect();
            // Jackson's ALLOW_TRAILING_COMMA (on by default): an empty last name is dropped.
            if names.last().is_some_and(String::is_empty) {
                names.pop();
            }
            if names.is_empty() || (names.len() == 1 && names[0].is_empty()) {
                return Err(Error::EmptyHeader {
                    line: self.row_line,
                });
            }
            self.columns = Columns::Known(Known::new(&names));
        } else if let Columns::Known(known) = &self.columns {
            if let Some(f) = self.fields.get(known.count) {
                let text = field_text(&raw[f.start..f.end], f.quoted, &self.quote);
                let last = self.fields.len() == known.count + 1;
                let start = self.row_start + f.start as u64;
                if let Some(e) = extra(known.count, &text, last, self.row_line, start) {
                    return Err(e);
                }
            }
            build(
                &mut self.json,
                &mut self.values,
                known,
                raw,
                &self.fields,
                &self.quote,
            );
            out(Row::Event {
                line: self.row_line,
                offset: self.row_start,
                json: &self.json,
            });
        }
        self.partial.clear();
        Ok(())
    }

    /// At the end of a chunk: keeps the current record's bytes so far, or reports it once it
    /// is too long.
    fn keep(
        &mut self,
        chunk: &[u8],
        base: u64,
        out: &mut impl FnMut(Row<'_>),
    ) -> Result<(), Error> {
        if self.state == State::RowStart || self.skipping {
            return Ok(());
        }
        if self.pending.is_some() {
            // The record fails at its next value (or that value's own error): nothing to
            // report.
            self.partial = Vec::new();
            self.skipping = true;
            return Ok(());
        }
        let bytes = &chunk[self.row_start.saturating_sub(base) as usize..];
        let room = self.limit - self.partial.len();
        if bytes.len() <= room {
            self.partial.extend_from_slice(bytes);
            return Ok(());
        }
        if self.header_row {
            return Err(Error::HeaderTooLong {
                line: self.row_line,
                limit: self.limit,
            });
        }
        self.partial.extend_from_slice(&bytes[..room]);
        out(Row::TooLong {
            line: self.row_line,
            offset: self.row_start,
            head: &self.partial,
        });
        self.partial = Vec::new();
        self.skipping = true;
        self.fields.clear();
        Ok(())
    }
}

/// The error for an extra value `text` (the one past `count` columns), if Jackson fails it.
fn extra(count: usize, text: &str, last: bool, line: u64, offset: u64) -> Option<Error> {
    let value = java_trim(text);
    if value.is_empty() && last {
        return None;
    }
    let mut cut = value.len().min(VALUE_IN_ERROR);
    while !value.is_char_boundary(cut) {
        cut -= 1;
    }
    Some(Error::TooManyEntries {
        line,
        offset,
        expected: count,
        index: count,
        length: java_length(value),
        value: value[..cut].to_owned(),
    })
}

/// The value a field's bytes hold: in quotes, doubled quotes made one; as UTF-8, invalid
/// sequences replaced.
fn field_text<'a>(content: &'a [u8], quoted: bool, quote: &Special) -> Cow<'a, str> {
    let q = quote.as_bytes();
    if !quoted || memchr::memmem::find(content, q).is_none() {
        return String::from_utf8_lossy(content);
    }
    // Inside a quoted value every quote is doubled (a single one closed it).
    let mut bytes = Vec::with_capacity(content.len());
    let mut rest = content;
    while let Some(at) = memchr::memmem::find(rest, q) {
        bytes.extend_from_slice(&rest[..at + q.len()]);
        rest = &rest[(at + 2 * q.len()).min(rest.len())..];
    }
    bytes.extend_from_slice(rest);
    Cow::Owned(String::from_utf8_lossy(&bytes).into_owned())
}

/// Writes the record as a JSON object: each column's last value, under its name where the
/// name first stands.
fn build(
    json: &mut Vec<u8>,
    values: &mut Vec<Option<usize>>,
    known: &Known,
    raw: &[u8],
    fields: &[Field],
    quote: &Special,
) {
    values.clear();
    values.resize(known.count, None);
    for i in 0..fields.len().min(known.count) {
        values[known.slot[i]] = Some(i);
    }
    json.clear();
    json.push(b'{');
    for (column, value) in values.iter().enumerate() {
        let Some(i) = *value else {
            continue;
        };
        if json.len() > 1 {
            json.push(b',');
        }
        json.extend_from_slice(&known.keys[column]);
        let f = fields[i];
        json.push(b'"');
        let mut rest = &raw[f.start..f.end];
        if f.quoted {
            // Every quote inside is doubled: write one of each pair. A quote is a whole
            // character, so the pieces between are UTF-8 of their own.
            let q = quote.as_bytes();
            while let Some(at) = memchr::memmem::find(rest, q) {
                write_json_chars(json, &String::from_utf8_lossy(&rest[..at + q.len()]));
                rest = &rest[(at + 2 * q.len()).min(rest.len())..];
            }
        }
        write_json_chars(json, &String::from_utf8_lossy(rest));
        json.push(b'"');
    }
    json.push(b'}');
}

/// How much of `bytes` ends on a whole UTF-8 character (an unfinished sequence at the end
/// waits for the next chunk).
fn whole_chars(bytes: &[u8]) -> usize {
    let n = bytes.len();
    for back in 1..=n.min(3) {
        let b = bytes[n - back];
        if b & 0xC0 == 0x80 {
            continue;
        }
        let length = match b {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        return if length > back { n - back } else { n };
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a splitter hands out for `chunks`: `L<line> <json>` per record, `!L<line>:<len>`
    /// for a too long one, `ERR ...` for an error.
    fn rows_with(options: &CsvOptions, chunks: &[&[u8]]) -> Vec<String> {
        super::super::decode_chunks(CsvSplitter::new(options.clone()), chunks, |r| match r {
            Row::Event { line, json, .. } => format!("L{line} {}", String::from_utf8_lossy(json)),
            Row::TooLong { line, head, .. } => format!("!L{line}:{}", head.len()),
        })
    }

    impl super::super::Decoder for CsvSplitter {
        type Piece<'a> = Row<'a>;
        type Error = Error;
        fn feed(&mut self, chunk: &[u8], out: &mut impl FnMut(Row<'_>)) -> Result<(), Error> {
            CsvSplitter::feed(self, chunk, out)
        }
        fn finish(&mut self, out: &mut impl FnMut(Row<'_>)) -> Result<(), Error> {
            CsvSplitter::finish(self, out)
        }
    }

    fn rows(text: &str) -> Vec<String> {
        same_when_cut(&CsvOptions::default(), text.as_bytes())
    }

    fn no_header(header: &[&str]) -> CsvOptions {
        CsvOptions {
            detect_header: false,
            header: (!header.is_empty()).then(|| header.iter().map(|s| s.to_string()).collect()),
            ..CsvOptions::default()
        }
    }

    /// Every way of cutting `text` ([`super::super::cuts`]) gives what feeding it whole
    /// gives.
    fn same_when_cut(options: &CsvOptions, text: &[u8]) -> Vec<String> {
        let whole = rows_with(options, &[text]);
        for (how, chunks) in super::super::cuts(text, 0x2545_F491_4F6C_DD1D_u64) {
            assert_eq!(rows_with(options, &chunks), whole, "{how}");
        }
        whole
    }

    #[test]
    fn the_first_record_names_the_columns_of_the_others() {
        assert_eq!(
            rows("a,b,c\n1,2,3\n4,5,6\n"),
            [
                r#"L2 {"a":"1","b":"2","c":"3"}"#,
                r#"L3 {"a":"4","b":"5","c":"6"}"#
            ]
        );
        assert_eq!(
            rows("a,b\n1,2"),
            [r#"L2 {"a":"1","b":"2"}"#],
            "no last line end"
        );
        assert_eq!(rows("a,b\n"), Vec::<String>::new());
        let ignored = CsvOptions {
            header: Some(vec!["x".into()]),
            ..CsvOptions::default()
        };
        assert_eq!(
            same_when_cut(&ignored, b"a\n1\n"),
            [r#"L2 {"a":"1"}"#],
            "`header` is ignored when detecting"
        );
    }

    #[test]
    fn quoted_values_keep_delimiters_line_ends_and_doubled_quotes() {
        let text = "name,quote\n\"Smith, J\",\"He said \"\"hi\"\"\r\nthen, left\"\nx,\"y\" \t\n\"\",\"\"\"\"\n";
        assert_eq!(
            rows(text),
            [
                r#"L2 {"name":"Smith, J","quote":"He said \"hi\"\r\nthen, left"}"#,
                r#"L4 {"name":"x","quote":"y"}"#,
                r#"L5 {"name":"","quote":"\""}"#,
            ]
        );
        // A quote is plain text anywhere but at a value's very start.
        assert_eq!(
            rows("a,b\n x\"y, \"q\"\n"),
            [r#"L2 {"a":" x\"y","b":" \"q\""}"#]
        );
    }

    #[test]
    fn records_with_more_values_than_columns_fail_the_object() {
        assert_eq!(
            rows("a,b\n1,2\n1,2,3\n4,5\n"),
            [
                r#"L2 {"a":"1","b":"2"}"#,
                r#"ERR line 3: too many entries: expected at most 2 (value #2 (1 chars) "3")"#
            ]
        );
        // One blank last value is a trailing delimiter.
        assert_eq!(
            rows("a,b\n1,2,\n3,4, \t\n5,6,\"\""),
            [
                r#"L2 {"a":"1","b":"2"}"#,
                r#"L3 {"a":"3","b":"4"}"#,
                r#"L4 {"a":"5","b":"6"}"#
            ]
        );
        assert_eq!(
            rows("a,b\n1,2,,\n"),
            [r#"ERR line 2: too many entries: expected at most 2 (value #2 (0 chars) "")"#]
        );
        // A blank extra value followed by more: Jackson reads the next value first, and a
        // malformed one is the error.
        assert_eq!(
            rows("a\n1, ,\"x\"y\n"),
            [
                "ERR line 2, byte 9: unexpected `y` after a quoted value: expected the delimiter or the end of the line"
            ]
        );
        assert_eq!(
            rows("a\n1, ,\"x"),
            ["ERR line 2: missing closing quote for the value that starts at byte 6"]
        );
        assert_eq!(
            rows("a\n1, ,\"x\"\n"),
            [r#"ERR line 2: too many entries: expected at most 1 (value #1 (0 chars) "")"#]
        );
        assert_eq!(
            rows("a,b\n1,2, é😀 ,x\n"),
            [r#"ERR line 2: too many entries: expected at most 2 (value #2 (3 chars) "é😀")"#]
        );
        // Fewer values: fewer keys.
        assert_eq!(rows("a,b,c\n1\n"), [r#"L2 {"a":"1"}"#]);
    }

    #[test]
    fn without_header_detection_the_first_line_counts_the_columns() {
        assert_eq!(
            same_when_cut(&no_header(&["x"]), b"1,2,3\n4,5\n6,7,8,9\n"),
            [
                r#"L1 {"x":"1","column2":"2","column3":"3"}"#,
                r#"L2 {"x":"4","column2":"5"}"#,
                r#"ERR line 3: too many entries: expected at most 3 (value #3 (1 chars) "9")"#
            ]
        );
        assert_eq!(
            same_when_cut(&no_header(&["p", "q", "r"]), b"1,2\n3\n"),
            [r#"L1 {"p":"1","q":"2"}"#, r#"L2 {"p":"3"}"#],
            "`header` is cut to the count"
        );
        // Delimiters in quotes count too; a record may go on past the first line.
        assert_eq!(
            same_when_cut(&no_header(&[]), b"\"a,b\",c\n"),
            [r#"L1 {"column1":"a,b","column2":"c"}"#]
        );
        assert_eq!(
            same_when_cut(&no_header(&[]), b"1,\"2\n3,4\",5\n"),
            [r#"ERR line 1: too many entries: expected at most 2 (value #2 (1 chars) "5")"#]
        );
        assert_eq!(same_when_cut(&no_header(&[]), b""), Vec::<String>::new());
        assert_eq!(
            same_when_cut(&no_header(&[]), b"\n1,2\n"),
            [
                r#"L1 {"column1":""}"#,
                r#"ERR line 2: too many entries: expected at most 1 (value #1 (1 chars) "2")"#
            ]
        );
        let mut long = vec![b'x'; FIRST_LINE_LIMIT - 1];
        long.extend_from_slice(b"\n1\n");
        assert_eq!(rows_with(&no_header(&[]), &[&long]).len(), 2);
        let long = vec![b'x'; FIRST_LINE_LIMIT];
        assert_eq!(
            rows_with(&no_header(&[]), &[&long]),
            [format!("ERR {}", Error::FirstLineTooLong)]
        );
    }

    #[test]
    fn every_line_end_java_knows_ends_a_record_and_an_empty_line_is_one() {
        assert_eq!(
            rows("h\r\nx\r\n\r\ny\rz\n\n"),
            [
                r#"L2 {"h":"x"}"#,
                r#"L3 {"h":""}"#,
                r#"L4 {"h":"y"}"#,
                r#"L5 {"h":"z"}"#,
                r#"L6 {"h":""}"#
            ]
        );
        assert_eq!(rows("h\r\r\n"), [r#"L2 {"h":""}"#]);
    }

    #[test]
    fn the_header_is_trimmed_a_trailing_empty_name_dropped_and_none_fails() {
        assert_eq!(
            rows(" a ,\tb ,a,\n1,2,3\n"),
            [r#"L2 {"a":"3","b":"2"}"#],
            "a name twice: the last value, in the first place"
        );
        assert_eq!(rows(",a\n1,2\n"), [r#"L2 {"":"1","a":"2"}"#]);
        for text in ["", "\n1\n", " \n1\n", ",\n1\n", "\"\"\n"] {
            let got = rows(text);
            assert_eq!(got.len(), 1, "{text:?}: {got:?}");
            assert!(got[0].contains("empty header line"), "{text:?}: {got:?}");
        }
        assert_eq!(
            rows("\u{feff}a,b\n1,2\n"),
            ["L2 {\"\u{feff}a\":\"1\",\"b\":\"2\"}"],
            "a byte order mark stays, as in Java"
        );
    }

    #[test]
    fn a_quote_never_closed_or_text_after_one_fails_the_object() {
        assert_eq!(
            rows("a\n1\n\"x\n2\n"),
            [
                r#"L2 {"a":"1"}"#,
                "ERR line 3: missing closing quote for the value that starts at byte 4"
            ]
        );
        assert_eq!(
            rows("a\n\"x\"y\n"),
            [
                "ERR line 2, byte 5: unexpected `y` after a quoted value: expected the delimiter or the end of the line"
            ]
        );
    }

    #[test]
    fn other_delimiters_and_quotes_of_one_or_more_bytes() {
        let options = |delimiter, quote_character| CsvOptions {
            delimiter,
            quote_character,
            ..CsvOptions::default()
        };
        assert_eq!(
            same_when_cut(&options(';', '\''), b"a;b\n'x;y';'it''s'\n"),
            [r#"L2 {"a":"x;y","b":"it's"}"#]
        );
        assert_eq!(
            same_when_cut(&options('\t', '"'), b"a\tb\n\"x\" \t\"y\"\n"),
            [r#"L2 {"a":"x","b":"y"}"#],
            "a tab delimiter after a quoted value is the delimiter, not a space"
        );
        assert_eq!(
            same_when_cut(&options('§', '¤'), "a§b\n¤x§y¤¤¤§z\n".as_bytes()),
            [r#"L2 {"a":"x§y¤","b":"z"}"#]
        );
        // Same lead byte (0xC3): each is still told apart.
        assert_eq!(
            same_when_cut(&options('é', 'è'), "aéb\nèxéyèéz\u{e0}\n".as_bytes()),
            [r#"L2 {"a":"xéy","b":"zà"}"#]
        );
        assert_eq!(
            same_when_cut(&no_header(&[]), "a€\u{1F600}b,c\n".as_bytes()),
            [r#"L1 {"column1":"a€😀b","column2":"c"}"#]
        );
    }

    #[test]
    fn values_become_json_strings() {
        assert_eq!(
            same_when_cut(&no_header(&[]), b"\"q\"\"\\\x01\",\xFF\xC3\n"),
            ["L1 {\"column1\":\"q\\\"\\\\\\u0001\",\"column2\":\"\u{fffd}\u{fffd}\"}"]
        );
    }

    #[test]
    fn a_record_past_the_limit_is_reported_and_skipped() {
        let options = CsvOptions {
            row_limit: 8,
            ..CsvOptions::default()
        };
        assert_eq!(
            same_when_cut(&options, b"a,b\n1,2\n\"12345\n6789\",0\n3,4\n"),
            [
                r#"L2 {"a":"1","b":"2"}"#,
                "!L3:8",
                r#"L5 {"a":"3","b":"4"}"#
            ]
        );
        assert_eq!(
            same_when_cut(&options, b"abcdefghij\n1\n"),
            ["ERR line 1: the header record is longer than 8 bytes"]
        );
    }

    #[test]
    fn errors_stick_and_a_record_knows_where_it_starts() {
        let mut splitter = CsvSplitter::new(CsvOptions::default());
        let mut got = Vec::new();
        let mut out = |r: Row<'_>| {
            if let Row::Event { line, offset, .. } = r {
                got.push((line, offset));
            }
        };
        splitter.feed(b"a\n1\n\"2\n", &mut out).unwrap();
        splitter.feed(b"\"\n3", &mut out).unwrap();
        splitter.finish(&mut out).unwrap();
        assert_eq!(got, [(2, 2), (3, 4), (5, 9)]);
        let mut broken = CsvSplitter::new(CsvOptions::default());
        let error = broken.feed(b"a\n\"x\"y", &mut |_| {}).unwrap_err();
        assert_eq!(broken.feed(b"", &mut |_| {}), Err(error.clone()));
        assert_eq!(broken.finish(&mut |_| {}), Err(error));
    }
}
