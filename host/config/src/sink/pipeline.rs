//! The `pipeline` sink: every event it takes to another pipeline of the file (its chains'
//! rules are [`crate::connection`]'s).

use serde::Deserialize;

use crate::error::Errors;
use crate::location::join;

/// The `pipeline` sink: sends every event it takes to another pipeline of the file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineSink {
    /// The downstream pipeline, whose source is `pipeline: {name: <this pipeline>}`. Required.
    pub name: String,
}

impl super::SinkConfig for PipelineSink {
    fn check(&self, path: &str, errors: &mut Errors) {
        if self.name.trim().is_empty() {
            errors.at(
                &join(path, "name"),
                format!("`{path}.name` must name the downstream pipeline, e.g. `name: raw-trace-pipeline`"),
            );
        }
    }

    fn name(&self) -> String {
        format!("pipeline:{}", self.name)
    }
}

crate::resolve::resolves_to_itself!(PipelineSink);
