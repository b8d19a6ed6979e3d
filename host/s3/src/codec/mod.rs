//! The s3 source's codecs besides `newline` and `ndjson` (which [`crate::lines`] cuts): Data
//! Prepper's `json` and `csv` input codecs, as pure streaming decoders. Each is fed an object's
//! inflated bytes chunk by chunk ([`crate::lines::Inflate`] makes them) and hands out one JSON
//! object text per event, for the `json` deserializer downstream:
//!
//! - [`json::JsonSplitter`]: each element of the object's array(s) (`codec: json`);
//! - [`csv::CsvSplitter`]: each row, as `{"column": "value", ...}` (`codec: csv`);
//! - [`parquet::read_rows`]: each row of a parquet file (`codec: parquet`).
//!
//! The first two do no I/O nor hold more than one event (bounded, like a line in `lines`) and
//! one chunk, so an object of any size streams through. A parquet file is read from its end
//! (the footer says where each row group lies), so the object is first spooled to a temporary
//! file, as Data Prepper does, and read from there one row group at a time. Each module's doc
//! lists its Data Prepper keys, defaults and validation messages, for the config layer.
//!
//! Each matches Data Prepper's behaviour, quirks included, as read in its source (each module
//! names the files): a malformed object stops the decoder with an error naming where, after the
//! events before that point were handed out, as Data Prepper's codec throws after giving them
//! to its consumer (its s3 source then counts the object as failed: `S3ObjectWorker.java`).

pub mod csv;
pub mod json;
pub mod parquet;

/// JSON strings, in quotes or only their contents, escaped as serde_json escapes them.
pub(crate) use sluice_scan::{
    write_string as write_json_string, write_string_contents as write_json_chars,
};

/// Java's `String.trim()`: strips every character up to U+0020 (controls too) at both ends.
pub(crate) fn java_trim(s: &str) -> &str {
    s.trim_matches(|c: char| c <= ' ')
}

/// Java's `String.length()`: UTF-16 code units.
pub(crate) fn java_length(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// `byte` for an error message: itself in backticks when printable ASCII, else its code.
pub(crate) fn show_byte(byte: u8) -> String {
    if byte.is_ascii_graphic() {
        format!("`{}`", char::from(byte))
    } else {
        format!("byte 0x{byte:02X}")
    }
}

/// Every way the tests cut `text` into chunks: at each position, byte by byte, and 20 times at
/// pseudo-random places (from `seed`), each with its name; a decoder must give what feeding
/// it whole gives.
#[cfg(test)]
pub(crate) fn cuts(text: &[u8], seed: u64) -> Vec<(String, Vec<&[u8]>)> {
    let mut all = Vec::new();
    for cut in 0..=text.len() {
        let (a, b) = text.split_at(cut);
        all.push((format!("cut at {cut}"), vec![a, b]));
    }
    all.push(("byte by byte".to_owned(), text.chunks(1).collect()));
    let mut seed = seed ^ text.len() as u64;
    for round in 0..20 {
        let mut chunks = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let n = ((seed % 9) as usize).min(rest.len());
            chunks.push(&rest[..n]);
            rest = &rest[n..];
        }
        all.push((format!("random cut {round}"), chunks));
    }
    all
}

/// A streaming decoder, as the tests drive one: [`csv::CsvSplitter`], [`json::JsonSplitter`].
#[cfg(test)]
pub(crate) trait Decoder {
    type Piece<'a>;
    type Error: std::fmt::Display;
    fn feed(
        &mut self,
        chunk: &[u8],
        out: &mut impl FnMut(Self::Piece<'_>),
    ) -> Result<(), Self::Error>;
    fn finish(&mut self, out: &mut impl FnMut(Self::Piece<'_>)) -> Result<(), Self::Error>;
}

/// What `decoder` hands out for `chunks`, each piece as `show` writes it, then `ERR <error>`
/// if one stopped it (`finish` is called only when every chunk was taken).
#[cfg(test)]
pub(crate) fn decode_chunks<D: Decoder>(
    mut decoder: D,
    chunks: &[&[u8]],
    show: impl Fn(D::Piece<'_>) -> String,
) -> Vec<String> {
    let mut got = Vec::new();
    let mut out = |p: D::Piece<'_>| got.push(show(p));
    let mut result = Ok(());
    for c in chunks {
        result = decoder.feed(c, &mut out);
        if result.is_err() {
            break;
        }
    }
    if result.is_ok() {
        result = decoder.finish(&mut out);
    }
    if let Err(e) = result {
        got.push(format!("ERR {e}"));
    }
    got
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_strings_escape_what_json_requires_and_nothing_else() {
        let mut out = Vec::new();
        write_json_string(&mut out, "a\"b\\c\nd\re\tf\u{8}\u{c}\u{1}\u{1f} é😀/");
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#""a\"b\\c\nd\re\tf\b\f\u0001\u001f é😀/""#
        );
    }

    #[test]
    fn java_trim_and_length_count_as_java_does() {
        assert_eq!(java_trim("\u{1} a b \t\n"), "a b");
        assert_eq!(
            java_trim("\u{feff}a "),
            "\u{feff}a",
            "a BOM is no space to Java"
        );
        assert_eq!(java_length("a😀é"), 4);
    }
}
