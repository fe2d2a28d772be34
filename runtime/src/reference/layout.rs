//! Data-movement kernels: shapes, transposes, concatenation, slicing, gathering,
//! padding, and the small constant-producing ops. All work on element bytes, so
//! they are exact for every element kind.

use ipuc_ir::numeric::{storage, ElementKind};

use super::error::{attribute_error, shape_error, KernelError, KernelResult};
use super::host_tensor::HostTensor;
use super::shape::{broadcast_indices, broadcast_shapes, normalize_axes, normalize_axis, strides};

/// Builds a tensor of `shape` whose element `i` is element `src[i]` of `t`.
fn take(t: &HostTensor, shape: Vec<usize>, src: impl Iterator<Item = usize>) -> HostTensor {
    let size = t.kind.byte_size();
    let mut data = Vec::with_capacity(shape.iter().product::<usize>() * size);
    for i in src {
        data.extend_from_slice(&t.data[i * size..(i + 1) * size]);
    }
    HostTensor::new(t.kind, shape, data.into())
}

/// The strided view of `t` (`shape`, element strides `view` from `offset`)
/// as a new tensor, copied in rows and blocks (see [`strided`](super::strided)).
fn view_copy(t: &HostTensor, shape: Vec<usize>, view: &[isize], offset: isize) -> HostTensor {
    let size = t.kind.byte_size();
    let src = &t.data[..];
    let dims = shape.clone();
    HostTensor::filled_with(t.kind, shape, |dst| {
        super::strided::copy_view(src, size, &dims, view, offset, dst)
    })
}

/// ONNX `Reshape`: `0` copies the input dimension (unless `allowzero`), one `-1`
/// is inferred. Shares the data.
pub fn reshape(x: &HostTensor, shape: &[i64], allowzero: bool) -> KernelResult<HostTensor> {
    let mut out = Vec::with_capacity(shape.len());
    let mut infer = None;
    for (i, &d) in shape.iter().enumerate() {
        out.push(match d {
            -1 if infer.is_none() => {
                infer = Some(i);
                1
            }
            -1 => {
                return Err(attribute_error(
                    "reshape",
                    format!("more than one -1 in {shape:?}"),
                ))
            }
            0 if !allowzero => *x.shape.get(i).ok_or_else(|| {
                shape_error(
                    "reshape",
                    format!("0 at index {i} but the input has rank {}", x.rank()),
                )
            })?,
            d if d >= 0 => d as usize,
            d => {
                return Err(attribute_error(
                    "reshape",
                    format!("invalid dimension {d} in {shape:?}"),
                ))
            }
        });
    }
    if allowzero && infer.is_some() && out.contains(&0) {
        return Err(attribute_error(
            "reshape",
            "allowzero with both 0 and -1 is invalid",
        ));
    }
    let known: usize = out.iter().product();
    if let Some(i) = infer {
        if x.element_count().checked_rem(known) != Some(0) {
            return Err(shape_error(
                "reshape",
                format!("cannot infer -1 reshaping {:?} to {shape:?}", x.shape),
            ));
        }
        out[i] = x.element_count() / known;
    }
    if out.iter().product::<usize>() != x.element_count() {
        return Err(shape_error(
            "reshape",
            format!(
                "cannot reshape {:?} ({} elements) to {out:?}",
                x.shape,
                x.element_count()
            ),
        ));
    }
    Ok(x.with_shape(out))
}

/// ONNX `Transpose`; `perm = None` reverses the dimensions.
pub fn transpose(x: &HostTensor, perm: Option<&[i64]>) -> KernelResult<HostTensor> {
    let rank = x.rank();
    let perm: Vec<usize> = match perm {
        None => (0..rank).rev().collect(),
        Some(p) => {
            let p = normalize_axes("transpose", p, rank)?;
            if p.len() != rank {
                return Err(attribute_error(
                    "transpose",
                    format!("perm {p:?} is not a permutation of rank {rank}"),
                ));
            }
            p
        }
    };
    let in_strides = strides(&x.shape);
    let shape: Vec<usize> = perm.iter().map(|&p| x.shape[p]).collect();
    let view: Vec<isize> = perm.iter().map(|&p| in_strides[p] as isize).collect();
    Ok(view_copy(x, shape, &view, 0))
}

/// ONNX `Concat` along `axis`.
pub fn concat(inputs: &[&HostTensor], axis: i64) -> KernelResult<HostTensor> {
    let first = inputs
        .first()
        .ok_or_else(|| shape_error("concat", "needs at least one input"))?;
    let axis = normalize_axis("concat", axis, first.rank())?;
    let mut shape = first.shape.clone();
    shape[axis] = 0;
    for t in inputs {
        let same = t.rank() == first.rank()
            && (0..t.rank()).all(|d| d == axis || t.shape[d] == first.shape[d]);
        if !same || t.kind != first.kind {
            return Err(shape_error(
                "concat",
                format!(
                    "input {:?} of {} does not match {:?} of {}",
                    t.shape, t.kind, first.shape, first.kind
                ),
            ));
        }
        shape[axis] += t.shape[axis];
    }
    let outer: usize = shape[..axis].iter().product();
    let inner: usize = shape[axis + 1..].iter().product::<usize>() * first.kind.byte_size();
    let mut data = Vec::with_capacity(shape.iter().product::<usize>() * first.kind.byte_size());
    for o in 0..outer {
        for t in inputs {
            let chunk = t.shape[axis] * inner;
            data.extend_from_slice(&t.data[o * chunk..(o + 1) * chunk]);
        }
    }
    Ok(HostTensor::new(first.kind, shape, data.into()))
}

/// ONNX `Slice` (opset 10+): `starts`/`ends` clamp, negative values count from the
/// end, `axes` defaults to `0..len`, `steps` to 1 (negative steps walk backwards).
pub fn slice(
    x: &HostTensor,
    starts: &[i64],
    ends: &[i64],
    axes: Option<&[i64]>,
    steps: Option<&[i64]>,
) -> KernelResult<HostTensor> {
    if starts.len() != ends.len() {
        return Err(attribute_error("slice", "starts and ends differ in length"));
    }
    let default_axes: Vec<i64> = (0..starts.len() as i64).collect();
    let axes = normalize_axes("slice", axes.unwrap_or(&default_axes), x.rank())?;
    let steps: Vec<i64> = steps
        .map(<[i64]>::to_vec)
        .unwrap_or_else(|| vec![1; starts.len()]);
    if axes.len() != starts.len() || steps.len() != starts.len() {
        return Err(attribute_error(
            "slice",
            "starts, ends, axes and steps differ in length",
        ));
    }
    let in_strides = strides(&x.shape);
    let mut shape = x.shape.clone();
    let mut view: Vec<isize> = in_strides.iter().map(|&s| s as isize).collect();
    let mut offset = 0isize;
    for (i, &axis) in axes.iter().enumerate() {
        let dim = x.shape[axis] as i64;
        let step = steps[i];
        if step == 0 {
            return Err(attribute_error("slice", "step 0"));
        }
        let resolve = |v: i64| if v < 0 { v.saturating_add(dim) } else { v };
        let (start, end) = if step > 0 {
            (
                resolve(starts[i]).clamp(0, dim),
                resolve(ends[i]).clamp(0, dim),
            )
        } else {
            (
                resolve(starts[i]).clamp(-1, dim - 1),
                resolve(ends[i]).clamp(-1, dim - 1),
            )
        };
        let len = if step > 0 {
            (end - start + step - 1).max(0) / step
        } else {
            (start - end - step - 1).max(0) / -step
        };
        shape[axis] = len as usize;
        if len > 0 {
            offset += start as isize * in_strides[axis] as isize;
        }
        view[axis] = in_strides[axis] as isize * step as isize;
    }
    Ok(view_copy(x, shape, &view, offset))
}

/// ONNX `Split` along `axis` into pieces of `sizes`, or into `num_outputs` pieces
/// (the last one smaller if the dimension does not divide evenly).
pub fn split(
    x: &HostTensor,
    axis: i64,
    sizes: Option<&[i64]>,
    num_outputs: Option<usize>,
) -> KernelResult<Vec<HostTensor>> {
    let axis = normalize_axis("split", axis, x.rank())?;
    let dim = x.shape[axis];
    let sizes: Vec<usize> = match (sizes, num_outputs) {
        (Some(s), _) => {
            if s.iter().any(|&v| v < 0) || s.iter().sum::<i64>() != dim as i64 {
                return Err(attribute_error(
                    "split",
                    format!("split sizes {s:?} do not sum to dimension {dim}"),
                ));
            }
            s.iter().map(|&v| v as usize).collect()
        }
        (None, Some(0)) | (None, None) => {
            return Err(attribute_error(
                "split",
                "needs split sizes or a positive number of outputs",
            ))
        }
        (None, Some(k)) => {
            let chunk = dim.div_ceil(k);
            (0..k)
                .map(|i| chunk.min(dim.saturating_sub(i * chunk)))
                .collect()
        }
    };
    let mut start = 0i64;
    sizes
        .iter()
        .map(|&s| {
            let piece = slice(x, &[start], &[start + s as i64], Some(&[axis as i64]), None);
            start += s as i64;
            piece
        })
        .collect()
}

/// ONNX `Gather` along `axis` with (possibly negative) integer `indices`.
pub fn gather(data: &HostTensor, indices: &HostTensor, axis: i64) -> KernelResult<HostTensor> {
    if !indices.kind.is_integer() {
        return Err(KernelError::ElementType {
            op: "gather",
            kind: indices.kind.to_string(),
        });
    }
    let axis = normalize_axis("gather", axis, data.rank())?;
    let dim = data.shape[axis] as i64;
    let idx: Vec<usize> = indices
        .to_i64_vec()
        .into_iter()
        .map(|i| {
            let j = if i < 0 { i + dim } else { i };
            if (0..dim).contains(&j) {
                Ok(j as usize)
            } else {
                Err(shape_error(
                    "gather",
                    format!("index {i} is out of range for dimension {dim}"),
                ))
            }
        })
        .collect::<KernelResult<_>>()?;
    let outer: usize = data.shape[..axis].iter().product();
    let inner: usize = data.shape[axis + 1..].iter().product();
    let mut shape = data.shape[..axis].to_vec();
    shape.extend_from_slice(&indices.shape);
    shape.extend_from_slice(&data.shape[axis + 1..]);
    let src = (0..outer).flat_map(|o| {
        idx.iter()
            .flat_map(move |&j| (0..inner).map(move |i| (o * dim as usize + j) * inner + i))
    });
    Ok(take(data, shape, src))
}

/// ONNX `Squeeze`: removes the given size-1 axes, or all size-1 axes.
pub fn squeeze(x: &HostTensor, axes: Option<&[i64]>) -> KernelResult<HostTensor> {
    let axes = match axes {
        Some(a) => normalize_axes("squeeze", a, x.rank())?,
        None => (0..x.rank()).filter(|&d| x.shape[d] == 1).collect(),
    };
    if let Some(&bad) = axes.iter().find(|&&a| x.shape[a] != 1) {
        return Err(shape_error(
            "squeeze",
            format!("axis {bad} has size {} (must be 1)", x.shape[bad]),
        ));
    }
    Ok(x.with_shape(
        (0..x.rank())
            .filter(|d| !axes.contains(d))
            .map(|d| x.shape[d])
            .collect(),
    ))
}

/// ONNX `Unsqueeze`: inserts size-1 axes at `axes` (of the output rank).
pub fn unsqueeze(x: &HostTensor, axes: &[i64]) -> KernelResult<HostTensor> {
    let rank = x.rank() + axes.len();
    let axes = normalize_axes("unsqueeze", axes, rank)?;
    let mut dims = x.shape.iter();
    let shape = (0..rank)
        .map(|d| {
            if axes.contains(&d) {
                1
            } else {
                *dims.next().expect("rank adds up")
            }
        })
        .collect();
    Ok(x.with_shape(shape))
}

/// ONNX `Flatten`: to 2-D `[prod(dims[..axis]), prod(dims[axis..])]`.
pub fn flatten(x: &HostTensor, axis: i64) -> KernelResult<HostTensor> {
    let r = x.rank() as i64;
    if axis < -r || axis > r {
        return Err(attribute_error(
            "flatten",
            format!("axis {axis} is out of range for rank {r}"),
        ));
    }
    let axis = if axis < 0 { axis + r } else { axis } as usize;
    Ok(x.with_shape(vec![
        x.shape[..axis].iter().product(),
        x.shape[axis..].iter().product(),
    ]))
}

/// ONNX `Expand`: bidirectional broadcast of `x` with `shape`.
pub fn expand(x: &HostTensor, shape: &[i64]) -> KernelResult<HostTensor> {
    let target: Vec<usize> = shape
        .iter()
        .map(|&d| {
            usize::try_from(d)
                .map_err(|_| attribute_error("expand", format!("negative dimension in {shape:?}")))
        })
        .collect::<KernelResult<_>>()?;
    let out = broadcast_shapes("expand", &[&x.shape, &target])?;
    Ok(take(
        x,
        out.clone(),
        broadcast_indices(&x.shape, &out).into_iter(),
    ))
}

/// ONNX `Tile`: repeats `x` `repeats[d]` times along each axis.
pub fn tile(x: &HostTensor, repeats: &[i64]) -> KernelResult<HostTensor> {
    if repeats.len() != x.rank() || repeats.iter().any(|&r| r < 0) {
        return Err(attribute_error(
            "tile",
            format!(
                "repeats {repeats:?} must be {} non-negative values",
                x.rank()
            ),
        ));
    }
    let shape: Vec<usize> = x
        .shape
        .iter()
        .zip(repeats)
        .map(|(&d, &r)| d * r as usize)
        .collect();
    let in_strides = strides(&x.shape);
    let out_strides = strides(&shape);
    let n: usize = shape.iter().product();
    let src = (0..n).map(|i| {
        (0..shape.len())
            .map(|d| (i / out_strides[d] % shape[d]) % x.shape[d] * in_strides[d])
            .sum()
    });
    Ok(take(x, shape.clone(), src))
}

/// ONNX `Pad` mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PadMode {
    /// Fill with a constant.
    #[default]
    Constant,
    /// Mirror without repeating the edge.
    Reflect,
    /// Repeat the edge value.
    Edge,
    /// Wrap around.
    Wrap,
}

/// ONNX `Pad`: `pads` = all begins then all ends (for `axes`, default all axes;
/// negative pads crop). `value` is the constant for `Constant` mode (scalar of
/// the same kind, default zero).
pub fn pad(
    x: &HostTensor,
    pads: &[i64],
    mode: PadMode,
    value: Option<&HostTensor>,
    axes: Option<&[i64]>,
) -> KernelResult<HostTensor> {
    let default_axes: Vec<i64> = (0..x.rank() as i64).collect();
    let axes = normalize_axes("pad", axes.unwrap_or(&default_axes), x.rank())?;
    if pads.len() != 2 * axes.len() {
        return Err(attribute_error(
            "pad",
            format!("{} pads for {} axes", pads.len(), axes.len()),
        ));
    }
    let mut begin = vec![0i64; x.rank()];
    let mut end = vec![0i64; x.rank()];
    for (i, &a) in axes.iter().enumerate() {
        begin[a] = pads[i];
        end[a] = pads[i + axes.len()];
    }
    let mut shape = Vec::with_capacity(x.rank());
    for d in 0..x.rank() {
        let s = x.shape[d] as i64 + begin[d] + end[d];
        if s < 0 {
            return Err(shape_error("pad", format!("pads crop axis {d} below zero")));
        }
        if mode != PadMode::Constant && x.shape[d] == 0 && s > 0 {
            return Err(shape_error(
                "pad",
                format!("cannot {mode:?}-pad the empty axis {d}"),
            ));
        }
        shape.push(s as usize);
    }
    let size = x.kind.byte_size();
    let fill: Vec<u8> = match value {
        Some(v) if v.kind == x.kind && v.element_count() == 1 => v.data.to_vec(),
        Some(v) => {
            return Err(KernelError::ElementType {
                op: "pad",
                kind: format!("constant of {} for {}", v.kind, x.kind),
            })
        }
        None => vec![0; size],
    };
    let in_strides = strides(&x.shape);
    let out_strides = strides(&shape);
    let n: usize = shape.iter().product();
    let mut data = Vec::with_capacity(n * size);
    'elements: for i in 0..n {
        let mut src = 0usize;
        for d in 0..shape.len() {
            let len = x.shape[d] as i64;
            let mut j = (i / out_strides[d] % shape[d]) as i64 - begin[d];
            if j < 0 || j >= len {
                match mode {
                    PadMode::Constant => {
                        data.extend_from_slice(&fill);
                        continue 'elements;
                    }
                    PadMode::Edge => j = j.clamp(0, len - 1),
                    PadMode::Wrap => j = j.rem_euclid(len),
                    PadMode::Reflect => {
                        if len == 1 {
                            j = 0;
                        } else {
                            let period = 2 * (len - 1);
                            j = j.rem_euclid(period);
                            if j >= len {
                                j = period - j;
                            }
                        }
                    }
                }
            }
            src += j as usize * in_strides[d];
        }
        data.extend_from_slice(&x.data[src * size..(src + 1) * size]);
    }
    Ok(HostTensor::new(x.kind, shape, data.into()))
}

/// ONNX `ConstantOfShape`: a tensor of `shape` filled with `value` (a one-element
/// tensor; default f32 zero).
pub fn constant_of_shape(shape: &[i64], value: Option<&HostTensor>) -> KernelResult<HostTensor> {
    let dims: Vec<usize> = shape
        .iter()
        .map(|&d| {
            usize::try_from(d).map_err(|_| {
                attribute_error(
                    "constant_of_shape",
                    format!("negative dimension in {shape:?}"),
                )
            })
        })
        .collect::<KernelResult<_>>()?;
    let (kind, bytes) = match value {
        Some(v) if v.element_count() == 1 => (v.kind, v.data.to_vec()),
        Some(v) => {
            return Err(shape_error(
                "constant_of_shape",
                format!("value must have one element, has {}", v.element_count()),
            ))
        }
        None => (ElementKind::F32, vec![0; 4]),
    };
    let n: usize = dims.iter().product();
    Ok(HostTensor::new(kind, dims, bytes.repeat(n).into()))
}

/// ONNX `Range`: `start, start+delta, ...` while before `limit`; scalars of one kind.
pub fn range(
    start: &HostTensor,
    limit: &HostTensor,
    delta: &HostTensor,
) -> KernelResult<HostTensor> {
    let kind = start.kind;
    if limit.kind != kind
        || delta.kind != kind
        || [start, limit, delta].iter().any(|t| t.element_count() != 1)
    {
        return Err(shape_error(
            "range",
            "start, limit and delta must be scalars of one element type",
        ));
    }
    if kind.is_float() {
        let (s, l, d) = (
            start.to_f64_vec()[0],
            limit.to_f64_vec()[0],
            delta.to_f64_vec()[0],
        );
        if d == 0.0 {
            return Err(attribute_error("range", "delta is zero"));
        }
        let n = ((l - s) / d).ceil().max(0.0) as usize;
        let mut data = vec![0u8; n * kind.byte_size()];
        // ONNX computes start + i·delta in the element type.
        for i in 0..n {
            storage::store_f64(
                kind,
                &mut data,
                i,
                if kind == ElementKind::F64 {
                    s + i as f64 * d
                } else {
                    f64::from(s as f32 + i as f32 * d as f32)
                },
                true,
            );
        }
        Ok(HostTensor::new(kind, vec![n], data.into()))
    } else {
        let get = |t: &HostTensor| storage::load_i128(kind, &t.data, 0);
        let (s, l, d) = (get(start), get(limit), get(delta));
        if d == 0 {
            return Err(attribute_error("range", "delta is zero"));
        }
        // ceil((limit - start) / delta), at least 0.
        let (q, r) = ((l - s) / d, (l - s) % d);
        let n = (q + i128::from(r != 0 && (r > 0) == (d > 0))).max(0) as usize;
        let mut data = vec![0u8; n * kind.byte_size()];
        for i in 0..n {
            storage::store_i128(kind, &mut data, i, s + i as i128 * d);
        }
        Ok(HostTensor::new(kind, vec![n], data.into()))
    }
}

/// ONNX `Shape` (opset 15+ `start`/`end`, clamped): the dims as an i64 tensor.
pub fn shape_of(x: &HostTensor, start: i64, end: Option<i64>) -> HostTensor {
    let r = x.rank() as i64;
    let clamp = |v: i64| (if v < 0 { v + r } else { v }).clamp(0, r) as usize;
    let (s, e) = (clamp(start), clamp(end.unwrap_or(r)));
    let dims: Vec<i64> = if s < e {
        x.shape[s..e].iter().map(|&d| d as i64).collect()
    } else {
        Vec::new()
    };
    HostTensor::from_i64(vec![dims.len()], &dims)
}
