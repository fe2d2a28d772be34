//! Element-wise kernels with numpy broadcasting: arithmetic, comparisons,
//! activations, `Where` and `Cast`.

use ipuc_dialects::nn::UnaryKind as K;
pub use ipuc_dialects::nn::{GeluApproximation, UnaryKind};
use ipuc_ir::numeric::{storage, E8M0Rounding, ElementKind};
use rayon::prelude::*;

use super::error::{KernelError, KernelResult};
use super::host_tensor::{HostTensor, Values, PARALLEL_THRESHOLD};
use super::shape::{broadcast_indices, broadcast_shapes};
use super::{fast_f32, fast_math};

/// A binary element-wise operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    /// `a + b` (integers wrap).
    Add,
    /// `a - b` (integers wrap).
    Sub,
    /// `a * b` (integers wrap).
    Mul,
    /// `a / b`; integers truncate toward zero, division by zero is an error.
    Div,
    /// ONNX `Mod`: with `fmod` the remainder has the sign of the dividend (C `fmod`),
    /// without it the sign of the divisor (Python/numpy `%`).
    Mod {
        /// The ONNX `fmod` attribute.
        fmod: bool,
    },
    /// ONNX `Pow`: the result has the base's element type; the exponent may be of
    /// any numeric type.
    Pow,
    /// Larger of the two (NaN propagates).
    Max,
    /// Smaller of the two (NaN propagates).
    Min,
    /// `a == b`, a bool tensor.
    Equal,
    /// `a < b`, a bool tensor.
    Less,
    /// `a > b`, a bool tensor.
    Greater,
    /// `a <= b`, a bool tensor.
    LessEqual,
    /// `a >= b`, a bool tensor.
    GreaterEqual,
    /// Logical and of two bool tensors.
    And,
    /// Logical or of two bool tensors.
    Or,
    /// Logical exclusive or of two bool tensors.
    Xor,
    /// Bitwise and of two integer tensors.
    BitAnd,
    /// Bitwise or of two integer tensors.
    BitOr,
    /// Bitwise exclusive or of two integer tensors.
    BitXor,
    /// `a << b` on integers (bits past the width are lost).
    ShiftLeft,
    /// `a >> b` on integers (logical on unsigned kinds).
    ShiftRight,
}

impl BinaryOp {
    fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "sub",
            BinaryOp::Mul => "mul",
            BinaryOp::Div => "div",
            BinaryOp::Mod { .. } => "mod",
            BinaryOp::Pow => "pow",
            BinaryOp::Max => "max",
            BinaryOp::Min => "min",
            BinaryOp::Equal => "equal",
            BinaryOp::Less => "less",
            BinaryOp::Greater => "greater",
            BinaryOp::LessEqual => "less_equal",
            BinaryOp::GreaterEqual => "greater_equal",
            BinaryOp::And => "and",
            BinaryOp::Or => "or",
            BinaryOp::Xor => "xor",
            BinaryOp::BitAnd => "bitwise_and",
            BinaryOp::BitOr => "bitwise_or",
            BinaryOp::BitXor => "bitwise_xor",
            BinaryOp::ShiftLeft => "shift_left",
            BinaryOp::ShiftRight => "shift_right",
        }
    }

    fn is_bitwise(self) -> bool {
        matches!(
            self,
            BinaryOp::BitAnd
                | BinaryOp::BitOr
                | BinaryOp::BitXor
                | BinaryOp::ShiftLeft
                | BinaryOp::ShiftRight
        )
    }

    fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Equal
                | BinaryOp::Less
                | BinaryOp::Greater
                | BinaryOp::LessEqual
                | BinaryOp::GreaterEqual
        )
    }
}

/// Applies a binary operation with numpy broadcasting. Both operands must have the
/// same element kind, except for `Pow`.
pub fn binary(op: BinaryOp, a: &HostTensor, b: &HostTensor) -> KernelResult<HostTensor> {
    let name = op.name();
    if op != BinaryOp::Pow && a.kind != b.kind {
        return Err(KernelError::ElementType {
            op: name,
            kind: format!("{} with {}", a.kind, b.kind),
        });
    }
    if op.is_bitwise() && (a.kind.is_float() || a.kind == ElementKind::Bool) {
        return Err(KernelError::ElementType {
            op: name,
            kind: a.kind.to_string(),
        });
    }
    let shape = broadcast_shapes(name, &[&a.shape, &b.shape])?;
    if a.kind == ElementKind::F32 && b.kind == ElementKind::F32 && !op.is_comparison() {
        if let Some(t) = binary_f32(op, a, b, &shape) {
            return Ok(t);
        }
    }
    let ia = broadcast_indices(&a.shape, &shape);
    let ib = broadcast_indices(&b.shape, &shape);
    let out_kind = if op.is_comparison() {
        ElementKind::Bool
    } else {
        a.kind
    };
    let values = match (a.values(), b.values()) {
        (Values::F32(x), Values::F32(y)) => float_binary(op, &x, &y, &ia, &ib, Values::F32)?,
        (Values::F64(x), Values::F64(y)) => float_binary(op, &x, &y, &ia, &ib, Values::F64)?,
        (Values::Int(x), Values::Int(y)) => Values::Int(
            ia.iter()
                .zip(&ib)
                .map(|(&i, &j)| int_binary(op, x[i], y[j]))
                .collect::<KernelResult<_>>()?,
        ),
        // Mixed kinds: only Pow gets here.
        (Values::Int(x), exponent) => {
            let y = as_f64(exponent);
            Values::Int(
                ia.iter()
                    .zip(&ib)
                    .map(|(&i, &j)| (x[i] as f64).powf(y[j]) as i128)
                    .collect(),
            )
        }
        (Values::F32(x), exponent) => {
            let y = as_f64(exponent);
            Values::F32(
                ia.iter()
                    .zip(&ib)
                    .map(|(&i, &j)| x[i].powf(y[j] as f32))
                    .collect(),
            )
        }
        (Values::F64(x), exponent) => {
            let y = as_f64(exponent);
            Values::F64(ia.iter().zip(&ib).map(|(&i, &j)| x[i].powf(y[j])).collect())
        }
    };
    Ok(HostTensor::from_values(out_kind, shape, values))
}

/// The f32 fast path of [`binary`] (see [`fast_f32`]).
fn binary_f32(op: BinaryOp, a: &HostTensor, b: &HostTensor, shape: &[usize]) -> Option<HostTensor> {
    let (x, y) = (fast_f32::f32_elements(a), fast_f32::f32_elements(b));
    // One monomorphic closure per common op, so their loops vectorise.
    macro_rules! run {
        ($f:expr) => {
            fast_f32::broadcast_binary(&x, &a.shape, &y, &b.shape, shape, $f)
        };
    }
    match op {
        BinaryOp::Add => run!(|p, q| p + q),
        BinaryOp::Sub => run!(|p, q| p - q),
        BinaryOp::Mul => run!(|p, q| p * q),
        BinaryOp::Div => run!(|p, q| p / q),
        _ => run!(|p, q| float_op(op, p, q)),
    }
}

fn as_f64(values: Values) -> Vec<f64> {
    match values {
        Values::F32(v) => v.into_iter().map(f64::from).collect(),
        Values::F64(v) => v,
        Values::Int(v) => v.into_iter().map(|x| x as f64).collect(),
    }
}

/// One float operation, shared by the generic kernel and the f32 fast path
/// (so both compute exactly the same values).
fn float_op<T: Float>(op: BinaryOp, a: T, b: T) -> T {
    match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        BinaryOp::Div => a / b,
        BinaryOp::Mod { fmod: true } => a % b,
        BinaryOp::Mod { fmod: false } => {
            // numpy's mod: the remainder takes the divisor's sign.
            let r = a % b;
            if r != T::zero() && (r < T::zero()) != (b < T::zero()) {
                r + b
            } else if r == T::zero() {
                // Zero remainder carries the divisor's sign, as numpy does.
                T::zero().copysign(b)
            } else {
                r
            }
        }
        BinaryOp::Pow => a.powf(b),
        BinaryOp::Max => {
            if a.is_nan() || b.is_nan() {
                T::nan()
            } else if a >= b {
                a
            } else {
                b
            }
        }
        BinaryOp::Min => {
            if a.is_nan() || b.is_nan() {
                T::nan()
            } else if a <= b {
                a
            } else {
                b
            }
        }
        BinaryOp::Equal => T::from_bool(a == b),
        BinaryOp::Less => T::from_bool(a < b),
        BinaryOp::Greater => T::from_bool(a > b),
        BinaryOp::LessEqual => T::from_bool(a <= b),
        BinaryOp::GreaterEqual => T::from_bool(a >= b),
        BinaryOp::And => T::from_bool(a != T::zero() && b != T::zero()),
        BinaryOp::Or => T::from_bool(a != T::zero() || b != T::zero()),
        BinaryOp::Xor => T::from_bool((a != T::zero()) != (b != T::zero())),
        // Integer-only: `binary` refuses float operands before this.
        BinaryOp::BitAnd
        | BinaryOp::BitOr
        | BinaryOp::BitXor
        | BinaryOp::ShiftLeft
        | BinaryOp::ShiftRight => T::nan(),
    }
}

/// Float arithmetic, generic over the f32 and f64 compute domains.
fn float_binary<T>(
    op: BinaryOp,
    x: &[T],
    y: &[T],
    ia: &[usize],
    ib: &[usize],
    wrap: fn(Vec<T>) -> Values,
) -> KernelResult<Values>
where
    T: Float,
{
    let f = |a: T, b: T| float_op(op, a, b);
    let out: Vec<T> = if ia.len() >= PARALLEL_THRESHOLD {
        ia.par_iter()
            .zip(ib.par_iter())
            .map(|(&i, &j)| f(x[i], y[j]))
            .collect()
    } else {
        ia.iter().zip(ib).map(|(&i, &j)| f(x[i], y[j])).collect()
    };
    if op.is_comparison() {
        return Ok(Values::Int(
            out.into_iter()
                .map(|v| i128::from(v != T::zero()))
                .collect(),
        ));
    }
    Ok(wrap(out))
}

fn int_binary(op: BinaryOp, a: i128, b: i128) -> KernelResult<i128> {
    let by_zero = || KernelError::Arithmetic {
        op: op.name(),
        detail: "integer division by zero".to_string(),
    };
    Ok(match op {
        BinaryOp::Add => a.wrapping_add(b),
        BinaryOp::Sub => a.wrapping_sub(b),
        BinaryOp::Mul => a.wrapping_mul(b),
        BinaryOp::Div => a.checked_div(b).ok_or_else(by_zero)?,
        BinaryOp::Mod { fmod: true } => a.checked_rem(b).ok_or_else(by_zero)?,
        BinaryOp::Mod { fmod: false } => {
            let r = a.checked_rem(b).ok_or_else(by_zero)?;
            if r != 0 && (r < 0) != (b < 0) {
                r + b
            } else {
                r
            }
        }
        BinaryOp::Pow => int_pow(a, b),
        BinaryOp::Max => a.max(b),
        BinaryOp::Min => a.min(b),
        BinaryOp::Equal => i128::from(a == b),
        BinaryOp::Less => i128::from(a < b),
        BinaryOp::Greater => i128::from(a > b),
        BinaryOp::LessEqual => i128::from(a <= b),
        BinaryOp::GreaterEqual => i128::from(a >= b),
        BinaryOp::And => i128::from(a != 0 && b != 0),
        BinaryOp::Or => i128::from(a != 0 || b != 0),
        BinaryOp::Xor => i128::from((a != 0) != (b != 0)),
        BinaryOp::BitAnd => a & b,
        BinaryOp::BitOr => a | b,
        BinaryOp::BitXor => a ^ b,
        // Values are held sign- or zero-extended, so the wide shift wrapped to
        // the element width (when stored) is the narrow shift.
        BinaryOp::ShiftLeft => u32::try_from(b)
            .ok()
            .map_or(0, |s| a.checked_shl(s).unwrap_or(0)),
        BinaryOp::ShiftRight => a >> u32::try_from(b).unwrap_or(u32::MAX).min(127),
    })
}

/// Integer power with wrapping; negative exponents give the truncated reciprocal.
fn int_pow(base: i128, exponent: i128) -> i128 {
    if exponent < 0 {
        return match base {
            1 => 1,
            -1 if exponent % 2 == 0 => 1,
            -1 => -1,
            _ => 0,
        };
    }
    let (mut result, mut b, mut e) = (1i128, base, exponent);
    while e > 0 {
        if e & 1 == 1 {
            result = result.wrapping_mul(b);
        }
        b = b.wrapping_mul(b);
        e >>= 1;
    }
    result
}

/// The minimal float interface the generic kernels need (f32 and f64).
pub(crate) trait Float:
    Copy
    + PartialOrd
    + Send
    + Sync
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Rem<Output = Self>
    + std::ops::Neg<Output = Self>
{
    fn zero() -> Self;
    fn nan() -> Self;
    fn from_bool(b: bool) -> Self;
    fn is_nan(self) -> bool;
    fn powf(self, e: Self) -> Self;
    fn copysign(self, sign: Self) -> Self;
}

macro_rules! impl_float {
    ($t:ty) => {
        impl Float for $t {
            fn zero() -> Self {
                0.0
            }
            fn nan() -> Self {
                <$t>::NAN
            }
            fn from_bool(b: bool) -> Self {
                if b {
                    1.0
                } else {
                    0.0
                }
            }
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            fn powf(self, e: Self) -> Self {
                <$t>::powf(self, e)
            }
            fn copysign(self, sign: Self) -> Self {
                <$t>::copysign(self, sign)
            }
        }
    };
}
impl_float!(f32);
impl_float!(f64);

/// `a + b`.
pub fn add(a: &HostTensor, b: &HostTensor) -> KernelResult<HostTensor> {
    binary(BinaryOp::Add, a, b)
}
/// `a - b`.
pub fn sub(a: &HostTensor, b: &HostTensor) -> KernelResult<HostTensor> {
    binary(BinaryOp::Sub, a, b)
}
/// `a * b`.
pub fn mul(a: &HostTensor, b: &HostTensor) -> KernelResult<HostTensor> {
    binary(BinaryOp::Mul, a, b)
}
/// `a / b`.
pub fn div(a: &HostTensor, b: &HostTensor) -> KernelResult<HostTensor> {
    binary(BinaryOp::Div, a, b)
}
/// ONNX `Mod`.
pub fn modulo(a: &HostTensor, b: &HostTensor, fmod: bool) -> KernelResult<HostTensor> {
    binary(BinaryOp::Mod { fmod }, a, b)
}
/// ONNX `Pow`.
pub fn pow(a: &HostTensor, b: &HostTensor) -> KernelResult<HostTensor> {
    binary(BinaryOp::Pow, a, b)
}
/// `a == b`.
pub fn equal(a: &HostTensor, b: &HostTensor) -> KernelResult<HostTensor> {
    binary(BinaryOp::Equal, a, b)
}
/// `a < b`.
pub fn less(a: &HostTensor, b: &HostTensor) -> KernelResult<HostTensor> {
    binary(BinaryOp::Less, a, b)
}
/// `a > b`.
pub fn greater(a: &HostTensor, b: &HostTensor) -> KernelResult<HostTensor> {
    binary(BinaryOp::Greater, a, b)
}

/// ONNX variadic `Max` (at least one operand).
pub fn max(operands: &[&HostTensor]) -> KernelResult<HostTensor> {
    fold(BinaryOp::Max, operands)
}

/// ONNX variadic `Min` (at least one operand).
pub fn min(operands: &[&HostTensor]) -> KernelResult<HostTensor> {
    fold(BinaryOp::Min, operands)
}

fn fold(op: BinaryOp, operands: &[&HostTensor]) -> KernelResult<HostTensor> {
    let (first, rest) = operands.split_first().ok_or_else(|| KernelError::Shape {
        op: op.name(),
        detail: "needs at least one operand".into(),
    })?;
    rest.iter()
        .try_fold((*first).clone(), |acc, x| binary(op, &acc, x))
}

/// A unary element-wise operation: one of `nn`'s unary kinds, or GELU (its own
/// op in `nn`, as the approximation is an attribute).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnaryOp {
    /// `nn.neg`, `nn.exp`, ... (see [`UnaryKind`] for each one's meaning).
    Kind(UnaryKind),
    /// GELU, exact (`x/2 · (1 + erf(x/√2))`) or in its tanh form.
    Gelu(GeluApproximation),
}

impl From<UnaryKind> for UnaryOp {
    fn from(kind: UnaryKind) -> UnaryOp {
        UnaryOp::Kind(kind)
    }
}

/// Applies a unary operation. Integer kinds support `Neg`, `Abs`, `Relu` and
/// `BitNot`, bool `Not`.
///
/// Transcendental functions of f32-compute kinds are evaluated in f64 and rounded
/// once, which keeps them within 1 ulp of the exact result; `exp` of f32
/// tensors uses the platform's f32 function (within 2 ulp), and `tanh` and the
/// tanh form of GELU on f32 tensors are vectorised in f32 (a few ulp; see
/// `fast_math`).
pub fn unary(op: impl Into<UnaryOp>, x: &HostTensor) -> KernelResult<HostTensor> {
    let op = op.into();
    let f = move |v: f64| -> f64 {
        let kind = match op {
            UnaryOp::Kind(kind) => kind,
            UnaryOp::Gelu(GeluApproximation::None) => {
                return 0.5 * v * (1.0 + libm::erf(v / std::f64::consts::SQRT_2))
            }
            UnaryOp::Gelu(GeluApproximation::Tanh) => {
                let c = (2.0 / std::f64::consts::PI).sqrt();
                return 0.5 * v * (1.0 + (c * (v + 0.044715 * v * v * v)).tanh());
            }
        };
        match kind {
            K::Neg => -v,
            K::Abs => v.abs(),
            K::Relu => {
                if v > 0.0 {
                    v
                } else {
                    0.0
                }
            }
            K::Sqrt => v.sqrt(),
            K::Reciprocal => 1.0 / v,
            K::Exp => v.exp(),
            K::Log => v.ln(),
            K::Tanh => v.tanh(),
            K::Erf => libm::erf(v),
            K::Sigmoid => 1.0 / (1.0 + (-v).exp()),
            K::Not => f64::from(v == 0.0),
            K::BitNot => f64::NAN,
            K::Sin => v.sin(),
            K::Cos => v.cos(),
            K::Tan => v.tan(),
            K::Asin => v.asin(),
            K::Acos => v.acos(),
            K::Atan => v.atan(),
            K::Sinh => v.sinh(),
            K::Cosh => v.cosh(),
            K::Asinh => v.asinh(),
            K::Acosh => v.acosh(),
            K::Atanh => v.atanh(),
            K::Floor => v.floor(),
            K::Ceil => v.ceil(),
            K::Round => v.round_ties_even(),
        }
    };
    if x.kind == ElementKind::F32 {
        let v = fast_f32::f32_elements(x);
        let shape = x.shape.clone();
        return Ok(match op {
            // Exactly rounded in f32 already; skip the f64 detour.
            UnaryOp::Kind(K::Neg) => fast_f32::map(&v, shape, |a| -a),
            UnaryOp::Kind(K::Abs) => fast_f32::map(&v, shape, f32::abs),
            UnaryOp::Kind(K::Sqrt) => fast_f32::map(&v, shape, f32::sqrt),
            UnaryOp::Kind(K::Reciprocal) => fast_f32::map(&v, shape, |a| 1.0 / a),
            // The platform's f32 function is within an ulp or two and
            // several times cheaper than the f64 detour.
            UnaryOp::Kind(K::Exp) => fast_f32::map(&v, shape, f32::exp),
            // The unfused GELU's tanh: vectorised, a few ulp.
            UnaryOp::Kind(K::Tanh) => {
                fast_f32::f32_tensor_with(shape, |out| fast_f32::map_into(&v, out, fast_math::tanh))
            }
            // The fused GELU of every MLP: vectorised, a few ulp.
            UnaryOp::Gelu(GeluApproximation::Tanh) => fast_f32::f32_tensor_with(shape, |out| {
                fast_f32::map_into(&v, out, fast_math::gelu_tanh)
            }),
            _ => fast_f32::map(&v, shape, |a| f(f64::from(a)) as f32),
        });
    }
    let values = match x.values() {
        Values::F32(v) => {
            let g = |a: &f32| -> f32 {
                match op {
                    // Exactly rounded in f32 already; skip the f64 detour.
                    UnaryOp::Kind(K::Neg) => -a,
                    UnaryOp::Kind(K::Abs) => a.abs(),
                    UnaryOp::Kind(K::Sqrt) => a.sqrt(),
                    UnaryOp::Kind(K::Reciprocal) => 1.0 / a,
                    _ => f(f64::from(*a)) as f32,
                }
            };
            Values::F32(if v.len() >= PARALLEL_THRESHOLD {
                v.par_iter().map(g).collect()
            } else {
                v.iter().map(g).collect()
            })
        }
        Values::F64(v) => Values::F64(v.into_iter().map(f).collect()),
        Values::Int(v) => Values::Int(match op {
            UnaryOp::Kind(K::Neg) => v.into_iter().map(|a| a.wrapping_neg()).collect(),
            UnaryOp::Kind(K::Abs) => v.into_iter().map(|a| a.abs()).collect(),
            UnaryOp::Kind(K::Relu) => v.into_iter().map(|a| a.max(0)).collect(),
            UnaryOp::Kind(K::Not) if x.kind == ElementKind::Bool => {
                v.into_iter().map(|a| i128::from(a == 0)).collect()
            }
            UnaryOp::Kind(K::BitNot) if x.kind != ElementKind::Bool => {
                v.into_iter().map(|a| !a).collect()
            }
            _ => {
                return Err(KernelError::ElementType {
                    op: "unary",
                    kind: x.kind.to_string(),
                })
            }
        }),
    };
    Ok(HostTensor::from_values(x.kind, x.shape.clone(), values))
}

/// ONNX `Where`: `condition ? x : y` with three-way broadcasting.
pub fn where_(condition: &HostTensor, x: &HostTensor, y: &HostTensor) -> KernelResult<HostTensor> {
    if x.kind != y.kind {
        return Err(KernelError::ElementType {
            op: "where",
            kind: format!("{} with {}", x.kind, y.kind),
        });
    }
    let shape = broadcast_shapes("where", &[&condition.shape, &x.shape, &y.shape])?;
    let (ic, ix, iy) = (
        broadcast_indices(&condition.shape, &shape),
        broadcast_indices(&x.shape, &shape),
        broadcast_indices(&y.shape, &shape),
    );
    let size = x.kind.byte_size();
    let mut data = Vec::with_capacity(ic.len() * size);
    for ((&c, &i), &j) in ic.iter().zip(&ix).zip(&iy) {
        let pick = if storage::load_f64(condition.kind, &condition.data, c) != 0.0 {
            (&x.data, i)
        } else {
            (&y.data, j)
        };
        data.extend_from_slice(&pick.0[pick.1 * size..pick.1 * size + size]);
    }
    Ok(HostTensor::new(x.kind, shape, data.into()))
}

/// ONNX `BitCast` to `to` (`nn.bitcast`): the same bytes read as `to`, which
/// must be as wide as the operand's kind; a bool result needs a bool operand
/// (other bytes are no bool).
pub fn bitcast(x: &HostTensor, to: ElementKind) -> KernelResult<HostTensor> {
    // A bool takes a byte; the 4- and 2-bit kinds count their width (their byte
    // holds the bits in its low end, which is all any reader of them looks at).
    let bits = |k: ElementKind| {
        if k == ElementKind::Bool {
            8
        } else {
            k.bit_width()
        }
    };
    if bits(to) != bits(x.kind) || (to == ElementKind::Bool && x.kind != to) {
        return Err(KernelError::ElementType {
            op: "bitcast",
            kind: format!("{} to {}", x.kind, to),
        });
    }
    Ok(HostTensor::new(to, x.shape.clone(), x.data.clone()))
}

/// ONNX `Cast` to `to`. Floats convert from their exact value with one rounding;
/// `saturate` is the ONNX attribute for 8-bit float targets. Conversion rules are
/// those of [`ipuc_ir::numeric::storage`]. FLOAT8E8M0 targets round up (ONNX's
/// default `round_mode`; see [`cast_rounding`]).
pub fn cast(x: &HostTensor, to: ElementKind, saturate: bool) -> HostTensor {
    cast_rounding(x, to, saturate, E8M0Rounding::Up)
}

/// [`cast`] with ONNX `Cast`'s `round_mode` for FLOAT8E8M0 targets.
pub fn cast_rounding(
    x: &HostTensor,
    to: ElementKind,
    saturate: bool,
    rounding: E8M0Rounding,
) -> HostTensor {
    let n = x.element_count();
    let size = to.byte_size();
    let mut data = vec![0u8; n * size];
    let (kind, src) = (x.kind, &x.data[..]);
    if kind.is_float() {
        data.par_chunks_mut(size).enumerate().for_each(|(i, c)| {
            let v = storage::load_f64(kind, src, i);
            storage::store_f64_rounding(to, c, 0, v, saturate, rounding)
        });
    } else if to == ElementKind::F8E8M0FNU {
        // Integers round once on their way to the f32 the E8M0 encoding starts from.
        data.par_chunks_mut(size).enumerate().for_each(|(i, c)| {
            let v = storage::i128_to_f64_round_to_odd(storage::load_i128(kind, src, i));
            storage::store_f64_rounding(to, c, 0, v, saturate, rounding)
        });
    } else {
        data.par_chunks_mut(size)
            .enumerate()
            .for_each(|(i, c)| storage::store_i128(to, c, 0, storage::load_i128(kind, src, i)));
    }
    HostTensor::new(to, x.shape.clone(), data.into())
}
