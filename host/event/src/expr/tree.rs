//! The parsed form of an expression, which the type check reads once and evaluation walks per
//! event. Operators of one precedence level written in a row (`a + b - c`, `x or y and z`) are
//! one [`NodeKind::Chain`] evaluated left to right, so a long chain is a loop, not a deep tree:
//! the tree is only as deep as the expression's nesting, which the parser bounds.

use regex::Regex;

use super::functions::Func;
use crate::key::Key;

/// A node and where it is in the text.
#[derive(Debug, Clone)]
pub(super) struct Node {
    pub(super) kind: NodeKind,
    /// 1-based column in characters: of an operator for an operation, of the token otherwise.
    pub(super) column: usize,
}

#[derive(Debug, Clone)]
pub(super) enum NodeKind {
    Lit(Lit),
    /// A key into the event (`/a/b`, `"/a b"`).
    Pointer(Key),
    /// `{200, 202}`: members of one type, each once, in the order written.
    Set(Vec<Lit>),
    Not(Box<Node>),
    Neg(Box<Node>),
    /// `first op1 second op2 third ...`, all operators of one precedence level, applied left to
    /// right. For `in`/`not in` the right operand is a [`NodeKind::Set`].
    Chain {
        first: Box<Node>,
        rest: Vec<(BinOp, usize, Node)>,
    },
    /// `subject =~ pattern`; Data Prepper takes only a key or a string on either side.
    Regex {
        negate: bool,
        subject: Box<Node>,
        pattern: Pattern,
    },
    /// `/key typeof integer`.
    TypeOf(Key, DataType),
    Call(Func, Vec<Arg>),
}

/// A literal.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Lit {
    Null,
    Bool(bool),
    Int(i32),
    Long(i64),
    Float(f32),
    Str(String),
}

/// A binary operator; [`BinOp::level`] is its precedence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BinOp {
    And,
    Or,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    In,
    NotIn,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
}

impl BinOp {
    /// Loosest first, as in the grammar: `and`/`or` (one level, left to right), equality,
    /// relational, set membership, `+ -`, `* / %`. (`=~` sits between equality and relational
    /// and takes only a key or a string on each side, so it is not a chain.)
    pub(super) fn level(self) -> u8 {
        match self {
            BinOp::And | BinOp::Or => 0,
            BinOp::Eq | BinOp::Ne => 1,
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => 2,
            BinOp::In | BinOp::NotIn => 3,
            BinOp::Add | BinOp::Sub => 4,
            BinOp::Mul | BinOp::Div | BinOp::Mod => 5,
        }
    }

    pub(super) fn symbol(self) -> &'static str {
        match self {
            BinOp::And => "and",
            BinOp::Or => "or",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::In => "in",
            BinOp::NotIn => "not in",
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Mod => "%",
        }
    }
}

/// The right side of `=~`.
#[derive(Debug, Clone)]
pub(super) enum Pattern {
    /// A string literal, compiled when the expression is parsed.
    Compiled(Regex),
    /// A key whose string value is compiled per event.
    Pointer(Key),
}

/// `typeof`'s types (Data Prepper's `DataType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DataType {
    Integer,
    Long,
    Double,
    BigDecimal,
    Boolean,
    String,
    Map,
    Array,
}

impl DataType {
    pub(super) fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "integer" => Self::Integer,
            "long" => Self::Long,
            "double" => Self::Double,
            "big_decimal" => Self::BigDecimal,
            "boolean" => Self::Boolean,
            "string" => Self::String,
            "map" => Self::Map,
            "array" => Self::Array,
            _ => return None,
        })
    }
}

/// A function's argument. Data Prepper hands a function a bare key as the key itself (so
/// `length(/list)` can measure a list) and anything else as its value.
#[derive(Debug, Clone)]
pub(super) enum Arg {
    Key(Key, usize),
    Value(Node),
}
