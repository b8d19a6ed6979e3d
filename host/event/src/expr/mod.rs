//! Data Prepper's expressions (`/status == 200 and hasTags("x")`, `/bytes / 1024`,
//! `/name + "-suffix"`): parsed and checked once into an [`Expression`], then evaluated per
//! event.
//!
//! # Flow
//! text → `lexer` (tokens with columns) → `parser` (a tree; syntax, regexes compiled, nesting
//! bounded) → `check` (what each operator and function can be given, from the literals) →
//! [`Expression`]. Per event, `eval` walks the tree (`functions` for calls).
//!
//! # Where this follows Data Prepper, and where not
//! The grammar (`DataPrepperExpression.g4`), the operators' type tables and the functions
//! follow Data Prepper's source; each module says how. The differences:
//! - Mistakes that Data Prepper finds only per event, when they involve literals alone
//!   (`"a" < 3`, `not 5`, `length(5)`, `hasTags(/x)`, a regex that does not compile), are
//!   errors when parsing, with the column.
//! - `+` joins string literals anywhere (the grammar allows `"a" + "b"` only at the top of an
//!   expression or a function's argument), and a key inside a larger argument expression is
//!   read (Data Prepper hands it to the operator as a key, which fails).
//! - Regexes are the `regex` crate's, not Java's: no look-around or back-references.
//! - `typeof double` is true for an event's floating-point number (in Data Prepper it never
//!   is), and unary `-` of a double negates it (Data Prepper fails).
//! - `and`/`or`/`in`/`not in`/`typeof` may be surrounded by any white space, not only `' '`.
//! - `formatDateTime` is not implemented; `subList` is, from the documentation.

mod check;
mod eval;
mod functions;
mod lexer;
mod parser;
mod tree;

#[cfg(test)]
mod tests;

use std::fmt;

use serde_json::Value;

use crate::event::Event;
use check::Kinds;
pub use functions::{java_double, java_string};
use tree::{Node, NodeKind};

/// A parsed, checked expression.
#[derive(Clone)]
pub struct Expression {
    source: String,
    root: Node,
}

impl fmt::Debug for Expression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Expression").field(&self.source).finish()
    }
}

/// Why a text is not an expression: where and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("at column {column}: {message}")]
pub struct ExprError {
    /// 1-based, in characters.
    pub column: usize,
    pub message: String,
}

/// Why an expression has no value for an event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    #[error("`{op}` cannot take {left} and {right}")]
    Operands {
        op: &'static str,
        left: &'static str,
        right: &'static str,
    },
    #[error("`{op}` cannot take {operand}")]
    Operand {
        op: &'static str,
        operand: &'static str,
    },
    #[error("`{op}` by zero")]
    DivisionByZero { op: &'static str },
    #[error("`{function}()` {message}")]
    Function {
        function: &'static str,
        message: String,
    },
    #[error("the number at {key} is beyond a 64-bit integer, which expressions cannot read")]
    NumberOutOfRange { key: String },
    #[error("the expression's value is {value}, which is not a JSON number (a division by zero?)")]
    NotFinite { value: String },
    #[error("a condition must be true or false, but the expression gave {found}")]
    NotBoolean { found: &'static str },
}

impl Expression {
    /// Parses and type-checks. Errors carry the 1-based column (in chars) where the problem is.
    pub fn parse(text: &str) -> Result<Expression, ExprError> {
        Self::parse_kinds(text).map(|(expression, _)| expression)
    }

    /// Parses a condition (`*_when`, routes): like [`Expression::parse`], and an error unless
    /// the expression can be a boolean (`/a + 1` is refused; `/flag` is fine, since a key may
    /// hold a boolean).
    pub fn parse_condition(text: &str) -> Result<Expression, ExprError> {
        let (expression, kinds) = Self::parse_kinds(text)?;
        if !kinds.can_be(Kinds::BOOL) {
            return Err(ExprError {
                column: deciding_column(&expression.root),
                message: format!(
                    "a condition must be true or false, but this expression gives {}",
                    kinds.describe()
                ),
            });
        }
        Ok(expression)
    }

    fn parse_kinds(text: &str) -> Result<(Expression, Kinds), ExprError> {
        let tokens = lexer::tokenize(text)?;
        let root = parser::parse(&tokens)?;
        let kinds = check::kinds(&root)?;
        Ok((
            Expression {
                source: text.to_owned(),
                root,
            },
            kinds,
        ))
    }

    /// The text it was parsed from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Its value for `event`. Missing keys read as null (Data Prepper); type mismatches in
    /// arithmetic and functions are errors, in boolean operators `false` (as in Data Prepper).
    pub fn evaluate(&self, event: &Event) -> Result<Value, EvalError> {
        eval::eval(&self.root, event)?.into_json()
    }

    /// A condition's verdict: true only when it evaluates to boolean true; false when it
    /// evaluates to false. An evaluation error, or a value that is not a boolean (Data
    /// Prepper's `ClassCastException`, e.g. `/flag` when the key is missing), is `Err`:
    /// callers decide (routes treat it as not matched; processors as Data Prepper documents).
    pub fn matches(&self, event: &Event) -> Result<bool, EvalError> {
        match eval::eval(&self.root, event)? {
            eval::Rv::Bool(b) => Ok(b),
            other => Err(EvalError::NotBoolean {
                found: other.type_name(),
            }),
        }
    }
}

/// The column an error about the whole expression's value points at: the operator that
/// makes it, or its first token.
fn deciding_column(node: &Node) -> usize {
    match &node.kind {
        NodeKind::Chain { rest, .. } => rest.last().map_or(node.column, |(_, column, _)| *column),
        _ => node.column,
    }
}
