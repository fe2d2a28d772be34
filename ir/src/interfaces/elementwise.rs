//! `Elementwise`: each result element depends only on the operand elements
//! at its position.

use super::{OpInterface, OpSignature};

/// Arithmetic per result element, counted target-independently the way
/// XLA's `HloCostAnalysis` counts it: `flops` for operations that are one
/// instruction on common hardware (add, multiply, compare, select, convert,
/// abs, ...), `special` for functions that take a special-function unit or
/// a software sequence (exp, log, tanh, erf, sigmoid, pow, sqrt, and also
/// division and reciprocal, which a GPU computes with its special-function
/// unit and the IPU with Newton steps). A composite op counts the work of
/// its decomposition, so fusing ops never changes the total.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ElementWork {
    /// Plain arithmetic operations.
    pub flops: u32,
    /// Special-function evaluations.
    pub special: u32,
}

impl ElementWork {
    /// No work (a copy).
    pub const NONE: ElementWork = ElementWork {
        flops: 0,
        special: 0,
    };
    /// `n` plain operations.
    pub const fn flops(n: u32) -> ElementWork {
        ElementWork {
            flops: n,
            special: 0,
        }
    }
    /// `n` special-function evaluations.
    pub const fn special(n: u32) -> ElementWork {
        ElementWork {
            flops: 0,
            special: n,
        }
    }
}

impl std::ops::Add for ElementWork {
    type Output = ElementWork;
    fn add(self, rhs: ElementWork) -> ElementWork {
        ElementWork {
            flops: self.flops + rhs.flops,
            special: self.special + rhs.special,
        }
    }
}

/// The op maps its operands (broadcast to the result shape) element by
/// element to its result, as MLIR's `ElementwiseMappable`.
pub trait Elementwise: Send + Sync {
    /// The work per result element.
    fn work(&self, sig: &OpSignature<'_>) -> ElementWork;
}

impl OpInterface for dyn Elementwise {
    const NAME: &'static str = "Elementwise";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_adds_up() {
        let gelu_tanh = ElementWork::flops(7) + ElementWork::special(1);
        assert_eq!(
            gelu_tanh,
            ElementWork {
                flops: 7,
                special: 1
            }
        );
        assert_eq!(
            ElementWork::NONE + ElementWork::flops(1),
            ElementWork::flops(1)
        );
    }
}
