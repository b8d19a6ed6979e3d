//! Tokens → [`Node`]s, by precedence climbing over Data Prepper's grammar. It accepts what the
//! grammar accepts, with two generalisations that read the same way: `+` may join string
//! literals anywhere (the grammar allows `"a" + /b` only at the top of an expression or an
//! argument), and a key inside a function's argument may be part of a larger expression. What
//! an operator may take is checked afterwards ([`super::check`]); here only the shape.
//!
//! Every step down into a nested operand (parentheses, `not`, `-`, a function's arguments) is
//! counted, and past [`MAX_NESTING`] the parse stops with an error, so hostile input cannot
//! overflow the stack; chains of operators are loops and do not count.

use regex::{Regex, RegexBuilder};

use super::ExprError;
use super::functions::Func;
use super::lexer::{Tok, Token};
use super::tree::{Arg, BinOp, DataType, Lit, Node, NodeKind, Pattern};
use crate::key::Key;

/// How deep operands may nest: far beyond what a person writes. A debug build needs about
/// 6 KiB of stack per level for the parse, check and evaluation (release: under 1 KiB), so
/// 128 levels stay well inside a 2 MiB thread; the test
/// `the_deepest_expression_allowed_fits_in_a_megabyte_of_stack` holds it to that.
pub(super) const MAX_NESTING: usize = 128;

/// The compiled size a regex may reach (the regex crate's own default is 10 MiB; a condition
/// needs far less, and each expression holds its regexes for the life of the pipeline).
pub(super) const REGEX_SIZE_LIMIT: usize = 1 << 20;
/// The lazy DFA's cache per regex.
const REGEX_DFA_SIZE_LIMIT: usize = 2 << 20;

/// Parses the whole token list.
pub(super) fn parse(tokens: &[Token]) -> Result<Node, ExprError> {
    let mut parser = Parser {
        tokens,
        at: 0,
        nesting: 0,
        in_arguments: 0,
    };
    let node = parser.expression(0)?;
    let next = parser.peek();
    if next.kind != Tok::Eof {
        let message = match next.kind {
            Tok::Match | Tok::NotMatch => format!(
                "{} takes a key or a string on its left (`/a =~ \"x.*\"`)",
                next.kind.describe()
            ),
            Tok::TypeOf => "`typeof` takes a key such as `/a` on its left".to_owned(),
            Tok::RParen => "this `)` closes no `(`".to_owned(),
            _ => format!("expected an operator, found {}", next.kind.describe()),
        };
        return Err(error(next.column, message));
    }
    Ok(node)
}

/// Compiles a regex for `=~` with Data Prepper's meaning: the whole string must match
/// (Java's `String.matches`), and within the size limits.
pub(super) fn compile_regex(pattern: &str) -> Result<Regex, String> {
    RegexBuilder::new(&format!("^(?:{pattern})\\z"))
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_DFA_SIZE_LIMIT)
        .build()
        .map_err(|err| match err {
            regex::Error::Syntax(text) => {
                // The crate's message draws the pattern with a caret over several lines; the
                // last line says what is wrong.
                let reason = text
                    .lines()
                    .rev()
                    .find_map(|line| line.strip_prefix("error: "))
                    .unwrap_or(&text)
                    .to_owned();
                format!("invalid regex \"{pattern}\": {reason}")
            }
            regex::Error::CompiledTooBig(limit) => {
                format!("the regex \"{pattern}\" compiles to more than {limit} bytes")
            }
            other => format!("invalid regex \"{pattern}\": {other}"),
        })
}

fn error(column: usize, message: impl Into<String>) -> ExprError {
    ExprError {
        column,
        message: message.into(),
    }
}

struct Parser<'t> {
    tokens: &'t [Token],
    at: usize,
    nesting: usize,
    /// Inside a function's arguments a quoted `"/..."` is a string, not a key (Data Prepper's
    /// `getMetadata("/key")`).
    in_arguments: usize,
}

impl Parser<'_> {
    fn peek(&self) -> &Token {
        // The list ends with `Eof`, which is never consumed.
        &self.tokens[self.at.min(self.tokens.len() - 1)]
    }

    fn peek2(&self) -> &Tok {
        &self.tokens[(self.at + 1).min(self.tokens.len() - 1)].kind
    }

    fn advance(&mut self) -> Token {
        let token = self.peek().clone();
        if token.kind != Tok::Eof {
            self.at += 1;
        }
        token
    }

    fn expect(&mut self, kind: &Tok, what: &str) -> Result<Token, ExprError> {
        let token = self.peek();
        if &token.kind == kind {
            Ok(self.advance())
        } else {
            Err(error(
                token.column,
                format!("expected {what}, found {}", token.kind.describe()),
            ))
        }
    }

    fn enter(&mut self, column: usize) -> Result<(), ExprError> {
        self.nesting += 1;
        if self.nesting > MAX_NESTING {
            return Err(error(
                column,
                format!("the expression nests deeper than {MAX_NESTING} levels"),
            ));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.nesting -= 1;
    }

    /// Operators of `min_level` and tighter, left to right.
    ///
    /// This, [`Parser::operand`], [`Parser::primary`] and [`Parser::call`] recurse once per
    /// nesting level, so they keep their frames small (a debug build gives every temporary
    /// its own slot): anything that only builds an error or a leaf is in a function of its
    /// own.
    fn expression(&mut self, min_level: u8) -> Result<Node, ExprError> {
        let mut left = self.operand()?;
        while let Some(op) = binary_operator(&self.peek().kind) {
            if op.level() < min_level {
                break;
            }
            let column = self.advance_column();
            let right = if matches!(op, BinOp::In | BinOp::NotIn) {
                self.set_operand(op)?
            } else {
                self.expression(op.level() + 1)?
            };
            left = chain(left, op, column, right);
        }
        Ok(left)
    }

    fn advance_column(&mut self) -> usize {
        let column = self.peek().column;
        if self.peek().kind != Tok::Eof {
            self.at += 1;
        }
        column
    }

    /// The set literal on the right of `in`.
    #[inline(never)]
    fn set_operand(&mut self, op: BinOp) -> Result<Node, ExprError> {
        let next = self.peek();
        if next.kind != Tok::LBrace {
            return Err(error(
                next.column,
                format!(
                    "`{}` takes a set such as `{{200, 202}}` on its right, found {}",
                    op.symbol(),
                    next.kind.describe()
                ),
            ));
        }
        self.set()
    }

    /// A unary operation, a regex match, a `typeof`, or a primary.
    fn operand(&mut self) -> Result<Node, ExprError> {
        match self.peek().kind {
            Tok::Not => {
                let column = self.advance_column();
                self.enter(column)?;
                // `not` takes a primary or another `not` (the grammar's
                // `unaryOperator (primary | unaryOperatorExpression)`): `not /a == 1` is
                // `(not /a) == 1`.
                let operand = if self.peek().kind == Tok::Not {
                    self.operand()?
                } else {
                    self.primary()?
                };
                self.leave();
                Ok(unary(true, operand, column))
            }
            Tok::Minus => {
                let column = self.advance_column();
                self.enter(column)?;
                let operand = self.operand()?;
                self.leave();
                Ok(unary(false, operand, column))
            }
            Tok::Pointer(_) | Tok::EscapedPointer(_) | Tok::Str(_)
                if matches!(self.peek2(), Tok::Match | Tok::NotMatch) =>
            {
                self.regex()
            }
            Tok::Pointer(_) if *self.peek2() == Tok::TypeOf => self.type_of(),
            _ => self.primary(),
        }
    }

    /// `/key typeof integer` (the current token is the key).
    #[inline(never)]
    fn type_of(&mut self) -> Result<Node, ExprError> {
        let token = self.advance();
        let Tok::Pointer(text) = &token.kind else {
            return Err(error(
                token.column,
                "`typeof` takes a key such as `/a` on its left",
            ));
        };
        let key = self.key(text, token.column)?;
        self.advance();
        let ty = self.advance();
        match &ty.kind {
            Tok::DataType(name) if let Some(data_type) = DataType::parse(name) => Ok(Node {
                kind: NodeKind::TypeOf(key, data_type),
                column: token.column,
            }),
            other => Err(error(
                ty.column,
                format!(
                    "`typeof` takes a type (integer, long, double, big_decimal, boolean, string, map, array), found {}",
                    other.describe()
                ),
            )),
        }
    }

    /// `subject =~ pattern` (the current token is the subject).
    fn regex(&mut self) -> Result<Node, ExprError> {
        let subject_token = self.advance();
        let subject = self.regex_side(&subject_token)?;
        let op = self.advance();
        let pattern_token = self.advance();
        let pattern = match self.regex_side(&pattern_token) {
            Ok(Node {
                kind: NodeKind::Lit(Lit::Str(text)),
                ..
            }) => Pattern::Compiled(
                compile_regex(&text).map_err(|message| error(pattern_token.column, message))?,
            ),
            Ok(Node {
                kind: NodeKind::Pointer(key),
                ..
            }) => Pattern::Pointer(key),
            _ => {
                return Err(error(
                    pattern_token.column,
                    format!(
                        "{} takes a string or a key on its right, found {}",
                        op.kind.describe(),
                        pattern_token.kind.describe()
                    ),
                ));
            }
        };
        Ok(Node {
            kind: NodeKind::Regex {
                negate: op.kind == Tok::NotMatch,
                subject: Box::new(subject),
                pattern,
            },
            column: op.column,
        })
    }

    /// One side of `=~`: a key or a string.
    fn regex_side(&self, token: &Token) -> Result<Node, ExprError> {
        let kind = match &token.kind {
            Tok::Pointer(text) => NodeKind::Pointer(self.key(text, token.column)?),
            Tok::EscapedPointer(text) => self.escaped_pointer(text, token.column)?,
            Tok::Str(text) => NodeKind::Lit(Lit::Str(text.clone())),
            other => {
                return Err(error(
                    token.column,
                    format!("expected a string or a key, found {}", other.describe()),
                ));
            }
        };
        Ok(Node {
            kind,
            column: token.column,
        })
    }

    fn key(&self, text: &str, column: usize) -> Result<Key, ExprError> {
        Key::parse(text).map_err(|err| error(column, err.to_string()))
    }

    /// `"/a b"`: a key, but a string inside a function's arguments.
    fn escaped_pointer(&self, text: &str, column: usize) -> Result<NodeKind, ExprError> {
        if self.in_arguments > 0 {
            Ok(NodeKind::Lit(Lit::Str(text.to_owned())))
        } else {
            Ok(NodeKind::Pointer(self.key(text, column)?))
        }
    }

    fn primary(&mut self) -> Result<Node, ExprError> {
        match self.peek().kind {
            Tok::LParen => {
                let column = self.advance_column();
                self.enter(column)?;
                let inner = self.expression(0)?;
                self.close_paren()?;
                self.leave();
                Ok(inner)
            }
            Tok::Identifier(_) if *self.peek2() == Tok::LParen => self.call(),
            _ => self.leaf(),
        }
    }

    #[inline(never)]
    fn close_paren(&mut self) -> Result<(), ExprError> {
        self.expect(&Tok::RParen, "`)`").map(|_| ())
    }

    /// `name(args...)`.
    fn call(&mut self) -> Result<Node, ExprError> {
        let (func, column) = self.function_name()?;
        self.advance_column();
        self.enter(column)?;
        self.in_arguments += 1;
        let args = self.arguments()?;
        self.in_arguments -= 1;
        self.leave();
        Ok(Node {
            kind: NodeKind::Call(func, args),
            column,
        })
    }

    #[inline(never)]
    fn function_name(&mut self) -> Result<(Func, usize), ExprError> {
        let token = self.advance();
        let Tok::Identifier(name) = &token.kind else {
            return Err(error(token.column, "expected a function's name"));
        };
        match Func::lookup(name) {
            Some(func) => Ok((func, token.column)),
            None if name == "formatDateTime" => Err(error(
                token.column,
                "`formatDateTime()` (Java date patterns) is not supported",
            )),
            None => Err(error(token.column, format!("unknown function `{name}`"))),
        }
    }

    /// A primary that holds no other: a key, a literal, a set.
    #[inline(never)]
    fn leaf(&mut self) -> Result<Node, ExprError> {
        let token = self.advance();
        let column = token.column;
        let kind = match token.kind {
            Tok::Pointer(text) => NodeKind::Pointer(self.key(&text, column)?),
            Tok::EscapedPointer(text) => self.escaped_pointer(&text, column)?,
            Tok::Integer(_) | Tok::Float(_) | Tok::Bool(_) | Tok::Null | Tok::Str(_) => {
                NodeKind::Lit(literal(&token)?)
            }
            Tok::LBrace => {
                self.at -= 1;
                return self.set();
            }
            Tok::Identifier(name) => {
                return Err(error(
                    column,
                    format!(
                        "`{name}` is not a value: keys start with `/`, strings are quoted, functions are called (`{name}(...)`)"
                    ),
                ));
            }
            Tok::Variable(name) => {
                return Err(error(
                    column,
                    format!(
                        "`${{{name}}}` is reserved by Data Prepper and not usable in an expression"
                    ),
                ));
            }
            Tok::DataType(name) => {
                return Err(error(
                    column,
                    format!("`{name}` is a type, written only after `typeof`"),
                ));
            }
            Tok::Eof => {
                return Err(error(
                    column,
                    "expected a value at the end of the expression",
                ));
            }
            other => {
                return Err(error(
                    column,
                    format!("expected a value, found {}", other.describe()),
                ));
            }
        };
        Ok(Node { kind, column })
    }

    /// After `name(`: arguments separated by commas, then `)`.
    fn arguments(&mut self) -> Result<Vec<Arg>, ExprError> {
        let mut args = Vec::new();
        if self.peek().kind == Tok::RParen {
            self.advance_column();
            return Ok(args);
        }
        loop {
            let arg = if matches!(self.peek().kind, Tok::Pointer(_))
                && matches!(self.peek2(), Tok::Comma | Tok::RParen)
            {
                self.key_argument()?
            } else {
                Arg::Value(self.expression(0)?)
            };
            args.push(arg);
            if self.after_argument()? {
                return Ok(args);
            }
        }
    }

    /// A bare key as an argument.
    #[inline(never)]
    fn key_argument(&mut self) -> Result<Arg, ExprError> {
        let token = self.advance();
        match &token.kind {
            Tok::Pointer(text) => Ok(Arg::Key(self.key(text, token.column)?, token.column)),
            other => Err(error(
                token.column,
                format!("expected a key, found {}", other.describe()),
            )),
        }
    }

    /// `,` (false: another argument follows) or `)` (true: the last).
    #[inline(never)]
    fn after_argument(&mut self) -> Result<bool, ExprError> {
        let next = self.advance();
        match next.kind {
            Tok::Comma => Ok(false),
            Tok::RParen => Ok(true),
            other => Err(error(
                next.column,
                format!(
                    "expected `,` or `)` after an argument, found {}",
                    other.describe()
                ),
            )),
        }
    }

    /// `{literal, ...}`: members of one type (numbers, strings or booleans), no `null`.
    fn set(&mut self) -> Result<Node, ExprError> {
        let open = self.expect(&Tok::LBrace, "`{`")?;
        let mut members: Vec<Lit> = Vec::new();
        loop {
            let token = self.advance();
            let member = match &token.kind {
                Tok::Integer(_) | Tok::Float(_) | Tok::Bool(_) | Tok::Null | Tok::Str(_) => {
                    literal(&token)?
                }
                Tok::EscapedPointer(text) => {
                    return Err(error(
                        token.column,
                        format!(
                            "a set holds literals only; \"{text}\" starts with `/`, which makes it a key"
                        ),
                    ));
                }
                other => {
                    return Err(error(
                        token.column,
                        format!("a set holds literals only, found {}", other.describe()),
                    ));
                }
            };
            if member == Lit::Null {
                return Err(error(token.column, "a set cannot hold `null`"));
            }
            // A Java `HashSet`: each member once.
            if !members.iter().any(|m| same_literal(m, &member)) {
                members.push(member);
            }
            let next = self.advance();
            match next.kind {
                Tok::Comma => {}
                Tok::RBrace => break,
                other => {
                    return Err(error(
                        next.column,
                        format!("expected `,` or `}}` in a set, found {}", other.describe()),
                    ));
                }
            }
        }
        let kind_of = |m: &Lit| match m {
            Lit::Int(_) | Lit::Long(_) | Lit::Float(_) => 0,
            Lit::Str(_) => 1,
            Lit::Bool(_) | Lit::Null => 2,
        };
        if members.iter().any(|m| kind_of(m) != kind_of(&members[0])) {
            return Err(error(
                open.column,
                "a set's members must all be numbers, all strings or all booleans",
            ));
        }
        Ok(Node {
            kind: NodeKind::Set(members),
            column: open.column,
        })
    }
}

/// `left op right`, appended to `left` when it is a chain of the same level (left to right,
/// so `(a - b) - c` is the same chain as `a - b - c`).
#[inline(never)]
fn chain(left: Node, op: BinOp, column: usize, right: Node) -> Node {
    match left {
        Node {
            kind: NodeKind::Chain { first, mut rest },
            column: chain_column,
        } if rest
            .first()
            .is_some_and(|(o, _, _)| o.level() == op.level()) =>
        {
            rest.push((op, column, right));
            Node {
                kind: NodeKind::Chain { first, rest },
                column: chain_column,
            }
        }
        other => {
            let chain_column = other.column;
            Node {
                kind: NodeKind::Chain {
                    first: Box::new(other),
                    rest: vec![(op, column, right)],
                },
                column: chain_column,
            }
        }
    }
}

/// `not operand` or `-operand`.
#[inline(never)]
fn unary(not: bool, operand: Node, column: usize) -> Node {
    let operand = Box::new(operand);
    Node {
        kind: if not {
            NodeKind::Not(operand)
        } else {
            NodeKind::Neg(operand)
        },
        column,
    }
}

/// Java's `equals` between literals: same type and value (`1` and `1.0` differ).
pub(super) fn same_literal(a: &Lit, b: &Lit) -> bool {
    match (a, b) {
        (Lit::Float(x), Lit::Float(y)) => x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

fn binary_operator(tok: &Tok) -> Option<BinOp> {
    Some(match tok {
        Tok::And => BinOp::And,
        Tok::Or => BinOp::Or,
        Tok::Eq => BinOp::Eq,
        Tok::Ne => BinOp::Ne,
        Tok::Lt => BinOp::Lt,
        Tok::Le => BinOp::Le,
        Tok::Gt => BinOp::Gt,
        Tok::Ge => BinOp::Ge,
        Tok::In => BinOp::In,
        Tok::NotIn => BinOp::NotIn,
        Tok::Plus => BinOp::Add,
        Tok::Minus => BinOp::Sub,
        Tok::Star => BinOp::Mul,
        Tok::Slash => BinOp::Div,
        Tok::Percent => BinOp::Mod,
        _ => return None,
    })
}

/// A literal token's value, as Data Prepper reads it: an integer is an `Integer` if it fits,
/// else a `Long`; a float is a `Float` (32 bits).
fn literal(token: &Token) -> Result<Lit, ExprError> {
    Ok(match &token.kind {
        Tok::Integer(text) => match text.parse::<i32>() {
            Ok(n) => Lit::Int(n),
            Err(_) => Lit::Long(text.parse::<i64>().map_err(|_| {
                error(
                    token.column,
                    format!("the integer {text} is larger than a 64-bit integer holds"),
                )
            })?),
        },
        Tok::Float(text) => Lit::Float(
            text.parse::<f32>()
                .map_err(|err| error(token.column, format!("the number {text}: {err}")))?,
        ),
        Tok::Bool(b) => Lit::Bool(*b),
        Tok::Null => Lit::Null,
        Tok::Str(text) => Lit::Str(text.clone()),
        other => {
            return Err(error(
                token.column,
                format!("expected a literal, found {}", other.describe()),
            ));
        }
    })
}
