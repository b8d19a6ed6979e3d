//! `drop_events`, as Data Prepper's `DropEventsProcessor`: drops each event `drop_when`
//! selects. A condition that cannot be evaluated (a type mismatch) is false: the event is
//! kept. One that gives no boolean (`/flag` holding text) is handled as
//! `handle_failed_events` says (default: dropped, with a warning).

use sluice_config::processor::drop_events as config;
use sluice_event::{EvalError, Event};

use crate::{Apply, BuildError, BuildProcessor, Failure, Fate};

/// `drop_events`, built: its config as is. Its `drop_when` is no frame condition: it is what
/// the processor does, with its own `handle_failed_events`.
pub struct DropEvents {
    config: config::DropEvents,
}

impl BuildProcessor for config::DropEvents {
    type Processor = DropEvents;

    fn build(&self) -> Result<DropEvents, BuildError> {
        Ok(DropEvents {
            config: self.clone(),
        })
    }
}

impl Apply for DropEvents {
    fn apply(&self, event: &mut Event, name: &'static str) -> Result<Fate, Failure> {
        let drop_when = &self.config.drop_when;
        let failed = self.config.handle_failed_events;
        Ok(match drop_when.matches(event) {
            Ok(true) => Fate::Drop,
            Ok(false) => Fate::Keep,
            Err(e @ EvalError::NotBoolean { .. }) => {
                if failed.logs() {
                    tracing::warn!(processor = name, drop_when = drop_when.source(), error = %e, "condition could not be evaluated");
                }
                if failed.drops() {
                    Fate::Drop
                } else {
                    Fate::Keep
                }
            }
            Err(e) => {
                tracing::debug!(processor = name, drop_when = drop_when.source(), error = %e, "condition could not be evaluated; the event is kept");
                Fate::Keep
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::testing::{processor, run};

    #[test]
    fn drops_what_the_condition_selects() {
        let p = processor("drop_events:\n  drop_when: '/log_type == \"DEBUG\"'");
        assert_eq!(run(&*p, json!({"log_type": "DEBUG"})), None);
        assert_eq!(
            run(&*p, json!({"log_type": "INFO"})),
            Some(json!({"log_type": "INFO"}))
        );
        assert_eq!(run(&*p, json!({})), Some(json!({})));
    }

    #[test]
    fn a_condition_that_cannot_be_evaluated_keeps_the_event() {
        let p = processor("drop_events:\n  drop_when: '/n > 5'\n  handle_failed_events: drop");
        assert_eq!(run(&*p, json!({"n": "text"})), Some(json!({"n": "text"})));
    }

    #[test]
    fn a_condition_that_is_not_boolean_drops_the_event_unless_told_to_skip() {
        let p = processor("drop_events:\n  drop_when: '/flag'");
        assert_eq!(run(&*p, json!({"flag": "text"})), None);
        assert_eq!(run(&*p, json!({"flag": true})), None);
        assert_eq!(
            run(&*p, json!({"flag": false})),
            Some(json!({"flag": false}))
        );
        let p =
            processor("drop_events:\n  drop_when: '/flag'\n  handle_failed_events: skip_silently");
        assert_eq!(
            run(&*p, json!({"flag": "text"})),
            Some(json!({"flag": "text"}))
        );
    }
}
