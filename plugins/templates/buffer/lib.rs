//! `{{name}}`: a buffer policy that shows every decision. Build: `sluice plugins build .`
//!
//! ```yaml
//! buffer:
//!   {{name}}:
//!     key_header: X-Key    # optional: this request header's value is the record's Kafka key
//!     max_records: 500     # optional: a write of more records is refused with 429
//!     drop_empty: true     # optional, default true: a record of 0 bytes is dropped
//!     tiers:               # the host's tiers, in order: 0 first, 1 the spill tier
//!       - kafka: { bootstrap_servers: [127.0.0.1:9092], topics: [{ name: logs, group_id: sluice }] }
//!       - bounded_blocking: { buffer_size: 12800 }
//! ```
//!
//! The host keeps every byte and does all I/O; a policy sees each record's metadata (size,
//! payload hash, the headers `describe` asked for, origin, content type) and the tiers' state
//! (`tiers()`: name, durable, available, held, capacity, lag), and decides:
//!
//! - `configure`: called on every new instance with the YAML's options (sluice's own keys
//!   `tiers`, `max_memory`, `timeout`, `recycle_after` never reach it). `Err` naming the option
//!   stops the pipeline at startup. Here: `key_header` (default `X-Key`, a header name),
//!   `max_records` (a whole number above 0), `drop_empty` (`true` or `false`); anything else
//!   is refused.
//! - `describe`: the request headers the policy reads, asked once per instance; only these
//!   reach `on-write`. Here: `key_header`, lowercased.
//! - `on-write`: one source write, all or none. Exactly one placement per record, in order:
//!   `Tier((index, key))` (an index of `tiers()`; `key` sets the Kafka key, `None` keeps the
//!   source's) or `Drop(reason)` (dead-lettered with the reason; the client still gets 200);
//!   or refuse the whole write: `Throttled((retry_after_ms, reason))` is 429 with Retry-After,
//!   `Unavailable(reason)` is 503. Here: more than `max_records` records -> throttled for 1 s;
//!   a record of 0 bytes -> dropped (`empty record`) when `drop_empty`; every other record goes
//!   to tier 0 if it is available, else to tier 1 (the spill tier) if the YAML lists one, else
//!   the write is refused as unavailable (even a write of nothing but empty records); a record
//!   with the `key_header` header is keyed by its value.
//! - `next-read`: the tier a free worker should read next, or `None` to read the tiers in
//!   turn (a tier with nothing to read is skipped, so a policy cannot starve the read side).
//!   Here: tier 0 while it has records not yet read (`lag`).
//! - `tick`: about once a second, moves between tiers; the host writes to `to` first and only
//!   then acknowledges in `from`, so a move can duplicate, never lose. Here: once tier 0 is
//!   available again, up to 1000 records a tick back from a spill tier 1 that is not durable.
//!
//! A placement count other than the record count, or a tier index past `tiers()`, is a fault,
//! as are a panic, the deadline (`timeout`) and the memory cap: that write gets 503 and the
//! instance is replaced. The host also keeps a key-value state for policies that remember
//! (`buffer_host::state_get`, `state_set`, `state_delete`, `insert_new`, with a TTL; see
//! `wit/buffer.wit`): it outlives instances, and a write's changes are kept only if the write
//! succeeds. This policy needs none of it; `now_ms()` is the host's clock.

wit_bindgen::generate!({ world: "buffer-plugin", path: "wit" });

use std::cell::RefCell;

use exports::sluice::plugin::buffer_policy::{
    Guest, Incoming, Move, Placement, PolicyInfo, Refusal,
};
use exports::sluice::plugin::configure::Guest as Configure;
use sluice::plugin::buffer_host;
use sluice::plugin::types::OptionEntry;

/// The options, from `configure` (called on every new instance before the first call).
struct Options {
    /// Lowercase.
    key_header: String,
    max_records: Option<u32>,
    drop_empty: bool,
}

thread_local! {
    static OPTIONS: RefCell<Options> = RefCell::new(Options {
        key_header: "x-key".into(),
        max_records: None,
        drop_empty: true,
    });
}

struct Plugin;

impl Configure for Plugin {
    fn configure(options: Vec<OptionEntry>) -> Result<(), String> {
        let mut parsed = Options {
            key_header: "x-key".into(),
            max_records: None,
            drop_empty: true,
        };
        for o in options {
            let value = o.value.as_str();
            match o.key.as_str() {
                "key_header" => {
                    let name_char = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
                    if value.is_empty() || !value.chars().all(name_char) {
                        return Err(format!(
                            "option `key_header` must be a header name such as `X-Key`, got `{value}`"
                        ));
                    }
                    parsed.key_header = value.to_ascii_lowercase();
                }
                "max_records" => {
                    let number = Some(value)
                        .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                        .and_then(|v| v.parse::<u32>().ok())
                        .filter(|n| *n > 0);
                    parsed.max_records = Some(number.ok_or_else(|| {
                        format!(
                            "option `max_records` must be a whole number above 0, got `{value}`"
                        )
                    })?);
                }
                "drop_empty" => {
                    parsed.drop_empty = match value {
                        "true" => true,
                        "false" => false,
                        _ => {
                            return Err(format!(
                                "option `drop_empty` must be `true` or `false`, got `{value}`"
                            ));
                        }
                    };
                }
                other => {
                    return Err(format!(
                        "unknown option `{other}`; {{name}} takes `key_header`, `max_records` and `drop_empty`"
                    ));
                }
            }
        }
        OPTIONS.with(|o| *o.borrow_mut() = parsed);
        Ok(())
    }
}

impl Guest for Plugin {
    fn describe() -> PolicyInfo {
        OPTIONS.with(|o| PolicyInfo {
            headers: vec![o.borrow().key_header.clone()],
        })
    }

    fn on_write(records: Vec<Incoming>) -> Result<Vec<Placement>, Refusal> {
        OPTIONS.with(|o| {
            let o = o.borrow();
            if let Some(max) = o.max_records
                && records.len() > max as usize
            {
                return Err(Refusal::Throttled((
                    1000,
                    format!("at most {max} records per write"),
                )));
            }
            let tier = place()?;
            Ok(records
                .iter()
                .map(|r| {
                    if o.drop_empty && r.size == 0 {
                        return Placement::Drop("empty record".into());
                    }
                    let key = r
                        .headers
                        .iter()
                        .find(|(name, _)| name.eq_ignore_ascii_case(&o.key_header))
                        .map(|(_, value)| value.clone().into_bytes());
                    Placement::Tier((tier, key))
                })
                .collect())
        })
    }

    fn next_read(_worker: u32) -> Option<u8> {
        let tiers = buffer_host::tiers();
        tiers.first().filter(|t| t.lag > 0).map(|_| 0)
    }

    fn tick() -> Vec<Move> {
        let tiers = buffer_host::tiers();
        match tiers.as_slice() {
            [first, spill, ..] if first.available && spill.lag > 0 && !spill.durable => {
                vec![Move {
                    from: 1,
                    to: 0,
                    max_records: 1000,
                }]
            }
            _ => Vec::new(),
        }
    }
}

/// The tier this write's records go to: 0 if it takes writes, else the spill tier 1 if there is
/// one, else the write is refused.
fn place() -> Result<u8, Refusal> {
    let tiers = buffer_host::tiers();
    match tiers.as_slice() {
        [] => Err(Refusal::Unavailable("the buffer has no tiers".into())),
        [first, ..] if first.available => Ok(0),
        [_, _, ..] => Ok(1),
        [first] => Err(Refusal::Unavailable(format!(
            "tier 0 ({}) is unavailable",
            first.name
        ))),
    }
}

export!(Plugin);
