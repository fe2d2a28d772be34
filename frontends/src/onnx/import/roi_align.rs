//! `RoiAlign` built of `nn` ops as the ONNX reference computes it
//! (`op_roi_align.py`): each region of interest `[x1, y1, x2, y2]` (scaled
//! by `spatial_scale`, shifted by half a pixel in `half_pixel` mode) is cut
//! into `output_height × output_width` bins, each bin sampled on a
//! `sampling_ratio²` grid, each sample read bilinearly (clamped at the
//! border, zero when more than a pixel outside), and the samples of a bin
//! averaged (`avg`) or their largest weighted corner kept (`max`).
//!
//! The regions are run-time data: the sample coordinates are computed as
//! tensors `[R, bins·grid]` per axis, the four corners become flat indices
//! and weights, and one `nn.gather_elements` per corner reads them from the
//! region's image (picked by `batch_indices` with an `nn.gather`). The
//! grid must be given (`sampling_ratio > 0`): the adaptive grid's size
//! depends on the regions' values, which a static graph cannot follow.

use ipuc_dialects::nn::{
    BinaryKind, CompareKind, GatherElementsOp, GatherOp, ReduceKind, UnaryKind,
};
use ipuc_ir::{Type, Value};

use super::body::{Body, Built};
use super::{ImportError, Importer, NodeResult};
use crate::onnx::Node;

/// The ops of this family.
pub(super) const OPS: &[&str] = &["RoiAlign"];

/// One axis of the samples: the two neighbours' indices, their weights
/// (already zero for samples outside), each `[R, samples]`.
struct Axis {
    low: Value,
    high: Value,
    low_weight: Value,
    high_weight: Value,
}

pub(super) fn import(imp: &mut Importer<'_>, node: &Node) -> NodeResult {
    let mut b = Body::new(imp, node);
    let (x, rois, batch) = (b.input(0)?, b.input(1)?, b.input(2)?);
    let (xs, rs) = (b.shape(x), b.shape(rois));
    if xs.len() != 4 || rs.len() != 2 || rs[1] != 4 || b.shape(batch) != [rs[0]] {
        return Err(b.error(format!(
            "needs X [N, C, H, W], rois [R, 4] and batch_indices [R], but has {xs:?}, {rs:?} \
             and {:?}",
            b.shape(batch)
        )));
    }
    let elem = b.element(x)?;
    if !elem.is_float() || b.element(rois)? != elem {
        return Err(b.error("X and rois must have the same floating-point type"));
    }
    let mode = node.string_attr("mode", "avg")?.to_string();
    let max = match mode.as_str() {
        "avg" => false,
        "max" => true,
        other => return Err(b.error(format!("`mode` \"{other}\" must be avg or max"))),
    };
    let half_pixel = match node.string_attr("coordinate_transformation_mode", "half_pixel")? {
        "half_pixel" => true,
        "output_half_pixel" => false,
        other => {
            return Err(b.error(format!(
                "`coordinate_transformation_mode` \"{other}\" must be half_pixel or \
                 output_half_pixel"
            )))
        }
    };
    let (bins_h, bins_w) = (
        node.int_attr("output_height", 1)?,
        node.int_attr("output_width", 1)?,
    );
    let grid = node.int_attr("sampling_ratio", 0)?;
    if bins_h < 1 || bins_w < 1 || grid < 1 {
        return Err(b.error(format!(
            "needs positive output sizes ({bins_h} x {bins_w}) and sampling_ratio ({grid}); \
             the adaptive grid (sampling_ratio 0) depends on the regions' values, which ipuc's \
             static graphs cannot follow"
        )));
    }
    let scale = f64::from(node.float_attr("spatial_scale", 1.0)?);
    let (n_rois, channels, height, width) = (rs[0], xs[1], xs[2], xs[3]);
    let shift = if half_pixel { 0.5 } else { 0.0 };
    let coordinate = |b: &mut Body<'_, '_, '_>, k: i64| -> Built {
        let c = b.slice(rois, 1, k, k + 1)?;
        let s = b.scalar_like(c, scale)?;
        let c = b.binary(BinaryKind::Mul, c, s)?;
        let o = b.scalar_like(c, shift)?;
        b.binary(BinaryKind::Sub, c, o)
    };
    let (start_w, start_h) = (coordinate(&mut b, 0)?, coordinate(&mut b, 1)?);
    let (end_w, end_h) = (coordinate(&mut b, 2)?, coordinate(&mut b, 3)?);
    let y = sample_axis(&mut b, start_h, end_h, bins_h, grid, height, half_pixel)?;
    let xa = sample_axis(&mut b, start_w, end_w, bins_w, grid, width, half_pixel)?;

    // Each region's image, flat: [R, C, H*W].
    let images = {
        let state = GatherOp::build(b.imp.ctx, x, batch, 0, Importer::loc(node));
        let picked = b.imp.emit1(node, state)?;
        b.reshape(picked, &[n_rois, channels, height * width])?
    };
    let (sy, sx) = (bins_h * grid, bins_w * grid);
    let samples = sy * sx;
    let w_const = b.constant(&[], &Type::i64(), &[width as f64])?;
    let mut corners = Vec::with_capacity(4);
    for (row, row_weight) in [(y.low, y.low_weight), (y.high, y.high_weight)] {
        for (col, col_weight) in [(xa.low, xa.low_weight), (xa.high, xa.high_weight)] {
            // [R, sy, 1] * W + [R, 1, sx] -> [R, sy, sx] -> [R, 1, S] -> [R, C, S]
            let r = b.unsqueeze(row, &[2])?;
            let r = b.binary(BinaryKind::Mul, r, w_const)?;
            let c = b.unsqueeze(col, &[1])?;
            let flat = b.binary(BinaryKind::Add, r, c)?;
            let flat = b.reshape(flat, &[n_rois, 1, samples])?;
            let flat = b.expand(flat, &[n_rois, channels, samples])?;
            let state = GatherElementsOp::build(b.imp.ctx, images, flat, 2, Importer::loc(node));
            let value = b.imp.emit1(node, state)?;
            let rw = b.unsqueeze(row_weight, &[2])?;
            let cw = b.unsqueeze(col_weight, &[1])?;
            let weight = b.binary(BinaryKind::Mul, rw, cw)?;
            let weight = b.reshape(weight, &[n_rois, 1, samples])?;
            corners.push(b.binary(BinaryKind::Mul, value, weight)?);
        }
    }
    let combine = if max {
        BinaryKind::Max
    } else {
        BinaryKind::Add
    };
    let mut value = corners[0];
    for &c in &corners[1..] {
        value = b.binary(combine, value, c)?;
    }
    let value = b.reshape(value, &[n_rois, channels, bins_h, grid, bins_w, grid])?;
    let kind = if max {
        ReduceKind::Max
    } else {
        ReduceKind::Mean
    };
    b.reduce(kind, value, Some(&[3, 5]), false).map(|v| vec![v])
}

/// The samples along one axis for every region: `bins · grid` coordinates
/// `start + (bin + (i + 0.5) / grid) · size / bins`, each with its two
/// neighbours among `extent` pixels and their bilinear weights.
fn sample_axis(
    b: &mut Body<'_, '_, '_>,
    start: Value,
    end: Value,
    bins: i64,
    grid: i64,
    extent: i64,
    half_pixel: bool,
) -> Result<Axis, ImportError> {
    let mut size = b.binary(BinaryKind::Sub, end, start)?;
    if !half_pixel {
        let one = b.scalar_like(size, 1.0)?;
        size = b.binary(BinaryKind::Max, size, one)?;
    }
    let bins_c = b.scalar_like(size, bins as f64)?;
    let bin = b.binary(BinaryKind::Div, size, bins_c)?;
    let elem = b.element(start)?;
    let fractions: Vec<f64> = (0..bins)
        .flat_map(|k| (0..grid).map(move |i| k as f64 + (i as f64 + 0.5) / grid as f64))
        .collect();
    let fractions = b.constant(&[1, bins * grid], &elem, &fractions)?;
    let offset = b.binary(BinaryKind::Mul, fractions, bin)?;
    let at = b.binary(BinaryKind::Add, start, offset)?;
    // Samples more than a pixel outside read zero.
    let (below, above) = (b.scalar_like(at, -1.0)?, b.scalar_like(at, extent as f64)?);
    let low_ok = b.compare(CompareKind::GreaterEqual, at, below)?;
    let high_ok = b.compare(CompareKind::LessEqual, at, above)?;
    let inside = b.binary(BinaryKind::And, low_ok, high_ok)?;
    let zero = b.scalar_like(at, 0.0)?;
    let clamped = b.binary(BinaryKind::Max, at, zero)?;
    let floor = b.unary(UnaryKind::Floor, clamped)?;
    let last = b.scalar_like(at, (extent - 1) as f64)?;
    let edge = b.compare(CompareKind::GreaterEqual, floor, last)?;
    let low = b.select(edge, last, floor)?;
    let one = b.scalar_like(at, 1.0)?;
    let next = b.binary(BinaryKind::Add, low, one)?;
    let high = b.select(edge, last, next)?;
    let frac = b.binary(BinaryKind::Sub, clamped, low)?;
    let frac = b.select(edge, zero, frac)?;
    let rest = b.binary(BinaryKind::Sub, one, frac)?;
    let high_weight = b.select(inside, frac, zero)?;
    let low_weight = b.select(inside, rest, zero)?;
    let i64 = Type::i64();
    let low = b.cast(low, &i64)?;
    let high = b.cast(high, &i64)?;
    Ok(Axis {
        low,
        high,
        low_weight,
        high_weight,
    })
}
