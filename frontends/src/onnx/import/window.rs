//! The sliding-window attributes `Conv`, `MaxPool` and `AveragePool` share:
//! explicit `pads`, or `auto_pad` resolved against the static input shape.

use super::{error, ImportError};
use crate::onnx::Node;

/// A per-spatial-axis list attribute (`strides`, `dilations`), ones when
/// absent.
pub(super) fn per_axis(node: &Node, name: &str, n: usize) -> Result<Vec<i64>, ImportError> {
    match node.ints_attr(name)? {
        None => Ok(vec![1; n]),
        Some(v) if v.len() == n => Ok(v.to_vec()),
        Some(v) => Err(error(
            node,
            format!("`{name}` {v:?} must have {n} entries, one per spatial axis"),
        )),
    }
}

/// The `pads` attribute over `n` spatial axes (all begins, then all
/// ends), zeros when absent.
pub(super) fn explicit_pads(node: &Node, n: usize) -> Result<Vec<i64>, ImportError> {
    match node.ints_attr("pads")? {
        None => Ok(vec![0; 2 * n]),
        Some(p) if p.len() == 2 * n => Ok(p.to_vec()),
        Some(p) => Err(error(
            node,
            format!(
                "`pads` {p:?} must have {} entries (begin and end of {n} spatial axes)",
                2 * n
            ),
        )),
    }
}

/// The explicit pads of a windowed op over `input` (its spatial extents):
/// all begins, then all ends. `auto_pad` `SAME_UPPER`/`SAME_LOWER` pad to
/// `ceil(input / stride)` windows, splitting the padding evenly with the
/// odd element at the end (UPPER) or the start (LOWER); `VALID` pads
/// nothing; `NOTSET` reads `pads` (zeros when absent).
pub(super) fn resolve_pads(
    node: &Node,
    input: &[i64],
    kernel: &[i64],
    strides: &[i64],
    dilations: &[i64],
) -> Result<Vec<i64>, ImportError> {
    let n = input.len();
    match node.string_attr("auto_pad", "NOTSET")? {
        "NOTSET" => explicit_pads(node, n),
        "VALID" => Ok(vec![0; 2 * n]),
        mode @ ("SAME_UPPER" | "SAME_LOWER") => {
            let mut pads = vec![0; 2 * n];
            for axis in 0..n {
                let (s, d) = (strides[axis], dilations[axis]);
                // Attributes come from files: positive strides and sane
                // extents are checked before this arithmetic.
                if s < 1 || d < 1 || kernel[axis] < 1 || input[axis] < 0 {
                    return Err(error(
                        node,
                        format!(
                            "`auto_pad` {mode} needs positive strides {strides:?}, dilations \
                             {dilations:?} and kernel {kernel:?}, and a static input"
                        ),
                    ));
                }
                let out = input[axis] / s + i64::from(input[axis] % s != 0);
                let total = (out - 1)
                    .checked_mul(s)
                    .and_then(|v| v.checked_add(d.checked_mul(kernel[axis] - 1)?))
                    .and_then(|v| v.checked_add(1 - input[axis]))
                    .ok_or_else(|| error(node, "the `auto_pad` padding overflows"))?
                    .max(0);
                let (small, large) = (total / 2, total - total / 2);
                let (begin, end) = if mode == "SAME_UPPER" {
                    (small, large)
                } else {
                    (large, small)
                };
                pads[axis] = begin;
                pads[n + axis] = end;
            }
            Ok(pads)
        }
        other => Err(error(
            node,
            format!(
                "unknown `auto_pad` \"{other}\" (expected NOTSET, VALID, SAME_UPPER or SAME_LOWER)"
            ),
        )),
    }
}
