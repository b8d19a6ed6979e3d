//! `filter_list`, as Data Prepper's `FilterListProcessor`: `keep_element_when` is evaluated on
//! each element of the list at `iterate_on`, as an event of its own (an object as it is, any
//! other element as `{"value": element}`), and the elements it is true for are written, in
//! order, to `target` (default: `iterate_on`).
//!
//! A missing or `null` list leaves the event as it was. A value that is not a list fails:
//! tagged `tags_on_failure`, left as it was. An element for which the condition cannot be
//! evaluated (it is not a boolean, or an operator cannot take its values) is left out, and the
//! event is tagged and gets Data Prepper's metadata attributes
//! `filter_list_processor_failed_elements_count` and `filter_list_processor_failed_elements`
//! (the elements); the kept elements are still written.

use serde_json::{Map, Value};
use sluice_config::processor::filter_list as config;
use sluice_event::{Event, Expression, Metadata};

use crate::{Apply, BuildError, BuildProcessor, Failure, Fate};

/// `filter_list`, built: its config as is.
pub struct FilterList {
    config: config::FilterList,
}

impl BuildProcessor for config::FilterList {
    type Processor = FilterList;

    fn when(&self) -> Option<&Expression> {
        self.filter_list_when.as_ref()
    }

    fn tags_on_failure(&self) -> &[String] {
        &self.tags_on_failure
    }

    fn build(&self) -> Result<FilterList, BuildError> {
        Ok(FilterList {
            config: self.clone(),
        })
    }
}

impl Apply for FilterList {
    fn apply(&self, event: &mut Event, _: &'static str) -> Result<Fate, Failure> {
        let config = &self.config;
        let list = match event.get(&config.iterate_on) {
            None | Some(Value::Null) => return Ok(Fate::Keep),
            Some(Value::Array(list)) => list,
            Some(_) => return Err(Failure::new("`iterate_on` is not a list")),
        };
        let mut kept = Vec::with_capacity(list.len());
        let mut failed = Vec::new();
        let mut first_error = None;
        for element in list {
            let data = match element {
                Value::Object(_) => element.clone(),
                other => Value::Object(Map::from_iter([("value".to_owned(), other.clone())])),
            };
            let one = Event::new(data, Metadata::new("event", 0));
            match config.keep_element_when.matches(&one) {
                Ok(true) => kept.push(element.clone()),
                Ok(false) => {}
                Err(e) => {
                    first_error.get_or_insert(e);
                    failed.push(element.clone());
                }
            }
        }
        if !failed.is_empty() {
            let attributes = &mut event.metadata.attributes;
            attributes.insert(
                "filter_list_processor_failed_elements_count".to_owned(),
                failed.len().into(),
            );
            attributes.insert(
                "filter_list_processor_failed_elements".to_owned(),
                Value::Array(failed),
            );
        }
        event
            .put(config.target(), Value::Array(kept))
            .map_err(|e| e.to_string())?;
        match first_error {
            None => Ok(Fate::Keep),
            Some(e) => Err(Failure::new(format!(
                "`keep_element_when` could not be evaluated on an element: {e}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::testing::{invalid, processor, run, run_event, tagged};

    #[test]
    fn keeps_the_elements_the_condition_selects() {
        let p = processor(
            "filter_list:\n  iterate_on: items\n  keep_element_when: '/status == \"active\"'",
        );
        assert_eq!(
            run(
                &*p,
                json!({"items": [{"n": 1, "status": "active"}, {"n": 2}, {"n": 3, "status": "active"}]})
            ),
            Some(json!({"items": [{"n": 1, "status": "active"}, {"n": 3, "status": "active"}]}))
        );
        assert_eq!(
            run(&*p, json!({"items": null})),
            Some(json!({"items": null}))
        );
        assert_eq!(run(&*p, json!({"x": 1})), Some(json!({"x": 1})));
        let p = processor(
            "filter_list:\n  iterate_on: a/scores\n  target: b/kept\n  keep_element_when: '/value > 50'",
        );
        assert_eq!(
            run(&*p, json!({"a": {"scores": [90, 30, 75.5]}})),
            Some(json!({"a": {"scores": [90, 30, 75.5]}, "b": {"kept": [90, 75.5]}}))
        );
    }

    #[test]
    fn what_cannot_be_filtered_is_tagged() {
        let p = processor(
            "filter_list:\n  iterate_on: l\n  keep_element_when: '/value'\n  tags_on_failure: [filter_failed]",
        );
        assert_eq!(
            tagged(&*p, json!({"l": "text"})),
            (json!({"l": "text"}), vec!["filter_failed".to_owned()])
        );
        // `/value` of an element that is not a boolean is no verdict.
        let event = run_event(&*p, json!({"l": [true, "x", false, [1]]}));
        assert_eq!(event.data, json!({"l": [true]}));
        assert_eq!(event.metadata.tags, ["filter_failed"]);
        assert_eq!(
            event.metadata.attributes["filter_list_processor_failed_elements_count"],
            json!(2)
        );
        assert_eq!(
            event.metadata.attributes["filter_list_processor_failed_elements"],
            json!(["x", [1]])
        );
        let clean = run_event(&*p, json!({"l": [false, true]}));
        assert_eq!(clean.data, json!({"l": [true]}));
        assert!(clean.metadata.tags.is_empty() && clean.metadata.attributes.is_empty());
    }

    #[test]
    fn filter_list_when_selects_the_events() {
        let p = processor(
            "filter_list:\n  iterate_on: l\n  keep_element_when: '/value != \"\"'\n  filter_list_when: '/env == \"production\"'",
        );
        assert_eq!(
            run(&*p, json!({"env": "staging", "l": ["a", ""]})),
            Some(json!({"env": "staging", "l": ["a", ""]}))
        );
        assert_eq!(
            run(&*p, json!({"env": "production", "l": ["a", ""]})),
            Some(json!({"env": "production", "l": ["a"]}))
        );
    }

    #[test]
    fn the_conditions_are_checked() {
        let e = invalid("filter_list:\n  iterate_on: l");
        assert!(e.contains("missing field `keep_element_when`"), "{e}");
        let e = invalid("filter_list:\n  iterate_on: l\n  keep_element_when: '/value +'");
        assert!(e.contains("keep_element_when"), "{e}");
    }
}
