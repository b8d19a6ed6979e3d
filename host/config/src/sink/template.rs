//! Text with `${/json/pointer}` references to event fields, as Data Prepper's format strings:
//! `${/host}-${/service/name}`. Used for the kafka sink's `partition_key`.

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    /// A JSON pointer (`/host`).
    Field(String),
}

impl Template {
    /// Parses `text`; an unclosed `${` or a reference that is not a JSON pointer is an error
    /// (worded for `validate`; outside this crate a template comes parsed, in the kafka sink's
    /// resolved settings).
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            if start > 0 {
                parts.push(Part::Text(rest[..start].to_owned()));
            }
            let after = &rest[start + 2..];
            let end = after
                .find('}')
                .ok_or_else(|| format!("`{text}` has `${{` without its `}}`"))?;
            let pointer = &after[..end];
            if !pointer.starts_with('/') {
                return Err(format!(
                    "`${{{pointer}}}` in `{text}` is not a field reference; write `${{/{pointer}}}`"
                ));
            }
            parts.push(Part::Field(pointer.to_owned()));
            rest = &after[end + 1..];
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_owned()));
        }
        Ok(Self { parts })
    }

    /// The text for `event`: each reference replaced by the field's text (a string as is,
    /// another value as JSON), or by nothing when the field is missing.
    pub fn render(&self, event: &serde_json::Value) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Field(pointer) => match event.pointer(pointer) {
                    Some(serde_json::Value::String(s)) => out.push_str(s),
                    Some(serde_json::Value::Null) | None => {}
                    Some(other) => out.push_str(&other.to_string()),
                },
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn references_are_replaced_by_field_text() {
        let t = Template::parse("${/host}-${/svc/name}:${/n}").unwrap();
        let e = json!({"host": "h1", "svc": {"name": "api"}, "n": 3});
        assert_eq!(t.render(&e), "h1-api:3");
        assert_eq!(t.render(&json!({})), "-:");
        assert_eq!(Template::parse("fixed").unwrap().render(&e), "fixed");
    }

    #[test]
    fn a_bad_reference_is_named() {
        assert!(
            Template::parse("${/host")
                .unwrap_err()
                .contains("without its")
        );
        assert!(Template::parse("${host}").unwrap_err().contains("${/host}"));
    }
}
