//! Ops that only move elements, built of `nn` shape ops at import:
//! `SpaceToDepth` and `DepthToSpace` (a reshape, a transpose and a
//! reshape, as their ONNX definitions are written), `CenterCropPad` (a slice
//! or a pad per axis, as its function body), and `Pad` in the `edge`,
//! `reflect` and `wrap` modes (one constant-index gather per padded axis:
//! the padded position `j` of an axis reads the source position the mode
//! maps `j` to).

use ipuc_ir::Value;

use super::body::Body;
use super::{ImportError, Importer, NodeResult};
use crate::onnx::Node;

/// The ops of this family (`Pad` is imported by `shape.rs`, which hands the
/// non-constant modes to [`pad_by_gather`]).
pub(super) const OPS: &[&str] = &["SpaceToDepth", "DepthToSpace", "CenterCropPad"];

type Built = Result<Value, ImportError>;

pub(super) fn import(imp: &mut Importer<'_>, node: &Node) -> NodeResult {
    let mut b = Body::new(imp, node);
    match node.op_type.as_str() {
        "SpaceToDepth" => space_to_depth(&mut b),
        "DepthToSpace" => depth_to_space(&mut b),
        "CenterCropPad" => center_crop_pad(&mut b),
        other => unreachable!("`{other}` is not a rearrangement op"),
    }
    .map(|v| vec![v])
}

/// `[N, C, H, W]` and the block size, checked.
fn blocked_nchw(b: &Body<'_, '_, '_>, x: Value) -> Result<([i64; 4], i64), ImportError> {
    let shape = b.shape(x);
    let [n, c, h, w] = shape[..] else {
        return Err(b.error(format!(
            "input must be of rank 4 [N, C, H, W], but has shape {shape:?}"
        )));
    };
    let bs = b.node.int_attr("blocksize", 0)?;
    if bs < 1 {
        return Err(b.error(format!("`blocksize` must be positive, but is {bs}")));
    }
    Ok(([n, c, h, w], bs))
}

/// The `mode` attribute: `true` for `CRD` (column-row-depth), `false` for
/// the default `DCR`.
fn crd_mode(b: &Body<'_, '_, '_>) -> Result<bool, ImportError> {
    match b.node.string_attr("mode", "DCR")? {
        "DCR" => Ok(false),
        "CRD" => Ok(true),
        other => Err(b.error(format!(
            "`mode` must be \"DCR\" or \"CRD\", but is \"{other}\""
        ))),
    }
}

fn space_to_depth(b: &mut Body<'_, '_, '_>) -> Built {
    let x = b.input(0)?;
    let ([n, c, h, w], bs) = blocked_nchw(b, x)?;
    if h % bs != 0 || w % bs != 0 {
        return Err(b.error(format!(
            "height {h} and width {w} must be multiples of `blocksize` {bs}"
        )));
    }
    let blocks = b.reshape(x, &[n, c, h / bs, bs, w / bs, bs])?;
    let perm: &[i64] = if crd_mode(b)? {
        &[0, 1, 3, 5, 2, 4]
    } else {
        &[0, 3, 5, 1, 2, 4]
    };
    let moved = b.transpose(blocks, perm)?;
    b.reshape(moved, &[n, c * bs * bs, h / bs, w / bs])
}

fn depth_to_space(b: &mut Body<'_, '_, '_>) -> Built {
    let x = b.input(0)?;
    let ([n, c, h, w], bs) = blocked_nchw(b, x)?;
    if c % (bs * bs) != 0 {
        return Err(b.error(format!(
            "channels {c} must be a multiple of `blocksize`² = {}",
            bs * bs
        )));
    }
    let depth = c / (bs * bs);
    let moved = if crd_mode(b)? {
        let blocks = b.reshape(x, &[n, depth, bs, bs, h, w])?;
        b.transpose(blocks, &[0, 1, 4, 2, 5, 3])?
    } else {
        let blocks = b.reshape(x, &[n, bs, bs, depth, h, w])?;
        b.transpose(blocks, &[0, 3, 4, 1, 5, 2])?
    };
    b.reshape(moved, &[n, depth, h * bs, w * bs])
}

/// `CenterCropPad`: each listed axis is cropped or zero-padded to its target
/// size around the centre (the extra element of an odd difference goes to
/// the end, as the ONNX reference does).
fn center_crop_pad(b: &mut Body<'_, '_, '_>) -> Built {
    let mut x = b.input(0)?;
    let sizes = b.imp.const_ints(b.node, 1, "target shape")?;
    let rank = b.shape(x).len() as i64;
    let axes: Vec<i64> = match b.node.ints_attr("axes")? {
        Some(a) => a.to_vec(),
        None => (0..rank).collect(),
    };
    if axes.len() != sizes.len() {
        return Err(b.error(format!(
            "`shape` has {} entries for {} axes",
            sizes.len(),
            axes.len()
        )));
    }
    for (&axis, &size) in axes.iter().zip(&sizes) {
        let a = ipuc_dialects::nn::normalize_axis(axis, rank as usize).map_err(|m| b.error(m))?;
        let dim = b.shape(x)[a];
        if size < 0 {
            return Err(b.error(format!("target size {size} of axis {axis} is negative")));
        }
        if dim > size {
            let start = (dim - size) / 2;
            x = b.slice(x, a as i64, start, start + size)?;
        } else if dim < size {
            let mut pads = vec![0; 2 * rank as usize];
            pads[a] = (size - dim) / 2;
            pads[a + rank as usize] = size - dim - pads[a];
            x = b.pad(x, &pads, 0.0)?;
        }
    }
    Ok(x)
}

/// `Pad` in mode `edge`, `reflect` or `wrap` (`pads`: `[begins..., ends...]`,
/// negative entries crop): one gather per changed axis.
pub(super) fn pad_by_gather(
    imp: &mut Importer<'_>,
    node: &Node,
    x: Value,
    mode: &str,
    pads: &[i64],
) -> NodeResult {
    let mut b = Body::new(imp, node);
    let rank = b.shape(x).len();
    if pads.len() != 2 * rank {
        return Err(b.error(format!("`pads` has {} entries for rank {rank}", pads.len())));
    }
    let mut v = x;
    for axis in 0..rank {
        let (begin, end) = (pads[axis], pads[axis + rank]);
        if begin == 0 && end == 0 {
            continue;
        }
        let len = b.shape(v)[axis];
        let count = len + begin + end;
        if count < 0 {
            return Err(b.error(format!(
                "pads {begin} and {end} leave a negative size on axis {axis} of size {len}"
            )));
        }
        if len == 0 && count > 0 {
            return Err(b.error(format!("cannot {mode}-pad the empty axis {axis}")));
        }
        let indices = (0..count)
            .map(|k| source_index(mode, k - begin, len))
            .collect::<Option<Vec<i64>>>()
            .ok_or_else(|| {
                b.error(format!(
                    "mode \"{mode}\" is not supported (\"constant\", \"edge\", \"reflect\" or \"wrap\")"
                ))
            })?;
        v = b.gather(v, axis as i64, &indices)?;
    }
    Ok(vec![v])
}

/// The source position that padded position `j` (relative to the first
/// source element) of an axis of `len` elements reads in `mode`.
fn source_index(mode: &str, j: i64, len: i64) -> Option<i64> {
    Some(match mode {
        "edge" => j.clamp(0, len - 1),
        "wrap" => j.rem_euclid(len),
        // Mirror without repeating the edge: period 2 (len - 1).
        "reflect" if len == 1 => 0,
        "reflect" => {
            let period = 2 * (len - 1);
            let r = j.rem_euclid(period);
            if r >= len {
                period - r
            } else {
                r
            }
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::source_index;

    #[test]
    fn padded_positions_map_as_numpy_pad_modes() {
        // numpy.pad([0, 1, 2], 3, mode) read as source positions.
        let map =
            |mode| -> Vec<i64> { (-3..6).map(|j| source_index(mode, j, 3).unwrap()).collect() };
        assert_eq!(map("edge"), [0, 0, 0, 0, 1, 2, 2, 2, 2]);
        assert_eq!(map("wrap"), [0, 1, 2, 0, 1, 2, 0, 1, 2]);
        assert_eq!(map("reflect"), [1, 2, 1, 0, 1, 2, 1, 0, 1]);
        assert_eq!(source_index("reflect", 5, 1), Some(0));
        assert_eq!(source_index("mirror", 0, 3), None);
    }
}
