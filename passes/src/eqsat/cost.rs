//! Extraction costs.
//!
//! [`CostModel`] is the target-independent interface: the cost of one `nn`
//! op given its operand and result types and attributes. The pass ships
//! [`DefaultCostModel`] (a target-neutral count of arithmetic and memory
//! traffic); targets supply their own (the IPU's lives in
//! `ipuc-backend-ipu`, wired in by the tools).
//!
//! Extraction sums the costs of a term's ops ("tree cost"); the result of a
//! multi-result op is shared by its `get`s, so each pays its share.
//! Costs are integers (saturating `u128`) so that sums are exact and ties
//! are broken the same way on every run.

use egg::{CostFunction, Id, Language};
use rustc_hash::FxHashMap;

use ipuc_ir::{Dictionary, Type};

use super::analysis::{ClassKind, EGraph};
use super::language::{Node, Op};

/// One op whose cost is asked for.
#[derive(Clone, Copy, Debug)]
pub struct OpCostQuery<'a> {
    /// The `nn` op name (`nn.matmul`).
    pub name: &'a str,
    /// Operand types.
    pub operands: &'a [Type],
    /// Result types.
    pub results: &'a [Type],
    /// The op's attributes.
    pub attributes: &'a Dictionary,
}

impl OpCostQuery<'_> {
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
    /// Multiply-accumulates of a contraction (`nn.matmul`, `nn.linear`,
    /// `nn.gemm`, `nn.attention`); 0 for other ops.
    pub fn macs(&self) -> u64 {
        let dim = |t: &Type, i: usize| -> u64 {
            t.shape()
                .and_then(|s| s.get(i).copied())
                .map_or(1, |d| d.max(1) as u64)
        };
        let last = |t: &Type| t.shape().map_or(0, |s| s.len());
        match self.name {
            "nn.matmul" | "nn.linear" | "nn.gemm" => {
                // Result elements times the contraction length.
                let Some(a) = self.operands.first() else {
                    return 0;
                };
                let k = if self.name == "nn.gemm"
                    && self.attributes.get("transA").and_then(|v| v.as_int()) == Some(1)
                {
                    dim(a, 0)
                } else {
                    dim(a, last(a).saturating_sub(1))
                };
                self.result_elements(0) * k
            }
            "nn.attention" => {
                // q.k for every (query, key) pair, then p.v.
                let (Some(q), Some(k), Some(v)) = (
                    self.operands.first(),
                    self.operands.get(1),
                    self.operands.get(2),
                ) else {
                    return 0;
                };
                let (b, sq, e) = (dim(q, 0), dim(q, 1), dim(q, 2));
                let skv = dim(k, 1);
                let ev = dim(v, 2);
                b * sq * skv * (e + ev)
            }
            _ => 0,
        }
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

/// A target-neutral cost: each op pays a fixed overhead (a kernel launch,
/// a pass over memory), one unit per multiply-accumulate, a few units per
/// element for transcendental functions, and one unit per byte read or
/// written. Fusing ops saves the overheads and the intermediate traffic.
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultCostModel;

/// The fixed per-op overhead of [`DefaultCostModel`].
pub const DEFAULT_OP_OVERHEAD: f64 = 1000.0;

impl CostModel for DefaultCostModel {
    fn name(&self) -> &str {
        "default"
    }
    fn op_cost(&self, op: &OpCostQuery<'_>) -> f64 {
        if is_view(op.name) {
            // A view of its operand's memory: no arithmetic, no traffic.
            return 1.0;
        }
        let elems = op.result_elements(0) as f64;
        let per_element = match op.name {
            "nn.exp" | "nn.tanh" | "nn.erf" | "nn.log" | "nn.sigmoid" | "nn.pow" => 8.0,
            "nn.sqrt" | "nn.div" | "nn.reciprocal" => 4.0,
            "nn.softmax" => 12.0,
            "nn.gelu" => 12.0,
            "nn.layer_normalization" => 8.0,
            _ => 1.0,
        };
        DEFAULT_OP_OVERHEAD + op.macs() as f64 + per_element * elems + op.bytes_moved() as f64
    }
}

/// Whether an op only reinterprets or cuts its operand's memory in row-major
/// order (reshapes and splits along any axis are views for a planner that
/// chooses layouts; they move no data by themselves).
pub fn is_view(name: &str) -> bool {
    matches!(
        name,
        "nn.reshape" | "nn.squeeze" | "nn.unsqueeze" | "nn.identity" | "nn.flatten" | "nn.split"
    )
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
