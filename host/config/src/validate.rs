//! Rules that span fields and pipelines, run after every component parsed: each component's
//! own rules live beside its model ([`crate::source`], [`crate::buffer`], [`crate::kafka`]);
//! this module runs them and checks what only the whole file can (a port used twice, a pull
//! source on the kafka buffer).

use std::collections::HashMap;

use crate::buffer::check_buffer_plugin;
use crate::context::Context;
use crate::error::Errors;
use crate::location::join;
use crate::processor::check_processor;
use crate::sink::check_sink;
use crate::{Buffer, Pipeline, SourceKind, Tier};

/// Runs every pipeline's component rules, then the rules that span fields and pipelines.
pub(crate) fn validate(
    pipelines: &[Pipeline],
    refused: &[String],
    errors: &mut Errors,
    context: Context<'_>,
) {
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
        let own_reader = p.source.reads_itself()
            && push_only.is_none()
            && !matches!(p.buffer, Buffer::Builtin(Tier::BoundedBlocking(_)));
        if own_reader {
            let source = p.source.plugin_name();
            errors.at(
                &join(name, "buffer"),
                format!(
                    "source `{source}` reads its input itself (its readers are the \
                     pipeline's read side) and cannot sit behind a buffer policy; use \
                     bounded_blocking, whose `buffer_size` bounds what it reads ahead"
                ),
            );
        }
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
            check_processor(
                processor,
                &path,
                errors,
                context.deserializers,
                context.builtins,
            );
        }
        for (i, sink) in p.sink.iter().enumerate() {
            let path = format!("{}[{i}]", join(name, "sink"));
            check_sink(&sink.sink, &path, errors);
        }
        crate::route::check_sink_routes(p, errors);
        let path = join(name, &format!("source.{}", p.source.key()));
        p.source.check(&path, errors, context);
        if let Some(port) = p.source.port()
            && let Some(other) = ports.insert(port, name)
        {
            errors.at(
                &join(&path, "port"),
                format!(
                    "`{path}.port` {port} is already used by pipeline `{other}`; give each \
                     push source its own port"
                ),
            );
        }
    }
    crate::connection::check_chains(pipelines, refused, errors);
}
