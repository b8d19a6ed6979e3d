//! `aggregate`: groups events by the values of `identification_keys` and runs one action on
//! each group (merge, count, histogram, sample, rate-limit, de-duplicate), as Data Prepper's
//! `AggregateProcessorConfig` and its actions' configs. A group concludes `group_duration`
//! after its first event (`tail_sampler`: `wait_period` after its last).

use std::fmt;
use std::time::Duration;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use sluice_event::{Expression, Key};

use super::ProcessorConfig;
use crate::error::Errors;
use crate::explain::list;
use crate::location::join;

/// ```yaml
/// - aggregate:
///     identification_keys: ["sourceIp", "destinationIp"]
///     action:
///       count:
///         output_format: raw
///     group_duration: 60s
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Aggregate {
    /// The keys whose values make a group (a missing key is `null`). Required, at least one.
    pub identification_keys: Vec<String>,
    /// What is done with each group: exactly one action. Required.
    pub action: Action,
    /// How long a group lasts from its first event. Default `180s` (`60s`, `1500ms`, or
    /// ISO-8601 `PT3M`).
    #[serde(
        default = "default_group_duration",
        deserialize_with = "crate::units::duration"
    )]
    pub group_duration: Duration,
    /// Aggregate on this node only, without peer forwarding. Default false. sluice has no
    /// peer forwarding: every instance aggregates what it reads either way.
    #[serde(default)]
    pub local_mode: bool,
    /// Also let every event go on as it came (the action's events are added, not instead).
    /// Needs `aggregated_events_tag`. Default false.
    #[serde(default)]
    pub output_unaggregated_events: bool,
    /// A tag added to every event the action makes, to tell them from the unaggregated ones.
    /// Default none.
    #[serde(default)]
    pub aggregated_events_tag: Option<String>,
    /// Aggregate only the events for which this condition is true; the others go on
    /// unchanged. Default none (all).
    #[serde(default, deserialize_with = "crate::event::opt_condition")]
    pub aggregate_when: Option<Expression>,
    /// Release the acknowledgements of a group's events when it concludes. Default false.
    /// sluice always releases them when the group concludes, once what it made is in the
    /// sinks.
    #[serde(default)]
    pub acknowledge_on_conclude: bool,
    /// Do not tie the events' acknowledgements to their group: an event is acknowledged as
    /// soon as the group took it (a `tail_sampler` group keeps the events themselves, so its
    /// events still are when they leave). Default false.
    #[serde(default)]
    pub disable_group_acknowledgments: bool,
    /// sluice's, not Data Prepper's: how many events the open groups may hold (each open group
    /// counts at least one). Past it the oldest groups conclude early, as they would at their
    /// time. Default 100000.
    #[serde(default = "super::default_max_held_events")]
    pub max_held_events: usize,
}

/// Data Prepper's `DEFAULT_GROUP_DURATION_SECONDS`.
fn default_group_duration() -> Duration {
    Duration::from_secs(180)
}

/// The aggregate actions, each with its options (Data Prepper's `AggregateAction` plugins).
#[derive(Debug, Clone)]
pub enum Action {
    /// `put_all`: one event per group, the events' keys merged (later values win).
    PutAll,
    /// `remove_duplicates`: a group's first event goes on, the others are dropped.
    RemoveDuplicates,
    /// `count`: one event per group with how many events it had.
    Count(Count),
    /// `histogram`: one event per group with a histogram of a key's values.
    Histogram(Histogram),
    /// `rate_limiter`: at most `events_per_second` events go on.
    RateLimiter(RateLimiter),
    /// `percent_sampler`: a share of each group's events goes on.
    PercentSampler(PercentSampler),
    /// `tail_sampler`: a group's events are kept until it is quiet, then all or none go on.
    TailSampler(TailSampler),
    /// `append`: one event per group, the first event with the others' values appended.
    Append(Append),
}

/// The action names, in the order the docs list them.
pub const ACTIONS: [&str; 8] = [
    "remove_duplicates",
    "put_all",
    "count",
    "histogram",
    "rate_limiter",
    "append",
    "tail_sampler",
    "percent_sampler",
];

/// Data Prepper's actions sluice does not have.
const NOT_YET: [&str; 1] = ["sum"];

impl Action {
    /// Its name in the file.
    pub fn name(&self) -> &'static str {
        match self {
            Action::PutAll => "put_all",
            Action::RemoveDuplicates => "remove_duplicates",
            Action::Count(_) => "count",
            Action::Histogram(_) => "histogram",
            Action::RateLimiter(_) => "rate_limiter",
            Action::PercentSampler(_) => "percent_sampler",
            Action::TailSampler(_) => "tail_sampler",
            Action::Append(_) => "append",
        }
    }
}

/// An action without options: `put_all:` (null) or `put_all: {}`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct NoOptions {}

/// Read from `{name: options}`, exactly one entry; options may be left empty (`put_all:`).
impl<'de> Deserialize<'de> for Action {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Action;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(
                    f,
                    "one action, e.g. `put_all:`; the actions are {}",
                    list(&ACTIONS)
                )
            }
            fn visit_str<E: de::Error>(self, name: &str) -> Result<Action, E> {
                // `action: put_all`: an action without options written as text.
                match name {
                    "put_all" => Ok(Action::PutAll),
                    "remove_duplicates" => Ok(Action::RemoveDuplicates),
                    other => Err(E::custom(unknown_or_options(other))),
                }
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Action, A::Error> {
                let Some(name) = map.next_key::<String>()? else {
                    return Err(de::Error::custom(format!(
                        "no action; write one of {}",
                        list(&ACTIONS)
                    )));
                };
                fn options<'de, A: MapAccess<'de>, T: Deserialize<'de> + Default>(
                    map: &mut A,
                ) -> Result<T, A::Error> {
                    Ok(map.next_value::<Option<T>>()?.unwrap_or_default())
                }
                let action = match name.as_str() {
                    "put_all" => options::<_, NoOptions>(&mut map).map(|_| Action::PutAll)?,
                    "remove_duplicates" => {
                        options::<_, NoOptions>(&mut map).map(|_| Action::RemoveDuplicates)?
                    }
                    "count" => Action::Count(options(&mut map)?),
                    "histogram" => Action::Histogram(map.next_value()?),
                    "rate_limiter" => Action::RateLimiter(map.next_value()?),
                    "percent_sampler" => Action::PercentSampler(map.next_value()?),
                    "tail_sampler" => Action::TailSampler(map.next_value()?),
                    "append" => Action::Append(options(&mut map)?),
                    other => return Err(de::Error::custom(unknown(other))),
                };
                if let Some(second) = map.next_key::<String>()? {
                    return Err(de::Error::custom(format!(
                        "takes exactly one action, got `{}` and `{second}`",
                        action.name()
                    )));
                }
                Ok(action)
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// The message for an action name that is none of [`ACTIONS`].
fn unknown(name: &str) -> String {
    if NOT_YET.contains(&name) {
        format!(
            "the aggregate action `{name}` is not supported by sluice yet; the actions are {}",
            list(&ACTIONS)
        )
    } else {
        format!(
            "unknown aggregate action `{name}`; the actions are {}",
            list(&ACTIONS)
        )
    }
}

/// The message for an action written as text: unknown, or one that needs its options.
fn unknown_or_options(name: &str) -> String {
    if ACTIONS.contains(&name) {
        format!("the aggregate action `{name}` needs its options: `{name}:` then its keys")
    } else {
        unknown(name)
    }
}

/// How `count` and `histogram` write their event (Data Prepper's `OutputFormat`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OutputFormat {
    /// An OpenTelemetry metric event (`SUM`, `HISTOGRAM`), the group's keys under
    /// `attributes`. The default.
    #[default]
    OtelMetrics,
    /// The group's keys and the generated keys at the top level.
    Raw,
}

/// Case-insensitive, as Data Prepper's `fromOptionValue`.
impl<'de> Deserialize<'de> for OutputFormat {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        match text.to_ascii_lowercase().as_str() {
            "otel_metrics" => Ok(OutputFormat::OtelMetrics),
            "raw" => Ok(OutputFormat::Raw),
            _ => Err(de::Error::custom(format!(
                "invalid output format `{text}`; write `otel_metrics` or `raw`"
            ))),
        }
    }
}

/// `count`'s options (`CountAggregateActionConfig`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Count {
    /// The key of the count in a `raw` event. Default `aggr._count` (one key: the `.` does not
    /// nest).
    #[serde(default = "default_count_key")]
    pub count_key: String,
    /// The key of the group's start time: read from each event if it has it (else the time
    /// it was handled), written in a `raw` event. Default `aggr._start_time`.
    #[serde(default = "default_start_time_key")]
    pub start_time_key: String,
    /// The key of the group's end time, read from each event if it has it. Default
    /// `aggr._end_time`.
    #[serde(default = "default_end_time_key")]
    pub end_time_key: String,
    /// `otel_metrics` (default) or `raw`.
    #[serde(default)]
    pub output_format: OutputFormat,
    /// The metric's name (`otel_metrics`). Default `count`.
    #[serde(default = "default_count_metric_name")]
    pub metric_name: String,
    /// Count the distinct combinations of these keys' values instead of the events. Default
    /// none.
    #[serde(default)]
    pub unique_keys: Option<Vec<String>>,
}

impl Default for Count {
    fn default() -> Self {
        Self {
            count_key: default_count_key(),
            start_time_key: default_start_time_key(),
            end_time_key: default_end_time_key(),
            output_format: OutputFormat::default(),
            metric_name: default_count_metric_name(),
            unique_keys: None,
        }
    }
}

fn default_count_key() -> String {
    "aggr._count".to_owned()
}

fn default_start_time_key() -> String {
    "aggr._start_time".to_owned()
}

fn default_end_time_key() -> String {
    "aggr._end_time".to_owned()
}

fn default_count_metric_name() -> String {
    "count".to_owned()
}

/// `histogram`'s options (`HistogramAggregateActionConfig`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Histogram {
    /// The key whose numbers are counted. Required.
    pub key: String,
    /// The unit of those numbers (`seconds`). Required.
    pub units: String,
    /// The buckets' bounds. Required, at least one.
    pub buckets: Vec<f64>,
    /// Also record the least and greatest value. Default false.
    #[serde(default)]
    pub record_minmax: bool,
    /// The prefix of the keys the action makes (`aggr._sum`). Default `aggr._`.
    #[serde(default = "default_generated_key_prefix")]
    pub generated_key_prefix: String,
    /// The metric's name; its key attribute is `<metric_name>_key`. Default `histogram`.
    #[serde(default = "default_histogram_metric_name")]
    pub metric_name: String,
    /// `otel_metrics` (default) or `raw`.
    #[serde(default)]
    pub output_format: OutputFormat,
}

fn default_generated_key_prefix() -> String {
    "aggr._".to_owned()
}

fn default_histogram_metric_name() -> String {
    "histogram".to_owned()
}

/// `rate_limiter`'s options (`RateLimiterAggregateActionConfig`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimiter {
    /// How many events may go on per second (for all groups together). Required, at least 1.
    pub events_per_second: u32,
    /// What happens to the events past the rate: `block` (default) or `drop`.
    #[serde(default)]
    pub when_exceeds: WhenExceeds,
}

/// `rate_limiter`'s `when_exceeds` (Data Prepper's `RateLimiterMode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum WhenExceeds {
    /// Wait for the rate to allow the event (bounded in sluice: see the processor's docs).
    #[default]
    Block,
    /// Drop the event.
    Drop,
}

/// Case-insensitive, as Data Prepper's `fromOptionValue`.
impl<'de> Deserialize<'de> for WhenExceeds {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        match text.to_ascii_lowercase().as_str() {
            "block" => Ok(WhenExceeds::Block),
            "drop" => Ok(WhenExceeds::Drop),
            _ => Err(de::Error::custom(format!(
                "invalid `when_exceeds` `{text}`; write `block` or `drop`"
            ))),
        }
    }
}

/// `percent_sampler`'s options (`PercentSamplerAggregateActionConfig`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PercentSampler {
    /// The share of each group's events that go on, in percent. Required, more than 0 and
    /// less than 100.
    pub percent: f64,
}

/// `tail_sampler`'s options (`TailSamplerAggregateActionConfig`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TailSampler {
    /// How long a group must be without events to conclude, in whole seconds: more than 0,
    /// at most 60. Required.
    #[serde(deserialize_with = "crate::units::duration")]
    pub wait_period: Duration,
    /// The chance in percent that a group without an error goes on. Required, more than 0
    /// and less than 100.
    pub percent: i32,
    /// What makes an event an error: a group with one always goes on. Default none.
    #[serde(default, deserialize_with = "crate::event::opt_condition")]
    pub condition: Option<Expression>,
}

/// `append`'s options (`AppendAggregateActionConfig`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Append {
    /// The (top-level) keys whose values are appended. Default none: every key.
    #[serde(default)]
    pub keys_to_append: Option<Vec<String>>,
}

impl ProcessorConfig for Aggregate {
    fn check(&self, path: &str, errors: &mut Errors) {
        let at = join(path, "identification_keys");
        if self.identification_keys.is_empty() {
            errors.at(
                &at,
                format!("`{at}` is empty; add at least one key, e.g. `[\"sourceIp\"]`"),
            );
        }
        keys(&self.identification_keys, &at, errors);
        if self.output_unaggregated_events && self.aggregated_events_tag.is_none() {
            errors.at(
                &join(path, "aggregated_events_tag"),
                format!(
                    "`{path}`: Aggregated Events Tag must be set when output_unaggregated_events is set (add `aggregated_events_tag`)"
                ),
            );
        }
        super::check_max_held_events(self.max_held_events, path, errors);
        let at = join(&join(path, "action"), self.action.name());
        match &self.action {
            Action::Count(count) => {
                if let Some(unique) = &count.unique_keys {
                    keys(unique, &join(&at, "unique_keys"), errors);
                }
            }
            Action::Histogram(histogram) => {
                if histogram.buckets.is_empty() {
                    let at = join(&at, "buckets");
                    errors.at(&at, format!("`{at}`: Bucket list must not be empty"));
                }
                if let Err(e) = Key::parse(&histogram.key) {
                    errors.at(&join(&at, "key"), format!("`{at}.key`: {e}"));
                }
            }
            Action::RateLimiter(limiter) if limiter.events_per_second == 0 => {
                let at = join(&at, "events_per_second");
                errors.at(&at, format!("`{at}` must be at least 1"));
            }
            Action::PercentSampler(sampler)
                if !(sampler.percent > 0.0 && sampler.percent < 100.0) =>
            {
                let at = join(&at, "percent");
                errors.at(
                    &at,
                    format!("`{at}`: Percent value must be greater than 0.0 and less than 100.0"),
                );
            }
            Action::TailSampler(tail) => {
                if !(tail.percent > 0 && tail.percent < 100) {
                    let at = join(&at, "percent");
                    errors.at(
                        &at,
                        format!(
                            "`{at}`: Percent value must be greater than 0.0 and less than 100.0"
                        ),
                    );
                }
                let seconds = tail.wait_period.as_secs();
                if !(seconds > 0 && seconds <= 60) {
                    let at = join(&at, "wait_period");
                    errors.at(
                        &at,
                        format!("`{at}`: Wait period value must be greater than 0 and less than 60 (whole seconds, at most 60)"),
                    );
                }
            }
            _ => {}
        }
    }
}

/// Checks that each of `names` is a key; `path` is their list's.
fn keys(names: &[String], path: &str, errors: &mut Errors) {
    for name in names {
        if let Err(e) = Key::parse(name) {
            errors.at(path, format!("`{path}`: {e}"));
        }
    }
}
