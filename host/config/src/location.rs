//! Where each key of a YAML document sits, so that errors found after parsing (unknown plugin,
//! bad value, a semantic rule) can name the line.
//!
//! serde_yaml reports a location only for errors it finds itself while deserializing, and none
//! once a document has become a `serde_yaml::Value`. We walk the document once more with
//! yaml-rust2's event parser, which marks every event, and record the position of each mapping
//! key and sequence item under its dotted path (`log-pipeline.sink[0].file.path`).

use std::collections::HashMap;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;

/// A 1-based line and column in the source text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

/// Dotted path → position of the key (or sequence item) that starts it.
#[derive(Debug, Default)]
pub struct LocationIndex {
    positions: HashMap<String, Position>,
}

impl LocationIndex {
    /// Indexes `text`. A document yaml-rust2 cannot parse gives an empty index: serde_yaml
    /// reports that syntax error with its own location.
    pub fn new(text: &str) -> Self {
        let mut builder = Builder::default();
        let mut parser = Parser::new_from_str(text);
        if parser.load(&mut builder, false).is_err() {
            return Self::default();
        }
        Self {
            positions: builder.positions,
        }
    }

    /// Whether `path` itself is in the document.
    pub fn contains(&self, path: &str) -> bool {
        self.positions.contains_key(path)
    }

    /// The position of `path`, or of its nearest ancestor that is in the document.
    pub fn find(&self, path: &str) -> Option<Position> {
        let mut path = path;
        loop {
            if let Some(position) = self.positions.get(path) {
                return Some(*position);
            }
            path = parent(path)?;
        }
    }
}

/// `a.b[0].c` → `a.b[0]` → `a.b` → `a` → none.
fn parent(path: &str) -> Option<&str> {
    let cut = path.rfind(['.', '['])?;
    Some(&path[..cut])
}

/// Joins a parent path and a key the way [`LocationIndex`] stores them.
pub fn join(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_owned()
    } else {
        format!("{parent}.{key}")
    }
}

enum Frame {
    /// `unplaced`: a sequence item whose position is taken from its first key, because
    /// yaml-rust2 marks the start of a block mapping after that key.
    Map {
        path: String,
        key: Option<String>,
        unplaced: bool,
    },
    Seq {
        path: String,
        next: usize,
    },
}

#[derive(Default)]
struct Builder {
    stack: Vec<Frame>,
    positions: HashMap<String, Position>,
}

impl Builder {
    fn record(&mut self, path: &str, mark: Marker) {
        // yaml-rust2 lines are 1-based and columns 0-based; editors count both from 1.
        let position = Position {
            line: mark.line(),
            column: mark.col() + 1,
        };
        self.positions.entry(path.to_owned()).or_insert(position);
    }

    /// A value (scalar or container) begins: returns its path and whether it is a sequence
    /// item, or `None` when it is a mapping key.
    fn begin_value(&mut self) -> Option<(String, bool)> {
        match self.stack.last_mut() {
            None => Some((String::new(), false)),
            Some(Frame::Map { path, key, .. }) => key.take().map(|k| (join(path, &k), false)),
            Some(Frame::Seq { path, next }) => {
                let item = format!("{path}[{next}]");
                *next += 1;
                Some((item, true))
            }
        }
    }

    /// A scalar or sequence value begins at `mark`.
    fn place_value(&mut self, mark: Marker) -> Option<String> {
        let (path, item) = self.begin_value()?;
        if item {
            self.record(&path, mark);
        }
        Some(path)
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, event: Event, mark: Marker) {
        match event {
            Event::Scalar(text, ..) if self.place_value(mark).is_none() => {
                // A mapping key.
                if let Some(Frame::Map {
                    path,
                    key,
                    unplaced,
                }) = self.stack.last_mut()
                {
                    let full = join(path, &text);
                    let item = std::mem::take(unplaced).then(|| path.clone());
                    *key = Some(text);
                    self.record(&full, mark);
                    if let Some(item) = item {
                        self.record(&item, mark);
                    }
                }
            }
            Event::Alias(_) => {
                self.place_value(mark);
            }
            Event::MappingStart(..) => {
                let (path, unplaced) = self.begin_value().unwrap_or_default();
                self.stack.push(Frame::Map {
                    path,
                    key: None,
                    unplaced,
                });
            }
            Event::SequenceStart(..) => {
                let path = self.place_value(mark).unwrap_or_default();
                self.stack.push(Frame::Seq { path, next: 0 });
            }
            Event::MappingEnd | Event::SequenceEnd => {
                self.stack.pop();
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_items_have_their_lines() {
        let index = LocationIndex::new(
            "p:\n  source:\n    http:\n      port: 1\n  sink:\n    - stdout:\n    - file:\n        path: x\n",
        );
        assert_eq!(
            index.find("p.source.http.port"),
            Some(Position { line: 4, column: 7 })
        );
        assert_eq!(index.find("p.sink[1].file.path").map(|p| p.line), Some(8));
        assert_eq!(
            index.find("p.sink[1]"),
            Some(Position { line: 7, column: 7 })
        );
        // Unknown tail: the nearest ancestor.
        assert_eq!(index.find("p.source.http.nope").map(|p| p.line), Some(3));
        assert_eq!(index.find("q"), None);
    }
}
