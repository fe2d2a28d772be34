//! Contractions: `MatMul`, `Gemm` and 2-D `Conv` (with `auto_pad` resolved
//! against the static input shape).

use ipuc_dialects::nn::{Conv2dOp, Conv2dParams, GemmOp, GemmParams, MatmulOp};

use super::{error, ImportError, Importer, NodeResult};
use crate::onnx::Node;

/// The ops of this family.
pub(super) const OPS: &[&str] = &["MatMul", "Gemm", "Conv"];

pub(super) fn import(imp: &mut Importer<'_>, node: &Node) -> NodeResult {
    let loc = Importer::loc(node);
    match node.op_type.as_str() {
        "MatMul" => {
            let (a, b) = (imp.input(node, 0)?, imp.input(node, 1)?);
            let state = MatmulOp::build(imp.ctx, a, b, loc);
            imp.emit(node, state)
        }
        "Gemm" => {
            let (a, b) = (imp.input(node, 0)?, imp.input(node, 1)?);
            let c = imp.optional_input(node, 2)?;
            let params = GemmParams {
                alpha: node.float_attr("alpha", 1.0)?,
                beta: node.float_attr("beta", 1.0)?,
                trans_a: node.int_attr("transA", 0)? != 0,
                trans_b: node.int_attr("transB", 0)? != 0,
            };
            let state = GemmOp::build(imp.ctx, a, b, c, params, loc);
            imp.emit(node, state)
        }
        "Conv" => conv(imp, node),
        other => unreachable!("`{other}` is not a contraction"),
    }
}

fn pair(node: &Node, name: &str) -> Result<[i64; 2], ImportError> {
    match node.ints_attr(name)? {
        None => Ok([1, 1]),
        Some([a, b]) => Ok([*a, *b]),
        Some(v) => Err(error(
            node,
            format!("`{name}` {v:?} must have 2 entries (only 2-D Conv is supported)"),
        )),
    }
}

fn conv(imp: &mut Importer<'_>, node: &Node) -> NodeResult {
    let (x, w) = (imp.input(node, 0)?, imp.input(node, 1)?);
    let b = imp.optional_input(node, 2)?;
    let (xs, ws) = (imp.shape(x), imp.shape(w));
    if xs.len() != 4 || ws.len() != 4 {
        return Err(error(
            node,
            format!(
                "only 2-D Conv is supported (input rank 4, weight rank 4), but the input has \
                 rank {} and the weight rank {}",
                xs.len(),
                ws.len()
            ),
        ));
    }
    if let Some(k) = node.ints_attr("kernel_shape")? {
        if k != &ws[2..] {
            return Err(error(
                node,
                format!(
                    "`kernel_shape` {k:?} differs from the weight's spatial dims {:?}",
                    &ws[2..]
                ),
            ));
        }
    }
    let strides = pair(node, "strides")?;
    let dilations = pair(node, "dilations")?;
    // Checked here too: the auto_pad arithmetic below divides by the strides.
    for (name, values) in [("strides", strides), ("dilations", dilations)] {
        if values
            .iter()
            .any(|&v| !(1..=i64::from(u32::MAX)).contains(&v))
        {
            return Err(error(node, format!("`{name}` {values:?} must be positive")));
        }
    }
    let explicit = match node.ints_attr("pads")? {
        None => [0; 4],
        Some([t, l, b, r]) => [*t, *l, *b, *r],
        Some(p) => {
            return Err(error(
                node,
                format!("`pads` {p:?} must have 4 entries (only 2-D Conv is supported)"),
            ))
        }
    };
    let pads = match node.string_attr("auto_pad", "NOTSET")? {
        "NOTSET" => explicit,
        "VALID" => [0; 4],
        mode @ ("SAME_UPPER" | "SAME_LOWER") => {
            // The output size is ceil(in / stride); the padding that achieves
            // it is split evenly, the odd element at the end (UPPER) or start (LOWER).
            let mut p = [0i64; 4];
            for axis in 0..2 {
                let (input, k) = (xs[2 + axis], ws[2 + axis]);
                let out = (input + strides[axis] - 1) / strides[axis];
                let extent = dilations[axis] * (k - 1) + 1;
                let total = ((out - 1) * strides[axis] + extent - input).max(0);
                let (small, large) = (total / 2, total - total / 2);
                let (begin, end) = if mode == "SAME_UPPER" {
                    (small, large)
                } else {
                    (large, small)
                };
                p[axis] = begin;
                p[axis + 2] = end;
            }
            p
        }
        other => {
            return Err(error(
                node,
                format!(
                "unknown `auto_pad` \"{other}\" (expected NOTSET, VALID, SAME_UPPER or SAME_LOWER)"
            ),
            ))
        }
    };
    let params = Conv2dParams {
        strides,
        pads,
        dilations,
        groups: node.int_attr("group", 1)?,
    };
    let state = Conv2dOp::build(imp.ctx, x, w, b, &params, Importer::loc(node));
    imp.emit(node, state)
}
