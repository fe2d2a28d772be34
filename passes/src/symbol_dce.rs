//! `symbol-dce`: erases private symbols that nothing references.

use rustc_hash::FxHashSet;

use ipuc_ir::analysis::{AnalysisManager, PreservedAnalyses};
use ipuc_ir::pass::{DeclaredPass, PassCreateError, PassHooks};
use ipuc_ir::symbol_table::{collect_symbol_uses, symbol_name, visibility, Visibility};
use ipuc_ir::{Context, Diagnostic, OpId, Traits};

/// The symbol DCE pass.
#[derive(Clone)]
pub struct SymbolDce;

ipuc_ir::declare_pass! {
    SymbolDce => "symbol-dce" {
        summary: "Eliminate dead private symbols",
        statistics SymbolDceStatistics {
            /// Number of symbols DCE'd
            erased: u64 => "num-dce'd",
        }
    }
}

impl DeclaredPass for SymbolDce {
    fn create(_options: &(), _hooks: &PassHooks) -> Result<Self, PassCreateError> {
        Ok(SymbolDce)
    }
    fn run(
        &mut self,
        ctx: &mut Context,
        op: OpId,
        _am: &mut AnalysisManager,
        stats: &mut SymbolDceStatistics,
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
        let before = stats.erased;
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
                stats.erased += 1;
            }
        }
        Ok(PreservedAnalyses::all_unless(stats.erased != before))
    }
}
