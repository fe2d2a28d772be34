//! The assembler's statements: what the text parser produces and what the
//! layout and encoding steps consume. Code generators that already hold
//! structured instructions (the `ipu` dialect's emitter) build these
//! directly and skip the text altogether; [`super::assemble_statements`]
//! then produces the same image as assembling the printed text.
//!
//! Every statement carries a [`Pos`]. For parsed text it is the source
//! position; a generator may use any numbering it can map back (the `ipu`
//! emitter uses the index of the op a statement came from as the line).

use std::fmt;

use super::error::Pos;
use crate::registers::RegFile;

/// An integer expression (evaluated once labels have addresses).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expr {
    /// A literal.
    Num(i64),
    /// A label or predefined constant.
    Sym(String, Pos),
    /// `.`: the address of the statement.
    Here,
    /// `-a` or `~a` (the operator as written).
    Unary(&'static str, Box<Expr>),
    /// `a op b` with `op` one of `| ^ & << >> + - * / %`.
    Bin(&'static str, Box<Expr>, Box<Expr>),
}

impl fmt::Display for Expr {
    /// Assembler syntax, parenthesised wherever a sub-expression is not a
    /// leaf, so that reading it back evaluates to the same value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn leaf(e: &Expr) -> bool {
            matches!(e, Expr::Num(_) | Expr::Sym(..) | Expr::Here)
        }
        let sub = |f: &mut fmt::Formatter<'_>, e: &Expr| {
            if leaf(e) {
                write!(f, "{e}")
            } else {
                write!(f, "({e})")
            }
        };
        match self {
            Expr::Num(n) if *n < 0 => write!(f, "({n})"),
            Expr::Num(n) => write!(f, "{n}"),
            Expr::Sym(s, _) => f.write_str(s),
            Expr::Here => f.write_str("."),
            Expr::Unary(op, a) => {
                f.write_str(op)?;
                sub(f, a)
            }
            Expr::Bin(op, a, b) => {
                sub(f, a)?;
                write!(f, " {op} ")?;
                sub(f, b)
            }
        }
    }
}

/// One instruction operand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Operand {
    /// A register, a register group `$a0:3`, optionally post-incremented
    /// (`$m4:5+=`).
    Reg {
        /// The register file.
        file: RegFile,
        /// The first register number.
        lo: u8,
        /// The last register number of a group.
        hi: Option<u8>,
        /// Whether the instruction post-increments it.
        inc: bool,
        /// Where it was written.
        pos: Pos,
    },
    /// A control register by name (without `$`).
    Csr(String, Pos),
    /// An immediate, a label, or an expression of them.
    Expr(Expr, Pos),
}

impl Operand {
    /// Where the operand was written.
    pub fn pos(&self) -> Pos {
        match self {
            Operand::Reg { pos, .. } | Operand::Csr(_, pos) | Operand::Expr(_, pos) => *pos,
        }
    }
}

/// An instruction as written: the mnemonic and its operands, before a form
/// of the ISA is chosen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedInstr {
    /// The mnemonic.
    pub mnemonic: String,
    /// The operands in order.
    pub operands: Vec<Operand>,
    /// Where the mnemonic was written.
    pub pos: Pos,
}

/// One argument of a directive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DirArg {
    /// A quoted string (`"ax"`).
    Str(String),
    /// A symbol kind (`@function`).
    At(String),
    /// An expression (names count as expressions).
    Expr(Expr, Pos),
}

/// One statement of a tile program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stmt {
    /// `name:`.
    Label(String, Pos),
    /// `.name args` (the name with its dot).
    Directive(String, Vec<DirArg>, Pos),
    /// A solo instruction.
    Instr(ParsedInstr),
    /// `{ main ; aux }`.
    Bundle(ParsedInstr, ParsedInstr, Pos),
}
