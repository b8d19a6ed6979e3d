//! The `opensearch` sink: events become documents through the bulk API, as Data Prepper's
//! opensearch sink writes them (`docs/design/opensearch.md`).
//!
//! - `encode`: each event's action line and document, made by the router from the whole event
//!   ([`Output::encoder`]).
//! - `client`: the cluster's hosts, authentication (basic, bearer, SigV4), gzip.
//! - `setup`: templates, ISM policies and first indices, before an index's first document.
//! - `builtin`: Data Prepper's index types with their templates and policies.
//! - this file: a request's documents sent as one `_bulk`, each item's answer read: taken,
//!   refused for good (dead-lettered with the error's type and reason), or retried; a request
//!   the cluster finds too large (413) is split in halves.
//!
//! Each document once: from a kafka buffer, a document without `document_id` gets the `_id`
//! `<topic>/<partition>/<offset>/<rank>` (where its event sits in the buffer), added here from
//! the request's provenance, so a batch read again overwrites; a 409 on a `create` with such an
//! id is a document already indexed.

mod builtin;
mod client;
mod encode;
mod setup;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use reqwest::Method;
use serde_json::{Map, Value};
use sluice_config::sink::opensearch::{OpenSearchSettings, VersionType};

use self::client::Client;
use self::encode::{ERROR_KEY, Encoder, LOOKUP_KEY};
use super::{Output, Provenance, Retry, SendError, Threshold};

pub use self::client::ClientError;

/// Why the opensearch sink cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum OpenSearchError {
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error("{key} {}: {source}", .path.display())]
    File {
        key: &'static str,
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("{key}: not valid JSON: {source}")]
    Json {
        key: &'static str,
        source: serde_json::Error,
    },
    #[error("the cluster refused the credentials ({status}): {reason}")]
    Refused { status: u16, reason: String },
}

/// The sink's counters, with Data Prepper's names (`sluice_opensearch_<name>`), labelled
/// `{pipeline, sink}`.
struct Metrics {
    documents_success: metrics::Counter,
    document_errors: metrics::Counter,
    already_indexed: metrics::Counter,
    version_conflicts: metrics::Counter,
    bulk_request_failed: metrics::Counter,
    bulk_request_errors: metrics::Counter,
    bulk_request_latency: metrics::Histogram,
    bulk_request_size: metrics::Histogram,
    /// By the status class of a whole request's error answer, as Data Prepper groups them.
    status_errors: [metrics::Counter; 6],
    dynamic_index_dropped: metrics::Counter,
    duplicates_dropped: metrics::Counter,
}

/// Data Prepper's counters of whole-request error answers, by status.
const STATUS_COUNTERS: [&str; 6] = [
    "sluice_opensearch_bulkBadRequestErrors",
    "sluice_opensearch_bulkRequestNotAllowedErrors",
    "sluice_opensearch_bulkRequestInvalidInputErrors",
    "sluice_opensearch_bulkRequestNotFoundErrors",
    "sluice_opensearch_bulkRequestTimeoutErrors",
    "sluice_opensearch_bulkRequestServerErrors",
];

impl Metrics {
    fn new(pipeline: &str, sink: &str) -> Self {
        let labels = [
            ("pipeline", pipeline.to_owned()),
            ("sink", sink.to_owned()),
        ];
        let c = |name: &'static str| metrics::counter!(name, &labels);
        Self {
            documents_success: c("sluice_opensearch_documentsSuccess"),
            document_errors: c("sluice_opensearch_documentErrors"),
            already_indexed: c("sluice_opensearch_documentsAlreadyIndexed"),
            version_conflicts: c("sluice_opensearch_documentsVersionConflictErrors"),
            bulk_request_failed: c("sluice_opensearch_bulkRequestFailed"),
            bulk_request_errors: c("sluice_opensearch_bulkRequestErrors"),
            bulk_request_latency: metrics::histogram!(
                "sluice_opensearch_bulkRequestLatency",
                &labels
            ),
            bulk_request_size: metrics::histogram!(
                "sluice_opensearch_bulkRequestSizeBytes",
                &labels
            ),
            status_errors: STATUS_COUNTERS.map(c),
            dynamic_index_dropped: c("sluice_opensearch_dynamicIndexDroppedEvents"),
            duplicates_dropped: c("sluice_opensearch_eventsDroppedAndReleasedAfterQuery"),
        }
    }

    fn whole_request_error(&self, status: u16) {
        let group = match status {
            401..=403 | 405 | 407 | 423 | 429 => 1,
            409 | 411..=416 => 2,
            404 | 410 => 3,
            408 => 4,
            500.. => 5,
            _ => 0,
        };
        self.status_errors[group].increment(1);
    }
}

pub struct OpenSearchSink {
    client: Client,
    encoder: Arc<Encoder>,
    /// What to set up before an index's first document; `None`: `management_disabled`.
    plan: Option<setup::Plan>,
    /// The configured index (date pattern unfilled) or the type's alias.
    pattern: String,
    /// The index has `${...}` parts: each resolved name gets its own setup, as in Data
    /// Prepper.
    dynamic: bool,
    /// Names already set up.
    ready: tokio::sync::Mutex<HashSet<String>>,
    threshold: Threshold,
    retry: Retry,
    exactly_once: bool,
    es6: bool,
    /// `document_version_type` is `external`/`external_gte`: a version conflict is expected.
    external_versions: bool,
    /// `query_lookup`'s field.
    lookup_field: Option<String>,
    metrics: Metrics,
}

impl super::BuildOutput for OpenSearchSettings {
    type Error = OpenSearchError;

    async fn build(
        self,
        name: &str,
        cx: &super::SinkBuild<'_>,
    ) -> Result<Arc<dyn Output>, OpenSearchError> {
        let s = self;
        let client = Client::new(&s).await?;
        let builtin = builtin::builtin(s.index_type);
        let pattern = match (&builtin, &s.index) {
            (Some(b), _) if !b.alias.is_empty() => b.alias.to_owned(),
            (_, Some(index)) => index.format.as_str().replacen(
                "%{}",
                &format!("%{{{}}}", index.date.clone().unwrap_or_default()),
                1,
            ),
            _ => String::new(),
        };
        let forced_id = builtin
            .as_ref()
            .and_then(|b| b.document_id)
            .and_then(|f| sluice_event::Template::parse(f).ok());
        let encoder = Arc::new(Encoder::new(&s, &pattern, forced_id));
        let plan = plan(&s, builtin.as_ref(), &pattern)?;
        // A start-up check as the s3 sink's: refused credentials stop the pipeline; a cluster
        // that does not answer yet is waited for, document by document.
        match client.call(Method::GET, "/", None).await {
            Ok(answer) if answer.status == 401 || answer.status == 403 => {
                return Err(OpenSearchError::Refused {
                    status: answer.status,
                    reason: answer.reason(),
                });
            }
            Ok(_) => {}
            Err(reason) => {
                tracing::warn!(sink = name, %reason, "the cluster does not answer yet; documents wait in the buffer until it does")
            }
        }
        if s.dlq_named {
            tracing::warn!(
                sink = name,
                "`dlq_file`/`dlq`: documents the cluster refuses go to the pipeline's dead-letter file (`sluice dlq list`), not to Data Prepper's DLQ"
            );
        }
        Ok(Arc::new(OpenSearchSink {
            client,
            encoder,
            dynamic: s.index.as_ref().is_some_and(|i| i.dynamic),
            plan,
            pattern,
            ready: tokio::sync::Mutex::new(HashSet::new()),
            threshold: Threshold {
                event_count: None,
                maximum_size: s.bulk_size,
                // `-1`: at the end of every batch; the staging task sends at once.
                event_collect_timeout: Some(
                    s.flush_timeout
                        .unwrap_or(std::time::Duration::from_millis(1)),
                ),
            },
            retry: Retry {
                max_retries: s.max_retries,
                ..Retry::default()
            },
            exactly_once: s.exactly_once,
            es6: s.es6,
            external_versions: matches!(
                s.version_type,
                Some(VersionType::External | VersionType::ExternalGte)
            ),
            lookup_field: s.query_lookup.as_ref().map(|q| q.field.clone()),
            metrics: Metrics::new(cx.pipeline, name),
        }))
    }
}

/// What setup does for this sink, as Data Prepper's index managers do per type.
fn plan(
    s: &OpenSearchSettings,
    builtin: Option<&builtin::Builtin>,
    pattern: &str,
) -> Result<Option<setup::Plan>, OpenSearchError> {
    if s.index_type == "management_disabled" {
        return Ok(None);
    }
    let parse = |key: &'static str, text: &str| {
        serde_json::from_str::<Value>(text).map_err(|source| OpenSearchError::Json { key, source })
    };
    let read = |key: &'static str, path: &std::path::Path| {
        std::fs::read_to_string(path).map_err(|source| OpenSearchError::File {
            key,
            path: path.to_owned(),
            source,
        })
    };
    let composable = s.template_type == sluice_config::sink::opensearch::TemplateType::IndexTemplate;
    // `template_content` wins over everything, as in Data Prepper; then the type's own, then
    // `template_file`.
    let template = match (&s.template_content, builtin, &s.template_file) {
        (Some(text), _, _) => Some(parse("template_content", text)?),
        (None, Some(b), _) => {
            let text = if composable {
                b.template_composable.or(b.template_v1)
            } else {
                b.template_v1.or(b.template_composable)
            };
            text.map(|t| parse("index_type template", t)).transpose()?
        }
        (None, None, Some(file)) => Some(parse("template_file", &read("template_file", file)?)?),
        (None, None, None) => None,
    };
    let user_policy = builtin.is_none_or(|b| b.user_ism_policy_file);
    let (policy, rollover) = match (builtin, &s.ism_policy_file) {
        (_, Some(file)) if user_policy => {
            let name = builtin::custom_policy_name(pattern);
            let mut policy = parse("ism_policy_file", &read("ism_policy_file", file)?)?;
            // Data Prepper points the user's `ism_template` at the rollover indices.
            if let Some(t) = policy.pointer_mut("/policy/ism_template")
                && let Some(t) = t.as_object_mut()
            {
                t.insert(
                    "index_patterns".into(),
                    serde_json::json!([builtin::index_pattern(pattern, true)]),
                );
            }
            (Some((name, policy, None)), true)
        }
        (Some(b), _) => (
            match (b.policy_name, b.policy) {
                (Some(name), Some(p)) => Some((
                    name.to_owned(),
                    parse("index_type policy", p)?,
                    b.policy_without_ism_template
                        .map(|t| parse("index_type policy", t))
                        .transpose()?,
                )),
                _ => None,
            },
            b.rollover,
        ),
        (None, _) => (None, false),
    };
    Ok(Some(setup::Plan {
        template,
        template_type: s.template_type,
        es6: s.es6,
        number_of_shards: s.number_of_shards,
        number_of_replicas: s.number_of_replicas,
        policy,
        rollover,
    }))
}

/// The `_id` of the event at `rank` of the record at `at`: `<topic>/<partition>/<offset>/<rank>`;
/// past OpenSearch's 512 bytes (an s3 source's topic is `s3://<bucket>/<key>`, and keys reach
/// 1024 bytes) the topic is its SHA-256, `sha256:<hex>`.
fn position_id(at: &sluice_buffer::Position, rank: u32) -> String {
    let id = format!("{}/{}/{}/{rank}", at.topic, at.partition, at.offset);
    if id.len() <= 512 {
        return id;
    }
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(at.topic.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}/{}/{}/{rank}", at.partition, at.offset)
}

/// One document of a request.
struct Item {
    /// Its index in the events `send` was given.
    event: usize,
    /// The action line, with the `_id` sluice chose if it did.
    action: Vec<u8>,
    /// The source line (none for `delete`).
    source: Bytes,
    op: String,
    index: String,
    /// sluice chose the `_id` (from the event's buffer position).
    chosen_id: bool,
    /// `query_lookup`: the `query_term` value to look for before indexing.
    lookup: Option<Value>,
}

/// What became of one document.
enum Fate {
    Taken,
    /// Dead-lettered with this reason.
    Refused(String),
    /// Sent again after a backoff.
    Retry(String),
}

impl OpenSearchSink {
    /// The documents of `events`, and the events that are errors already (with why).
    fn items(&self, events: &[Bytes], from: &Provenance) -> (Vec<Item>, Vec<(usize, String)>) {
        let mut items = Vec::with_capacity(events.len());
        let mut refused = Vec::new();
        for (i, line) in events.iter().enumerate() {
            let split = memchr::memchr(b'\n', line).unwrap_or(line.len());
            let head: Map<String, Value> = match serde_json::from_slice(&line[..split]) {
                Ok(Value::Object(m)) => m,
                _ => {
                    refused.push((i, "not an opensearch bulk line".to_owned()));
                    continue;
                }
            };
            if let Some(reason) = head.get(ERROR_KEY) {
                self.metrics.dynamic_index_dropped.increment(1);
                refused.push((i, reason.as_str().unwrap_or_default().to_owned()));
                continue;
            }
            let Some((op, Value::Object(mut meta))) = head.into_iter().next() else {
                refused.push((i, "not an opensearch bulk line".to_owned()));
                continue;
            };
            let lookup = meta.remove(LOOKUP_KEY);
            let mut chosen_id = false;
            if self.exactly_once
                && (op == "index" || op == "create")
                && !meta.contains_key("_id")
                && let Some(Some((at, rank))) = from.at.get(i)
            {
                meta.insert(
                    "_id".into(),
                    Value::String(position_id(at, *rank)),
                );
                chosen_id = true;
            }
            let index = meta
                .get("_index")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let action = serde_json::to_vec(&serde_json::json!({ op.clone(): meta }))
                .expect("JSON serializes");
            items.push(Item {
                event: i,
                action,
                source: line.slice((split + 1).min(line.len())..),
                op,
                index,
                chosen_id,
                lookup,
            });
        }
        (items, refused)
    }

    /// Sets up each index of `items` not set up yet.
    async fn ensure_indices(&self, items: &[Item]) -> Result<(), String> {
        let Some(plan) = &self.plan else {
            return Ok(());
        };
        let mut ready = self.ready.lock().await;
        for item in items {
            if ready.contains(&item.index) {
                continue;
            }
            let pattern = if self.dynamic {
                &item.index
            } else {
                &self.pattern
            };
            setup::run(&self.client, plan, pattern, &item.index)
                .await
                .map_err(|e| format!("setting up the index `{}`: {e}", item.index))?;
            if ready.len() >= 1024 {
                ready.clear();
            }
            ready.insert(item.index.clone());
        }
        Ok(())
    }

    /// `query_lookup`: the events of `items` whose document is already indexed (an indexed
    /// document's `query_term` field holds the same value), found with one `_msearch` of a
    /// `terms` query per index.
    async fn look_up(&self, items: &[Item]) -> Result<HashSet<usize>, String> {
        let Some(field) = self.lookup_field.as_deref() else {
            return Ok(HashSet::new());
        };
        let mut by_index: std::collections::BTreeMap<&str, Vec<&Item>> = Default::default();
        for item in items.iter().filter(|i| i.lookup.is_some()) {
            by_index.entry(&item.index).or_default().push(item);
        }
        if by_index.is_empty() {
            return Ok(HashSet::new());
        }
        let mut body = Vec::new();
        for (index, items) in &by_index {
            let values: Vec<&Value> = items.iter().filter_map(|i| i.lookup.as_ref()).collect();
            let search = serde_json::json!({
                "query": {"terms": {field: values}},
                "size": values.len(),
                "_source": [field],
            });
            serde_json::to_writer(&mut body, &serde_json::json!({ "index": index }))
                .expect("JSON serializes");
            body.push(b'\n');
            serde_json::to_writer(&mut body, &search).expect("JSON serializes");
            body.push(b'\n');
        }
        let answer = self
            .client
            .call(Method::POST, "/_msearch", Some((&body, "application/x-ndjson")))
            .await?;
        if !answer.ok() {
            return Err(format!(
                "looking documents up (query_lookup): {} {}",
                answer.status,
                answer.reason()
            ));
        }
        let parsed: Value = serde_json::from_slice(&answer.body)
            .map_err(|e| format!("the _msearch answer is not JSON: {e}"))?;
        let responses = parsed
            .get("responses")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let mut found = HashSet::new();
        for ((_, items), response) in by_index.iter().zip(responses) {
            // A missing index holds nothing yet.
            let Some(hits) = response.pointer("/hits/hits").and_then(Value::as_array) else {
                continue;
            };
            let held: Vec<&Value> = hits
                .iter()
                .filter_map(|h| h.get("_source")?.pointer(&format!("/{}", field.replace('.', "/"))))
                .collect();
            for item in items {
                if item.lookup.as_ref().is_some_and(|v| held.contains(&v)) {
                    found.insert(item.event);
                }
            }
        }
        Ok(found)
    }

    /// Sends `items` as one bulk request (split in halves while the cluster answers 413).
    fn bulk<'a>(
        &'a self,
        items: &'a [&'a Item],
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Vec<Fate>> + Send + 'a>> {
        Box::pin(async move {
            let mut body =
                Vec::with_capacity(items.iter().map(|i| i.action.len() + i.source.len() + 2).sum());
            for item in items {
                body.extend_from_slice(&item.action);
                body.push(b'\n');
                if !item.source.is_empty() {
                    body.extend_from_slice(&item.source);
                    body.push(b'\n');
                }
            }
            let path = if self.es6 {
                format!("/{}/_doc/_bulk", items[0].index)
            } else {
                "/_bulk?filter_path=errors,took,items.*.error,items.*.status,items.*._index,items.*._id".to_owned()
            };
            self.metrics.bulk_request_size.record(body.len() as f64);
            let started = Instant::now();
            let answer = self
                .client
                .call(Method::POST, &path, Some((&body, "application/x-ndjson")))
                .await;
            self.metrics
                .bulk_request_latency
                .record(started.elapsed().as_secs_f64());
            let all = |fate: &dyn Fn() -> Fate| items.iter().map(|_| fate()).collect();
            let answer = match answer {
                Ok(a) => a,
                Err(reason) => {
                    self.metrics.bulk_request_errors.increment(1);
                    return all(&|| Fate::Retry(reason.clone()));
                }
            };
            if answer.status == 413 && items.len() > 1 {
                let (a, b) = items.split_at(items.len() / 2);
                let mut fates = self.bulk(a).await;
                fates.extend(self.bulk(b).await);
                return fates;
            }
            if !answer.ok() {
                self.metrics.whole_request_error(answer.status);
                let reason = format!("the cluster answered {}: {}", answer.status, answer.reason());
                return match answer.status {
                    400 | 404 | 409 | 413 => all(&|| Fate::Refused(reason.clone())),
                    _ => all(&|| Fate::Retry(reason.clone())),
                };
            }
            self.item_fates(items, &answer.body)
        })
    }

    /// Each item's fate from a bulk answer.
    fn item_fates(&self, items: &[&Item], body: &[u8]) -> Vec<Fate> {
        let parsed: Value = match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(e) => {
                let reason = format!("the bulk answer is not JSON: {e}");
                return items.iter().map(|_| Fate::Retry(reason.clone())).collect();
            }
        };
        if parsed.get("errors") == Some(&Value::Bool(false)) {
            return items.iter().map(|_| Fate::Taken).collect();
        }
        let answers = parsed
            .get("items")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        if answers.len() != items.len() {
            let reason = format!(
                "the bulk answer has {} items for {} documents",
                answers.len(),
                items.len()
            );
            return items.iter().map(|_| Fate::Retry(reason.clone())).collect();
        }
        items
            .iter()
            .zip(answers)
            .map(|(item, answer)| {
                let result = answer
                    .as_object()
                    .and_then(|o| o.values().next())
                    .cloned()
                    .unwrap_or(Value::Null);
                let status = result.get("status").and_then(Value::as_u64).unwrap_or(0) as u16;
                let error = result.get("error").and_then(Value::as_object);
                if (200..300).contains(&status) && error.is_none() {
                    return Fate::Taken;
                }
                let reason = format!(
                    "{status} {}",
                    error.map(cause_chain).unwrap_or_else(|| "no error given".into())
                );
                let conflict = status == 409;
                if conflict && item.chosen_id && item.op == "create" {
                    // sluice named it from its buffer position: indexed by an earlier read.
                    self.metrics.already_indexed.increment(1);
                    return Fate::Taken;
                }
                if conflict && self.external_versions && item.op != "create" {
                    self.metrics.version_conflicts.increment(1);
                    return Fate::Taken;
                }
                match status {
                    400 | 404 | 409 => Fate::Refused(reason),
                    _ => Fate::Retry(reason),
                }
            })
            .collect()
    }
}

/// `<type>: <reason>`, then each `caused_by` as ` caused by <type>: <reason>`.
pub(super) fn cause_chain(error: &Map<String, Value>) -> String {
    let mut out = String::new();
    let mut at = Some(error);
    while let Some(e) = at {
        if !out.is_empty() {
            out.push_str(" caused by ");
        }
        let field = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or_default();
        out.push_str(field("type"));
        out.push_str(": ");
        out.push_str(field("reason"));
        at = e.get("caused_by").and_then(Value::as_object);
    }
    out
}

#[async_trait::async_trait]
impl Output for OpenSearchSink {
    async fn send(&self, events: &[Bytes], from: &Provenance) -> Result<(), SendError> {
        let (items, mut rejected) = self.items(events, from);
        if items.is_empty() {
            return match rejected.is_empty() {
                true => Ok(()),
                false => Err(SendError::Partial {
                    rejected,
                    retry: Vec::new(),
                    reason: String::new(),
                }),
            };
        }
        if let Err(reason) = self.ensure_indices(&items).await {
            return Err(SendError::Retry(reason));
        }
        let found = match self.look_up(&items).await {
            Ok(found) => found,
            Err(reason) => return Err(SendError::Retry(reason)),
        };
        let (duplicates, refs): (Vec<&Item>, Vec<&Item>) =
            items.iter().partition(|item| found.contains(&item.event));
        self.metrics.duplicates_dropped.increment(duplicates.len() as u64);
        let fates = if refs.is_empty() {
            Vec::new()
        } else {
            self.bulk(&refs).await
        };
        let mut retry = Vec::new();
        let mut retry_reason = String::new();
        let mut taken = 0;
        for (item, fate) in refs.into_iter().zip(fates) {
            match fate {
                Fate::Taken => taken += 1,
                Fate::Refused(reason) => rejected.push((item.event, reason)),
                Fate::Retry(reason) => {
                    retry.push(item.event);
                    retry_reason = reason;
                }
            }
        }
        self.metrics.documents_success.increment(taken);
        self.metrics.document_errors.increment(rejected.len() as u64);
        if !rejected.is_empty() || !retry.is_empty() {
            self.metrics.bulk_request_failed.increment(1);
        }
        if rejected.is_empty() && retry.is_empty() {
            Ok(())
        } else if rejected.is_empty() && retry.len() == events.len() {
            Err(SendError::Retry(retry_reason))
        } else {
            rejected.sort_unstable_by_key(|(i, _)| *i);
            Err(SendError::Partial {
                rejected,
                retry,
                reason: retry_reason,
            })
        }
    }

    fn threshold(&self) -> Option<Threshold> {
        Some(self.threshold)
    }

    fn retry(&self) -> Retry {
        self.retry
    }

    fn encoder(&self) -> Option<Arc<dyn super::Encode>> {
        Some(self.encoder.clone())
    }

    /// The document (its source line), or an error line's event; a `delete` is its action.
    fn payload(&self, line: &Bytes) -> Bytes {
        if line.starts_with(format!("{{\"{ERROR_KEY}\"").as_bytes())
            && let Ok(Value::Object(m)) = serde_json::from_slice::<Value>(line)
            && let Some(document) = m.get("document")
        {
            return Bytes::from(serde_json::to_vec(document).expect("JSON serializes"));
        }
        match memchr::memchr(b'\n', line) {
            Some(i) => line.slice(i + 1..),
            None => line.clone(),
        }
    }
}

#[cfg(test)]
mod tests;
