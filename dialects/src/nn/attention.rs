//! `nn.attention(q, k, v[, mask]) {heads, scale}`: multi-head scaled
//! dot-product attention on `[batch, seq, heads * head_dim]` operands, the
//! fusion target of the decomposed ONNX pattern
//! (reshape/transpose/matmul/softmax/matmul):
//!
//! ```text
//! out[b, i, h*dv + j] = sum_t softmax_t(scale * q_h[b, i] . k_h[b, t] + mask[b, h, i, t]) * v_h[b, t, j]
//! ```
//!
//! The mask is additive and broadcasts to `[batch, heads, seq_q, seq_kv]`;
//! `scale` defaults to `1 / sqrt(head_dim)`.

use ipuc_ir::interfaces::{
    CombiningKind, Contraction, ContractionShape, ElementWork, OpSignature, Reduction,
    ReductionShape,
};
use ipuc_ir::types::DYNAMIC;
use ipuc_ir::{
    Attribute, Context, Diagnostic, Dialect, Location, OpId, OperationState, Type, Value,
};

use super::support::*;

/// `nn.attention`.
pub const ATTENTION: &str = "nn.attention";

fn same(a: i64, b: i64) -> bool {
    a == b || a == DYNAMIC || b == DYNAMIC
}

/// Result type of `nn.attention`: `[batch, seq_q, hidden(v)]`.
pub fn infer_attention(
    q: &Type,
    k: &Type,
    v: &Type,
    mask: Option<&Type>,
    heads: i64,
) -> InferResult<Type> {
    let (sq, eq) = ranked(q, "query")?;
    let (sk, ek) = ranked(k, "key")?;
    let (sv, ev) = ranked(v, "value")?;
    for (what, e) in [("query", eq), ("key", ek), ("value", ev)] {
        if !e.is_float() {
            return Err(shape_err!(
                "{what} must have a floating-point element type, but got '{e}'"
            ));
        }
    }
    for (what, s) in [("query", sq), ("key", sk), ("value", sv)] {
        if s.len() != 3 {
            return Err(shape_err!(
                "{what} must have rank 3 ([batch, seq, heads * head_dim]), but has shape [{}]",
                shape_str(s)
            ));
        }
    }
    if heads < 1 {
        return Err(shape_err!("'heads' must be positive, but is {heads}"));
    }
    if !same(sq[0], sk[0]) || !same(sq[0], sv[0]) {
        return Err(shape_err!(
            "batch sizes differ: query {}, key {}, value {}",
            sq[0],
            sk[0],
            sv[0]
        ));
    }
    if !same(sk[1], sv[1]) {
        return Err(shape_err!(
            "key and value sequence lengths differ: {} vs {}",
            sk[1],
            sv[1]
        ));
    }
    if !same(sq[2], sk[2]) {
        return Err(shape_err!(
            "query and key hidden sizes differ: {} vs {}",
            sq[2],
            sk[2]
        ));
    }
    for (what, h) in [("query", sq[2]), ("value", sv[2])] {
        if h != DYNAMIC && h % heads != 0 {
            return Err(shape_err!(
                "{what} hidden size {h} is not divisible by {heads} heads"
            ));
        }
    }
    if let Some(m) = mask {
        let (sm, em) = ranked(m, "mask")?;
        if !em.is_float() {
            return Err(shape_err!(
                "mask must be additive (floating-point), but has element type '{em}'"
            ));
        }
        let full = [sq[0], heads, sq[1], sk[1]];
        if !broadcasts_to(sm, &full) {
            return Err(shape_err!(
                "mask of shape [{}] does not broadcast to [batch, heads, seq_q, seq_kv] = [{}]",
                shape_str(sm),
                shape_str(&full)
            ));
        }
    }
    Ok(tensor(&[sq[0], sq[1], sv[2]], eq))
}

/// Attributes of `nn.attention`.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct AttentionParams {
    /// Number of heads (divides the hidden sizes).
    pub heads: i64,
    /// The softmax scale; `None` for `1 / sqrt(head_dim)`.
    pub scale: Option<f32>,
}

/// The softmax scale: `scale` if set, else `1 / sqrt(head_dim)`.
pub fn attention_scale(scale: Option<f32>, head_dim: i64) -> f32 {
    scale.unwrap_or_else(|| 1.0 / (head_dim as f32).sqrt())
}

pub(crate) fn infer_from_op(ctx: &Context, op: OpId) -> Option<InferResult<Vec<Type>>> {
    if ctx.name_str(op) != ATTENTION {
        return None;
    }
    let t = value_types(ctx, ctx.operands(op));
    Some(
        infer_attention(&t[0], &t[1], &t[2], t.get(3), attr_i64(ctx, op, "heads", 0)).and_then(
            |ty| {
                check_acc_type(ctx, op, &t[0])?;
                Ok(vec![ty])
            },
        ),
    )
}

/// `nn.attention` as the products and the softmax it performs, per batch
/// entry and head: `S = Q K^T` (`[seq_q, head_dim] x [head_dim, seq_kv]`),
/// a softmax over each row of `S`, and `P V`.
struct AttentionModel;

/// `[batch * heads, seq_q, seq_kv, head_dim, value_dim]` of a well-formed
/// signature with static dimensions.
fn attention_dims(sig: &OpSignature<'_>) -> Option<[u64; 5]> {
    let (q, k, v) = (sig.operand(0)?, sig.operand(1)?, sig.operand(2)?);
    let heads = sig.i64_attr("heads", 0);
    infer_attention(q, k, v, sig.operand(3), heads).ok()?;
    let (sq, sk, sv) = (q.shape()?, k.shape()?, v.shape()?);
    Some([
        static_product(&[sq[0], heads])?,
        static_product(&[sq[1]])?,
        static_product(&[sk[1]])?,
        static_product(&[sq[2] / heads])?,
        static_product(&[sv[2] / heads])?,
    ])
}

impl Contraction for AttentionModel {
    fn contractions(&self, sig: &OpSignature<'_>) -> Option<Vec<ContractionShape>> {
        let [batch, seq_q, seq_kv, head_dim, value_dim] = attention_dims(sig)?;
        let element = |i: usize| sig.operand(i).and_then(|t| t.element_type()).cloned();
        let (q, k, v) = (element(0)?, element(1)?, element(2)?);
        // Scores and probabilities are computed in the query's type.
        let result = sig
            .result(0)
            .and_then(|t| t.element_type())
            .cloned()
            .unwrap_or_else(|| q.clone());
        Some(vec![
            ContractionShape {
                batch,
                m: seq_q,
                n: seq_kv,
                k: head_dim,
                lhs: q.clone(),
                rhs: k,
                result: q.clone(),
            },
            ContractionShape {
                batch,
                m: seq_q,
                n: value_dim,
                k: seq_kv,
                lhs: q,
                rhs: v,
                result,
            },
        ])
    }
}

impl Reduction for AttentionModel {
    fn reduction(&self, sig: &OpSignature<'_>) -> Option<ReductionShape> {
        let [batch, seq_q, seq_kv, _, _] = attention_dims(sig)?;
        // The scale, the mask, the softmax's `s - max`, exp and normalisation.
        let mask = u32::from(sig.operand(3).is_some());
        Some(ReductionShape {
            outer: batch.saturating_mul(seq_q),
            inner: seq_kv,
            passes: vec![CombiningKind::Max, CombiningKind::Add],
            per_element: ElementWork::flops(3 + mask) + ElementWork::special(1),
        })
    }
}

pub(crate) fn register(d: Dialect) -> Dialect {
    d.op(nn_op(
        ATTENTION,
        "Multi-head scaled dot-product attention with an optional additive mask",
    )
    .attribute(i64_attr("heads", false))
    .attribute(f32_attr("scale", true))
    .attribute(ACC_TYPE_ATTR)
    .operands(&[
        one("query", TENSOR),
        one("key", TENSOR),
        one("value", TENSOR),
        optional("mask", TENSOR),
    ])
    .results(&[one("result", TENSOR)])
    .implement::<dyn Contraction>(Box::new(AttentionModel))
    .implement::<dyn Reduction>(Box::new(AttentionModel)))
}

op_wrapper!(
    /// `nn.attention(query, key, value[, mask]) {heads, scale}`.
    AttentionOp,
    ATTENTION
);

operand_accessors!(AttentionOp {
    /// `q[batch, seq_q, heads * head_dim]`.
    query = 0,
    /// `k[batch, seq_kv, heads * head_dim]`.
    key = 1,
    /// `v[batch, seq_kv, heads * value_dim]`.
    value = 2,
});

impl AttentionOp {
    /// The additive mask, if given.
    pub fn mask(self, ctx: &Context) -> Option<Value> {
        ctx.operands(self.0).get(3).copied()
    }
    /// The number of heads.
    pub fn heads(self, ctx: &Context) -> i64 {
        attr_i64(ctx, self.0, "heads", 1)
    }
    /// The softmax scale (resolved default).
    pub fn scale(self, ctx: &Context) -> f32 {
        let hidden = ctx
            .value_type(self.query(ctx))
            .shape()
            .and_then(|s| s.last().copied())
            .unwrap_or(1);
        let scale = ctx
            .attr(self.0, "scale")
            .and_then(|a| a.as_f64())
            .map(|v| v as f32);
        attention_scale(scale, hidden / self.heads(ctx).max(1))
    }
    /// A state for attention over `q`, `k`, `v` with an optional additive mask.
    pub fn build(
        ctx: &Context,
        q: Value,
        k: Value,
        v: Value,
        mask: Option<Value>,
        params: AttentionParams,
        loc: Location,
    ) -> Result<OperationState, Diagnostic> {
        let AttentionParams { heads, scale } = params;
        let ty = infer_attention(
            ctx.value_type(q),
            ctx.value_type(k),
            ctx.value_type(v),
            mask.map(|m| ctx.value_type(m)),
            heads,
        );
        let mut operands = vec![q, k, v];
        operands.extend(mask);
        let mut attrs = vec![("heads", Attribute::i64(heads))];
        if let Some(s) = scale {
            attrs.push(("scale", f32_attribute(s)));
        }
        build_inferred(ctx, ATTENTION, &operands, ty, attrs, loc)
    }
}
