//! Pattern rewriting: the pattern API, the rewriter that records changes,
//! and the greedy driver (worklist, folding, dead-op removal, limits and a
//! convergence check), after MLIR's `applyPatternsGreedily`.

use rustc_hash::FxHashSet;

use crate::attributes::Attribute;
use crate::context::{Context, OpId, OperationState, Value, WalkOrder};
use crate::dialect::{FoldResult, Traits};

/// A match-and-rewrite pattern.
pub trait RewritePattern: Send + Sync {
    /// A name for statistics and debugging.
    fn name(&self) -> &str;
    /// The op name this pattern matches (`None`: any op).
    fn root(&self) -> Option<&str>;
    /// Higher benefit patterns are tried first.
    fn benefit(&self) -> u16 {
        1
    }
    /// Tries to rewrite `op`; returns whether the IR changed.
    fn match_and_rewrite(&self, op: OpId, rewriter: &mut Rewriter<'_>) -> bool;
}

/// A pattern built from a closure.
pub struct FnPattern<F> {
    name: &'static str,
    root: Option<&'static str>,
    benefit: u16,
    f: F,
}

impl<F: Fn(OpId, &mut Rewriter<'_>) -> bool + Send + Sync> FnPattern<F> {
    /// A pattern rooted at `root` (op name) running `f`.
    pub fn new(name: &'static str, root: Option<&'static str>, benefit: u16, f: F) -> Self {
        FnPattern {
            name,
            root,
            benefit,
            f,
        }
    }
}

impl<F: Fn(OpId, &mut Rewriter<'_>) -> bool + Send + Sync> RewritePattern for FnPattern<F> {
    fn name(&self) -> &str {
        self.name
    }
    fn root(&self) -> Option<&str> {
        self.root
    }
    fn benefit(&self) -> u16 {
        self.benefit
    }
    fn match_and_rewrite(&self, op: OpId, rewriter: &mut Rewriter<'_>) -> bool {
        (self.f)(op, rewriter)
    }
}

/// A set of patterns, sorted by benefit when frozen.
#[derive(Default)]
pub struct RewritePatternSet {
    patterns: Vec<Box<dyn RewritePattern>>,
}

impl RewritePatternSet {
    /// An empty set.
    pub fn new() -> Self {
        RewritePatternSet::default()
    }
    /// Adds a pattern.
    pub fn add(&mut self, p: impl RewritePattern + 'static) {
        self.patterns.push(Box::new(p));
    }
    /// Adds a boxed pattern.
    pub fn add_boxed(&mut self, p: Box<dyn RewritePattern>) {
        self.patterns.push(p);
    }
    /// Adds the canonicalization patterns of every registered op.
    pub fn add_canonicalization_patterns(&mut self, registry: &crate::dialect::DialectRegistry) {
        for def in registry.op_defs() {
            if let Some(f) = def.canonicalize {
                f(self);
            }
        }
    }
    /// Number of patterns.
    pub fn len(&self) -> usize {
        self.patterns.len()
    }
    /// Whether empty.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }
    /// Freezes the set: patterns indexed by root, by descending benefit (stable).
    pub fn freeze(self) -> FrozenPatternSet {
        let mut patterns = self.patterns;
        patterns.sort_by_key(|p| std::cmp::Reverse(p.benefit()));
        let mut by_root: rustc_hash::FxHashMap<String, Vec<usize>> =
            rustc_hash::FxHashMap::default();
        let mut any = Vec::new();
        for (i, p) in patterns.iter().enumerate() {
            match p.root() {
                Some(r) => by_root.entry(r.to_string()).or_default().push(i),
                None => any.push(i),
            }
        }
        FrozenPatternSet {
            patterns,
            by_root,
            any,
        }
    }
}

/// Patterns ready for matching.
pub struct FrozenPatternSet {
    patterns: Vec<Box<dyn RewritePattern>>,
    by_root: rustc_hash::FxHashMap<String, Vec<usize>>,
    any: Vec<usize>,
}

impl FrozenPatternSet {
    fn candidates(&self, name: &str) -> Vec<usize> {
        let mut v: Vec<usize> = self.by_root.get(name).cloned().unwrap_or_default();
        v.extend(&self.any);
        v.sort_unstable();
        v
    }
}

/// Mutation API for patterns; records what changed for the driver.
pub struct Rewriter<'a> {
    ctx: &'a mut Context,
    /// Ops created or modified since the last drain.
    changed: Vec<OpId>,
    /// Ops whose operands lost a user (candidates for dead-code removal).
    operand_defs: Vec<OpId>,
}

impl<'a> Rewriter<'a> {
    /// A rewriter over `ctx`.
    pub fn new(ctx: &'a mut Context) -> Rewriter<'a> {
        Rewriter {
            ctx,
            changed: Vec::new(),
            operand_defs: Vec::new(),
        }
    }
    /// Read access to the IR.
    pub fn ctx(&self) -> &Context {
        self.ctx
    }
    /// Write access that bypasses change tracking: call [`Rewriter::notify_changed`] for touched ops.
    pub fn ctx_mut(&mut self) -> &mut Context {
        self.ctx
    }
    /// Records that `op` was changed in place.
    pub fn notify_changed(&mut self, op: OpId) {
        self.changed.push(op);
    }
    /// Creates an op from `state` before `anchor`.
    pub fn create_before(&mut self, anchor: OpId, state: OperationState) -> OpId {
        let op = self.ctx.create_op(state);
        self.ctx.insert_op_before(anchor, op);
        self.changed.push(op);
        op
    }
    fn note_operand_defs(&mut self, op: OpId) {
        for &v in self.ctx.operands(op) {
            if let Some(d) = self.ctx.defining_op(v) {
                self.operand_defs.push(d);
            }
        }
    }
    /// Replaces `op`'s results with `values` and erases it.
    pub fn replace_op(&mut self, op: OpId, values: &[Value]) {
        for &r in self.ctx.results(op) {
            for u in self.ctx.uses(r) {
                self.changed.push(u.op);
            }
        }
        self.ctx.replace_op_uses(op, values);
        self.erase_op(op);
    }
    /// Replaces `op` with a new op built from `state` (inserted before it).
    pub fn replace_op_with_new(&mut self, op: OpId, state: OperationState) -> OpId {
        let new = self.create_before(op, state);
        let vals = self.ctx.results(new).to_vec();
        self.replace_op(op, &vals);
        new
    }
    /// Erases `op` (its results must be unused).
    pub fn erase_op(&mut self, op: OpId) {
        self.note_operand_defs(op);
        self.ctx.erase_op(op);
    }
    /// Replaces all uses of `from` with `to`.
    pub fn replace_all_uses(&mut self, from: Value, to: Value) {
        for u in self.ctx.uses(from) {
            self.changed.push(u.op);
        }
        self.ctx.replace_all_uses(from, to);
    }
    /// Sets operand `i` of `op`.
    pub fn set_operand(&mut self, op: OpId, i: usize, v: Value) {
        if let Some(d) = self.ctx.defining_op(self.ctx.operand(op, i)) {
            self.operand_defs.push(d);
        }
        self.ctx.set_operand(op, i, v);
        self.changed.push(op);
    }
    /// Sets an attribute of `op`.
    pub fn set_attr(&mut self, op: OpId, name: &str, value: Attribute) {
        self.ctx.set_attr(op, name, value);
        self.changed.push(op);
    }
}

/// Configuration of the greedy driver.
#[derive(Clone, Debug)]
pub struct GreedyConfig {
    /// Maximum passes over the IR (MLIR's default is 10).
    pub max_iterations: u32,
    /// Maximum pattern applications in total (`None`: unlimited).
    pub max_rewrites: Option<u64>,
    /// Whether to fold ops with their folders.
    pub fold: bool,
    /// Visit ops top-down (pre-order) rather than bottom-up.
    pub top_down: bool,
}

impl Default for GreedyConfig {
    fn default() -> Self {
        GreedyConfig {
            max_iterations: 10,
            max_rewrites: None,
            fold: true,
            top_down: true,
        }
    }
}

/// What the greedy driver did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GreedyStats {
    /// Whether a fixed point was reached within the limits.
    pub converged: bool,
    /// Passes over the IR.
    pub iterations: u32,
    /// Successful pattern applications.
    pub rewrites: u64,
    /// Ops folded away or in place.
    pub folds: u64,
    /// Dead ops erased.
    pub erased: u64,
}

/// Whether `op` has no side effects and no used results: it can be erased.
pub fn is_trivially_dead(ctx: &Context, op: OpId) -> bool {
    let name = ctx.name(op);
    if !name.has_trait(Traits::PURE) || name.has_trait(Traits::TERMINATOR) {
        return false;
    }
    ctx.results(op).iter().all(|&r| ctx.use_empty(r))
}

/// The constant value of `v` if its defining op is constant-like (its `value` attribute).
pub fn constant_value(ctx: &Context, v: Value) -> Option<Attribute> {
    let d = ctx.defining_op(v)?;
    if ctx.name(d).has_trait(Traits::CONSTANT_LIKE) {
        ctx.attr(d, "value").cloned()
    } else {
        None
    }
}

/// What `op`'s folder makes of it, given the constant values of its
/// operands ([`constant_value`]): one result per result of `op`, or `None`
/// where the op has no folder or the folder declines.
pub fn fold_op(ctx: &Context, op: OpId) -> Option<Vec<FoldResult>> {
    let fold = ctx.name(op).def().and_then(|d| d.fold)?;
    let consts: Vec<Option<Attribute>> = ctx
        .operands(op)
        .iter()
        .map(|&v| constant_value(ctx, v))
        .collect();
    fold(ctx, op, &consts).filter(|results| results.len() == ctx.results(op).len())
}

/// Tries to fold `op`; on success the op is replaced and erased (or updated in place).
fn try_fold(rw: &mut Rewriter<'_>, op: OpId) -> bool {
    if rw.ctx.name(op).has_trait(Traits::CONSTANT_LIKE) {
        return false;
    }
    let Some(results) = fold_op(rw.ctx, op) else {
        return false;
    };
    let nres = results.len();
    let loc = rw.ctx.loc(op).clone();
    let dialect = rw.ctx.name(op).dialect().to_string();
    let materialize = rw
        .ctx
        .registry()
        .dialect(&dialect)
        .and_then(|d| d.materialize_constant);
    let mut values = Vec::with_capacity(nres);
    let mut created = Vec::new();
    for (i, r) in results.into_iter().enumerate() {
        match r {
            FoldResult::Value(v) => values.push(v),
            FoldResult::Constant(attr) => {
                let ty = rw.ctx.value_type(rw.ctx.result(op, i)).clone();
                let Some(m) = materialize else {
                    for c in created {
                        rw.ctx.erase_op(c);
                    }
                    return false;
                };
                let Some(c) = m(rw.ctx, &attr, &ty, loc.clone()) else {
                    for c in created {
                        rw.ctx.erase_op(c);
                    }
                    return false;
                };
                rw.ctx.insert_op_before(op, c);
                created.push(c);
                values.push(rw.ctx.result(c, 0));
            }
        }
    }
    if values.iter().zip(rw.ctx.results(op)).all(|(a, b)| a == b) {
        return false;
    }
    rw.changed.extend(created);
    rw.replace_op(op, &values);
    true
}

/// Applies `patterns` to everything nested in `root` (not `root` itself) until
/// a fixed point or a limit.
pub fn apply_patterns_greedily(
    ctx: &mut Context,
    root: OpId,
    patterns: &FrozenPatternSet,
    config: &GreedyConfig,
) -> GreedyStats {
    let mut stats = GreedyStats::default();
    let mut changed_any = true;
    while changed_any && stats.iterations < config.max_iterations {
        stats.iterations += 1;
        changed_any = false;
        let order = if config.top_down {
            WalkOrder::PreOrder
        } else {
            WalkOrder::PostOrder
        };
        let mut initial = ctx.collect_ops(root, order);
        initial.retain(|&o| o != root);
        // The worklist pops from the back.
        initial.reverse();
        let mut worklist = initial;
        let mut in_list: FxHashSet<OpId> = worklist.iter().copied().collect();
        while let Some(op) = worklist.pop() {
            in_list.remove(&op);
            if !ctx.is_live(op) {
                continue;
            }
            let mut rw = Rewriter::new(ctx);
            let mut did = false;
            if is_trivially_dead(rw.ctx, op) {
                rw.erase_op(op);
                stats.erased += 1;
                did = true;
            } else if config.fold && try_fold(&mut rw, op) {
                stats.folds += 1;
                did = true;
            } else {
                let name = rw.ctx.name_str(op).to_string();
                for i in patterns.candidates(&name) {
                    if config.max_rewrites.is_some_and(|m| stats.rewrites >= m) {
                        break;
                    }
                    if patterns.patterns[i].match_and_rewrite(op, &mut rw) {
                        stats.rewrites += 1;
                        did = true;
                        tracing::trace!(pattern = patterns.patterns[i].name(), "applied");
                        break;
                    }
                }
            }
            if did {
                changed_any = true;
                let Rewriter {
                    changed,
                    operand_defs,
                    ..
                } = rw;
                for o in changed.into_iter().chain(operand_defs) {
                    if !ctx.is_live(o) || o == root || !ctx.is_ancestor(root, o) {
                        continue;
                    }
                    if in_list.insert(o) {
                        worklist.push(o);
                    }
                    // Users of a changed op's results may fold now.
                    for &r in ctx.results(o) {
                        for u in ctx.uses(r) {
                            if in_list.insert(u.op) {
                                worklist.push(u.op);
                            }
                        }
                    }
                }
            }
            if config.max_rewrites.is_some_and(|m| stats.rewrites >= m) {
                return stats;
            }
        }
    }
    stats.converged = !changed_any;
    stats
}
