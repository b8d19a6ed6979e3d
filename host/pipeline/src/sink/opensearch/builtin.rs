//! Data Prepper's `index_type`s as data: for each, the alias or index it writes to, its
//! index templates, its ISM policy, the `document_id` it forces and whether it rolls over.
//!
//! The JSON files under `resources/` are Data Prepper's own (Apache-2.0, see
//! `resources/README.md`), compiled in with `include_str!`. The mapping from type to files is
//! Data Prepper's `IndexConstants.java` (aliases, file and policy names),
//! `IndexManagerFactory.java` (which types have a policy), and `IndexConfiguration.java`
//! (`readIndexTemplate` for the template file, the constructor for the forced `document_id`).
//! Setup (policy, then template, then index) reads this table; it does not live here. See
//! `docs/design/opensearch.md`, section 2.
//!
//! What Data Prepper does around the table, for whoever reads it:
//! - A type with an alias writes there, and the user's `index` is ignored without a word.
//! - `template_content`, when given, replaces the built-in template for *every* type;
//!   `template_file` is read only for the types with no built-in template (`IndexConfiguration`
//!   constructor and `readIndexTemplate`).
//! - `ism_policy_file` is read only by `custom` and `tsdb` (`DefaultIndexManager`), whose
//!   policy is then named `<prefix>-policy` ([`custom_policy_name`]) and whose index rolls over.
//!   The other built-in types always use their own policy, or none.
//! - With no `index_type`, Data Prepper takes `custom`, or `management_disabled` when
//!   `aws.serverless` is set.

use std::sync::LazyLock;

use regex::Regex;

/// What Data Prepper does for one `index_type` (its name in the file, e.g.
/// `trace-analytics-raw`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Builtin {
    /// The alias (or, without a policy, the index) written to, in place of the user's `index`
    /// (`IndexConstants.TYPE_TO_DEFAULT_ALIAS`). Never empty: the types that use the user's
    /// `index` (`custom`, `management_disabled`) have no `Builtin`.
    pub(crate) alias: &'static str,
    /// The template for `PUT /_template/<name>` (`template_type: v1`, the default).
    pub(crate) template_v1: Option<&'static str>,
    /// The template for `PUT /_index_template/<name>` (`template_type: index-template`).
    pub(crate) template_composable: Option<&'static str>,
    /// The ISM policy's id, for `PUT /_opendistro/_ism/policies/<policy_name>`.
    pub(crate) policy_name: Option<&'static str>,
    /// The policy sent first: with `ism_template.index_patterns` of `["<alias>-*"]`.
    pub(crate) policy: Option<&'static str>,
    /// The policy sent when the first answer holds `Invalid field: [ism_template]` (older ISM).
    pub(crate) policy_without_ism_template: Option<&'static str>,
    /// The `document_id` format forced on the type, whatever the user set, written as Data
    /// Prepper writes it (`${key}` per field).
    pub(crate) document_id: Option<&'static str>,
    /// Written through the write alias `alias` over `<alias>-000001` (Data Prepper's
    /// `IsmPolicyManagement`); otherwise `alias` is a plain index (`NoIsmPolicyManagement`).
    /// True exactly for the types with a built-in policy.
    pub(crate) rollover: bool,
    /// Whether the user's `ism_policy_file` is read (`DefaultIndexManager`, which Data
    /// Prepper gives `tsdb`): with it, the policy is [`custom_policy_name`] and the index
    /// rolls over as for `custom`.
    pub(crate) user_ism_policy_file: bool,
}

#[cfg(test)]
use sluice_config::sink::opensearch::INDEX_TYPES;

/// The suffix of the first index behind a rollover alias (`IsmPolicyManagement.DEFAULT_INDEX_SUFFIX`).
pub(crate) const FIRST_INDEX_SUFFIX: &str = "-000001";

/// Both variants of one template file (`IndexConfiguration.loadExistingTemplate`: the file
/// itself for v1, `index-template/<file>` for composable).
macro_rules! templates {
    ($file:literal) => {
        (
            Some(include_str!(concat!("resources/", $file))),
            Some(include_str!(concat!("resources/index-template/", $file))),
        )
    };
}

/// One built-in policy: its name, and the files with and without `ism_template`.
macro_rules! policy {
    ($name:literal) => {
        (
            Some($name),
            Some(include_str!(concat!(
                "resources/",
                $name,
                "-with-ism-template.json"
            ))),
            Some(include_str!(concat!(
                "resources/",
                $name,
                "-no-ism-template.json"
            ))),
        )
    };
}

const NO_POLICY: (Option<&str>, Option<&str>, Option<&str>) = (None, None, None);

/// What Data Prepper does for `index_type`; `None` for `custom`, `management_disabled` and
/// names it does not know (see [`INDEX_TYPES`]).
pub(crate) fn builtin(index_type: &str) -> Option<Builtin> {
    // (alias, (v1, composable), (policy name, with, without), document_id)
    let (alias, (template_v1, template_composable), (policy_name, policy, without), document_id) =
        match index_type {
            "trace-analytics-raw" => (
                "otel-v1-apm-span",
                templates!("otel-v1-apm-span-index-template.json"),
                policy!("raw-span-policy"),
                Some("${traceId}/${spanId}"),
            ),
            "trace-analytics-plain-raw" => (
                "otel-v1-apm-span",
                templates!("otel-v1-apm-span-index-standard-template.json"),
                policy!("raw-span-policy"),
                Some("${traceId}/${spanId}"),
            ),
            "trace-analytics-service-map" => (
                "otel-v1-apm-service-map",
                templates!("otel-v1-apm-service-map-index-template.json"),
                NO_POLICY,
                Some("${hashId}"),
            ),
            "otel-v2-apm-service-map" => (
                "otel-v2-apm-service-map",
                templates!("otel-v2-apm-service-map-index-template.json"),
                policy!("otel-v2-apm-service-map-policy"),
                None,
            ),
            "log-analytics" => (
                "logs-otel-v1",
                templates!("logs-otel-v1-index-template.json"),
                policy!("logs-policy"),
                None,
            ),
            "log-analytics-plain" => (
                "logs-otel-v1",
                templates!("logs-otel-v1-index-standard-template.json"),
                policy!("logs-policy"),
                None,
            ),
            "metric-analytics" => (
                "metrics-otel-v1",
                templates!("metrics-otel-v1-index-template.json"),
                policy!("metrics-policy"),
                None,
            ),
            "metric-analytics-plain" => (
                "metrics-otel-v1",
                templates!("metrics-otel-v1-index-standard-template.json"),
                policy!("metrics-policy"),
                None,
            ),
            // Documents are built by Data Prepper's `TSDBDocumentBuilder`, not forced ids.
            "tsdb" => (
                "metrics-tsdb-v1",
                templates!("tsdb-index-template.json"),
                NO_POLICY,
                None,
            ),
            _ => return None,
        };
    Some(Builtin {
        alias,
        template_v1,
        template_composable,
        policy_name,
        policy,
        policy_without_ism_template: without,
        document_id,
        rollover: policy_name.is_some(),
        user_ism_policy_file: index_type == "tsdb",
    })
}

/// Data Prepper's `TIME_PATTERN` (`AbstractIndexManager`): a `%{...}` date pattern.
static TIME_PATTERN: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"%\{.*?\}").unwrap());
static DASH_TIME_PATTERN: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"-%\{.*?\}").unwrap());
static TIME_PATTERN_DASH: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"%\{.*?\}-").unwrap());

/// Data Prepper's `indexPrefix` of an alias or index: every `-%{...}`, then every `%{...}-`,
/// removed (`AbstractIndexManager.initializeIndexPrefixAndSuffix`). A pattern with no hyphen
/// beside it stays.
pub(crate) fn index_prefix(index: &str) -> String {
    let once = DASH_TIME_PATTERN.replace_all(index, "");
    TIME_PATTERN_DASH.replace_all(&once, "").into_owned()
}

/// The template's name: `<prefix>-index-template` (`AbstractIndexManager.checkAndCreateIndexTemplate`).
pub(crate) fn template_name(index: &str) -> String {
    format!("{}-index-template", index_prefix(index))
}

/// The policy name for `custom` and `tsdb` with `ism_policy_file`: `<prefix>-policy`
/// (`IndexManagerFactory.DefaultIndexManager`).
pub(crate) fn custom_policy_name(index: &str) -> String {
    format!("{}-policy", index_prefix(index))
}

/// The template's one index pattern: the alias with each `%{...}` as `*`, then `-*` when
/// the index rolls over (`IsmPolicyManagement.getIndexPatterns`) and nothing more when not
/// (`NoIsmPolicyManagement.getIndexPatterns`).
pub(crate) fn index_pattern(index: &str, rollover: bool) -> String {
    let pattern = TIME_PATTERN.replace_all(index, "*");
    if rollover {
        format!("{pattern}-*")
    } else {
        pattern.into_owned()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::Path;

    use serde_json::{Value, json};

    use super::*;

    fn builtins() -> impl Iterator<Item = (&'static str, Builtin)> {
        INDEX_TYPES
            .iter()
            .filter_map(|t| builtin(t).map(|b| (*t, b)))
    }

    fn parse(what: &str, text: &str) -> Value {
        let value: Value =
            serde_json::from_str(text).unwrap_or_else(|e| panic!("{what} is not JSON: {e}"));
        assert!(value.is_object(), "{what} is not an object");
        value
    }

    #[test]
    fn every_index_type_but_custom_and_management_disabled_is_built_in() {
        let without: Vec<_> = INDEX_TYPES
            .iter()
            .filter(|t| builtin(t).is_none())
            .collect();
        assert_eq!(without, [&"custom", &"management_disabled"]);
        assert_eq!(builtin("trace_analytics_raw"), None);
        assert_eq!(builtin(""), None);
    }

    #[test]
    fn templates_parse_and_agree_on_version() {
        for (t, b) in builtins() {
            let v1 = parse(&format!("{t} v1 template"), b.template_v1.unwrap());
            let composable = parse(
                &format!("{t} composable template"),
                b.template_composable.unwrap(),
            );
            assert!(
                v1["mappings"].is_object(),
                "{t}: v1 template has no `mappings`"
            );
            assert!(
                composable["template"]["mappings"].is_object(),
                "{t}: composable template has no `template.mappings`"
            );
            // Neither names its index patterns: setup sets them from the alias.
            assert_eq!(v1.get("index_patterns"), None, "{t}");
            assert_eq!(composable.get("index_patterns"), None, "{t}");
            assert!(v1["version"].is_u64(), "{t}: v1 template has no `version`");
            assert_eq!(v1["version"], composable["version"], "{t}: versions differ");
        }
    }

    #[test]
    fn policies_parse_and_name_their_alias() {
        for (t, b) in builtins() {
            assert_eq!(b.rollover, b.policy_name.is_some(), "{t}");
            assert_eq!(b.policy.is_some(), b.policy_name.is_some(), "{t}");
            assert_eq!(
                b.policy_without_ism_template.is_some(),
                b.policy_name.is_some(),
                "{t}"
            );
            let Some(name) = b.policy_name else { continue };
            let mut with = parse(&format!("{t} policy"), b.policy.unwrap());
            let without = parse(
                &format!("{t} policy without ism_template"),
                b.policy_without_ism_template.unwrap(),
            );
            let ism = with["policy"]
                .as_object_mut()
                .unwrap()
                .remove("ism_template");
            assert_eq!(
                ism,
                Some(json!({ "index_patterns": [format!("{}-*", b.alias)] })),
                "{t}"
            );
            assert_eq!(
                with, without,
                "{t}: the two files of `{name}` differ beyond ism_template"
            );
            assert_eq!(
                with["policy"]["default_state"], "current_write_index",
                "{t}: `{name}` starts elsewhere"
            );
            assert_eq!(
                index_pattern(b.alias, b.rollover),
                format!("{}-*", b.alias),
                "{t}: template and policy patterns differ"
            );
        }
    }

    #[test]
    fn types_match_data_prepper() {
        let row = |t| {
            let b = builtin(t).unwrap();
            (
                b.alias,
                b.policy_name,
                b.document_id,
                b.rollover,
                b.user_ism_policy_file,
            )
        };
        let span = (
            "otel-v1-apm-span",
            Some("raw-span-policy"),
            Some("${traceId}/${spanId}"),
        );
        assert_eq!(
            row("trace-analytics-raw"),
            (span.0, span.1, span.2, true, false)
        );
        assert_eq!(
            row("trace-analytics-plain-raw"),
            (span.0, span.1, span.2, true, false)
        );
        assert_eq!(
            row("trace-analytics-service-map"),
            (
                "otel-v1-apm-service-map",
                None,
                Some("${hashId}"),
                false,
                false
            )
        );
        assert_eq!(
            row("otel-v2-apm-service-map"),
            (
                "otel-v2-apm-service-map",
                Some("otel-v2-apm-service-map-policy"),
                None,
                true,
                false
            )
        );
        for t in ["log-analytics", "log-analytics-plain"] {
            assert_eq!(
                row(t),
                ("logs-otel-v1", Some("logs-policy"), None, true, false)
            );
        }
        for t in ["metric-analytics", "metric-analytics-plain"] {
            assert_eq!(
                row(t),
                ("metrics-otel-v1", Some("metrics-policy"), None, true, false)
            );
        }
        assert_eq!(row("tsdb"), ("metrics-tsdb-v1", None, None, false, true));

        // The plain variants differ from the default only in the template.
        for (a, b) in [
            ("trace-analytics-raw", "trace-analytics-plain-raw"),
            ("log-analytics", "log-analytics-plain"),
            ("metric-analytics", "metric-analytics-plain"),
        ] {
            let (a, b) = (builtin(a).unwrap(), builtin(b).unwrap());
            assert_ne!(a.template_v1, b.template_v1);
            assert_eq!(
                Builtin {
                    template_v1: None,
                    template_composable: None,
                    ..a
                },
                Builtin {
                    template_v1: None,
                    template_composable: None,
                    ..b
                }
            );
        }
    }

    /// Every file under `resources/` is one of the texts above, so none is stale.
    #[test]
    fn every_resource_is_used() {
        let used: BTreeSet<&str> = builtins()
            .flat_map(|(_, b)| {
                [
                    b.template_v1,
                    b.template_composable,
                    b.policy,
                    b.policy_without_ism_template,
                ]
            })
            .flatten()
            .collect();
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/sink/opensearch/resources");
        let mut files = 0;
        for dir in [dir.clone(), dir.join("index-template")] {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.extension().is_some_and(|e| e == "json") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    assert!(
                        used.contains(text.as_str()),
                        "{} is not used",
                        path.display()
                    );
                    files += 1;
                }
            }
        }
        assert_eq!(files, used.len());
    }

    #[test]
    fn names_follow_data_prepper() {
        assert_eq!(index_prefix("otel-v1-apm-span"), "otel-v1-apm-span");
        assert_eq!(index_prefix("logs-%{yyyy.MM.dd}"), "logs");
        assert_eq!(index_prefix("%{yyyy.MM}-logs"), "logs");
        assert_eq!(index_prefix("app-%{yyyy}-logs"), "app-logs");
        assert_eq!(index_prefix("logs%{yyyy}"), "logs%{yyyy}");
        assert_eq!(
            template_name("otel-v1-apm-span"),
            "otel-v1-apm-span-index-template"
        );
        assert_eq!(template_name("logs-%{yyyy.MM.dd}"), "logs-index-template");
        assert_eq!(
            custom_policy_name("my-logs-%{yyyy.MM.dd}"),
            "my-logs-policy"
        );
        assert_eq!(
            index_pattern("otel-v1-apm-service-map", false),
            "otel-v1-apm-service-map"
        );
        assert_eq!(index_pattern("logs-otel-v1", true), "logs-otel-v1-*");
        assert_eq!(index_pattern("logs-%{yyyy.MM.dd}", false), "logs-*");
        assert_eq!(index_pattern("logs-%{yyyy.MM.dd}", true), "logs-*-*");
    }
}
