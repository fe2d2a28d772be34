//! Scaled dot-product attention recognition, with the exporters' head
//! split and merge around it:
//!
//! - batch-first heads (Hugging Face eager attention): `q[B,S,E]` reshaped
//!   to `[B,S,H,D]` and transposed to `[B,H,S,D]`; `k` to `[B,H,D,S]`
//!   (two transposes, composed by the algebra rules); `softmax(q.k * c) . v`
//!   transposed back and reshaped to `[B,S,E]`;
//! - sequence-first heads folded into the batch (`torch.nn.MultiheadAttention`,
//!   SigLIP's pooling head): `q[L,B,E]` reshaped to `[L,B*H,D]` and
//!   transposed to `[B*H,L,D]`, the result transposed back and reshaped.
//!
//! Both become `nn.attention {heads = H, scale = c}` on batch-first
//! operands (the sequence-first form with transposes around it, which the
//! transpose rules cancel against the exporter's own).

use egg::{Id, Rewrite};

use ipuc_dialects::nn;
use ipuc_ir::types::DYNAMIC;
use ipuc_ir::{Attribute, Type};

use super::{attr_i64, attr_i64s, conditional, dict, Match};
use crate::eqsat::analysis::{infer, NnAnalysis};
use crate::eqsat::language::{Node, Op};

pub(super) const NAMES: &[&str] = &["attention-scaled", "attention-unscaled"];

/// The head layout an exporter used.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Layout {
    /// `[B,S,E] -> [B,S,H,D] -> [B,H,S,D]`.
    BatchFirst,
    /// `[L,B,E] -> [L,B*H,D] -> [B*H,L,D]`.
    SeqFirst,
}

impl Layout {
    /// (split/merge perm, key perm, softmax axis) of this layout.
    fn perms(self) -> (&'static [usize], &'static [usize], usize) {
        match self {
            Layout::BatchFirst => (&[0, 2, 1, 3], &[0, 2, 3, 1], 3),
            Layout::SeqFirst => (&[1, 0, 2], &[1, 2, 0], 2),
        }
    }
}

fn same(a: i64, b: i64) -> bool {
    a == b || a == DYNAMIC || b == DYNAMIC
}

/// The resolved permutation of a transpose's attributes.
fn perm(m: &Match<'_>, attrs: &str, rank: usize) -> Option<Vec<usize>> {
    nn::transpose_perm(rank, attr_i64s(&m.attrs(attrs)?, "perm").as_deref()).ok()
}

/// For operand `?x` reshaped by `?r`: `(shape of x, shape after the reshape)`.
fn split_heads(m: &Match<'_>, x: &str, r: &str) -> Option<(Vec<i64>, Vec<i64>)> {
    let ty = m.ty(x)?;
    let reshaped = infer(Op::Reshape, &[&ty], &m.attrs(r)?)?.pop()?;
    Some((ty.shape()?.to_vec(), reshaped.shape()?.to_vec()))
}

/// The number of heads if `(x, r)` is a head split in `layout`.
fn heads_of(layout: Layout, x: &[i64], r: &[i64]) -> Option<i64> {
    if x.len() != 3 {
        return None;
    }
    let e = x[2];
    match layout {
        Layout::BatchFirst => {
            let ok = r.len() == 4 && same(r[0], x[0]) && same(r[1], x[1]);
            (ok && r[2] > 0 && r[3] > 0 && r[2] * r[3] == e).then_some(r[2])
        }
        Layout::SeqFirst => {
            if r.len() != 3 || !same(r[0], x[0]) || r[2] <= 0 || e % r[2] != 0 {
                return None;
            }
            let h = e / r[2];
            (r[1] == DYNAMIC || x[1] == DYNAMIC || r[1] == x[1] * h).then_some(h)
        }
    }
}

fn attention(m: &mut Match<'_>, scaled: bool) -> Option<Id> {
    let scale = if scaled {
        if m.ty("c")?.num_elements()? != 1 {
            return None;
        }
        m.splat("c")?
    } else {
        1.0
    };
    let (qs, qr) = split_heads(m, "q", "rq")?;
    let (ks, kr) = split_heads(m, "k", "rk")?;
    let (vs, vr) = split_heads(m, "v", "rv")?;
    let layout = match qr.len() {
        4 => Layout::BatchFirst,
        3 => Layout::SeqFirst,
        _ => return None,
    };
    let heads = heads_of(layout, &qs, &qr)?;
    if heads_of(layout, &ks, &kr)? != heads || heads_of(layout, &vs, &vr)? != heads {
        return None;
    }
    let (split, key, softmax_axis) = layout.perms();
    let rank = qr.len();
    if perm(m, "pq", rank)? != split
        || perm(m, "pv", rank)? != split
        || perm(m, "po", rank)? != split
        || perm(m, "pk", rank)? != key
    {
        return None;
    }
    let sa = m.attrs("sa")?;
    if nn::normalize_axis(attr_i64(&sa, "axis", -1), rank).ok()? != softmax_axis {
        return None;
    }
    let out_ty = m.matched_ty()?;
    let params = dict(&[
        ("heads", Attribute::i64(heads)),
        ("scale", Attribute::float(scale as f32 as f64, Type::f32())),
    ]);
    let (q, k, v) = (m.var("q"), m.var("k"), m.var("v"));
    match layout {
        Layout::BatchFirst => Some(m.add(Op::Attention, vec![q, k, v], Some(params))),
        Layout::SeqFirst => {
            let swap = || dict(&[("perm", Attribute::dense_i64_array(&[1, 0, 2]))]);
            let qb = m.add(Op::Transpose, vec![q], Some(swap()));
            let kb = m.add(Op::Transpose, vec![k], Some(swap()));
            let vb = m.add(Op::Transpose, vec![v], Some(swap()));
            let att = m.add(Op::Attention, vec![qb, kb, vb], Some(params));
            let seq_first = m.add(Op::Transpose, vec![att], Some(swap()));
            if m.egraph[seq_first].data.ty() == Some(&out_ty) {
                return Some(seq_first);
            }
            if !out_ty.has_static_shape() {
                return None;
            }
            let shape = dict(&[("shape", Attribute::dense_i64_array(out_ty.shape()?))]);
            Some(m.add(Op::Reshape, vec![seq_first], Some(shape)))
        }
    }
}

pub(super) fn rules() -> Vec<Rewrite<Node, NnAnalysis>> {
    let q = "(transpose (reshape ?q ?rq) ?pq)";
    let k = "(transpose (reshape ?k ?rk) ?pk)";
    let v = "(transpose (reshape ?v ?rv) ?pv)";
    let wrap = |scores: String| {
        format!("(reshape (transpose (matmul (softmax {scores} ?sa) {v}) ?po) ?ro)")
    };
    vec![
        conditional(NAMES[0], &wrap(format!("(mul (matmul {q} {k}) ?c)")), |m| {
            attention(m, true)
        }),
        conditional(NAMES[1], &wrap(format!("(matmul {q} {k})")), |m| {
            attention(m, false)
        }),
    ]
}
