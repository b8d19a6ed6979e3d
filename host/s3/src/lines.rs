//! An object's bytes as lines, chunk by chunk as they arrive: [`Inflate`] undoes gzip (every
//! member of a concatenated file, as Data Prepper reads them), [`Splitter`] cuts lines as
//! Java's `BufferedReader.readLine` does (`\n`, `\r\n` and `\r` each end a line, the last line
//! needs none). Neither holds more than a line and a chunk: a 500 MB object streams through.

use std::io::Write as _;

/// The longest line read; a longer one is reported (its start) and skipped to its end.
pub const LINE_LIMIT: usize = 16 << 20;

/// Bytes fed to the decoder at once: one write inflates at most about a thousand times that,
/// so what one slice makes is bounded (feed a chunk slice by slice).
pub const INFLATE_SLICE: usize = 8 << 10;

/// Undoes the object's compression.
pub enum Inflate {
    None,
    Gzip(Box<flate2::write::MultiGzDecoder<Vec<u8>>>),
}

impl Inflate {
    pub fn new(gzip: bool) -> Self {
        if gzip {
            Inflate::Gzip(Box::new(flate2::write::MultiGzDecoder::new(Vec::new())))
        } else {
            Inflate::None
        }
    }

    /// Feeds `slice` (at most [`INFLATE_SLICE`] bytes, so what it inflates is bounded),
    /// putting what it inflates in `out` (cleared first).
    pub fn feed(&mut self, slice: &[u8], out: &mut Vec<u8>) -> std::io::Result<()> {
        out.clear();
        match self {
            Inflate::None => out.extend_from_slice(slice),
            Inflate::Gzip(decoder) => {
                decoder.write_all(slice)?;
                std::mem::swap(decoder.get_mut(), out);
            }
        }
        Ok(())
    }

    /// The end of the object: what is left in `out` (cleared first), or an error if the gzip
    /// stream was cut short.
    pub fn finish(&mut self, out: &mut Vec<u8>) -> std::io::Result<()> {
        out.clear();
        if let Inflate::Gzip(decoder) = self {
            decoder.try_finish()?;
            std::mem::swap(decoder.get_mut(), out);
        }
        Ok(())
    }
}

/// One piece of an object's text.
#[derive(Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    /// A whole line, without its end.
    Line(&'a [u8]),
    /// A line longer than [`LINE_LIMIT`]: its start (that many bytes); the rest is skipped.
    TooLong(&'a [u8]),
}

/// Cuts lines out of chunks.
#[derive(Default)]
pub struct Splitter {
    /// The start of a line whose end has not come yet.
    partial: Vec<u8>,
    /// The last chunk ended in `\r`: a `\n` opening the next one belongs to it.
    after_cr: bool,
    /// Inside a line too long: skip to its end.
    skipping: bool,
}

impl Splitter {
    /// Feeds `chunk`, handing each complete line to `out`.
    pub fn feed(&mut self, mut chunk: &[u8], out: &mut impl FnMut(Piece<'_>)) {
        if chunk.is_empty() {
            // Nothing to say whether a `\n` follows a `\r`.
            return;
        }
        if self.after_cr {
            self.after_cr = false;
            if let Some(rest) = chunk.strip_prefix(b"\n") {
                chunk = rest;
            }
        }
        while !chunk.is_empty() {
            let Some(end) = memchr::memchr2(b'\n', b'\r', chunk) else {
                self.hold(chunk, out);
                return;
            };
            let line = &chunk[..end];
            let crlf = chunk[end] == b'\r' && chunk.get(end + 1) == Some(&b'\n');
            if chunk[end] == b'\r' && end + 1 == chunk.len() {
                self.after_cr = true;
            }
            if self.skipping {
                self.skipping = false;
            } else if self.partial.is_empty() && line.len() > LINE_LIMIT {
                out(Piece::TooLong(&line[..LINE_LIMIT]));
            } else if self.partial.is_empty() {
                out(Piece::Line(line));
            } else if self.partial.len() + line.len() > LINE_LIMIT {
                self.hold(line, out);
                self.skipping = false;
            } else {
                self.partial.extend_from_slice(line);
                out(Piece::Line(&self.partial));
                self.partial.clear();
            }
            chunk = &chunk[end + if crlf { 2 } else { 1 }..];
        }
    }

    /// Keeps `bytes` as the start of the current line, reporting it once it is too long.
    fn hold(&mut self, bytes: &[u8], out: &mut impl FnMut(Piece<'_>)) {
        if self.skipping {
            return;
        }
        let room = LINE_LIMIT - self.partial.len();
        if bytes.len() <= room {
            self.partial.extend_from_slice(bytes);
            return;
        }
        self.partial.extend_from_slice(&bytes[..room]);
        out(Piece::TooLong(&self.partial));
        self.partial = Vec::new();
        self.skipping = true;
    }

    /// The end of the object: its last line, if it has no line end.
    pub fn finish(&mut self, out: &mut impl FnMut(Piece<'_>)) {
        if !self.partial.is_empty() && !self.skipping {
            out(Piece::Line(&self.partial));
        }
        self.partial.clear();
        self.skipping = false;
        self.after_cr = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines of `chunks`, whole or `!`-prefixed when too long.
    fn lines(chunks: &[&[u8]]) -> Vec<String> {
        let mut s = Splitter::default();
        let mut got = Vec::new();
        let mut out = |p: Piece<'_>| {
            got.push(match p {
                Piece::Line(l) => String::from_utf8_lossy(l).into_owned(),
                Piece::TooLong(l) => format!("!{}", l.len()),
            })
        };
        for c in chunks {
            s.feed(c, &mut out);
        }
        s.finish(&mut out);
        got
    }

    #[test]
    fn every_line_end_java_knows_ends_a_line_across_chunks() {
        assert_eq!(lines(&[b"a\nb\r\nc\rd"]), ["a", "b", "c", "d"]);
        assert_eq!(lines(&[b"a\r", b"\nb\n"]), ["a", "b"]);
        assert_eq!(lines(&[b"a\r", b"\rb"]), ["a", "", "b"]);
        assert_eq!(lines(&[b"he", b"llo\nwor", b"ld"]), ["hello", "world"]);
        assert_eq!(lines(&[b"\n\nx\n"]), ["", "", "x"]);
        assert_eq!(lines(&[b""]), Vec::<String>::new());
        assert_eq!(
            lines(&[b"a\r", b"", b"\nb"]),
            ["a", "b"],
            "an empty chunk between"
        );
    }

    #[test]
    fn a_line_past_the_limit_is_reported_once_and_skipped_to_its_end() {
        let long = vec![b'x'; LINE_LIMIT / 2 + 1];
        let got = lines(&[b"a\n", &long, &long, &long, b"tail\nb\n"]);
        assert_eq!(
            got,
            ["a".to_owned(), format!("!{LINE_LIMIT}"), "b".to_owned()]
        );
        let mut whole = vec![b'y'; LINE_LIMIT + 1];
        whole.extend_from_slice(b"\nc\n");
        let got = lines(&[&whole]);
        assert_eq!(
            got,
            [format!("!{LINE_LIMIT}"), "c".to_owned()],
            "in one chunk too"
        );
    }

    #[test]
    fn concatenated_gzip_members_inflate_as_one_text() {
        let gz = |text: &[u8]| {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(text).unwrap();
            e.finish().unwrap()
        };
        let mut both = gz(b"one\ntw");
        both.extend(gz(b"o\nthree"));
        let mut inflate = Inflate::new(true);
        let (mut text, mut out) = (Vec::new(), Vec::new());
        for chunk in both.chunks(5) {
            inflate.feed(chunk, &mut out).unwrap();
            text.extend_from_slice(&out);
        }
        inflate.finish(&mut out).unwrap();
        text.extend_from_slice(&out);
        assert_eq!(text, b"one\ntwo\nthree");
        let mut cut = Inflate::new(true);
        let whole = gz(b"abcdefgh".repeat(100).as_slice());
        cut.feed(&whole[..whole.len() / 2], &mut out).unwrap();
        assert!(
            cut.finish(&mut out).is_err(),
            "a cut gzip stream is an error"
        );
    }
}
