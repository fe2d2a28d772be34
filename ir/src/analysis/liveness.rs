//! Block-level liveness of SSA values in the regions nested in an operation.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::context::{BlockId, Context, OpId, Value, WalkOrder};

/// Live-in and live-out value sets per block.
#[derive(Default, PartialEq, Eq, Debug)]
pub struct Liveness {
    live_in: FxHashMap<BlockId, FxHashSet<Value>>,
    live_out: FxHashMap<BlockId, FxHashSet<Value>>,
}

impl Liveness {
    /// Computes liveness for every block nested under `op`.
    pub fn compute(ctx: &Context, op: OpId) -> Liveness {
        let mut blocks = Vec::new();
        ctx.walk(op, WalkOrder::PreOrder, &mut |ctx, o| {
            for &r in ctx.regions(o) {
                blocks.extend_from_slice(ctx.region_blocks(r));
            }
        });
        // use/def per block; uses inside nested regions count for the block holding the op.
        let mut uses: FxHashMap<BlockId, FxHashSet<Value>> = FxHashMap::default();
        let mut defs: FxHashMap<BlockId, FxHashSet<Value>> = FxHashMap::default();
        for &b in &blocks {
            let d = defs.entry(b).or_default();
            d.extend(ctx.block_args(b).iter().copied());
            let mut u = FxHashSet::default();
            for o in ctx.block_ops(b) {
                ctx.walk(o, WalkOrder::PreOrder, &mut |ctx, n| {
                    for &v in ctx.operands(n) {
                        if !d.contains(&v) {
                            u.insert(v);
                        }
                    }
                });
                d.extend(ctx.results(o).iter().copied());
            }
            // Values defined inside nested regions are not live-in here.
            u.retain(|v| {
                ctx.value_block(*v)
                    .is_none_or(|vb| !is_nested_in(ctx, vb, b))
            });
            uses.insert(b, u);
        }
        let mut live = Liveness::default();
        let mut changed = true;
        while changed {
            changed = false;
            for &b in blocks.iter().rev() {
                let mut out: FxHashSet<Value> = FxHashSet::default();
                if let Some(t) = ctx.last_op(b) {
                    for s in ctx.successors(t) {
                        if let Some(i) = live.live_in.get(s) {
                            out.extend(i.iter().copied());
                        }
                    }
                }
                let mut inn: FxHashSet<Value> = uses[&b].clone();
                for v in &out {
                    if !defs[&b].contains(v) {
                        inn.insert(*v);
                    }
                }
                if live.live_in.get(&b) != Some(&inn) || live.live_out.get(&b) != Some(&out) {
                    changed = true;
                    live.live_in.insert(b, inn);
                    live.live_out.insert(b, out);
                }
            }
        }
        live
    }

    /// Values live on entry to `b`.
    pub fn live_in(&self, b: BlockId) -> impl Iterator<Item = Value> + '_ {
        self.live_in.get(&b).into_iter().flatten().copied()
    }

    /// Values live on exit from `b`.
    pub fn live_out(&self, b: BlockId) -> impl Iterator<Item = Value> + '_ {
        self.live_out.get(&b).into_iter().flatten().copied()
    }

    /// Whether `v` is live on exit from `b`.
    pub fn is_live_out(&self, v: Value, b: BlockId) -> bool {
        self.live_out.get(&b).is_some_and(|s| s.contains(&v))
    }

    /// Whether `v` has no use after `op` in `op`'s block and is not live-out.
    pub fn is_dead_after(&self, ctx: &Context, v: Value, op: OpId) -> bool {
        let Some(b) = ctx.parent_block(op) else {
            return true;
        };
        if self.is_live_out(v, b) {
            return false;
        }
        let mut cur = ctx.next_op(op);
        while let Some(o) = cur {
            let mut used = false;
            ctx.walk(o, WalkOrder::PreOrder, &mut |ctx, n| {
                used |= ctx.operands(n).contains(&v)
            });
            if used {
                return false;
            }
            cur = ctx.next_op(o);
        }
        true
    }
}

fn is_nested_in(ctx: &Context, inner: BlockId, outer: BlockId) -> bool {
    let mut cur = ctx.block_parent_op(inner);
    while let Some(op) = cur {
        if ctx.parent_block(op) == Some(outer) {
            return true;
        }
        cur = ctx.parent_op(op);
    }
    false
}
