//! Ops whose output depends only on shapes and attributes, so with static
//! shapes they are constants computed at import: `EyeLike` and the window
//! functions `HannWindow`, `HammingWindow` and `BlackmanWindow` (their ONNX
//! function bodies evaluated in float64 and rounded once to the output
//! type).

use std::f64::consts::PI;

use ipuc_ir::Type;

use super::body::Body;
use super::constants::element_type;
use super::{ImportError, Importer, NodeResult};
use crate::onnx::{data_type_name, element_kind_of, Node};

/// The ops of this family.
pub(super) const OPS: &[&str] = &["EyeLike", "HannWindow", "HammingWindow", "BlackmanWindow"];

pub(super) fn import(imp: &mut Importer<'_>, node: &Node) -> NodeResult {
    let mut b = Body::new(imp, node);
    match node.op_type.as_str() {
        "EyeLike" => eye_like(&mut b),
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
