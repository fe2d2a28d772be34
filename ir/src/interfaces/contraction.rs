//! `Contraction`: the matrix products an op performs.

use super::{OpInterface, OpSignature};
use crate::types::Type;

/// One batched matrix product `C[b, m, n] = sum_k A[b, m, k] * B[b, k, n]`,
/// in the names of BLAS and of MLIR's `linalg` contraction interface. A
/// convolution is one too (M output positions, N output channels, K the
/// receptive field times the input channels, one batch entry per group).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContractionShape {
    /// Independent products (broadcast batch dimensions, heads, groups).
    pub batch: u64,
    /// Rows of `A` and of `C`.
    pub m: u64,
    /// Columns of `B` and of `C`.
    pub n: u64,
    /// The contracted dimension.
    pub k: u64,
    /// Element type of `A` (activations).
    pub lhs: Type,
    /// Element type of `B` (weights).
    pub rhs: Type,
    /// Element type the products are accumulated into and written as.
    pub result: Type,
}

impl ContractionShape {
    /// Multiply-accumulates: `batch * m * n * k` (saturating).
    pub fn macs(&self) -> u64 {
        self.batch
            .saturating_mul(self.m)
            .saturating_mul(self.n)
            .saturating_mul(self.k)
    }
}

/// The op performs one or more matrix products (MLIR's
/// `ContractionOpInterface`, extended to ops made of several, such as
/// attention's `Q K^T` and `P V`).
pub trait Contraction: Send + Sync {
    /// The products, in the order the op performs them; `None` when a
    /// dimension they depend on is dynamic or the signature is ill-formed.
    fn contractions(&self, sig: &OpSignature<'_>) -> Option<Vec<ContractionShape>>;
}

impl OpInterface for dyn Contraction {
    const NAME: &'static str = "Contraction";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn macs_multiply_every_dimension_and_saturate() {
        let f = Type::f16();
        let mut s = ContractionShape {
            batch: 2,
            m: 3,
            n: 5,
            k: 7,
            lhs: f.clone(),
            rhs: f.clone(),
            result: f,
        };
        assert_eq!(s.macs(), 210);
        s.k = u64::MAX;
        assert_eq!(s.macs(), u64::MAX);
    }
}
