//! A small builder for ONNX function bodies: the `nn` ops one node expands
//! into, each built by the dialect's typed builder at the node's location and
//! folded on the spot (see [`Importer::emit`]). The function-op importers
//! (`functions.rs`) write their ONNX bodies with it.

use ipuc_dialects::nn::elements::{from_floats, from_ints};
use ipuc_dialects::nn::{
    BinaryKind, BinaryOp, CompareKind, CompareOp, ConcatOp, ExpandOp, GatherOp, MatmulOp, PadOp,
    ReduceKind, ReduceOp, ReshapeOp, SliceOp, SliceParams, SoftmaxOp, TransposeOp, UnaryKind,
    UnaryOp, UnsqueezeOp, WhereOp,
};
use ipuc_ir::{Location, Type, Value};

use super::{error, ImportError, Importer};
use crate::onnx::Node;

/// Builds the ops of `node`'s body into the importer's function.
pub(crate) struct Body<'i, 'a, 'n> {
    pub(crate) imp: &'i mut Importer<'a>,
    pub(crate) node: &'n Node,
    loc: Location,
}

/// What a body-building step gives: the value it built, or why it could not.
pub(super) type Built = Result<Value, ImportError>;

impl<'i, 'a, 'n> Body<'i, 'a, 'n> {
    pub(crate) fn new(imp: &'i mut Importer<'a>, node: &'n Node) -> Self {
        Body {
            imp,
            node,
            loc: Importer::loc(node),
        }
    }

    /// An error about the node.
    pub(crate) fn error(&self, detail: impl std::fmt::Display) -> ImportError {
        error(self.node, detail)
    }

    /// Required input `i`.
    pub(crate) fn input(&mut self, i: usize) -> Built {
        self.imp.input(self.node, i)
    }

    /// Optional input `i`.
    pub(crate) fn optional_input(&mut self, i: usize) -> Result<Option<Value>, ImportError> {
        self.imp.optional_input(self.node, i)
    }

    /// Whether the node's output `i` is named (wanted by the graph).
    pub(crate) fn wants_output(&self, i: usize) -> bool {
        self.node.outputs.get(i).is_some_and(|o| !o.is_empty())
    }

    /// The static shape of `v`.
    pub(crate) fn shape(&self, v: Value) -> Vec<i64> {
        self.imp.shape(v)
    }

    /// The element type of `v`.
    pub(crate) fn element(&self, v: Value) -> Result<Type, ImportError> {
        self.imp
            .ty(v)
            .element_type()
            .cloned()
            .ok_or_else(|| self.error("operands must be tensors"))
    }

    /// A constant of type `tensor<shape x elem>` holding `values` (floats or
    /// integers by the element type).
    pub(crate) fn constant(&mut self, shape: &[i64], elem: &Type, values: &[f64]) -> Built {
        let ty = Type::tensor(shape, elem.clone());
        let attr = if elem.is_float() {
            from_floats(&ty, values)
        } else {
            from_ints(&ty, &values.iter().map(|&v| v as i128).collect::<Vec<_>>())
        }
        .ok_or_else(|| self.error(format!("cannot build a constant of type '{ty}'")))?;
        self.imp
            .constant(attr, self.loc.clone())
            .map_err(|d| self.error(d.message))
    }

    /// A rank-0 constant of `v`'s element type.
    pub(crate) fn scalar_like(&mut self, v: Value, value: f64) -> Built {
        let elem = self.element(v)?;
        self.constant(&[], &elem, &[value])
    }

    pub(crate) fn binary(&mut self, kind: BinaryKind, a: Value, b: Value) -> Built {
        let state = BinaryOp::build(self.imp.ctx, kind, a, b, self.loc.clone());
        self.imp.emit1(self.node, state)
    }

    pub(crate) fn unary(&mut self, kind: UnaryKind, x: Value) -> Built {
        let state = UnaryOp::build(self.imp.ctx, kind, x, self.loc.clone());
        self.imp.emit1(self.node, state)
    }

    pub(crate) fn compare(&mut self, kind: CompareKind, a: Value, b: Value) -> Built {
        let state = CompareOp::build(self.imp.ctx, kind, a, b, self.loc.clone());
        self.imp.emit1(self.node, state)
    }

    pub(crate) fn select(&mut self, cond: Value, x: Value, y: Value) -> Built {
        let state = WhereOp::build(self.imp.ctx, cond, x, y, self.loc.clone());
        self.imp.emit1(self.node, state)
    }

    /// `kind` over `axes` (`None`: all).
    pub(crate) fn reduce(
        &mut self,
        kind: ReduceKind,
        x: Value,
        axes: Option<&[i64]>,
        keepdims: bool,
    ) -> Built {
        let state = ReduceOp::build(self.imp.ctx, kind, x, axes, keepdims, self.loc.clone());
        self.imp.emit1(self.node, state)
    }

    pub(crate) fn softmax(&mut self, x: Value, axis: i64) -> Built {
        let state = SoftmaxOp::build(self.imp.ctx, x, axis, self.loc.clone());
        self.imp.emit1(self.node, state)
    }

    pub(crate) fn reshape(&mut self, x: Value, shape: &[i64]) -> Built {
        let state = ReshapeOp::build(self.imp.ctx, x, shape, self.loc.clone());
        self.imp.emit1(self.node, state)
    }

    pub(crate) fn unsqueeze(&mut self, x: Value, axes: &[i64]) -> Built {
        let state = UnsqueezeOp::build(self.imp.ctx, x, axes, self.loc.clone());
        self.imp.emit1(self.node, state)
    }

    pub(crate) fn transpose(&mut self, x: Value, perm: &[i64]) -> Built {
        let state = TransposeOp::build(self.imp.ctx, x, perm, self.loc.clone());
        self.imp.emit1(self.node, state)
    }

    pub(crate) fn expand(&mut self, x: Value, shape: &[i64]) -> Built {
        let state = ExpandOp::build(self.imp.ctx, x, shape, self.loc.clone());
        self.imp.emit1(self.node, state)
    }

    pub(crate) fn concat(&mut self, inputs: &[Value], axis: i64) -> Built {
        let state = ConcatOp::build(self.imp.ctx, inputs, axis, self.loc.clone());
        self.imp.emit1(self.node, state)
    }

    /// Elements `start..end` (step 1) of `x` along `axis`.
    pub(crate) fn slice(&mut self, x: Value, axis: i64, start: i64, end: i64) -> Built {
        let params = SliceParams {
            starts: vec![start],
            ends: vec![end],
            axes: Some(vec![axis]),
            steps: None,
        };
        let state = SliceOp::build(self.imp.ctx, x, &params, self.loc.clone());
        self.imp.emit1(self.node, state)
    }

    /// `x` padded with `value` by `pads` (`[begins..., ends...]`).
    pub(crate) fn pad(&mut self, x: Value, pads: &[i64], value: f32) -> Built {
        let state = PadOp::build(self.imp.ctx, x, pads, value, self.loc.clone());
        self.imp.emit1(self.node, state)
    }

    /// The elements of `x` at the constant positions `indices` along `axis`.
    pub(crate) fn gather(&mut self, x: Value, axis: i64, indices: &[i64]) -> Built {
        let values: Vec<f64> = indices.iter().map(|&i| i as f64).collect();
        let indices = self.constant(&[indices.len() as i64], &Type::i64(), &values)?;
        let state = GatherOp::build(self.imp.ctx, x, indices, axis, self.loc.clone());
        self.imp.emit1(self.node, state)
    }

    pub(crate) fn matmul(&mut self, a: Value, b: Value) -> Built {
        let state = MatmulOp::build(self.imp.ctx, a, b, self.loc.clone());
        self.imp.emit1(self.node, state)
    }

    /// `x` cast to `to` (no op when it has that element type).
    pub(crate) fn cast(&mut self, x: Value, to: &Type) -> Built {
        super::elementwise::cast(self.imp, self.node, x, to, true)
    }
}
