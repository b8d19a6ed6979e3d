//! An object's bytes as lines, chunk by chunk as they arrive: [`Inflate`] undoes gzip (every
//! member of a concatenated file, as Data Prepper reads them), [`Splitter`] cuts lines as
//! Java's `BufferedReader.readLine` does (`\n`, `\r\n` and `\r` each end a line, the last line
//! needs none). Neither holds more than a line and a chunk: a 500 MB object streams through.

use std::io::Write as _;

/// The longest line read; a longer one is reported (its start) and skipped to its end.
pub const LINE_LIMIT: usize = 16 << 20;

/// Bytes fed to the decoder at once: one write inflates at most about a thousand times that.
const INFLATE_SLICE: usize = 8 << 10;

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

    /// Feeds `chunk`, handing what it inflates to `out` piece by piece.
    pub fn feed(&mut self, chunk: &[u8], out: &mut impl FnMut(&[u8])) -> std::io::Result<()> {
        match self {
            Inflate::None => {
                out(chunk);
                Ok(())
            }
            Inflate::Gzip(decoder) => {
                for slice in chunk.chunks(INFLATE_SLICE) {
                    decoder.write_all(slice)?;
                    let inflated = decoder.get_mut();
                    if !inflated.is_empty() {
                        out(inflated);
                        inflated.clear();
                    }
                }
                Ok(())
            }
        }
    }

    /// The end of the object: what is left, or an error if the gzip stream was cut short.
    pub fn finish(&mut self, out: &mut impl FnMut(&[u8])) -> std::io::Result<()> {
        if let Inflate::Gzip(decoder) = self {
            decoder.try_finish()?;
            let inflated = decoder.get_mut();
            if !inflated.is_empty() {
                out(inflated);
                inflated.clear();
            }
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
    }

    #[test]
    fn a_line_past_the_limit_is_reported_once_and_skipped_to_its_end() {
        let long = vec![b'x'; LINE_LIMIT / 2 + 1];
        let got = lines(&[b"a\n", &long, &long, &long, b"tail\nb\n"]);
        assert_eq!(
            got,
            ["a".to_owned(), format!("!{LINE_LIMIT}"), "b".to_owned()]
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
        let mut text = Vec::new();
        for chunk in both.chunks(5) {
            inflate
                .feed(chunk, &mut |b| text.extend_from_slice(b))
                .unwrap();
        }
        inflate.finish(&mut |b| text.extend_from_slice(b)).unwrap();
        assert_eq!(text, b"one\ntwo\nthree");
        let mut cut = Inflate::new(true);
        let whole = gz(b"abcdefgh".repeat(100).as_slice());
        cut.feed(&whole[..whole.len() / 2], &mut |_| {}).unwrap();
        assert!(
            cut.finish(&mut |_| {}).is_err(),
            "a cut gzip stream is an error"
        );
    }
}
