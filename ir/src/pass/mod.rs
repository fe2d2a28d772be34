//! Passes and the pass manager.
//!
//! A pass declares its name, summary, typed options and statistics once
//! ([`declare_pass!`](crate::declare_pass), see [`declaration`]); it is
//! registered by that name ([`PassRegistry`]) and assembled from MLIR's
//! textual pipeline syntax
//! (`builtin.module(func.func(canonicalize{max-iterations=4},cse),symbol-dce)`).
//! Nested pass managers run on the ops of their anchor; passes on
//! isolated-from-above ops run in parallel (rayon), each on a private copy
//! of the op, and the results are put back in order, so output is identical
//! with and without threading.

pub mod declaration;
mod hooks;
mod instrumentation;
mod manager;
mod options;
mod pipeline;
mod registry;
mod reproducer;
mod statistics;

pub use declaration::{DeclaredPass, PassDeclaration, PassInstance};
pub use hooks::{HookInfo, PassHook, PassHooks};
pub use instrumentation::{IrPrinting, PassFilter, PassInstrumentation, PassTiming, TimingDisplay};
pub use manager::{PassManager, PassManagerOptions, PipelineError};
pub use options::{
    OptionValueError, PassCreateError, PassOptionDecl, PassOptionKind, PassOptionSet,
    PassOptionValue,
};
pub use pipeline::{parse_pipeline, PipelineElement};
pub use registry::{PassConstructor, PassInfo, PassRegistry, RegistrationError};
pub use reproducer::{parse_reproducer_config, write_reproducer, ReproducerConfig};
pub use statistics::{KeyedCounters, PassStatisticSet, Statistic, StatisticValue};

use std::any::Any;

use crate::analysis::{AnalysisManager, PreservedAnalyses};
use crate::context::{Context, OpId};
use crate::diagnostics::Diagnostic;

/// A pass as the pass manager runs it: a transformation or analysis over
/// one operation. Passes are written as declared passes
/// ([`DeclaredPass`]); [`PassInstance`] implements this trait for them.
pub trait Pass: Send + Sync + 'static {
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
    /// The pass as `Any`, so that [`Pass::merge_statistics`] can reach the
    /// clone's typed counters.
    fn as_any(&self) -> &dyn Any;
}
