//! The `random` source: Data Prepper's load generator, a new UUID every `wait_delay`.

use std::collections::BTreeSet;
use std::time::Duration;

use sluice_tests::{Sluice, json_lines};

#[test]
fn random_makes_a_new_uuid_event_every_wait_delay_until_stopped() {
    let pipeline = "load:\n  source:\n    random:\n      wait_delay: 20ms\n  sink:\n    - file:\n        path: {dir}/out.jsonl\n";
    let mut sluice = Sluice::start_without_listener(pipeline);
    let out = sluice.path("out.jsonl");
    sluice.wait_for("20 generated events", Duration::from_secs(60), || {
        out.exists() && json_lines(&out).len() >= 20
    });
    assert_eq!(sluice.terminate(), 0, "{}", sluice.log());
    let events = json_lines(&out);
    let uuids: BTreeSet<&str> = events
        .iter()
        .map(|event| {
            assert_eq!(event.as_object().unwrap().len(), 1, "{event}");
            let uuid = event["message"].as_str().unwrap();
            let parts: Vec<&str> = uuid.split('-').collect();
            let lengths: Vec<usize> = parts.iter().map(|p| p.len()).collect();
            assert_eq!(lengths, [8, 4, 4, 4, 12], "{uuid}");
            assert!(parts[2].starts_with('4'), "version 4: {uuid}");
            uuid
        })
        .collect();
    assert_eq!(uuids.len(), events.len(), "each event a new UUID");
}
