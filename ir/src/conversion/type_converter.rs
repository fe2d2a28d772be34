//! The type converter: how a conversion maps source types to target types
//! (one type to one, to several, or to none), and how it bridges values
//! whose types differ (materializations).
//!
//! As in MLIR, conversion functions are tried in *reverse* registration
//! order (the most recently added first) until one gives an answer; a
//! function that does not handle a type returns `None` so the next one is
//! tried. Register a catch-all identity conversion first to keep every type
//! that no later function rewrites.

use std::ops::Range;

use crate::builtin::UNREALIZED_CONVERSION_CAST;
use crate::context::{BlockId, Context, OpId, OperationState, Value};
use crate::diagnostics::Diagnostic;
use crate::location::Location;
use crate::types::Type;

/// What a conversion function says about a type it handles.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TypeConversion {
    /// The type converts to this type (possibly itself: the type is legal).
    Converted(Type),
    /// The type converts to these types, in order (1:N); an empty list
    /// drops values of the type (1:0).
    Multiple(Vec<Type>),
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

    /// Creates the op described by `state` here; returns its results.
    pub fn build(self, ctx: &mut Context, state: OperationState) -> Vec<Value> {
        let op = ctx.create_op(state);
        self.insert(ctx, op);
        ctx.results(op).to_vec()
    }

    /// Creates the op `name(inputs) -> results` here and returns its
    /// results: what a materialization builds (a cast of any arity).
    pub fn build_op(
        self,
        ctx: &mut Context,
        name: &str,
        inputs: &[Value],
        results: &[Type],
        loc: &Location,
    ) -> Vec<Value> {
        let state = OperationState::new(ctx.op_name(name), loc.clone())
            .operands(inputs)
            .results(results);
        self.build(ctx, state)
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

/// A source materialization hook: builds one value of the original type
/// `to` from the converted `inputs` (one, several, or none) at the insert
/// point, or returns `None` to defer to the next hook (finally to
/// `builtin.unrealized_conversion_cast`).
pub type SourceMaterializationFn = Box<
    dyn Fn(&mut Context, InsertPoint, &[Value], &Type, &Location) -> Option<Value> + Send + Sync,
>;

/// A target materialization hook: builds values of the converted types `to`
/// (one per type, in order) from `input` at the insert point, or returns
/// `None` to defer to the next hook (finally to
/// `builtin.unrealized_conversion_cast`).
pub type TargetMaterializationFn = Box<
    dyn Fn(&mut Context, InsertPoint, Value, &[Type], &Location) -> Option<Vec<Value>>
        + Send
        + Sync,
>;

/// How a list of values (block arguments, a function's inputs) converts:
/// each original value to a run of new types.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SignatureConversion {
    inputs: Vec<Vec<Type>>,
}

impl SignatureConversion {
    /// A conversion from explicit per-input type lists.
    pub fn new(inputs: Vec<Vec<Type>>) -> SignatureConversion {
        SignatureConversion { inputs }
    }
    /// The number of original inputs.
    pub fn len(&self) -> usize {
        self.inputs.len()
    }
    /// Whether there are no inputs.
    pub fn is_empty(&self) -> bool {
        self.inputs.is_empty()
    }
    /// The converted types of original input `i`.
    pub fn input(&self, i: usize) -> &[Type] {
        &self.inputs[i]
    }
    /// Where the converted types of original input `i` sit in
    /// [`SignatureConversion::converted_types`].
    pub fn input_range(&self, i: usize) -> Range<usize> {
        let start: usize = self.inputs[..i].iter().map(Vec::len).sum();
        start..start + self.inputs[i].len()
    }
    /// Every converted type, in order.
    pub fn converted_types(&self) -> Vec<Type> {
        self.inputs.iter().flatten().cloned().collect()
    }
}

/// Maps types for a conversion and materializes casts between them.
#[derive(Default)]
pub struct TypeConverter {
    conversions: Vec<ConversionFn>,
    source_materializations: Vec<SourceMaterializationFn>,
    target_materializations: Vec<TargetMaterializationFn>,
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

    /// Adds a source materialization: converted values back to one value
    /// of the original type, for users that were not (yet) converted.
    pub fn add_source_materialization(&mut self, f: SourceMaterializationFn) -> &mut Self {
        self.source_materializations.push(f);
        self
    }

    /// Adds a target materialization: a value to the converted types, for
    /// the operands a conversion pattern receives.
    pub fn add_target_materialization(&mut self, f: TargetMaterializationFn) -> &mut Self {
        self.target_materializations.push(f);
        self
    }

    /// The converted types of `t` (one, several or none), or `None` if `t`
    /// cannot be converted.
    pub fn convert_type_to_many(&self, t: &Type) -> Option<Vec<Type>> {
        for f in self.conversions.iter().rev() {
            match f(t) {
                Some(TypeConversion::Converted(c)) => return Some(vec![c]),
                Some(TypeConversion::Multiple(cs)) => return Some(cs),
                Some(TypeConversion::Illegal) => return None,
                None => {}
            }
        }
        None
    }

    /// The converted type of `t` when it converts to exactly one type;
    /// `None` if it cannot be converted or converts to several (or none).
    pub fn convert_type(&self, t: &Type) -> Option<Type> {
        let mut ts = self.convert_type_to_many(t)?;
        (ts.len() == 1).then(|| ts.pop().expect("one type"))
    }

    /// Converts every type of a list, concatenating the results; `None` if any fails.
    pub fn convert_types(&self, ts: &[Type]) -> Option<Vec<Type>> {
        Some(self.convert_signature(ts)?.converted_types())
    }

    /// Converts a list of input types, keeping which converted types came
    /// from which input; `None` if any input cannot be converted.
    pub fn convert_signature(&self, inputs: &[Type]) -> Option<SignatureConversion> {
        let inputs = inputs
            .iter()
            .map(|t| self.convert_type_to_many(t))
            .collect::<Option<Vec<_>>>()?;
        Some(SignatureConversion { inputs })
    }

    /// Converts the inputs and results of a function type (1:N conversions
    /// expand in place).
    pub fn convert_function_type(&self, t: &Type) -> Option<Type> {
        let (inputs, results) = t.function_signature()?;
        Some(Type::function(
            self.convert_types(inputs)?,
            self.convert_types(results)?,
        ))
    }

    /// Whether `t` converts to exactly itself.
    pub fn is_legal_type(&self, t: &Type) -> bool {
        self.convert_type_to_many(t)
            .is_some_and(|ts| ts.len() == 1 && ts[0] == *t)
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

    /// Builds one value of type `to` from `inputs` (of converted types)
    /// with the source materialization hooks, most recent first. `None`
    /// when no hook answered; `Err`, at `loc`, when the answering hook built
    /// a value of another type (its ops are left unused).
    pub fn materialize_source(
        &self,
        ctx: &mut Context,
        at: InsertPoint,
        inputs: &[Value],
        to: &Type,
        loc: &Location,
    ) -> Option<Result<Value, Diagnostic>> {
        for (i, f) in self.source_materializations.iter().enumerate().rev() {
            if let Some(v) = f(ctx, at, inputs, to, loc) {
                if ctx.value_type(v) == to {
                    return Some(Ok(v));
                }
                return Some(Err(Diagnostic::error(
                    loc.clone(),
                    format!(
                        "source materialization #{i} built a value of type '{}' where '{to}' was asked for",
                        ctx.value_type(v)
                    ),
                )));
            }
        }
        None
    }

    /// Builds values of the converted types `to` from `input` with the
    /// target materialization hooks, most recent first. `None` when no
    /// hook answered; `Err`, at `loc`, when the answering hook built values
    /// of other types (its ops are left unused).
    pub fn materialize_target(
        &self,
        ctx: &mut Context,
        at: InsertPoint,
        input: Value,
        to: &[Type],
        loc: &Location,
    ) -> Option<Result<Vec<Value>, Diagnostic>> {
        for (i, f) in self.target_materializations.iter().enumerate().rev() {
            if let Some(vs) = f(ctx, at, input, to, loc) {
                if vs.len() == to.len() && vs.iter().zip(to).all(|(&v, t)| ctx.value_type(v) == t) {
                    return Some(Ok(vs));
                }
                let got: Vec<String> = vs.iter().map(|&v| ctx.value_type(v).to_string()).collect();
                let want: Vec<String> = to.iter().map(Type::to_string).collect();
                return Some(Err(Diagnostic::error(
                    loc.clone(),
                    format!(
                        "target materialization #{i} built values of types ({}) where ({}) were asked for",
                        got.join(", "),
                        want.join(", ")
                    ),
                )));
            }
        }
        None
    }
}

/// Creates `builtin.unrealized_conversion_cast %inputs : Ts to Us` at `at`
/// (any number of inputs and results, as MLIR allows) and returns its results.
pub fn build_unrealized_cast(
    ctx: &mut Context,
    at: InsertPoint,
    inputs: &[Value],
    to: &[Type],
    loc: &Location,
) -> Vec<Value> {
    at.build_op(ctx, UNREALIZED_CONVERSION_CAST, inputs, to, loc)
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

    #[test]
    fn one_to_n_and_one_to_zero_conversions_expand_signatures() {
        let mut tc = TypeConverter::new();
        tc.add_identity_conversion()
            .add_type_mapping(Type::i1(), Type::int(8))
            .add_conversion(|t| {
                (*t == Type::i64())
                    .then(|| TypeConversion::Multiple(vec![Type::i32(), Type::i32()]))
            })
            .add_conversion(|t| (*t == Type::index()).then(|| TypeConversion::Multiple(vec![])));
        // A 1:N type has no single converted type.
        assert_eq!(tc.convert_type(&Type::i64()), None);
        assert!(!tc.is_legal_type(&Type::i64()));
        assert!(!tc.is_legal_type(&Type::index()));
        let sig = tc
            .convert_signature(&[Type::i64(), Type::index(), Type::i1()])
            .unwrap();
        assert_eq!(sig.len(), 3);
        assert_eq!(sig.input_range(0), 0..2);
        assert_eq!(sig.input_range(1), 2..2);
        assert_eq!(sig.input_range(2), 2..3);
        assert_eq!(
            sig.converted_types(),
            [Type::i32(), Type::i32(), Type::int(8)]
        );
        let f = Type::function(vec![Type::i64(), Type::index()], vec![Type::i64()]);
        assert_eq!(
            tc.convert_function_type(&f),
            Some(Type::function(
                vec![Type::i32(), Type::i32()],
                vec![Type::i32(), Type::i32()]
            ))
        );
    }
}
