//! The mutation API of conversion patterns ([`ConversionRewriter`]): ops
//! created through it are legalized in turn; results replaced by values of
//! other types (one to one, one to several, one to none) keep their
//! unconverted users through source materializations; block signatures
//! convert in place.

use super::state::{CastKind, ConversionState};
use super::type_converter::{InsertPoint, SignatureConversion, TypeConverter};
use crate::context::{BlockId, Context, OpId, OperationState, RegionId, Value};
use crate::diagnostics::Diagnostic;
use crate::location::Location;
use crate::types::Type;

/// The mutation API of conversion patterns.
pub struct ConversionRewriter<'a> {
    ctx: &'a mut Context,
    converter: Option<&'a TypeConverter>,
    state: &'a mut ConversionState,
    pub(crate) created: Vec<OpId>,
    pub(crate) modified: Vec<OpId>,
    pub(crate) changed: bool,
    pub(crate) refused_one_to_n: Option<String>,
}

impl<'a> ConversionRewriter<'a> {
    pub(crate) fn new(
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
            refused_one_to_n: None,
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
    /// Converts a type that converts 1:1 (identity without a converter).
    pub fn convert_type(&self, t: &Type) -> Option<Type> {
        match self.converter {
            Some(c) => c.convert_type(t),
            None => Some(t.clone()),
        }
    }
    /// Converts a type to its converted types, one or several or none
    /// (identity without a converter).
    pub fn convert_type_to_many(&self, t: &Type) -> Option<Vec<Type>> {
        match self.converter {
            Some(c) => c.convert_type_to_many(t),
            None => Some(vec![t.clone()]),
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
    /// Records that the pattern `pattern` declined the op because it takes
    /// only 1:1 operands (the failure report names it). The default
    /// [`match_and_rewrite_one_to_n`](super::ConversionPattern::match_and_rewrite_one_to_n)
    /// calls this.
    pub fn refuse_one_to_n(&mut self, pattern: &str) {
        self.refused_one_to_n = Some(pattern.to_string());
    }
    /// Creates an op from `state` before `anchor`.
    pub fn create_before(&mut self, anchor: OpId, state: OperationState) -> OpId {
        let op = self.ctx.create_op(state);
        self.ctx.insert_op_before(anchor, op);
        self.notify_created(op);
        op
    }

    /// Replaces the results of `op` with `values` (one each) and erases
    /// `op`. Results whose replacement has another type keep their
    /// remaining users through a source materialization.
    pub fn replace_op(&mut self, op: OpId, values: &[Value]) {
        let ranges: Vec<Vec<Value>> = values.iter().map(|&v| vec![v]).collect();
        self.replace_op_with_multiple(op, &ranges);
    }

    /// Replaces each result of `op` with a list of values (1:N; an empty
    /// list for a result converted to nothing) and erases `op`, as MLIR's
    /// `replaceOpWithMultiple`. Patterns converting users later receive
    /// the lists; users left unconverted read a source materialization
    /// built from them.
    pub fn replace_op_with_multiple(&mut self, op: OpId, replacements: &[Vec<Value>]) {
        self.changed = true;
        let results = self.ctx.results(op).to_vec();
        assert_eq!(
            results.len(),
            replacements.len(),
            "replacement count differs from the result count of '{}'",
            self.ctx.name_str(op)
        );
        let loc = self.ctx.loc(op).clone();
        for (&r, new) in results.iter().zip(replacements) {
            self.state.replace(r, new);
            if self.ctx.use_empty(r) {
                continue;
            }
            let old_ty = self.ctx.value_type(r).clone();
            if let [n] = new[..] {
                if *self.ctx.value_type(n) == old_ty {
                    self.ctx.replace_all_uses(r, n);
                    continue;
                }
            }
            // One new value may be defined anywhere above its users; several
            // (or none) are all defined before `op`, where the pattern built them.
            let at = match new[..] {
                [n] => {
                    InsertPoint::after_definition(self.ctx, n).unwrap_or(InsertPoint::Before(op))
                }
                _ => InsertPoint::Before(op),
            };
            let m = self.materialize_source(at, new, &old_ty, &loc);
            self.ctx.replace_all_uses(r, m);
            self.state.map(m, new.clone());
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
        for r in self.ctx.results(op).to_vec() {
            self.state.replace(r, &[]);
        }
        self.ctx.erase_op(op);
    }

    /// Rewrites the arguments of `block` as `conversion` says: each
    /// argument whose types change is replaced by new arguments in its
    /// place (several for 1:N, none for 1:0), and its uses read a source
    /// materialization at the start of the block. Returns the new argument
    /// list. Branches into the block must be converted by their own patterns.
    pub fn apply_signature_conversion(
        &mut self,
        block: BlockId,
        conversion: &SignatureConversion,
    ) -> Vec<Value> {
        let old_args = self.ctx.block_args(block).to_vec();
        assert_eq!(
            old_args.len(),
            conversion.len(),
            "signature conversion of {} inputs for a block of {} arguments",
            conversion.len(),
            old_args.len()
        );
        let fallback_loc = self
            .ctx
            .block_parent_op(block)
            .map(|o| self.ctx.loc(o).clone())
            .unwrap_or_else(Location::unknown);
        // `index` is where the current old argument sits as arguments are
        // inserted before it and it is erased.
        let mut index = 0;
        for (i, &old) in old_args.iter().enumerate() {
            let types = conversion.input(i);
            let old_ty = self.ctx.value_type(old).clone();
            if types.len() == 1 && types[0] == old_ty {
                index += 1;
                continue;
            }
            self.changed = true;
            let loc = self.ctx.value_loc(old).cloned();
            let new: Vec<Value> = types
                .iter()
                .enumerate()
                .map(|(k, t)| {
                    self.ctx
                        .insert_block_argument(block, index + k, t.clone(), loc.clone())
                })
                .collect();
            index += new.len();
            self.state.replace(old, &new);
            if !self.ctx.use_empty(old) {
                // Only the existing users move to the materialization, not
                // the ops the materialization itself creates.
                let users = self.ctx.uses(old).to_vec();
                let loc = loc.unwrap_or_else(|| fallback_loc.clone());
                let m =
                    self.materialize_source(InsertPoint::BlockStart(block), &new, &old_ty, &loc);
                for u in users {
                    self.ctx.set_operand(u.op, u.index as usize, m);
                }
                self.state.map(m, new);
            }
            self.ctx.erase_block_argument(block, index);
        }
        self.ctx.block_args(block).to_vec()
    }

    /// Converts the argument types of every block of `region` with the
    /// type converter ([`ConversionRewriter::apply_signature_conversion`]
    /// with each block's converted signature). Errors name the first
    /// argument whose type has no conversion; nothing is changed then.
    pub fn convert_region_types(&mut self, region: RegionId) -> Result<(), Diagnostic> {
        let Some(converter) = self.converter else {
            return Ok(());
        };
        let blocks = self.ctx.region_blocks(region).to_vec();
        let mut conversions = Vec::with_capacity(blocks.len());
        for &b in &blocks {
            let types: Vec<Type> = self
                .ctx
                .block_args(b)
                .iter()
                .map(|&a| self.ctx.value_type(a).clone())
                .collect();
            let Some(conversion) = converter.convert_signature(&types) else {
                let (arg, ty) = self
                    .ctx
                    .block_args(b)
                    .iter()
                    .zip(&types)
                    .find(|(_, t)| converter.convert_type_to_many(t).is_none())
                    .expect("some argument type failed to convert");
                let loc = self
                    .ctx
                    .value_loc(*arg)
                    .cloned()
                    .or_else(|| {
                        self.ctx
                            .region_parent(region)
                            .map(|o| self.ctx.loc(o).clone())
                    })
                    .unwrap_or_else(Location::unknown);
                return Err(Diagnostic::error(
                    loc,
                    format!("block argument type '{ty}' has no conversion"),
                ));
            };
            conversions.push(conversion);
        }
        for (b, conversion) in blocks.into_iter().zip(&conversions) {
            self.apply_signature_conversion(b, conversion);
        }
        Ok(())
    }

    /// Fails the whole conversion with `diagnostic` (reported as is when
    /// the conversion ends), e.g. for an input the pattern cannot handle.
    /// The pattern should then return `false`.
    pub fn fail(&mut self, diagnostic: Diagnostic) {
        self.state.errors.push(diagnostic);
    }

    /// A source materialization of `inputs` to `to`: a conversion cast now,
    /// handed to the type converter's hooks when the conversion ends.
    fn materialize_source(
        &mut self,
        at: InsertPoint,
        inputs: &[Value],
        to: &Type,
        loc: &Location,
    ) -> Value {
        self.state.cast(
            self.ctx,
            CastKind::Source,
            at,
            inputs,
            std::slice::from_ref(to),
            loc,
        )[0]
    }
}
