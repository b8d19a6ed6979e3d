//! The `opensearch` sink, with Data Prepper's keys and defaults (its `OpenSearchSinkConfig`;
//! `docs/design/opensearch.md` holds every key as Data Prepper reads it):
//! ```yaml
//! sink:
//!   - opensearch:
//!       hosts: ["https://localhost:9200"]
//!       username: admin
//!       password: ${env:OPENSEARCH_PASSWORD}
//!       index: application-%{yyyy.MM.dd}
//!       insecure: true
//! ```

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use sluice_event::{Expression, Key, Template};

use crate::error::Errors;
use crate::location::join;
use crate::secret::{BasicAuth, SecretError, resolve_secret};

/// The `opensearch` sink.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenSearchSink {
    // --- connection ---
    /// The cluster's node URLs (`https://host:9200`). Requests are spread over them, and a
    /// node that does not answer is skipped until it does. A host without a scheme is
    /// `http://` (as Data Prepper's `HttpHost.create` reads it). Required.
    pub hosts: Vec<String>,
    /// HTTP Basic user name.
    #[serde(default)]
    pub username: Option<String>,
    /// HTTP Basic password: the text, `${env:NAME}` or `${file:PATH}`; never logged.
    #[serde(default)]
    pub password: Option<String>,
    /// Sent as `Authorization: Bearer <token>` on every request (`${env:NAME}` allowed).
    #[serde(default)]
    pub api_token: Option<String>,
    /// `username`, `password`, `api_token` grouped (not with the top-level ones).
    #[serde(default)]
    pub authentication: Option<Authentication>,
    /// A PEM file of the CA certificates that sign the cluster's (besides the system's).
    #[serde(default)]
    pub cert: Option<PathBuf>,
    /// Trust any certificate the cluster shows (tests only). Default false.
    #[serde(default)]
    pub insecure: bool,
    /// A forward HTTP proxy, `host:port` or `http://host:port`.
    #[serde(default)]
    pub proxy: Option<String>,
    /// Put before every request's path (a cluster behind a path-routing proxy).
    #[serde(default)]
    pub path_prefix: Option<String>,
    /// Milliseconds a request may wait for the next bytes of the answer. Default: 60000.
    #[serde(default)]
    pub socket_timeout: Option<u64>,
    /// Milliseconds connecting may take. Default: 60000.
    #[serde(default)]
    pub connect_timeout: Option<u64>,
    /// `default` (OpenSearch) or `es6` (Elasticsearch 6: legacy templates, no request
    /// compression by default).
    #[serde(default)]
    pub distribution_version: DistributionVersion,
    /// Gzip request bodies (`Content-Encoding: gzip`). Default true, false for `es6`.
    #[serde(default)]
    pub enable_request_compression: Option<bool>,
    /// Amazon OpenSearch Service: sign every request with SigV4 (service `es`, or `aoss` with
    /// `serverless`), credentials from the standard AWS chain or the role given.
    #[serde(default)]
    pub aws: Option<Aws>,
    /// Deprecated (Data Prepper): SigV4 with the `aws_*` keys. Use `aws`.
    #[serde(default)]
    pub aws_sigv4: bool,
    /// Deprecated: `aws.region`.
    #[serde(default)]
    pub aws_region: Option<String>,
    /// Deprecated: `aws.sts_role_arn`.
    #[serde(default)]
    pub aws_sts_role_arn: Option<String>,
    /// Deprecated: `aws.sts_external_id`.
    #[serde(default)]
    pub aws_sts_external_id: Option<String>,
    /// Deprecated: `aws.sts_header_overrides`.
    #[serde(default)]
    pub aws_sts_header_overrides: Option<BTreeMap<String, String>>,
    /// Deprecated and without effect in Data Prepper (only `aws.serverless` counts); accepted,
    /// not with `aws`.
    #[serde(default)]
    pub serverless: Option<bool>,

    // --- documents ---
    /// The index (or alias) documents go to: plain text, one date pattern of the send time in
    /// UTC (`app-%{yyyy.MM.dd}`), and `${/key}` or `${expression}` parts filled from each
    /// event. Required for `custom` and `management_disabled`; the other index types have
    /// their own.
    #[serde(default)]
    pub index: Option<String>,
    /// Make a name with `${...}` parts valid: lower case, without `: " * + / \ | ? # > <`, no
    /// leading `_` or `-`. Default false.
    #[serde(default)]
    pub normalize_index: bool,
    /// `index` (default), `create`, `update`, `upsert` or `delete`, or a `${...}` format giving
    /// one of them per event.
    #[serde(default)]
    pub action: Option<String>,
    /// Actions by condition: the first entry whose `when` holds wins; when none holds, the
    /// last entry's. Replaces `action`.
    #[serde(default)]
    pub actions: Vec<ActionEntry>,
    /// The document `_id`: a format with `${/key}` or `${expression}` parts. Default: from a
    /// kafka buffer, the event's buffer position (see `exactly_once`), else OpenSearch's.
    #[serde(default)]
    pub document_id: Option<String>,
    /// Deprecated: the `_id` is this key's value. Use `document_id: ${/key}`.
    #[serde(default)]
    pub document_id_field: Option<String>,
    /// Each operation's routing: a format as `document_id`.
    #[serde(default)]
    pub routing: Option<String>,
    /// Deprecated: routing is this key's value (wins over `routing`).
    #[serde(default)]
    pub routing_field: Option<String>,
    /// The ingest pipeline each `index` and `create` operation goes through: a format as
    /// `document_id` (Data Prepper's README key; its current code no longer reads it).
    #[serde(default)]
    pub pipeline: Option<String>,
    /// Each operation's `version`: a `${...}` format giving a whole number.
    #[serde(default)]
    pub document_version: Option<String>,
    /// `internal`, `external` or `external_gte`.
    #[serde(default)]
    pub document_version_type: Option<VersionType>,
    /// Write only this key's value as the document (`{"data": value}` when it is not an
    /// object); `include_keys`/`exclude_keys` then apply to it.
    #[serde(default, deserialize_with = "crate::event::opt_key")]
    pub document_root_key: Option<Key>,
    /// Not supported yet (Painless scripts for `update`/`upsert`).
    #[serde(default)]
    pub script: Option<serde_yaml::Value>,
    /// Look for a document already indexed before indexing one whose `query_when` holds:
    /// found (by `query_term`), the event is dropped as a duplicate.
    #[serde(default)]
    pub query_lookup: Option<QueryLookup>,
    /// Not supported (experimental in Data Prepper).
    #[serde(default)]
    pub pull_indexing: Option<serde_yaml::Value>,

    // --- index management ---
    /// What the index holds, which decides its template, policy and name: `custom` (the
    /// default; `management_disabled` with `aws.serverless`), `trace-analytics-raw`,
    /// `trace-analytics-plain-raw`, `trace-analytics-service-map`, `otel-v2-apm-service-map`,
    /// `log-analytics`, `log-analytics-plain`, `metric-analytics`, `metric-analytics-plain`,
    /// `tsdb`, `management_disabled` (sluice sets nothing up).
    #[serde(default)]
    pub index_type: Option<String>,
    /// `v1` (legacy `_template`, the default) or `index-template` (composable).
    #[serde(default)]
    pub template_type: Option<TemplateType>,
    /// A JSON file holding the index template (`custom`).
    #[serde(default)]
    pub template_file: Option<PathBuf>,
    /// The index template as JSON text; wins over `template_file`.
    #[serde(default)]
    pub template_content: Option<String>,
    /// Put in the template's `settings` unless the template sets it.
    #[serde(default)]
    pub number_of_shards: Option<u32>,
    /// Put in the template's `settings` unless the template sets it.
    #[serde(default)]
    pub number_of_replicas: Option<u32>,
    /// An ISM policy JSON file for `custom`: the index is then written through the alias
    /// `index` over `<index>-000001`, the policy named `<index>-policy`.
    #[serde(default)]
    pub ism_policy_file: Option<PathBuf>,

    // --- bulk ---
    /// The largest bulk request in MiB (a document larger than that goes alone); below 0: no
    /// limit. Default 5.
    #[serde(default = "default_bulk_size")]
    pub bulk_size: i64,
    /// Accepted for Data Prepper's configs; sluice measures each request's real size.
    #[serde(default)]
    pub estimate_bulk_size_using_compression: bool,
    /// Accepted for Data Prepper's configs; sluice measures each request's real size.
    #[serde(default)]
    pub max_local_compressions_for_estimation: Option<u32>,
    /// Milliseconds a partly filled request waits for more documents; `-1`: send at the end of
    /// every batch. Default 60000.
    #[serde(default = "default_flush_timeout")]
    pub flush_timeout: i64,
    /// Attempts of a bulk request (documents refused for a reason that may pass: 429, 5xx)
    /// before its documents are dead-lettered. Default: until taken, holding the buffer's
    /// commit (Data Prepper's default too).
    #[serde(default)]
    pub max_retries: Option<u32>,
    /// Data Prepper writes refused documents here; sluice writes them to the pipeline's
    /// dead-letter file (`sluice dlq list`, replayable), and says so at start.
    #[serde(default)]
    pub dlq_file: Option<PathBuf>,
    /// Data Prepper's S3 dead-letter queue; as `dlq_file`, sluice uses its dead-letter file.
    #[serde(default)]
    pub dlq: Option<serde_yaml::Value>,
    /// Removed in Data Prepper 2.0: use `index_type: trace-analytics-raw`.
    #[serde(default)]
    pub trace_analytics_raw: Option<serde_yaml::Value>,
    /// Removed in Data Prepper 2.0: use `index_type: trace-analytics-service-map`.
    #[serde(default)]
    pub trace_analytics_service_map: Option<serde_yaml::Value>,
    /// sluice's: from a kafka buffer, a document without `document_id` gets the `_id`
    /// `<topic>/<partition>/<offset>/<rank>` (where its event sits in the buffer), so a batch
    /// read again after a crash, or by another host of the group, overwrites instead of
    /// duplicating; with `action: create` a conflict on such an id means already indexed.
    /// `false`: OpenSearch chooses ids (Data Prepper's behaviour). Default true.
    #[serde(default = "crate::yes")]
    pub exactly_once: bool,
}

const fn default_bulk_size() -> i64 {
    5
}

const fn default_flush_timeout() -> i64 {
    60_000
}

/// `authentication` of the opensearch sink.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Authentication {
    #[serde(default)]
    pub username: Option<String>,
    /// The text, `${env:NAME}` or `${file:PATH}`.
    #[serde(default)]
    pub password: Option<String>,
    /// Sent as `Authorization: Bearer <token>`.
    #[serde(default)]
    pub api_token: Option<String>,
    /// Not supported yet (mutual TLS).
    #[serde(default)]
    pub client_certificate: Option<serde_yaml::Value>,
    /// Not supported yet (mutual TLS).
    #[serde(default)]
    pub client_key: Option<serde_yaml::Value>,
}

/// `aws` of the opensearch sink.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Aws {
    /// The signing region. Default `us-east-1` (Data Prepper's).
    #[serde(default)]
    pub region: Option<String>,
    /// An IAM role to assume through STS.
    #[serde(default)]
    pub sts_role_arn: Option<String>,
    /// The external id of the AssumeRole call.
    #[serde(default)]
    pub sts_external_id: Option<String>,
    /// Headers sent with the AssumeRole call (at most 5; with `sts_role_arn`).
    #[serde(default)]
    pub sts_header_overrides: BTreeMap<String, String>,
    /// Amazon OpenSearch Serverless: service `aoss`, `index_type` defaults to
    /// `management_disabled`, templates are composable.
    #[serde(default)]
    pub serverless: bool,
    /// Not supported yet (network policies through the AWS API).
    #[serde(default)]
    pub serverless_options: Option<serde_yaml::Value>,
    /// Not supported yet.
    #[serde(default)]
    pub resource_name: Option<serde_yaml::Value>,
    /// Not supported yet.
    #[serde(default)]
    pub semantic_enrichment: Option<serde_yaml::Value>,
}

/// `query_lookup` of the opensearch sink (Data Prepper's `QueryManagerConfiguration`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueryLookup {
    /// Which events are looked for first: a condition. Required.
    pub query_when: String,
    /// The key whose value finds the indexed document (a term query on that field).
    /// Required.
    pub query_term: String,
    /// How long Data Prepper holds a document to look for it. sluice looks once, when the
    /// document's request is sent (and again on each retry of it). Default `3m`.
    #[serde(
        default = "default_query_duration",
        deserialize_with = "crate::units::duration"
    )]
    pub query_duration: Duration,
    /// Look documents up again when their request failed with 500 or 504 (they may be indexed
    /// after all). sluice looks them up on every retry. Default false.
    #[serde(default)]
    pub query_on_bulk_errors: bool,
    /// How many documents may wait for a lookup in Data Prepper; in sluice a document waits
    /// only inside its request, so this is read and checked, not needed. Default 5000.
    #[serde(default = "default_async_limit")]
    pub async_limit: u32,
}

fn default_query_duration() -> Duration {
    Duration::from_secs(180)
}

const fn default_async_limit() -> u32 {
    5000
}

/// `query_lookup` as it runs.
#[derive(Debug, Clone)]
pub struct Lookup {
    pub when: Expression,
    pub term: Key,
    /// The field's name, as the term query names it.
    pub field: String,
}

/// An entry of `actions`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionEntry {
    /// `index`, `create`, `update`, `upsert`, `delete`, or a `${...}` format. Required.
    #[serde(rename = "type")]
    pub kind: String,
    /// The condition (an expression). Default: none.
    #[serde(default)]
    pub when: Option<String>,
}

/// `distribution_version`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DistributionVersion {
    #[default]
    Default,
    Es6,
}

/// `document_version_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VersionType {
    #[serde(alias = "INTERNAL")]
    Internal,
    #[serde(alias = "EXTERNAL")]
    External,
    #[serde(alias = "EXTERNAL_GTE")]
    ExternalGte,
}

impl VersionType {
    /// As the bulk API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Internal => "internal",
            Self::External => "external",
            Self::ExternalGte => "external_gte",
        }
    }
}

/// `template_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum TemplateType {
    /// Legacy templates (`_template`).
    #[serde(rename = "v1")]
    V1,
    /// Composable templates (`_index_template`).
    #[serde(rename = "index-template")]
    IndexTemplate,
}

/// Every `index_type` Data Prepper takes, in its order.
pub const INDEX_TYPES: &[&str] = &[
    "trace-analytics-raw",
    "trace-analytics-plain-raw",
    "trace-analytics-service-map",
    "otel-v2-apm-service-map",
    "log-analytics",
    "log-analytics-plain",
    "metric-analytics",
    "metric-analytics-plain",
    "tsdb",
    "custom",
    "management_disabled",
];

/// The five bulk actions.
pub const ACTIONS: &[&str] = &["create", "upsert", "update", "delete", "index"];

/// A bulk action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Index,
    Create,
    Update,
    Upsert,
    Delete,
}

impl Action {
    /// The action `name` names (any case), as Data Prepper reads it.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name.to_ascii_lowercase().as_str() {
            "index" => Self::Index,
            "create" => Self::Create,
            "update" => Self::Update,
            "upsert" => Self::Upsert,
            "delete" => Self::Delete,
            _ => return None,
        })
    }
}

/// An action: fixed, or a format filled per event.
#[derive(Debug, Clone)]
pub enum ActionSource {
    Fixed(Action),
    Format(Template),
}

/// Where a per-document value (`_id`, routing) comes from.
#[derive(Debug, Clone)]
pub enum ValueSource {
    /// `document_id_field`/`routing_field`: a key's value.
    Field(Key),
    /// `document_id`/`routing`: a format.
    Format(Template),
}

/// The `index` value: its `${...}` parts, then its date pattern (Java `DateTimeFormatter`
/// letters, translated to chrono's).
#[derive(Debug, Clone)]
pub struct IndexName {
    /// The text with the date pattern replaced by `%{}`.
    pub format: Template,
    /// The chrono format of the date pattern, if any.
    pub date: Option<String>,
    /// Whether the name has `${...}` parts.
    pub dynamic: bool,
}

/// Where SigV4 signing gets its settings.
#[derive(Debug, Clone)]
pub struct AwsSigning {
    pub region: String,
    /// Amazon OpenSearch Serverless (`aoss`), else `es`.
    pub serverless: bool,
    pub sts_role_arn: Option<String>,
    pub sts_external_id: Option<String>,
    pub sts_header_overrides: BTreeMap<String, String>,
}

/// The opensearch sink as it runs.
#[derive(Debug, Clone)]
pub struct OpenSearchSettings {
    /// Node URLs, without a trailing `/`, with `path_prefix` appended.
    pub hosts: Vec<String>,
    pub basic: Option<BasicAuth>,
    pub api_token: Option<String>,
    pub cert: Option<PathBuf>,
    pub insecure: bool,
    /// `http://host:port`.
    pub proxy: Option<String>,
    pub connect_timeout: Duration,
    pub socket_timeout: Duration,
    pub es6: bool,
    pub compression: bool,
    pub aws: Option<AwsSigning>,
    /// One of [`INDEX_TYPES`].
    pub index_type: &'static str,
    /// `None` for the types with their own alias.
    pub index: Option<IndexName>,
    pub normalize_index: bool,
    /// `(action, condition)`: the first whose condition holds, else the last.
    pub actions: Vec<(ActionSource, Option<Expression>)>,
    pub document_id: Option<ValueSource>,
    pub routing: Option<ValueSource>,
    /// The ingest pipeline of `index` and `create` operations.
    pub pipeline: Option<Template>,
    pub document_version: Option<Template>,
    pub version_type: Option<VersionType>,
    pub document_root_key: Option<Key>,
    pub query_lookup: Option<Lookup>,
    pub template_type: TemplateType,
    /// The user's template: `template_content`, else `template_file` (read at start).
    pub template_content: Option<String>,
    pub template_file: Option<PathBuf>,
    pub number_of_shards: Option<u32>,
    pub number_of_replicas: Option<u32>,
    pub ism_policy_file: Option<PathBuf>,
    /// Bytes; `None`: no limit.
    pub bulk_size: Option<u64>,
    /// `None`: send at the end of every batch.
    pub flush_timeout: Option<Duration>,
    /// Retries after the first attempt; `None`: forever.
    pub max_retries: Option<u32>,
    /// Whether the user named a Data Prepper dead-letter queue (`dlq_file`, `dlq`).
    pub dlq_named: bool,
    pub exactly_once: bool,
}

/// Why the opensearch sink's settings cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum OpenSearchConfigError {
    #[error("password: {0}")]
    Secret(#[from] SecretError),
    #[error("{0}")]
    Invalid(String),
}

impl OpenSearchSink {
    /// The index type, as Data Prepper defaults it.
    fn index_type(&self) -> Option<&'static str> {
        let serverless = self.aws.as_ref().is_some_and(|a| a.serverless);
        match &self.index_type {
            None if serverless => Some("management_disabled"),
            None => Some("custom"),
            Some(t) => INDEX_TYPES.iter().copied().find(|known| known == t),
        }
    }

    fn template_type(&self) -> TemplateType {
        if self.distribution_version == DistributionVersion::Es6 {
            TemplateType::V1
        } else if self.aws.as_ref().is_some_and(|a| a.serverless) {
            TemplateType::IndexTemplate
        } else {
            self.template_type.unwrap_or(TemplateType::V1)
        }
    }

    fn credentials(&self) -> (Option<&String>, Option<&String>, Option<&String>) {
        match &self.authentication {
            Some(a) => (a.username.as_ref(), a.password.as_ref(), a.api_token.as_ref()),
            None => (
                self.username.as_ref(),
                self.password.as_ref(),
                self.api_token.as_ref(),
            ),
        }
    }

    fn aws_signing(&self) -> Option<AwsSigning> {
        if let Some(aws) = &self.aws {
            return Some(AwsSigning {
                region: aws.region.clone().unwrap_or_else(|| "us-east-1".to_owned()),
                serverless: aws.serverless,
                sts_role_arn: aws.sts_role_arn.clone(),
                sts_external_id: aws.sts_external_id.clone(),
                sts_header_overrides: aws.sts_header_overrides.clone(),
            });
        }
        self.aws_sigv4.then(|| AwsSigning {
            region: self
                .aws_region
                .clone()
                .unwrap_or_else(|| "us-east-1".to_owned()),
            serverless: false,
            sts_role_arn: self.aws_sts_role_arn.clone(),
            sts_external_id: self.aws_sts_external_id.clone(),
            sts_header_overrides: self.aws_sts_header_overrides.clone().unwrap_or_default(),
        })
    }

    fn action_list(&self) -> Result<Vec<(ActionSource, Option<Expression>)>, String> {
        let source = |name: &str, key: &str| -> Result<ActionSource, String> {
            if name.contains("${") {
                return Template::parse(name)
                    .map(ActionSource::Format)
                    .map_err(|e| format!("`{key}`: {e}"));
            }
            Action::parse(name).map(ActionSource::Fixed).ok_or_else(|| {
                format!(
                    "`{key}` is `{name}`; the action must be one of {}, or a `${{...}}` format",
                    ACTIONS.join(", ")
                )
            })
        };
        if self.actions.is_empty() {
            let action = self.action.as_deref().unwrap_or("index");
            return Ok(vec![(source(action, "action")?, None)]);
        }
        self.actions
            .iter()
            .enumerate()
            .map(|(i, entry)| {
                let when = match &entry.when {
                    Some(w) => Some(
                        Expression::parse_condition(w)
                            .map_err(|e| format!("`actions[{i}].when`: {e}"))?,
                    ),
                    None => None,
                };
                Ok((source(&entry.kind, &format!("actions[{i}].type"))?, when))
            })
            .collect()
    }

    fn value_source(
        field: &Option<String>,
        format: &Option<String>,
        field_key: &str,
        format_key: &str,
    ) -> Result<Option<ValueSource>, String> {
        if let Some(field) = field {
            return Key::parse(field)
                .map(|k| Some(ValueSource::Field(k)))
                .map_err(|e| format!("`{field_key}`: {e}"));
        }
        match format {
            Some(f) => Template::parse(f)
                .map(|t| Some(ValueSource::Format(t)))
                .map_err(|e| format!("`{format_key}`: {e}")),
            None => Ok(None),
        }
    }

    /// The local files the sink reads, by key: `cert` (unless `insecure`), the template and
    /// the ISM policy (unless in S3).
    fn files(&self) -> Vec<(&'static str, &Path)> {
        let mut files = Vec::new();
        if let Some(cert) = self.cert.as_deref().filter(|_| !self.insecure) {
            files.push(("cert", cert));
        }
        for (key, file) in [
            ("template_file", &self.template_file),
            ("ism_policy_file", &self.ism_policy_file),
        ] {
            if let Some(file) = file.as_deref()
                && !file.to_string_lossy().starts_with("s3://")
            {
                files.push((key, file));
            }
        }
        files
    }

    /// Every rule, as messages relative to the sink (`key`: message); with `files`, that the
    /// files it names are readable.
    fn problems(&self, files: bool) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        let mut bad = |key: &str, message: String| out.push((key.to_owned(), message));
        if self.hosts.is_empty() {
            bad(
                "hosts",
                "`hosts` is empty; give the cluster's URLs, e.g. `[\"https://localhost:9200\"]`"
                    .into(),
            );
        }
        for (i, host) in self.hosts.iter().enumerate() {
            let url = with_scheme(host);
            if !(url.starts_with("http://") || url.starts_with("https://"))
                || url.split("://").nth(1).is_none_or(str::is_empty)
            {
                bad(
                    &format!("hosts[{i}]"),
                    format!("`hosts[{i}]` is `{host}`; write an http:// or https:// URL, e.g. `https://localhost:9200`"),
                );
            }
        }
        if self.authentication.is_some()
            && (self.username.is_some() || self.password.is_some() || self.api_token.is_some())
        {
            bad(
                "authentication",
                "`username`/`password`/`api_token` and `authentication` are both given; keep one"
                    .into(),
            );
        }
        let (user, password, _) = self.credentials();
        if user.is_some() != password.is_some() {
            bad(
                "password",
                "`username` and `password` go together; give both or neither".into(),
            );
        }
        if let Some(password) = password
            && let Err(e) = resolve_secret(password)
        {
            bad("password", format!("`password`: {e}"));
        }
        if let Some(a) = &self.authentication {
            for (key, given) in [
                ("client_certificate", a.client_certificate.is_some()),
                ("client_key", a.client_key.is_some()),
            ] {
                if given {
                    bad(
                        &format!("authentication.{key}"),
                        format!("`authentication.{key}`: client certificates are not supported yet; use `username`/`password` or `api_token`"),
                    );
                }
            }
        }
        if files {
            for (key, file) in self.files() {
                if !file.is_file() {
                    bad(
                        key,
                        format!("`{key}`: `{}` is not a readable file", file.display()),
                    );
                }
            }
        }
        if let Some(proxy) = &self.proxy {
            let rest = proxy
                .strip_prefix("http://")
                .or_else(|| proxy.strip_prefix("https://"))
                .unwrap_or(proxy);
            let port_ok = rest
                .trim_end_matches('/')
                .rsplit_once(':')
                .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
            if !port_ok {
                bad(
                    "proxy",
                    format!("`proxy` is `{proxy}`: invalid or missing proxy port; write `host:port`"),
                );
            }
        }
        if let Some(aws) = &self.aws {
            for (key, given) in [
                ("aws_sigv4", self.aws_sigv4),
                ("aws_region", self.aws_region.is_some()),
                ("aws_sts_role_arn", self.aws_sts_role_arn.is_some()),
                ("aws_sts_external_id", self.aws_sts_external_id.is_some()),
                (
                    "aws_sts_header_overrides",
                    self.aws_sts_header_overrides.is_some(),
                ),
                ("serverless", self.serverless.is_some()),
            ] {
                if given {
                    bad(key, format!("`{key}` cannot be used along with `aws`; it is deprecated, write it inside `aws`"));
                }
            }
            if aws.region.as_deref().is_some_and(|r| r.trim().is_empty()) {
                bad(
                    "aws.region",
                    "`aws.region` must not be empty, e.g. `us-east-1`".into(),
                );
            }
            for (key, given) in [
                ("serverless_options", aws.serverless_options.is_some()),
                ("resource_name", aws.resource_name.is_some()),
                ("semantic_enrichment", aws.semantic_enrichment.is_some()),
            ] {
                if given {
                    bad(
                        &format!("aws.{key}"),
                        format!("`aws.{key}` is not supported yet (it calls AWS's control plane); remove it and set that up in AWS"),
                    );
                }
            }
        }
        if let Some(signing) = self.aws_signing() {
            if let Some(arn) = &signing.sts_role_arn
                && !(arn.starts_with("arn:") && arn.contains(":iam::") && arn.contains(":role/"))
            {
                bad(
                    "aws.sts_role_arn",
                    format!("`sts_role_arn` is `{arn}`; it must be an IAM role ARN, e.g. `arn:aws:iam::123456789012:role/ingest`"),
                );
            }
            if signing.sts_header_overrides.len() > 5 {
                bad(
                    "aws.sts_header_overrides",
                    "`sts_header_overrides` takes at most 5 headers".into(),
                );
            }
            if !signing.sts_header_overrides.is_empty() && signing.sts_role_arn.is_none() {
                bad(
                    "aws.sts_header_overrides",
                    "`sts_header_overrides` goes with `sts_role_arn`; give the role, or remove it"
                        .into(),
                );
            }
            if signing.sts_external_id.is_some() && signing.sts_role_arn.is_none() {
                bad(
                    "aws.sts_external_id",
                    "`sts_external_id` goes with `sts_role_arn`; give the role, or remove it".into(),
                );
            }
        }
        let index_type = self.index_type();
        match (&self.index_type, index_type) {
            (Some(given), None) => bad(
                "index_type",
                format!(
                    "`index_type` is `{given}`; it must be one of {}",
                    INDEX_TYPES.join(", ")
                ),
            ),
            (_, Some("custom" | "management_disabled")) if self.index.is_none() => bad(
                "index",
                "`index` is required for this `index_type`; e.g. `index: application-%{yyyy.MM.dd}`"
                    .into(),
            ),
            _ => {}
        }
        if let Some(index) = &self.index
            && let Err(e) = parse_index(index)
        {
            bad("index", format!("`index`: {e}"));
        }
        if let Err(e) = self.action_list() {
            let key = if self.actions.is_empty() {
                "action"
            } else {
                "actions"
            };
            bad(key, e);
        }
        if self.document_id.is_some() && self.document_id_field.is_some() {
            bad(
                "document_id_field",
                "`document_id` and `document_id_field` are both given; keep `document_id` (write `${/key}` for a key's value)".into(),
            );
        }
        if let Err(e) = Self::value_source(
            &self.document_id_field,
            &self.document_id,
            "document_id_field",
            "document_id",
        ) {
            bad("document_id", e);
        }
        if let Err(e) =
            Self::value_source(&self.routing_field, &self.routing, "routing_field", "routing")
        {
            bad("routing", e);
        }
        if let Some(pipeline) = &self.pipeline
            && let Err(e) = Template::parse(pipeline)
        {
            bad("pipeline", format!("`pipeline`: {e}"));
        }
        if let Some(version) = &self.document_version {
            if !version.contains("${") {
                bad(
                    "document_version",
                    format!("`document_version` is `{version}`; it must be in the form `${{/key}}` or `${{expression}}`"),
                );
            } else if let Err(e) = Template::parse(version) {
                bad("document_version", format!("`document_version`: {e}"));
            }
        }
        for (key, given, what) in [
            (
                "script",
                self.script.is_some(),
                "Painless scripts are not supported yet; use `action: update` with the document",
            ),
            (
                "pull_indexing",
                self.pull_indexing.is_some(),
                "pull-based ingestion (experimental in Data Prepper) is not supported",
            ),
            (
                "trace_analytics_raw",
                self.trace_analytics_raw.is_some(),
                "removed in Data Prepper 2.0: write `index_type: trace-analytics-raw`",
            ),
            (
                "trace_analytics_service_map",
                self.trace_analytics_service_map.is_some(),
                "removed in Data Prepper 2.0: write `index_type: trace-analytics-service-map`",
            ),
        ] {
            if given {
                bad(key, format!("`{key}`: {what}"));
            }
        }
        if let Some(q) = &self.query_lookup
            && let Err(e) = lookup(q)
        {
            bad("query_lookup", e);
        }
        if let Some(content) = &self.template_content
            && let Err(e) = serde_json::from_str::<serde_json::Value>(content)
        {
            bad(
                "template_content",
                format!("`template_content` is not valid JSON: {e}"),
            );
        }
        for (key, file) in [
            ("template_file", &self.template_file),
            ("ism_policy_file", &self.ism_policy_file),
        ] {
            if let Some(file) = file
                && file.to_string_lossy().starts_with("s3://")
            {
                bad(key, format!("`{key}`: reading it from S3 is not supported yet; give a local file"));
            }
        }
        if self.flush_timeout < -1 {
            bad(
                "flush_timeout",
                "`flush_timeout` is milliseconds, or -1 to send at the end of every batch".into(),
            );
        }
        if self.max_retries == Some(0) {
            bad(
                "max_retries",
                "`max_retries` counts attempts and must be at least 1".into(),
            );
        }
        if self.dlq_file.is_some() && self.dlq.is_some() {
            bad(
                "dlq",
                "`dlq_file` cannot be used along with `dlq`; keep one".into(),
            );
        }
        out
    }
}

/// `query_lookup`'s condition and key, read.
fn lookup(q: &QueryLookup) -> Result<Lookup, String> {
    let when = Expression::parse_condition(&q.query_when)
        .map_err(|e| format!("`query_lookup.query_when`: {e}"))?;
    let term = Key::parse(&q.query_term).map_err(|e| format!("`query_lookup.query_term`: {e}"))?;
    Ok(Lookup {
        when,
        term,
        field: q.query_term.trim_start_matches('/').replace('/', "."),
    })
}

/// Reads an `index` value: at most one `%{...}` date pattern, of hours or coarser.
pub fn parse_index(index: &str) -> Result<IndexName, String> {
    if index.is_empty() {
        return Err("it must not be empty".into());
    }
    let mut date = None;
    let mut text = index.to_owned();
    // The docs page writes the date as `${yyyy.MM.dd}` (Data Prepper itself would look for a
    // key of that name and dead-letter every event): read as `%{yyyy.MM.dd}`.
    let index = &docs_date_form(index);
    if let Some(start) = index.find("%{") {
        let after = &index[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("`%{{` at character {start} has no closing `}}`"));
        };
        let pattern = &after[..end];
        if pattern.contains("%{") {
            return Err("an index doesn't allow nested date-time patterns".into());
        }
        if after[end + 1..].contains("%{") {
            return Err("an index allows only one date-time pattern".into());
        }
        date = Some(java_date_to_chrono(pattern)?);
        text = format!("{}%{{}}{}", &index[..start], &after[end + 1..]);
    }
    let format = Template::parse(&text).map_err(|e| e.to_string())?;
    Ok(IndexName {
        dynamic: text.contains("${"),
        format,
        date,
    })
}

/// `index` with a `${...}` that can only be a date pattern (`${yyyy.MM.dd}`) written `%{...}`.
fn docs_date_form(index: &str) -> String {
    let mut out = index.to_owned();
    let mut from = 0;
    while let Some(start) = out[from..].find("${").map(|i| i + from) {
        let Some(len) = out[start..].find('}') else {
            break;
        };
        let inner = &out[start + 2..start + len];
        let date_like = inner.contains("yy")
            && inner
                .chars()
                .all(|c| "yuMdHDw.-_".contains(c));
        if date_like {
            out.replace_range(start..start + 1, "%");
        }
        from = start + len;
    }
    out
}

/// A Java `DateTimeFormatter` pattern of hours or coarser as a chrono format.
fn java_date_to_chrono(pattern: &str) -> Result<String, String> {
    let mut out = String::new();
    let chars: Vec<char> = pattern.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let run = chars[i..].iter().take_while(|&&d| d == c).count();
        match (c, run) {
            ('y' | 'u', 4) => out.push_str("%Y"),
            ('y' | 'u', 2) => out.push_str("%y"),
            ('M', 2) => out.push_str("%m"),
            ('M', 1) => out.push_str("%-m"),
            ('d', 2) => out.push_str("%d"),
            ('d', 1) => out.push_str("%-d"),
            ('H', 2) => out.push_str("%H"),
            ('H', 1) => out.push_str("%-H"),
            ('D', 3) => out.push_str("%j"),
            ('w', 2) => out.push_str("%V"),
            ('m' | 's' | 'S' | 'A' | 'n' | 'N', _) => {
                return Err(format!(
                    "the date pattern `%{{{pattern}}}` holds `{c}`, finer than an hour; an index may change at most hourly"
                ));
            }
            ('.' | '-' | '_' | '+', _) => {
                out.extend(std::iter::repeat_n(c, run));
            }
            ('#' | '\\' | '/' | '*' | '?' | '"' | '<' | '>' | '|' | ',' | ':', _) => {
                return Err(format!(
                    "the date pattern `%{{{pattern}}}` holds `{c}`, which an index name cannot"
                ));
            }
            _ => {
                return Err(format!(
                    "the date pattern `%{{{pattern}}}` holds `{}`, which sluice does not read; use yyyy, yy, MM, M, dd, d, HH, H, DDD, ww and . - _",
                    chars[i..i + run].iter().collect::<String>()
                ));
            }
        }
        i += run;
    }
    Ok(out)
}

impl crate::Resolve for OpenSearchSink {
    type Settings = OpenSearchSettings;
    type Error = OpenSearchConfigError;
    /// Reads the password and token.
    fn resolve(&self, _pipeline: &str) -> Result<OpenSearchSettings, OpenSearchConfigError> {
        if let Some((key, message)) = self.problems(true).into_iter().next() {
            return Err(OpenSearchConfigError::Invalid(format!("{key}: {message}")));
        }
        let invalid = OpenSearchConfigError::Invalid;
        let (user, password, token) = self.credentials();
        let basic = match (user, password) {
            (Some(username), Some(password)) => Some(BasicAuth {
                username: username.clone(),
                password: resolve_secret(password)?,
            }),
            _ => None,
        };
        let prefix = self
            .path_prefix
            .as_deref()
            .map(|p| format!("/{}", p.trim_matches('/')))
            .filter(|p| p != "/")
            .unwrap_or_default();
        let index_type = self.index_type().expect("checked");
        let builtin_alias = !matches!(index_type, "custom" | "management_disabled");
        let es6 = self.distribution_version == DistributionVersion::Es6;
        let ms = |v: Option<u64>| Duration::from_millis(v.filter(|&v| v > 0).unwrap_or(60_000));
        Ok(OpenSearchSettings {
            hosts: self
                .hosts
                .iter()
                .map(|h| format!("{}{prefix}", with_scheme(h).trim_end_matches('/')))
                .collect(),
            basic,
            api_token: token.map(|t| resolve_secret(t)).transpose()?,
            cert: self.cert.clone().filter(|_| !self.insecure),
            insecure: self.insecure,
            proxy: self.proxy.as_ref().map(|p| {
                if p.contains("://") {
                    p.clone()
                } else {
                    format!("http://{p}")
                }
            }),
            connect_timeout: ms(self.connect_timeout),
            socket_timeout: ms(self.socket_timeout),
            es6,
            compression: self.enable_request_compression.unwrap_or(!es6),
            aws: self.aws_signing(),
            index_type,
            index: match (&self.index, builtin_alias) {
                (Some(index), false) => Some(parse_index(index).map_err(invalid)?),
                _ => None,
            },
            normalize_index: self.normalize_index,
            actions: self.action_list().map_err(invalid)?,
            document_id: Self::value_source(
                &self.document_id_field,
                &self.document_id,
                "document_id_field",
                "document_id",
            )
            .map_err(invalid)?,
            routing: Self::value_source(
                &self.routing_field,
                &self.routing,
                "routing_field",
                "routing",
            )
            .map_err(invalid)?,
            pipeline: self
                .pipeline
                .as_deref()
                .map(Template::parse)
                .transpose()
                .map_err(|e| invalid(e.to_string()))?,
            document_version: self
                .document_version
                .as_deref()
                .map(Template::parse)
                .transpose()
                .map_err(|e| invalid(e.to_string()))?,
            version_type: self.document_version_type,
            document_root_key: self.document_root_key.clone(),
            query_lookup: self
                .query_lookup
                .as_ref()
                .map(lookup)
                .transpose()
                .map_err(invalid)?,
            template_type: self.template_type(),
            template_content: self.template_content.clone(),
            template_file: self.template_file.clone(),
            number_of_shards: self.number_of_shards.filter(|&n| n > 0),
            number_of_replicas: self.number_of_replicas,
            ism_policy_file: self.ism_policy_file.clone(),
            bulk_size: u64::try_from(self.bulk_size)
                .ok()
                .map(|mib| mib.saturating_mul(1024 * 1024)),
            flush_timeout: u64::try_from(self.flush_timeout)
                .ok()
                .map(Duration::from_millis),
            max_retries: self.max_retries.map(|attempts| attempts.saturating_sub(1)),
            dlq_named: self.dlq_file.is_some() || self.dlq.is_some(),
            exactly_once: self.exactly_once,
        })
    }
}

/// A host as Data Prepper's `HttpHost.create` reads it: without a scheme, `http://`.
fn with_scheme(host: &str) -> Cow<'_, str> {
    if host.contains("://") {
        Cow::Borrowed(host)
    } else {
        Cow::Owned(format!("http://{host}"))
    }
}

impl super::SinkConfig for OpenSearchSink {
    fn check(&self, path: &str, errors: &mut Errors) {
        for (key, message) in self.problems(false) {
            errors.at(&join(path, &key), format!("`{path}`: {message}"));
        }
        for (key, file) in self.files() {
            errors.file(&join(path, key), file);
        }
    }

    fn name(&self) -> String {
        let host = self.hosts.first().map_or("", String::as_str);
        let index = match self.index_type() {
            Some("custom" | "management_disabled") | None => {
                self.index.as_deref().unwrap_or("")
            }
            Some(t) => t,
        };
        format!("opensearch:{host}/{index}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn date_patterns_translate_and_fine_ones_are_refused() {
        let i = parse_index("app-%{yyyy.MM.dd}").unwrap();
        assert_eq!(i.date.as_deref(), Some("%Y.%m.%d"));
        assert!(!i.dynamic);
        assert!(parse_index("app-%{yyyy.MM.dd.HH}").is_ok());
        let e = parse_index("app-%{yyyy.MM.dd.HH.mm}").unwrap_err();
        assert!(e.contains("finer than an hour"), "{e}");
        assert!(parse_index("a-%{yyyy}-%{MM}").is_err());
        let docs = parse_index("my-index-${yyyy.MM.dd}").unwrap();
        assert_eq!(docs.date.as_deref(), Some("%Y.%m.%d"));
        assert!(!docs.dynamic);
        let d = parse_index("logs-${/service}-%{yyyy}").unwrap();
        assert!(d.dynamic);
    }
}
