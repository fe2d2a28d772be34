//! Reductions and normalisations: `ReduceMean`/`ReduceSum`/`ReduceMax`,
//! `Softmax` (both axis conventions), `LayerNormalization` (with its optional
//! `Mean`/`InvStdDev` outputs), `Gelu`.

use ipuc_dialects::nn::elements::from_floats;
use ipuc_dialects::nn::{
    BinaryKind, BinaryOp, GeluApproximation, GeluOp, LayerNormalizationOp, ReduceKind, ReduceOp,
    ReshapeOp, SoftmaxOp, UnaryKind, UnaryOp, DEFAULT_LAYER_NORM_EPSILON,
};
use ipuc_ir::{Type, Value};

use super::constants::element_type;
use super::elementwise::cast;
use super::{error, ImportError, Importer, NodeResult};
use crate::onnx::{data_type_name, element_kind_of, Node};

/// The ops of this family.
pub(super) const OPS: &[&str] = &[
    "ReduceMean",
    "ReduceSum",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "Softmax",
    "LayerNormalization",
    "Gelu",
];

pub(super) fn import(imp: &mut Importer<'_>, node: &Node) -> NodeResult {
    let loc = Importer::loc(node);
    match node.op_type.as_str() {
        op @ ("ReduceMean" | "ReduceSum" | "ReduceMax" | "ReduceMin" | "ReduceProd") => {
            let kind = match op {
                "ReduceMean" => ReduceKind::Mean,
                "ReduceSum" => ReduceKind::Sum,
                "ReduceMax" => ReduceKind::Max,
                "ReduceMin" => ReduceKind::Min,
                _ => ReduceKind::Prod,
            };
            let x = imp.input(node, 0)?;
            let Some((axes, keepdims)) = reduce_params(imp, node)? else {
                return Ok(vec![x]);
            };
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
            // For Y, `stash_type` only says in which precision to compute;
            // ipuc's lowering chooses its own accumulation precision.
            let axis = node.int_attr("axis", -1)?;
            let epsilon = node.float_attr("epsilon", DEFAULT_LAYER_NORM_EPSILON)?;
            let state = LayerNormalizationOp::build(imp.ctx, x, scale, bias, axis, epsilon, loc);
            let mut outputs = imp.emit(node, state)?;
            let wanted = |i: usize| node.outputs.get(i).is_some_and(|o| !o.is_empty());
            if wanted(1) || wanted(2) {
                let (mean, inv_std_dev) = layer_norm_statistics(imp, node, x, axis, epsilon)?;
                outputs.extend([mean, inv_std_dev]);
            }
            Ok(outputs)
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

/// The axes (`None`: all) and `keepdims` of an ONNX reduction.
pub(super) type ReduceParams = (Option<Vec<i64>>, bool);

/// The [`ReduceParams`] of an ONNX reduction, or `None`
/// when it is a no-op (no axes and `noop_with_empty_axes`). Axes moved from
/// an attribute to an input in opset 13 (`ReduceSum`) and 18 (the others),
/// together with `noop_with_empty_axes`.
pub(super) fn reduce_params(
    imp: &mut Importer<'_>,
    node: &Node,
) -> Result<Option<ReduceParams>, ImportError> {
    let axes_as_input = imp.opset >= 18 || (node.op_type == "ReduceSum" && imp.opset >= 13);
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
        return Ok(None);
    }
    Ok(Some((axes, keepdims)))
}

/// The optional `Mean` and `InvStdDev` outputs of `LayerNormalization`, as the
/// ONNX function body defines them: over the axes `axis..rank` of `x` cast to
/// `stash_type` (keeping those axes as 1s), `mean(x)` and
/// `1 / sqrt(mean((x - mean(x))^2) + epsilon)`. Built from `nn` ops only when
/// a model asks for them (training graphs, tests), so `nn.layer_normalization`
/// stays the single-result op the rest of the compiler fuses and lowers.
fn layer_norm_statistics(
    imp: &mut Importer<'_>,
    node: &Node,
    x: Value,
    axis: i64,
    epsilon: f32,
) -> Result<(Value, Value), ImportError> {
    let loc = Importer::loc(node);
    let code = node.int_attr("stash_type", 1)?;
    let stash = element_kind_of(code as i32)
        .map(element_type)
        .filter(Type::is_float)
        .ok_or_else(|| {
            error(
                node,
                format!(
                    "`stash_type` = {code} ({}) is not a floating-point type ipuc supports",
                    data_type_name(code as i32)
                ),
            )
        })?;
    let x = cast(imp, node, x, &stash, true)?;
    let rank = imp.shape(x).len() as i64;
    let first = if axis < 0 { axis + rank } else { axis };
    if !(0..rank).contains(&first) {
        return Err(error(
            node,
            format!("axis {axis} is out of range for rank {rank}"),
        ));
    }
    let axes: Vec<i64> = (first..rank).collect();
    let reduce_mean = |imp: &mut Importer<'_>, v: Value| {
        let state = ReduceOp::build(imp.ctx, ReduceKind::Mean, v, Some(&axes), true, loc.clone());
        imp.emit1(node, state)
    };
    let binary = |imp: &mut Importer<'_>, kind: BinaryKind, a: Value, b: Value| {
        let state = BinaryOp::build(imp.ctx, kind, a, b, loc.clone());
        imp.emit1(node, state)
    };
    let unary = |imp: &mut Importer<'_>, kind: UnaryKind, v: Value| {
        let state = UnaryOp::build(imp.ctx, kind, v, loc.clone());
        imp.emit1(node, state)
    };
    let mean = reduce_mean(imp, x)?;
    let centered = binary(imp, BinaryKind::Sub, x, mean)?;
    let squared = binary(imp, BinaryKind::Mul, centered, centered)?;
    let variance = reduce_mean(imp, squared)?;
    let eps = from_floats(&Type::tensor(&[], stash), &[f64::from(epsilon)])
        .ok_or_else(|| error(node, "cannot build the epsilon constant"))?;
    let eps = imp
        .constant(eps, loc.clone())
        .map_err(|d| error(node, d.message))?;
    let shifted = binary(imp, BinaryKind::Add, variance, eps)?;
    let std_dev = unary(imp, UnaryKind::Sqrt, shifted)?;
    let inv_std_dev = unary(imp, UnaryKind::Reciprocal, std_dev)?;
    Ok((mean, inv_std_dev))
}
