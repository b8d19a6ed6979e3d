//! `logfmt`: logfmt lines (`key=value key2="quoted value" flag`) -> one event per line.
//!
//! The same format as the Python `logfmt_python` and the JavaScript `logfmt_js` plugins; all
//! three pass the conformance suite in `tests/conformance/logfmt.json`.
//!
//! Rules: lines split on LF (a trailing CR is dropped); blank lines hold no event; a pair is
//! `key=value`, `key="quoted"` (escapes `\"` `\\` `\n` `\t` `\r`) or a bare `key` (true); the
//! last of a repeated key wins; values are strings. A bad line makes the whole record
//! malformed, with a reason that starts `line N:`. It takes no options.
//!
//! Built for contract 0.2 ([`v0_2`]). With the feature `v0_1` the same parser is built for
//! contract 0.1.0 ([`v0_1`]): `scripts/build-plugins` makes that `logfmt_v0_1.wasm`, which the
//! tests keep to show 0.1.0 components still load and pass their suite.

#[cfg(not(feature = "v0_1"))]
wit_bindgen::generate!({ world: "deserializer-plugin", path: "../../wit/v0.2" });
#[cfg(not(feature = "v0_1"))]
mod v0_2;

#[cfg(feature = "v0_1")]
wit_bindgen::generate!({ world: "deserializer", path: "../../wit" });
#[cfg(feature = "v0_1")]
mod v0_1;

use serde_json::{Map, Value};

struct Logfmt;

export!(Logfmt);

/// The events of one record, in line order, or why the record is malformed.
fn parse(payload: &[u8]) -> Result<Vec<Map<String, Value>>, String> {
    let text = std::str::from_utf8(payload).map_err(|e| format!("not UTF-8 ({e})"))?;
    let mut events = Vec::new();
    for (number, line) in text.split('\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        match parse_line(line) {
            Ok(event) if event.is_empty() => {}
            Ok(event) => events.push(event),
            Err(reason) => return Err(format!("line {}: {reason}", number + 1)),
        }
    }
    Ok(events)
}

fn is_space(c: char) -> bool {
    c == ' ' || c == '\t'
}

fn parse_line(line: &str) -> Result<Map<String, Value>, String> {
    let mut event = Map::new();
    let mut chars = line.char_indices().peekable();
    loop {
        while chars.next_if(|&(_, c)| is_space(c)).is_some() {}
        let Some(&(start, _)) = chars.peek() else {
            return Ok(event);
        };
        let mut end = start;
        while let Some((i, c)) = chars.next_if(|&(_, c)| !is_space(c) && c != '=' && c != '"') {
            end = i + c.len_utf8();
        }
        let key = &line[start..end];
        if key.is_empty() {
            let (_, c) = chars.peek().copied().unwrap_or((0, ' '));
            let column = line[..start].chars().count() + 1;
            return Err(format!("expected a key at column {column}, found `{c}`"));
        }
        match chars.next() {
            None => {
                event.insert(key.to_owned(), Value::Bool(true));
                return Ok(event);
            }
            Some((_, c)) if is_space(c) => {
                event.insert(key.to_owned(), Value::Bool(true));
                continue;
            }
            Some((_, '"')) => return Err(format!("quote inside key `{key}`")),
            Some(_) => {} // '='
        }
        let value = if chars.next_if(|&(_, c)| c == '"').is_some() {
            let mut value = String::new();
            loop {
                match chars.next() {
                    None => return Err(format!("unterminated quoted value for key `{key}`")),
                    Some((_, '"')) => break,
                    Some((_, '\\')) => match chars.next() {
                        None => return Err(format!("unterminated quoted value for key `{key}`")),
                        Some((_, '"')) => value.push('"'),
                        Some((_, '\\')) => value.push('\\'),
                        Some((_, 'n')) => value.push('\n'),
                        Some((_, 't')) => value.push('\t'),
                        Some((_, 'r')) => value.push('\r'),
                        Some((_, e)) => {
                            return Err(format!("unknown escape `\\{e}` in the value of `{key}`"));
                        }
                    },
                    Some((_, c)) => value.push(c),
                }
            }
            if chars.peek().is_some_and(|&(_, c)| !is_space(c)) {
                return Err(format!(
                    "expected a space after the quoted value of `{key}`"
                ));
            }
            value
        } else {
            let mut value = String::new();
            while let Some((_, c)) = chars.next_if(|&(_, c)| !is_space(c)) {
                if c == '"' {
                    return Err(format!("quote inside the unquoted value of `{key}`"));
                }
                value.push(c);
            }
            value
        };
        event.insert(key.to_owned(), Value::String(value));
    }
}
