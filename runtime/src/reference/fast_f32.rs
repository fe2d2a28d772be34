//! The f32 fast paths of the element-wise kernels: the common case of a
//! whole model (f32 tensors, arithmetic with numpy broadcasting, unary math)
//! computed straight from and into the tensors' bytes, without widening
//! into [`Values`](super::Values) or building per-element index tables.
//!
//! Broadcasting walks the result in runs along its innermost dimension
//! (after merging dimensions that are contiguous in every operand): each
//! operand contributes a base offset per run and a stride of 0 or 1 within
//! it, so the inner loop is a plain slice loop the compiler vectorises. Runs
//! are spread over rayon when the result is large. The arithmetic is the
//! generic kernels' own (the same `f32` operations in the same order), so
//! both paths give bit-identical results.

use std::sync::Arc;

use ipuc_ir::numeric::ElementKind;
use rayon::prelude::*;

use super::host_tensor::{HostTensor, PARALLEL_THRESHOLD};

/// The elements of an f32 tensor: borrowed when its bytes are 4-byte
/// aligned (the usual case), else copied once.
pub(super) fn f32_elements(t: &HostTensor) -> std::borrow::Cow<'_, [f32]> {
    debug_assert_eq!(t.kind, ElementKind::F32);
    match bytemuck::try_cast_slice::<u8, f32>(&t.data) {
        Ok(v) => std::borrow::Cow::Borrowed(v),
        Err(_) => std::borrow::Cow::Owned(
            t.data
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
                .collect(),
        ),
    }
}

/// An f32 tensor holding `values` (one copy into the shared buffer).
pub(super) fn f32_tensor(shape: Vec<usize>, values: &[f32]) -> HostTensor {
    let bytes: Arc<[u8]> = Arc::from(bytemuck::cast_slice::<f32, u8>(values));
    HostTensor::new(ElementKind::F32, shape, bytes)
}

/// An f32 tensor of `shape` whose elements `fill` computes in place (see
/// [`HostTensor::filled_with`]).
pub(super) fn f32_tensor_with(shape: Vec<usize>, fill: impl FnOnce(&mut [f32])) -> HostTensor {
    HostTensor::filled_with(ElementKind::F32, shape, |bytes| {
        // Shared buffers are allocated with the 8-byte alignment of their
        // reference counts, so the cast cannot fail.
        fill(bytemuck::cast_slice_mut(bytes))
    })
}

/// Elements per parallel task of the element-wise maps: large enough that
/// rayon's overhead vanishes, small enough to balance two to a few dozen
/// threads on a model's tensors.
const MAP_CHUNK: usize = 1 << 14;

/// `out[i] = f(x[i])` over a chunk; `f` works on whole slices so it can
/// vectorise.
pub(super) fn map_into(x: &[f32], out: &mut [f32], f: impl Fn(&[f32], &mut [f32]) + Sync) {
    if x.len() >= PARALLEL_THRESHOLD {
        out.par_chunks_mut(MAP_CHUNK)
            .zip(x.par_chunks(MAP_CHUNK))
            .for_each(|(o, i)| f(i, o));
    } else {
        f(x, out)
    }
}

/// How one operand is read along the result: per run (innermost result
/// dimension after merging), a base offset and a stride of 0 or 1.
struct OperandWalk {
    /// Strides of the merged outer dimensions (0 where broadcast).
    outer_strides: Vec<usize>,
    /// Stride along the innermost merged dimension (0 or 1).
    inner_stride: usize,
}

/// The merged result shape and each operand's walk over it.
fn plan(out_shape: &[usize], operands: &[&[usize]]) -> (Vec<usize>, Vec<OperandWalk>) {
    let rank = out_shape.len();
    // Per operand, the stride of each result dimension (0: broadcast).
    let strides: Vec<Vec<usize>> = operands
        .iter()
        .map(|shape| {
            let offset = rank - shape.len();
            let own = super::shape::strides(shape);
            (0..rank)
                .map(|d| {
                    if d < offset || shape[d - offset] == 1 {
                        0
                    } else {
                        own[d - offset]
                    }
                })
                .collect()
        })
        .collect();
    // Merge dimension d into d+1 when every operand is contiguous across
    // them (stride[d] == stride[d+1] * size[d+1], or both broadcast).
    let mut dims: Vec<usize> = Vec::new();
    let mut merged: Vec<Vec<usize>> = vec![Vec::new(); operands.len()];
    for d in 0..rank {
        if out_shape[d] == 1 {
            continue;
        }
        let can_merge = !dims.is_empty()
            && strides.iter().enumerate().all(|(k, s)| {
                let prev = *merged[k].last().expect("same length as dims");
                prev == s[d] * out_shape[d]
            });
        if can_merge {
            *dims.last_mut().expect("not empty") *= out_shape[d];
            for (k, s) in strides.iter().enumerate() {
                *merged[k].last_mut().expect("not empty") = s[d];
            }
        } else {
            dims.push(out_shape[d]);
            for (k, s) in strides.iter().enumerate() {
                merged[k].push(s[d]);
            }
        }
    }
    if dims.is_empty() {
        dims.push(1);
        merged.iter_mut().for_each(|m| m.push(0));
    }
    let walks = merged
        .into_iter()
        .map(|s| {
            let inner = *s.last().expect("at least one dimension");
            OperandWalk {
                outer_strides: s[..s.len() - 1].to_vec(),
                inner_stride: inner,
            }
        })
        .collect();
    (dims, walks)
}

/// The base offset of run `run` (a flat index over the outer dimensions).
fn run_base(run: usize, outer_dims: &[usize], walk: &OperandWalk) -> usize {
    let mut rest = run;
    let mut base = 0;
    for (d, &n) in outer_dims.iter().enumerate().rev() {
        base += (rest % n) * walk.outer_strides[d];
        rest /= n;
    }
    base
}

/// The tensor `out[i] = f(a[..], b[..])` over the broadcast of `a` and `b`
/// into `out_shape`, or `None` when an inner stride is not 0 or 1 (never
/// for row-major operands; kept as a guard).
pub(super) fn broadcast_binary(
    a: &[f32],
    a_shape: &[usize],
    b: &[f32],
    b_shape: &[usize],
    out_shape: &[usize],
    f: impl Fn(f32, f32) -> f32 + Sync,
) -> Option<HostTensor> {
    let n: usize = out_shape.iter().product();
    let (dims, walks) = plan(out_shape, &[a_shape, b_shape]);
    let (wa, wb) = (&walks[0], &walks[1]);
    if wa.inner_stride > 1 || wb.inner_stride > 1 {
        return None;
    }
    let inner = *dims.last().expect("at least one dimension");
    let outer = &dims[..dims.len() - 1];
    if n == 0 {
        return Some(f32_tensor(out_shape.to_vec(), &[]));
    }
    let fill = |run: usize, row: &mut [f32]| {
        let (ba, bb) = (run_base(run, outer, wa), run_base(run, outer, wb));
        match (wa.inner_stride, wb.inner_stride) {
            (1, 1) => {
                let (x, y) = (&a[ba..ba + inner], &b[bb..bb + inner]);
                row.iter_mut()
                    .zip(x.iter().zip(y))
                    .for_each(|(o, (&x, &y))| *o = f(x, y));
            }
            (1, _) => {
                let (x, y) = (&a[ba..ba + inner], b[bb]);
                row.iter_mut().zip(x).for_each(|(o, &x)| *o = f(x, y));
            }
            (_, 1) => {
                let (x, y) = (a[ba], &b[bb..bb + inner]);
                row.iter_mut().zip(y).for_each(|(o, &y)| *o = f(x, y));
            }
            _ => row.fill(f(a[ba], b[bb])),
        }
    };
    Some(f32_tensor_with(out_shape.to_vec(), |out| {
        if n >= PARALLEL_THRESHOLD {
            // Runs of at least a few thousand elements per task.
            let rows_per_task = (PARALLEL_THRESHOLD / 8).div_ceil(inner).max(1);
            out.par_chunks_mut(inner * rows_per_task)
                .enumerate()
                .for_each(|(t, chunk)| {
                    for (r, row) in chunk.chunks_mut(inner).enumerate() {
                        fill(t * rows_per_task + r, row);
                    }
                });
        } else {
            for (run, row) in out.chunks_mut(inner).enumerate() {
                fill(run, row);
            }
        }
    }))
}

/// The tensor `out[i] = f(x[i])` of `shape`, in parallel when large.
pub(super) fn map(x: &[f32], shape: Vec<usize>, f: impl Fn(f32) -> f32 + Sync) -> HostTensor {
    f32_tensor_with(shape, |out| {
        map_into(x, out, |i, o| {
            o.iter_mut().zip(i).for_each(|(o, &v)| *o = f(v));
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain definition: every result element from its broadcast sources.
    fn naive(a: &[f32], sa: &[usize], b: &[f32], sb: &[usize], out: &[usize]) -> Vec<f32> {
        let ia = crate::reference::shape::broadcast_indices(sa, out);
        let ib = crate::reference::shape::broadcast_indices(sb, out);
        ia.iter().zip(&ib).map(|(&i, &j)| a[i] - b[j]).collect()
    }

    fn iota(n: usize) -> Vec<f32> {
        (0..n).map(|i| i as f32 * 0.5 - 3.0).collect()
    }

    #[test]
    fn broadcast_runs_match_the_definition() {
        let cases: &[(&[usize], &[usize])] = &[
            (&[2, 3, 4], &[2, 3, 4]),
            (&[2, 3, 4], &[4]),
            (&[2, 3, 4], &[3, 1]),
            (&[2, 1, 4], &[1, 3, 1]),
            (&[1], &[5, 2]),
            (&[], &[3]),
            (&[3, 1, 1], &[1, 1, 7]),
            (&[2, 1, 3, 1], &[2, 4, 1, 5]),
            (&[1, 1], &[1, 1]),
            (&[0, 3], &[3]),
        ];
        for &(sa, sb) in cases {
            let out =
                crate::reference::shape::broadcast_shapes("test", &[sa, sb]).expect("compatible");
            let (a, b) = (
                iota(sa.iter().product()),
                iota(sb.iter().product::<usize>())
                    .into_iter()
                    .map(|v| v * 3.0)
                    .collect::<Vec<_>>(),
            );
            let got = broadcast_binary(&a, sa, &b, sb, &out, |x, y| x - y).expect("row-major");
            assert_eq!(
                f32_elements(&got).to_vec(),
                naive(&a, sa, &b, sb, &out),
                "{sa:?} with {sb:?}"
            );
        }
    }

    #[test]
    fn large_results_split_into_parallel_runs_correctly() {
        let (sa, sb) = ([3usize, 700, 37], [700usize, 1]);
        let out = [3, 700, 37];
        let a = iota(sa.iter().product());
        let b = iota(sb.iter().product());
        let got = broadcast_binary(&a, &sa, &b, &sb, &out, |x, y| x - y).expect("row-major");
        assert_eq!(f32_elements(&got).to_vec(), naive(&a, &sa, &b, &sb, &out));
    }
}
