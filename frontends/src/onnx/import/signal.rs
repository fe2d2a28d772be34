//! `DFT` and `STFT` with static lengths: the discrete Fourier transform
//! along one axis is a constant linear map, so it is two `nn.matmul`s by
//! the cosine and sine matrices (computed in f64 and rounded once) on the
//! real and imaginary parts, with the signal axis moved last and back.
//! `onesided` keeps the first `n / 2 + 1` frequencies; the inverse of a
//! one-sided spectrum (`inverse` + `onesided`) rebuilds the conjugate-
//! symmetric half, as `numpy.fft.irfft`, and is real. `STFT` gathers the
//! frames with one constant-index gather, applies the window, and
//! transforms each frame.

use std::f64::consts::PI;

use ipuc_dialects::nn::{normalize_axis, BinaryKind, GatherOp};
use ipuc_ir::Value;

use super::body::{Body, Built};
use super::{ImportError, Importer, NodeResult};
use crate::onnx::Node;

/// The ops of this family.
pub(super) const OPS: &[&str] = &["DFT", "STFT"];

pub(super) fn import(imp: &mut Importer<'_>, node: &Node) -> NodeResult {
    let mut b = Body::new(imp, node);
    match node.op_type.as_str() {
        "DFT" => dft_node(&mut b),
        _ => stft(&mut b),
    }
    .map(|v| vec![v])
}

/// One constant scalar integer input, if present.
fn scalar_input(
    b: &mut Body<'_, '_, '_>,
    i: usize,
    what: &str,
) -> Result<Option<i64>, ImportError> {
    match b.imp.optional_const_ints(b.node, i, what)? {
        None => Ok(None),
        Some(v) if v.len() == 1 => Ok(Some(v[0])),
        Some(v) => Err(b.error(format!("the {what} must be one integer, but is {v:?}"))),
    }
}

fn dft_node(b: &mut Body<'_, '_, '_>) -> Built {
    let x = b.input(0)?;
    let rank = b.shape(x).len();
    let length = scalar_input(b, 1, "DFT length")?;
    let axis = if b.imp.opset >= 20 {
        scalar_input(b, 2, "axis")?.unwrap_or(-2)
    } else {
        b.node.int_attr("axis", 1)?
    };
    let axis = normalize_axis(axis, rank).map_err(|m| b.error(m))?;
    if axis + 1 >= rank {
        return Err(b.error("the DFT axis cannot be the last (complex) axis"));
    }
    let inverse = b.node.int_attr("inverse", 0)? != 0;
    let onesided = b.node.int_attr("onesided", 0)? != 0;
    dft(b, x, axis, length, inverse, onesided)
}

/// The transform of `x` (`[..., 1 | 2]`: real, or real and imaginary) along
/// `axis`.
fn dft(
    b: &mut Body<'_, '_, '_>,
    x: Value,
    axis: usize,
    length: Option<i64>,
    inverse: bool,
    onesided: bool,
) -> Built {
    let shape = b.shape(x);
    let rank = shape.len();
    let parts = shape[rank - 1];
    if !matches!(parts, 1 | 2) {
        return Err(b.error(format!(
            "the last axis must hold 1 (real) or 2 (complex) values, not {parts}"
        )));
    }
    let len = shape[axis];
    let elem = b.element(x)?;
    // Real and imaginary parts as [..., len] with the signal axis last.
    let mut perm: Vec<i64> = (0..rank as i64 - 1).filter(|&a| a != axis as i64).collect();
    perm.push(axis as i64);
    let mut split = Vec::new();
    for p in 0..parts {
        let part = b.slice(x, rank as i64 - 1, p, p + 1)?;
        let part = b.reshape(part, &shape[..rank - 1])?;
        split.push(b.transpose(part, &perm)?);
    }
    // The spectrum's length n, how many inputs it reads and how many outputs.
    let irfft = inverse && onesided;
    let n = length.unwrap_or(if irfft { 2 * (len - 1) } else { len });
    if n < 1 {
        return Err(b.error(format!("the DFT length must be positive, not {n}")));
    }
    let used = len.min(if irfft { n / 2 + 1 } else { n });
    let outputs = if onesided && !inverse { n / 2 + 1 } else { n };
    let sign = if inverse { 1.0 } else { -1.0 };
    let scale = if inverse { 1.0 / n as f64 } else { 1.0 };
    // weights[(t, k)]: contribution of input t (re, im) to output k (re, im).
    let entry = |t: i64, k: i64| -> [[f64; 2]; 2] {
        let angle = 2.0 * PI * (t * k % n) as f64 / n as f64;
        let (c, s) = (angle.cos() * scale, sign * angle.sin() * scale);
        if irfft {
            // Bins 1..n/2 (not the Nyquist bin of an even n) also stand for
            // their conjugates n - t: twice the real part, and the sine terms
            // cancel for the DC and Nyquist bins.
            let twice = if t == 0 || 2 * t == n { 1.0 } else { 2.0 };
            [[twice * c, 0.0], [-twice * s, 0.0]]
        } else {
            // (re + i im)(c + i s) = (re c - im s) + i (re s + im c)
            [[c, s], [-s, c]]
        }
    };
    let mut out_parts = Vec::new();
    for o in 0..if irfft { 1 } else { 2 } {
        let mut acc = None;
        for (p, &part) in split.iter().enumerate() {
            let weights: Vec<f64> = (0..used)
                .flat_map(|t| (0..outputs).map(move |k| (t, k)))
                .map(|(t, k)| entry(t, k)[p][o])
                .collect();
            let w = b.constant(&[used, outputs], &elem, &weights)?;
            let input = if used < len {
                let last = b.shape(part).len() as i64 - 1;
                b.slice(part, last, 0, used)?
            } else {
                part
            };
            let term = b.matmul(input, w)?;
            acc = Some(match acc {
                None => term,
                Some(a) => b.binary(BinaryKind::Add, a, term)?,
            });
        }
        out_parts.push(acc.expect("at least one part"));
    }
    // Back to the input's axis order with the (real, imaginary) axis last.
    let mut inverse_perm = vec![0i64; rank - 1];
    for (i, &p) in perm.iter().enumerate() {
        inverse_perm[p as usize] = i as i64;
    }
    let mut restored = Vec::new();
    for part in out_parts {
        let back = b.transpose(part, &inverse_perm)?;
        restored.push(b.unsqueeze(back, &[rank as i64 - 1])?);
    }
    if restored.len() == 1 {
        return Ok(restored[0]);
    }
    b.concat(&restored, rank as i64 - 1)
}

/// `STFT(signal [batch, length, 1 | 2], frame_step, window?, frame_length?)`.
fn stft(b: &mut Body<'_, '_, '_>) -> Built {
    let signal = b.input(0)?;
    let step = scalar_input(b, 1, "frame step")?
        .ok_or_else(|| b.error("the frame step (input #1) is required"))?;
    let window = b.optional_input(2)?;
    let frame = match scalar_input(b, 3, "frame length")? {
        Some(f) => f,
        None => match window {
            Some(w) => b.shape(w)[0],
            None => return Err(b.error("needs a window or a frame length")),
        },
    };
    let shape = b.shape(signal);
    let [_, length, _] = shape[..] else {
        return Err(b.error(format!(
            "the signal must be [batch, length, 1 | 2], not {shape:?}"
        )));
    };
    if step < 1 || frame < 1 || frame > length {
        return Err(b.error(format!(
            "frame step {step} and length {frame} do not fit a signal of {length}"
        )));
    }
    let frames = (length - frame) / step + 1;
    let positions: Vec<f64> = (0..frames)
        .flat_map(|f| (0..frame).map(move |t| (f * step + t) as f64))
        .collect();
    let indices = b.constant(&[frames, frame], &ipuc_ir::Type::i64(), &positions)?;
    let state = GatherOp::build(b.imp.ctx, signal, indices, 1, Importer::loc(b.node));
    let mut framed = b.imp.emit1(b.node, state)?;
    if let Some(w) = window {
        let w = b.reshape(w, &[frame, 1])?;
        framed = b.binary(BinaryKind::Mul, framed, w)?;
    }
    let onesided = b.node.int_attr("onesided", 1)? != 0;
    dft(b, framed, 2, Some(frame), false, onesided)
}
