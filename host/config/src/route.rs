//! Routes, in Data Prepper's shape: the pipeline's `route:` (or `routes:`) list of named
//! conditions, and each sink's `routes: [name, ...]`:
//!
//! ```yaml
//! route:
//!   - errors: '/status >= 500'
//!   - audit: 'hasTags("audit")'
//! sink:
//!   - file: {path: errors.jsonl, routes: [errors]}
//!   - file: {path: rest.jsonl, routes: [_default]}   # matched no route
//!   - stdout:                                        # no routes: every event
//! ```

use serde_yaml::Value;
use sluice_event::Expression;

use crate::error::{Errors, closest};
use crate::explain::describe;
use crate::pipeline::{DEFAULT_ROUTE, Route};
use crate::{Pipeline, location::join};

/// The routes of a pipeline's `route:` list at `path`.
pub(crate) fn routes(value: Value, path: &str, errors: &mut Errors) -> Option<Vec<Route>> {
    let items = match value {
        Value::Null => return Some(Vec::new()),
        Value::Sequence(items) => items,
        other => {
            errors.at(
                path,
                format!(
                    "`{path}` must be a list of `- name: \"condition\"`, e.g. `- errors: '/status >= 500'`, got {}",
                    describe(&other)
                ),
            );
            return None;
        }
    };
    let before = errors.list.len();
    let mut routes: Vec<Route> = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let at = format!("{path}[{i}]");
        let (name, condition) = match item {
            Value::Mapping(m) if m.len() == 1 => m.into_iter().next().expect("one entry"),
            other => {
                errors.at(
                    &at,
                    format!(
                        "`{at}` must be one `name: \"condition\"`, e.g. `errors: '/status >= 500'`, got {}",
                        describe(&other)
                    ),
                );
                continue;
            }
        };
        let (Value::String(name), Value::String(condition)) = (name, condition) else {
            errors.at(
                &at,
                format!("`{at}` must be one `name: \"condition\"`, both text"),
            );
            continue;
        };
        let key = join(&at, &name);
        if name == DEFAULT_ROUTE {
            errors.at(
                &key,
                format!("`{DEFAULT_ROUTE}` is the events that matched no route; name the route otherwise"),
            );
            continue;
        }
        if routes.iter().any(|r| r.name == name) {
            errors.at(&key, format!("route `{name}` is defined twice in `{path}`"));
            continue;
        }
        match Expression::parse_condition(&condition) {
            Ok(condition) => routes.push(Route { name, condition }),
            Err(e) => errors.at(&key, format!("`{key}`: expression `{condition}` {e}")),
        }
    }
    (errors.list.len() == before).then_some(routes)
}

/// Each sink's `routes` names a route of the pipeline (or `_default`); its `include_keys` and
/// `exclude_keys` are not both given, and name top-level keys.
pub(crate) fn check_sink_routes(p: &Pipeline, errors: &mut Errors) {
    let names: Vec<&str> = p.route.iter().map(|r| r.name.as_str()).collect();
    for (i, sink) in p.sink.iter().enumerate() {
        let path = join(
            &format!("{}[{i}]", join(&p.name, "sink")),
            sink.sink.plugin_name(),
        );
        for route in &sink.context.routes {
            if route == DEFAULT_ROUTE || names.contains(&route.as_str()) {
                continue;
            }
            let hint = match closest(route, names.iter().copied().chain([DEFAULT_ROUTE])) {
                Some(best) => format!(", did you mean `{best}`?"),
                None if names.is_empty() => format!(
                    "; pipeline `{}` has no `route:` list, add one, e.g. `route: [{{{route}: '/status >= 500'}}]`",
                    p.name
                ),
                None => format!("; the routes are {}", crate::explain::list(&names)),
            };
            errors.at(
                &join(&path, "routes"),
                format!("`{path}.routes` names route `{route}`, which is not defined{hint}"),
            );
        }
        let context = &sink.context;
        if !context.include_keys.is_empty() && !context.exclude_keys.is_empty() {
            errors.at(
                &path,
                format!("`{path}` has both `include_keys` and `exclude_keys`; keep one"),
            );
        }
        for (key, list) in [
            ("include_keys", &context.include_keys),
            ("exclude_keys", &context.exclude_keys),
        ] {
            if let Some(bad) = list.iter().find(|k| k.contains('/')) {
                errors.at(
                    &join(&path, key),
                    format!("`{path}.{key}` has `{bad}`: it names top-level keys, without `/`"),
                );
            }
        }
    }
}
