//! Text → [`Config`]: YAML syntax, then each pipeline field on its own (so one bad field does
//! not hide the next), each component deserialized strictly through `serde_path_to_error`;
//! then `validate`. Every error is collected; the caller gets all of them at once,
//! sorted by line. How a serde error is worded for the user is `explain`'s job.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_path_to_error::Segment;
use serde_yaml::{Mapping, Value};
use std::time::Duration;

use crate::component::{WithPlugins, tagged};
use crate::context::Context;
use crate::error::{ConfigError, ConfigErrors, Errors};
use crate::explain::{Kind, describe, explain, quoted_and_expected, render, unknown_field};
use crate::location::{LocationIndex, join};
use crate::pipeline::{PIPELINE_FIELDS, default_delay, default_workers};
use crate::pipeline::{RoutedSink, SinkContext};
use crate::units;
use crate::{Buffer, BuiltinProcessor, Config, Pipeline, Processor, Sink};

/// Parses and validates a pipeline file. `file` is only used in messages.
pub fn parse(file: &str, text: &str, context: Context<'_>) -> Result<Config, ConfigErrors> {
    let mut errors = Errors {
        index: LocationIndex::new(text),
        list: Vec::new(),
        files: !context.no_environment,
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
                environment: false,
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
    // Pipelines that are in the file but were refused: others naming them are not told
    // a second time that no such pipeline exists.
    let mut refused = Vec::new();
    for (name, body) in root {
        let Some(name) = name.as_str().map(str::to_owned) else {
            errors.at(
                "",
                format!("pipeline names must be text, got `{}`", render(&name)),
            );
            continue;
        };
        match name.as_str() {
            "version" => {
                crate::extension::check_version(&name, &body, errors);
                continue;
            }
            "extension" | "pipeline_configurations" => {
                crate::extension::check_extensions(&name, &body, errors);
                continue;
            }
            _ => {}
        }
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
            Value::Mapping(body) => match parse_pipeline(&name, body, errors, context) {
                Some(p) => pipelines.push(p),
                None => refused.push(name),
            },
            _ => {
                errors.at(
                    &name,
                    format!("pipeline `{name}` must be a map with `source`, `buffer`, `processor` and `sink`"),
                );
                refused.push(name);
            }
        }
    }
    crate::validate::validate(&pipelines, &refused, errors, context);
    Some(Config { pipelines })
}

fn parse_pipeline(
    name: &str,
    body: Mapping,
    errors: &mut Errors,
    context: Context<'_>,
) -> Option<Pipeline> {
    let before = errors.list.len();
    let mut workers = default_workers();
    let mut delay = default_delay();
    let mut source = None;
    let mut buffer = Buffer::default();
    let mut processor = Vec::new();
    let mut sink = Vec::new();
    let mut route = Vec::new();
    let mut route_key: Option<String> = None;
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
            "processor" => set(&mut processor, processors(value, &path, errors, context)),
            "route" | "routes" => {
                if let Some(first) = route_key.replace(key.to_owned()) {
                    errors.at(
                        &path,
                        format!("pipeline `{name}` has both `{first}` and `{key}`; they are the same list, keep one"),
                    );
                }
                set(&mut route, crate::route::routes(value, &path, errors));
            }
            "sink" => set(&mut sink, sinks(value, &path, errors)),
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
        route,
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

/// The `processor` list: components, except that a built-in's name that is also a processor
/// plugin's (in the plugin folder) is the plugin: a user's component replaces the built-in.
/// A plugin of another kind with that name replaces nothing.
fn processors(
    value: Value,
    path: &str,
    errors: &mut Errors,
    context: Context<'_>,
) -> Option<Vec<Processor>> {
    let plugins = context.processors.unwrap_or_default();
    let Value::Sequence(items) = value else {
        return components(value, path, Kind::Processor, errors);
    };
    let before = errors.list.len();
    let mut parsed = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let path = format!("{path}[{i}]");
        let replaced = match &item {
            Value::Mapping(m) if m.len() == 1 => m
                .iter()
                .next()
                .and_then(|(name, block)| Some((name.as_str()?, block)))
                .filter(|(name, _)| {
                    BuiltinProcessor::NAMES.contains(name) && plugins.iter().any(|p| p == name)
                }),
            _ => None,
        };
        let processor = match replaced {
            Some((name, block)) => {
                let block = match field(block.clone(), &join(&path, name), Kind::Field, errors) {
                    Some(Some(block)) => block,
                    Some(None) => Default::default(),
                    None => continue,
                };
                match <Processor as WithPlugins>::plugin(name.to_owned(), block) {
                    Ok(p) => Some(p),
                    Err(e) => {
                        errors.at(&path, format!("invalid value for `{path}`: {e}"));
                        None
                    }
                }
            }
            None => component(item, &path, Kind::Processor, errors),
        };
        parsed.extend(processor);
    }
    (errors.list.len() == before).then_some(parsed)
}

/// The `sink` list: each sink's block holds the keys every sink takes ([`SinkContext`]:
/// `routes`, `tags_target_key`, ...) beside its own; they are read apart.
fn sinks(value: Value, path: &str, errors: &mut Errors) -> Option<Vec<RoutedSink>> {
    let Value::Sequence(items) = value else {
        return components::<Sink>(value, path, Kind::Sink, errors)
            .map(|list| list.into_iter().map(RoutedSink::from).collect());
    };
    let before = errors.list.len();
    let mut parsed = Vec::with_capacity(items.len());
    for (i, mut item) in items.into_iter().enumerate() {
        let path = format!("{path}[{i}]");
        let mut taken = Mapping::new();
        let mut block_path = path.clone();
        if let Value::Mapping(m) = &mut item
            && m.len() == 1
            && let Some((Value::String(name), Value::Mapping(block))) = m.iter_mut().next()
        {
            block_path = join(&path, name);
            for key in SinkContext::KEYS {
                if let Some(v) = block.remove(*key) {
                    taken.insert(Value::String((*key).to_owned()), v);
                }
            }
        }
        let context = if taken.is_empty() {
            Some(SinkContext::default())
        } else {
            field::<SinkContext>(Value::Mapping(taken), &block_path, Kind::Field, errors)
        };
        let sink = component::<Sink>(item, &path, Kind::Sink, errors);
        if let (Some(sink), Some(context)) = (sink, context) {
            parsed.push(RoutedSink { sink, context });
        }
    }
    (errors.list.len() == before).then_some(parsed)
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
