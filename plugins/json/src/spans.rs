//! The `json` deserializer's parsing for flat replies: where each event sits in the payload (an
//! object is one event, each object of an array one), found without copying it or allocating
//! per record. Same verdicts and reasons as `parse.rs`: the scan (`sluice-scan`, in host/scan)
//! finds the events of what is valid; what it refuses goes through serde_json, which words the
//! reason.

use std::fmt;

use serde::Deserializer as _;
use serde::de::{Error as _, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// Appends to `out` the (offset, length) in `payload` of each event.
pub(crate) fn parse(payload: &[u8], out: &mut Vec<(u32, u32)>) -> Result<(), String> {
    if sluice_scan::events(payload, out) {
        return Ok(());
    }
    full(payload, out)
}

/// [`parse`] by serde_json alone: the reason when the scan refuses a payload.
pub(crate) fn full(payload: &[u8], out: &mut Vec<(u32, u32)>) -> Result<(), String> {
    let text =
        std::str::from_utf8(payload).map_err(|e| format!("invalid JSON: not UTF-8 ({e})"))?;
    let base = text.as_ptr() as usize;
    match text.trim_start().as_bytes().first() {
        Some(b'{') => {
            let raw: &RawValue =
                serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?;
            out.push(span(base, raw));
            Ok(())
        }
        Some(b'[') => {
            let mut bad = None;
            let mut de = serde_json::Deserializer::from_str(text);
            let parsed = de
                .deserialize_seq(Objects {
                    out,
                    base,
                    bad: &mut bad,
                })
                .and_then(|()| de.end());
            match (parsed, bad) {
                (Ok(()), _) => Ok(()),
                (Err(_), Some(reason)) => Err(reason),
                (Err(e), None) => Err(format!("invalid JSON: {e}")),
            }
        }
        // Not an object or array: the rare path, worded by the full parser.
        _ => super::parse::parse(payload).map(|_| ()),
    }
}

fn span(base: usize, raw: &RawValue) -> (u32, u32) {
    let text = raw.get();
    ((text.as_ptr() as usize - base) as u32, text.len() as u32)
}

/// Visits an array, recording each element's span; stops at the first that is not an object.
struct Objects<'a> {
    out: &'a mut Vec<(u32, u32)>,
    base: usize,
    bad: &'a mut Option<String>,
}

impl<'de> Visitor<'de> for Objects<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of objects")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        while let Some(raw) = seq.next_element::<&'de RawValue>()? {
            match super::parse::raw_kind(raw) {
                "an object" => self.out.push(span(self.base, raw)),
                other => {
                    *self.bad = Some(format!(
                        "element {i} of the array is {other}, not an object"
                    ));
                    return Err(A::Error::custom("not an object"));
                }
            }
            i += 1;
        }
        Ok(())
    }
}
