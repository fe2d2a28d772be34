//! `cse`: common subexpression elimination of pure, region-free operations.
//!
//! Equivalent ops (same name, operands, result types, properties and
//! attributes) are replaced by the first one that dominates them. Scopes
//! follow the region tree: a nested region sees the ops of the blocks that
//! enclose it (unless its op is isolated from above); in multi-block regions
//! a block sees its dominators' ops.
//!
//! Block dominance comes from the analysis manager (computed once per
//! anchor op, or reused from an earlier pass that preserved it). CSE erases
//! only region-free ops and never touches blocks or terminators' successors,
//! so it preserves [`DominanceInfo`]; every other analysis is invalidated
//! when it changed something. (In debug builds the pass manager recomputes
//! each analysis a pass claims to preserve and fails the pass if it differs.)

use rustc_hash::FxHashMap;

use ipuc_ir::analysis::{AnalysisManager, DominanceInfo, PreservedAnalyses};
use ipuc_ir::pass::{DeclaredPass, PassCreateError, PassHooks};
use ipuc_ir::{BlockId, Context, Diagnostic, Dictionary, OpId, RegionId, Traits, Type, Value};

#[derive(Clone, PartialEq, Eq, Hash)]
struct OpKey {
    name: String,
    operands: Vec<Value>,
    results: Vec<Type>,
    properties: Option<Dictionary>,
    attributes: Dictionary,
}

/// The CSE pass.
#[derive(Clone)]
pub struct Cse;

ipuc_ir::declare_pass! {
    Cse => "cse" {
        summary: "Eliminate common sub-expressions",
        statistics CseStatistics {
            /// Number of operations CSE'd
            eliminated: u64 => "num-cse'd",
        }
    }
}

fn key(ctx: &Context, op: OpId) -> Option<OpKey> {
    let name = ctx.name(op);
    if !name.has_trait(Traits::PURE)
        || !ctx.regions(op).is_empty()
        || name.has_trait(Traits::TERMINATOR)
        || ctx.results(op).is_empty()
    {
        return None;
    }
    let mut operands = ctx.operands(op).to_vec();
    if name.has_trait(Traits::COMMUTATIVE) {
        operands.sort_unstable();
    }
    Some(OpKey {
        name: name.as_str().to_string(),
        operands,
        results: ctx.result_types(op),
        properties: ctx.properties(op).cloned(),
        attributes: ctx.attributes(op).clone(),
    })
}

/// Known ops by key, one map per enclosing scope (innermost last).
type Scopes = Vec<FxHashMap<OpKey, OpId>>;

/// One run of CSE on an anchor op.
struct Run<'a> {
    anchor: OpId,
    am: &'a mut AnalysisManager,
    eliminated: u64,
}

impl Run<'_> {
    fn region(&mut self, ctx: &mut Context, region: RegionId, scope: &mut Scopes) {
        let blocks = ctx.region_blocks(region).to_vec();
        if blocks.len() <= 1 {
            for b in blocks {
                self.block(ctx, b, scope);
            }
            return;
        }
        // Multi-block: walk the dominator tree so a block sees its
        // dominators' ops. The analysis covers every region under the anchor.
        let dom = self.am.get::<DominanceInfo>(ctx, self.anchor);
        let mut children: FxHashMap<BlockId, Vec<BlockId>> = FxHashMap::default();
        for &b in &blocks[1..] {
            if let Some(d) = dom.immediate_dominator(b) {
                children.entry(d).or_default().push(b);
            }
        }
        self.dom_walk(ctx, blocks[0], &children, scope);
    }

    fn dom_walk(
        &mut self,
        ctx: &mut Context,
        b: BlockId,
        children: &FxHashMap<BlockId, Vec<BlockId>>,
        scope: &mut Scopes,
    ) {
        scope.push(FxHashMap::default());
        self.block_ops(ctx, b, scope);
        for &c in children.get(&b).map(Vec::as_slice).unwrap_or(&[]) {
            self.dom_walk(ctx, c, children, scope);
        }
        scope.pop();
    }

    fn block(&mut self, ctx: &mut Context, b: BlockId, scope: &mut Scopes) {
        scope.push(FxHashMap::default());
        self.block_ops(ctx, b, scope);
        scope.pop();
    }

    fn block_ops(&mut self, ctx: &mut Context, b: BlockId, scope: &mut Scopes) {
        for op in ctx.block_ops_vec(b) {
            if let Some(k) = key(ctx, op) {
                if let Some(&existing) = scope.iter().rev().find_map(|s| s.get(&k)) {
                    let vals = ctx.results(existing).to_vec();
                    ctx.replace_op_uses(op, &vals);
                    ctx.erase_op(op);
                    self.eliminated += 1;
                    continue;
                }
                scope.last_mut().expect("scope").insert(k, op);
            }
            let isolated = ctx.name(op).has_trait(Traits::ISOLATED_FROM_ABOVE);
            for r in ctx.regions(op).to_vec() {
                if isolated {
                    self.region(ctx, r, &mut Vec::new());
                } else {
                    self.region(ctx, r, scope);
                }
            }
        }
    }
}

impl DeclaredPass for Cse {
    fn create(_options: &(), _hooks: &PassHooks) -> Result<Self, PassCreateError> {
        Ok(Cse)
    }
    fn run(
        &mut self,
        ctx: &mut Context,
        op: OpId,
        am: &mut AnalysisManager,
        stats: &mut CseStatistics,
    ) -> Result<PreservedAnalyses, Diagnostic> {
        let mut run = Run {
            anchor: op,
            am,
            eliminated: 0,
        };
        for r in ctx.regions(op).to_vec() {
            run.region(ctx, r, &mut Vec::new());
        }
        stats.eliminated += run.eliminated;
        if run.eliminated == 0 {
            return Ok(PreservedAnalyses::all());
        }
        let mut kept = PreservedAnalyses::none();
        kept.preserve::<DominanceInfo>();
        Ok(kept)
    }
}
