//! The IR verifier: structural invariants, op definitions (operand, result,
//! attribute, region and successor constraints, traits, custom verifiers),
//! terminators, SSA dominance in SSACFG regions, and symbol uniqueness.
//! Every error names the offending op and its location.

use rustc_hash::FxHashMap;

use crate::context::{BlockId, Context, OpId, Value, ValueDef};
use crate::diagnostics::Diagnostic;
use crate::dialect::{Arity, Traits, ValueDecl};
use crate::types::Type;

/// Verifies `root` and everything nested in it; returns the first error.
pub fn verify(ctx: &Context, root: OpId) -> Result<(), Diagnostic> {
    let mut v = Verifier {
        ctx,
        positions: FxHashMap::default(),
    };
    v.verify_op(root)
}

struct Verifier<'c> {
    ctx: &'c Context,
    /// Index of each op inside its block, filled lazily per block.
    positions: FxHashMap<OpId, u32>,
}

impl Verifier<'_> {
    fn verify_op(&mut self, op: OpId) -> Result<(), Diagnostic> {
        let ctx = self.ctx;
        let name = ctx.name(op);
        if name.as_str() == "builtin.<<forward-reference>>" {
            return Err(Diagnostic::op_error(
                ctx,
                op,
                "is an unresolved forward reference",
            ));
        }
        if let Some(def) = name.def() {
            if let Some(decls) = &def.operands {
                let types: Vec<&Type> = ctx
                    .operands(op)
                    .iter()
                    .map(|&v| ctx.value_type(v))
                    .collect();
                check_values(ctx, op, "operand", decls, &types)?;
            }
            if let Some(decls) = &def.results {
                let types: Vec<&Type> =
                    ctx.results(op).iter().map(|&v| ctx.value_type(v)).collect();
                check_values(ctx, op, "result", decls, &types)?;
            }
            for a in &def.attributes {
                match ctx.attr(op, a.name) {
                    None if !a.optional => {
                        return Err(Diagnostic::op_error(
                            ctx,
                            op,
                            format!("requires attribute '{}'", a.name),
                        ));
                    }
                    Some(v) if !(a.check)(v) => {
                        return Err(Diagnostic::op_error(
                            ctx,
                            op,
                            format!(
                                "attribute '{}' failed to satisfy constraint: {}",
                                a.name, a.description
                            ),
                        ));
                    }
                    _ => {}
                }
            }
            if let Some(n) = def.num_regions {
                if ctx.regions(op).len() != n {
                    return Err(Diagnostic::op_error(
                        ctx,
                        op,
                        format!("requires {n} region(s), found {}", ctx.regions(op).len()),
                    ));
                }
            }
            if let Some(n) = def.num_successors {
                if ctx.successors(op).len() != n {
                    return Err(Diagnostic::op_error(
                        ctx,
                        op,
                        format!(
                            "requires {n} successor(s), found {}",
                            ctx.successors(op).len()
                        ),
                    ));
                }
            }
            if def.traits.contains(Traits::SAME_OPERANDS_AND_RESULT_TYPE) {
                let mut all = ctx
                    .operands(op)
                    .iter()
                    .chain(ctx.results(op))
                    .map(|&v| ctx.value_type(v));
                if let Some(first) = all.next() {
                    if let Some(bad) = all.find(|t| *t != first) {
                        return Err(Diagnostic::op_error(ctx, op, format!("requires the same type for all operands and results (found {first} and {bad})")));
                    }
                }
            }
            if def.traits.contains(Traits::TERMINATOR) {
                if let Some(b) = ctx.parent_block(op) {
                    if ctx.last_op(b) != Some(op) {
                        return Err(Diagnostic::op_error(
                            ctx,
                            op,
                            "must be the last operation in the parent block",
                        ));
                    }
                }
            }
            if def.traits.contains(Traits::SINGLE_BLOCK) {
                for &r in ctx.regions(op) {
                    if ctx.region_blocks(r).len() > 1 {
                        return Err(Diagnostic::op_error(
                            ctx,
                            op,
                            "expects regions with at most one block",
                        ));
                    }
                }
            }
        }
        // Successors must be in the same region.
        for &s in ctx.successors(op) {
            if ctx.block_parent(s).is_none()
                || ctx.block_parent(s) != ctx.parent_block(op).and_then(|b| ctx.block_parent(b))
            {
                return Err(Diagnostic::op_error(
                    ctx,
                    op,
                    "has a successor that is not in the same region",
                ));
            }
        }
        // Regions: terminators and dominance.
        let graph = name.has_trait(Traits::GRAPH_REGION);
        let needs_terminator =
            name.is_registered() && !name.has_trait(Traits::NO_TERMINATOR) && !graph;
        for &r in ctx.regions(op) {
            for &b in ctx.region_blocks(r) {
                if b != ctx.region_blocks(r)[0] && graph {
                    return Err(Diagnostic::op_error(
                        ctx,
                        op,
                        "graph regions must have a single block",
                    ));
                }
                if needs_terminator {
                    match ctx.last_op(b) {
                        Some(last)
                            if ctx.name(last).has_trait(Traits::TERMINATOR)
                                || !ctx.name(last).is_registered() => {}
                        Some(last) => {
                            return Err(Diagnostic::error(
                                ctx.loc(last).clone(),
                                "block with no terminator, has ".to_string()
                                    + &format!("'{}'", ctx.name_str(last)),
                            )
                            .with_note(
                                ctx.loc(op).clone(),
                                format!("in a region of '{}'", ctx.name_str(op)),
                            ));
                        }
                        None => {
                            return Err(Diagnostic::op_error(
                                ctx,
                                op,
                                "has an empty block: every block needs a terminator",
                            ));
                        }
                    }
                }
                for nested in ctx.block_ops(b) {
                    self.verify_operands(nested, graph)?;
                    self.verify_op(nested)?;
                }
            }
        }
        if name.has_trait(Traits::SYMBOL_TABLE) {
            check_symbol_uniqueness(ctx, op)?;
        }
        if let Some(verify) = name.def().and_then(|d| d.verify) {
            verify(ctx, op)?;
        }
        Ok(())
    }

    /// Checks that every operand of `op` (in region `r`) is visible: defined in
    /// an enclosing region, not across an isolated-from-above boundary, and
    /// dominating the use in SSACFG regions.
    fn verify_operands(&mut self, op: OpId, graph: bool) -> Result<(), Diagnostic> {
        let ctx = self.ctx;
        for (i, &v) in ctx.operands(op).iter().enumerate() {
            if !ctx.value_is_live(v) {
                return Err(Diagnostic::op_error(
                    ctx,
                    op,
                    format!("operand #{i} refers to an erased value"),
                ));
            }
            let Some(def_block) = ctx.value_block(v) else {
                return Err(Diagnostic::op_error(
                    ctx,
                    op,
                    format!("operand #{i} is defined in a detached block or operation"),
                ));
            };
            // Walk up from the use until reaching the def block's region.
            let def_region = ctx.block_parent(def_block);
            let mut use_op = op;
            loop {
                let use_block = ctx.parent_block(use_op).expect("nested op has a block");
                if ctx.block_parent(use_block) == def_region {
                    if !self.dominates(v, def_block, use_op, use_block, graph) {
                        return Err(Diagnostic::op_error(
                            ctx,
                            op,
                            format!("operand #{i} does not dominate this use"),
                        )
                        .with_note(value_loc(ctx, v), "operand defined here"));
                    }
                    break;
                }
                let Some(parent) = ctx.parent_op(use_op) else {
                    return Err(Diagnostic::op_error(
                        ctx,
                        op,
                        format!("operand #{i} is not defined in an enclosing region"),
                    ));
                };
                if ctx.name(parent).has_trait(Traits::ISOLATED_FROM_ABOVE) {
                    return Err(Diagnostic::op_error(
                        ctx,
                        op,
                        format!("using value defined outside the region (operand #{i})"),
                    )
                    .with_note(
                        ctx.loc(parent).clone(),
                        "required by region isolation constraints",
                    ));
                }
                use_op = parent;
            }
        }
        Ok(())
    }

    fn position(&mut self, op: OpId) -> u32 {
        if let Some(&p) = self.positions.get(&op) {
            return p;
        }
        let b = self.ctx.parent_block(op).expect("op in block");
        for (i, o) in self.ctx.block_ops(b).enumerate() {
            self.positions.insert(o, i as u32);
        }
        self.positions[&op]
    }

    fn dominates(
        &mut self,
        v: Value,
        def_block: BlockId,
        use_op: OpId,
        use_block: BlockId,
        graph: bool,
    ) -> bool {
        // Graph regions and the block arguments of the using block need no order check.
        let region_graph = graph
            || self
                .ctx
                .block_parent_op(use_block)
                .is_some_and(|p| self.ctx.name(p).has_trait(Traits::GRAPH_REGION));
        if def_block == use_block {
            return match self.ctx.value_def(v) {
                ValueDef::BlockArg { .. } => true,
                ValueDef::Result { op, .. } => {
                    region_graph || self.position(op) < self.position(use_op)
                }
            };
        }
        if region_graph {
            return true;
        }
        let doms = crate::analysis::DominanceInfo::compute_region(
            self.ctx,
            self.ctx.block_parent(use_block).expect("block in region"),
        );
        doms.block_dominates(def_block, use_block)
    }
}

fn value_loc(ctx: &Context, v: Value) -> crate::location::Location {
    match ctx.value_def(v) {
        ValueDef::Result { op, .. } => ctx.loc(op).clone(),
        ValueDef::BlockArg { block, .. } => ctx
            .value_loc(v)
            .cloned()
            .or_else(|| ctx.block_parent_op(block).map(|o| ctx.loc(o).clone()))
            .unwrap_or_else(crate::location::Location::unknown),
    }
}

fn check_values(
    ctx: &Context,
    op: OpId,
    what: &str,
    decls: &[ValueDecl],
    types: &[&Type],
) -> Result<(), Diagnostic> {
    let fixed = decls.iter().filter(|d| d.arity == Arity::One).count();
    let variadic = decls.iter().any(|d| d.arity != Arity::One);
    let ok_count = if variadic {
        types.len() >= fixed
    } else {
        types.len() == fixed
    };
    if !ok_count {
        let expected = if variadic {
            format!("at least {fixed}")
        } else {
            fixed.to_string()
        };
        return Err(Diagnostic::op_error(
            ctx,
            op,
            format!("requires {expected} {what}s, but found {}", types.len()),
        ));
    }
    // Match types when the layout is unambiguous: fixed decls in order, one
    // variadic group absorbing the rest.
    let mut i = 0;
    let extra = types.len() - fixed;
    for d in decls {
        let n = match d.arity {
            Arity::One => 1,
            _ => {
                let groups = decls.iter().filter(|d| d.arity != Arity::One).count();
                if groups > 1 {
                    return Ok(());
                }
                extra
            }
        };
        for t in &types[i..i + n] {
            if !(d.constraint.check)(t) {
                return Err(Diagnostic::op_error(
                    ctx,
                    op,
                    format!(
                        "{what} #{i} ('{}') must be {}, but got '{t}'",
                        d.name, d.constraint.description
                    ),
                ));
            }
        }
        i += n;
    }
    Ok(())
}

fn check_symbol_uniqueness(ctx: &Context, op: OpId) -> Result<(), Diagnostic> {
    let mut seen: FxHashMap<String, OpId> = FxHashMap::default();
    for &r in ctx.regions(op) {
        for &b in ctx.region_blocks(r) {
            for child in ctx.block_ops(b) {
                if let Some(name) = ctx.attr(child, "sym_name").and_then(|a| a.as_str()) {
                    if let Some(prev) = seen.insert(name.to_string(), child) {
                        return Err(Diagnostic::error(
                            ctx.loc(child).clone(),
                            format!("redefinition of symbol named '{name}'"),
                        )
                        .with_note(ctx.loc(prev).clone(), "see existing symbol definition here"));
                    }
                }
            }
        }
    }
    Ok(())
}
