//! Selection ops built of `nn` index ops:
//!
//! - `TopK`: `k` rounds of `nn.argmax` (or `nn.argmin`) whose winners are
//!   then taken out of the running (replaced by the type's extreme value;
//!   when only such values remain, the first position not yet taken wins,
//!   which is the tie order ONNX asks for). Values are gathered from the
//!   input, so they are exact.
//! - `GatherND`: the index tuples flattened into positions of the data
//!   reshaped to `[batch * indexed, rest...]` (negative indices wrapped),
//!   then one `nn.gather`.

use ipuc_dialects::nn::elements::from_ints;
use ipuc_dialects::nn::{
    normalize_axis, ArgKind, ArgReduceOp, BinaryKind, CompareKind, GatherElementsOp, GatherOp,
};
use ipuc_ir::{Type, TypeKind, Value};

use super::body::{Body, Built};
use super::scatter::flat_positions;
use super::{Importer, NodeResult};
use crate::onnx::Node;

/// The ops of this family.
pub(super) const OPS: &[&str] = &["TopK", "GatherND"];

pub(super) fn import(imp: &mut Importer<'_>, node: &Node) -> NodeResult {
    let mut b = Body::new(imp, node);
    match node.op_type.as_str() {
        "TopK" => top_k(&mut b),
        _ => gather_nd(&mut b).map(|v| vec![v]),
    }
}

/// A rank-0 constant of integer type `elem` holding `value` exactly.
fn int_scalar(b: &mut Body<'_, '_, '_>, elem: &Type, value: i128) -> Built {
    let ty = Type::tensor(&[], elem.clone());
    let attr = from_ints(&ty, &[value])
        .ok_or_else(|| b.error(format!("cannot build a constant of type '{ty}'")))?;
    b.imp
        .constant(attr, Importer::loc(b.node))
        .map_err(|d| b.error(d.message))
}

/// The value no element can beat in the running for `largest` (the
/// smallest of the type) or for smallest (the largest).
pub(super) fn loser(b: &mut Body<'_, '_, '_>, like: Value, largest: bool) -> Built {
    let elem = b.element(like)?;
    if elem.is_float() {
        let inf = if largest {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        };
        return b.scalar_like(like, inf);
    }
    let bits = elem.int_or_float_bit_width().unwrap_or(64);
    let unsigned = matches!(
        elem.kind(),
        TypeKind::Integer {
            signedness: ipuc_ir::types::Signedness::Unsigned,
            ..
        }
    );
    let (lo, hi) = if unsigned {
        (0i128, (1i128 << bits) - 1)
    } else {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    };
    int_scalar(b, &elem, if largest { lo } else { hi })
}

/// `0..n` laid along `axis` of a rank-`rank` tensor (i64).
fn positions(b: &mut Body<'_, '_, '_>, n: i64, axis: usize, rank: usize) -> Built {
    let mut shape = vec![1i64; rank];
    shape[axis] = n;
    let values: Vec<f64> = (0..n).map(|i| i as f64).collect();
    b.constant(&shape, &Type::i64(), &values)
}

fn arg(b: &mut Body<'_, '_, '_>, kind: ArgKind, x: Value, axis: usize) -> Built {
    let state = ArgReduceOp::build(
        b.imp.ctx,
        kind,
        x,
        axis as i64,
        true,
        false,
        Importer::loc(b.node),
    );
    b.imp.emit1(b.node, state)
}

fn gather_elements(b: &mut Body<'_, '_, '_>, x: Value, idx: Value, axis: usize) -> Built {
    let state = GatherElementsOp::build(b.imp.ctx, x, idx, axis as i64, Importer::loc(b.node));
    b.imp.emit1(b.node, state)
}

fn top_k(b: &mut Body<'_, '_, '_>) -> NodeResult {
    let x = b.input(0)?;
    let k = match b.imp.const_ints(b.node, 1, "k")?[..] {
        [k] if k >= 0 => k,
        ref other => {
            return Err(b.error(format!(
                "`k` must be one non-negative integer, not {other:?}"
            )))
        }
    };
    let shape = b.shape(x);
    let rank = shape.len();
    let axis = normalize_axis(b.node.int_attr("axis", -1)?, rank).map_err(|m| b.error(m))?;
    let n = shape[axis];
    if k > n {
        return Err(b.error(format!("`k` = {k} exceeds the axis size {n}")));
    }
    let largest = b.node.int_attr("largest", 1)? != 0;
    let kind = if largest { ArgKind::Max } else { ArgKind::Min };
    let fill = loser(b, x, largest)?;
    let at = positions(b, n, axis, rank)?;
    let (zero, one) = (
        b.constant(&[], &Type::i64(), &[0.0])?,
        b.constant(&[], &Type::i64(), &[1.0])?,
    );
    let mut running = x;
    let none = b.compare(CompareKind::Less, at, zero)?;
    let mut taken = b.expand(none, &shape)?;
    let (mut values, mut indices) = (Vec::new(), Vec::new());
    for _ in 0..k {
        let mut idx = arg(b, kind, running, axis)?;
        // Landing on a taken position means only losers remain: take the
        // first position still free instead.
        let taken_i64 = b.select(taken, one, zero)?;
        let free = b.binary(BinaryKind::Sub, one, taken_i64)?;
        let first_free = arg(b, ArgKind::Max, free, axis)?;
        let landed = gather_elements(b, taken_i64, idx, axis)?;
        let collided = b.compare(CompareKind::Equal, landed, one)?;
        idx = b.select(collided, first_free, idx)?;
        values.push(gather_elements(b, x, idx, axis)?);
        indices.push(idx);
        let hit = b.compare(CompareKind::Equal, at, idx)?;
        taken = b.binary(BinaryKind::Or, taken, hit)?;
        running = b.select(hit, fill, running)?;
    }
    if k == 0 {
        let mut empty = shape.clone();
        empty[axis] = 0;
        let v = b.constant(&empty, &b.element(x)?, &[])?;
        let i = b.constant(&empty, &Type::i64(), &[])?;
        return Ok(vec![v, i]);
    }
    let values = b.concat(&values, axis as i64)?;
    let indices = b.concat(&indices, axis as i64)?;
    Ok(vec![values, indices])
}

fn gather_nd(b: &mut Body<'_, '_, '_>) -> Built {
    let (data, indices) = (b.input(0)?, b.input(1)?);
    let (ds, is) = (b.shape(data), b.shape(indices));
    let batch = b.node.int_attr("batch_dims", 0)? as usize;
    let depth = *is
        .last()
        .ok_or_else(|| b.error("indices must have rank >= 1"))? as usize;
    if batch >= is.len() || batch + depth > ds.len() || ds[..batch] != is[..batch] {
        return Err(b.error(format!(
            "indices {is:?} with batch_dims {batch} do not index data {ds:?}"
        )));
    }
    let indexed = &ds[batch..batch + depth];
    let rest = &ds[batch + depth..];
    let count: i64 = indexed.iter().product();
    let batches: i64 = ds[..batch].iter().product();
    // Flat position of each index tuple: negatives wrapped, then strided.
    let idx = b.cast(indices, &Type::i64())?;
    let dims: Vec<f64> = indexed.iter().map(|&d| d as f64).collect();
    let dims = b.constant(&[depth as i64], &Type::i64(), &dims)?;
    let zero = b.constant(&[], &Type::i64(), &[0.0])?;
    let negative = b.compare(CompareKind::Less, idx, zero)?;
    let wrapped = b.binary(BinaryKind::Add, idx, dims)?;
    let idx = b.select(negative, wrapped, idx)?;
    let mut flat = flat_positions(b, idx, indexed, is.len() as i64 - 1)?;
    if batch > 0 {
        // Each batch element reads its own block of `count` rows.
        let mut shape = is[..is.len() - 1].to_vec();
        for d in shape.iter_mut().skip(batch) {
            *d = 1;
        }
        let inner: i64 = shape.iter().product::<i64>() / batches.max(1);
        let offsets: Vec<f64> = (0..batches)
            .flat_map(|n| std::iter::repeat_n((n * count) as f64, inner as usize))
            .collect();
        let offsets = b.constant(&shape, &Type::i64(), &offsets)?;
        flat = b.binary(BinaryKind::Add, flat, offsets)?;
    }
    let mut rows = vec![batches * count];
    rows.extend_from_slice(rest);
    let table = b.reshape(data, &rows)?;
    let state = GatherOp::build(b.imp.ctx, table, flat, 0, Importer::loc(b.node));
    b.imp.emit1(b.node, state)
}
