//! The `s3` source (a pull source): reads the objects S3 announces on an SQS queue, in Data
//! Prepper's shape, keys verbatim:
//! ```yaml
//! source:
//!   s3:
//!     notification_type: sqs
//!     codec:
//!       newline:
//!     compression: gzip
//!     sqs:
//!       queue_url: "https://sqs.us-east-1.amazonaws.com/123456789012/MyQueue"
//!     aws:
//!       region: us-east-1
//! ```
//! Each line of an object is one record through the source's deserializer (the codec's
//! built-in, or any `deserializer` plugin); its position is the object and the line, so a
//! file or opensearch sink holds each line once even when the object is read again. The SQS
//! message is deleted only once every line of its object reached the sinks. The reader is the
//! pipeline's read side in place of a buffer, so the pipeline's buffer stays
//! `bounded_blocking`, whose `buffer_size` bounds the lines read ahead of the workers.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Deserializer};

use super::deserializer::{DeserializerConfig, check_deserializer, opt_deserializer};
use super::{CheckSource, SourceConfig, SourceKind};
use crate::context::Context;
use crate::error::Errors;
use crate::location::join;
use crate::secret::SecretError;
use crate::units;

/// The `s3` source.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct S3Source {
    /// How objects are announced: `sqs` (S3 event notifications on an SQS queue). Default:
    /// `sqs` when `sqs` is given.
    #[serde(default)]
    pub notification_type: Option<NotificationType>,
    /// Who sent the notifications: `s3` (S3's own event notifications, also wrapped in SNS)
    /// or `eventbridge` (EventBridge's `Object Created` events). Default `s3`.
    #[serde(default)]
    pub notification_source: NotificationSource,
    /// How objects are compressed: `none`, `gzip` (concatenated members read as one), or
    /// `automatic` (by the key: `.gz` is gzip, anything else none). Default `none`.
    #[serde(default)]
    pub compression: Compression,
    /// How an object's bytes become records: `newline` (each line `{"message": line}`),
    /// `ndjson` (each line a JSON object), `json` (each element of its arrays), `csv` (each
    /// row) or `parquet` (each row of a parquet file). Required.
    #[serde(default)]
    pub codec: Option<Codec>,
    /// The queue S3 announces new objects on. Required unless `scan` is given.
    #[serde(default)]
    pub sqs: Option<Sqs>,
    /// Queue readers, each reading one object at a time, 1 to 1000. Default 1.
    #[serde(default = "one")]
    pub workers: usize,
    /// Where and as whom to reach AWS. Required.
    #[serde(default)]
    pub aws: Option<S3SourceAws>,
    /// What becomes of an SQS message sluice cannot read as an S3 notification:
    /// `retain_messages` (it stays, and comes back after its visibility timeout) or
    /// `delete_messages`. Default `retain_messages`.
    #[serde(default)]
    pub on_error: OnError,
    /// Data Prepper's end-to-end acknowledgements. sluice always deletes a message only once
    /// every line of its object reached the sinks (what `true` asks for), so either value
    /// reads the same. Default false.
    #[serde(default)]
    pub acknowledgments: bool,
    /// Data Prepper's buffer write timeout; accepted, no effect (the reader waits for room in
    /// the pipeline's buffer as long as it takes). Default `10s`.
    #[serde(default = "ten_seconds", deserialize_with = "units::duration")]
    pub buffer_timeout: Duration,
    /// Data Prepper's write batch; accepted, no effect (records go to the workers in batches
    /// of the buffer's `batch_size`). Default 100.
    #[serde(default = "hundred")]
    pub records_to_accumulate: usize,
    /// Skip the check that a bucket belongs to the expected account. Default false.
    #[serde(default)]
    pub disable_bucket_ownership_validation: bool,
    /// The account (12 digits) each bucket must belong to, by bucket name.
    #[serde(default)]
    pub bucket_owners: BTreeMap<String, String>,
    /// The account (12 digits) buckets not in `bucket_owners` must belong to. Default: the
    /// queue URL's account.
    #[serde(default)]
    pub default_bucket_owner: Option<String>,
    /// With `scan`: how long to wait before listing the buckets again when objects could not
    /// be read (they are tried again until they are). Default `30s`.
    #[serde(default = "thirty_seconds", deserialize_with = "units::duration")]
    pub backoff_time: Duration,
    /// Where each event gets its object's `bucket` and `key`: a path, `/`-separated, whose
    /// last part ends in `/`. `""` puts them at the top. Default `s3/` (`{"s3": {"bucket":
    /// ..., "key": ...}}`).
    #[serde(default = "default_metadata_root_key")]
    pub metadata_root_key: String,
    /// Leave the `bucket` and `key` out of the events. Default false.
    #[serde(default)]
    pub disable_s3_metadata_in_event: bool,
    /// `data_and_metadata` (each line with its object's bucket and key) or `data_only`;
    /// `metadata_only` is not supported yet. Default `data_and_metadata`.
    #[serde(default)]
    pub data_selection: DataSelection,
    /// Per bucket, which keys to read: `include_prefix` (a key must start with one) and
    /// `exclude_suffix` (a key must end in none). Others are skipped and their messages
    /// deleted. Default: every key.
    #[serde(default)]
    pub filters: BTreeMap<String, KeyFilter>,
    /// Delete each object once it was read (Data Prepper's); only `false` for now.
    #[serde(default)]
    pub delete_s3_objects_on_read: bool,
    /// Read whole buckets by listing them, once or on a schedule, instead of (or beside) the
    /// objects an SQS queue announces. Each object read to its end and taken by the sinks is
    /// recorded in the data directory (`s3-scan/<pipeline>.jsonl`), so a restart or a later
    /// scan does not read it again.
    #[serde(default)]
    pub scan: Option<Scan>,
    /// S3 Select (Data Prepper's `s3_select`); refused for now.
    #[serde(default)]
    pub s3_select: Option<serde_yaml::Value>,
    /// sluice's: the deserializer for every line, in place of the codec's built-in (a plugin
    /// name or a map with `name` and `options`). Default: from `codec`.
    #[serde(default, deserialize_with = "opt_deserializer")]
    pub deserializer: Option<DeserializerConfig>,
}

/// `notification_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotificationType {
    Sqs,
}

/// `notification_source`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotificationSource {
    #[default]
    S3,
    Eventbridge,
}

/// `compression`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Compression {
    #[default]
    None,
    Gzip,
    Automatic,
    /// Refused by the source's rules: not supported yet.
    Snappy,
    /// Refused by the source's rules: not supported yet.
    Zstd,
}

/// `on_error`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnError {
    #[default]
    RetainMessages,
    DeleteMessages,
}

/// `data_selection`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DataSelection {
    #[default]
    DataAndMetadata,
    DataOnly,
    /// Refused by the source's rules: not supported yet.
    MetadataOnly,
}

/// `codec`: one key naming how lines are read.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Codec {
    /// Each line is the event `{"message": line}`.
    #[serde(default, deserialize_with = "given")]
    pub newline: Option<Newline>,
    /// Each line is a JSON object, the event.
    #[serde(default, deserialize_with = "given")]
    pub ndjson: Option<Ndjson>,
    /// Each element of the object's arrays is an event.
    #[serde(default, deserialize_with = "given")]
    pub json: Option<JsonCodec>,
    /// Each row is an event, `{"column": "value", ...}`.
    #[serde(default, deserialize_with = "given")]
    pub csv: Option<CsvCodec>,
    /// Each row of a parquet file is an event, a JSON object of its columns.
    #[serde(default, deserialize_with = "given")]
    pub parquet: Option<ParquetCodec>,
    /// Data Prepper's other codecs: refused by name (not supported yet).
    #[serde(default, deserialize_with = "crate::http::present")]
    pub avro: Option<serde_yaml::Value>,
    #[serde(default, deserialize_with = "crate::http::present")]
    pub event_json: Option<serde_yaml::Value>,
    #[serde(default, deserialize_with = "crate::http::present")]
    pub multiline: Option<serde_yaml::Value>,
}

impl Codec {
    /// The codecs given that sluice does not read yet.
    fn unsupported(&self) -> Vec<&'static str> {
        [
            ("avro", &self.avro),
            ("event_json", &self.event_json),
            ("multiline", &self.multiline),
        ]
        .into_iter()
        .filter(|(_, v)| v.is_some())
        .map(|(name, _)| name)
        .collect()
    }
}

/// A key that is there, its options or their defaults when it has no value (`newline:`).
fn given<'de, D: Deserializer<'de>, T: Deserialize<'de> + Default>(
    d: D,
) -> Result<Option<T>, D::Error> {
    Option::<T>::deserialize(d).map(|t| Some(t.unwrap_or_default()))
}

/// `codec.newline`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Newline {
    /// Lines at the start of each object that are not read. Default 0.
    #[serde(default)]
    pub skip_lines: usize,
    /// The field that gets the object's first line after the skipped ones (a header) in each
    /// of its other lines' events; that line is no event itself. Default: none.
    #[serde(default)]
    pub header_destination: Option<String>,
}

/// `codec.json` (Data Prepper's `json` input codec): each element of a top-level array, or of
/// an array field (`key_name`'s only, if set) of the top-level object, is an event. Data
/// Prepper's walk stops at the first object end it meets, so arrays after a field whose value
/// is an object give nothing.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JsonCodec {
    /// Read only the arrays of this field, 1 to 2048 characters. Default: every array.
    #[serde(default)]
    pub key_name: Option<String>,
    /// Top-level keys (met before the array) whose values, as strings, go into each event.
    #[serde(default)]
    pub include_keys: Vec<String>,
    /// Data Prepper's keys for event metadata; refused for now (sluice's events carry none).
    #[serde(default)]
    pub include_keys_metadata: Vec<String>,
    /// The longest string value, at least 20000000 (Jackson's limit). Default 20000000.
    #[serde(default)]
    pub max_event_length: Option<i64>,
}

/// `codec.csv` (Data Prepper's `csv` input codec): each row is the event `{"column":
/// "value", ...}`, every value a string.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CsvCodec {
    /// The column separator, one character. Default `,`.
    #[serde(default = "comma")]
    pub delimiter: String,
    /// The quote around a value, one character. Default `"`.
    #[serde(default = "double_quote")]
    pub quote_character: String,
    /// The column names, with `detect_header: false` (then `column<N>` past them).
    #[serde(default)]
    pub header: Option<Vec<String>>,
    /// The first row holds the column names. Default true.
    #[serde(default = "yes")]
    pub detect_header: bool,
}

impl Default for CsvCodec {
    fn default() -> Self {
        Self {
            delimiter: comma(),
            quote_character: double_quote(),
            header: None,
            detect_header: true,
        }
    }
}

fn comma() -> String {
    ",".to_owned()
}
fn double_quote() -> String {
    "\"".to_owned()
}
const fn yes() -> bool {
    true
}

/// Java's `String.length()`: UTF-16 code units.
fn java_length(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

impl JsonCodec {
    /// Data Prepper's checks, with its messages (`JsonInputCodecConfig`).
    fn problems(&self) -> Vec<&'static str> {
        let mut problems = Vec::new();
        if self
            .key_name
            .as_deref()
            .is_some_and(|k| !(1..=2048).contains(&java_length(k)))
        {
            problems.push("keyName size must be between 1 and 2048");
        }
        if self.max_event_length.is_some_and(|m| m < 20_000_000) {
            problems.push("maxEventLength must be greater than or equal to 20000000");
        }
        problems
    }
}

impl CsvCodec {
    /// Data Prepper's checks, with its messages (`CsvInputCodecConfig`), and sluice's: no
    /// line end as delimiter or quote.
    fn problems(&self) -> Vec<&'static str> {
        let mut problems = Vec::new();
        if java_length(&self.delimiter) != 1 {
            problems.push("delimiter must be exactly one character.");
        }
        if java_length(&self.quote_character) != 1 {
            problems.push("quote_character must be exactly one character.");
        }
        if self.delimiter == self.quote_character {
            problems.push("quote_character and delimiter cannot be the same character.");
        }
        if self.header.as_ref().is_some_and(Vec::is_empty) {
            problems.push(
                "header must not be an empty list. To autogenerate columns, set detect_header: \
                 false and delete header from config.",
            );
        }
        if matches!(self.delimiter.as_str(), "\r" | "\n") {
            problems.push("delimiter must not be a line end.");
        }
        if matches!(self.quote_character.as_str(), "\r" | "\n") {
            problems.push("quote_character must not be a line end.");
        }
        problems
    }
}

/// `codec.parquet` (Data Prepper's `parquet` input codec), which has no options: each row of
/// the object, a parquet file, is the event of its columns (nested groups as objects, lists as
/// arrays) in the shape Data Prepper's `GenericRecordJsonEncoder` writes. The object is spooled
/// to a temporary file first (in `TMPDIR`), since a parquet file is read from its end.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParquetCodec {}

/// `codec.ndjson`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ndjson {
    /// Keep lines that are the empty object `{}`. Default false.
    #[serde(default)]
    pub include_empty_objects: bool,
    /// Data Prepper's output extension; accepted, no effect. Default `jsonl`.
    #[serde(default)]
    pub extension: Option<String>,
}

/// `sqs`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sqs {
    /// The queue's URL (`https://sqs.<region>.amazonaws.com/<account>/<name>`; a local
    /// SQS-compatible server's own URL works too, as its endpoint). Required.
    #[serde(default)]
    pub queue_url: String,
    /// Messages per receive, 1 to 10. Default 10.
    #[serde(default = "ten")]
    pub maximum_messages: i32,
    /// How long a received message stays hidden from other readers, `0s` to `12h`: an object
    /// not read and delivered by then is read again (by this process or another). Default
    /// `30s`.
    #[serde(default = "thirty_seconds", deserialize_with = "units::duration")]
    pub visibility_timeout: Duration,
    /// Keep extending the visibility of a message whose object is still being read, so a long
    /// object is not read twice at once. Default false.
    #[serde(default)]
    pub visibility_duplication_protection: bool,
    /// How long at most the visibility is extended, `30s` to `24h`. Default `2h`.
    #[serde(default = "two_hours", deserialize_with = "units::duration")]
    pub visibility_duplicate_protection_timeout: Duration,
    /// How long one receive waits for messages (long polling), `0s` to `20s`. Default `20s`.
    #[serde(default = "twenty_seconds", deserialize_with = "units::duration")]
    pub wait_time: Duration,
    /// A pause after each receive that returned messages. Default `0s`.
    #[serde(default, deserialize_with = "units::duration")]
    pub poll_delay: Duration,
    /// Delete unread a message received more than this many times. Default: never.
    #[serde(default)]
    pub max_receive_attempts: Option<u32>,
    /// How long shutdown waits for lines already read to reach the sinks (and their messages
    /// to be deleted), at least `30s`. Default `30s`.
    #[serde(default = "thirty_seconds", deserialize_with = "units::duration")]
    pub shutdown_timeout: Duration,
}

/// `aws` of the s3 source. Credentials come from the standard AWS chain (environment
/// variables `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`, profile, instance role).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct S3SourceAws {
    /// The region of the queue and the buckets. Default: the AWS chain's.
    #[serde(default)]
    pub region: Option<String>,
    /// An S3-compatible store instead of AWS (e.g. `http://127.0.0.1:8333`); path-style
    /// addressing is used with it. Default: AWS. (Not a Data Prepper key: the s3 sink's.)
    #[serde(default)]
    pub endpoint: Option<String>,
    /// An IAM role to assume (STS `AssumeRole`, with the standard chain's credentials) for
    /// S3 and SQS, 20 to 2048 characters. Default: the chain's credentials themselves.
    #[serde(default)]
    pub sts_role_arn: Option<String>,
    /// Goes with `sts_role_arn` (2 to 1224 characters).
    #[serde(default)]
    pub sts_external_id: Option<String>,
    /// Headers sent with the `AssumeRole` request (at most 5).
    #[serde(default)]
    pub sts_header_overrides: BTreeMap<String, String>,
}

/// `scan`: which buckets to list, which of their objects to read, and how often.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scan {
    /// The buckets, each `- bucket: {name, filter, start_time, end_time, range,
    /// data_selection}`. Required.
    #[serde(default)]
    pub buckets: Vec<ScanBuckets>,
    /// Read only objects last modified after this local date and time
    /// (`2023-01-01T00:00:00`, the host's time zone), unless the bucket says otherwise.
    #[serde(default)]
    pub start_time: Option<String>,
    /// Read only objects last modified before this local date and time; not with
    /// `scheduling`.
    #[serde(default)]
    pub end_time: Option<String>,
    /// Read only objects last modified within this long before the pipeline started
    /// (`P7D`, `24h`); not with `start_time` or `end_time`.
    #[serde(default, deserialize_with = "units::optional_duration")]
    pub range: Option<Duration>,
    /// Scan again every `interval`, `count` times in all. Default: one scan.
    #[serde(default)]
    pub scheduling: Option<Scheduling>,
    /// Data Prepper's wait for an object's acknowledgements; accepted, no effect (an object is
    /// recorded as read only once the sinks took every line, however long that takes).
    /// Default `2h`.
    #[serde(default = "two_hours", deserialize_with = "units::duration")]
    pub acknowledgment_timeout: Duration,
    /// Data Prepper's folder partitions (with `delete_s3_objects_on_read`); refused for now.
    #[serde(default, deserialize_with = "crate::http::present")]
    pub folder_partitions: Option<serde_yaml::Value>,
}

/// One entry of `scan.buckets`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScanBuckets {
    /// The bucket.
    pub bucket: ScanBucket,
}

/// `scan.buckets[].bucket`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScanBucket {
    /// The bucket's name (an `s3://` in front is dropped), 3 to 500 characters. Required.
    #[serde(default)]
    pub name: String,
    /// Which keys to read: `include_prefix` (each listed; default the whole bucket) and
    /// `exclude_suffix`. Not with the top-level `filters`.
    #[serde(default)]
    pub filter: Option<KeyFilter>,
    /// As `scan.start_time`, for this bucket; any of the three here replaces all three there.
    #[serde(default)]
    pub start_time: Option<String>,
    /// As `scan.end_time`, for this bucket.
    #[serde(default)]
    pub end_time: Option<String>,
    /// As `scan.range`, for this bucket.
    #[serde(default, deserialize_with = "units::optional_duration")]
    pub range: Option<Duration>,
    /// `data_and_metadata` or `data_only`, for this bucket's objects. Default
    /// `data_and_metadata`.
    #[serde(default)]
    pub data_selection: DataSelection,
    /// Data Prepper's processing conditions; refused for now.
    #[serde(default, deserialize_with = "crate::http::present")]
    pub processing_conditions: Option<serde_yaml::Value>,
}

impl ScanBucket {
    /// The bucket's name without `s3://`.
    pub fn bucket(&self) -> &str {
        self.name.strip_prefix("s3://").unwrap_or(&self.name)
    }
}

/// `scan.scheduling`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scheduling {
    /// The time from the end of one scan's listing to the start of the next, `1s` to
    /// `365d`. Required.
    #[serde(default, deserialize_with = "units::optional_duration")]
    pub interval: Option<Duration>,
    /// Scans in all, at least 2. Default: no end.
    #[serde(default)]
    pub count: Option<u32>,
}

/// A local date and time as Java's `LocalDateTime` reads it (`2023-01-01T00:00:00`, seconds
/// and their fraction optional).
pub fn local_time(text: &str) -> Option<chrono::NaiveDateTime> {
    ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M"]
        .iter()
        .find_map(|f| chrono::NaiveDateTime::parse_from_str(text, f).ok())
}

/// One bucket's entry of `filters`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyFilter {
    /// A key must start with one of these (when any are given).
    #[serde(default)]
    pub include_prefix: Vec<String>,
    /// A key must end in none of these (literally: `.log`, not `*.log`).
    #[serde(default)]
    pub exclude_suffix: Vec<String>,
}

const fn one() -> usize {
    1
}
const fn ten() -> i32 {
    10
}
const fn hundred() -> usize {
    100
}
const fn ten_seconds() -> Duration {
    Duration::from_secs(10)
}
const fn twenty_seconds() -> Duration {
    Duration::from_secs(20)
}
const fn thirty_seconds() -> Duration {
    Duration::from_secs(30)
}
const fn two_hours() -> Duration {
    Duration::from_secs(2 * 3600)
}
fn default_metadata_root_key() -> String {
    "s3/".to_owned()
}

/// How an object's bytes become records, for the runtime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lines {
    /// `newline`: every line a record.
    Newline,
    /// `ndjson`: blank lines skipped, and `{}` unless `include_empty_objects`.
    Ndjson { include_empty_objects: bool },
    /// `json`: each element of the arrays a record.
    Json {
        key_name: Option<String>,
        include_keys: Vec<String>,
        max_event_length: Option<usize>,
    },
    /// `csv`: each row a record (a JSON object).
    Csv {
        delimiter: char,
        quote_character: char,
        header: Option<Vec<String>>,
        detect_header: bool,
    },
    /// `parquet`: each row of the parquet file a record (a JSON object).
    Parquet,
}

/// The s3 source as it runs.
#[derive(Debug, Clone)]
pub struct S3SourceSettings {
    /// `sqs.queue_url`, when objects are announced.
    pub queue_url: Option<String>,
    /// `scan`, when buckets are listed.
    pub scan: Option<ScanSettings>,
    pub region: Option<String>,
    /// The S3 store's endpoint (`aws.endpoint`), path-style.
    pub endpoint: Option<String>,
    /// `aws.sts_role_arn`, `aws.sts_external_id`, `aws.sts_header_overrides`.
    pub sts_role_arn: Option<String>,
    pub sts_external_id: Option<String>,
    pub sts_header_overrides: BTreeMap<String, String>,
    pub notification_source: NotificationSource,
    pub compression: Compression,
    pub lines: Lines,
    pub skip_lines: usize,
    pub header_destination: Option<String>,
    pub workers: usize,
    pub maximum_messages: i32,
    pub visibility_timeout: Duration,
    /// `Some(limit)` with `visibility_duplication_protection`.
    pub protect_visibility: Option<Duration>,
    pub wait_time: Duration,
    pub poll_delay: Duration,
    pub max_receive_attempts: Option<u32>,
    pub on_error: OnError,
    /// The expected owner of each bucket (`None`: not checked).
    pub bucket_owners: BTreeMap<String, String>,
    pub default_bucket_owner: Option<String>,
    pub check_owner: bool,
    pub filters: BTreeMap<String, KeyFilter>,
    /// Where `bucket` and `key` go in each event (`None`: nowhere, with
    /// `disable_s3_metadata_in_event`).
    pub metadata_root: Option<Vec<String>>,
    /// `data_selection: data_only`: no `bucket` and `key` in the events of announced objects.
    pub data_only: bool,
    /// The same, for each scanned bucket (its own `data_selection`).
    pub bucket_data_only: BTreeMap<String, bool>,
    pub drain_timeout: Duration,
}

/// The `scan` as it runs.
#[derive(Debug, Clone)]
pub struct ScanSettings {
    pub buckets: Vec<ScanBucketSettings>,
    /// `(interval, count)` with `scheduling`.
    pub scheduling: Option<(Duration, u32)>,
    /// How long to wait before listing again for objects that failed (`backoff_time`).
    pub backoff: Duration,
}

/// One scanned bucket, its times resolved (the bucket's, else the scan's).
#[derive(Debug, Clone)]
pub struct ScanBucketSettings {
    pub name: String,
    /// Each listed (the whole bucket when empty).
    pub include_prefix: Vec<String>,
    pub exclude_suffix: Vec<String>,
    /// Only objects last modified after it (local time).
    pub start_time: Option<chrono::NaiveDateTime>,
    /// Only objects last modified before it (local time).
    pub end_time: Option<chrono::NaiveDateTime>,
    /// Only objects last modified within this long before the start.
    pub range: Option<Duration>,
}

impl S3Source {
    fn lines(&self) -> (Lines, usize, Option<String>) {
        let codec = self.codec.clone().unwrap_or_default();
        let first = |s: &str| s.chars().next().unwrap_or(',');
        if let Some(j) = codec.json {
            let lines = Lines::Json {
                key_name: j.key_name,
                include_keys: j.include_keys,
                max_event_length: j.max_event_length.and_then(|m| usize::try_from(m).ok()),
            };
            return (lines, 0, None);
        }
        if let Some(c) = codec.csv {
            let lines = Lines::Csv {
                delimiter: first(&c.delimiter),
                quote_character: first(&c.quote_character),
                header: c.header,
                detect_header: c.detect_header,
            };
            return (lines, 0, None);
        }
        if codec.parquet.is_some() {
            return (Lines::Parquet, 0, None);
        }
        match (codec.ndjson, codec.newline) {
            (Some(n), _) => (
                Lines::Ndjson {
                    include_empty_objects: n.include_empty_objects,
                },
                0,
                None,
            ),
            (None, Some(n)) => (Lines::Newline, n.skip_lines, n.header_destination),
            (None, None) => (Lines::Newline, 0, None),
        }
    }

    /// `metadata_root_key` as path parts (Data Prepper's: a leading `/` dropped; each part
    /// an object), `None` when metadata is left out.
    fn metadata_root(&self) -> Option<Vec<String>> {
        if self.disable_s3_metadata_in_event {
            return None;
        }
        Some(
            self.metadata_root_key
                .split('/')
                .filter(|p| !p.is_empty())
                .map(str::to_owned)
                .collect(),
        )
    }
}

impl SourceConfig for S3Source {
    // Objects can be read again: writing their lines to a Kafka topic adds a copy, not
    // durability.
    const KIND: SourceKind = SourceKind::Pull;
    const READS_ITSELF: bool = true;
    fn read<'de, D: Deserializer<'de>>(_: &'static str, d: D) -> Result<Self, D::Error> {
        Self::deserialize(d)
    }
    fn deserializer(&self) -> Cow<'_, DeserializerConfig> {
        if let Some(d) = &self.deserializer {
            return Cow::Borrowed(d);
        }
        match &self.codec {
            // Each record is a JSON object: the built-in `json`.
            Some(c)
                if c.ndjson.is_some()
                    || c.json.is_some()
                    || c.csv.is_some()
                    || c.parquet.is_some() =>
            {
                Cow::Owned(DeserializerConfig::default())
            }
            _ => Cow::Owned(DeserializerConfig {
                name: "plain".to_owned(),
                ..DeserializerConfig::default()
            }),
        }
    }
}

impl crate::Resolve for S3Source {
    type Settings = S3SourceSettings;
    type Error = SecretError;
    fn resolve(&self, _pipeline: &str) -> Result<S3SourceSettings, SecretError> {
        let (lines, skip_lines, header_destination) = self.lines();
        let sqs = self.sqs.clone().unwrap_or_else(|| Sqs {
            queue_url: String::new(),
            ..serde_yaml::from_str("{}").expect("every key has a default")
        });
        let aws = self.aws.clone();
        let scan = self.scan.as_ref().map(|scan| ScanSettings {
            buckets: scan
                .buckets
                .iter()
                .map(|b| {
                    let b = &b.bucket;
                    let own = b.start_time.is_some() || b.end_time.is_some() || b.range.is_some();
                    let (start, end, range) = if own {
                        (&b.start_time, &b.end_time, b.range)
                    } else {
                        (&scan.start_time, &scan.end_time, scan.range)
                    };
                    let filter = b.filter.clone().unwrap_or_default();
                    ScanBucketSettings {
                        name: b.bucket().to_owned(),
                        include_prefix: filter.include_prefix,
                        exclude_suffix: filter.exclude_suffix,
                        start_time: start.as_deref().and_then(local_time),
                        end_time: end.as_deref().and_then(local_time),
                        range,
                    }
                })
                .collect(),
            scheduling: scan
                .scheduling
                .as_ref()
                .and_then(|s| Some((s.interval?, s.count.unwrap_or(u32::MAX)))),
            backoff: self.backoff_time,
        });
        let bucket_data_only = self
            .scan
            .iter()
            .flat_map(|s| &s.buckets)
            .map(|b| {
                (
                    b.bucket.bucket().to_owned(),
                    b.bucket.data_selection == DataSelection::DataOnly,
                )
            })
            .collect();
        Ok(S3SourceSettings {
            queue_url: self.sqs.as_ref().map(|s| s.queue_url.clone()),
            scan,
            region: aws.as_ref().and_then(|a| a.region.clone()),
            endpoint: aws.as_ref().and_then(|a| a.endpoint.clone()),
            sts_role_arn: aws.as_ref().and_then(|a| a.sts_role_arn.clone()),
            sts_external_id: aws.as_ref().and_then(|a| a.sts_external_id.clone()),
            sts_header_overrides: aws.map(|a| a.sts_header_overrides).unwrap_or_default(),
            notification_source: self.notification_source,
            compression: self.compression,
            lines,
            skip_lines,
            header_destination,
            workers: self.workers,
            maximum_messages: sqs.maximum_messages,
            visibility_timeout: sqs.visibility_timeout,
            protect_visibility: sqs
                .visibility_duplication_protection
                .then_some(sqs.visibility_duplicate_protection_timeout),
            wait_time: sqs.wait_time,
            poll_delay: sqs.poll_delay,
            max_receive_attempts: sqs.max_receive_attempts,
            on_error: self.on_error,
            bucket_owners: self.bucket_owners.clone(),
            default_bucket_owner: self.default_bucket_owner.clone(),
            check_owner: !self.disable_bucket_ownership_validation,
            filters: self.filters.clone(),
            metadata_root: self.metadata_root(),
            data_only: self.data_selection == DataSelection::DataOnly,
            bucket_data_only,
            drain_timeout: sqs.shutdown_timeout,
        })
    }
}

impl CheckSource for S3Source {
    fn check(&self, path: &str, errors: &mut Errors, context: Context<'_>) {
        let mut at = |key: &str, message: String| errors.at(&join(path, key), message);
        match &self.codec {
            None => at(
                "codec",
                format!(
                    "`{path}` needs `codec`: A codec is required for reading objects \
                     (`newline`, `ndjson`, `json`, `csv` or `parquet`)"
                ),
            ),
            Some(codec) => {
                let unsupported = codec.unsupported();
                let given = unsupported.len()
                    + usize::from(codec.newline.is_some())
                    + usize::from(codec.ndjson.is_some())
                    + usize::from(codec.json.is_some())
                    + usize::from(codec.csv.is_some())
                    + usize::from(codec.parquet.is_some());
                if let Some(name) = unsupported.first() {
                    at(
                        "codec",
                        format!(
                            "`{path}.codec: {name}` is not supported by sluice's s3 source yet; \
                             read the objects with `newline`, `ndjson`, `json`, `csv` or \
                             `parquet`, or with `newline` and a `deserializer` plugin"
                        ),
                    );
                } else if given != 1 {
                    at(
                        "codec",
                        format!(
                            "`{path}.codec` takes one of `newline`, `ndjson`, `json`, `csv` and \
                             `parquet`"
                        ),
                    );
                }
                let problems = [
                    ("json", codec.json.as_ref().map(JsonCodec::problems)),
                    ("csv", codec.csv.as_ref().map(CsvCodec::problems)),
                ];
                for (name, problems) in problems {
                    if let Some(problems) = problems.filter(|p| !p.is_empty()) {
                        at(
                            &format!("codec.{name}"),
                            format!("`{path}.codec.{name}`: {}", problems.join(" ")),
                        );
                    }
                }
                if codec
                    .json
                    .as_ref()
                    .is_some_and(|j| !j.include_keys_metadata.is_empty())
                {
                    at(
                        "codec.json.include_keys_metadata",
                        format!(
                            "`{path}.codec.json.include_keys_metadata` is not supported by \
                             sluice's s3 source yet (sluice's events carry no metadata); use \
                             `include_keys`"
                        ),
                    );
                }
                if let Some(n) = &codec.newline
                    && n.header_destination.as_deref() == Some("")
                {
                    at(
                        "codec.newline.header_destination",
                        format!(
                            "`{path}.codec.newline.header_destination` is empty; give a field \
                             name or remove the key"
                        ),
                    );
                }
            }
        }
        for (given, key, what) in [
            (
                self.s3_select.is_some(),
                "s3_select",
                "S3 Select (`s3_select`)",
            ),
            (
                self.delete_s3_objects_on_read,
                "delete_s3_objects_on_read",
                "deleting objects once read (`delete_s3_objects_on_read`)",
            ),
        ] {
            if given {
                at(
                    key,
                    format!(
                        "`{path}.{key}`: {what} is not supported by sluice's s3 source yet; \
                         remove `{key}`"
                    ),
                );
            }
        }
        match &self.sqs {
            None if self.scan.is_some() => {
                if self.notification_type.is_some() {
                    at(
                        "notification_type",
                        format!("`{path}.notification_type: sqs` needs `sqs` with `queue_url`"),
                    );
                }
            }
            None => at(
                "sqs",
                format!(
                    "`{path}` needs `sqs` with `queue_url` (the objects S3 announces on an SQS \
                     queue) or `scan` (buckets to list)"
                ),
            ),
            Some(sqs) => check_sqs(sqs, &join(path, "sqs"), &mut at),
        }
        if let Some(scan) = &self.scan {
            check_scan(scan, !self.filters.is_empty(), &join(path, "scan"), &mut at);
        }
        match &self.aws {
            None => at(
                "aws",
                format!("`{path}` needs `aws` (at least `region`, or `{{}}` for the AWS chain's)"),
            ),
            Some(aws) => check_aws(aws, &join(path, "aws"), &mut at),
        }
        if !(1..=1000).contains(&self.workers) {
            at(
                "workers",
                format!("`{path}.workers` is {}; it must be 1 to 1000", self.workers),
            );
        }
        match self.compression {
            Compression::Snappy | Compression::Zstd => at(
                "compression",
                format!(
                    "`{path}.compression: {}` is not supported by sluice's s3 source yet; use \
                     `none`, `gzip` or `automatic`",
                    if self.compression == Compression::Snappy {
                        "snappy"
                    } else {
                        "zstd"
                    }
                ),
            ),
            _ => {}
        }
        if self.data_selection == DataSelection::MetadataOnly {
            at(
                "data_selection",
                format!(
                    "`{path}.data_selection: metadata_only` is not supported by sluice's s3 \
                     source yet; use `data_and_metadata` or `data_only`"
                ),
            );
        }
        for (bucket, owner) in self
            .bucket_owners
            .iter()
            .map(|(b, o)| (Some(b.as_str()), o))
            .chain(self.default_bucket_owner.iter().map(|o| (None, o)))
        {
            if owner.len() != 12 || !owner.bytes().all(|b| b.is_ascii_digit()) {
                let key = match bucket {
                    Some(b) => format!("bucket_owners.{b}"),
                    None => "default_bucket_owner".to_owned(),
                };
                at(
                    &key,
                    format!("`{path}.{key}` is `{owner}`; an AWS account id is 12 digits"),
                );
            }
        }
        check_deserializer(
            &self.deserializer(),
            &join(path, "deserializer"),
            errors,
            context,
        );
    }
}

fn check_sqs(sqs: &Sqs, path: &str, at: &mut impl FnMut(&str, String)) {
    let key = |k: &str| format!("sqs.{k}");
    if sqs.queue_url.trim().is_empty() {
        at(
            &key("queue_url"),
            format!("`{path}.queue_url` is empty: SQS URL cannot be null or empty"),
        );
    }
    if !(1..=10).contains(&sqs.maximum_messages) {
        at(
            &key("maximum_messages"),
            format!(
                "`{path}.maximum_messages` is {}; it must be 1 to 10",
                sqs.maximum_messages
            ),
        );
    }
    let ranges = [
        ("visibility_timeout", sqs.visibility_timeout, 0, 12 * 3600),
        (
            "visibility_duplicate_protection_timeout",
            sqs.visibility_duplicate_protection_timeout,
            30,
            24 * 3600,
        ),
        ("wait_time", sqs.wait_time, 0, 20),
        ("shutdown_timeout", sqs.shutdown_timeout, 30, u64::MAX),
    ];
    for (name, value, least, most) in ranges {
        if value < Duration::from_secs(least) || value > Duration::from_secs(most) {
            let most = if most == u64::MAX {
                "".to_owned()
            } else {
                format!(" and at most `{most}s`")
            };
            at(
                &key(name),
                format!("`{path}.{name}` is {value:?}; it must be at least `{least}s`{most}"),
            );
        }
    }
    if sqs.max_receive_attempts == Some(0) {
        at(
            &key("max_receive_attempts"),
            format!("`{path}.max_receive_attempts` must be at least 1"),
        );
    }
}

fn check_scan(scan: &Scan, top_filters: bool, path: &str, at: &mut impl FnMut(&str, String)) {
    let key = |k: &str| format!("scan.{k}");
    if scan.buckets.is_empty() {
        at(
            &key("buckets"),
            format!("`{path}.buckets` needs at least one `- bucket: {{name: ...}}`"),
        );
    }
    check_times(
        (&scan.start_time, &scan.end_time, scan.range),
        path,
        "",
        &mut |k, m| at(&key(k), m),
    );
    if let Some(s) = &scan.scheduling {
        match s.interval {
            None => at(
                &key("scheduling.interval"),
                format!("`{path}.scheduling` needs `interval`"),
            ),
            Some(i) if i < Duration::from_secs(1) => at(
                &key("scheduling.interval"),
                format!("`{path}.scheduling.interval`: S3 scan interval must be at least 1 second"),
            ),
            Some(i) if i > Duration::from_secs(365 * 86_400) => at(
                &key("scheduling.interval"),
                format!(
                    "`{path}.scheduling.interval`: S3 scan interval must be less than or equal \
                     to 365 days"
                ),
            ),
            Some(_) => {}
        }
        if s.count.is_some_and(|c| c < 2) {
            at(
                &key("scheduling.count"),
                format!(
                    "`{path}.scheduling.count` must be at least 2 (leave `scheduling` out for one scan)"
                ),
            );
        }
        if scan.end_time.is_some() || (scan.start_time.is_some() && scan.range.is_some()) {
            at(
                &key("scheduling"),
                format!(
                    "`{path}`: end_time is not a valid option when using scheduling with s3 scan. \
                     One of start_time or range must be used for scheduled scan."
                ),
            );
        }
    }
    if scan.folder_partitions.is_some() {
        at(
            &key("folder_partitions"),
            format!(
                "`{path}.folder_partitions` is not supported by sluice's s3 source yet; remove it \
                 (each object is read by one worker, and recorded once the sinks took its lines)"
            ),
        );
    }
    for (i, b) in scan.buckets.iter().enumerate() {
        let b = &b.bucket;
        let here = format!("buckets[{i}].bucket");
        let mut at = |k: &str, m: String| at(&key(&format!("{here}.{k}")), m);
        let path = format!("{path}.{here}");
        if !(3..=500).contains(&b.bucket().len()) {
            at(
                "name",
                format!(
                    "`{path}.name` is `{}`: bucket length should be at least 3 characters (3 to 500)",
                    b.name
                ),
            );
        }
        check_times(
            (&b.start_time, &b.end_time, b.range),
            &path,
            "bucket ",
            &mut at,
        );
        if b.filter.is_some() && top_filters {
            at(
                "filter",
                format!(
                    "`{path}.filter`: Top-level filters cannot be used together with scan \
                     bucket-level filter. Use one or the other."
                ),
            );
        }
        if b.data_selection == DataSelection::MetadataOnly {
            at(
                "data_selection",
                format!(
                    "`{path}.data_selection: metadata_only` is not supported by sluice's s3 \
                     source yet; use `data_and_metadata` or `data_only`"
                ),
            );
        }
        if b.processing_conditions.is_some() {
            at(
                "processing_conditions",
                format!(
                    "`{path}.processing_conditions` is not supported by sluice's s3 source yet; remove it"
                ),
            );
        }
    }
}

/// `start_time`, `end_time` and `range` of a scan or one of its buckets (`what`: `""` or
/// `"bucket "`, as Data Prepper's messages say).
fn check_times(
    (start, end, range): (&Option<String>, &Option<String>, Option<Duration>),
    path: &str,
    what: &str,
    at: &mut impl FnMut(&str, String),
) {
    for (key, value) in [("start_time", start), ("end_time", end)] {
        if let Some(text) = value
            && local_time(text).is_none()
        {
            at(
                key,
                format!(
                    "`{path}.{key}` is `{text}`, not a local date and time; write e.g. \
                     `2023-01-01T00:00:00`"
                ),
            );
        }
    }
    if start.is_some() && end.is_some() && range.is_some() {
        at(
            "range",
            format!(
                "`{path}`: At most two options from start_time, end_time and range can be \
                 specified at the same time"
            ),
        );
    } else if (start.is_some() || end.is_some()) && range.is_some() {
        at(
            "range",
            format!("`{path}`: {what}start_time or end_time cannot be used along with range"),
        );
    }
}

fn check_aws(aws: &S3SourceAws, path: &str, at: &mut impl FnMut(&str, String)) {
    if aws.region.as_deref() == Some("") {
        at(
            "aws.region",
            format!("`{path}.region` is empty: Region cannot be empty string"),
        );
    }
    if let Some(arn) = &aws.sts_role_arn
        && !(20..=2048).contains(&arn.len())
    {
        at(
            "aws.sts_role_arn",
            format!("`{path}.sts_role_arn` must be 20 to 2048 characters"),
        );
    }
    if let Some(id) = &aws.sts_external_id
        && !(2..=1224).contains(&id.len())
    {
        at(
            "aws.sts_external_id",
            format!("`{path}.sts_external_id` must be 2 to 1224 characters"),
        );
    }
    if aws.sts_header_overrides.len() > 5 {
        at(
            "aws.sts_header_overrides",
            format!("`{path}.sts_header_overrides` overrides at most 5 headers"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Resolve as _;

    fn parse(source: &str) -> Result<S3Source, String> {
        let indented: String = source.lines().map(|l| format!("      {l}\n")).collect();
        let text = format!("p:\n  source:\n    s3:\n{indented}  sink: [stdout]\n");
        crate::parse("t.yaml", &text, crate::Context::default())
            .map(|mut c| match c.pipelines.remove(0).source {
                super::super::Source::S3(s) => *s,
                other => panic!("{other:?}"),
            })
            .map_err(|e| e.to_string())
    }

    const BASE: &str = "codec: {newline: }\nsqs: {queue_url: 'http://127.0.0.1:9324/123456789012/q'}\naws: {region: us-east-1}\n";

    #[test]
    fn data_preppers_keys_set_the_readers_settings() {
        let s = parse(
            "notification_type: sqs\ncompression: gzip\ncodec:\n  newline:\n    skip_lines: 1\n    header_destination: header\n\
             sqs:\n  queue_url: 'https://sqs.us-east-1.amazonaws.com/123456789012/MyQueue'\n  maximum_messages: 5\n  \
             visibility_timeout: 2m\n  visibility_duplication_protection: true\n  wait_time: PT5S\n\
             aws: {region: us-east-1, sts_role_arn: 'arn:aws:iam::123456789012:role/Data-Prepper'}\n\
             metadata_root_key: 'meta/s3/'\nworkers: 3\nfilters: {b: {include_prefix: [logs/], exclude_suffix: [.tmp]}}",
        )
        .unwrap();
        let r = s.resolve("p").unwrap();
        assert_eq!(
            (r.skip_lines, r.header_destination.as_deref()),
            (1, Some("header"))
        );
        assert_eq!((r.maximum_messages, r.workers), (5, 3));
        assert_eq!(r.visibility_timeout, Duration::from_secs(120));
        assert_eq!(r.protect_visibility, Some(Duration::from_secs(7200)));
        assert_eq!(r.wait_time, Duration::from_secs(5));
        assert_eq!(
            r.metadata_root,
            Some(vec!["meta".to_owned(), "s3".to_owned()])
        );
        assert_eq!(r.compression, Compression::Gzip);
        assert_eq!(r.filters["b"].include_prefix, ["logs/"]);
        assert_eq!(r.filters["b"].exclude_suffix, [".tmp"]);
        assert_eq!(s.deserializer().name, "plain");
    }

    #[test]
    fn the_codec_picks_the_built_in_deserializer() {
        let s = parse(&BASE.replace("newline: ", "ndjson: ")).unwrap();
        assert_eq!(s.deserializer().name, "json");
        assert_eq!(
            s.resolve("p").unwrap().lines,
            Lines::Ndjson {
                include_empty_objects: false
            }
        );
        let s = parse(&BASE.replace(
            "newline: ",
            "json: {key_name: records, include_keys: [owner]}",
        ))
        .unwrap();
        assert_eq!(s.deserializer().name, "json");
        assert_eq!(
            s.resolve("p").unwrap().lines,
            Lines::Json {
                key_name: Some("records".to_owned()),
                include_keys: vec!["owner".to_owned()],
                max_event_length: None
            }
        );
        let s = parse(&BASE.replace(
            "newline: ",
            "csv: {delimiter: \"\\t\", detect_header: false, header: [a, b]}",
        ))
        .unwrap();
        assert_eq!(s.deserializer().name, "json");
        assert_eq!(
            s.resolve("p").unwrap().lines,
            Lines::Csv {
                delimiter: '\t',
                quote_character: '"',
                header: Some(vec!["a".to_owned(), "b".to_owned()]),
                detect_header: false
            }
        );
        for parquet in ["parquet: ", "parquet: {}", "parquet: null"] {
            let s = parse(&BASE.replace("newline: ", parquet)).unwrap();
            assert_eq!(s.deserializer().name, "json", "{parquet}");
            assert_eq!(s.resolve("p").unwrap().lines, Lines::Parquet, "{parquet}");
        }
        let s = parse(&format!("{BASE}metadata_root_key: ''")).unwrap();
        assert_eq!(s.resolve("p").unwrap().metadata_root, Some(vec![]));
        let s = parse(&format!("{BASE}data_selection: data_only")).unwrap();
        assert!(s.resolve("p").unwrap().data_only);
        let s = parse(&format!("{BASE}disable_s3_metadata_in_event: true")).unwrap();
        assert_eq!(s.resolve("p").unwrap().metadata_root, None);
    }

    /// A scan of one bucket, beside the queue (the test adds scan keys below `    `).
    const SCAN: &str = "codec: {newline: }\nsqs: {queue_url: 'http://127.0.0.1:9324/123456789012/q'}\naws: {region: us-east-1}\n\
                        scan:\n    buckets:\n      - bucket: {name: logs, filter: {include_prefix: [a/]}}\n";

    #[test]
    fn a_scan_resolves_each_buckets_times_and_the_schedule() {
        let s = parse(
            "codec: {newline: }\naws: {region: us-east-1}\nscan:\n  start_time: 2023-01-01T00:00:00\n  \
             scheduling: {interval: PT1H, count: 3}\n  buckets:\n    - bucket: {name: 's3://logs', data_selection: data_only}\n    \
             - bucket: {name: other, range: P2D, filter: {include_prefix: [a/, b/], exclude_suffix: [.tmp]}}\n",
        )
        .unwrap();
        let r = s.resolve("p").unwrap();
        assert_eq!(r.queue_url, None);
        let scan = r.scan.unwrap();
        assert_eq!(scan.scheduling, Some((Duration::from_secs(3600), 3)));
        let [logs, other] = &scan.buckets[..] else {
            panic!("{:?}", scan.buckets)
        };
        assert_eq!(logs.name, "logs", "`s3://` dropped");
        assert_eq!(logs.start_time, local_time("2023-01-01T00:00"));
        assert_eq!(
            (other.start_time, other.range),
            (None, Some(Duration::from_secs(2 * 86_400))),
            "the bucket's own times replace the scan's"
        );
        assert_eq!(
            (other.include_prefix.len(), &other.exclude_suffix[..]),
            (2, &[".tmp".to_owned()][..])
        );
        assert_eq!(r.bucket_data_only.get("logs"), Some(&true));
        assert_eq!(r.bucket_data_only.get("other"), Some(&false));
    }

    #[test]
    fn what_sluice_cannot_do_is_refused_by_name() {
        for (source, want) in [
            (
                BASE.replace("codec: {newline: }\n", ""),
                "A codec is required",
            ),
            (
                BASE.replace("newline: ", "avro: "),
                "codec: avro` is not supported",
            ),
            (
                BASE.replace("newline: ", "parquet: {schema: x}"),
                "unknown field `schema`",
            ),
            (
                BASE.replace("newline: ", "parquet: , csv: "),
                "takes one of `newline`, `ndjson`, `json`, `csv` and `parquet`",
            ),
            (
                BASE.replace("newline: ", "csv: {delimiter: ';;', quote_character: ';;'}"),
                "delimiter must be exactly one character. quote_character must be exactly one character. quote_character and delimiter cannot be the same character.",
            ),
            (
                BASE.replace("newline: ", "csv: {header: []}"),
                "header must not be an empty list",
            ),
            (
                BASE.replace("newline: ", "json: {key_name: '', max_event_length: 100}"),
                "keyName size must be between 1 and 2048 maxEventLength must be greater than or equal to 20000000",
            ),
            (
                BASE.replace("newline: ", "json: {include_keys_metadata: [a]}"),
                "include_keys_metadata` is not supported",
            ),
            (BASE.replace("newline: ", "json: , csv: "), "takes one of"),
            (
                BASE.replace("'http://127.0.0.1:9324/123456789012/q'", "''"),
                "SQS URL cannot be null or empty",
            ),
            (
                format!("{BASE}compression: zstd"),
                "compression: zstd` is not supported",
            ),
            (format!("{BASE}scan: {{buckets: []}}"), "needs at least one"),
            (
                format!("{SCAN}    start_time: 2023-01-01T00:00:00\n    range: P1D\n"),
                "start_time or end_time cannot be used along with range",
            ),
            (
                format!(
                    "{SCAN}    end_time: 2023-01-01T00:00:00\n    scheduling: {{interval: 1h}}\n"
                ),
                "end_time is not a valid option when using scheduling",
            ),
            (
                format!("{SCAN}    scheduling: {{interval: 500ms}}\n"),
                "must be at least 1 second",
            ),
            (
                format!("{SCAN}    scheduling: {{interval: 1h, count: 1}}\n"),
                "must be at least 2",
            ),
            (
                format!("{SCAN}    start_time: yesterday\n"),
                "not a local date and time",
            ),
            (
                SCAN.replace("name: logs", "name: s3://ab"),
                "bucket length should be at least 3",
            ),
            (
                SCAN.replace(
                    "name: logs",
                    "name: logs, range: P1D, start_time: 2023-01-01T00:00:00",
                ),
                "bucket start_time or end_time cannot be used along with range",
            ),
            (
                format!("{SCAN}filters: {{logs: {{include_prefix: [a/]}}}}\n"),
                "Top-level filters cannot be used together",
            ),
            (
                format!("{SCAN}    folder_partitions: {{depth: 1}}\n"),
                "folder_partitions` is not supported",
            ),
            (
                SCAN.replace(
                    "sqs: {queue_url: 'http://127.0.0.1:9324/123456789012/q'}\n",
                    "notification_type: sqs\n",
                ),
                "notification_type: sqs` needs `sqs`",
            ),
            (format!("{BASE}workers: 0"), "it must be 1 to 1000"),
            (format!("{BASE}default_bucket_owner: '1234'"), "12 digits"),
            (
                BASE.replace("}\naws", ", wait_time: 30s}\naws"),
                "at most `20s`",
            ),
            (
                BASE.replace("}\naws", ", maximum_messages: 11}\naws"),
                "it must be 1 to 10",
            ),
            (
                BASE.replace("aws: {region: us-east-1}\n", ""),
                "needs `aws`",
            ),
            (
                BASE.replace(
                    "sqs: {queue_url: 'http://127.0.0.1:9324/123456789012/q'}\n",
                    "",
                ),
                "needs `sqs`",
            ),
        ] {
            let err = parse(&source).unwrap_err();
            assert!(err.contains(want), "{source}:\n{err}");
        }
    }
}
