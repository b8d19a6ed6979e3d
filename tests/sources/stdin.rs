//! The `stdin` source: each line an event `{"message": line}`, to the end of the input; then
//! the run drains and `sluice run` exits 0.

use std::time::Duration;

use sluice_tests::{Sluice, json_lines};

#[test]
fn stdin_lines_become_events_and_the_run_ends_with_its_input() {
    let pipeline =
        "lines:\n  source:\n    stdin:\n  sink:\n    - file:\n        path: {dir}/out.jsonl\n";
    let lines: Vec<String> = (0..250).map(|i| format!("line {i} \"quoted\"")).collect();
    let mut input = lines.join("\n").into_bytes();
    input.extend_from_slice(b"\r\nlast line, no newline");
    let mut sluice = Sluice::start_reading(pipeline, input);
    let code = sluice.exit_code_within(Duration::from_secs(120));
    assert_eq!(code, 0, "{}", sluice.log());
    let messages: Vec<String> = json_lines(&sluice.path("out.jsonl"))
        .iter()
        .map(|event| {
            assert_eq!(event.as_object().unwrap().len(), 1, "{event}");
            event["message"].as_str().unwrap().to_owned()
        })
        .collect();
    let mut want = lines;
    want.push("last line, no newline".to_owned());
    assert_eq!(messages, want, "every line once, in order, the CR gone");
}

#[test]
fn stdin_stops_at_a_line_exit_as_data_prepper_does() {
    let pipeline = "lines:\n  source:\n    stdin:\n      write_timeout: 2000\n  sink:\n    - file:\n        path: {dir}/out.jsonl\n";
    let mut sluice = Sluice::start_reading(pipeline, b"a\nb\nEXIT\nnot read\n".to_vec());
    assert_eq!(
        sluice.exit_code_within(Duration::from_secs(120)),
        0,
        "{}",
        sluice.log()
    );
    let events = json_lines(&sluice.path("out.jsonl"));
    assert_eq!(
        events,
        [
            serde_json::json!({"message": "a"}),
            serde_json::json!({"message": "b"})
        ]
    );
}
