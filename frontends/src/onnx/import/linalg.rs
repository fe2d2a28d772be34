//! Contractions: `MatMul`, `Gemm` and 1-D and 2-D `Conv` (with `auto_pad`
//! resolved against the static input shape).

use ipuc_dialects::nn::{Conv2dOp, Conv2dParams, GemmOp, GemmParams, MatmulOp, ReshapeOp};

use super::body::Body;
use super::window::{per_axis, resolve_pads};
use super::{error, Importer, NodeResult};
use crate::onnx::Node;

/// The ops of this family.
pub(super) const OPS: &[&str] = &["MatMul", "Gemm", "Conv", "CausalConvWithState"];

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
        "CausalConvWithState" => causal_conv_with_state(&mut Body::new(imp, node)),
        other => unreachable!("`{other}` is not a contraction"),
    }
}

/// `Conv` in 2-D, or in 1-D as a 2-D convolution over a height of 1 (the
/// input `[N, C, L]` and weight `[M, C/g, K]` reshaped, the result reshaped
/// back): the same products summed in the same way.
fn conv(imp: &mut Importer<'_>, node: &Node) -> NodeResult {
    let (x, w) = (imp.input(node, 0)?, imp.input(node, 1)?);
    let b = imp.optional_input(node, 2)?;
    let (xs, ws) = (imp.shape(x), imp.shape(w));
    if !matches!(xs.len(), 3 | 4) || ws.len() != xs.len() {
        return Err(error(
            node,
            format!(
                "only 1-D and 2-D Conv are supported (input and weight of rank 3 or 4), but the \
                 input has rank {} and the weight rank {}",
                xs.len(),
                ws.len()
            ),
        ));
    }
    let n = xs.len() - 2;
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
    let strides = per_axis(node, "strides", n)?;
    let dilations = per_axis(node, "dilations", n)?;
    // Checked here too: the auto_pad arithmetic below divides by the strides.
    for (name, values) in [("strides", &strides), ("dilations", &dilations)] {
        if values
            .iter()
            .any(|&v| !(1..=i64::from(u32::MAX)).contains(&v))
        {
            return Err(error(node, format!("`{name}` {values:?} must be positive")));
        }
    }
    let pads = resolve_pads(node, &xs[2..], &ws[2..], &strides, &dilations)?;
    let groups = node.int_attr("group", 1)?;
    let loc = Importer::loc(node);
    if n == 2 {
        let params = Conv2dParams {
            strides: [strides[0], strides[1]],
            pads: [pads[0], pads[1], pads[2], pads[3]],
            dilations: [dilations[0], dilations[1]],
            groups,
        };
        let state = Conv2dOp::build(imp.ctx, x, w, b, &params, loc);
        return imp.emit(node, state);
    }
    let params = Conv2dParams {
        strides: [1, strides[0]],
        pads: [0, pads[0], 0, pads[1]],
        dilations: [1, dilations[0]],
        groups,
    };
    let x2 = ReshapeOp::build(imp.ctx, x, &[xs[0], xs[1], 1, xs[2]], loc.clone());
    let x2 = imp.emit1(node, x2)?;
    let w2 = ReshapeOp::build(imp.ctx, w, &[ws[0], ws[1], 1, ws[2]], loc.clone());
    let w2 = imp.emit1(node, w2)?;
    let state = Conv2dOp::build(imp.ctx, x2, w2, b, &params, loc.clone());
    let y = imp.emit1(node, state)?;
    let ys = imp.shape(y);
    let state = ReshapeOp::build(imp.ctx, y, &[ys[0], ys[1], ys[3]], loc);
    imp.emit(node, state)
}

/// `CausalConvWithState`, as its function body: the depthwise 1-D
/// convolution of `[past_state (zeros when absent), input]` along the
/// sequence, the optional `silu` (alias `swish`) activation computed in f32,
/// and the last `K - 1` positions of that padded input as the new state.
fn causal_conv_with_state(b: &mut Body<'_, '_, '_>) -> NodeResult {
    let (x, w) = (b.input(0)?, b.input(1)?);
    let bias = b.optional_input(2)?;
    let (xs, ws) = (b.shape(x), b.shape(w));
    let (&[n, c, _], &[_, _, k]) = (&xs[..], &ws[..]) else {
        return Err(b.error(format!(
            "input [N, C, L] and weight [C, 1, K] expected, got shapes {xs:?} and {ws:?}"
        )));
    };
    let elem = b.element(x)?;
    let past = match b.optional_input(3)? {
        Some(p) => p,
        None => {
            let zeros = vec![0.0; (n * c * (k - 1)).max(0) as usize];
            b.constant(&[n, c, k - 1], &elem, &zeros)?
        }
    };
    let padded = b.concat(&[past, x], 2)?;
    let len = b.shape(padded)[2];
    let params = Conv2dParams {
        strides: [1, 1],
        pads: [0; 4],
        dilations: [1, 1],
        groups: c,
    };
    let x2 = b.reshape(padded, &[n, c, 1, len])?;
    let w2 = b.reshape(w, &[ws[0], ws[1], 1, k])?;
    let state = Conv2dOp::build(b.imp.ctx, x2, w2, bias, &params, Importer::loc(b.node));
    let y = b.imp.emit1(b.node, state)?;
    let out_len = b.shape(y)[3];
    let mut y = b.reshape(y, &[n, c, out_len])?;
    match b.node.string_attr("activation", "none")? {
        "none" => {}
        "silu" | "swish" => {
            let f32 = ipuc_ir::Type::f32();
            let yf = b.cast(y, &f32)?;
            let s = b.unary(ipuc_dialects::nn::UnaryKind::Sigmoid, yf)?;
            let act = b.binary(ipuc_dialects::nn::BinaryKind::Mul, yf, s)?;
            y = b.cast(act, &elem)?;
        }
        other => {
            return Err(b.error(format!(
                "`activation` \"{other}\" is not none, silu or swish"
            )))
        }
    }
    let present = b.slice(padded, 2, len - (k - 1), len)?;
    Ok(vec![y, present])
}
