//! Kernels that select by index: ONNX `GatherElements` (exact for every
//! element kind: it moves element bytes) and `ArgMax`/`ArgMin` (`i64`
//! positions; NaN compares as neither larger nor smaller, as numpy's
//! `argmax` on the onnx reference's data does not meet NaN).

use super::error::{shape_error, KernelError, KernelResult};
use super::host_tensor::HostTensor;
use super::shape::{normalize_axis, strides};

/// ONNX `GatherElements`: `out[p] = data[p with p[axis] = indices[p]]`
/// (negative indices count from the end).
pub fn gather_elements(
    data: &HostTensor,
    indices: &HostTensor,
    axis: i64,
) -> KernelResult<HostTensor> {
    const OP: &str = "gather_elements";
    if !indices.kind.is_integer() {
        return Err(KernelError::ElementType {
            op: OP,
            kind: indices.kind.to_string(),
        });
    }
    if data.rank() != indices.rank() || data.rank() == 0 {
        return Err(shape_error(
            OP,
            format!(
                "data and indices must have the same rank >= 1, but have ranks {} and {}",
                data.rank(),
                indices.rank()
            ),
        ));
    }
    let axis = normalize_axis(OP, axis, data.rank())?;
    let dim = data.shape[axis] as i64;
    let in_strides = strides(&data.shape);
    let out_strides = strides(&indices.shape);
    let size = data.kind.byte_size();
    let mut bytes = Vec::with_capacity(indices.element_count() * size);
    for (p, i) in indices.to_i64_vec().into_iter().enumerate() {
        let j = if i < 0 { i + dim } else { i };
        if !(0..dim).contains(&j) {
            return Err(shape_error(
                OP,
                format!("index {i} is out of range for dimension {dim}"),
            ));
        }
        let mut src = 0;
        for d in 0..data.rank() {
            let coord = if d == axis {
                j as usize
            } else {
                let c = p / out_strides[d] % indices.shape[d];
                if c >= data.shape[d] {
                    return Err(shape_error(
                        OP,
                        format!(
                            "indices dimension {d} ({}) exceeds data's ({})",
                            indices.shape[d], data.shape[d]
                        ),
                    ));
                }
                c
            };
            src += coord * in_strides[d];
        }
        bytes.extend_from_slice(&data.data[src * size..(src + 1) * size]);
    }
    Ok(HostTensor::new(
        data.kind,
        indices.shape.clone(),
        bytes.into(),
    ))
}

/// ONNX `ArgMax` (`largest`) or `ArgMin` along `axis`: the first position
/// of the extreme value, or the last with `select_last_index`.
pub fn arg_reduce(
    x: &HostTensor,
    largest: bool,
    axis: i64,
    keepdims: bool,
    select_last_index: bool,
) -> KernelResult<HostTensor> {
    let op = if largest { "argmax" } else { "argmin" };
    if x.rank() == 0 {
        return Err(shape_error(op, "the operand must have rank >= 1"));
    }
    let axis = normalize_axis(op, axis, x.rank())?;
    let n = x.shape[axis];
    if n == 0 {
        return Err(shape_error(op, format!("axis {axis} is empty")));
    }
    let outer: usize = x.shape[..axis].iter().product();
    let inner: usize = x.shape[axis + 1..].iter().product();
    let values = x.to_f64_vec();
    let better = |candidate: f64, best: f64| {
        if largest {
            candidate > best || (select_last_index && candidate == best)
        } else {
            candidate < best || (select_last_index && candidate == best)
        }
    };
    let mut out = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        for i in 0..inner {
            let at = |k: usize| values[(o * n + k) * inner + i];
            let mut best = 0;
            for k in 1..n {
                if better(at(k), at(best)) {
                    best = k;
                }
            }
            out.push(best as i64);
        }
    }
    let shape: Vec<usize> = (0..x.rank())
        .filter_map(|d| match (d == axis, keepdims) {
            (true, true) => Some(1),
            (true, false) => None,
            (false, _) => Some(x.shape[d]),
        })
        .collect();
    Ok(HostTensor::from_i64(shape, &out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gather_elements_picks_along_the_axis() {
        // The ONNX example: axis 1.
        let data = HostTensor::from_f32(vec![2, 2], &[1.0, 2.0, 3.0, 4.0]);
        let idx = HostTensor::from_i64(vec![2, 2], &[0, 0, 1, 0]);
        let out = gather_elements(&data, &idx, 1).unwrap();
        assert_eq!(out.to_f64_vec(), vec![1.0, 1.0, 4.0, 3.0]);
        let neg = HostTensor::from_i64(vec![1, 2], &[-1, 0]);
        let out = gather_elements(&data, &neg, 0).unwrap();
        assert_eq!(out.shape, vec![1, 2]);
        assert_eq!(out.to_f64_vec(), vec![3.0, 2.0]);
        let bad = HostTensor::from_i64(vec![1, 2], &[2, 0]);
        assert!(gather_elements(&data, &bad, 0).is_err());
    }

    #[test]
    fn arg_reduce_breaks_ties_as_asked() {
        let x = HostTensor::from_f32(vec![2, 3], &[1.0, 5.0, 5.0, 0.0, 0.0, -1.0]);
        let first = arg_reduce(&x, true, 1, true, false).unwrap();
        assert_eq!(first.shape, vec![2, 1]);
        assert_eq!(first.to_i64_vec(), vec![1, 0]);
        let last = arg_reduce(&x, true, 1, false, true).unwrap();
        assert_eq!(last.shape, vec![2]);
        assert_eq!(last.to_i64_vec(), vec![2, 1]);
        let min = arg_reduce(&x, false, 0, false, false).unwrap();
        assert_eq!(min.to_i64_vec(), vec![1, 1, 1]);
    }
}
