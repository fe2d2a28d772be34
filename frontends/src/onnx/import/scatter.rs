//! `ScatterElements` (and the deprecated `Scatter`) and `ScatterND`, built
//! of `nn` ops: every update is matched to every data position it could
//! target by comparing its (flattened) target index with the positions,
//! and the matches are combined with the data by the `reduction`: `none`
//! replaces (the sum of the one matching update: exact), `add` and `mul`
//! fold all matches in, `max` and `min` compare. The match tensor has one
//! axis per update and per target position, which suits the sizes these
//! ops have in inference graphs (caches and small index sets).

use ipuc_dialects::nn::{normalize_axis, BinaryKind, CompareKind, ReduceKind};
use ipuc_ir::{Type, Value};

use super::body::{Body, Built};
use super::NodeResult;
use crate::onnx::Node;

/// The ops of this family.
pub(super) const OPS: &[&str] = &["ScatterElements", "Scatter", "ScatterND"];

pub(super) fn import(imp: &mut super::Importer<'_>, node: &Node) -> NodeResult {
    let mut b = Body::new(imp, node);
    match node.op_type.as_str() {
        "ScatterND" => scatter_nd(&mut b),
        _ => scatter_elements(&mut b),
    }
    .map(|v| vec![v])
}

/// Combines `data` with the updates `upd` where `matches` (i1) holds;
/// `matches` and `upd` broadcast to a shape with one more axis than `data`,
/// the update axis `q`, which the reduction removes.
fn combine(b: &mut Body<'_, '_, '_>, data: Value, matches: Value, upd: Value, q: i64) -> Built {
    let reduction = b.node.string_attr("reduction", "none")?.to_string();
    let int = Type::i32();
    let (one_i, zero_i) = (
        b.constant(&[], &int, &[1.0])?,
        b.constant(&[], &int, &[0.0])?,
    );
    let counted = b.select(matches, one_i, zero_i)?;
    let count = b.reduce(ReduceKind::Sum, counted, Some(&[q]), false)?;
    let any = b.compare(CompareKind::Greater, count, zero_i)?;
    let masked =
        |b: &mut Body<'_, '_, '_>, neutral: Value| -> Built { b.select(matches, upd, neutral) };
    match reduction.as_str() {
        "none" | "add" => {
            let zero = b.scalar_like(data, 0.0)?;
            let m = masked(b, zero)?;
            let sum = b.reduce(ReduceKind::Sum, m, Some(&[q]), false)?;
            if reduction == "add" {
                b.binary(BinaryKind::Add, data, sum)
            } else {
                b.select(any, sum, data)
            }
        }
        "mul" => {
            let one = b.scalar_like(data, 1.0)?;
            let m = masked(b, one)?;
            let prod = b.reduce(ReduceKind::Prod, m, Some(&[q]), false)?;
            b.binary(BinaryKind::Mul, data, prod)
        }
        "max" | "min" => {
            let largest = reduction == "max";
            let neutral = super::selection::loser(b, data, largest)?;
            let m = masked(b, neutral)?;
            let (kind, pick) = if largest {
                (ReduceKind::Max, BinaryKind::Max)
            } else {
                (ReduceKind::Min, BinaryKind::Min)
            };
            let best = b.reduce(kind, m, Some(&[q]), false)?;
            let merged = b.binary(pick, data, best)?;
            b.select(any, merged, data)
        }
        other => Err(b.error(format!(
            "`reduction` \"{other}\" is not none, add, mul, max or min"
        ))),
    }
}

/// Indices with negative entries wrapped by `dims` (broadcast).
fn wrapped(b: &mut Body<'_, '_, '_>, indices: Value, dims: Value) -> Built {
    let idx = b.cast(indices, &Type::i64())?;
    let zero = b.constant(&[], &Type::i64(), &[0.0])?;
    let negative = b.compare(CompareKind::Less, idx, zero)?;
    let shifted = b.binary(BinaryKind::Add, idx, dims)?;
    b.select(negative, shifted, idx)
}

/// The row-major position within `dims` of each index tuple of `idx`
/// (along its axis `last`): the tuple's dot product with the strides.
pub(super) fn flat_positions(
    b: &mut Body<'_, '_, '_>,
    idx: Value,
    dims: &[i64],
    last: i64,
) -> Built {
    let depth = dims.len();
    let mut strides = vec![1i64; depth];
    for j in (0..depth.saturating_sub(1)).rev() {
        strides[j] = strides[j + 1] * dims[j + 1];
    }
    let strides: Vec<f64> = strides.iter().map(|&s| s as f64).collect();
    let strides = b.constant(&[depth as i64], &Type::i64(), &strides)?;
    let scaled = b.binary(BinaryKind::Mul, idx, strides)?;
    b.reduce(ReduceKind::Sum, scaled, Some(&[last]), false)
}

fn scatter_elements(b: &mut Body<'_, '_, '_>) -> Built {
    let (data, indices, updates) = (b.input(0)?, b.input(1)?, b.input(2)?);
    let (ds, is) = (b.shape(data), b.shape(indices));
    let rank = ds.len();
    let axis = normalize_axis(b.node.int_attr("axis", 0)?, rank).map_err(|m| b.error(m))?;
    if is.len() != rank || (0..rank).any(|d| d != axis && is[d] != ds[d]) {
        return Err(b.error(format!(
            "indices {is:?} must match data {ds:?} on every axis but {axis}"
        )));
    }
    // Move the axis last: data [..., D], indices and updates [..., U].
    let mut perm: Vec<i64> = (0..rank as i64).filter(|&a| a != axis as i64).collect();
    perm.push(axis as i64);
    let d = b.transpose(data, &perm)?;
    let i = b.transpose(indices, &perm)?;
    let u = b.transpose(updates, &perm)?;
    let n = ds[axis];
    let dims = b.constant(&[], &Type::i64(), &[n as f64])?;
    let i = wrapped(b, i, dims)?;
    let i = b.unsqueeze(i, &[rank as i64])?;
    let u = b.unsqueeze(u, &[rank as i64])?;
    let positions: Vec<f64> = (0..n).map(|p| p as f64).collect();
    let positions = b.constant(&[n], &Type::i64(), &positions)?;
    let matches = b.compare(CompareKind::Equal, i, positions)?;
    let out = combine(b, d, matches, u, rank as i64 - 1)?;
    let mut back = vec![0i64; rank];
    for (k, &p) in perm.iter().enumerate() {
        back[p as usize] = k as i64;
    }
    b.transpose(out, &back)
}

fn scatter_nd(b: &mut Body<'_, '_, '_>) -> Built {
    let (data, indices, updates) = (b.input(0)?, b.input(1)?, b.input(2)?);
    let (ds, is) = (b.shape(data), b.shape(indices));
    let depth = *is
        .last()
        .ok_or_else(|| b.error("indices must have rank >= 1"))? as usize;
    if depth > ds.len() {
        return Err(b.error(format!(
            "index tuples of {depth} exceed the data rank {}",
            ds.len()
        )));
    }
    let indexed = &ds[..depth];
    let rest = &ds[depth..];
    let rows: i64 = indexed.iter().product();
    let tuples: i64 = is[..is.len() - 1].iter().product();
    // Flat row of each index tuple.
    let dims: Vec<f64> = indexed.iter().map(|&x| x as f64).collect();
    let dims = b.constant(&[depth as i64], &Type::i64(), &dims)?;
    let idx = wrapped(b, indices, dims)?;
    let flat = flat_positions(b, idx, indexed, is.len() as i64 - 1)?;
    let flat = b.reshape(flat, &[tuples, 1])?;
    let positions: Vec<f64> = (0..rows).map(|p| p as f64).collect();
    let positions = b.constant(&[1, rows], &Type::i64(), &positions)?;
    let matches = b.compare(CompareKind::Equal, flat, positions)?;
    // matches [Q, P, 1...], updates [Q, 1, rest...], data [P, rest...].
    let mut mshape = vec![tuples, rows];
    mshape.extend(std::iter::repeat_n(1, rest.len()));
    let matches = b.reshape(matches, &mshape)?;
    let mut ushape = vec![tuples, 1];
    ushape.extend_from_slice(rest);
    let u = b.reshape(updates, &ushape)?;
    let mut dshape = vec![rows];
    dshape.extend_from_slice(rest);
    let d = b.reshape(data, &dshape)?;
    let out = combine(b, d, matches, u, 0)?;
    b.reshape(out, &ds)
}
