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
//!
//! The steps, one module each: [`parse`] (text to [`Stmt`]s), `layout`
//! (sections, items and labels, then section addresses), `encode` (items to
//! bytes once labels have values), `finish` (symbols, `.size`, stacks, entry,
//! the image). [`assemble_statements`] starts at the second step, for
//! generators that hold structured instructions already.

mod encode;
mod error;
mod finish;
mod layout;
mod lexer;
mod parse;
mod stalls;
pub mod syntax;

pub use error::{AsmError, AsmErrors, Pos, Severity};
pub use parse::{parse, parse_expr};
pub use syntax::{DirArg, Expr, Operand, ParsedInstr, Stmt};

use crate::image::TileImage;
use crate::machine::MachineModel;
use error::Diag;

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
pub(crate) const PREDEFINED: &[(&str, i64)] = &[
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

/// A successful assembly and what it warns about.
#[derive(Clone, Debug)]
pub struct Assembled {
    /// The image.
    pub image: TileImage,
    /// Supervisor pipeline stalls the code will take (a reader issued
    /// before the result it reads is ready, see [`crate::pipeline`]), in
    /// address order.
    pub warnings: Vec<AsmError>,
}

/// Assembles one tile's program.
pub fn assemble(text: &str, opts: &AsmOptions) -> Result<TileImage, AsmErrors> {
    assemble_with_warnings(text, opts).map(|a| a.image)
}

/// Assembles one tile's program and reports the supervisor pipeline stalls
/// it contains.
pub fn assemble_with_warnings(text: &str, opts: &AsmOptions) -> Result<Assembled, AsmErrors> {
    let mut diag = Diag::new(&opts.file, text);
    let stmts = parse::parse_with(text, &mut diag);
    assemble_with(stmts, opts, diag)
}

/// Assembles statements built without text (errors carry the statements'
/// own positions and no source line). Gives the same image as assembling
/// their printed text, and the same warnings.
pub fn assemble_statements(stmts: Vec<Stmt>, opts: &AsmOptions) -> Result<Assembled, AsmErrors> {
    assemble_with(stmts, opts, Diag::new(&opts.file, ""))
}

fn assemble_with(
    stmts: Vec<Stmt>,
    opts: &AsmOptions,
    mut diag: Diag,
) -> Result<Assembled, AsmErrors> {
    let layout = layout::layout(stmts, opts, &mut diag);
    let symbols = layout.symbols();
    let bytes = encode::encode_items(&layout, &symbols, opts, &mut diag);
    finish::finish(layout, &symbols, bytes, opts, diag)
}

#[cfg(test)]
mod tests;
