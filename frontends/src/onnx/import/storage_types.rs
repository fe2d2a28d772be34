//! The storage-only element types (INT4, UINT4, INT2, UINT2, FLOAT4E2M1,
//! FLOAT8E8M0): ONNX defines no arithmetic on them, only conversions
//! (`Cast`, `CastLike`, `QuantizeLinear`, `DequantizeLinear`) and ops that move
//! elements without computing on them. A node of any other op that reads one
//! is refused at import, naming the node and the way out (cast first), rather
//! than computed with wrapped 4-bit arithmetic nobody specified.

use ipuc_ir::numeric::ElementKind;
use ipuc_ir::Type;

use super::constants::element_type;
use super::{error, ImportError};
use crate::onnx::Node;

/// The ops that accept storage-only element types: ONNX's type constraints for
/// INT4/UINT4/INT2/UINT2/FLOAT4E2M1/FLOAT8E8M0 (opset 21 to 26).
pub(super) const ACCEPTING_OPS: &[&str] = &[
    "Cast",
    "CastLike",
    "BitCast",
    "QuantizeLinear",
    "DequantizeLinear",
    "Constant",
    "ConstantOfShape",
    "Identity",
    "Reshape",
    "Shape",
    "Size",
    "Flatten",
    "Pad",
    "Squeeze",
    "Unsqueeze",
    "Transpose",
    "If",
    "Loop",
    "Scan",
];

/// The element kind of tensor type `ty` if it is a storage-only one.
pub(super) fn storage_only_kind(ty: &Type) -> Option<ElementKind> {
    let element = ty.element_type()?;
    ElementKind::ALL
        .into_iter()
        .filter(|k| k.is_storage_only())
        .find(|&k| element_type(k) == *element)
}

/// Refuses `node` if it reads input `i` of storage-only `kind` and its op is not
/// one of [`ACCEPTING_OPS`].
pub(super) fn check_input(node: &Node, i: usize, kind: ElementKind) -> Result<(), ImportError> {
    if ACCEPTING_OPS.contains(&node.op_type.as_str()) {
        return Ok(());
    }
    Err(error(
        node,
        format!(
            "input #{i} (`{}`) has element type {kind}, a storage format ONNX defines no {} \
             arithmetic on; Cast it to a wider type (e.g. int8 or float) first",
            node.inputs[i], node.op_type
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_storage_formats_are_storage_only() {
        assert_eq!(
            storage_only_kind(&Type::tensor(&[2], element_type(ElementKind::I4))),
            Some(ElementKind::I4)
        );
        assert_eq!(
            storage_only_kind(&Type::tensor(&[2], element_type(ElementKind::F8E8M0FNU))),
            Some(ElementKind::F8E8M0FNU)
        );
        assert_eq!(storage_only_kind(&Type::tensor(&[2], Type::int(8))), None);
        assert_eq!(storage_only_kind(&Type::tensor(&[2], Type::f32())), None);
    }
}
