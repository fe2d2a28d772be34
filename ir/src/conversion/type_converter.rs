//! The type converter: how a conversion maps source types to target types,
//! and how it bridges values whose types differ (materializations).
//!
//! As in MLIR, conversion functions are tried in *reverse* registration
//! order (the most recently added first) until one gives an answer; a
//! function that does not handle a type returns `None` so the next one is
//! tried. Register a catch-all identity conversion first to keep every type
//! that no later function rewrites. Only 1:1 conversions are supported.

use crate::builtin::UNREALIZED_CONVERSION_CAST;
use crate::context::{BlockId, Context, OpId, OperationState, Value};
use crate::location::Location;
use crate::types::Type;

/// What a conversion function says about a type it handles.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TypeConversion {
    /// The type converts to this type (possibly itself: the type is legal).
    Converted(Type),
    /// The type cannot be converted; later-registered functions are not asked.
    Illegal,
}

/// Where a materialization inserts the operations it creates.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum InsertPoint {
    /// Immediately before this operation.
    Before(OpId),
    /// Immediately after this operation.
    After(OpId),
    /// At the start of this block.
    BlockStart(BlockId),
}

impl InsertPoint {
    /// Inserts the detached `op` at this point.
    pub fn insert(self, ctx: &mut Context, op: OpId) {
        match self {
            InsertPoint::Before(anchor) => ctx.insert_op_before(anchor, op),
            InsertPoint::After(anchor) => ctx.insert_op_after(anchor, op),
            InsertPoint::BlockStart(b) => ctx.prepend_op(b, op),
        }
    }

    /// The point right after the definition of `v`: after its defining op,
    /// or at the start of its block for a block argument.
    pub fn after_definition(ctx: &Context, v: Value) -> Option<InsertPoint> {
        match ctx.defining_op(v) {
            Some(op) => ctx.parent_block(op).map(|_| InsertPoint::After(op)),
            None => ctx.value_block(v).map(InsertPoint::BlockStart),
        }
    }
}

type ConversionFn = Box<dyn Fn(&Type) -> Option<TypeConversion> + Send + Sync>;

/// A materialization hook: builds a value of type `to` from `input` at
/// `at`, returning `None` to defer to the next hook (finally to
/// `builtin.unrealized_conversion_cast`).
pub type MaterializationFn =
    Box<dyn Fn(&mut Context, InsertPoint, Value, &Type, &Location) -> Option<Value> + Send + Sync>;

/// Maps types for a conversion and materializes casts between them.
#[derive(Default)]
pub struct TypeConverter {
    conversions: Vec<ConversionFn>,
    source_materializations: Vec<MaterializationFn>,
    target_materializations: Vec<MaterializationFn>,
}

impl TypeConverter {
    /// A converter with no conversions: every type is illegal until one is added.
    pub fn new() -> TypeConverter {
        TypeConverter::default()
    }

    /// Adds a conversion function (tried before all earlier ones).
    pub fn add_conversion(
        &mut self,
        f: impl Fn(&Type) -> Option<TypeConversion> + Send + Sync + 'static,
    ) -> &mut Self {
        self.conversions.push(Box::new(f));
        self
    }

    /// Adds the identity conversion for every type (usually registered first).
    pub fn add_identity_conversion(&mut self) -> &mut Self {
        self.add_conversion(|t| Some(TypeConversion::Converted(t.clone())))
    }

    /// Adds a conversion of exactly `from` to `to`.
    pub fn add_type_mapping(&mut self, from: Type, to: Type) -> &mut Self {
        self.add_conversion(move |t| (*t == from).then(|| TypeConversion::Converted(to.clone())))
    }

    /// Adds a source materialization: converted-type value back to the
    /// original type, for users that were not (yet) converted.
    pub fn add_source_materialization(&mut self, f: MaterializationFn) -> &mut Self {
        self.source_materializations.push(f);
        self
    }

    /// Adds a target materialization: original-type value to the converted
    /// type, for the operands a conversion pattern receives.
    pub fn add_target_materialization(&mut self, f: MaterializationFn) -> &mut Self {
        self.target_materializations.push(f);
        self
    }

    /// The converted type of `t`, or `None` if `t` cannot be converted.
    pub fn convert_type(&self, t: &Type) -> Option<Type> {
        for f in self.conversions.iter().rev() {
            match f(t) {
                Some(TypeConversion::Converted(c)) => return Some(c),
                Some(TypeConversion::Illegal) => return None,
                None => {}
            }
        }
        None
    }

    /// Converts every type of a list; `None` if any fails.
    pub fn convert_types(&self, ts: &[Type]) -> Option<Vec<Type>> {
        ts.iter().map(|t| self.convert_type(t)).collect()
    }

    /// Converts the inputs and results of a function type.
    pub fn convert_function_type(&self, t: &Type) -> Option<Type> {
        let (inputs, results) = t.function_signature()?;
        Some(Type::function(
            self.convert_types(inputs)?,
            self.convert_types(results)?,
        ))
    }

    /// Whether `t` converts to itself.
    pub fn is_legal_type(&self, t: &Type) -> bool {
        self.convert_type(t).as_ref() == Some(t)
    }

    /// Whether every operand, result and region block argument of `op` has a legal type
    /// (the usual predicate of a dynamically legal op).
    pub fn is_legal_op(&self, ctx: &Context, op: OpId) -> bool {
        ctx.operands(op)
            .iter()
            .chain(ctx.results(op))
            .all(|&v| self.is_legal_type(ctx.value_type(v)))
            && ctx.regions(op).iter().all(|&r| {
                ctx.region_blocks(r).iter().all(|&b| {
                    ctx.block_args(b)
                        .iter()
                        .all(|&a| self.is_legal_type(ctx.value_type(a)))
                })
            })
    }

    /// Builds a value of type `to` from `input` (of the converted type) for
    /// users that still expect the original type.
    pub fn materialize_source(
        &self,
        ctx: &mut Context,
        at: InsertPoint,
        input: Value,
        to: &Type,
        loc: &Location,
    ) -> Value {
        materialize(&self.source_materializations, ctx, at, input, to, loc)
    }

    /// Builds a value of the converted type `to` from `input` (of the original type).
    pub fn materialize_target(
        &self,
        ctx: &mut Context,
        at: InsertPoint,
        input: Value,
        to: &Type,
        loc: &Location,
    ) -> Value {
        materialize(&self.target_materializations, ctx, at, input, to, loc)
    }
}

fn materialize(
    hooks: &[MaterializationFn],
    ctx: &mut Context,
    at: InsertPoint,
    input: Value,
    to: &Type,
    loc: &Location,
) -> Value {
    for f in hooks.iter().rev() {
        if let Some(v) = f(ctx, at, input, to, loc) {
            return v;
        }
    }
    build_unrealized_cast(ctx, at, input, to, loc)
}

/// Creates `builtin.unrealized_conversion_cast %input : T to U` at `at`.
pub fn build_unrealized_cast(
    ctx: &mut Context,
    at: InsertPoint,
    input: Value,
    to: &Type,
    loc: &Location,
) -> Value {
    let state = OperationState::new(ctx.op_name(UNREALIZED_CONVERSION_CAST), loc.clone())
        .operands(&[input])
        .results(std::slice::from_ref(to));
    let op = ctx.create_op(state);
    at.insert(ctx, op);
    ctx.result(op, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_are_tried_most_recent_first() {
        let mut tc = TypeConverter::new();
        tc.add_identity_conversion()
            .add_type_mapping(Type::i32(), Type::i64())
            .add_conversion(|t| t.is_float().then_some(TypeConversion::Illegal));
        assert_eq!(tc.convert_type(&Type::i32()), Some(Type::i64()));
        assert_eq!(tc.convert_type(&Type::i64()), Some(Type::i64()));
        assert_eq!(tc.convert_type(&Type::f32()), None);
        assert!(tc.is_legal_type(&Type::index()));
        assert!(!tc.is_legal_type(&Type::i32()));
        let f = Type::function(vec![Type::i32()], vec![Type::i1()]);
        assert_eq!(
            tc.convert_function_type(&f),
            Some(Type::function(vec![Type::i64()], vec![Type::i1()]))
        );
    }

    #[test]
    fn an_empty_converter_converts_nothing() {
        assert_eq!(TypeConverter::new().convert_type(&Type::i32()), None);
    }
}
