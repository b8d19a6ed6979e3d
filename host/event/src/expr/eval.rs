//! Evaluation: a [`Node`] and an [`Event`] → a value, with Data Prepper's run-time rules.
//!
//! - Numbers are Java's: an event's integer is an `Integer` if it fits 32 bits, else a `Long`;
//!   an event's floating-point number becomes a `Float` (32 bits, Data Prepper's
//!   `LiteralTypeConversionsConfiguration`), so `/pi == 3.14159` holds. Arithmetic widens as
//!   Java does (`int + long` is a long, anything with a float is a float, `/` on integers is a
//!   double), and integers wrap on overflow as Java's do.
//! - A missing key reads as `null`.
//! - The boolean operators (`and or not`, `< <= > >=`, `=~ !~`, `in`, `typeof`) give `false`
//!   when an operand has a type they cannot take: Data Prepper's evaluator turns their
//!   `IllegalArgumentException` into `false` (`ParseTreeEvaluatorListener.exitEveryRule`), so
//!   `/missing > 1` is false and `not (/missing > 1)` true. Arithmetic and functions fail
//!   instead ([`EvalError`]).
//! - Both sides of `and`/`or` are evaluated, as in Data Prepper, so an error on either side
//!   is the expression's error.
//!
//! Values borrow from the event and the expression where they can: a 1 MB string is read in
//! place, not copied.

use std::borrow::Cow;

use serde_json::Value;

use super::EvalError;
use super::functions;
use super::parser::compile_regex;
use super::tree::{BinOp, DataType, Lit, Node, NodeKind, Pattern};
use crate::event::Event;
use crate::key::Key;

/// A value during evaluation: a Java object as Data Prepper's evaluator has it.
#[derive(Debug, Clone)]
pub(super) enum Rv<'a> {
    Null,
    Bool(bool),
    Int(i32),
    Long(i64),
    /// A Java `Float`; `exact` is the event's number it came from, written back unchanged if
    /// no arithmetic touched it.
    Float {
        value: f32,
        exact: Option<f64>,
    },
    Double(f64),
    Str(Cow<'a, str>),
    /// A list or a map from the event.
    Json(Cow<'a, Value>),
    Set(&'a [Lit]),
}

impl<'a> Rv<'a> {
    /// A value read from an event (or its metadata).
    pub(super) fn from_json(
        value: &'a Value,
        key: &dyn std::fmt::Display,
    ) -> Result<Self, EvalError> {
        Ok(match value {
            Value::Null => Rv::Null,
            Value::Bool(b) => Rv::Bool(*b),
            Value::String(s) => Rv::Str(Cow::Borrowed(s)),
            Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    i32::try_from(i).map_or(Rv::Long(i), Rv::Int)
                } else if n.is_u64() {
                    // Java reads it as a `BigInteger`, which the evaluator refuses.
                    return Err(EvalError::NumberOutOfRange {
                        key: key.to_string(),
                    });
                } else {
                    let exact = n.as_f64().unwrap_or(f64::NAN);
                    Rv::Float {
                        value: exact as f32,
                        exact: Some(exact),
                    }
                }
            }
            Value::Array(_) | Value::Object(_) => Rv::Json(Cow::Borrowed(value)),
        })
    }

    pub(super) fn from_lit(lit: &'a Lit) -> Self {
        match lit {
            Lit::Null => Rv::Null,
            Lit::Bool(b) => Rv::Bool(*b),
            Lit::Int(n) => Rv::Int(*n),
            Lit::Long(n) => Rv::Long(*n),
            Lit::Float(f) => Rv::Float {
                value: *f,
                exact: None,
            },
            Lit::Str(s) => Rv::Str(Cow::Borrowed(s)),
        }
    }

    /// How an error names its type.
    pub(super) fn type_name(&self) -> &'static str {
        match self {
            Rv::Null => "null",
            Rv::Bool(_) => "a boolean",
            Rv::Int(_) => "an integer",
            Rv::Long(_) => "a long",
            Rv::Float { .. } => "a float",
            Rv::Double(_) => "a double",
            Rv::Str(_) => "a string",
            Rv::Json(v) if v.is_array() => "a list",
            Rv::Json(_) => "a map",
            Rv::Set(_) => "a set",
        }
    }

    /// The value as JSON.
    pub(super) fn into_json(self) -> Result<Value, EvalError> {
        Ok(match self {
            Rv::Null => Value::Null,
            Rv::Bool(b) => Value::Bool(b),
            Rv::Int(n) => Value::from(n),
            Rv::Long(n) => Value::from(n),
            Rv::Float {
                exact: Some(exact), ..
            } => number(exact)?,
            // Java writes a `Float` with the shortest digits that read back as it (`0.1`, not
            // `0.10000000149011612`); so does Rust's `Display`.
            Rv::Float { value, .. } => {
                number(value.to_string().parse::<f64>().unwrap_or(f64::NAN))?
            }
            Rv::Double(d) => number(d)?,
            Rv::Str(s) => Value::String(s.into_owned()),
            Rv::Json(v) => v.into_owned(),
            Rv::Set(members) => Value::Array(
                members
                    .iter()
                    .map(|m| Rv::from_lit(m).into_json())
                    .collect::<Result<_, _>>()?,
            ),
        })
    }
}

fn number(d: f64) -> Result<Value, EvalError> {
    serde_json::Number::from_f64(d)
        .map(Value::Number)
        .ok_or_else(|| EvalError::NotFinite {
            value: d.to_string(),
        })
}

/// A number, as Java's numeric classes.
#[derive(Debug, Clone, Copy)]
enum Num {
    I(i32),
    L(i64),
    F(f32),
    D(f64),
}

impl Num {
    fn of(rv: &Rv<'_>) -> Option<Num> {
        Some(match rv {
            Rv::Int(n) => Num::I(*n),
            Rv::Long(n) => Num::L(*n),
            Rv::Float { value, .. } => Num::F(*value),
            Rv::Double(d) => Num::D(*d),
            _ => return None,
        })
    }

    fn f32(self) -> f32 {
        match self {
            Num::I(n) => n as f32,
            Num::L(n) => n as f32,
            Num::F(f) => f,
            Num::D(d) => d as f32,
        }
    }

    fn f64(self) -> f64 {
        match self {
            Num::I(n) => f64::from(n),
            Num::L(n) => n as f64,
            Num::F(f) => f64::from(f),
            Num::D(d) => d,
        }
    }

    fn i64(self) -> i64 {
        match self {
            Num::I(n) => i64::from(n),
            Num::L(n) => n,
            // Not reached: callers use `i64` only when neither side is a float.
            Num::F(f) => f as i64,
            Num::D(d) => d as i64,
        }
    }
}

/// Java's binary numeric promotion: the wider of the two.
enum Promoted {
    I(i32, i32),
    L(i64, i64),
    F(f32, f32),
    D(f64, f64),
}

fn promote(a: Num, b: Num) -> Promoted {
    match (a, b) {
        (Num::D(_), _) | (_, Num::D(_)) => Promoted::D(a.f64(), b.f64()),
        (Num::F(_), _) | (_, Num::F(_)) => Promoted::F(a.f32(), b.f32()),
        (Num::L(_), _) | (_, Num::L(_)) => Promoted::L(a.i64(), b.i64()),
        (Num::I(x), Num::I(y)) => Promoted::I(x, y),
    }
}

fn from_num<'a>(n: Num) -> Rv<'a> {
    match n {
        Num::I(n) => Rv::Int(n),
        Num::L(n) => Rv::Long(n),
        Num::F(value) => Rv::Float { value, exact: None },
        Num::D(d) => Rv::Double(d),
    }
}

/// Evaluates `node` against `event`.
///
/// This recurses once per nesting level (with [`chain`] and `functions::call`), so it keeps
/// its frame small: each operation is a function of its own.
pub(super) fn eval<'a>(node: &'a Node, event: &'a Event) -> Result<Rv<'a>, EvalError> {
    match &node.kind {
        NodeKind::Lit(lit) => Ok(Rv::from_lit(lit)),
        NodeKind::Pointer(key) => read(key, event),
        NodeKind::Set(members) => Ok(Rv::Set(members)),
        NodeKind::Not(operand) => Ok(not(eval(operand, event)?)),
        NodeKind::Neg(operand) => neg(eval(operand, event)?),
        NodeKind::Chain { first, rest } => chain(first, rest, event),
        NodeKind::Regex {
            negate,
            subject,
            pattern,
        } => regex(eval(subject, event)?, pattern, *negate, event),
        NodeKind::TypeOf(key, ty) => type_of(key, *ty, event),
        NodeKind::Call(func, args) => functions::call(*func, args, event),
    }
}

fn chain<'a>(
    first: &'a Node,
    rest: &'a [(BinOp, usize, Node)],
    event: &'a Event,
) -> Result<Rv<'a>, EvalError> {
    let mut acc = eval(first, event)?;
    for (op, _, right) in rest {
        let right = eval(right, event)?;
        acc = binary(*op, acc, right)?;
    }
    Ok(acc)
}

fn not(value: Rv<'_>) -> Rv<'_> {
    match value {
        Rv::Bool(b) => Rv::Bool(!b),
        _ => Rv::Bool(false),
    }
}

fn neg(value: Rv<'_>) -> Result<Rv<'_>, EvalError> {
    match Num::of(&value) {
        Some(Num::I(n)) => Ok(Rv::Int(n.wrapping_neg())),
        Some(Num::L(n)) => Ok(Rv::Long(n.wrapping_neg())),
        Some(Num::F(f)) => Ok(Rv::Float {
            value: -f,
            exact: None,
        }),
        Some(Num::D(d)) => Ok(Rv::Double(-d)),
        None => Err(EvalError::Operand {
            op: "-",
            operand: value.type_name(),
        }),
    }
}

fn regex<'a>(
    subject: Rv<'a>,
    pattern: &'a Pattern,
    negate: bool,
    event: &'a Event,
) -> Result<Rv<'a>, EvalError> {
    let Rv::Str(text) = subject else {
        // Data Prepper: a null subject does not match, and any other type is an argument
        // error, which a boolean operator turns into false, for `!~` too.
        return Ok(Rv::Bool(false));
    };
    let matched = match pattern {
        Pattern::Compiled(regex) => regex.is_match(&text),
        Pattern::Pointer(key) => match read(key, event)? {
            Rv::Str(pattern) => match compile_regex(&pattern) {
                Ok(regex) => regex.is_match(&text),
                Err(_) => return Ok(Rv::Bool(false)),
            },
            _ => return Ok(Rv::Bool(false)),
        },
    };
    Ok(Rv::Bool(matched != negate))
}

fn type_of<'a>(key: &'a Key, ty: DataType, event: &'a Event) -> Result<Rv<'a>, EvalError> {
    let value = read(key, event)?;
    Ok(Rv::Bool(is_type(&value, ty)))
}

/// The value at `key`, `null` when there is none.
pub(super) fn read<'a>(key: &'a Key, event: &'a Event) -> Result<Rv<'a>, EvalError> {
    match event.get(key) {
        Some(value) => Rv::from_json(value, &format_args!("`{key}`")),
        None => Ok(Rv::Null),
    }
}

fn is_type(value: &Rv<'_>, ty: DataType) -> bool {
    match ty {
        DataType::Integer => matches!(value, Rv::Int(_)),
        DataType::Long => matches!(value, Rv::Long(_)),
        // Data Prepper turns an event's doubles into floats before `typeof` sees them, which
        // makes `typeof double` never true; here it is true for an event's floating-point
        // number, as its documentation says.
        DataType::Double => matches!(value, Rv::Float { exact: Some(_), .. } | Rv::Double(_)),
        // serde_json holds no big decimals.
        DataType::BigDecimal => false,
        DataType::Boolean => matches!(value, Rv::Bool(_)),
        DataType::String => matches!(value, Rv::Str(_)),
        DataType::Map => matches!(value, Rv::Json(v) if v.is_object()),
        DataType::Array => matches!(value, Rv::Json(v) if v.is_array()),
    }
}

fn binary<'a>(op: BinOp, left: Rv<'a>, right: Rv<'a>) -> Result<Rv<'a>, EvalError> {
    let mismatch = |left: &Rv<'_>, right: &Rv<'_>| EvalError::Operands {
        op: op.symbol(),
        left: left.type_name(),
        right: right.type_name(),
    };
    Ok(match op {
        BinOp::And | BinOp::Or => match (&left, &right) {
            (Rv::Bool(a), Rv::Bool(b)) => {
                Rv::Bool(if op == BinOp::And { *a && *b } else { *a || *b })
            }
            _ => Rv::Bool(false),
        },
        BinOp::Eq => Rv::Bool(equal(&left, &right)),
        BinOp::Ne => Rv::Bool(!equal(&left, &right)),
        BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
            Rv::Bool(match (Num::of(&left), Num::of(&right)) {
                (Some(a), Some(b)) => compare(op, a, b),
                _ => false,
            })
        }
        BinOp::In | BinOp::NotIn => {
            let Rv::Set(members) = right else {
                return Ok(Rv::Bool(false));
            };
            let found = members
                .iter()
                .any(|m| strictly_equal(&left, &Rv::from_lit(m)));
            Rv::Bool(found == (op == BinOp::In))
        }
        BinOp::Add => {
            if let (Rv::Str(a), Rv::Str(b)) = (&left, &right) {
                let mut joined = String::with_capacity(a.len() + b.len());
                joined.push_str(a);
                joined.push_str(b);
                return Ok(Rv::Str(Cow::Owned(joined)));
            }
            let (Some(a), Some(b)) = (Num::of(&left), Num::of(&right)) else {
                return Err(mismatch(&left, &right));
            };
            from_num(match promote(a, b) {
                Promoted::I(x, y) => Num::I(x.wrapping_add(y)),
                Promoted::L(x, y) => Num::L(x.wrapping_add(y)),
                Promoted::F(x, y) => Num::F(x + y),
                Promoted::D(x, y) => Num::D(x + y),
            })
        }
        BinOp::Sub | BinOp::Mul => {
            let (Some(a), Some(b)) = (Num::of(&left), Num::of(&right)) else {
                return Err(mismatch(&left, &right));
            };
            let sub = op == BinOp::Sub;
            from_num(match promote(a, b) {
                Promoted::I(x, y) => Num::I(if sub {
                    x.wrapping_sub(y)
                } else {
                    x.wrapping_mul(y)
                }),
                Promoted::L(x, y) => Num::L(if sub {
                    x.wrapping_sub(y)
                } else {
                    x.wrapping_mul(y)
                }),
                Promoted::F(x, y) => Num::F(if sub { x - y } else { x * y }),
                Promoted::D(x, y) => Num::D(if sub { x - y } else { x * y }),
            })
        }
        BinOp::Div => {
            let (Some(a), Some(b)) = (Num::of(&left), Num::of(&right)) else {
                return Err(mismatch(&left, &right));
            };
            // Java's table: with a float (and no double) the quotient is a float; otherwise,
            // integers included, a double. Division by zero gives an infinity or NaN as in
            // Java, which compares but is no JSON value (`evaluate` refuses it).
            from_num(match promote(a, b) {
                Promoted::F(x, y) => Num::F(x / y),
                _ => Num::D(a.f64() / b.f64()),
            })
        }
        BinOp::Mod => match (&left, &right) {
            (Rv::Int(_), Rv::Int(0)) => return Err(EvalError::DivisionByZero { op: "%" }),
            (Rv::Int(x), Rv::Int(y)) => Rv::Int(x.wrapping_rem(*y)),
            // Data Prepper's `%` takes two integers (`Integer`, not `Long`) only.
            _ => return Err(mismatch(&left, &right)),
        },
    })
}

/// `==`: Data Prepper's `GenericEqualOperator`.
fn equal(left: &Rv<'_>, right: &Rv<'_>) -> bool {
    if let (Some(a), Some(b)) = (Num::of(left), Num::of(right)) {
        // A float on either side compares as floats; else a double as doubles; else as
        // integers.
        return match (a, b) {
            (Num::F(_), _) | (_, Num::F(_)) => a.f32() == b.f32(),
            (Num::D(_), _) | (_, Num::D(_)) => a.f64() == b.f64(),
            _ => a.i64() == b.i64(),
        };
    }
    match (left, right) {
        (Rv::Null, Rv::Null) => true,
        (Rv::Bool(a), Rv::Bool(b)) => a == b,
        (Rv::Str(a), Rv::Str(b)) => a == b,
        // Java's `List.equals`/`Map.equals` over the values Jackson read, which compare as
        // serde_json's do (`1` and `1.0` differ).
        (Rv::Json(a), Rv::Json(b)) => a == b,
        (Rv::Set(a), Rv::Set(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|m| b.iter().any(|n| super::parser::same_literal(m, n)))
        }
        _ => false,
    }
}

/// Java's `equals`, which `Set.contains` uses: same type and value.
fn strictly_equal(left: &Rv<'_>, right: &Rv<'_>) -> bool {
    match (left, right) {
        (Rv::Int(a), Rv::Int(b)) => a == b,
        (Rv::Long(a), Rv::Long(b)) => a == b,
        (Rv::Float { value: a, .. }, Rv::Float { value: b, .. }) => a.to_bits() == b.to_bits(),
        (Rv::Double(a), Rv::Double(b)) => a.to_bits() == b.to_bits(),
        (Rv::Bool(a), Rv::Bool(b)) => a == b,
        (Rv::Str(a), Rv::Str(b)) => a == b,
        _ => false,
    }
}

/// `< <= > >=`: Data Prepper's `NumericCompareOperator` tables, which are Java's promotion
/// except that `<=` and `>=` compare a float with a double as floats.
fn compare(op: BinOp, a: Num, b: Num) -> bool {
    use std::cmp::Ordering;
    let ordering = match (op, a, b) {
        (BinOp::Le | BinOp::Ge, Num::F(x), Num::D(y)) => x.partial_cmp(&(y as f32)),
        _ => match promote(a, b) {
            Promoted::I(x, y) => Some(x.cmp(&y)),
            Promoted::L(x, y) => Some(x.cmp(&y)),
            Promoted::F(x, y) => x.partial_cmp(&y),
            Promoted::D(x, y) => x.partial_cmp(&y),
        },
    };
    // NaN compares false both ways, as in Java.
    match (op, ordering) {
        (_, None) => false,
        (BinOp::Lt, Some(o)) => o == Ordering::Less,
        (BinOp::Le, Some(o)) => o != Ordering::Greater,
        (BinOp::Gt, Some(o)) => o == Ordering::Greater,
        (_, Some(o)) => o != Ordering::Less,
    }
}
