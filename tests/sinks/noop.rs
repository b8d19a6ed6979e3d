//! The `noop` sink: every event taken, the buffer committed, nothing written anywhere.

use std::time::Duration;

use sluice_tests::Sluice;

use super::{committed_to_end, names, pipeline, post_events, sink_metric, wait_until};

#[test]
fn a_noop_sink_takes_every_event_and_the_buffer_commits_them() {
    let (buffer, group) = names("noop");
    let sluice = Sluice::start(&pipeline(&buffer, &group, "    - noop:\n"));
    let ids = post_events(&sluice, "noop", 40, 10);
    wait_until(
        "every event taken and committed",
        Duration::from_secs(60),
        &sluice,
        || {
            committed_to_end(&buffer, &group)
                && sink_metric(&sluice, "sluice_sink_eventsWritten") == ids.len() as f64
        },
    );
    assert_eq!(sink_metric(&sluice, "sluice_sink_eventsFailed"), 0.0);
}
