//! The format-string parser: text to unresolved elements ([`Raw`]), with
//! byte offsets for error messages. Names are resolved in the parent module.

use super::{Raw, RawKind};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tok {
    Literal(&'static str),
    Variable(&'static str),
    Word(&'static str),
    LParen,
    RParen,
    Question,
    Caret,
    Comma,
}

type Error = (usize, String);

fn tokenize(src: &'static str) -> Result<Vec<(usize, Tok)>, Error> {
    let bytes = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let ident_end = |mut j: usize, dash: bool| {
        while j < bytes.len()
            && (bytes[j].is_ascii_alphanumeric() || bytes[j] == b'_' || (dash && bytes[j] == b'-'))
        {
            j += 1;
        }
        j
    };
    while i < bytes.len() {
        let c = bytes[i];
        let start = i;
        let tok = match c {
            b' ' | b'\t' | b'\n' | b'\r' => {
                i += 1;
                continue;
            }
            b'`' => {
                let Some(len) = src[i + 1..].find('`') else {
                    return Err((
                        start,
                        "unterminated literal: a literal is written `text`".into(),
                    ));
                };
                let text = &src[i + 1..i + 1 + len];
                if text.trim().is_empty() {
                    return Err((start, "empty or whitespace literal: spacing literals are not supported (spacing follows the elements)".into()));
                }
                i += len + 2;
                Tok::Literal(text)
            }
            b'$' => {
                let end = ident_end(i + 1, false);
                if end == i + 1 || bytes[i + 1].is_ascii_digit() {
                    return Err((start, "expected a name after '$'".into()));
                }
                i = end;
                Tok::Variable(&src[start + 1..end])
            }
            c @ (b'(' | b')' | b'?' | b'^' | b',') => {
                i += 1;
                match c {
                    b'(' => Tok::LParen,
                    b')' => Tok::RParen,
                    b'?' => Tok::Question,
                    b'^' => Tok::Caret,
                    _ => Tok::Comma,
                }
            }
            c if c.is_ascii_alphabetic() => {
                i = ident_end(i, true);
                Tok::Word(&src[start..i])
            }
            _ => {
                let ch = src[i..].chars().next().expect("in bounds");
                return Err((
                    start,
                    format!("unexpected '{ch}': literals are written in backticks (`{ch}`)"),
                ));
            }
        };
        out.push((start, tok));
    }
    Ok(out)
}

struct FormatParser {
    toks: Vec<(usize, Tok)>,
    pos: usize,
    end: usize,
}

impl FormatParser {
    fn peek(&self) -> Option<(usize, Tok)> {
        self.toks.get(self.pos).copied()
    }

    fn offset(&self) -> usize {
        self.peek().map_or(self.end, |(o, _)| o)
    }

    fn expect(&mut self, t: Tok, what: &str) -> Result<(), Error> {
        if self.peek().map(|(_, k)| k) == Some(t) {
            self.pos += 1;
            Ok(())
        } else {
            Err((self.offset(), format!("expected {what}")))
        }
    }

    /// Parses elements up to the end, or up to a `)` when `open` (the
    /// offset of an optional group's `(`) is given.
    fn seq(&mut self, open: Option<usize>) -> Result<Vec<Raw>, Error> {
        let mut out = Vec::new();
        loop {
            let Some((offset, tok)) = self.peek() else {
                if let Some(o) = open {
                    return Err((o, "optional group '(' is not closed by ')?'".into()));
                }
                return Ok(out);
            };
            let kind = match tok {
                Tok::RParen if open.is_some() => return Ok(out),
                Tok::RParen => {
                    return Err((
                        offset,
                        "')' closes no optional group (a literal parenthesis is written `)`)"
                            .into(),
                    ))
                }
                Tok::LParen => {
                    self.pos += 1;
                    let inner = self.seq(Some(offset))?;
                    self.expect(Tok::RParen, "')'")?;
                    if self.peek().map(|(_, k)| k) != Some(Tok::Question) {
                        return Err((
                            self.offset(),
                            "expected '?' after ')': an optional group is written '( ... )?' and a literal parenthesis `(`".into(),
                        ));
                    }
                    self.pos += 1;
                    if inner.is_empty() {
                        return Err((offset, "empty optional group".into()));
                    }
                    RawKind::Optional(inner)
                }
                Tok::Question | Tok::Caret | Tok::Comma => {
                    let c = match tok {
                        Tok::Question => '?',
                        Tok::Caret => '^',
                        _ => ',',
                    };
                    return Err((
                        offset,
                        format!("unexpected '{c}' (a literal is written `{c}`; '^' follows the anchor element of an optional group)"),
                    ));
                }
                Tok::Literal(t) => {
                    self.pos += 1;
                    RawKind::Literal(t)
                }
                Tok::Variable(v) => {
                    self.pos += 1;
                    RawKind::Variable(v)
                }
                Tok::Word(w) => {
                    self.pos += 1;
                    self.directive(w)?
                }
            };
            let anchor = self.peek().map(|(_, k)| k) == Some(Tok::Caret);
            if anchor {
                self.pos += 1;
            }
            out.push(Raw {
                offset,
                anchor,
                kind,
            });
        }
    }

    fn directive(&mut self, w: &'static str) -> Result<RawKind, Error> {
        match w {
            "type" => {
                self.expect(Tok::LParen, "'(' after 'type'")?;
                let arg = self.type_arg()?;
                self.expect(Tok::RParen, "')' closing 'type('")?;
                Ok(RawKind::Type(Box::new(arg)))
            }
            "functional-type" => {
                self.expect(Tok::LParen, "'(' after 'functional-type'")?;
                let a = self.type_arg()?;
                self.expect(
                    Tok::Comma,
                    "',' between the inputs and results of 'functional-type'",
                )?;
                let b = self.type_arg()?;
                self.expect(Tok::RParen, "')' closing 'functional-type('")?;
                Ok(RawKind::FunctionalType(Box::new(a), Box::new(b)))
            }
            _ => Ok(RawKind::Directive(w)),
        }
    }

    fn type_arg(&mut self) -> Result<Raw, Error> {
        let offset = self.offset();
        let kind = match self.peek() {
            Some((_, Tok::Variable(v))) => RawKind::Variable(v),
            Some((_, Tok::Word(w))) => RawKind::Directive(w),
            _ => {
                return Err((
                    offset,
                    "expected '$name', 'operands' or 'results' in a type directive".into(),
                ))
            }
        };
        self.pos += 1;
        let anchor = self.peek().map(|(_, k)| k) == Some(Tok::Caret);
        if anchor {
            self.pos += 1;
        }
        Ok(Raw {
            offset,
            anchor,
            kind,
        })
    }
}

/// Parses a format string into unresolved elements.
pub(super) fn parse(src: &'static str) -> Result<Vec<Raw>, Error> {
    let mut p = FormatParser {
        toks: tokenize(src)?,
        pos: 0,
        end: src.len(),
    };
    let elements = p.seq(None)?;
    if elements.is_empty() {
        return Err((
            0,
            "empty format: it must at least contain 'attr-dict'".into(),
        ));
    }
    Ok(elements)
}
