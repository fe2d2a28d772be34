//! `CumSum` and `CumProd`: one `nn.cumsum`/`nn.cumprod` each, the axis read
//! from the constant input #1.

use ipuc_dialects::nn::{CumulativeKind, CumulativeOp};

use super::{error, Importer, NodeResult};
use crate::onnx::Node;

/// The ops of this family.
pub(super) const OPS: &[&str] = &["CumSum", "CumProd"];

pub(super) fn import(imp: &mut Importer<'_>, node: &Node) -> NodeResult {
    let kind = if node.op_type == "CumProd" {
        CumulativeKind::Prod
    } else {
        CumulativeKind::Sum
    };
    let x = imp.input(node, 0)?;
    let axis = match imp.const_ints(node, 1, "axis")?[..] {
        [a] => a,
        ref other => {
            return Err(error(
                node,
                format!("the axis must be one integer, but is {other:?}"),
            ))
        }
    };
    let exclusive = node.int_attr("exclusive", 0)? != 0;
    let reverse = node.int_attr("reverse", 0)? != 0;
    let state = CumulativeOp::build(
        imp.ctx,
        kind,
        x,
        axis,
        exclusive,
        reverse,
        Importer::loc(node),
    );
    imp.emit(node, state)
}
