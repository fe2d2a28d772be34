//! Shape ops. ONNX passes shapes, axes, pads and slice bounds as tensors in
//! newer opsets and as attributes in older ones; either way they must be
//! constants at import and become the `nn` ops' static attributes.

use ipuc_dialects::nn::elements::{floats, ints};
use ipuc_dialects::nn::{
    normalize_axis, onnx_reshape_shape, ConcatOp, ExpandOp, FlattenOp, GatherOp, PadOp, ReshapeOp,
    SliceOp, SliceParams, SplitOp, SqueezeOp, TileOp, TransposeOp, UnsqueezeOp,
};

use super::{error, ImportError, Importer, NodeResult};
use crate::onnx::Node;

/// The ops of this family.
pub(super) const OPS: &[&str] = &[
    "Reshape",
    "Transpose",
    "Concat",
    "Split",
    "Slice",
    "Gather",
    "Squeeze",
    "Unsqueeze",
    "Expand",
    "Tile",
    "Flatten",
    "Pad",
];

/// Axes from input `index` (opset >= `since`) or the `axes` attribute.
fn axes(
    imp: &mut Importer<'_>,
    node: &Node,
    index: usize,
    since: i64,
) -> Result<Option<Vec<i64>>, ImportError> {
    if imp.opset >= since {
        imp.optional_const_ints(node, index, "axes")
    } else {
        Ok(node.ints_attr("axes")?.map(<[i64]>::to_vec))
    }
}

pub(super) fn import(imp: &mut Importer<'_>, node: &Node) -> NodeResult {
    let loc = Importer::loc(node);
    let x = imp.input(node, 0)?;
    let shape = imp.shape(x);
    let state = match node.op_type.as_str() {
        "Reshape" => {
            let target = imp.const_ints(node, 1, "target shape")?;
            // `allowzero` (opset 14): 0 means a zero-sized dimension, not "copy".
            let allowzero = node.int_attr("allowzero", 0)? != 0;
            let resolved =
                onnx_reshape_shape(&shape, &target, allowzero).map_err(|m| error(node, m))?;
            ReshapeOp::build(imp.ctx, x, &resolved, loc)
        }
        "Transpose" => {
            let perm: Vec<i64> = match node.ints_attr("perm")? {
                Some(p) => p.to_vec(),
                None => (0..shape.len() as i64).rev().collect(),
            };
            TransposeOp::build(imp.ctx, x, &perm, loc)
        }
        "Concat" => {
            let inputs: Vec<_> = (0..node.inputs.len())
                .filter_map(|i| imp.optional_input(node, i).transpose())
                .collect::<Result<_, _>>()?;
            let axis = node.int_attr("axis", 0)?;
            ConcatOp::build(imp.ctx, &inputs, axis, loc)
        }
        "Split" => {
            let axis = node.int_attr("axis", 0)?;
            let a = normalize_axis(axis, shape.len()).map_err(|m| error(node, m))?;
            let sizes = if imp.opset >= 13 {
                imp.optional_const_ints(node, 1, "split sizes")?
            } else {
                node.ints_attr("split")?.map(<[i64]>::to_vec)
            };
            let sizes = match sizes {
                Some(s) => s,
                None => {
                    // Opset 18's `num_outputs` allows a smaller last piece;
                    // earlier opsets split evenly into one piece per output.
                    let n = match node.attribute("num_outputs") {
                        Some(_) => node.int_attr("num_outputs", 0)?,
                        None => node.outputs.len() as i64,
                    };
                    if n <= 0 || n as usize != node.outputs.len() {
                        return Err(error(
                            node,
                            format!(
                                "cannot split into {n} pieces for {} outputs",
                                node.outputs.len()
                            ),
                        ));
                    }
                    let dim = shape[a];
                    let piece = dim
                        .checked_add(n - 1)
                        .map(|v| v / n)
                        .ok_or_else(|| error(node, format!("axis size {dim} is out of range")))?;
                    let mut sizes = vec![piece; n as usize - 1];
                    sizes.push(dim - piece * (n - 1));
                    if sizes.iter().any(|&s| s < 0) {
                        return Err(error(
                            node,
                            format!("cannot split axis {a} of size {dim} into {n} pieces"),
                        ));
                    }
                    sizes
                }
            };
            SplitOp::build(imp.ctx, x, axis, &sizes, loc)
        }
        "Slice" => {
            let params = if imp.opset >= 10 {
                SliceParams {
                    starts: imp.const_ints(node, 1, "starts")?,
                    ends: imp.const_ints(node, 2, "ends")?,
                    axes: imp.optional_const_ints(node, 3, "axes")?,
                    steps: imp.optional_const_ints(node, 4, "steps")?,
                }
            } else {
                let list = |name: &str| -> Result<Option<Vec<i64>>, ImportError> {
                    Ok(node.ints_attr(name)?.map(<[i64]>::to_vec))
                };
                SliceParams {
                    starts: list("starts")?.unwrap_or_default(),
                    ends: list("ends")?.unwrap_or_default(),
                    axes: list("axes")?,
                    steps: None,
                }
            };
            SliceOp::build(imp.ctx, x, &params, loc)
        }
        "Gather" => {
            let indices = imp.input(node, 1)?;
            GatherOp::build(imp.ctx, x, indices, node.int_attr("axis", 0)?, loc)
        }
        "Squeeze" => {
            let axes = axes(imp, node, 1, 13)?;
            SqueezeOp::build(imp.ctx, x, axes.as_deref(), loc)
        }
        "Unsqueeze" => {
            let axes = axes(imp, node, 1, 13)?
                .ok_or_else(|| error(node, "needs `axes` (an input from opset 13)"))?;
            UnsqueezeOp::build(imp.ctx, x, &axes, loc)
        }
        "Expand" => {
            let target = imp.const_ints(node, 1, "target shape")?;
            ExpandOp::build(imp.ctx, x, &target, loc)
        }
        "Tile" => {
            let repeats = imp.const_ints(node, 1, "repeats")?;
            TileOp::build(imp.ctx, x, &repeats, loc)
        }
        "Flatten" => FlattenOp::build(imp.ctx, x, node.int_attr("axis", 1)?, loc),
        "Pad" => {
            let (pads, value) = pad_operands(imp, node, shape.len())?;
            let mode = node.string_attr("mode", "constant")?;
            if mode != "constant" {
                return super::rearrange::pad_by_gather(imp, node, x, mode, &pads);
            }
            PadOp::build(imp.ctx, x, &pads, value, loc)
        }
        other => unreachable!("`{other}` is not a shape op"),
    };
    imp.emit(node, state)
}

/// The full `[begins..., ends...]` pads and the fill value of a `Pad` node.
fn pad_operands(
    imp: &mut Importer<'_>,
    node: &Node,
    rank: usize,
) -> Result<(Vec<i64>, f32), ImportError> {
    if imp.opset < 11 {
        let pads = node
            .ints_attr("pads")?
            .ok_or_else(|| error(node, "needs the `pads` attribute"))?
            .to_vec();
        return Ok((pads, node.float_attr("value", 0.0)?));
    }
    let given = imp.const_ints(node, 1, "pads")?;
    let value = match imp.optional_input(node, 2)? {
        None => 0.0,
        Some(v) => {
            let d = imp.constant_scalar(node, v, "the constant value (input #2)")?;
            match floats(&d) {
                Some(f) => f[0] as f32,
                None => ints(&d).map_or(0.0, |i| i[0] as f32),
            }
        }
    };
    // Opset 18 may pad only some axes.
    let Some(axes) = imp.optional_const_ints(node, 3, "axes")? else {
        return Ok((given, value));
    };
    if given.len() != 2 * axes.len() {
        return Err(error(
            node,
            format!(
                "`pads` has {} entries, but {} axes need {}",
                given.len(),
                axes.len(),
                2 * axes.len()
            ),
        ));
    }
    let mut pads = vec![0; 2 * rank];
    for (k, &axis) in axes.iter().enumerate() {
        let a = normalize_axis(axis, rank).map_err(|m| error(node, m))?;
        pads[a] = given[k];
        pads[a + rank] = given[k + axes.len()];
    }
    Ok((pads, value))
}
