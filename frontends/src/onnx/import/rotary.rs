//! `RotaryEmbedding` (opset 23), as its function body: the first
//! `rotary_embedding_dim` features of each head rotated pairwise by the
//! cached angles (picked by `position_ids` when given), the pairs being the
//! two halves or, with `interleaved`, neighbouring features.

use ipuc_dialects::nn::{BinaryKind, GatherOp};

use super::body::{Body, Built};
use super::{Importer, NodeResult};
use crate::onnx::Node;

/// The ops of this family.
pub(super) const OPS: &[&str] = &["RotaryEmbedding"];

pub(super) fn import(imp: &mut Importer<'_>, node: &Node) -> NodeResult {
    let mut b = Body::new(imp, node);
    rotary_embedding(&mut b).map(|v| vec![v])
}

fn rotary_embedding(b: &mut Body<'_, '_, '_>) -> Built {
    let x = b.input(0)?;
    let (cos_cache, sin_cache) = (b.input(1)?, b.input(2)?);
    let position_ids = b.optional_input(3)?;
    let shape = b.shape(x);
    // Work on [batch, seq, heads, head_size].
    let v = match shape[..] {
        [_, _, _, _] => b.transpose(x, &[0, 2, 1, 3])?,
        [batch, seq, hidden] => {
            let heads = b.node.int_attr("num_heads", 0)?;
            if heads < 1 || hidden % heads != 0 {
                return Err(b.error(format!(
                    "`num_heads` ({heads}) must divide the hidden size {hidden} of a 3-D input"
                )));
            }
            b.reshape(x, &[batch, seq, heads, hidden / heads])?
        }
        _ => {
            return Err(b.error(format!(
                "input must be [batch, heads, seq, head] or [batch, seq, hidden], not {shape:?}"
            )))
        }
    };
    let vs = b.shape(v);
    let head = vs[3];
    let rotary = match b.node.int_attr("rotary_embedding_dim", 0)? {
        0 => head,
        d if d > 0 && d <= head && d % 2 == 0 => d,
        d => {
            return Err(b.error(format!(
                "`rotary_embedding_dim` {d} must be even and at most the head size {head}"
            )))
        }
    };
    let half = rotary / 2;
    let (cos, sin) = match position_ids {
        Some(ids) => {
            let loc = Importer::loc(b.node);
            let c = GatherOp::build(b.imp.ctx, cos_cache, ids, 0, loc.clone());
            let c = b.imp.emit1(b.node, c)?;
            let s = GatherOp::build(b.imp.ctx, sin_cache, ids, 0, loc);
            (c, b.imp.emit1(b.node, s)?)
        }
        None => (cos_cache, sin_cache),
    };
    let mut angles = Vec::new();
    for t in [cos, sin] {
        let t = b.slice(t, 2, 0, half)?;
        angles.push(b.unsqueeze(t, &[2])?);
    }
    let (cos, sin) = (angles[0], angles[1]);
    let interleaved = b.node.int_attr("interleaved", 0)? != 0;
    let (x1, x2) = if interleaved {
        let even: Vec<i64> = (0..half).map(|i| 2 * i).collect();
        let odd: Vec<i64> = (0..half).map(|i| 2 * i + 1).collect();
        (b.gather(v, 3, &even)?, b.gather(v, 3, &odd)?)
    } else {
        (b.slice(v, 3, 0, half)?, b.slice(v, 3, half, rotary)?)
    };
    let c1 = b.binary(BinaryKind::Mul, cos, x1)?;
    let s2 = b.binary(BinaryKind::Mul, sin, x2)?;
    let real = b.binary(BinaryKind::Sub, c1, s2)?;
    let s1 = b.binary(BinaryKind::Mul, sin, x1)?;
    let c2 = b.binary(BinaryKind::Mul, cos, x2)?;
    let imag = b.binary(BinaryKind::Add, s1, c2)?;
    let rotated = if interleaved {
        let r = b.unsqueeze(real, &[4])?;
        let i = b.unsqueeze(imag, &[4])?;
        let pairs = b.concat(&[r, i], 4)?;
        b.reshape(pairs, &[vs[0], vs[1], vs[2], rotary])?
    } else {
        b.concat(&[real, imag], 3)?
    };
    let out = if rotary < head {
        let rest = b.slice(v, 3, rotary, head)?;
        b.concat(&[rotated, rest], 3)?
    } else {
        rotated
    };
    if shape.len() == 3 {
        b.reshape(out, &shape)
    } else {
        b.transpose(out, &[0, 2, 1, 3])
    }
}
