//! Shape helpers shared by the kernels: broadcasting, strides, axis normalisation.

use super::error::{attribute_error, shape_error, KernelResult};

/// Row-major strides (in elements) of a shape.
pub fn strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * shape[i + 1];
    }
    strides
}

/// The numpy broadcast of several shapes.
pub fn broadcast_shapes(op: &'static str, shapes: &[&[usize]]) -> KernelResult<Vec<usize>> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![1; rank];
    for shape in shapes {
        let offset = rank - shape.len();
        for (i, &d) in shape.iter().enumerate() {
            let o = &mut out[offset + i];
            if *o == 1 {
                *o = d;
            } else if d != 1 && d != *o {
                return Err(shape_error(
                    op,
                    format!("shapes {shapes:?} cannot be broadcast together"),
                ));
            }
        }
    }
    Ok(out)
}

/// For each element of `out_shape` (row-major), the index of the element of a
/// tensor of `shape` that broadcasts to it.
pub fn broadcast_indices(shape: &[usize], out_shape: &[usize]) -> Vec<usize> {
    let n: usize = out_shape.iter().product();
    if shape == out_shape {
        return (0..n).collect();
    }
    let offset = out_shape.len() - shape.len();
    let in_strides = strides(shape);
    // Stride 0 along broadcast (size-1 or missing) dimensions.
    let bstrides: Vec<usize> = (0..out_shape.len())
        .map(|d| {
            if d < offset || shape[d - offset] == 1 {
                0
            } else {
                in_strides[d - offset]
            }
        })
        .collect();
    let mut indices = Vec::with_capacity(n);
    let mut counter = vec![0usize; out_shape.len()];
    let mut index = 0usize;
    for _ in 0..n {
        indices.push(index);
        for d in (0..out_shape.len()).rev() {
            counter[d] += 1;
            index += bstrides[d];
            if counter[d] < out_shape[d] {
                break;
            }
            index -= bstrides[d] * counter[d];
            counter[d] = 0;
        }
    }
    indices
}

/// Normalises a possibly negative axis against `rank` (ONNX: `-rank..rank`).
pub fn normalize_axis(op: &'static str, axis: i64, rank: usize) -> KernelResult<usize> {
    let r = rank as i64;
    if axis < -r || axis >= r {
        return Err(attribute_error(
            op,
            format!("axis {axis} is out of range for rank {rank}"),
        ));
    }
    Ok(if axis < 0 { axis + r } else { axis } as usize)
}

/// Normalises a list of axes, rejecting duplicates.
pub fn normalize_axes(op: &'static str, axes: &[i64], rank: usize) -> KernelResult<Vec<usize>> {
    let mut out = Vec::with_capacity(axes.len());
    for &a in axes {
        let a = normalize_axis(op, a, rank)?;
        if out.contains(&a) {
            return Err(attribute_error(
                op,
                format!("axis {a} appears twice in {axes:?}"),
            ));
        }
        out.push(a);
    }
    Ok(out)
}
