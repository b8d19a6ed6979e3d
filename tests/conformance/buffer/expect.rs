//! What a write step expects (placements, a throttle or unavailability), how it is shown in a
//! failure, and why a policy's reply does not meet it.

use serde_json::Value;
use sluice_buffer::tiered::{Placement, PolicyFault, Refusal};

use super::suite::{index, text};

/// What a policy's `on_write` replies, as the host sees it.
pub(super) type WriteReply = Result<Result<Vec<Placement>, Refusal>, PolicyFault>;

/// What a write is expected to get.
#[derive(Debug)]
pub(super) enum Written {
    Placed(Vec<Expected>),
    Throttled {
        retry_after_ms: u128,
        reason: String,
    },
    Unavailable(String),
}

impl Written {
    /// From a write step: its `placed`, `throttled` or `unavailable`.
    pub(super) fn parse(step: &Value) -> Self {
        if let Some(placed) = step["placed"].as_array() {
            Written::Placed(placed.iter().map(Expected::parse).collect())
        } else if step["throttled"].is_object() {
            Written::Throttled {
                retry_after_ms: u128::from(step["throttled"]["retry_after_ms"].as_u64().unwrap()),
                reason: text(&step["throttled"]["reason"]),
            }
        } else if let Value::String(reason) = &step["unavailable"] {
            Written::Unavailable(reason.clone())
        } else {
            panic!("write step {step} expects none of placed, throttled, unavailable");
        }
    }
}

/// One expected placement: a tier and the key (`None`: the source's own), or a drop whose
/// reason starts with this.
#[derive(Debug)]
pub(super) enum Expected {
    Tier { tier: usize, key: Option<String> },
    Drop(String),
}

impl Expected {
    fn parse(v: &Value) -> Self {
        match (&v["tier"], &v["drop"]) {
            (Value::Number(_), _) => Expected::Tier {
                tier: index(&v["tier"]),
                key: v["key"].as_str().map(str::to_owned),
            },
            (_, Value::String(reason)) => Expected::Drop(reason.clone()),
            _ => panic!("placement {v} is neither a tier nor a drop"),
        }
    }

    fn matches(&self, got: &Placement) -> bool {
        match (self, got) {
            (Expected::Tier { tier, key }, Placement::Tier { tier: t, key: k }) => {
                tier == t && key.as_deref().map(str::as_bytes) == k.as_deref()
            }
            (Expected::Drop(prefix), Placement::Drop(reason)) => reason.starts_with(prefix),
            _ => false,
        }
    }
}

impl std::fmt::Display for Expected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Expected::Tier { tier, key: None } => write!(f, "tier {tier}"),
            Expected::Tier {
                tier,
                key: Some(key),
            } => write!(f, "tier {tier} key {key:?}"),
            Expected::Drop(prefix) => write!(f, "drop {prefix:?}..."),
        }
    }
}

/// A placement as the failure messages show it.
pub(super) fn show(p: &Placement) -> String {
    match p {
        Placement::Tier { tier, key: None } => format!("tier {tier}"),
        Placement::Tier {
            tier,
            key: Some(key),
        } => format!("tier {tier} key {:?}", String::from_utf8_lossy(key)),
        Placement::Drop(reason) => format!("drop {reason:?}"),
    }
}

fn show_all(placements: &[Placement]) -> String {
    let all: Vec<String> = placements.iter().map(show).collect();
    format!("[{}]", all.join(", "))
}

/// Why `got` does not meet `want`, or `None` when it does.
pub(super) fn differs(want: &Written, got: &WriteReply) -> Option<String> {
    let got = match got {
        Err(fault) => return Some(format!("expected {want:?}, got a fault: {fault}")),
        Ok(got) => got,
    };
    match (want, got) {
        (Written::Placed(want), Ok(placements))
            if want.len() == placements.len()
                && want.iter().zip(placements).all(|(w, p)| w.matches(p)) =>
        {
            None
        }
        (Written::Placed(want), got) => {
            let want: Vec<String> = want.iter().map(ToString::to_string).collect();
            let got = match got {
                Ok(placements) => show_all(placements),
                Err(refusal) => format!("{refusal:?}"),
            };
            Some(format!("expected [{}], got {got}", want.join(", ")))
        }
        (
            Written::Throttled {
                retry_after_ms,
                reason,
            },
            Err(Refusal::Throttled {
                retry_after,
                reason: r,
            }),
        ) if retry_after.as_millis() == *retry_after_ms && r.starts_with(reason) => None,
        (Written::Unavailable(prefix), Err(Refusal::Unavailable(r))) if r.starts_with(prefix) => {
            None
        }
        (want, Ok(placements)) => Some(format!("expected {want:?}, got {}", show_all(placements))),
        (want, Err(refusal)) => Some(format!("expected {want:?}, got {refusal:?}")),
    }
}
