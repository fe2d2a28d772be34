//! `DeformConv` (2-D) built of `nn` ops as the ONNX reference computes it
//! (`op_deform_conv.py`): every kernel tap of every output position reads
//! the input bilinearly at its regular place plus the learned offset (zero
//! outside the image, as `GridSample` with zero padding and aligned
//! corners), scaled by the optional mask; the sampled columns
//! `[N, C·kh·kw, OH·OW]` then meet the weights in one batched matmul per
//! group, and the bias is added.
//!
//! The offsets are run-time data: the sample positions are tensors, their
//! four neighbours become flat indices and weights (a neighbour outside
//! the image weighs zero), and one `nn.gather_elements` per neighbour reads
//! them for every channel of the offset group.

use ipuc_dialects::nn::{BinaryKind, CompareKind, GatherElementsOp, UnaryKind};
use ipuc_ir::{Type, Value};

use super::body::{Body, Built};
use super::window::{explicit_pads, per_axis};
use super::{ImportError, Importer, NodeResult};
use crate::onnx::Node;

/// The ops of this family.
pub(super) const OPS: &[&str] = &["DeformConv"];

pub(super) fn import(imp: &mut Importer<'_>, node: &Node) -> NodeResult {
    let mut b = Body::new(imp, node);
    let (x, w, offset) = (b.input(0)?, b.input(1)?, b.input(2)?);
    let (bias, mask) = (b.optional_input(3)?, b.optional_input(4)?);
    let (xs, ws, os) = (b.shape(x), b.shape(w), b.shape(offset));
    if xs.len() != 4 || ws.len() != 4 || os.len() != 4 {
        return Err(b.error(format!(
            "only 2-D DeformConv is supported (X [N, C, H, W], W [OC, C/group, kh, kw], offset \
             [N, 2*offset_group*kh*kw, OH, OW]), but X is {xs:?}, W {ws:?} and offset {os:?}"
        )));
    }
    let (n, c, h, wd) = (xs[0], xs[1], xs[2], xs[3]);
    let (oc, cg, kh, kw) = (ws[0], ws[1], ws[2], ws[3]);
    if let Some(k) = node.ints_attr("kernel_shape")? {
        if k != [kh, kw] {
            return Err(b.error(format!(
                "`kernel_shape` {k:?} differs from the weight's [{kh}, {kw}]"
            )));
        }
    }
    let group = node.int_attr("group", 1)?;
    let offset_group = node.int_attr("offset_group", 1)?;
    let strides = per_axis(node, "strides", 2)?;
    let dilations = per_axis(node, "dilations", 2)?;
    let pads = explicit_pads(node, 2)?;
    let taps = kh * kw;
    let (oh, ow) = (os[2], os[3]);
    let fits = |o: i64, i: i64, k: i64, s: i64, d: i64, p: i64| {
        s >= 1 && d >= 1 && o == (i + p - ((k - 1) * d + 1)) / s + 1
    };
    if group < 1
        || offset_group < 1
        || c != cg * group
        || oc % group != 0
        || c % offset_group != 0
        || os[0] != n
        || os[1] != 2 * offset_group * taps
        || !fits(oh, h, kh, strides[0], dilations[0], pads[0] + pads[2])
        || !fits(ow, wd, kw, strides[1], dilations[1], pads[1] + pads[3])
    {
        return Err(b.error(format!(
            "the shapes do not fit: X {xs:?}, W {ws:?}, offset {os:?} with group {group}, \
             offset_group {offset_group}, strides {strides:?}, dilations {dilations:?} and \
             pads {pads:?}"
        )));
    }
    let elem = b.element(x)?;
    if !elem.is_float() {
        return Err(b.error("X must be a floating-point tensor"));
    }
    let positions = oh * ow;
    // Offsets as [N, G, taps, 2, OH*OW]: (dy, dx) per tap and position.
    let offset = b.reshape(offset, &[n, offset_group, taps, 2, positions])?;
    let dy = b.slice(offset, 3, 0, 1)?;
    let dy = b.reshape(dy, &[n, offset_group, taps, positions])?;
    let dx = b.slice(offset, 3, 1, 2)?;
    let dx = b.reshape(dx, &[n, offset_group, taps, positions])?;
    // The regular sampling places [1, 1, taps, OH*OW].
    let mut base_y = Vec::with_capacity((taps * positions) as usize);
    let mut base_x = Vec::with_capacity((taps * positions) as usize);
    for ki in 0..kh {
        for kj in 0..kw {
            for i in 0..oh {
                for j in 0..ow {
                    base_y.push((i * strides[0] - pads[0] + ki * dilations[0]) as f64);
                    base_x.push((j * strides[1] - pads[1] + kj * dilations[1]) as f64);
                }
            }
        }
    }
    let base_y = b.constant(&[1, 1, taps, positions], &elem, &base_y)?;
    let base_x = b.constant(&[1, 1, taps, positions], &elem, &base_x)?;
    let y = b.binary(BinaryKind::Add, base_y, dy)?;
    let xq = b.binary(BinaryKind::Add, base_x, dx)?;
    let (y0, y1, wy0, wy1) = neighbours(&mut b, y, h)?;
    let (x0, x1, wx0, wx1) = neighbours(&mut b, xq, wd)?;

    // The image per offset group, flat: [N, G, C/G, H*W].
    let per_group = c / offset_group;
    let image = b.reshape(x, &[n, offset_group, per_group, h * wd])?;
    let samples = taps * positions;
    let width = b.constant(&[], &Type::i64(), &[wd as f64])?;
    let mut sampled: Option<Value> = None;
    for (row, row_weight) in [(y0, wy0), (y1, wy1)] {
        for (col, col_weight) in [(x0, wx0), (x1, wx1)] {
            let r = b.binary(BinaryKind::Mul, row, width)?;
            let flat = b.binary(BinaryKind::Add, r, col)?;
            let flat = b.reshape(flat, &[n, offset_group, 1, samples])?;
            let flat = b.expand(flat, &[n, offset_group, per_group, samples])?;
            let state = GatherElementsOp::build(b.imp.ctx, image, flat, 3, Importer::loc(node));
            let value = b.imp.emit1(node, state)?;
            let weight = b.binary(BinaryKind::Mul, row_weight, col_weight)?;
            let weight = b.reshape(weight, &[n, offset_group, 1, samples])?;
            let term = b.binary(BinaryKind::Mul, value, weight)?;
            sampled = Some(match sampled {
                None => term,
                Some(s) => b.binary(BinaryKind::Add, s, term)?,
            });
        }
    }
    let mut sampled = sampled.expect("four neighbours");
    if let Some(m) = mask {
        let m = b.reshape(m, &[n, offset_group, 1, samples])?;
        sampled = b.binary(BinaryKind::Mul, sampled, m)?;
    }
    // Columns [N, group, C/group * taps, OH*OW] against weights
    // [group, OC/group, C/group * taps].
    let columns = b.reshape(sampled, &[n, group, cg * taps, positions])?;
    let weights = b.reshape(w, &[group, oc / group, cg * taps])?;
    let y = b.matmul(weights, columns)?;
    let mut y = b.reshape(y, &[n, oc, oh, ow])?;
    if let Some(bias) = bias {
        let bias = b.reshape(bias, &[1, oc, 1, 1])?;
        y = b.binary(BinaryKind::Add, y, bias)?;
    }
    Ok(vec![y])
}

/// The two neighbours `floor(p)` and `floor(p) + 1` of positions `p` among
/// `extent` pixels, as `i64` indices (clamped into range) with their
/// bilinear weights (zero for a neighbour outside).
fn neighbours(
    b: &mut Body<'_, '_, '_>,
    p: Value,
    extent: i64,
) -> Result<(Value, Value, Value, Value), ImportError> {
    let low = b.unary(UnaryKind::Floor, p)?;
    let one = b.scalar_like(p, 1.0)?;
    let high = b.binary(BinaryKind::Add, low, one)?;
    let frac = b.binary(BinaryKind::Sub, p, low)?;
    let rest = b.binary(BinaryKind::Sub, one, frac)?;
    let (low, low_weight) = inside(b, low, rest, extent)?;
    let (high, high_weight) = inside(b, high, frac, extent)?;
    Ok((low, high, low_weight, high_weight))
}

/// Index `i` (a float) clamped into `0..extent` as `i64`, and `weight`
/// where `i` was inside, zero elsewhere.
fn inside(
    b: &mut Body<'_, '_, '_>,
    i: Value,
    weight: Value,
    extent: i64,
) -> Result<(Value, Value), ImportError> {
    let zero = b.scalar_like(i, 0.0)?;
    let last = b.scalar_like(i, (extent - 1) as f64)?;
    let above = b.compare(CompareKind::GreaterEqual, i, zero)?;
    let below = b.compare(CompareKind::LessEqual, i, last)?;
    let ok = b.binary(BinaryKind::And, above, below)?;
    let weight = b.select(ok, weight, zero)?;
    let clamped = b.binary(BinaryKind::Max, i, zero)?;
    let clamped = b.binary(BinaryKind::Min, clamped, last)?;
    let index: Built = b.cast(clamped, &Type::i64());
    Ok((index?, weight))
}
