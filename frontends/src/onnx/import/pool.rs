//! `MaxPool` and `AveragePool`, any number of spatial axes, as
//! `nn.max_pool` / `nn.average_pool` with `auto_pad` resolved to explicit
//! pads. `MaxPool`'s optional `Indices` output is not computed (a model
//! that uses it gets the importer's "not computed" error).
//!
//! `MaxUnpool` puts each input element at its index into zeros, as the
//! ONNX reference does (`op_max_unpool.py`: the flat indices address the
//! pooled-back shape, which then sits at the start of `output_shape`); the
//! indices must be known at import (the harness and `ipu-run` bind them),
//! so the scatter is one `nn.gather` from the input and a zero.
//!
//! `LpPool` is `(Σ |x|ᵖ)^(1/p)` over each window, as its definition builds
//! it: the window sums of `|x|ᵖ` are an `nn.average_pool` counting the
//! (zero) padding times the kernel size.

use ipuc_dialects::nn::{BinaryKind, PoolKind, PoolOp, PoolParams, UnaryKind};
use ipuc_ir::Value;

use super::body::Body;
use super::window::{explicit_pads, per_axis, resolve_pads};
use super::{error, Importer, NodeResult};
use crate::onnx::Node;

/// The ops of this family.
pub(super) const OPS: &[&str] = &["MaxPool", "AveragePool", "LpPool", "MaxUnpool"];

pub(super) fn import(imp: &mut Importer<'_>, node: &Node) -> NodeResult {
    let kind = match node.op_type.as_str() {
        "MaxPool" => PoolKind::Max,
        _ => PoolKind::Average,
    };
    let x = imp.input(node, 0)?;
    if node.op_type == "MaxUnpool" {
        return max_unpool(imp, node, x);
    }
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
    if node.op_type == "LpPool" {
        return lp_pool(imp, node, x, params);
    }
    let state = PoolOp::build(imp.ctx, kind, x, &params, Importer::loc(node));
    imp.emit(node, state)
}

/// `LpPool`: the `p`-norm of each window (zero padding adds nothing).
fn lp_pool(imp: &mut Importer<'_>, node: &Node, x: Value, params: PoolParams) -> NodeResult {
    let p = node.int_attr("p", 2)?;
    if p < 1 {
        return Err(error(node, format!("`p` = {p} must be positive")));
    }
    let mut b = Body::new(imp, node);
    let magnitude = b.unary(UnaryKind::Abs, x)?;
    let powered = match p {
        1 => magnitude,
        2 => b.binary(BinaryKind::Mul, x, x)?,
        _ => {
            let exponent = b.scalar_like(x, p as f64)?;
            b.binary(BinaryKind::Pow, magnitude, exponent)?
        }
    };
    let window: i64 = params.kernel_shape.iter().product();
    let params = PoolParams {
        count_include_pad: true,
        ..params
    };
    let state = PoolOp::build(
        b.imp.ctx,
        PoolKind::Average,
        powered,
        &params,
        Importer::loc(node),
    );
    let mean = b.imp.emit1(node, state)?;
    let count = b.scalar_like(x, window as f64)?;
    let sum = b.binary(BinaryKind::Mul, mean, count)?;
    let y = match p {
        1 => sum,
        2 => b.unary(UnaryKind::Sqrt, sum)?,
        _ => {
            let root = b.scalar_like(x, 1.0 / p as f64)?;
            b.binary(BinaryKind::Pow, sum, root)?
        }
    };
    Ok(vec![y])
}

/// `MaxUnpool` with indices known at import.
fn max_unpool(imp: &mut Importer<'_>, node: &Node, x: Value) -> NodeResult {
    let shape = imp.shape(x);
    let kernel = node
        .ints_attr("kernel_shape")?
        .ok_or_else(|| error(node, "the required attribute `kernel_shape` is missing"))?
        .to_vec();
    let n = kernel.len();
    if shape.len() != n + 2 {
        return Err(error(
            node,
            format!("`kernel_shape` {kernel:?} does not fit the input {shape:?} [N, C, ...]"),
        ));
    }
    let strides = per_axis(node, "strides", n)?;
    let pads = explicit_pads(node, n)?;
    let mut pooled = shape[..2].to_vec();
    for d in 0..n {
        pooled.push((shape[d + 2] - 1) * strides[d] - (pads[d] + pads[n + d]) + kernel[d]);
    }
    let indices = imp.const_ints(node, 1, "indices")?;
    let count: i64 = shape.iter().product();
    let total: i64 = pooled.iter().product();
    if pooled.iter().any(|&d| d < 0) || indices.len() as i64 != count {
        return Err(error(
            node,
            format!(
                "{} indices for an input of {count} elements, unpooled to {pooled:?}",
                indices.len()
            ),
        ));
    }
    let output = imp.optional_const_ints(node, 2, "output shape")?;
    let output = output.unwrap_or_else(|| pooled.clone());
    if output.len() != pooled.len() || output.iter().zip(&pooled).any(|(o, p)| o < p) {
        return Err(error(
            node,
            format!("`output_shape` {output:?} must hold the unpooled shape {pooled:?}"),
        ));
    }
    // Position j of the flat result reads input element source[j], or the
    // zero appended after the input; a later index wins, as in the reference.
    let mut source = vec![count; total as usize];
    for (i, &j) in indices.iter().enumerate() {
        if !(0..total).contains(&j) {
            return Err(error(
                node,
                format!("index {j} is outside the unpooled shape {pooled:?}"),
            ));
        }
        source[j as usize] = i as i64;
    }
    let mut b = Body::new(imp, node);
    let flat = b.reshape(x, &[count])?;
    let zero = b.scalar_like(x, 0.0)?;
    let zero = b.reshape(zero, &[1])?;
    let padded = b.concat(&[flat, zero], 0)?;
    let y = b.gather(padded, 0, &source)?;
    let y = b.reshape(y, &pooled)?;
    let mut widen = vec![0; pooled.len()];
    widen.extend(output.iter().zip(&pooled).map(|(o, p)| o - p));
    let y = if widen.iter().any(|&p| p != 0) {
        b.pad(y, &widen, 0.0)?
    } else {
        y
    };
    Ok(vec![y])
}
