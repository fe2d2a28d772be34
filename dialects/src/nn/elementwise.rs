//! Elementwise ops: binary arithmetic with numpy broadcasting (`nn.add`,
//! `nn.sub`, `nn.mul`, `nn.div`, `nn.mod`, `nn.pow`, `nn.max`, `nn.min`),
//! comparisons with `i1` results (`nn.equal`, `nn.less`, `nn.greater`),
//! `nn.where`, unary math (`nn.sqrt`, `nn.reciprocal`, `nn.exp`, `nn.log`,
//! `nn.tanh`, `nn.erf`, `nn.neg`, `nn.abs`, `nn.relu`, `nn.sigmoid`, the
//! trigonometric and hyperbolic functions and their inverses, `nn.floor`,
//! `nn.ceil`, `nn.round`), bit operations on integers (`nn.bitwise_and`,
//! `nn.bitwise_or`, `nn.bitwise_xor`, `nn.bitwise_not`, `nn.shift_left`,
//! `nn.shift_right`) and `nn.cast`.
//!
//! The scalar semantics ([`BinaryKind::apply_f64`], [`UnaryKind::apply_f64`],
//! ...) are public so that the reference interpreter computes exactly what the
//! folders compute: floats in `f64`, rounded once to the element type.

use ipuc_ir::dialect::{FoldResult, Traits};
use ipuc_ir::interfaces::{ElementWork, Elementwise, OpSignature};
use ipuc_ir::numeric::E8M0Rounding;
use ipuc_ir::types::FloatKind;
use ipuc_ir::{
    float_format, Attribute, Context, Diagnostic, Dialect, Location, OpId, OperationState, Type,
    Value,
};

use super::elements::{
    broadcast_source, dense_data, floats, fold_target, from_floats, from_ints, ints, strides,
    unchanged_operand,
};
use super::support::*;

/// `nn.where`.
pub const WHERE: &str = "nn.where";
/// `nn.cast`.
pub const CAST: &str = "nn.cast";

/// Binary arithmetic ops (numpy broadcasting, same element type in and out).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum BinaryKind {
    /// `nn.add`
    Add,
    /// `nn.sub`
    Sub,
    /// `nn.mul`
    Mul,
    /// `nn.div` (integers truncate toward zero)
    Div,
    /// `nn.mod` (`fmod = 1`: sign of the dividend, as C `fmod`; `fmod = 0`,
    /// the default: sign of the divisor, as Python `%`, for integers and
    /// floats alike, as ONNX allows since onnx/onnx#7520)
    Mod,
    /// `nn.pow`
    Pow,
    /// `nn.max` (NaN-propagating)
    Max,
    /// `nn.min` (NaN-propagating)
    Min,
    /// `nn.and` (logical, on `i1`)
    And,
    /// `nn.or` (logical, on `i1`)
    Or,
    /// `nn.xor` (logical, on `i1`)
    Xor,
    /// `nn.bitwise_and` (integers)
    BitAnd,
    /// `nn.bitwise_or` (integers)
    BitOr,
    /// `nn.bitwise_xor` (integers)
    BitXor,
    /// `nn.shift_left` (integers; bits shifted past the width are lost)
    ShiftLeft,
    /// `nn.shift_right` (integers; arithmetic on signed, logical on unsigned)
    ShiftRight,
}

impl BinaryKind {
    /// All binary kinds.
    pub const ALL: [BinaryKind; 16] = [
        BinaryKind::Add,
        BinaryKind::Sub,
        BinaryKind::Mul,
        BinaryKind::Div,
        BinaryKind::Mod,
        BinaryKind::Pow,
        BinaryKind::Max,
        BinaryKind::Min,
        BinaryKind::And,
        BinaryKind::Or,
        BinaryKind::Xor,
        BinaryKind::BitAnd,
        BinaryKind::BitOr,
        BinaryKind::BitXor,
        BinaryKind::ShiftLeft,
        BinaryKind::ShiftRight,
    ];
    /// The op name.
    pub fn name(self) -> &'static str {
        match self {
            BinaryKind::Add => "nn.add",
            BinaryKind::Sub => "nn.sub",
            BinaryKind::Mul => "nn.mul",
            BinaryKind::Div => "nn.div",
            BinaryKind::Mod => "nn.mod",
            BinaryKind::Pow => "nn.pow",
            BinaryKind::Max => "nn.max",
            BinaryKind::Min => "nn.min",
            BinaryKind::And => "nn.and",
            BinaryKind::Or => "nn.or",
            BinaryKind::Xor => "nn.xor",
            BinaryKind::BitAnd => "nn.bitwise_and",
            BinaryKind::BitOr => "nn.bitwise_or",
            BinaryKind::BitXor => "nn.bitwise_xor",
            BinaryKind::ShiftLeft => "nn.shift_left",
            BinaryKind::ShiftRight => "nn.shift_right",
        }
    }
    /// Whether the op is logical: defined on `i1` only.
    pub fn is_logical(self) -> bool {
        matches!(self, BinaryKind::And | BinaryKind::Or | BinaryKind::Xor)
    }
    /// Whether the op works on the bits of integers (not `i1`, not floats).
    pub fn is_bitwise(self) -> bool {
        matches!(
            self,
            BinaryKind::BitAnd
                | BinaryKind::BitOr
                | BinaryKind::BitXor
                | BinaryKind::ShiftLeft
                | BinaryKind::ShiftRight
        )
    }
    /// The kind of an op name.
    pub fn from_name(name: &str) -> Option<BinaryKind> {
        BinaryKind::ALL.into_iter().find(|k| k.name() == name)
    }
    /// Whether operands may be swapped.
    pub fn is_commutative(self) -> bool {
        matches!(
            self,
            BinaryKind::Add
                | BinaryKind::Mul
                | BinaryKind::Max
                | BinaryKind::Min
                | BinaryKind::And
                | BinaryKind::Or
                | BinaryKind::Xor
                | BinaryKind::BitAnd
                | BinaryKind::BitOr
                | BinaryKind::BitXor
        )
    }
    /// The float semantics (NaN for the bitwise kinds, which are integer-only). `fmod` is only read by `Mod`: C `fmod` when set,
    /// else Python's `%` (a zero remainder takes the divisor's sign, as numpy's).
    pub fn apply_f64(self, a: f64, b: f64, fmod: bool) -> f64 {
        match self {
            BinaryKind::Add => a + b,
            BinaryKind::Sub => a - b,
            BinaryKind::Mul => a * b,
            BinaryKind::Div => a / b,
            BinaryKind::Mod if fmod => a % b,
            BinaryKind::Mod => {
                let r = a % b;
                if r == 0.0 {
                    0f64.copysign(b)
                } else if (r < 0.0) != (b < 0.0) {
                    r + b
                } else {
                    r
                }
            }
            BinaryKind::Pow => a.powf(b),
            BinaryKind::Max if a.is_nan() || b.is_nan() => f64::NAN,
            BinaryKind::Min if a.is_nan() || b.is_nan() => f64::NAN,
            BinaryKind::Max => a.max(b),
            BinaryKind::Min => a.min(b),
            BinaryKind::And => f64::from(a != 0.0 && b != 0.0),
            BinaryKind::Or => f64::from(a != 0.0 || b != 0.0),
            BinaryKind::Xor => f64::from((a != 0.0) != (b != 0.0)),
            BinaryKind::BitAnd
            | BinaryKind::BitOr
            | BinaryKind::BitXor
            | BinaryKind::ShiftLeft
            | BinaryKind::ShiftRight => f64::NAN,
        }
    }
    /// The integer semantics before wrapping to the element width; `None`
    /// where the result is undefined (division by zero, negative exponent).
    /// `fmod` is only read by `Mod`.
    pub fn apply_int(self, a: i128, b: i128, fmod: bool) -> Option<i128> {
        Some(match self {
            BinaryKind::Add => a.wrapping_add(b),
            BinaryKind::Sub => a.wrapping_sub(b),
            BinaryKind::Mul => a.wrapping_mul(b),
            BinaryKind::Div => a.checked_div(b)?,
            BinaryKind::Mod => {
                let r = a.checked_rem(b)?;
                if !fmod && r != 0 && ((r < 0) != (b < 0)) {
                    r + b
                } else {
                    r
                }
            }
            BinaryKind::Pow => a.wrapping_pow(u32::try_from(b).ok()?),
            BinaryKind::Max => a.max(b),
            BinaryKind::Min => a.min(b),
            BinaryKind::And => i128::from(a != 0 && b != 0),
            BinaryKind::Or => i128::from(a != 0 || b != 0),
            BinaryKind::Xor => i128::from((a != 0) != (b != 0)),
            BinaryKind::BitAnd => a & b,
            BinaryKind::BitOr => a | b,
            BinaryKind::BitXor => a ^ b,
            // Values are held sign- or zero-extended, so shifting the wide
            // value and wrapping to the element width is the narrow shift.
            BinaryKind::ShiftLeft => u32::try_from(b)
                .ok()
                .map_or(0, |s| a.checked_shl(s).unwrap_or(0)),
            BinaryKind::ShiftRight => {
                let s = u32::try_from(b).unwrap_or(u32::MAX).min(127);
                a >> s
            }
        })
    }
}

/// Comparisons (numpy broadcasting, `i1` results).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum CompareKind {
    /// `nn.equal`
    Equal,
    /// `nn.less`
    Less,
    /// `nn.greater`
    Greater,
    /// `nn.less_equal`
    LessEqual,
    /// `nn.greater_equal`
    GreaterEqual,
}

impl CompareKind {
    /// All comparison kinds.
    pub const ALL: [CompareKind; 5] = [
        CompareKind::Equal,
        CompareKind::Less,
        CompareKind::Greater,
        CompareKind::LessEqual,
        CompareKind::GreaterEqual,
    ];
    /// The op name.
    pub fn name(self) -> &'static str {
        match self {
            CompareKind::Equal => "nn.equal",
            CompareKind::Less => "nn.less",
            CompareKind::Greater => "nn.greater",
            CompareKind::LessEqual => "nn.less_equal",
            CompareKind::GreaterEqual => "nn.greater_equal",
        }
    }
    /// The kind of an op name.
    pub fn from_name(name: &str) -> Option<CompareKind> {
        CompareKind::ALL.into_iter().find(|k| k.name() == name)
    }
    /// Whether `a kind b` holds, on integers or floats (where a NaN on either
    /// side makes it false).
    pub fn holds<T: PartialOrd>(self, a: T, b: T) -> bool {
        match self {
            CompareKind::Equal => a == b,
            CompareKind::Less => a < b,
            CompareKind::Greater => a > b,
            CompareKind::LessEqual => a <= b,
            CompareKind::GreaterEqual => a >= b,
        }
    }
}

/// Unary elementwise ops (result type = operand type).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum UnaryKind {
    /// `nn.sqrt`
    Sqrt,
    /// `nn.reciprocal`
    Reciprocal,
    /// `nn.exp`
    Exp,
    /// `nn.log` (natural logarithm)
    Log,
    /// `nn.tanh`
    Tanh,
    /// `nn.erf`
    Erf,
    /// `nn.neg`
    Neg,
    /// `nn.abs`
    Abs,
    /// `nn.relu`
    Relu,
    /// `nn.sigmoid`
    Sigmoid,
    /// `nn.not` (logical, on `i1`)
    Not,
    /// `nn.sin`
    Sin,
    /// `nn.cos`
    Cos,
    /// `nn.tan`
    Tan,
    /// `nn.asin`
    Asin,
    /// `nn.acos`
    Acos,
    /// `nn.atan`
    Atan,
    /// `nn.sinh`
    Sinh,
    /// `nn.cosh`
    Cosh,
    /// `nn.asinh`
    Asinh,
    /// `nn.acosh`
    Acosh,
    /// `nn.atanh`
    Atanh,
    /// `nn.floor`
    Floor,
    /// `nn.ceil`
    Ceil,
    /// `nn.round` (halves to even, as ONNX and numpy)
    Round,
    /// `nn.bitwise_not` (integers)
    BitNot,
}

impl UnaryKind {
    /// All unary kinds.
    pub const ALL: [UnaryKind; 26] = [
        UnaryKind::Sqrt,
        UnaryKind::Reciprocal,
        UnaryKind::Exp,
        UnaryKind::Log,
        UnaryKind::Tanh,
        UnaryKind::Erf,
        UnaryKind::Neg,
        UnaryKind::Abs,
        UnaryKind::Relu,
        UnaryKind::Sigmoid,
        UnaryKind::Not,
        UnaryKind::Sin,
        UnaryKind::Cos,
        UnaryKind::Tan,
        UnaryKind::Asin,
        UnaryKind::Acos,
        UnaryKind::Atan,
        UnaryKind::Sinh,
        UnaryKind::Cosh,
        UnaryKind::Asinh,
        UnaryKind::Acosh,
        UnaryKind::Atanh,
        UnaryKind::Floor,
        UnaryKind::Ceil,
        UnaryKind::Round,
        UnaryKind::BitNot,
    ];
    /// The op name.
    pub fn name(self) -> &'static str {
        match self {
            UnaryKind::Sqrt => "nn.sqrt",
            UnaryKind::Reciprocal => "nn.reciprocal",
            UnaryKind::Exp => "nn.exp",
            UnaryKind::Log => "nn.log",
            UnaryKind::Tanh => "nn.tanh",
            UnaryKind::Erf => "nn.erf",
            UnaryKind::Neg => "nn.neg",
            UnaryKind::Abs => "nn.abs",
            UnaryKind::Relu => "nn.relu",
            UnaryKind::Sigmoid => "nn.sigmoid",
            UnaryKind::Not => "nn.not",
            UnaryKind::Sin => "nn.sin",
            UnaryKind::Cos => "nn.cos",
            UnaryKind::Tan => "nn.tan",
            UnaryKind::Asin => "nn.asin",
            UnaryKind::Acos => "nn.acos",
            UnaryKind::Atan => "nn.atan",
            UnaryKind::Sinh => "nn.sinh",
            UnaryKind::Cosh => "nn.cosh",
            UnaryKind::Asinh => "nn.asinh",
            UnaryKind::Acosh => "nn.acosh",
            UnaryKind::Atanh => "nn.atanh",
            UnaryKind::Floor => "nn.floor",
            UnaryKind::Ceil => "nn.ceil",
            UnaryKind::Round => "nn.round",
            UnaryKind::BitNot => "nn.bitwise_not",
        }
    }
    /// The kind of an op name.
    pub fn from_name(name: &str) -> Option<UnaryKind> {
        UnaryKind::ALL.into_iter().find(|k| k.name() == name)
    }
    /// Whether the op is only defined on floats.
    pub fn requires_float(self) -> bool {
        !matches!(
            self,
            UnaryKind::Neg | UnaryKind::Abs | UnaryKind::Relu | UnaryKind::Not | UnaryKind::BitNot
        )
    }
    /// The float semantics.
    pub fn apply_f64(self, x: f64) -> f64 {
        match self {
            UnaryKind::Sqrt => x.sqrt(),
            UnaryKind::Reciprocal => 1.0 / x,
            UnaryKind::Exp => x.exp(),
            UnaryKind::Log => x.ln(),
            UnaryKind::Tanh => x.tanh(),
            UnaryKind::Erf => libm::erf(x),
            UnaryKind::Neg => -x,
            UnaryKind::Abs => x.abs(),
            UnaryKind::Relu => {
                if x < 0.0 {
                    0.0
                } else {
                    x
                }
            }
            UnaryKind::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            UnaryKind::Not => f64::from(x == 0.0),
            UnaryKind::Sin => x.sin(),
            UnaryKind::Cos => x.cos(),
            UnaryKind::Tan => x.tan(),
            UnaryKind::Asin => x.asin(),
            UnaryKind::Acos => x.acos(),
            UnaryKind::Atan => x.atan(),
            UnaryKind::Sinh => x.sinh(),
            UnaryKind::Cosh => x.cosh(),
            UnaryKind::Asinh => x.asinh(),
            UnaryKind::Acosh => x.acosh(),
            UnaryKind::Atanh => x.atanh(),
            UnaryKind::Floor => x.floor(),
            UnaryKind::Ceil => x.ceil(),
            UnaryKind::Round => x.round_ties_even(),
            UnaryKind::BitNot => f64::NAN,
        }
    }
    /// The integer semantics (before wrapping), for the kinds defined on integers.
    pub fn apply_int(self, x: i128) -> Option<i128> {
        match self {
            UnaryKind::Neg => Some(x.wrapping_neg()),
            UnaryKind::Abs => Some(x.wrapping_abs()),
            UnaryKind::Relu => Some(x.max(0)),
            UnaryKind::Not => Some(i128::from(x == 0)),
            UnaryKind::BitNot => Some(!x),
            _ => None,
        }
    }
}

// ----- inference --------------------------------------------------------------

fn numeric(e: &Type) -> bool {
    e.is_float() || e.is_integer() || e.is_index()
}

/// The broadcast result of two operands with the same element type.
fn broadcast_pair<'t>(lhs: &'t Type, rhs: &Type) -> InferResult<(Vec<i64>, &'t Type)> {
    let (ls, le) = ranked(lhs, "lhs")?;
    let (rs, re) = ranked(rhs, "rhs")?;
    if le != re {
        return Err(shape_err!(
            "operands have different element types: '{le}' vs '{re}'"
        ));
    }
    Ok((broadcast_shapes(ls, rs)?, le))
}

/// Result type of a binary arithmetic op: the broadcast shape, same element type.
pub fn infer_binary(kind: BinaryKind, lhs: &Type, rhs: &Type) -> InferResult<Type> {
    let (shape, e) = broadcast_pair(lhs, rhs)?;
    if kind.is_bitwise() && (!e.is_integer() || e.is_integer_of_width(1)) {
        return Err(shape_err!(
            "'{}' requires integer operands, got '{e}'",
            kind.name()
        ));
    }
    if kind.is_logical() && !e.is_integer_of_width(1) {
        return Err(shape_err!(
            "'{}' requires i1 operands, got '{e}'",
            kind.name()
        ));
    }
    if !numeric(e) {
        return Err(shape_err!(
            "'{}' requires numeric operands, got '{e}'",
            kind.name()
        ));
    }
    Ok(tensor(&shape, e))
}

/// Result type of a comparison: the broadcast shape of `i1`.
pub fn infer_compare(lhs: &Type, rhs: &Type) -> InferResult<Type> {
    let (shape, _) = broadcast_pair(lhs, rhs)?;
    Ok(tensor(&shape, &Type::i1()))
}

/// Result type of a unary op: the operand type.
pub fn infer_unary(kind: UnaryKind, x: &Type) -> InferResult<Type> {
    let (_, e) = ranked(x, "operand")?;
    if kind == UnaryKind::Not && !e.is_integer_of_width(1) {
        return Err(shape_err!("operand must be a tensor of i1, but got '{x}'"));
    }
    if kind == UnaryKind::BitNot && (!e.is_integer() || e.is_integer_of_width(1)) {
        return Err(shape_err!(
            "operand must have an integer element type, but got '{e}'"
        ));
    }
    if kind.requires_float() && !e.is_float() {
        return Err(shape_err!(
            "operand must have a floating-point element type, but got '{e}'"
        ));
    }
    if !numeric(e) {
        return Err(shape_err!(
            "operand must have a numeric element type, but got '{e}'"
        ));
    }
    Ok(x.clone())
}

/// Result type of `nn.where(cond, x, y)`: the three-way broadcast shape with
/// the element type of `x` and `y`.
pub fn infer_where(cond: &Type, x: &Type, y: &Type) -> InferResult<Type> {
    let (cs, ce) = ranked(cond, "condition")?;
    if !ce.is_integer_of_width(1) {
        return Err(shape_err!(
            "condition must be a tensor of i1, but got '{cond}'"
        ));
    }
    let (xy, e) = broadcast_pair(x, y)?;
    Ok(tensor(&broadcast_shapes(cs, &xy)?, e))
}

/// `nn.cast`'s attribute for rounding to `f8E8M0FNU` (ONNX `round_mode`).
pub const ROUND_MODE: &str = "round_mode";

/// Parses `round_mode` (`up`, `down`, `nearest`).
fn parse_round_mode(s: &str) -> InferResult<E8M0Rounding> {
    E8M0Rounding::from_onnx(s).ok_or_else(|| {
        shape_err!("'round_mode' must be \"up\", \"down\" or \"nearest\", but is \"{s}\"")
    })
}

/// Result type of `nn.cast` to element type `to`: the operand shape.
pub fn infer_cast(x: &Type, to: &Type) -> InferResult<Type> {
    let (s, e) = ranked(x, "operand")?;
    if !numeric(e) {
        return Err(shape_err!(
            "operand must have a numeric element type, but got '{e}'"
        ));
    }
    if !numeric(to) {
        return Err(shape_err!(
            "'to' must be an integer or float type, but got '{to}'"
        ));
    }
    Ok(tensor(s, to))
}

/// Infers the results of an elementwise op from its operands and attributes
/// (`None`: not an op of this family).
pub(crate) fn infer_from_op(ctx: &Context, op: OpId) -> Option<InferResult<Vec<Type>>> {
    let name = ctx.name_str(op);
    let t = value_types(ctx, ctx.operands(op));
    let r = if let Some(k) = BinaryKind::from_name(name) {
        infer_binary(k, &t[0], &t[1])
    } else if CompareKind::from_name(name).is_some() {
        infer_compare(&t[0], &t[1])
    } else if let Some(k) = UnaryKind::from_name(name) {
        infer_unary(k, &t[0])
    } else if name == WHERE {
        infer_where(&t[0], &t[1], &t[2])
    } else if name == CAST {
        let to = ctx.attr(op, "to").and_then(|a| a.as_type()).cloned()?;
        parse_round_mode(attr_str(ctx, op, ROUND_MODE, "up")).and_then(|_| infer_cast(&t[0], &to))
    } else {
        return None;
    };
    Some(r.map(|ty| vec![ty]))
}

// ----- folding ----------------------------------------------------------------

/// Applies `f` to broadcast pairs of `a` and `b` laid out as `out`.
fn zip_broadcast<A: Copy, B: Copy, R>(
    out: &Type,
    a: (&[i64], &[A]),
    b: (&[i64], &[B]),
    mut f: impl FnMut(A, B) -> Option<R>,
) -> Option<Vec<R>> {
    let shape = out.shape()?;
    let n = out.num_elements()? as usize;
    let (sa, sb) = (strides(a.0), strides(b.0));
    (0..n)
        .map(|i| {
            let ia = broadcast_source(i, shape, a.0, &sa);
            let ib = broadcast_source(i, shape, b.0, &sb);
            f(a.1[ia], b.1[ib])
        })
        .collect()
}

fn fold_binary(ctx: &Context, op: OpId, consts: &[Option<Attribute>]) -> Option<Vec<FoldResult>> {
    let kind = BinaryKind::from_name(ctx.name_str(op))?;
    let out = fold_target(ctx, op, 0)?;
    let a = dense_data(consts[0].as_ref()?)?;
    let b = dense_data(consts[1].as_ref()?)?;
    let (sa, sb) = (a.ty.shape()?.to_vec(), b.ty.shape()?.to_vec());
    let fmod = attr_i64(ctx, op, "fmod", 0) == 1;
    let attr = if a.element_type().is_float() {
        let (va, vb) = (floats(&a)?, floats(&b)?);
        let v = zip_broadcast(&out, (&sa, &va), (&sb, &vb), |x, y| {
            Some(kind.apply_f64(x, y, fmod))
        })?;
        from_floats(&out, &v)?
    } else {
        let (va, vb) = (ints(&a)?, ints(&b)?);
        let v = zip_broadcast(&out, (&sa, &va), (&sb, &vb), |x, y| {
            kind.apply_int(x, y, fmod)
        })?;
        from_ints(&out, &v)?
    };
    Some(vec![FoldResult::Constant(attr)])
}

fn fold_compare(ctx: &Context, op: OpId, consts: &[Option<Attribute>]) -> Option<Vec<FoldResult>> {
    let kind = CompareKind::from_name(ctx.name_str(op))?;
    let out = fold_target(ctx, op, 0)?;
    let a = dense_data(consts[0].as_ref()?)?;
    let b = dense_data(consts[1].as_ref()?)?;
    let (sa, sb) = (a.ty.shape()?.to_vec(), b.ty.shape()?.to_vec());
    let v: Vec<bool> = if a.element_type().is_float() {
        let (va, vb) = (floats(&a)?, floats(&b)?);
        zip_broadcast(&out, (&sa, &va), (&sb, &vb), |x, y| Some(kind.holds(x, y)))?
    } else {
        let (va, vb) = (ints(&a)?, ints(&b)?);
        zip_broadcast(&out, (&sa, &va), (&sb, &vb), |x, y| Some(kind.holds(x, y)))?
    };
    let v: Vec<i128> = v.into_iter().map(i128::from).collect();
    Some(vec![FoldResult::Constant(from_ints(&out, &v)?)])
}

fn fold_unary(ctx: &Context, op: OpId, consts: &[Option<Attribute>]) -> Option<Vec<FoldResult>> {
    let kind = UnaryKind::from_name(ctx.name_str(op))?;
    let out = fold_target(ctx, op, 0)?;
    let a = dense_data(consts[0].as_ref()?)?;
    let attr = if a.element_type().is_float() {
        let v: Vec<f64> = floats(&a)?.into_iter().map(|x| kind.apply_f64(x)).collect();
        from_floats(&out, &v)?
    } else {
        let v: Option<Vec<i128>> = ints(&a)?.into_iter().map(|x| kind.apply_int(x)).collect();
        from_ints(&out, &v?)?
    };
    Some(vec![FoldResult::Constant(attr)])
}

fn fold_where(ctx: &Context, op: OpId, consts: &[Option<Attribute>]) -> Option<Vec<FoldResult>> {
    let out = fold_target(ctx, op, 0)?;
    let c = dense_data(consts[0].as_ref()?)?;
    let x = dense_data(consts[1].as_ref()?)?;
    let y = dense_data(consts[2].as_ref()?)?;
    let shape = out.shape()?.to_vec();
    let (sc, sx, sy) = (
        c.ty.shape()?.to_vec(),
        x.ty.shape()?.to_vec(),
        y.ty.shape()?.to_vec(),
    );
    let (tc, tx, ty) = (strides(&sc), strides(&sx), strides(&sy));
    let source = |i: usize| -> (bool, usize, usize) {
        (
            c.int_at(broadcast_source(i, &shape, &sc, &tc)) != 0,
            broadcast_source(i, &shape, &sx, &tx),
            broadcast_source(i, &shape, &sy, &ty),
        )
    };
    let n = out.num_elements()? as usize;
    let attr = if x.element_type().is_float() {
        let v: Vec<f64> = (0..n)
            .map(|i| match source(i) {
                (true, ix, _) => x.float_at(ix),
                (false, _, iy) => y.float_at(iy),
            })
            .collect();
        from_floats(&out, &v)?
    } else {
        let v: Vec<i128> = (0..n)
            .map(|i| match source(i) {
                (true, ix, _) => x.int_at(ix),
                (false, _, iy) => y.int_at(iy),
            })
            .collect();
        from_ints(&out, &v)?
    };
    Some(vec![FoldResult::Constant(attr)])
}

/// The largest finite value of an 8-bit float format and the magnitude from
/// which round-to-nearest overflows it.
fn fp8_overflow_bounds(kind: FloatKind) -> (f64, f64) {
    let mut finite: Vec<f64> = (0u64..0x80)
        .map(|c| float_format::decode_bits(kind, c))
        .filter(|v| v.is_finite())
        .collect();
    finite.sort_by(f64::total_cmp);
    let max = finite[finite.len() - 1];
    let below = finite[finite.len() - 2];
    (max, max + (max - below) / 2.0)
}

/// Converts one float for `nn.cast` to float kind `kind`. `saturate`
/// (ONNX, 8-bit targets only): out-of-range values and infinities clamp to the
/// largest finite value instead of becoming NaN (E4M3) or infinity (E5M2).
pub fn cast_float_to_float(v: f64, kind: FloatKind, saturate: bool) -> f64 {
    if kind.bit_width() != 8 || v.is_nan() {
        return float_format::round_to(kind, v);
    }
    let (max, overflow) = fp8_overflow_bounds(kind);
    let has_inf = kind == FloatKind::F8E5M2;
    if v.abs() >= overflow {
        return if saturate {
            max.copysign(v)
        } else if has_inf {
            f64::INFINITY.copysign(v)
        } else {
            f64::NAN
        };
    }
    float_format::round_to(kind, v)
}

/// Converts one float for `nn.cast` to an integer type of `width` bits
/// (truncation toward zero; to `i1`: nonzero is 1). `None` where ONNX leaves
/// the result undefined (NaN, infinity, out of range).
pub fn cast_float_to_int(v: f64, width: u32, signed: bool) -> Option<i128> {
    if width == 1 {
        return Some((v != 0.0) as i128);
    }
    if !v.is_finite() {
        return None;
    }
    let t = v.trunc();
    let (lo, hi) = if signed {
        (
            -(2f64.powi(width as i32 - 1)),
            2f64.powi(width as i32 - 1) - 1.0,
        )
    } else {
        (0.0, 2f64.powi(width as i32) - 1.0)
    };
    (t >= lo && t <= hi).then_some(t as i128)
}

fn fold_cast(ctx: &Context, op: OpId, consts: &[Option<Attribute>]) -> Option<Vec<FoldResult>> {
    if let Some(same) = unchanged_operand(ctx, op) {
        return Some(same);
    }
    let out = fold_target(ctx, op, 0)?;
    let d = dense_data(consts[0].as_ref()?)?;
    let to = out.element_type()?.clone();
    if to.float_kind() == Some(FloatKind::F8E8M0FNU) {
        // The result depends on 'round_mode' and follows ONNX's reference bit for
        // bit (through f32); the reference executor's kernel is that definition.
        return None;
    }
    let saturate = attr_i64(ctx, op, "saturate", 1) != 0;
    let attr = match (d.element_type().is_float(), to.float_kind()) {
        (true, Some(k)) => {
            let v: Vec<f64> = floats(&d)?
                .into_iter()
                .map(|v| cast_float_to_float(v, k, saturate))
                .collect();
            from_floats(&out, &v)?
        }
        (true, None) => {
            let width = to.int_or_float_bit_width()?;
            let signed = !matches!(
                to.kind(),
                ipuc_ir::TypeKind::Integer {
                    signedness: ipuc_ir::types::Signedness::Unsigned,
                    ..
                }
            );
            let v: Option<Vec<i128>> = floats(&d)?
                .into_iter()
                .map(|v| cast_float_to_int(v, width, signed))
                .collect();
            from_ints(&out, &v?)?
        }
        (false, Some(_)) => {
            let v: Vec<f64> = ints(&d)?.into_iter().map(|v| v as f64).collect();
            from_floats(&out, &v)?
        }
        (false, None) => {
            let to_bool = to.is_integer_of_width(1);
            let v: Vec<i128> = ints(&d)?
                .into_iter()
                .map(|v| if to_bool { (v != 0) as i128 } else { v })
                .collect();
            from_ints(&out, &v)?
        }
    };
    Some(vec![FoldResult::Constant(attr)])
}

// ----- registration -------------------------------------------------------------

// ----- interfaces ---------------------------------------------------------------

impl Elementwise for BinaryKind {
    fn work(&self, _: &OpSignature<'_>) -> ElementWork {
        match self {
            BinaryKind::Add
            | BinaryKind::Sub
            | BinaryKind::Mul
            | BinaryKind::Max
            | BinaryKind::Min
            | BinaryKind::And
            | BinaryKind::Or
            | BinaryKind::Xor
            | BinaryKind::BitAnd
            | BinaryKind::BitOr
            | BinaryKind::BitXor
            | BinaryKind::ShiftLeft
            | BinaryKind::ShiftRight => ElementWork::flops(1),
            BinaryKind::Div | BinaryKind::Mod | BinaryKind::Pow => ElementWork::special(1),
        }
    }
}

impl Elementwise for UnaryKind {
    fn work(&self, _: &OpSignature<'_>) -> ElementWork {
        match self {
            UnaryKind::Neg
            | UnaryKind::Abs
            | UnaryKind::Relu
            | UnaryKind::Not
            | UnaryKind::BitNot
            | UnaryKind::Floor
            | UnaryKind::Ceil
            | UnaryKind::Round => ElementWork::flops(1),
            UnaryKind::Sqrt
            | UnaryKind::Reciprocal
            | UnaryKind::Exp
            | UnaryKind::Log
            | UnaryKind::Tanh
            | UnaryKind::Erf
            | UnaryKind::Sigmoid
            | UnaryKind::Sin
            | UnaryKind::Cos
            | UnaryKind::Tan
            | UnaryKind::Asin
            | UnaryKind::Acos
            | UnaryKind::Atan
            | UnaryKind::Sinh
            | UnaryKind::Cosh
            | UnaryKind::Asinh
            | UnaryKind::Acosh
            | UnaryKind::Atanh => ElementWork::special(1),
        }
    }
}

impl Elementwise for CompareKind {
    fn work(&self, _: &OpSignature<'_>) -> ElementWork {
        ElementWork::flops(1)
    }
}

/// `nn.where` (a select) and `nn.cast` (a conversion): one operation each.
struct OneOperation;

impl Elementwise for OneOperation {
    fn work(&self, _: &OpSignature<'_>) -> ElementWork {
        ElementWork::flops(1)
    }
}

pub(crate) fn register(mut d: Dialect) -> Dialect {
    for k in BinaryKind::ALL {
        let mut def = nn_op(
            k.name(),
            "Elementwise binary arithmetic with numpy broadcasting",
        )
        .operands(&[one("lhs", TENSOR), one("rhs", TENSOR)])
        .results(&[one("result", TENSOR)])
        .folder(fold_binary)
        .implement::<dyn Elementwise>(Box::new(k));
        if k.is_commutative() {
            def = def.traits(Traits::COMMUTATIVE);
        }
        if k == BinaryKind::Mod {
            def = def.attribute(i64_attr("fmod", true));
        }
        d = d.op(def);
    }
    for k in CompareKind::ALL {
        let mut def = nn_op(
            k.name(),
            "Elementwise comparison with numpy broadcasting; i1 results",
        )
        .operands(&[one("lhs", TENSOR), one("rhs", TENSOR)])
        .results(&[one("result", BOOL_TENSOR)])
        .folder(fold_compare)
        .implement::<dyn Elementwise>(Box::new(k));
        if k == CompareKind::Equal {
            def = def.traits(Traits::COMMUTATIVE);
        }
        d = d.op(def);
    }
    for k in UnaryKind::ALL {
        d = d.op(nn_op(k.name(), "Elementwise unary math")
            .traits(Traits::SAME_OPERANDS_AND_RESULT_TYPE)
            .operands(&[one("operand", TENSOR)])
            .results(&[one("result", TENSOR)])
            .folder(fold_unary)
            .implement::<dyn Elementwise>(Box::new(k)));
    }
    d.op(nn_op(
        WHERE,
        "Elementwise select: cond ? x : y, with numpy broadcasting",
    )
    .operands(&[
        one("condition", BOOL_TENSOR),
        one("x", TENSOR),
        one("y", TENSOR),
    ])
    .results(&[one("result", TENSOR)])
    .folder(fold_where)
    .implement::<dyn Elementwise>(Box::new(OneOperation)))
        .op(nn_op(
            CAST,
            "Elementwise conversion to the element type 'to' (ONNX Cast)",
        )
        .attribute(type_attr("to", false))
        .attribute(i64_attr("saturate", true))
        .attribute(string_attr(ROUND_MODE, true))
        .operands(&[one("operand", TENSOR)])
        .results(&[one("result", TENSOR)])
        .folder(fold_cast)
        .implement::<dyn Elementwise>(Box::new(OneOperation)))
}

// ----- typed wrappers --------------------------------------------------------------

op_family_wrapper!(
    /// Any binary arithmetic op.
    BinaryOp,
    BinaryKind,
    "binary op"
);

operand_accessors!(BinaryOp {
    /// The left operand.
    lhs = 0,
    /// The right operand.
    rhs = 1,
});

impl BinaryOp {
    /// `nn.mod`'s `fmod` (default 0).
    pub fn fmod(self, ctx: &Context) -> bool {
        attr_i64(ctx, self.0, "fmod", 0) == 1
    }
}
inferred_builder!(BinaryOp {
    /// A state for `kind(lhs, rhs)` with the inferred result type (`nn.mod`
    /// without `fmod`, i.e. Python's `%`; add the attribute for C `fmod`).
    build(kind: BinaryKind; lhs, rhs) = infer_binary(kind, lhs, rhs)
});

op_family_wrapper!(
    /// Any comparison op.
    CompareOp,
    CompareKind,
    "comparison op"
);

operand_accessors!(CompareOp {
    /// The left operand.
    lhs = 0,
    /// The right operand.
    rhs = 1,
});

inferred_builder!(CompareOp {
    /// A state for `kind(lhs, rhs)`.
    build(kind: CompareKind; lhs, rhs) = infer_compare(lhs, rhs)
});

op_family_wrapper!(
    /// Any unary elementwise op.
    UnaryOp,
    UnaryKind,
    "unary op"
);

operand_accessors!(UnaryOp {
    /// The operand.
    operand = 0,
});

inferred_builder!(UnaryOp {
    /// A state for `kind(x)`.
    build(kind: UnaryKind; x) = infer_unary(kind, x)
});

super::support::op_wrapper!(
    /// `nn.where(condition, x, y)`.
    WhereOp,
    WHERE
);

operand_accessors!(WhereOp {
    /// The `i1` condition.
    condition = 0,
    /// Taken where the condition holds.
    x = 1,
    /// Taken elsewhere.
    y = 2,
});

inferred_builder!(WhereOp {
    /// A state for `where(cond, x, y)`.
    build(cond, x, y) = infer_where(cond, x, y)
});

super::support::op_wrapper!(
    /// `nn.cast {to = T, saturate = 0|1, round_mode = "up"|"down"|"nearest"}`.
    CastOp,
    CAST
);

operand_accessors!(CastOp {
    /// The operand.
    operand = 0,
});

impl CastOp {
    /// The target element type.
    pub fn to(self, ctx: &Context) -> Type {
        ctx.value_type(ctx.result(self.0, 0))
            .element_type()
            .expect("verified cast result is a tensor")
            .clone()
    }
    /// ONNX `saturate` (default 1; only affects 8-bit float targets).
    pub fn saturate(self, ctx: &Context) -> bool {
        attr_i64(ctx, self.0, "saturate", 1) != 0
    }
    /// ONNX `round_mode` (default `up`; only affects `f8E8M0FNU` targets).
    pub fn e8m0_rounding(self, ctx: &Context) -> E8M0Rounding {
        parse_round_mode(attr_str(ctx, self.0, ROUND_MODE, "up")).unwrap_or_default()
    }
    /// A state for casting `x` to element type `to` (rounding up to `f8E8M0FNU`).
    pub fn build(
        ctx: &Context,
        x: Value,
        to: &Type,
        saturate: bool,
        loc: Location,
    ) -> Result<OperationState, Diagnostic> {
        Self::build_rounding(ctx, x, to, saturate, E8M0Rounding::Up, loc)
    }
    /// [`CastOp::build`] with ONNX's `round_mode` for `f8E8M0FNU` targets.
    pub fn build_rounding(
        ctx: &Context,
        x: Value,
        to: &Type,
        saturate: bool,
        rounding: E8M0Rounding,
        loc: Location,
    ) -> Result<OperationState, Diagnostic> {
        let ty = infer_cast(ctx.value_type(x), to);
        let mut attrs = vec![("to", type_attribute(to))];
        if !saturate {
            attrs.push(("saturate", Attribute::i64(0)));
        }
        if rounding != E8M0Rounding::Up {
            attrs.push((ROUND_MODE, Attribute::string(rounding.onnx_name())));
        }
        build_inferred(ctx, CAST, &[x], ty, attrs, loc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_semantics_follow_onnx() {
        use BinaryKind::*;
        // Python-style mod takes the divisor's sign, fmod the dividend's.
        assert_eq!(Mod.apply_int(-7, 2, false), Some(1));
        assert_eq!(Mod.apply_int(7, -2, false), Some(-1));
        assert_eq!(Mod.apply_int(-7, 2, true), Some(-1));
        assert_eq!(Div.apply_int(-7, 2, false), Some(-3));
        assert_eq!(Div.apply_int(1, 0, false), None);
        assert_eq!(Mod.apply_int(1, 0, false), None);
        assert_eq!(Pow.apply_int(3, 4, false), Some(81));
        assert_eq!(Pow.apply_int(3, -1, false), None);
        assert!(Max.apply_f64(f64::NAN, 1.0, false).is_nan());
        assert!(Min.apply_f64(1.0, f64::NAN, false).is_nan());
        assert_eq!(UnaryKind::Abs.apply_int(-5), Some(5));
        assert_eq!(UnaryKind::Exp.apply_int(1), None);
    }

    #[test]
    fn float_mod_follows_python_or_c() {
        use BinaryKind::Mod;
        assert_eq!(Mod.apply_f64(-4.5, 2.0, false), 1.5);
        assert_eq!(Mod.apply_f64(4.5, -2.0, false), -1.5);
        assert_eq!(Mod.apply_f64(-4.5, 2.0, true), -0.5);
        // A zero remainder takes the divisor's sign; NaN stays NaN.
        assert!(Mod.apply_f64(4.0, -2.0, false).is_sign_negative());
        assert!(Mod.apply_f64(-4.0, 2.0, false).is_sign_positive());
        assert!(Mod.apply_f64(f64::NAN, 2.0, false).is_nan());
        assert_eq!(Mod.apply_f64(-1.0, f64::INFINITY, false), f64::INFINITY);
    }

    #[test]
    fn fp8_cast_saturation() {
        let k = FloatKind::F8E4M3FNUZ;
        // Largest finite 240; the next step would be 256, so 248 is the overflow midpoint.
        assert_eq!(cast_float_to_float(250.0, k, true), 240.0);
        assert_eq!(cast_float_to_float(247.9, k, false), 240.0);
        assert!(cast_float_to_float(248.0, k, false).is_nan());
        assert_eq!(cast_float_to_float(f64::NEG_INFINITY, k, true), -240.0);
        assert!(cast_float_to_float(f64::INFINITY, k, false).is_nan());
        let e5 = FloatKind::F8E5M2;
        assert_eq!(cast_float_to_float(1e6, e5, false), f64::INFINITY);
        assert_eq!(cast_float_to_float(1e6, e5, true), 57344.0);
        // Saturation only concerns 8-bit formats.
        assert_eq!(
            cast_float_to_float(1e6, FloatKind::F16, true),
            f64::INFINITY
        );
    }

    #[test]
    fn float_to_int_cast_truncates_and_rejects_out_of_range() {
        assert_eq!(cast_float_to_int(2.9, 32, true), Some(2));
        assert_eq!(cast_float_to_int(-2.9, 32, true), Some(-2));
        assert_eq!(cast_float_to_int(300.0, 8, true), None);
        assert_eq!(cast_float_to_int(255.0, 8, false), Some(255));
        assert_eq!(cast_float_to_int(-1.0, 8, false), None);
        assert_eq!(cast_float_to_int(f64::NAN, 32, true), None);
        assert_eq!(cast_float_to_int(f64::NAN, 1, false), Some(1));
        assert_eq!(cast_float_to_int(0.0, 1, false), Some(0));
    }
}
