//! The `processor`s of a pipeline, in Data Prepper's shape: a list of one-key maps, the key the
//! plugin's name (its file stem in the plugin folder), the value its options:
//!
//! ```yaml
//! processor:
//!   - redact:
//!       keys: ["password"]
//!   - my_enricher:          # no options
//! ```
//!
//! Processors run in order on every event between the deserializer and the sinks. A name is
//! a built-in processor's (the list [`for_each_processor!`](crate::for_each_processor): Data
//! Prepper's processors with its keys, one file each here), else a plugin's.
//!
//! Three keys of the block are sluice's, not the plugin's: the sandbox limits `max_memory`,
//! `timeout` and `recycle_after`, as a deserializer has them (same defaults). Every other key is
//! an option for the plugin's `configure`.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::Deserializer;

use crate::component::{WithPlugins, kind_enum};
use crate::error::{Errors, closest};
use crate::explain::list;
use crate::limits::{PluginLimits, take_limits};
use crate::location::join;

/// The built-in processors, one line each: `Variant(config type) = "name in the file"`, its
/// doc the user doc. This one list makes [`BuiltinProcessor`] (its variants, names and rules,
/// here) and the processors crate's builder; adding a processor is its config file (in
/// `processor/`), its runtime file (`sluice-processors`) and a line here. Every other name is a
/// plugin's; a plugin in the plugin folder with a built-in's name replaces the built-in.
#[macro_export]
macro_rules! for_each_processor {
    ($m:ident $($prefix:tt)*) => {
        $m! {
            $($prefix)*
            /// Adds keys or metadata attributes.
            AddEntries($crate::processor::add_entries::AddEntries) = "add_entries",
            /// Removes keys.
            DeleteEntries($crate::processor::delete_entries::DeleteEntries) = "delete_entries",
            /// Moves values to new keys.
            RenameKeys($crate::processor::rename_keys::RenameKeys) = "rename_keys",
            /// Copies values to other keys.
            CopyValues($crate::processor::copy_values::CopyValues) = "copy_values",
            /// Keeps only the given keys.
            SelectEntries($crate::processor::select_entries::SelectEntries) = "select_entries",
            /// Drops the events a condition selects.
            DropEvents($crate::processor::drop_events::DropEvents) = "drop_events",
            /// Lowercases text values.
            LowercaseString($crate::processor::with_keys::LowercaseString) = "lowercase_string",
            /// Uppercases text values.
            UppercaseString($crate::processor::with_keys::UppercaseString) = "uppercase_string",
            /// Trims white space from both ends of text values.
            TrimString($crate::processor::with_keys::TrimString) = "trim_string",
            /// Replaces regular expression matches in text values.
            SubstituteString($crate::processor::substitute_string::SubstituteString) = "substitute_string",
            /// Splits text values into lists.
            SplitString($crate::processor::split_string::SplitString) = "split_string",
            /// Captures named parts of text with grok patterns.
            Grok($crate::processor::grok::Grok) = "grok",
            /// Reads dates with Java patterns and writes them formatted.
            Date($crate::processor::date::Date) = "date",
            /// Flattens nested objects into one level of joined keys.
            Flatten($crate::processor::flatten::Flatten) = "flatten",
            /// Turns a list of objects into an object keyed by a field of each.
            ListToMap($crate::processor::list_to_map::ListToMap) = "list_to_map",
            /// Turns an object into a list of its entries.
            MapToList($crate::processor::map_to_list::MapToList) = "map_to_list",
            /// Converts values to another type (integer, long, double, boolean, string).
            ConvertType($crate::processor::convert_entry_type::ConvertEntryType) = "convert_type",
            /// `convert_type` under its deprecated name.
            ConvertEntryType($crate::processor::convert_entry_type::ConvertEntryType) = "convert_entry_type",
            /// Keeps part of text values.
            Truncate($crate::processor::truncate::Truncate) = "truncate",
            /// Masks or hashes values, or the parts of them that patterns match.
            Obfuscate($crate::processor::obfuscate::Obfuscate) = "obfuscate",
            /// Parses JSON text into the event.
            ParseJson($crate::processor::parse_json::ParseJson) = "parse_json",
            /// Parses a line of comma-separated values into keys.
            Csv($crate::processor::csv::Csv) = "csv",
            /// Parses `key=value` pairs from text into an object.
            KeyValue($crate::processor::key_value::KeyValue) = "key_value",
            /// Fills each span's trace group from its trace's root span (keeps spans).
            OtelTraces($crate::processor::otel_traces::OtelTraces) = "otel_traces",
            /// `otel_traces` under its deprecated name.
            OtelTraceRaw($crate::processor::otel_traces::OtelTraces) = "otel_trace_raw",
            /// Turns OpenTelemetry spans into service map relationships, once per window.
            ServiceMap($crate::processor::service_map::ServiceMap) = "service_map",
            /// `service_map` under its deprecated name.
            ServiceMapStateful($crate::processor::service_map::ServiceMap) = "service_map_stateful",
            /// Groups events by keys and merges, counts, samples or de-duplicates each group.
            Aggregate($crate::processor::aggregate::Aggregate) = "aggregate",
            /// Makes one event per part of a text value or element of a list.
            SplitEvent($crate::processor::split_event::SplitEvent) = "split_event",
            /// Upper- or lowercases the text values at the top level.
            StringConverter($crate::processor::string_converter::StringConverter) = "string_converter",
            /// Writes a value as JSON text.
            WriteJson($crate::processor::write_json::WriteJson) = "write_json",
            /// Replaces occurrences of a text in text values.
            ReplaceString($crate::processor::replace_string::ReplaceString) = "replace_string",
            /// Wraps each element of a list into an object of one key.
            WrapEntries($crate::processor::wrap_entries::WrapEntries) = "wrap_entries",
            /// Keeps the elements of a list a condition selects.
            FilterList($crate::processor::filter_list::FilterList) = "filter_list",
            /// Waits before each batch (testing, debugging).
            Delay($crate::processor::delay::Delay) = "delay",
            /// Lets at most so many events a second through, dropping or holding the rest.
            RateLimiter($crate::processor::rate_limiter::RateLimiter) = "rate_limiter",
            /// Splits text into keys at the literal text between a pattern's `%{fields}`.
            Dissect($crate::processor::dissect::Dissect) = "dissect",
            /// Looks values up in maps, number ranges and regular expressions and writes what they map to.
            Translate($crate::processor::translate::Translate) = "translate",
            /// Parses a user agent string into browser, version, operating system and device.
            UserAgent($crate::processor::user_agent::UserAgent) = "user_agent",
            /// Parses XML text into the event.
            ParseXml($crate::processor::parse_xml::ParseXml) = "parse_xml",
            /// Decompresses base64 text of gzip bytes.
            Decompress($crate::processor::decompress::Decompress) = "decompress",
            /// Makes each OTLP metric data point Data Prepper's metric document.
            OtelMetrics($crate::processor::otel_metrics::OtelMetrics) = "otel_metrics",
            /// `otel_metrics` under its deprecated name.
            OtelMetricsRawProcessor($crate::processor::otel_metrics::OtelMetrics) = "otel_metrics_raw_processor",
            /// Accepted, and passes events on: a Kafka buffer already keys OTLP trace exports by trace id.
            TracePeerForwarder($crate::processor::trace_peer_forwarder::TracePeerForwarder) = "trace_peer_forwarder",
            /// Adds where an IP address is, from MaxMind databases.
            Geoip($crate::processor::geoip::GeoIp) = "geoip",
        }
    };
}

pub mod add_entries;
pub mod aggregate;
pub mod convert_entry_type;
pub mod copy_values;
pub mod csv;
pub mod date;
pub mod decompress;
pub mod delay;
pub mod delete_entries;
pub mod dissect;
pub mod drop_events;
pub mod filter_list;
pub mod flatten;
pub mod geoip;
pub mod grok;
pub mod key_value;
pub mod list_to_map;
pub mod map_to_list;
pub mod obfuscate;
pub mod otel_metrics;
pub mod otel_traces;
pub mod parse_json;
pub mod parse_xml;
pub mod rate_limiter;
pub mod rename_keys;
pub mod replace_string;
pub mod select_entries;
pub mod service_map;
pub mod split_event;
pub mod split_string;
pub mod string_converter;
pub mod substitute_string;
pub mod trace_peer_forwarder;
pub mod translate;
pub mod truncate;
pub mod user_agent;
pub mod with_keys;
pub mod wrap_entries;
pub mod write_json;

crate::for_each_processor! {
    kind_enum
    /// A built-in processor (see [`for_each_processor!`](crate::for_each_processor)).
    pub enum BuiltinProcessor: dyn ProcessorConfig;
}

/// Each key of `keys` that is given must not be the event's root (empty or `/`); `what`
/// ends the message (`the key of the list`).
pub(crate) fn check_not_root(
    path: &str,
    keys: [(&str, Option<&sluice_event::Key>); 2],
    what: &str,
    errors: &mut Errors,
) {
    for (name, key) in keys {
        if key.is_some_and(sluice_event::Key::is_root) {
            let at = join(path, name);
            errors.at(&at, format!("`{at}` is empty or `/`; write {what}"));
        }
    }
}

/// A key of Data Prepper's that sluice does not support yet: any value is an error naming it,
/// so a pipeline never runs with an option silently ignored.
#[derive(Debug, Clone)]
pub struct Unsupported;

impl<'de> Deserialize<'de> for Unsupported {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(deserializer)?;
        Err(serde::de::Error::custom(
            "this Data Prepper option is not supported by sluice yet; remove it",
        ))
    }
}

/// sluice's bound on what one stateful processor holds (`max_held_events`, not Data
/// Prepper's): its default.
pub(crate) const fn default_max_held_events() -> usize {
    100_000
}

/// A stateful processor's `max_held_events` at `path`: at least one.
pub(crate) fn check_max_held_events(value: usize, path: &str, errors: &mut Errors) {
    if value == 0 {
        let key = join(path, "max_held_events");
        errors.at(
            &key,
            format!(
                "`{key}` is 0; it must be at least 1 (default {})",
                default_max_held_events()
            ),
        );
    }
}

/// Checks that each of `regexes` compiles; `path` is their key.
pub(crate) fn regexes(regexes: &[String], path: &str, errors: &mut Errors) {
    for regex in regexes {
        if let Err(e) = regex::Regex::new(regex) {
            errors.at(
                path,
                format!("`{path}`: regular expression `{regex}` does not compile: {e}"),
            );
        }
    }
}

/// A built-in processor's own rules; each config type of the list implements it.
pub(crate) trait ProcessorConfig {
    /// Checks the processor's rules; `path` is its key path
    /// (`<pipeline>.processor[i].<name>`).
    fn check(&self, _path: &str, _errors: &mut Errors) {}
}

/// One processor: a built-in, or a plugin from the plugin folder.
#[derive(Debug, Clone)]
pub enum Processor {
    /// Boxed: a built-in's options are larger than a plugin's block.
    Builtin(Box<BuiltinProcessor>),
    Plugin(PluginProcessor),
}

impl Processor {
    /// The processor's name, as written in the file.
    pub fn plugin_name(&self) -> &str {
        match self {
            Processor::Builtin(b) => b.plugin_name(),
            Processor::Plugin(p) => &p.name,
        }
    }
}

/// A processor plugin.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginProcessor {
    /// The plugin's name: the file stem of its `.wasm` file in the plugin folder.
    pub name: String,
    /// Options passed to the plugin's `configure` export once per instance.
    pub options: BTreeMap<String, serde_yaml::Value>,
    /// Its sandbox limits: the block's `max_memory`, `timeout` and `recycle_after`.
    pub limits: PluginLimits,
}

impl PluginProcessor {
    /// The plugin resolved, as the pipeline starts it.
    pub fn settings(&self) -> crate::limits::PluginSettings {
        crate::limits::PluginSettings::new(&self.name, &self.options, self.limits)
    }
}

/// Read from the parser's tagged form of `- name: {options}` (the name is the tag), like every
/// component: a built-in's name reads its own shape; any other is a plugin's, checked against
/// the loaded plugins by `validate`.
impl<'de> Deserialize<'de> for Processor {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        crate::component::deserialize_with_plugins(deserializer, "processor")
    }
}

impl WithPlugins for Processor {
    type Builtin = BuiltinProcessor;
    fn expecting() -> String {
        "a processor: its plugin's name, then its options".to_owned()
    }
    fn builtin(builtin: BuiltinProcessor) -> Self {
        Processor::Builtin(Box::new(builtin))
    }
    fn plugin(
        name: String,
        mut options: BTreeMap<String, serde_yaml::Value>,
    ) -> Result<Self, String> {
        let limits = take_limits(&mut options)?;
        Ok(Processor::Plugin(PluginProcessor {
            name,
            options,
            limits,
        }))
    }
}

/// Builds a built-in processor to find what only building can (grok patterns compiled,
/// pattern files read): the key inside its block at fault and why. The processors crate gives
/// it to validation ([`Context::builtins`](crate::Context::builtins)).
pub type CheckBuiltin = fn(&BuiltinProcessor) -> Result<(), (String, String)>;

/// A processor's rules: a built-in's own, and what building it finds (`builtins`); or a
/// plugin's: it must be one of the loaded `plugins`. `None` skips either check. `path` is its
/// key path (`<pipeline>.processor[<i>]`).
pub(crate) fn check_processor(
    p: &Processor,
    path: &str,
    errors: &mut Errors,
    plugins: Option<&[String]>,
    builtins: Option<CheckBuiltin>,
) {
    match p {
        Processor::Builtin(b) => {
            let path = join(path, b.plugin_name());
            let before = errors.list.len();
            b.config().check(&path, errors);
            if let (true, Some(check)) = (errors.list.len() == before, builtins)
                && let Err((key, message)) = check(b)
            {
                let at = join(&path, &key);
                errors.at(&at, format!("`{at}`: {message}"));
            }
        }
        Processor::Plugin(p) => check_plugin(p, path, errors, plugins),
    }
}

fn check_plugin(p: &PluginProcessor, path: &str, errors: &mut Errors, plugins: Option<&[String]>) {
    let Some(known) = plugins else {
        return;
    };
    if known.contains(&p.name) {
        return;
    }
    let names: Vec<&str> = BuiltinProcessor::NAMES
        .iter()
        .copied()
        .chain(known.iter().map(String::as_str))
        .collect();
    let hint = match closest(&p.name, names.iter().copied()) {
        Some(best) => format!(", did you mean `{best}`?"),
        None => format!(
            ": it is neither one of Data Prepper's processors built into sluice ({}) nor a plugin in the plugin folder (`sluice plugins list`)",
            list(BuiltinProcessor::NAMES)
        ),
    };
    errors.at(
        path,
        format!("unknown processor `{}` in `{path}`{hint}", p.name),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Context;

    /// The first processor of a pipeline whose `processor:` list is `list`.
    fn parse(list: &str) -> Result<PluginProcessor, String> {
        let yaml =
            format!("p:\n  source:\n    http:\n  processor:\n{list}  sink:\n    - stdout:\n");
        let processor = crate::parse("t.yaml", &yaml, Context::default())
            .map(|mut config| config.pipelines.remove(0).processor.remove(0))
            .map_err(|e| e.to_string())?;
        match processor {
            Processor::Plugin(p) => Ok(p),
            Processor::Builtin(b) => Err(format!("`{}` is built in", b.plugin_name())),
        }
    }

    #[test]
    fn the_limit_keys_are_sluices_and_the_rest_go_to_the_plugin() {
        let p = parse(
            "    - redact:\n        keys: [a]\n        max_memory: 128mb\n        timeout: 2500ms\n        recycle_after: 5\n",
        )
        .unwrap();
        assert_eq!(p.name, "redact");
        assert_eq!(
            p.settings().options,
            [("keys".to_owned(), "[\"a\"]".to_owned())]
        );
        assert_eq!(p.limits.max_memory, crate::ByteSize::mib(128));
        assert_eq!(p.limits.timeout, std::time::Duration::from_millis(2500));
        assert_eq!(p.limits.recycle_after, 5);
    }

    #[test]
    fn without_limit_keys_a_processor_gets_a_deserializers_defaults() {
        let p = parse("    - passthrough:\n").unwrap();
        assert!(p.options.is_empty());
        assert_eq!(p.limits, PluginLimits::default());
    }

    #[test]
    fn a_plugin_with_a_built_ins_name_replaces_it_with_its_block_as_options() {
        let yaml = "p:\n  source:\n    http:\n  processor:\n    - grok:\n        anything: [1]\n    - trim_string:\n        with_keys: [a]\n  sink:\n    - stdout:\n";
        let plugins = [
            "json".to_owned(),
            "grok".to_owned(),
            "trim_string".to_owned(),
        ];
        // `trim_string` is a deserializer here: it replaces no processor.
        let processors = ["grok".to_owned()];
        let context = Context {
            deserializers: Some(&plugins),
            processors: Some(&processors),
            ..Context::default()
        };
        let mut config = crate::parse("t.yaml", yaml, context).unwrap();
        let mut list = config.pipelines.remove(0).processor.into_iter();
        match list.next() {
            Some(Processor::Plugin(p)) => {
                assert_eq!(p.name, "grok");
                assert_eq!(
                    p.settings().options,
                    [("anything".to_owned(), "[1]".to_owned())]
                );
            }
            other => panic!("the plugin, not the built-in: {other:?}"),
        }
        assert!(
            matches!(list.next(), Some(Processor::Builtin(_))),
            "no processor plugin of that name"
        );
    }

    #[test]
    fn a_bad_limit_names_its_key() {
        let err = parse("    - redact:\n        timeout: soon\n").unwrap_err();
        assert!(
            err.contains("invalid value for `p.processor[0]`: `timeout`: "),
            "{err}"
        );
    }
}
