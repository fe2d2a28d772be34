//! Block dominance within a region (Cooper, Harvey and Kennedy's iterative
//! algorithm over reverse post-order).

use rustc_hash::FxHashMap;

use crate::context::{BlockId, Context, OpId, RegionId};

/// Dominator trees of every region nested in an operation.
#[derive(Default, PartialEq, Eq, Debug)]
pub struct DominanceInfo {
    /// Immediate dominator per block (the entry block maps to itself).
    idom: FxHashMap<BlockId, BlockId>,
    /// Reverse post-order number per reachable block.
    rpo: FxHashMap<BlockId, u32>,
}

impl DominanceInfo {
    /// Computes dominance for all regions nested under `op`.
    pub fn compute(ctx: &Context, op: OpId) -> DominanceInfo {
        let mut info = DominanceInfo::default();
        ctx.walk(op, crate::context::WalkOrder::PreOrder, &mut |ctx, o| {
            for &r in ctx.regions(o) {
                info.add_region(ctx, r);
            }
        });
        info
    }

    /// Computes dominance for one region.
    pub fn compute_region(ctx: &Context, r: RegionId) -> DominanceInfo {
        let mut info = DominanceInfo::default();
        info.add_region(ctx, r);
        info
    }

    fn successors(ctx: &Context, b: BlockId) -> Vec<BlockId> {
        ctx.last_op(b)
            .map(|t| ctx.successors(t).to_vec())
            .unwrap_or_default()
    }

    fn add_region(&mut self, ctx: &Context, r: RegionId) {
        let blocks = ctx.region_blocks(r);
        let Some(&entry) = blocks.first() else { return };
        if blocks.len() == 1 {
            self.idom.insert(entry, entry);
            self.rpo.insert(entry, 0);
            return;
        }
        // Post-order DFS (iterative).
        let mut order = Vec::new();
        let mut visited = FxHashMap::default();
        let mut stack = vec![(entry, 0usize)];
        visited.insert(entry, ());
        while let Some((b, i)) = stack.pop() {
            let succ = Self::successors(ctx, b);
            if i < succ.len() {
                stack.push((b, i + 1));
                let s = succ[i];
                if visited.insert(s, ()).is_none() {
                    stack.push((s, 0));
                }
            } else {
                order.push(b);
            }
        }
        order.reverse();
        let rpo: FxHashMap<BlockId, u32> = order
            .iter()
            .enumerate()
            .map(|(i, &b)| (b, i as u32))
            .collect();
        let mut preds: FxHashMap<BlockId, Vec<BlockId>> = FxHashMap::default();
        for &b in &order {
            for s in Self::successors(ctx, b) {
                preds.entry(s).or_default().push(b);
            }
        }
        let mut idom: FxHashMap<BlockId, BlockId> = FxHashMap::default();
        idom.insert(entry, entry);
        let mut changed = true;
        while changed {
            changed = false;
            for &b in order.iter().skip(1) {
                let mut new_idom: Option<BlockId> = None;
                for &p in preds.get(&b).map(Vec::as_slice).unwrap_or(&[]) {
                    if !idom.contains_key(&p) {
                        continue;
                    }
                    new_idom = Some(match new_idom {
                        None => p,
                        Some(cur) => intersect(&idom, &rpo, p, cur),
                    });
                }
                if let Some(n) = new_idom {
                    if idom.get(&b) != Some(&n) {
                        idom.insert(b, n);
                        changed = true;
                    }
                }
            }
        }
        self.idom.extend(idom);
        self.rpo.extend(rpo);
    }

    /// Whether block `a` dominates block `b` (unreachable blocks are dominated by everything).
    pub fn block_dominates(&self, a: BlockId, b: BlockId) -> bool {
        if a == b {
            return true;
        }
        if !self.rpo.contains_key(&b) {
            return true;
        }
        let mut cur = b;
        loop {
            let Some(&d) = self.idom.get(&cur) else {
                return false;
            };
            if d == a {
                return true;
            }
            if d == cur {
                return false;
            }
            cur = d;
        }
    }

    /// The immediate dominator of a block (`None` for entry and unreachable blocks).
    pub fn immediate_dominator(&self, b: BlockId) -> Option<BlockId> {
        self.idom.get(&b).copied().filter(|&d| d != b)
    }

    /// Whether `b` is reachable from its region's entry.
    pub fn is_reachable(&self, b: BlockId) -> bool {
        self.rpo.contains_key(&b)
    }
}

fn intersect(
    idom: &FxHashMap<BlockId, BlockId>,
    rpo: &FxHashMap<BlockId, u32>,
    mut a: BlockId,
    mut b: BlockId,
) -> BlockId {
    while a != b {
        while rpo[&a] > rpo[&b] {
            a = idom[&a];
        }
        while rpo[&b] > rpo[&a] {
            b = idom[&b];
        }
    }
    a
}
