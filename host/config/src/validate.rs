//! Rules that span fields and pipelines, run after every component parsed: each component's
//! own rules live beside its model ([`crate::source`], [`crate::buffer`], [`crate::kafka`]);
//! this module runs them and checks what only the whole file can (a port used twice, a pull
//! source on the kafka buffer).

use std::collections::HashMap;

use crate::buffer::{check_bounded_blocking, check_buffer_plugin};
use crate::error::Errors;
use crate::kafka::check_kafka;
use crate::location::join;
use crate::parse::Context;
use crate::processor::check_processor;
use crate::sink::check_sink;
use crate::{Buffer, Pipeline, SourceKind, Tier};

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
        match &p.buffer {
            Buffer::BoundedBlocking(b) => {
                check_bounded_blocking(b, &join(name, "buffer.bounded_blocking"), errors);
            }
            Buffer::Kafka(kafka) => check_kafka(kafka, &join(name, "buffer.kafka"), errors),
            Buffer::Plugin(plugin) => {
                check_buffer_plugin(plugin, &join(name, "buffer"), errors, context);
                for (i, tier) in plugin.tiers.iter().enumerate() {
                    let path = format!(
                        "{}[{i}].{}",
                        join(name, &format!("buffer.{}.tiers", plugin.name)),
                        tier.plugin_name()
                    );
                    match tier {
                        Tier::BoundedBlocking(b) => check_bounded_blocking(b, &path, errors),
                        Tier::Kafka(kafka) => check_kafka(kafka, &path, errors),
                    }
                }
            }
        }
        let kafka_path = match &p.buffer {
            Buffer::Kafka(_) => Some(join(name, "buffer.kafka")),
            Buffer::Plugin(plugin) => plugin
                .tiers
                .iter()
                .position(|t| matches!(t, Tier::Kafka(_)))
                .map(|i| {
                    format!(
                        "{}[{i}].kafka",
                        join(name, &format!("buffer.{}.tiers", plugin.name))
                    )
                }),
            Buffer::BoundedBlocking(_) => None,
        };
        if let (SourceKind::Pull, Some(path)) = (p.source.kind(), kafka_path) {
            let source = p.source.plugin_name();
            errors.at(
                &path,
                format!(
                    "source `{source}` pulls its data and cannot use the kafka buffer; use \
                     bounded_blocking, or a push source such as http"
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
}
