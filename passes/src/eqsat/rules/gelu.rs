//! GELU recognition. The exact form `0.5 x (1 + erf(x / sqrt 2))` and the
//! tanh form `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`, in each of
//! the three ways to associate the product `0.5 * x * (1 + ...)`; operand
//! order is covered by the commutativity rules, `x / sqrt 2` by
//! division-as-multiplication and `x*x*x` by the power rules.

use egg::Rewrite;

use ipuc_ir::Attribute;

use super::{conditional, dict, Match};
use crate::eqsat::analysis::NnAnalysis;
use crate::eqsat::language::{Node, Op};

pub(super) const NAMES: &[&str] = &[
    "gelu-tanh-half-x",
    "gelu-tanh-half-t",
    "gelu-tanh-x-t",
    "gelu-erf-half-x",
    "gelu-erf-half-t",
    "gelu-erf-x-t",
];

/// `1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))`.
const TANH_TERM: &str = "(add ?one (tanh (mul ?b (add ?x (mul ?k (pow ?x ?three))))))";
/// `1 + erf(x * (1/sqrt 2))`.
const ERF_TERM: &str = "(add ?one (erf (mul ?x ?r)))";

fn tanh_constants(m: &Match<'_>) -> bool {
    m.is_const("h", 0.5)
        && m.is_const("one", 1.0)
        && m.is_const("b", (2.0 / std::f64::consts::PI).sqrt())
        && m.is_const("k", 0.044715)
        && m.splat("three") == Some(3.0)
}

fn erf_constants(m: &Match<'_>) -> bool {
    m.is_const("h", 0.5)
        && m.is_const("one", 1.0)
        && m.is_const("r", std::f64::consts::FRAC_1_SQRT_2)
}

fn gelu(m: &mut Match<'_>, tanh: bool) -> Option<egg::Id> {
    let ok = if tanh {
        tanh_constants(m)
    } else {
        erf_constants(m)
    };
    if !ok || m.ty("x")? != m.matched_ty()? {
        return None;
    }
    let attrs = if tanh {
        dict(&[("approximate", Attribute::string("tanh"))])
    } else {
        dict(&[])
    };
    let x = m.var("x");
    Some(m.add(Op::Gelu, vec![x], Some(attrs)))
}

pub(super) fn rules() -> Vec<Rewrite<Node, NnAnalysis>> {
    let forms = |term: &str| {
        [
            format!("(mul (mul ?h ?x) {term})"),
            format!("(mul (mul ?h {term}) ?x)"),
            format!("(mul (mul ?x {term}) ?h)"),
        ]
    };
    let mut rules = Vec::new();
    for (i, p) in forms(TANH_TERM).into_iter().enumerate() {
        rules.push(conditional(NAMES[i], &p, |m| gelu(m, true)));
    }
    for (i, p) in forms(ERF_TERM).into_iter().enumerate() {
        rules.push(conditional(NAMES[3 + i], &p, |m| gelu(m, false)));
    }
    rules
}
