//! `MaxPool` and `AveragePool`, any number of spatial axes, as
//! `nn.max_pool` / `nn.average_pool` with `auto_pad` resolved to explicit
//! pads. `MaxPool`'s optional `Indices` output is not computed (a model
//! that uses it gets the importer's "not computed" error).

use ipuc_dialects::nn::{PoolKind, PoolOp, PoolParams};

use super::window::{per_axis, resolve_pads};
use super::{error, Importer, NodeResult};
use crate::onnx::Node;

/// The ops of this family.
pub(super) const OPS: &[&str] = &["MaxPool", "AveragePool"];

pub(super) fn import(imp: &mut Importer<'_>, node: &Node) -> NodeResult {
    let kind = match node.op_type.as_str() {
        "MaxPool" => PoolKind::Max,
        _ => PoolKind::Average,
    };
    let x = imp.input(node, 0)?;
    let shape = imp.shape(x);
    let kernel_shape = node
        .ints_attr("kernel_shape")?
        .ok_or_else(|| error(node, "the required attribute `kernel_shape` is missing"))?
        .to_vec();
    if shape.len() != kernel_shape.len() + 2 {
        return Err(error(
            node,
            format!(
                "`kernel_shape` {kernel_shape:?} has {} axes, but the input [N, C, ...] has {} spatial axes",
                kernel_shape.len(),
                shape.len().saturating_sub(2)
            ),
        ));
    }
    let n = kernel_shape.len();
    let strides = per_axis(node, "strides", n)?;
    let dilations = per_axis(node, "dilations", n)?;
    let pads = resolve_pads(node, &shape[2..], &kernel_shape, &strides, &dilations)?;
    let params = PoolParams {
        kernel_shape,
        strides,
        pads,
        dilations,
        ceil_mode: node.int_attr("ceil_mode", 0)? != 0,
        count_include_pad: node.int_attr("count_include_pad", 0)? != 0,
    };
    let state = PoolOp::build(imp.ctx, kind, x, &params, Importer::loc(node));
    imp.emit(node, state)
}
