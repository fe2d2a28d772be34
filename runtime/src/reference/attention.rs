//! Multi-head scaled dot-product attention, the fusion target of the
//! decomposed ONNX pattern (reshape/transpose/matmul/softmax/matmul):
//!
//! ```text
//! out[b, i, h*dv + j] = Σ_t softmax_t(scale · q_h[b, i]·k_h[b, t] + mask[b, h, i, t]) · v_h[b, t, j]
//! ```
//!
//! on `q [batch, seq_q, heads·dh]`, `k [batch, seq_kv, heads·dh]` and
//! `v [batch, seq_kv, heads·dv]`. Heads are strided views of the operands (no
//! split or merge copies); the two products run on `gemm` with those
//! strides, one task per (batch, head) on rayon. Products compute in the domain
//! of the query's kind (f32 for f32/f16/bf16/f8, f64 for f64); in f64 each
//! softmax row is computed in f64, in f32 by the vectorised row softmax
//! (exponentials in f32, their sum in f64); the result is rounded once to
//! the query's kind. f32 operands are read in place, without copies.

use rayon::prelude::*;

use ipuc_ir::numeric::ElementKind;

use super::error::{attribute_error, shape_error, KernelError, KernelResult};
use super::fast_f32::{f32_elements, f32_tensor_with};
use super::fast_math;
use super::host_tensor::{HostTensor, Values};
use super::matmul::{product_f32, product_f64, Product};
use super::shape::{broadcast_shapes, strides};

/// The compute domains attention runs in.
trait Domain: Copy + Send + Sync + Default {
    fn product(p: Product, a: &[Self], b: &[Self], c: &mut [Self]);
    /// `row[t] = softmax_t(scale · row[t] + mask(t))` in place.
    fn softmax_row(row: &mut [Self], scale: f32, mask: Option<impl Fn(usize) -> f64>);
}

impl Domain for f32 {
    fn product(p: Product, a: &[f32], b: &[f32], c: &mut [f32]) {
        product_f32(p, a, b, c)
    }
    /// The scaled, masked scores rounded to f32, then the vectorised softmax
    /// (exponentials in f32, their sum in f64; see `fast_math`).
    fn softmax_row(row: &mut [f32], scale: f32, mask: Option<impl Fn(usize) -> f64>) {
        match mask {
            None => fast_math::softmax_row(row, scale),
            Some(mask) => {
                for (t, x) in row.iter_mut().enumerate() {
                    *x = (f64::from(*x) * f64::from(scale) + mask(t)) as f32;
                }
                fast_math::softmax_row(row, 1.0);
            }
        }
    }
}

impl Domain for f64 {
    fn product(p: Product, a: &[f64], b: &[f64], c: &mut [f64]) {
        product_f64(p, a, b, c)
    }
    fn softmax_row(row: &mut [f64], scale: f32, mask: Option<impl Fn(usize) -> f64>) {
        for (t, x) in row.iter_mut().enumerate() {
            *x = *x * f64::from(scale) + mask.as_ref().map_or(0.0, |m| m(t));
        }
        let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        row.iter_mut().for_each(|x| *x = (*x - max).exp());
        let sum: f64 = row.iter().sum();
        row.iter_mut().for_each(|x| *x /= sum);
    }
}

/// Sizes of one attention problem.
#[derive(Clone, Copy)]
struct Dims {
    batch: usize,
    heads: usize,
    seq_q: usize,
    seq_kv: usize,
    head_dim: usize,
    value_dim: usize,
}

/// The additive mask as f64 values with broadcast strides over
/// `[batch, heads, seq_q, seq_kv]` (stride 0 along broadcast dimensions).
struct Mask {
    values: Vec<f64>,
    strides: [usize; 4],
}

impl Mask {
    fn at(&self, b: usize, h: usize, i: usize, t: usize) -> f64 {
        let s = &self.strides;
        self.values[b * s[0] + h * s[1] + i * s[2] + t * s[3]]
    }
}

/// Multi-head attention (see the module documentation). `mask` is additive and
/// broadcasts to `[batch, heads, seq_q, seq_kv]`; `scale` multiplies `q·kᵀ`.
pub fn attention(
    q: &HostTensor,
    k: &HostTensor,
    v: &HostTensor,
    mask: Option<&HostTensor>,
    heads: usize,
    scale: f32,
) -> KernelResult<HostTensor> {
    for (what, t) in [("query", q), ("key", k), ("value", v)]
        .into_iter()
        .chain(mask.map(|m| ("mask", m)))
    {
        if !t.kind.is_float() {
            return Err(KernelError::ElementType {
                op: "attention",
                kind: format!("{} ({what})", t.kind),
            });
        }
    }
    for (what, t) in [("query", q), ("key", k), ("value", v)] {
        if t.rank() != 3 {
            return Err(shape_error(
                "attention",
                format!(
                    "{what} must have rank 3 ([batch, seq, heads * head_dim]), got {:?}",
                    t.shape
                ),
            ));
        }
    }
    if heads == 0 {
        return Err(attribute_error("attention", "heads must be positive"));
    }
    let (batch, seq_q, hidden_q) = (q.shape[0], q.shape[1], q.shape[2]);
    let (seq_kv, hidden_v) = (k.shape[1], v.shape[2]);
    if k.shape[0] != batch || v.shape[0] != batch || v.shape[1] != seq_kv {
        return Err(shape_error(
            "attention",
            format!(
                "query {:?}, key {:?} and value {:?} disagree in batch or sequence length",
                q.shape, k.shape, v.shape
            ),
        ));
    }
    if k.shape[2] != hidden_q || hidden_q % heads != 0 || hidden_v % heads != 0 {
        return Err(shape_error(
            "attention",
            format!(
                "hidden sizes (query {hidden_q}, key {}, value {hidden_v}) must agree and divide into {heads} heads",
                k.shape[2]
            ),
        ));
    }
    let dims = Dims {
        batch,
        heads,
        seq_q,
        seq_kv,
        head_dim: hidden_q / heads,
        value_dim: hidden_v / heads,
    };
    let full = [batch, heads, seq_q, seq_kv];
    let mask = match mask {
        None => None,
        Some(m) => {
            if m.rank() > 4
                || broadcast_shapes("attention", &[&m.shape, &full])
                    .ok()
                    .as_deref()
                    != Some(&full[..])
            {
                return Err(shape_error(
                    "attention",
                    format!(
                        "mask of shape {:?} does not broadcast to [batch, heads, seq_q, seq_kv] = {full:?}",
                        m.shape
                    ),
                ));
            }
            let own = strides(&m.shape);
            let offset = 4 - m.rank();
            let mut s = [0usize; 4];
            for d in offset..4 {
                if m.shape[d - offset] != 1 {
                    s[d] = own[d - offset];
                }
            }
            Some(Mask {
                values: m.to_f64_vec(),
                strides: s,
            })
        }
    };
    let shape = vec![batch, seq_q, hidden_v];
    if [q, k, v].iter().all(|t| t.kind == ElementKind::F32) {
        // Read in place from the tensors' bytes, written into the result's.
        let (q, k, v) = (f32_elements(q), f32_elements(k), f32_elements(v));
        return Ok(f32_tensor_with(shape, |out| {
            heads_attention(dims, &q, &k, &v, mask.as_ref(), scale, out)
        }));
    }
    let values = match (q.values(), k.values_in(q.kind), v.values_in(q.kind)) {
        (Values::F32(q), Values::F32(k), Values::F32(v)) => {
            let mut out = vec![0f32; batch * seq_q * hidden_v];
            heads_attention(dims, &q, &k, &v, mask.as_ref(), scale, &mut out);
            Values::F32(out)
        }
        (Values::F64(q), Values::F64(k), Values::F64(v)) => {
            let mut out = vec![0f64; batch * seq_q * hidden_v];
            heads_attention(dims, &q, &k, &v, mask.as_ref(), scale, &mut out);
            Values::F64(out)
        }
        _ => unreachable!("float operands widen into the query's domain"),
    };
    Ok(HostTensor::from_values(q.kind, shape, values))
}

/// Attention over every (batch, head) pair into `out`, `[batch, seq_q,
/// heads·dv]` (zeroed by the caller).
fn heads_attention<T: Domain>(
    d: Dims,
    q: &[T],
    k: &[T],
    v: &[T],
    mask: Option<&Mask>,
    scale: f32,
    out: &mut [T],
) {
    let (hq, hv) = (d.heads * d.head_dim, d.heads * d.value_dim);
    if out.is_empty() || d.seq_kv == 0 {
        // No keys: every weighted sum is empty.
        return;
    }
    let per_head: Vec<Vec<T>> = (0..d.batch * d.heads)
        .into_par_iter()
        .map(|task| {
            let (b, h) = (task / d.heads, task % d.heads);
            // scores[i, t] = q_h[b, i] · k_h[b, t]: A is q's rows with stride hq,
            // B = k_hᵀ reads k with unit row stride and column stride hq.
            let mut scores = vec![T::default(); d.seq_q * d.seq_kv];
            if d.head_dim > 0 {
                T::product(
                    Product {
                        m: d.seq_q,
                        k: d.head_dim,
                        n: d.seq_kv,
                        a_strides: (hq as isize, 1),
                        b_strides: (1, hq as isize),
                    },
                    &q[b * d.seq_q * hq + h * d.head_dim..],
                    &k[b * d.seq_kv * hq + h * d.head_dim..],
                    &mut scores,
                );
            }
            for (i, s) in scores.chunks_mut(d.seq_kv).enumerate() {
                T::softmax_row(s, scale, mask.map(|m| move |t| m.at(b, h, i, t)));
            }
            // out_h = probabilities[seq_q, seq_kv] · v_h[seq_kv, dv] (rows of v
            // with stride hv).
            let mut head = vec![T::default(); d.seq_q * d.value_dim];
            if d.value_dim > 0 {
                T::product(
                    Product {
                        m: d.seq_q,
                        k: d.seq_kv,
                        n: d.value_dim,
                        a_strides: (d.seq_kv as isize, 1),
                        b_strides: (hv as isize, 1),
                    },
                    &scores,
                    &v[b * d.seq_kv * hv + h * d.value_dim..],
                    &mut head,
                );
            }
            head
        })
        .collect();
    // Merge heads: out[b, i, h*dv + j] = head(b, h)[i, j].
    for (task, head) in per_head.iter().enumerate() {
        let (b, h) = (task / d.heads, task % d.heads);
        if d.value_dim == 0 {
            continue;
        }
        for (i, row) in head.chunks(d.value_dim).enumerate() {
            let at = (b * d.seq_q + i) * hv + h * d.value_dim;
            out[at..at + d.value_dim].copy_from_slice(row);
        }
    }
}
