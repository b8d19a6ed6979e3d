//! `drop_events`: drops the events a condition selects, as Data Prepper's
//! `DropEventProcessorConfig`.

use serde::Deserialize;
use sluice_event::Expression;

use super::ProcessorConfig;

/// ```yaml
/// - drop_events:
///     drop_when: '/log_type == "DEBUG"'
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DropEvents {
    /// The events to drop. Required.
    #[serde(deserialize_with = "crate::event::condition")]
    pub drop_when: Expression,
    /// What becomes of an event for which `drop_when` gives no boolean (`/flag` holding
    /// text): `drop` (the default: dropped, with a warning), `drop_silently`, `skip` (kept,
    /// with a warning), `skip_silently`; as Data Prepper's documentation says. A condition
    /// that cannot be evaluated (`/n > 5` with text in `/n`) is false: the event is kept.
    #[serde(default)]
    pub handle_failed_events: HandleFailedEvents,
}

/// Data Prepper's `HandleFailedEventsOption`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HandleFailedEvents {
    Skip,
    SkipSilently,
    #[default]
    Drop,
    DropSilently,
}

impl HandleFailedEvents {
    /// Whether an event whose condition failed is dropped.
    pub fn drops(self) -> bool {
        matches!(self, Self::Drop | Self::DropSilently)
    }

    /// Whether the failure is logged.
    pub fn logs(self) -> bool {
        matches!(self, Self::Skip | Self::Drop)
    }
}

impl ProcessorConfig for DropEvents {}
