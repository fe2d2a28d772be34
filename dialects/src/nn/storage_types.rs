//! The storage-only element types: `i4`, `ui4`, `i2`, `ui2`, `f4E2M1FN` and
//! `f8E8M0FNU` (ONNX's INT4, UINT4, INT2, UINT2, FLOAT4E2M1 and FLOAT8E8M0).
//! ONNX defines no arithmetic on them: they are converted with `nn.cast` and
//! moved by the ops that never compute on elements. Every other `nn` op
//! refuses them in verification, so no pass, folder or kernel has to decide
//! what 4-bit arithmetic would mean.

use ipuc_ir::types::FloatKind;
use ipuc_ir::{Context, OpId, Type};

use super::support::ShapeError;
use super::{
    BITCAST, CAST, CONCAT, CONSTANT, EXPAND, FLATTEN, GATHER, GATHER_ELEMENTS, IDENTITY, PAD,
    RESHAPE, SLICE, SPLIT, SQUEEZE, TILE, TRANSPOSE, UNSQUEEZE,
};

/// The `nn` ops that accept storage-only element types: the conversions and
/// the ops that only move elements.
pub const ACCEPTING_OPS: &[&str] = &[
    CAST,
    BITCAST,
    CONSTANT,
    IDENTITY,
    RESHAPE,
    FLATTEN,
    SQUEEZE,
    UNSQUEEZE,
    TRANSPOSE,
    EXPAND,
    TILE,
    PAD,
    CONCAT,
    SPLIT,
    SLICE,
    GATHER,
    GATHER_ELEMENTS,
];

/// True if `element` is a storage-only element type.
pub fn is_storage_only(element: &Type) -> bool {
    element.is_integer_of_width(2)
        || element.is_integer_of_width(4)
        || matches!(
            element.float_kind(),
            Some(FloatKind::F4E2M1FN | FloatKind::F8E8M0FNU)
        )
}

/// Refuses `op` (named `name`) if it is not one of [`ACCEPTING_OPS`] and an
/// operand or result has a storage-only element type.
pub(crate) fn check(ctx: &Context, op: OpId, name: &str) -> Result<(), ShapeError> {
    if ACCEPTING_OPS.contains(&name) {
        return Ok(());
    }
    let operands = ctx.operands(op).iter().map(|&v| ("operand", v));
    let results = ctx.results(op).iter().map(|&v| ("result", v));
    for (i, (what, v)) in operands.chain(results).enumerate() {
        let ty = ctx.value_type(v);
        if let Some(element) = ty.element_type().filter(|e| is_storage_only(e)) {
            let index = if what == "operand" {
                i
            } else {
                i - ctx.operands(op).len()
            };
            return Err(ShapeError::Invalid(format!(
                "{what} #{index} has element type '{element}', a storage format with no \
                 arithmetic; convert it with nn.cast first"
            )));
        }
    }
    Ok(())
}
