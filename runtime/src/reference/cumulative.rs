//! ONNX `CumSum` and `CumProd`: the scan is the dialect's
//! [`cumulative_scan`], shared with the `nn.cumsum`/`nn.cumprod` folders.
//! Floats accumulate in f64 and round once per element; integers wrap to
//! the element width.

use ipuc_dialects::nn::{cumulative_scan, ScanParams};

use super::error::{shape_error, KernelResult};
use super::host_tensor::{HostTensor, Values};

/// The running sum (`product = false`) or product of `x` along `params.axis`.
pub fn cumulative(x: &HostTensor, product: bool, params: ScanParams) -> KernelResult<HostTensor> {
    if params.axis >= x.rank() {
        return Err(shape_error(
            "cumulative",
            format!("axis {} is out of range for rank {}", params.axis, x.rank()),
        ));
    }
    let shape = &x.shape;
    let floats = |v: Vec<f64>| -> Vec<f64> {
        if product {
            cumulative_scan(&v, shape, params, 1.0, |a, b| a * b)
        } else {
            cumulative_scan(&v, shape, params, 0.0, |a, b| a + b)
        }
    };
    let values = match x.values() {
        Values::F32(v) => Values::F32(
            floats(v.into_iter().map(f64::from).collect())
                .into_iter()
                .map(|a| a as f32)
                .collect(),
        ),
        Values::F64(v) => Values::F64(floats(v)),
        Values::Int(v) => Values::Int(if product {
            cumulative_scan(&v, shape, params, 1, i128::wrapping_mul)
        } else {
            cumulative_scan(&v, shape, params, 0, i128::wrapping_add)
        }),
    };
    Ok(HostTensor::from_values(x.kind, x.shape.clone(), values))
}
