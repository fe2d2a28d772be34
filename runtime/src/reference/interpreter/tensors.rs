//! Conversions between IR types and attributes and host tensors: the element
//! kind of a tensor type, the check of a tensor against a declared type, and
//! the host tensor of a `dense<...>` or `dense_resource<...>` constant.

use std::sync::Arc;

use ipuc_ir::attributes::{AttrKind, DenseElements};
use ipuc_ir::numeric::ElementKind;
use ipuc_ir::types::{Signedness, DYNAMIC};
use ipuc_ir::{Attribute, FloatKind, Type, TypeKind};

use crate::reference::HostTensor;

/// The storage kind of an IR element type: `i1` is bool, signless and signed
/// integers are two's-complement signed, `index` is i64. `None` for types no
/// host tensor stores (other widths, complex, ...).
pub fn element_kind_of(ty: &Type) -> Option<ElementKind> {
    Some(match ty.kind() {
        TypeKind::Integer { width, signedness } => {
            let unsigned = *signedness == Signedness::Unsigned;
            match (width, unsigned) {
                (1, _) => ElementKind::Bool,
                (2, false) => ElementKind::I2,
                (4, false) => ElementKind::I4,
                (2, true) => ElementKind::U2,
                (4, true) => ElementKind::U4,
                (8, false) => ElementKind::I8,
                (16, false) => ElementKind::I16,
                (32, false) => ElementKind::I32,
                (64, false) => ElementKind::I64,
                (8, true) => ElementKind::U8,
                (16, true) => ElementKind::U16,
                (32, true) => ElementKind::U32,
                (64, true) => ElementKind::U64,
                _ => return None,
            }
        }
        TypeKind::Index => ElementKind::I64,
        TypeKind::Float(k) => match k {
            FloatKind::F16 => ElementKind::F16,
            FloatKind::BF16 => ElementKind::BF16,
            FloatKind::F32 => ElementKind::F32,
            FloatKind::F64 => ElementKind::F64,
            FloatKind::F8E4M3FN => ElementKind::F8E4M3FN,
            FloatKind::F8E5M2 => ElementKind::F8E5M2,
            FloatKind::F8E4M3FNUZ => ElementKind::F8E4M3FNUZ,
            FloatKind::F8E5M2FNUZ => ElementKind::F8E5M2FNUZ,
            FloatKind::F8E8M0FNU => ElementKind::F8E8M0FNU,
            FloatKind::F4E2M1FN => ElementKind::F4E2M1FN,
        },
        _ => return None,
    })
}

/// The element kind of a ranked tensor type, or a message saying why there is none.
pub(crate) fn tensor_kind(ty: &Type) -> Result<ElementKind, String> {
    let element = ty
        .element_type()
        .filter(|_| ty.is_tensor() && ty.shape().is_some())
        .ok_or_else(|| format!("type '{ty}' is not a ranked tensor"))?;
    element_kind_of(element).ok_or_else(|| {
        format!("element type '{element}' is not supported by the reference executor")
    })
}

/// Whether `t` has the kind and (where static) the shape of `ty`.
pub fn matches_type(t: &HostTensor, ty: &Type) -> bool {
    let Some(shape) = ty.shape() else {
        return false;
    };
    tensor_kind(ty) == Ok(t.kind)
        && shape.len() == t.rank()
        && shape
            .iter()
            .zip(&t.shape)
            .all(|(&d, &n)| d == DYNAMIC || d == n as i64)
}

/// Describes a host tensor as MLIR would spell its type (`tensor<2x3xf32>`).
pub fn describe(t: &HostTensor) -> String {
    let dims: String = t.shape.iter().map(|d| format!("{d}x")).collect();
    format!("tensor<{dims}{}>", t.kind)
}

/// The host tensor of a constant attribute. Dense data and resource blobs are
/// shared with the attribute, not copied; only a splat is expanded.
pub(crate) fn constant_tensor(value: &Attribute) -> Result<HostTensor, String> {
    let (ty, data, splat) = match value.kind() {
        AttrKind::DenseElements(d) => (&d.ty, d.data.clone(), d.splat),
        AttrKind::DenseResource { resource, ty } => {
            let blob = resource.blob().ok_or_else(|| {
                format!(
                    "resource '{}' has no data (the file's dialect_resources section does not define it)",
                    resource.name()
                )
            })?;
            (ty, blob.data.clone(), false)
        }
        _ => return Err(format!("value {value} is not a tensor constant")),
    };
    let kind = tensor_kind(ty)?;
    let shape: Vec<usize> = ty
        .shape()
        .filter(|_| ty.has_static_shape())
        .ok_or_else(|| format!("constant type '{ty}' must have a static shape"))?
        .iter()
        .map(|&d| d as usize)
        .collect();
    let count: usize = shape.iter().product();
    let size = kind.byte_size();
    // DenseElements stores integers in ceil(width / 8) bytes and floats in their
    // storage width: the same layout as host tensors.
    debug_assert_eq!(
        DenseElements::element_size(ty.element_type().expect("tensor type")),
        Some(size)
    );
    let data: Arc<[u8]> = if splat {
        if data.len() != size {
            return Err(format!(
                "splat constant of '{ty}' holds {} bytes",
                data.len()
            ));
        }
        data.iter().copied().cycle().take(count * size).collect()
    } else {
        if data.len() != count * size {
            return Err(format!(
                "constant of '{ty}' needs {} bytes, but its data has {}",
                count * size,
                data.len()
            ));
        }
        data
    };
    Ok(HostTensor::new(kind, shape, data))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn element_kinds_follow_mlir_spelling() {
        for kind in ElementKind::ALL {
            let mut ctx =
                ipuc_ir::Context::new(std::sync::Arc::new(ipuc_ir::DialectRegistry::new()));
            ctx.allow_unregistered = true;
            let src = format!("\"test.t\"() {{t = {} }} : () -> ()\n", kind.mlir_name());
            let parsed = ipuc_ir::parse_source(&mut ctx, "t.mlir", &src).unwrap();
            let op = ctx.collect_ops(parsed.module, ipuc_ir::WalkOrder::PreOrder)[1];
            let ty = ctx.attr(op, "t").and_then(|a| a.as_type()).unwrap().clone();
            assert_eq!(element_kind_of(&ty), Some(kind), "{kind}");
        }
        assert_eq!(element_kind_of(&Type::int(3)), None);
        assert_eq!(element_kind_of(&Type::index()), Some(ElementKind::I64));
    }
}
