//! Codelet cycle estimates for an amount of work, before any address is
//! known: what the cost model asks (and the planner will). Each function
//! fills in the codelet's own parameters, with placeholder addresses (the
//! estimates depend on sizes, not on placement), and returns the codelet's
//! `estimate_cycles`: the numbers are the codelets' and follow them when
//! they change.
//!
//! A codelet estimates by emitting its program and counting the issues, so
//! every codelet's answers are memoized for the process
//! ([`memoized_estimate`], behind [`Codelet::estimate_cycles`]): an
//! e-graph asks for the same few sizes many times, and a lowering for the
//! same launch on every tile of a product.

use std::any::TypeId;
use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::{LazyLock, Mutex};

use super::amp::{AmpBlock, AmpMode, AmpVariant};
use super::amp_f16acts::AmpF8WeightsF16Acts;
use super::elementwise::{Binary, BinaryOp, VecType};
use super::gelu::{Gelu, GeluForm};
use super::program::Codelet;
use super::reduce::{ReduceOp, RowReduce};
use super::CodeletError;

/// Estimates depend on sizes, not on where the operands are; address 0 is
/// aligned for every operand.
const ANY_ADDRESS: u32 = 0;

type EstimateMemo = Mutex<HashMap<(TypeId, String), Result<u64, CodeletError>>>;

static ESTIMATES: LazyLock<EstimateMemo> = LazyLock::new(EstimateMemo::default);

/// `estimate()` of `codelet`, computed once per distinct codelet: keyed by
/// its type and its `Debug` form, which prints every parameter (every
/// codelet derives it), so two codelets share an answer only when they
/// would emit the same code. The answer is the same whichever thread asks
/// first, so the memo keeps compiles deterministic.
pub fn memoized_estimate<C: Debug + 'static>(
    codelet: &C,
    estimate: impl FnOnce() -> Result<u64, CodeletError>,
) -> Result<u64, CodeletError> {
    let key = (TypeId::of::<C>(), format!("{codelet:?}"));
    if let Some(known) = ESTIMATES.lock().expect("estimate memo poisoned").get(&key) {
        return known.clone();
    }
    // Estimated outside the lock: another thread may do the same work,
    // and both store the same answer.
    let answer = estimate();
    ESTIMATES
        .lock()
        .expect("estimate memo poisoned")
        .insert(key, answer.clone());
    answer
}

fn amp_block(variant: AmpVariant, rows: u32) -> AmpBlock {
    AmpBlock {
        variant,
        mode: AmpMode::Accumulate,
        rows,
        input: ANY_ADDRESS,
        partials: ANY_ADDRESS,
        output: ANY_ADDRESS,
        weights: ANY_ADDRESS,
    }
}

/// One AMP block of `rows` rows (1 to [`super::amp::MAX_ROWS`]) with
/// `variant`, accumulating or not (the estimate is the same).
pub fn amp_block_cycles(variant: AmpVariant, rows: u32) -> Result<u64, CodeletError> {
    amp_block(variant, rows).estimate_cycles()
}

/// One FP8-weights block of `rows` rows that casts its f16 activations in
/// the same launch ([`AmpF8WeightsF16Acts`]).
pub fn amp_f8_f16acts_cycles(rows: u32) -> Result<u64, CodeletError> {
    AmpF8WeightsF16Acts {
        block: amp_block(AmpVariant::F8, rows),
        activations: ANY_ADDRESS,
        act_scale: 0,
    }
    .estimate_cycles()
}

/// One elementwise binary launch (`x + y`; `x * y` issues the same) over
/// `len` elements of `ty` (at least one word; rounded up to whole words).
pub fn binary_cycles(ty: VecType, len: u32) -> Result<u64, CodeletError> {
    let len = len.max(1).div_ceil(ty.lanes()).saturating_mul(ty.lanes());
    Binary {
        op: BinaryOp::Add,
        ty,
        len,
        x: ANY_ADDRESS,
        y: ANY_ADDRESS,
        out: ANY_ADDRESS,
    }
    .estimate_cycles()
}

/// One GELU launch over `len` f16 elements (rounded up to whole words),
/// costed as the erf form (a degree-10 polynomial, clamped): the dearer
/// of the two, since the tanh form issues `f16v2sigm` (19 against 59
/// issues per 4 halves), so a tanh GELU is overestimated, never under.
pub fn gelu_cycles(len: u32) -> Result<u64, CodeletError> {
    let len = len.max(1).div_ceil(4).saturating_mul(4);
    Gelu {
        form: GeluForm::Erf,
        len,
        input: ANY_ADDRESS,
        output: ANY_ADDRESS,
    }
    .estimate_cycles()
}

/// One row-reduction launch over `rows` rows of `cols` f16 elements, the
/// columns rounded up to the codelet's vector (8 for a sum, 4 for a max).
pub fn row_reduce_cycles(op: ReduceOp, rows: u32, cols: u32) -> Result<u64, CodeletError> {
    let vector = match op {
        ReduceOp::Sum => 8,
        ReduceOp::Max => 4,
    };
    let cols = cols.max(1).div_ceil(vector).saturating_mul(vector);
    RowReduce {
        op,
        rows,
        cols,
        input: ANY_ADDRESS,
        output: ANY_ADDRESS,
    }
    .estimate_cycles()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ipuc_ipu_arch::MachineModel;

    /// The memo answers per codelet, not per type: codelets that differ in
    /// a size or an address each get their own emitted code's estimate,
    /// the first time and from the memo after.
    #[test]
    fn estimates_are_memoized_per_codelet() {
        let add = |len, op, out| Binary {
            op,
            ty: VecType::F16,
            len,
            x: 0,
            y: 0x1_0000,
            out,
        };
        let codelets = [
            add(64, BinaryOp::Add, 0x2_0000),
            add(4096, BinaryOp::Add, 0x2_0000),
            add(64, BinaryOp::Mul, 0x2_0000),
            add(64, BinaryOp::Add, 0x2_0008),
        ];
        for b in &codelets {
            let direct = b.cycles(&b.counts().unwrap());
            assert_eq!(b.estimate_cycles().unwrap(), direct, "{b:?}");
            assert_eq!(b.estimate_cycles().unwrap(), direct, "{b:?}, memoized");
        }
        assert!(
            codelets[1].estimate_cycles().unwrap() > 4 * codelets[0].estimate_cycles().unwrap(),
            "64 times the elements"
        );
        // An invalid codelet's error is memoized as an error.
        let odd = add(3, BinaryOp::Add, 0x2_0000);
        assert!(odd.estimate_cycles().is_err());
        assert!(odd.estimate_cycles().is_err());
    }

    #[test]
    fn estimates_are_the_placed_codelets_estimates() {
        let machine = MachineModel::c600();
        for variant in AmpVariant::ALL {
            for rows in [1, 6, 7, 600, 601] {
                let placed = AmpBlock::place(variant, AmpMode::Overwrite, rows, &machine).unwrap();
                assert_eq!(amp_block_cycles(variant, rows), placed.estimate_cycles());
            }
        }
        let fused = AmpF8WeightsF16Acts::place(AmpMode::Overwrite, 100, -3, &machine).unwrap();
        assert_eq!(amp_f8_f16acts_cycles(100), fused.estimate_cycles());
        assert!(amp_block_cycles(AmpVariant::F16, 0).is_err());
    }

    #[test]
    fn sizes_are_rounded_up_to_the_codelets_vectors() {
        // 10 f16 elements are 3 words, as 12.
        assert_eq!(
            binary_cycles(VecType::F16, 10),
            binary_cycles(VecType::F16, 12)
        );
        assert!(
            binary_cycles(VecType::F16, 12).unwrap() < binary_cycles(VecType::F16, 2400).unwrap()
        );
        assert_eq!(gelu_cycles(5), gelu_cycles(8));
        assert_eq!(
            row_reduce_cycles(ReduceOp::Sum, 6, 9),
            row_reduce_cycles(ReduceOp::Sum, 6, 16)
        );
        assert_eq!(
            row_reduce_cycles(ReduceOp::Max, 6, 9),
            row_reduce_cycles(ReduceOp::Max, 6, 12)
        );
    }
}
