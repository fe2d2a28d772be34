//! ONNX `MaxPool` and `AveragePool` on `[N, C, D1, ..., Dn]` tensors, any
//! number of spatial dimensions, with explicit pads, strides, dilations,
//! `ceil_mode` and `count_include_pad`.
//!
//! Window `o` along a spatial axis reads positions `o * stride - begin + j *
//! dilation`: those inside the input are data, those in the explicit pads
//! are padding (skipped by the maximum, zeros an average counts only with
//! `count_include_pad`), and those past the end padding (reached by
//! `ceil_mode` windows alone) are skipped by both, as in onnxruntime and
//! the ONNX reference. Windows are separable, so each axis's data positions
//! and window size are listed once and the windows are their products.
//! Averages sum in f64 and round once to the element type (a NaN among the
//! data propagates); the maximum skips NaNs, as the ONNX reference does; a
//! float window without data gives NaN.

use rayon::prelude::*;

use super::error::{attribute_error, shape_error, KernelError, KernelResult};
use super::host_tensor::{HostTensor, Values};

/// The pooling ops and their windows are `nn`'s (signed, as attributes hold
/// them; the kernel rejects negative ones).
pub use ipuc_dialects::nn::{PoolKind, PoolParams};

/// One spatial axis's windows: for each output position, the input
/// positions that hold data and the window's size with padding.
struct AxisWindows {
    data: Vec<Vec<usize>>,
    padded_size: Vec<usize>,
}

fn axis_windows(
    op: &'static str,
    input: usize,
    p: &PoolParams,
    axis: usize,
) -> KernelResult<AxisWindows> {
    let spatial = p.kernel_shape.len();
    let size = |what: &str, v: i64| {
        usize::try_from(v)
            .map_err(|_| attribute_error(op, format!("'{what}' must be non-negative, but is {v}")))
    };
    let k = size("kernel_shape", p.kernel_shape[axis])?;
    let (s, d) = (
        size("strides", p.strides[axis])?,
        size("dilations", p.dilations[axis])?,
    );
    let (begin, end) = (
        size("pads", p.pads[axis])?,
        size("pads", p.pads[spatial + axis])?,
    );
    if k == 0 || s == 0 || d == 0 {
        return Err(attribute_error(
            op,
            "kernel_shape, strides and dilations must be positive",
        ));
    }
    let window = (k - 1) * d + 1;
    let padded = input + begin + end;
    if window > padded {
        return Err(shape_error(
            op,
            format!("window extent {window} exceeds the padded input extent {padded} along spatial axis {axis}"),
        ));
    }
    let span = padded - window;
    let mut count = if p.ceil_mode {
        span.div_ceil(s) + 1
    } else {
        span / s + 1
    };
    if p.ceil_mode && (count - 1) * s >= input + begin {
        count -= 1;
    }
    let mut windows = AxisWindows {
        data: Vec::with_capacity(count),
        padded_size: Vec::with_capacity(count),
    };
    for o in 0..count {
        // Positions in padded coordinates: [0, begin) and [begin + input, padded) are padding.
        let positions = (0..k).map(|j| o * s + j * d).filter(|&q| q < padded);
        let (mut data, mut size) = (Vec::new(), 0);
        for q in positions {
            size += 1;
            if (begin..begin + input).contains(&q) {
                data.push(q - begin);
            }
        }
        windows.data.push(data);
        windows.padded_size.push(size);
    }
    Ok(windows)
}

/// Pools `x [N, C, D1, ..., Dn]` over the windows `p`.
pub fn pool(x: &HostTensor, kind: PoolKind, p: &PoolParams) -> KernelResult<HostTensor> {
    let op = kind.name().trim_start_matches("nn.");
    let spatial = p.kernel_shape.len();
    if x.rank() != spatial + 2
        || spatial == 0
        || p.strides.len() != spatial
        || p.dilations.len() != spatial
        || p.pads.len() != 2 * spatial
    {
        return Err(shape_error(
            op,
            format!(
                "input {:?} does not fit a window of {spatial} spatial axes (kernel {:?}, strides {:?}, pads {:?}, dilations {:?})",
                x.shape, p.kernel_shape, p.strides, p.pads, p.dilations
            ),
        ));
    }
    let averaging = kind == PoolKind::Average;
    if averaging && !x.kind.is_float() {
        return Err(KernelError::ElementType {
            op,
            kind: x.kind.to_string(),
        });
    }
    let axes: Vec<AxisWindows> = (0..spatial)
        .map(|a| axis_windows(op, x.shape[2 + a], p, a))
        .collect::<KernelResult<_>>()?;
    let out_spatial: Vec<usize> = axes.iter().map(|a| a.data.len()).collect();
    let mut out_shape = x.shape[..2].to_vec();
    out_shape.extend(&out_spatial);
    let in_plane: usize = x.shape[2..].iter().product();
    let out_plane: usize = out_spatial.iter().product();
    let planes = x.shape[0] * x.shape[1];
    // Row-major strides of the input's spatial axes.
    let mut in_strides = vec![1usize; spatial];
    for a in (0..spatial.saturating_sub(1)).rev() {
        in_strides[a] = in_strides[a + 1] * x.shape[3 + a];
    }

    // Calls `visit` with the flat input offset of every data element of the
    // window at output position `o` (a flat index into the output plane).
    let for_window = |o: usize, visit: &mut dyn FnMut(usize)| {
        let mut coords = vec![0usize; spatial];
        let mut rest = o;
        for a in (0..spatial).rev() {
            coords[a] = rest % out_spatial[a];
            rest /= out_spatial[a];
        }
        let lists: Vec<&[usize]> = (0..spatial).map(|a| &axes[a].data[coords[a]][..]).collect();
        if lists.iter().any(|l| l.is_empty()) {
            return;
        }
        // Odometer over the product of the per-axis data positions.
        let mut pick = vec![0usize; spatial];
        loop {
            visit(
                (0..spatial)
                    .map(|a| lists[a][pick[a]] * in_strides[a])
                    .sum(),
            );
            let mut a = spatial;
            loop {
                if a == 0 {
                    return;
                }
                a -= 1;
                pick[a] += 1;
                if pick[a] < lists[a].len() {
                    break;
                }
                pick[a] = 0;
            }
        }
    };
    let window_size = |o: usize| -> usize {
        let mut rest = o;
        let mut size = 1;
        for a in (0..spatial).rev() {
            let c = rest % out_spatial[a];
            rest /= out_spatial[a];
            size *= if p.count_include_pad {
                axes[a].padded_size[c]
            } else {
                axes[a].data[c].len()
            };
        }
        size
    };

    let values = match x.values() {
        Values::Int(v) => {
            let mut out = vec![0i128; planes * out_plane];
            for (plane, block) in out.chunks_mut(out_plane.max(1)).enumerate() {
                let src = &v[plane * in_plane..][..in_plane];
                for (o, y) in block.iter_mut().enumerate() {
                    let mut best: Option<i128> = None;
                    for_window(o, &mut |i| {
                        best = Some(best.map_or(src[i], |b| b.max(src[i])))
                    });
                    *y = best.ok_or_else(|| {
                        shape_error(op, format!("window {o} holds no input element"))
                    })?;
                }
            }
            Values::Int(out)
        }
        floats => {
            let src: Vec<f64> = match floats {
                Values::F32(v) => v.into_iter().map(f64::from).collect(),
                Values::F64(v) => v,
                Values::Int(_) => unreachable!("handled above"),
            };
            let mut out = vec![0f64; planes * out_plane];
            out.par_chunks_mut(out_plane.max(1))
                .enumerate()
                .for_each(|(plane, block)| {
                    let src = &src[plane * in_plane..][..in_plane];
                    for (o, y) in block.iter_mut().enumerate() {
                        *y = if averaging {
                            let mut sum = 0.0;
                            for_window(o, &mut |i| sum += src[i]);
                            sum / window_size(o) as f64
                        } else {
                            // NaN if the window holds no data or only NaNs.
                            let mut best = f64::NAN;
                            for_window(o, &mut |i| best = best.max(src[i]));
                            best
                        };
                    }
                });
            Values::F64(out)
        }
    };
    Ok(HostTensor::from_values(x.kind, out_shape, values))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(kernel: &[i64]) -> PoolParams {
        PoolParams::new(kernel)
    }

    fn run(x: &[f32], shape: &[usize], kind: PoolKind, p: &PoolParams) -> (Vec<usize>, Vec<f64>) {
        let y = pool(&HostTensor::from_f32(shape.to_vec(), x), kind, p).unwrap();
        (y.shape.clone(), y.to_f64_vec())
    }

    #[test]
    fn padding_counts_only_when_asked() {
        // [1, 2, 3] with one pad each side, window 2: [pad 1] [1 2] [2 3] [3 pad].
        let mut p = params(&[2]);
        p.pads = vec![1, 1];
        let x = [1.0, 2.0, 3.0];
        let avg = |count_include_pad| {
            let p = PoolParams {
                count_include_pad,
                ..p.clone()
            };
            run(&x, &[1, 1, 3], PoolKind::Average, &p).1
        };
        assert_eq!(avg(false), [1.0, 1.5, 2.5, 3.0]);
        assert_eq!(avg(true), [0.5, 1.5, 2.5, 1.5]);
        let neg = [-1.0, -2.0, -3.0];
        // Padding is not a value for the maximum, even when an average would count it.
        p.count_include_pad = true;
        assert_eq!(
            run(&neg, &[1, 1, 3], PoolKind::Max, &p).1,
            [-1.0, -1.0, -2.0, -3.0]
        );
    }

    #[test]
    fn ceil_mode_windows_skip_positions_past_the_padding() {
        // 4 elements, window 3, stride 2: floor gives 1 window, ceil 2; the
        // second reads [2, 3] and position 4 lies past the input and pads.
        let mut p = params(&[3]);
        p.strides = vec![2];
        p.ceil_mode = true;
        p.count_include_pad = true;
        let x = [1.0, 2.0, 3.0, 5.0];
        assert_eq!(
            run(&x, &[1, 1, 4], PoolKind::Average, &p),
            (vec![1, 1, 2], vec![2.0, 4.0])
        );
        assert_eq!(run(&x, &[1, 1, 4], PoolKind::Max, &p).1, [3.0, 5.0]);
    }

    #[test]
    fn windows_are_products_of_dilated_axes() {
        // 2-D, 3x4 plane, kernel 2x2 dilated 1x2: window (0, 0) reads
        // (0,0) (0,2) (1,0) (1,2), values 0, 2, 4, 6.
        let x: Vec<f32> = (0..12).map(|v| v as f32).collect();
        let mut p = params(&[2, 2]);
        p.dilations = vec![1, 2];
        let (shape, y) = run(&x, &[1, 1, 3, 4], PoolKind::Average, &p);
        assert_eq!(shape, [1, 1, 2, 2]);
        assert_eq!(y, [3.0, 4.0, 7.0, 8.0]);
        // Each (n, c) plane pools alone.
        let (_, y) = run(&x, &[2, 3, 2], PoolKind::Max, &params(&[2]));
        assert_eq!(y, [1.0, 3.0, 5.0, 7.0, 9.0, 11.0]);
    }

    #[test]
    fn integers_pool_exactly_and_bad_windows_are_errors() {
        let x = HostTensor::from_i64(vec![1, 1, 3], &[i64::MIN + 1, 7, -3]);
        let y = pool(&x, PoolKind::Max, &params(&[2])).unwrap();
        assert_eq!(y.to_i64_vec(), [7, 7]);
        assert!(pool(&x, PoolKind::Average, &params(&[2])).is_err());
        let e = pool(&x, PoolKind::Max, &params(&[4])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "max_pool: window extent 4 exceeds the padded input extent 3 along spatial axis 0"
        );
        assert!(pool(&x, PoolKind::Max, &params(&[2, 2])).is_err());
        // nn's windows are signed: a negative entry is refused, not wrapped.
        let mut negative = params(&[2]);
        negative.pads = vec![0, -1];
        let e = pool(&x, PoolKind::Max, &negative).unwrap_err();
        assert!(
            e.to_string()
                .contains("'pads' must be non-negative, but is -1"),
            "{e}"
        );
    }
}
