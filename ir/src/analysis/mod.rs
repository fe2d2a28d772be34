//! Analyses and the analysis manager.
//!
//! An analysis is computed on demand for an operation and cached; a pass
//! states which analyses it preserves, and the pass manager invalidates the
//! rest after the pass runs.

mod dominance;
mod liveness;
mod manager;

pub use dominance::DominanceInfo;
pub use liveness::Liveness;
pub use manager::{Analysis, AnalysisManager, PreservedAnalyses};
