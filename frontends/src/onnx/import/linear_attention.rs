//! ONNX `LinearAttention` (opset 27) built of `nn` ops as its definition
//! computes it (`onnx/reference/ops/op_linear_attention.py`): the recurrent
//! state `S` (`[B, H_kv, d_k, d_v]`) is updated once per token and read by
//! every query head of its group,
//!
//! - `linear`: `S += k_t ⊗ v_t`
//! - `gated`: `S = exp(g_t)·S + k_t ⊗ v_t`
//! - `delta`: `S += k_t ⊗ β_t·(v_t − Sᵀk_t)`
//! - `gated_delta`: both, the retrieval reading the decayed state,
//!
//! and `o_t = scale · q_tᵀ S`. With static shapes the sequence length is
//! known, so the recurrence is unrolled: each step is a few batched
//! `nn.matmul`s on `[B, H, ·, ·]` slices. 16-bit inputs are computed in f32
//! (as the definition does) and the results rounded once.

use ipuc_dialects::nn::{BinaryKind, UnaryKind};
use ipuc_ir::{Type, Value};

use super::attention::split_heads;
use super::body::{Body, Built};
use super::{ImportError, Importer, NodeResult};
use crate::onnx::Node;

/// The ops of this family.
pub(super) const OPS: &[&str] = &["LinearAttention"];

pub(super) fn import(imp: &mut Importer<'_>, node: &Node) -> NodeResult {
    let mut b = Body::new(imp, node);
    let (q, k, v) = (b.input(0)?, b.input(1)?, b.input(2)?);
    let past = b.optional_input(3)?;
    let (decay, beta) = (b.optional_input(4)?, b.optional_input(5)?);
    let rule = node.string_attr("update_rule", "gated_delta")?;
    let (gating, delta) = match rule {
        "linear" => (false, false),
        "gated" => (true, false),
        "delta" => (false, true),
        "gated_delta" => (true, true),
        other => {
            return Err(b.error(format!(
                "unknown `update_rule` \"{other}\" (expected linear, gated, delta or gated_delta)"
            )))
        }
    };
    for (needed, given, name) in [(gating, decay, "decay"), (delta, beta, "beta")] {
        if needed != given.is_some() {
            let verb = if needed { "needs" } else { "forbids" };
            return Err(b.error(format!("update_rule \"{rule}\" {verb} the `{name}` input")));
        }
    }
    let heads = |b: &Body<'_, '_, '_>, name: &str| -> Result<i64, ImportError> {
        match b.node.int_attr(name, 0)? {
            n if n > 0 => Ok(n),
            _ => Err(b.error(format!("the attribute `{name}` must be positive"))),
        }
    };
    let (hq, hkv) = (heads(&b, "q_num_heads")?, heads(&b, "kv_num_heads")?);
    if hq % hkv != 0 {
        return Err(b.error(format!(
            "q_num_heads ({hq}) must be a multiple of kv_num_heads ({hkv})"
        )));
    }
    let (qs, ks, vs) = (b.shape(q), b.shape(k), b.shape(v));
    if qs.len() != 3 || ks.len() != 3 || vs.len() != 3 {
        return Err(b.error(format!(
            "query, key and value must be 3-D [B, T, H*D], but have shapes {qs:?}, {ks:?} and {vs:?}"
        )));
    }
    if qs[2] % hq != 0 || ks[2] % hkv != 0 || vs[2] % hkv != 0 {
        return Err(b.error(format!(
            "the last dimensions of query {qs:?}, key {ks:?} and value {vs:?} must divide by \
             their head counts ({hq}, {hkv}, {hkv})"
        )));
    }
    let (batch, steps) = (qs[0], qs[1]);
    let (dk, dv, group) = (qs[2] / hq, vs[2] / hkv, hq / hkv);
    if ks[2] / hkv != dk {
        return Err(b.error(format!(
            "query heads have {dk} features but key heads {}",
            ks[2] / hkv
        )));
    }
    let out_elem = b.element(q)?;
    let state_elem = match past {
        Some(p) => b.element(p)?,
        None => out_elem.clone(),
    };
    let f32 = Type::f32();
    let widen = |b: &mut Body<'_, '_, '_>, x: Value| -> Built {
        if b.element(x)?.int_or_float_bit_width() == Some(16) {
            b.cast(x, &f32)
        } else {
            Ok(x)
        }
    };
    let (q, k, v) = (widen(&mut b, q)?, widen(&mut b, k)?, widen(&mut b, v)?);
    let q4 = split_heads(&mut b, q, hq)?;
    let k4 = split_heads(&mut b, k, hkv)?;
    let v4 = split_heads(&mut b, v, hkv)?;
    // exp(g) per step as a column [B, H_kv, d_k or 1, 1] scaling the state's rows.
    let decay = match decay {
        Some(g) => {
            let g = widen(&mut b, g)?;
            let last = *b.shape(g).last().unwrap_or(&0);
            let per = if last == hkv {
                1
            } else if last == hkv * dk {
                dk
            } else {
                return Err(b.error(format!(
                    "the decay's last dimension {last} must be kv_num_heads ({hkv}) or \
                     kv_num_heads*d_k ({})",
                    hkv * dk
                )));
            };
            let g = b.reshape(g, &[batch, steps, hkv, per])?;
            let g = b.unary(UnaryKind::Exp, g)?;
            Some(b.transpose(g, &[0, 2, 3, 1])?)
        }
        None => None,
    };
    // β per step [B, H_kv or 1, 1, 1].
    let beta = match beta {
        Some(beta) => {
            let beta = widen(&mut b, beta)?;
            let last = *b.shape(beta).last().unwrap_or(&0);
            if last != hkv && last != 1 {
                return Err(b.error(format!(
                    "beta's last dimension {last} must be kv_num_heads ({hkv}) or 1"
                )));
            }
            let beta = b.reshape(beta, &[batch, steps, last, 1])?;
            Some(b.transpose(beta, &[0, 2, 3, 1])?)
        }
        None => None,
    };
    let mut state = match past {
        Some(p) => {
            let want = [batch, hkv, dk, dv];
            if b.shape(p) != want {
                return Err(b.error(format!(
                    "past_state has shape {:?}, expected {want:?}",
                    b.shape(p)
                )));
            }
            Some(widen(&mut b, p)?)
        }
        None => None,
    };
    // 0 (the default) asks for 1/sqrt(d_k).
    let scale = match f64::from(node.float_attr("scale", 0.0)?) {
        0.0 => 1.0 / (dk as f64).sqrt(),
        s => s,
    };
    let mut outputs = Vec::with_capacity(steps as usize);
    for t in 0..steps {
        let q_t = b.slice(q4, 2, t, t + 1)?;
        let k_t = b.slice(k4, 2, t, t + 1)?;
        let mut v_t = b.slice(v4, 2, t, t + 1)?;
        if let (Some(g), Some(s)) = (decay, state) {
            let g_t = b.slice(g, 3, t, t + 1)?;
            state = Some(b.binary(BinaryKind::Mul, s, g_t)?);
        }
        if let Some(beta) = beta {
            let beta_t = b.slice(beta, 3, t, t + 1)?;
            if let Some(s) = state {
                let retrieved = b.matmul(k_t, s)?;
                v_t = b.binary(BinaryKind::Sub, v_t, retrieved)?;
            }
            v_t = b.binary(BinaryKind::Mul, v_t, beta_t)?;
        }
        let k_col = b.transpose(k_t, &[0, 1, 3, 2])?;
        let write = b.matmul(k_col, v_t)?;
        let s = match state {
            Some(s) => b.binary(BinaryKind::Add, s, write)?,
            None => write,
        };
        state = Some(s);
        // Query head h reads KV head h / group: group the query heads by KV head.
        let q_g = b.reshape(q_t, &[batch, hkv, group, dk])?;
        let o = b.matmul(q_g, s)?;
        outputs.push(b.reshape(o, &[batch, 1, hq * dv])?);
    }
    let Some(state) = state else {
        return Err(b.error("an empty sequence (T = 0) has no output to compute"));
    };
    let o = b.concat(&outputs, 1)?;
    let factor = b.scalar_like(o, scale)?;
    let o = b.binary(BinaryKind::Mul, o, factor)?;
    let o = b.cast(o, &out_elem)?;
    let state = b.cast(state, &state_elem)?;
    Ok(vec![o, state])
}
