//! ONNX `Attention` (opset 23/24) inlined from its definition into `nn`
//! ops, as onnxruntime expands function ops: 3-D inputs split into heads,
//! the KV cache concatenated (`present_key`/`present_value`), grouped-query
//! heads repeated, `softmax(Q·Kᵀ·scale + bias)·V` with the boolean or
//! additive mask, the causal mask (offset by the cache length, or per batch
//! by `nonpad_kv_seqlen`), `softcap`, `softmax_precision`, and the optional
//! `qk_matmul_output`. The e-graph rules find `nn.attention` in the result
//! where its form allows.

use ipuc_dialects::nn::{BinaryKind, CompareKind, UnaryKind};
use ipuc_ir::{Type, Value};

use super::body::{Body, Built};
use super::constants::element_type;
use super::{ImportError, Importer, NodeResult};
use crate::onnx::{data_type_name, element_kind_of, Node};

/// The ops of this family.
pub(super) const OPS: &[&str] = &["Attention"];

pub(super) fn import(imp: &mut Importer<'_>, node: &Node) -> NodeResult {
    let mut b = Body::new(imp, node);
    let (q, k, v) = (b.input(0)?, b.input(1)?, b.input(2)?);
    let mask = b.optional_input(3)?;
    let (past_key, past_value) = (b.optional_input(4)?, b.optional_input(5)?);
    let nonpad = b.optional_input(6)?;
    let rank = b.shape(q).len();
    if rank != b.shape(k).len() || rank != b.shape(v).len() || !(rank == 3 || rank == 4) {
        return Err(b.error(format!(
            "Q, K and V must all be 3-D or all 4-D, but have ranks {}, {} and {}",
            rank,
            b.shape(k).len(),
            b.shape(v).len()
        )));
    }
    // 16-bit inputs are computed in f32 (as onnxruntime does) and the
    // results rounded once.
    let elem = b.element(q)?;
    let compute = if elem.is_float() && elem.int_or_float_bit_width() == Some(16) {
        Type::f32()
    } else {
        elem.clone()
    };
    let widen =
        |b: &mut Body<'_, '_, '_>, x: Option<Value>| -> Result<Option<Value>, ImportError> {
            match x {
                Some(x) if b.element(x)?.is_float() => b.cast(x, &compute).map(Some),
                other => Ok(other),
            }
        };
    let (q, k, v) = (
        b.cast(q, &compute)?,
        b.cast(k, &compute)?,
        b.cast(v, &compute)?,
    );
    let (mask, past_key, past_value) = (
        widen(&mut b, mask)?,
        widen(&mut b, past_key)?,
        widen(&mut b, past_value)?,
    );
    let (q, k, v) = if rank == 3 {
        let heads = |b: &Body<'_, '_, '_>, name: &str| -> Result<i64, ImportError> {
            match b.node.int_attr(name, 0)? {
                n if n > 0 => Ok(n),
                _ => Err(b.error(format!("3-D inputs need a positive `{name}`"))),
            }
        };
        let (hq, hkv) = (heads(&b, "q_num_heads")?, heads(&b, "kv_num_heads")?);
        (
            split_heads(&mut b, q, hq)?,
            split_heads(&mut b, k, hkv)?,
            split_heads(&mut b, v, hkv)?,
        )
    } else {
        (q, k, v)
    };
    let (qs, ks) = (b.shape(q), b.shape(k));
    let (batch, q_heads, q_len, head_size) = (qs[0], qs[1], qs[2], qs[3]);
    let scale = match b.node.attribute("scale") {
        Some(_) => f64::from(b.node.float_attr("scale", 1.0)?),
        None => 1.0 / (head_size as f64).sqrt(),
    };

    // The KV cache.
    let past_len = past_key.map(|p| b.shape(p)[2]);
    let k = match past_key {
        Some(p) => b.concat(&[p, k], 2)?,
        None => k,
    };
    let v = match past_value {
        Some(p) => b.concat(&[p, v], 2)?,
        None => v,
    };
    let (present_key, present_value) = (k, v);
    let total = b.shape(k)[2];

    // Grouped-query attention: each KV head serves q_heads / kv_heads
    // consecutive query heads.
    let kv_heads = ks[1];
    let (k, v) = share_kv_heads(&mut b, k, v, q_heads, kv_heads)?;

    // Q·Kᵀ, each side scaled by sqrt(scale) as the definition does.
    let root = b.scalar_like(q, scale.sqrt())?;
    let qs = b.binary(BinaryKind::Mul, q, root)?;
    let ks = b.binary(BinaryKind::Mul, k, root)?;
    let kt = b.transpose(ks, &[0, 1, 3, 2])?;
    let qk = b.matmul(qs, kt)?;

    // softcap comes before the bias, so that masked scores stay -inf.
    let softcap = f64::from(b.node.float_attr("softcap", 0.0)?);
    let capped = if softcap > 0.0 {
        let c = b.scalar_like(qk, softcap)?;
        let scaled = b.binary(BinaryKind::Div, qk, c)?;
        let t = b.unary(UnaryKind::Tanh, scaled)?;
        b.binary(BinaryKind::Mul, t, c)?
    } else {
        qk
    };
    let bias = attention_bias(
        &mut b,
        mask,
        nonpad,
        past_len,
        [batch, q_len, total],
        &compute,
    )?;
    let with_bias = match bias {
        Some(bias) => b.binary(BinaryKind::Add, capped, bias)?,
        None => capped,
    };
    let precise = match softmax_precision(&b)? {
        Some(ty) => b.cast(with_bias, &ty)?,
        None => with_bias,
    };
    let probs = b.softmax(precise, -1)?;
    // A row with every key masked is all NaN after the softmax; its
    // attention is zero (NaN is the only value unequal to itself).
    let defined = b.compare(CompareKind::Equal, probs, probs)?;
    let no_weight = b.scalar_like(probs, 0.0)?;
    let probs = b.select(defined, probs, no_weight)?;
    let probs = b.cast(probs, &compute)?;
    let y = b.matmul(probs, v)?;
    let y = b.cast(y, &elem)?;
    let y = if rank == 3 {
        let t = b.transpose(y, &[0, 2, 1, 3])?;
        let s = b.shape(t);
        b.reshape(t, &[s[0], s[1], s[2] * s[3]])?
    } else {
        y
    };

    let present_key = b.cast(present_key, &elem)?;
    let present_value = b.cast(present_value, &elem)?;
    let mut outputs = vec![y, present_key, present_value];
    if b.wants_output(3) {
        let qk_out = match b.node.int_attr("qk_matmul_output_mode", 0)? {
            0 => qk,
            1 => capped,
            2 => with_bias,
            3 => probs,
            other => {
                return Err(b.error(format!(
                    "`qk_matmul_output_mode` must be 0 to 3, but is {other}"
                )))
            }
        };
        outputs.push(b.cast(qk_out, &elem)?);
    }
    Ok(outputs)
}

/// `[B, S, heads·D]` → `[B, heads, S, D]`.
pub(super) fn split_heads(b: &mut Body<'_, '_, '_>, x: Value, heads: i64) -> Built {
    let s = b.shape(x);
    if s[2] % heads != 0 {
        return Err(b.error(format!(
            "a hidden size of {} does not split into {heads} heads",
            s[2]
        )));
    }
    let r = b.reshape(x, &[s[0], s[1], heads, s[2] / heads])?;
    b.transpose(r, &[0, 2, 1, 3])
}

/// The element type the `softmax_precision` attribute asks for, if given.
pub(super) fn softmax_precision(b: &Body<'_, '_, '_>) -> Result<Option<Type>, ImportError> {
    if b.node.attribute("softmax_precision").is_none() {
        return Ok(None);
    }
    let code = b.node.int_attr("softmax_precision", 1)?;
    element_kind_of(code as i32)
        .map(element_type)
        .filter(Type::is_float)
        .map(Some)
        .ok_or_else(|| {
            b.error(format!(
                "`softmax_precision` = {code} ({}) is not a floating-point type",
                data_type_name(code as i32)
            ))
        })
}

/// Grouped-query attention: K and V with `kv_heads` heads, each repeated
/// to serve `q_heads / kv_heads` consecutive query heads (unchanged when
/// the counts agree); an error when they do not divide.
pub(super) fn share_kv_heads(
    b: &mut Body<'_, '_, '_>,
    k: Value,
    v: Value,
    q_heads: i64,
    kv_heads: i64,
) -> Result<(Value, Value), ImportError> {
    if kv_heads == q_heads {
        return Ok((k, v));
    }
    if kv_heads == 0 || q_heads % kv_heads != 0 {
        return Err(b.error(format!(
            "{q_heads} query heads cannot share {kv_heads} key/value heads evenly"
        )));
    }
    let group = q_heads / kv_heads;
    Ok((repeat_heads(b, k, group)?, repeat_heads(b, v, group)?))
}

/// `[B, H, S, D]` → `[B, H·group, S, D]`, each head repeated `group` times
/// in place (numpy's `repeat` along axis 1).
fn repeat_heads(b: &mut Body<'_, '_, '_>, x: Value, group: i64) -> Built {
    let s = b.shape(x);
    let u = b.unsqueeze(x, &[2])?;
    let e = b.expand(u, &[s[0], s[1], group, s[2], s[3]])?;
    b.reshape(e, &[s[0], s[1] * group, s[2], s[3]])
}

/// The additive bias of the scores, `[.., q_len, total]` broadcastable to
/// `[B, H, q_len, total]`, or `None` when nothing masks: the mask (boolean
/// true = attend, else added; a mask shorter than `total` is padded with
/// "do not attend"), the causal mask and the padding mask of
/// `nonpad_kv_seqlen`.
fn attention_bias(
    b: &mut Body<'_, '_, '_>,
    mask: Option<Value>,
    nonpad: Option<Value>,
    past_len: Option<i64>,
    [batch, q_len, total]: [i64; 3],
    elem: &Type,
) -> Result<Option<Value>, ImportError> {
    let neg_inf = b.constant(&[], elem, &[f64::NEG_INFINITY])?;
    let zero = b.constant(&[], elem, &[0.0])?;
    let mut bias = match mask {
        Some(m) => {
            let additive = if b.element(m)?.is_integer_of_width(1) {
                b.select(m, zero, neg_inf)?
            } else {
                m
            };
            let s = b.shape(additive);
            let short = total - s[s.len() - 1];
            if short < 0 {
                return Err(b.error(format!(
                    "the mask's last dimension {} exceeds the {total} keys",
                    s[s.len() - 1]
                )));
            }
            Some(if short > 0 {
                let mut pad_shape = s.clone();
                *pad_shape.last_mut().expect("a mask has a rank") = short;
                let count = pad_shape.iter().product::<i64>().max(0) as usize;
                let pad = b.constant(&pad_shape, elem, &vec![f64::NEG_INFINITY; count])?;
                b.concat(&[additive, pad], s.len() as i64 - 1)?
            } else {
                additive
            })
        }
        None => None,
    };
    let add = |b: &mut Body<'_, '_, '_>, bias: Option<Value>, more: Value| match bias {
        Some(x) => b.binary(BinaryKind::Add, x, more),
        None => Ok(more),
    };
    // Query i attends key j iff i + offset - left <= j <= i + offset + right
    // (a negative bound is unbounded; causal means right = 0), where the
    // offset is the cache length, or per batch nonpad_kv_seqlen[b] - q_len.
    let causal = b.node.int_attr("is_causal", 0)? != 0;
    let left = b.node.int_attr("left_window_size", -1)?;
    let right = if causal {
        0
    } else {
        b.node.int_attr("right_window_size", -1)?
    };
    if left >= 0 || right >= 0 {
        let positional = match (past_len, nonpad) {
            // With d = j - i + q_len: right bound d - right <= L, left
            // bound L <= d + left, for L = nonpad_kv_seqlen[b].
            (None, Some(lengths)) => {
                let lengths_elem = b.element(lengths)?;
                let l = b.reshape(lengths, &[batch, 1, 1, 1])?;
                let mut allowed = None;
                for (bound, below) in [(right, true), (left, false)] {
                    if bound < 0 {
                        continue;
                    }
                    let d: Vec<f64> = (0..q_len)
                        .flat_map(|i| {
                            (0..total).map(move |j| {
                                let d = j - i + q_len;
                                (if below { d - bound } else { d + bound }) as f64
                            })
                        })
                        .collect();
                    let d = b.constant(&[1, 1, q_len, total], &lengths_elem, &d)?;
                    let ok = if below {
                        b.compare(CompareKind::LessEqual, d, l)?
                    } else {
                        b.compare(CompareKind::LessEqual, l, d)?
                    };
                    allowed = Some(match allowed {
                        Some(a) => b.binary(BinaryKind::And, a, ok)?,
                        None => ok,
                    });
                }
                let allowed = allowed.expect("one bound is set");
                b.select(allowed, zero, neg_inf)?
            }
            (past, _) => {
                let off = past.unwrap_or(0);
                let values: Vec<f64> = (0..q_len)
                    .flat_map(|i| {
                        (0..total).map(move |j| {
                            let after = right >= 0 && j > i + off + right;
                            let before = left >= 0 && j < i + off - left;
                            if after || before {
                                f64::NEG_INFINITY
                            } else {
                                0.0
                            }
                        })
                    })
                    .collect();
                b.constant(&[q_len, total], elem, &values)?
            }
        };
        bias = Some(add(b, bias, positional)?);
    }
    if let Some(lengths) = nonpad {
        // Keys at or past nonpad_kv_seqlen[b] are padding.
        let lengths_elem = b.element(lengths)?;
        let ids: Vec<f64> = (0..total).map(|j| j as f64).collect();
        let ids = b.constant(&[1, 1, 1, total], &lengths_elem, &ids)?;
        let l = b.reshape(lengths, &[batch, 1, 1, 1])?;
        let inside = b.compare(CompareKind::Less, ids, l)?;
        let padding = b.select(inside, zero, neg_inf)?;
        bias = Some(add(b, bias, padding)?);
    }
    Ok(bias)
}
