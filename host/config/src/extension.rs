//! The top-level keys of a pipeline file that are not pipelines: Data Prepper's `version` and
//! its `extension` block (`pipeline_configurations`, its older name). sluice reads Data
//! Prepper 2's format; no extension plugin is supported yet, and each one named is refused by
//! its name rather than ignored.

use serde_yaml::Value;

use crate::error::{Errors, closest};
use crate::explain::{list, render};

/// Data Prepper's extension plugins a pipeline file may hold, with what each does there.
const EXTENSIONS: &[(&str, &str)] = &[
    (
        "aws",
        "AWS Secrets Manager references, `${{aws_secrets:...}}`",
    ),
    (
        "encryption",
        "KMS-encrypted data keys for sources and sinks",
    ),
    (
        "geoip_service",
        "MaxMind databases for the `geoip` processor",
    ),
    ("kinesis", "the kinesis source's lease table"),
];

/// `version: 2` (or `"2"`, `2.0`): the configuration format, which must be Data Prepper 2's.
pub(crate) fn check_version(key: &str, value: &Value, errors: &mut Errors) {
    let text = match value {
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        other => render(other),
    };
    let major = text
        .split_once('.')
        .map_or(text.as_str(), |(major, _)| major);
    let well_formed = text
        .split('.')
        .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
        && text.split('.').count() <= 2;
    if !well_formed {
        errors.at(
            key,
            format!("`{key}` is `{text}`: write Data Prepper's format version, e.g. `version: 2`"),
        );
    } else if major != "2" {
        errors.at(
            key,
            format!(
                "`{key}` is `{text}`: sluice reads Data Prepper 2's configuration format; \
                 write `version: 2` (or leave the key out)"
            ),
        );
    }
}

/// `extension:` / `pipeline_configurations:`: each plugin named is refused by its name.
pub(crate) fn check_extensions(key: &str, value: &Value, errors: &mut Errors) {
    let Value::Mapping(map) = value else {
        if !value.is_null() {
            errors.at(
                key,
                format!("`{key}` must be a map of extension plugins, e.g. `{key}: {{aws: ...}}`"),
            );
        }
        return;
    };
    let names: Vec<&str> = EXTENSIONS.iter().map(|(name, _)| *name).collect();
    for name in map.keys() {
        let name = name.as_str().map_or_else(|| render(name), str::to_owned);
        let path = format!("{key}.{name}");
        match EXTENSIONS.iter().find(|(known, _)| *known == name) {
            Some((_, what)) => errors.at(
                &path,
                format!(
                    "extension `{name}` in `{key}` ({what}) is not supported by sluice yet; \
                     remove it"
                ),
            ),
            None => {
                let hint = match closest(&name, names.iter().copied()) {
                    Some(best) => format!(", did you mean `{best}`?"),
                    None => format!("; Data Prepper's are {}", list(&names)),
                };
                errors.at(
                    &path,
                    format!("unknown extension `{name}` in `{key}`{hint}"),
                );
            }
        }
    }
}
