//! `print-op-stats`: counts operations by name, printed as MLIR does
//! (`Operations encountered:` table, or JSON with `{json}`).

use std::collections::BTreeMap;
use std::io::Write;

use ipuc_ir::analysis::{AnalysisManager, PreservedAnalyses};
use ipuc_ir::pass::{Pass, PassInfo, PassOptionDecl, PassOptionKind};
use ipuc_ir::{Context, Diagnostic, OpId, WalkOrder};

/// The op statistics printer.
pub struct PrintOpStats {
    json: bool,
}

/// Registration info.
pub fn info() -> PassInfo {
    PassInfo {
        name: "print-op-stats",
        description: "Print statistics of operations (to stderr)",
        options: vec![PassOptionDecl {
            name: "json",
            kind: PassOptionKind::Bool,
            default: "false",
            description: "Print the statistics as a JSON object",
        }],
        create: |o| {
            Ok(Box::new(PrintOpStats {
                json: o.bool("json"),
            }))
        },
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

impl Pass for PrintOpStats {
    fn name(&self) -> &str {
        "print-op-stats"
    }
    fn run(
        &mut self,
        ctx: &mut Context,
        op: OpId,
        _am: &mut AnalysisManager,
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
    fn clone_pass(&self) -> Box<dyn Pass> {
        Box::new(PrintOpStats { json: self.json })
    }
    fn options_text(&self) -> String {
        if self.json {
            "json=true".into()
        } else {
            String::new()
        }
    }
}
