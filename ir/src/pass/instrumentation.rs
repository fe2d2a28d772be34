//! Pass instrumentation: IR printing (before/after/after-change/after-failure
//! and a dump tree with one file per pass) and timing reports.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::Pass;
use crate::context::{Context, OpId};
use crate::printer::{print_op, PrintOptions};

/// Hooks around every pass execution.
pub trait PassInstrumentation: Send {
    /// Before `pass` runs on `op`.
    fn before_pass(&mut self, _pass: &dyn Pass, _ctx: &Context, _op: OpId) {}
    /// After `pass` succeeded on `op` (and verification passed).
    fn after_pass(&mut self, _pass: &dyn Pass, _ctx: &Context, _op: OpId) {}
    /// After `pass` failed on `op` (or verification failed).
    fn after_pass_failed(&mut self, _pass: &dyn Pass, _ctx: &Context, _op: OpId) {}
    /// At the end of the pipeline.
    fn finish(&mut self) {}
}

/// Which passes an IR printing flag applies to.
#[derive(Clone, Debug, Default)]
pub enum PassFilter {
    /// None.
    #[default]
    Never,
    /// Every pass.
    All,
    /// Passes with these names.
    Names(Vec<String>),
}

impl PassFilter {
    fn matches(&self, name: &str) -> bool {
        match self {
            PassFilter::Never => false,
            PassFilter::All => true,
            PassFilter::Names(n) => n.iter().any(|x| x == name),
        }
    }
}

/// `--mlir-print-ir-*` and `--mlir-print-ir-tree-dir`.
pub struct IrPrinting {
    /// Print before these passes.
    pub before: PassFilter,
    /// Print after these passes.
    pub after: PassFilter,
    /// Only print after a pass if it changed the IR.
    pub after_change: bool,
    /// Print after a pass failed.
    pub after_failure: bool,
    /// Write one file per pass under this directory instead of printing.
    pub tree_dir: Option<PathBuf>,
    /// Printer options for the dumps.
    pub print_options: PrintOptions,
    /// Where printed IR goes (stderr by default).
    pub sink: Box<dyn Write + Send>,
    fingerprint: Option<u64>,
    dumped: usize,
}

impl IrPrinting {
    /// IR printing to stderr with nothing enabled.
    pub fn new(print_options: PrintOptions) -> IrPrinting {
        IrPrinting {
            before: PassFilter::Never,
            after: PassFilter::Never,
            after_change: false,
            after_failure: false,
            tree_dir: None,
            print_options,
            sink: Box::new(std::io::stderr()),
            fingerprint: None,
            dumped: 0,
        }
    }

    fn text(&self, ctx: &Context, op: OpId) -> String {
        print_op(ctx, op, &self.print_options)
    }

    fn emit(&mut self, when: &str, pass: &dyn Pass, ctx: &Context, op: OpId) {
        let text = self.text(ctx, op);
        if let Some(dir) = &self.tree_dir {
            // Files are numbered in execution order across the whole pipeline.
            let sub = dir.join(op_path(ctx, op));
            let file = sub.join(format!("{}_{}.mlir", self.dumped, pass.name()));
            self.dumped += 1;
            if let Err(e) = std::fs::create_dir_all(&sub).and_then(|_| std::fs::write(&file, &text))
            {
                tracing::error!("cannot write IR dump {}: {e}", file.display());
            }
            return;
        }
        let _ = writeln!(
            self.sink,
            "// -----// IR Dump {when} {} ({}) //----- //",
            display_name(pass.name()),
            pass.name()
        );
        let _ = write!(self.sink, "{text}");
        let _ = writeln!(self.sink);
    }
}

/// A directory path for an op: its ancestors' names and symbols.
fn op_path(ctx: &Context, op: OpId) -> PathBuf {
    let mut parts = Vec::new();
    let mut cur = Some(op);
    while let Some(o) = cur {
        let name = ctx.name_str(o).replace('.', "_");
        let sym = crate::symbol_table::symbol_name(ctx, o)
            .unwrap_or("no-symbol-name")
            .to_string();
        parts.push(format!("{name}_{sym}"));
        cur = ctx.parent_op(o);
    }
    parts.reverse();
    parts.iter().collect()
}

fn display_name(name: &str) -> String {
    name.split('-')
        .map(|w| {
            let mut c = w.chars();
            match c.next() {
                Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
                None => String::new(),
            }
        })
        .collect()
}

fn fingerprint(text: &str) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    text.hash(&mut h);
    h.finish()
}

impl PassInstrumentation for IrPrinting {
    fn before_pass(&mut self, pass: &dyn Pass, ctx: &Context, op: OpId) {
        if self.after_change && self.after.matches(pass.name()) {
            self.fingerprint = Some(fingerprint(&self.text(ctx, op)));
        }
        if self.before.matches(pass.name()) {
            self.emit("Before", pass, ctx, op);
        }
    }
    fn after_pass(&mut self, pass: &dyn Pass, ctx: &Context, op: OpId) {
        let tree = self.tree_dir.is_some();
        if !self.after.matches(pass.name()) && !tree {
            return;
        }
        if self.after_change {
            let now = fingerprint(&self.text(ctx, op));
            if self.fingerprint.take() == Some(now) {
                return;
            }
        }
        self.emit("After", pass, ctx, op);
    }
    fn after_pass_failed(&mut self, pass: &dyn Pass, ctx: &Context, op: OpId) {
        if self.after_failure {
            self.emit("After Failed", pass, ctx, op);
        }
    }
}

/// How `--mlir-timing` shows its report.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TimingDisplay {
    /// One line per pass name, summed.
    List,
    /// One line per pass execution path (nesting shown by indentation).
    Tree,
}

/// `--mlir-timing`: wall time per pass.
pub struct PassTiming {
    display: TimingDisplay,
    started: Vec<(String, Instant)>,
    totals: BTreeMap<String, (Duration, usize)>,
    order: Vec<String>,
    begin: Instant,
    sink: Box<dyn Write + Send>,
}

impl PassTiming {
    /// Timing reported to stderr at the end of the pipeline.
    pub fn new(display: TimingDisplay) -> PassTiming {
        PassTiming {
            display,
            started: Vec::new(),
            totals: BTreeMap::new(),
            order: Vec::new(),
            begin: Instant::now(),
            sink: Box::new(std::io::stderr()),
        }
    }
}

impl PassInstrumentation for PassTiming {
    fn before_pass(&mut self, pass: &dyn Pass, ctx: &Context, op: OpId) {
        let key = match self.display {
            TimingDisplay::List => pass.name().to_string(),
            TimingDisplay::Tree => {
                let depth = std::iter::successors(ctx.parent_op(op), |&o| ctx.parent_op(o)).count();
                format!(
                    "{}{} ({})",
                    "  ".repeat(depth),
                    pass.name(),
                    ctx.name_str(op)
                )
            }
        };
        self.started.push((key, Instant::now()));
    }
    fn after_pass(&mut self, _pass: &dyn Pass, _ctx: &Context, _op: OpId) {
        if let Some((key, t)) = self.started.pop() {
            if !self.totals.contains_key(&key) {
                self.order.push(key.clone());
            }
            let e = self.totals.entry(key).or_default();
            e.0 += t.elapsed();
            e.1 += 1;
        }
    }
    fn after_pass_failed(&mut self, pass: &dyn Pass, ctx: &Context, op: OpId) {
        self.after_pass(pass, ctx, op);
    }
    fn finish(&mut self) {
        let total = self.begin.elapsed().as_secs_f64().max(1e-9);
        let _ = writeln!(
            self.sink,
            "===-------------------------------------------------------------------------==="
        );
        let _ = writeln!(
            self.sink,
            "                         ... Execution time report ..."
        );
        let _ = writeln!(
            self.sink,
            "===-------------------------------------------------------------------------==="
        );
        let _ = writeln!(self.sink, "  Total Execution Time: {total:.4} seconds\n");
        let _ = writeln!(self.sink, "  ----Wall Time----  ----Name----");
        for k in &self.order {
            let (d, _) = self.totals[k];
            let s = d.as_secs_f64();
            let _ = writeln!(self.sink, "  {s:>8.4} ({:>5.1}%)  {k}", 100.0 * s / total);
        }
        let _ = writeln!(self.sink, "  {total:>8.4} (100.0%)  Total");
    }
}
