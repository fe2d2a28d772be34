//! `Det` built of `nn` ops: the Laplace expansion along the rows, each minor
//! (the rows below, a subset of the columns) computed once and shared, so an
//! `n × n` matrix takes `n·2ⁿ⁻¹` products rather than `n!`. Batched over the
//! leading axes; the matrix size is static, and sizes up to
//! [`MAX_ORDER`] are expanded (the op count doubles with each).

use std::collections::HashMap;

use ipuc_dialects::nn::BinaryKind;
use ipuc_ir::Value;

use super::body::Body;
use super::{Importer, NodeResult};
use crate::onnx::Node;

/// The ops of this family.
pub(super) const OPS: &[&str] = &["Det"];

/// The largest matrix order expanded (2¹⁰ minors of the last rows).
const MAX_ORDER: usize = 10;

pub(super) fn import(imp: &mut Importer<'_>, node: &Node) -> NodeResult {
    let mut b = Body::new(imp, node);
    let x = b.input(0)?;
    let shape = b.shape(x);
    let rank = shape.len();
    if rank < 2 || shape[rank - 1] != shape[rank - 2] {
        return Err(b.error(format!(
            "the input {shape:?} must be square matrices [..., M, M]"
        )));
    }
    let n = shape[rank - 1] as usize;
    if n == 0 || n > MAX_ORDER {
        return Err(b.error(format!(
            "matrices of order {n} are not supported: ipuc expands determinants of order 1 to \
             {MAX_ORDER}"
        )));
    }
    if !b.element(x)?.is_float() {
        return Err(b.error("the input must be a floating-point tensor"));
    }
    let batch = shape[..rank - 2].to_vec();
    // Element (i, j) of every matrix, shaped as the batch.
    let element = |b: &mut Body<'_, '_, '_>, i: usize, j: usize| -> Result<Value, _> {
        let row = b.slice(x, rank as i64 - 2, i as i64, i as i64 + 1)?;
        let e = b.slice(row, rank as i64 - 1, j as i64, j as i64 + 1)?;
        b.reshape(e, &batch)
    };
    let mut elements = Vec::with_capacity(n * n);
    for i in 0..n {
        for j in 0..n {
            elements.push(element(&mut b, i, j)?);
        }
    }
    // minors[cols] = the determinant of the last |cols| rows restricted to
    // the columns in the bit set `cols`, built from the smallest up.
    let mut minors: HashMap<u32, Value> = HashMap::new();
    for size in 1..=n {
        let row = n - size;
        for cols in (0u32..1 << n).filter(|c| c.count_ones() as usize == size) {
            let mut sum: Option<Value> = None;
            for (position, j) in (0..n).filter(|&j| cols & (1 << j) != 0).enumerate() {
                let a = elements[row * n + j];
                let term = match minors.get(&(cols & !(1 << j))) {
                    Some(&minor) => b.binary(BinaryKind::Mul, a, minor)?,
                    None => a,
                };
                sum = Some(match sum {
                    None if position % 2 == 0 => term,
                    None => {
                        let zero = b.scalar_like(term, 0.0)?;
                        b.binary(BinaryKind::Sub, zero, term)?
                    }
                    Some(s) if position % 2 == 0 => b.binary(BinaryKind::Add, s, term)?,
                    Some(s) => b.binary(BinaryKind::Sub, s, term)?,
                });
            }
            minors.insert(cols, sum.expect("a non-empty column set"));
        }
    }
    Ok(vec![minors[&((1u32 << n) - 1)]])
}
