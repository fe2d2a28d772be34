//! Linear quantization, built of `nn` elementwise ops as the ONNX reference
//! computes it (`onnx/reference/ops/op_quantize_linear.py` and friends):
//!
//! - `DequantizeLinear`: `(f32(x) - f32(zero_point)) * scale`, in the
//!   scale's type (or `output_dtype`);
//! - `QuantizeLinear`: `clip(round_half_even(x / scale) + zero_point)` to
//!   an integer type, or `cast(x / scale)` (with `saturate`) to an 8-bit
//!   float type;
//! - `DynamicQuantizeLinear`: the uint8 scale and zero point from the
//!   tensor's range, then `QuantizeLinear`;
//! - `QLinearMatMul`: the integer product of the zero-point-shifted
//!   operands (exact in i32), rescaled in f64 and rounded;
//! - `ConvInteger` and `QLinearConv`: the same around a convolution in f64,
//!   where the integer products and sums are exact.
//!
//! Scales and zero points are scalars, per-axis vectors (`axis`) or, with
//! `block_size`, blocks along `axis`: they are reshaped or repeated to
//! broadcast against the data.

use ipuc_dialects::nn::{
    normalize_axis, BinaryKind, Conv2dOp, Conv2dParams, ReduceKind, UnaryKind,
};
use ipuc_ir::{Type, Value};

use super::body::{Body, Built};
use super::constants::element_type;
use super::{ImportError, Importer, NodeResult};
use crate::onnx::{data_type_name, element_kind_of, Node};
use ipuc_ir::numeric::ElementKind;

/// The ops of this family.
pub(super) const OPS: &[&str] = &[
    "QuantizeLinear",
    "DequantizeLinear",
    "DynamicQuantizeLinear",
    "QLinearMatMul",
    "ConvInteger",
    "QLinearConv",
];

pub(super) fn import(imp: &mut Importer<'_>, node: &Node) -> NodeResult {
    let mut b = Body::new(imp, node);
    match node.op_type.as_str() {
        "QuantizeLinear" => quantize_linear(&mut b).map(|v| vec![v]),
        "DequantizeLinear" => dequantize_linear(&mut b).map(|v| vec![v]),
        "DynamicQuantizeLinear" => dynamic_quantize_linear(&mut b),
        "QLinearMatMul" => qlinear_matmul(&mut b).map(|v| vec![v]),
        "ConvInteger" => conv_integer(&mut b).map(|v| vec![v]),
        "QLinearConv" => qlinear_conv(&mut b).map(|v| vec![v]),
        other => unreachable!("`{other}` is not a quantization op"),
    }
}

/// `param` (a scale or zero point) shaped to broadcast against `data`:
/// a scalar as is, a vector along `axis`, or blocks of `block_size` along
/// `axis` repeated to the data's size.
fn broadcast_param(b: &mut Body<'_, '_, '_>, param: Value, data: Value) -> Built {
    let (ps, ds) = (b.shape(param), b.shape(data));
    if ps.iter().product::<i64>() == 1 && ps.len() <= 1 {
        return Ok(param);
    }
    let rank = ds.len();
    let axis = normalize_axis(b.node.int_attr("axis", 1)?, rank).map_err(|m| b.error(m))?;
    let block = b.node.int_attr("block_size", 0)?;
    if block > 0 {
        if ps.len() != rank {
            return Err(b.error(format!(
                "a blocked scale must have the data's rank {rank}, but has shape {ps:?}"
            )));
        }
        let repeat: Vec<i64> = (0..ds[axis]).map(|i| i / block).collect();
        return b.gather(param, axis as i64, &repeat);
    }
    if ps.len() != 1 || ps[0] != ds[axis] {
        return Err(b.error(format!(
            "a per-axis scale must have shape [{}] (axis {axis}), but has {ps:?}",
            ds[axis]
        )));
    }
    let mut shape = vec![1i64; rank - axis];
    shape[0] = ds[axis];
    b.reshape(param, &shape)
}

/// The element type of attribute `name`, if present and nonzero.
fn dtype_attr(b: &Body<'_, '_, '_>, name: &str) -> Result<Option<Type>, ImportError> {
    let code = b.node.int_attr(name, 0)? as i32;
    if code == 0 {
        return Ok(None);
    }
    element_kind_of(code)
        .map(element_type)
        .map(Some)
        .ok_or_else(|| {
            b.error(format!(
                "`{name}` = {code} ({}) is not an element type ipuc supports",
                data_type_name(code)
            ))
        })
}

fn dequantize_linear(b: &mut Body<'_, '_, '_>) -> Built {
    let (x, scale) = (b.input(0)?, b.input(1)?);
    let zero_point = b.optional_input(2)?;
    let f32 = Type::f32();
    let mut v = b.cast(x, &f32)?;
    if let Some(zp) = zero_point {
        let zp = b.cast(zp, &f32)?;
        let zp = broadcast_param(b, zp, x)?;
        v = b.binary(BinaryKind::Sub, v, zp)?;
    }
    let out = match dtype_attr(b, "output_dtype")? {
        Some(t) => t,
        None => b.element(scale)?,
    };
    let s = b.cast(scale, &f32)?;
    let s = broadcast_param(b, s, x)?;
    let y = b.binary(BinaryKind::Mul, v, s)?;
    b.cast(y, &out)
}

/// The target of a quantization: the zero point's type, else
/// `output_dtype`, else uint8.
fn quantized_type(b: &Body<'_, '_, '_>, zero_point: Option<Value>) -> Result<Type, ImportError> {
    if let Some(zp) = zero_point {
        return b.element(zp);
    }
    Ok(dtype_attr(b, "output_dtype")?.unwrap_or_else(|| element_type(ElementKind::U8)))
}

/// `x` scaled, rounded, shifted by `zero_point` and clipped into `to`
/// (an integer type), or cast to `to` (an 8-bit float type).
fn quantize(
    b: &mut Body<'_, '_, '_>,
    x: Value,
    scale: Value,
    zero_point: Option<Value>,
    to: &Type,
) -> Built {
    let elem = b.element(x)?;
    let scale = b.cast(scale, &elem)?;
    let scale = broadcast_param(b, scale, x)?;
    let scaled = b.binary(BinaryKind::Div, x, scale)?;
    let saturate = b.node.int_attr("saturate", 1)? != 0;
    if to.is_float() {
        let mut v = scaled;
        if let Some(zp) = zero_point {
            let zp = b.cast(zp, &elem)?;
            let zp = broadcast_param(b, zp, x)?;
            v = b.binary(BinaryKind::Add, v, zp)?;
        }
        return super::elementwise::cast(b.imp, b.node, v, to, saturate);
    }
    let mut v = b.unary(UnaryKind::Round, scaled)?;
    if let Some(zp) = zero_point {
        let zp = b.cast(zp, &elem)?;
        let zp = broadcast_param(b, zp, x)?;
        v = b.binary(BinaryKind::Add, v, zp)?;
    }
    let (lo, hi) = int_range(b, to)?;
    let (lo, hi) = (b.scalar_like(v, lo)?, b.scalar_like(v, hi)?);
    let v = b.binary(BinaryKind::Max, v, lo)?;
    let v = b.binary(BinaryKind::Min, v, hi)?;
    b.cast(v, to)
}

/// The smallest and largest value of integer type `t`.
fn int_range(b: &Body<'_, '_, '_>, t: &Type) -> Result<(f64, f64), ImportError> {
    let bits = t
        .int_or_float_bit_width()
        .filter(|_| t.is_integer())
        .ok_or_else(|| b.error(format!("cannot quantize to '{t}'")))?;
    let unsigned = matches!(
        t.kind(),
        ipuc_ir::TypeKind::Integer {
            signedness: ipuc_ir::types::Signedness::Unsigned,
            ..
        }
    );
    Ok(if unsigned {
        (0.0, 2f64.powi(bits as i32) - 1.0)
    } else {
        (
            -(2f64.powi(bits as i32 - 1)),
            2f64.powi(bits as i32 - 1) - 1.0,
        )
    })
}

fn quantize_linear(b: &mut Body<'_, '_, '_>) -> Built {
    let (x, scale) = (b.input(0)?, b.input(1)?);
    let zero_point = b.optional_input(2)?;
    let to = quantized_type(b, zero_point)?;
    quantize(b, x, scale, zero_point, &to)
}

/// `DynamicQuantizeLinear`: scale `(max(0, max x) - min(0, min x)) / 255`,
/// zero point `clip(round(-min / scale), 0, 255)`, then uint8 quantization.
fn dynamic_quantize_linear(b: &mut Body<'_, '_, '_>) -> NodeResult {
    let x = b.input(0)?;
    let zero = b.scalar_like(x, 0.0)?;
    let lo = b.reduce(ReduceKind::Min, x, None, false)?;
    let lo = b.binary(BinaryKind::Min, lo, zero)?;
    let hi = b.reduce(ReduceKind::Max, x, None, false)?;
    let hi = b.binary(BinaryKind::Max, hi, zero)?;
    let range = b.binary(BinaryKind::Sub, hi, lo)?;
    let levels = b.scalar_like(x, 255.0)?;
    let scale = b.binary(BinaryKind::Div, range, levels)?;
    let shifted = b.binary(BinaryKind::Div, lo, scale)?;
    let zp = b.binary(BinaryKind::Sub, zero, shifted)?;
    let zp = b.unary(UnaryKind::Round, zp)?;
    let zp = b.binary(BinaryKind::Max, zp, zero)?;
    let zp = b.binary(BinaryKind::Min, zp, levels)?;
    let u8 = element_type(ElementKind::U8);
    let zp = b.cast(zp, &u8)?;
    let y = quantize(b, x, scale, Some(zp), &u8)?;
    Ok(vec![y, scale, zp])
}

/// `x - zero_point` in i32 (the zero point broadcast as `axis` says).
fn shifted_i32(b: &mut Body<'_, '_, '_>, x: Value, zero_point: Option<Value>) -> Built {
    let i32 = Type::i32();
    let v = b.cast(x, &i32)?;
    match zero_point {
        None => Ok(v),
        Some(zp) => {
            let zp = b.cast(zp, &i32)?;
            let zp = broadcast_param(b, zp, x)?;
            b.binary(BinaryKind::Sub, v, zp)
        }
    }
}

/// A convolution weight `[M, ...]` minus its zero point (a scalar or one
/// per output channel), in i32.
fn shifted_weight_i32(b: &mut Body<'_, '_, '_>, w: Value, zero_point: Option<Value>) -> Built {
    let i32 = Type::i32();
    let v = b.cast(w, &i32)?;
    let Some(zp) = zero_point else {
        return Ok(v);
    };
    let zp = b.cast(zp, &i32)?;
    let count: i64 = b.shape(zp).iter().product();
    let zp = if count > 1 {
        let mut shape = vec![1i64; b.shape(w).len()];
        shape[0] = count;
        b.reshape(zp, &shape)?
    } else {
        zp
    };
    b.binary(BinaryKind::Sub, v, zp)
}

/// `round(acc * a_scale * b_scale / y_scale + y_zero_point)` cast to the
/// zero point's type (`acc` in f64; the scale product in the scales' type,
/// as the reference multiplies them first).
fn requantize(
    b: &mut Body<'_, '_, '_>,
    acc: Value,
    scales: [Value; 3],
    y_zero_point: Value,
) -> Built {
    let f64 = element_type(ElementKind::F64);
    let [a_s, b_s, y_s] = scales;
    let ab = b.binary(BinaryKind::Mul, a_s, b_s)?;
    let y_s = b.cast(y_s, &b.element(ab)?)?;
    let s = b.binary(BinaryKind::Div, ab, y_s)?;
    let s = b.cast(s, &f64)?;
    let acc = b.cast(acc, &f64)?;
    let v = b.binary(BinaryKind::Mul, acc, s)?;
    let zp = b.cast(y_zero_point, &f64)?;
    let v = b.binary(BinaryKind::Add, v, zp)?;
    let v = b.unary(UnaryKind::Round, v)?;
    let to = b.element(y_zero_point)?;
    let (lo, hi) = int_range(b, &to)?;
    let (lo, hi) = (b.scalar_like(v, lo)?, b.scalar_like(v, hi)?);
    let v = b.binary(BinaryKind::Max, v, lo)?;
    let v = b.binary(BinaryKind::Min, v, hi)?;
    b.cast(v, &to)
}

/// `QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp)`.
fn qlinear_matmul(b: &mut Body<'_, '_, '_>) -> Built {
    let (a, a_s, a_zp) = (b.input(0)?, b.input(1)?, b.input(2)?);
    let (m, m_s, m_zp) = (b.input(3)?, b.input(4)?, b.input(5)?);
    let (y_s, y_zp) = (b.input(6)?, b.input(7)?);
    let a = shifted_i32(b, a, Some(a_zp))?;
    let m = shifted_i32(b, m, Some(m_zp))?;
    let acc = b.matmul(a, m)?;
    requantize(b, acc, [a_s, m_s, y_s], y_zp)
}

/// The convolution of `x` by `w` in f64 with the node's `Conv` attributes
/// (2-D only; the integer products and sums are exact in f64).
fn conv_f64(b: &mut Body<'_, '_, '_>, x: Value, w: Value) -> Built {
    let f64 = element_type(ElementKind::F64);
    let (x, w) = (b.cast(x, &f64)?, b.cast(w, &f64)?);
    let (xs, ws) = (b.shape(x), b.shape(w));
    if xs.len() != 4 || ws.len() != 4 {
        return Err(b.error("only 2-D integer convolutions are supported"));
    }
    let pair = |name: &str| -> Result<[i64; 2], ImportError> {
        match b.node.ints_attr(name)? {
            None => Ok([1, 1]),
            Some(&[p, q]) => Ok([p, q]),
            Some(v) => Err(b.error(format!("`{name}` {v:?} must have 2 entries"))),
        }
    };
    let pads = match b.node.ints_attr("pads")? {
        None => [0; 4],
        Some(&[t, l, bo, r]) => [t, l, bo, r],
        Some(p) => return Err(b.error(format!("`pads` {p:?} must have 4 entries"))),
    };
    if b.node.string_attr("auto_pad", "NOTSET")? != "NOTSET" {
        return Err(b.error("`auto_pad` is not supported for integer convolutions; give `pads`"));
    }
    let params = Conv2dParams {
        strides: pair("strides")?,
        pads,
        dilations: pair("dilations")?,
        groups: b.node.int_attr("group", 1)?,
    };
    let state = Conv2dOp::build(b.imp.ctx, x, w, None, &params, Importer::loc(b.node));
    b.imp.emit1(b.node, state)
}

/// `ConvInteger(x, w, x_zero_point, w_zero_point)`: an i32 result.
fn conv_integer(b: &mut Body<'_, '_, '_>) -> Built {
    let (x, w) = (b.input(0)?, b.input(1)?);
    let (x_zp, w_zp) = (b.optional_input(2)?, b.optional_input(3)?);
    let x = shifted_i32(b, x, x_zp)?;
    let w = shifted_weight_i32(b, w, w_zp)?;
    let y = conv_f64(b, x, w)?;
    b.cast(y, &Type::i32())
}

/// `QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp[, bias])`
/// with a per-tensor weight scale or one per output channel.
fn qlinear_conv(b: &mut Body<'_, '_, '_>) -> Built {
    let (x, x_s, x_zp) = (b.input(0)?, b.input(1)?, b.input(2)?);
    let (w, w_s, w_zp) = (b.input(3)?, b.input(4)?, b.input(5)?);
    let (y_s, y_zp) = (b.input(6)?, b.input(7)?);
    let bias = b.optional_input(8)?;
    let xi = shifted_i32(b, x, Some(x_zp))?;
    let wi = shifted_weight_i32(b, w, Some(w_zp))?;
    let mut acc = conv_f64(b, xi, wi)?;
    if let Some(bias) = bias {
        let bias = b.cast(bias, &element_type(ElementKind::F64))?;
        let c = b.shape(bias)[0];
        let bias = b.reshape(bias, &[c, 1, 1])?;
        acc = b.binary(BinaryKind::Add, acc, bias)?;
    }
    let w_s = if b.shape(w_s).iter().product::<i64>() > 1 {
        let c = b.shape(w_s)[0];
        b.reshape(w_s, &[c, 1, 1])?
    } else {
        w_s
    };
    requantize(b, acc, [x_s, w_s, y_s], y_zp)
}
