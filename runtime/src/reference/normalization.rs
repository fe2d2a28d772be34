//! Softmax and LayerNormalization.
//!
//! Both normalise rows (a contiguous inner block), computed in f64 per row and
//! rounded once to the compute type, in parallel over rows.

use rayon::prelude::*;

use super::error::{shape_error, KernelError, KernelResult};
use super::host_tensor::{HostTensor, Values};
use super::shape::{normalize_axis, strides};

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
