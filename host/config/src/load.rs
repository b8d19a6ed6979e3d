//! Text → [`Config`]: YAML syntax, then each pipeline field on its own (so one bad field does
//! not hide the next), then the rules that span fields and pipelines. Every error is collected;
//! the caller gets all of them at once, sorted by line.

use std::collections::HashMap;
use std::time::Duration;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_path_to_error::Segment;
use serde_yaml::{Mapping, Value};

use crate::error::{ConfigError, ConfigErrors, closest};
use crate::kafka::{KafkaClient, owned_property};
use crate::location::{LocationIndex, join};
use crate::model::*;
use crate::units;

/// What validation may check beyond the file itself.
#[derive(Debug, Default, Clone, Copy)]
pub struct Context<'a> {
    /// The deserializer plugins that exist. `None` skips the check.
    pub deserializers: Option<&'a [String]>,
}

/// Parses and validates a pipeline file. `file` is only used in messages.
pub fn parse(file: &str, text: &str, context: Context<'_>) -> Result<Config, ConfigErrors> {
    let mut errors = Errors {
        index: LocationIndex::new(text),
        list: Vec::new(),
    };
    let config = parse_inner(text, &mut errors, context);
    if let (true, Some(config)) = (errors.list.is_empty(), config) {
        return Ok(config);
    }
    let mut list = errors.list;
    list.sort_by_key(|e| e.position.map(|p| (p.line, p.column)));
    Err(ConfigErrors {
        file: file.to_owned(),
        errors: list,
    })
}

struct Errors {
    index: LocationIndex,
    list: Vec<ConfigError>,
}

impl Errors {
    /// An error about the key at `path` (its position is looked up).
    fn at(&mut self, path: &str, message: impl Into<String>) {
        let position = self.index.find(path);
        self.list.push(ConfigError {
            position,
            path: path.to_owned(),
            message: message.into(),
        });
    }
}

fn parse_inner(text: &str, errors: &mut Errors, context: Context<'_>) -> Option<Config> {
    let root: Value = match serde_yaml::from_str(text) {
        Ok(root) => root,
        Err(e) => {
            let position = e.location().map(|l| crate::location::Position {
                line: l.line(),
                column: l.column(),
            });
            let message = e.to_string();
            let message = match message.find(" at line ") {
                Some(cut) => message[..cut].to_owned(),
                None => message,
            };
            errors.list.push(ConfigError {
                position,
                path: String::new(),
                message: format!("invalid YAML: {message}"),
            });
            return None;
        }
    };
    let root = match root {
        Value::Mapping(root) if !root.is_empty() => root,
        Value::Null | Value::Mapping(_) => {
            errors.at(
                "",
                "the file defines no pipelines; start with a pipeline name, e.g. `log-pipeline:`",
            );
            return None;
        }
        _ => {
            errors.at("", "the file must be a map of pipeline names to pipelines, e.g. `log-pipeline: {source: ..., sink: ...}`");
            return None;
        }
    };

    let mut pipelines = Vec::new();
    for (name, body) in root {
        let Some(name) = name.as_str().map(str::to_owned) else {
            errors.at(
                "",
                format!("pipeline names must be text, got `{}`", render(&name)),
            );
            continue;
        };
        if PIPELINE_FIELDS.contains(&name.as_str()) {
            errors.at(
                &name,
                format!(
                    "`{name}` is a field of a pipeline, not a pipeline; indent it under a pipeline name \
                     (e.g. `log-pipeline:`)"
                ),
            );
            continue;
        }
        match body {
            Value::Mapping(body) => {
                if let Some(p) = parse_pipeline(&name, body, errors) {
                    pipelines.push(p);
                }
            }
            _ => errors.at(
                &name,
                format!("pipeline `{name}` must be a map with `source`, `buffer`, `processor` and `sink`"),
            ),
        }
    }
    validate(&pipelines, errors, context);
    Some(Config { pipelines })
}

fn parse_pipeline(name: &str, body: Mapping, errors: &mut Errors) -> Option<Pipeline> {
    let before = errors.list.len();
    let mut workers = default_workers();
    let mut delay = default_delay();
    let mut source = None;
    let mut buffer = Buffer::default();
    let mut processor = Vec::new();
    let mut sink = Vec::new();
    let mut dlq_path = None;

    for (key, value) in body {
        let Some(key) = key.as_str() else {
            errors.at(
                name,
                format!(
                    "keys of pipeline `{name}` must be text, got `{}`",
                    render(&key)
                ),
            );
            continue;
        };
        let path = join(name, key);
        match key {
            "workers" => set(&mut workers, field(value, &path, Kind::Field, errors)),
            "delay" => set(
                &mut delay,
                field::<DelayValue>(value, &path, Kind::Field, errors).map(|d| d.0),
            ),
            "source" => source = component(value, &path, Kind::Source, errors),
            "buffer" => set(&mut buffer, component(value, &path, Kind::Buffer, errors)),
            "processor" => set(
                &mut processor,
                components(value, &path, Kind::Processor, errors),
            ),
            "sink" => set(&mut sink, components(value, &path, Kind::Sink, errors)),
            "dlq_path" => dlq_path = field(value, &path, Kind::Field, errors),
            other => errors.at(&path, unknown_field(other, name, PIPELINE_FIELDS)),
        }
    }

    let Some(source) = source else {
        if errors.list.len() == before {
            errors.at(
                name,
                format!("pipeline `{name}` has no `source`; add one, e.g. `source: {{http: {{port: 2021}}}}`"),
            );
        }
        return None;
    };
    if sink.is_empty() && errors.list.len() == before {
        errors.at(
            name,
            format!("pipeline `{name}` has no sink; add one, e.g. `sink: [{{stdout: {{}}}}]`"),
        );
    }
    (errors.list.len() == before).then(|| Pipeline {
        name: name.to_owned(),
        workers,
        delay,
        source,
        buffer,
        processor,
        sink,
        dlq_path,
    })
}

fn set<T>(slot: &mut T, value: Option<T>) {
    if let Some(value) = value {
        *slot = value;
    }
}

#[derive(Deserialize)]
struct DelayValue(#[serde(deserialize_with = "units::duration")] Duration);

/// What sort of thing a key names, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Field,
    Source,
    Buffer,
    Processor,
    Sink,
}

impl Kind {
    fn noun(self) -> &'static str {
        match self {
            Kind::Field => "field",
            Kind::Source => "source",
            Kind::Buffer => "buffer",
            Kind::Processor => "processor",
            Kind::Sink => "sink",
        }
    }
}

/// A list of components (`processor`, `sink`): each item on its own.
fn components<T: DeserializeOwned>(
    value: Value,
    path: &str,
    kind: Kind,
    errors: &mut Errors,
) -> Option<Vec<T>> {
    match value {
        Value::Null => Some(Vec::new()),
        Value::Sequence(items) => {
            let before = errors.list.len();
            let parsed: Vec<T> = items
                .into_iter()
                .enumerate()
                .filter_map(|(i, item)| component(item, &format!("{path}[{i}]"), kind, errors))
                .collect();
            (errors.list.len() == before).then_some(parsed)
        }
        other => {
            errors.at(
                path,
                format!(
                    "`{path}` must be a list, e.g. `{}: [{{{}: {{}}}}]`, got {}",
                    kind.noun(),
                    if kind == Kind::Sink { "stdout" } else { "name" },
                    describe(&other)
                ),
            );
            None
        }
    }
}

/// One component: a map with exactly one key, the plugin name, whose value is its settings.
/// `stdout` and `stdout:` (no settings) mean `stdout: {}`.
fn component<T: DeserializeOwned>(
    value: Value,
    path: &str,
    kind: Kind,
    errors: &mut Errors,
) -> Option<T> {
    let value = match value {
        Value::String(name) => tagged(&name, Value::Null),
        Value::Mapping(m) if m.len() == 1 => {
            let Some((Value::String(name), settings)) = m.into_iter().next() else {
                errors.at(
                    path,
                    format!(
                        "`{path}` must name a {} plugin, e.g. `{}`",
                        kind.noun(),
                        example(kind)
                    ),
                );
                return None;
            };
            tagged(&name, settings)
        }
        Value::Mapping(m) if m.is_empty() => {
            errors.at(
                path,
                format!(
                    "`{path}` is empty; name the {} plugin, e.g. `{}`",
                    kind.noun(),
                    example(kind)
                ),
            );
            return None;
        }
        Value::Mapping(m) => {
            let names: Vec<String> = m.keys().map(|k| format!("`{}`", render(k))).collect();
            errors.at(
                path,
                format!(
                    "`{path}` names {} {} plugins ({}); give one plugin per {}",
                    names.len(),
                    kind.noun(),
                    names.join(", "),
                    if matches!(kind, Kind::Sink | Kind::Processor) {
                        "list item"
                    } else {
                        "pipeline"
                    }
                ),
            );
            return None;
        }
        other => {
            errors.at(
                path,
                format!(
                    "`{path}` must name a {} plugin, e.g. `{}`, got {}",
                    kind.noun(),
                    example(kind),
                    describe(&other)
                ),
            );
            return None;
        }
    };
    field(value, path, kind, errors)
}

/// serde_yaml reads an enum from a `Value` only in its `!variant` tagged form, so the one-key
/// map `{file: {path: x}}` becomes `!file {path: x}`. No settings means `{}`.
fn tagged(name: &str, settings: Value) -> Value {
    let settings = if settings.is_null() {
        Value::Mapping(Mapping::new())
    } else {
        settings
    };
    Value::Tagged(Box::new(serde_yaml::value::TaggedValue {
        tag: serde_yaml::value::Tag::new(name),
        value: settings,
    }))
}

fn example(kind: Kind) -> &'static str {
    match kind {
        Kind::Source => "http: {port: 2021}",
        Kind::Buffer => "bounded_blocking: {buffer_size: 12800}",
        Kind::Sink => "stdout: {}",
        Kind::Processor | Kind::Field => "name: {}",
    }
}

/// Deserializes `value`, turning a serde error into a [`ConfigError`] with the full key path.
fn field<T: DeserializeOwned>(
    value: Value,
    path: &str,
    kind: Kind,
    errors: &mut Errors,
) -> Option<T> {
    // serde stops at the first error. To report every bad key of a component at once, drop the
    // key it complained about and try again, up to a bound.
    let mut value = value;
    let mut dropped: Vec<String> = Vec::new();
    for _ in 0..MAX_ERRORS_PER_COMPONENT {
        let e = match serde_path_to_error::deserialize::<_, T>(value.clone()) {
            Ok(v) => return dropped.is_empty().then_some(v),
            Err(e) => e,
        };
        let segments: Vec<Segment> = e.path().iter().cloned().collect();
        let message = e.into_inner().to_string();
        if message.starts_with("missing field")
            && dropped.iter().any(|d| {
                let (missing, _) = quoted_and_expected(&message);
                missing.is_some_and(|m| d == &m || d.starts_with(&m) || m.starts_with(d.as_str()))
            })
        {
            // Caused by a key we dropped, already reported.
            return None;
        }
        // An enum below the component's own fields is a field's value, not a plugin name.
        let nested = segments.iter().any(|s| matches!(s, Segment::Map { .. }));
        let kind = if nested { Kind::Field } else { kind };
        let (at, text) = explain(&render_path(path, &segments), kind, &message);
        errors.at(&at, text);
        let Some(Segment::Map { key }) = segments.last() else {
            return None;
        };
        if (message.starts_with("unknown variant") && !nested) || !remove_at(&mut value, &segments)
        {
            return None;
        }
        dropped.push(key.clone());
    }
    None
}

/// The most errors reported for one component (one source, buffer or sink).
const MAX_ERRORS_PER_COMPONENT: usize = 10;

fn render_path(base: &str, segments: &[Segment]) -> String {
    let mut full = base.to_owned();
    for segment in segments {
        match segment {
            Segment::Seq { index } => full.push_str(&format!("[{index}]")),
            Segment::Map { key } => full = join(&full, key),
            Segment::Enum { variant } => full = join(&full, variant),
            Segment::Unknown => {}
        }
    }
    full
}

/// Removes the map entry at `segments` from `value`; false if there is none.
fn remove_at(value: &mut Value, segments: &[Segment]) -> bool {
    let Some((Segment::Map { key }, parents)) = segments.split_last() else {
        return false;
    };
    let mut here = value;
    for segment in parents {
        here = match (segment, here) {
            (Segment::Map { key }, Value::Mapping(m)) => match m.get_mut(key.as_str()) {
                Some(v) => v,
                None => return false,
            },
            (Segment::Seq { index }, Value::Sequence(items)) => match items.get_mut(*index) {
                Some(v) => v,
                None => return false,
            },
            (Segment::Enum { .. }, Value::Tagged(tagged)) => &mut tagged.value,
            _ => return false,
        };
    }
    match here {
        Value::Mapping(m) => m.remove(key.as_str()).is_some(),
        _ => false,
    }
}

/// Rewrites serde's message into ours: the key path, the plugin kind, a suggestion.
/// Returns the path to point at and the message.
fn explain(path: &str, kind: Kind, serde_message: &str) -> (String, String) {
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
fn misplaced(wrong: &str, parent: &str) -> Option<String> {
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
    if parent.ends_with("buffer.kafka.encryption")
        && matches!(wrong, "type" | "certificate" | "insecure")
    {
        return Some(format!(
            "`{wrong}` is not a field of `encryption` (encryption at rest: `kms`, `key`, \
             `key_file`); TLS to the brokers is `encryption_in_transit: {{type: ssl, certificate: ca.pem}}`, \
             Data Prepper's `encryption: {{type: ssl}}`"
        ));
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

fn unknown_field(wrong: &str, parent: &str, fields: &[&str]) -> String {
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

fn list(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// From "unknown field `x`, expected one of `a`, `b`": (`x`, [`a`, `b`]).
fn quoted_and_expected(message: &str) -> (Option<String>, Vec<String>) {
    let mut quoted = message.split('`').skip(1).step_by(2).map(str::to_owned);
    let first = quoted.next();
    (first, quoted.collect())
}

fn render(value: &Value) -> String {
    serde_yaml::to_string(value)
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

fn describe(value: &Value) -> String {
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

/// Rules that span fields and pipelines.
fn validate(pipelines: &[Pipeline], errors: &mut Errors, context: Context<'_>) {
    let mut ports: HashMap<u16, &str> = HashMap::new();
    for p in pipelines {
        let name = p.name.as_str();
        if p.workers == 0 {
            errors.at(
                &join(name, "workers"),
                format!("`{name}.workers` must be at least 1"),
            );
        }
        match &p.buffer {
            Buffer::BoundedBlocking(b) => {
                let path = join(name, "buffer.bounded_blocking");
                if b.buffer_size == 0 {
                    errors.at(
                        &join(&path, "buffer_size"),
                        format!("`{path}.buffer_size` must be at least 1"),
                    );
                }
                if b.batch_size == 0 {
                    errors.at(
                        &join(&path, "batch_size"),
                        format!("`{path}.batch_size` must be at least 1"),
                    );
                } else if b.batch_size > b.buffer_size && b.buffer_size > 0 {
                    errors.at(
                        &join(&path, "batch_size"),
                        format!(
                            "`{path}.batch_size` ({}) is larger than `buffer_size` ({}); a batch cannot be larger than the buffer",
                            b.batch_size, b.buffer_size
                        ),
                    );
                }
            }
            Buffer::Kafka(_) => {}
        }
        if let (SourceKind::Pull, Buffer::Kafka(_)) = (p.source.kind(), &p.buffer) {
            let source = p.source.plugin_name();
            errors.at(
                &join(name, "buffer.kafka"),
                format!(
                    "source `{source}` pulls its data and cannot use the kafka buffer; use \
                     bounded_blocking, or a push source such as http"
                ),
            );
        }
        if let Buffer::Kafka(kafka) = &p.buffer {
            check_kafka(kafka, &join(name, "buffer.kafka"), errors);
        }
        match &p.source {
            Source::File(file) => {
                let path = join(name, "source.file");
                check_deserializer(
                    &file.deserializer,
                    &join(&path, "deserializer"),
                    errors,
                    context,
                );
            }
            Source::Http(http) => {
                let path = join(name, "source.http");
                if let Some(other) = ports.insert(http.port, name) {
                    errors.at(
                        &join(&path, "port"),
                        format!(
                            "`{path}.port` {} is already used by pipeline `{other}`; give each http source its own port",
                            http.port
                        ),
                    );
                }
                if !http.path.starts_with('/') {
                    errors.at(
                        &join(&path, "path"),
                        format!("`{path}.path` must start with `/`, e.g. `/log/ingest`"),
                    );
                }
                if http.max_connection_count == 0 {
                    errors.at(
                        &join(&path, "max_connection_count"),
                        format!("`{path}.max_connection_count` must be at least 1"),
                    );
                }
                for (key, value) in [
                    ("header_read_timeout", http.header_read_timeout),
                    ("idle_timeout", http.idle_timeout),
                ] {
                    if value.is_zero() {
                        errors.at(
                            &join(&path, key),
                            format!("`{path}.{key}` must be more than zero"),
                        );
                    }
                }
                check_deserializer(
                    &http.deserializer,
                    &join(&path, "deserializer"),
                    errors,
                    context,
                );
            }
        }
    }
}

fn check_deserializer(
    d: &DeserializerConfig,
    path: &str,
    errors: &mut Errors,
    context: Context<'_>,
) {
    if d.timeout.is_zero() {
        errors.at(
            &join(path, "timeout"),
            format!("`{path}.timeout` must be more than zero"),
        );
    }
    if d.max_memory.bytes() < 1 << 20 {
        errors.at(
            &join(path, "max_memory"),
            format!("`{path}.max_memory` must be at least `1mb`"),
        );
    }
    let Some(known) = context.deserializers else {
        return;
    };
    if known.contains(&d.name) {
        return;
    }
    let names: Vec<&str> = known.iter().map(String::as_str).collect();
    let hint = match closest(&d.name, names.iter().copied()) {
        Some(best) => format!(", did you mean `{best}`?"),
        None if names.is_empty() => {
            "; no deserializer plugins are loaded (see `sluice plugins list`)".to_owned()
        }
        None => format!("; the loaded deserializers are {}", list(&names)),
    };
    errors.at(
        path,
        format!("unknown deserializer `{}` in `{path}`{hint}", d.name),
    );
}

fn check_kafka(kafka: &KafkaBuffer, path: &str, errors: &mut Errors) {
    if kafka.bootstrap_servers.is_empty() {
        errors.at(
            &join(path, "bootstrap_servers"),
            format!("`{path}.bootstrap_servers` is empty; list at least one broker, e.g. `[127.0.0.1:9092]`"),
        );
    }
    for (i, server) in kafka.bootstrap_servers.iter().enumerate() {
        let at = format!("{path}.bootstrap_servers[{i}]");
        let port_ok = server
            .rsplit_once(':')
            .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
        if !port_ok {
            errors.at(
                &at,
                format!("`{at}` is `{server}`; write `host:port`, e.g. `127.0.0.1:9092`"),
            );
        }
    }
    if kafka.topics.len() != 1 {
        errors.at(
            &join(path, "topics"),
            format!(
                "the kafka buffer takes exactly one topic, `{path}.topics` has {}; write \
                 `topics: [{{name: ..., group_id: ...}}]`",
                kafka.topics.len()
            ),
        );
    }
    if let Some(KafkaAuthentication { sasl: Some(sasl) }) = &kafka.authentication
        && sasl.count() != 1
    {
        errors.at(
            &join(path, "authentication.sasl"),
            format!(
                "`{path}.authentication.sasl` needs exactly one of `plain`, `scram_sha_256` or \
                 `scram_sha_512`, got {}",
                sasl.count()
            ),
        );
    }
    if let Some(KafkaAuthentication { sasl: None }) = &kafka.authentication {
        errors.at(
            &join(path, "authentication"),
            format!(
                "`{path}.authentication` needs `sasl`, e.g. \
                 `authentication: {{sasl: {{plain: {{username: ..., password: ...}}}}}}`"
            ),
        );
    }
    if let Some(e) = &kafka.encryption {
        let at = join(path, "encryption");
        let given = [e.kms.is_some(), e.key.is_some(), e.key_file.is_some()]
            .iter()
            .filter(|g| **g)
            .count();
        if given != 1 {
            errors.at(
                &at,
                format!("`{at}` needs exactly one of `kms`, `key` or `key_file`, got {given}"),
            );
        }
        if let Some(key) = &e.key {
            use base64::Engine as _;
            match base64::engine::general_purpose::STANDARD.decode(key.0.trim()) {
                Ok(bytes) if bytes.len() == 32 => {}
                Ok(bytes) => errors.at(
                    &join(&at, "key"),
                    format!(
                        "`{at}.key` decodes to {} bytes; an AES-256 key is 32 (e.g. `openssl rand -base64 32`)",
                        bytes.len()
                    ),
                ),
                Err(_) => errors.at(
                    &join(&at, "key"),
                    format!("`{at}.key` is not base64; write 32 random bytes in base64 (e.g. `openssl rand -base64 32`)"),
                ),
            }
        }
        if let Some(kms) = &e.kms
            && kms.data_key_lifetime.is_zero()
        {
            errors.at(
                &join(&at, "kms.data_key_lifetime"),
                format!("`{at}.kms.data_key_lifetime` must be more than zero"),
            );
        }
    }
    if kafka.max_request_size.bytes() < 1024 {
        errors.at(
            &join(path, "max_request_size"),
            format!("`{path}.max_request_size` must be at least `1kb`"),
        );
    }
    if kafka.produce_timeout.is_zero() {
        errors.at(
            &join(path, "produce_timeout"),
            format!("`{path}.produce_timeout` must be more than zero"),
        );
    }
    for (i, topic) in kafka.topics.iter().enumerate() {
        let at = format!("{path}.topics[{i}]");
        if topic.max_poll_interval < topic.session_timeout {
            errors.at(
                &join(&at, "max_poll_interval"),
                format!(
                    "`{at}.max_poll_interval` ({}) must be at least `session_timeout` ({}), as Kafka requires",
                    humantime::format_duration(topic.max_poll_interval),
                    humantime::format_duration(topic.session_timeout)
                ),
            );
        }
        if let Some(id) = &topic.group_instance_id {
            let at = join(&at, "group_instance_id");
            if !topic.static_membership {
                errors.at(
                    &at,
                    format!("`{at}` is set but `static_membership` is false; remove one of them"),
                );
            } else if id.is_empty()
                || id.len() > 200
                || !id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
            {
                errors.at(
                    &at,
                    format!(
                        "`{at}` is `{id}`; write 1 to 200 letters, digits, `.`, `_` or `-` (e.g. the pod name)"
                    ),
                );
            }
        }
        for (field, value) in [("name", &topic.name), ("group_id", &topic.group_id)] {
            if value.trim().is_empty() {
                errors.at(
                    &join(&at, field),
                    format!("`{at}.{field}` must not be empty"),
                );
            }
        }
        for (field, value) in [
            ("workers", topic.workers as i64),
            (
                "number_of_partitions",
                i64::from(topic.number_of_partitions),
            ),
            ("replication_factor", i64::from(topic.replication_factor)),
            ("max_poll_records", topic.max_poll_records as i64),
        ] {
            if value < 1 {
                errors.at(
                    &join(&at, field),
                    format!("`{at}.{field}` must be at least 1"),
                );
            }
        }
    }
    for (field, properties, client) in [
        (
            "producer_properties",
            &kafka.producer_properties,
            KafkaClient::Producer,
        ),
        (
            "consumer_properties",
            &kafka.consumer_properties,
            KafkaClient::Consumer,
        ),
    ] {
        for key in properties.keys() {
            if let Some(instead) = owned_property(client, key) {
                errors.at(
                    &join(path, field),
                    format!(
                        "`{key}` in `{path}.{field}` is set by sluice and cannot be overridden: \
                         {instead}; remove it"
                    ),
                );
            }
        }
    }
}
