//! Extraction costs.
//!
//! [`CostModel`] is the target-independent interface: the cost of one op
//! given its operand and result types and attributes, and its definition,
//! through which a model asks what the op does ([`ipuc_ir::interfaces`]:
//! view-like, contraction, elementwise, reduction), never which op it is.
//! The pass ships [`DefaultCostModel`] (target-neutral counts of work and
//! memory traffic); targets supply their own (the IPU's lives in
//! `ipuc-backend-ipu` and prices ops with its codelets' cycle estimates,
//! wired in by the tools).
//!
//! Extraction sums the costs of a term's ops ("tree cost"); the result of a
//! multi-result op is shared by its `get`s, so each pays its share.
//! Costs are integers (saturating `u128`) so that sums are exact and ties
//! are broken the same way on every run.

use egg::{CostFunction, Id, Language};
use rustc_hash::FxHashMap;

use ipuc_ir::interfaces::{
    Contraction, ContractionShape, ElementWork, Elementwise, OpInterface, OpSignature, Reduction,
    ReductionShape, ViewLike,
};
use ipuc_ir::{Dictionary, OpDefinition, Type};

use super::analysis::{ClassKind, EGraph};
use super::language::{Node, Op};

/// One op whose cost is asked for.
#[derive(Clone, Copy)]
pub struct OpCostQuery<'a> {
    /// The op name (`nn.matmul`), for logs.
    pub name: &'a str,
    /// The op's definition (`None`: unregistered), whose interfaces say what
    /// the op does.
    pub def: Option<&'a OpDefinition>,
    /// Operand types.
    pub operands: &'a [Type],
    /// Result types.
    pub results: &'a [Type],
    /// The op's attributes.
    pub attributes: &'a Dictionary,
}

impl std::fmt::Debug for OpCostQuery<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpCostQuery")
            .field("name", &self.name)
            .field("operands", &self.operands)
            .field("results", &self.results)
            .field("attributes", &self.attributes)
            .finish()
    }
}

/// Work counted target-independently from an op's interfaces: plain
/// arithmetic (two per multiply-accumulate) and special-function
/// evaluations (see [`ElementWork`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpWork {
    /// Plain arithmetic operations.
    pub flops: u64,
    /// Special-function evaluations.
    pub special: u64,
}

impl<'a> OpCostQuery<'a> {
    /// What interface methods see of the op.
    pub fn signature(&self) -> OpSignature<'a> {
        OpSignature::new(self.operands, self.results, self.attributes)
    }
    /// The op's model of interface `I`, if it implements it.
    pub fn interface<I: ?Sized + OpInterface>(&self) -> Option<&'a I> {
        self.def.and_then(|d| d.interface::<I>())
    }
    /// Whether the op is a view of an operand's memory ([`ViewLike`]).
    pub fn is_view(&self) -> bool {
        self.interface::<dyn ViewLike>().is_some()
    }
    /// The matrix products the op performs ([`Contraction`]); empty for
    /// other ops and for contractions with dynamic dimensions.
    pub fn contractions(&self) -> Vec<ContractionShape> {
        self.interface::<dyn Contraction>()
            .and_then(|c| c.contractions(&self.signature()))
            .unwrap_or_default()
    }
    /// The work per result element of an [`Elementwise`] op.
    pub fn element_work(&self) -> Option<ElementWork> {
        self.interface::<dyn Elementwise>()
            .map(|e| e.work(&self.signature()))
    }
    /// The reductions of a [`Reduction`] op.
    pub fn reduction(&self) -> Option<ReductionShape> {
        self.interface::<dyn Reduction>()
            .and_then(|r| r.reduction(&self.signature()))
    }
    /// Multiply-accumulates of the op's contractions (0 for other ops).
    pub fn macs(&self) -> u64 {
        self.contractions()
            .iter()
            .fold(0u64, |acc, c| acc.saturating_add(c.macs()))
    }
    /// The op's work: two flops per multiply-accumulate, each elementwise
    /// op's work per result element, and for a reduction one flop per
    /// element and pass plus its work per element.
    pub fn work(&self) -> OpWork {
        let mut flops = self.macs().saturating_mul(2);
        let mut special = 0u64;
        let mut add = |n: u64, w: ElementWork| {
            flops = flops.saturating_add(n.saturating_mul(u64::from(w.flops)));
            special = special.saturating_add(n.saturating_mul(u64::from(w.special)));
        };
        if let Some(w) = self.element_work() {
            add(self.result_elements(0), w);
        }
        if let Some(r) = self.reduction() {
            let passes = u32::try_from(r.passes.len()).unwrap_or(u32::MAX);
            add(r.elements(), ElementWork::flops(passes) + r.per_element);
        }
        OpWork { flops, special }
    }
    /// Elements of result `i` (0 if dynamic or absent).
    pub fn result_elements(&self, i: usize) -> u64 {
        self.results
            .get(i)
            .and_then(|t| t.num_elements())
            .unwrap_or(0)
    }
    /// Bytes of all operands plus all results (dynamic dimensions count 1).
    pub fn bytes_moved(&self) -> u64 {
        self.operands
            .iter()
            .chain(self.results)
            .map(tensor_bytes)
            .sum()
    }
}

/// Bytes of a tensor type (dynamic dimensions count as 1).
pub fn tensor_bytes(t: &Type) -> u64 {
    let elems: u64 = t
        .shape()
        .map_or(1, |s| s.iter().map(|&d| d.max(1) as u64).product());
    let bits = t
        .element_type()
        .and_then(|e| e.int_or_float_bit_width())
        .unwrap_or(32) as u64;
    elems * bits.div_ceil(8)
}

/// Estimates what an op costs on some target, in the target's unit
/// (cycles for the IPU). Costs must be positive: extraction relies on a
/// term costing more than each of its sub-terms.
pub trait CostModel: Send + Sync {
    /// A short name for logs (`default`, `ipu-c600`).
    fn name(&self) -> &str;
    /// The cost of one op.
    fn op_cost(&self, op: &OpCostQuery<'_>) -> f64;
}

/// A target-neutral cost, counted from the op's interfaces and types
/// alone: each op pays a fixed overhead (a kernel launch, a pass over
/// memory), one unit per flop of its [`OpWork`], [`SPECIAL_FUNCTION_FLOPS`]
/// per special-function evaluation, and one unit per byte read or written.
/// Views cost one unit. Fusing ops saves the overheads and the
/// intermediate traffic; it never changes the work.
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultCostModel;

/// The fixed per-op overhead of [`DefaultCostModel`].
pub const DEFAULT_OP_OVERHEAD: f64 = 1000.0;

/// Flops a special-function evaluation counts as in [`DefaultCostModel`]:
/// about a short polynomial or a few Newton steps, which is what hardware
/// without a special-function unit runs (and what such a unit saves).
pub const SPECIAL_FUNCTION_FLOPS: f64 = 8.0;

impl CostModel for DefaultCostModel {
    fn name(&self) -> &str {
        "default"
    }
    fn op_cost(&self, op: &OpCostQuery<'_>) -> f64 {
        if op.is_view() {
            // A view of its operand's memory: no arithmetic, no traffic.
            return 1.0;
        }
        let work = op.work();
        DEFAULT_OP_OVERHEAD
            + work.flops as f64
            + SPECIAL_FUNCTION_FLOPS * work.special as f64
            + op.bytes_moved() as f64
    }
}

/// The cost that makes a term unextractable (ill-typed nodes).
const UNEXTRACTABLE: u128 = u128::MAX / 4;

/// Adapts a [`CostModel`] to egg's extractor.
pub struct ExtractionCost<'a> {
    egraph: &'a EGraph,
    model: &'a dyn CostModel,
    cache: FxHashMap<Node, u128>,
}

impl<'a> ExtractionCost<'a> {
    /// Costs of the nodes of `egraph` under `model`.
    pub fn new(egraph: &'a EGraph, model: &'a dyn CostModel) -> Self {
        ExtractionCost {
            egraph,
            model,
            cache: FxHashMap::default(),
        }
    }

    /// The cost of `node` alone.
    pub fn node_cost(&mut self, node: &Node) -> u128 {
        let node = node.clone().map_children(|c| self.egraph.find(c));
        if let Some(&c) = self.cache.get(&node) {
            return c;
        }
        let c = self.compute(&node);
        self.cache.insert(node, c);
        c
    }

    fn compute(&self, node: &Node) -> u128 {
        let eg = self.egraph;
        match node.op {
            Op::Attr(_) | Op::Input(_) => return 0,
            Op::Const(_) => return 1,
            Op::Get(_) => return 1,
            _ => {}
        }
        let Some(name) = node.op.ir_name() else {
            return UNEXTRACTABLE;
        };
        let op_name = eg.analysis.registry.op_name(name);
        let mut operands = Vec::with_capacity(node.operands().len());
        for &c in node.operands() {
            match eg[c].data.ty() {
                Some(t) => operands.push(t.clone()),
                None => return UNEXTRACTABLE,
            }
        }
        let empty = Dictionary::new();
        let attributes = match node.attr_child() {
            Some(a) => super::analysis::attrs_of(eg, a).unwrap_or(&empty),
            None => &empty,
        };
        let cls = eg.lookup(node.clone()).map(|id| &eg[id].data.kind);
        let results = match cls {
            Some(ClassKind::Tensor(t)) => vec![t.clone()],
            Some(ClassKind::Tuple(ts)) => ts.clone(),
            _ => match super::analysis::infer(
                node.op,
                &operands.iter().collect::<Vec<_>>(),
                attributes,
            ) {
                Some(r) => r,
                None => return UNEXTRACTABLE,
            },
        };
        let q = OpCostQuery {
            name,
            def: op_name.def(),
            operands: &operands,
            results: &results,
            attributes,
        };
        // Thousandths of the model's unit keep small differences (a cheaper
        // elementwise function on a small tensor) after rounding.
        let c = self.model.op_cost(&q) * 1000.0;
        if c.is_finite() && c >= 1.0 {
            c.min(1e30) as u128
        } else {
            1
        }
    }
}

impl CostFunction<Node> for ExtractionCost<'_> {
    type Cost = u128;

    fn cost<C>(&mut self, enode: &Node, mut costs: C) -> u128
    where
        C: FnMut(Id) -> u128,
    {
        let own = self.node_cost(enode);
        if let Op::Get(_) = enode.op {
            // The results of a multi-result op share its cost.
            let tuple = enode.children[0];
            let n = match &self.egraph[tuple].data.kind {
                ClassKind::Tuple(ts) => ts.len().max(1) as u128,
                _ => return UNEXTRACTABLE,
            };
            return own.saturating_add(costs(tuple) / n);
        }
        enode
            .children
            .iter()
            .fold(own, |acc, &c| acc.saturating_add(costs(c)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query<'a>(
        registry: &'a ipuc_ir::DialectRegistry,
        name: &'a str,
        operands: &'a [Type],
        results: &'a [Type],
        attributes: &'a Dictionary,
    ) -> OpCostQuery<'a> {
        OpCostQuery {
            name,
            def: registry.op_def(name),
            operands,
            results,
            attributes,
        }
    }

    #[test]
    fn work_is_counted_from_the_interfaces() {
        let registry = ipuc_dialects::registry();
        let none = Dictionary::new();
        let (a, b) = (
            Type::tensor(&[4, 8], Type::f32()),
            Type::tensor(&[8, 3], Type::f32()),
        );
        let c = Type::tensor(&[4, 3], Type::f32());
        let (ab, cs) = ([a.clone(), b], [c.clone()]);
        let matmul = query(&registry, "nn.matmul", &ab, &cs, &none);
        assert_eq!(matmul.macs(), 4 * 3 * 8);
        assert_eq!(
            matmul.work(),
            OpWork {
                flops: 2 * 4 * 3 * 8,
                special: 0
            }
        );
        let one = [a.clone()];
        let exp = query(&registry, "nn.exp", &one, &one, &none);
        assert_eq!(
            exp.work(),
            OpWork {
                flops: 0,
                special: 32
            }
        );
        // A row softmax: two passes over the 32 elements, then 2 flops and
        // an exp per element.
        let softmax = query(&registry, "nn.softmax", &one, &one, &none);
        assert_eq!(
            softmax.work(),
            OpWork {
                flops: 2 * 32 + 2 * 32,
                special: 32
            }
        );
        // Ops without interfaces do no counted work.
        let t = [Type::tensor(&[8, 4], Type::f32())];
        let transpose = query(&registry, "nn.transpose", &one, &t, &none);
        assert_eq!(transpose.work(), OpWork::default());
    }

    #[test]
    fn the_default_model_prices_work_overhead_and_traffic() {
        let registry = ipuc_dialects::registry();
        let none = Dictionary::new();
        let x = [Type::tensor(&[4, 8], Type::f32())];
        let bytes = 2.0 * 4.0 * 8.0 * 4.0;
        let cost = |name| DefaultCostModel.op_cost(&query(&registry, name, &x, &x, &none));
        assert_eq!(cost("nn.neg"), DEFAULT_OP_OVERHEAD + 32.0 + bytes);
        assert_eq!(
            cost("nn.tanh"),
            DEFAULT_OP_OVERHEAD + SPECIAL_FUNCTION_FLOPS * 32.0 + bytes
        );
        assert_eq!(cost("nn.identity"), 1.0);
        // An unregistered op pays the overhead and its traffic.
        let unknown = OpCostQuery {
            def: None,
            ..query(&registry, "nn.frobnicate", &x, &x, &none)
        };
        assert_eq!(
            DefaultCostModel.op_cost(&unknown),
            DEFAULT_OP_OVERHEAD + bytes
        );
    }
}
