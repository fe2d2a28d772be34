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
//!
//! Launches of one *shape* share their code. Codelets read their addresses
//! and counts from the vertex state, so two launches of one codelet with
//! other tensors usually differ only in the `.word`s after the label
//! `{tag}_vertex_state` ([`VERTEX_STATE_SUFFIX`]); everything else they emit
//! (supervisor `main`, worker code, constant tables) is the launch's shape.
//! The first instance of a shape on a tile keeps all of it; a later one
//! keeps only its own `main` (renamed to it, its worker entry the first
//! instance's) and its vertex states, and the rest of what it emitted is
//! erased. A tile that runs fifty reduction adds thus holds one copy of the
//! add's worker code. Whether two launches share is decided on what they
//! emitted, so a codelet that bakes an address into its code simply gets a
//! shape of its own; a worker that names its own vertex states by label
//! (instead of `$mvertex_base`) is never shared.

use rustc_hash::FxHashMap as HashMap;

use ipuc_dialects::ipu::{self, Operand, SectionKind};
use ipuc_ipu_arch::pipeline::reg_use;
use ipuc_ipu_arch::registers::LR;
use ipuc_ipu_arch::MachineModel;
use ipuc_ir::{AttrKind, Attribute, Context, OpId};

use super::emitter::{inst, op, Emitter};
use super::launch::VERTEX_STATE_SUFFIX;
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
    emit_instance(e, name, codelet).map(|(counts, _)| counts)
}

/// What an instance left on its tile: the sections it kept (in order),
/// its launch's shape, and the earlier instance whose code it shares.
/// The same codelet emitted under the same name leaves the same sections
/// whenever the same instance holds its shape's code
/// ([`super::instance_memo`] copies them instead of emitting again).
pub(super) struct InstanceParts {
    /// The sections kept on the tile, in order.
    pub sections: Vec<OpId>,
    /// The launch's shape (`None`: its code is never shared).
    pub shape: Option<ShapeKey>,
    /// The instance holding the shape's code, when it is an earlier one.
    pub holder: Option<String>,
}

/// [`emit_subroutine`], also returning what the instance left.
pub(super) fn emit_instance<C: Codelet>(
    e: &mut Emitter,
    name: &str,
    codelet: &C,
) -> Result<(C::Counts, InstanceParts), CodeletError> {
    let before = e.tile_ops().len();
    let counts = codelet.emit(e)?;
    let sections = e.tile_ops()[before..].to_vec();
    let shape = launch_shape(e.context(), &sections);
    let first = shape
        .as_ref()
        .and_then(|s| e.shared_launch(&s.key))
        .map(str::to_string);
    let ctx = e.context();
    let defined = defined_labels(ctx, &sections);
    let instance = match (first, shape) {
        (Some(first), Some(shape)) => {
            // Labels of the kept parts are the instance's, those of the
            // erased code the first instance's.
            let kept = keep_own_parts(ctx, &sections, &shape);
            let own = defined_labels(ctx, &kept);
            let labels = defined
                .into_iter()
                .map(|l| {
                    let holder = if own.contains(&l) { name } else { &first };
                    let renamed = instance_label(&l, holder);
                    (l, renamed)
                })
                .collect::<HashMap<_, _>>();
            rename_instance(ctx, &kept, name, &labels)?;
            InstanceParts {
                sections: kept,
                shape: Some(shape.key),
                holder: Some(first),
            }
        }
        (None, shape) => {
            let labels = defined
                .into_iter()
                .map(|l| {
                    let renamed = instance_label(&l, name);
                    (l, renamed)
                })
                .collect::<HashMap<_, _>>();
            rename_instance(ctx, &sections, name, &labels)?;
            let shape = shape.map(|s| s.key);
            if let Some(s) = &shape {
                e.record_launch(s.clone(), name);
            }
            InstanceParts {
                sections,
                shape,
                holder: None,
            }
        }
        (Some(_), None) => unreachable!("a shared launch has a shape"),
    };
    Ok((counts, instance))
}

/// What a launch emitted, apart from its vertex states: each section's
/// name and kind, each op's kind and attributes, the vertex states'
/// `.word`s by their count only. The attributes are compared by value (and
/// mostly by pointer: the emitter shares them).
pub type ShapeKey = Vec<(u8, Option<Attribute>)>;

/// A launch's shape and where its vertex states are.
struct LaunchShape {
    /// The shape.
    key: ShapeKey,
    /// The label of the vertex states (before renaming).
    state_label: String,
    /// The section holding it.
    state_section: OpId,
}

fn label_of(ctx: &Context, o: OpId) -> Option<&str> {
    if ctx.name_str(o) == ipu::LABEL {
        ctx.attr(o, "sym_name").and_then(Attribute::as_str)
    } else {
        None
    }
}

fn is_directive(ctx: &Context, o: OpId, name: &str) -> bool {
    ctx.name_str(o) == ipu::DIRECTIVE
        && ctx.attr(o, "name").and_then(Attribute::as_str) == Some(name)
}

/// The shape of the launch emitted as `sections`, or `None` when it has
/// no vertex states at a `{tag}_vertex_state` label or names them from
/// outside its supervisor `main` (a worker that does would read the first
/// instance's states).
fn launch_shape(ctx: &Context, sections: &[OpId]) -> Option<LaunchShape> {
    let mut key = ShapeKey::new();
    let mut state: Option<(String, OpId)> = None;
    let mut main_section = None;
    for &s in sections {
        key.push((0, ctx.attr(s, "name").cloned()));
        key.push((1, ctx.attr(s, "kind").cloned()));
        let mut in_state = false;
        for o in ipu::body_ops(ctx, s) {
            if let Some(label) = label_of(ctx, o) {
                if label == "main" {
                    main_section = Some(s);
                }
                in_state = label.ends_with(VERTEX_STATE_SUFFIX);
                if in_state {
                    if state.is_some() {
                        return None;
                    }
                    state = Some((label.to_string(), s));
                }
                key.push((2, ctx.attr(o, "sym_name").cloned()));
                continue;
            }
            if in_state && is_directive(ctx, o, "word") {
                let n = ctx
                    .attr(o, "args")
                    .and_then(Attribute::as_array)
                    .map_or(0, <[_]>::len);
                key.push((3, Some(Attribute::i64(n as i64))));
                continue;
            }
            in_state = false;
            let item = |o: OpId, key: &mut ShapeKey| {
                let tag = match ctx.name_str(o) {
                    ipu::INST => 4,
                    ipu::DIRECTIVE => 5,
                    _ => 6,
                };
                for a in ["mnemonic", "name", "operands", "args"] {
                    key.push((tag, ctx.attr(o, a).cloned()));
                }
            };
            if ctx.name_str(o) == ipu::BUNDLE {
                key.push((7, None));
                for inner in ipu::body_ops(ctx, o) {
                    item(inner, &mut key);
                }
            } else {
                item(o, &mut key);
            }
        }
    }
    let (state_label, state_section) = state?;
    // Only the supervisor `main` may name the vertex states.
    let mut named_elsewhere = false;
    walk(ctx, sections, &mut |s, o| {
        if Some(s) != main_section && names(ctx, o, &state_label) {
            named_elsewhere = true;
        }
    });
    (!named_elsewhere).then_some(LaunchShape {
        key,
        state_label,
        state_section,
    })
}

/// Whether op `o` names `label` in an operand.
fn names(ctx: &Context, o: OpId, label: &str) -> bool {
    let n = ctx.name_str(o);
    (n == ipu::INST || n == ipu::DIRECTIVE)
        && ipu::operands_of(ctx, o).iter().any(|x| match x {
            Operand::Symbol(s) => s == label,
            Operand::Expr(text) => text.contains(label),
            _ => false,
        })
}

/// Erases what a launch of an already emitted shape shares with the first
/// instance: every section but its supervisor `main`'s and its vertex
/// states', and in the states' section everything but the states (their
/// label, the `.word`s after it and the `.align` before it). Returns the
/// sections kept.
fn keep_own_parts(ctx: &mut Context, sections: &[OpId], shape: &LaunchShape) -> Vec<OpId> {
    let mut kept = Vec::new();
    for &s in sections {
        let ops = ipu::body_ops(ctx, s);
        let is_main = ops.iter().any(|&o| {
            ctx.name_str(o) == ipu::LABEL
                && string_attr(ctx, o, "sym_name").as_deref() == Some("main")
        });
        if is_main {
            kept.push(s);
        } else if s == shape.state_section {
            let at = ops
                .iter()
                .position(|&o| {
                    ctx.name_str(o) == ipu::LABEL
                        && string_attr(ctx, o, "sym_name").as_deref() == Some(&shape.state_label)
                })
                .expect("the state section holds the state label");
            let words = ops[at + 1..]
                .iter()
                .take_while(|&&o| {
                    ctx.name_str(o) == ipu::DIRECTIVE
                        && string_attr(ctx, o, "name").as_deref() == Some("word")
                })
                .count();
            let align = at > 0
                && ctx.name_str(ops[at - 1]) == ipu::DIRECTIVE
                && string_attr(ctx, ops[at - 1], "name").as_deref() == Some("align");
            let first = if align { at - 1 } else { at };
            for (i, &o) in ops.iter().enumerate() {
                if i < first || i > at + words {
                    ctx.erase_op(o);
                }
            }
            kept.push(s);
        } else {
            ctx.erase_op(s);
        }
    }
    kept
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

pub(super) fn string_attr(ctx: &Context, op: OpId, key: &str) -> Option<String> {
    ctx.attr(op, key)
        .and_then(Attribute::as_str)
        .map(str::to_string)
}

/// Label `l` of a codelet as instance `name` spells it.
pub(crate) fn instance_label(l: &str, name: &str) -> String {
    match l.strip_prefix(".L") {
        Some(rest) => format!(".L{name}_{rest}"),
        None => format!("{name}_{l}"),
    }
}

/// The labels `sections` define.
pub(super) fn defined_labels(ctx: &Context, sections: &[OpId]) -> Vec<String> {
    let mut out = Vec::new();
    walk(ctx, sections, &mut |_, o| {
        if ctx.name_str(o) == ipu::LABEL {
            out.extend(string_attr(ctx, o, "sym_name"));
        }
    });
    out
}

/// Renames what instance `name` emitted (`sections`) as the module doc
/// says, each label as `labels` maps it.
fn rename_instance(
    ctx: &mut Context,
    sections: &[OpId],
    name: &str,
    labels: &HashMap<String, String>,
) -> Result<(), CodeletError> {
    let err = |m: String| CodeletError::new(format!("subroutine {name}"), m);
    let mut main_section = None;
    walk(ctx, sections, &mut |s, o| {
        if ctx.name_str(o) == ipu::LABEL
            && string_attr(ctx, o, "sym_name").as_deref() == Some("main")
        {
            main_section = Some(s);
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
    rename_labels(ctx, sections, labels);
    for &s in sections {
        if let Some(n) = string_attr(ctx, s, "name") {
            ctx.set_attr(s, "name", Attribute::string(&format!("{n}.{name}")));
        }
    }
    Ok(())
}

/// Renames every label `sections` define, and every use of one (operands
/// and assembler expressions), as `labels` maps them.
pub(super) fn rename_labels(
    ctx: &mut Context,
    sections: &[OpId],
    labels: &HashMap<String, String>,
) {
    let mut ops = Vec::new();
    walk(ctx, sections, &mut |_, o| ops.push(o));
    // Each operand list renamed once: the same calls and branches repeat
    // across a block's code, and the renamed lists are shared as the
    // emitter shares the originals.
    let mut renamed_lists: HashMap<Vec<Operand>, Attribute> = HashMap::default();
    for o in ops {
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
                // Most instructions name registers and numbers only.
                let names_any = ctx
                    .attr(o, key)
                    .and_then(Attribute::as_array)
                    .is_some_and(|xs| {
                        xs.iter().any(|a| {
                            matches!(
                                a.kind(),
                                AttrKind::SymbolRef { .. } | AttrKind::String { .. }
                            )
                        })
                    });
                if !names_any {
                    continue;
                }
                let list = ipu::operands_of(ctx, o);
                let renamed = match renamed_lists.get(&list) {
                    Some(r) => r.clone(),
                    None => {
                        let r = Attribute::array(
                            list.iter()
                                .map(|x| rename_operand(x.clone(), labels).to_attr())
                                .collect(),
                        );
                        renamed_lists.insert(list, r.clone());
                        r
                    }
                };
                ctx.set_attr(o, key, renamed);
            }
            _ => {}
        }
    }
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
        .into_iter()
        .collect();
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
