//! `hostile_buffer`: a buffer policy for the sandbox tests. Records go to the first tier, except
//! when a record's `X-Hostile` header asks otherwise: `trap` panics, `loop` spins until the
//! deadline stops it, `bomb` allocates until the memory cap stops it, `nowhere` places the
//! record in a tier that does not exist, `overclaim` returns more placements than records,
//! `hoard` keeps eight 16 MiB values in the state per write, and `hostage` places its records
//! in tier 1 and makes every later `tick` ask to move `u32::MAX` records from tier 1 to tier 0.

wit_bindgen::generate!({ world: "buffer-plugin", path: "../../wit/v0.2" });

use exports::sluice::plugin::buffer_policy::{
    Guest, Incoming, Move, Placement, PolicyInfo, Refusal,
};
use exports::sluice::plugin::configure::Guest as Configure;
use sluice::plugin::buffer_host;
use sluice::plugin::types::OptionEntry;

struct Hostile;

impl Configure for Hostile {
    fn configure(_: Vec<OptionEntry>) -> Result<(), String> {
        Ok(())
    }
}

impl Guest for Hostile {
    fn describe() -> PolicyInfo {
        PolicyInfo {
            headers: vec!["x-hostile".into()],
        }
    }

    fn on_write(records: Vec<Incoming>) -> Result<Vec<Placement>, Refusal> {
        let asks = |word: &str| {
            records
                .iter()
                .any(|r| r.headers.iter().any(|(_, v)| v == word))
        };
        if asks("trap") {
            panic!("asked to trap");
        }
        if asks("loop") {
            let mut n: u64 = 0;
            loop {
                n = std::hint::black_box(n.wrapping_add(1));
            }
        }
        if asks("bomb") {
            let mut hoard: Vec<Vec<u8>> = Vec::new();
            loop {
                hoard.push(vec![1; 1 << 20]);
                std::hint::black_box(&hoard);
            }
        }
        if asks("hoard") {
            let value = vec![7u8; 16 << 20];
            let hash = records.first().map_or(0, |r| r.payload_hash);
            for i in 0..8 {
                let key = format!("hoard-{hash}-{}-{i}", buffer_host::now_ms());
                buffer_host::state_set(key.as_bytes(), &value, Some(600_000));
            }
        }
        let hostage = asks("hostage");
        if hostage {
            buffer_host::state_set(b"hostage", b"1", None);
        }
        let tier = match () {
            () if asks("nowhere") => 9,
            () if hostage => 1,
            () => 0,
        };
        let mut placements: Vec<Placement> =
            records.iter().map(|_| Placement::Tier((tier, None))).collect();
        if asks("overclaim") {
            placements.push(Placement::Tier((0, None)));
        }
        Ok(placements)
    }

    fn next_read(_worker: u32) -> Option<u8> {
        None
    }

    fn tick() -> Vec<Move> {
        if buffer_host::state_get(b"hostage").is_some() {
            vec![Move {
                from: 1,
                to: 0,
                max_records: u32::MAX,
            }]
        } else {
            Vec::new()
        }
    }
}

export!(Hostile);
