//! Elementwise ops: arithmetic, logic, comparisons, `Where`, unary math,
//! `Cast` and `CastLike` (whose ONNX function body is a `Cast` to the
//! second input's element type), `BitCast` (`nn.bitcast`), `Identity`; `Sign`, `IsNaN` and `IsInf`
//! are built of comparisons and selects.

use ipuc_dialects::nn::{
    BinaryKind, BinaryOp, BitcastOp, CastOp, CompareKind, CompareOp, UnaryKind, UnaryOp, WhereOp,
};
use ipuc_ir::numeric::E8M0Rounding;
use ipuc_ir::{Attribute, Type, Value};

use super::body::Body;
use super::constants::onnx_type_attr;
use super::{error, ImportError, Importer, NodeResult};
use crate::onnx::Node;

/// The ops of this family.
pub(super) const OPS: &[&str] = &[
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Mod",
    "Pow",
    "Max",
    "Min",
    "Equal",
    "Less",
    "Greater",
    "LessOrEqual",
    "GreaterOrEqual",
    "And",
    "Or",
    "Xor",
    "Not",
    "Where",
    "Sqrt",
    "Reciprocal",
    "Exp",
    "Log",
    "Tanh",
    "Erf",
    "Neg",
    "Abs",
    "Relu",
    "Sigmoid",
    "Sin",
    "Cos",
    "Tan",
    "Asin",
    "Acos",
    "Atan",
    "Sinh",
    "Cosh",
    "Asinh",
    "Acosh",
    "Atanh",
    "Floor",
    "Ceil",
    "Round",
    "BitwiseAnd",
    "BitwiseOr",
    "BitwiseXor",
    "BitwiseNot",
    "BitShift",
    "Sign",
    "IsNaN",
    "IsInf",
    "Cast",
    "CastLike",
    "BitCast",
    "Identity",
];

fn binary_kind(op: &str) -> Option<BinaryKind> {
    Some(match op {
        "Add" => BinaryKind::Add,
        "Sub" => BinaryKind::Sub,
        "Mul" => BinaryKind::Mul,
        "Div" => BinaryKind::Div,
        "Mod" => BinaryKind::Mod,
        "Pow" => BinaryKind::Pow,
        "Max" => BinaryKind::Max,
        "Min" => BinaryKind::Min,
        "And" => BinaryKind::And,
        "Or" => BinaryKind::Or,
        "Xor" => BinaryKind::Xor,
        "BitwiseAnd" => BinaryKind::BitAnd,
        "BitwiseOr" => BinaryKind::BitOr,
        "BitwiseXor" => BinaryKind::BitXor,
        _ => return None,
    })
}

fn compare_kind(op: &str) -> Option<CompareKind> {
    Some(match op {
        "Equal" => CompareKind::Equal,
        "Less" => CompareKind::Less,
        "Greater" => CompareKind::Greater,
        "LessOrEqual" => CompareKind::LessEqual,
        "GreaterOrEqual" => CompareKind::GreaterEqual,
        _ => return None,
    })
}

fn unary_kind(op: &str) -> Option<UnaryKind> {
    Some(match op {
        "Sqrt" => UnaryKind::Sqrt,
        "Reciprocal" => UnaryKind::Reciprocal,
        "Exp" => UnaryKind::Exp,
        "Log" => UnaryKind::Log,
        "Tanh" => UnaryKind::Tanh,
        "Erf" => UnaryKind::Erf,
        "Neg" => UnaryKind::Neg,
        "Abs" => UnaryKind::Abs,
        "Relu" => UnaryKind::Relu,
        "Sigmoid" => UnaryKind::Sigmoid,
        "Not" => UnaryKind::Not,
        "BitwiseNot" => UnaryKind::BitNot,
        "Sin" => UnaryKind::Sin,
        "Cos" => UnaryKind::Cos,
        "Tan" => UnaryKind::Tan,
        "Asin" => UnaryKind::Asin,
        "Acos" => UnaryKind::Acos,
        "Atan" => UnaryKind::Atan,
        "Sinh" => UnaryKind::Sinh,
        "Cosh" => UnaryKind::Cosh,
        "Asinh" => UnaryKind::Asinh,
        "Acosh" => UnaryKind::Acosh,
        "Atanh" => UnaryKind::Atanh,
        "Floor" => UnaryKind::Floor,
        "Ceil" => UnaryKind::Ceil,
        "Round" => UnaryKind::Round,
        _ => return None,
    })
}

pub(super) fn import(imp: &mut Importer<'_>, node: &Node) -> NodeResult {
    let op = node.op_type.as_str();
    let loc = Importer::loc(node);
    if let Some(kind) = binary_kind(op) {
        return binary(imp, node, kind).map(|v| vec![v]);
    }
    if let Some(kind) = compare_kind(op) {
        let (a, b) = (imp.input(node, 0)?, imp.input(node, 1)?);
        let state = CompareOp::build(imp.ctx, kind, a, b, loc);
        return imp.emit(node, state);
    }
    if let Some(kind) = unary_kind(op) {
        let x = imp.input(node, 0)?;
        let state = UnaryOp::build(imp.ctx, kind, x, loc);
        return imp.emit(node, state);
    }
    match op {
        "Where" => {
            let (c, x, y) = (
                imp.input(node, 0)?,
                imp.input(node, 1)?,
                imp.input(node, 2)?,
            );
            let state = WhereOp::build(imp.ctx, c, x, y, loc);
            imp.emit(node, state)
        }
        "Cast" => {
            let x = imp.input(node, 0)?;
            let to = onnx_type_attr(node, "to")?;
            cast_node(imp, node, x, &to).map(|v| vec![v])
        }
        "BitCast" => {
            let x = imp.input(node, 0)?;
            let to = onnx_type_attr(node, "to")?;
            let state = BitcastOp::build(imp.ctx, x, &to, Importer::loc(node));
            imp.emit1(node, state).map(|v| vec![v])
        }
        "CastLike" => {
            let (x, like) = (imp.input(node, 0)?, imp.input(node, 1)?);
            let to = imp
                .ty(like)
                .element_type()
                .cloned()
                .ok_or_else(|| error(node, "input #1 (`target_type`) must be a tensor"))?;
            cast_node(imp, node, x, &to).map(|v| vec![v])
        }
        "BitShift" => {
            let kind = match node.string_attr("direction", "")? {
                "LEFT" => BinaryKind::ShiftLeft,
                "RIGHT" => BinaryKind::ShiftRight,
                other => {
                    return Err(error(
                        node,
                        format!("`direction` must be \"LEFT\" or \"RIGHT\", but is {other:?}"),
                    ))
                }
            };
            binary(imp, node, kind).map(|v| vec![v])
        }
        "Sign" | "IsNaN" | "IsInf" => {
            let mut b = Body::new(imp, node);
            match op {
                "Sign" => sign(&mut b),
                "IsNaN" => is_nan(&mut b),
                _ => is_inf(&mut b),
            }
            .map(|v| vec![v])
        }
        // Forwarding the value is what Identity means; no op is needed.
        "Identity" => Ok(vec![imp.input(node, 0)?]),
        other => unreachable!("`{other}` is not an elementwise op"),
    }
}

/// `Sign`: 1, -1 or 0 by the sign of `x` (`x * 0` for the rest keeps zeros
/// and NaNs as they are, as numpy's `sign`).
fn sign(b: &mut Body<'_, '_, '_>) -> Result<Value, ImportError> {
    let x = b.input(0)?;
    let (zero, one, minus_one) = (
        b.scalar_like(x, 0.0)?,
        b.scalar_like(x, 1.0)?,
        b.scalar_like(x, -1.0)?,
    );
    let positive = b.compare(CompareKind::Greater, x, zero)?;
    let negative = b.compare(CompareKind::Less, x, zero)?;
    let rest = b.binary(BinaryKind::Mul, x, zero)?;
    let below = b.select(negative, minus_one, rest)?;
    b.select(positive, one, below)
}

/// `IsNaN`: NaN is the only value unequal to itself.
fn is_nan(b: &mut Body<'_, '_, '_>) -> Result<Value, ImportError> {
    let x = b.input(0)?;
    let same = b.compare(CompareKind::Equal, x, x)?;
    b.unary(UnaryKind::Not, same)
}

/// `IsInf`: equal to +inf (`detect_positive`) or -inf (`detect_negative`).
fn is_inf(b: &mut Body<'_, '_, '_>) -> Result<Value, ImportError> {
    let x = b.input(0)?;
    let positive = b.node.int_attr("detect_positive", 1)? != 0;
    let negative = b.node.int_attr("detect_negative", 1)? != 0;
    let mut found = None;
    for (wanted, inf) in [(positive, f64::INFINITY), (negative, f64::NEG_INFINITY)] {
        if !wanted {
            continue;
        }
        let c = b.scalar_like(x, inf)?;
        let hit = b.compare(CompareKind::Equal, x, c)?;
        found = Some(match found {
            None => hit,
            Some(f) => b.binary(BinaryKind::Or, f, hit)?,
        });
    }
    match found {
        Some(v) => Ok(v),
        // Neither sign wanted: every element is false.
        None => {
            let shape = b.shape(x);
            let count: i64 = shape.iter().product();
            b.constant(&shape, &Type::i1(), &vec![0.0; count as usize])
        }
    }
}

/// Casts `x` to element type `to` (no op when it already has it).
pub(super) fn cast(
    imp: &mut Importer<'_>,
    node: &Node,
    x: Value,
    to: &ipuc_ir::Type,
    saturate: bool,
) -> Result<Value, super::ImportError> {
    cast_with_rounding(imp, node, x, to, saturate, E8M0Rounding::Up)
}

/// [`cast`] with `rounding` for FLOAT8E8M0 targets.
fn cast_with_rounding(
    imp: &mut Importer<'_>,
    node: &Node,
    x: Value,
    to: &ipuc_ir::Type,
    saturate: bool,
    rounding: E8M0Rounding,
) -> Result<Value, super::ImportError> {
    if imp.ty(x).element_type() == Some(to) {
        return Ok(x);
    }
    let state = CastOp::build_rounding(imp.ctx, x, to, saturate, rounding, Importer::loc(node));
    imp.emit1(node, state)
}

/// `Cast`/`CastLike` of `x` to `to`, with the node's `saturate` (opset 19+,
/// default 1; only 8-bit float targets use it) and `round_mode` (opset 24+,
/// default `up`; only FLOAT8E8M0 targets use it).
fn cast_node(
    imp: &mut Importer<'_>,
    node: &Node,
    x: Value,
    to: &ipuc_ir::Type,
) -> Result<Value, super::ImportError> {
    let saturate = node.int_attr("saturate", 1)? != 0;
    let mode = node.string_attr("round_mode", "up")?;
    let rounding = E8M0Rounding::from_onnx(mode).ok_or_else(|| {
        error(
            node,
            format!("'round_mode' must be \"up\", \"down\" or \"nearest\", but is \"{mode}\""),
        )
    })?;
    cast_with_rounding(imp, node, x, to, saturate, rounding)
}

/// A binary op; `Max`/`Min` take any number of operands (folded pairwise),
/// and `Pow`'s exponent is cast to the base's element type.
fn binary(
    imp: &mut Importer<'_>,
    node: &Node,
    kind: BinaryKind,
) -> Result<Value, super::ImportError> {
    let loc = Importer::loc(node);
    let operands: Vec<Value> = (0..node.inputs.len())
        .filter_map(|i| imp.optional_input(node, i).transpose())
        .collect::<Result<_, _>>()?;
    let variadic = matches!(kind, BinaryKind::Max | BinaryKind::Min);
    if operands.is_empty() || (!variadic && operands.len() != 2) {
        return Err(error(
            node,
            format!(
                "expects {} operands, but has {}",
                if variadic { "one or more" } else { "two" },
                operands.len()
            ),
        ));
    }
    let mut acc = operands[0];
    for &rhs in &operands[1..] {
        let mut rhs = rhs;
        if kind == BinaryKind::Pow {
            let base = imp.ty(acc).element_type().cloned();
            if let Some(base) = base {
                rhs = cast(imp, node, rhs, &base, true)?;
            }
        }
        let mut state = BinaryOp::build(imp.ctx, kind, acc, rhs, loc.clone());
        if kind == BinaryKind::Mod {
            // fmod = 0 on floats (Python's %) is valid since onnx/onnx#7520.
            let fmod = node.int_attr("fmod", 0)?;
            if !matches!(fmod, 0 | 1) {
                return Err(error(node, format!("`fmod` must be 0 or 1, but is {fmod}")));
            }
            state = state.map(|s| s.attr("fmod", Attribute::i64(fmod)));
        }
        acc = imp.emit1(node, state)?;
    }
    Ok(acc)
}
