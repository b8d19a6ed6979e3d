//! `drop_events`, as Data Prepper's `DropEventsProcessor`: drops each event `drop_when`
//! selects. A condition that cannot be evaluated (a type mismatch) is false: the event is
//! kept. One that gives no boolean (`/flag` holding text) is handled as
//! `handle_failed_events` says (default: dropped, with a warning).

use sluice_config::processor::drop_events::{DropEvents, HandleFailedEvents};
use sluice_event::{EvalError, Event, Expression};

use crate::{BuildProcessor, Fate, Processor};

struct Drop {
    when: Expression,
    failed: HandleFailedEvents,
}

impl BuildProcessor for DropEvents {
    fn build(&self) -> Result<Box<dyn Processor>, crate::BuildError> {
        Ok(Box::new(Drop {
            when: self.drop_when.clone(),
            failed: self.handle_failed_events,
        }))
    }
}

impl Processor for Drop {
    fn name(&self) -> &'static str {
        "drop_events"
    }

    fn process(&self, event: &mut Event) -> Fate {
        match self.when.matches(event) {
            Ok(true) => Fate::Drop,
            Ok(false) => Fate::Keep,
            Err(e @ EvalError::NotBoolean { .. }) => {
                if self.failed.logs() {
                    tracing::warn!(drop_when = self.when.source(), error = %e, "drop_events: condition could not be evaluated");
                }
                if self.failed.drops() {
                    Fate::Drop
                } else {
                    Fate::Keep
                }
            }
            Err(e) => {
                tracing::debug!(drop_when = self.when.source(), error = %e, "drop_events: condition could not be evaluated; the event is kept");
                Fate::Keep
            }
        }
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
