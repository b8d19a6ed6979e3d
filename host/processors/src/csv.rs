//! `csv`, as Data Prepper's `CsvProcessor` (Jackson's CSV reader, an empty schema): the first
//! record of the text at `source` is read with `delimiter` and `quote_character` (a quoted
//! column may hold delimiters and line breaks; the quote written twice is one quote; white
//! space after a closing quote is skipped; no trimming, no escape character). Column `i` goes
//! to the `i`th header name (from the event's `column_names_source_key`, else
//! `column_names`), past them to `column<i>` (from 1), always as text, at the top level (a
//! name with `/` nests). Then `column_names_source_key` (when the event has it and
//! `delete_header`) and `source` (`delete_source`) are removed. Empty text writes no column
//! but still deletes.
//!
//! Malformed text (a quote never closed, text after a closing quote) is logged and the event
//! left as it was; Data Prepper has no `tags_on_failure` here. Where Data Prepper throws out
//! of the processor (and loses the batch), sluice logs and keeps the event: a source that is
//! an object or a list (skipped), a header that is not text or is empty (no header), a column
//! name that is not a valid key (the columns before it stay, nothing is deleted).

use serde_json::Value;
use sluice_config::processor::csv as config;
use sluice_event::{Event, Expression, Key};

use crate::{Apply, BuildError, BuildProcessor, Failure, Fate, java_string, normalize_key};

/// `csv`, built: the config, with its delimiter and quote as characters.
pub struct Csv {
    config: config::Csv,
    delimiter: char,
    quote: char,
}

impl BuildProcessor for config::Csv {
    type Processor = Csv;

    fn when(&self) -> Option<&Expression> {
        self.csv_when.as_ref()
    }

    fn build(&self) -> Result<Csv, BuildError> {
        let one = |s: &str| s.chars().next().expect("checked: one character");
        Ok(Csv {
            config: self.clone(),
            delimiter: one(&self.delimiter),
            quote: one(&self.quote_character),
        })
    }
}

impl Apply for Csv {
    fn apply(&self, event: &mut Event, _: &'static str) -> Result<Fate, Failure> {
        let config = &self.config;
        let message = match java_string(event.get(&config.source)) {
            Ok(Some(message)) => message,
            Ok(None) => return Ok(Fate::Keep),
            Err(()) => {
                return Err(Failure::new(format!(
                    "the source `{}` is not text; event skipped",
                    config.source
                )));
            }
        };
        let header_key = config
            .column_names_source_key
            .as_ref()
            .filter(|k| event.contains(k));
        let row = first_record(&message, self.delimiter, self.quote)
            .map_err(|reason| format!("invalid CSV; event left as it was: {reason}"))?;
        if let Some(row) = row {
            let header = match header_key {
                Some(key) => self.header_of(event, key),
                None => config.column_names.clone().unwrap_or_default(),
            };
            for (i, column) in row.into_iter().enumerate() {
                let name = match header.get(i) {
                    Some(name) if config.normalize_keys => normalize_key(name),
                    Some(name) => name.clone(),
                    None => format!("column{}", i + 1),
                };
                let put = match Key::parse(&name) {
                    Ok(key) if !key.is_root() => event
                        .put(&key, Value::String(column))
                        .map_err(|e| e.to_string()),
                    Ok(_) => Err("a column name is empty".to_owned()),
                    Err(e) => Err(e.to_string()),
                };
                put.map_err(|reason| {
                    format!("column not written; the rest of the event is left: {reason}")
                })?;
            }
        }
        if let (Some(key), true) = (header_key, config.delete_header) {
            event.delete(key);
        }
        if config.delete_source {
            event.delete(&config.source);
        }
        Ok(Fate::Keep)
    }
}

impl Csv {
    /// The header in the event's `column_names_source_key`: its first record; none when it
    /// is not text, is empty or is not valid CSV.
    fn header_of(&self, event: &Event, key: &Key) -> Vec<String> {
        match java_string(event.get(key)) {
            Ok(Some(text)) => first_record(&text, self.delimiter, self.quote)
                .ok()
                .flatten()
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }
}

/// The first record of `text`, as Jackson's `CsvDecoder` reads it; none for empty text.
fn first_record(text: &str, delimiter: char, quote: char) -> Result<Option<Vec<String>>, String> {
    if text.is_empty() {
        return Ok(None);
    }
    let mut chars = text.chars().peekable();
    let mut columns = Vec::new();
    loop {
        let mut column = String::new();
        if chars.peek() == Some(&quote) {
            chars.next();
            loop {
                match chars.next() {
                    None => return Err("missing closing quote for value".to_owned()),
                    Some(c) if c == quote => {
                        if chars.peek() == Some(&quote) {
                            chars.next();
                            column.push(quote);
                        } else {
                            break;
                        }
                    }
                    Some(c) => column.push(c),
                }
            }
            columns.push(column);
            // After the closing quote: white space, then the delimiter or the end of the line.
            loop {
                match chars.next() {
                    None | Some('\r' | '\n') => return Ok(Some(columns)),
                    Some(c) if c == delimiter => break,
                    Some(c) if c <= ' ' => {}
                    Some(c) => {
                        return Err(format!(
                            "expected the delimiter `{delimiter}` or the end of the line after a quoted column, found `{c}`"
                        ));
                    }
                }
            }
        } else {
            loop {
                match chars.next() {
                    None | Some('\r' | '\n') => {
                        columns.push(column);
                        return Ok(Some(columns));
                    }
                    Some(c) if c == delimiter => {
                        columns.push(column);
                        break;
                    }
                    Some(c) => column.push(c),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::first_record;
    use crate::testing::{invalid, processor, run};

    fn record(text: &str) -> Result<Option<Vec<String>>, String> {
        first_record(text, ',', '"')
    }

    #[test]
    fn the_documented_header_from_the_event() {
        // csv.md:60: `delete_header` (default true) removes the header key.
        let p = processor("csv:\n  column_names_source_key: header");
        assert_eq!(
            run(&*p, json!({"header": "a,b,c", "message": "1,2,3"})),
            Some(json!({"message": "1,2,3", "a": "1", "b": "2", "c": "3"}))
        );
        let p = processor("csv:\n  column_names_source_key: header\n  delete_header: false");
        assert_eq!(
            run(&*p, json!({"header": "a,b", "message": "1,2,3"})),
            Some(json!({"header": "a,b", "message": "1,2,3", "a": "1", "b": "2", "column3": "3"}))
        );
    }

    #[test]
    fn the_documented_column_names_and_delete_source() {
        // csv.md:35
        let p = processor("csv:\n  column_names: [col1, col2]");
        assert_eq!(
            run(&*p, json!({"message": "1,2,3"})),
            Some(json!({"message": "1,2,3", "col1": "1", "col2": "2", "column3": "3"}))
        );
        // csv.md:106, with and without delete_source
        let p = processor("csv:\n  column_names: [col1, col2]\n  delete_source: true");
        for (line, a, b, c) in [("1,2,3", "1", "2", "3"), ("4,5,6", "4", "5", "6")] {
            assert_eq!(
                run(&*p, json!({"message": line})),
                Some(json!({"col1": a, "col2": b, "column3": c}))
            );
        }
        let p = processor("csv:\n  column_names: [col1, col2]\n  delete_source: false");
        assert_eq!(
            run(&*p, json!({"message": "4,5,6"})),
            Some(json!({"message": "4,5,6", "col1": "4", "col2": "5", "column3": "6"}))
        );
    }

    #[test]
    fn the_header_key_wins_over_column_names_and_extra_names_are_ignored() {
        let p =
            processor("csv:\n  column_names_source_key: h\n  column_names: [x, y]\n  source: line");
        assert_eq!(
            run(&*p, json!({"h": "a,b,c,d", "line": "1,2"})),
            Some(json!({"line": "1,2", "a": "1", "b": "2"}))
        );
        // Without the header key in the event, `column_names`.
        assert_eq!(
            run(&*p, json!({"line": "1,2"})),
            Some(json!({"line": "1,2", "x": "1", "y": "2"}))
        );
    }

    #[test]
    fn quotes_delimiters_and_nesting() {
        let p =
            processor("csv:\n  delimiter: '|'\n  quote_character: \"'\"\n  column_names: [a/b, c]");
        assert_eq!(
            run(&*p, json!({"message": "'x|y''z'|w|"})),
            Some(json!({"message": "'x|y''z'|w|", "a": {"b": "x|y'z"}, "c": "w", "column3": ""}))
        );
    }

    #[test]
    fn reads_the_first_record_as_jackson() {
        assert_eq!(record(""), Ok(None));
        assert_eq!(record("a"), Ok(Some(vec!["a".into()])));
        assert_eq!(
            record("a,,b,"),
            Ok(Some(vec!["a".into(), "".into(), "b".into(), "".into()]))
        );
        assert_eq!(
            record(" a , b "),
            Ok(Some(vec![" a ".into(), " b ".into()]))
        );
        assert_eq!(record("1,2\r\n3,4"), Ok(Some(vec!["1".into(), "2".into()])));
        assert_eq!(record("\n3,4"), Ok(Some(vec!["".into()])));
        assert_eq!(
            record("\"a\nb\",\"say \"\"hi\"\"\"  ,c"),
            Ok(Some(vec!["a\nb".into(), "say \"hi\"".into(), "c".into()]))
        );
        // A quote inside a column is text.
        assert_eq!(record("a\"b,c"), Ok(Some(vec!["a\"b".into(), "c".into()])));
        assert!(record("\"open,b").is_err());
        assert!(record("\"a\"b,c").is_err());
    }

    #[test]
    fn bad_text_leaves_the_event_and_empty_text_still_deletes() {
        let p = processor("csv:\n  delete_source: true");
        let event = json!({"message": "\"never closed,1"});
        assert_eq!(run(&*p, event.clone()), Some(event));
        assert_eq!(
            run(&*p, json!({"message": "", "k": 1})),
            Some(json!({"k": 1}))
        );
        // No source, or one that is not text: nothing happens.
        assert_eq!(run(&*p, json!({"k": 1})), Some(json!({"k": 1})));
        let event = json!({"message": {"a": 1}});
        assert_eq!(run(&*p, event.clone()), Some(event));
        // A number is read as its text.
        assert_eq!(
            run(&*p, json!({"message": 12})),
            Some(json!({"column1": "12"}))
        );
    }

    #[test]
    fn normalize_keys_and_invalid_names() {
        let p = processor("csv:\n  column_names: ['a:b', 'c d', 'e']\n  normalize_keys: true");
        assert_eq!(
            run(&*p, json!({"message": "1,2,3"})),
            Some(json!({"message": "1,2,3", "a_b": "1", "c d": "2", "e": "3"}))
        );
        // Without it, an invalid name stops the columns there and nothing is deleted.
        let p = processor("csv:\n  column_names: ['a', 'b:c', 'd']\n  delete_source: true");
        assert_eq!(
            run(&*p, json!({"message": "1,2,3"})),
            Some(json!({"message": "1,2,3", "a": "1"}))
        );
    }

    #[test]
    fn csv_when_and_config_errors() {
        let p = processor("csv:\n  csv_when: '/type == \"csv\"'");
        assert_eq!(
            run(&*p, json!({"type": "x", "message": "1"})),
            Some(json!({"type": "x", "message": "1"}))
        );
        assert_eq!(
            run(&*p, json!({"type": "csv", "message": "1"})),
            Some(json!({"type": "csv", "message": "1", "column1": "1"}))
        );
        assert!(invalid("csv:\n  delimiter: ';;'").contains("exactly one character"));
        assert!(invalid("csv:\n  quote_character: ','").contains("cannot be the same"));
        assert!(invalid("csv:\n  multiline: true").contains("not supported by sluice yet"));
    }
}
