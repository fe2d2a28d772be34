//! Softmax and LayerNormalization.
//!
//! Both normalise rows (a contiguous inner block), computed in f64 per row and
//! rounded once to the compute type, in parallel over rows. f32 tensors
//! normalised along their innermost axis (every softmax and LayerNorm of a
//! transformer) take a fast path straight from and into the tensors' bytes:
//! LayerNorm keeps its f64 statistics and arithmetic, softmax takes its
//! exponentials in f32 and its sum in f64 (see `fast_math`).

use ipuc_ir::numeric::ElementKind;
use rayon::prelude::*;

use super::error::{shape_error, KernelError, KernelResult};
use super::fast_f32::{f32_elements, f32_tensor_with};
use super::fast_math;
use super::host_tensor::{HostTensor, Values};
use super::shape::{normalize_axis, strides};

/// Rows per parallel task of the row-wise fast paths.
fn rows_per_task(row: usize) -> usize {
    (1usize << 14).div_ceil(row.max(1))
}

/// ONNX `Softmax` (opset 13+): along one `axis`, max-subtracted for stability.
pub fn softmax(x: &HostTensor, axis: i64) -> KernelResult<HostTensor> {
    if !x.kind.is_float() {
        return Err(KernelError::ElementType {
            op: "softmax",
            kind: x.kind.to_string(),
        });
    }
    let axis = normalize_axis("softmax", axis, x.rank())?;
    let dim = x.shape[axis];
    let inner = strides(&x.shape)[axis];
    if x.kind == ElementKind::F32 && inner == 1 && dim > 0 {
        let v = f32_elements(x);
        return Ok(f32_tensor_with(x.shape.clone(), |out| {
            out.copy_from_slice(&v);
            out.par_chunks_mut(dim * rows_per_task(dim))
                .for_each(|rows| {
                    rows.chunks_mut(dim)
                        .for_each(|row| fast_math::softmax_row(row, 1.0))
                });
        }));
    }
    let v = x.to_f64_vec();
    let mut out = vec![0f64; v.len()];
    // f32-domain inputs take the exponential in f32 (within an ulp, and far
    // cheaper); the sum and the division stay in f64.
    let exp: fn(f64) -> f64 = match HostTensor::domain_of(x.kind) {
        Values::F64(_) => f64::exp,
        _ => |d| f64::from((d as f32).exp()),
    };
    if dim > 0 && inner > 0 {
        // Each chunk is one outer index: `dim × inner` elements, reduced along `dim`.
        out.par_chunks_mut(dim * inner)
            .zip(v.par_chunks(dim * inner))
            .for_each(|(o, xs)| {
                for i in 0..inner {
                    let at = |k: usize| xs[k * inner + i];
                    let max = (0..dim).map(at).fold(f64::NEG_INFINITY, f64::max);
                    let mut sum = 0f64;
                    for k in 0..dim {
                        let e = exp(at(k) - max);
                        o[k * inner + i] = e;
                        sum += e;
                    }
                    for k in 0..dim {
                        o[k * inner + i] /= sum;
                    }
                }
            });
    }
    Ok(HostTensor::from_values(
        x.kind,
        x.shape.clone(),
        to_domain(x, out),
    ))
}

fn to_domain(x: &HostTensor, v: Vec<f64>) -> Values {
    match HostTensor::domain_of(x.kind) {
        Values::F64(_) => Values::F64(v),
        _ => Values::F32(v.into_iter().map(|a| a as f32).collect()),
    }
}

/// Outputs of [`layer_normalization`].
#[derive(Clone, Debug, PartialEq)]
pub struct LayerNormOutputs {
    /// The normalised, scaled and shifted tensor.
    pub y: HostTensor,
    /// Per-row mean, shape of `x` with normalised axes set to 1 (in the `stash_type`,
    /// here the compute type of `x`).
    pub mean: HostTensor,
    /// Per-row `1 / sqrt(var + epsilon)`, same shape as `mean`.
    pub inv_std_dev: HostTensor,
}

/// ONNX `LayerNormalization`: normalises over axes `axis..rank`, then
/// `y = normalised · scale + bias` with `scale`/`bias` broadcast to the normalised
/// block.
pub fn layer_normalization(
    x: &HostTensor,
    scale: &HostTensor,
    bias: Option<&HostTensor>,
    axis: i64,
    epsilon: f32,
) -> KernelResult<LayerNormOutputs> {
    if !x.kind.is_float() {
        return Err(KernelError::ElementType {
            op: "layer_normalization",
            kind: x.kind.to_string(),
        });
    }
    let axis = normalize_axis("layer_normalization", axis, x.rank())?;
    let row: usize = x.shape[axis..].iter().product();
    let rows: usize = x.shape[..axis].iter().product();
    // Unidirectional broadcast of scale/bias to the normalised block.
    let block = &x.shape[axis..];
    let spread = |t: &HostTensor, what: &str| -> KernelResult<Vec<f64>> {
        if t.rank() > block.len()
            || t.shape
                .iter()
                .rev()
                .zip(block.iter().rev())
                .any(|(&a, &b)| a != 1 && a != b)
        {
            return Err(shape_error(
                "layer_normalization",
                format!(
                    "{what} of shape {:?} does not broadcast to {block:?}",
                    t.shape
                ),
            ));
        }
        let v = t.to_f64_vec();
        Ok(super::shape::broadcast_indices(&t.shape, block)
            .into_iter()
            .map(|i| v[i])
            .collect())
    };
    let gamma = spread(scale, "scale")?;
    let beta = bias.map(|b| spread(b, "bias")).transpose()?;
    if x.kind == ElementKind::F32 && row > 0 {
        return Ok(layer_normalization_f32(
            x,
            axis,
            row,
            &gamma,
            beta.as_deref(),
            epsilon,
        ));
    }
    let v = x.to_f64_vec();
    let eps = f64::from(epsilon);
    let mut y = vec![0f64; v.len()];
    let mut stats = vec![(0f64, 0f64); rows];
    if row > 0 {
        y.par_chunks_mut(row)
            .zip(v.par_chunks(row))
            .zip(stats.par_iter_mut())
            .for_each(|((o, xs), s)| {
                let mean = xs.iter().sum::<f64>() / row as f64;
                let var = xs.iter().map(|a| (a - mean) * (a - mean)).sum::<f64>() / row as f64;
                let inv = 1.0 / (var + eps).sqrt();
                for j in 0..row {
                    o[j] = (xs[j] - mean) * inv * gamma[j] + beta.as_ref().map_or(0.0, |b| b[j]);
                }
                *s = (mean, inv);
            });
    }
    let stat_shape: Vec<usize> = (0..x.rank())
        .map(|d| if d < axis { x.shape[d] } else { 1 })
        .collect();
    let stat = |f: fn(&(f64, f64)) -> f64| {
        HostTensor::from_values(
            x.kind,
            stat_shape.clone(),
            to_domain(x, stats.iter().map(f).collect()),
        )
    };
    Ok(LayerNormOutputs {
        y: HostTensor::from_values(x.kind, x.shape.clone(), to_domain(x, y)),
        mean: stat(|s| s.0),
        inv_std_dev: stat(|s| s.1),
    })
}

/// [`layer_normalization`] of an f32 tensor: the same f64 statistics and
/// arithmetic, read from and written into the tensors' bytes, `row`
/// elements at a time.
fn layer_normalization_f32(
    x: &HostTensor,
    axis: usize,
    row: usize,
    gamma: &[f64],
    beta: Option<&[f64]>,
    epsilon: f32,
) -> LayerNormOutputs {
    let v = f32_elements(x);
    let rows = v.len() / row;
    let eps = f64::from(epsilon);
    let mut stats = vec![(0f32, 0f32); rows];
    let chunk = rows_per_task(row);
    let y = f32_tensor_with(x.shape.clone(), |out| {
        out.par_chunks_mut(row * chunk)
            .zip(v.par_chunks(row * chunk))
            .zip(stats.par_chunks_mut(chunk))
            .for_each(|((o, xs), s)| {
                for ((o, xs), s) in o.chunks_mut(row).zip(xs.chunks(row)).zip(s) {
                    let (mean, var) = fast_math::mean_variance(xs);
                    let inv = 1.0 / (var + eps).sqrt();
                    fast_math::normalize_row(xs, o, mean, inv, gamma, beta);
                    *s = (mean as f32, inv as f32);
                }
            });
    });
    let stat_shape: Vec<usize> = (0..x.rank())
        .map(|d| if d < axis { x.shape[d] } else { 1 })
        .collect();
    let stat = |f: fn(&(f32, f32)) -> f32| {
        let values: Vec<f32> = stats.iter().map(f).collect();
        super::fast_f32::f32_tensor(stat_shape.clone(), &values)
    };
    LayerNormOutputs {
        mean: stat(|s| s.0),
        inv_std_dev: stat(|s| s.1),
        y,
    }
}
