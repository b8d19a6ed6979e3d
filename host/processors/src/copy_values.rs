//! `copy_values`, as Data Prepper's `CopyValueProcessor`: for each entry in order, when its
//! `copy_when` holds, the value at `from_key` is copied to `to_key`, unless `to_key` exists and
//! `overwrite_if_to_key_exists` is false.

use sluice_config::processor::copy_values::{CopyEntry, CopyValues};
use sluice_event::Event;

use crate::{BuildProcessor, Fate, Processor, when};

struct Copy {
    entries: Vec<CopyEntry>,
}

impl BuildProcessor for CopyValues {
    fn build(&self) -> Result<Box<dyn Processor>, crate::BuildError> {
        Ok(Box::new(Copy {
            entries: self.entries.clone(),
        }))
    }
}

impl Processor for Copy {
    fn name(&self) -> &'static str {
        "copy_values"
    }

    fn process(&self, event: &mut Event) -> Fate {
        for entry in &self.entries {
            if !when(entry.copy_when.as_ref(), event) {
                continue;
            }
            let Some(value) = event.get(&entry.from_key).cloned() else {
                continue;
            };
            if event.contains(&entry.to_key) && !entry.overwrite_if_to_key_exists {
                continue;
            }
            if let Err(e) = event.put(&entry.to_key, value) {
                tracing::debug!(error = %e, "copy_values: entry skipped");
            }
        }
        Fate::Keep
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::testing::{processor, run};

    #[test]
    fn copies_unless_the_target_exists() {
        let p =
            processor("copy_values:\n  entries:\n    - from_key: message\n      to_key: /copy/m");
        assert_eq!(
            run(&*p, json!({"message": "x"})),
            Some(json!({"message": "x", "copy": {"m": "x"}}))
        );
        let p = processor("copy_values:\n  entries:\n    - from_key: a\n      to_key: b");
        assert_eq!(
            run(&*p, json!({"a": 1, "b": 2})),
            Some(json!({"a": 1, "b": 2}))
        );
        assert_eq!(run(&*p, json!({"c": 1})), Some(json!({"c": 1})));
    }
}
