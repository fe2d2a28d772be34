//! Index ops: `GatherElements` and `ArgMax`/`ArgMin`, each one `nn` op.

use ipuc_dialects::nn::{ArgKind, ArgReduceOp, GatherElementsOp};

use super::{Importer, NodeResult};
use crate::onnx::Node;

/// The ops of this family.
pub(super) const OPS: &[&str] = &["GatherElements", "ArgMax", "ArgMin"];

pub(super) fn import(imp: &mut Importer<'_>, node: &Node) -> NodeResult {
    let loc = Importer::loc(node);
    let axis = node.int_attr("axis", 0)?;
    match node.op_type.as_str() {
        "GatherElements" => {
            let (data, indices) = (imp.input(node, 0)?, imp.input(node, 1)?);
            let state = GatherElementsOp::build(imp.ctx, data, indices, axis, loc);
            imp.emit(node, state)
        }
        op => {
            let kind = if op == "ArgMax" {
                ArgKind::Max
            } else {
                ArgKind::Min
            };
            let x = imp.input(node, 0)?;
            let keepdims = node.int_attr("keepdims", 1)? != 0;
            let last = node.int_attr("select_last_index", 0)? != 0;
            let state = ArgReduceOp::build(imp.ctx, kind, x, axis, keepdims, last, loc);
            imp.emit(node, state)
        }
    }
}
