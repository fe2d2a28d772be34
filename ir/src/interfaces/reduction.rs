//! `Reduction`: the op combines elements along some dimensions.

use super::{ElementWork, OpInterface, OpSignature};

/// How a reduction combines two elements (a subset of MLIR's
/// `vector::CombiningKind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CombiningKind {
    /// `a + b` (sums and means).
    Add,
    /// `a * b`.
    Mul,
    /// `max(a, b)`.
    Max,
    /// `min(a, b)`.
    Min,
}

/// The reductions an op performs over its first operand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReductionShape {
    /// Independent reductions: the product of the kept dimensions.
    pub outer: u64,
    /// Elements each reduction combines: the product of the reduced
    /// dimensions.
    pub inner: u64,
    /// The passes over the reduced dimensions, in order: one for a plain
    /// reduction, `[Max, Add]` for softmax (the maximum, then the sum of
    /// exponentials), `[Add, Add]` for a normalization (mean, variance).
    pub passes: Vec<CombiningKind>,
    /// Work per input element besides the combining (softmax's `x - max`,
    /// `exp` and scale); [`ElementWork::NONE`] for a plain reduction.
    pub per_element: ElementWork,
}

impl ReductionShape {
    /// Elements read per pass: `outer * inner` (saturating).
    pub fn elements(&self) -> u64 {
        self.outer.saturating_mul(self.inner)
    }
}

/// The op reduces its first operand along some dimensions (a sum, a
/// maximum, or a normalization that reduces and then rescales every
/// element).
pub trait Reduction: Send + Sync {
    /// The reductions; `None` when a dimension they depend on is dynamic or
    /// the signature is ill-formed.
    fn reduction(&self, sig: &OpSignature<'_>) -> Option<ReductionShape>;
}

impl OpInterface for dyn Reduction {
    const NAME: &'static str = "Reduction";
}
