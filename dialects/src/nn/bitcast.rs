//! `nn.bitcast {to}`: the operand's bits read as element type `to` (ONNX
//! `BitCast`, numpy's `view`). Both element types must be as wide as each
//! other; `i1` counts as the byte ONNX stores a bool in, and is a result
//! only of an `i1` operand (any other byte would be a bool that is neither
//! true nor false). The result has the operand's shape.
//!
//! Every layer reinterprets the same little-endian bytes: the folder wraps
//! the constant's bytes in the new type, the reference executor relabels
//! its buffer.

use ipuc_ir::attributes::{AttrKind, DenseElements};
use ipuc_ir::dialect::FoldResult;
use ipuc_ir::{Attribute, Context, Dialect, OpId, Type};

use super::elements::{dense_data, fold_target, unchanged_operand};
use super::support::*;

/// `nn.bitcast`.
pub const BITCAST: &str = "nn.bitcast";

/// The bits of one element of `e` as stored (a bool takes a byte; the 4- and
/// 2-bit types are their width, as ONNX's BitCast counts them: `i4` casts to
/// `ui4` or `f4E2M1FN`, not to `i8`), if `e` is an integer or float type.
fn stored_bits(e: &Type) -> Option<u32> {
    if !(e.is_integer() || e.is_float()) {
        return None;
    }
    e.int_or_float_bit_width()
        .map(|w| if w == 1 { 8 } else { w })
}

// ----- inference --------------------------------------------------------------

/// Result type of `nn.bitcast` to element type `to`: the operand shape.
pub fn infer_bitcast(x: &Type, to: &Type) -> InferResult<Type> {
    let (s, e) = ranked(x, "operand")?;
    let (Some(from_bits), Some(to_bits)) = (stored_bits(e), stored_bits(to)) else {
        return Err(shape_err!(
            "operand and 'to' must be integer or float types, but got '{e}' and '{to}'"
        ));
    };
    if from_bits != to_bits {
        return Err(shape_err!(
            "'{e}' ({from_bits} bits) and '{to}' ({to_bits} bits) must have the same width"
        ));
    }
    if to.is_integer_of_width(1) && !e.is_integer_of_width(1) {
        return Err(shape_err!(
            "a bitcast to 'i1' needs an 'i1' operand (a byte other than 0 or 1 is no bool), but \
             got '{e}'"
        ));
    }
    Ok(tensor(s, to))
}

pub(crate) fn infer_from_op(ctx: &Context, op: OpId) -> Option<InferResult<Vec<Type>>> {
    if ctx.name_str(op) != BITCAST {
        return None;
    }
    let to = ctx.attr(op, "to").and_then(|a| a.as_type()).cloned()?;
    let t = value_types(ctx, ctx.operands(op));
    Some(infer_bitcast(&t[0], &to).map(|t| vec![t]))
}

// ----- folding ----------------------------------------------------------------

fn fold_bitcast(ctx: &Context, op: OpId, consts: &[Option<Attribute>]) -> Option<Vec<FoldResult>> {
    if let Some(same) = unchanged_operand(ctx, op) {
        return Some(same);
    }
    let out = fold_target(ctx, op, 0)?;
    let d = dense_data(consts[0].as_ref()?)?;
    let e = DenseElements::new(out, d.data.clone(), d.splat).ok()?;
    Some(vec![FoldResult::Constant(Attribute::new(
        AttrKind::DenseElements(e),
    ))])
}

// ----- registration -------------------------------------------------------------

pub(crate) fn register(d: Dialect) -> Dialect {
    d.op(nn_op(
        BITCAST,
        "Reinterprets the operand's bits as element type 'to' (ONNX BitCast)",
    )
    .attribute(type_attr("to", false))
    .operands(&[one("operand", TENSOR)])
    .results(&[one("result", TENSOR)])
    .folder(fold_bitcast))
}

// ----- typed wrapper ------------------------------------------------------------

op_wrapper!(
    /// `nn.bitcast {to = T}`.
    BitcastOp,
    BITCAST
);

operand_accessors!(BitcastOp {
    /// The operand.
    operand = 0,
});

inferred_builder!(BitcastOp {
    /// A state for reading `x`'s bits as element type `to`.
    build(x; to: &Type => type_attribute) = infer_bitcast(x, to)
});

#[cfg(test)]
mod tests {
    use super::infer_bitcast;
    use ipuc_ir::Type;

    #[test]
    fn widths_must_match_and_bools_stay_bools() {
        let t = |e: Type| Type::tensor(&[3], e);
        assert_eq!(
            infer_bitcast(&t(Type::f32()), &Type::i32()).unwrap(),
            t(Type::i32())
        );
        assert!(infer_bitcast(&t(Type::i1()), &Type::int(8)).is_ok());
        assert!(infer_bitcast(&t(Type::f32()), &Type::i64()).is_err());
        assert!(infer_bitcast(&t(Type::int(8)), &Type::i1()).is_err());
        assert!(infer_bitcast(&t(Type::index()), &Type::i64()).is_err());
    }
}
