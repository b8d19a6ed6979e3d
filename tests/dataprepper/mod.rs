//! Data Prepper's own documentation as tests: the processor examples of its pages, parsed out of
//! the markdown into `tests/data/dataprepper/` (`extract.py`, from the documentation site's
//! repository; hand corrections in `conformance/overrides/`, doubtful examples listed in its
//! README).
//!
//! - [`docs_examples`]: every processor block and route list of the docs passes `validate`,
//!   or the one thing sluice refuses is named: a Data Prepper key it does not support yet, or a
//!   processor not built in yet ([`NOT_BUILT_IN`]).
//! - [`conformance`]: each documented input event, through the real binary with the
//!   documented processor block, gives the documented output.

mod conformance;
mod corpus;
mod docs_examples;
mod opensearch_examples;
mod pipeline;

/// Data Prepper processors the docs show that sluice has no built-in for yet: none since
/// `otel_metrics` (issue 45); kept for the next one.
pub(crate) const NOT_BUILT_IN: &[&str] = &[];

/// Whether a `validate` error names one thing sluice refuses on purpose (a Data Prepper key it
/// does not support yet, a processor not built in yet), not a mistake of sluice's.
pub(crate) fn refused_on_purpose(message: &str) -> bool {
    message.contains("not supported by sluice yet")
        || NOT_BUILT_IN
            .iter()
            .any(|name| message.contains(&format!("unknown processor `{name}`")))
}

/// Checks `yaml` as `sluice validate` does, with the built-in deserializers as the plugins.
pub(crate) fn validate(
    file: &str,
    yaml: &str,
) -> Result<sluice_config::Config, sluice_config::ConfigErrors> {
    let known: Vec<String> = ["json", "ndjson", "otlp"].map(str::to_owned).to_vec();
    let context = sluice_config::Context {
        deserializers: Some(&known),
        processors: None,
        no_environment: false,
        builtins: Some(sluice_pipeline::check_builtin),
    };
    sluice_config::parse(file, yaml, context)
}
