//! Elementwise binary codelets: `out = x + y`, `out = x * y` (f16 and f32),
//! `out = a * x + y` (f32, `f32v2axpy` with `a` in `$TAS`) and
//! `out = x * 2^e + y` (f16, [`BinaryOp::ScaledAdd`]: the FP8 block's
//! residual add, which brings the AMP's unscaled f16 output back to true
//! values while adding the residual).
//!
//! Each worker streams a contiguous share of 64-bit words (4 f16 or 2 f32
//! lanes). One bundle per word: `{ ld2xst64pace ; op }` loads the next x
//! and y words, stores the previous result and computes the current one,
//! so a tile produces one word per cycle, the vector-FP limit of the machine
//! model (4 f16 or 2 f32 lanes per cycle). x, y and out must lie in three
//! different memory banks (16 KiB elements of region 0, or 32 KiB element
//! pairs of region 1); the loads read one word past each share.
//!
//! The scaled add has no fused f16 form, so it takes two auxiliary
//! instructions per word, `f16v4mul` by `2^e` in all four lanes and
//! `f16v4add`, in two bundles:
//! `{ nop ; x * 2^e } { ld2xst64pace ; + y }`, half the rate of the others.
//!
//! Numerics: each lane is one IEEE operation rounded to nearest even
//! (`f32v2axpy` rounds once, a fused multiply-add), so the result equals
//! the float64 reference rounded to the element type. The scaled add rounds
//! twice: `x * 2^e` is exact unless it leaves f16's normal range (it
//! overflows to infinity or loses bits as a subnormal), then the add
//! rounds; the reference models both roundings.

use half::f16;

use super::emitter::{inst, ld2xst64_stream, load_state_word, op, Emitter};
use super::launch::{self, split, StreamCounts, WORKERS};
use super::program::Codelet;
use super::{check_alignment, CodeletError};

/// The operation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BinaryOp {
    /// `x + y`.
    Add,
    /// `x * y`.
    Mul,
    /// `a * x + y` (f32 only).
    Axpy(f32),
    /// `x * 2^e + y` (f16 only; `e` in [`SCALED_ADD_EXPONENTS`], where
    /// `2^e` is an f16 value).
    ScaledAdd(i32),
}

/// The exponents `e` of [`BinaryOp::ScaledAdd`]: those whose `2^e` is an
/// f16 value (the smallest subnormal is `2^-24`, the largest power `2^15`).
pub const SCALED_ADD_EXPONENTS: std::ops::RangeInclusive<i32> = -24..=15;

/// Element type of an elementwise codelet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VecType {
    /// IEEE binary16, 4 lanes per word.
    F16,
    /// IEEE binary32, 2 lanes per word.
    F32,
}

impl VecType {
    /// Lanes per 64-bit word.
    pub fn lanes(self) -> u32 {
        match self {
            VecType::F16 => 4,
            VecType::F32 => 2,
        }
    }
}

/// One elementwise binary launch.
#[derive(Clone, Debug)]
pub struct Binary {
    /// The operation.
    pub op: BinaryOp,
    /// Element type.
    pub ty: VecType,
    /// Elements (a multiple of the lanes per word).
    pub len: u32,
    /// x, 8-byte aligned.
    pub x: u32,
    /// y, 8-byte aligned.
    pub y: u32,
    /// out, 8-byte aligned.
    pub out: u32,
}

impl Binary {
    fn name(&self) -> String {
        let ty = match self.ty {
            VecType::F16 => "f16",
            VecType::F32 => "f32",
        };
        let op = match self.op {
            BinaryOp::Add => "add",
            BinaryOp::Mul => "mul",
            BinaryOp::Axpy(_) => "axpy",
            BinaryOp::ScaledAdd(_) => "scaled_add",
        };
        format!("{op}_{ty}")
    }

    /// Words per worker.
    pub fn worker_words(&self) -> [u32; WORKERS] {
        split(self.len / self.ty.lanes())
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), CodeletError> {
        let err = |m: String| Err(CodeletError::new(self.name(), m));
        if self.len == 0 || !self.len.is_multiple_of(self.ty.lanes()) {
            return err(format!(
                "length {} is not a positive multiple of {} (pad the tensor)",
                self.len,
                self.ty.lanes()
            ));
        }
        if matches!(self.op, BinaryOp::Axpy(_)) && self.ty != VecType::F32 {
            return err("axpy is f32 only (`f32v2axpy`)".into());
        }
        if let BinaryOp::ScaledAdd(e) = self.op {
            if self.ty != VecType::F16 {
                return err("the scaled add is f16 only (use axpy for f32)".into());
            }
            if !SCALED_ADD_EXPONENTS.contains(&e) {
                return err(format!(
                    "scale exponent {e} is outside {SCALED_ADD_EXPONENTS:?} (2^e must be an f16 value)"
                ));
            }
        }
        check_alignment(
            &self.name(),
            &[("x", self.x, 8), ("y", self.y, 8), ("out", self.out, 8)],
        )
    }

    fn instruction(&self) -> &'static str {
        match (self.op, self.ty) {
            (BinaryOp::Add, VecType::F16) => "f16v4add",
            (BinaryOp::Mul, VecType::F16) => "f16v4mul",
            (BinaryOp::Add, VecType::F32) => "f32v2add",
            (BinaryOp::Mul, VecType::F32) => "f32v2mul",
            (BinaryOp::Axpy(_), _) => "f32v2axpy",
            (BinaryOp::ScaledAdd(_), _) => "f16v4add",
        }
    }

    /// The f16 bits of `2^e` for the scaled add (exact: `e` was validated).
    fn scale_bits(e: i32) -> u32 {
        u32::from(f16::from_f64(2f64.powi(e)).to_bits())
    }

    /// Float64 reference over the element values (`x`, `y` decoded), each
    /// result rounded to the element type as the hardware does.
    pub fn reference(&self, x: &[f64], y: &[f64]) -> Vec<f64> {
        x.iter()
            .zip(y)
            .map(|(&a, &b)| {
                let exact = match self.op {
                    BinaryOp::Add => a + b,
                    BinaryOp::Mul => a * b,
                    BinaryOp::Axpy(s) => f64::from(s).mul_add(a, b),
                    // x * 2^e rounds to f16 first (exact in the normal
                    // range); the add rounds below.
                    BinaryOp::ScaledAdd(e) => f16::from_f64(a * 2f64.powi(e)).to_f64() + b,
                };
                match self.ty {
                    VecType::F16 => f16::from_f64(exact).to_f64(),
                    VecType::F32 => f64::from(exact as f32),
                }
            })
            .collect()
    }
}

impl Codelet for Binary {
    type Counts = StreamCounts;

    /// Emits the launch (supervisor entry `main`, six workers) and returns
    /// the issue counts its estimate is made of.
    fn emit(&self, e: &mut Emitter) -> Result<StreamCounts, CodeletError> {
        self.validate()?;
        let tag = self.name();
        let supervisor = launch::emit_supervisor_and_worker_entry(e, &tag, 5);
        let done = format!(".L{tag}_done");
        // Vertex state: x, y, out, words, and a for axpy or the f16 bits of
        // 2^e for the scaled add.
        e.load_state(&[(0, 0), (1, 1), (2, 2), (3, 3)]);
        e.solo(inst(
            "tapack",
            [op::m_pair(4), op::m(0), op::m(1), op::m(2)],
        ));
        e.solo(inst("brz", [op::m(3), op::sym(done.clone())]));
        let at_branch = e.issues();
        match self.op {
            BinaryOp::Axpy(_) => {
                e.solo(load_state_word(op::a(6), 4));
                e.solo(inst("uput", [op::csr("TAS"), op::a(6)]));
            }
            BinaryOp::ScaledAdd(_) => {
                // 2^e in all four lanes of $a6:7.
                e.solo(load_state_word(op::a(6), 4));
                e.solo(inst("mov", [op::a(7), op::a(6)]));
            }
            BinaryOp::Add | BinaryOp::Mul => {}
        }
        let compute = || {
            inst(
                self.instruction(),
                [op::a_pair(4), op::a_pair(0), op::a_pair(2)],
            )
        };
        let load = || {
            inst(
                "ld2x64pace",
                [op::a_quad(0), op::m_pair_inc(4), op::mzero(), op::imm(0)],
            )
        };
        e.solo(inst("sub", [op::m(3), op::m(3), op::imm(1)]));
        e.solo(load());
        let body = if let BinaryOp::ScaledAdd(_) = self.op {
            // $a8:9 = x * 2^e, then $a4:5 = $a8:9 + y; the second bundle
            // loads the next x and y and stores the previous result.
            let scale = || inst("f16v4mul", [op::a_pair(8), op::a_pair(0), op::a_pair(6)]);
            let add = || inst("f16v4add", [op::a_pair(4), op::a_pair(8), op::a_pair(2)]);
            e.bundle(inst("nop", []), scale());
            e.bundle(load(), add());
            e.rpt(
                op::m(3),
                &tag,
                vec![(inst("nop", []), scale()), (ld2xst64_stream(), add())],
            )
        } else {
            e.bundle(load(), compute());
            e.rpt(op::m(3), &tag, vec![(ld2xst64_stream(), compute())])
        };
        e.solo(inst(
            "st64",
            [op::a_pair(4), op::m(2), op::mzero(), op::m(3)],
        ));
        e.label(&done);
        e.solo(inst("exitz", [op::mzero()]));
        let worker = e.issues();
        let shares = self.worker_words();
        let offs = launch::offsets(&shares);
        let scale = match self.op {
            BinaryOp::Axpy(a) => a.to_bits(),
            BinaryOp::ScaledAdd(e) => Self::scale_bits(e) * 0x1_0001,
            BinaryOp::Add | BinaryOp::Mul => 0,
        };
        let states: [Vec<u32>; WORKERS] = std::array::from_fn(|w| {
            let b = offs[w] * 8;
            vec![self.x + b, self.y + b, self.out + b, shares[w], scale]
        });
        Ok(launch::end_stream_launch(
            e, &tag, &states, supervisor, at_branch, worker, body,
        ))
    }

    fn cycles(&self, counts: &StreamCounts) -> u64 {
        counts.cycles(&self.worker_words())
    }
}
