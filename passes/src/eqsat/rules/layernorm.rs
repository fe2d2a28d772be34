//! LayerNorm recognition: the opset-14 decomposition
//! `(x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps)` over trailing axes
//! becomes `nn.layer_normalization` with a unit scale; a following multiply
//! by a scale and add of a bias are absorbed into it.

use egg::Rewrite;

use ipuc_dialects::nn;
use ipuc_ir::{Attribute, Dictionary, Type};

use super::{attr_i64, attr_i64s, conditional, dict, Match};
use crate::eqsat::analysis::NnAnalysis;
use crate::eqsat::language::{Node, Op};

pub(super) const NAMES: &[&str] = &[
    "layernorm-div",
    "layernorm-mul-reciprocal",
    "layernorm-scale",
    "layernorm-bias",
];

const CENTERED: &str = "(sub ?x (reduce_mean ?x ?a1))";

/// The first normalized axis if `d` reduces exactly the trailing axes
/// `axis..rank` with `keepdims = 1`.
fn trailing_axis(d: &Dictionary, rank: usize) -> Option<usize> {
    if attr_i64(d, "keepdims", 1) != 1 {
        return None;
    }
    let axes = nn::reduce_axes(rank, attr_i64s(d, "axes").as_deref()).ok()?;
    let first = *axes.first()?;
    (axes == (first..rank).collect::<Vec<_>>()).then_some(first)
}

fn normalize(m: &mut Match<'_>) -> Option<egg::Id> {
    let x_ty = m.ty("x")?;
    let shape = x_ty.shape()?.to_vec();
    let rank = shape.len();
    let axis = trailing_axis(&m.attrs("a1")?, rank)?;
    if trailing_axis(&m.attrs("a2")?, rank)? != axis || m.splat("two")? != 2.0 {
        return None;
    }
    let eps = m.splat("eps")?;
    if !(0.0..1.0).contains(&eps) || m.ty("eps")?.num_elements()? != 1 {
        return None;
    }
    if m.matched_ty()? != x_ty {
        return None;
    }
    let scale_ty = Type::tensor(&shape[axis..], x_ty.element_type()?.clone());
    let ones = m.splat_const(&scale_ty, 1.0)?;
    let attrs = dict(&[
        ("axis", Attribute::i64(axis as i64)),
        ("epsilon", Attribute::float(eps as f32 as f64, Type::f32())),
    ]);
    let x = m.var("x");
    Some(m.add(Op::LayerNorm, vec![x, ones], Some(attrs)))
}

pub(super) fn rules() -> Vec<Rewrite<Node, NnAnalysis>> {
    let variance = format!("(add (reduce_mean (pow {CENTERED} ?two) ?a2) ?eps)");
    vec![
        conditional(
            NAMES[0],
            &format!("(div {CENTERED} (sqrt {variance}))"),
            normalize,
        ),
        conditional(
            NAMES[1],
            &format!("(mul {CENTERED} (reciprocal (sqrt {variance})))"),
            normalize,
        ),
        conditional(NAMES[2], "(mul (layer_norm ?x ?s ?a) ?g)", |m| {
            (m.splat("s")? == 1.0).then_some(())?;
            let (x, g) = (m.var("x"), m.var("g"));
            let attrs = m.attrs("a")?;
            Some(m.add(Op::LayerNorm, vec![x, g], Some(attrs)))
        }),
        conditional(NAMES[3], "(add (layer_norm ?x ?g ?a) ?b)", |m| {
            let (x, g, b) = (m.var("x"), m.var("g"), m.var("b"));
            let attrs = m.attrs("a")?;
            Some(m.add(Op::LayerNorm, vec![x, g, b], Some(attrs)))
        }),
    ]
}
