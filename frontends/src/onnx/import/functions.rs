//! ONNX function ops that `nn` has no op for, inlined from their ONNX
//! function bodies the way onnxruntime expands function ops: activations
//! (`Elu`, `Selu`, `LeakyRelu`, `HardSigmoid`, `HardSwish`, `Softplus`,
//! `Softsign`, `Celu`, `ThresholdedRelu`, `PRelu`, `Swish`, `Mish`,
//! `SwiGLU`), `Clip`,
//! `Sum`/`Mean`, `LogSoftmax`, the derived reductions (`ReduceL1`,
//! `ReduceL2`, `ReduceLogSum`, `ReduceLogSumExp`, `ReduceSumSquare`),
//! `RMSNormalization`, `Trilu`, inference-mode `Dropout`, and the losses
//! `NegativeLogLikelihoodLoss` and `SoftmaxCrossEntropyLoss`, global pooling
//! (`GlobalAveragePool`, `GlobalMaxPool`), `LpNormalization`,
//! `MeanVarianceNormalization`, `Hardmax`, `OneHot` and `Shrink`.
//!
//! Each body is written with `nn` ops only, so every later layer (the
//! e-graph rules, the reference executor, the lowering) sees ops it knows;
//! where ipuc has a native op (`Softmax`, `LayerNormalization`, `Gelu`) the
//! importer keeps it instead (see `normalization.rs`).

use ipuc_dialects::nn::{BinaryKind, CompareKind, ReduceKind, UnaryKind};
use ipuc_ir::{Type, Value};

use super::body::{Body, Built};
use super::normalization::reduce_params;
use super::{ImportError, Importer, NodeResult};
use crate::onnx::{data_type_name, element_kind_of, Node};

/// The ops of this family.
pub(super) const OPS: &[&str] = &[
    "Elu",
    "Selu",
    "LeakyRelu",
    "HardSigmoid",
    "HardSwish",
    "Softplus",
    "Softsign",
    "Celu",
    "ThresholdedRelu",
    "PRelu",
    "Swish",
    "SwiGLU",
    "Mish",
    "Clip",
    "Sum",
    "Mean",
    "LogSoftmax",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceSumSquare",
    "RMSNormalization",
    "Trilu",
    "Dropout",
    "NegativeLogLikelihoodLoss",
    "SoftmaxCrossEntropyLoss",
    "GlobalAveragePool",
    "GlobalMaxPool",
    "LpNormalization",
    "MeanVarianceNormalization",
    "Hardmax",
    "OneHot",
    "Shrink",
];

pub(super) fn import(imp: &mut Importer<'_>, node: &Node) -> NodeResult {
    let mut b = Body::new(imp, node);
    let op = node.op_type.as_str();
    match op {
        "Clip" => clip(&mut b).map(|v| vec![v]),
        "Sum" | "Mean" => sum(&mut b, op == "Mean").map(|v| vec![v]),
        "LogSoftmax" => {
            let x = b.input(0)?;
            let axes = softmax_axes(&b, x)?;
            log_softmax(&mut b, x, &axes).map(|v| vec![v])
        }
        "ReduceL1" | "ReduceL2" | "ReduceLogSum" | "ReduceLogSumExp" | "ReduceSumSquare" => {
            derived_reduction(&mut b, op)
        }
        "RMSNormalization" => rms_normalization(&mut b).map(|v| vec![v]),
        "Trilu" => trilu(&mut b).map(|v| vec![v]),
        "Dropout" => dropout(&mut b),
        "NegativeLogLikelihoodLoss" => {
            let (x, target) = (b.input(0)?, b.input(1)?);
            let weight = b.optional_input(2)?;
            nll_loss(&mut b, x, target, weight).map(|v| vec![v])
        }
        "SoftmaxCrossEntropyLoss" => {
            let (scores, labels) = (b.input(0)?, b.input(1)?);
            let weight = b.optional_input(2)?;
            let log_prob = log_softmax(&mut b, scores, &[1])?;
            let loss = nll_loss(&mut b, log_prob, labels, weight)?;
            Ok(vec![loss, log_prob])
        }
        "GlobalAveragePool" | "GlobalMaxPool" => {
            // Over every spatial axis of [N, C, spatial...], kept as 1s.
            let x = b.input(0)?;
            let axes: Vec<i64> = (2..b.shape(x).len() as i64).collect();
            let kind = if op == "GlobalMaxPool" {
                ReduceKind::Max
            } else {
                ReduceKind::Mean
            };
            b.reduce(kind, x, Some(&axes), true).map(|v| vec![v])
        }
        "LpNormalization" => lp_normalization(&mut b).map(|v| vec![v]),
        "MeanVarianceNormalization" => mean_variance_normalization(&mut b).map(|v| vec![v]),
        "Hardmax" => hardmax(&mut b).map(|v| vec![v]),
        "OneHot" => one_hot(&mut b).map(|v| vec![v]),
        "Shrink" => shrink(&mut b).map(|v| vec![v]),
        _ => activation(&mut b, op).map(|v| vec![v]),
    }
}

/// `Shrink`: `x + bias` below `-lambd`, `x - bias` above `lambd`, else 0.
fn shrink(b: &mut Body<'_, '_, '_>) -> Built {
    let x = b.input(0)?;
    let lambd = f64::from(b.node.float_attr("lambd", 0.5)?);
    let bias = f64::from(b.node.float_attr("bias", 0.0)?);
    let (lo, hi) = (b.scalar_like(x, -lambd)?, b.scalar_like(x, lambd)?);
    let (bias, zero) = (b.scalar_like(x, bias)?, b.scalar_like(x, 0.0)?);
    let below = b.compare(CompareKind::Less, x, lo)?;
    let above = b.compare(CompareKind::Greater, x, hi)?;
    let raised = b.binary(BinaryKind::Add, x, bias)?;
    let lowered = b.binary(BinaryKind::Sub, x, bias)?;
    let outer = b.select(above, lowered, zero)?;
    b.select(below, raised, outer)
}

/// `LpNormalization`: `x / ||x||_p` along `axis` (p = 1 or 2).
fn lp_normalization(b: &mut Body<'_, '_, '_>) -> Built {
    let x = b.input(0)?;
    let axis = b.node.int_attr("axis", -1)?;
    let norm = match b.node.int_attr("p", 2)? {
        1 => {
            let a = b.unary(UnaryKind::Abs, x)?;
            b.reduce(ReduceKind::Sum, a, Some(&[axis]), true)?
        }
        2 => {
            let sq = b.binary(BinaryKind::Mul, x, x)?;
            let s = b.reduce(ReduceKind::Sum, sq, Some(&[axis]), true)?;
            b.unary(UnaryKind::Sqrt, s)?
        }
        p => return Err(b.error(format!("`p` must be 1 or 2, but is {p}"))),
    };
    // A zero norm gives zeros, not 0/0 (as the ONNX reference defines it).
    let zero = b.scalar_like(x, 0.0)?;
    let vanishes = b.compare(CompareKind::Equal, norm, zero)?;
    let scaled = b.binary(BinaryKind::Div, x, norm)?;
    b.select(vanishes, zero, scaled)
}

/// `MeanVarianceNormalization` by its body: `(x - mean) / (sqrt(mean(x²) -
/// mean²) + 1e-9)` over `axes` (default `[0, 2, 3]`).
fn mean_variance_normalization(b: &mut Body<'_, '_, '_>) -> Built {
    let x = b.input(0)?;
    let axes = b
        .node
        .ints_attr("axes")?
        .map_or_else(|| vec![0, 2, 3], <[i64]>::to_vec);
    let mean = b.reduce(ReduceKind::Mean, x, Some(&axes), true)?;
    let sq = b.binary(BinaryKind::Mul, x, x)?;
    let mean_sq = b.reduce(ReduceKind::Mean, sq, Some(&axes), true)?;
    let sq_mean = b.binary(BinaryKind::Mul, mean, mean)?;
    let var = b.binary(BinaryKind::Sub, mean_sq, sq_mean)?;
    let std = b.unary(UnaryKind::Sqrt, var)?;
    let eps = scalar(b, x, 1e-9)?;
    let denom = b.binary(BinaryKind::Add, std, eps)?;
    let centered = b.binary(BinaryKind::Sub, x, mean)?;
    b.binary(BinaryKind::Div, centered, denom)
}

/// A constant `[0, 1, ..., n - 1]` of element type `elem`, shaped as 1s
/// but for `n` at `axis` of a rank-`rank` tensor.
fn iota_along(b: &mut Body<'_, '_, '_>, n: i64, axis: usize, rank: usize, elem: &Type) -> Built {
    let mut shape = vec![1; rank];
    shape[axis] = n;
    let values: Vec<f64> = (0..n).map(|i| i as f64).collect();
    b.constant(&shape, elem, &values)
}

/// `Hardmax` (opset 13): 1 at the first largest element along `axis`, 0
/// elsewhere: an index compare against `argmax`.
fn hardmax(b: &mut Body<'_, '_, '_>) -> Built {
    let x = b.input(0)?;
    let rank = b.shape(x).len();
    if b.imp.opset < 13 {
        return Err(b.error(
            "Hardmax before opset 13 works on the input coerced to 2-D; convert the model \
             to opset 13 (onnx.version_converter)",
        ));
    }
    let axis = b.node.int_attr("axis", -1)?;
    let a = ipuc_dialects::nn::normalize_axis(axis, rank).map_err(|e| b.error(e))?;
    let state = ipuc_dialects::nn::ArgReduceOp::build(
        b.imp.ctx,
        ipuc_dialects::nn::ArgKind::Max,
        x,
        a as i64,
        true,
        false,
        Importer::loc(b.node),
    );
    let arg = b.imp.emit1(b.node, state)?;
    let ids = iota_along(b, b.shape(x)[a], a, rank, &Type::i64())?;
    let hit = b.compare(CompareKind::Equal, arg, ids)?;
    let elem = b.element(x)?;
    b.cast(hit, &elem)
}

/// `OneHot`: `values[1]` where an index (negative ones count from `depth`)
/// equals the position along the new `axis`, `values[0]` elsewhere.
fn one_hot(b: &mut Body<'_, '_, '_>) -> Built {
    let (indices, values) = (b.input(0)?, b.input(2)?);
    // `depth` may be any numeric type (the ONNX tests use floats).
    let depth_value = b.input(1)?;
    let depth = b
        .imp
        .constant_of(depth_value)
        .as_ref()
        .and_then(ipuc_dialects::nn::elements::dense_data)
        .and_then(|d| {
            ipuc_dialects::nn::elements::floats(&d).or_else(|| {
                ipuc_dialects::nn::elements::ints(&d)
                    .map(|v| v.into_iter().map(|i| i as f64).collect())
            })
        })
        .filter(|f| f.len() == 1 && f[0] >= 1.0 && f[0] <= i32::MAX as f64)
        .ok_or_else(|| b.error("`depth` must be one positive constant"))?[0] as i64;
    let rank = b.shape(indices).len() + 1;
    let axis = b.node.int_attr("axis", -1)?;
    let a = ipuc_dialects::nn::normalize_axis(axis, rank).map_err(|e| b.error(e))?;
    let ielem = b.element(indices)?;
    let zero = scalar(b, indices, 0.0)?;
    let n = scalar(b, indices, depth as f64)?;
    let negative = b.compare(CompareKind::Less, indices, zero)?;
    let wrapped = b.binary(BinaryKind::Add, indices, n)?;
    let idx = b.select(negative, wrapped, indices)?;
    let idx = b.unsqueeze(idx, &[a as i64])?;
    let ids = iota_along(b, depth, a, rank, &ielem)?;
    let hit = b.compare(CompareKind::Equal, idx, ids)?;
    let vs = b.shape(values);
    if vs != [2] {
        return Err(b.error(format!("`values` must be [off, on], but has shape {vs:?}")));
    }
    let off = b.reshape(values, &[2])?;
    let pieces =
        ipuc_dialects::nn::SplitOp::build(b.imp.ctx, off, 0, &[1, 1], Importer::loc(b.node));
    let halves = b.imp.emit(b.node, pieces)?;
    let (off, on) = (b.reshape(halves[0], &[])?, b.reshape(halves[1], &[])?);
    b.select(hit, on, off)
}

/// `scalar(v)`: a rank-0 constant of `like`'s element type.
fn scalar(b: &mut Body<'_, '_, '_>, like: Value, v: f64) -> Built {
    b.scalar_like(like, v)
}

/// The activations: element-wise bodies of `x` and float attributes.
fn activation(b: &mut Body<'_, '_, '_>, op: &str) -> Built {
    use BinaryKind::{Add, Div, Max, Min, Mul, Sub};
    let x = b.input(0)?;
    let attr = |b: &Body<'_, '_, '_>, name: &str, default: f32| -> Result<f64, ImportError> {
        Ok(f64::from(b.node.float_attr(name, default)?))
    };
    let zero = scalar(b, x, 0.0)?;
    let one = scalar(b, x, 1.0)?;
    match op {
        // x < 0 ? alpha * (exp(x) - 1) : x
        "Elu" => {
            let alpha = attr(b, "alpha", 1.0)?;
            let alpha = scalar(b, x, alpha)?;
            let e = b.unary(UnaryKind::Exp, x)?;
            let em1 = b.binary(Sub, e, one)?;
            let neg = b.binary(Mul, alpha, em1)?;
            let is_neg = b.compare(CompareKind::Less, x, zero)?;
            b.select(is_neg, neg, x)
        }
        // x > 0 ? gamma * x : gamma * (alpha * exp(x) - alpha)
        "Selu" => {
            let alpha = attr(b, "alpha", 1.673_263_2)?;
            let gamma = attr(b, "gamma", 1.050_701)?;
            let (alpha, gamma) = (scalar(b, x, alpha)?, scalar(b, x, gamma)?);
            let e = b.unary(UnaryKind::Exp, x)?;
            let ae = b.binary(Mul, alpha, e)?;
            let neg = b.binary(Sub, ae, alpha)?;
            let is_pos = b.compare(CompareKind::Greater, x, zero)?;
            let inner = b.select(is_pos, x, neg)?;
            b.binary(Mul, gamma, inner)
        }
        // x < 0 ? alpha * x : x
        "LeakyRelu" => {
            let alpha = attr(b, "alpha", 0.01)?;
            let alpha = scalar(b, x, alpha)?;
            let slope = b.binary(Mul, alpha, x)?;
            let is_neg = b.compare(CompareKind::Less, x, zero)?;
            b.select(is_neg, slope, x)
        }
        // x < 0 ? slope * x : x, slope broadcast to x
        "PRelu" => {
            let slope = b.input(1)?;
            let scaled = b.binary(Mul, slope, x)?;
            let is_neg = b.compare(CompareKind::Less, x, zero)?;
            b.select(is_neg, scaled, x)
        }
        // max(0, min(1, alpha * x + beta))
        "HardSigmoid" => {
            let (alpha, beta) = (attr(b, "alpha", 0.2)?, attr(b, "beta", 0.5)?);
            hard_sigmoid(b, x, alpha, beta)
        }
        // x * HardSigmoid<alpha = 1/6, beta = 1/2>(x)
        "HardSwish" => {
            let h = hard_sigmoid(b, x, 1.0 / 6.0, 0.5)?;
            b.binary(Mul, x, h)
        }
        // log(exp(x) + 1)
        "Softplus" => softplus(b, x),
        // x / (1 + |x|)
        "Softsign" => {
            let a = b.unary(UnaryKind::Abs, x)?;
            let d = b.binary(Add, one, a)?;
            b.binary(Div, x, d)
        }
        // max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
        "Celu" => {
            let alpha = attr(b, "alpha", 1.0)?;
            let alpha = scalar(b, x, alpha)?;
            let scaled = b.binary(Div, x, alpha)?;
            let e = b.unary(UnaryKind::Exp, scaled)?;
            let em1 = b.binary(Sub, e, one)?;
            let neg = b.binary(Mul, alpha, em1)?;
            let neg = b.binary(Min, zero, neg)?;
            let pos = b.binary(Max, zero, x)?;
            b.binary(Add, pos, neg)
        }
        // x > alpha ? x : 0
        "ThresholdedRelu" => {
            let alpha = attr(b, "alpha", 1.0)?;
            let alpha = scalar(b, x, alpha)?;
            let above = b.compare(CompareKind::Greater, x, alpha)?;
            b.select(above, x, zero)
        }
        // x * sigmoid(alpha * x); SwiGLU's body multiplies that gate by its second input
        "Swish" | "SwiGLU" => {
            let alpha = attr(b, "alpha", 1.0)?;
            let alpha = scalar(b, x, alpha)?;
            let ax = b.binary(Mul, alpha, x)?;
            let s = b.unary(UnaryKind::Sigmoid, ax)?;
            let gate = b.binary(Mul, x, s)?;
            if op != "SwiGLU" {
                return Ok(gate);
            }
            let value = b.input(1)?;
            if b.imp.ty(value) != b.imp.ty(x) {
                return Err(b.error(format!(
                    "A is '{}' but B is '{}'; SwiGLU needs equal shapes and types (no broadcasting)",
                    b.imp.ty(x),
                    b.imp.ty(value)
                )));
            }
            b.binary(Mul, gate, value)
        }
        // x * tanh(softplus(x))
        "Mish" => {
            let sp = softplus(b, x)?;
            let t = b.unary(UnaryKind::Tanh, sp)?;
            b.binary(Mul, x, t)
        }
        other => unreachable!("`{other}` is not a function op of this family"),
    }
}

fn hard_sigmoid(b: &mut Body<'_, '_, '_>, x: Value, alpha: f64, beta: f64) -> Built {
    let (alpha, beta) = (scalar(b, x, alpha)?, scalar(b, x, beta)?);
    let (zero, one) = (scalar(b, x, 0.0)?, scalar(b, x, 1.0)?);
    let ax = b.binary(BinaryKind::Mul, alpha, x)?;
    let y = b.binary(BinaryKind::Add, ax, beta)?;
    let y = b.binary(BinaryKind::Min, one, y)?;
    b.binary(BinaryKind::Max, zero, y)
}

fn softplus(b: &mut Body<'_, '_, '_>, x: Value) -> Built {
    let one = scalar(b, x, 1.0)?;
    let e = b.unary(UnaryKind::Exp, x)?;
    let e1 = b.binary(BinaryKind::Add, e, one)?;
    b.unary(UnaryKind::Log, e1)
}

/// `Clip`: `min(max(x, lo), hi)`; the bounds are attributes before opset 11
/// and optional inputs since (when `lo > hi` every element becomes `hi`, as
/// the ONNX definition says).
fn clip(b: &mut Body<'_, '_, '_>) -> Built {
    let x = b.input(0)?;
    let (lo, hi) = if b.imp.opset < 11 {
        let lo = b
            .node
            .attribute("min")
            .map(|_| b.node.float_attr("min", 0.0))
            .transpose()?;
        let hi = b
            .node
            .attribute("max")
            .map(|_| b.node.float_attr("max", 0.0))
            .transpose()?;
        let lo = lo.map(|v| scalar(b, x, f64::from(v))).transpose()?;
        let hi = hi.map(|v| scalar(b, x, f64::from(v))).transpose()?;
        (lo, hi)
    } else {
        (b.optional_input(1)?, b.optional_input(2)?)
    };
    let mut y = x;
    if let Some(lo) = lo {
        y = b.binary(BinaryKind::Max, y, lo)?;
    }
    if let Some(hi) = hi {
        y = b.binary(BinaryKind::Min, y, hi)?;
    }
    Ok(y)
}

/// `Sum` (and `Mean`: the sum divided by the operand count) of one or more
/// operands, with broadcasting.
fn sum(b: &mut Body<'_, '_, '_>, mean: bool) -> Built {
    let operands: Vec<Value> = (0..b.node.inputs.len())
        .filter_map(|i| b.optional_input(i).transpose())
        .collect::<Result<_, _>>()?;
    let Some((&first, rest)) = operands.split_first() else {
        return Err(b.error("expects one or more operands"));
    };
    let mut acc = first;
    for &v in rest {
        acc = b.binary(BinaryKind::Add, acc, v)?;
    }
    if mean {
        let n = scalar(b, acc, operands.len() as f64)?;
        acc = b.binary(BinaryKind::Div, acc, n)?;
    }
    Ok(acc)
}

/// The axes a softmax-like op normalises over: `axis` alone since opset 13;
/// before, the input is seen as 2-D at `axis` (default 1) and each row is
/// normalised, i.e. all of `axis..rank`.
fn softmax_axes(b: &Body<'_, '_, '_>, x: Value) -> Result<Vec<i64>, ImportError> {
    let rank = b.shape(x).len() as i64;
    let legacy = b.imp.opset < 13;
    let axis = b.node.int_attr("axis", if legacy { 1 } else { -1 })?;
    let a = if axis < 0 { axis + rank } else { axis };
    if !(0..rank).contains(&a) {
        return Err(b.error(format!("axis {axis} is out of range for rank {rank}")));
    }
    Ok(if legacy { (a..rank).collect() } else { vec![a] })
}

/// `log(softmax(x))` over `axes`, computed as `(x - max) - log(sum(exp(x - max)))`
/// so that tiny probabilities keep their precision.
fn log_softmax(b: &mut Body<'_, '_, '_>, x: Value, axes: &[i64]) -> Built {
    let m = b.reduce(ReduceKind::Max, x, Some(axes), true)?;
    let shifted = b.binary(BinaryKind::Sub, x, m)?;
    let e = b.unary(UnaryKind::Exp, shifted)?;
    let s = b.reduce(ReduceKind::Sum, e, Some(axes), true)?;
    let l = b.unary(UnaryKind::Log, s)?;
    b.binary(BinaryKind::Sub, shifted, l)
}

/// The reductions ONNX defines through `ReduceSum`: L1 (`sum |x|`), L2
/// (`sqrt(sum x²)`), log-sum, log-sum-exp (`log(sum(exp x))`, as the ONNX
/// body writes it) and sum of squares.
fn derived_reduction(b: &mut Body<'_, '_, '_>, op: &str) -> NodeResult {
    let x = b.input(0)?;
    let pre = match op {
        "ReduceL1" => b.unary(UnaryKind::Abs, x)?,
        "ReduceL2" | "ReduceSumSquare" => b.binary(BinaryKind::Mul, x, x)?,
        "ReduceLogSumExp" => b.unary(UnaryKind::Exp, x)?,
        _ => x,
    };
    let s = match reduce_params(b.imp, b.node)? {
        Some((axes, keepdims)) => b.reduce(ReduceKind::Sum, pre, axes.as_deref(), keepdims)?,
        None => pre,
    };
    let y = match op {
        "ReduceL2" => b.unary(UnaryKind::Sqrt, s)?,
        "ReduceLogSum" | "ReduceLogSumExp" => b.unary(UnaryKind::Log, s)?,
        _ => s,
    };
    Ok(vec![y])
}

/// `RMSNormalization` (opset 23) by its body: in `stash_type`,
/// `x / sqrt(mean(x², axes axis..rank) + epsilon)`, cast back, times `scale`.
fn rms_normalization(b: &mut Body<'_, '_, '_>) -> Built {
    let (x, scale) = (b.input(0)?, b.input(1)?);
    let axis = b.node.int_attr("axis", -1)?;
    let epsilon = b.node.float_attr("epsilon", 1e-5)?;
    let stash = stash_type(b)?;
    let elem = b.element(x)?;
    let rank = b.shape(x).len() as i64;
    let first = if axis < 0 { axis + rank } else { axis };
    if !(0..rank).contains(&first) {
        return Err(b.error(format!("axis {axis} is out of range for rank {rank}")));
    }
    let axes: Vec<i64> = (first..rank).collect();
    let xs = b.cast(x, &stash)?;
    let sq = b.binary(BinaryKind::Mul, xs, xs)?;
    let ms = b.reduce(ReduceKind::Mean, sq, Some(&axes), true)?;
    let eps = scalar(b, ms, f64::from(epsilon))?;
    let shifted = b.binary(BinaryKind::Add, ms, eps)?;
    let rms = b.unary(UnaryKind::Sqrt, shifted)?;
    let normalized = b.binary(BinaryKind::Div, xs, rms)?;
    let normalized = b.cast(normalized, &elem)?;
    b.binary(BinaryKind::Mul, normalized, scale)
}

/// The `stash_type` attribute (default float32) as an IR element type.
fn stash_type(b: &Body<'_, '_, '_>) -> Result<Type, ImportError> {
    let code = b.node.int_attr("stash_type", 1)?;
    element_kind_of(code as i32)
        .map(super::constants::element_type)
        .filter(Type::is_float)
        .ok_or_else(|| {
            b.error(format!(
                "`stash_type` = {code} ({}) is not a floating-point type ipuc supports",
                data_type_name(code as i32)
            ))
        })
}

/// `Trilu`: the upper (`upper = 1`) or lower triangle of the last two
/// dimensions from diagonal `k`, the rest zero: a select with a constant mask
/// (shapes are static).
fn trilu(b: &mut Body<'_, '_, '_>) -> Built {
    let x = b.input(0)?;
    let k = match b.imp.optional_const_ints(b.node, 1, "diagonal offset k")? {
        Some(v) if v.len() == 1 => v[0],
        Some(v) => return Err(b.error(format!("`k` must hold one value, but holds {}", v.len()))),
        None => 0,
    };
    let upper = b.node.int_attr("upper", 1)? != 0;
    let shape = b.shape(x);
    if shape.len() < 2 {
        return Err(b.error(format!(
            "the input must have rank 2 or more, but has rank {}",
            shape.len()
        )));
    }
    let (rows, cols) = (shape[shape.len() - 2], shape[shape.len() - 1]);
    let mask: Vec<f64> = (0..rows)
        .flat_map(|i| {
            (0..cols).map(move |j| {
                let keep = if upper { j - i >= k } else { j - i <= k };
                f64::from(u8::from(keep))
            })
        })
        .collect();
    let mask = b.constant(&[rows, cols], &Type::i1(), &mask)?;
    let zero = scalar(b, x, 0.0)?;
    b.select(mask, x, zero)
}

/// `Dropout` at inference: the identity, and an all-true mask when asked
/// for. Training-mode dropout with a non-zero ratio is random: refused.
fn dropout(b: &mut Body<'_, '_, '_>) -> NodeResult {
    let x = b.input(0)?;
    let training = if b.imp.opset >= 12 {
        let mode = b
            .imp
            .optional_const_ints(b.node, 2, "training_mode")?
            .is_some_and(|v| v.iter().any(|&t| t != 0));
        let ratio = match b.optional_input(1)? {
            Some(r) => b
                .imp
                .constant_of(r)
                .as_ref()
                .and_then(ipuc_dialects::nn::elements::dense_data)
                .and_then(|d| ipuc_dialects::nn::elements::floats(&d))
                .map(|v| v.iter().any(|&r| r != 0.0)),
            None => Some(true),
        };
        mode && ratio != Some(false)
    } else {
        // `is_test` (before opset 7) says inference; later versions are
        // inference-only in the graph.
        b.imp.opset < 7 && b.node.int_attr("is_test", 0)? == 0
    };
    if training {
        return Err(b.error(
            "training-mode Dropout drops random elements; ipuc imports inference graphs \
             (set training_mode to false or export the model in eval mode)",
        ));
    }
    let mut outputs = vec![x];
    if b.wants_output(1) {
        let shape = b.shape(x);
        let n: i64 = shape.iter().product();
        let mask = b.constant(&shape, &Type::i1(), &vec![1.0; n.max(0) as usize])?;
        outputs.push(mask);
    }
    Ok(outputs)
}

/// `NegativeLogLikelihoodLoss` by its definition: `loss[n, d...] =
/// -x[n, target[n, d...], d...] * weight[target[n, d...]]` (0 where the
/// target is `ignore_index`), reduced by `reduction` (`mean` divides by the
/// sum of the weights used). The pick along the class axis is a one-hot
/// select against a constant class index (no gather with run-time indices).
fn nll_loss(b: &mut Body<'_, '_, '_>, x: Value, target: Value, weight: Option<Value>) -> Built {
    let shape = b.shape(x);
    let rank = shape.len();
    if rank < 2 || b.shape(target).len() != rank - 1 {
        return Err(b.error(format!(
            "the input must be [N, C, d...] and the target [N, d...], but have ranks {rank} and {}",
            b.shape(target).len()
        )));
    }
    let classes = shape[1];
    let target_elem = b.element(target)?;
    let mut class_shape = vec![1; rank];
    class_shape[1] = classes;
    let class_ids: Vec<f64> = (0..classes).map(|c| c as f64).collect();
    let class_ids = b.constant(&class_shape, &target_elem, &class_ids)?;
    let t = b.unsqueeze(target, &[1])?;
    let mut one_hot = b.compare(CompareKind::Equal, t, class_ids)?;
    let ignore = b
        .node
        .attribute("ignore_index")
        .map(|_| b.node.int_attr("ignore_index", 0))
        .transpose()?;
    let valid = match ignore {
        Some(i) => {
            let i = scalar(b, target, i as f64)?;
            let ignored = b.compare(CompareKind::Equal, target, i)?;
            let valid = b.unary(UnaryKind::Not, ignored)?;
            let v = b.unsqueeze(valid, &[1])?;
            one_hot = b.binary(BinaryKind::And, one_hot, v)?;
            Some(valid)
        }
        None => None,
    };
    let zero = scalar(b, x, 0.0)?;
    let picked = b.select(one_hot, x, zero)?;
    let picked = b.reduce(ReduceKind::Sum, picked, Some(&[1]), false)?;
    let loss = b.unary(UnaryKind::Neg, picked)?;
    let elem = b.element(x)?;
    let weights = match (weight, valid) {
        (Some(w), _) => {
            let w = b.reshape(w, &class_shape)?;
            let w = b.select(one_hot, w, zero)?;
            Some(b.reduce(ReduceKind::Sum, w, Some(&[1]), false)?)
        }
        (None, Some(valid)) => Some(b.cast(valid, &elem)?),
        (None, None) => None,
    };
    let loss = match (weight, weights) {
        (Some(_), Some(w)) => b.binary(BinaryKind::Mul, loss, w)?,
        _ => loss,
    };
    match b.node.string_attr("reduction", "mean")? {
        "none" => Ok(loss),
        "sum" => b.reduce(ReduceKind::Sum, loss, None, false),
        "mean" => match weights {
            Some(w) => {
                let total = b.reduce(ReduceKind::Sum, loss, None, false)?;
                let count = b.reduce(ReduceKind::Sum, w, None, false)?;
                b.binary(BinaryKind::Div, total, count)
            }
            None => b.reduce(ReduceKind::Mean, loss, None, false),
        },
        other => Err(b.error(format!(
            "`reduction` must be none, sum or mean, but is {other:?}"
        ))),
    }
}
