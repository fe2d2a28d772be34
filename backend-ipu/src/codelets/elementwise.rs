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

use super::launch::{self, split, WORKERS};
use super::CodeletError;

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

/// Worker issues besides the per-word bundles, for a share of n >= 1 words:
/// 4 `ld32`, `tapack`, `brz`, `sub`, the first load, the prologue bundle,
/// `rpt`, the last store and `exitz` (12), minus the one word the prologue
/// computes; axpy adds `ld32` and `uput`.
const FIXED_ISSUES: u64 = 11;
/// Issues of a worker with no words: 4 `ld32`, `tapack`, `brz`, `exitz`.
const EMPTY_ISSUES: u64 = 7;

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
        for (what, a) in [("x", self.x), ("y", self.y), ("out", self.out)] {
            if a % 8 != 0 {
                return err(format!("{what} address 0x{a:x} is not 8-byte aligned"));
            }
        }
        Ok(())
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

    /// The codelet's assembly text (supervisor entry `main`).
    pub fn assembly(&self) -> Result<String, CodeletError> {
        self.validate()?;
        let tag = self.name();
        let axpy = matches!(self.op, BinaryOp::Axpy(_));
        let mut s = launch::supervisor_and_worker_header(&tag, 5);
        s.push_str(
            "    ld32 $m0, $mvertex_base, $mzero, 0   // x\n    ld32 $m1, $mvertex_base, $mzero, 1   // y\n\
             \x20   ld32 $m2, $mvertex_base, $mzero, 2   // out\n    ld32 $m3, $mvertex_base, $mzero, 3   // words\n\
             \x20   tapack $m4:5, $m0, $m1, $m2\n",
        );
        s.push_str(&format!("    brz $m3, .L{tag}_done\n"));
        if axpy {
            s.push_str("    ld32 $a6, $mvertex_base, $mzero, 4   // a\n    uput $TAS, $a6\n");
        }
        let ins = self.instruction();
        s.push_str(&format!(
            "    sub $m3, $m3, 1\n    ld2x64pace $a0:3, $m4:5+=, $mzero, 0\n\
             \x20   {{ ld2x64pace $a0:3, $m4:5+=, $mzero, 0\n      {ins} $a4:5, $a0:1, $a2:3 }}\n\
             \x20   {{ rpt $m3, (.L{tag}_end - .L{tag}_start)/8 - 1 ; fnop }}\n.L{tag}_start:\n\
             \x20   {{ ld2xst64pace $a0:3, $a4:5, $m4:5+=, $mzero, 0\n      {ins} $a4:5, $a0:1, $a2:3 }}\n.L{tag}_end:\n\
             \x20   st64 $a4:5, $m2, $mzero, $m3\n.L{tag}_done:\n    exitz $mzero\n"
        ));
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
        s.push_str(&launch::vertex_state(&tag, &states));
        Ok(s)
    }

    /// Issues of a worker with `n` words.
    pub fn worker_issues(&self, n: u32) -> u64 {
        if n == 0 {
            return EMPTY_ISSUES;
        }
        let axpy = if matches!(self.op, BinaryOp::Axpy(_)) {
            2
        } else {
            0
        };
        u64::from(n) + FIXED_ISSUES + axpy
    }

    /// Estimated tile cycles from the instruction counts.
    pub fn estimate_cycles(&self) -> u64 {
        let worst = self
            .worker_words()
            .iter()
            .map(|&n| self.worker_issues(n))
            .max()
            .unwrap_or(0);
        launch::launch_cycles(worst)
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
