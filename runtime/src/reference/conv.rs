//! ONNX `Conv` for 2-D images (NCHW): strides, pads, dilations, groups, auto_pad.
//!
//! Lowered to im2col plus a matrix product per (image, group), so it runs on the
//! same blocked GEMM as `MatMul`.

use rayon::prelude::*;

use super::error::{attribute_error, shape_error, KernelError, KernelResult};
use super::host_tensor::{HostTensor, Values};
use super::matmul::{product_f32, product_f64, Product};

/// ONNX `auto_pad`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AutoPad {
    /// Explicit `pads`.
    #[default]
    NotSet,
    /// No padding.
    Valid,
    /// Output size `ceil(in / stride)`, extra padding at the end.
    SameUpper,
    /// Output size `ceil(in / stride)`, extra padding at the beginning.
    SameLower,
}

impl AutoPad {
    /// Parses the ONNX attribute string.
    pub fn parse(s: &str) -> KernelResult<AutoPad> {
        Ok(match s {
            "NOTSET" | "" => AutoPad::NotSet,
            "VALID" => AutoPad::Valid,
            "SAME_UPPER" => AutoPad::SameUpper,
            "SAME_LOWER" => AutoPad::SameLower,
            other => {
                return Err(attribute_error(
                    "conv",
                    format!("unknown auto_pad `{other}`"),
                ))
            }
        })
    }
}

/// The parameters of `nn.conv2d` (signed, as attributes hold them; the kernel
/// rejects negative ones).
pub use ipuc_dialects::nn::Conv2dParams;

/// `v` as the sizes the kernel indexes with: a negative one is an attribute error.
fn unsigned<const N: usize>(what: &str, v: [i64; N]) -> KernelResult<[usize; N]> {
    let mut out = [0usize; N];
    for (o, &x) in out.iter_mut().zip(&v) {
        *o = usize::try_from(x).map_err(|_| {
            attribute_error(
                "conv",
                format!("'{what}' must be non-negative, but is {v:?}"),
            )
        })?;
    }
    Ok(out)
}

/// Pads that `auto_pad` implies for an input of spatial size `input` and a kernel of
/// size `kernel` (ONNX formula: total = max(0, (ceil(in/s) - 1)·s + (k-1)·d + 1 - in)).
/// `NotSet` returns `explicit`.
pub fn resolve_pads(
    mode: AutoPad,
    input: [usize; 2],
    kernel: [usize; 2],
    strides: [usize; 2],
    dilations: [usize; 2],
    explicit: [usize; 4],
) -> [usize; 4] {
    match mode {
        AutoPad::NotSet => explicit,
        AutoPad::Valid => [0; 4],
        AutoPad::SameUpper | AutoPad::SameLower => {
            let mut pads = [0; 4];
            for i in 0..2 {
                let out = input[i].div_ceil(strides[i]);
                let needed =
                    ((out.saturating_sub(1)) * strides[i] + (kernel[i] - 1) * dilations[i] + 1)
                        .saturating_sub(input[i]);
                let small = needed / 2;
                let (begin, end) = if mode == AutoPad::SameUpper {
                    (small, needed - small)
                } else {
                    (needed - small, small)
                };
                pads[i] = begin;
                pads[i + 2] = end;
            }
            pads
        }
    }
}

/// ONNX `Conv` on `x [N, C, H, W]` with `w [M, C/groups, kH, kW]` and optional
/// bias `b [M]`.
pub fn conv2d(
    x: &HostTensor,
    w: &HostTensor,
    b: Option<&HostTensor>,
    params: &Conv2dParams,
) -> KernelResult<HostTensor> {
    if x.rank() != 4 || w.rank() != 4 {
        return Err(shape_error(
            "conv",
            format!(
                "only 2-D convolution (rank-4 X and W) is supported, got {:?} and {:?}",
                x.shape, w.shape
            ),
        ));
    }
    // Float formats may differ (f16 activations with f8 weights): the product
    // computes in the domain of the input's kind.
    if !x.kind.is_float() || !w.kind.is_float() {
        return Err(KernelError::ElementType {
            op: "conv",
            kind: format!("{} with {}", x.kind, w.kind),
        });
    }
    let [n, c, h, wd] = [x.shape[0], x.shape[1], x.shape[2], x.shape[3]];
    let [m, cg, kh, kw] = [w.shape[0], w.shape[1], w.shape[2], w.shape[3]];
    let [g] = unsigned("groups", [params.groups])?;
    if g == 0 || c != cg * g || m % g != 0 {
        return Err(shape_error(
            "conv",
            format!(
                "X {:?}, W {:?} and group={g} do not agree",
                x.shape, w.shape
            ),
        ));
    }
    let strides = unsigned("strides", params.strides)?;
    let dilations = unsigned("dilations", params.dilations)?;
    if strides.contains(&0) || dilations.contains(&0) {
        return Err(attribute_error(
            "conv",
            "strides and dilations must be positive",
        ));
    }
    let [pt, pl, pb, pr] = unsigned("pads", params.pads)?;
    let [sh, sw] = strides;
    let [dh, dw] = dilations;
    let span = |k: usize, d: usize| (k - 1) * d + 1;
    let (ph, pw) = (h + pt + pb, wd + pl + pr);
    if kh == 0 || kw == 0 || ph < span(kh, dh) || pw < span(kw, dw) {
        return Err(shape_error(
            "conv",
            format!(
                "kernel {:?} is larger than the padded input {ph}x{pw}",
                &w.shape[2..]
            ),
        ));
    }
    let (oh, ow) = ((ph - span(kh, dh)) / sh + 1, (pw - span(kw, dw)) / sw + 1);
    let mg = m / g;
    let kdim = cg * kh * kw;
    let spatial = oh * ow;

    // im2col for one (image, group): rows = (channel, ky, kx), columns = output pixels.
    let im2col = |xs: &[f64], img: usize, grp: usize| -> Vec<f64> {
        let mut col = vec![0.0; kdim * spatial];
        for ch in 0..cg {
            let plane = &xs[((img * c) + grp * cg + ch) * h * wd..][..h * wd];
            for ky in 0..kh {
                for kx in 0..kw {
                    let row = &mut col[((ch * kh + ky) * kw + kx) * spatial..][..spatial];
                    for oy in 0..oh {
                        let iy = (oy * sh + ky * dh) as isize - pt as isize;
                        if iy < 0 || iy >= h as isize {
                            continue;
                        }
                        for ox in 0..ow {
                            let ix = (ox * sw + kx * dw) as isize - pl as isize;
                            if ix >= 0 && ix < wd as isize {
                                row[oy * ow + ox] = plane[iy as usize * wd + ix as usize];
                            }
                        }
                    }
                }
            }
        }
        col
    };
    let bias: Option<Vec<f64>> = match b {
        Some(b) if b.shape != [m] => {
            return Err(shape_error(
                "conv",
                format!("bias must have shape [{m}], got {:?}", b.shape),
            ))
        }
        Some(b) => Some(b.to_f64_vec()),
        None => None,
    };
    let xs = x.to_f64_vec();
    let ws = w.values_in(x.kind);
    let p = Product::dense(mg, kdim, spatial);
    // One output block [mg, oh*ow] per (image, group), computed in parallel.
    let mut out = vec![0f64; n * m * spatial];
    let f32_weights = matches!(ws, Values::F32(_));
    out.par_chunks_mut((mg * spatial).max(1))
        .enumerate()
        .for_each(|(t, block)| {
            let (img, grp) = (t / g, t % g);
            let col = im2col(&xs, img, grp);
            match &ws {
                Values::F32(wv) => {
                    let col32: Vec<f32> = col.iter().map(|&v| v as f32).collect();
                    let mut res = vec![0f32; mg * spatial];
                    product_f32(p, &wv[grp * mg * kdim..][..mg * kdim], &col32, &mut res);
                    block
                        .iter_mut()
                        .zip(res)
                        .for_each(|(o, r)| *o = f64::from(r));
                }
                Values::F64(wv) => product_f64(p, &wv[grp * mg * kdim..][..mg * kdim], &col, block),
                Values::Int(_) => unreachable!("float kinds only"),
            }
            if let Some(bias) = &bias {
                for (oc, row) in block.chunks_mut(spatial.max(1)).enumerate() {
                    row.iter_mut().for_each(|v| *v += bias[grp * mg + oc]);
                }
            }
        });
    let values = if f32_weights {
        Values::F32(out.into_iter().map(|v| v as f32).collect())
    } else {
        Values::F64(out)
    };
    Ok(HostTensor::from_values(x.kind, vec![n, m, oh, ow], values))
}
