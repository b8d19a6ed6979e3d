//! `service_map` (deprecated name `service_map_stateful`): turns OpenTelemetry spans into the
//! relationships of a service map (which service calls which, through which operation, in
//! which trace group), as Data Prepper's `ServiceMapProcessorConfig`. The spans are consumed;
//! the relationships leave once per window.

use std::time::Duration;

use serde::Deserialize;

use super::ProcessorConfig;
use crate::error::Errors;
use crate::location::join;

/// ```yaml
/// - service_map:
///     window_duration: 180
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceMap {
    /// How often the relationships are evaluated, over the spans of the last two windows:
    /// integer seconds as in Data Prepper (`180`, the default), or a duration written with
    /// its unit (`60s`, `3m`), as Data Prepper's documentation writes it
    /// (`window_duration: 60s`, which Data Prepper itself, reading an integer, would refuse).
    /// A parent and its child span are matched when both came within the same two windows.
    #[serde(
        default = "default_window_duration",
        deserialize_with = "crate::units::seconds"
    )]
    pub window_duration: Duration,
    /// Data Prepper's folder for its MapDB files (default `data/service-map/`). Accepted so
    /// Data Prepper's pipelines run unchanged, and ignored: sluice keeps the windows in
    /// memory, bounded by `max_held_events`. Cannot be empty, as in Data Prepper.
    #[serde(default)]
    pub db_path: Option<String>,
    /// sluice's own bound (not Data Prepper's): the most spans kept in the two windows.
    /// Past it the windows are evaluated and rotated early, as at the end of a window, so the
    /// oldest spans leave. Default 100000.
    #[serde(default = "super::default_max_held_events")]
    pub max_held_events: usize,
}

/// Data Prepper's `DEFAULT_WINDOW_DURATION`: 180 seconds.
const fn default_window_duration() -> Duration {
    Duration::from_secs(180)
}

impl ProcessorConfig for ServiceMap {
    fn check(&self, path: &str, errors: &mut Errors) {
        if self.db_path.as_deref().is_some_and(str::is_empty) {
            errors.at(
                &join(path, "db_path"),
                format!("`{path}.db_path` cannot be empty; remove it (sluice keeps the windows in memory)"),
            );
        }
        super::check_max_held_events(self.max_held_events, path, errors);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::processor::BuiltinProcessor;
    use crate::{Context, Processor};

    /// The `service_map` config of the `processor:` list item `item`, or the errors.
    fn parse(item: &str) -> Result<ServiceMap, String> {
        let yaml = format!(
            "p:\n  source:\n    http:\n  processor:\n    - {}\n  sink:\n    - stdout:\n",
            item.replace('\n', "\n      ")
        );
        let mut config =
            crate::parse("t.yaml", &yaml, Context::default()).map_err(|e| e.to_string())?;
        let Processor::Builtin(builtin) = config.pipelines.remove(0).processor.remove(0) else {
            panic!("not built in");
        };
        match *builtin {
            BuiltinProcessor::ServiceMap(c) | BuiltinProcessor::ServiceMapStateful(c) => Ok(c),
            other => panic!("not service_map: {other:?}"),
        }
    }

    #[test]
    fn the_documented_forms_are_read() {
        // trace-analytics.md, trace-peer-forwarder.md, anomaly-detection.md: no options.
        let c = parse("service_map:").unwrap();
        assert_eq!(c.window_duration, Duration::from_secs(180));
        assert_eq!(c.max_held_events, 100_000);
        assert_eq!(c.db_path, None);
        // trace-analytics.md:284
        let c = parse("service_map:\n  window_duration: 180").unwrap();
        assert_eq!(c.window_duration, Duration::from_secs(180));
        // service-map.md: the deprecated name, with a unit.
        let c = parse("service_map_stateful:\n  window_duration: 60s").unwrap();
        assert_eq!(c.window_duration, Duration::from_secs(60));
        // Data Prepper's e2e pipeline, and its MapDB folder.
        let c = parse("service_map:\n  window_duration: 8\n  db_path: data/service-map/").unwrap();
        assert_eq!(c.window_duration, Duration::from_secs(8));
        assert_eq!(c.db_path.as_deref(), Some("data/service-map/"));
        let c = parse("service_map:\n  window_duration: '30'\n  max_held_events: 10").unwrap();
        assert_eq!(c.window_duration, Duration::from_secs(30));
        assert_eq!(c.max_held_events, 10);
    }

    #[test]
    fn wrong_values_name_their_key() {
        let e = parse("service_map:\n  window_duration: -1").unwrap_err();
        assert!(
            e.contains("window_duration`: a duration cannot be negative"),
            "{e}"
        );
        let e = parse("service_map:\n  window_duration: soon").unwrap_err();
        assert!(
            e.contains("window_duration`: invalid duration `soon`"),
            "{e}"
        );
        let e = parse("service_map:\n  db_path: ''").unwrap_err();
        assert!(e.contains("db_path` cannot be empty"), "{e}");
        let e = parse("service_map:\n  max_held_events: 0").unwrap_err();
        assert!(
            e.contains("max_held_events` is 0; it must be at least 1"),
            "{e}"
        );
        let e = parse("service_map:\n  window: 3").unwrap_err();
        assert!(e.contains("window"), "{e}");
    }
}
