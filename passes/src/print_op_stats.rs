//! `print-op-stats`: counts operations by name, printed as MLIR does
//! (`Operations encountered:` table, or JSON with `{json}`).

use std::collections::BTreeMap;
use std::io::Write;

use ipuc_ir::analysis::{AnalysisManager, PreservedAnalyses};
use ipuc_ir::pass::{DeclaredPass, PassCreateError, PassHooks};
use ipuc_ir::{Context, Diagnostic, OpId, WalkOrder};

/// The op statistics printer.
#[derive(Clone)]
pub struct PrintOpStats {
    json: bool,
}

ipuc_ir::declare_pass! {
    PrintOpStats => "print-op-stats" {
        summary: "Print statistics of operations (to stderr)",
        options PrintOpStatsOptions {
            /// Print the statistics as a JSON object
            json: bool = false => "json",
        }
    }
}

/// Op counts by name under `op` (including `op`).
pub fn op_counts(ctx: &Context, op: OpId) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    ctx.walk(op, WalkOrder::PreOrder, &mut |ctx, o| {
        *counts.entry(ctx.name_str(o).to_string()).or_insert(0) += 1
    });
    counts
}

/// Formats counts as MLIR's table.
pub fn format_table(counts: &BTreeMap<String, u64>) -> String {
    let width = counts.keys().map(String::len).max().unwrap_or(0);
    let mut out = String::from("Operations encountered:\n-----------------------\n");
    for (k, v) in counts {
        out.push_str(&format!(" {k:<width$} , {v:>6}\n"));
    }
    out
}

/// Formats counts as JSON.
pub fn format_json(counts: &BTreeMap<String, u64>) -> String {
    let body: Vec<String> = counts
        .iter()
        .map(|(k, v)| format!("  \"{k}\" : {v}"))
        .collect();
    format!("{{\n{}\n}}\n", body.join(",\n"))
}

impl DeclaredPass for PrintOpStats {
    fn create(options: &PrintOpStatsOptions, _hooks: &PassHooks) -> Result<Self, PassCreateError> {
        Ok(PrintOpStats { json: options.json })
    }
    fn run(
        &mut self,
        ctx: &mut Context,
        op: OpId,
        _am: &mut AnalysisManager,
        _stats: &mut (),
    ) -> Result<PreservedAnalyses, Diagnostic> {
        let counts = op_counts(ctx, op);
        let text = if self.json {
            format_json(&counts)
        } else {
            format_table(&counts)
        };
        let _ = std::io::stderr().write_all(text.as_bytes());
        Ok(PreservedAnalyses::all())
    }
}
