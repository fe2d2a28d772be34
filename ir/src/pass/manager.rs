//! The pass manager: nested op pass managers, verification after each pass,
//! instrumentation hooks, and parallel execution over isolated ops.

use std::panic::AssertUnwindSafe;

use rayon::prelude::*;

use super::instrumentation::PassInstrumentation;
use super::options::PassCreateError;
use super::pipeline::PipelineElement;
use super::registry::PassRegistry;
use super::Pass;
use crate::analysis::AnalysisManager;
use crate::context::{Context, OpId};
use crate::diagnostics::Diagnostic;
use crate::dialect::Traits;

/// Options of a pass manager.
#[derive(Clone, Debug)]
pub struct PassManagerOptions {
    /// Verify the IR after each pass (`--verify-each`, default on).
    pub verify_each: bool,
    /// Run nested pipelines on isolated ops in parallel.
    pub threading: bool,
    /// After each pass, recompute every analysis it claims to preserve
    /// that is cached, and fail if one differs (on in debug builds: it
    /// costs a recomputation per preserved analysis).
    pub verify_analyses: bool,
}

impl Default for PassManagerOptions {
    fn default() -> Self {
        PassManagerOptions {
            verify_each: true,
            threading: true,
            verify_analyses: cfg!(debug_assertions),
        }
    }
}

/// Why a pipeline failed.
#[derive(Debug)]
pub enum PipelineError {
    /// The pipeline's nesting is invalid.
    Invalid(String),
    /// A pass of the pipeline could not be built (unknown name or option).
    Create(PassCreateError),
    /// A pass reported an error.
    PassFailed {
        pass: String,
        diagnostic: Diagnostic,
    },
    /// Verification failed after a pass.
    VerifyFailed {
        pass: String,
        diagnostic: Diagnostic,
    },
    /// A pass panicked.
    Panicked { pass: String, message: String },
    /// A pass claimed to preserve analyses that it changed.
    StaleAnalyses {
        pass: String,
        analyses: Vec<&'static str>,
    },
}

impl PipelineError {
    /// The pass involved, if any.
    pub fn pass(&self) -> Option<&str> {
        match self {
            PipelineError::Invalid(_) | PipelineError::Create(_) => None,
            PipelineError::PassFailed { pass, .. }
            | PipelineError::VerifyFailed { pass, .. }
            | PipelineError::Panicked { pass, .. }
            | PipelineError::StaleAnalyses { pass, .. } => Some(pass),
        }
    }
}

enum Entry {
    Pass(Box<dyn Pass>),
    Nested(OpPassManager),
}

struct OpPassManager {
    anchor: String,
    entries: Vec<Entry>,
}

impl OpPassManager {
    fn clone_passes(&self) -> OpPassManager {
        OpPassManager {
            anchor: self.anchor.clone(),
            entries: self
                .entries
                .iter()
                .map(|e| match e {
                    Entry::Pass(p) => Entry::Pass(p.clone_pass()),
                    Entry::Nested(n) => Entry::Nested(n.clone_passes()),
                })
                .collect(),
        }
    }

    fn merge_statistics(&mut self, other: &OpPassManager) {
        for (a, b) in self.entries.iter_mut().zip(&other.entries) {
            match (a, b) {
                (Entry::Pass(a), Entry::Pass(b)) => a.merge_statistics(b.as_ref()),
                (Entry::Nested(a), Entry::Nested(b)) => a.merge_statistics(b),
                _ => {}
            }
        }
    }

    fn to_text(&self) -> String {
        let inner: Vec<String> = self
            .entries
            .iter()
            .map(|e| match e {
                Entry::Pass(p) => {
                    let o = p.options_text();
                    if o.is_empty() {
                        p.name().to_string()
                    } else {
                        format!("{}{{{o}}}", p.name())
                    }
                }
                Entry::Nested(n) => n.to_text(),
            })
            .collect();
        format!("{}({})", self.anchor, inner.join(","))
    }
}

/// A pass manager rooted at `builtin.module`.
pub struct PassManager {
    root: OpPassManager,
    options: PassManagerOptions,
    instrumentations: Vec<Box<dyn PassInstrumentation>>,
}

impl PassManager {
    /// An empty pass manager on `builtin.module`.
    pub fn new(options: PassManagerOptions) -> PassManager {
        PassManager {
            root: OpPassManager {
                anchor: "builtin.module".into(),
                entries: Vec::new(),
            },
            options,
            instrumentations: Vec::new(),
        }
    }

    /// Adds a textual pipeline: elements must be anchored on `builtin.module`
    /// (`builtin.module(...)`); bare passes are added at module level.
    pub fn add_pipeline(
        &mut self,
        registry: &PassRegistry,
        elements: &[PipelineElement],
    ) -> Result<(), PipelineError> {
        for e in elements {
            match e {
                PipelineElement::Nest { anchor, elements } if anchor == "builtin.module" => {
                    let mut entries = build_entries(registry, anchor, elements)?;
                    self.root.entries.append(&mut entries);
                }
                PipelineElement::Nest { anchor, .. } => {
                    return Err(PipelineError::Invalid(format!(
                        "the top-level pipeline must be anchored on 'builtin.module', found '{anchor}': write builtin.module({anchor}(...))"
                    )))
                }
                PipelineElement::Pass { .. } => {
                    let mut entries = build_entries(registry, "builtin.module", std::slice::from_ref(e))?;
                    self.root.entries.append(&mut entries);
                }
            }
        }
        Ok(())
    }

    /// Adds a pass at module level.
    pub fn add_pass(&mut self, pass: Box<dyn Pass>) -> Result<(), PipelineError> {
        check_anchor(pass.as_ref(), "builtin.module")?;
        self.root.entries.push(Entry::Pass(pass));
        Ok(())
    }

    /// Adds an instrumentation; forces sequential execution so hooks see a stable order.
    pub fn add_instrumentation(&mut self, i: Box<dyn PassInstrumentation>) {
        self.instrumentations.push(i);
    }

    /// The pipeline as text (`--dump-pass-pipeline`).
    pub fn pipeline_text(&self) -> String {
        self.root.to_text()
    }

    /// Whether the pipeline has no passes.
    pub fn is_empty(&self) -> bool {
        self.root.entries.is_empty()
    }

    /// Runs the pipeline on `module`.
    pub fn run(&mut self, ctx: &mut Context, module: OpId) -> Result<(), PipelineError> {
        let mut am = AnalysisManager::new();
        let threading = self.options.threading && self.instrumentations.is_empty();
        let mut runner = Runner {
            options: &self.options,
            instr: &mut self.instrumentations,
            threading,
        };
        let r = runner.run_opm(&mut self.root, ctx, module, &mut am, true);
        for i in self.instrumentations.iter_mut() {
            i.finish();
        }
        r
    }

    /// Statistics of all passes (`--mlir-pass-statistics`), as MLIR prints them.
    pub fn statistics_report(&self) -> String {
        let mut out = String::new();
        out.push_str(
            "===-------------------------------------------------------------------------===\n",
        );
        out.push_str("                          ... Pass statistics report ...\n");
        out.push_str(
            "===-------------------------------------------------------------------------===\n",
        );
        stats_rec(&self.root, 0, &mut out);
        out
    }
}

fn stats_rec(opm: &OpPassManager, indent: usize, out: &mut String) {
    let pad = "  ".repeat(indent);
    out.push_str(&format!("{pad}'{}' Pipeline\n", opm.anchor));
    for e in &opm.entries {
        match e {
            Entry::Pass(p) => {
                out.push_str(&format!("{pad}  {}\n", p.name()));
                for s in p.statistics() {
                    out.push_str(&format!(
                        "{pad}    (S) {} {} - {}\n",
                        s.value, s.name, s.description
                    ));
                }
            }
            Entry::Nested(n) => stats_rec(n, indent + 1, out),
        }
    }
}

fn check_anchor(pass: &dyn Pass, anchor: &str) -> Result<(), PipelineError> {
    match pass.anchor() {
        Some(a) if a != anchor && anchor != "any" => Err(PipelineError::Invalid(format!(
            "can't add pass '{}' restricted to '{a}' on a pass manager intended to run on '{anchor}': nest it, e.g. builtin.module({a}({}))",
            pass.name(),
            pass.name()
        ))),
        _ => Ok(()),
    }
}

fn build_entries(
    registry: &PassRegistry,
    anchor: &str,
    elements: &[PipelineElement],
) -> Result<Vec<Entry>, PipelineError> {
    let mut out = Vec::new();
    for e in elements {
        match e {
            PipelineElement::Pass { name, options } => {
                let pass = registry
                    .create(name, options)
                    .map_err(PipelineError::Create)?;
                check_anchor(pass.as_ref(), anchor)?;
                out.push(Entry::Pass(pass));
            }
            PipelineElement::Nest {
                anchor: inner,
                elements,
            } => {
                let entries = build_entries(registry, inner, elements)?;
                out.push(Entry::Nested(OpPassManager {
                    anchor: inner.clone(),
                    entries,
                }));
            }
        }
    }
    Ok(out)
}

struct Runner<'a> {
    options: &'a PassManagerOptions,
    instr: &'a mut Vec<Box<dyn PassInstrumentation>>,
    threading: bool,
}

fn panic_message(e: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = e.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = e.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic payload".to_string()
    }
}

/// Children of `op` (direct, in all regions) matching `anchor`.
fn anchored_children(ctx: &Context, op: OpId, anchor: &str) -> Vec<OpId> {
    let mut out = Vec::new();
    for &r in ctx.regions(op) {
        for &b in ctx.region_blocks(r) {
            for c in ctx.block_ops(b) {
                if anchor == "any" || ctx.name_str(c) == anchor {
                    out.push(c);
                }
            }
        }
    }
    out
}

impl Runner<'_> {
    /// Runs `opm`'s entries on `op`; `top` for the pipeline's root, after
    /// each of whose entries (a pass, or a nested pipeline over every
    /// child) the blobs left unreferenced are freed.
    fn run_opm(
        &mut self,
        opm: &mut OpPassManager,
        ctx: &mut Context,
        op: OpId,
        am: &mut AnalysisManager,
        top: bool,
    ) -> Result<(), PipelineError> {
        for entry in opm.entries.iter_mut() {
            match entry {
                Entry::Pass(pass) => self.run_pass(pass.as_mut(), ctx, op, am)?,
                Entry::Nested(nested) => {
                    let children = anchored_children(ctx, op, &nested.anchor);
                    let parallel = self.threading
                        && children.len() > 1
                        && children
                            .iter()
                            .all(|&c| ctx.name(c).has_trait(Traits::ISOLATED_FROM_ABOVE));
                    if parallel {
                        self.run_parallel(nested, ctx, &children)?;
                    } else {
                        for c in children {
                            let mut child_am = AnalysisManager::new();
                            self.run_opm(nested, ctx, c, &mut child_am, false)?;
                        }
                    }
                    am.clear();
                }
            }
            // Blobs the entry left unreferenced (replaced constants) are
            // freed now, not with the context.
            if top {
                let freed = ctx.resources().prune_unreferenced();
                if freed > 0 {
                    tracing::debug!(bytes = freed, "dropped unreferenced resources");
                }
            }
        }
        Ok(())
    }

    fn run_pass(
        &mut self,
        pass: &mut dyn Pass,
        ctx: &mut Context,
        op: OpId,
        am: &mut AnalysisManager,
    ) -> Result<(), PipelineError> {
        let name = pass.name().to_string();
        let _span = tracing::info_span!("pass", name = %name, op = ctx.name_str(op)).entered();
        for i in self.instr.iter_mut() {
            i.before_pass(pass, ctx, op);
        }
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| pass.run(ctx, op, am)));
        let preserved = match result {
            Ok(Ok(p)) => p,
            Ok(Err(diagnostic)) => {
                for i in self.instr.iter_mut() {
                    i.after_pass_failed(pass, ctx, op);
                }
                return Err(PipelineError::PassFailed {
                    pass: name,
                    diagnostic,
                });
            }
            Err(e) => {
                return Err(PipelineError::Panicked {
                    pass: name,
                    message: panic_message(e),
                });
            }
        };
        if self.options.verify_analyses {
            let analyses = am.stale_preserved(ctx, &preserved);
            if !analyses.is_empty() {
                return Err(PipelineError::StaleAnalyses {
                    pass: name,
                    analyses,
                });
            }
        }
        am.invalidate(&preserved);
        if self.options.verify_each {
            if let Err(diagnostic) = crate::verifier::verify(ctx, op) {
                for i in self.instr.iter_mut() {
                    i.after_pass_failed(pass, ctx, op);
                }
                return Err(PipelineError::VerifyFailed {
                    pass: name,
                    diagnostic,
                });
            }
        }
        for i in self.instr.iter_mut() {
            i.after_pass(pass, ctx, op);
        }
        Ok(())
    }

    fn run_parallel(
        &mut self,
        nested: &mut OpPassManager,
        ctx: &mut Context,
        children: &[OpId],
    ) -> Result<(), PipelineError> {
        let jobs: Vec<(Context, OpId)> = children
            .iter()
            .map(|&c| {
                let mut sub = ctx.fork_empty();
                let copy = ctx.copy_op_into(c, &mut sub);
                (sub, copy)
            })
            .collect();
        let options = self.options.clone();
        let template = &*nested;
        let results: Vec<(Context, OpId, OpPassManager, Result<(), PipelineError>)> = jobs
            .into_par_iter()
            .map(|(mut sub, copy)| {
                let mut local = template.clone_passes();
                let mut no_instr = Vec::new();
                let mut runner = Runner {
                    options: &options,
                    instr: &mut no_instr,
                    threading: false,
                };
                let mut am = AnalysisManager::new();
                let r = runner.run_opm(&mut local, &mut sub, copy, &mut am, false);
                (sub, copy, local, r)
            })
            .collect();
        let mut first_error = None;
        for ((sub, copy, local, r), &orig) in results.into_iter().zip(children) {
            nested.merge_statistics(&local);
            match r {
                Ok(()) if first_error.is_none() => {
                    let new = sub.copy_op_into(copy, ctx);
                    ctx.insert_op_before(orig, new);
                    let vals = ctx.results(new).to_vec();
                    ctx.replace_op_uses(orig, &vals);
                    ctx.erase_op(orig);
                }
                Ok(()) => {}
                Err(e) => {
                    if first_error.is_none() {
                        first_error = Some(e);
                    }
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
