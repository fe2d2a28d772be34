//! `matmul(x, w) + b` with a 2-D weight and a 1-D bias becomes `nn.linear`
//! (the bias-first order is covered by commutativity).

use egg::Rewrite;

use super::conditional;
use crate::eqsat::analysis::NnAnalysis;
use crate::eqsat::language::{Node, Op};

pub(super) const NAMES: &[&str] = &["linear-bias"];

pub(super) fn rules() -> Vec<Rewrite<Node, NnAnalysis>> {
    vec![conditional(NAMES[0], "(add (matmul ?x ?w) ?b)", |m| {
        if m.ty("w")?.shape()?.len() != 2 || m.ty("b")?.shape()?.len() != 1 {
            return None;
        }
        let (x, w, b) = (m.var("x"), m.var("w"), m.var("b"));
        Some(m.add(Op::Linear, vec![x, w, b], None))
    })]
}
