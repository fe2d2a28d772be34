//! Step 2 of assembling: every item to bytes, once labels have addresses.
//!
//! An instruction's form is chosen by its operands' syntax (register file,
//! pair or quad, post-increment, expression); its operand values are then
//! evaluated, range-checked and encoded. Worker/supervisor context, FP8
//! availability, bundle slots and the `rpt` body rules (8-byte aligned,
//! bundles only, no control or system instructions) are checked here.

use std::collections::BTreeMap;

use super::error::{Diag, Pos};
use super::layout::{ItemKind, Layout};
use super::syntax::{Expr, Operand, ParsedInstr};
use super::AsmOptions;
use crate::csr::{csr_by_name, CsrSpace};
use crate::encoding::{encode, misfit, Instr, MAX_OPERANDS};
use crate::image::ContextKind;
use crate::isa::{forms_of, ContextClass, InstrDesc, Opcode, OperandKind, SlotClass};
use crate::registers::RegFile;

/// Symbol values and the address of the statement being evaluated.
pub(super) struct Ctx<'a> {
    pub(super) symbols: &'a BTreeMap<String, i64>,
    pub(super) here: i64,
}

/// A code unit at an address: (address, bytes, is a bundle, allowed in a `rpt` body).
type CodeUnit = (u32, u32, bool, bool);

/// The bytes of every section of `layout` (indexed like `layout.sections`).
pub(super) fn encode_items(
    layout: &Layout,
    symbols: &BTreeMap<String, i64>,
    opts: &AsmOptions,
    diag: &mut Diag,
) -> Vec<Vec<u8>> {
    let sections = &layout.sections;
    let mut bytes: Vec<Vec<u8>> = sections
        .iter()
        .map(|s| vec![0u8; s.size as usize])
        .collect();
    let mut code_units: Vec<CodeUnit> = Vec::new();
    let mut rpts: Vec<(u32, i64, Pos)> = Vec::new();
    // Supervisor instructions by address, for the pipeline check.
    let mut supervisor: Vec<(u32, Instr, Pos)> = Vec::new();
    for item in &layout.items {
        let sec = &sections[item.section];
        let addr = sec.address + item.offset;
        let ctx = Ctx {
            symbols,
            here: i64::from(addr),
        };
        let out = &mut bytes[item.section][item.offset as usize..];
        match &item.kind {
            ItemKind::Zeros => {}
            ItemKind::NopPad(n) => {
                let nop = encode(&Instr::new(Opcode::Nop, &[]), false);
                for k in 0..(*n / 4) as usize {
                    out[k * 4..k * 4 + 4].copy_from_slice(&nop.to_le_bytes());
                    code_units.push((addr + k as u32 * 4, 4, false, true));
                    if item.mode == ContextKind::Supervisor {
                        let nop = Instr::new(Opcode::Nop, &[]);
                        supervisor.push((addr + k as u32 * 4, nop, item.pos));
                    }
                }
            }
            ItemKind::Words(ws) => {
                for (k, (e, p)) in ws.iter().enumerate() {
                    if let Some(v) = eval_reported(e, *p, &ctx, diag) {
                        if !(-(1i64 << 31)..(1i64 << 32)).contains(&v) {
                            diag.error(*p, format!("value {v} does not fit in 32 bits"));
                        }
                        out[k * 4..k * 4 + 4].copy_from_slice(&(v as u32).to_le_bytes());
                    }
                }
            }
            ItemKind::Instr(pi) => {
                if let Some((instr, desc)) = encode_operands(pi, &ctx, item.mode, opts, diag) {
                    out[..4].copy_from_slice(&encode(&instr, false).to_le_bytes());
                    if item.mode == ContextKind::Supervisor {
                        supervisor.push((addr, instr, pi.pos));
                    }
                    code_units.push((addr, 4, false, desc.allowed_in_rpt()));
                    if matches!(desc.opcode, Opcode::Rpt | Opcode::RptImm) {
                        rpts.push((addr + 4, i64::from(instr.ops[1]), pi.pos));
                    }
                }
            }
            ItemKind::Bundle(main, aux) => {
                if item.mode == ContextKind::Supervisor {
                    diag.error(item.pos, "bundles are worker-only: the supervisor has no auxiliary pipeline (use `.worker`)");
                }
                let a = encode_operands(main, &ctx, item.mode, opts, diag);
                let b = encode_operands(aux, &ctx, item.mode, opts, diag);
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
                        if matches!(da.opcode, Opcode::Rpt | Opcode::RptImm) {
                            rpts.push((addr + 8, i64::from(ia.ops[1]), main.pos));
                        }
                    }
                }
            }
        }
    }
    check_rpt_bodies(code_units, rpts, diag);
    super::stalls::warn_supervisor_stalls(&mut supervisor, &opts.machine, diag);
    bytes
}

/// `rpt` bodies: 8-byte aligned, bundles only, no control or system
/// instructions. `rpts` holds (body start, body size immediate, where).
fn check_rpt_bodies(mut code_units: Vec<CodeUnit>, rpts: Vec<(u32, i64, Pos)>, diag: &mut Diag) {
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

pub(super) fn eval_reported(e: &Expr, pos: Pos, ctx: &Ctx, diag: &mut Diag) -> Option<i64> {
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
        if let Some(why) = misfit(*kind, v) {
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
