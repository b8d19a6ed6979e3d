//! The `file` source with Data Prepper's `format`: `plain` (each line `{"message": line}`) and
//! `json` (a JSON object line as it is, any other line still `{"message": line}`), through the
//! built-in `plain` deserializer.

use std::time::Duration;

use serde_json::json;
use sluice_tests::{Sluice, json_lines};

/// The events a file of `lines` becomes with `format`.
fn read_with(format: &str, lines: &str) -> Vec<serde_json::Value> {
    let input = tempfile::tempdir().unwrap();
    let file = input.path().join("in.log");
    std::fs::write(&file, lines).unwrap();
    let pipeline = format!(
        "lines:\n  source:\n    file:\n      path: {}\n      format: {format}\n      \
         record_type: event\n  sink:\n    - file:\n        path: {{dir}}/out.jsonl\n",
        file.display()
    );
    let mut sluice = Sluice::start_without_listener(&pipeline);
    let out = sluice.path("out.jsonl");
    let want = lines.lines().count();
    sluice.wait_for("every line in the sink", Duration::from_secs(120), || {
        out.is_file() && json_lines(&out).len() >= want
    });
    assert_eq!(sluice.terminate(), 0, "{}", sluice.log());
    json_lines(&out)
}

#[test]
fn data_preppers_file_formats_make_the_events_it_makes() {
    let lines = "GET /index.html 200\n{\"status\": 404, \"path\": \"/x\"}\n[1, 2]\nnot json {\n\
                 caf\u{e9} \"quoted\"\r\n";
    assert_eq!(
        read_with("plain", lines),
        [
            json!({"message": "GET /index.html 200"}),
            json!({"message": "{\"status\": 404, \"path\": \"/x\"}"}),
            json!({"message": "[1, 2]"}),
            json!({"message": "not json {"}),
            json!({"message": "caf\u{e9} \"quoted\""}),
        ]
    );
    assert_eq!(
        read_with("json", lines),
        [
            json!({"message": "GET /index.html 200"}),
            json!({"status": 404, "path": "/x"}),
            json!({"message": "[1, 2]"}),
            json!({"message": "not json {"}),
            json!({"message": "caf\u{e9} \"quoted\""}),
        ]
    );
}
