//! `user_agent`, as Data Prepper's `UserAgentProcessor`: the text at `source` is parsed with
//! ua-parser's `regexes.yaml` (uap-core 0.18.0, `data/uap-regexes.yaml`; Data Prepper uses
//! uap-java, which reads the same file) and the target gets
//! `{name, version, os: {name, version, full}, device: {name}, original}`. What nothing
//! matches is `Other`; a version is `major.minor.patch`, as far as it was found (empty
//! without a major). A source that is missing, `null`, or not text fails the event
//! (`tags_on_parse_failure`).
//!
//! The regexes are compiled once per process, the first time a `user_agent` processor is
//! built (`ua-parser`, the ua-parser project's Rust port). Parsed strings are kept up to
//! `cache_size`; when full, the cache is emptied (Data Prepper's Caffeine cache evicts the
//! least used instead).

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use serde_json::{Map, Value};
use sluice_config::processor::user_agent as config;
use sluice_event::{Event, Key};

use crate::{Apply, BuildError, BuildProcessor, Failure, Fate, java_string};

/// uap-core's regexes (Apache-2.0, `data/uap-regexes.LICENSE`).
const REGEXES: &str = include_str!("../data/uap-regexes.yaml");

/// The compiled regexes, shared by every `user_agent` processor.
fn extractor() -> Result<&'static ua_parser::Extractor<'static>, String> {
    static EXTRACTOR: OnceLock<Result<ua_parser::Extractor<'static>, String>> = OnceLock::new();
    EXTRACTOR
        .get_or_init(|| {
            let regexes: ua_parser::Regexes<'static> =
                serde_yaml::from_str(REGEXES).map_err(|e| e.to_string())?;
            ua_parser::Extractor::try_from(regexes).map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// `user_agent`, built.
pub struct UserAgent {
    extractor: &'static ua_parser::Extractor<'static>,
    source: Key,
    target: Key,
    exclude_original: bool,
    cache_size: usize,
    /// Parsed user agents (without `original`), by user agent string.
    cache: Mutex<HashMap<String, Map<String, Value>>>,
}

impl BuildProcessor for config::UserAgent {
    type Processor = UserAgent;

    fn tags_on_failure(&self) -> &[String] {
        &self.tags_on_parse_failure
    }

    fn build(&self) -> Result<UserAgent, BuildError> {
        let extractor = extractor().map_err(|message| BuildError {
            key: "source".to_owned(),
            message: format!("the bundled user agent regexes do not load: {message}"),
        })?;
        Ok(UserAgent {
            extractor,
            source: self.source.clone(),
            target: self.target.clone(),
            exclude_original: self.exclude_original,
            cache_size: self.cache_size,
            cache: Mutex::new(HashMap::new()),
        })
    }
}

impl Apply for UserAgent {
    fn apply(&self, event: &mut Event, _: &'static str) -> Result<Fate, Failure> {
        let text = match java_string(event.get(&self.source)) {
            Ok(Some(text)) => text,
            Ok(None) => return Err(Failure::new("the source is missing or null")),
            Err(()) => return Err(Failure::new("the source is an object or a list")),
        };
        let mut parsed = self.parse(&text);
        if !self.exclude_original {
            parsed.insert("original".to_owned(), Value::String(text));
        }
        event
            .put(&self.target, Value::Object(parsed))
            .map_err(|e| Failure::new(e.to_string()))?;
        Ok(Fate::Keep)
    }
}

impl UserAgent {
    /// The parsed object of `ua`, from the cache if it is there.
    fn parse(&self, ua: &str) -> Map<String, Value> {
        if self.cache_size > 0 {
            // A std mutex: held only for a lookup or an insert, never across an await.
            let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(found) = cache.get(ua) {
                return found.clone();
            }
        }
        let parsed = parse(self.extractor, ua);
        if self.cache_size > 0 {
            let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            if cache.len() >= self.cache_size {
                cache.clear();
            }
            cache.insert(ua.to_owned(), parsed.clone());
        }
        parsed
    }
}

/// Data Prepper's `getFullVersion`.
fn version(major: Option<&str>, minor: Option<&str>, patch: Option<&str>) -> String {
    match (major, minor, patch) {
        (None, _, _) => String::new(),
        (Some(major), None, _) => major.to_owned(),
        (Some(major), Some(minor), None) => format!("{major}.{minor}"),
        (Some(major), Some(minor), Some(patch)) => format!("{major}.{minor}.{patch}"),
    }
}

/// Data Prepper's `getParsedUserAgent`.
fn parse(extractor: &ua_parser::Extractor<'_>, ua: &str) -> Map<String, Value> {
    let (agent, os, device) = extractor.extract(ua);
    let (name, agent_version) = match &agent {
        Some(a) => (a.family.to_string(), version(a.major, a.minor, a.patch)),
        None => ("Other".to_owned(), String::new()),
    };
    let (os_name, os_version) = match &os {
        Some(o) => (
            o.os.to_string(),
            version(o.major.as_deref(), o.minor.as_deref(), o.patch.as_deref()),
        ),
        None => ("Other".to_owned(), String::new()),
    };
    let full = if os_version.is_empty() {
        os_name.clone()
    } else {
        format!("{os_name} {os_version}")
    };
    let device_name = device.map_or_else(|| "Other".to_owned(), |d| d.device.to_string());
    let mut out = Map::new();
    out.insert("name".to_owned(), Value::String(name));
    out.insert("version".to_owned(), Value::String(agent_version));
    out.insert(
        "os".to_owned(),
        serde_json::json!({"name": os_name, "version": os_version, "full": full}),
    );
    out.insert(
        "device".to_owned(),
        serde_json::json!({"name": device_name}),
    );
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::testing::{processor, run, tagged};

    const SAFARI_IOS: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 13_5_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/13.1.1 Mobile/15E148 Safari/604.1";

    #[test]
    fn the_documented_example() {
        let p = processor("user_agent:\n  source: ua");
        assert_eq!(
            run(&*p, json!({"ua": SAFARI_IOS})),
            Some(json!({"ua": SAFARI_IOS, "user_agent": {
                "original": SAFARI_IOS,
                "os": {"version": "13.5.1", "full": "iOS 13.5.1", "name": "iOS"},
                "name": "Mobile Safari",
                "version": "13.1.1",
                "device": {"name": "iPhone"}
            }}))
        );
    }

    #[test]
    fn other_when_nothing_matches_and_a_cache_hit_is_the_same() {
        let p = processor(
            "user_agent:\n  source: ua\n  target: /a/b\n  exclude_original: true\n  cache_size: 1",
        );
        let other = json!({"name": "Other", "version": "", "os": {"name": "Other", "version": "", "full": "Other"}, "device": {"name": "Other"}});
        for _ in 0..2 {
            assert_eq!(
                run(&*p, json!({"ua": "x"})),
                Some(json!({"ua": "x", "a": {"b": other.clone()}}))
            );
        }
        let chrome = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.6099.71 Safari/537.36";
        let out = run(&*p, json!({"ua": chrome})).unwrap();
        assert_eq!(out["a"]["b"]["name"], "Chrome");
        assert_eq!(out["a"]["b"]["version"], "120.0.6099");
        assert_eq!(out["a"]["b"]["os"]["full"], "Linux");
    }

    #[test]
    fn a_missing_or_non_text_source_is_tagged() {
        let p = processor("user_agent:\n  source: ua\n  tags_on_parse_failure: [ua_failed]");
        for data in [json!({}), json!({"ua": null}), json!({"ua": {"a": 1}})] {
            let (out, tags) = tagged(&*p, data.clone());
            assert_eq!(out, data);
            assert_eq!(tags, ["ua_failed"]);
        }
    }
}
