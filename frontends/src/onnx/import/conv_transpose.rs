//! `ConvTranspose` (1-D and 2-D) as the convolution it is the adjoint of:
//! the input spread out by the strides (zeros between its elements), padded
//! by `dilation * (kernel - 1)` less the transposed convolution's own pads
//! (negative amounts crop), and convolved with stride 1 by the weight with
//! its two channel axes swapped per group and its kernel flipped. Every
//! output element sums the same products as the ONNX definition (plus
//! products with the inserted zeros).

use ipuc_dialects::nn::{Conv2dOp, Conv2dParams};

use super::body::{Body, Built};
use super::{ImportError, Importer, NodeResult};
use crate::onnx::Node;

/// The ops of this family.
pub(super) const OPS: &[&str] = &["ConvTranspose"];

pub(super) fn import(imp: &mut Importer<'_>, node: &Node) -> NodeResult {
    let mut b = Body::new(imp, node);
    conv_transpose(&mut b).map(|v| vec![v])
}

/// A per-spatial-axis attribute of `n` entries, or `default` for each.
fn per_axis(
    b: &Body<'_, '_, '_>,
    name: &str,
    n: usize,
    default: i64,
) -> Result<Vec<i64>, ImportError> {
    match b.node.ints_attr(name)? {
        None => Ok(vec![default; n]),
        Some(v) if v.len() == n => Ok(v.to_vec()),
        Some(v) => Err(b.error(format!(
            "`{name}` {v:?} must have {n} entries, one per spatial axis"
        ))),
    }
}

fn conv_transpose(b: &mut Body<'_, '_, '_>) -> Built {
    let (x, w) = (b.input(0)?, b.input(1)?);
    let bias = b.optional_input(2)?;
    let (xs, ws) = (b.shape(x), b.shape(w));
    if !matches!(xs.len(), 3 | 4) || ws.len() != xs.len() {
        return Err(b.error(format!(
            "only 1-D and 2-D ConvTranspose are supported (input and weight of rank 3 or 4), \
             but the input has shape {xs:?} and the weight {ws:?}"
        )));
    }
    let n = xs.len() - 2;
    let groups = b.node.int_attr("group", 1)?;
    let strides = per_axis(b, "strides", n, 1)?;
    let dilations = per_axis(b, "dilations", n, 1)?;
    let output_padding = per_axis(b, "output_padding", n, 0)?;
    if strides.iter().chain(&dilations).any(|&v| v < 1) || groups < 1 {
        return Err(b.error("`strides`, `dilations` and `group` must be positive"));
    }
    let kernel = &ws[2..];
    let (cin, cout_per_group) = (ws[0], ws[1]);
    if xs[1] != cin || cin % groups != 0 {
        return Err(b.error(format!(
            "the input has {} channels, the weight {cin} (in {groups} groups)",
            xs[1]
        )));
    }
    // The full output extent before the pads are taken off.
    let full: Vec<i64> = (0..n)
        .map(|i| {
            strides[i] * (xs[2 + i] - 1) + output_padding[i] + dilations[i] * (kernel[i] - 1) + 1
        })
        .collect();
    let auto_pad = b.node.string_attr("auto_pad", "NOTSET")?;
    let output_shape = b.node.ints_attr("output_shape")?.map(<[i64]>::to_vec);
    let pads: Vec<i64> = if output_shape.is_some()
        || matches!(auto_pad, "SAME_UPPER" | "SAME_LOWER")
    {
        let target: Vec<i64> = match &output_shape {
            Some(s) if s.len() == n => s.clone(),
            Some(s) if s.len() == n + 2 => s[2..].to_vec(),
            Some(s) => return Err(b.error(format!("`output_shape` {s:?} has the wrong length"))),
            None => (0..n).map(|i| xs[2 + i] * strides[i]).collect(),
        };
        let mut p = vec![0; 2 * n];
        for i in 0..n {
            let total = full[i] - target[i];
            let (half, rest) = (total / 2, total - total / 2);
            (p[i], p[i + n]) = if auto_pad == "SAME_UPPER" {
                (half, rest)
            } else {
                (rest, half)
            };
        }
        p
    } else {
        per_axis(b, "pads", 2 * n, 0)?
    };
    // Lift 1-D to 2-D with a leading spatial axis of size 1.
    let lift = |v: &[i64], one: i64| -> Vec<i64> {
        if n == 1 {
            std::iter::once(one).chain(v.iter().copied()).collect()
        } else {
            v.to_vec()
        }
    };
    let (strides, dilations, kernel) = (lift(&strides, 1), lift(&dilations, 1), lift(kernel, 1));
    let pads = if n == 1 {
        vec![0, pads[0], 0, pads[1]]
    } else {
        pads
    };
    let output_padding = lift(&output_padding, 0);
    let (x, w) = if n == 1 {
        let x = b.reshape(x, &[xs[0], xs[1], 1, xs[2]])?;
        let w = b.reshape(w, &[ws[0], ws[1], 1, ws[2]])?;
        (x, w)
    } else {
        (x, w)
    };
    let (batch, (h, wd)) = (xs[0], (b.shape(x)[2], b.shape(x)[3]));
    // Spread: [N, C, H, W] -> [N, C, H, 1, W, 1] -> pad to strides -> merge.
    let mut v = x;
    if strides[0] > 1 || strides[1] > 1 {
        let six = b.reshape(v, &[batch, cin, h, 1, wd, 1])?;
        let mut spread = vec![0i64; 12];
        spread[6 + 3] = strides[0] - 1;
        spread[6 + 5] = strides[1] - 1;
        let padded = b.pad(six, &spread, 0.0)?;
        let merged = b.reshape(padded, &[batch, cin, h * strides[0], wd * strides[1]])?;
        let cut = b.slice(merged, 2, 0, (h - 1) * strides[0] + 1)?;
        v = b.slice(cut, 3, 0, (wd - 1) * strides[1] + 1)?;
    }
    // Border: dilation * (kernel - 1) - pad on each side, plus output_padding at the end.
    let mut conv_pads = [0i64; 4];
    for i in 0..2 {
        let reach = dilations[i] * (kernel[i] - 1);
        for (slot, amount) in [
            (i, reach - pads[i]),
            (i + 2, reach - pads[i + 2] + output_padding[i]),
        ] {
            if amount >= 0 {
                conv_pads[slot] = amount;
            } else {
                let len = b.shape(v)[2 + i];
                v = if slot < 2 {
                    b.slice(v, 2 + i as i64, -amount, len)?
                } else {
                    b.slice(v, 2 + i as i64, 0, len + amount)?
                };
            }
        }
    }
    // Weight [Cin, Cout/g, kH, kW] -> [Cout, Cin/g, kH, kW], kernel flipped.
    let cin_g = cin / groups;
    let grouped = b.reshape(w, &[groups, cin_g, cout_per_group, kernel[0], kernel[1]])?;
    let swapped = b.transpose(grouped, &[0, 2, 1, 3, 4])?;
    let wt = b.reshape(
        swapped,
        &[groups * cout_per_group, cin_g, kernel[0], kernel[1]],
    )?;
    let rows: Vec<i64> = (0..kernel[0]).rev().collect();
    let cols: Vec<i64> = (0..kernel[1]).rev().collect();
    let wt = b.gather(wt, 2, &rows)?;
    let wt = b.gather(wt, 3, &cols)?;
    let params = Conv2dParams {
        strides: [1, 1],
        pads: conv_pads,
        dilations: [dilations[0], dilations[1]],
        groups,
    };
    let state = Conv2dOp::build(b.imp.ctx, v, wt, bias, &params, Importer::loc(b.node));
    let y = b.imp.emit1(b.node, state)?;
    if n == 1 {
        let ys = b.shape(y);
        return b.reshape(y, &[ys[0], ys[1], ys[3]]);
    }
    Ok(y)
}
