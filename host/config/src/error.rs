//! Configuration errors: each names the key path, the line where it can be found, and
//! where possible the fix.

use std::fmt;

use crate::location::{LocationIndex, Position};

/// One problem in a pipeline file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigError {
    /// Where in the file, when known.
    pub position: Option<Position>,
    /// The dotted key path, e.g. `log-pipeline.buffer.kafka`.
    pub path: String,
    /// What is wrong and how to fix it.
    pub message: String,
    /// The file is right but this machine lacks what it names (a certificate, a template):
    /// `sluice validate` reports it as a warning, `sluice run` refuses to start.
    pub environment: bool,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.position {
            Some(p) => write!(f, "line {}, column {}: {}", p.line, p.column, self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// Every problem found in one file, in the order they appear.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigErrors {
    /// The file the errors are in, as the user named it.
    pub file: String,
    pub errors: Vec<ConfigError>,
}

impl ConfigErrors {
    /// Whether every error is about this machine, none about the file
    /// ([`ConfigError::environment`]).
    pub fn only_environment(&self) -> bool {
        self.errors.iter().all(|e| e.environment)
    }
}

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.errors.len();
        write!(
            f,
            "{} has {n} error{}:",
            self.file,
            if n == 1 { "" } else { "s" }
        )?;
        for e in &self.errors {
            write!(f, "\n  {}: {e}", self.file)?;
        }
        Ok(())
    }
}

/// Keys Data Prepper names differently in different plugins (its otel sources' camel case,
/// its http source's snake case): one is what a user of the other means.
const SAME_MEANING: &[(&str, &str)] = &[
    ("sslKeyCertChainFile", "ssl_certificate_file"),
    ("sslKeyFile", "ssl_key_file"),
];

/// The candidate closest to `wrong`, when it is close enough to be what the user meant.
pub fn closest<'a>(wrong: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let candidates: Vec<&'a str> = candidates.into_iter().collect();
    let same = SAME_MEANING.iter().find_map(|&(a, b)| {
        let other = if wrong == a {
            b
        } else if wrong == b {
            a
        } else {
            return None;
        };
        candidates.iter().copied().find(|c| *c == other)
    });
    if same.is_some() {
        return same;
    }
    let wrong_lower = snake_case(wrong);
    candidates
        .into_iter()
        .map(|c| (strsim::damerau_levenshtein(&wrong_lower, c), c))
        .filter(|(distance, c)| {
            *distance <= (c.len().max(wrong.len()) / 3).max(1)
                || (wrong_lower.len() >= 4 && c.contains(&wrong_lower))
                || (c.len() >= 4 && wrong_lower.contains(c))
        })
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, c)| c)
}

/// `sslKeyFile` and `ssl-key-file` as `ssl_key_file`.
fn snake_case(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 4);
    for (i, ch) in key.chars().enumerate() {
        match ch {
            '-' => out.push('_'),
            c if c.is_ascii_uppercase() => {
                if i > 0 && !out.ends_with('_') {
                    out.push('_');
                }
                out.push(c.to_ascii_lowercase());
            }
            c => out.push(c),
        }
    }
    out
}

/// The errors found so far in one file, and where each key is.
pub(crate) struct Errors {
    pub(crate) index: LocationIndex,
    pub(crate) list: Vec<ConfigError>,
    /// Whether the files the config names are checked (not with `--no-environment`).
    pub(crate) files: bool,
}

impl Errors {
    /// An error about the key at `path` (its position is looked up).
    pub(crate) fn at(&mut self, path: &str, message: impl Into<String>) {
        self.push(path, message.into(), false);
    }

    /// Reports `file`, named by the key at `path`, when it is not a readable file on this
    /// machine (and files are checked): an [`ConfigError::environment`] error.
    pub(crate) fn file(&mut self, path: &str, file: &std::path::Path) {
        if self.files && !file.is_file() {
            let message = format!("`{path}`: `{}` is not a readable file", file.display());
            self.push(path, message, true);
        }
    }

    fn push(&mut self, path: &str, message: String, environment: bool) {
        let position = self.index.find(path);
        self.list.push(ConfigError {
            position,
            path: path.to_owned(),
            message,
            environment,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn suggests_near_misses_only() {
        let fields = ["bootstrap_servers", "topics", "drain_timeout"];
        assert_eq!(closest("topic", fields), Some("topics"));
        assert_eq!(
            closest("bootstrap-servers", fields),
            Some("bootstrap_servers")
        );
        assert_eq!(closest("color", fields), None);
    }

    #[test]
    fn data_preppers_other_spelling_of_a_key_is_suggested_not_a_part_of_it() {
        let http = ["port", "ssl", "ssl_certificate_file", "ssl_key_file"];
        assert_eq!(
            closest("sslKeyCertChainFile", http),
            Some("ssl_certificate_file")
        );
        assert_eq!(closest("sslKeyFile", http), Some("ssl_key_file"));
        let otel = ["port", "ssl", "sslKeyCertChainFile", "sslKeyFile"];
        assert_eq!(
            closest("ssl_certificate_file", otel),
            Some("sslKeyCertChainFile")
        );
        assert_eq!(
            closest("maxConnectionCount", ["max_connection_count"]),
            Some("max_connection_count")
        );
    }
}
