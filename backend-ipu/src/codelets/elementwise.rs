//! Elementwise binary codelets: `out = x + y`, `out = x * y` (f16 and f32)
//! and `out = a * x + y` (f32, `f32v2axpy` with `a` in `$TAS`).
//!
//! Each worker streams a contiguous share of 64-bit words (4 f16 or 2 f32
//! lanes). One bundle per word: `{ ld2xst64pace ; op }` loads the next x
//! and y words, stores the previous result and computes the current one,
//! so a tile produces one word per cycle, the vector-FP limit of the machine
//! model (4 f16 or 2 f32 lanes per cycle). x, y and out must lie in three
//! different memory banks (16 KiB elements of region 0, or 32 KiB element
//! pairs of region 1); the loads read one word past each share.
//!
//! Numerics: each lane is one IEEE operation rounded to nearest even
//! (`f32v2axpy` rounds once, a fused multiply-add), so the result equals
//! the float64 reference rounded to the element type.

use half::f16;

use super::emitter::{inst, load_state_word, op, Emitter};
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
}

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
        }
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
        let axpy = matches!(self.op, BinaryOp::Axpy(_));
        let supervisor = launch::emit_supervisor_and_worker_entry(e, &tag, 5);
        let done = format!(".L{tag}_done");
        // Vertex state: x, y, out, words (and a for axpy).
        e.load_state(&[(0, 0), (1, 1), (2, 2), (3, 3)]);
        e.solo(inst(
            "tapack",
            [op::m_pair(4), op::m(0), op::m(1), op::m(2)],
        ));
        e.solo(inst("brz", [op::m(3), op::sym(done.clone())]));
        let at_branch = e.issues();
        if axpy {
            e.solo(load_state_word(op::a(6), 4));
            e.solo(inst("uput", [op::csr("TAS"), op::a(6)]));
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
        e.bundle(load(), compute());
        let body = e.rpt(
            op::m(3),
            &tag,
            vec![(
                inst(
                    "ld2xst64pace",
                    [
                        op::a_quad(0),
                        op::a_pair(4),
                        op::m_pair_inc(4),
                        op::mzero(),
                        op::imm(0),
                    ],
                ),
                compute(),
            )],
        );
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
            _ => 0,
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
