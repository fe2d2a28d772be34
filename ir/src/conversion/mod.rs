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
//! materialization* back to the original type. Both default to
//! `builtin.unrealized_conversion_cast`; casts that end up unused, and
//! round-trip pairs (`A -> B -> A`), are removed when the conversion ends.
//! Casts still needed at the boundary between converted and unconverted IR
//! stay in the IR, as MLIR leaves them.
//!
//! Two modes ([`apply_partial_conversion`], [`apply_full_conversion`]):
//! a partial conversion fails if an op marked illegal (or dynamically
//! illegal) remains and allows ops the target does not know; a full
//! conversion fails unless every op ends legal. On failure the driver
//! returns one [`Diagnostic`](crate::Diagnostic) listing every illegal op
//! kind with its count and first location, as notes.
//!
//! Differences from MLIR besides rollback: type conversions are 1:1 (no
//! 1:N or 1:0 signature conversion); ops are not folded before patterns are
//! tried; there is no analysis-only mode.
//!
//! **No rollback.** MLIR records every change and undoes them all when a
//! conversion fails. This driver applies changes directly: after a failed
//! conversion the IR is valid to walk and print but in an unspecified,
//! partially converted state; callers that need the original must keep a
//! copy (e.g. [`Context::clone_op`]) and discard the result on error. For
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

mod driver;
mod target;
mod type_converter;

pub use driver::{
    apply_full_conversion, apply_partial_conversion, convert, ConversionConfig, ConversionMode,
    ConversionStats,
};
pub use target::{ConversionTarget, Legality, LegalityFn};
pub use type_converter::{
    build_unrealized_cast, InsertPoint, MaterializationFn, TypeConversion, TypeConverter,
};

use rustc_hash::{FxHashMap, FxHashSet};

use crate::context::{Context, OpId, OperationState, RegionId, Value};
use crate::diagnostics::Diagnostic;

/// A pattern that rewrites an op given its already-converted operands.
pub trait ConversionPattern: Send + Sync {
    /// A name for statistics and debugging.
    fn name(&self) -> &str;
    /// The op name this pattern matches (`None`: any op).
    fn root(&self) -> Option<&str>;
    /// Higher benefit patterns are tried first.
    fn benefit(&self) -> u16 {
        1
    }
    /// Rewrites `op`, whose operands converted are `operands`; returns
    /// whether it rewrote. A pattern that returns `false` must not have
    /// changed the IR (there is no rollback).
    fn match_and_rewrite(
        &self,
        op: OpId,
        operands: &[Value],
        rewriter: &mut ConversionRewriter<'_>,
    ) -> bool;
}

/// A conversion pattern built from a closure.
pub struct FnConversionPattern<F> {
    name: &'static str,
    root: Option<&'static str>,
    benefit: u16,
    f: F,
}

impl<F> FnConversionPattern<F>
where
    F: Fn(OpId, &[Value], &mut ConversionRewriter<'_>) -> bool + Send + Sync,
{
    /// A pattern rooted at the op `root` running `f`.
    pub fn new(name: &'static str, root: Option<&'static str>, benefit: u16, f: F) -> Self {
        FnConversionPattern {
            name,
            root,
            benefit,
            f,
        }
    }
}

impl<F> ConversionPattern for FnConversionPattern<F>
where
    F: Fn(OpId, &[Value], &mut ConversionRewriter<'_>) -> bool + Send + Sync,
{
    fn name(&self) -> &str {
        self.name
    }
    fn root(&self) -> Option<&str> {
        self.root
    }
    fn benefit(&self) -> u16 {
        self.benefit
    }
    fn match_and_rewrite(
        &self,
        op: OpId,
        operands: &[Value],
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

/// Bookkeeping shared by the driver and its rewriters.
#[derive(Default)]
pub(crate) struct ConversionState {
    /// Materialized value -> the converted value it stands for.
    mapping: FxHashMap<Value, Value>,
    /// Casts this conversion created, in creation order.
    casts: Vec<OpId>,
    cast_set: FxHashSet<OpId>,
    /// Target materializations by (value, converted type), for reuse.
    target_casts: FxHashMap<(Value, crate::Type), Value>,
    materializations: u64,
}

impl ConversionState {
    fn note_materialization(&mut self, ctx: &Context, v: Value) {
        self.materializations += 1;
        if let Some(op) = ctx.defining_op(v) {
            if ctx.name_str(op) == crate::builtin::UNREALIZED_CONVERSION_CAST
                && self.cast_set.insert(op)
            {
                self.casts.push(op);
            }
        }
    }
    /// Follows materializations back to the converted value.
    fn lookup(&self, mut v: Value) -> Value {
        let mut steps = 0;
        while let Some(&n) = self.mapping.get(&v) {
            v = n;
            steps += 1;
            if steps > self.mapping.len() {
                break;
            }
        }
        v
    }
}

/// The mutation API of conversion patterns. Ops created through it are
/// legalized in turn; results replaced by values of another type get
/// source materializations for the users that remain unconverted.
pub struct ConversionRewriter<'a> {
    ctx: &'a mut Context,
    converter: Option<&'a TypeConverter>,
    state: &'a mut ConversionState,
    created: Vec<OpId>,
    modified: Vec<OpId>,
    changed: bool,
}

impl<'a> ConversionRewriter<'a> {
    fn new(
        ctx: &'a mut Context,
        converter: Option<&'a TypeConverter>,
        state: &'a mut ConversionState,
    ) -> Self {
        ConversionRewriter {
            ctx,
            converter,
            state,
            created: Vec::new(),
            modified: Vec::new(),
            changed: false,
        }
    }
    /// Read access to the IR.
    pub fn ctx(&self) -> &Context {
        self.ctx
    }
    /// Write access that bypasses tracking: ops created this way are not
    /// legalized; call [`ConversionRewriter::notify_created`] or
    /// [`ConversionRewriter::notify_modified`] for them.
    pub fn ctx_mut(&mut self) -> &mut Context {
        self.changed = true;
        self.ctx
    }
    /// The conversion's type converter, if any.
    pub fn type_converter(&self) -> Option<&'a TypeConverter> {
        self.converter
    }
    /// Converts a type with the conversion's type converter (identity without one).
    pub fn convert_type(&self, t: &crate::Type) -> Option<crate::Type> {
        match self.converter {
            Some(c) => c.convert_type(t),
            None => Some(t.clone()),
        }
    }
    /// Records that `op` (created through [`ConversionRewriter::ctx_mut`]) must be legalized.
    pub fn notify_created(&mut self, op: OpId) {
        self.changed = true;
        self.created.push(op);
    }
    /// Records that `op` was updated in place; its legality is checked again.
    pub fn notify_modified(&mut self, op: OpId) {
        self.changed = true;
        self.modified.push(op);
    }
    /// Creates an op from `state` before `anchor`.
    pub fn create_before(&mut self, anchor: OpId, state: OperationState) -> OpId {
        let op = self.ctx.create_op(state);
        self.ctx.insert_op_before(anchor, op);
        self.notify_created(op);
        op
    }
    /// Replaces the results of `op` with `values` and erases `op`. Results
    /// whose replacement has another type keep their remaining users through
    /// a source materialization.
    pub fn replace_op(&mut self, op: OpId, values: &[Value]) {
        self.changed = true;
        let results = self.ctx.results(op).to_vec();
        assert_eq!(
            results.len(),
            values.len(),
            "replacement value count differs from result count of '{}'",
            self.ctx.name_str(op)
        );
        let loc = self.ctx.loc(op).clone();
        for (&r, &n) in results.iter().zip(values) {
            if self.ctx.use_empty(r) {
                continue;
            }
            let old_ty = self.ctx.value_type(r).clone();
            if *self.ctx.value_type(n) == old_ty {
                self.ctx.replace_all_uses(r, n);
                continue;
            }
            let at = InsertPoint::after_definition(self.ctx, n).unwrap_or(InsertPoint::Before(op));
            let m = match self.converter {
                Some(c) => c.materialize_source(self.ctx, at, n, &old_ty, &loc),
                None => build_unrealized_cast(self.ctx, at, n, &old_ty, &loc),
            };
            self.state.note_materialization(self.ctx, m);
            self.ctx.replace_all_uses(r, m);
            self.state.mapping.insert(m, n);
        }
        self.ctx.erase_op(op);
    }
    /// Replaces `op` with a new op built from `state` (inserted before it).
    pub fn replace_op_with_new(&mut self, op: OpId, state: OperationState) -> OpId {
        let new = self.create_before(op, state);
        let vals = self.ctx.results(new).to_vec();
        self.replace_op(op, &vals);
        new
    }
    /// Erases `op`, whose results must be unused.
    pub fn erase_op(&mut self, op: OpId) {
        self.changed = true;
        self.ctx.erase_op(op);
    }
    /// Converts the block argument types of every block of `region` in
    /// place with the type converter; uses of a changed argument go through
    /// a source materialization at the start of its block. Branches into
    /// non-entry blocks must be converted by their own patterns.
    pub fn convert_region_types(&mut self, region: RegionId) -> Result<(), Diagnostic> {
        let Some(converter) = self.converter else {
            return Ok(());
        };
        let parent_loc = self
            .ctx
            .region_parent(region)
            .map(|o| self.ctx.loc(o).clone())
            .unwrap_or_else(crate::Location::unknown);
        for b in self.ctx.region_blocks(region).to_vec() {
            for a in self.ctx.block_args(b).to_vec() {
                let old = self.ctx.value_type(a).clone();
                let Some(new) = converter.convert_type(&old) else {
                    return Err(Diagnostic::error(
                        self.ctx.value_loc(a).cloned().unwrap_or(parent_loc.clone()),
                        format!("block argument type '{old}' has no conversion"),
                    ));
                };
                if new == old {
                    continue;
                }
                self.changed = true;
                self.ctx.set_value_type(a, new);
                if self.ctx.use_empty(a) {
                    continue;
                }
                let loc = self.ctx.value_loc(a).cloned().unwrap_or(parent_loc.clone());
                // Only the existing users move to the materialization, not the
                // ops the materialization itself creates.
                let users = self.ctx.uses(a).to_vec();
                let m = converter.materialize_source(
                    self.ctx,
                    InsertPoint::BlockStart(b),
                    a,
                    &old,
                    &loc,
                );
                self.state.note_materialization(self.ctx, m);
                for u in users {
                    self.ctx.set_operand(u.op, u.index as usize, m);
                }
                self.state.mapping.insert(m, a);
            }
        }
        Ok(())
    }
}
