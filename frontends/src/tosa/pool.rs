//! Pooling between TOSA and `nn`, both directions.
//!
//! `tosa.max_pool2d` and `tosa.avg_pool2d` are NHWC with `pad = [top,
//! bottom, left, right]`, have no dilation, never count padding in an
//! average, and want every window to end exactly on the padded edge (upstream's
//! verifier checks `(in + pads - kernel) % stride == 0` and pads below the
//! kernel). `nn.max_pool` / `nn.average_pool` are NCHW with ONNX semantics.
//! So a TOSA pool reads as an `nn` pool between transposes, and an `nn`
//! pool is written by [`fit_windows`]: floor-mode windows that stop short of
//! the edge get their end padding (then input) trimmed, ceil-mode windows
//! that run past it get end padding, which both TOSA pools skip as ONNX
//! skips positions past the padding. An average that counts its padding
//! (`count_include_pad`) gets that padding as zeros of a `tosa.pad` first.
//!
//! NaN: `nn.max_pool` skips NaNs as ONNX does; TOSA's default `nan_mode`
//! (`PROPAGATE`) returns them. Data without NaNs pools alike.

use ipuc_dialects::nn::{self, PoolKind, PoolOp, PoolParams};
use ipuc_ir::{Attribute, Context, Diagnostic, OpId, Type, Value};

use super::Builder;

/// One spatial axis fitted to TOSA's exact windows: the input extent kept
/// and the end padding, for `windows` windows of extent `window` every
/// `stride` over `input` with `begin`/`end` padding.
pub(super) fn fit_windows(
    input: i64,
    (begin, end): (i64, i64),
    window: i64,
    stride: i64,
    windows: i64,
) -> (i64, i64) {
    let needed = (windows - 1) * stride + window;
    let delta = needed - (input + begin + end);
    if delta >= 0 {
        return (input, end + delta);
    }
    // Positions no window reaches: padding first, then input.
    let from_pad = (-delta).min(end);
    (input + delta + from_pad, end - from_pad)
}

/// `tosa.max_pool2d` / `tosa.avg_pool2d` as an `nn` pool between NHWC/NCHW
/// transposes (zero points are checked by the caller).
pub(super) fn read(
    b: &mut Builder,
    op: OpId,
    kind: PoolKind,
    attr_list: impl Fn(&Builder, &str) -> Result<Vec<i64>, Diagnostic>,
) -> Result<Value, Diagnostic> {
    let loc = b.loc.clone();
    let kernel = attr_list(b, "kernel")?;
    let pad = attr_list(b, "pad")?; // top, bottom, left, right
    let stride = attr_list(b, "stride")?;
    if kernel.len() != 2 || pad.len() != 4 || stride.len() != 2 {
        return Err(b.error(format!(
            "'{}' needs 2 kernel sizes, 4 pads and 2 strides",
            b.ctx.name_str(op)
        )));
    }
    let x = b.ctx.operand(op, 0);
    let nchw = b.nn(nn::TransposeOp::build(b.ctx, x, &[0, 3, 1, 2], loc.clone()))?;
    let mut params = PoolParams::new(&kernel);
    params.strides = stride;
    params.pads = vec![pad[0], pad[2], pad[1], pad[3]];
    let y = b.nn(PoolOp::build(b.ctx, kind, nchw, &params, loc.clone()))?;
    b.nn(nn::TransposeOp::build(b.ctx, y, &[0, 2, 3, 1], loc))
}

/// The TOSA window of a verified `nn` pool: `[top, left, bottom, right]`
/// padding and `[H, W]` input extents after [`fit_windows`], and whether
/// the padding became zeros of a `tosa.pad` first.
struct TosaWindow {
    pads: [i64; 4],
    extent: [i64; 2],
    zero_padded: bool,
}

fn tosa_window(ctx: &Context, op: OpId) -> Result<TosaWindow, String> {
    let pool = PoolOp(op);
    let p = pool.params(ctx);
    let xs = ctx
        .value_type(pool.input(ctx))
        .shape()
        .unwrap_or(&[])
        .to_vec();
    let out = ctx
        .value_type(pool.result(ctx))
        .shape()
        .unwrap_or(&[])
        .to_vec();
    if xs.len() != 4 {
        return Err(format!(
            "pools {} spatial axes; TOSA pools two",
            xs.len().saturating_sub(2)
        ));
    }
    if p.dilations.iter().any(|&d| d != 1) {
        return Err("has dilations; TOSA pools have none".into());
    }
    let zero_padded = pool.kind(ctx) == PoolKind::Average
        && p.count_include_pad
        && p.pads.iter().any(|&v| v != 0);
    let (mut pads, mut extent) = ([p.pads[0], p.pads[1], p.pads[2], p.pads[3]], [xs[2], xs[3]]);
    if zero_padded {
        extent = [xs[2] + pads[0] + pads[2], xs[3] + pads[1] + pads[3]];
        pads = [0; 4];
    }
    for axis in 0..2 {
        let k = p.kernel_shape[axis];
        let (kept, end) = fit_windows(
            extent[axis],
            (pads[axis], pads[axis + 2]),
            k,
            p.strides[axis],
            out[2 + axis],
        );
        if end >= k {
            return Err(format!(
                "needs end padding {end} on spatial axis {axis} for its ceil-mode windows; TOSA wants padding below the kernel ({k})"
            ));
        }
        extent[axis] = kept;
        pads[axis + 2] = end;
    }
    Ok(TosaWindow {
        pads,
        extent,
        zero_padded,
    })
}

/// Why a verified `nn` pool has no TOSA form, if it has none.
pub(super) fn unsupported(ctx: &Context, op: OpId) -> Option<String> {
    tosa_window(ctx, op).err()
}

/// An `nn` pool (NCHW) as `tosa.max_pool2d` / `tosa.avg_pool2d` (NHWC).
pub(super) fn write(b: &mut Builder, op: OpId) -> Result<Value, Diagnostic> {
    let pool = PoolOp(op);
    let kind = pool.kind(b.ctx);
    let p = pool.params(b.ctx);
    let w = tosa_window(b.ctx, op).map_err(|m| b.error(m))?;
    let mut x = pool.input(b.ctx);
    let (xs, elem) = b.shape(x)?;
    if w.zero_padded {
        let [t, l, bo, r] = [p.pads[0], p.pads[1], p.pads[2], p.pads[3]];
        let shape = [xs[0], xs[1], xs[2] + t + bo, xs[3] + l + r];
        let padding = b.shape_value(&[0, 0, 0, 0, t, bo, l, r])?;
        let zero = b.splat(&[1], &elem, 0.0)?;
        x = b.generic(
            "tosa.pad",
            &[x, padding, zero],
            Type::tensor(&shape, elem.clone()),
            vec![],
        );
    }
    let (xs, _) = b.shape(x)?;
    if w.extent != [xs[2], xs[3]] {
        let start = b.shape_value(&[0, 0, 0, 0])?;
        let kept = [xs[0], xs[1], w.extent[0], w.extent[1]];
        let size = b.shape_value(&kept)?;
        x = b.generic(
            "tosa.slice",
            &[x, start, size],
            Type::tensor(&kept, elem.clone()),
            vec![],
        );
    }
    let nhwc = b.transpose(x, &[0, 2, 3, 1])?;
    let (out, _) = b.shape(pool.result(b.ctx))?;
    let out_nhwc = Type::tensor(&[out[0], out[2], out[3], out[1]], elem.clone());
    let [t, l, bo, r] = w.pads;
    let mut attrs = vec![
        ("kernel", super::i64_array(&p.kernel_shape)),
        ("pad", super::i64_array(&[t, bo, l, r])),
        ("stride", super::i64_array(&p.strides)),
    ];
    let y = match kind {
        PoolKind::Max => b.generic("tosa.max_pool2d", &[nhwc], out_nhwc, attrs),
        PoolKind::Average => {
            // TOSA accumulates 16-bit floats in f32 at most; the reference
            // executor sums in f64 either way.
            attrs.push(("acc_type", Attribute::type_attr(Type::f32())));
            let zero = b.zero_point(&elem)?;
            b.generic("tosa.avg_pool2d", &[nhwc, zero, zero], out_nhwc, attrs)
        }
    };
    b.transpose(y, &[0, 3, 1, 2])
}

#[cfg(test)]
mod tests {
    use super::fit_windows;

    #[test]
    fn windows_fit_by_trimming_or_padding_the_end() {
        // 384 pixels in 14-pixel patches: 27 windows reach 378; the 6 left
        // over are trimmed from the input (no end padding to take first).
        assert_eq!(fit_windows(384, (0, 0), 14, 14, 27), (378, 0));
        // Floor mode, one pad each side, window 3 stride 2 over 6: 3
        // windows reach 7 of the padded 8; the end pad goes.
        assert_eq!(fit_windows(6, (1, 1), 3, 2, 3), (6, 0));
        // Ceil mode: 2 windows of 3 every 2 over 4 need 5; one more pad.
        assert_eq!(fit_windows(4, (0, 0), 3, 2, 2), (4, 1));
        // Exact already.
        assert_eq!(fit_windows(5, (1, 0), 2, 2, 3), (5, 0));
    }
}
