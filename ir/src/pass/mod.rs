//! Passes and the pass manager.
//!
//! Passes are registered by name with typed options ([`PassRegistry`]) and
//! assembled from MLIR's textual pipeline syntax
//! (`builtin.module(func.func(canonicalize{max-iterations=4},cse),symbol-dce)`).
//! Nested pass managers run on the ops of their anchor; passes on
//! isolated-from-above ops run in parallel (rayon), each on a private copy
//! of the op, and the results are put back in order, so output is identical
//! with and without threading.

mod instrumentation;
mod manager;
mod options;
mod pipeline;
mod registry;
mod reproducer;

pub use instrumentation::{IrPrinting, PassFilter, PassInstrumentation, PassTiming, TimingDisplay};
pub use manager::{PassManager, PassManagerOptions, PipelineError};
pub use options::{PassOptionDecl, PassOptionKind, PassOptions};
pub use pipeline::{parse_pipeline, PipelineElement};
pub use registry::{PassInfo, PassRegistry};
pub use reproducer::{parse_reproducer_config, write_reproducer, ReproducerConfig};

use crate::analysis::{AnalysisManager, PreservedAnalyses};
use crate::context::{Context, OpId};
use crate::diagnostics::Diagnostic;

/// A named counter a pass reports (`--mlir-pass-statistics`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statistic {
    /// Short name.
    pub name: &'static str,
    /// What it counts.
    pub description: &'static str,
    /// The value.
    pub value: u64,
}

/// A transformation or analysis over one operation.
pub trait Pass: Send + Sync {
    /// The registered name (`canonicalize`).
    fn name(&self) -> &str;
    /// The op kind this pass runs on (`None`: any op).
    fn anchor(&self) -> Option<&str> {
        None
    }
    /// Runs on `op`. Returns the analyses still valid, or an error.
    fn run(
        &mut self,
        ctx: &mut Context,
        op: OpId,
        am: &mut AnalysisManager,
    ) -> Result<PreservedAnalyses, Diagnostic>;
    /// A fresh instance with the same options (for parallel execution).
    fn clone_pass(&self) -> Box<dyn Pass>;
    /// Options as they would be written in a pipeline (`max-iterations=4`).
    fn options_text(&self) -> String {
        String::new()
    }
    /// Counters accumulated over runs.
    fn statistics(&self) -> Vec<Statistic> {
        Vec::new()
    }
    /// Merges counters of a clone that ran in parallel into this pass.
    fn merge_statistics(&mut self, _other: &dyn Pass) {}
}
