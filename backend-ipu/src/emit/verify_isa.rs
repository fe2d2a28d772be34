//! `ipu-verify-isa`: checks every `ipu.inst` against the ISA table, so that
//! what the assembler would reject is reported at the op, before emission.
//!
//! Checked: the mnemonic exists; the operands match one of its forms (register
//! files, groups, post-increments, immediates, labels, control registers);
//! literal immediates fit their field (register groups their alignment); the
//! form may run in the section's context (supervisor or worker); FP8
//! instructions only on FP8 machines; bundles only in worker sections, main
//! instruction first and auxiliary second; symbols name a label of the tile
//! or an assembler constant; control registers exist.

use rustc_hash::FxHashSet as HashSet;

use ipuc_dialects::ipu::{self, Operand};
use ipuc_ir::analysis::{AnalysisManager, PreservedAnalyses};
use ipuc_ir::attributes::Attribute;
use ipuc_ir::pass::{DeclaredPass, PassCreateError, PassHooks};
use ipuc_ir::{Context, Diagnostic, OpId, WalkOrder};

use ipuc_ipu_arch::asm::predefined_symbol;
use ipuc_ipu_arch::csr::{csr_by_name, CsrSpace};
use ipuc_ipu_arch::encoding::{misfit, Instr};
use ipuc_ipu_arch::isa::{forms_of, ContextClass, InstrDesc, OperandKind, SlotClass};
use ipuc_ipu_arch::registers::{parse_register, RegFile};
use ipuc_ipu_arch::MachineModel;

/// The ISA check pass.
#[derive(Clone, Default)]
pub struct VerifyIsa;

ipuc_ir::declare_pass! {
    VerifyIsa => "ipu-verify-isa" {
        summary: "Check ipu.inst ops against the IPU instruction set (operands, immediates, contexts, bundle slots, labels)",
    }
}

impl DeclaredPass for VerifyIsa {
    fn create(_options: &(), _hooks: &PassHooks) -> Result<Self, PassCreateError> {
        Ok(VerifyIsa)
    }
    fn run(
        &mut self,
        ctx: &mut Context,
        op: OpId,
        _am: &mut AnalysisManager,
        _stats: &mut (),
    ) -> Result<PreservedAnalyses, Diagnostic> {
        for tile in ctx.collect_ops(op, WalkOrder::PreOrder) {
            if ctx.name_str(tile) == ipu::TILE {
                check_tile(ctx, tile)?;
            }
        }
        Ok(PreservedAnalyses::all())
    }
}

fn machine_of(ctx: &Context, tile: OpId) -> MachineModel {
    ctx.parent_op(tile)
        .and_then(|e| ctx.attr(e, "machine"))
        .and_then(Attribute::as_str)
        .and_then(MachineModel::by_name)
        .unwrap_or_else(MachineModel::c600)
}

/// Checks every instruction of one `ipu.tile`.
pub fn check_tile(ctx: &Context, tile: OpId) -> Result<(), Diagnostic> {
    let machine = machine_of(ctx, tile);
    let mut labels = HashSet::default();
    for section in ipu::body_ops(ctx, tile) {
        for item in ipu::body_ops(ctx, section) {
            if ctx.name_str(item) == ipu::LABEL {
                if let Some(n) = ctx.attr(item, "sym_name").and_then(Attribute::as_str) {
                    labels.insert(n.to_string());
                }
            }
        }
    }
    for section in ipu::body_ops(ctx, tile) {
        let worker = ctx.attr(section, "kind").and_then(Attribute::as_str) == Some("worker");
        for item in ipu::body_ops(ctx, section) {
            match ctx.name_str(item) {
                ipu::INST => {
                    check_inst(ctx, item, worker, &machine, &labels)?;
                }
                ipu::BUNDLE => {
                    if !worker {
                        return Err(Diagnostic::op_error(ctx, item, "bundles are worker-only: the supervisor has no auxiliary pipeline (put the bundle in a worker section)"));
                    }
                    let insts = ipu::body_ops(ctx, item);
                    for (k, &inst) in insts.iter().enumerate() {
                        let d = check_inst(ctx, inst, worker, &machine, &labels)?;
                        match (k, d.slot) {
                            (0, SlotClass::Aux) => return Err(Diagnostic::op_error(ctx, inst, format!("`{}` is an auxiliary-pipeline instruction and cannot be the first (main) half of a bundle", d.mnemonic))),
                            (1, SlotClass::Main) => return Err(Diagnostic::op_error(ctx, inst, format!("`{}` is a main-pipeline instruction and cannot be the second (auxiliary) half of a bundle", d.mnemonic))),
                            _ => {}
                        }
                    }
                }
                ipu::DIRECTIVE => {
                    for o in ipu::operands_of(ctx, item) {
                        check_symbol(ctx, item, &o, &labels, true)?;
                    }
                }
                _ => {}
            }
        }
    }
    Ok(())
}

fn check_symbol(
    ctx: &Context,
    op: OpId,
    o: &Operand,
    labels: &HashSet<String>,
    in_directive: bool,
) -> Result<(), Diagnostic> {
    if let Operand::Symbol(s) = o {
        // `.stack supervisor|worker, ...` names a context, not a symbol.
        let context_word = in_directive && (s == "supervisor" || s == "worker");
        if !labels.contains(s) && predefined_symbol(s).is_none() && !context_word {
            return Err(Diagnostic::op_error(
                ctx,
                op,
                format!("symbol @{s} is neither a label of this tile nor an assembler constant"),
            ));
        }
    }
    Ok(())
}

/// The register and its number, when `o` is a register.
fn register(o: &Operand) -> Option<(RegFile, u8, Option<u8>, bool)> {
    match o {
        Operand::Reg(r) => {
            let (file, n) = parse_register(&r.name)?;
            let last = if r.name == "azeros" { Some(15) } else { r.last };
            Some((file, n, last, r.inc))
        }
        _ => None,
    }
}

/// Whether operand `o` has the syntactic shape of `kind`.
fn matches_kind(kind: OperandKind, o: &Operand) -> bool {
    let reg = register(o);
    match kind {
        OperandKind::M => matches!(reg, Some((RegFile::M, _, None, false))),
        OperandKind::MInc => matches!(reg, Some((RegFile::M, _, None, true))),
        OperandKind::MPair => matches!(reg, Some((RegFile::M, lo, Some(h), false)) if h == lo + 1),
        OperandKind::MPairInc => {
            matches!(reg, Some((RegFile::M, lo, Some(h), true)) if h == lo + 1)
        }
        OperandKind::A => matches!(reg, Some((RegFile::A, _, None, false))),
        OperandKind::APair => matches!(reg, Some((RegFile::A, lo, Some(h), false)) if h == lo + 1),
        OperandKind::AQuad => matches!(reg, Some((RegFile::A, lo, Some(h), false)) if h == lo + 3),
        OperandKind::UImm(_) | OperandKind::SImm(_) | OperandKind::Target => {
            matches!(o, Operand::Imm(_) | Operand::Symbol(_) | Operand::Expr(_))
        }
        OperandKind::Csr | OperandKind::UCsr => matches!(
            o,
            Operand::Csr(_) | Operand::Imm(_) | Operand::Symbol(_) | Operand::Expr(_)
        ),
    }
}

/// The form of `mnemonic` whose operand kinds `operands` have, if any.
pub(crate) fn form_of(mnemonic: &str, operands: &[Operand]) -> Option<&'static InstrDesc> {
    forms_of(mnemonic).find(|f| {
        f.operands.len() == operands.len()
            && f.operands
                .iter()
                .zip(operands)
                .all(|(k, o)| matches_kind(*k, o))
    })
}

/// The instruction `mnemonic operands` for timing: its form, with register
/// and control-register numbers and literal immediates as written and
/// labels and expressions as 0 (register use and issue cycles do not
/// depend on them).
pub(crate) fn timing_instr(mnemonic: &str, operands: &[Operand]) -> Option<Instr> {
    let desc = form_of(mnemonic, operands)?;
    let values: Vec<i32> = desc
        .operands
        .iter()
        .zip(operands)
        .map(|(kind, o)| match (o, register(o)) {
            (_, Some((_, n, _, _))) => i32::from(n),
            (Operand::Csr(name), None) => {
                let space = if *kind == OperandKind::UCsr {
                    CsrSpace::Upper
                } else {
                    CsrSpace::Lower
                };
                csr_by_name(name, space).map_or(0, |c| i32::from(c.number))
            }
            (Operand::Imm(v), None) => *v as i32,
            _ => 0,
        })
        .collect();
    Some(Instr::new(desc.opcode, &values))
}

/// An operand kind as messages spell it, immediates with their width.
fn kind_text(k: OperandKind) -> String {
    match k {
        OperandKind::UImm(b) | OperandKind::SImm(b) => format!("{}{b}", k.syntax()),
        _ => k.syntax().to_string(),
    }
}

fn check_inst(
    ctx: &Context,
    op: OpId,
    worker: bool,
    machine: &MachineModel,
    labels: &HashSet<String>,
) -> Result<&'static InstrDesc, Diagnostic> {
    let mnemonic = ctx
        .attr(op, "mnemonic")
        .and_then(Attribute::as_str)
        .unwrap_or("");
    let operands = ipu::operands_of(ctx, op);
    for o in &operands {
        if let Operand::Reg(r) = o {
            if parse_register(&r.name).is_none() {
                return Err(Diagnostic::op_error(
                    ctx,
                    op,
                    format!("unknown register `${}`", r.name),
                ));
            }
        }
        check_symbol(ctx, op, o, labels, false)?;
    }
    let forms: Vec<&'static InstrDesc> = forms_of(mnemonic).collect();
    if forms.is_empty() {
        return Err(Diagnostic::op_error(
            ctx,
            op,
            format!("unknown instruction `{mnemonic}`"),
        ));
    }
    let Some(desc) = form_of(mnemonic, &operands) else {
        let list: Vec<String> = forms
            .iter()
            .map(|f| {
                let ks: Vec<String> = f.operands.iter().map(|k| kind_text(*k)).collect();
                format!("{mnemonic} {}", ks.join(", "))
                    .trim_end()
                    .to_string()
            })
            .collect();
        return Err(Diagnostic::op_error(
            ctx,
            op,
            format!(
                "operands do not match any form of `{mnemonic}`; its forms are: {}",
                list.join(" | ")
            ),
        ));
    };
    match (desc.context, worker) {
        (ContextClass::Worker, false) => {
            return Err(Diagnostic::op_error(
                ctx,
                op,
                format!(
                    "`{mnemonic}` is a worker instruction, not allowed in a supervisor section"
                ),
            ))
        }
        (ContextClass::Supervisor, true) => {
            return Err(Diagnostic::op_error(
                ctx,
                op,
                format!(
                    "`{mnemonic}` is a supervisor instruction, not allowed in a worker section"
                ),
            ))
        }
        _ => {}
    }
    if desc.needs_fp8() && !machine.has_fp8 {
        return Err(Diagnostic::op_error(
            ctx,
            op,
            format!(
                "`{mnemonic}` needs FP8 (ipu21); machine `{}` has none",
                machine.name
            ),
        ));
    }
    for (i, (kind, o)) in desc.operands.iter().zip(&operands).enumerate() {
        let value = match (o, register(o)) {
            (_, Some((_, n, _, _))) => Some(i64::from(n)),
            (Operand::Imm(v), None) => Some(*v),
            (Operand::Csr(name), None) => {
                let space = if *kind == OperandKind::UCsr {
                    CsrSpace::Upper
                } else {
                    CsrSpace::Lower
                };
                if csr_by_name(name, space).is_none() {
                    return Err(Diagnostic::op_error(
                        ctx,
                        op,
                        format!("unknown control register `${name}` for `{mnemonic}`"),
                    ));
                }
                None
            }
            _ => None,
        };
        if let Some(v) = value {
            if let Some(why) = misfit(*kind, v) {
                return Err(Diagnostic::op_error(
                    ctx,
                    op,
                    format!("operand #{i} of `{mnemonic}`: {why}"),
                ));
            }
        }
    }
    Ok(desc)
}
