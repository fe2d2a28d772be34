//! `Col2Im` built of `nn` ops: the adjoint of im2col. The column input
//! `[N, C·∏block, L]` holds, for each offset `o` inside the block, one
//! value per sliding-block position (`L = ∏ blocks`); the values of offset
//! `o` land on the padded image at `o·dilation + position·stride`. So each
//! offset's slice is spread by the strides (zeros between), padded into
//! place, and the slices are summed; the image is the padded one without
//! its pads. Any number of spatial axes.

use ipuc_dialects::nn::BinaryKind;
use ipuc_ir::Value;

use super::body::Body;
use super::window::{explicit_pads, per_axis};
use super::{error, ImportError, Importer, NodeResult};
use crate::onnx::Node;

/// The ops of this family.
pub(super) const OPS: &[&str] = &["Col2Im"];

pub(super) fn import(imp: &mut Importer<'_>, node: &Node) -> NodeResult {
    let x = imp.input(node, 0)?;
    let image = imp.const_ints(node, 1, "image shape")?;
    let block = imp.const_ints(node, 2, "block shape")?;
    let n = image.len();
    let shape = imp.shape(x);
    if n == 0 || block.len() != n || shape.len() != 3 {
        return Err(error(
            node,
            format!(
                "needs an input [N, C*prod(block), L] and as many block as image sizes, but has \
                 input {shape:?}, image shape {image:?} and block shape {block:?}"
            ),
        ));
    }
    let strides = per_axis(node, "strides", n)?;
    let dilations = per_axis(node, "dilations", n)?;
    let pads = explicit_pads(node, n)?;
    let positive = |v: &[i64]| v.iter().all(|&x| x >= 1);
    if !positive(&image) || !positive(&block) || !positive(&strides) || !positive(&dilations) {
        return Err(error(
            node,
            format!(
                "image {image:?}, block {block:?}, strides {strides:?} and dilations \
                 {dilations:?} must be positive"
            ),
        ));
    }
    let padded: Vec<i64> = (0..n).map(|d| image[d] + pads[d] + pads[n + d]).collect();
    let blocks: Vec<i64> = (0..n)
        .map(|d| (padded[d] - dilations[d] * (block[d] - 1) - 1).div_euclid(strides[d]) + 1)
        .collect();
    let offsets: i64 = block.iter().product();
    let (batch, planes, length) = (shape[0], shape[1], shape[2]);
    if blocks.iter().any(|&b| b < 1)
        || length != blocks.iter().product::<i64>()
        || planes % offsets != 0
    {
        return Err(error(
            node,
            format!(
                "the input {shape:?} does not hold C*{offsets} planes of the {blocks:?} sliding \
                 blocks that image {image:?}, block {block:?}, pads {pads:?}, strides \
                 {strides:?} and dilations {dilations:?} give"
            ),
        ));
    }
    let channels = planes / offsets;
    let mut b = Body::new(imp, node);
    let mut split = vec![batch, channels, offsets];
    split.extend(&blocks);
    let x = b.reshape(x, &split)?;
    let mut per_offset = vec![batch, channels];
    per_offset.extend(&blocks);
    let mut sum: Option<Value> = None;
    for k in 0..offsets {
        let part = b.slice(x, 2, k, k + 1)?;
        let mut part = b.reshape(part, &per_offset)?;
        // The offset's position in the block, row-major.
        let mut rest = k;
        let mut offset = vec![0; n];
        for d in (0..n).rev() {
            offset[d] = rest % block[d];
            rest /= block[d];
        }
        let mut place = vec![0; 2 * (n + 2)];
        for d in 0..n {
            part = spread(&mut b, part, 2 + d, blocks[d], strides[d])?;
            let before = offset[d] * dilations[d];
            place[2 + d] = before;
            place[n + 4 + d] = padded[d] - before - ((blocks[d] - 1) * strides[d] + 1);
        }
        let placed = b.pad(part, &place, 0.0)?;
        sum = Some(match sum {
            None => placed,
            Some(s) => b.binary(BinaryKind::Add, s, placed)?,
        });
    }
    let mut y = sum.expect("a block has at least one offset");
    for d in 0..n {
        if pads[d] != 0 || pads[n + d] != 0 {
            y = b.slice(y, 2 + d as i64, pads[d], pads[d] + image[d])?;
        }
    }
    Ok(vec![y])
}

/// `x` with `stride - 1` zeros between neighbours along `axis` (of
/// `len` elements): `(len - 1)·stride + 1` elements.
fn spread(
    b: &mut Body<'_, '_, '_>,
    x: Value,
    axis: usize,
    len: i64,
    stride: i64,
) -> Result<Value, ImportError> {
    if stride == 1 {
        return Ok(x);
    }
    let mut shape = b.shape(x);
    let rank = shape.len() + 1;
    let lifted = b.unsqueeze(x, &[axis as i64 + 1])?;
    let mut pads = vec![0; 2 * rank];
    pads[rank + axis + 1] = stride - 1;
    let gapped = b.pad(lifted, &pads, 0.0)?;
    shape[axis] = len * stride;
    let merged = b.reshape(gapped, &shape)?;
    b.slice(merged, axis as i64, 0, (len - 1) * stride + 1)
}
