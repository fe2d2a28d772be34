//! `Resize` (and the older `Upsample`), built of `nn` ops at import.
//!
//! ONNX's interpolation is separable: the output along one axis is a fixed
//! linear combination of the input along that axis, and the N-d result is
//! those 1-d maps applied axis after axis (the ONNX reference recurses over
//! the axes in exactly this way). With static shapes each map is a constant,
//! computed here from the reference's formulas (`onnx/reference/ops/op_resize.py`:
//! coordinate transformation, neighbour choice on the edge-padded input,
//! nearest/linear/cubic coefficients with antialiasing and
//! `exclude_outside`), so an axis becomes
//!
//! - `nearest`: one gather of the chosen source positions (exact), or
//! - `linear`/`cubic`: one `nn.matmul` by the `[in, out]` weight matrix
//!   (the axis moved last and back by transposes when it is not one of the
//!   last two),
//!
//! and `tf_crop_and_resize` positions outside the input take
//! `extrapolation_value` through an `nn.where`.

use ipuc_dialects::nn::elements::{dense_data, floats};
use ipuc_dialects::nn::normalize_axis;
use ipuc_ir::{Type, Value};

use super::body::{Body, Built};
use super::{ImportError, Importer, NodeResult};
use crate::onnx::Node;

/// The ops of this family.
pub(super) const OPS: &[&str] = &["Resize", "Upsample"];

/// How output coordinates map to input coordinates.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Transform {
    HalfPixel,
    HalfPixelSymmetric,
    PytorchHalfPixel,
    AlignCorners,
    Asymmetric,
    TfCropAndResize,
}

/// The interpolation and its parameters.
#[derive(Copy, Clone, Debug, PartialEq)]
enum Mode {
    /// `nearest_mode`: 0 round_prefer_floor, 1 round_prefer_ceil, 2 floor, 3 ceil.
    Nearest(u8),
    Linear {
        antialias: bool,
    },
    Cubic {
        antialias: bool,
        a: f64,
    },
}

/// Everything one axis's map depends on besides its sizes.
#[derive(Copy, Clone, Debug)]
struct AxisSpec {
    mode: Mode,
    transform: Transform,
    exclude_outside: bool,
    /// `[start, end]` of the region of interest (`tf_crop_and_resize`).
    roi: (f64, f64),
}

/// One axis's map: for each output position, `(source, weight)` pairs, or
/// `None` where the position takes the extrapolation value.
type AxisMap = Vec<Option<Vec<(usize, f64)>>>;

pub(super) fn import(imp: &mut Importer<'_>, node: &Node) -> NodeResult {
    let mut b = Body::new(imp, node);
    resize(&mut b).map(|v| vec![v])
}

/// Optional input `i` read as constant floats (`None`: absent or empty).
fn const_floats(
    b: &mut Body<'_, '_, '_>,
    i: usize,
    what: &str,
) -> Result<Option<Vec<f64>>, ImportError> {
    let Some(v) = b.optional_input(i)? else {
        return Ok(None);
    };
    let values = b
        .imp
        .constant_of(v)
        .as_ref()
        .and_then(dense_data)
        .and_then(|d| floats(&d))
        .ok_or_else(|| {
            b.error(format!(
                "input #{i} (the {what}) must be a constant at import; ipuc needs static shapes"
            ))
        })?;
    Ok((!values.is_empty()).then_some(values))
}

fn resize(b: &mut Body<'_, '_, '_>) -> Built {
    let x = b.input(0)?;
    let shape = b.shape(x);
    let rank = shape.len();
    let upsample = b.node.op_type == "Upsample";
    // Opset 10 Resize and Upsample take (X, scales); later Resize (X, roi, scales, sizes).
    let legacy = upsample || b.imp.opset < 11;
    let (roi, scales, sizes) = if legacy {
        let scales = match b.node.floats_attr("scales")? {
            Some(s) => Some(s.iter().map(|&v| f64::from(v)).collect()),
            None => const_floats(b, 1, "scales")?,
        };
        (None, scales, None)
    } else {
        let roi = const_floats(b, 1, "region of interest")?;
        let scales = const_floats(b, 2, "scales")?;
        let sizes = b.imp.optional_const_ints(b.node, 3, "sizes")?;
        (roi, scales, sizes.filter(|s| !s.is_empty()))
    };
    let axes: Vec<usize> = match b.node.ints_attr("axes")? {
        Some(a) => a
            .iter()
            .map(|&a| normalize_axis(a, rank).map_err(|m| b.error(m)))
            .collect::<Result<_, _>>()?,
        None => (0..rank).collect(),
    };
    let (scale, out) = output_geometry(b, &shape, &axes, scales, sizes)?;
    let mut roi_full: Vec<(f64, f64)> = vec![(0.0, 1.0); rank];
    if let Some(r) = &roi {
        if r.len() != 2 * axes.len() {
            return Err(b.error(format!(
                "the region of interest has {} values for {} axes",
                r.len(),
                axes.len()
            )));
        }
        for (k, &a) in axes.iter().enumerate() {
            roi_full[a] = (r[k], r[k + axes.len()]);
        }
    }
    let spec = |a: usize| -> Result<AxisSpec, ImportError> {
        Ok(AxisSpec {
            mode: mode(b.node, legacy)?,
            transform: transform(b.node, legacy)?,
            exclude_outside: b.node.int_attr("exclude_outside", 0)? != 0,
            roi: roi_full[a],
        })
    };
    let specs: Vec<AxisSpec> = (0..rank).map(spec).collect::<Result<_, _>>()?;
    let extrapolation = f64::from(b.node.float_attr("extrapolation_value", 0.0)?);
    let mut v = x;
    for a in 0..rank {
        let map = axis_map(&specs[a], shape[a], out[a], scale[a]);
        if is_identity(&map, shape[a]) {
            continue;
        }
        v = apply_axis(b, v, a, &map, shape[a], specs[a].mode, extrapolation)?;
    }
    Ok(v)
}

/// The per-axis scale factors and output sizes, as the reference derives
/// them from `scales` or `sizes` (with `keep_aspect_ratio_policy`).
fn output_geometry(
    b: &Body<'_, '_, '_>,
    shape: &[i64],
    axes: &[usize],
    scales: Option<Vec<f64>>,
    sizes: Option<Vec<i64>>,
) -> Result<(Vec<f64>, Vec<i64>), ImportError> {
    let rank = shape.len();
    let mut scale = vec![1.0; rank];
    let mut out = shape.to_vec();
    match (scales, sizes) {
        (_, Some(sizes)) => {
            if sizes.len() != axes.len() {
                return Err(b.error(format!("{} sizes for {} axes", sizes.len(), axes.len())));
            }
            for (k, &a) in axes.iter().enumerate() {
                out[a] = sizes[k];
                scale[a] = sizes[k] as f64 / shape[a] as f64;
            }
            let policy = b.node.string_attr("keep_aspect_ratio_policy", "stretch")?;
            if policy != "stretch" {
                let chosen = axes.iter().map(|&a| scale[a]);
                let s = match policy {
                    "not_larger" => chosen.fold(f64::INFINITY, f64::min),
                    "not_smaller" => chosen.fold(f64::NEG_INFINITY, f64::max),
                    other => {
                        return Err(b.error(format!(
                            "`keep_aspect_ratio_policy` \"{other}\" is not one of stretch, not_larger, not_smaller"
                        )))
                    }
                };
                for &a in axes {
                    scale[a] = s;
                    // Round half up, as the reference.
                    out[a] = (s * shape[a] as f64 + 0.5) as i64;
                }
            }
        }
        (Some(scales), None) => {
            if scales.len() != axes.len() {
                return Err(b.error(format!("{} scales for {} axes", scales.len(), axes.len())));
            }
            for (k, &a) in axes.iter().enumerate() {
                if scales[k] <= 0.0 {
                    return Err(b.error(format!("scale {} must be positive", scales[k])));
                }
                scale[a] = scales[k];
                out[a] = (scales[k] * shape[a] as f64) as i64;
            }
        }
        (None, None) => return Err(b.error("needs `scales` or `sizes`")),
    }
    Ok((scale, out))
}

fn mode(node: &Node, legacy: bool) -> Result<Mode, ImportError> {
    let antialias = node.int_attr("antialias", 0)? != 0;
    Ok(match node.string_attr("mode", "nearest")? {
        // Opset 10 Resize and Upsample take the floor of the asymmetric
        // coordinate (the reference repeats each element `scale` times).
        "nearest" => Mode::Nearest(if legacy {
            2
        } else {
            match node.string_attr("nearest_mode", "round_prefer_floor")? {
                "round_prefer_floor" => 0,
                "round_prefer_ceil" => 1,
                "floor" => 2,
                "ceil" => 3,
                other => {
                    return Err(super::error(
                        node,
                        format!("`nearest_mode` \"{other}\" is not supported"),
                    ))
                }
            }
        }),
        "linear" | "bilinear" => Mode::Linear { antialias },
        "cubic" => Mode::Cubic {
            antialias,
            a: f64::from(node.float_attr("cubic_coeff_a", -0.75)?),
        },
        other => {
            return Err(super::error(
                node,
                format!("`mode` \"{other}\" is not nearest, linear or cubic"),
            ))
        }
    })
}

fn transform(node: &Node, legacy: bool) -> Result<Transform, ImportError> {
    if legacy {
        return Ok(Transform::Asymmetric);
    }
    Ok(
        match node.string_attr("coordinate_transformation_mode", "half_pixel")? {
            "half_pixel" => Transform::HalfPixel,
            "half_pixel_symmetric" => Transform::HalfPixelSymmetric,
            "pytorch_half_pixel" => Transform::PytorchHalfPixel,
            "align_corners" => Transform::AlignCorners,
            "asymmetric" => Transform::Asymmetric,
            "tf_crop_and_resize" => Transform::TfCropAndResize,
            other => {
                return Err(super::error(
                    node,
                    format!("`coordinate_transformation_mode` \"{other}\" is not supported"),
                ))
            }
        },
    )
}

/// The interpolation weights of `ratio` (the distance past the left
/// neighbour, in (0, 1]) at `scale`, over consecutive neighbours.
fn coefficients(mode: Mode, ratio: f64, scale: f64) -> Vec<f64> {
    match mode {
        Mode::Nearest(rounding) => {
            if ratio == ratio.trunc() {
                return vec![0.0, 1.0];
            }
            let right = match rounding {
                0 => ratio > 0.5,
                1 => ratio >= 0.5,
                2 => false,
                _ => true,
            };
            vec![f64::from(u8::from(!right)), f64::from(u8::from(right))]
        }
        Mode::Linear { antialias: false } => vec![1.0 - ratio, ratio],
        Mode::Linear { antialias: true } => {
            let scale = scale.min(1.0);
            let start = (-1.0 / scale).floor() as i64 + 1;
            let footprint = 2 - 2 * start;
            let c: Vec<f64> = (start..start + footprint)
                .map(|i| (1.0 - ((i as f64 - ratio) * scale).abs()).clamp(0.0, 1.0))
                .collect();
            normalized(c)
        }
        Mode::Cubic {
            antialias: false,
            a,
        } => {
            let (r, s) = (ratio + 1.0, 2.0 - ratio);
            vec![
                ((a * r - 5.0 * a) * r + 8.0 * a) * r - 4.0 * a,
                ((a + 2.0) * ratio - (a + 3.0)) * ratio * ratio + 1.0,
                ((a + 2.0) * (1.0 - ratio) - (a + 3.0)) * (1.0 - ratio) * (1.0 - ratio) + 1.0,
                ((a * s - 5.0 * a) * s + 8.0 * a) * s - 4.0 * a,
            ]
        }
        Mode::Cubic { antialias: true, a } => {
            let scale = scale.min(1.0);
            let start = (-2.0 / scale).floor() as i64 + 1;
            let c: Vec<f64> = (start..2 - start)
                .map(|i| {
                    let x = (scale * (i as f64 - ratio)).abs();
                    let (x2, x3) = (x * x, x * x * x);
                    if x <= 1.0 {
                        (a + 2.0) * x3 - (a + 3.0) * x2 + 1.0
                    } else if x < 2.0 {
                        a * x3 - 5.0 * a * x2 + 8.0 * a * x - 4.0 * a
                    } else {
                        0.0
                    }
                })
                .collect();
            normalized(c)
        }
    }
}

fn normalized(c: Vec<f64>) -> Vec<f64> {
    let sum: f64 = c.iter().sum();
    c.into_iter().map(|v| v / sum).collect()
}

/// The input coordinate of output position `x` (`None`: outside the crop
/// of `tf_crop_and_resize`, which takes the extrapolation value).
fn source_coordinate(spec: &AxisSpec, x: f64, len: i64, out_len: i64, scale: f64) -> Option<f64> {
    let (input, output) = (len as f64, scale * len as f64);
    Some(match spec.transform {
        Transform::AlignCorners if output == 1.0 => 0.0,
        Transform::AlignCorners => x * (input - 1.0) / (output - 1.0),
        Transform::Asymmetric => x / scale,
        Transform::TfCropAndResize => {
            let (start, end) = spec.roi;
            let c = if output == 1.0 {
                (end - start) * (input - 1.0) / 2.0
            } else {
                x * (end - start) * (input - 1.0) / (output - 1.0)
            } + start * (input - 1.0);
            if c < 0.0 || c > input - 1.0 {
                return None;
            }
            c
        }
        Transform::PytorchHalfPixel if output == 1.0 => -0.5,
        Transform::PytorchHalfPixel | Transform::HalfPixel => (x + 0.5) / scale - 0.5,
        Transform::HalfPixelSymmetric => {
            let adjustment = out_len as f64 / output;
            let offset = input / 2.0 * (1.0 - adjustment);
            offset + (x + 0.5) / scale - 0.5
        }
    })
}

/// The map of one axis from `len` to `out_len` elements.
fn axis_map(spec: &AxisSpec, len: i64, out_len: i64, scale: f64) -> AxisMap {
    (0..out_len)
        .map(|o| {
            let c = source_coordinate(spec, o as f64, len, out_len, scale)?;
            let left = c.floor();
            let ratio = if c == left { 1.0 } else { c - left };
            let mut weights = coefficients(spec.mode, ratio, scale);
            let n = weights.len() as i64;
            // The reference picks the n positions nearest to `c` (ties to the
            // smaller) on the input edge-padded by ceil(n / 2) on both sides.
            let pad = (n + 1) / 2;
            let first = nearest_window_start(c + pad as f64, n, len + 2 * pad) - pad;
            let positions: Vec<i64> = (first..first + n).collect();
            if spec.exclude_outside {
                for (w, &p) in weights.iter_mut().zip(&positions) {
                    if p < 0 || p >= len {
                        *w = 0.0;
                    }
                }
                weights = normalized(weights);
            }
            let mut pairs: Vec<(usize, f64)> = Vec::new();
            for (w, p) in weights.into_iter().zip(positions) {
                let src = p.clamp(0, len - 1) as usize;
                match pairs.iter_mut().find(|(s, _)| *s == src) {
                    Some(pair) => pair.1 += w,
                    None => pairs.push((src, w)),
                }
            }
            Some(pairs)
        })
        .collect()
}

/// The first of the `n` positions in `0..limit` nearest to `c`, ties to
/// the smaller position: the reference's `sorted(range(limit), key=(|c - i|, i))[:n]`,
/// which is a run of consecutive positions.
fn nearest_window_start(c: f64, n: i64, limit: i64) -> i64 {
    let around = c.floor() as i64;
    let mut candidates: Vec<i64> = (around - n..=around + n + 1)
        .filter(|&i| (0..limit).contains(&i))
        .collect();
    candidates.sort_by(|&i, &j| {
        (c - i as f64)
            .abs()
            .total_cmp(&(c - j as f64).abs())
            .then(i.cmp(&j))
    });
    candidates.into_iter().take(n as usize).min().unwrap_or(0)
}

/// Whether the map copies its `len` inputs unchanged.
fn is_identity(map: &AxisMap, len: i64) -> bool {
    map.len() as i64 == len
        && map.iter().enumerate().all(|(o, m)| {
            m.as_ref()
                .is_some_and(|p| p.iter().all(|&(s, w)| (s == o && w == 1.0) || w == 0.0))
        })
}

/// Applies the map of axis `a` to `v`.
fn apply_axis(
    b: &mut Body<'_, '_, '_>,
    v: Value,
    a: usize,
    map: &AxisMap,
    len: i64,
    mode: Mode,
    extrapolation: f64,
) -> Built {
    let rank = b.shape(v).len();
    let out_len = map.len() as i64;
    let picked = if matches!(mode, Mode::Nearest(_)) {
        let indices: Vec<i64> = map
            .iter()
            .map(|m| {
                m.as_ref().map_or(0, |p| {
                    p.iter()
                        .find(|&&(_, w)| w != 0.0)
                        .map_or(p[0].0, |&(s, _)| s) as i64
                })
            })
            .collect();
        b.gather(v, a as i64, &indices)?
    } else {
        let elem = b.element(v)?;
        if !elem.is_float() {
            return Err(b.error(format!(
                "linear and cubic interpolation need float data, not '{elem}'"
            )));
        }
        // weights[i][o]: the share of input i in output o.
        let mut weights = vec![0.0; (len * out_len) as usize];
        for (o, m) in map.iter().enumerate() {
            for &(s, w) in m.iter().flatten() {
                weights[s * out_len as usize + o] += w;
            }
        }
        let last = rank - 1;
        if a == last {
            let w = b.constant(&[len, out_len], &elem, &weights)?;
            b.matmul(v, w)?
        } else if a + 2 == rank {
            let transposed: Vec<f64> = (0..out_len as usize)
                .flat_map(|o| (0..len as usize).map(move |i| (i, o)))
                .map(|(i, o)| weights[i * out_len as usize + o])
                .collect();
            let w = b.constant(&[out_len, len], &elem, &transposed)?;
            b.matmul(w, v)?
        } else {
            let mut perm: Vec<i64> = (0..rank as i64).collect();
            perm.swap(a, last);
            let moved = b.transpose(v, &perm)?;
            let w = b.constant(&[len, out_len], &elem, &weights)?;
            let r = b.matmul(moved, w)?;
            b.transpose(r, &perm)?
        }
    };
    if map.iter().all(Option::is_some) {
        return Ok(picked);
    }
    // Positions outside the crop: a mask along the axis, broadcast over the rest.
    let mut mask_shape = vec![1i64; rank - a];
    mask_shape[0] = out_len;
    let outside: Vec<f64> = map
        .iter()
        .map(|m| f64::from(u8::from(m.is_none())))
        .collect();
    let mask = b.constant(&mask_shape, &Type::i1(), &outside)?;
    let fill = b.scalar_like(v, extrapolation)?;
    b.select(mask, fill, picked)
}

#[cfg(test)]
mod tests {
    use super::nearest_window_start;

    #[test]
    fn neighbour_windows_prefer_the_smaller_position_on_ties() {
        // Two nearest to 2.5 in 0..10: 2 and 3; to 2.0: 1 (tie with 3) and 2.
        assert_eq!(nearest_window_start(2.5, 2, 10), 2);
        assert_eq!(nearest_window_start(2.0, 2, 10), 1);
        // Four nearest to 0.2 in 0..10 stop at the edge: 0..4.
        assert_eq!(nearest_window_start(0.2, 4, 10), 0);
        assert_eq!(nearest_window_start(9.9, 4, 10), 6);
    }
}
