//! `{{name}}`: one event `{"message": line}` per non-empty line. Build: `sluice plugins build .`
wit_bindgen::generate!({ world: "deserializer", path: "wit" });

use exports::sluice::plugin::raw_byte_handler::{Guest, Outcome, RawRecord};

struct Plugin;

impl Guest for Plugin {
    fn deserialize_batch(batch: Vec<RawRecord>) -> Vec<Outcome> {
        batch.iter().map(|r| parse(&r.payload)).collect()
    }
}

fn parse(payload: &[u8]) -> Outcome {
    let Ok(text) = std::str::from_utf8(payload) else {
        return Outcome::Malformed("not UTF-8".into());
    };
    let lines = text.lines().filter(|l| !l.trim().is_empty());
    Outcome::Events(lines.map(|l| serde_json::json!({ "message": l }).to_string()).collect())
}

export!(Plugin);
