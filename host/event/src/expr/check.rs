//! The type check, run once when an expression is parsed (so at `sluice validate`): what each
//! operand can be, from its literals and functions, and an error with the column wherever an
//! operator or function can never take what it is given (`"a" < 3`, `true + 1`, `not 5`,
//! `length(5)`). A key may hold anything, so an operand that reads a key passes and is checked
//! per event.
//!
//! Data Prepper itself finds these at run time, where a boolean operator makes them `false`;
//! refusing them up front is stricter, and each is a mistake in the expression.

use super::ExprError;
use super::functions::{Cidr, Func, Want};
use super::tree::{Arg, BinOp, Lit, Node, NodeKind};

/// What a value can be: a set of these bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Kinds(u8);

impl Kinds {
    pub(super) const BOOL: Kinds = Kinds(1);
    pub(super) const NUM: Kinds = Kinds(2);
    pub(super) const STR: Kinds = Kinds(4);
    pub(super) const NULL: Kinds = Kinds(8);
    pub(super) const LIST: Kinds = Kinds(16);
    pub(super) const MAP: Kinds = Kinds(32);
    pub(super) const SET: Kinds = Kinds(64);
    /// What a key may hold.
    const ANY: Kinds = Kinds(1 | 2 | 4 | 8 | 16 | 32);

    const fn or(self, other: Kinds) -> Kinds {
        Kinds(self.0 | other.0)
    }

    pub(super) fn can_be(self, other: Kinds) -> bool {
        self.0 & other.0 != 0
    }

    /// `"a string or a number"`.
    pub(super) fn describe(self) -> String {
        let names = [
            (Kinds::BOOL, "a boolean"),
            (Kinds::NUM, "a number"),
            (Kinds::STR, "a string"),
            (Kinds::NULL, "null"),
            (Kinds::LIST, "a list"),
            (Kinds::MAP, "a map"),
            (Kinds::SET, "a set"),
        ];
        let found: Vec<&str> = names
            .iter()
            .filter(|(k, _)| self.can_be(*k))
            .map(|(_, name)| *name)
            .collect();
        found.join(" or ")
    }
}

fn error(column: usize, message: impl Into<String>) -> ExprError {
    ExprError {
        column,
        message: message.into(),
    }
}

/// What `node` can evaluate to, or the first place it cannot work.
///
/// This recurses once per nesting level, so each check that can fail is a function of its own
/// and the recursive frame stays small.
pub(super) fn kinds(node: &Node) -> Result<Kinds, ExprError> {
    Ok(match &node.kind {
        NodeKind::Lit(lit) => lit_kinds(lit),
        NodeKind::Pointer(_) => Kinds::ANY,
        NodeKind::Set(_) => Kinds::SET,
        NodeKind::Not(operand) => unary("not", Kinds::BOOL, "a boolean", kinds(operand)?, operand)?,
        NodeKind::Neg(operand) => unary("-", Kinds::NUM, "a number", kinds(operand)?, operand)?,
        NodeKind::Chain { first, rest } => chain(first, rest)?,
        NodeKind::Regex { .. } | NodeKind::TypeOf(..) => Kinds::BOOL,
        NodeKind::Call(func, args) => call(*func, node.column, args)?,
    })
}

fn unary(
    symbol: &str,
    want: Kinds,
    what: &str,
    k: Kinds,
    operand: &Node,
) -> Result<Kinds, ExprError> {
    if !k.can_be(want) {
        return Err(error(
            operand.column,
            format!("`{symbol}` takes {what}, not {}", k.describe()),
        ));
    }
    Ok(want)
}

fn chain(first: &Node, rest: &[(BinOp, usize, Node)]) -> Result<Kinds, ExprError> {
    let mut acc = kinds(first)?;
    let mut acc_column = first.column;
    for (op, column, right) in rest {
        let r = kinds(right)?;
        acc = binary(*op, *column, (acc, acc_column), (r, right))?;
        acc_column = *column;
    }
    Ok(acc)
}

fn lit_kinds(lit: &Lit) -> Kinds {
    match lit {
        Lit::Null => Kinds::NULL,
        Lit::Bool(_) => Kinds::BOOL,
        Lit::Int(_) | Lit::Long(_) | Lit::Float(_) => Kinds::NUM,
        Lit::Str(_) => Kinds::STR,
    }
}

/// The kinds of `left op right`.
fn binary(
    op: BinOp,
    column: usize,
    (left, left_column): (Kinds, usize),
    (right, right_node): (Kinds, &Node),
) -> Result<Kinds, ExprError> {
    let symbol = op.symbol();
    let both = |want: Kinds, what: &str| -> Result<(), ExprError> {
        if !left.can_be(want) {
            return Err(error(
                left_column,
                format!(
                    "`{symbol}` takes {what}, not {} on its left",
                    left.describe()
                ),
            ));
        }
        if !right.can_be(want) {
            return Err(error(
                right_node.column,
                format!(
                    "`{symbol}` takes {what}, not {} on its right",
                    right.describe()
                ),
            ));
        }
        Ok(())
    };
    Ok(match op {
        BinOp::And | BinOp::Or => {
            both(Kinds::BOOL, "booleans")?;
            Kinds::BOOL
        }
        BinOp::Eq | BinOp::Ne => Kinds::BOOL,
        BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
            both(Kinds::NUM, "numbers")?;
            Kinds::BOOL
        }
        BinOp::In | BinOp::NotIn => Kinds::BOOL,
        BinOp::Add => {
            let num = left.can_be(Kinds::NUM) && right.can_be(Kinds::NUM);
            let str = left.can_be(Kinds::STR) && right.can_be(Kinds::STR);
            if !num && !str {
                both(Kinds::NUM.or(Kinds::STR), "numbers or strings")?;
                return Err(error(
                    column,
                    format!(
                        "`+` adds two numbers or joins two strings, not {} and {}",
                        left.describe(),
                        right.describe()
                    ),
                ));
            }
            match (num, str) {
                (true, true) => Kinds::NUM.or(Kinds::STR),
                (true, false) => Kinds::NUM,
                _ => Kinds::STR,
            }
        }
        BinOp::Sub | BinOp::Mul | BinOp::Div => {
            both(Kinds::NUM, "numbers")?;
            Kinds::NUM
        }
        BinOp::Mod => {
            both(Kinds::NUM, "integers")?;
            if let NodeKind::Lit(Lit::Float(_)) = right_node.kind {
                return Err(error(right_node.column, "`%` takes integers, not a float"));
            }
            Kinds::NUM
        }
    })
}

/// Checks a call's arguments; gives what it returns.
fn call(func: Func, column: usize, args: &[Arg]) -> Result<Kinds, ExprError> {
    let name = func.name();
    let wants = func.signature(args.len()).map_err(|says| {
        error(
            column,
            format!("`{name}()` {says}, not {}", count(args.len())),
        )
    })?;
    for (arg, want) in args.iter().zip(wants) {
        check_arg(name, arg, want)?;
    }
    Ok(match func {
        Func::Length => Kinds::NUM.or(Kinds::NULL),
        Func::HasTags | Func::Contains | Func::StartsWith | Func::CidrContains => Kinds::BOOL,
        Func::GetMetadata => Kinds::ANY,
        Func::SubstringAfter
        | Func::SubstringAfterLast
        | Func::SubstringBefore
        | Func::SubstringBeforeLast => Kinds::STR.or(Kinds::NULL),
        Func::Join => Kinds::STR.or(Kinds::MAP),
        Func::SubList => Kinds::LIST,
        Func::GenerateUuid | Func::GetEventType | Func::ToJsonString => Kinds::STR,
        Func::Now => Kinds::NUM,
    })
}

fn count(n: usize) -> String {
    match n {
        0 => "none".to_owned(),
        1 => "1 argument".to_owned(),
        n => format!("{n} arguments"),
    }
}

fn check_arg(name: &str, arg: &Arg, want: Want) -> Result<(), ExprError> {
    let node = match arg {
        Arg::Key(key, column) => {
            return match want {
                Want::Key | Want::KeyOrString => Ok(()),
                _ => Err(error(
                    *column,
                    format!(
                        "`{name}()` takes {} here, not a key (`{key}`): it would get the key, not its value",
                        wanted(want)
                    ),
                )),
            };
        }
        Arg::Value(node) => node,
    };
    let k = kinds(node)?;
    let refuse = || {
        Err(error(
            node.column,
            format!(
                "`{name}()` takes {} here, not {}",
                wanted(want),
                k.describe()
            ),
        ))
    };
    match want {
        // Only a bare key reaches the function as a key.
        Want::Key => refuse(),
        Want::KeyOrString | Want::String if !k.can_be(Kinds::STR) => refuse(),
        Want::Tag | Want::Cidr if !k.can_be(Kinds::STR) => refuse(),
        Want::Integer if !k.can_be(Kinds::NUM) => refuse(),
        Want::Integer => match &node.kind {
            NodeKind::Lit(Lit::Float(_)) => refuse(),
            _ => Ok(()),
        },
        Want::Tag => match &node.kind {
            NodeKind::Lit(Lit::Str(tag)) if tag.is_empty() => Err(error(
                node.column,
                format!("`{name}()` takes non-empty tags"),
            )),
            _ => Ok(()),
        },
        Want::Cidr => match &node.kind {
            NodeKind::Lit(Lit::Str(block)) => Cidr::parse(block)
                .map(|_| ())
                .map_err(|message| error(node.column, format!("`{name}()`: {message}"))),
            _ => Ok(()),
        },
        Want::KeyOrString | Want::String => Ok(()),
    }
}

fn wanted(want: Want) -> &'static str {
    match want {
        Want::KeyOrString => "a key or a string",
        Want::String => "a string",
        Want::Tag => "a tag (a string)",
        Want::Cidr => "a CIDR block (a string)",
        Want::Key => "a key such as `/list`",
        Want::Integer => "an integer",
    }
}
