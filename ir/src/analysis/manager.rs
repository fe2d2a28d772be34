//! Caches analyses per operation and invalidates what a pass does not preserve.
//!
//! A pass that keeps an analysis valid says so ([`PreservedAnalyses`]); the
//! cached result is then reused by the next pass. A false claim would hand
//! later passes stale facts, so the pass manager can check every claim
//! ([`AnalysisManager::stale_preserved`], on by default in debug builds):
//! each preserved analysis still cached is recomputed and compared.

use std::any::{Any, TypeId};

use rustc_hash::{FxHashMap, FxHashSet};

use crate::context::{Context, OpId};

/// An analysis that can be computed for an operation. Equality compares
/// results, so that a claim to preserve one can be checked by recomputing it.
pub trait Analysis: Any + Send + Sync + PartialEq {
    /// Computes the analysis for `op`.
    fn compute(ctx: &Context, op: OpId) -> Self
    where
        Self: Sized;
}

impl Analysis for super::DominanceInfo {
    fn compute(ctx: &Context, op: OpId) -> Self {
        super::DominanceInfo::compute(ctx, op)
    }
}

impl Analysis for super::Liveness {
    fn compute(ctx: &Context, op: OpId) -> Self {
        super::Liveness::compute(ctx, op)
    }
}

/// Which analyses a pass keeps valid.
#[derive(Clone, Debug, Default)]
pub struct PreservedAnalyses {
    all: bool,
    kept: FxHashSet<TypeId>,
}

impl PreservedAnalyses {
    /// Nothing is preserved (the default for a pass that changed the IR).
    pub fn none() -> Self {
        PreservedAnalyses::default()
    }
    /// Everything is preserved (a pass that did not change the IR).
    pub fn all() -> Self {
        PreservedAnalyses {
            all: true,
            kept: FxHashSet::default(),
        }
    }
    /// Everything unless the pass `changed` the IR, nothing if it did: what
    /// a pass that keeps no analysis up to date across its changes returns.
    pub fn all_unless(changed: bool) -> Self {
        if changed {
            PreservedAnalyses::none()
        } else {
            PreservedAnalyses::all()
        }
    }
    /// Marks analysis `A` as preserved.
    pub fn preserve<A: Analysis>(&mut self) -> &mut Self {
        self.kept.insert(TypeId::of::<A>());
        self
    }
    /// Whether `A` is preserved.
    pub fn is_preserved<A: Analysis>(&self) -> bool {
        self.all || self.kept.contains(&TypeId::of::<A>())
    }
    /// Whether everything is preserved.
    pub fn is_all(&self) -> bool {
        self.all
    }
}

/// One cached result, with what is needed to check it against a fresh one.
struct Cached {
    value: Box<dyn Any + Send + Sync>,
    name: &'static str,
    matches_fresh: fn(&dyn Any, &Context, OpId) -> bool,
}

fn matches_fresh<A: Analysis>(cached: &dyn Any, ctx: &Context, op: OpId) -> bool {
    cached
        .downcast_ref::<A>()
        .is_some_and(|a| *a == A::compute(ctx, op))
}

/// Cache of analyses keyed by (operation, analysis type).
#[derive(Default)]
pub struct AnalysisManager {
    cache: FxHashMap<(OpId, TypeId), Cached>,
    /// How many times an analysis was computed (for tests and statistics).
    pub computations: u64,
}

impl AnalysisManager {
    /// An empty cache.
    pub fn new() -> Self {
        AnalysisManager::default()
    }
    /// The analysis `A` for `op`, computed if not cached.
    pub fn get<A: Analysis>(&mut self, ctx: &Context, op: OpId) -> &A {
        let key = (op, TypeId::of::<A>());
        if !self.cache.contains_key(&key) {
            self.computations += 1;
            self.cache.insert(
                key,
                Cached {
                    value: Box::new(A::compute(ctx, op)),
                    name: short_type_name::<A>(),
                    matches_fresh: matches_fresh::<A>,
                },
            );
        }
        self.cache[&key]
            .value
            .downcast_ref::<A>()
            .expect("analysis cache holds the keyed type")
    }
    /// The cached analysis, if any.
    pub fn cached<A: Analysis>(&self, op: OpId) -> Option<&A> {
        self.cache
            .get(&(op, TypeId::of::<A>()))
            .and_then(|c| c.value.downcast_ref::<A>())
    }
    /// Drops every analysis not in `preserved`.
    pub fn invalidate(&mut self, preserved: &PreservedAnalyses) {
        if preserved.all {
            return;
        }
        self.cache.retain(|(_, t), _| preserved.kept.contains(t));
    }
    /// The cached analyses that `preserved` keeps but that no longer match
    /// a fresh computation on the IR as it is now (sorted names, empty when
    /// every claim holds). Call it after a pass, before [`Self::invalidate`].
    pub fn stale_preserved(
        &self,
        ctx: &Context,
        preserved: &PreservedAnalyses,
    ) -> Vec<&'static str> {
        let mut stale: Vec<&'static str> = self
            .cache
            .iter()
            .filter(|((_, t), _)| preserved.all || preserved.kept.contains(t))
            .filter(|((op, _), c)| {
                !ctx.is_live(*op) || !(c.matches_fresh)(c.value.as_ref(), ctx, *op)
            })
            .map(|(_, c)| c.name)
            .collect();
        stale.sort_unstable();
        stale.dedup();
        stale
    }
    /// Drops everything.
    pub fn clear(&mut self) {
        self.cache.clear();
    }
}

/// `DominanceInfo` rather than `ipuc_ir::analysis::dominance::DominanceInfo`.
fn short_type_name<A>() -> &'static str {
    let full = std::any::type_name::<A>();
    full.rsplit("::").next().unwrap_or(full)
}
