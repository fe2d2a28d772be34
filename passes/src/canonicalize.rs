//! `canonicalize`: folds and applies every registered canonicalization
//! pattern with the greedy driver until a fixed point.

use std::sync::Arc;

use ipuc_ir::analysis::{AnalysisManager, PreservedAnalyses};
use ipuc_ir::pass::{DeclaredPass, PassCreateError, PassHooks};
use ipuc_ir::rewrite::{
    apply_patterns_greedily, FrozenPatternSet, GreedyConfig, RewritePatternSet,
};
use ipuc_ir::{Context, Diagnostic, OpId};

/// The canonicalizer.
#[derive(Clone)]
pub struct Canonicalize {
    config: GreedyConfig,
    test_convergence: bool,
    patterns: Option<Arc<FrozenPatternSet>>,
}

ipuc_ir::declare_pass! {
    Canonicalize => "canonicalize" {
        summary: "Canonicalize operations: fold, erase dead ops and apply canonicalization patterns",
        options CanonicalizeOptions {
            /// Maximum passes over the IR before giving up
            max_iterations: u32 = 10 => "max-iterations",
            /// Maximum pattern applications (-1: unlimited)
            max_num_rewrites: i64 = -1 => "max-num-rewrites",
            /// Visit operations top-down
            top_down: bool = true => "top-down",
            /// Fail if the rewrite did not converge
            test_convergence: bool = false => "test-convergence",
        }
        statistics CanonicalizeStatistics {
            /// Number of pattern applications
            rewrites: u64 => "num-rewrites",
            /// Number of operations folded
            folds: u64 => "num-folds",
            /// Number of dead operations erased
            erased: u64 => "num-erased",
        }
    }
}

impl DeclaredPass for Canonicalize {
    fn create(o: &CanonicalizeOptions, _hooks: &PassHooks) -> Result<Self, PassCreateError> {
        Ok(Canonicalize {
            config: GreedyConfig {
                max_iterations: o.max_iterations,
                max_rewrites: u64::try_from(o.max_num_rewrites).ok(),
                fold: true,
                top_down: o.top_down,
            },
            test_convergence: o.test_convergence,
            patterns: None,
        })
    }
    fn run(
        &mut self,
        ctx: &mut Context,
        op: OpId,
        _am: &mut AnalysisManager,
        counters: &mut CanonicalizeStatistics,
    ) -> Result<PreservedAnalyses, Diagnostic> {
        let patterns = self
            .patterns
            .get_or_insert_with(|| {
                let mut set = RewritePatternSet::new();
                set.add_canonicalization_patterns(ctx.registry());
                Arc::new(set.freeze())
            })
            .clone();
        let stats = apply_patterns_greedily(ctx, op, &patterns, &self.config);
        counters.rewrites += stats.rewrites;
        counters.folds += stats.folds;
        counters.erased += stats.erased;
        if self.test_convergence && !stats.converged {
            return Err(Diagnostic::error(
                ctx.loc(op).clone(),
                format!(
                    "canonicalizer failed to converge within {} iterations",
                    self.config.max_iterations
                ),
            ));
        }
        Ok(PreservedAnalyses::all_unless(
            stats.rewrites + stats.folds + stats.erased != 0,
        ))
    }
}
