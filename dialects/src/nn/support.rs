//! Shared helpers of the `nn` dialect: op errors, attribute declarations and
//! accessors, operand constraints, axis normalisation, numpy broadcasting and
//! the check of declared against inferred result types.

use ipuc_ir::attributes::{AttrKind, DenseArrayValues};
use ipuc_ir::dialect::{Arity, AttrDecl, OpDefinition, Traits, TypeConstraint, ValueDecl};

use super::custom_format::STANDARD_FORMAT;
use ipuc_ir::interfaces::{ContractionShape, OpSignature};
use ipuc_ir::types::DYNAMIC;
use ipuc_ir::{Attribute, Context, Diagnostic, Location, OpId, OperationState, Type, Value};

/// The outcome of type inference.
pub type InferResult<T> = Result<T, ShapeError>;

/// Why a shape rule refused its operands or attributes. The rules are pure
/// (the builders, the verifier, the importer and the e-graph share them), so
/// the error carries no location: each caller renders it where it stands,
/// MLIR's `emitOpError` at the op, the builder's location or the ONNX node
/// ([`ShapeError::at`]). The text names the problem without the
/// `'nn.op' op` prefix, which the rendering adds.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    /// An operand that must be a ranked tensor is not.
    #[error("{what} must be a ranked tensor, but got '{ty}'")]
    NotRanked {
        /// The operand (`lhs`, `operand #2`).
        what: String,
        /// Its type.
        ty: Type,
    },
    /// An ONNX axis outside `[-rank, rank)`.
    #[error("axis {axis} is out of range for rank {rank} (expected [{}, {}])", -(*rank as i64), *rank as i64 - 1)]
    AxisOutOfRange {
        /// The axis as written.
        axis: i64,
        /// The rank it indexes.
        rank: usize,
    },
    /// An axis listed twice.
    #[error("axis {axis} appears more than once in {axes:?}")]
    RepeatedAxis {
        /// The repeated axis.
        axis: i64,
        /// The list.
        axes: Vec<i64>,
    },
    /// Two shapes that numpy broadcasting cannot combine.
    #[error("shapes [{}] and [{}] are not broadcast-compatible: dimension {} vs {} at result axis {axis}", shape_str(lhs), shape_str(rhs), dim_str(*lhs_dim), dim_str(*rhs_dim))]
    NotBroadcastable {
        /// One shape.
        lhs: Vec<i64>,
        /// The other.
        rhs: Vec<i64>,
        /// The clashing dimension of `lhs`.
        lhs_dim: i64,
        /// The clashing dimension of `rhs`.
        rhs_dim: i64,
        /// The result axis where they clash.
        axis: usize,
    },
    /// An operand count outside the op's declaration.
    #[error("requires {expected} operands, but found {found}")]
    OperandCount {
        /// The count the op takes (`2`, `at least 1`, `2 to 3`).
        expected: String,
        /// The count it has.
        found: usize,
    },
    /// A refusal from a part of the rule (`batch dimensions: ...`).
    #[error("{context}: {source}")]
    In {
        /// The part.
        context: &'static str,
        /// What the part refused.
        source: Box<ShapeError>,
    },
    /// An op-specific rule; the text says what is wrong.
    #[error("{0}")]
    Invalid(String),
}

impl ShapeError {
    /// An op-specific refusal.
    pub fn invalid(message: impl Into<String>) -> ShapeError {
        ShapeError::Invalid(message.into())
    }
    /// The error of a part of a rule.
    pub fn within(self, context: &'static str) -> ShapeError {
        ShapeError::In {
            context,
            source: Box::new(self),
        }
    }
    /// The error as an op error of `op_name` at `loc` (a builder's or an
    /// importer's location; the verifier uses [`Diagnostic::op_error`]).
    pub fn at(&self, op_name: &str, loc: &Location) -> Diagnostic {
        Diagnostic::op_error_at(op_name, loc, self)
    }
}

/// `Err(ShapeError::Invalid(format!(...)))`.
macro_rules! shape_err {
    ($($t:tt)*) => {
        $crate::nn::support::ShapeError::Invalid(format!($($t)*))
    };
}
pub(crate) use shape_err;

// ----- declarations ------------------------------------------------------

fn is_i64(a: &Attribute) -> bool {
    matches!(a.kind(), AttrKind::Integer { ty, .. } if ty.is_integer_of_width(64))
}
fn is_i64_array(a: &Attribute) -> bool {
    matches!(a.kind(), AttrKind::DenseArray { element, values: DenseArrayValues::Int(_) } if element.is_integer_of_width(64))
}
fn is_f32(a: &Attribute) -> bool {
    matches!(a.kind(), AttrKind::Float { ty, .. } if ty.float_kind() == Some(ipuc_ir::FloatKind::F32))
}
fn is_string(a: &Attribute) -> bool {
    a.as_str().is_some()
}
fn is_type(a: &Attribute) -> bool {
    a.as_type().is_some()
}

/// An `i64` integer property.
pub(crate) const fn i64_attr(name: &'static str, optional: bool) -> AttrDecl {
    AttrDecl {
        name,
        description: "64-bit signless integer attribute",
        check: is_i64,
        optional,
    }
}
/// An `array<i64: ...>` property.
pub(crate) const fn i64_array_attr(name: &'static str, optional: bool) -> AttrDecl {
    AttrDecl {
        name,
        description: "i64 dense array attribute",
        check: is_i64_array,
        optional,
    }
}
/// An `f32` float property.
pub(crate) const fn f32_attr(name: &'static str, optional: bool) -> AttrDecl {
    AttrDecl {
        name,
        description: "32-bit float attribute",
        check: is_f32,
        optional,
    }
}
/// A string property.
pub(crate) const fn string_attr(name: &'static str, optional: bool) -> AttrDecl {
    AttrDecl {
        name,
        description: "string attribute",
        check: is_string,
        optional,
    }
}
/// A type property.
pub(crate) const fn type_attr(name: &'static str, optional: bool) -> AttrDecl {
    AttrDecl {
        name,
        description: "type attribute",
        check: is_type,
        optional,
    }
}

/// `acc_type`: the type in which an op accumulates its reductions
/// (LayerNorm statistics, softmax sums) when its element type is too narrow
/// for them; absent, it accumulates in its element type.
pub const ACC_TYPE: &str = "acc_type";

/// The optional `acc_type` declaration.
pub(crate) const ACC_TYPE_ATTR: AttrDecl = type_attr(ACC_TYPE, true);

/// The `acc_type` that `op` states, if any.
pub fn accumulator_type(ctx: &Context, op: OpId) -> Option<Type> {
    ctx.attr(op, ACC_TYPE).and_then(|a| a.as_type()).cloned()
}

/// Checks `op`'s `acc_type` against its input type `x`: a float type at
/// least as wide as the input's elements.
pub(crate) fn check_acc_type(ctx: &Context, op: OpId, x: &Type) -> InferResult<()> {
    let Some(acc) = accumulator_type(ctx, op) else {
        return Ok(());
    };
    let (Some(a), Some(e)) = (
        acc.float_kind(),
        x.element_type().and_then(|e| e.float_kind()),
    ) else {
        return Err(ShapeError::Invalid(format!(
            "'{ACC_TYPE}' must be a float type for a float input, but is '{acc}'"
        )));
    };
    if a.bit_width() < e.bit_width() {
        return Err(ShapeError::Invalid(format!(
            "'{ACC_TYPE}' {acc} is narrower than the input's element type {}",
            e.keyword()
        )));
    }
    Ok(())
}

/// Any ranked tensor.
pub(crate) const TENSOR: TypeConstraint = TypeConstraint::RANKED_TENSOR;
/// A ranked tensor of integers.
pub(crate) const INT_TENSOR: TypeConstraint = TypeConstraint {
    description: "ranked tensor of integers",
    check: |t| {
        t.shape().is_some() && t.is_tensor() && t.element_type().is_some_and(|e| e.is_integer())
    },
};
/// A ranked tensor of `i1`.
pub(crate) const BOOL_TENSOR: TypeConstraint = TypeConstraint {
    description: "ranked tensor of i1",
    check: |t| {
        t.shape().is_some()
            && t.is_tensor()
            && t.element_type().is_some_and(|e| e.is_integer_of_width(1))
    },
};

/// One operand or result.
pub(crate) const fn one(name: &'static str, constraint: TypeConstraint) -> ValueDecl {
    ValueDecl {
        name,
        constraint,
        arity: Arity::One,
    }
}
/// An optional (trailing) operand.
pub(crate) const fn optional(name: &'static str, constraint: TypeConstraint) -> ValueDecl {
    ValueDecl {
        name,
        constraint,
        arity: Arity::Optional,
    }
}
/// A variadic operand or result group.
pub(crate) const fn variadic(name: &'static str, constraint: TypeConstraint) -> ValueDecl {
    ValueDecl {
        name,
        constraint,
        arity: Arity::Variadic,
    }
}

// ----- attribute accessors -------------------------------------------------
//
// The verifier checks declared attribute kinds before any nn verifier runs, so
// these read values without re-validating; a missing optional attribute gives
// the ONNX default.

/// An `i64` property, or `default`.
pub(crate) fn attr_i64(ctx: &Context, op: OpId, name: &str, default: i64) -> i64 {
    ctx.attr(op, name)
        .and_then(|a| a.as_int())
        .map_or(default, |v| v as i64)
}
/// An `array<i64: ...>` property, if present.
pub(crate) fn attr_i64_list(ctx: &Context, op: OpId, name: &str) -> Option<Vec<i64>> {
    ctx.attr(op, name).and_then(|a| a.as_i64_list())
}
/// An `f32` property, or `default`.
pub(crate) fn attr_f32(ctx: &Context, op: OpId, name: &str, default: f32) -> f32 {
    ctx.attr(op, name)
        .and_then(|a| a.as_f64())
        .map_or(default, |v| v as f32)
}
/// A string property, or `default`.
pub(crate) fn attr_str<'c>(ctx: &'c Context, op: OpId, name: &str, default: &'c str) -> &'c str {
    ctx.attr(op, name)
        .and_then(|a| a.as_str())
        .unwrap_or(default)
}
/// `value : f32`.
pub(crate) fn f32_attribute(value: f32) -> Attribute {
    Attribute::float(value as f64, Type::f32())
}

/// A type attribute holding `ty`.
pub(crate) fn type_attribute(ty: &Type) -> Attribute {
    Attribute::type_attr(ty.clone())
}

// ----- shapes ----------------------------------------------------------------

/// The shape and element type of a ranked tensor; `what` names it in errors.
pub(crate) fn ranked<'t>(ty: &'t Type, what: &str) -> InferResult<(&'t [i64], &'t Type)> {
    match (ty.is_tensor(), ty.shape(), ty.element_type()) {
        (true, Some(s), Some(e)) => Ok((s, e)),
        _ => Err(ShapeError::NotRanked {
            what: what.to_string(),
            ty: ty.clone(),
        }),
    }
}

/// A ranked tensor type with the element type and encoding-free shape.
pub(crate) fn tensor(shape: &[i64], element: &Type) -> Type {
    Type::tensor(shape, element.clone())
}

/// Normalises an ONNX axis (negative counts from the end) for `rank`.
pub fn normalize_axis(axis: i64, rank: usize) -> InferResult<usize> {
    let r = rank as i64;
    if axis < -r || axis >= r {
        return Err(ShapeError::AxisOutOfRange { axis, rank });
    }
    Ok(if axis < 0 { axis + r } else { axis } as usize)
}

/// Normalises a list of distinct axes; `rank` bounds them.
pub fn normalize_axes(axes: &[i64], rank: usize) -> InferResult<Vec<usize>> {
    let mut out = Vec::with_capacity(axes.len());
    for &a in axes {
        let n = normalize_axis(a, rank)?;
        if out.contains(&n) {
            return Err(ShapeError::RepeatedAxis {
                axis: a,
                axes: axes.to_vec(),
            });
        }
        out.push(n);
    }
    Ok(out)
}

/// Formats a dimension (`?` for dynamic).
pub(crate) fn dim_str(d: i64) -> String {
    if d == DYNAMIC {
        "?".into()
    } else {
        d.to_string()
    }
}

/// Formats a shape as MLIR does inside `tensor<...>` (`4x?x8`).
pub(crate) fn shape_str(s: &[i64]) -> String {
    s.iter().map(|&d| dim_str(d)).collect::<Vec<_>>().join("x")
}

/// The numpy broadcast of two shapes (ONNX multidirectional broadcasting).
/// A dynamic dimension broadcasts with 1 to itself and with `n` to `n`.
pub fn broadcast_shapes(a: &[i64], b: &[i64]) -> InferResult<Vec<i64>> {
    let rank = a.len().max(b.len());
    let mut out = vec![0; rank];
    for i in 0..rank {
        let da = if i + a.len() >= rank {
            a[i + a.len() - rank]
        } else {
            1
        };
        let db = if i + b.len() >= rank {
            b[i + b.len() - rank]
        } else {
            1
        };
        out[i] = match (da, db) {
            _ if da == db => da,
            (1, d) | (d, 1) => d,
            (DYNAMIC, d) | (d, DYNAMIC) => d,
            _ => {
                return Err(ShapeError::NotBroadcastable {
                    lhs: a.to_vec(),
                    rhs: b.to_vec(),
                    lhs_dim: da,
                    rhs_dim: db,
                    axis: i,
                })
            }
        };
    }
    Ok(out)
}

/// Whether an operand of shape `from` broadcasts to exactly `to`
/// (ONNX unidirectional broadcasting).
pub fn broadcasts_to(from: &[i64], to: &[i64]) -> bool {
    from.len() <= to.len() && broadcast_shapes(from, to).is_ok_and(|s| s == to)
}

/// Whether `actual` matches `inferred`: the same element type and rank, and
/// equal dimensions where both are static.
pub(crate) fn compatible(actual: &Type, inferred: &Type) -> bool {
    if actual == inferred {
        return true;
    }
    match (actual.shape(), inferred.shape()) {
        (Some(a), Some(b)) => {
            actual.is_tensor()
                && actual.element_type() == inferred.element_type()
                && a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|(&x, &y)| x == y || x == DYNAMIC || y == DYNAMIC)
        }
        _ => false,
    }
}

/// Checks the op's result types against `inferred`.
pub(crate) fn check_results(ctx: &Context, op: OpId, inferred: &[Type]) -> Result<(), Diagnostic> {
    let results = ctx.results(op);
    if results.len() != inferred.len() {
        return Err(Diagnostic::op_error(
            ctx,
            op,
            format!(
                "expects {} result(s), but has {}",
                inferred.len(),
                results.len()
            ),
        ));
    }
    for (i, (&r, want)) in results.iter().zip(inferred).enumerate() {
        let got = ctx.value_type(r);
        if !compatible(got, want) {
            return Err(Diagnostic::op_error(
                ctx,
                op,
                format!("result #{i} has type '{got}', but the inferred type is '{want}'"),
            ));
        }
    }
    Ok(())
}

// ----- interface models ---------------------------------------------------

/// The product of `dims`; `None` if one is dynamic.
pub(crate) fn static_product(dims: &[i64]) -> Option<u64> {
    dims.iter().try_fold(1u64, |acc, &d| {
        u64::try_from(d).ok().map(|d| acc.saturating_mul(d))
    })
}

/// `(outer, inner)`: the products of the dimensions of `shape` that are
/// kept and of those that are `reduced`; `None` if one is dynamic.
pub(crate) fn reduction_extent(
    shape: &[i64],
    reduced: impl Fn(usize) -> bool,
) -> Option<(u64, u64)> {
    let pick = |want: bool| -> Vec<i64> {
        (0..shape.len())
            .filter(|&d| reduced(d) == want)
            .map(|d| shape[d])
            .collect()
    };
    Some((static_product(&pick(false))?, static_product(&pick(true))?))
}

/// The contraction of operands `lhs` and `rhs` over `batch` dimensions,
/// with M the product of the `rows` dimensions, accumulated in the element
/// type of result 0 (the lhs's when the signature has no result); `None` if
/// a dimension is dynamic.
pub(crate) fn contraction(
    sig: &OpSignature<'_>,
    (lhs, rhs): (usize, usize),
    batch: &[i64],
    rows: &[i64],
    [n, k]: [i64; 2],
) -> Option<ContractionShape> {
    let element = |t: &Type| t.element_type().cloned();
    let lhs = element(sig.operand(lhs)?)?;
    let rhs = element(sig.operand(rhs)?)?;
    let result = sig
        .result(0)
        .and_then(element)
        .unwrap_or_else(|| lhs.clone());
    Some(ContractionShape {
        batch: static_product(batch)?,
        m: static_product(rows)?,
        n: static_product(&[n])?,
        k: static_product(&[k])?,
        lhs,
        rhs,
        result,
    })
}

/// A state for `name` with operands, inferred result types and properties.
pub(crate) fn make_state(
    ctx: &Context,
    name: &str,
    operands: &[Value],
    results: Vec<Type>,
    attrs: Vec<(&str, Attribute)>,
    loc: Location,
) -> OperationState {
    let mut s = OperationState::new(ctx.op_name(name), loc)
        .operands(operands)
        .results(&results);
    for (k, v) in attrs {
        s = s.attr(k, v);
    }
    s
}

/// The definition an `nn` op starts from: pure, with `summary`, the
/// dialect's one verifier (operand count, storage types, inferred result
/// types, [`super::verify_op`]) and the standard declarative assembly format.
pub(crate) fn nn_op(name: &'static str, summary: &'static str) -> OpDefinition {
    OpDefinition::new(name)
        .summary(summary)
        .traits(Traits::PURE)
        .verifier(super::verify_op)
        .assembly_format(STANDARD_FORMAT)
}

/// A state for the one-result op `name` whose result type `ty` was
/// inferred from its operands, or the inference's error, named after the
/// op and located at `loc`.
pub(crate) fn build_inferred(
    ctx: &Context,
    name: &str,
    operands: &[Value],
    ty: InferResult<Type>,
    attrs: Vec<(&str, Attribute)>,
    loc: Location,
) -> Result<OperationState, Diagnostic> {
    let ty = ty.map_err(|m| m.at(name, &loc))?;
    Ok(make_state(ctx, name, operands, vec![ty], attrs, loc))
}

/// The `axis` attribute of `op` (`default` when absent) normalised against
/// the rank of `of`. An out-of-range axis reads as 0: the op's verifier
/// reports it, and accessors are only asked of verified ops.
pub(crate) fn axis_attr(ctx: &Context, op: OpId, of: Value, default: i64) -> usize {
    normalize_axis(attr_i64(ctx, op, "axis", default), rank_of(ctx, of)).unwrap_or(0)
}

/// The rank of `v`'s type (0 for a type without a shape, which the op's
/// verifier reports: accessors are only asked of verified ops).
pub(crate) fn rank_of(ctx: &Context, v: Value) -> usize {
    ctx.value_type(v).shape().map_or(0, |s| s.len())
}

/// The types of `values`.
pub(crate) fn value_types(ctx: &Context, values: &[Value]) -> Vec<Type> {
    values.iter().map(|&v| ctx.value_type(v).clone()).collect()
}

/// Defines a typed wrapper around an `OpId` for one op name.
macro_rules! op_wrapper {
    ($(#[$m:meta])* $name:ident, $opname:expr) => {
        $(#[$m])*
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
        pub struct $name(pub ipuc_ir::OpId);

        impl $name {
            /// The operation name.
            pub const NAME: &'static str = $opname;
            /// Wraps `op` if it is this operation.
            pub fn cast(ctx: &ipuc_ir::Context, op: ipuc_ir::OpId) -> Option<Self> {
                (ctx.name_str(op) == $opname).then_some($name(op))
            }
            /// The wrapped operation.
            pub fn op(self) -> ipuc_ir::OpId {
                self.0
            }
            /// The first result.
            pub fn result(self, ctx: &ipuc_ir::Context) -> ipuc_ir::Value {
                ctx.result(self.0, 0)
            }
        }
    };
}
pub(crate) use op_wrapper;

/// Defines a typed wrapper around an `OpId` for a family of ops that a
/// kind enum names (`$kind::from_name`), such as every binary op.
macro_rules! op_family_wrapper {
    ($(#[$m:meta])* $name:ident, $kind:ident, $what:literal) => {
        $(#[$m])*
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
        pub struct $name(pub ipuc_ir::OpId);

        impl $name {
            #[doc = concat!("Wraps `op` if it is a ", $what, ".")]
            pub fn cast(ctx: &ipuc_ir::Context, op: ipuc_ir::OpId) -> Option<Self> {
                $kind::from_name(ctx.name_str(op)).map(|_| $name(op))
            }
            /// Which op of the family.
            pub fn kind(self, ctx: &ipuc_ir::Context) -> $kind {
                $kind::from_name(ctx.name_str(self.0)).expect($what)
            }
            /// The result.
            pub fn result(self, ctx: &ipuc_ir::Context) -> ipuc_ir::Value {
                ctx.result(self.0, 0)
            }
        }
    };
}
pub(crate) use op_family_wrapper;

/// Accessors of an op wrapper's required operands by position, as ODS
/// generates them from an op's operand list.
macro_rules! operand_accessors {
    ($wrapper:ident { $($(#[$m:meta])* $name:ident = $index:literal),* $(,)? }) => {
        impl $wrapper {
            $(
                $(#[$m])*
                pub fn $name(self, ctx: &ipuc_ir::Context) -> ipuc_ir::Value {
                    ctx.operand(self.0, $index)
                }
            )*
        }
    };
}
pub(crate) use operand_accessors;

/// The `build` of an op wrapper whose one result type is inferred, as ODS
/// generates a builder from an op's arguments: each operand is a `Value`
/// argument, each attribute an argument stored under its own name through
/// the given constructor, and the result type is `$infer`, in which each
/// operand's name stands for its type (the attributes for their values).
/// A wrapper of a family of ops takes the op's kind first (`kind: Kind;`),
/// which names the op; otherwise the op is the wrapper's `NAME`.
macro_rules! inferred_builder {
    ($wrapper:ident {
        $(#[$m:meta])*
        build($kind:ident: $kind_ty:ty; $($operand:ident),+) = $infer:expr $(,)?
    }) => {
        inferred_builder!(@build $wrapper [$(#[$m])*] [$kind: $kind_ty,] ($kind.name())
            [$($operand),+] [] $infer);
    };
    ($wrapper:ident {
        $(#[$m:meta])*
        build($($operand:ident),+ $(; $($attr:ident: $ty:ty => $to_attr:path),+)?) = $infer:expr $(,)?
    }) => {
        inferred_builder!(@build $wrapper [$(#[$m])*] [] (Self::NAME)
            [$($operand),+] [$($($attr: $ty => $to_attr),+)?] $infer);
    };
    (@build $wrapper:ident [$(#[$m:meta])*] [$($kind:ident: $kind_ty:ty,)?] ($name:expr)
        [$($operand:ident),+] [$($attr:ident: $ty:ty => $to_attr:path),*] $infer:expr) => {
        impl $wrapper {
            $(#[$m])*
            pub fn build(
                ctx: &ipuc_ir::Context,
                $($kind: $kind_ty,)?
                $($operand: ipuc_ir::Value,)+
                $($attr: $ty,)*
                loc: ipuc_ir::Location,
            ) -> Result<ipuc_ir::OperationState, ipuc_ir::Diagnostic> {
                let operands = [$($operand),+];
                let ty = {
                    $(let $operand = ctx.value_type($operand);)+
                    $infer
                };
                let attrs = vec![$((stringify!($attr), $to_attr($attr))),*];
                build_inferred(ctx, $name, &operands, ty, attrs, loc)
            }
        }
    };
}
pub(crate) use inferred_builder;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting_follows_numpy() {
        assert_eq!(
            broadcast_shapes(&[2, 1, 4], &[3, 1]).unwrap(),
            vec![2, 3, 4]
        );
        assert_eq!(broadcast_shapes(&[], &[5]).unwrap(), vec![5]);
        assert_eq!(
            broadcast_shapes(&[DYNAMIC, 4], &[1, 4]).unwrap(),
            vec![DYNAMIC, 4]
        );
        let e = broadcast_shapes(&[2, 3], &[4]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "shapes [2x3] and [4] are not broadcast-compatible: dimension 3 vs 4 at result axis 1"
        );
        assert!(broadcasts_to(&[4], &[3, 4]));
        assert!(!broadcasts_to(&[3, 4], &[4]));
        assert!(!broadcasts_to(&[2, 4], &[1, 4]));
    }

    #[test]
    fn axes_normalise_and_reject_duplicates() {
        assert_eq!(normalize_axis(-1, 3).unwrap(), 2);
        assert_eq!(
            normalize_axis(3, 3).unwrap_err().to_string(),
            "axis 3 is out of range for rank 3 (expected [-3, 2])"
        );
        assert_eq!(
            normalize_axes(&[0, -3], 3).unwrap_err(),
            ShapeError::RepeatedAxis {
                axis: -3,
                axes: vec![0, -3]
            }
        );
    }
}
