//! `ai.onnx.preview.FlexAttention` built of `nn` ops as its definition
//! computes it (`onnx/reference/ops/aionnx_preview/op_flex_attention.py`):
//! `softmax(score_mod(Q·Kᵀ·scale))`, then `prob_mod`, then `·V`, with
//! grouped-query heads repeated. Q and K are each scaled by `√scale` in the
//! input type; the softmax and the product with V run in
//! `softmax_precision` (default f32 for 16-bit inputs, else the input type).
//!
//! The modifiers `score_mod` and `prob_mod` are one-input, one-output
//! graphs: their nodes are imported inline with the graph's input bound to
//! the scores (or probabilities), like an `If` branch; names of the outer
//! scope are visible inside, as ONNX scoping says.

use ipuc_dialects::nn::BinaryKind;
use ipuc_ir::{Type, Value};

use super::attention::{share_kv_heads, softmax_precision};
use super::body::{Body, Built};
use super::{Importer, NodeResult};
use crate::onnx::{Attribute, Node};

/// The domain of this family's ops.
pub(super) const DOMAIN: &str = "ai.onnx.preview";

/// The ops of this family (in [`DOMAIN`]).
pub(super) const OPS: &[&str] = &["FlexAttention"];

pub(super) fn import(imp: &mut Importer<'_>, node: &Node) -> NodeResult {
    let mut b = Body::new(imp, node);
    let (q, k, v) = (b.input(0)?, b.input(1)?, b.input(2)?);
    let (qs, ks, vs) = (b.shape(q), b.shape(k), b.shape(v));
    if qs.len() != 4 || ks.len() != 4 || vs.len() != 4 {
        return Err(b.error(format!(
            "Q, K and V must be 4-D [B, H, S, D], but have shapes {qs:?}, {ks:?} and {vs:?}"
        )));
    }
    if ks[1] != vs[1] || ks[2] != vs[2] || qs[3] != ks[3] {
        return Err(b.error(format!(
            "K {ks:?} and V {vs:?} must agree on heads and length, and Q {qs:?} and K on the \
             head size"
        )));
    }
    let (q_heads, kv_heads) = (qs[1], ks[1]);
    let (k, v) = share_kv_heads(&mut b, k, v, q_heads, kv_heads)?;
    let scale = match node.attribute("scale") {
        Some(_) => f64::from(node.float_attr("scale", 1.0)?),
        None => 1.0 / (qs[3] as f64).sqrt(),
    };
    // √scale rounded to f32 first, as the definition computes it.
    let root = b.scalar_like(q, f64::from((scale as f32).sqrt()))?;
    let q_scaled = b.binary(BinaryKind::Mul, q, root)?;
    let k_scaled = b.binary(BinaryKind::Mul, k, root)?;
    let k_t = b.transpose(k_scaled, &[0, 1, 3, 2])?;
    let scores = b.matmul(q_scaled, k_t)?;
    let elem = b.element(q)?;
    let compute = match softmax_precision(&b)? {
        Some(ty) => ty,
        None if elem.int_or_float_bit_width().is_some_and(|w| w < 32) => Type::f32(),
        None => elem,
    };
    let scores = b.cast(scores, &compute)?;
    let scores = modifier(&mut b, "score_mod", scores)?;
    let probs = b.softmax(scores, -1)?;
    let probs = modifier(&mut b, "prob_mod", probs)?;
    let v_wide = b.cast(v, &compute)?;
    let y = b.matmul(probs, v_wide)?;
    let out = b.element(v)?;
    b.cast(y, &out).map(|y| vec![y])
}

/// `x` through the modifier graph attribute `name`, if the node has one.
fn modifier(b: &mut Body<'_, '_, '_>, name: &str, x: Value) -> Built {
    let graph = match b.node.attribute(name) {
        None => return Ok(x),
        Some(Attribute::Graph(g)) => g.as_ref(),
        Some(_) => return Err(b.error(format!("the attribute `{name}` must be a graph"))),
    };
    if graph.inputs.len() != 1 || graph.outputs.len() != 1 {
        return Err(b.error(format!(
            "`{name}` must have one input and one output, but has {} and {}",
            graph.inputs.len(),
            graph.outputs.len(),
        )));
    }
    b.imp.define_initializers(b.node, graph)?;
    b.imp.values.insert(graph.inputs[0].name.clone(), x);
    for i in graph.topological_order()? {
        b.imp.import_node(&graph.nodes[i])?;
    }
    let y = b
        .imp
        .value(&graph.outputs[0].name)
        .map_err(|m| b.error(m))?;
    if b.imp.ty(y) != b.imp.ty(x) {
        return Err(b.error(format!(
            "`{name}` must keep its input's type '{}', but gives '{}'",
            b.imp.ty(x),
            b.imp.ty(y)
        )));
    }
    Ok(y)
}
