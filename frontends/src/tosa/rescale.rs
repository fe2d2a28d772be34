//! `tosa.rescale` read as `nn` integer arithmetic, where it is a pure scale.
//!
//! TOSA rescales an integer `x` by `multiplier * 2^-shift`, rounding half
//! up (`SINGLE_ROUND`: `(x * multiplier + 2^(shift-1)) >> shift`), then
//! adds the output zero point and saturates to the output type. Read here:
//! zero points 0, signed values, one multiplier and one shift for the whole
//! tensor, inputs of at most 32 bits. Then the arithmetic is exact in
//! `i64` (`|x * multiplier| < 2^62`) and `nn` spells it exactly: an
//! integer scale (`2^shift` divides `multiplier`: a power of two or any
//! other whole factor) is one product; any other scale is the product plus
//! the rounding term, floor-divided by `2^shift` (`t - t mod 2^shift`, then
//! an exact division); then the clamp to the output range and the cast.
//! `DOUBLE_ROUND` is `SINGLE_ROUND` for shifts up to 31; `INEXACT_ROUND`
//! leaves its rounding to the implementation, so only whole scales read.
//! Anything else (quantized zero points, per-channel scales, unsigned
//! values) is refused at the op's location with the reason.

use ipuc_dialects::nn::{self, elements, BinaryKind};
use ipuc_ir::attributes::AttrKind;
use ipuc_ir::{Diagnostic, OpId, Type, Value};

use super::to_nn::{constant_of, require_zero, scalar};
use super::Builder;

/// The one value of a constant operand (a splat or a single element).
fn single_constant(b: &Builder, op: OpId, i: usize, what: &str) -> Result<i64, Diagnostic> {
    let values = constant_of(b.ctx, b.ctx.operand(op, i))
        .and_then(|d| elements::ints(&d))
        .ok_or_else(|| {
            b.error(format!(
                "'tosa.rescale': the {what} must be an integer constant"
            ))
        })?;
    match values.split_first() {
        Some((&first, rest)) if rest.iter().all(|&v| v == first) => Ok(first as i64),
        _ => Err(b.error(format!(
            "'tosa.rescale': per-channel {what}s are not supported (one scale for the whole tensor is)"
        ))),
    }
}

/// The `rounding_mode` (`#tosa.rounding_mode<SINGLE_ROUND>`).
fn rounding_mode(b: &Builder, op: OpId) -> String {
    match b.ctx.attr(op, "rounding_mode").map(|a| a.kind()) {
        Some(AttrKind::Dialect { body, .. }) => body.to_string(),
        Some(_) | None => "SINGLE_ROUND".into(),
    }
}

/// The replacement of a `tosa.rescale`.
pub(super) fn read(b: &mut Builder, op: OpId) -> Result<Value, Diagnostic> {
    let loc = b.loc.clone();
    require_zero(b, op, 3, "the input zero point")?;
    require_zero(b, op, 4, "the output zero point")?;
    for flag in ["input_unsigned", "output_unsigned"] {
        if b.ctx.attr(op, flag).and_then(|a| a.as_int()) == Some(1) {
            return Err(b.error(format!(
                "'tosa.rescale' with {flag} = true is not supported (signed values are)"
            )));
        }
    }
    let multiplier = single_constant(b, op, 1, "multiplier")?;
    let shift = single_constant(b, op, 2, "shift")?;
    let x = b.ctx.operand(op, 0);
    let (_, in_elem) = b.shape(x)?;
    let out_elem = b
        .ctx
        .value_type(b.ctx.result(op, 0))
        .element_type()
        .cloned()
        .ok_or_else(|| b.error("'tosa.rescale' needs a tensor result"))?;
    let width = |t: &Type| t.int_or_float_bit_width().filter(|_| t.is_integer());
    let (Some(in_bits), Some(out_bits)) = (width(&in_elem), width(&out_elem)) else {
        return Err(b.error(format!(
            "'tosa.rescale' from {in_elem} to {out_elem}: only integers rescale"
        )));
    };
    if in_bits > 32 || out_bits > 32 || in_bits < 2 || out_bits < 2 {
        return Err(b.error(format!(
            "'tosa.rescale' from {in_elem} to {out_elem} is not supported (integers of 2 to 32 bits are)"
        )));
    }
    if !(0..(1 << 31)).contains(&multiplier) || !(0..=62).contains(&shift) {
        return Err(b.error(format!(
            "'tosa.rescale': multiplier {multiplier} and shift {shift} are out of range (0 <= multiplier < 2^31, 0 <= shift <= 62)"
        )));
    }
    let divisor = 1i64 << shift;
    let whole = multiplier % divisor == 0;
    match rounding_mode(b, op).as_str() {
        "SINGLE_ROUND" => {}
        "DOUBLE_ROUND" if shift <= 31 || whole => {}
        "INEXACT_ROUND" if whole => {}
        mode => {
            return Err(b.error(format!(
                "'tosa.rescale': {mode} with multiplier {multiplier} and shift {shift} is not supported (SINGLE_ROUND is, DOUBLE_ROUND up to shift 31, and any mode for a whole scale)"
            )))
        }
    }
    let i64t = Type::i64();
    let binary = |b: &mut Builder, kind: BinaryKind, l: Value, r: Value| {
        let loc = b.loc.clone();
        b.nn(nn::BinaryOp::build(b.ctx, kind, l, r, loc))
    };
    let wide = b.nn(nn::CastOp::build(b.ctx, x, &i64t, false, loc.clone()))?;
    let scaled = if whole {
        let factor = scalar(b, &i64t, (multiplier / divisor) as f64)?;
        binary(b, BinaryKind::Mul, wide, factor)?
    } else {
        let m = scalar(b, &i64t, multiplier as f64)?;
        let product = binary(b, BinaryKind::Mul, wide, m)?;
        let round = scalar(b, &i64t, (divisor / 2) as f64)?;
        let t = binary(b, BinaryKind::Add, product, round)?;
        let d = scalar(b, &i64t, divisor as f64)?;
        let rem = binary(b, BinaryKind::Mod, t, d)?;
        let exact = binary(b, BinaryKind::Sub, t, rem)?;
        binary(b, BinaryKind::Div, exact, d)?
    };
    let half = 1i64 << (out_bits - 1);
    let hi = scalar(b, &i64t, (half - 1) as f64)?;
    let lo = scalar(b, &i64t, -half as f64)?;
    let clamped = binary(b, BinaryKind::Min, scaled, hi)?;
    let clamped = binary(b, BinaryKind::Max, clamped, lo)?;
    b.nn(nn::CastOp::build(b.ctx, clamped, &out_elem, false, loc))
}
