//! Index management as Data Prepper's `AbstractIndexManager.setupIndex` does it, before the
//! first document of an index: whether ISM is on, the ISM policy, the index template (written
//! when missing or older than ours), then the first index (or `<alias>-000001` behind its write
//! alias). What another host already made is taken as made.

use reqwest::Method;
use serde_json::{Map, Value, json};
use sluice_config::sink::opensearch::TemplateType;

use super::client::{Answer, Client};

/// What to set up for one index name.
pub(super) struct Plan {
    /// The template JSON, if any.
    pub(super) template: Option<Value>,
    pub(super) template_type: TemplateType,
    /// Legacy templates through `?include_type_name=false` (Elasticsearch 6).
    pub(super) es6: bool,
    pub(super) number_of_shards: Option<u32>,
    pub(super) number_of_replicas: Option<u32>,
    /// The policy's name and JSON (with `ism_template`), and without `ism_template` for an
    /// older ISM.
    pub(super) policy: Option<(String, Value, Option<Value>)>,
    /// Written through this alias over `<alias>-000001`, rolled over by ISM.
    pub(super) rollover: bool,
}

/// Why setting an index up failed (the sink tries again before the next request).
pub(super) type SetupError = String;

/// Sets `index` (the index, or the alias of a rollover type) up as `plan` says; `pattern` is
/// the configured name it was made from (its date pattern unfilled), which names the template.
pub(super) async fn run(
    client: &Client,
    plan: &Plan,
    pattern: &str,
    index: &str,
) -> Result<(), SetupError> {
    let ism = ism_enabled(client).await?;
    let mut policy_id_in_template = None;
    if ism && let Some((policy_name, policy, fallback)) = &plan.policy {
        let path = format!("/_opendistro/_ism/policies/{policy_name}");
        let answer = client
            .call(Method::PUT, &path, Some((&to_vec(policy), JSON)))
            .await?;
        let reason = answer.reason();
        if !answer.ok() && reason.contains("Invalid field: [ism_template]") {
            // An ISM without `ism_template`: the policy goes into the template's settings.
            let older = fallback.clone().unwrap_or_else(|| without_ism_template(policy));
            let again = client
                .call(Method::PUT, &path, Some((&to_vec(&older), JSON)))
                .await?;
            check_policy(&again, policy_name)?;
            policy_id_in_template = Some(policy_name.clone());
        } else {
            check_policy(&answer, policy_name)?;
        }
    }
    if let Some(template) = &plan.template {
        put_template(client, plan, template, pattern, ism, policy_id_in_template).await?;
    }
    make_index(client, plan, index).await
}

const JSON: &str = "application/json";

fn to_vec(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).expect("JSON serializes")
}

/// `GET /_cluster/settings?include_defaults=true`: `opendistro.index_state_management.enabled`
/// in `persistent`, else `transient`, else `defaults`; a 400 or 404 means no ISM.
async fn ism_enabled(client: &Client) -> Result<bool, SetupError> {
    let answer = client
        .call(Method::GET, "/_cluster/settings?include_defaults=true", None)
        .await?;
    if answer.status == 400 || answer.status == 404 {
        return Ok(false);
    }
    if !answer.ok() {
        return Err(format!(
            "reading the cluster's settings: {} {}",
            answer.status,
            answer.reason()
        ));
    }
    let settings: Value = serde_json::from_slice(&answer.body)
        .map_err(|e| format!("the cluster's settings are not JSON: {e}"))?;
    for group in ["persistent", "transient", "defaults"] {
        let group = &settings[group];
        let value = group
            .pointer("/opendistro/index_state_management/enabled")
            .or_else(|| group.get("opendistro.index_state_management.enabled"));
        if let Some(v) = value {
            return Ok(v == "true" || v == true);
        }
    }
    Ok(false)
}

/// A policy PUT's answer: made, or already there (never updated, as in Data Prepper).
fn check_policy(answer: &Answer, name: &str) -> Result<(), SetupError> {
    let reason = answer.reason();
    if answer.ok()
        || reason.contains("version_conflict_engine_exception")
        || reason.contains("resource_already_exists_exception")
    {
        Ok(())
    } else {
        Err(format!(
            "writing the ISM policy `{name}`: {} {reason}",
            answer.status
        ))
    }
}

fn without_ism_template(policy: &Value) -> Value {
    let mut p = policy.clone();
    if let Some(inner) = p.get_mut("policy").and_then(Value::as_object_mut) {
        inner.remove("ism_template");
    }
    p
}

async fn put_template(
    client: &Client,
    plan: &Plan,
    template: &Value,
    alias_pattern: &str,
    ism: bool,
    policy_id: Option<String>,
) -> Result<(), SetupError> {
    let prefix = super::builtin::index_prefix(alias_pattern);
    let name = super::builtin::template_name(alias_pattern);
    let composable = plan.template_type == TemplateType::IndexTemplate;
    let base = if composable {
        "/_index_template"
    } else {
        "/_template"
    };
    let mut template = template.clone();
    let Some(object) = template.as_object_mut() else {
        return Err(format!("the template of `{alias_pattern}` is not a JSON object"));
    };
    object.insert(
        "index_patterns".into(),
        json!([super::builtin::index_pattern(alias_pattern, plan.rollover)]),
    );
    let ours = object.get("version").and_then(Value::as_i64).unwrap_or(0);
    let settings = settings_of(object, composable);
    for (key, value) in [
        ("number_of_shards", plan.number_of_shards),
        ("number_of_replicas", plan.number_of_replicas),
    ] {
        if let Some(v) = value
            && !settings.contains_key(key)
            && settings.get("index").is_none_or(|i| i.get(key).is_none())
        {
            settings.insert(key.into(), json!(v));
        }
    }
    if ism {
        // Data Prepper adds it whenever ISM is on (`AbstractIndexManager.attachPolicy`).
        settings.insert(
            "opendistro.index_state_management.rollover_alias".into(),
            json!(prefix),
        );
        if let Some(id) = policy_id {
            settings.insert(
                "opendistro.index_state_management.policy_id".into(),
                json!(id),
            );
        }
    }
    // Written when missing, or when the one there is older.
    let existing = client
        .call(Method::GET, &format!("{base}/{name}"), None)
        .await?;
    if existing.ok() {
        let there: Value = serde_json::from_slice(&existing.body).unwrap_or(Value::Null);
        let version = if composable {
            there.pointer("/index_templates/0/index_template/version")
        } else {
            there.pointer(&format!("/{name}/version"))
        }
        .and_then(Value::as_i64)
        .unwrap_or(0);
        if version >= ours {
            return Ok(());
        }
    } else if existing.status != 404 {
        return Err(format!(
            "reading the template `{name}`: {} {}",
            existing.status,
            existing.reason()
        ));
    }
    let query = if plan.es6 && !composable {
        "?include_type_name=false"
    } else {
        ""
    };
    let answer = client
        .call(
            Method::PUT,
            &format!("{base}/{name}{query}"),
            Some((&to_vec(&template), JSON)),
        )
        .await?;
    if answer.ok() {
        Ok(())
    } else {
        Err(format!(
            "writing the template `{name}`: {} {}",
            answer.status,
            answer.reason()
        ))
    }
}

/// The template's settings object (`settings`, or `template.settings` for a composable one),
/// made when missing.
fn settings_of(object: &mut Map<String, Value>, composable: bool) -> &mut Map<String, Value> {
    let holder = if composable {
        object
            .entry("template")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .expect("a template's `template` is an object")
    } else {
        object
    };
    if !holder.get("settings").is_some_and(Value::is_object) {
        holder.insert("settings".into(), json!({}));
    }
    holder
        .get_mut("settings")
        .and_then(Value::as_object_mut)
        .expect("made above")
}

/// The first index: `<alias>-000001` with its write alias for rollover types, else the index.
async fn make_index(client: &Client, plan: &Plan, name: &str) -> Result<(), SetupError> {
    let (exists_path, create_path, body) = if plan.rollover {
        (
            format!("/_alias/{name}"),
            format!("/{name}{}", super::builtin::FIRST_INDEX_SUFFIX),
            Some(json!({ "aliases": { name: { "is_write_index": true } } })),
        )
    } else {
        (format!("/{name}"), format!("/{name}"), None)
    };
    let there = client.call(Method::HEAD, &exists_path, None).await?;
    if there.ok() {
        return Ok(());
    }
    let body = body.as_ref().map(to_vec);
    let answer = client
        .call(
            Method::PUT,
            &create_path,
            body.as_deref().map(|b| (b, JSON)),
        )
        .await?;
    let reason = answer.reason();
    if answer.ok() || reason.contains("resource_already_exists_exception") {
        Ok(())
    } else if reason.contains("invalid_index_name_exception") {
        Err(format!("invalid characters in the index name `{name}`: {reason}"))
    } else {
        Err(format!(
            "creating the index `{create_path}`: {} {reason}",
            answer.status
        ))
    }
}
