//! Ops whose output depends only on shapes and attributes, so with static
//! shapes they are constants computed at import: `EyeLike` and the window
//! functions `HannWindow`, `HammingWindow` and `BlackmanWindow` (their ONNX
//! function bodies evaluated in float64 and rounded once to the output
//! type), and `MelWeightMatrix` (its inputs are sizes and frequencies, bound
//! at import; the triangular filters as the ONNX reference builds them).

use std::f64::consts::PI;

use ipuc_ir::Type;

use super::body::Body;
use super::constants::element_type;
use super::{ImportError, Importer, NodeResult};
use crate::onnx::{data_type_name, element_kind_of, Node};

/// The ops of this family.
pub(super) const OPS: &[&str] = &[
    "EyeLike",
    "HannWindow",
    "HammingWindow",
    "BlackmanWindow",
    "MelWeightMatrix",
];

pub(super) fn import(imp: &mut Importer<'_>, node: &Node) -> NodeResult {
    let mut b = Body::new(imp, node);
    match node.op_type.as_str() {
        "EyeLike" => eye_like(&mut b),
        "MelWeightMatrix" => mel_weight_matrix(&mut b),
        op => window(&mut b, op),
    }
    .map(|v| vec![v])
}

/// The element type named by attribute `name`, or `default` when absent.
fn dtype_attr(
    b: &Body<'_, '_, '_>,
    name: &str,
    default: Option<Type>,
) -> Result<Type, ImportError> {
    if b.node.attribute(name).is_none() {
        if let Some(t) = default {
            return Ok(t);
        }
    }
    let code = b.node.int_attr(name, 1)? as i32;
    element_kind_of(code).map(element_type).ok_or_else(|| {
        b.error(format!(
            "`{name}` = {code} ({}) is not an element type ipuc supports",
            data_type_name(code)
        ))
    })
}

/// `EyeLike`: ones on diagonal `k` of a 2-D tensor shaped as the input.
fn eye_like(b: &mut Body<'_, '_, '_>) -> Result<ipuc_ir::Value, ImportError> {
    let x = b.input(0)?;
    let shape = b.shape(x);
    let [rows, cols] = shape[..] else {
        return Err(b.error(format!("input must be of rank 2, but has shape {shape:?}")));
    };
    let elem = dtype_attr(b, "dtype", Some(b.element(x)?))?;
    let k = b.node.int_attr("k", 0)?;
    let values: Vec<f64> = (0..rows)
        .flat_map(|i| (0..cols).map(move |j| f64::from(u8::from(j - i == k))))
        .collect();
    b.constant(&shape, &elem, &values)
}

/// The window functions: `sum_m (-1)^m a_m cos(2 pi m n / N)` for `n` in
/// `0..size`, with `N = size` when `periodic` (the default) else `size - 1`.
fn window(b: &mut Body<'_, '_, '_>, op: &str) -> Result<ipuc_ir::Value, ImportError> {
    let coefficients: &[f64] = match op {
        "HannWindow" => &[0.5, 0.5],
        "HammingWindow" => &[25.0 / 46.0, 21.0 / 46.0],
        "BlackmanWindow" => &[0.42, 0.5, 0.08],
        other => unreachable!("`{other}` is not a window op"),
    };
    let size = match b.imp.const_ints(b.node, 0, "window size")?[..] {
        [s] if s >= 0 => s,
        ref other => {
            return Err(b.error(format!(
                "the size must be one non-negative integer, but is {other:?}"
            )))
        }
    };
    let elem = dtype_attr(b, "output_datatype", None)?;
    if !elem.is_float() {
        return Err(b.error(format!(
            "`output_datatype` must be a float type, but is '{elem}'"
        )));
    }
    let periodic = b.node.int_attr("periodic", 1)? != 0;
    let n = if periodic { size } else { size - 1 } as f64;
    let values: Vec<f64> = (0..size)
        .map(|i| {
            coefficients
                .iter()
                .enumerate()
                .map(|(m, a)| {
                    let sign = if m % 2 == 0 { 1.0 } else { -1.0 };
                    sign * a * (2.0 * PI * m as f64 * i as f64 / n).cos()
                })
                .sum()
        })
        .collect();
    b.constant(&[size], &elem, &values)
}

/// Input `i` as a constant scalar (integer or float), or an error naming `what`.
fn const_scalar(b: &mut Body<'_, '_, '_>, i: usize, what: &str) -> Result<f64, ImportError> {
    use ipuc_dialects::nn::elements::{dense_data, floats, ints};
    let v = b.input(i)?;
    let values = b
        .imp
        .constant_of(v)
        .as_ref()
        .and_then(dense_data)
        .and_then(|d| {
            floats(&d).or_else(|| ints(&d).map(|v| v.into_iter().map(|x| x as f64).collect()))
        });
    match values.as_deref() {
        Some(&[x]) => Ok(x),
        Some(other) => Err(b.error(format!(
            "input #{i} (the {what}) must be one value, but has {}",
            other.len()
        ))),
        None => Err(b.error(format!(
            "input #{i} (the {what}) must be a constant at import, but it is computed at run time"
        ))),
    }
}

/// `MelWeightMatrix`: `[dft_length / 2 + 1, num_mel_bins]` triangular
/// filters between mel-spaced frequency bins, as `op_mel_weight_matrix.py`.
fn mel_weight_matrix(b: &mut Body<'_, '_, '_>) -> Result<ipuc_ir::Value, ImportError> {
    let bins = const_scalar(b, 0, "number of mel bins")?;
    let dft = const_scalar(b, 1, "DFT length")?;
    let rate = const_scalar(b, 2, "sample rate")?;
    let (low, high) = (
        const_scalar(b, 3, "lower edge")?,
        const_scalar(b, 4, "upper edge")?,
    );
    if bins < 1.0 || dft < 1.0 || rate <= 0.0 || bins > 65536.0 || dft > 1e7 {
        return Err(b.error(format!(
            "needs positive sizes and sample rate, but has {bins} mel bins, a DFT length of \
             {dft} and a sample rate of {rate}"
        )));
    }
    let (bins, dft) = (bins as usize, dft as i64);
    let spectrogram = (dft / 2 + 1) as usize;
    let to_mel = |hz: f64| 2595.0 * (hz / 700.0).ln_1p() / 10f64.ln();
    let (low_mel, high_mel) = (to_mel(low), to_mel(high));
    let step = (high_mel - low_mel) / (bins + 2) as f64;
    let edges: Vec<i64> = (0..bins + 2)
        .map(|k| {
            let hz = 700.0 * ((k as f64 * step + low_mel) / 2595.0 * 10f64.ln()).exp_m1();
            ((dft + 1) as f64 * hz / rate).floor() as i64
        })
        .collect();
    let mut out = vec![0.0; spectrogram * bins];
    let mut set = |j: i64, i: usize, v: f64| -> Result<(), ImportError> {
        match usize::try_from(j).ok().filter(|&j| j < spectrogram) {
            Some(j) => {
                out[j * bins + i] = v;
                Ok(())
            }
            None => Err(b.error(format!(
                "the filter edge {j} falls outside the {spectrogram} spectrogram bins; \
                 the upper edge frequency must be at most half the sample rate"
            ))),
        }
    };
    for i in 0..bins {
        let (left, center, right) = (edges[i], edges[i + 1], edges[i + 2]);
        if center == left {
            set(center, i, 1.0)?;
        } else {
            for j in left..=center {
                set(j, i, (j - left) as f64 / (center - left) as f64)?;
            }
        }
        for j in center..right {
            set(j, i, (right - j) as f64 / (right - center) as f64)?;
        }
    }
    let elem = dtype_attr(b, "output_datatype", Some(Type::f32()))?;
    b.constant(&[spectrogram as i64, bins as i64], &elem, &out)
}
