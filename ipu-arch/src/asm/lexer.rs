//! Tokens of Graphcore tile assembly.

use super::error::Pos;

/// A token kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tok {
    /// A name: mnemonic, label, directive (`.align`), symbol, or `.` alone.
    Ident(String),
    /// `$name`, without the `$`.
    Dollar(String),
    /// An integer literal.
    Num(i64),
    /// A string literal.
    Str(String),
    /// Punctuation: `, ; { } ( ) + - * / % << >> & | ^ ~ : @ +=`.
    Punct(&'static str),
    /// End of a line.
    Newline,
}

/// A token with its position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    /// Kind and payload.
    pub tok: Tok,
    /// Where it starts.
    pub pos: Pos,
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == '.'
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.'
}

const PUNCTS: &[&str] = &[
    "<<", ">>", "+=", ",", ";", "{", "}", "(", ")", "+", "-", "*", "/", "%", "&", "|", "^", "~",
    ":", "@",
];

/// Splits source text into tokens; returns tokens and lexical errors.
pub fn lex(text: &str) -> (Vec<Token>, Vec<(Pos, String)>) {
    let mut tokens = Vec::new();
    let mut errors = Vec::new();
    let mut in_block_comment = false;
    for (li, line) in text.split('\n').enumerate() {
        let line_no = li as u32 + 1;
        let chars: Vec<char> = line.trim_end_matches('\r').chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            let pos = |len: usize| Pos {
                line: line_no,
                col: i as u32 + 1,
                len: len.max(1) as u32,
            };
            if in_block_comment {
                if c == '*' && chars.get(i + 1) == Some(&'/') {
                    in_block_comment = false;
                    i += 2;
                } else {
                    i += 1;
                }
                continue;
            }
            if c.is_whitespace() {
                i += 1;
                continue;
            }
            if c == '#' || (c == '/' && chars.get(i + 1) == Some(&'/')) {
                break;
            }
            if c == '/' && chars.get(i + 1) == Some(&'*') {
                in_block_comment = true;
                i += 2;
                continue;
            }
            if is_ident_start(c) {
                let start = i;
                while i < chars.len() && is_ident_char(chars[i]) {
                    i += 1;
                }
                let s: String = chars[start..i].iter().collect();
                tokens.push(Token {
                    tok: Tok::Ident(s),
                    pos: Pos {
                        line: line_no,
                        col: start as u32 + 1,
                        len: (i - start) as u32,
                    },
                });
                continue;
            }
            if c == '$' {
                let start = i;
                i += 1;
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                let s: String = chars[start + 1..i].iter().collect();
                let p = Pos {
                    line: line_no,
                    col: start as u32 + 1,
                    len: (i - start) as u32,
                };
                if s.is_empty() {
                    errors.push((
                        p,
                        "expected a register or control register name after `$`".to_string(),
                    ));
                } else {
                    tokens.push(Token {
                        tok: Tok::Dollar(s),
                        pos: p,
                    });
                }
                continue;
            }
            if c.is_ascii_digit() {
                let start = i;
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                let s: String = chars[start..i].iter().filter(|c| **c != '_').collect();
                let p = Pos {
                    line: line_no,
                    col: start as u32 + 1,
                    len: (i - start) as u32,
                };
                let parsed = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"))
                {
                    i64::from_str_radix(h, 16)
                } else if let Some(b) = s.strip_prefix("0b").or_else(|| s.strip_prefix("0B")) {
                    i64::from_str_radix(b, 2)
                } else {
                    s.parse::<i64>()
                };
                match parsed {
                    Ok(v) => tokens.push(Token {
                        tok: Tok::Num(v),
                        pos: p,
                    }),
                    Err(_) => errors.push((
                        p,
                        format!(
                            "invalid number `{}`",
                            chars[start..i].iter().collect::<String>()
                        ),
                    )),
                }
                continue;
            }
            if c == '"' {
                let start = i;
                i += 1;
                let mut s = String::new();
                let mut closed = false;
                while i < chars.len() {
                    if chars[i] == '"' {
                        closed = true;
                        i += 1;
                        break;
                    }
                    s.push(chars[i]);
                    i += 1;
                }
                let p = Pos {
                    line: line_no,
                    col: start as u32 + 1,
                    len: (i - start) as u32,
                };
                if closed {
                    tokens.push(Token {
                        tok: Tok::Str(s),
                        pos: p,
                    });
                } else {
                    errors.push((p, "unterminated string".to_string()));
                }
                continue;
            }
            let rest: String = chars[i..chars.len().min(i + 2)].iter().collect();
            if let Some(p) = PUNCTS.iter().find(|p| rest.starts_with(**p)) {
                tokens.push(Token {
                    tok: Tok::Punct(p),
                    pos: pos(p.len()),
                });
                i += p.len();
                continue;
            }
            errors.push((pos(1), format!("unexpected character `{c}`")));
            i += 1;
        }
        tokens.push(Token {
            tok: Tok::Newline,
            pos: Pos {
                line: line_no,
                col: chars.len() as u32 + 1,
                len: 1,
            },
        });
    }
    (tokens, errors)
}
