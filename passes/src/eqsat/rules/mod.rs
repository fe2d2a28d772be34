//! The rewrite rules, in groups that the `rules` option turns on and off.
//!
//! Syntactic rules are egg patterns. Rules with conditions on constants,
//! attributes or shapes use [`conditional`]: a pattern plus a function that
//! inspects the match and builds the replacement. Every replacement is
//! type-checked by the analysis before it is merged: a replacement whose
//! inferred type differs from the matched e-class's is dropped, so no rule
//! can change what a value is.

mod algebra;
mod attention;
mod gelu;
mod layernorm;
mod linear;
mod qkv;
mod softmax;

use egg::{Applier, Id, Language, Pattern, PatternAst, Rewrite, Subst, Symbol, Var};

use ipuc_ir::{float_format, Attribute, Dictionary, FloatKind, Type};

use super::analysis::{add_attr, add_const, attrs_of, splat_attribute, EGraph, NnAnalysis};
use super::language::{Node, Op};

/// A rule group.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RuleGroup {
    /// Identities, constant folding, transposes, reshapes, scalar moves.
    Algebra,
    /// GELU (erf and tanh forms) -> `nn.gelu`.
    Gelu,
    /// The LayerNorm decomposition -> `nn.layer_normalization`.
    LayerNorm,
    /// The softmax decomposition -> `nn.softmax`.
    Softmax,
    /// matmul + bias -> `nn.linear`.
    Linear,
    /// Scaled dot-product attention -> `nn.attention`.
    Attention,
    /// Linears sharing an input -> one linear and a split.
    Qkv,
}

impl RuleGroup {
    /// Every group, in option order.
    pub const ALL: [RuleGroup; 7] = [
        RuleGroup::Algebra,
        RuleGroup::Gelu,
        RuleGroup::LayerNorm,
        RuleGroup::Softmax,
        RuleGroup::Linear,
        RuleGroup::Attention,
        RuleGroup::Qkv,
    ];
    /// The name in the `rules` option.
    pub fn name(self) -> &'static str {
        match self {
            RuleGroup::Algebra => "algebra",
            RuleGroup::Gelu => "gelu",
            RuleGroup::LayerNorm => "layernorm",
            RuleGroup::Softmax => "softmax",
            RuleGroup::Linear => "linear",
            RuleGroup::Attention => "attention",
            RuleGroup::Qkv => "qkv",
        }
    }
    /// Parses a group name.
    pub fn from_name(s: &str) -> Option<RuleGroup> {
        RuleGroup::ALL.into_iter().find(|g| g.name() == s)
    }
    /// The rules of this group.
    pub fn rules(self) -> Vec<Rewrite<Node, NnAnalysis>> {
        match self {
            RuleGroup::Algebra => algebra::rules(),
            RuleGroup::Gelu => gelu::rules(),
            RuleGroup::LayerNorm => layernorm::rules(),
            RuleGroup::Softmax => softmax::rules(),
            RuleGroup::Linear => linear::rules(),
            RuleGroup::Attention => attention::rules(),
            RuleGroup::Qkv => qkv::rules(),
        }
    }
    /// The names of the rules of this group (for statistics).
    pub fn rule_names(self) -> &'static [&'static str] {
        match self {
            RuleGroup::Algebra => algebra::NAMES,
            RuleGroup::Gelu => gelu::NAMES,
            RuleGroup::LayerNorm => layernorm::NAMES,
            RuleGroup::Softmax => softmax::NAMES,
            RuleGroup::Linear => linear::NAMES,
            RuleGroup::Attention => attention::NAMES,
            RuleGroup::Qkv => qkv::NAMES,
        }
    }
}

/// What a conditional rule's builder sees.
pub struct Match<'a> {
    /// The e-graph.
    pub egraph: &'a mut EGraph,
    /// The matched e-class.
    pub eclass: Id,
    /// The bindings.
    pub subst: &'a Subst,
}

impl Match<'_> {
    /// The class bound to `?name`.
    pub fn var(&self, name: &str) -> Id {
        let v: Var = format!("?{name}").parse().expect("pattern variable");
        self.subst[v]
    }
    /// The splat value of `?name`, if it is a splat constant.
    pub fn splat(&self, name: &str) -> Option<f64> {
        self.egraph[self.var(name)].data.splat
    }
    /// Whether `?name` is a splat constant that stands for `want`: within
    /// relative 1e-4 of it, or `want` rounded to the constant's float type
    /// (a model converted to f16 holds GELU's 0.044715 as 0.0447083, 1.5e-4
    /// away: the rules must still see it).
    pub fn is_const(&self, name: &str, want: f64) -> bool {
        let Some(v) = self.splat(name) else {
            return false;
        };
        approx(v, want)
            || self
                .ty(name)
                .and_then(|t| t.element_type()?.float_kind())
                .is_some_and(|kind| rounds_to(kind, want, v))
    }
    /// The tensor type of `?name`.
    pub fn ty(&self, name: &str) -> Option<Type> {
        self.egraph[self.var(name)].data.ty().cloned()
    }
    /// The tensor type of the matched class.
    pub fn matched_ty(&self) -> Option<Type> {
        self.egraph[self.eclass].data.ty().cloned()
    }
    /// The attribute dictionary bound to `?name`.
    pub fn attrs(&self, name: &str) -> Option<Dictionary> {
        attrs_of(self.egraph, self.var(name)).cloned()
    }
    /// Adds `op(children..., attrs)`.
    pub fn add(&mut self, op: Op, mut children: Vec<Id>, attrs: Option<Dictionary>) -> Id {
        if op.has_attrs() {
            children.push(add_attr(self.egraph, attrs.unwrap_or_default()));
        }
        self.egraph.add(Node::new(op, children))
    }
    /// Adds a splat constant of type `ty`.
    pub fn splat_const(&mut self, ty: &Type, v: f64) -> Option<Id> {
        Some(add_const(self.egraph, splat_attribute(ty, v)?))
    }
}

/// Whether `v` is `want` rounded to `kind`, directly or through f32 (the
/// exporter's constant, converted).
fn rounds_to(kind: FloatKind, want: f64, v: f64) -> bool {
    let round = |x: f64| float_format::round_to(kind, x);
    v == round(want) || v == round(f64::from(want as f32))
}

/// Whether `v` is within relative 1e-4 of `want`.
pub fn approx(v: f64, want: f64) -> bool {
    (v - want).abs() <= 1e-4 * want.abs().max(1e-30)
}

/// A dictionary from entries.
pub fn dict(entries: &[(&str, Attribute)]) -> Dictionary {
    let mut d = Dictionary::new();
    for (k, v) in entries {
        d.set(k, v.clone());
    }
    d
}

/// An `i64` attribute of a dictionary, or `default`.
pub fn attr_i64(d: &Dictionary, name: &str, default: i64) -> i64 {
    d.get(name)
        .and_then(|a| a.as_int())
        .map_or(default, |v| v as i64)
}

/// An `array<i64>` attribute of a dictionary.
pub fn attr_i64s(d: &Dictionary, name: &str) -> Option<Vec<i64>> {
    d.get(name).and_then(|a| a.as_i64_list())
}

type Builder = dyn Fn(&mut Match<'_>) -> Option<Id> + Send + Sync;

/// An applier that runs a builder and merges what it built if the types agree.
struct BuildApplier {
    build: Box<Builder>,
}

impl Applier<Node, NnAnalysis> for BuildApplier {
    fn apply_one(
        &self,
        egraph: &mut EGraph,
        eclass: Id,
        subst: &Subst,
        _searcher_ast: Option<&PatternAst<Node>>,
        _rule_name: Symbol,
    ) -> Vec<Id> {
        let mut m = Match {
            egraph,
            eclass,
            subst,
        };
        let Some(new) = (self.build)(&mut m) else {
            return Vec::new();
        };
        merge_checked(egraph, eclass, new)
    }
}

/// Unions `new` into `eclass` if both are the same kind of value.
pub fn merge_checked(egraph: &mut EGraph, eclass: Id, new: Id) -> Vec<Id> {
    if egraph[new].data.kind != egraph[eclass].data.kind {
        tracing::trace!("eqsat: dropped a replacement whose type differs");
        return Vec::new();
    }
    if egraph.union(eclass, new) {
        vec![eclass]
    } else {
        Vec::new()
    }
}

/// A rule: `pattern` matched, then `build` makes the replacement (or declines).
pub fn conditional(
    name: &'static str,
    pattern: &str,
    build: impl Fn(&mut Match<'_>) -> Option<Id> + Send + Sync + 'static,
) -> Rewrite<Node, NnAnalysis> {
    let searcher: Pattern<Node> = pattern.parse().expect("rule pattern parses");
    Rewrite::new(
        name,
        searcher,
        BuildApplier {
            build: Box::new(build),
        },
    )
    .expect("rule is well-formed")
}

/// A purely syntactic rule `lhs => rhs` (the replacement is still type-checked).
pub fn syntactic(name: &'static str, lhs: &str, rhs: &str) -> Rewrite<Node, NnAnalysis> {
    let rhs: Pattern<Node> = rhs.parse().expect("rule pattern parses");
    conditional(name, lhs, move |m| {
        let ast = rhs.ast.as_ref();
        let mut ids: Vec<Id> = Vec::with_capacity(ast.len());
        for n in ast {
            let id = match n {
                egg::ENodeOrVar::Var(v) => m.subst[*v],
                egg::ENodeOrVar::ENode(e) => {
                    let e = e.clone().map_children(|c| ids[usize::from(c)]);
                    m.egraph.add(e)
                }
            };
            ids.push(id);
        }
        ids.last().copied()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_is_named_in_its_group() {
        for g in RuleGroup::ALL {
            let names: Vec<String> = g.rules().iter().map(|r| r.name.to_string()).collect();
            assert_eq!(names, g.rule_names(), "{}", g.name());
            assert_eq!(RuleGroup::from_name(g.name()), Some(g));
        }
    }
}
