//! Algebra: commutativity (so that the recognition rules match every
//! operand order), identities (`x*1`, `x+0`, `x-0`, `x/1`), division by a
//! constant as multiplication, powers from repeated products, transpose
//! and reshape chains, no-op casts, and scalar factors moved across a
//! matmul. Constant folding itself is done by the analysis.

use egg::Rewrite;

use ipuc_dialects::nn;
use ipuc_ir::Attribute;

use super::{attr_i64s, conditional, dict, syntactic, Match};
use crate::eqsat::analysis::NnAnalysis;
use crate::eqsat::language::{Node, Op};

pub(super) const NAMES: &[&str] = &[
    "add-commute",
    "mul-commute",
    "mul-one",
    "add-zero",
    "sub-zero",
    "div-one",
    "div-const-to-mul",
    "mul-self-to-square",
    "mul-square-to-cube",
    "transpose-transpose",
    "reshape-reshape",
    "reshape-noop",
    "cast-noop",
    "identity-noop",
    "scale-into-matmul-lhs",
    "scale-into-matmul-rhs",
    "scale-out-of-matmul-lhs",
    "scale-out-of-matmul-rhs",
];

/// `?x` itself, when the matched class has `?x`'s type (the other operand
/// did not broadcast it to a larger shape).
fn same_as(m: &Match<'_>, x: &str) -> Option<egg::Id> {
    (m.ty(x)? == m.matched_ty()?).then(|| m.var(x))
}

/// Whether `?c` is a one-element splat constant (a scalar factor).
fn scalar(m: &Match<'_>, c: &str) -> bool {
    m.splat(c).is_some() && m.ty(c).and_then(|t| t.num_elements()) == Some(1)
}

/// A scalar-shaped constant of `like`'s element type.
fn scalar_like(m: &mut Match<'_>, like: &ipuc_ir::Type, v: f64) -> Option<egg::Id> {
    let ty = ipuc_ir::Type::tensor(&[], like.element_type()?.clone());
    m.splat_const(&ty, v)
}

pub(super) fn rules() -> Vec<Rewrite<Node, NnAnalysis>> {
    vec![
        syntactic("add-commute", "(add ?a ?b)", "(add ?b ?a)"),
        syntactic("mul-commute", "(mul ?a ?b)", "(mul ?b ?a)"),
        conditional("mul-one", "(mul ?x ?c)", |m| {
            (m.splat("c")? == 1.0).then_some(())?;
            same_as(m, "x")
        }),
        conditional("add-zero", "(add ?x ?c)", |m| {
            (m.splat("c")? == 0.0).then_some(())?;
            same_as(m, "x")
        }),
        conditional("sub-zero", "(sub ?x ?c)", |m| {
            (m.splat("c")? == 0.0).then_some(())?;
            same_as(m, "x")
        }),
        conditional("div-one", "(div ?x ?c)", |m| {
            (m.splat("c")? == 1.0).then_some(())?;
            same_as(m, "x")
        }),
        conditional("div-const-to-mul", "(div ?x ?c)", |m| {
            let c = m.splat("c")?;
            let ty = m.ty("c")?;
            ty.element_type()?.float_kind()?;
            if c == 0.0 || !c.is_finite() {
                return None;
            }
            let inv = m.splat_const(&ty, 1.0 / c)?;
            let x = m.var("x");
            Some(m.add(Op::Mul, vec![x, inv], None))
        }),
        conditional("mul-self-to-square", "(mul ?x ?x)", |m| {
            let ty = m.ty("x")?;
            let two = scalar_like(m, &ty, 2.0)?;
            let x = m.var("x");
            Some(m.add(Op::Pow, vec![x, two], None))
        }),
        conditional("mul-square-to-cube", "(mul ?x (pow ?x ?two))", |m| {
            (m.splat("two")? == 2.0).then_some(())?;
            let ty = m.ty("x")?;
            let three = scalar_like(m, &ty, 3.0)?;
            let x = m.var("x");
            Some(m.add(Op::Pow, vec![x, three], None))
        }),
        conditional(
            "transpose-transpose",
            "(transpose (transpose ?x ?p1) ?p2)",
            |m| {
                let rank = m.ty("x")?.shape()?.len();
                let p1 =
                    nn::transpose_perm(rank, attr_i64s(&m.attrs("p1")?, "perm").as_deref()).ok()?;
                let p2 =
                    nn::transpose_perm(rank, attr_i64s(&m.attrs("p2")?, "perm").as_deref()).ok()?;
                // result[i] = inner[p2[i]] = x[p1[p2[i]]].
                let perm: Vec<i64> = p2.iter().map(|&i| p1[i] as i64).collect();
                let x = m.var("x");
                if perm.iter().enumerate().all(|(i, &p)| p == i as i64) {
                    return Some(x);
                }
                let d = dict(&[("perm", Attribute::dense_i64_array(&perm))]);
                Some(m.add(Op::Transpose, vec![x], Some(d)))
            },
        ),
        conditional("reshape-reshape", "(reshape (reshape ?x ?s1) ?s2)", |m| {
            // The outer shape may use ONNX's 0 (copy) and -1 (infer): use
            // the static result shape instead.
            let ty = m.matched_ty()?;
            if !ty.has_static_shape() {
                return None;
            }
            let d = dict(&[("shape", Attribute::dense_i64_array(ty.shape()?))]);
            let x = m.var("x");
            Some(m.add(Op::Reshape, vec![x], Some(d)))
        }),
        conditional("reshape-noop", "(reshape ?x ?s)", |m| same_as(m, "x")),
        conditional("cast-noop", "(cast ?x ?a)", |m| same_as(m, "x")),
        conditional("identity-noop", "(identity ?x)", |m| same_as(m, "x")),
        conditional("scale-into-matmul-lhs", "(mul (matmul ?a ?b) ?c)", |m| {
            scalar(m, "c").then_some(())?;
            let (a, b, c) = (m.var("a"), m.var("b"), m.var("c"));
            let scaled = m.add(Op::Mul, vec![a, c], None);
            (m.egraph[scaled].data.ty()? == &m.ty("a")?).then_some(())?;
            Some(m.add(Op::Matmul, vec![scaled, b], None))
        }),
        conditional("scale-into-matmul-rhs", "(mul (matmul ?a ?b) ?c)", |m| {
            scalar(m, "c").then_some(())?;
            let (a, b, c) = (m.var("a"), m.var("b"), m.var("c"));
            let scaled = m.add(Op::Mul, vec![b, c], None);
            (m.egraph[scaled].data.ty()? == &m.ty("b")?).then_some(())?;
            Some(m.add(Op::Matmul, vec![a, scaled], None))
        }),
        conditional("scale-out-of-matmul-lhs", "(matmul (mul ?a ?c) ?b)", |m| {
            scalar(m, "c").then_some(())?;
            let (a, b, c) = (m.var("a"), m.var("b"), m.var("c"));
            let prod = m.add(Op::Matmul, vec![a, b], None);
            Some(m.add(Op::Mul, vec![prod, c], None))
        }),
        conditional("scale-out-of-matmul-rhs", "(matmul ?a (mul ?b ?c))", |m| {
            scalar(m, "c").then_some(())?;
            let (a, b, c) = (m.var("a"), m.var("b"), m.var("c"));
            let prod = m.add(Op::Matmul, vec![a, b], None);
            Some(m.add(Op::Mul, vec![prod, c], None))
        }),
    ]
}
