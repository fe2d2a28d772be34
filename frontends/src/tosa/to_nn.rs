//! `convert-tosa-to-nn`: TOSA (and the `arith.constant` and static `tensor`
//! reshapes and slices that come with it) into `nn`.
//!
//! TOSA and `nn` differ in layout and in how much an op says:
//! - convolutions are NHWC with `[O, KH, KW, I]` weights (depthwise
//!   `[KH, KW, C, M]`) in TOSA and NCHW with `[O, I/g, KH, KW]` weights in
//!   `nn`, so a convolution becomes transposes around `nn.conv2d`;
//! - shapes, slice bounds, paddings and tile multiples are `!tosa.shape`
//!   values of `tosa.const_shape` ops, read here and turned into attributes;
//! - zero points and the `mul` shift are operands; anything but zero means
//!   quantized arithmetic `nn` does not model, and is an error;
//! - `tosa.gather` is batched (`values[N, K, C]`, `indices[N, W]`), ONNX's
//!   Gather is not: it becomes a gather of the flattened values with the
//!   batch offset added to the indices;
//! - pools are NHWC too (see `pool.rs`); `tosa.argmax` gives the
//!   first largest position as `nn.argmax` does (with NaNs, TOSA's default
//!   `nan_mode` returns a NaN's position, ONNX's kernels skip NaNs);
//! - `tosa.rescale` is read where it is a pure integer scale (see
//!   `rescale.rs`).
//!
//! Before converting anything the pass collects every op it cannot convert
//! and reports them all in one error, each with its location, as the ONNX
//! importer does; the IR is then left untouched.

use ipuc_dialects::nn::{self, elements, BinaryKind, CompareKind, PoolKind, ReduceKind, UnaryKind};
use ipuc_ir::analysis::{AnalysisManager, PreservedAnalyses};
use ipuc_ir::attributes::DenseElements;
use ipuc_ir::pass::{DeclaredPass, PassCreateError, PassHooks};
use ipuc_ir::{Context, Diagnostic, OpId, Type, Value, WalkOrder};

use super::coverage::{is_readable, READ_SOURCES};
use super::{replace_op, tensor_parts, unsupported_ops, Builder};

/// The pass.
#[derive(Clone)]
pub struct ConvertTosaToNn;

ipuc_ir::declare_pass! {
    ConvertTosaToNn => "convert-tosa-to-nn" {
        summary: "Convert TOSA (with arith.constant and static tensor reshapes/slices) to nn",
        statistics ConvertTosaToNnStatistics {
            /// TOSA, arith and tensor ops converted
            converted: u64 => "converted",
        }
    }
}

impl DeclaredPass for ConvertTosaToNn {
    fn create(_options: &(), _hooks: &PassHooks) -> Result<Self, PassCreateError> {
        Ok(ConvertTosaToNn)
    }
    fn run(
        &mut self,
        ctx: &mut Context,
        op: OpId,
        _am: &mut AnalysisManager,
        stats: &mut ConvertTosaToNnStatistics,
    ) -> Result<PreservedAnalyses, Diagnostic> {
        let n = convert_tosa_to_nn(ctx, op)?;
        stats.converted += n as u64;
        Ok(PreservedAnalyses::all_unless(n != 0))
    }
}

/// Whether the pass handles ops of this dialect (and so must convert them).
fn is_source(name: &str) -> bool {
    READ_SOURCES.iter().any(|d| name.starts_with(d))
}

/// Converts every TOSA, `arith` and `tensor` op under `root` into `nn`;
/// returns how many ops were converted. Unsupported ops are all reported in
/// one error (each as a note with its location) before anything changes.
pub fn convert_tosa_to_nn(ctx: &mut Context, root: OpId) -> Result<usize, Diagnostic> {
    let ops: Vec<OpId> = ctx
        .collect_ops(root, WalkOrder::PreOrder)
        .into_iter()
        .filter(|&op| is_source(ctx.name_str(op)))
        .collect();
    let unsupported: Vec<OpId> = ops
        .iter()
        .copied()
        .filter(|&op| !is_readable(ctx.name_str(op)))
        .collect();
    if let Some(d) = unsupported_ops(
        ctx,
        &unsupported,
        |n, s, kinds| {
            format!("cannot convert to nn: {n} unsupported op{s} ({kinds}); see the TOSA coverage table in the README")
        },
        |_| "is not supported".into(),
    ) {
        return Err(d);
    }
    let mut shapes = Vec::new();
    for &op in &ops {
        if ctx.name_str(op) == "tosa.const_shape" {
            // Read by the ops that use them; erased once those are converted.
            shapes.push(op);
            continue;
        }
        replace_op(ctx, op, convert_op)?;
    }
    for op in shapes {
        if ctx.use_empty(ctx.result(op, 0)) {
            ctx.erase_op(op);
        }
    }
    Ok(ops.len())
}

/// The constant data behind `v`, when a constant op defines it.
pub(crate) fn constant_of(ctx: &Context, v: Value) -> Option<DenseElements> {
    let def = ctx.defining_op(v)?;
    let attr = match ctx.name_str(def) {
        "tosa.const" | "tosa.const_shape" => ctx.attr(def, "values")?,
        "arith.constant" | nn::CONSTANT => ctx.attr(def, "value")?,
        _ => return None,
    };
    elements::dense_data(attr)
}

/// The integers of a `tosa.const_shape` (or integer constant) operand.
fn shape_operand(b: &Builder, op: OpId, i: usize, what: &str) -> Result<Vec<i64>, Diagnostic> {
    let v = b.ctx.operand(op, i);
    constant_of(b.ctx, v)
        .and_then(|d| elements::ints(&d))
        .map(|v| v.into_iter().map(|x| x as i64).collect())
        .ok_or_else(|| b.error(format!("{what} must be a tosa.const_shape")))
}

/// Checks that operand `i` (a zero point or the `mul` shift) is a constant zero.
pub(super) fn require_zero(b: &Builder, op: OpId, i: usize, what: &str) -> Result<(), Diagnostic> {
    let v = b.ctx.operand(op, i);
    let zero = constant_of(b.ctx, v).is_some_and(|d| {
        (0..d.len()).all(|k| {
            if d.element_type().is_float() {
                d.float_at(k) == 0.0
            } else {
                d.int_at(k) == 0
            }
        })
    });
    if zero {
        Ok(())
    } else {
        Err(b.error(format!(
            "'{}': {what} must be a constant zero (quantized TOSA is not supported)",
            b.ctx.name_str(op)
        )))
    }
}

pub(super) fn attr_i64(b: &Builder, op: OpId, name: &str) -> Result<i64, Diagnostic> {
    b.ctx
        .attr(op, name)
        .and_then(|a| a.as_int())
        .map(|v| v as i64)
        .ok_or_else(|| {
            b.error(format!(
                "'{}' needs the integer attribute '{name}'",
                b.ctx.name_str(op)
            ))
        })
}

pub(super) fn attr_list(b: &Builder, op: OpId, name: &str) -> Result<Vec<i64>, Diagnostic> {
    b.ctx
        .attr(op, name)
        .and_then(|a| a.as_i64_list())
        .ok_or_else(|| {
            b.error(format!(
                "'{}' needs the array attribute '{name}'",
                b.ctx.name_str(op)
            ))
        })
}

fn attr_f64(b: &Builder, op: OpId, name: &str) -> Result<f64, Diagnostic> {
    b.ctx
        .attr(op, name)
        .and_then(|a| a.as_f64().or_else(|| a.as_int().map(|i| i as f64)))
        .ok_or_else(|| {
            b.error(format!(
                "'{}' needs the number attribute '{name}'",
                b.ctx.name_str(op)
            ))
        })
}

/// A scalar constant of `elem` (rank 0), for broadcasting.
pub(crate) fn scalar(b: &mut Builder, elem: &Type, value: f64) -> Result<Value, Diagnostic> {
    let ty = Type::tensor(&[], elem.clone());
    let attr = if elem.is_float() {
        elements::from_floats(&ty, &[value])
    } else {
        elements::from_ints(&ty, &[value as i128])
    }
    .ok_or_else(|| b.error(format!("cannot make a constant of type '{elem}'")))?;
    let loc = b.loc.clone();
    b.nn(nn::ConstantOp::build(b.ctx, attr, loc))
}

/// The replacement values of `op`'s results.
fn convert_op(b: &mut Builder, op: OpId) -> Result<Vec<Value>, Diagnostic> {
    let ctx_name = b.ctx.name_str(op).to_string();
    let name = ctx_name.as_str();
    let loc = b.loc.clone();
    let x = |b: &Builder, i: usize| b.ctx.operand(op, i);
    let result_ty = b.ctx.value_type(b.ctx.result(op, 0)).clone();
    let (out_shape, out_elem) = tensor_parts(&result_ty).ok_or_else(|| {
        b.error(format!(
            "'{name}': the result must have a static shape, not '{result_ty}'"
        ))
    })?;
    let binary = |b: &mut Builder, kind: BinaryKind| {
        let (l, r) = (x(b, 0), x(b, 1));
        let loc = b.loc.clone();
        b.nn(nn::BinaryOp::build(b.ctx, kind, l, r, loc))
    };
    let unary = |b: &mut Builder, kind: UnaryKind| {
        let v = x(b, 0);
        let loc = b.loc.clone();
        b.nn(nn::UnaryOp::build(b.ctx, kind, v, loc))
    };
    let reshape_to = |b: &mut Builder, v: Value, shape: &[i64]| {
        let loc = b.loc.clone();
        b.nn(nn::ReshapeOp::build(b.ctx, v, shape, loc))
    };
    let transpose = |b: &mut Builder, v: Value, perm: &[i64]| {
        let loc = b.loc.clone();
        b.nn(nn::TransposeOp::build(b.ctx, v, perm, loc))
    };
    let v = match name {
        "tosa.const" | "arith.constant" => {
            let key = if name == "tosa.const" {
                "values"
            } else {
                "value"
            };
            let attr = b
                .ctx
                .attr(op, key)
                .cloned()
                .ok_or_else(|| b.error(format!("'{name}' has no '{key}' attribute")))?;
            b.nn(nn::ConstantOp::build(b.ctx, attr, loc))?
        }
        "tosa.add" => binary(b, BinaryKind::Add)?,
        "tosa.sub" => binary(b, BinaryKind::Sub)?,
        "tosa.pow" => binary(b, BinaryKind::Pow)?,
        "tosa.maximum" => binary(b, BinaryKind::Max)?,
        "tosa.minimum" => binary(b, BinaryKind::Min)?,
        "tosa.intdiv" => binary(b, BinaryKind::Div)?,
        "tosa.mul" => {
            require_zero(b, op, 2, "the shift")?;
            binary(b, BinaryKind::Mul)?
        }
        "tosa.equal" | "tosa.greater" => {
            let kind = if name == "tosa.equal" {
                CompareKind::Equal
            } else {
                CompareKind::Greater
            };
            let (l, r) = (x(b, 0), x(b, 1));
            b.nn(nn::CompareOp::build(b.ctx, kind, l, r, loc))?
        }
        "tosa.abs" => unary(b, UnaryKind::Abs)?,
        "tosa.exp" => unary(b, UnaryKind::Exp)?,
        "tosa.log" => unary(b, UnaryKind::Log)?,
        "tosa.tanh" => unary(b, UnaryKind::Tanh)?,
        "tosa.sigmoid" => unary(b, UnaryKind::Sigmoid)?,
        "tosa.erf" => unary(b, UnaryKind::Erf)?,
        "tosa.reciprocal" => unary(b, UnaryKind::Reciprocal)?,
        "tosa.rsqrt" => {
            let s = unary(b, UnaryKind::Sqrt)?;
            b.nn(nn::UnaryOp::build(b.ctx, UnaryKind::Reciprocal, s, loc))?
        }
        "tosa.negate" => {
            require_zero(b, op, 1, "the input zero point")?;
            require_zero(b, op, 2, "the output zero point")?;
            unary(b, UnaryKind::Neg)?
        }
        "tosa.identity" => x(b, 0),
        "tosa.clamp" => {
            let lo = attr_f64(b, op, "min_val")?;
            let hi = attr_f64(b, op, "max_val")?;
            let v = x(b, 0);
            let hi = scalar(b, &out_elem, hi)?;
            let upper = b.nn(nn::BinaryOp::build(
                b.ctx,
                BinaryKind::Min,
                v,
                hi,
                loc.clone(),
            ))?;
            let lo = scalar(b, &out_elem, lo)?;
            b.nn(nn::BinaryOp::build(b.ctx, BinaryKind::Max, upper, lo, loc))?
        }
        "tosa.reduce_sum" | "tosa.reduce_max" => {
            let kind = if name == "tosa.reduce_sum" {
                ReduceKind::Sum
            } else {
                ReduceKind::Max
            };
            let axis = attr_i64(b, op, "axis")?;
            let v = x(b, 0);
            b.nn(nn::ReduceOp::build(
                b.ctx,
                kind,
                v,
                Some(&[axis]),
                true,
                loc,
            ))?
        }
        // The result type is static and checked by upstream: it is the shape.
        "tosa.reshape"
        | "tensor.expand_shape"
        | "tensor.collapse_shape"
        | "tensor.reshape"
        | "tensor.cast" => {
            let v = x(b, 0);
            if b.ctx.value_type(v) == &result_ty {
                v
            } else {
                reshape_to(b, v, &out_shape)?
            }
        }
        "tosa.transpose" => {
            let perm = attr_list(b, op, "perms")?;
            let v = x(b, 0);
            transpose(b, v, &perm)?
        }
        "tosa.slice" => {
            let start = shape_operand(b, op, 1, "the start")?;
            let params = nn::SliceParams {
                ends: start.iter().zip(&out_shape).map(|(s, n)| s + n).collect(),
                starts: start,
                axes: None,
                steps: None,
            };
            let v = x(b, 0);
            b.nn(nn::SliceOp::build(b.ctx, v, &params, loc))?
        }
        "tensor.extract_slice" => {
            let offsets = attr_list(b, op, "static_offsets")?;
            let strides = attr_list(b, op, "static_strides")?;
            let sizes = attr_list(b, op, "static_sizes")?;
            if b.ctx.operands(op).len() != 1
                || offsets.iter().chain(&strides).chain(&sizes).any(|&d| d < 0)
            {
                return Err(b.error("'tensor.extract_slice' with dynamic offsets, sizes or strides is not supported"));
            }
            let v = x(b, 0);
            let params = nn::SliceParams {
                ends: offsets
                    .iter()
                    .zip(&sizes)
                    .zip(&strides)
                    .map(|((o, n), s)| o + (n - 1) * s + 1)
                    .collect(),
                starts: offsets,
                axes: None,
                steps: Some(strides),
            };
            let sliced = b.nn(nn::SliceOp::build(b.ctx, v, &params, loc))?;
            // Rank-reducing slices drop unit dimensions.
            if b.ctx.value_type(sliced) == &result_ty {
                sliced
            } else {
                reshape_to(b, sliced, &out_shape)?
            }
        }
        "tosa.concat" | "tensor.concat" => {
            let axis = if name == "tosa.concat" {
                attr_i64(b, op, "axis")?
            } else {
                attr_i64(b, op, "dim")?
            };
            let inputs = b.ctx.operands(op).to_vec();
            b.nn(nn::ConcatOp::build(b.ctx, &inputs, axis, loc))?
        }
        "tosa.pad" => {
            let padding = shape_operand(b, op, 1, "the padding")?;
            let value = constant_of(b.ctx, x(b, 2))
                .filter(|d| d.element_type().is_float())
                .map(|d| d.float_at(0))
                .ok_or_else(|| b.error("'tosa.pad': the pad value must be a float constant"))?;
            // TOSA pairs (before, after) per axis; ONNX lists all befores, then all afters.
            let pads: Vec<i64> = padding
                .iter()
                .step_by(2)
                .chain(padding.iter().skip(1).step_by(2))
                .copied()
                .collect();
            let v = x(b, 0);
            b.nn(nn::PadOp::build(b.ctx, v, &pads, value as f32, loc))?
        }
        "tosa.tile" => {
            let multiples = shape_operand(b, op, 1, "the multiples")?;
            let v = x(b, 0);
            b.nn(nn::TileOp::build(b.ctx, v, &multiples, loc))?
        }
        "tosa.cast" => {
            let v = x(b, 0);
            let from = b.shape(v)?.1;
            if from.is_float() && !out_elem.is_float() && !out_elem.is_integer_of_width(1) {
                return Err(b.error(format!(
                    "'tosa.cast' from {from} to {out_elem} rounds to nearest, nn.cast truncates: not supported"
                )));
            }
            b.nn(nn::CastOp::build(b.ctx, v, &out_elem, false, loc))?
        }
        "tosa.select" => {
            let (c, t, f) = (x(b, 0), x(b, 1), x(b, 2));
            b.nn(nn::WhereOp::build(b.ctx, c, t, f, loc))?
        }
        "tosa.matmul" => {
            require_zero(b, op, 2, "the A zero point")?;
            require_zero(b, op, 3, "the B zero point")?;
            let (l, r) = (x(b, 0), x(b, 1));
            b.nn(nn::MatmulOp::build(b.ctx, l, r, loc))?
        }
        "tosa.gather" => gather(b, x(b, 0), x(b, 1))?,
        "tosa.conv2d" | "tosa.depthwise_conv2d" => conv(b, op, name == "tosa.depthwise_conv2d")?,
        "tosa.max_pool2d" => super::pool::read(b, op, PoolKind::Max, |b, n| attr_list(b, op, n))?,
        "tosa.avg_pool2d" => {
            require_zero(b, op, 1, "the input zero point")?;
            require_zero(b, op, 2, "the output zero point")?;
            super::pool::read(b, op, PoolKind::Average, |b, n| attr_list(b, op, n))?
        }
        "tosa.argmax" => {
            let axis = attr_i64(b, op, "axis")?;
            let v = x(b, 0);
            let positions = b.nn(nn::ArgReduceOp::build(
                b.ctx,
                nn::ArgKind::Max,
                v,
                axis,
                false,
                false,
                loc.clone(),
            ))?;
            if out_elem == Type::i64() {
                positions
            } else {
                b.nn(nn::CastOp::build(b.ctx, positions, &out_elem, false, loc))?
            }
        }
        "tosa.rescale" => super::rescale::read(b, op)?,
        other => return Err(b.error(format!("'{other}' is not supported"))),
    };
    if b.ctx.value_type(v) != &result_ty {
        return Err(b.error(format!(
            "'{name}' converted to a value of type '{}', but its result has type '{result_ty}'",
            b.ctx.value_type(v)
        )));
    }
    Ok(vec![v])
}

/// `tosa.gather(values[N, K, C], indices[N, W]) -> [N, W, C]`: ONNX Gather
/// on the values flattened to `[N*K, C]`, with `n*K` added to the indices
/// of batch `n`.
fn gather(b: &mut Builder, values: Value, indices: Value) -> Result<Value, Diagnostic> {
    let loc = b.loc.clone();
    let (vs, _) = b.shape(values)?;
    let (is, ielem) = b.shape(indices)?;
    let (n, k, c) = (vs[0], vs[1], vs[2]);
    let flat = b.nn(nn::ReshapeOp::build(
        b.ctx,
        values,
        &[n * k, c],
        loc.clone(),
    ))?;
    let mut idx = indices;
    if n > 1 {
        let offsets: Vec<i128> = (0..n).map(|i| (i * k) as i128).collect();
        let ty = Type::tensor(&[n, 1], ielem.clone());
        let attr = elements::from_ints(&ty, &offsets)
            .ok_or_else(|| b.error("cannot build the gather offsets"))?;
        let off = b.nn(nn::ConstantOp::build(b.ctx, attr, loc.clone()))?;
        idx = b.nn(nn::BinaryOp::build(
            b.ctx,
            BinaryKind::Add,
            idx,
            off,
            loc.clone(),
        ))?;
    }
    debug_assert_eq!(is.len(), 2);
    b.nn(nn::GatherOp::build(b.ctx, flat, idx, 0, loc))
}

/// A TOSA convolution (NHWC) as `nn.conv2d` (NCHW) between transposes.
fn conv(b: &mut Builder, op: OpId, depthwise: bool) -> Result<Value, Diagnostic> {
    let loc = b.loc.clone();
    require_zero(b, op, 3, "the input zero point")?;
    require_zero(b, op, 4, "the weight zero point")?;
    let pad = attr_list(b, op, "pad")?; // top, bottom, left, right
    let stride = attr_list(b, op, "stride")?;
    let dilation = attr_list(b, op, "dilation")?;
    let (input, weight, bias) = (
        b.ctx.operand(op, 0),
        b.ctx.operand(op, 1),
        b.ctx.operand(op, 2),
    );
    let (ws, _) = b.shape(weight)?;
    let nchw = b.nn(nn::TransposeOp::build(
        b.ctx,
        input,
        &[0, 3, 1, 2],
        loc.clone(),
    ))?;
    let (w, groups) = if depthwise {
        // [KH, KW, C, M] -> [C, M, KH, KW] -> [C*M, 1, KH, KW], one group per channel.
        let (kh, kw, c, m) = (ws[0], ws[1], ws[2], ws[3]);
        let t = b.nn(nn::TransposeOp::build(
            b.ctx,
            weight,
            &[2, 3, 0, 1],
            loc.clone(),
        ))?;
        (
            b.nn(nn::ReshapeOp::build(
                b.ctx,
                t,
                &[c * m, 1, kh, kw],
                loc.clone(),
            ))?,
            c,
        )
    } else {
        // [O, KH, KW, I] -> [O, I, KH, KW].
        (
            b.nn(nn::TransposeOp::build(
                b.ctx,
                weight,
                &[0, 3, 1, 2],
                loc.clone(),
            ))?,
            1,
        )
    };
    let params = nn::Conv2dParams {
        strides: [stride[0], stride[1]],
        pads: [pad[0], pad[2], pad[1], pad[3]],
        dilations: [dilation[0], dilation[1]],
        groups,
    };
    let out_channels = b.shape(w)?.0[0];
    let (bs, _) = b.shape(bias)?;
    // TOSA lets a one-element bias broadcast; nn.conv2d wants one per channel.
    let y = if bs == [out_channels] {
        b.nn(nn::Conv2dOp::build(
            b.ctx,
            nchw,
            w,
            Some(bias),
            &params,
            loc.clone(),
        ))?
    } else {
        let y = b.nn(nn::Conv2dOp::build(
            b.ctx,
            nchw,
            w,
            None,
            &params,
            loc.clone(),
        ))?;
        let b4 = b.nn(nn::ReshapeOp::build(
            b.ctx,
            bias,
            &[1, 1, 1, 1],
            loc.clone(),
        ))?;
        b.nn(nn::BinaryOp::build(
            b.ctx,
            BinaryKind::Add,
            y,
            b4,
            loc.clone(),
        ))?
    };
    b.nn(nn::TransposeOp::build(b.ctx, y, &[0, 2, 3, 1], loc))
}
