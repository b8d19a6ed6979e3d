//! Events as Data Prepper has them, and Data Prepper's expression language over them. No I/O:
//! the pipeline crate parses events into [`Event`]s once per run of built-in processors, the
//! processors and routes read and change them here, and the pipeline serializes them again.
//!
//! # Layout
//! - [`event`]: an [`Event`] is its data (one JSON object) and its [`Metadata`] (event type,
//!   time received, attributes, tags).
//! - [`key`]: a [`Key`] is a path into an event's data as Data Prepper writes it (`a/b`,
//!   `/a/b`, JSON pointer escapes), with get, put and delete.
//! - [`template`]: format strings (`${/host}-${/service}`).
//! - [`expr`]: Data Prepper's expressions (`/status == 200 and hasTags("x")`): parsed and
//!   type-checked once, evaluated per event.

pub mod event;
pub mod expr;
pub mod key;
pub mod template;

pub use event::{Event, Metadata};
pub use expr::{EvalError, ExprError, Expression, java_double, java_string};
pub use key::{Key, KeyError};
pub use template::{Template, TemplateError};
