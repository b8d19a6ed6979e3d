//! Compiling a pattern: its letters, quoted text and `[optional]` sections made into
//! [`Item`]s, the form that parsing and formatting walk, with adjacent fixed-width values
//! joined as `DateTimeFormatter` joins them.

use super::{JavaPattern, PatternError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Field {
    YearOfEra,
    Year,
    Month,
    DayOfMonth,
    DayOfYear,
    DayOfWeek,
    HourOfDay,
    ClockHourOfDay,
    HourOfAmPm,
    ClockHourOfAmPm,
    AmPm,
    Minute,
    Second,
    Nano,
}

pub(super) const N_FIELDS: usize = 14;

impl Field {
    pub(super) fn name(self) -> &'static str {
        match self {
            Field::YearOfEra => "year-of-era",
            Field::Year => "year",
            Field::Month => "month-of-year",
            Field::DayOfMonth => "day-of-month",
            Field::DayOfYear => "day-of-year",
            Field::DayOfWeek => "day-of-week",
            Field::HourOfDay => "hour-of-day",
            Field::ClockHourOfDay => "clock-hour-of-day",
            Field::HourOfAmPm => "hour-of-am-pm",
            Field::ClockHourOfAmPm => "clock-hour-of-am-pm",
            Field::AmPm => "am-pm-of-day",
            Field::Minute => "minute-of-hour",
            Field::Second => "second-of-minute",
            Field::Nano => "nano-of-second",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SignStyle {
    NotNegative,
    Normal,
    ExceedsPad,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TextStyle {
    Short,
    Full,
    Narrow,
}

#[derive(Debug, Clone)]
pub(super) enum Item {
    Literal(String),
    /// `appendValue(field, min, max, sign)`; `subsequent` is the width reserved
    /// for the fixed-width numbers that directly follow (adjacent value parsing).
    Number {
        field: Field,
        min: usize,
        max: usize,
        sign: SignStyle,
        subsequent: usize,
    },
    /// `yy`/`uu`: two digits, base year 2000.
    Reduced {
        field: Field,
    },
    /// `S`…: fraction of second, fixed width.
    Fraction {
        width: usize,
    },
    Text {
        field: Field,
        style: TextStyle,
    },
    /// `appendOffset(PATTERNS[kind], no_offset)`, kinds 0..=8 =
    /// `+HH +HHmm +HH:mm +HHMM +HH:MM +HHMMss +HH:MM:ss +HHMMSS +HH:MM:SS`.
    Offset {
        kind: u8,
        no_offset: &'static str,
    },
    /// `O`/`OOOO`/`ZZZZ`: `GMT+8` / `GMT+08:00`.
    LocalizedOffset {
        full: bool,
    },
    /// `VV`
    ZoneId,
    /// `z`, `zz`, `zzz`
    ZoneText,
    Optional(Vec<Item>),
}

impl Item {
    /// Width if this is a fixed-width, non-negative value parser (joins an adjacent run).
    fn fixed_width(&self) -> Option<usize> {
        match self {
            Item::Number {
                min,
                max,
                sign: SignStyle::NotNegative,
                ..
            } if min == max => Some(*min),
            Item::Reduced { .. } => Some(2),
            Item::Fraction { width } => Some(*width),
            _ => None,
        }
    }
    fn is_value(&self) -> bool {
        matches!(
            self,
            Item::Number { .. } | Item::Reduced { .. } | Item::Fraction { .. }
        )
    }
}

struct Frame {
    items: Vec<Item>,
    /// Index of the value parser that adjacent fixed-width values attach to.
    active: Option<usize>,
}

impl Frame {
    fn new() -> Self {
        Frame {
            items: Vec::new(),
            active: None,
        }
    }
    fn push(&mut self, item: Item) {
        if item.is_value() {
            match (self.active, item.fixed_width()) {
                (Some(base), Some(w)) => {
                    if let Item::Number { subsequent, .. } = &mut self.items[base] {
                        *subsequent += w;
                    }
                    self.items.push(item);
                }
                _ => {
                    self.items.push(item);
                    self.active = Some(self.items.len() - 1);
                }
            }
        } else {
            self.active = None;
            if let (Item::Literal(new), Some(Item::Literal(last))) = (&item, self.items.last_mut())
            {
                last.push_str(new);
                return;
            }
            self.items.push(item);
        }
    }
}

fn unsupported(letter: char, position: usize, reason: &'static str) -> PatternError {
    PatternError::UnsupportedLetter {
        letter,
        position,
        reason,
    }
}

fn letter_item(letter: char, count: usize, position: usize) -> Result<Item, PatternError> {
    use Field as F;
    let bad = || PatternError::BadLetterCount {
        letter,
        count,
        position,
    };
    let num = |field: Field, min: usize, max: usize, sign: SignStyle| Item::Number {
        field,
        min,
        max,
        sign,
        subsequent: 0,
    };
    let simple = |field: Field| -> Result<Item, PatternError> {
        match count {
            1 => Ok(num(field, 1, 19, SignStyle::Normal)),
            2 => Ok(num(field, 2, 2, SignStyle::NotNegative)),
            _ => Err(bad()),
        }
    };
    let text_style = |field: Field| -> Result<Item, PatternError> {
        let style = match count {
            1..=3 => TextStyle::Short,
            4 => TextStyle::Full,
            5 => TextStyle::Narrow,
            _ => return Err(bad()),
        };
        Ok(Item::Text { field, style })
    };
    Ok(match letter {
        'y' | 'u' => {
            let field = if letter == 'y' { F::YearOfEra } else { F::Year };
            match count {
                2 => Item::Reduced { field },
                1 | 3 => num(field, count, 19, SignStyle::Normal),
                4..=19 => num(field, count, 19, SignStyle::ExceedsPad),
                _ => return Err(bad()),
            }
        }
        'M' | 'L' => match count {
            1 => num(F::Month, 1, 19, SignStyle::Normal),
            2 => num(F::Month, 2, 2, SignStyle::NotNegative),
            3 => Item::Text {
                field: F::Month,
                style: TextStyle::Short,
            },
            4 => Item::Text {
                field: F::Month,
                style: TextStyle::Full,
            },
            5 => Item::Text {
                field: F::Month,
                style: TextStyle::Narrow,
            },
            _ => return Err(bad()),
        },
        'd' => simple(F::DayOfMonth)?,
        'H' => simple(F::HourOfDay)?,
        'k' => simple(F::ClockHourOfDay)?,
        'K' => simple(F::HourOfAmPm)?,
        'h' => simple(F::ClockHourOfAmPm)?,
        'm' => simple(F::Minute)?,
        's' => simple(F::Second)?,
        'D' => match count {
            1 => num(F::DayOfYear, 1, 19, SignStyle::Normal),
            2 => num(F::DayOfYear, 2, 3, SignStyle::NotNegative),
            3 => num(F::DayOfYear, 3, 3, SignStyle::NotNegative),
            _ => return Err(bad()),
        },
        'S' => match count {
            1..=9 => Item::Fraction { width: count },
            _ => return Err(bad()),
        },
        'n' => match count {
            1 => num(F::Nano, 1, 19, SignStyle::Normal),
            2..=19 => num(F::Nano, count, count, SignStyle::NotNegative),
            _ => return Err(bad()),
        },
        'a' => match count {
            1 => Item::Text {
                field: F::AmPm,
                style: TextStyle::Short,
            },
            _ => return Err(bad()),
        },
        'E' => text_style(F::DayOfWeek)?,
        'e' | 'c' => match count {
            1 | 2 if letter == 'e' || count == 1 => {
                return Err(unsupported(
                    letter,
                    position,
                    "localized numeric day-of-week depends on the locale's first day of week",
                ));
            }
            3..=5 => text_style(F::DayOfWeek)?,
            _ => return Err(bad()),
        },
        'z' => match count {
            1..=3 => Item::ZoneText,
            4 => {
                return Err(unsupported(
                    letter,
                    position,
                    "full zone names (zzzz) are not supported; use z, VV or an offset",
                ));
            }
            _ => return Err(bad()),
        },
        'V' => match count {
            2 => Item::ZoneId,
            _ => return Err(bad()),
        },
        'Z' => match count {
            1..=3 => Item::Offset {
                kind: 3,
                no_offset: "+0000",
            },
            4 => Item::LocalizedOffset { full: true },
            5 => Item::Offset {
                kind: 6,
                no_offset: "Z",
            },
            _ => return Err(bad()),
        },
        'O' => match count {
            1 => Item::LocalizedOffset { full: false },
            4 => Item::LocalizedOffset { full: true },
            _ => return Err(bad()),
        },
        'X' | 'x' => {
            const KINDS: [u8; 5] = [1, 3, 4, 5, 6];
            const ZERO_X: [&str; 5] = ["+00", "+0000", "+00:00", "+0000", "+00:00"];
            if !(1..=5).contains(&count) {
                return Err(bad());
            }
            let no_offset = if letter == 'X' {
                "Z"
            } else {
                ZERO_X[count - 1]
            };
            Item::Offset {
                kind: KINDS[count - 1],
                no_offset,
            }
        }
        'G' => return Err(unsupported(letter, position, "era is not supported")),
        'Q' | 'q' => {
            return Err(unsupported(
                letter,
                position,
                "quarter-of-year is not supported",
            ));
        }
        'w' | 'W' | 'Y' => {
            return Err(unsupported(
                letter,
                position,
                "week-based fields are not supported",
            ));
        }
        'F' => {
            return Err(unsupported(
                letter,
                position,
                "aligned week of month is not supported",
            ));
        }
        'g' => {
            return Err(unsupported(
                letter,
                position,
                "modified Julian day is not supported",
            ));
        }
        'A' | 'N' => {
            return Err(unsupported(
                letter,
                position,
                "milli/nano-of-day is not supported",
            ));
        }
        'B' => {
            return Err(unsupported(
                letter,
                position,
                "day periods are not supported",
            ));
        }
        'v' => {
            return Err(unsupported(
                letter,
                position,
                "generic zone names are not supported",
            ));
        }
        'p' => return Err(unsupported(letter, position, "padding is not supported")),
        _ => return Err(PatternError::UnknownLetter { letter, position }),
    })
}

impl JavaPattern {
    /// Compiles a pattern as `DateTimeFormatter.ofPattern` does. Unclosed `[`
    /// sections are closed at the end of the pattern, as in Java.
    pub fn compile(pattern: &str) -> Result<Self, PatternError> {
        let chars: Vec<char> = pattern.chars().collect();
        let mut stack = vec![Frame::new()];
        let mut pos = 0;
        while pos < chars.len() {
            let cur = chars[pos];
            if cur.is_ascii_alphabetic() {
                let start = pos;
                while pos < chars.len() && chars[pos] == cur {
                    pos += 1;
                }
                let item = letter_item(cur, pos - start, start)?;
                stack.last_mut().expect("frame").push(item);
                continue;
            }
            match cur {
                '\'' => {
                    let start = pos;
                    pos += 1;
                    let mut lit = String::new();
                    loop {
                        if pos >= chars.len() {
                            return Err(PatternError::UnclosedQuote { position: start });
                        }
                        if chars[pos] == '\'' {
                            if pos + 1 < chars.len() && chars[pos + 1] == '\'' {
                                lit.push('\'');
                                pos += 2;
                                continue;
                            }
                            break;
                        }
                        lit.push(chars[pos]);
                        pos += 1;
                    }
                    if pos == start + 1 {
                        lit.push('\'');
                    }
                    stack.last_mut().expect("frame").push(Item::Literal(lit));
                }
                '[' => stack.push(Frame::new()),
                ']' => {
                    if stack.len() == 1 {
                        return Err(PatternError::UnmatchedBracket { position: pos });
                    }
                    let inner = stack.pop().expect("frame");
                    stack
                        .last_mut()
                        .expect("frame")
                        .push(Item::Optional(inner.items));
                }
                '{' | '}' | '#' => {
                    return Err(PatternError::ReservedChar {
                        ch: cur,
                        position: pos,
                    });
                }
                _ => stack
                    .last_mut()
                    .expect("frame")
                    .push(Item::Literal(cur.to_string())),
            }
            pos += 1;
        }
        while stack.len() > 1 {
            let inner = stack.pop().expect("frame");
            stack
                .last_mut()
                .expect("frame")
                .push(Item::Optional(inner.items));
        }
        Ok(JavaPattern {
            items: stack.pop().expect("frame").items,
            pattern: pattern.to_string(),
            default_hour: !pattern.contains('a') && !pattern.contains('k'),
            default_year: !pattern.contains('y') && !pattern.contains('u'),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_errors() {
        use PatternError as E;
        let e = |s: &str| JavaPattern::compile(s).unwrap_err();
        assert_eq!(e("yyyy-MM-dd'T"), E::UnclosedQuote { position: 10 });
        assert_eq!(e("yyyy-MM-dd 'x"), E::UnclosedQuote { position: 11 });
        assert_eq!(
            e("HH:mm:ss t"),
            E::UnknownLetter {
                letter: 't',
                position: 9
            }
        );
        assert_eq!(
            e("yyyy-MM-ddTHH"),
            E::UnknownLetter {
                letter: 'T',
                position: 10
            }
        );
        assert_eq!(
            e("ddd"),
            E::BadLetterCount {
                letter: 'd',
                count: 3,
                position: 0
            }
        );
        assert_eq!(
            e("HH:mm aa"),
            E::BadLetterCount {
                letter: 'a',
                count: 2,
                position: 6
            }
        );
        assert_eq!(
            e("V"),
            E::BadLetterCount {
                letter: 'V',
                count: 1,
                position: 0
            }
        );
        assert_eq!(
            e("SSSSSSSSSS"),
            E::BadLetterCount {
                letter: 'S',
                count: 10,
                position: 0
            }
        );
        assert_eq!(
            e("EEEEEE"),
            E::BadLetterCount {
                letter: 'E',
                count: 6,
                position: 0
            }
        );
        assert_eq!(
            e("XXXXXX"),
            E::BadLetterCount {
                letter: 'X',
                count: 6,
                position: 0
            }
        );
        assert_eq!(
            e("OO"),
            E::BadLetterCount {
                letter: 'O',
                count: 2,
                position: 0
            }
        );
        assert_eq!(
            e("cc"),
            E::BadLetterCount {
                letter: 'c',
                count: 2,
                position: 0
            }
        );
        assert_eq!(
            e("y".repeat(20).as_str()),
            E::BadLetterCount {
                letter: 'y',
                count: 20,
                position: 0
            }
        );
        assert!(matches!(
            e("YYYY-ww"),
            E::UnsupportedLetter {
                letter: 'Y',
                position: 0,
                ..
            }
        ));
        assert!(matches!(
            e("yyyy QQ"),
            E::UnsupportedLetter {
                letter: 'Q',
                position: 5,
                ..
            }
        ));
        assert!(matches!(
            e("G yyyy"),
            E::UnsupportedLetter { letter: 'G', .. }
        ));
        assert!(matches!(
            e("zzzz"),
            E::UnsupportedLetter { letter: 'z', .. }
        ));
        assert!(matches!(e("e"), E::UnsupportedLetter { letter: 'e', .. }));
        assert_eq!(e("yyyy]"), E::UnmatchedBracket { position: 4 });
        assert_eq!(
            e("yyyy{"),
            E::ReservedChar {
                ch: '{',
                position: 4
            }
        );
        assert_eq!(
            e("é#"),
            E::ReservedChar {
                ch: '#',
                position: 1
            }
        );
        assert!(JavaPattern::compile("").is_ok());
        assert_eq!(
            e("HH:mm q").to_string(),
            "unsupported pattern letter `q` at position 6: quarter-of-year is not supported"
        );
        assert_eq!(
            e("HH:mm:ss t").to_string(),
            "unknown pattern letter `t` at position 9"
        );
    }
}
