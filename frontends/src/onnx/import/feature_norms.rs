//! The normalizations over feature maps `[N, C, spatial...]` that `nn` has
//! no op for, built of reductions and elementwise ops as their ONNX
//! definitions are written: `BatchNormalization` (inference, and training
//! mode with its running statistics), `InstanceNormalization`,
//! `GroupNormalization` (its function body) and `LRN` (the channel window
//! summed from padded slices).

use ipuc_dialects::nn::{BinaryKind, ReduceKind, UnaryKind};
use ipuc_ir::Value;

use super::body::{Body, Built};
use super::{ImportError, Importer, NodeResult};
use crate::onnx::Node;

/// The ops of this family.
pub(super) const OPS: &[&str] = &[
    "BatchNormalization",
    "InstanceNormalization",
    "GroupNormalization",
    "LRN",
];

pub(super) fn import(imp: &mut Importer<'_>, node: &Node) -> NodeResult {
    let mut b = Body::new(imp, node);
    match node.op_type.as_str() {
        "BatchNormalization" => batch_normalization(&mut b),
        "InstanceNormalization" => instance_normalization(&mut b).map(|v| vec![v]),
        "GroupNormalization" => group_normalization(&mut b).map(|v| vec![v]),
        "LRN" => lrn(&mut b).map(|v| vec![v]),
        other => unreachable!("`{other}` is not a feature-map normalization"),
    }
}

/// The input `[N, C, ...]` with its rank checked.
fn feature_map(b: &mut Body<'_, '_, '_>) -> Result<(Value, Vec<i64>), ImportError> {
    let x = b.input(0)?;
    let shape = b.shape(x);
    if shape.len() < 2 {
        return Err(b.error(format!(
            "input must be [N, C, ...] (rank 2 or more), but has shape {shape:?}"
        )));
    }
    Ok((x, shape))
}

/// A per-channel vector `[C]` reshaped to `[C, 1, ...]` so that it
/// broadcasts over `[N, C, spatial...]` of rank `rank`.
fn per_channel(b: &mut Body<'_, '_, '_>, v: Value, rank: usize) -> Built {
    let mut shape = vec![1i64; rank - 1];
    shape[0] = b.shape(v).iter().product();
    b.reshape(v, &shape)
}

/// `(x - mean) / sqrt(var + epsilon)`.
fn standardize(b: &mut Body<'_, '_, '_>, x: Value, mean: Value, var: Value) -> Built {
    let epsilon = b.node.float_attr("epsilon", 1e-5)?;
    let eps = b.scalar_like(x, f64::from(epsilon))?;
    let shifted = b.binary(BinaryKind::Sub, x, mean)?;
    let padded = b.binary(BinaryKind::Add, var, eps)?;
    let std = b.unary(UnaryKind::Sqrt, padded)?;
    b.binary(BinaryKind::Div, shifted, std)
}

/// Mean and (population) variance of `x` over `axes`, kept as size-1 axes.
fn moments(
    b: &mut Body<'_, '_, '_>,
    x: Value,
    axes: &[i64],
) -> Result<(Value, Value), ImportError> {
    let mean = b.reduce(ReduceKind::Mean, x, Some(axes), true)?;
    let d = b.binary(BinaryKind::Sub, x, mean)?;
    let sq = b.binary(BinaryKind::Mul, d, d)?;
    let var = b.reduce(ReduceKind::Mean, sq, Some(axes), true)?;
    Ok((mean, var))
}

/// `y * scale + bias` with per-channel `scale` and `bias` (inputs 1 and 2).
fn scale_shift(b: &mut Body<'_, '_, '_>, y: Value, rank: usize) -> Built {
    let (scale, bias) = (b.input(1)?, b.input(2)?);
    let scale = per_channel(b, scale, rank)?;
    let bias = per_channel(b, bias, rank)?;
    let scaled = b.binary(BinaryKind::Mul, y, scale)?;
    b.binary(BinaryKind::Add, scaled, bias)
}

/// `BatchNormalization`: with the stored statistics (inputs 3 and 4), or in
/// training mode with the batch's own, returning also the updated running
/// mean and variance (`momentum` weighs the old ones).
fn batch_normalization(b: &mut Body<'_, '_, '_>) -> NodeResult {
    let (x, shape) = feature_map(b)?;
    let rank = shape.len();
    let training = b.node.int_attr("training_mode", 0)? != 0;
    let (mean_in, var_in) = (b.input(3)?, b.input(4)?);
    if !training {
        let mean = per_channel(b, mean_in, rank)?;
        let var = per_channel(b, var_in, rank)?;
        let y = standardize(b, x, mean, var)?;
        return Ok(vec![scale_shift(b, y, rank)?]);
    }
    let axes: Vec<i64> = (0..rank as i64).filter(|&a| a != 1).collect();
    let (mean, var) = moments(b, x, &axes)?;
    let y = standardize(b, x, mean, var)?;
    let y = scale_shift(b, y, rank)?;
    let momentum = f64::from(b.node.float_attr("momentum", 0.9)?);
    let c = shape[1];
    let mut running = vec![y];
    for (old, new) in [(mean_in, mean), (var_in, var)] {
        let new = b.reshape(new, &[c])?;
        let keep = b.scalar_like(old, momentum)?;
        let take = b.scalar_like(old, 1.0 - momentum)?;
        let kept = b.binary(BinaryKind::Mul, old, keep)?;
        let taken = b.binary(BinaryKind::Mul, new, take)?;
        running.push(b.binary(BinaryKind::Add, kept, taken)?);
    }
    Ok(running)
}

/// `InstanceNormalization`: each `(n, c)` map standardized over its spatial
/// axes, then scaled and shifted per channel.
fn instance_normalization(b: &mut Body<'_, '_, '_>) -> Built {
    let (x, shape) = feature_map(b)?;
    let axes: Vec<i64> = (2..shape.len() as i64).collect();
    let (mean, var) = moments(b, x, &axes)?;
    let y = standardize(b, x, mean, var)?;
    scale_shift(b, y, shape.len())
}

/// `GroupNormalization`: the channels split into `num_groups` groups, each
/// group of each sample standardized as a whole; then a per-channel scale
/// and bias (opset 21), or a per-group one (opset 18, repeated over the
/// group's channels).
fn group_normalization(b: &mut Body<'_, '_, '_>) -> Built {
    let (x, shape) = feature_map(b)?;
    let (n, c) = (shape[0], shape[1]);
    let groups = b.node.int_attr("num_groups", 0)?;
    if groups < 1 || c % groups != 0 {
        return Err(b.error(format!(
            "`num_groups` ({groups}) must be positive and divide the {c} channels"
        )));
    }
    let per_sample: i64 = shape[1..].iter().product();
    let grouped = b.reshape(x, &[n, groups, per_sample / groups])?;
    let (mean, var) = moments(b, grouped, &[2])?;
    let y = standardize(b, grouped, mean, var)?;
    let y = b.reshape(y, &shape)?;
    let (scale, bias) = (b.input(1)?, b.input(2)?);
    let per_group = b.shape(scale).iter().product::<i64>() == groups && groups != c;
    let (scale, bias) = if per_group {
        let repeat: Vec<i64> = (0..c).map(|ch| ch / (c / groups)).collect();
        (b.gather(scale, 0, &repeat)?, b.gather(bias, 0, &repeat)?)
    } else {
        (scale, bias)
    };
    let scale = per_channel(b, scale, shape.len())?;
    let bias = per_channel(b, bias, shape.len())?;
    let scaled = b.binary(BinaryKind::Mul, y, scale)?;
    b.binary(BinaryKind::Add, scaled, bias)
}

/// `LRN`: `x / (bias + alpha / size * sum of x² over the channel window)^beta`,
/// the window reaching `floor((size - 1) / 2)` channels back and
/// `ceil((size - 1) / 2)` forward.
fn lrn(b: &mut Body<'_, '_, '_>) -> Built {
    let (x, shape) = feature_map(b)?;
    let size = b.node.int_attr("size", 0)?;
    if size < 1 {
        return Err(b.error(format!("`size` must be positive, but is {size}")));
    }
    let alpha = f64::from(b.node.float_attr("alpha", 1e-4)?);
    let beta = f64::from(b.node.float_attr("beta", 0.75)?);
    let bias = f64::from(b.node.float_attr("bias", 1.0)?);
    let rank = shape.len();
    let c = shape[1];
    let sq = b.binary(BinaryKind::Mul, x, x)?;
    let mut pads = vec![0i64; 2 * rank];
    pads[1] = (size - 1) / 2;
    pads[1 + rank] = size - 1 - pads[1];
    let padded = b.pad(sq, &pads, 0.0)?;
    let mut sum = b.slice(padded, 1, 0, c)?;
    for k in 1..size {
        let window = b.slice(padded, 1, k, k + c)?;
        sum = b.binary(BinaryKind::Add, sum, window)?;
    }
    let coefficient = b.scalar_like(x, alpha / size as f64)?;
    let bias = b.scalar_like(x, bias)?;
    let beta = b.scalar_like(x, beta)?;
    let scaled = b.binary(BinaryKind::Mul, sum, coefficient)?;
    let base = b.binary(BinaryKind::Add, scaled, bias)?;
    let denominator = b.binary(BinaryKind::Pow, base, beta)?;
    b.binary(BinaryKind::Div, x, denominator)
}
