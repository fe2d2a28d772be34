//! Reductions and normalisations: `ReduceMean`/`ReduceSum`/`ReduceMax`,
//! `Softmax` (both axis conventions), `LayerNormalization`, `Gelu`.

use ipuc_dialects::nn::{
    GeluApproximation, GeluOp, LayerNormalizationOp, ReduceKind, ReduceOp, ReshapeOp, SoftmaxOp,
    DEFAULT_LAYER_NORM_EPSILON,
};

use super::{error, Importer, NodeResult};
use crate::onnx::Node;

/// The ops of this family.
pub(super) const OPS: &[&str] = &[
    "ReduceMean",
    "ReduceSum",
    "ReduceMax",
    "Softmax",
    "LayerNormalization",
    "Gelu",
];

pub(super) fn import(imp: &mut Importer<'_>, node: &Node) -> NodeResult {
    let loc = Importer::loc(node);
    match node.op_type.as_str() {
        op @ ("ReduceMean" | "ReduceSum" | "ReduceMax") => {
            let kind = match op {
                "ReduceMean" => ReduceKind::Mean,
                "ReduceSum" => ReduceKind::Sum,
                _ => ReduceKind::Max,
            };
            let x = imp.input(node, 0)?;
            // Axes moved from an attribute to an input in opset 13 (ReduceSum)
            // and 18 (the others), together with `noop_with_empty_axes`.
            let axes_as_input = imp.opset >= 18 || (op == "ReduceSum" && imp.opset >= 13);
            let axes = if axes_as_input {
                imp.optional_const_ints(node, 1, "axes")?
            } else {
                node.ints_attr("axes")?.map(<[i64]>::to_vec)
            };
            let keepdims = node.int_attr("keepdims", 1)? != 0;
            let axes = match axes {
                Some(a) if a.is_empty() => None,
                a => a,
            };
            if axes.is_none() && node.int_attr("noop_with_empty_axes", 0)? != 0 {
                return Ok(vec![x]);
            }
            let state = ReduceOp::build(imp.ctx, kind, x, axes.as_deref(), keepdims, loc);
            imp.emit(node, state)
        }
        "Softmax" => {
            let x = imp.input(node, 0)?;
            let shape = imp.shape(x);
            let rank = shape.len() as i64;
            if imp.opset >= 13 {
                let state = SoftmaxOp::build(imp.ctx, x, node.int_attr("axis", -1)?, loc);
                return imp.emit(node, state);
            }
            // Before opset 13 the input is seen as 2-D, [prod(d[..axis]), prod(d[axis..])],
            // and each row is normalised: a softmax over all of d[axis..].
            let axis = node.int_attr("axis", 1)?;
            let a = if axis < 0 { axis + rank } else { axis };
            if !(0..=rank).contains(&a) || rank == 0 {
                return Err(error(
                    node,
                    format!("axis {axis} is out of range for rank {rank}"),
                ));
            }
            if a == rank - 1 {
                let state = SoftmaxOp::build(imp.ctx, x, a, loc);
                return imp.emit(node, state);
            }
            let rows: i64 = shape[..a as usize].iter().product();
            let cols: i64 = shape[a as usize..].iter().product();
            let state = ReshapeOp::build(imp.ctx, x, &[rows, cols], loc.clone());
            let flat = imp.emit1(node, state)?;
            let state = SoftmaxOp::build(imp.ctx, flat, 1, loc.clone());
            let y = imp.emit1(node, state)?;
            let state = ReshapeOp::build(imp.ctx, y, &shape, loc);
            imp.emit(node, state)
        }
        "LayerNormalization" => {
            let (x, scale) = (imp.input(node, 0)?, imp.input(node, 1)?);
            let bias = imp.optional_input(node, 2)?;
            // `stash_type` only says in which precision to compute; ipuc's
            // lowering chooses its own accumulation precision. The optional
            // Mean/InvStdDev outputs are not computed (an error if used).
            let state = LayerNormalizationOp::build(
                imp.ctx,
                x,
                scale,
                bias,
                node.int_attr("axis", -1)?,
                node.float_attr("epsilon", DEFAULT_LAYER_NORM_EPSILON)?,
                loc,
            );
            imp.emit(node, state)
        }
        "Gelu" => {
            let x = imp.input(node, 0)?;
            let approximate = GeluApproximation::parse(node.string_attr("approximate", "none")?)
                .map_err(|m| error(node, m))?;
            let state = GeluOp::build(imp.ctx, x, approximate, loc);
            imp.emit(node, state)
        }
        other => unreachable!("`{other}` is not a reduction or normalisation"),
    }
}
