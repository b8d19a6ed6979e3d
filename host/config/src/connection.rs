//! Pipelines connected to pipelines, with Data Prepper's keys: an upstream pipeline's sink
//! `- pipeline: {name: downstream}` and the downstream pipeline's source `pipeline: {name:
//! upstream}`. Their shapes, and the rules only the whole file can check (`check_chains`): each
//! end names an existing pipeline whose other end names it back, and no chain is a cycle.
//!
//! One upstream may feed several downstream pipelines (one `pipeline` sink each); several
//! upstream pipelines may feed one downstream pipeline, whose source then lists them (`name:
//! [a, b]`, beside Data Prepper's one name).

use std::collections::BTreeMap;

use crate::error::Errors;
use crate::explain::list;
use crate::location::join;
use crate::{Buffer, Pipeline, Sink, Source};

/// The upstream pipelines a pipeline's source names, if it is a `pipeline` source.
fn upstream(p: &Pipeline) -> Option<&[String]> {
    match &p.source {
        Source::Pipeline(s) => Some(&s.name.0),
        _ => None,
    }
}

/// The downstream pipelines a pipeline's `pipeline` sinks name, with each sink's index.
fn downstream(p: &Pipeline) -> impl Iterator<Item = (usize, &str)> {
    p.sink
        .iter()
        .enumerate()
        .filter_map(|(i, s)| match &s.sink {
            Sink::Pipeline(to) => Some((i, to.name.as_str())),
            _ => None,
        })
}

/// The rules of connected pipelines: every `pipeline` sink names a pipeline of the file whose
/// source names this one back, and every `pipeline` source names pipelines that send to it;
/// no chain comes back to where it started; a pipeline whose buffer is kafka does not feed
/// one whose buffer policy has memory tiers (its commits would count events as delivered
/// that only memory holds). A pipeline named in `refused` is in the file but was refused:
/// its own error says so, naming it is no second one.
pub(crate) fn check_chains(pipelines: &[Pipeline], refused: &[String], errors: &mut Errors) {
    let by_name: BTreeMap<&str, &Pipeline> =
        pipelines.iter().map(|p| (p.name.as_str(), p)).collect();
    let names = || list(&by_name.keys().copied().collect::<Vec<_>>());
    for p in pipelines {
        let from = p.name.as_str();
        for (i, to) in downstream(p) {
            let path = format!("{}[{i}].pipeline.name", join(from, "sink"));
            let Some(down) = by_name.get(to) else {
                if refused.iter().any(|r| r == to) {
                    continue;
                }
                errors.at(
                    &path,
                    format!("`{path}` is `{to}`, but no pipeline of this file has that name; pipelines: {}", names()),
                );
                continue;
            };
            match upstream(down) {
                Some(ups) if ups.iter().any(|u| u == from) => {}
                Some(ups) => errors.at(
                    &path,
                    format!(
                        "pipeline `{from}` sends to `{to}`, but `{to}.source.pipeline.name` is {}; \
                         add `{from}` to it (`name: [{}, {from}]`)",
                        list(&ups.iter().map(String::as_str).collect::<Vec<_>>()),
                        ups.join(", ")
                    ),
                ),
                None => errors.at(
                    &path,
                    format!(
                        "pipeline `{from}` sends to `{to}`, but `{to}`'s source is `{}`; write \
                         `source: {{pipeline: {{name: {from}}}}}` in `{to}`",
                        down.source.plugin_name()
                    ),
                ),
            }
            if p.buffer.durable() && !acknowledges_back(&down.buffer) {
                errors.at(
                    &path,
                    format!(
                        "pipeline `{from}`'s buffer is kafka and it sends to `{to}`, whose buffer \
                         policy `{}` has tiers in memory, which do not say when its sinks took \
                         the events: `{from}` would commit events only memory holds; give `{to}` \
                         a kafka or bounded_blocking buffer",
                        down.buffer.plugin_name()
                    ),
                );
            }
        }
        for up in upstream(p).unwrap_or_default() {
            let path = join(from, "source.pipeline.name");
            match by_name.get(up.as_str()) {
                None if refused.contains(up) => {}
                None => errors.at(
                    &path,
                    format!("`{path}` names `{up}`, but no pipeline of this file has that name; pipelines: {}", names()),
                ),
                Some(u) if !downstream(u).any(|(_, to)| to == from) => errors.at(
                    &path,
                    format!(
                        "`{path}` names `{up}`, but `{up}` has no sink `pipeline: {{name: {from}}}`; \
                         add one to `{up}.sink`"
                    ),
                ),
                Some(_) => {}
            }
        }
    }
    if let Some(cycle) = cycle(pipelines, &by_name) {
        errors.at(
            &join(cycle[0], "sink"),
            format!(
                "pipelines {} form a cycle: events would go round forever; remove one of the \
                 `pipeline` sinks",
                cycle
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(" → ")
            ),
        );
    }
}

/// Whether a `pipeline` sink writing into `buffer` learns when the events are safe: at once
/// for a durable buffer, once the pipeline's sinks took them for `bounded_blocking`. A buffer
/// policy's memory tiers do not say (not built yet).
fn acknowledges_back(buffer: &Buffer) -> bool {
    matches!(buffer, Buffer::Builtin(_)) || buffer.durable()
}

/// The first cycle of `pipeline` sinks, as the names along it (the first again at the end).
fn cycle<'a>(
    pipelines: &'a [Pipeline],
    by_name: &BTreeMap<&str, &'a Pipeline>,
) -> Option<Vec<&'a str>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    fn visit<'a>(
        name: &'a str,
        by_name: &BTreeMap<&str, &'a Pipeline>,
        marks: &mut BTreeMap<&'a str, Mark>,
        path: &mut Vec<&'a str>,
    ) -> Option<Vec<&'a str>> {
        match marks.get(name).copied().unwrap_or(Mark::New) {
            Mark::Done => return None,
            Mark::Open => {
                let start = path.iter().position(|n| *n == name).unwrap_or(0);
                let mut cycle = path[start..].to_vec();
                cycle.push(name);
                return Some(cycle);
            }
            Mark::New => {}
        }
        let p = by_name.get(name)?;
        marks.insert(name, Mark::Open);
        path.push(name);
        for (_, to) in downstream(p) {
            if let Some(found) = visit(to, by_name, marks, path) {
                return Some(found);
            }
        }
        path.pop();
        marks.insert(name, Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    pipelines
        .iter()
        .find_map(|p| visit(&p.name, by_name, &mut marks, &mut Vec::new()))
}

/// Each pipeline's level in its chain: 0 for one no pipeline sends to, else one more than the
/// highest level of those that send to it. A pipeline's level is above every upstream one's,
/// so sorting by level puts upstream pipelines first. Expects no cycle (`check_chains`).
pub fn levels(pipelines: &[Pipeline]) -> Vec<usize> {
    fn level<'a>(
        p: &'a Pipeline,
        all: &'a [Pipeline],
        known: &mut BTreeMap<&'a str, usize>,
        depth: usize,
    ) -> usize {
        if let Some(&l) = known.get(p.name.as_str()) {
            return l;
        }
        // `depth` stops a cycle the check would have refused.
        let l = if depth > all.len() {
            0
        } else {
            upstream(p)
                .unwrap_or_default()
                .iter()
                .filter_map(|up| all.iter().find(|q| &q.name == up))
                .map(|u| level(u, all, known, depth + 1) + 1)
                .max()
                .unwrap_or(0)
        };
        known.insert(&p.name, l);
        l
    }
    let mut known = BTreeMap::new();
    pipelines
        .iter()
        .map(|p| level(p, pipelines, &mut known, 0))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::levels;

    #[test]
    fn a_pipeline_is_one_level_below_the_deepest_that_sends_to_it() {
        let text = "
leaf:
  source: {pipeline: {name: [entry, mid]}}
  sink: [stdout]
mid:
  source: {pipeline: {name: entry}}
  sink: [{pipeline: {name: leaf}}]
entry:
  source: {http: {port: 2021}}
  sink: [{pipeline: {name: mid}}, {pipeline: {name: leaf}}]
alone:
  source: {http: {port: 2022}}
  sink: [stdout]
";
        let config = crate::parse("t.yaml", text, crate::Context::default()).unwrap();
        let names: Vec<&str> = config.pipelines.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["leaf", "mid", "entry", "alone"]);
        assert_eq!(levels(&config.pipelines), [2, 1, 0, 0]);
    }
}
