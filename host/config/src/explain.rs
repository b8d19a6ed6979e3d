//! Wording: turns serde's messages into ones that name the key path and suggest the fix
//! (the closest known name, a key written one level off, what was expected and what was
//! given).

use serde_yaml::Value;

use crate::error::closest;
use crate::location::join;

/// Rewrites serde's message into ours: the key path, the plugin kind, a suggestion.
/// Returns the path to point at and the message.
pub(crate) fn explain(path: &str, kind: Kind, serde_message: &str) -> (String, String) {
    let (name, expected) = quoted_and_expected(serde_message);
    if let (Some(wrong), true) = (&name, serde_message.starts_with("unknown field")) {
        let fields: Vec<&str> = expected.iter().map(String::as_str).collect();
        // serde_path_to_error puts the unknown key itself at the end of the path.
        let parent = path.strip_suffix(&format!(".{wrong}")).unwrap_or(path);
        let message =
            misplaced(wrong, parent).unwrap_or_else(|| unknown_field(wrong, parent, &fields));
        return (join(parent, wrong), message);
    }
    if let (Some(wrong), true) = (&name, serde_message.starts_with("unknown variant")) {
        let noun = kind.noun();
        let known: Vec<&str> = expected.iter().map(String::as_str).collect();
        if kind == Kind::Field {
            let hint = match closest(wrong, known.iter().copied()) {
                Some(best) => format!("did you mean `{best}`?"),
                None => format!("write one of {}", list(&known)),
            };
            return (
                path.to_owned(),
                format!("invalid value `{wrong}` for `{path}`; {hint}"),
            );
        }
        let message = if known.is_empty() {
            format!(
                "unknown {noun} `{wrong}` in `{path}`: sluice has no {noun}s yet; remove it, e.g. `{noun}: []`"
            )
        } else if let Some(best) = closest(wrong, known.iter().copied()) {
            format!("unknown {noun} `{wrong}` in `{path}`, did you mean `{best}`?")
        } else {
            format!(
                "unknown {noun} `{wrong}` in `{path}`; the {noun}s are {}",
                list(&known)
            )
        };
        return (join(path, wrong), message);
    }
    if let (Some(missing), true) = (&name, serde_message.starts_with("missing field")) {
        return (
            path.to_owned(),
            format!("missing field `{missing}` in `{path}`"),
        );
    }
    let mut message = serde_message.to_owned();
    for (rust, plain) in [
        ("expected usize", "expected a whole number"),
        ("expected u64", "expected a whole number"),
        ("expected u16", "expected a port number (1-65535)"),
        ("expected a string", "expected text"),
    ] {
        message = message.replace(rust, plain);
    }
    (
        path.to_owned(),
        format!("invalid value for `{path}`: {message}"),
    )
}

/// Keys people copy from the kafka buffer's first proposal (Data Prepper issue #3322), which
/// never matched what shipped, with what to write instead.
pub(crate) fn misplaced(wrong: &str, parent: &str) -> Option<String> {
    if parent.ends_with("buffer.kafka") {
        let fix = match wrong {
            "topic" => "the topic goes in a list: `topics: [{name: ..., group_id: ...}]`",
            "workers" => {
                "consumers are set per topic: `topics: [{name: ..., group_id: ..., workers: 2}]`"
            }
            "group_id" | "name" => {
                "it belongs to the topic: `topics: [{name: ..., group_id: ...}]`"
            }
            "acknowledgments" | "acknowledgements" => {
                "the kafka buffer always acknowledges (offsets are committed only after the sinks \
                 take the events); remove it"
            }
            "serde_format" => {
                "records are kept as the raw bytes received; the source's `deserializer` decodes \
                 them; remove it"
            }
            _ => return None,
        };
        return Some(format!("`{wrong}` is not a field of `kafka`; {fix}"));
    }
    if parent.ends_with("buffer.kafka.authentication") && wrong.starts_with("sasl_") {
        return Some(format!(
            "`{wrong}` is not a field of `authentication`; write \
             `authentication: {{sasl: {{plain: {{username: ..., password: ...}}}}}}` \
             (or `scram_sha_256` / `scram_sha_512` in place of `plain`)"
        ));
    }
    None
}

pub(crate) fn unknown_field(wrong: &str, parent: &str, fields: &[&str]) -> String {
    match closest(wrong, fields.iter().copied()) {
        Some(best) => format!("unknown field `{wrong}` in `{parent}`, did you mean `{best}`?"),
        None if fields.is_empty() => {
            format!("unknown field `{wrong}` in `{parent}`, which takes no fields")
        }
        None => format!(
            "unknown field `{wrong}` in `{parent}`; the fields are {}",
            list(fields)
        ),
    }
}

pub(crate) fn list(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// From "unknown field `x`, expected one of `a`, `b`": (`x`, [`a`, `b`]).
pub(crate) fn quoted_and_expected(message: &str) -> (Option<String>, Vec<String>) {
    let mut quoted = message.split('`').skip(1).step_by(2).map(str::to_owned);
    let first = quoted.next();
    (first, quoted.collect())
}

pub(crate) fn render(value: &Value) -> String {
    serde_yaml::to_string(value)
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

pub(crate) fn describe(value: &Value) -> String {
    match value {
        Value::Null => "nothing".to_owned(),
        Value::Bool(b) => format!("`{b}`"),
        Value::Number(n) => format!("`{n}`"),
        Value::String(s) => format!("`{s}`"),
        Value::Sequence(_) => "a list".to_owned(),
        Value::Mapping(_) => "a map".to_owned(),
        Value::Tagged(_) => "a tagged value".to_owned(),
    }
}

/// What sort of thing a key names, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Field,
    Source,
    Buffer,
    Processor,
    Sink,
}

impl Kind {
    pub(crate) fn noun(self) -> &'static str {
        match self {
            Kind::Field => "field",
            Kind::Source => "source",
            Kind::Buffer => "buffer",
            Kind::Processor => "processor",
            Kind::Sink => "sink",
        }
    }
}
