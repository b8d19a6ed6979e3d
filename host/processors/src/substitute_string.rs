//! `substitute_string`, as Data Prepper's `SubstituteStringProcessor`: for each entry in order,
//! when its `substitute_when` holds, every match of `from` in the text at `source` is replaced
//! by `to` (Java's `replaceAll`: `$1` is the first group, `\$` a dollar sign).

use regex::Regex;
use serde_json::Value;
use sluice_config::processor::substitute_string::{self as config, SubstituteEntry};
use sluice_event::Event;

use crate::{Apply, BuildError, BuildProcessor, Failure, Fate, when};

/// `substitute_string`, built: its entries.
pub struct SubstituteString {
    entries: Vec<Entry>,
}

/// One entry: its config, with `from` compiled and `to` in the regex crate's syntax.
struct Entry {
    config: SubstituteEntry,
    from: Regex,
    to: String,
}

impl BuildProcessor for config::SubstituteString {
    type Processor = SubstituteString;

    fn build(&self) -> Result<SubstituteString, BuildError> {
        Ok(SubstituteString {
            entries: self
                .entries
                .iter()
                .map(|e| Entry {
                    config: e.clone(),
                    from: Regex::new(&e.from).expect("checked at validate"),
                    to: java_replacement(&e.to),
                })
                .collect(),
        })
    }
}

impl Apply for SubstituteString {
    fn apply(&self, event: &mut Event, name: &'static str) -> Result<Fate, Failure> {
        for entry in &self.entries {
            if !when(name, entry.config.substitute_when.as_ref(), event) {
                continue;
            }
            if let Some(Value::String(text)) = event.get_mut(&entry.config.source)
                && let std::borrow::Cow::Owned(changed) =
                    entry.from.replace_all(text, entry.to.as_str())
            {
                *text = changed;
            }
        }
        Ok(Fate::Keep)
    }
}

/// Java's replacement syntax in the regex crate's: `$1` → `${1}` (the regex crate would read
/// `$1a` as a group named `1a`), `\x` → `x` (so `\$` is a literal `$`, written `$$`).
pub(crate) fn java_replacement(to: &str) -> String {
    let mut out = String::with_capacity(to.len());
    let mut chars = to.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('$') => out.push_str("$$"),
                Some(other) => out.push(other),
                None => {}
            },
            '$' => {
                let mut digits = String::new();
                while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
                    digits.push(d);
                    chars.next();
                }
                if digits.is_empty() {
                    out.push_str("$$");
                } else {
                    out.push_str(&format!("${{{digits}}}"));
                }
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::java_replacement;
    use crate::testing::{processor, run};

    #[test]
    fn replaces_every_match() {
        let p = processor(
            "substitute_string:\n  entries:\n    - source: message\n      from: ':'\n      to: '-'",
        );
        assert_eq!(
            run(&*p, json!({"message": "ab:cd:ef"})),
            Some(json!({"message": "ab-cd-ef"}))
        );
        assert_eq!(run(&*p, json!({"message": 5})), Some(json!({"message": 5})));
    }

    #[test]
    fn groups_are_written_as_in_java() {
        assert_eq!(java_replacement("$1a\\$"), "${1}a$$");
        let p = processor(
            "substitute_string:\n  entries:\n    - source: m\n      from: '(\\d+)-(\\d+)'\n      to: '$2x$1'",
        );
        assert_eq!(run(&*p, json!({"m": "12-34"})), Some(json!({"m": "34x12"})));
    }
}
