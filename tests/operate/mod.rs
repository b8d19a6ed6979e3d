//! The operator's commands against the real binary and broker:
//! - `dlq`: `sluice dlq list|show|replay` over a dead-letter file a failing deserializer made,
//!   replayed after the plugin is fixed (hot reload), through the admin endpoint of the running
//!   process or, with it stopped, straight into the buffer topic; interrupted by kill -9 and
//!   replayed again.
//! - `buffer`: `sluice buffer status|replay`, a window read again event by event.
//! - `watch`: `sluice tap` and `sluice top` in a terminal.
//! - `admin`: the admin endpoint's switch, credentials and TLS.

mod admin;
mod buffer;
mod dlq;
mod watch;

use std::process::Output;

/// A pipeline's `buffer:` block: a Kafka buffer on the test broker with its own topic (of
/// `partitions`) and group.
fn kafka_buffer(topic: &str, group: &str, partitions: u32) -> String {
    format!(
        r#"  buffer:
    kafka:
      bootstrap_servers: [{bootstrap}]
      topics:
        - name: {topic}
          group_id: {group}
          create_topic: true
          number_of_partitions: {partitions}
          commit_interval: 200ms
"#,
        bootstrap = sluice_tests::kafka_bootstrap()
    )
}

/// The standard output of a command that succeeded (else its output, as the failure).
fn ok(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}
