//! Caches analyses per operation and invalidates what a pass does not preserve.

use std::any::{Any, TypeId};

use rustc_hash::{FxHashMap, FxHashSet};

use crate::context::{Context, OpId};

/// An analysis that can be computed for an operation.
pub trait Analysis: Any + Send + Sync {
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

/// Cache of analyses keyed by (operation, analysis type).
#[derive(Default)]
pub struct AnalysisManager {
    cache: FxHashMap<(OpId, TypeId), Box<dyn Any + Send + Sync>>,
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
            self.cache.insert(key, Box::new(A::compute(ctx, op)));
        }
        self.cache[&key]
            .downcast_ref::<A>()
            .expect("analysis cache holds the keyed type")
    }
    /// The cached analysis, if any.
    pub fn cached<A: Analysis>(&self, op: OpId) -> Option<&A> {
        self.cache
            .get(&(op, TypeId::of::<A>()))
            .and_then(|b| b.downcast_ref::<A>())
    }
    /// Drops every analysis not in `preserved`.
    pub fn invalidate(&mut self, preserved: &PreservedAnalyses) {
        if preserved.all {
            return;
        }
        self.cache.retain(|(_, t), _| preserved.kept.contains(t));
    }
    /// Drops everything.
    pub fn clear(&mut self) {
        self.cache.clear();
    }
}
