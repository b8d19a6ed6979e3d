//! `dedup`: a client that retries after a timeout does not write twice. A record whose
//! idempotency key was written within `ttl` is dropped (counted, and dead-lettered with the
//! reason); every other record goes to the first tier.
//!
//! ```yaml
//! buffer:
//!   dedup:
//!     header: Idempotency-Key   # the key: this request header; without one, the payload's hash
//!     ttl: 10m                  # how long a key is remembered: ms, s, m or h; default 10m
//!     tiers:
//!       - kafka: { bootstrap_servers: [127.0.0.1:9092], topics: [{ name: logs, group_id: sluice }] }
//! ```
//!
//! A key is remembered only once its write succeeded (the host keeps the state and applies a
//! write's changes only when every tier holds its records), so the retry of a write that failed
//! is kept, never taken for a duplicate. Two writes of one key at the same moment may both be
//! kept: a duplicate, never a loss.

wit_bindgen::generate!({ world: "buffer-plugin", path: "../../wit/v0.2" });

use std::cell::RefCell;

use exports::sluice::plugin::buffer_policy::{
    Guest, Incoming, Move, Placement, PolicyInfo, Refusal,
};
use exports::sluice::plugin::configure::Guest as Configure;
use sluice::plugin::buffer_host;
use sluice::plugin::types::OptionEntry;

struct Options {
    header: Option<String>,
    ttl_ms: u64,
}

thread_local! {
    static OPTIONS: RefCell<Options> = const {
        RefCell::new(Options { header: None, ttl_ms: 600_000 })
    };
}

/// `250ms`, `30s`, `10m`, `2h`, or a bare number of milliseconds.
fn duration_ms(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().ok()?;
    let scale = match unit.trim() {
        "" | "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return None,
    };
    number.checked_mul(scale)
}

struct Dedup;

impl Configure for Dedup {
    fn configure(options: Vec<OptionEntry>) -> Result<(), String> {
        let mut parsed = Options {
            header: None,
            ttl_ms: 600_000,
        };
        for o in options {
            match o.key.as_str() {
                "header" => parsed.header = Some(o.value.to_ascii_lowercase()),
                "ttl" => {
                    parsed.ttl_ms = duration_ms(&o.value).filter(|ms| *ms > 0).ok_or_else(|| {
                        format!("option `ttl` must be a duration such as `10m` or `30s`, got `{}`", o.value)
                    })?;
                }
                other => {
                    return Err(format!(
                        "unknown option `{other}`: dedup takes `header` and `ttl`"
                    ));
                }
            }
        }
        OPTIONS.with(|o| *o.borrow_mut() = parsed);
        Ok(())
    }
}

impl Guest for Dedup {
    fn describe() -> PolicyInfo {
        OPTIONS.with(|o| PolicyInfo {
            headers: o.borrow().header.iter().cloned().collect(),
        })
    }

    fn on_write(records: Vec<Incoming>) -> Result<Vec<Placement>, Refusal> {
        OPTIONS.with(|o| {
            let o = o.borrow();
            let keys: Vec<Vec<u8>> = records.iter().map(|r| key(&o, r)).collect();
            let new = buffer_host::insert_new(&keys, o.ttl_ms);
            Ok(new
                .into_iter()
                .map(|new| match new {
                    true => Placement::Tier((0, None)),
                    false => Placement::Drop(format!(
                        "duplicate: the same idempotency key was written within {} ms",
                        o.ttl_ms
                    )),
                })
                .collect())
        })
    }

    fn next_read(_worker: u32) -> Option<u8> {
        None
    }

    fn tick() -> Vec<Move> {
        Vec::new()
    }
}

/// The record's idempotency key: `h:` and the header's value, or `p:` and the payload hash.
fn key(options: &Options, record: &Incoming) -> Vec<u8> {
    let header = options.header.as_ref().and_then(|name| {
        record
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    });
    match header {
        Some(value) => [b"h:".as_slice(), value.as_bytes()].concat(),
        None => [b"p:".as_slice(), &record.payload_hash.to_le_bytes()].concat(),
    }
}

export!(Dedup);
