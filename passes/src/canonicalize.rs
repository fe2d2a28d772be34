//! `canonicalize`: folds and applies every registered canonicalization
//! pattern with the greedy driver until a fixed point.

use std::sync::Arc;

use ipuc_ir::analysis::{AnalysisManager, PreservedAnalyses};
use ipuc_ir::pass::{Pass, PassInfo, PassOptionDecl, PassOptionKind, PassOptions, Statistic};
use ipuc_ir::rewrite::{
    apply_patterns_greedily, FrozenPatternSet, GreedyConfig, RewritePatternSet,
};
use ipuc_ir::{Context, Diagnostic, OpId};

/// The canonicalizer.
pub struct Canonicalize {
    config: GreedyConfig,
    test_convergence: bool,
    options_text: String,
    patterns: Option<Arc<FrozenPatternSet>>,
    rewrites: u64,
    folds: u64,
    erased: u64,
}

/// Registration info.
pub fn info() -> PassInfo {
    PassInfo {
        name: "canonicalize",
        description:
            "Canonicalize operations: fold, erase dead ops and apply canonicalization patterns",
        options: vec![
            PassOptionDecl {
                name: "max-iterations",
                kind: PassOptionKind::UInt,
                default: "10",
                description: "Maximum passes over the IR before giving up",
            },
            PassOptionDecl {
                name: "max-num-rewrites",
                kind: PassOptionKind::Int,
                default: "-1",
                description: "Maximum pattern applications (-1: unlimited)",
            },
            PassOptionDecl {
                name: "top-down",
                kind: PassOptionKind::Bool,
                default: "true",
                description: "Visit operations top-down",
            },
            PassOptionDecl {
                name: "test-convergence",
                kind: PassOptionKind::Bool,
                default: "false",
                description: "Fail if the rewrite did not converge",
            },
        ],
        create: |o: &PassOptions| {
            let max_rewrites = o.int("max-num-rewrites");
            Ok(Box::new(Canonicalize {
                config: GreedyConfig {
                    max_iterations: o.uint("max-iterations").min(u32::MAX as u64) as u32,
                    max_rewrites: (max_rewrites >= 0).then_some(max_rewrites as u64),
                    fold: true,
                    top_down: o.bool("top-down"),
                },
                test_convergence: o.bool("test-convergence"),
                options_text: o.to_text(),
                patterns: None,
                rewrites: 0,
                folds: 0,
                erased: 0,
            }))
        },
    }
}

impl Pass for Canonicalize {
    fn name(&self) -> &str {
        "canonicalize"
    }
    fn run(
        &mut self,
        ctx: &mut Context,
        op: OpId,
        _am: &mut AnalysisManager,
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
        self.rewrites += stats.rewrites;
        self.folds += stats.folds;
        self.erased += stats.erased;
        if self.test_convergence && !stats.converged {
            return Err(Diagnostic::error(
                ctx.loc(op).clone(),
                format!(
                    "canonicalizer failed to converge within {} iterations",
                    self.config.max_iterations
                ),
            ));
        }
        Ok(if stats.rewrites + stats.folds + stats.erased == 0 {
            PreservedAnalyses::all()
        } else {
            PreservedAnalyses::none()
        })
    }
    fn clone_pass(&self) -> Box<dyn Pass> {
        Box::new(Canonicalize {
            config: self.config.clone(),
            test_convergence: self.test_convergence,
            options_text: self.options_text.clone(),
            patterns: self.patterns.clone(),
            rewrites: 0,
            folds: 0,
            erased: 0,
        })
    }
    fn options_text(&self) -> String {
        self.options_text.clone()
    }
    fn statistics(&self) -> Vec<Statistic> {
        vec![
            Statistic {
                name: "num-rewrites",
                description: "Number of pattern applications",
                value: self.rewrites,
            },
            Statistic {
                name: "num-folds",
                description: "Number of operations folded",
                value: self.folds,
            },
            Statistic {
                name: "num-erased",
                description: "Number of dead operations erased",
                value: self.erased,
            },
        ]
    }
    fn merge_statistics(&mut self, other: &dyn Pass) {
        for s in other.statistics() {
            match s.name {
                "num-rewrites" => self.rewrites += s.value,
                "num-folds" => self.folds += s.value,
                _ => self.erased += s.value,
            }
        }
    }
}
