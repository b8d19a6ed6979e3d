//! A validating scan of JSON text: one pass that finds where each event sits without building
//! or copying anything. The `json` deserializer plugin finds its events with it
//! ([`events`]), and the pipeline checks every event a plugin returns with it ([`object`]);
//! the `otlp` and `plain` plugins write their strings with it ([`write_string`]).
//!
//! It accepts exactly what `serde_json` accepts (RFC 8259: no comments, no trailing commas,
//! strings valid UTF-8 without raw control characters, any nesting depth, as serde_json has
//! when it skips a value) and refuses anything else without saying why: the caller then runs
//! serde_json, which words the reason. So the scan only has to be right about what it accepts,
//! and the tests hold it to serde_json's verdicts on hundreds of thousands of payloads.
//!
//! The text of a string, most of a log event, is skipped 16 bytes at a time with the target's
//! vector instructions (`simd128` on WebAssembly when the build enables it, SSE2 on x86-64);
//! elsewhere a byte at a time.

use std::ops::Range;

/// Appends to `out` the `(offset, len)` of each event in `payload`, and returns true, if the
/// payload is a JSON object (one event) or an array of objects (one each; `[]` is none).
/// Returns false, with `out` as it was, for anything else, valid JSON or not.
pub fn events(payload: &[u8], out: &mut Vec<(u32, u32)>) -> bool {
    let before = out.len();
    let found = Scan {
        text: payload,
        at: 0,
    }
    .events(out)
    .is_some();
    if !found {
        out.truncate(before);
    }
    found
}

/// Where the object is in `text`, if `text` is one JSON object with nothing around it but
/// whitespace. `None` for anything else, valid JSON or not.
pub fn object(text: &[u8]) -> Option<Range<usize>> {
    let mut scan = Scan { text, at: 0 };
    if scan.peek_past_space()? != b'{' {
        return None;
    }
    let start = scan.at;
    scan.value(&mut Stack::default())?;
    let end = scan.at;
    scan.skip_space();
    (scan.at == text.len()).then_some(start..end)
}

struct Scan<'a> {
    text: &'a [u8],
    at: usize,
}

/// Which container encloses the value being read.
#[derive(Clone, Copy, PartialEq)]
enum Frame {
    Object,
    Array,
}

/// The open containers, innermost last: the first 64 as bits (no allocation for what real
/// events nest), deeper ones in a vector.
#[derive(Default)]
struct Stack {
    depth: usize,
    /// Bit `i` set: the container at depth `i` is an object.
    shallow: u64,
    deep: Vec<Frame>,
}

impl Stack {
    fn push(&mut self, frame: Frame) {
        if self.depth < 64 {
            let bit = 1 << self.depth;
            match frame {
                Frame::Object => self.shallow |= bit,
                Frame::Array => self.shallow &= !bit,
            }
        } else {
            self.deep.push(frame);
        }
        self.depth += 1;
    }

    fn last(&self) -> Option<Frame> {
        match self.depth {
            0 => None,
            1..=64 if self.shallow >> (self.depth - 1) & 1 == 1 => Some(Frame::Object),
            1..=64 => Some(Frame::Array),
            _ => self.deep.last().copied(),
        }
    }

    fn pop(&mut self) {
        self.depth -= 1;
        if self.depth >= 64 {
            self.deep.pop();
        }
    }
}

impl Scan<'_> {
    fn events(&mut self, out: &mut Vec<(u32, u32)>) -> Option<()> {
        let mut stack = Stack::default();
        match self.peek_past_space()? {
            b'{' => self.event(&mut stack, out)?,
            b'[' => {
                self.at += 1;
                if self.peek_past_space()? == b']' {
                    self.at += 1;
                } else {
                    loop {
                        if self.peek_past_space()? != b'{' {
                            return None;
                        }
                        self.event(&mut stack, out)?;
                        match self.next_past_space()? {
                            b',' => continue,
                            b']' => break,
                            _ => return None,
                        }
                    }
                }
            }
            _ => return None,
        }
        self.skip_space();
        (self.at == self.text.len()).then_some(())
    }

    /// Reads the value starting here and records its span.
    fn event(&mut self, stack: &mut Stack, out: &mut Vec<(u32, u32)>) -> Option<()> {
        let start = self.at;
        self.value(stack)?;
        out.push((start as u32, (self.at - start) as u32));
        Some(())
    }

    /// Reads one value, containers included, without recursion (a hostile payload may nest
    /// deeper than the stack would allow).
    fn value(&mut self, stack: &mut Stack) -> Option<()> {
        loop {
            // A value.
            match self.next_past_space()? {
                b'"' => self.string()?,
                b'{' => {
                    if self.peek_past_space()? == b'}' {
                        self.at += 1;
                    } else {
                        stack.push(Frame::Object);
                        self.key()?;
                        continue;
                    }
                }
                b'[' => {
                    if self.peek_past_space()? == b']' {
                        self.at += 1;
                    } else {
                        stack.push(Frame::Array);
                        continue;
                    }
                }
                b't' => self.literal(b"rue")?,
                b'f' => self.literal(b"alse")?,
                b'n' => self.literal(b"ull")?,
                b'-' => self.number(None)?,
                digit @ b'0'..=b'9' => self.number(Some(digit))?,
                _ => return None,
            }
            // What follows it: a comma and the next value (or key), or the end of containers.
            loop {
                let Some(frame) = stack.last() else {
                    return Some(());
                };
                match (self.next_past_space()?, frame) {
                    (b',', Frame::Object) => {
                        self.key()?;
                        break;
                    }
                    (b',', Frame::Array) => break,
                    (b'}', Frame::Object) | (b']', Frame::Array) => {
                        stack.pop();
                    }
                    _ => return None,
                }
            }
        }
    }

    /// A key and its colon.
    fn key(&mut self) -> Option<()> {
        if self.next_past_space()? != b'"' {
            return None;
        }
        self.string()?;
        (self.next_past_space()? == b':').then_some(())
    }

    /// The rest of a string, after its opening quote.
    fn string(&mut self) -> Option<()> {
        loop {
            self.at = plain(self.text, self.at);
            match *self.text.get(self.at)? {
                b'"' => {
                    self.at += 1;
                    return Some(());
                }
                b'\\' => {
                    let escaped = *self.text.get(self.at + 1)?;
                    self.at += 2;
                    match escaped {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                        b'u' => {
                            let hex = self.text.get(self.at..self.at + 4)?;
                            if !hex.iter().all(u8::is_ascii_hexdigit) {
                                return None;
                            }
                            self.at += 4;
                        }
                        _ => return None,
                    }
                }
                0x80.. => self.at += utf8_char(&self.text[self.at..])?,
                // A raw control character.
                _ => return None,
            }
        }
    }

    fn literal(&mut self, rest: &[u8]) -> Option<()> {
        let found = self.text.get(self.at..self.at + rest.len())? == rest;
        self.at += rest.len();
        found.then_some(())
    }

    /// The rest of a number; `first` is its first digit, or `None` after a minus sign.
    fn number(&mut self, first: Option<u8>) -> Option<()> {
        let first = match first {
            Some(digit) => digit,
            None => self.next().filter(u8::is_ascii_digit)?,
        };
        if first == b'0' {
            if self.peek().is_some_and(|b| b.is_ascii_digit()) {
                return None;
            }
        } else {
            self.digits();
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            if self.digits() == 0 {
                return None;
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.at += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.at += 1;
            }
            if self.digits() == 0 {
                return None;
            }
        }
        Some(())
    }

    fn digits(&mut self) -> usize {
        let start = self.at;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.at += 1;
        }
        self.at - start
    }

    fn skip_space(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.at += 1;
        Some(b)
    }

    fn peek_past_space(&mut self) -> Option<u8> {
        self.skip_space();
        self.peek()
    }

    fn next_past_space(&mut self) -> Option<u8> {
        self.skip_space();
        self.next()
    }
}

/// The length of the UTF-8 character `bytes` starts with (its first byte is not ASCII), if it
/// is a valid one: the ranges of RFC 3629, as `std::str::from_utf8` checks them.
fn utf8_char(bytes: &[u8]) -> Option<usize> {
    let tail = |i: usize| bytes.get(i).is_some_and(|&b| b & 0xc0 == 0x80);
    let second =
        |range: std::ops::RangeInclusive<u8>| bytes.get(1).is_some_and(|b| range.contains(b));
    let len = match bytes[0] {
        0xc2..=0xdf => 2,
        0xe0 if second(0xa0..=0xbf) => 3,
        0xed if second(0x80..=0x9f) => 3,
        0xe1..=0xec | 0xee..=0xef => 3,
        0xf0 if second(0x90..=0xbf) => 4,
        0xf4 if second(0x80..=0x8f) => 4,
        0xf1..=0xf3 => 4,
        _ => return None,
    };
    (1..len).all(tail).then_some(len)
}

/// How many bytes at the start of `text` a JSON string holds as they are: the length up to the
/// first quote, backslash or control character (the bytes a writer must escape).
pub fn unescaped(text: &[u8]) -> usize {
    let mut at = vector::stop::<false>(text, 0);
    // Then 8 bytes at a time in a `u64` (short strings: keys, names, paths), the first byte to
    // escape being the lowest flagged (a flag above it may be false; below, never).
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    while let Some(chunk) = text.get(at..at + 8) {
        let word = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        let flags = zero(word ^ (ONES * u64::from(b'"')))
            | zero(word ^ (ONES * u64::from(b'\\')))
            | (word.wrapping_sub(ONES * 0x20) & !word & HIGH);
        if flags != 0 {
            return at + (flags.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    scalar_stop::<false>(text, at)
}

/// Writes `s` to `out` as a JSON string, in quotes, escaped as serde_json escapes one: `"` and
/// `\`, the control characters (`\b \t \n \f \r` short, the rest `\u00xx`), everything else
/// as it is. The runs between are found a block of bytes at a time ([`unescaped`]).
pub fn write_string(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    write_string_contents(out, s);
    out.push(b'"');
}

/// [`write_string`] without the quotes: `s` escaped as inside a JSON string.
pub fn write_string_contents(out: &mut Vec<u8>, s: &str) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut bytes = s.as_bytes();
    loop {
        let plain = unescaped(bytes);
        out.extend_from_slice(&bytes[..plain]);
        let Some(&b) = bytes.get(plain) else {
            return;
        };
        bytes = &bytes[plain + 1..];
        let short = match b {
            b'"' => b'"',
            b'\\' => b'\\',
            0x08 => b'b',
            b'\t' => b't',
            b'\n' => b'n',
            0x0c => b'f',
            b'\r' => b'r',
            _ => b'u',
        };
        out.push(b'\\');
        out.push(short);
        if short == b'u' {
            out.extend_from_slice(b"00");
            out.push(DIGITS[usize::from(b >> 4)]);
            out.push(DIGITS[usize::from(b & 0xf)]);
        }
    }
}

/// Where the plain text of a string starting at `at` ends: the first quote, backslash, control
/// character or non-ASCII byte at or after `at` (or the end of `text`).
fn plain(text: &[u8], at: usize) -> usize {
    scalar_stop::<true>(text, vector::stop::<true>(text, at))
}

/// The first quote, backslash, control character or (when `ASCII`) non-ASCII byte at or after
/// `at`, a byte at a time: what is left after the vector and word loops.
fn scalar_stop<const ASCII: bool>(text: &[u8], mut at: usize) -> usize {
    while let Some(&b) = text.get(at) {
        if b == b'"' || b == b'\\' || b < 0x20 || (ASCII && b >= 0x80) {
            break;
        }
        at += 1;
    }
    at
}

/// `stop::<ASCII>(text, at)`, 16 bytes at a time: the first block from `at` that holds a
/// quote, a backslash, a control character or (when `ASCII`) a non-ASCII byte, leaving fewer
/// than 16 bytes or that block to the caller's byte loop. Compared as signed bytes, `< 0x20`
/// catches both control characters and non-ASCII bytes (negative); as unsigned, only the first.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
#[allow(
    unsafe_code,
    reason = "vector loads take a pointer; each is checked in bounds"
)]
mod vector {
    use core::arch::wasm32::{
        i8x16_bitmask, i8x16_eq, i8x16_lt, i8x16_splat, u8x16_lt, v128, v128_load, v128_or,
    };

    pub(super) fn stop<const ASCII: bool>(text: &[u8], mut at: usize) -> usize {
        let (quote, backslash, space) = (
            i8x16_splat(b'"' as i8),
            i8x16_splat(b'\\' as i8),
            i8x16_splat(0x20),
        );
        while at + 16 <= text.len() {
            // SAFETY: `at + 16 <= text.len()`, and `v128_load` takes unaligned addresses.
            let block = unsafe { v128_load(text.as_ptr().add(at).cast::<v128>()) };
            let low = if ASCII {
                i8x16_lt(block, space)
            } else {
                u8x16_lt(block, space)
            };
            let stop = v128_or(
                v128_or(i8x16_eq(block, quote), i8x16_eq(block, backslash)),
                low,
            );
            let mask = i8x16_bitmask(stop);
            if mask != 0 {
                return at + mask.trailing_zeros() as usize;
            }
            at += 16;
        }
        at
    }
}

#[cfg(target_arch = "x86_64")]
#[allow(
    unsafe_code,
    reason = "vector loads take a pointer; each is checked in bounds"
)]
mod vector {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_cmplt_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8,
        _mm_or_si128, _mm_set1_epi8,
    };

    pub(super) fn stop<const ASCII: bool>(text: &[u8], mut at: usize) -> usize {
        // SAFETY: SSE2 is part of x86-64; every load is of 16 bytes inside `text`
        // (`at + 16 <= text.len()`), and `_mm_loadu_si128` takes unaligned addresses.
        unsafe {
            let (quote, backslash, space, control) = (
                _mm_set1_epi8(b'"' as i8),
                _mm_set1_epi8(b'\\' as i8),
                _mm_set1_epi8(0x20),
                _mm_set1_epi8(0x1f),
            );
            while at + 16 <= text.len() {
                let block = _mm_loadu_si128(text.as_ptr().add(at).cast::<__m128i>());
                let low = if ASCII {
                    _mm_cmplt_epi8(block, space)
                } else {
                    // Unsigned `<= 0x1f`: the byte is its minimum with 0x1f.
                    _mm_cmpeq_epi8(_mm_min_epu8(block, control), block)
                };
                let stop = _mm_or_si128(
                    _mm_or_si128(
                        _mm_cmpeq_epi8(block, quote),
                        _mm_cmpeq_epi8(block, backslash),
                    ),
                    low,
                );
                let mask = _mm_movemask_epi8(stop);
                if mask != 0 {
                    return at + mask.trailing_zeros() as usize;
                }
                at += 16;
            }
        }
        at
    }
}

#[cfg(not(any(
    all(target_arch = "wasm32", target_feature = "simd128"),
    target_arch = "x86_64"
)))]
mod vector {
    pub(super) fn stop<const ASCII: bool>(_: &[u8], at: usize) -> usize {
        at
    }
}

#[cfg(test)]
mod tests {
    use serde_json::value::RawValue;

    use super::*;

    /// What serde_json says [`events`] should find.
    fn serde_events(payload: &[u8]) -> Option<Vec<(u32, u32)>> {
        let text = std::str::from_utf8(payload).ok()?;
        let span = |raw: &RawValue| {
            let found = raw.get();
            let at = found.as_ptr() as usize - text.as_ptr() as usize;
            (at as u32, found.len() as u32)
        };
        let object = |raw: &&RawValue| raw.get().starts_with('{');
        if let Ok(raw) = serde_json::from_str::<&RawValue>(text)
            && object(&raw)
        {
            return Some(vec![span(raw)]);
        }
        let items = serde_json::from_str::<Vec<&RawValue>>(text).ok()?;
        items
            .iter()
            .all(object)
            .then(|| items.into_iter().map(span).collect())
    }

    /// What serde_json says [`object`] should find.
    fn serde_object(text: &[u8]) -> Option<Range<usize>> {
        let raw = serde_json::from_slice::<&RawValue>(text).ok()?;
        let at = raw.get().as_ptr() as usize - text.as_ptr() as usize;
        raw.get().starts_with('{').then(|| at..at + raw.get().len())
    }

    /// xorshift64: the same cases on every run.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
    }

    /// Valid payloads with every kind of value, escape, number form and UTF-8 width, nesting
    /// past the 64 levels kept as bits, and strings long enough for the vector loop.
    fn seeds() -> Vec<Vec<u8>> {
        let mut seeds: Vec<Vec<u8>> = [
            r#"{}"#,
            r#"[]"#,
            r#" [ {} , { } ] "#,
            r#"{"a":1,"b":[true,false,null],"c":{"d":"e"}}"#,
            r#"[{"n":-0.5e+10},{"n":0},{"n":12.25E-3},{"n":-7}]"#,
            r#"{"s":"tab\t quote\" back\\ slash\/ \b\f\n\r \u00e9\uD83D\uDE00 end"}"#,
            "{\"utf8\":\"é 日本 😀 \u{7f}\",\"k\u{e9}\":[[[[{}]]]]}",
            "\t\r\n{\"spaced\" : [ 1 , 2 ] }\n",
            r#"[{"a":[{"b":[{"c":[]}]}]},{"x":"y"}]"#,
            r#"{"long":"0123456789abcdef0123456789abcdef\"0123456789abcdef0123456789\\abcdef"}"#,
            r#"{"time":"2026-12-02T10:00:00.000Z","level":"info","message":"GET /api/v1/items/7 200 lorem ipsum dolor sit amet lorem ipsum dolor sit amet","tags":["http","api"]}"#,
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
        let deep = format!("{{\"d\":{}1{}}}", "[".repeat(100), "]".repeat(100));
        seeds.push(deep.into_bytes());
        seeds.push(format!("[{}]", "{\"o\":{}},".repeat(70) + "{}").into_bytes());
        seeds
    }

    /// Both scans accept exactly what serde_json accepts, with the same spans: on valid
    /// payloads, and on 300,000 mutations of them (a byte replaced by one that matters to JSON
    /// or UTF-8, removed, inserted, or the payload cut short).
    #[test]
    fn the_scans_accept_what_serde_json_accepts() {
        let check = |payload: &[u8]| {
            let mut found = Vec::new();
            let scanned = events(payload, &mut found).then_some(found);
            let text = || String::from_utf8_lossy(payload);
            assert_eq!(scanned, serde_events(payload), "events of {:?}", text());
            assert_eq!(
                object(payload),
                serde_object(payload),
                "object {:?}",
                text()
            );
            scanned.is_some()
        };
        let seeds = seeds();
        for seed in &seeds {
            assert!(check(seed), "{:?}", String::from_utf8_lossy(seed));
        }
        let alphabet =
            b"\"\\{}[]:, \n0-.e+Eu9a/tfn\x01\x1f\x7f\x80\xbf\xc0\xc1\xc3\xe0\xed\xf0\xf4\xf5\xff";
        let mut rng = Rng(0x5eed_1234_abcd_ef01);
        let mut accepted = 0;
        for _ in 0..300_000 {
            let mut payload = seeds[rng.below(seeds.len())].clone();
            for _ in 0..1 + rng.below(3) {
                let at = rng.below(payload.len() + 1);
                let byte = alphabet[rng.below(alphabet.len())];
                match rng.below(4) {
                    0 if at < payload.len() => payload[at] = byte,
                    1 if at < payload.len() => {
                        payload.remove(at);
                    }
                    2 => payload.insert(at, byte),
                    _ => payload.truncate(at),
                }
            }
            accepted += usize::from(check(&payload));
        }
        // The mutations must land on both sides of the line, or the check proves little.
        assert!((10_000..290_000).contains(&accepted), "{accepted} accepted");
    }

    #[test]
    fn events_are_the_object_or_each_object_of_the_array() {
        let mut out = vec![(9, 9)];
        assert!(events(br#" {"a":1} "#, &mut out));
        assert!(events(br#"[{"b":2}, {}]"#, &mut out));
        assert_eq!(out, vec![(9, 9), (1, 7), (1, 7), (10, 2)]);
        // An array holding anything but objects, or a value that is not a container: refused,
        // and what was found before is taken back.
        assert!(!events(br#"[{"b":2}, 3]"#, &mut out));
        assert!(!events(b"\"text\"", &mut out));
        assert_eq!(out.len(), 4);
    }

    #[test]
    fn an_object_is_found_between_whitespace_and_nothing_else() {
        assert_eq!(object(b" \n{\"a\" : [1]}\t"), Some(2..13));
        assert_eq!(object(b"{} {}"), None);
        assert_eq!(object(b"[{}]"), None);
        assert_eq!(object(b"{\"a\":\"\xff\"}"), None, "not UTF-8");
    }

    /// Every byte value at every place of strings longer and shorter than a vector block.
    #[test]
    fn unescaped_stops_at_the_first_byte_a_json_string_must_escape() {
        for len in [0, 1, 15, 16, 17, 40] {
            for at in 0..len {
                for b in 0..=255u8 {
                    let mut text = vec![b'a'; len];
                    text[at] = b;
                    let escape = b == b'"' || b == b'\\' || b < 0x20;
                    assert_eq!(
                        unescaped(&text),
                        if escape { at } else { len },
                        "{b:#x} at {at} of {len}"
                    );
                }
            }
        }
    }

    /// Every character JSON escapes, and some it does not, at every place of strings longer
    /// and shorter than a vector block: written as serde_json writes them.
    #[test]
    fn strings_are_written_as_serde_json_writes_them() {
        let chars: Vec<char> = (0..0x80u8)
            .map(char::from)
            .chain(['\u{7f}', 'é', '\u{2028}', '😀'])
            .collect();
        for len in [0, 1, 15, 16, 17, 40] {
            for at in 0..len.max(1) {
                for &c in &chars {
                    let mut text: Vec<char> = vec!['a'; len];
                    if len > 0 {
                        text[at] = c;
                    }
                    let text: String = text.into_iter().collect();
                    let mut out = b"x".to_vec();
                    write_string(&mut out, &text);
                    let want = format!("x{}", serde_json::to_string(&text).expect("a string"));
                    assert_eq!(
                        String::from_utf8(out).expect("UTF-8"),
                        want,
                        "{c:?} at {at}"
                    );
                }
            }
        }
    }

    /// A hostile payload nesting far past any stack: refused or accepted without recursion.
    #[test]
    fn deep_nesting_is_scanned_without_recursion() {
        let deep = |n| format!("{{\"d\":{}{}}}", "[".repeat(n), "]".repeat(n));
        assert!(object(deep(1_000_000).as_bytes()).is_some());
        assert!(object(deep(1_000_000).replace("]]", "]}").as_bytes()).is_none());
    }
}
