//! Softmax recognition: `exp(x - max(x)) / sum(exp(x - max(x)))` (and the
//! unshifted `exp(x) / sum(exp(x))`, which is equal in exact arithmetic)
//! over one axis with `keepdims = 1` becomes `nn.softmax`.

use egg::Rewrite;

use ipuc_dialects::nn;
use ipuc_ir::{Attribute, Dictionary};

use super::{attr_i64, attr_i64s, conditional, dict, Match};
use crate::eqsat::analysis::NnAnalysis;
use crate::eqsat::language::{Node, Op};

pub(super) const NAMES: &[&str] = &[
    "softmax-shifted",
    "softmax-shifted-reciprocal",
    "softmax-unshifted",
];

const SHIFTED: &str = "(exp (sub ?x (reduce_max ?x ?a1)))";

/// The single reduced axis of `d`, if it keeps dimensions.
fn single_axis(d: &Dictionary, rank: usize) -> Option<usize> {
    if attr_i64(d, "keepdims", 1) != 1 {
        return None;
    }
    match nn::reduce_axes(rank, attr_i64s(d, "axes").as_deref()).ok()?[..] {
        [a] => Some(a),
        _ => None,
    }
}

fn softmax(m: &mut Match<'_>, shifted: bool) -> Option<egg::Id> {
    let ty = m.ty("x")?;
    let rank = ty.shape()?.len();
    let axis = single_axis(&m.attrs("a2")?, rank)?;
    if shifted && single_axis(&m.attrs("a1")?, rank)? != axis {
        return None;
    }
    if m.matched_ty()? != ty {
        return None;
    }
    let x = m.var("x");
    let attrs = dict(&[("axis", Attribute::i64(axis as i64))]);
    Some(m.add(Op::Softmax, vec![x], Some(attrs)))
}

pub(super) fn rules() -> Vec<Rewrite<Node, NnAnalysis>> {
    vec![
        conditional(
            NAMES[0],
            &format!("(div {SHIFTED} (reduce_sum {SHIFTED} ?a2))"),
            |m| softmax(m, true),
        ),
        conditional(
            NAMES[1],
            &format!("(mul {SHIFTED} (reciprocal (reduce_sum {SHIFTED} ?a2)))"),
            |m| softmax(m, true),
        ),
        conditional(NAMES[2], "(div (exp ?x) (reduce_sum (exp ?x) ?a2))", |m| {
            softmax(m, false)
        }),
    ]
}
