//! A codelet as a subroutine of a larger tile program.
//!
//! Every codelet emits a complete launch: a supervisor `main` that starts
//! its six workers and ends with `exitz`, the worker code, and the vertex
//! states, under labels derived from a fixed tag. A lowered tile runs many
//! launches in sequence (a product, then its bias and activation, then the
//! next product), some of the same codelet with other parameters, so each
//! instance is emitted under its own name: [`emit_subroutine`] lets the
//! codelet emit as usual and then rewrites what it emitted,
//!
//! - every label it defined (and every use of one, in operands and in
//!   assembler expressions) gets the instance name as a prefix: `main`
//!   becomes `NAME_main`, a local `.Lx` becomes `.LNAME_x`;
//! - every section it opened gets `.NAME` appended to its name;
//! - the supervisor's final `exitz $mzero` becomes `br $lr`, so the tile's
//!   program runs the launch with `call $lr, NAME_main`.
//!
//! The codelet's supervisor code must leave `$lr` alone; this is checked.
//! A call and its return each cost the supervisor's pipeline refill:
//! [`call_cycles`] is what an estimate adds per instance.

use std::collections::HashMap;

use ipuc_dialects::ipu::{self, Operand, SectionKind};
use ipuc_ipu_arch::pipeline::reg_use;
use ipuc_ipu_arch::registers::LR;
use ipuc_ipu_arch::MachineModel;
use ipuc_ir::{Attribute, Context, OpId};

use super::emitter::{inst, op, Emitter};
use super::program::Codelet;
use super::CodeletError;
use crate::emit::verify_isa::timing_instr;

/// The entry label of instance `name`.
pub fn entry(name: &str) -> String {
    format!("{name}_main")
}

/// Emits `codelet` as subroutine `name` (entry [`entry`]`(name)`) into the
/// tile of `e`, returning what its emission counted. Leaves `e` in the
/// codelet's last section: open a section before emitting more code.
pub fn emit_subroutine<C: Codelet>(
    e: &mut Emitter,
    name: &str,
    codelet: &C,
) -> Result<C::Counts, CodeletError> {
    let before = e.tile_ops().len();
    let counts = codelet.emit(e)?;
    let sections = e.tile_ops()[before..].to_vec();
    rename_instance(e.context(), &sections, name)?;
    Ok(counts)
}

/// Emits `call $lr, NAME_main` into the open supervisor section.
pub fn emit_call(e: &mut Emitter, name: &str) {
    e.solo(inst("call", [op::reg_lr(), op::sym(entry(name))]));
}

/// Cycles a call and its return add to an instance's own estimate: two
/// taken branches, each an issue and the pipeline refill.
pub fn call_cycles(machine: &MachineModel) -> u64 {
    2 * (1 + u64::from(machine.branch_refill_cycles))
}

/// Walks the ops of the sections, bundles included.
fn walk(ctx: &Context, sections: &[OpId], f: &mut impl FnMut(OpId, OpId)) {
    for &s in sections {
        for o in ipu::body_ops(ctx, s) {
            f(s, o);
            if ctx.name_str(o) == ipu::BUNDLE {
                for inner in ipu::body_ops(ctx, o) {
                    f(s, inner);
                }
            }
        }
    }
}

fn string_attr(ctx: &Context, op: OpId, key: &str) -> Option<String> {
    ctx.attr(op, key)
        .and_then(Attribute::as_str)
        .map(str::to_string)
}

fn rename_instance(ctx: &mut Context, sections: &[OpId], name: &str) -> Result<(), CodeletError> {
    let err = |m: String| CodeletError::new(format!("subroutine {name}"), m);
    let mut labels: HashMap<String, String> = HashMap::new();
    let mut main_section = None;
    walk(ctx, sections, &mut |s, o| {
        if ctx.name_str(o) == ipu::LABEL {
            if let Some(l) = string_attr(ctx, o, "sym_name") {
                if l == "main" {
                    main_section = Some(s);
                }
                let renamed = match l.strip_prefix(".L") {
                    Some(rest) => format!(".L{name}_{rest}"),
                    None => format!("{name}_{l}"),
                };
                labels.insert(l, renamed);
            }
        }
    });
    let main_section = main_section.ok_or_else(|| err("the codelet defines no `main`".into()))?;
    // The supervisor must not clobber the link register.
    let mut ops = Vec::new();
    walk(ctx, sections, &mut |s, o| ops.push((s, o)));
    for &(s, o) in &ops {
        let supervisor =
            string_attr(ctx, s, "kind").as_deref() == Some(SectionKind::Supervisor.as_str());
        if !supervisor || ctx.name_str(o) != ipu::INST {
            continue;
        }
        let mnemonic = string_attr(ctx, o, "mnemonic").unwrap_or_default();
        let writes =
            timing_instr(&mnemonic, &ipu::operands_of(ctx, o)).map_or(0, |i| reg_use(&i).writes);
        if writes & (1 << LR) != 0 {
            return Err(err(format!(
                "its supervisor code writes $lr (`{mnemonic}`), which the call needs to return"
            )));
        }
    }
    // The supervisor's last `exitz` returns instead.
    let exit = ipu::body_ops(ctx, main_section)
        .into_iter()
        .rev()
        .find(|&o| {
            ctx.name_str(o) == ipu::INST
                && string_attr(ctx, o, "mnemonic").as_deref() == Some("exitz")
        })
        .ok_or_else(|| err("its supervisor `main` has no `exitz`".into()))?;
    ctx.set_attr(exit, "mnemonic", Attribute::string("br"));
    ctx.set_attr(
        exit,
        "operands",
        Attribute::array(vec![op::reg_lr().to_attr()]),
    );
    for (_, o) in ops {
        match ctx.name_str(o) {
            n if n == ipu::LABEL => {
                if let Some(new) = string_attr(ctx, o, "sym_name").and_then(|l| labels.get(&l)) {
                    let new = new.clone();
                    ctx.set_attr(o, "sym_name", Attribute::string(&new));
                }
            }
            n if n == ipu::INST || n == ipu::DIRECTIVE => {
                let key = if n == ipu::DIRECTIVE {
                    "args"
                } else {
                    "operands"
                };
                let renamed: Vec<Attribute> = ipu::operands_of(ctx, o)
                    .into_iter()
                    .map(|x| rename_operand(x, &labels).to_attr())
                    .collect();
                ctx.set_attr(o, key, Attribute::array(renamed));
            }
            _ => {}
        }
    }
    for &s in sections {
        if let Some(n) = string_attr(ctx, s, "name") {
            ctx.set_attr(s, "name", Attribute::string(&format!("{n}.{name}")));
        }
    }
    Ok(())
}

fn rename_operand(x: Operand, labels: &HashMap<String, String>) -> Operand {
    match x {
        Operand::Symbol(s) => Operand::Symbol(labels.get(&s).cloned().unwrap_or(s)),
        Operand::Expr(text) => Operand::Expr(rename_in_expression(&text, labels)),
        other => other,
    }
}

/// Replaces every identifier of `text` (letters, digits, `_`, `.`, `$`, not
/// starting with a digit) that `labels` renames.
fn rename_in_expression(text: &str, labels: &HashMap<String, String>) -> String {
    let ident = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '$');
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if ident(c) && !c.is_ascii_digit() {
            let end = rest.find(|c: char| !ident(c)).unwrap_or(rest.len());
            let word = &rest[..end];
            out.push_str(labels.get(word).map_or(word, String::as_str));
            rest = &rest[end..];
        } else if c.is_ascii_digit() {
            // A number (including hex such as 0x1f) is never a label.
            let end = rest.find(|c: char| !ident(c)).unwrap_or(rest.len());
            out.push_str(&rest[..end]);
            rest = &rest[end..];
        } else {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions_rename_whole_identifiers_only() {
        let labels: HashMap<String, String> = [
            (".Lx_end".to_string(), ".Lsub_x_end".to_string()),
            (".Lx_start".to_string(), ".Lsub_x_start".to_string()),
            ("main".to_string(), "sub_main".to_string()),
        ]
        .into();
        assert_eq!(
            rename_in_expression("(.Lx_end - .Lx_start)/8 - 1", &labels),
            "(.Lsub_x_end - .Lsub_x_start)/8 - 1"
        );
        assert_eq!(rename_in_expression(". - main", &labels), ". - sub_main");
        // A longer identifier that starts with a label name is another name.
        assert_eq!(
            rename_in_expression("mainly + 0x1f", &labels),
            "mainly + 0x1f"
        );
    }
}
