//! Reductions: ONNX `ReduceSum`, `ReduceMean`, `ReduceMax` (opset 18 form: axes as
//! an operand, `keepdims`, `noop_with_empty_axes`).
//!
//! Float sums accumulate in f64 and round once to the compute type, which is at
//! least as accurate as the f32 pairwise sums of numpy-based references.

use super::error::{KernelError, KernelResult};
use super::host_tensor::{HostTensor, Values};
use super::shape::{normalize_axes, strides};

/// Which reduction: `nn`'s kinds (the float ones start and step as
/// [`ReduceKind::float_start`] and [`ReduceKind::float_step`] say, the
/// folder's arithmetic).
pub use ipuc_dialects::nn::ReduceKind;

/// Reduces `x` over `axes` (`None` or empty: all axes, unless
/// `noop_with_empty_axes`, which returns `x` unchanged).
pub fn reduce(
    x: &HostTensor,
    reduction: ReduceKind,
    axes: Option<&[i64]>,
    keepdims: bool,
    noop_with_empty_axes: bool,
) -> KernelResult<HostTensor> {
    let axes = match axes {
        Some(a) if !a.is_empty() => normalize_axes("reduce", a, x.rank())?,
        _ if noop_with_empty_axes => return Ok(x.clone()),
        _ => (0..x.rank()).collect(),
    };
    let kept_shape: Vec<usize> = (0..x.rank())
        .map(|d| if axes.contains(&d) { 1 } else { x.shape[d] })
        .collect();
    let out_count: usize = kept_shape.iter().product();
    let group: usize = axes.iter().map(|&a| x.shape[a]).product();
    // Output index of every input element.
    let in_strides = strides(&x.shape);
    let out_strides = strides(&kept_shape);
    let target = |i: usize| -> usize {
        (0..x.rank())
            .map(|d| {
                if axes.contains(&d) {
                    0
                } else {
                    i / in_strides[d] % x.shape[d] * out_strides[d]
                }
            })
            .sum()
    };
    let values = match x.values() {
        Values::F32(v) => Values::F32(
            reduce_float(
                &v.iter().map(|&a| f64::from(a)).collect::<Vec<_>>(),
                reduction,
                out_count,
                group,
                target,
            )
            .into_iter()
            .map(|a| a as f32)
            .collect(),
        ),
        Values::F64(v) => Values::F64(reduce_float(&v, reduction, out_count, group, target)),
        Values::Int(v) => {
            let (lowest, highest) =
                x.kind
                    .integer_range()
                    .ok_or_else(|| KernelError::ElementType {
                        op: "reduce",
                        kind: x.kind.to_string(),
                    })?;
            let init = match reduction {
                ReduceKind::Max => lowest,
                ReduceKind::Min => highest,
                ReduceKind::Prod => 1,
                ReduceKind::Sum | ReduceKind::Mean => 0,
            };
            let mut acc = vec![init; out_count];
            for (i, &a) in v.iter().enumerate() {
                let o = &mut acc[target(i)];
                *o = match reduction {
                    ReduceKind::Sum | ReduceKind::Mean => o.wrapping_add(a),
                    ReduceKind::Max => (*o).max(a),
                    ReduceKind::Min => (*o).min(a),
                    ReduceKind::Prod => o.wrapping_mul(a),
                };
            }
            if reduction == ReduceKind::Mean {
                // Integer mean truncates toward zero, as numpy's mean cast back does.
                acc.iter_mut()
                    .for_each(|a| *a = if group == 0 { 0 } else { *a / group as i128 });
            }
            Values::Int(acc)
        }
    };
    let shape = if keepdims {
        kept_shape
    } else {
        (0..x.rank())
            .filter(|d| !axes.contains(d))
            .map(|d| x.shape[d])
            .collect()
    };
    Ok(HostTensor::from_values(x.kind, shape, values))
}

fn reduce_float(
    v: &[f64],
    reduction: ReduceKind,
    out_count: usize,
    group: usize,
    target: impl Fn(usize) -> usize,
) -> Vec<f64> {
    let mut acc = vec![reduction.float_start(); out_count];
    for (i, &a) in v.iter().enumerate() {
        let o = &mut acc[target(i)];
        *o = reduction.float_step(*o, a);
    }
    if reduction == ReduceKind::Mean {
        acc.iter_mut().for_each(|a| *a /= group as f64);
    }
    acc
}
