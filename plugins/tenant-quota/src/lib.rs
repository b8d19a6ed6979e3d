//! `tenant_quota`: fair admission per tenant. Each tenant (a request header, or without it the
//! source and path the record came in on) has a token bucket of `burst` records refilled at
//! `rate` records a second. A write that would take a tenant below zero is refused whole with
//! 429 and `Retry-After` (when its records would fit), while the other tenants keep getting
//! 200. Every record is keyed by its tenant, so each tenant's records stay in order in Kafka.
//!
//! ```yaml
//! buffer:
//!   tenant_quota:
//!     header: X-Tenant   # default X-Tenant
//!     rate: 100          # records per second per tenant (required)
//!     burst: 200         # the most records a tenant may send at once; default: rate
//!     tiers:
//!       - kafka: { bootstrap_servers: [127.0.0.1:9092], topics: [{ name: logs, group_id: sluice }] }
//! ```
//!
//! The buckets live in the host's state; a refused or failed write takes nothing from them.

wit_bindgen::generate!({ world: "buffer-plugin", path: "../../wit/v0.2" });

use std::cell::RefCell;
use std::collections::BTreeMap;

use exports::sluice::plugin::buffer_policy::{
    Guest, Incoming, Move, Placement, PolicyInfo, Refusal,
};
use exports::sluice::plugin::configure::Guest as Configure;
use sluice::plugin::buffer_host;
use sluice::plugin::types::OptionEntry;

struct Options {
    header: String,
    rate: f64,
    burst: f64,
}

thread_local! {
    static OPTIONS: RefCell<Options> = const {
        RefCell::new(Options { header: String::new(), rate: 0.0, burst: 0.0 })
    };
}

/// How long an idle tenant's bucket is kept (it is full again long before).
const BUCKET_TTL_MS: u64 = 3_600_000;

struct Quota;

impl Configure for Quota {
    fn configure(options: Vec<OptionEntry>) -> Result<(), String> {
        let (mut header, mut rate, mut burst) = ("x-tenant".to_owned(), None, None);
        let number = |o: &OptionEntry| {
            o.value
                .parse::<f64>()
                .ok()
                .filter(|n| n.is_finite() && *n > 0.0)
                .ok_or_else(|| format!("option `{}` must be a number above 0, got `{}`", o.key, o.value))
        };
        for o in &options {
            match o.key.as_str() {
                "header" => header = o.value.to_ascii_lowercase(),
                "rate" => rate = Some(number(o)?),
                "burst" => burst = Some(number(o)?),
                other => {
                    return Err(format!(
                        "unknown option `{other}`: tenant_quota takes `header`, `rate` and `burst`"
                    ));
                }
            }
        }
        let rate = rate.ok_or("option `rate` is required: records per second per tenant")?;
        let burst = burst.unwrap_or(rate);
        OPTIONS.with(|o| *o.borrow_mut() = Options { header, rate, burst });
        Ok(())
    }
}

impl Guest for Quota {
    fn describe() -> PolicyInfo {
        OPTIONS.with(|o| PolicyInfo {
            headers: vec![o.borrow().header.clone()],
        })
    }

    fn on_write(records: Vec<Incoming>) -> Result<Vec<Placement>, Refusal> {
        OPTIONS.with(|o| {
            let o = o.borrow();
            let tenants: Vec<String> = records.iter().map(|r| tenant(&o, r)).collect();
            let mut wanted: BTreeMap<&str, f64> = BTreeMap::new();
            for t in &tenants {
                *wanted.entry(t).or_default() += 1.0;
            }
            let now = buffer_host::now_ms();
            let mut updates = Vec::new();
            for (tenant, count) in wanted {
                let key = format!("bucket:{tenant}").into_bytes();
                let tokens = match buffer_host::state_get(&key) {
                    Some(saved) if saved.len() == 16 => {
                        let tokens = f64::from_le_bytes(saved[..8].try_into().unwrap());
                        let then = u64::from_le_bytes(saved[8..].try_into().unwrap());
                        let elapsed = now.saturating_sub(then) as f64 / 1000.0;
                        (tokens + elapsed * o.rate).min(o.burst)
                    }
                    _ => o.burst,
                };
                if tokens < count {
                    let wait_ms = ((count.min(o.burst) - tokens) / o.rate * 1000.0).ceil();
                    return Err(Refusal::Throttled((
                        wait_ms.max(1.0) as u32,
                        format!(
                            "tenant `{tenant}` is over its rate of {} records/s (burst {})",
                            o.rate, o.burst
                        ),
                    )));
                }
                updates.push((key, tokens - count));
            }
            for (key, left) in updates {
                let mut saved = left.to_le_bytes().to_vec();
                saved.extend(now.to_le_bytes());
                buffer_host::state_set(&key, &saved, Some(BUCKET_TTL_MS));
            }
            Ok(tenants
                .into_iter()
                .map(|t| Placement::Tier((0, Some(t.into_bytes()))))
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

/// The header's value, or the record's origin (source and path) without one.
fn tenant(options: &Options, record: &Incoming) -> String {
    record
        .headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(&options.header))
        .map_or_else(|| record.origin.clone(), |(_, value)| value.clone())
}

export!(Quota);
