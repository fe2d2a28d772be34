//! `ViewLike`: the op's results are a view of one operand's memory.

use super::OpInterface;

/// The results reinterpret or cut one operand's memory in row-major order
/// (a reshape, a squeeze, a split along any axis): the op does no
/// arithmetic and, for a planner that chooses layouts, moves no data. As
/// MLIR's `ViewLikeOpInterface`.
pub trait ViewLike: Send + Sync {
    /// The operand whose memory the results view.
    fn view_source(&self) -> usize {
        0
    }
}

impl OpInterface for dyn ViewLike {
    const NAME: &'static str = "ViewLike";
}
