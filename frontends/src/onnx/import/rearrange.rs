//! Ops that only move elements, built of `nn` shape ops at import:
//! `SpaceToDepth` and `DepthToSpace` (a reshape, a transpose and a
//! reshape, as their ONNX definitions are written), `CenterCropPad` (a slice
//! or a pad per axis, as its function body), and `Pad` in the `edge`,
//! `reflect` and `wrap` modes (one constant-index gather per padded axis:
//! the padded position `j` of an axis reads the source position the mode
//! maps `j` to). `ReverseSequence` and `TensorScatter`, whose lengths and
//! write positions are bound as constants, are one `nn.gather_elements`
//! each with a constant index map (`TensorScatter` over the cache
//! concatenated with the update).

use ipuc_ir::Value;

use super::body::{Body, Built};
use super::{ImportError, Importer, NodeResult};
use crate::onnx::Node;

/// The ops of this family (`Pad` is imported by `shape.rs`, which hands the
/// non-constant modes to [`pad_by_gather`]).
pub(super) const OPS: &[&str] = &[
    "SpaceToDepth",
    "DepthToSpace",
    "CenterCropPad",
    "ReverseSequence",
    "TensorScatter",
];

pub(super) fn import(imp: &mut Importer<'_>, node: &Node) -> NodeResult {
    let mut b = Body::new(imp, node);
    match node.op_type.as_str() {
        "SpaceToDepth" => space_to_depth(&mut b),
        "DepthToSpace" => depth_to_space(&mut b),
        "CenterCropPad" => center_crop_pad(&mut b),
        "ReverseSequence" => reverse_sequence(&mut b),
        "TensorScatter" => tensor_scatter(&mut b),
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

/// One `nn.gather_elements` of `x` along `axis` by the constant `map`
/// (shaped as the result).
fn gather_map(
    b: &mut Body<'_, '_, '_>,
    x: Value,
    axis: usize,
    shape: &[i64],
    map: &[i64],
) -> Built {
    let values: Vec<f64> = map.iter().map(|&i| i as f64).collect();
    let indices = b.constant(shape, &ipuc_ir::Type::i64(), &values)?;
    let state = ipuc_dialects::nn::GatherElementsOp::build(
        b.imp.ctx,
        x,
        indices,
        axis as i64,
        Importer::loc(b.node),
    );
    b.imp.emit1(b.node, state)
}

/// The coordinates of flat position `flat` in `shape`.
fn unravel(mut flat: i64, shape: &[i64]) -> Vec<i64> {
    let mut coords = vec![0; shape.len()];
    for k in (0..shape.len()).rev() {
        coords[k] = flat % shape[k];
        flat /= shape[k];
    }
    coords
}

/// `ReverseSequence`: the first `sequence_lens[b]` steps of each batch
/// element reversed along the time axis.
fn reverse_sequence(b: &mut Body<'_, '_, '_>) -> Built {
    let x = b.input(0)?;
    let lens = b.imp.const_ints(b.node, 1, "sequence lengths")?;
    let shape = b.shape(x);
    let rank = shape.len();
    let batch = ipuc_dialects::nn::normalize_axis(b.node.int_attr("batch_axis", 1)?, rank)
        .map_err(|m| b.error(m))?;
    let time = ipuc_dialects::nn::normalize_axis(b.node.int_attr("time_axis", 0)?, rank)
        .map_err(|m| b.error(m))?;
    if lens.len() as i64 != shape[batch] || lens.iter().any(|&l| l < 0 || l > shape[time]) {
        return Err(b.error(format!(
            "sequence lengths {lens:?} do not fit batch size {} and time size {}",
            shape[batch], shape[time]
        )));
    }
    let count: i64 = shape.iter().product();
    let map: Vec<i64> = (0..count)
        .map(|flat| {
            let c = unravel(flat, &shape);
            let (t, len) = (c[time], lens[c[batch] as usize]);
            if t < len {
                len - 1 - t
            } else {
                t
            }
        })
        .collect();
    gather_map(b, x, time, &shape, &map)
}

/// `TensorScatter(past_cache, update, write_indices)`: each batch row of the
/// cache with the update written from its write index along `axis`
/// (wrapping around in `circular` mode).
fn tensor_scatter(b: &mut Body<'_, '_, '_>) -> Built {
    let (cache, update) = (b.input(0)?, b.input(1)?);
    let (cs, us) = (b.shape(cache), b.shape(update));
    let rank = cs.len();
    let axis = ipuc_dialects::nn::normalize_axis(b.node.int_attr("axis", -2)?, rank)
        .map_err(|m| b.error(m))?;
    if axis == 0 || us.len() != rank || (0..rank).any(|d| d != axis && us[d] != cs[d]) {
        return Err(b.error(format!(
            "update {us:?} does not fit the cache {cs:?} along axis {axis}"
        )));
    }
    let writes = match b.imp.optional_const_ints(b.node, 2, "write indices")? {
        Some(w) => w,
        None => vec![0; cs[0] as usize],
    };
    let circular = match b.node.string_attr("mode", "linear")? {
        "linear" => false,
        "circular" => true,
        other => return Err(b.error(format!("`mode` \"{other}\" is not linear or circular"))),
    };
    let (max, len) = (cs[axis], us[axis]);
    if writes.len() as i64 != cs[0] || (!circular && writes.iter().any(|&w| w < 0 || w + len > max))
    {
        return Err(b.error(format!(
            "write indices {writes:?} do not fit {} rows of {max} positions",
            cs[0]
        )));
    }
    let joined = b.concat(&[cache, update], axis as i64)?;
    let count: i64 = cs.iter().product();
    let map: Vec<i64> = (0..count)
        .map(|flat| {
            let c = unravel(flat, &cs);
            let (s, w) = (c[axis], writes[c[0] as usize]);
            let offset = if circular {
                (s - w).rem_euclid(max)
            } else {
                s - w
            };
            if (0..len).contains(&offset) {
                max + offset
            } else {
                s
            }
        })
        .collect();
    gather_map(b, joined, axis, &cs, &map)
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
