//! Element-wise kernels with numpy broadcasting: arithmetic, comparisons,
//! activations, `Where` and `Cast`.

pub use ipuc_dialects::nn::{BinaryKind, CompareKind, GeluApproximation, UnaryKind};
use ipuc_ir::numeric::{storage, E8M0Rounding, ElementKind};
use rayon::prelude::*;

use super::error::{KernelError, KernelResult};
use super::host_tensor::{HostTensor, Values, PARALLEL_THRESHOLD};
use super::shape::{broadcast_indices, broadcast_shapes};
use super::{fast_f32, fast_math};

/// A binary element-wise operation: one of `nn`'s binary or comparison kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    /// `nn.add`, `nn.pow`, ... (see [`BinaryKind`]); `Mod` is `nn.mod`'s default
    /// form, whose remainder takes the divisor's sign (Python/numpy `%`).
    Kind(BinaryKind),
    /// `nn.mod {fmod = 1}`: the remainder takes the dividend's sign (C `fmod`).
    Fmod,
    /// `nn.equal`, `nn.less`, ...: a bool tensor.
    Compare(CompareKind),
}

impl From<BinaryKind> for BinaryOp {
    fn from(kind: BinaryKind) -> BinaryOp {
        BinaryOp::Kind(kind)
    }
}

impl From<CompareKind> for BinaryOp {
    fn from(kind: CompareKind) -> BinaryOp {
        BinaryOp::Compare(kind)
    }
}

impl BinaryOp {
    /// ONNX `Mod` with its `fmod` attribute.
    pub fn modulo(fmod: bool) -> BinaryOp {
        if fmod {
            BinaryOp::Fmod
        } else {
            BinaryOp::Kind(BinaryKind::Mod)
        }
    }

    /// The op's name without the dialect (`add`, `less_equal`) for errors.
    fn name(self) -> &'static str {
        let full = match self {
            BinaryOp::Kind(kind) => kind.name(),
            BinaryOp::Fmod => BinaryKind::Mod.name(),
            BinaryOp::Compare(kind) => kind.name(),
        };
        full.trim_start_matches("nn.")
    }

    fn is_bitwise(self) -> bool {
        matches!(self, BinaryOp::Kind(kind) if kind.is_bitwise())
    }

    fn is_comparison(self) -> bool {
        matches!(self, BinaryOp::Compare(_))
    }
}

/// Applies a binary operation with numpy broadcasting. Both operands must have the
/// same element kind, except for `Pow`.
pub fn binary(op: impl Into<BinaryOp>, a: &HostTensor, b: &HostTensor) -> KernelResult<HostTensor> {
    let op = op.into();
    let name = op.name();
    if op != BinaryOp::Kind(BinaryKind::Pow) && a.kind != b.kind {
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
        BinaryOp::Kind(BinaryKind::Add) => run!(|p, q| p + q),
        BinaryOp::Kind(BinaryKind::Sub) => run!(|p, q| p - q),
        BinaryOp::Kind(BinaryKind::Mul) => run!(|p, q| p * q),
        BinaryOp::Kind(BinaryKind::Div) => run!(|p, q| p / q),
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
    let kind = match op {
        BinaryOp::Kind(kind) => kind,
        BinaryOp::Fmod => return a % b,
        BinaryOp::Compare(kind) => return T::from_bool(kind.holds(a, b)),
    };
    match kind {
        BinaryKind::Add => a + b,
        BinaryKind::Sub => a - b,
        BinaryKind::Mul => a * b,
        BinaryKind::Div => a / b,
        BinaryKind::Mod => {
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
        BinaryKind::Pow => a.powf(b),
        BinaryKind::Max => {
            if a.is_nan() || b.is_nan() {
                T::nan()
            } else if a >= b {
                a
            } else {
                b
            }
        }
        BinaryKind::Min => {
            if a.is_nan() || b.is_nan() {
                T::nan()
            } else if a <= b {
                a
            } else {
                b
            }
        }
        BinaryKind::And => T::from_bool(a != T::zero() && b != T::zero()),
        BinaryKind::Or => T::from_bool(a != T::zero() || b != T::zero()),
        BinaryKind::Xor => T::from_bool((a != T::zero()) != (b != T::zero())),
        // Integer-only: `binary` refuses float operands before this.
        BinaryKind::BitAnd
        | BinaryKind::BitOr
        | BinaryKind::BitXor
        | BinaryKind::ShiftLeft
        | BinaryKind::ShiftRight => T::nan(),
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

/// One integer operation: `nn`'s folder semantics ([`BinaryKind::apply_int`]),
/// except that a negative or huge `Pow` exponent is computed rather than left alone.
fn int_binary(op: BinaryOp, a: i128, b: i128) -> KernelResult<i128> {
    let (kind, fmod) = match op {
        BinaryOp::Kind(kind) => (kind, false),
        BinaryOp::Fmod => (BinaryKind::Mod, true),
        BinaryOp::Compare(kind) => return Ok(i128::from(kind.holds(a, b))),
    };
    if kind == BinaryKind::Pow {
        return Ok(int_pow(a, b));
    }
    // Past `Pow`, only a division by zero is undefined.
    kind.apply_int(a, b, fmod)
        .ok_or_else(|| KernelError::Arithmetic {
            op: op.name(),
            detail: "integer division by zero".to_string(),
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

/// ONNX `Mod`.
pub fn modulo(a: &HostTensor, b: &HostTensor, fmod: bool) -> KernelResult<HostTensor> {
    binary(BinaryOp::modulo(fmod), a, b)
}

/// ONNX variadic `Max` (at least one operand).
pub fn max(operands: &[&HostTensor]) -> KernelResult<HostTensor> {
    fold(BinaryOp::Kind(BinaryKind::Max), operands)
}

/// ONNX variadic `Min` (at least one operand).
pub fn min(operands: &[&HostTensor]) -> KernelResult<HostTensor> {
    fold(BinaryOp::Kind(BinaryKind::Min), operands)
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
            UnaryKind::Neg => -v,
            UnaryKind::Abs => v.abs(),
            UnaryKind::Relu => {
                if v > 0.0 {
                    v
                } else {
                    0.0
                }
            }
            UnaryKind::Sqrt => v.sqrt(),
            UnaryKind::Reciprocal => 1.0 / v,
            UnaryKind::Exp => v.exp(),
            UnaryKind::Log => v.ln(),
            UnaryKind::Tanh => v.tanh(),
            UnaryKind::Erf => libm::erf(v),
            UnaryKind::Sigmoid => 1.0 / (1.0 + (-v).exp()),
            UnaryKind::Not => f64::from(v == 0.0),
            UnaryKind::BitNot => f64::NAN,
            UnaryKind::Sin => v.sin(),
            UnaryKind::Cos => v.cos(),
            UnaryKind::Tan => v.tan(),
            UnaryKind::Asin => v.asin(),
            UnaryKind::Acos => v.acos(),
            UnaryKind::Atan => v.atan(),
            UnaryKind::Sinh => v.sinh(),
            UnaryKind::Cosh => v.cosh(),
            UnaryKind::Asinh => v.asinh(),
            UnaryKind::Acosh => v.acosh(),
            UnaryKind::Atanh => v.atanh(),
            UnaryKind::Floor => v.floor(),
            UnaryKind::Ceil => v.ceil(),
            UnaryKind::Round => v.round_ties_even(),
        }
    };
    if x.kind == ElementKind::F32 {
        let v = fast_f32::f32_elements(x);
        let shape = x.shape.clone();
        return Ok(match op {
            // Exactly rounded in f32 already; skip the f64 detour.
            UnaryOp::Kind(UnaryKind::Neg) => fast_f32::map(&v, shape, |a| -a),
            UnaryOp::Kind(UnaryKind::Abs) => fast_f32::map(&v, shape, f32::abs),
            UnaryOp::Kind(UnaryKind::Sqrt) => fast_f32::map(&v, shape, f32::sqrt),
            UnaryOp::Kind(UnaryKind::Reciprocal) => fast_f32::map(&v, shape, |a| 1.0 / a),
            // The platform's f32 function is within an ulp or two and
            // several times cheaper than the f64 detour.
            UnaryOp::Kind(UnaryKind::Exp) => fast_f32::map(&v, shape, f32::exp),
            // The unfused GELU's tanh: vectorised, a few ulp.
            UnaryOp::Kind(UnaryKind::Tanh) => {
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
                    UnaryOp::Kind(UnaryKind::Neg) => -a,
                    UnaryOp::Kind(UnaryKind::Abs) => a.abs(),
                    UnaryOp::Kind(UnaryKind::Sqrt) => a.sqrt(),
                    UnaryOp::Kind(UnaryKind::Reciprocal) => 1.0 / a,
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
            UnaryOp::Kind(UnaryKind::Neg) => v.into_iter().map(|a| a.wrapping_neg()).collect(),
            UnaryOp::Kind(UnaryKind::Abs) => v.into_iter().map(|a| a.abs()).collect(),
            UnaryOp::Kind(UnaryKind::Relu) => v.into_iter().map(|a| a.max(0)).collect(),
            UnaryOp::Kind(UnaryKind::Not) if x.kind == ElementKind::Bool => {
                v.into_iter().map(|a| i128::from(a == 0)).collect()
            }
            UnaryOp::Kind(UnaryKind::BitNot) if x.kind != ElementKind::Bool => {
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
