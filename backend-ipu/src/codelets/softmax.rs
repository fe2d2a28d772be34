//! Softmax over the rows of an f16 matrix `[rows, C]` (C a multiple of 4),
//! f16 output, computed in f32.
//!
//! Per row (workers take contiguous shares of rows):
//! 1. The row maximum: `{ ld64step ; f16v4max }`, the lanes folded as in
//!    the row-max reduction.
//! 2. `e = exp(x - max)` for each element, written to the output as f16 and
//!    summed in f32. There is no exp instruction in our ISA subset, so
//!    `exp(u) = q(u / 64)^64` with `u = max(x - max, -64)`: `q` is a degree-6
//!    polynomial (Chebyshev interpolation of exp on [-1, 0], Horner in
//!    f32), raised to the 64th power by six squarings. Max relative error of
//!    the f32 sequence against float64 exp over [-64, 0]: 1.8e-5
//!    ([`exp_f32`] models it bit-exactly; a unit test re-measures it).
//!    `e^-64` stands for anything smaller (relative to the row maximum's
//!    weight 1, below f16 resolution). 24 auxiliary instructions per f32
//!    pair; constants are loaded one bundle ahead as in the GELU codelet.
//! 3. `1/sum`: integer initial guess `0x7ef311c3 - bits` and three Newton
//!    steps `r (2 - s r)` (`f32v2axpy` with `$TAS = -1`).
//! 4. `out = e * (1/sum)` in f16, `{ ld64step ; f16v4mul } { st64step }`.
//!
//! The loads read 8 bytes past the input and the output of a worker's share.

use half::f16;

use super::emitter::{inst, op, Emitter, Inst};
use super::launch::{self, offsets, split, RowLaunchCounts, RowLoopCounts, WORKERS};
use super::program::Codelet;
use super::CodeletError;
use ipuc_dialects::ipu::Operand;

const TAG: &str = "softmax_f16";

/// Polynomial `q(v) ~ exp(v)` on [-1, 0], coefficients c0..c6.
const EXP_COEFFS: [f32; 7] = [
    1.0,
    0.999_998_45,
    0.499_975_1,
    0.166_515_17,
    0.041_223_317,
    0.007_654_325,
    0.000_849_007_86,
];

/// Documented relative error bound of [`exp_f32`] on [-64, 0].
pub const EXP_MAX_REL_ERROR: f64 = 2e-5;

/// The codelet's exp sequence on one f32 value `u <= 0`, operation by
/// operation as the simulator executes it.
pub fn exp_f32(u: f32) -> f32 {
    let v = u.max(-64.0) * (1.0 / 64.0);
    let c = &EXP_COEFFS;
    let mut p = v * c[6] + c[5];
    for k in (0..5).rev() {
        p = p * v + c[k];
    }
    for _ in 0..6 {
        p *= p;
    }
    p
}

/// One softmax launch.
#[derive(Clone, Debug)]
pub struct Softmax {
    /// Rows.
    pub rows: u32,
    /// Columns C (a multiple of 4).
    pub cols: u32,
    /// Input f16 `[rows, C]`, 8-byte aligned.
    pub input: u32,
    /// Output f16 `[rows, C]`, 8-byte aligned, not overlapping the input.
    pub output: u32,
}

/// Auxiliary instructions per f32 pair in the exp pass.
const EXP_PAIR_OPS: usize = 24;

impl Softmax {
    /// Rows per worker.
    pub fn worker_rows(&self) -> [u32; WORKERS] {
        split(self.rows)
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), CodeletError> {
        let err = |m: String| Err(CodeletError::new(TAG, m));
        if self.rows == 0 || self.cols == 0 || !self.cols.is_multiple_of(4) {
            return err(format!(
                "needs rows > 0 and columns a positive multiple of 4, got {}x{}",
                self.rows, self.cols
            ));
        }
        for (what, a) in [("input", self.input), ("output", self.output)] {
            if !a.is_multiple_of(8) {
                return err(format!("{what} address 0x{a:x} is not 8-byte aligned"));
            }
        }
        let bytes = self.rows * self.cols * 2;
        if self.input < self.output + bytes && self.output < self.input + bytes {
            return err("input and output overlap".into());
        }
        Ok(())
    }

    /// The exp pass's auxiliary instructions for one pair, with the
    /// constant-table index each reads through `$a12:13`.
    fn exp_pair_ops(half: u8) -> Vec<(Inst, Option<usize>)> {
        let p = op::a_pair;
        let f32v2 = |m: &'static str, d: u8, x: Operand, y: Operand| inst(m, [p(d), x, y]);
        let mut ops: Vec<(Inst, Option<usize>)> = vec![
            (inst("f16v2tof32", [p(4), op::a(half)]), None),
            (f32v2("f32v2add", 4, p(4), p(10)), None),
            (f32v2("f32v2max", 4, p(4), p(12)), Some(0)),
            (f32v2("f32v2mul", 4, p(4), p(12)), Some(1)),
            (f32v2("f32v2mul", 6, p(4), p(12)), Some(2)),
            (f32v2("f32v2add", 6, p(6), p(12)), Some(3)),
        ];
        // Table index 2 + (6 - k) holds c_k: indices 4..=8 are c4..c0.
        for idx in 4..=8 {
            ops.push((f32v2("f32v2mul", 6, p(6), p(4)), None));
            ops.push((f32v2("f32v2add", 6, p(6), p(12)), Some(idx)));
        }
        for _ in 0..6 {
            ops.push((f32v2("f32v2mul", 6, p(6), p(6)), None));
        }
        ops.push((f32v2("f32v2add", 8, p(8), p(6)), None));
        ops.push((inst("f32v2tof16", [op::a(2 + half), p(6)]), None));
        debug_assert_eq!(ops.len(), EXP_PAIR_OPS);
        ops
    }

    /// The worker: its issues when it has no rows, its row loop's counts,
    /// and the `rpt` body issues of one row.
    fn emit_worker(&self, e: &mut Emitter) -> (u64, RowLoopCounts, u64) {
        e.solo(inst(
            "ld32",
            [op::m(2), op::vertex_base(), op::mzero(), op::imm(2)],
        )); // rows
        e.solo(inst("brz", [op::m(2), op::sym(format!(".L{TAG}_done"))]));
        let empty = e.issues() + 1;
        for s in [
            inst("sub", [op::m(2), op::m(2), op::imm(1)]),
            inst(
                "ld32",
                [op::m(0), op::vertex_base(), op::mzero(), op::imm(0)],
            ), // x
            inst(
                "ld32",
                [op::m(1), op::vertex_base(), op::mzero(), op::imm(1)],
            ), // out
            inst(
                "ld32",
                [op::m(3), op::vertex_base(), op::mzero(), op::imm(3)],
            ), // C/4
            inst("sub", [op::m(4), op::m(3), op::imm(1)]),
            inst("setzi", [op::m(7), op::sym(format!("{TAG}_constants"))]),
            inst("setzi", [op::m(8), op::imm(0x7ef31)]),
            inst("shl", [op::m(8), op::m(8), op::imm(12)]),
            inst("or", [op::m(8), op::m(8), op::imm(0x1c3)]), // 0x7ef311c3
            inst(
                "ld32",
                [op::a(12), op::vertex_base(), op::mzero(), op::imm(5)],
            ), // -1
            inst("uput", [op::csr("TAS"), op::a(12)]),
        ] {
            e.solo(s);
        }
        e.aligned_label(&format!(".L{TAG}_row"));
        let setup = e.issues();
        // Pass 1: the row maximum.
        e.solo(inst("mov", [op::m(5), op::m(0)]));
        e.solo(inst(
            "ld64step",
            [op::a_pair(0), op::mzero(), op::m_inc(5), op::imm(1)],
        ));
        e.bundle(
            inst(
                "ld64step",
                [op::a_pair(0), op::mzero(), op::m_inc(5), op::imm(1)],
            ),
            inst("f16v4max", [op::a_pair(2), op::a_pair(0), op::a_pair(0)]),
        );
        let max_body = e.rpt(
            op::m(4),
            &format!("{TAG}_max"),
            vec![(
                inst(
                    "ld64step",
                    [op::a_pair(0), op::mzero(), op::m_inc(5), op::imm(1)],
                ),
                inst("f16v4max", [op::a_pair(2), op::a_pair(2), op::a_pair(0)]),
            )],
        );
        for s in [
            inst("mov", [op::a(4), op::a(3)]),
            inst("f16v4max", [op::a_pair(2), op::a_pair(2), op::a_pair(4)]),
            inst(
                "st32",
                [op::a(2), op::vertex_base(), op::mzero(), op::imm(4)],
            ),
            inst(
                "ldb16",
                [op::a(4), op::vertex_base(), op::mzero(), op::imm(9)],
            ),
            inst("f16v4max", [op::a_pair(2), op::a_pair(2), op::a_pair(4)]),
            inst("f16tof32", [op::a(10), op::a(2)]),
            inst("mov", [op::a(11), op::a(10)]),
            inst("f32v2sub", [op::a_pair(10), op::azeros(), op::a_pair(10)]), // -max, both lanes
            inst("mov", [op::a(8), op::azero()]),
            inst("mov", [op::a(9), op::azero()]), // sum = 0
            // Pass 2: exp and sum.
            inst("mov", [op::m(5), op::m(0)]),
            inst("mov", [op::m(6), op::m(1)]),
            inst(
                "ld64step",
                [op::a_pair(0), op::mzero(), op::m_inc(5), op::imm(1)],
            ),
        ] {
            e.solo(s);
        }
        let mut aux = Self::exp_pair_ops(0);
        let second = aux.len();
        aux.extend(Self::exp_pair_ops(1));
        let mut main: Vec<Inst> = vec![inst("nop", []); aux.len()];
        for (slot, next) in main.iter_mut().zip(aux.iter().skip(1)) {
            if let Some(k) = next.1 {
                *slot = inst(
                    "ld64",
                    [op::a_pair(12), op::m(7), op::mzero(), op::imm(k as i64)],
                );
            }
        }
        // The next input word once the second pair has converted `$a1`, and
        // the first result half once the first pair has produced it.
        debug_assert_eq!(main[second].mnemonic, "nop");
        main[second] = inst(
            "ld64step",
            [op::a_pair(0), op::mzero(), op::m_inc(5), op::imm(1)],
        );
        let free = (second + 1..aux.len())
            .find(|&i| main[i].mnemonic == "nop")
            .unwrap_or(second + 1);
        main[free] = inst(
            "st32step",
            [op::a(2), op::mzero(), op::m_inc(1), op::imm(1)],
        );
        let mut body: Vec<(Inst, Inst)> = main
            .into_iter()
            .zip(aux.into_iter().map(|(a, _)| a))
            .collect();
        body.push((
            inst(
                "st32step",
                [op::a(3), op::mzero(), op::m_inc(1), op::imm(1)],
            ),
            inst("fnop", []),
        ));
        let exp_body = e.rpt(op::m(3), &format!("{TAG}_exp"), body);
        for s in [
            inst("mov", [op::a(4), op::a(9)]),
            inst("f32v2add", [op::a_pair(8), op::a_pair(8), op::a_pair(4)]),
            inst("mov", [op::a(9), op::a(8)]), // sum, both lanes
            // 1/sum: integer initial guess, three Newton steps.
            inst("atom", [op::m(9), op::a(8)]),
            inst("sub", [op::m(9), op::m(8), op::m(9)]),
            inst(
                "st32",
                [op::m(9), op::vertex_base(), op::mzero(), op::imm(4)],
            ),
            inst(
                "ld32",
                [op::a(6), op::vertex_base(), op::mzero(), op::imm(4)],
            ),
            inst("mov", [op::a(7), op::a(6)]),
            inst(
                "ld32",
                [op::a(10), op::vertex_base(), op::mzero(), op::imm(6)],
            ), // 2.0
            inst("mov", [op::a(11), op::a(10)]),
        ] {
            e.solo(s);
        }
        for _ in 0..3 {
            for s in [
                inst("f32v2mul", [op::a_pair(4), op::a_pair(8), op::a_pair(6)]),
                inst("f32v2axpy", [op::a_pair(4), op::a_pair(4), op::a_pair(10)]),
                inst("f32v2mul", [op::a_pair(6), op::a_pair(6), op::a_pair(4)]),
            ] {
                e.solo(s);
            }
        }
        e.solo(inst("f32v2tof16", [op::a(10), op::a_pair(6)]));
        e.solo(inst("mov", [op::a(11), op::a(10)])); // 1/sum, 4 lanes
                                                     // Pass 3: scale the row in place in the output.
        e.solo(inst("mov", [op::m(5), op::m(6)]));
        e.solo(inst(
            "ld64step",
            [op::a_pair(0), op::mzero(), op::m_inc(5), op::imm(1)],
        ));
        let scale_body = e.rpt(
            op::m(3),
            &format!("{TAG}_scale"),
            vec![
                (
                    inst(
                        "ld64step",
                        [op::a_pair(0), op::mzero(), op::m_inc(5), op::imm(1)],
                    ),
                    inst("f16v4mul", [op::a_pair(2), op::a_pair(0), op::a_pair(10)]),
                ),
                (
                    inst(
                        "st64step",
                        [op::a_pair(2), op::mzero(), op::m_inc(6), op::imm(1)],
                    ),
                    inst("fnop", []),
                ),
            ],
        );
        e.solo(inst("shl", [op::m(9), op::m(3), op::imm(3)]));
        e.solo(inst("add", [op::m(0), op::m(0), op::m(9)]));
        let rows = launch::emit_end_row_loop(e, TAG, setup);
        // Per row: max passes w - 1, exp and scale passes w (w = C/4 words).
        let w = u64::from(self.cols / 4);
        (
            empty,
            rows,
            max_body * (w - 1) + (exp_body + scale_body) * w,
        )
    }

    /// Float64 reference.
    pub fn reference(&self, x: &[f16]) -> Vec<f64> {
        let mut out = Vec::with_capacity(x.len());
        for row in x.chunks_exact(self.cols as usize) {
            let v: Vec<f64> = row.iter().map(|h| h.to_f64()).collect();
            let m = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = v.iter().map(|x| (x - m).exp()).collect();
            let s: f64 = e.iter().sum();
            out.extend(e.iter().map(|e| e / s));
        }
        out
    }

    /// Largest error of an output against the reference `want`: the exp
    /// sequence, three f16 roundings (e, 1/sum, the product) and f16's
    /// subnormal spacing.
    pub fn tolerance(&self, want: f64) -> f64 {
        (EXP_MAX_REL_ERROR + 4.0 * 2f64.powi(-11)) * want + 2f64.powi(-24)
    }
}

impl Codelet for Softmax {
    type Counts = (RowLaunchCounts, u64);

    /// Emits the launch (supervisor entry `main`, six workers) and returns
    /// the issue counts its estimate is made of, with the `rpt` body issues
    /// of one row.
    fn emit(&self, e: &mut Emitter) -> Result<(RowLaunchCounts, u64), CodeletError> {
        self.validate()?;
        let supervisor = launch::emit_supervisor_and_worker_entry(e, TAG, 8);
        let (empty, rows, body) = self.emit_worker(e);
        let shares = self.worker_rows();
        let offs = offsets(&shares);
        let states: [Vec<u32>; WORKERS] = std::array::from_fn(|w| {
            vec![
                self.input + offs[w] * self.cols * 2,
                self.output + offs[w] * self.cols * 2,
                shares[w],
                self.cols / 4,
                0,
                (-1.0f32).to_bits(),
                2.0f32.to_bits(),
                0,
            ]
        });
        launch::emit_vertex_state(e, TAG, &states);
        let mut table = vec![-64.0f32, 1.0 / 64.0];
        table.extend(EXP_COEFFS.iter().rev());
        e.directive("align", &[op::imm(8)]);
        e.label(&format!("{TAG}_constants"));
        for v in table {
            e.words(&[v.to_bits(), v.to_bits()]);
        }
        Ok((
            RowLaunchCounts {
                supervisor,
                empty,
                rows,
            },
            body,
        ))
    }

    fn cycles(&self, counts: &(RowLaunchCounts, u64)) -> u64 {
        counts.0.cycles(&self.worker_rows(), counts.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exp_sequence_meets_its_documented_bound() {
        let mut worst: f64 = 0.0;
        for i in 0..=64_000 {
            let u = -(i as f32) / 1000.0;
            let got = f64::from(exp_f32(u));
            let want = f64::from(u).exp();
            worst = worst.max((got - want).abs() / want);
        }
        assert!(worst <= EXP_MAX_REL_ERROR, "{worst:e}");
        assert!(worst > 1e-7, "suspiciously exact: {worst:e}");
    }
}
