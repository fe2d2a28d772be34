//! Assembly text to [`Stmt`]s: one statement per line (or `;`), bundles in
//! braces over one or several lines, operands and directive arguments as
//! expressions. Syntax only: which mnemonics and operand kinds exist is the
//! encoder's business, so readers of hand-written code (the `ipu` dialect's
//! assembly reader) see everything that is well-formed.

use super::error::{AsmError, Diag, Pos};
use super::lexer::{lex, Tok, Token};
use super::syntax::{DirArg, Expr, Operand, ParsedInstr, Stmt};
use crate::registers::parse_register;

/// Parses `text` into statements; errors (with `file` in their position)
/// come back beside the statements that did parse.
pub fn parse(text: &str, file: &str) -> (Vec<Stmt>, Vec<AsmError>) {
    let mut diag = Diag::new(file, text);
    let stmts = parse_with(text, &mut diag);
    (stmts, diag.errors)
}

pub(super) fn parse_with(text: &str, diag: &mut Diag) -> Vec<Stmt> {
    let (tokens, lex_errors) = lex(text);
    for (p, m) in lex_errors {
        diag.error(p, m);
    }
    Parser {
        toks: &tokens,
        i: 0,
        diag,
    }
    .statements()
}

/// Parses one expression (`(.Lend - .Lstart)/8 - 1`); `None` when `text`
/// is not exactly one expression.
pub fn parse_expr(text: &str) -> Option<Expr> {
    let (tokens, lex_errors) = lex(text);
    if !lex_errors.is_empty() {
        return None;
    }
    let mut diag = Diag::new("<expr>", text);
    let mut p = Parser {
        toks: &tokens,
        i: 0,
        diag: &mut diag,
    };
    let e = p.expr(0)?;
    let rest_is_blank = p.toks[p.i..].iter().all(|t| t.tok == Tok::Newline);
    (rest_is_blank && p.diag.errors.is_empty()).then_some(e)
}

struct Parser<'t, 'd, 'a> {
    toks: &'t [Token],
    i: usize,
    diag: &'d mut Diag<'a>,
}

impl Parser<'_, '_, '_> {
    fn peek(&self) -> Option<&Token> {
        self.toks.get(self.i)
    }

    fn peek_tok(&self) -> Option<&Tok> {
        self.peek().map(|t| &t.tok)
    }

    fn here(&self) -> Pos {
        self.peek()
            .map(|t| t.pos)
            .or_else(|| self.toks.last().map(|t| t.pos))
            .unwrap_or_default()
    }

    fn bump(&mut self) -> Option<Token> {
        let t = self.toks.get(self.i).cloned();
        self.i += 1;
        t
    }

    fn is_punct(&self, p: &str) -> bool {
        matches!(self.peek_tok(), Some(Tok::Punct(q)) if *q == p)
    }

    fn skip_to_line_end(&mut self) {
        while let Some(t) = self.peek() {
            if t.tok == Tok::Newline {
                break;
            }
            self.i += 1;
        }
    }

    fn statements(&mut self) -> Vec<Stmt> {
        let mut out = Vec::new();
        while let Some(t) = self.peek().cloned() {
            match &t.tok {
                Tok::Newline => {
                    self.i += 1;
                }
                Tok::Punct(";") => {
                    self.i += 1;
                }
                Tok::Punct("{") => {
                    self.i += 1;
                    match self.bundle(t.pos) {
                        Some(s) => out.push(s),
                        None => self.recover_bundle(),
                    }
                }
                Tok::Ident(name) => {
                    let name = name.clone();
                    if matches!(
                        self.toks.get(self.i + 1).map(|t| &t.tok),
                        Some(Tok::Punct(":"))
                    ) {
                        self.i += 2;
                        out.push(Stmt::Label(name, t.pos));
                    } else if name.starts_with('.') && name.len() > 1 {
                        self.i += 1;
                        match self.directive_args() {
                            Some(args) => out.push(Stmt::Directive(name, args, t.pos)),
                            None => self.skip_to_line_end(),
                        }
                    } else {
                        match self.instruction() {
                            Some(pi) => {
                                out.push(Stmt::Instr(pi));
                                if !matches!(
                                    self.peek_tok(),
                                    None | Some(Tok::Newline) | Some(Tok::Punct(";"))
                                ) {
                                    let p = self.here();
                                    self.diag.error(p, "expected end of line after instruction");
                                    self.skip_to_line_end();
                                }
                            }
                            None => self.skip_to_line_end(),
                        }
                    }
                }
                _ => {
                    self.diag
                        .error(t.pos, "expected a label, directive, instruction or `{`");
                    self.skip_to_line_end();
                }
            }
        }
        out
    }

    fn recover_bundle(&mut self) {
        while let Some(t) = self.bump() {
            if t.tok == Tok::Punct("}") {
                break;
            }
        }
    }

    fn bundle(&mut self, open: Pos) -> Option<Stmt> {
        let mut parts = Vec::new();
        loop {
            match self.peek_tok() {
                None => {
                    self.diag.error(open, "unterminated bundle: missing `}`");
                    return None;
                }
                Some(Tok::Newline) | Some(Tok::Punct(";")) => {
                    self.i += 1;
                }
                Some(Tok::Punct("}")) => {
                    self.i += 1;
                    break;
                }
                Some(Tok::Ident(_)) => {
                    let pi = self.instruction()?;
                    parts.push(pi);
                }
                Some(_) => {
                    let p = self.here();
                    self.diag
                        .error(p, "expected an instruction inside the bundle");
                    return None;
                }
            }
        }
        if parts.len() != 2 {
            self.diag.error(
                open,
                format!(
                    "a bundle holds exactly two instructions (main ; aux), found {}",
                    parts.len()
                ),
            );
            return None;
        }
        let aux = parts.pop()?;
        let main = parts.pop()?;
        Some(Stmt::Bundle(main, aux, open))
    }

    fn instruction(&mut self) -> Option<ParsedInstr> {
        let t = self.bump()?;
        let Tok::Ident(mnemonic) = t.tok else {
            self.diag.error(t.pos, "expected an instruction mnemonic");
            return None;
        };
        let mut operands = Vec::new();
        if matches!(
            self.peek_tok(),
            None | Some(Tok::Newline) | Some(Tok::Punct(";")) | Some(Tok::Punct("}"))
        ) {
            return Some(ParsedInstr {
                mnemonic,
                operands,
                pos: t.pos,
            });
        }
        loop {
            operands.push(self.operand()?);
            if self.is_punct(",") {
                self.i += 1;
            } else {
                break;
            }
        }
        Some(ParsedInstr {
            mnemonic,
            operands,
            pos: t.pos,
        })
    }

    fn operand(&mut self) -> Option<Operand> {
        let start = self.here();
        if let Some(Tok::Dollar(name)) = self.peek_tok().cloned() {
            self.i += 1;
            let Some((file, lo)) = parse_register(&name) else {
                return Some(Operand::Csr(name, start));
            };
            let mut hi = if name == "azeros" { Some(15) } else { None };
            let mut len = start.len;
            if self.is_punct(":") {
                self.i += 1;
                match self.bump() {
                    Some(Token {
                        tok: Tok::Num(n),
                        pos,
                    }) if (0..16).contains(&n) => {
                        hi = Some(n as u8);
                        len = pos.col + pos.len - start.col;
                    }
                    Some(t) => {
                        self.diag.error(
                            t.pos,
                            "expected the last register number of a register group (e.g. `$a0:1`)",
                        );
                        return None;
                    }
                    None => return None,
                }
            }
            let mut inc = false;
            if self.is_punct("+=") {
                let p = self.here();
                self.i += 1;
                inc = true;
                len = p.col + p.len - start.col;
            }
            return Some(Operand::Reg {
                file,
                lo,
                hi,
                inc,
                pos: Pos { len, ..start },
            });
        }
        let e = self.expr(0)?;
        Some(Operand::Expr(e, self.span_from(start)))
    }

    /// `start` widened to the end of the last token consumed (on its line).
    fn span_from(&self, start: Pos) -> Pos {
        let end = self
            .toks
            .get(self.i.saturating_sub(1))
            .map(|t| t.pos)
            .unwrap_or(start);
        let len = if end.line == start.line && end.col + end.len > start.col {
            end.col + end.len - start.col
        } else {
            start.len
        };
        Pos { len, ..start }
    }

    fn directive_args(&mut self) -> Option<Vec<DirArg>> {
        let mut args = Vec::new();
        if matches!(self.peek_tok(), None | Some(Tok::Newline)) {
            return Some(args);
        }
        loop {
            let p = self.here();
            match self.peek_tok().cloned() {
                Some(Tok::Str(s)) => {
                    self.i += 1;
                    args.push(DirArg::Str(s));
                }
                Some(Tok::Punct("@")) => {
                    self.i += 1;
                    match self.bump() {
                        Some(Token {
                            tok: Tok::Ident(s), ..
                        }) => args.push(DirArg::At(s)),
                        _ => {
                            self.diag.error(p, "expected a name after `@`");
                            return None;
                        }
                    }
                }
                _ => {
                    let e = self.expr(0)?;
                    args.push(DirArg::Expr(e, self.span_from(p)));
                }
            }
            if self.is_punct(",") {
                self.i += 1;
            } else {
                break;
            }
        }
        if !matches!(self.peek_tok(), None | Some(Tok::Newline)) {
            let p = self.here();
            self.diag
                .error(p, "expected `,` or end of line in directive arguments");
            return None;
        }
        Some(args)
    }

    fn binop_prec(p: &str) -> Option<u8> {
        Some(match p {
            "|" => 1,
            "^" => 2,
            "&" => 3,
            "<<" | ">>" => 4,
            "+" | "-" => 5,
            "*" | "/" | "%" => 6,
            _ => return None,
        })
    }

    fn expr(&mut self, min_prec: u8) -> Option<Expr> {
        let mut lhs = self.unary()?;
        while let Some(Tok::Punct(p)) = self.peek_tok().cloned() {
            let Some(prec) = Self::binop_prec(p) else {
                break;
            };
            if prec < min_prec {
                break;
            }
            self.i += 1;
            let rhs = self.expr(prec + 1)?;
            lhs = Expr::Bin(p, Box::new(lhs), Box::new(rhs));
        }
        Some(lhs)
    }

    fn unary(&mut self) -> Option<Expr> {
        let p = self.here();
        // Deeply nested input must not overflow the stack.
        if self.i > 0
            && self.toks[..self.i]
                .iter()
                .rev()
                .take_while(|t| matches!(t.tok, Tok::Punct("(" | "-" | "~" | "+")))
                .count()
                > 64
        {
            self.diag.error(p, "expression nested too deeply");
            return None;
        }
        match self.bump().map(|t| t.tok) {
            Some(Tok::Num(n)) => Some(Expr::Num(n)),
            Some(Tok::Ident(s)) if s == "." => Some(Expr::Here),
            Some(Tok::Ident(s)) => Some(Expr::Sym(s, p)),
            Some(Tok::Punct("-")) => Some(Expr::Unary("-", Box::new(self.unary()?))),
            Some(Tok::Punct("+")) => self.unary(),
            Some(Tok::Punct("~")) => Some(Expr::Unary("~", Box::new(self.unary()?))),
            Some(Tok::Punct("(")) => {
                let e = self.expr(0)?;
                if self.is_punct(")") {
                    self.i += 1;
                    Some(e)
                } else {
                    let q = self.here();
                    self.diag.error(q, "expected `)`");
                    None
                }
            }
            Some(Tok::Dollar(s)) => {
                self.diag.error(
                    p,
                    format!("`${s}` is not allowed here: expected an expression"),
                );
                None
            }
            _ => {
                self.diag.error(p, "expected an expression");
                None
            }
        }
    }
}
