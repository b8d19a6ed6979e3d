//! Rules that span fields and pipelines, run after every component parsed: each component's
//! own rules live beside its model ([`crate::source`], [`crate::buffer`], [`crate::kafka`]);
//! this module runs them and checks what only the whole file can (a port used twice, a pull
//! source on the kafka buffer).

use std::collections::HashMap;

use crate::buffer::check_buffer_plugin;
use crate::error::Errors;
use crate::location::join;
use crate::otlp::{OtlpKind, check_otlp};
use crate::parse::Context;
use crate::processor::check_processor;
use crate::sink::check_sink;
use crate::source::{check_deserializer, check_http};
use crate::{Buffer, Pipeline, Source, SourceKind};

/// Runs every pipeline's component rules, then the rules that span fields and pipelines.
pub(crate) fn validate(pipelines: &[Pipeline], errors: &mut Errors, context: Context<'_>) {
    let mut ports: HashMap<u16, &str> = HashMap::new();
    for p in pipelines {
        let name = p.name.as_str();
        if p.workers == 0 {
            errors.at(
                &join(name, "workers"),
                format!("`{name}.workers` must be at least 1"),
            );
        }
        if let Buffer::Plugin(plugin) = &p.buffer {
            check_buffer_plugin(plugin, &join(name, "buffer"), errors, context);
        }
        let tiers = p.buffer.tiers(&join(name, "buffer"));
        for (path, tier) in &tiers {
            tier.config().check(path, errors);
        }
        let push_only = tiers
            .iter()
            .find(|(_, tier)| !tier.config().takes_pull_sources());
        if let (SourceKind::Pull, Some((path, tier))) = (p.source.kind(), push_only) {
            let source = p.source.plugin_name();
            errors.at(
                path,
                format!(
                    "source `{source}` pulls its data and cannot use the {} buffer; use \
                     bounded_blocking, or a push source such as http",
                    tier.plugin_name()
                ),
            );
        }
        for (i, processor) in p.processor.iter().enumerate() {
            let path = format!("{}[{i}]", join(name, "processor"));
            check_processor(processor, &path, errors, context);
        }
        for (i, sink) in p.sink.iter().enumerate() {
            let path = format!("{}[{i}]", join(name, "sink"));
            check_sink(sink, &path, errors);
        }
        match &p.source {
            Source::File(file) => {
                let path = join(name, "source.file");
                check_deserializer(
                    &file.deserializer,
                    &join(&path, "deserializer"),
                    errors,
                    context,
                );
            }
            Source::Http(http) => check_http(http, &join(name, "source.http"), errors, context),
            _ => {
                if let Some((kind, otlp)) = p.source.otlp() {
                    let path = join(name, &format!("source.{}", source_key(errors, name, kind)));
                    check_otlp(otlp, kind, &path, errors, context);
                }
            }
        }
        if let Some(port) = p.source.port() {
            let key = match p.source.otlp() {
                Some((kind, _)) => source_key(errors, name, kind),
                None => p.source.plugin_name(),
            };
            let path = join(name, &format!("source.{key}"));
            if let Some(other) = ports.insert(port, name) {
                errors.at(
                    &join(&path, "port"),
                    format!(
                        "`{path}.port` {port} is already used by pipeline `{other}`; give each \
                         push source its own port"
                    ),
                );
            }
        }
    }
}

/// The key pipeline `name`'s OTLP source is written under (`otel_trace_source` or its newer
/// name `otlp_traces`), so that key paths find their line.
fn source_key(errors: &Errors, name: &str, kind: OtlpKind) -> &'static str {
    let newer = kind.newer_name();
    if errors
        .index
        .contains(&join(name, &format!("source.{newer}")))
    {
        newer
    } else {
        kind.plugin_name()
    }
}
