//! `ipu` IR to the assembler's statements, without text: what
//! [`super::build_executable`] encodes. The statements are exactly those the
//! assembler would parse from the tile's assembly view ([`super::tile_asm`]);
//! `tests/emit.rs` holds the two paths to the same bytes.
//!
//! Each statement's position names the op it came from: its `line` is the
//! 1-based index into [`TileStatements::ops`], so assembler errors map back
//! to op locations.

use ipuc_dialects::ipu::{self, Operand};
use ipuc_ipu_arch::asm::{self, DirArg, ParsedInstr, Pos, Stmt};
use ipuc_ipu_arch::registers::parse_register;
use ipuc_ir::attributes::Attribute;
use ipuc_ir::{Context, Diagnostic, OpId};

/// One tile's statements and the ops they came from.
#[derive(Clone, Debug)]
pub struct TileStatements {
    /// The statements, in program order.
    pub stmts: Vec<Stmt>,
    /// `ops[line - 1]` is the op of a statement at `line`.
    pub ops: Vec<OpId>,
}

impl TileStatements {
    /// The op a statement position stands for (`fallback` when none).
    pub fn op_at(&self, pos: Pos, fallback: OpId) -> OpId {
        pos.line
            .checked_sub(1)
            .and_then(|l| self.ops.get(l as usize).copied())
            .unwrap_or(fallback)
    }

    /// The position that stands for `op` (recorded once per op).
    fn pos_of(&mut self, op: OpId) -> Pos {
        if self.ops.last() != Some(&op) {
            self.ops.push(op);
        }
        Pos {
            line: self.ops.len() as u32,
            col: 1,
            len: 1,
        }
    }
}

fn str_attr<'a>(ctx: &'a Context, op: OpId, name: &str) -> &'a str {
    ctx.attr(op, name).and_then(Attribute::as_str).unwrap_or("")
}

/// The assembler operand of an `ipu` operand (`None` with a message when
/// the operand cannot stand in an instruction, e.g. `@function`).
fn instr_operand(o: &Operand, pos: Pos) -> Result<asm::Operand, String> {
    Ok(match o {
        Operand::Reg(r) => {
            let (file, lo) =
                parse_register(&r.name).ok_or_else(|| format!("`{}` is not a register", r.name))?;
            // `$azeros` is the pair `$a14:15` unless a group is spelled out.
            let hi = r.last.or((r.name == "azeros").then_some(15));
            asm::Operand::Reg {
                file,
                lo,
                hi,
                inc: r.inc,
                pos,
            }
        }
        Operand::Csr(name) => asm::Operand::Csr(name.clone(), pos),
        Operand::At(kind) => {
            return Err(format!(
                "`@{kind}` is a symbol kind: it belongs in a directive, not an instruction"
            ))
        }
        other => asm::Operand::Expr(expr(other, pos)?, pos),
    })
}

/// `e` with every symbol reference placed at `pos` (so an undefined symbol
/// is reported at the op that names it).
fn placed(e: asm::Expr, pos: Pos) -> asm::Expr {
    match e {
        asm::Expr::Sym(name, _) => asm::Expr::Sym(name, pos),
        asm::Expr::Unary(op, a) => asm::Expr::Unary(op, Box::new(placed(*a, pos))),
        asm::Expr::Bin(op, a, b) => {
            asm::Expr::Bin(op, Box::new(placed(*a, pos)), Box::new(placed(*b, pos)))
        }
        leaf => leaf,
    }
}

/// The expression of an immediate, symbol or expression operand, at `pos`.
fn expr(o: &Operand, pos: Pos) -> Result<asm::Expr, String> {
    match o {
        Operand::Imm(v) => Ok(asm::Expr::Num(*v)),
        Operand::Symbol(s) => Ok(asm::Expr::Sym(s.clone(), pos)),
        Operand::Expr(text) => asm::parse_expr(text)
            .map(|e| placed(e, pos))
            .ok_or_else(|| format!("`{text}` is not an assembler expression")),
        other => Err(format!(
            "`{}` is not allowed here: expected an expression",
            other.asm_text()
        )),
    }
}

fn dir_arg(o: &Operand, pos: Pos) -> Result<DirArg, String> {
    match o {
        Operand::At(kind) => Ok(DirArg::At(kind.clone())),
        // A quoted string kept as an expression operand (`.file "x.c"`).
        Operand::Expr(text) if text.starts_with('"') && text.ends_with('"') && text.len() >= 2 => {
            Ok(DirArg::Str(text[1..text.len() - 1].to_string()))
        }
        other => Ok(DirArg::Expr(expr(other, pos)?, pos)),
    }
}

fn instruction(
    ctx: &Context,
    inst: OpId,
    out: &mut TileStatements,
) -> Result<ParsedInstr, Diagnostic> {
    let pos = out.pos_of(inst);
    let operands = ipu::operands_of(ctx, inst)
        .iter()
        .map(|o| instr_operand(o, pos))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|m| Diagnostic::error(ctx.loc(inst).clone(), m))?;
    Ok(ParsedInstr {
        mnemonic: str_attr(ctx, inst, "mnemonic").to_string(),
        operands,
        pos,
    })
}

/// The statements of one verified `ipu.tile`.
pub fn tile_statements(ctx: &Context, tile: OpId) -> Result<TileStatements, Diagnostic> {
    let mut out = TileStatements {
        stmts: Vec::new(),
        ops: Vec::new(),
    };
    for section in ipu::body_ops(ctx, tile) {
        let pos = out.pos_of(section);
        let mut args = vec![DirArg::Str(str_attr(ctx, section, "name").to_string())];
        if let Some(f) = ctx.attr(section, "flags").and_then(Attribute::as_str) {
            args.push(DirArg::Str(f.to_string()));
        }
        out.stmts
            .push(Stmt::Directive(".section".into(), args, pos));
        let kind = format!(".{}", str_attr(ctx, section, "kind"));
        out.stmts.push(Stmt::Directive(kind, vec![], pos));
        for item in ipu::body_ops(ctx, section) {
            let stmt = match ctx.name_str(item) {
                ipu::LABEL => Stmt::Label(
                    str_attr(ctx, item, "sym_name").to_string(),
                    out.pos_of(item),
                ),
                ipu::INST => Stmt::Instr(instruction(ctx, item, &mut out)?),
                ipu::DIRECTIVE => {
                    let pos = out.pos_of(item);
                    let args = ipu::operands_of(ctx, item)
                        .iter()
                        .map(|o| dir_arg(o, pos))
                        .collect::<Result<Vec<_>, _>>()
                        .map_err(|m| Diagnostic::error(ctx.loc(item).clone(), m))?;
                    Stmt::Directive(format!(".{}", str_attr(ctx, item, "name")), args, pos)
                }
                ipu::BUNDLE => {
                    let pos = out.pos_of(item);
                    let parts = ipu::body_ops(ctx, item);
                    let [main, aux] = parts.as_slice() else {
                        return Err(Diagnostic::error(
                            ctx.loc(item).clone(),
                            format!(
                                "a bundle holds exactly two instructions (main ; aux), found {}",
                                parts.len()
                            ),
                        ));
                    };
                    let main = instruction(ctx, *main, &mut out)?;
                    let aux = instruction(ctx, *aux, &mut out)?;
                    Stmt::Bundle(main, aux, pos)
                }
                other => {
                    return Err(Diagnostic::error(
                        ctx.loc(item).clone(),
                        format!("'{other}' cannot appear in an 'ipu.section'"),
                    ))
                }
            };
            out.stmts.push(stmt);
        }
    }
    Ok(out)
}
