//! Text → tokens, as Data Prepper's ANTLR lexer (`DataPrepperExpression.g4`) splits it: longest
//! match wins, and on a tie the rule written first (a number before a word, an escaped pointer
//! before a string). Each token keeps its 1-based column in characters, which every error
//! reports.
//!
//! Two of the grammar's rules shape what users can write and are kept as they are:
//! - `and`, `or`, `in`, `not in` and `typeof` are tokens only with white space on both sides
//!   (`/a<300and/b>200` is an error), and `not` only with white space after it.
//! - A string literal's escapes (`\"`, `\\`, `\$`, ...) are checked but not replaced: Data
//!   Prepper strips the quotes and keeps the rest as written, so `"a\"b"` is the four characters
//!   `a\"b`. A `$` must be escaped. A quoted string that starts with `/` is a key (`"/a b"`),
//!   except inside a function's arguments (the parser decides that).

use super::ExprError;

/// One token.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Token {
    pub(super) kind: Tok,
    /// 1-based, in characters.
    pub(super) column: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
    Integer(String),
    Float(String),
    Bool(bool),
    Null,
    /// A string literal's text between its quotes, escapes as written.
    Str(String),
    /// `/a/b`: the text with its leading `/`.
    Pointer(String),
    /// `"/a b"`: the text between the quotes.
    EscapedPointer(String),
    /// `${name}`: reserved by Data Prepper.
    Variable(String),
    /// `integer`, `string`, ...: only after `typeof`.
    DataType(String),
    /// A word that is none of the above: a function's name if a `(` follows.
    Identifier(String),
    And,
    Or,
    In,
    NotIn,
    TypeOf,
    Not,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Match,
    NotMatch,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    LParen,
    RParen,
    LBrace,
    RBrace,
    Comma,
    Eof,
}

impl Tok {
    /// How an error names it.
    pub(super) fn describe(&self) -> String {
        match self {
            Tok::Integer(t) | Tok::Float(t) => format!("`{t}`"),
            Tok::Bool(b) => format!("`{b}`"),
            Tok::Null => "`null`".to_owned(),
            Tok::Str(s) => format!("the string \"{}\"", shorten(s)),
            Tok::Pointer(p) => format!("the key `{}`", shorten(p)),
            Tok::EscapedPointer(p) => format!("the key \"{}\"", shorten(p)),
            Tok::Variable(v) => format!("`${{{v}}}`"),
            Tok::DataType(t) | Tok::Identifier(t) => format!("`{}`", shorten(t)),
            Tok::And => "`and`".to_owned(),
            Tok::Or => "`or`".to_owned(),
            Tok::In => "`in`".to_owned(),
            Tok::NotIn => "`not in`".to_owned(),
            Tok::TypeOf => "`typeof`".to_owned(),
            Tok::Not => "`not`".to_owned(),
            Tok::Eof => "the end".to_owned(),
            other => format!("`{}`", other.symbol()),
        }
    }

    /// The text of a punctuation token.
    pub(super) fn symbol(&self) -> &'static str {
        match self {
            Tok::Eq => "==",
            Tok::Ne => "!=",
            Tok::Lt => "<",
            Tok::Le => "<=",
            Tok::Gt => ">",
            Tok::Ge => ">=",
            Tok::Match => "=~",
            Tok::NotMatch => "!~",
            Tok::Plus => "+",
            Tok::Minus => "-",
            Tok::Star => "*",
            Tok::Slash => "/",
            Tok::Percent => "%",
            Tok::LParen => "(",
            Tok::RParen => ")",
            Tok::LBrace => "{",
            Tok::RBrace => "}",
            Tok::Comma => ",",
            Tok::And => "and",
            Tok::Or => "or",
            Tok::In => "in",
            Tok::NotIn => "not in",
            Tok::TypeOf => "typeof",
            Tok::Not => "not",
            _ => "",
        }
    }
}

/// At most this many characters of a literal in an error message.
fn shorten(text: &str) -> String {
    const MAX: usize = 40;
    if text.chars().count() <= MAX {
        text.to_owned()
    } else {
        let head: String = text.chars().take(MAX).collect();
        format!("{head}...")
    }
}

/// The grammar's `JsonPointerCharacter`, which is also what a word (`Identifier`) is made of.
fn word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '@'
}

/// The grammar's skipped white space.
fn space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

const DATA_TYPES: [&str; 8] = [
    "integer",
    "boolean",
    "big_decimal",
    "long",
    "map",
    "array",
    "double",
    "string",
];

/// Splits `text` into tokens, ending with [`Tok::Eof`].
pub(super) fn tokenize(text: &str) -> Result<Vec<Token>, ExprError> {
    let chars: Vec<char> = text.chars().collect();
    let mut lexer = Lexer {
        chars: &chars,
        at: 0,
    };
    let mut tokens = Vec::new();
    while let Some(token) = lexer.next()? {
        tokens.push(token);
    }
    tokens.push(Token {
        kind: Tok::Eof,
        column: chars.len() + 1,
    });
    Ok(tokens)
}

struct Lexer<'c> {
    chars: &'c [char],
    at: usize,
}

impl Lexer<'_> {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.at + ahead).copied()
    }

    fn starts_with(&self, from: usize, text: &str) -> bool {
        (from..)
            .zip(text.chars())
            .all(|(i, c)| self.chars.get(i) == Some(&c))
    }

    fn error(&self, at: usize, message: impl Into<String>) -> ExprError {
        ExprError {
            column: at + 1,
            message: message.into(),
        }
    }

    fn next(&mut self) -> Result<Option<Token>, ExprError> {
        loop {
            let Some(c) = self.peek(0) else {
                return Ok(None);
            };
            if !space(c) {
                break;
            }
            // ` and `, ` or `, ` in `, ` not in `, ` typeof `: the white space on both sides is
            // part of the token, so they are operators only when written apart.
            for (word, kind) in [
                ("not in", Tok::NotIn),
                ("typeof", Tok::TypeOf),
                ("and", Tok::And),
                ("or", Tok::Or),
                ("in", Tok::In),
            ] {
                let after = self.at + 1 + word.chars().count();
                if self.starts_with(self.at + 1, word)
                    && self.chars.get(after).is_some_and(|&c| space(c))
                {
                    let column = self.at + 2;
                    self.at = after + 1;
                    return Ok(Some(Token { kind, column }));
                }
            }
            self.at += 1;
        }
        let start = self.at;
        let c = self.chars[start];
        let column = start + 1;
        let kind = match c {
            '"' => self.quoted()?,
            '/' if self.peek(1).is_some_and(word_char) => self.pointer(),
            '$' => self.variable()?,
            c if word_char(c) => self.word(),
            _ => {
                let two = (c, self.peek(1));
                let (kind, len) = match two {
                    ('=', Some('=')) => (Tok::Eq, 2),
                    ('!', Some('=')) => (Tok::Ne, 2),
                    ('<', Some('=')) => (Tok::Le, 2),
                    ('>', Some('=')) => (Tok::Ge, 2),
                    ('=', Some('~')) => (Tok::Match, 2),
                    ('!', Some('~')) => (Tok::NotMatch, 2),
                    ('<', _) => (Tok::Lt, 1),
                    ('>', _) => (Tok::Gt, 1),
                    ('+', _) => (Tok::Plus, 1),
                    ('-', _) => (Tok::Minus, 1),
                    ('*', _) => (Tok::Star, 1),
                    ('/', _) => (Tok::Slash, 1),
                    ('%', _) => (Tok::Percent, 1),
                    ('(', _) => (Tok::LParen, 1),
                    (')', _) => (Tok::RParen, 1),
                    ('{', _) => (Tok::LBrace, 1),
                    ('}', _) => (Tok::RBrace, 1),
                    (',', _) => (Tok::Comma, 1),
                    ('=', _) => {
                        return Err(self.error(start, "`=` is not an operator; compare with `==`"));
                    }
                    _ => return Err(self.error(start, format!("unexpected character `{c}`"))),
                };
                self.at += len;
                kind
            }
        };
        Ok(Some(Token { kind, column }))
    }

    /// `/a/b.c@d/0`: segments of word characters, each after a `/`.
    fn pointer(&mut self) -> Tok {
        let start = self.at;
        while self.peek(0) == Some('/') && self.peek(1).is_some_and(word_char) {
            self.at += 1;
            while self.peek(0).is_some_and(word_char) {
                self.at += 1;
            }
        }
        Tok::Pointer(self.chars[start..self.at].iter().collect())
    }

    /// `${name}`.
    fn variable(&mut self) -> Result<Tok, ExprError> {
        let start = self.at;
        if self.peek(1) == Some('{')
            && self
                .peek(2)
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        {
            let mut end = self.at + 3;
            while self
                .chars
                .get(end)
                .is_some_and(|&c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                end += 1;
            }
            if self.chars.get(end) == Some(&'}') {
                let name = self.chars[start + 2..end].iter().collect();
                self.at = end + 1;
                return Ok(Tok::Variable(name));
            }
        }
        Err(self.error(start, "unexpected character `$`"))
    }

    /// A run of word characters: a number if the grammar's `Integer` or `Float` matches at
    /// least as much of it, else a keyword or a name.
    fn word(&mut self) -> Tok {
        let start = self.at;
        let mut end = start;
        while self.chars.get(end).is_some_and(|&c| word_char(c)) {
            end += 1;
        }
        let number = self.number_len(start);
        if let Some((len, float)) = number
            && len >= end - start
        {
            let text: String = self.chars[start..start + len].iter().collect();
            self.at = start + len;
            return if float {
                Tok::Float(text)
            } else {
                Tok::Integer(text)
            };
        }
        let text: String = self.chars[start..end].iter().collect();
        self.at = end;
        match text.as_str() {
            "true" => Tok::Bool(true),
            "false" => Tok::Bool(false),
            "null" => Tok::Null,
            "not" if self.peek(0).is_some_and(space) => {
                self.at += 1;
                Tok::Not
            }
            t if DATA_TYPES.contains(&t) => Tok::DataType(text),
            _ => Tok::Identifier(text),
        }
    }

    /// The length of the grammar's `Integer` (`0` or `[1-9][0-9]*`) at `at`.
    fn integer_len(&self, at: usize) -> usize {
        match self.chars.get(at) {
            Some('0') => 1,
            Some('1'..='9') => {
                let mut end = at + 1;
                while self.chars.get(end).is_some_and(char::is_ascii_digit) {
                    end += 1;
                }
                end - at
            }
            _ => 0,
        }
    }

    /// The longest number at `start` and whether it is a `Float`
    /// (`Integer '.' [0-9]+ ([eE] '-'? Integer)?`).
    fn number_len(&self, start: usize) -> Option<(usize, bool)> {
        let int = self.integer_len(start);
        if int == 0 {
            return None;
        }
        let dot = start + int;
        if self.chars.get(dot) != Some(&'.')
            || !self.chars.get(dot + 1).is_some_and(char::is_ascii_digit)
        {
            return Some((int, false));
        }
        let mut end = dot + 1;
        while self.chars.get(end).is_some_and(char::is_ascii_digit) {
            end += 1;
        }
        if matches!(self.chars.get(end), Some('e' | 'E')) {
            let sign = usize::from(self.chars.get(end + 1) == Some(&'-'));
            let exponent = self.integer_len(end + 1 + sign);
            if exponent > 0 {
                end += 1 + sign + exponent;
            }
        }
        Some((end - start, true))
    }

    /// `"..."`, `"""..."""` or `"/..."`.
    fn quoted(&mut self) -> Result<Tok, ExprError> {
        let start = self.at;
        if self.peek(1) == Some('/')
            && let Some((end, text)) = self.scan_quoted(start + 1, "\"", "btnfr\"'\\/", true)
        {
            self.at = end;
            return Ok(Tok::EscapedPointer(text));
        }
        if self.starts_with(start, "\"\"\"")
            && let Some((end, text)) = self.scan_quoted(start + 3, "\"\"\"", "btnfr\"'\\$", false)
        {
            self.at = end;
            return Ok(Tok::Str(text));
        }
        match self.scan_quoted(start + 1, "\"", "btnfr\"'\\$", false) {
            Some((end, text)) => {
                self.at = end;
                Ok(Tok::Str(text))
            }
            None => Err(self.string_error(start)),
        }
    }

    /// From `from`, characters up to `close`; a `\` must start one of `escapes`, and a `$` is
    /// allowed only in keys. Gives the end (after `close`) and the text as written.
    fn scan_quoted(
        &self,
        from: usize,
        close: &str,
        escapes: &str,
        dollar: bool,
    ) -> Option<(usize, String)> {
        let mut i = from;
        loop {
            match self.chars.get(i)? {
                '"' => {
                    return self
                        .starts_with(i, close)
                        .then(|| (i + close.len(), self.chars[from..i].iter().collect()));
                }
                '\\' => {
                    if !escapes.contains(*self.chars.get(i + 1)?) {
                        return None;
                    }
                    i += 2;
                }
                '$' if !dollar => return None,
                _ => i += 1,
            }
        }
    }

    /// Why the string at `start` is not one, at the character that breaks it.
    fn string_error(&self, start: usize) -> ExprError {
        let mut i = start + 1;
        while let Some(&c) = self.chars.get(i) {
            match c {
                '\\' => match self.chars.get(i + 1) {
                    Some(e) if "btnfr\"'\\$".contains(*e) => i += 2,
                    Some(e) => {
                        return self.error(
                            i,
                            format!(
                                "`\\{e}` is not an escape a string may hold (`\\b \\t \\n \\f \\r \\\" \\' \\\\ \\$`)"
                            ),
                        );
                    }
                    None => break,
                },
                '$' => return self.error(i, "a `$` in a string must be escaped: `\\$`"),
                '"' => break,
                _ => i += 1,
            }
        }
        self.error(start, "the string is not closed with `\"`")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<Tok> {
        tokenize(text)
            .unwrap()
            .into_iter()
            .map(|t| t.kind)
            .collect()
    }

    #[test]
    fn word_operators_need_space_on_both_sides() {
        assert_eq!(
            kinds("/a<300 and /b>200"),
            [
                Tok::Pointer("/a".into()),
                Tok::Lt,
                Tok::Integer("300".into()),
                Tok::And,
                Tok::Pointer("/b".into()),
                Tok::Gt,
                Tok::Integer("200".into()),
                Tok::Eof
            ]
        );
        assert_eq!(kinds("/a and/b")[1], Tok::Identifier("and".into()));
        assert_eq!(kinds("/a not in {1}")[1], Tok::NotIn);
        assert_eq!(kinds("not /a")[0], Tok::Not);
        assert_eq!(kinds("not/a")[0], Tok::Identifier("not".into()));
    }

    #[test]
    fn numbers_follow_the_grammar() {
        assert_eq!(kinds("1.5e-3")[0], Tok::Float("1.5e-3".into()));
        assert_eq!(kinds("12345.678E12")[0], Tok::Float("12345.678E12".into()));
        assert_eq!(kinds("0.")[0], Tok::Identifier("0.".into()));
        assert_eq!(kinds(".10")[0], Tok::Identifier(".10".into()));
        assert_eq!(kinds("01")[0], Tok::Identifier("01".into()));
        // `10/2` is a number and then a key, as in Data Prepper.
        assert_eq!(kinds("10/2")[1], Tok::Pointer("/2".into()));
    }

    #[test]
    fn strings_keep_their_escapes_and_quoted_slashes_are_keys() {
        assert_eq!(kinds(r#""a\"b""#)[0], Tok::Str(r#"a\"b"#.into()));
        assert_eq!(kinds(r#""""x""""#)[0], Tok::Str("x".into()));
        assert_eq!(kinds(r#""/a b""#)[0], Tok::EscapedPointer("/a b".into()));
        let err = tokenize(r#"/a =~ "\w""#).unwrap_err();
        assert_eq!(err.column, 8, "{err}");
        let err = tokenize(r#"/a == "x$""#).unwrap_err();
        assert_eq!(err.column, 9, "{err}");
        let err = tokenize(r#"/a == "x"#).unwrap_err();
        assert_eq!(err.column, 7, "{err}");
    }
}
