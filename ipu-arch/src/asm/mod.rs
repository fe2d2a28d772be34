//! The assembler: Graphcore tile assembly text to a loadable [`TileImage`].
//!
//! Accepted syntax: one statement per line; `label:`; instructions
//! `mnemonic op, op, ...`; bundles `{ main ; aux }` (the two halves may also
//! be on separate lines, as poplibs writes them); comments `//`, `#`,
//! `/* */`; integer expressions with labels, `.` (this address), `+ - * / %
//! << >> & | ^ ~` and parentheses. Directives: `.section NAME[, "flags"[,
//! @type]]`, `.text`, `.data`, `.globl`/`.global`, `.type NAME, @function`,
//! `.size NAME, EXPR`, `.align N` (bytes; code is padded with `nop`),
//! `.worker`, `.supervisor`, `.word`/`.int`/`.long`, `.space`/`.zero`, and the
//! ipuc extension `.stack supervisor|worker, TOP, SIZE`. `.file`, `.ident`
//! and `.allow_optimizations` are accepted and ignored.
//!
//! Layout: code sections (flag `x` or a `.text` name) first from the base of
//! region 0 (0x4c000), then data sections in region 0, then sections named
//! `.interleaved*` from the base of region 1 (0x80000). Code must fit in
//! region 0. Every section starts 8-byte aligned. The supervisor entry is
//! the symbol named by [`AsmOptions::entry`] (default `main`). Labels
//! starting with `.L` are local and not kept in the symbol table.
//!
//! Errors are collected (up to [`MAX_ERRORS`]) and returned together; the
//! assembler never panics on any input.

mod error;
mod lexer;

pub use error::{AsmError, AsmErrors, Pos};

use std::collections::BTreeMap;

use super::csr::{csr_by_name, CsrSpace};
use super::encoding::{encode, fits, Instr, MAX_OPERANDS};
use super::image::{ContextKind, Section, StackRegion, Symbol, TileImage};
use super::isa::{forms_of, ContextClass, InstrDesc, OperandKind, SlotClass};
use super::machine::MachineModel;
use super::registers::{parse_register, RegFile};
use lexer::{lex, Tok, Token};

/// Directives that hold data or facts about symbols, by name without the dot
/// (`.word`, `.globl`, ...): what the `ipu` dialect's `ipu.directive` holds.
/// The placement directives (`.section`, `.text`, `.data`, `.worker`,
/// `.supervisor`) are structure there (`ipu.section` and its kind).
pub const DIRECTIVES: &[&str] = &[
    "globl",
    "global",
    "type",
    "size",
    "align",
    "balign",
    "word",
    "int",
    "long",
    "space",
    "zero",
    "stack",
    "file",
    "ident",
    "allow_optimizations",
];

/// Errors reported before the assembler gives up.
pub const MAX_ERRORS: usize = 100;

/// Assembler options.
#[derive(Clone, Debug)]
pub struct AsmOptions {
    /// File name used in error messages.
    pub file: String,
    /// Supervisor entry symbol.
    pub entry: String,
    /// The machine (memory layout, FP8 availability).
    pub machine: MachineModel,
}

impl Default for AsmOptions {
    fn default() -> Self {
        AsmOptions {
            file: "<input>".into(),
            entry: "main".into(),
            machine: MachineModel::c600(),
        }
    }
}

/// Constants every program may use (poplibs' names for them).
const PREDEFINED: &[(&str, i64)] = &[
    ("TAMP_F16V4_E4_P0", 0),
    ("TAMP_F16V4_E4_P1", 1),
    ("TAMP_F16V4_E4_P2", 2),
    ("TAMP_F16V4_E4_P3", 3),
    ("TEXCH_SYNCZONE_LOCAL", 2),
    ("TEXCH_SYNCZONE_INTERNAL", 3),
    ("CTXT_WORKERS", 6),
];

/// The value of a constant every program may use (`TEXCH_SYNCZONE_LOCAL`, ...).
pub fn predefined_symbol(name: &str) -> Option<i64> {
    PREDEFINED.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
}

#[derive(Clone, Debug)]
enum Expr {
    Num(i64),
    Sym(String, Pos),
    Here,
    Unary(&'static str, Box<Expr>),
    Bin(&'static str, Box<Expr>, Box<Expr>),
}

#[derive(Clone, Debug)]
enum Operand {
    Reg {
        file: RegFile,
        lo: u8,
        hi: Option<u8>,
        inc: bool,
        pos: Pos,
    },
    Csr(String, Pos),
    Expr(Expr, Pos),
}

impl Operand {
    fn pos(&self) -> Pos {
        match self {
            Operand::Reg { pos, .. } | Operand::Csr(_, pos) | Operand::Expr(_, pos) => *pos,
        }
    }
}

#[derive(Clone, Debug)]
struct ParsedInstr {
    mnemonic: String,
    operands: Vec<Operand>,
    pos: Pos,
}

#[derive(Clone, Debug)]
enum DirArg {
    Str(String),
    At(String),
    Expr(Expr, Pos),
}

#[derive(Clone, Debug)]
enum Stmt {
    Label(String, Pos),
    Directive(String, Vec<DirArg>, Pos),
    Instr(ParsedInstr),
    Bundle(ParsedInstr, ParsedInstr, Pos),
}

struct Diag<'a> {
    file: &'a str,
    lines: Vec<&'a str>,
    errors: Vec<AsmError>,
}

impl Diag<'_> {
    fn error(&mut self, pos: Pos, message: impl Into<String>) {
        if self.errors.len() >= MAX_ERRORS {
            return;
        }
        let source_line = self
            .lines
            .get(pos.line.saturating_sub(1) as usize)
            .copied()
            .unwrap_or("")
            .trim_end_matches('\r')
            .to_string();
        self.errors.push(AsmError {
            file: self.file.to_string(),
            pos,
            message: message.into(),
            source_line,
        });
    }
}

// ---------------------------------------------------------------- parsing

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
        Some(Operand::Expr(e, Pos { len, ..start }))
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
                    args.push(DirArg::Expr(e, p));
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

// ---------------------------------------------------------------- layout

#[derive(Debug)]
struct SectionBuild {
    name: String,
    flags: String,
    is_code: bool,
    size: u32,
    align: u32,
    modes: Vec<(u32, ContextKind)>,
    address: u32,
}

#[derive(Debug)]
enum ItemKind {
    Instr(ParsedInstr),
    Bundle(ParsedInstr, ParsedInstr),
    Words(Vec<(Expr, Pos)>),
    Zeros,
    NopPad(u32),
}

#[derive(Debug)]
struct Item {
    section: usize,
    offset: u32,
    kind: ItemKind,
    pos: Pos,
    mode: ContextKind,
}

struct Ctx<'a> {
    symbols: &'a BTreeMap<String, i64>,
    here: i64,
}

fn eval(e: &Expr, ctx: &Ctx, diag: &mut Diag, depth: u32) -> Option<i64> {
    if depth > 256 {
        return None;
    }
    match e {
        Expr::Num(n) => Some(*n),
        Expr::Here => Some(ctx.here),
        Expr::Sym(s, pos) => match ctx.symbols.get(s) {
            Some(v) => Some(*v),
            None => {
                diag.error(*pos, format!("undefined symbol `{s}`"));
                None
            }
        },
        Expr::Unary(op, a) => {
            let a = eval(a, ctx, diag, depth + 1)?;
            Some(if *op == "-" { a.wrapping_neg() } else { !a })
        }
        Expr::Bin(op, a, b) => {
            let a = eval(a, ctx, diag, depth + 1)?;
            let b = eval(b, ctx, diag, depth + 1)?;
            match *op {
                "+" => Some(a.wrapping_add(b)),
                "-" => Some(a.wrapping_sub(b)),
                "*" => Some(a.wrapping_mul(b)),
                "/" | "%" if b == 0 => None,
                "/" => Some(a.wrapping_div(b)),
                "%" => Some(a.wrapping_rem(b)),
                "<<" => Some(if (0..64).contains(&b) {
                    a.wrapping_shl(b as u32)
                } else {
                    0
                }),
                ">>" => Some(if (0..64).contains(&b) {
                    a >> b
                } else if a < 0 {
                    -1
                } else {
                    0
                }),
                "&" => Some(a & b),
                "|" => Some(a | b),
                "^" => Some(a ^ b),
                _ => None,
            }
        }
    }
}

fn eval_reported(e: &Expr, pos: Pos, ctx: &Ctx, diag: &mut Diag) -> Option<i64> {
    let before = diag.errors.len();
    let v = eval(e, ctx, diag, 0);
    if v.is_none() && diag.errors.len() == before {
        diag.error(
            pos,
            "cannot evaluate expression (division by zero or nesting too deep)",
        );
    }
    v
}

fn syntactic_match(kind: OperandKind, op: &Operand) -> bool {
    match (kind, op) {
        (
            OperandKind::M,
            Operand::Reg {
                file: RegFile::M,
                hi: None,
                inc: false,
                ..
            },
        ) => true,
        (
            OperandKind::MInc,
            Operand::Reg {
                file: RegFile::M,
                hi: None,
                inc: true,
                ..
            },
        ) => true,
        (
            OperandKind::MPair,
            Operand::Reg {
                file: RegFile::M,
                lo,
                hi: Some(h),
                inc: false,
                ..
            },
        ) => *h == lo + 1,
        (
            OperandKind::MPairInc,
            Operand::Reg {
                file: RegFile::M,
                lo,
                hi: Some(h),
                inc: true,
                ..
            },
        ) => *h == lo + 1,
        (
            OperandKind::A,
            Operand::Reg {
                file: RegFile::A,
                hi: None,
                inc: false,
                ..
            },
        ) => true,
        (
            OperandKind::APair,
            Operand::Reg {
                file: RegFile::A,
                lo,
                hi: Some(h),
                inc: false,
                ..
            },
        ) => *h == lo + 1,
        (
            OperandKind::AQuad,
            Operand::Reg {
                file: RegFile::A,
                lo,
                hi: Some(h),
                inc: false,
                ..
            },
        ) => *h == lo + 3,
        (OperandKind::UImm(_) | OperandKind::SImm(_) | OperandKind::Target, Operand::Expr(..)) => {
            true
        }
        (OperandKind::Csr | OperandKind::UCsr, Operand::Csr(..) | Operand::Expr(..)) => true,
        _ => false,
    }
}

fn form_signature(d: &InstrDesc) -> String {
    let ops: Vec<&str> = d.operands.iter().map(|k| k.syntax()).collect();
    format!("{} {}", d.mnemonic, ops.join(", "))
}

fn select_form(pi: &ParsedInstr, diag: &mut Diag) -> Option<&'static InstrDesc> {
    let mut forms = forms_of(&pi.mnemonic).peekable();
    if forms.peek().is_none() {
        diag.error(pi.pos, format!("unknown instruction `{}`", pi.mnemonic));
        return None;
    }
    let forms: Vec<&InstrDesc> = forms.collect();
    for f in &forms {
        if f.operands.len() == pi.operands.len()
            && f.operands
                .iter()
                .zip(&pi.operands)
                .all(|(k, o)| syntactic_match(*k, o))
        {
            return Some(f);
        }
    }
    let list: Vec<String> = forms.iter().map(|f| form_signature(f)).collect();
    diag.error(
        pi.pos,
        format!(
            "operands do not match any form of `{}`; its forms are: {}",
            pi.mnemonic,
            list.join(" | ")
        ),
    );
    None
}

/// Assembles one tile's program.
pub fn assemble(text: &str, opts: &AsmOptions) -> Result<TileImage, AsmErrors> {
    let mut diag = Diag {
        file: &opts.file,
        lines: text.split('\n').collect(),
        errors: Vec::new(),
    };
    let (tokens, lex_errors) = lex(text);
    for (p, m) in lex_errors {
        diag.error(p, m);
    }
    let stmts = Parser {
        toks: &tokens,
        i: 0,
        diag: &mut diag,
    }
    .statements();

    // Pass 1: sections, sizes, labels.
    let mut sections: Vec<SectionBuild> = Vec::new();
    let mut items: Vec<Item> = Vec::new();
    let mut labels: BTreeMap<String, (usize, u32, Pos)> = BTreeMap::new();
    let mut globals: BTreeMap<String, Pos> = BTreeMap::new();
    let mut functions: BTreeMap<String, Pos> = BTreeMap::new();
    // (symbol, size expression, where, section and offset of the directive)
    type SizeDirective = (String, Expr, Pos, Option<(usize, u32)>);
    let mut sizes: Vec<SizeDirective> = Vec::new();
    let mut stacks: Vec<(ContextKind, Expr, Expr, Pos)> = Vec::new();
    let mut current: Option<usize> = None;
    let mut mode = ContextKind::Supervisor;

    fn switch_section(
        sections: &mut Vec<SectionBuild>,
        name: &str,
        flags: &str,
        mode: ContextKind,
    ) -> usize {
        if let Some(i) = sections.iter().position(|s| s.name == name) {
            return i;
        }
        let is_code = flags.contains('x') || name == ".text" || name.starts_with(".text.");
        sections.push(SectionBuild {
            name: name.into(),
            flags: flags.into(),
            is_code,
            size: 0,
            align: 8,
            modes: vec![(0, mode)],
            address: 0,
        });
        sections.len() - 1
    }

    for stmt in stmts {
        match stmt {
            Stmt::Label(name, pos) => {
                let sec = *current
                    .get_or_insert_with(|| switch_section(&mut sections, ".text", "ax", mode));
                if PREDEFINED.iter().any(|(n, _)| *n == name) {
                    diag.error(
                        pos,
                        format!("`{name}` is a predefined constant and cannot be a label"),
                    );
                } else if let Some((_, _, prev)) = labels.get(&name) {
                    let prev = *prev;
                    diag.error(
                        pos,
                        format!("label `{name}` is already defined at line {}", prev.line),
                    );
                } else {
                    labels.insert(name, (sec, sections[sec].size, pos));
                }
            }
            Stmt::Directive(name, args, pos) => {
                let arg_name = |a: Option<&DirArg>| match a {
                    Some(DirArg::Expr(Expr::Sym(s, _), _)) => Some(s.clone()),
                    Some(DirArg::Str(s)) => Some(s.clone()),
                    _ => None,
                };
                match name.as_str() {
                    ".section" => match arg_name(args.first()) {
                        Some(n) => {
                            let flags = match args.get(1) {
                                Some(DirArg::Str(f)) => f.clone(),
                                _ => String::new(),
                            };
                            current = Some(switch_section(&mut sections, &n, &flags, mode));
                        }
                        None => diag.error(pos, "`.section` needs a section name"),
                    },
                    ".text" => current = Some(switch_section(&mut sections, ".text", "ax", mode)),
                    ".data" => current = Some(switch_section(&mut sections, ".data", "aw", mode)),
                    ".globl" | ".global" => match arg_name(args.first()) {
                        Some(n) if args.len() == 1 => {
                            globals.insert(n, pos);
                        }
                        _ => diag.error(pos, format!("`{name}` needs one symbol name")),
                    },
                    ".type" => match (arg_name(args.first()), args.get(1)) {
                        (Some(n), Some(DirArg::At(t))) if t == "function" => {
                            functions.insert(n, pos);
                        }
                        (Some(_), Some(DirArg::At(t))) if t == "object" => {}
                        _ => {
                            diag.error(pos, "`.type` expects `.type NAME, @function` or `@object`")
                        }
                    },
                    ".size" => match (arg_name(args.first()), args.get(1)) {
                        (Some(n), Some(DirArg::Expr(e, _))) if args.len() == 2 => {
                            sizes.push((n, e.clone(), pos, current.map(|c| (c, sections[c].size))))
                        }
                        _ => diag.error(pos, "`.size` expects `.size NAME, EXPR`"),
                    },
                    ".worker" | ".supervisor" => {
                        mode = if name == ".worker" {
                            ContextKind::Worker
                        } else {
                            ContextKind::Supervisor
                        };
                        if let Some(sec) = current {
                            let s = &mut sections[sec];
                            let off = s.size;
                            match s.modes.last_mut() {
                                Some(last) if last.0 == off => last.1 = mode,
                                _ => s.modes.push((off, mode)),
                            }
                        }
                    }
                    ".align" | ".balign" => {
                        let n = match args.as_slice() {
                            [DirArg::Expr(Expr::Num(n), _)] => *n,
                            [DirArg::Expr(Expr::Num(n), _), DirArg::Expr(Expr::Num(_), _)] => *n,
                            _ => {
                                diag.error(pos, "`.align` expects a constant byte alignment");
                                continue;
                            }
                        };
                        if !(1..=4096).contains(&n) || (n & (n - 1)) != 0 {
                            diag.error(
                                pos,
                                format!("alignment {n} is not a power of two between 1 and 4096"),
                            );
                            continue;
                        }
                        let sec = *current.get_or_insert_with(|| {
                            switch_section(&mut sections, ".text", "ax", mode)
                        });
                        let s = &mut sections[sec];
                        let n = n as u32;
                        s.align = s.align.max(n);
                        let pad = (n - s.size % n) % n;
                        if pad > 0 {
                            let kind = if s.is_code {
                                ItemKind::NopPad(pad)
                            } else {
                                ItemKind::Zeros
                            };
                            if s.is_code && !pad.is_multiple_of(4) {
                                diag.error(pos, "code is not 4-byte aligned here");
                                continue;
                            }
                            items.push(Item {
                                section: sec,
                                offset: s.size,
                                kind,
                                pos,
                                mode,
                            });
                            s.size += pad;
                        }
                    }
                    ".word" | ".int" | ".long" | ".space" | ".zero" => {
                        let sec = *current.get_or_insert_with(|| {
                            switch_section(&mut sections, ".data", "aw", mode)
                        });
                        let s = &mut sections[sec];
                        if s.is_code {
                            diag.error(pos, format!("`{name}` is not allowed in code section `{}`: put data in a data section", s.name));
                            continue;
                        }
                        if name == ".space" || name == ".zero" {
                            match args.as_slice() {
                                [DirArg::Expr(Expr::Num(n), _)] if (0..=0x10_0000).contains(n) => {
                                    items.push(Item {
                                        section: sec,
                                        offset: s.size,
                                        kind: ItemKind::Zeros,
                                        pos,
                                        mode,
                                    });
                                    s.size += *n as u32;
                                }
                                _ => diag.error(
                                    pos,
                                    format!("`{name}` expects a constant byte count up to 1 MiB"),
                                ),
                            }
                            continue;
                        }
                        if !s.size.is_multiple_of(4) {
                            diag.error(pos, format!("`{name}` data must be 4-byte aligned"));
                            continue;
                        }
                        let mut words = Vec::new();
                        for a in &args {
                            match a {
                                DirArg::Expr(e, p) => words.push((e.clone(), *p)),
                                _ => diag.error(pos, format!("`{name}` expects expressions")),
                            }
                        }
                        let n = words.len() as u32 * 4;
                        items.push(Item {
                            section: sec,
                            offset: s.size,
                            kind: ItemKind::Words(words),
                            pos,
                            mode,
                        });
                        s.size += n;
                    }
                    ".stack" => match args.as_slice() {
                        [DirArg::Expr(Expr::Sym(who, _), _), DirArg::Expr(top, _), DirArg::Expr(size, _)]
                            if who == "supervisor" || who == "worker" =>
                        {
                            let ctx = if who == "worker" {
                                ContextKind::Worker
                            } else {
                                ContextKind::Supervisor
                            };
                            stacks.push((ctx, top.clone(), size.clone(), pos));
                        }
                        _ => diag.error(
                            pos,
                            "`.stack` expects `.stack supervisor|worker, TOP, SIZE`",
                        ),
                    },
                    ".file" | ".ident" | ".allow_optimizations" => {}
                    _ => diag.error(pos, format!("unknown directive `{name}`")),
                }
            }
            Stmt::Instr(pi) => {
                let sec = *current
                    .get_or_insert_with(|| switch_section(&mut sections, ".text", "ax", mode));
                let s = &mut sections[sec];
                if !s.is_code {
                    diag.error(pi.pos, format!("instruction in data section `{}`", s.name));
                    continue;
                }
                if !s.size.is_multiple_of(4) {
                    diag.error(pi.pos, "instruction is not 4-byte aligned");
                    continue;
                }
                let pos = pi.pos;
                items.push(Item {
                    section: sec,
                    offset: s.size,
                    kind: ItemKind::Instr(pi),
                    pos,
                    mode,
                });
                s.size += 4;
            }
            Stmt::Bundle(main, aux, pos) => {
                let sec = *current
                    .get_or_insert_with(|| switch_section(&mut sections, ".text", "ax", mode));
                let s = &mut sections[sec];
                if !s.is_code {
                    diag.error(pos, format!("bundle in data section `{}`", s.name));
                    continue;
                }
                if !s.size.is_multiple_of(8) {
                    diag.error(
                        pos,
                        "bundle is not 8-byte aligned: insert a `nop` or `.align 8` before it",
                    );
                }
                items.push(Item {
                    section: sec,
                    offset: s.size,
                    kind: ItemKind::Bundle(main, aux),
                    pos,
                    mode,
                });
                s.size += 8;
            }
        }
    }

    // Place sections.
    let m = &opts.machine;
    let mut cursor0 = m.sram_base;
    let mut cursor1 = m.interleaved_base;
    let order: Vec<usize> = (0..sections.len())
        .filter(|&i| sections[i].is_code)
        .chain(
            (0..sections.len())
                .filter(|&i| !sections[i].is_code && !sections[i].name.starts_with(".interleaved")),
        )
        .chain(
            (0..sections.len())
                .filter(|&i| !sections[i].is_code && sections[i].name.starts_with(".interleaved")),
        )
        .collect();
    let file_pos = Pos {
        line: 1,
        col: 1,
        len: 1,
    };
    for &i in &order {
        let s = &mut sections[i];
        let interleaved = !s.is_code && s.name.starts_with(".interleaved");
        let cursor = if interleaved {
            &mut cursor1
        } else {
            &mut cursor0
        };
        let a = u64::from(s.align);
        let addr = (u64::from(*cursor)).div_ceil(a) * a;
        let end = addr + u64::from(s.size);
        let limit = if interleaved {
            m.sram_end
        } else {
            m.interleaved_base
        };
        if end > u64::from(limit) {
            let what = if s.is_code { "code" } else { "data" };
            diag.error(
                file_pos,
                format!("{what} section `{}` ({} bytes) does not fit: it would end at 0x{end:x}, past the region limit 0x{limit:x}{}", s.name, s.size, if s.is_code { " (code must lie in region 0)" } else { "" }),
            );
            continue;
        }
        s.address = addr as u32;
        *cursor = end as u32;
    }

    let mut symbols: BTreeMap<String, i64> = PREDEFINED
        .iter()
        .map(|(n, v)| (n.to_string(), *v))
        .collect();
    for (name, (sec, off, _)) in &labels {
        symbols.insert(name.clone(), i64::from(sections[*sec].address + off));
    }

    // Pass 2: encode.
    let mut bytes: Vec<Vec<u8>> = sections
        .iter()
        .map(|s| vec![0u8; s.size as usize])
        .collect();
    // (address, is_bundle, allowed in rpt, rpt body end if a rpt)
    let mut code_units: Vec<(u32, u32, bool, bool)> = Vec::new();
    let mut rpts: Vec<(u32, i64, Pos)> = Vec::new();
    for item in &items {
        let sec = &sections[item.section];
        let addr = sec.address + item.offset;
        let ctx = Ctx {
            symbols: &symbols,
            here: i64::from(addr),
        };
        let out = &mut bytes[item.section][item.offset as usize..];
        match &item.kind {
            ItemKind::Zeros => {}
            ItemKind::NopPad(n) => {
                let nop = encode(&Instr::new(super::isa::Opcode::Nop, &[]), false);
                for k in 0..(*n / 4) as usize {
                    out[k * 4..k * 4 + 4].copy_from_slice(&nop.to_le_bytes());
                    code_units.push((addr + k as u32 * 4, 4, false, true));
                }
            }
            ItemKind::Words(ws) => {
                for (k, (e, p)) in ws.iter().enumerate() {
                    if let Some(v) = eval_reported(e, *p, &ctx, &mut diag) {
                        if !(-(1i64 << 31)..(1i64 << 32)).contains(&v) {
                            diag.error(*p, format!("value {v} does not fit in 32 bits"));
                        }
                        out[k * 4..k * 4 + 4].copy_from_slice(&(v as u32).to_le_bytes());
                    }
                }
            }
            ItemKind::Instr(pi) => {
                if let Some((instr, desc)) = encode_operands(pi, &ctx, item.mode, opts, &mut diag) {
                    out[..4].copy_from_slice(&encode(&instr, false).to_le_bytes());
                    code_units.push((addr, 4, false, desc.allowed_in_rpt()));
                    if matches!(
                        desc.opcode,
                        super::isa::Opcode::Rpt | super::isa::Opcode::RptImm
                    ) {
                        rpts.push((addr + 4, i64::from(instr.ops[1]), pi.pos));
                    }
                }
            }
            ItemKind::Bundle(main, aux) => {
                if item.mode == ContextKind::Supervisor {
                    diag.error(item.pos, "bundles are worker-only: the supervisor has no auxiliary pipeline (use `.worker`)");
                }
                let a = encode_operands(main, &ctx, item.mode, opts, &mut diag);
                let b = encode_operands(aux, &ctx, item.mode, opts, &mut diag);
                if let (Some((ia, da)), Some((ib, db))) = (a, b) {
                    let mut ok = true;
                    if da.slot != SlotClass::Main {
                        diag.error(main.pos, format!("`{}` is an auxiliary-pipeline instruction and cannot be the first (main) half of a bundle", da.mnemonic));
                        ok = false;
                    }
                    if db.slot != SlotClass::Aux {
                        diag.error(aux.pos, format!("`{}` is a main-pipeline instruction and cannot be the second (auxiliary) half of a bundle", db.mnemonic));
                        ok = false;
                    }
                    if ok {
                        out[..4].copy_from_slice(&encode(&ia, true).to_le_bytes());
                        out[4..8].copy_from_slice(&encode(&ib, false).to_le_bytes());
                        code_units.push((
                            addr,
                            8,
                            true,
                            da.allowed_in_rpt() && db.allowed_in_rpt(),
                        ));
                        if matches!(
                            da.opcode,
                            super::isa::Opcode::Rpt | super::isa::Opcode::RptImm
                        ) {
                            rpts.push((addr + 8, i64::from(ia.ops[1]), main.pos));
                        }
                    }
                }
            }
        }
    }

    // rpt bodies: 8-byte aligned, bundles only, no control or system instructions.
    code_units.sort_by_key(|u| u.0);
    for (start, size_imm, pos) in rpts {
        if start % 8 != 0 {
            diag.error(pos, format!("`rpt` body must start 8-byte aligned, but starts at 0x{start:x}: bundle the `rpt` with an `fnop` or move it"));
            continue;
        }
        let end = u64::from(start) + (size_imm as u64 + 1) * 8;
        let mut addr = u64::from(start);
        while addr < end {
            match code_units.binary_search_by_key(&(addr as u32), |u| u.0) {
                Ok(i) => {
                    let (_, size, is_bundle, allowed) = code_units[i];
                    if !is_bundle {
                        diag.error(pos, format!("`rpt` body contains a solo instruction at 0x{addr:x}: a body holds bundles only"));
                        break;
                    }
                    if !allowed {
                        diag.error(
                            pos,
                            format!(
                                "`rpt` body contains a control or system instruction at 0x{addr:x}"
                            ),
                        );
                        break;
                    }
                    addr += u64::from(size);
                }
                Err(_) => {
                    diag.error(
                        pos,
                        format!("`rpt` body runs past the end of code at 0x{addr:x}"),
                    );
                    break;
                }
            }
        }
    }

    // Symbols.
    let mut out_symbols = Vec::new();
    for (name, (_, _, _)) in labels.iter().filter(|(n, _)| !n.starts_with(".L")) {
        let address = symbols[name] as u32;
        out_symbols.push(Symbol {
            name: name.clone(),
            address,
            size: None,
            global: globals.contains_key(name),
            is_function: functions.contains_key(name),
        });
    }
    for (name, pos) in globals.iter().chain(functions.iter()) {
        if !labels.contains_key(name) {
            diag.error(
                *pos,
                format!("symbol `{name}` is declared but never defined"),
            );
        }
    }
    for (name, e, pos, at) in &sizes {
        let here = at
            .map(|(sec, off)| i64::from(sections[sec].address + off))
            .unwrap_or(0);
        let v = eval_reported(
            e,
            *pos,
            &Ctx {
                symbols: &symbols,
                here,
            },
            &mut diag,
        );
        match (out_symbols.iter_mut().find(|s| &s.name == name), v) {
            (Some(s), Some(v)) if (0..=i64::from(u32::MAX)).contains(&v) => s.size = Some(v as u32),
            (Some(_), Some(v)) => diag.error(*pos, format!("size {v} is out of range")),
            (None, _) => diag.error(*pos, format!("`.size` of undefined symbol `{name}`")),
            _ => {}
        }
    }
    out_symbols.sort_by(|a, b| (a.address, &a.name).cmp(&(b.address, &b.name)));

    let mut out_stacks = Vec::new();
    for (ctx_kind, top, size, pos) in &stacks {
        let c = Ctx {
            symbols: &symbols,
            here: 0,
        };
        if let (Some(t), Some(s)) = (
            eval_reported(top, *pos, &c, &mut diag),
            eval_reported(size, *pos, &c, &mut diag),
        ) {
            let copies = if *ctx_kind == ContextKind::Worker {
                i64::from(m.worker_contexts)
            } else {
                1
            };
            if t % 8 != 0
                || s % 8 != 0
                || s <= 0
                || t > i64::from(m.sram_end)
                || t - s * copies < i64::from(m.sram_base)
            {
                diag.error(
                    *pos,
                    "stack region must be 8-byte aligned and inside tile memory",
                );
            } else {
                out_stacks.push(StackRegion {
                    context: *ctx_kind,
                    top: t as u32,
                    size: s as u32,
                });
            }
        }
    }

    let entry = match symbols.get(&opts.entry) {
        Some(&a) if labels.contains_key(&opts.entry) => a as u32,
        _ => {
            if diag.errors.is_empty() {
                diag.error(
                    file_pos,
                    format!(
                        "no supervisor entry: symbol `{}` is not defined",
                        opts.entry
                    ),
                );
            }
            0
        }
    };

    if !diag.errors.is_empty() {
        return Err(AsmErrors(diag.errors));
    }
    let mut out_sections: Vec<Section> = order
        .iter()
        .filter(|&&i| sections[i].size > 0 || sections[i].is_code)
        .map(|&i| {
            let s = &sections[i];
            Section {
                name: s.name.clone(),
                flags: s.flags.clone(),
                is_code: s.is_code,
                address: s.address,
                bytes: std::mem::take(&mut bytes[i]),
                modes: s.modes.clone(),
            }
        })
        .collect();
    out_sections.sort_by_key(|s| s.address);
    Ok(TileImage {
        sections: out_sections,
        symbols: out_symbols,
        stacks: out_stacks,
        entry,
    })
}

fn encode_operands(
    pi: &ParsedInstr,
    ctx: &Ctx,
    mode: ContextKind,
    opts: &AsmOptions,
    diag: &mut Diag,
) -> Option<(Instr, &'static InstrDesc)> {
    let desc = select_form(pi, diag)?;
    match (desc.context, mode) {
        (ContextClass::Worker, ContextKind::Supervisor) => {
            diag.error(
                pi.pos,
                format!(
                    "`{}` is a worker instruction, not allowed in supervisor code (use `.worker`)",
                    desc.mnemonic
                ),
            );
            return None;
        }
        (ContextClass::Supervisor, ContextKind::Worker) => {
            diag.error(
                pi.pos,
                format!(
                    "`{}` is a supervisor instruction, not allowed in worker code",
                    desc.mnemonic
                ),
            );
            return None;
        }
        _ => {}
    }
    if desc.needs_fp8() && !opts.machine.has_fp8 {
        diag.error(
            pi.pos,
            format!(
                "`{}` needs FP8 (ipu21); machine `{}` has none",
                desc.mnemonic, opts.machine.name
            ),
        );
        return None;
    }
    let mut ops = [0i32; MAX_OPERANDS];
    let mut ok = true;
    for (i, (kind, op)) in desc.operands.iter().zip(&pi.operands).enumerate() {
        let value: Option<i64> = match op {
            Operand::Reg { lo, .. } => Some(i64::from(*lo)),
            Operand::Csr(name, pos) => {
                let space = if *kind == OperandKind::UCsr {
                    CsrSpace::Upper
                } else {
                    CsrSpace::Lower
                };
                match csr_by_name(name, space) {
                    Some(c) => Some(i64::from(c.number)),
                    None => {
                        diag.error(
                            *pos,
                            format!("unknown control register `${name}` for `{}`", desc.mnemonic),
                        );
                        None
                    }
                }
            }
            Operand::Expr(e, pos) => eval_reported(e, *pos, ctx, diag),
        };
        let Some(v) = value else {
            ok = false;
            continue;
        };
        if !fits(*kind, v) {
            let why = match kind {
                OperandKind::UImm(b) => format!(
                    "{v} does not fit an unsigned {b}-bit immediate (0..={})",
                    (1i64 << b) - 1
                ),
                OperandKind::SImm(b) => format!(
                    "{v} does not fit a signed {b}-bit immediate ({}..={})",
                    -(1i64 << (b - 1)),
                    (1i64 << (b - 1)) - 1
                ),
                OperandKind::Target => {
                    format!("branch target 0x{v:x} is not a 4-byte aligned code address")
                }
                _ => format!("operand is not {}", kind.describe()),
            };
            diag.error(op.pos(), why);
            ok = false;
            continue;
        }
        if *kind == OperandKind::Target
            && (v < i64::from(opts.machine.sram_base)
                || v >= i64::from(opts.machine.interleaved_base))
        {
            diag.error(
                op.pos(),
                format!("branch target 0x{v:x} is outside region 0, where code lives"),
            );
            ok = false;
            continue;
        }
        ops[i] = v as i32;
    }
    ok.then_some((
        Instr {
            opcode: desc.opcode,
            ops,
        },
        desc,
    ))
}

#[cfg(test)]
mod tests;
