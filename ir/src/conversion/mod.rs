//! Dialect conversion, after MLIR's `DialectConversion`: rewrite the
//! operations a [`ConversionTarget`] declares illegal into legal ones with
//! [`ConversionPattern`]s, converting value types with a [`TypeConverter`].
//!
//! A pattern's `match_and_rewrite` receives the op plus its operands
//! *already converted*: where a producer was replaced by a value of a
//! converted type, the pattern sees that value; where an operand still has
//! its original type, the driver materializes a cast to the converted type
//! (a *target materialization*). When a pattern replaces a result by a value
//! of a different type, users that were not converted see a *source
//! materialization* back to the original type. While the conversion runs,
//! both are `builtin.unrealized_conversion_cast`s; when it ends, casts that
//! went unused and round-trip pairs (`A -> B -> A`) are removed, and each
//! remaining cast is handed to the type converter's materialization hooks
//! (as MLIR does): a hook replaces it with real ops, and a cast no hook
//! answers stays at the boundary between converted and unconverted IR, as
//! MLIR leaves it. Patterns may fail the whole conversion with their own
//! located error ([`ConversionRewriter::fail`]).
//!
//! Two modes ([`apply_partial_conversion`], [`apply_full_conversion`]):
//! a partial conversion fails if an op marked illegal (or dynamically
//! illegal) remains and allows ops the target does not know; a full
//! conversion fails unless every op ends legal. On failure the driver
//! returns one [`Diagnostic`](crate::Diagnostic) listing every illegal op
//! kind with its count and first location, as notes.
//!
//! **1:N conversion.** A type may convert to several types (a tensor into
//! its per-tile pieces) or to none ([`TypeConversion::Multiple`]), as in
//! MLIR since `OneToNTypeConversion` was folded into the main driver:
//!
//! - a pattern receives, for each original operand, the list of values it
//!   converted to ([`ConversionPattern::match_and_rewrite_one_to_n`]);
//!   patterns written for 1:1 ([`ConversionPattern::match_and_rewrite`],
//!   [`FnConversionPattern::new`]) are called only when every operand
//!   converted to exactly one value;
//! - [`ConversionRewriter::replace_op_with_multiple`] replaces each result
//!   by a list of values (MLIR's `replaceOpWithMultiple`); later patterns
//!   receive the list, unconverted users a *source materialization* from
//!   the list back to the original type (N values to 1);
//! - an unconverted producer feeding a converted user gets a *target
//!   materialization* from its value to the converted types (1 value to N);
//! - [`ConversionRewriter::apply_signature_conversion`] and
//!   [`ConversionRewriter::convert_region_types`] replace a block argument
//!   by its converted arguments in place, with a source materialization at
//!   the start of the block for the uses not yet converted.
//!
//! The cast in both directions is one `builtin.unrealized_conversion_cast`
//! with N operands or N results; a round trip (`x -> pieces -> x`, or
//! `pieces -> x -> pieces`) cancels when the conversion ends. A 1:N source
//! hook receives all the pieces; a 1:N target hook returns them all.
//! `test-one-to-n-conversion` ([`crate::test_passes::one_to_n`]) drives all
//! of this from lit tests (`lit-tests/ir/one-to-n-conversion*.mlir`).
//!
//! Differences from MLIR besides rollback: a 1:1 pattern that meets an
//! operand converted to several values is skipped and named in the failure
//! report (MLIR aborts with a fatal error); a materialization hook that
//! builds values of the wrong types fails the conversion with a located
//! error (MLIR asserts), and the default cast is built in its place so the
//! IR stays valid; target materializations take one input value (MLIR's
//! may take several); ops are not folded before patterns are tried; there
//! is no analysis-only mode.
//!
//! **No rollback.** MLIR records every change and undoes them all when a
//! conversion fails. This driver applies changes directly: after a failed
//! conversion the IR is valid to walk and print but in an unspecified,
//! partially converted state; callers that need the original must keep a
//! copy (e.g. [`Context::clone_op`](crate::Context::clone_op)) and discard the result on error. For
//! the same reason a pattern must not change the IR when it returns `false`.
//!
//! ```
//! use std::sync::Arc;
//! use ipuc_ir::conversion::{apply_full_conversion, ConversionPatternSet, ConversionTarget, FnConversionPattern, TypeConverter};
//! use ipuc_ir::{parse_source, print_op, Context, DialectRegistry, OperationState, PrintOptions, Type};
//!
//! let mut reg = DialectRegistry::new();
//! reg.register(ipuc_ir::test_dialect::dialect());
//! let mut ctx = Context::new(Arc::new(reg));
//! let src = "%0 = \"test.constant\"() {value = 1 : i32} : () -> i32\n\
//!            %1 = test.add_i32 %0, %0 : i32\n";
//! let m = parse_source(&mut ctx, "in.mlir", src).unwrap().module;
//!
//! let mut types = TypeConverter::new();
//! types.add_identity_conversion().add_type_mapping(Type::i32(), Type::i64());
//! let mut target = ConversionTarget::new();
//! target.add_legal_op("test.add_i64").add_legal_op("test.constant").add_legal_op("test.terminator")
//!     .add_legal_op("builtin.unrealized_conversion_cast");
//! let mut patterns = ConversionPatternSet::new();
//! patterns.add(FnConversionPattern::new("add-i32-to-i64", Some("test.add_i32"), 1, |op, operands, rw| {
//!     let loc = rw.ctx().loc(op).clone();
//!     let state = OperationState::new(rw.ctx().op_name("test.add_i64"), loc)
//!         .operands(operands)
//!         .results(&[Type::i64()]);
//!     rw.replace_op_with_new(op, state);
//!     true
//! }));
//! apply_full_conversion(&mut ctx, m, &target, &patterns, Some(&types)).unwrap();
//! let text = print_op(&ctx, m, &PrintOptions::default());
//! assert!(text.contains("test.add_i64"));
//! ```
//!
//! A 1:N conversion: a `tensor<8xf32>` is held as two `tensor<4xf32>`
//! pieces, and an elementwise op is applied to each piece. The producer
//! and the consumer are not converted, so the pieces come from a target
//! materialization and go back through a source materialization.
//!
//! ```
//! use std::sync::Arc;
//! use ipuc_ir::conversion::{apply_partial_conversion, ConversionPatternSet, ConversionTarget, FnConversionPattern, TypeConversion, TypeConverter};
//! use ipuc_ir::{parse_source, print_op, Context, DialectRegistry, OperationState, PrintOptions, Type};
//!
//! let mut ctx = Context::new(Arc::new(DialectRegistry::new()));
//! ctx.allow_unregistered = true;
//! let src = "%0 = \"test.source\"() : () -> tensor<8xf32>\n\
//!            %1 = \"test.relu\"(%0) : (tensor<8xf32>) -> tensor<8xf32>\n\
//!            \"test.sink\"(%1) : (tensor<8xf32>) -> ()\n";
//! let m = parse_source(&mut ctx, "in.mlir", src).unwrap().module;
//!
//! let whole = Type::tensor(&[8], Type::f32());
//! let piece = Type::tensor(&[4], Type::f32());
//! let mut types = TypeConverter::new();
//! types.add_identity_conversion().add_conversion(move |t| {
//!     (*t == whole).then(|| TypeConversion::Multiple(vec![piece.clone(), piece.clone()]))
//! });
//! let mut target = ConversionTarget::new();
//! let legal = Arc::new(types);
//! let check = legal.clone();
//! target.add_dynamically_legal_op("test.relu", move |ctx, op| check.is_legal_op(ctx, op));
//! let mut patterns = ConversionPatternSet::new();
//! patterns.add(FnConversionPattern::one_to_n("relu-per-piece", Some("test.relu"), 1, |op, operands, rw| {
//!     // operands[0]: the pieces of the relu's input.
//!     let loc = rw.ctx().loc(op).clone();
//!     let mut pieces = Vec::new();
//!     for &p in &operands[0] {
//!         let ty = rw.ctx().value_type(p).clone();
//!         let state = OperationState::new(rw.ctx().op_name("test.relu"), loc.clone())
//!             .operands(&[p])
//!             .results(&[ty]);
//!         let new = rw.create_before(op, state);
//!         pieces.push(rw.ctx().result(new, 0));
//!     }
//!     rw.replace_op_with_multiple(op, &[pieces]);
//!     true
//! }));
//! apply_partial_conversion(&mut ctx, m, &target, &patterns, Some(&legal)).unwrap();
//! let text = print_op(&ctx, m, &PrintOptions::default());
//! assert!(text.contains("%1:2 = unrealized_conversion_cast %0 : tensor<8xf32> to tensor<4xf32>, tensor<4xf32>"), "{text}");
//! assert!(text.contains("%2 = \"test.relu\"(%1#0) : (tensor<4xf32>) -> tensor<4xf32>"), "{text}");
//! assert!(text.contains("%3 = \"test.relu\"(%1#1) : (tensor<4xf32>) -> tensor<4xf32>"), "{text}");
//! assert!(text.contains("%4 = unrealized_conversion_cast %2, %3 : tensor<4xf32>, tensor<4xf32> to tensor<8xf32>"), "{text}");
//! ```

mod driver;
mod rewriter;
mod state;
mod target;
mod type_converter;

pub use driver::{
    apply_full_conversion, apply_partial_conversion, convert, ConversionConfig, ConversionMode,
    ConversionStats,
};
pub use rewriter::ConversionRewriter;
pub use target::{ConversionTarget, Legality, LegalityFn};
pub use type_converter::{
    build_unrealized_cast, InsertPoint, SignatureConversion, SourceMaterializationFn,
    TargetMaterializationFn, TypeConversion, TypeConverter,
};

use crate::context::{OpId, Value};

/// A pattern that rewrites an op given its already-converted operands.
/// Implement [`ConversionPattern::match_and_rewrite`] for 1:1 conversions,
/// or [`ConversionPattern::match_and_rewrite_one_to_n`] to receive every
/// operand as the list of values it converted to.
pub trait ConversionPattern: Send + Sync {
    /// A name for statistics and debugging.
    fn name(&self) -> &str;
    /// The op name this pattern matches (`None`: any op).
    fn root(&self) -> Option<&str>;
    /// Higher benefit patterns are tried first.
    fn benefit(&self) -> u16 {
        1
    }
    /// Rewrites `op`, whose operands converted (1:1) are `operands`;
    /// returns whether it rewrote. A pattern that returns `false` must not
    /// have changed the IR (there is no rollback).
    fn match_and_rewrite(
        &self,
        _op: OpId,
        _operands: &[Value],
        _rewriter: &mut ConversionRewriter<'_>,
    ) -> bool {
        false
    }
    /// Rewrites `op`, whose operand `i` converted to the values
    /// `operands[i]` (several for a 1:N conversion, none for 1:0). The
    /// default calls [`ConversionPattern::match_and_rewrite`] when every
    /// operand converted to one value, and otherwise declines, recording
    /// why for the failure report.
    fn match_and_rewrite_one_to_n(
        &self,
        op: OpId,
        operands: &[Vec<Value>],
        rewriter: &mut ConversionRewriter<'_>,
    ) -> bool {
        match one_to_one(operands) {
            Some(flat) => self.match_and_rewrite(op, &flat, rewriter),
            None => {
                rewriter.refuse_one_to_n(self.name());
                false
            }
        }
    }
}

/// The operands as one value each, if every operand converted 1:1.
pub fn one_to_one(operands: &[Vec<Value>]) -> Option<Vec<Value>> {
    operands
        .iter()
        .map(|vs| match vs[..] {
            [v] => Some(v),
            _ => None,
        })
        .collect()
}

type OneToNFn = Box<dyn Fn(OpId, &[Vec<Value>], &mut ConversionRewriter<'_>) -> bool + Send + Sync>;

/// A conversion pattern built from a closure.
pub struct FnConversionPattern {
    name: &'static str,
    root: Option<&'static str>,
    benefit: u16,
    f: OneToNFn,
}

impl FnConversionPattern {
    /// A 1:1 pattern rooted at the op `root` running `f` on the converted
    /// operands (declined when an operand converted to several values).
    pub fn new(
        name: &'static str,
        root: Option<&'static str>,
        benefit: u16,
        f: impl Fn(OpId, &[Value], &mut ConversionRewriter<'_>) -> bool + Send + Sync + 'static,
    ) -> Self {
        let f: OneToNFn = Box::new(move |op, operands, rw| match one_to_one(operands) {
            Some(flat) => f(op, &flat, rw),
            None => {
                rw.refuse_one_to_n(name);
                false
            }
        });
        FnConversionPattern {
            name,
            root,
            benefit,
            f,
        }
    }

    /// A 1:N pattern rooted at the op `root` running `f` on each operand's
    /// list of converted values.
    pub fn one_to_n(
        name: &'static str,
        root: Option<&'static str>,
        benefit: u16,
        f: impl Fn(OpId, &[Vec<Value>], &mut ConversionRewriter<'_>) -> bool + Send + Sync + 'static,
    ) -> Self {
        FnConversionPattern {
            name,
            root,
            benefit,
            f: Box::new(f),
        }
    }
}

impl ConversionPattern for FnConversionPattern {
    fn name(&self) -> &str {
        self.name
    }
    fn root(&self) -> Option<&str> {
        self.root
    }
    fn benefit(&self) -> u16 {
        self.benefit
    }
    fn match_and_rewrite_one_to_n(
        &self,
        op: OpId,
        operands: &[Vec<Value>],
        rewriter: &mut ConversionRewriter<'_>,
    ) -> bool {
        (self.f)(op, operands, rewriter)
    }
}

/// The patterns of a conversion.
#[derive(Default)]
pub struct ConversionPatternSet {
    patterns: Vec<Box<dyn ConversionPattern>>,
}

impl ConversionPatternSet {
    /// An empty set.
    pub fn new() -> ConversionPatternSet {
        ConversionPatternSet::default()
    }
    /// Adds a pattern.
    pub fn add(&mut self, p: impl ConversionPattern + 'static) -> &mut Self {
        self.patterns.push(Box::new(p));
        self
    }
    /// Number of patterns.
    pub fn len(&self) -> usize {
        self.patterns.len()
    }
    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }
    /// Patterns that may match an op named `name`, by descending benefit
    /// (registration order among equals).
    pub(crate) fn candidates(&self, name: &str) -> Vec<&dyn ConversionPattern> {
        let mut v: Vec<(usize, &dyn ConversionPattern)> = self
            .patterns
            .iter()
            .enumerate()
            .filter(|(_, p)| p.root().is_none_or(|r| r == name))
            .map(|(i, p)| (i, p.as_ref()))
            .collect();
        v.sort_by_key(|(i, p)| (std::cmp::Reverse(p.benefit()), *i));
        v.into_iter().map(|(_, p)| p).collect()
    }
}
