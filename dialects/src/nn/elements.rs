//! Reading and building constant tensors for the folders: element access
//! for `dense<...>` and `dense_resource<...>` values, construction from
//! computed values, and rearrangement by an index map (the shape ops).

use std::sync::Arc;

use ipuc_ir::attributes::{normalize_int, AttrKind, DenseElements};
use ipuc_ir::float_format;
use ipuc_ir::{Attribute, Type};

/// The largest constant (in elements) that folders compute: larger tensors
/// stay as ops so that folding never blows up the IR or the compile time.
pub const FOLD_ELEMENT_LIMIT: usize = 1 << 16;

/// The dense data of a constant attribute: `dense<...>` directly, or a
/// `dense_resource<...>` whose blob is attached and of the right size (the
/// bytes are shared, not copied).
pub fn dense_data(attr: &Attribute) -> Option<DenseElements> {
    match attr.kind() {
        AttrKind::DenseElements(d) => Some(d.clone()),
        AttrKind::DenseResource { resource, ty } => {
            let blob = resource.blob()?;
            DenseElements::new(ty.clone(), blob.data.clone(), false).ok()
        }
        _ => None,
    }
}

/// The element values of `d` as `f64` (floats) — `None` for integer data.
pub fn floats(d: &DenseElements) -> Option<Vec<f64>> {
    d.floats()
}

/// The element values of `d` as integers — `None` for float data.
pub fn ints(d: &DenseElements) -> Option<Vec<i128>> {
    if !(d.element_type().is_integer() || d.element_type().is_index()) {
        return None;
    }
    Some((0..d.len()).map(|i| d.int_at(i)).collect())
}

/// Builds dense elements from raw per-element bytes, as a splat when every
/// element is the same.
pub(crate) fn from_element_bytes(ty: &Type, bytes: Vec<u8>, size: usize) -> Option<Attribute> {
    let n = ty.num_elements()? as usize;
    let splat = n > 1 && bytes.chunks(size).all(|c| c == &bytes[..size]);
    let data: Arc<[u8]> = if splat {
        bytes[..size].into()
    } else {
        bytes.into()
    };
    DenseElements::new(ty.clone(), data, splat)
        .ok()
        .map(|d| Attribute::new(AttrKind::DenseElements(d)))
}

/// `dense<values> : ty` for a float element type (values are rounded to it).
pub fn from_floats(ty: &Type, values: &[f64]) -> Option<Attribute> {
    let kind = ty.element_type()?.float_kind()?;
    from_element_bytes(ty, float_format::encode_all(kind, values), kind.byte_size())
}

/// `dense<values> : ty` for an integer element type (values wrap to its width).
pub fn from_ints(ty: &Type, values: &[i128]) -> Option<Attribute> {
    let elem = ty.element_type()?;
    let size = DenseElements::element_size(elem)?;
    if !(elem.is_integer() || elem.is_index()) {
        return None;
    }
    let mut bytes = Vec::with_capacity(values.len() * size);
    for &v in values {
        bytes.extend_from_slice(&normalize_int(v, elem).to_le_bytes()[..size]);
    }
    from_element_bytes(ty, bytes, size)
}

/// A constant of type `ty` whose element `i` is element `source(i)` of `d`
/// (transpose, slice, gather, concat of one input, ...).
pub fn rearrange(
    d: &DenseElements,
    ty: &Type,
    source: impl Fn(usize) -> usize,
) -> Option<Attribute> {
    let n = ty.num_elements()? as usize;
    let size = DenseElements::element_size(d.element_type())?;
    if d.splat && n > 0 {
        // Every element is the same: the result is that element again.
        return DenseElements::new(ty.clone(), d.element_bytes(0).into(), n > 1)
            .ok()
            .map(|e| Attribute::new(AttrKind::DenseElements(e)));
    }
    let mut bytes = Vec::with_capacity(n * size);
    for i in 0..n {
        bytes.extend_from_slice(d.element_bytes(source(i)));
    }
    from_element_bytes(ty, bytes, size)
}

/// Row-major strides of a static shape.
pub fn strides(shape: &[i64]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1].max(0) as usize;
    }
    s
}

/// The multi-index of flat index `flat` in a row-major `shape`.
pub fn unravel(mut flat: usize, shape: &[i64]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        let n = shape[d].max(1) as usize;
        idx[d] = flat % n;
        flat /= n;
    }
    idx
}

/// For numpy broadcasting: the flat index in an operand of shape `from` that
/// feeds element `flat` of a result of shape `to`.
pub fn broadcast_source(flat: usize, to: &[i64], from: &[i64], from_strides: &[usize]) -> usize {
    let idx = unravel(flat, to);
    let offset = to.len() - from.len();
    let mut src = 0;
    for (d, &n) in from.iter().enumerate() {
        if n != 1 {
            src += idx[d + offset] * from_strides[d];
        }
    }
    src
}

/// The static type of result `i` of `op` if folding it stays within
/// [`FOLD_ELEMENT_LIMIT`] elements. Folders compute with index arithmetic
/// that trusts the op's types, so an op that does not verify is never folded.
pub(crate) fn fold_target(ctx: &ipuc_ir::Context, op: ipuc_ir::OpId, i: usize) -> Option<Type> {
    super::verify_op(ctx, op).ok()?;
    let ty = ctx.value_type(ctx.result(op, i)).clone();
    let n = ty.num_elements()? as usize;
    (n <= FOLD_ELEMENT_LIMIT).then_some(ty)
}

/// The fold of a one-operand op whose operand already has the result's
/// type (a cast, bitcast or view that changes nothing): the operand itself.
pub(crate) fn unchanged_operand(
    ctx: &ipuc_ir::Context,
    op: ipuc_ir::OpId,
) -> Option<Vec<ipuc_ir::dialect::FoldResult>> {
    let x = ctx.operand(op, 0);
    (ctx.value_type(x) == ctx.value_type(ctx.result(op, 0)))
        .then(|| vec![ipuc_ir::dialect::FoldResult::Value(x)])
}
