//! `parse_xml`, as Data Prepper's `ParseXmlProcessor`: `parse_json`'s frame (source,
//! destination, pointer, overwrite, delete, tags) around Jackson's `XmlMapper` reading the
//! text into a map. The root element's name is dropped; its attributes and child elements
//! become keys (namespace prefixes dropped, as Jackson names them by local name); an element
//! with only text is that text (values are always text, `<age>30</age>` is `"30"`); an empty
//! element is `""`; an element with children or attributes is an object, its own text (not
//! white space only) under the key `""`; an element name repeated becomes a list of its
//! values. A root element with only text, or text that is not XML, fails (`tags_on_failure`).
//!
//! Metrics, as Data Prepper's: `sluice_processor_parseErrors` (text that is not XML) and
//! `sluice_processor_processingFailures` (anything else that failed), labelled `processor`.

use serde_json::{Map, Value};
use sluice_config::processor::parse_xml as config;
use sluice_event::{Event, Expression};

use crate::parse_json::ParseJson;
use crate::{Apply, BuildError, BuildProcessor, Failure, Fate};

/// `parse_xml`, built: `parse_json`'s runtime with the XML reader.
pub struct ParseXml {
    inner: ParseJson,
}

impl BuildProcessor for config::ParseXml {
    type Processor = ParseXml;

    fn when(&self) -> Option<&Expression> {
        self.parse_when.as_ref()
    }

    fn tags_on_failure(&self) -> &[String] {
        &self.tags_on_failure
    }

    fn logs_failures(&self) -> bool {
        self.handle_failed_events.logs()
    }

    fn build(&self) -> Result<ParseXml, BuildError> {
        Ok(ParseXml {
            inner: ParseJson {
                config: self.as_parse_json(),
                parse: parse_document,
                what: "an XML document",
            },
        })
    }
}

impl Apply for ParseXml {
    fn apply(&self, event: &mut Event, name: &'static str) -> Result<Fate, Failure> {
        let result = self.inner.apply(event, name);
        if let Err(failure) = &result {
            let metric = if failure.tagged {
                "sluice_processor_parseErrors"
            } else {
                "sluice_processor_processingFailures"
            };
            metrics::counter!(metric, "processor" => "parse_xml").increment(1);
        }
        result
    }
}

/// The document's root element as a map (`None`: not XML, or a root of only text).
fn parse_document(text: &str) -> Option<Map<String, Value>> {
    let document = roxmltree::Document::parse(text).ok()?;
    match element(document.root_element()) {
        Value::Object(map) => Some(map),
        Value::String(s) if s.is_empty() => Some(Map::new()),
        _ => None,
    }
}

/// An element's value: its text when it has only text, else an object.
fn element(node: roxmltree::Node<'_, '_>) -> Value {
    let mut map = Map::new();
    for attribute in node.attributes() {
        insert(
            &mut map,
            attribute.name(),
            Value::String(attribute.value().to_owned()),
        );
    }
    let mut text = String::new();
    let mut children = false;
    for child in node.children() {
        if child.is_element() {
            children = true;
            insert(&mut map, child.tag_name().name(), element(child));
        } else if child.is_text() {
            text.push_str(child.text().unwrap_or(""));
        }
    }
    if !children && map.is_empty() {
        return Value::String(text);
    }
    if !text.trim().is_empty() {
        insert(&mut map, "", Value::String(text));
    }
    Value::Object(map)
}

/// A key written again becomes a list of its values (Jackson 2.12+ on repeated elements).
fn insert(map: &mut Map<String, Value>, name: &str, value: Value) {
    match map.get_mut(name) {
        None => {
            map.insert(name.to_owned(), value);
        }
        Some(Value::Array(items)) => items.push(value),
        Some(existing) => {
            let first = existing.take();
            *existing = Value::Array(vec![first, value]);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::testing::{invalid, processor, run, tagged};

    #[test]
    fn the_documented_example() {
        let p = processor("parse_xml:\n  source: my_xml");
        let xml = "<Person><name>John Doe</name><age>30</age></Person>";
        assert_eq!(
            run(&*p, json!({"my_xml": xml})),
            Some(json!({"my_xml": xml, "name": "John Doe", "age": "30"}))
        );
    }

    #[test]
    fn attributes_repeats_empty_elements_and_mixed_text() {
        let p = processor("parse_xml:\n  destination: d\n  delete_source: true");
        let xml = "<?xml version=\"1.0\"?><r xmlns:x=\"urn:x\" id=\"7\"><x:item>a</x:item><item>b</item><empty/><n k=\"v\">text</n><w>  </w></r>";
        assert_eq!(
            run(&*p, json!({"message": xml})),
            Some(
                json!({"d": {"id": "7", "item": ["a", "b"], "empty": "", "n": {"k": "v", "": "text"}, "w": "  "}})
            )
        );
    }

    #[test]
    fn not_xml_is_tagged_and_left() {
        let p = processor("parse_xml:\n  tags_on_failure: [xml_failed]");
        for text in ["not xml", "<a><b></a>", "<a>only text</a>", "{\"a\": 1}"] {
            let (out, tags) = tagged(&*p, json!({"message": text}));
            assert_eq!(out, json!({"message": text}), "{text}");
            assert_eq!(tags, ["xml_failed"], "{text}");
        }
        // Missing: skipped, untagged.
        assert_eq!(tagged(&*p, json!({})), (json!({}), vec![]));
    }

    #[test]
    fn pointer_overwrite_and_when() {
        let p = processor("parse_xml:\n  pointer: /outer/inner\n  parse_when: '/go == true'");
        let xml = "<r><outer><inner>v</inner></outer></r>";
        assert_eq!(
            run(&*p, json!({"message": xml})),
            Some(json!({"message": xml}))
        );
        assert_eq!(
            run(&*p, json!({"message": xml, "go": true})),
            Some(json!({"message": xml, "go": true, "inner": "v"}))
        );
        let p = processor("parse_xml:\n  overwrite_if_destination_exists: false");
        assert_eq!(
            run(&*p, json!({"message": "<r><a>1</a><b>2</b></r>", "a": 0})),
            Some(json!({"message": "<r><a>1</a><b>2</b></r>", "a": 0, "b": "2"}))
        );
        assert!(invalid("parse_xml:\n  destination: ' '").contains("cannot be empty"));
        assert!(invalid("parse_xml:\n  depth: 1").contains("unknown field"));
        assert!(
            invalid("parse_xml:\n  handle_failed_events: drop")
                .contains("`skip` or `skip_silently`")
        );
    }
}
