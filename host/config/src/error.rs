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

/// The candidate closest to `wrong`, when it is close enough to be what the user meant.
pub fn closest<'a>(wrong: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let wrong_lower = wrong.to_ascii_lowercase().replace('-', "_");
    candidates
        .into_iter()
        .map(|c| (strsim::damerau_levenshtein(&wrong_lower, c), c))
        .filter(|(distance, c)| {
            *distance <= (c.len().max(wrong.len()) / 3).max(1)
                || (wrong_lower.len() >= 4 && (c.contains(&wrong_lower) || wrong_lower.contains(c)))
        })
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, c)| c)
}

/// The errors found so far in one file, and where each key is.
pub(crate) struct Errors {
    pub(crate) index: LocationIndex,
    pub(crate) list: Vec<ConfigError>,
}

impl Errors {
    /// An error about the key at `path` (its position is looked up).
    pub(crate) fn at(&mut self, path: &str, message: impl Into<String>) {
        let position = self.index.find(path);
        self.list.push(ConfigError {
            position,
            path: path.to_owned(),
            message: message.into(),
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
}
