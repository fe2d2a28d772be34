//! `symbol-dce`: erases private symbols that nothing references.

use rustc_hash::FxHashSet;

use ipuc_ir::analysis::{AnalysisManager, PreservedAnalyses};
use ipuc_ir::pass::{Pass, PassInfo, Statistic};
use ipuc_ir::symbol_table::{collect_symbol_uses, symbol_name, visibility, Visibility};
use ipuc_ir::{Context, Diagnostic, OpId, Traits};

/// The symbol DCE pass.
#[derive(Default)]
pub struct SymbolDce {
    erased: u64,
}

/// Registration info.
pub fn info() -> PassInfo {
    PassInfo {
        name: "symbol-dce",
        description: "Eliminate dead private symbols",
        options: vec![],
        create: |_| Ok(Box::new(SymbolDce::default())),
    }
}

impl Pass for SymbolDce {
    fn name(&self) -> &str {
        "symbol-dce"
    }
    fn run(
        &mut self,
        ctx: &mut Context,
        op: OpId,
        _am: &mut AnalysisManager,
    ) -> Result<PreservedAnalyses, Diagnostic> {
        if !ctx.name(op).has_trait(Traits::SYMBOL_TABLE) {
            return Err(Diagnostic::error(
                ctx.loc(op).clone(),
                format!(
                    "symbol-dce must run on a symbol table op, not '{}'",
                    ctx.name_str(op)
                ),
            ));
        }
        let before = self.erased;
        loop {
            // Uses from live symbols (and non-symbol ops) only, so dead cycles go too.
            let children: Vec<OpId> = ctx
                .regions(op)
                .iter()
                .flat_map(|&r| ctx.region_blocks(r).to_vec())
                .flat_map(|b| ctx.block_ops_vec(b))
                .collect();
            let mut used: FxHashSet<String> = FxHashSet::default();
            for &c in &children {
                let is_dead_candidate =
                    symbol_name(ctx, c).is_some() && visibility(ctx, c) == Visibility::Private;
                for (user, name) in collect_symbol_uses(ctx, c) {
                    // A private symbol referencing itself does not keep itself alive.
                    if is_dead_candidate && user == c {
                        continue;
                    }
                    if !(is_dead_candidate && symbol_name(ctx, c) == Some(name.as_str())) {
                        used.insert(name);
                    }
                }
            }
            let dead: Vec<OpId> = children
                .into_iter()
                .filter(|&c| {
                    visibility(ctx, c) == Visibility::Private
                        && symbol_name(ctx, c).is_some_and(|n| !used.contains(n))
                })
                .collect();
            if dead.is_empty() {
                break;
            }
            for d in dead {
                ctx.erase_op(d);
                self.erased += 1;
            }
        }
        Ok(if self.erased == before {
            PreservedAnalyses::all()
        } else {
            PreservedAnalyses::none()
        })
    }
    fn clone_pass(&self) -> Box<dyn Pass> {
        Box::new(SymbolDce::default())
    }
    fn statistics(&self) -> Vec<Statistic> {
        vec![Statistic {
            name: "num-dce'd",
            description: "Number of symbols DCE'd",
            value: self.erased,
        }]
    }
    fn merge_statistics(&mut self, other: &dyn Pass) {
        self.erased += other.statistics().iter().map(|s| s.value).sum::<u64>();
    }
}
