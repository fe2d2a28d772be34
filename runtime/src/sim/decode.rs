//! Load-time pre-decoding: every code word of a tile becomes a [`CodeSlot`]
//! holding fully resolved operations, so the interpreter's hot loop does no
//! table lookups, no operand decoding and no static legality checks.
//!
//! Register operands are resolved to indices into the context's register
//! arrays so that the architectural zero registers cost nothing:
//! - `$m15` (`$mzero`) reads `m[15]`, which is never written: writes to it
//!   are redirected to the sink `m[M_SINK]`.
//! - `$a15` (`$azero`) single reads and `$a14:15` (`$azeros`) pair reads are
//!   redirected to `a[A_ZERO..A_ZERO+2]`, which are never written; writes to
//!   `$a15` land in `a[15]`, which nothing reads.
//!
//! Static checks (context class, `rpt`-body legality, FP8 availability,
//! operand values the instruction rejects, `rpt` body alignment) are done
//! here once; an instruction that would fault becomes [`Op::Illegal`] and
//! faults with the same report when (and only when) it executes.

use ipuc_ipu_arch::csr;
use ipuc_ipu_arch::encoding::{decode, Instr};
use ipuc_ipu_arch::isa::{ContextClass, Opcode, SlotClass};
use ipuc_ipu_arch::pipeline::{is_branch, issue_slots, reg_use};
use ipuc_ipu_arch::registers::SP;
use ipuc_ipu_arch::{ContextKind, MachineModel, TileImage};

use super::fault::FaultKind;

/// `m` register array length: 16 architectural registers plus a write sink.
pub const M_REGS: usize = 17;
/// Index writes to `$m15` go to.
pub const M_SINK: u8 = 16;
/// `a` register array length: 16 architectural registers plus an always-zero pair.
pub const A_REGS: usize = 18;
/// Index of the always-zero pair (`$azero` reads, `$azeros` pair reads).
pub const A_ZERO: u8 = 16;

/// A register-plus-offset address: `m[base] + m[delta] + (m[off] << shift) + imm`.
/// Immediate-offset forms use `off = 15` (`$mzero`) and a pre-scaled `imm`.
#[derive(Clone, Copy, Debug)]
pub struct Am {
    pub base: u8,
    pub delta: u8,
    pub off: u8,
    pub shift: u8,
    pub imm: u32,
    /// The base is `$sp`: check the stack limit.
    pub sp: bool,
}

/// A post-incremented address: access `m[base] + m[delta]`, then `m[delta] += step`.
#[derive(Clone, Copy, Debug)]
pub struct Step {
    pub base: u8,
    pub delta: u8,
    /// Write index of the delta register.
    pub delta_w: u8,
    pub step: u32,
    pub sp: bool,
}

/// A triple-packed address pair operand (`$mN:N+1+=`) with its stride.
#[derive(Clone, Copy, Debug)]
pub struct Pace {
    /// Read index of the low register.
    pub p: u8,
    /// Write indices of the two registers.
    pub w0: u8,
    pub w1: u8,
    pub stride: u8,
    /// Stride selectors (2 bits per address, address 0 lowest).
    pub sel: u8,
}

/// Integer ALU operations.
#[derive(Clone, Copy, Debug)]
pub enum AluOp {
    Add,
    Sub,
    Mul,
    Shl,
    Shr,
    And,
    Or,
    Cmpeq,
    Cmpne,
    Cmpult,
    Cmpslt,
}

/// Two-operand vector float operations.
#[derive(Clone, Copy, Debug)]
pub enum VecOp {
    Add,
    Sub,
    Mul,
    Axpy,
    Max,
    Min,
}

/// The function a transcendental instruction evaluates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransFn {
    Exp,
    Exp2,
    Ln,
    Log2,
    Tanh,
    Sigm,
    Recip,
    Rsqrt,
    Sqrt,
}

impl TransFn {
    /// The function in float64, which the simulator rounds once to the
    /// destination format (model assumption: the hardware's accuracy is
    /// not public).
    pub fn eval(self, x: f64) -> f64 {
        match self {
            TransFn::Exp => x.exp(),
            TransFn::Exp2 => x.exp2(),
            TransFn::Ln => x.ln(),
            TransFn::Log2 => x.log2(),
            TransFn::Tanh => x.tanh(),
            TransFn::Sigm => 1.0 / (1.0 + (-x).exp()),
            TransFn::Recip => 1.0 / x,
            TransFn::Rsqrt => 1.0 / x.sqrt(),
            TransFn::Sqrt => x.sqrt(),
        }
    }
}

/// The AMP instruction variants.
#[derive(Clone, Copy, Debug)]
pub enum AmpKind {
    F16HihoV4,
    F16Siso,
    F32SisoV2,
    F8HihoV4,
}

/// System instructions (rare; executed out of the hot path).
#[derive(Clone, Copy, Debug)]
pub enum SysOp {
    Run { entry: u8, vbase: u8, imm: u32 },
    Runall { entry: u8, vbase: u8, imm: u32 },
    Exit { src: u8, nz: bool },
    Sync(u8),
    Sans,
    Put { csr: u8, src: u8 },
    Get { dst: u8, csr: u8 },
    Send { src: u8, words: u32 },
    SendOutgoing { words: u32 },
}

/// One resolved operation. Register fields are array indices (see the
/// module doc); `$a` pair and quad fields index the first register.
#[derive(Clone, Copy, Debug)]
pub enum Op {
    Nop,
    /// Faults with `Tile::illegal[i]` when executed.
    Illegal(u16),
    // ---- loads
    Ld32A {
        d: u8,
        am: Am,
    },
    Ld32M {
        d: u8,
        am: Am,
    },
    Ld32StepA {
        d: u8,
        s: Step,
    },
    Ld32StepM {
        d: u8,
        s: Step,
    },
    Ld64 {
        d: u8,
        am: Am,
    },
    Ld64Step {
        d: u8,
        s: Step,
    },
    Ld128 {
        d: u8,
        am: Am,
    },
    Ld128Step {
        d: u8,
        s: Step,
    },
    Ld16 {
        d: u8,
        am: Am,
        signed: bool,
    },
    Ldz16Step {
        d: u8,
        s: Step,
    },
    Ld8 {
        d: u8,
        am: Am,
        signed: bool,
    },
    Ldb16 {
        d: u8,
        am: Am,
    },
    Ld2x64Pace {
        d: u8,
        pace: Pace,
    },
    Putcs {
        idx: u8,
        wide: bool,
    },
    // ---- stores (`s` is a read index)
    St32A {
        s: u8,
        am: Am,
    },
    St32M {
        s: u8,
        am: Am,
    },
    St32StepA {
        v: u8,
        s: Step,
    },
    St32StepM {
        v: u8,
        s: Step,
    },
    St64 {
        s: u8,
        am: Am,
    },
    St64Step {
        v: u8,
        s: Step,
    },
    St64Pace {
        s: u8,
        pace: Pace,
    },
    Ld2xSt64Pace {
        d: u8,
        s: u8,
        pace: Pace,
    },
    LdSt64Pace {
        d: u8,
        s: u8,
        pace: Pace,
    },
    // ---- integer
    Tapack {
        w0: u8,
        w1: u8,
        s: [u8; 3],
    },
    SetM {
        d: u8,
        v: u32,
    },
    Alu {
        op: AluOp,
        d: u8,
        a: u8,
        b: u8,
    },
    AluImm {
        op: AluOp,
        d: u8,
        a: u8,
        imm: u32,
    },
    Atom {
        d: u8,
        s: u8,
    },
    // ---- control
    Br {
        s: u8,
    },
    Bri {
        t: u32,
    },
    Brz {
        s: u8,
        t: u32,
    },
    Brnz {
        s: u8,
        t: u32,
    },
    Brnzdec {
        s: u8,
        w: u8,
        t: u32,
    },
    Call {
        w: u8,
        t: u32,
    },
    /// `rpt`: `count` is a register read index, or the immediate when `imm`.
    Rpt {
        count: u16,
        imm: bool,
        start: u32,
        end: u32,
    },
    Sys(SysOp),
    // ---- auxiliary ($a-writing and float)
    SetA {
        d: u8,
        v: u32,
    },
    MovA {
        d: u8,
        s: u8,
    },
    Uput {
        s: u8,
    },
    Uget {
        d: u8,
    },
    F32v2 {
        op: VecOp,
        d: u8,
        x: u8,
        y: u8,
    },
    F16v4 {
        op: VecOp,
        d: u8,
        x: u8,
        y: u8,
    },
    F16v4Cmac {
        x: u8,
        y: u8,
    },
    F16v8Acc {
        x0: u8,
        x1: u8,
    },
    F32v4Acc {
        x0: u8,
        x1: u8,
    },
    F32v2Aop {
        x: u8,
        y: u8,
    },
    F32v2Gina {
        d: u8,
        s: u8,
        k: u8,
    },
    F32v2ToF16 {
        d: u8,
        s: u8,
    },
    F16v2ToF32 {
        d: u8,
        s: u8,
    },
    F32ToF16 {
        d: u8,
        s: u8,
    },
    F16ToF32 {
        d: u8,
        s: u8,
    },
    /// `sort4x16lo`/`sort4x16hi` (`hi` selects the high halves).
    Sort4x16 {
        d: u8,
        a: u8,
        b: u8,
        hi: bool,
    },
    F16v4ToF8 {
        d: u8,
        s: u8,
        scale: i8,
    },
    F8v4ToF16 {
        d: u8,
        s: u8,
        scale: i8,
    },
    /// `f16v2exp`, `f16v2ln`, ...: `f` of both f16 halves of `$a[s]`.
    F16v2Trans {
        f: TransFn,
        d: u8,
        s: u8,
    },
    /// `f32exp`, `f32oox`, ...: `f` of the f32 in `$a[s]`.
    F32Trans {
        f: TransFn,
        d: u8,
        s: u8,
    },
    Amp {
        kind: AmpKind,
        d: u8,
        x: u8,
        p: u8,
        phase: u8,
    },
}

/// Which contexts may issue a slot (bit set = allowed).
pub const CTX_SUPERVISOR: u8 = 1;
/// See [`CTX_SUPERVISOR`].
pub const CTX_WORKER: u8 = 2;

/// One pre-decoded code word: the issue unit starting at it.
#[derive(Clone, Copy, Debug)]
pub struct CodeSlot {
    /// Main-pipeline operation (`Nop` for a solo auxiliary instruction).
    pub main: Op,
    /// Auxiliary operation (`Nop` for a solo main instruction).
    pub aux: Op,
    /// Bytes issued: 4 (solo) or 8 (bundle).
    pub size: u8,
    /// Contexts allowed to issue it ([`CTX_SUPERVISOR`] | [`CTX_WORKER`]).
    pub ctx_mask: u8,
    /// Whether it may be issued inside a `rpt` body.
    pub rpt_ok: bool,
    /// The word decoded (false: the slot is undecodable or not code).
    pub valid: bool,
    /// The word is in worker code (`.worker`).
    pub worker_code: bool,
    /// Registers the slot reads and writes ([`ipuc_ipu_arch::pipeline::reg_use`]),
    /// for the supervisor's pipeline stalls.
    pub reads: u32,
    /// See [`CodeSlot::reads`].
    pub writes: u32,
    /// The main half transfers control when taken (costs the pipeline refill).
    pub branch: bool,
    /// Issue slots the slot holds its context for
    /// ([`ipuc_ipu_arch::pipeline::issue_slots`]; more than 1 only for
    /// transcendentals).
    pub issue_slots: u8,
    /// A supervisor issue of it waits for the exchange so far to be
    /// resolved (a fence, `sim/mod.rs`): it launches workers or reads
    /// memory.
    pub fences: bool,
}

/// Pre-decoded code of a tile, plus the raw instructions for messages.
pub struct Code {
    /// Address of slot 0.
    pub base: u32,
    /// One slot per code word.
    pub slots: Vec<CodeSlot>,
    /// The decoded instruction of each word (for traces and fault texts).
    pub raw: Vec<Option<(Instr, bool)>>,
    /// Fault kinds of [`Op::Illegal`] operations.
    pub illegal: Vec<FaultKind>,
}

const INVALID: CodeSlot = CodeSlot {
    main: Op::Nop,
    aux: Op::Nop,
    size: 4,
    ctx_mask: 0,
    rpt_ok: false,
    valid: false,
    worker_code: false,
    reads: 0,
    writes: 0,
    branch: false,
    issue_slots: 1,
    fences: false,
};

/// Whether a supervisor issue of `op` must wait for the exchange so far
/// ([`CodeSlot::fences`]): a worker launch, or a read of memory.
fn fences(op: &Op) -> bool {
    matches!(
        op,
        Op::Sys(SysOp::Run { .. } | SysOp::Runall { .. })
            | Op::Ld32A { .. }
            | Op::Ld32M { .. }
            | Op::Ld32StepA { .. }
            | Op::Ld32StepM { .. }
            | Op::Ld64 { .. }
            | Op::Ld64Step { .. }
            | Op::Ld128 { .. }
            | Op::Ld128Step { .. }
            | Op::Ld16 { .. }
            | Op::Ldz16Step { .. }
            | Op::Ld8 { .. }
            | Op::Ldb16 { .. }
            | Op::Ld2x64Pace { .. }
            | Op::Putcs { .. }
            | Op::Ld2xSt64Pace { .. }
            | Op::LdSt64Pace { .. }
    )
}

fn mw(r: i32) -> u8 {
    if r == 15 {
        M_SINK
    } else {
        r as u8
    }
}

fn ar(r: i32) -> u8 {
    if r == 15 {
        A_ZERO
    } else {
        r as u8
    }
}

fn ap(r: i32) -> u8 {
    if r == 14 {
        A_ZERO
    } else {
        r as u8
    }
}

fn am(o: &[i32; 5], shift: u8, reg_off: bool) -> Am {
    Am {
        base: o[1] as u8,
        delta: o[2] as u8,
        off: if reg_off { o[3] as u8 } else { 15 },
        shift,
        imm: if reg_off { 0 } else { (o[3] as u32) << shift },
        sp: o[1] == i32::from(SP),
    }
}

fn step(o: &[i32; 5], shift: u8) -> Step {
    Step {
        base: o[1] as u8,
        delta: o[2] as u8,
        delta_w: mw(o[2]),
        step: (o[3] << shift) as u32,
        sp: o[1] == i32::from(SP),
    }
}

fn pace(p: i32, stride: i32, sel: i32) -> Pace {
    Pace {
        p: p as u8,
        w0: mw(p),
        w1: mw(p + 1),
        stride: stride as u8,
        sel: sel as u8,
    }
}

impl Code {
    /// Pre-decodes every code word of `image` (whose bytes are in `mem`,
    /// which starts at `machine.sram_base`).
    pub fn new(image: &TileImage, mem: &[u8], machine: &MachineModel) -> Code {
        let base = machine.sram_base;
        let (mut lo, mut hi) = (u32::MAX, 0);
        for s in image.sections.iter().filter(|s| s.is_code) {
            lo = lo.min(s.address);
            hi = hi.max(s.end());
        }
        if lo == u32::MAX {
            (lo, hi) = (base, base);
        }
        let words = ((hi - lo) / 4) as usize;
        let mut raw = Vec::with_capacity(words);
        let mut worker = Vec::with_capacity(words);
        for k in 0..words {
            let addr = lo + 4 * k as u32;
            match image.section_at(addr) {
                Some(s) if s.is_code => {
                    let o = (addr - base) as usize;
                    let w = u32::from_le_bytes([mem[o], mem[o + 1], mem[o + 2], mem[o + 3]]);
                    raw.push(decode(w).ok());
                    worker.push(s.mode_at(addr - s.address) == ContextKind::Worker);
                }
                _ => {
                    raw.push(None);
                    worker.push(false);
                }
            }
        }
        let mut code = Code {
            base: lo,
            slots: Vec::with_capacity(words),
            raw,
            illegal: Vec::new(),
        };
        for (k, &worker_code) in worker.iter().enumerate() {
            let slot = code.slot(k, worker_code, machine);
            code.slots.push(slot);
        }
        code
    }

    fn illegal(&mut self, kind: FaultKind) -> Op {
        self.illegal.push(kind);
        Op::Illegal((self.illegal.len() - 1) as u16)
    }

    fn slot(&mut self, k: usize, worker_code: bool, machine: &MachineModel) -> CodeSlot {
        let Some((first, bundle)) = self.raw[k] else {
            return INVALID;
        };
        let pc = self.base + 4 * k as u32;
        let mut s = CodeSlot {
            main: Op::Nop,
            aux: Op::Nop,
            size: 4,
            ctx_mask: CTX_SUPERVISOR | CTX_WORKER,
            rpt_ok: false,
            valid: true,
            worker_code,
            reads: 0,
            writes: 0,
            branch: false,
            issue_slots: 1,
            fences: false,
        };
        let mut halves = vec![first];
        if bundle {
            match self.raw.get(k + 1).copied().flatten() {
                Some((aux, _)) => halves.push(aux),
                None => {
                    s.main = self.illegal(FaultKind::IllegalInstruction(
                        "bundle without an auxiliary half".into(),
                    ));
                    return s;
                }
            }
            s.size = 8;
            // A bundle pairs one main-pipeline and one auxiliary-pipeline
            // instruction, in that order; any other pairing cannot issue.
            let (main, aux) = (first.opcode.desc(), halves[1].opcode.desc());
            if main.slot != SlotClass::Main || aux.slot != SlotClass::Aux {
                s.main = self.illegal(FaultKind::IllegalInstruction(format!(
                    "bundle {{ {} ; {} }} needs a main-pipeline instruction first and an auxiliary-pipeline one second",
                    main.mnemonic, aux.mnemonic
                )));
                return s;
            }
            s.rpt_ok = halves.iter().all(|i| i.opcode.desc().allowed_in_rpt());
        }
        for i in &halves {
            let u = reg_use(i);
            s.reads |= u.reads;
            s.writes |= u.writes;
        }
        s.branch = is_branch(first.opcode);
        let slots = halves
            .iter()
            .map(|i| issue_slots(i.opcode, machine))
            .max()
            .unwrap_or(1);
        s.issue_slots = u8::try_from(slots).unwrap_or(u8::MAX);
        for i in &halves {
            match i.opcode.desc().context {
                ContextClass::Worker => s.ctx_mask &= !CTX_SUPERVISOR,
                ContextClass::Supervisor => s.ctx_mask &= !CTX_WORKER,
                ContextClass::Any => {}
            }
        }
        for (n, i) in halves.iter().enumerate() {
            let op = self.op(i, pc, bundle, machine);
            // In a bundle the first word is the main half, the second the
            // auxiliary one; a solo instruction goes where its class runs.
            let is_aux = if bundle {
                n == 1
            } else {
                i.opcode.desc().slot == SlotClass::Aux
            };
            if is_aux {
                s.aux = op;
            } else {
                s.main = op;
            }
            s.fences |= fences(&op);
        }
        s
    }

    /// Resolves one instruction.
    fn op(&mut self, i: &Instr, pc: u32, bundle: bool, machine: &MachineModel) -> Op {
        use Opcode::*;
        let o = &i.ops;
        let desc = i.opcode.desc();
        if desc.needs_fp8() && !machine.has_fp8 {
            return self.illegal(FaultKind::IllegalInstruction(format!(
                "`{}` needs FP8; machine `{}` has none",
                desc.mnemonic, machine.name
            )));
        }
        let alu = |op, imm: bool| {
            if imm {
                Op::AluImm {
                    op,
                    d: mw(o[0]),
                    a: o[1] as u8,
                    imm: o[2] as u32,
                }
            } else {
                Op::Alu {
                    op,
                    d: mw(o[0]),
                    a: o[1] as u8,
                    b: o[2] as u8,
                }
            }
        };
        let vec3 = |d: i32, x: i32, y: i32| (d as u8, ap(x), ap(y));
        match i.opcode {
            Ld32A => Op::Ld32A { d: o[0] as u8, am: am(o, 2, false) },
            Ld32AReg => Op::Ld32A { d: o[0] as u8, am: am(o, 2, true) },
            Ld32M => Op::Ld32M { d: mw(o[0]), am: am(o, 2, false) },
            Ld32MReg => Op::Ld32M { d: mw(o[0]), am: am(o, 2, true) },
            Ld32StepA => Op::Ld32StepA { d: o[0] as u8, s: step(o, 2) },
            Ld32StepM => Op::Ld32StepM { d: mw(o[0]), s: step(o, 2) },
            Ld64 => Op::Ld64 { d: o[0] as u8, am: am(o, 3, false) },
            Ld64Reg => Op::Ld64 { d: o[0] as u8, am: am(o, 3, true) },
            Ld64Step => Op::Ld64Step { d: o[0] as u8, s: step(o, 3) },
            Ld128 => Op::Ld128 { d: o[0] as u8, am: am(o, 4, false) },
            Ld128Reg => Op::Ld128 { d: o[0] as u8, am: am(o, 4, true) },
            Ld128Step => Op::Ld128Step { d: o[0] as u8, s: step(o, 4) },
            Ldz16 => Op::Ld16 { d: mw(o[0]), am: am(o, 1, false), signed: false },
            Lds16 => Op::Ld16 { d: mw(o[0]), am: am(o, 1, false), signed: true },
            Ldz16Step => Op::Ldz16Step { d: mw(o[0]), s: step(o, 1) },
            Ldz8 => Op::Ld8 { d: mw(o[0]), am: am(o, 0, false), signed: false },
            Lds8 => Op::Ld8 { d: mw(o[0]), am: am(o, 0, false), signed: true },
            Ldb16 => Op::Ldb16 { d: o[0] as u8, am: am(o, 1, false) },
            Ld2x64Pace => Op::Ld2x64Pace { d: o[0] as u8, pace: pace(o[1], o[2], o[3]) },
            Ld64Putcs | Ld128Putcs => {
                let idx = o[0] as usize;
                let wide = i.opcode == Ld128Putcs;
                let entries = machine.cccs_entries as usize;
                if idx >= entries || (wide && (!idx.is_multiple_of(2) || idx + 1 >= entries)) {
                    return self.illegal(FaultKind::IllegalOperand(format!(
                        "weight entry {idx} is not a valid $CWEI index"
                    )));
                }
                Op::Putcs { idx: idx as u8, wide }
            }
            St32A => Op::St32A { s: ar(o[0]), am: am(o, 2, false) },
            St32AReg => Op::St32A { s: ar(o[0]), am: am(o, 2, true) },
            St32M => Op::St32M { s: o[0] as u8, am: am(o, 2, false) },
            St32MReg => Op::St32M { s: o[0] as u8, am: am(o, 2, true) },
            St32StepA => Op::St32StepA { v: ar(o[0]), s: step(o, 2) },
            St32StepM => Op::St32StepM { v: o[0] as u8, s: step(o, 2) },
            St64 => Op::St64 { s: ap(o[0]), am: am(o, 3, false) },
            St64Reg => Op::St64 { s: ap(o[0]), am: am(o, 3, true) },
            St64Step => Op::St64Step { v: ap(o[0]), s: step(o, 3) },
            St64Pace => Op::St64Pace { s: ap(o[0]), pace: pace(o[1], o[2], o[3]) },
            Ld2xSt64Pace => Op::Ld2xSt64Pace {
                d: o[0] as u8,
                s: ap(o[1]),
                pace: pace(o[2], o[3], o[4]),
            },
            LdSt64Pace => Op::LdSt64Pace {
                d: o[0] as u8,
                s: ap(o[1]),
                pace: pace(o[2], o[3], o[4]),
            },
            Tapack => Op::Tapack {
                w0: mw(o[0]),
                w1: mw(o[0] + 1),
                s: [o[1] as u8, o[2] as u8, o[3] as u8],
            },
            SetziM => Op::SetM { d: mw(o[0]), v: o[1] as u32 },
            SetziA => Op::SetA { d: o[0] as u8, v: o[1] as u32 },
            Add => alu(AluOp::Add, false),
            AddImm => alu(AluOp::Add, true),
            Sub => alu(AluOp::Sub, false),
            SubImm => alu(AluOp::Sub, true),
            Mul => alu(AluOp::Mul, false),
            MulImm => alu(AluOp::Mul, true),
            Shl => alu(AluOp::Shl, false),
            ShlImm => alu(AluOp::Shl, true),
            Shr => alu(AluOp::Shr, false),
            ShrImm => alu(AluOp::Shr, true),
            And => alu(AluOp::And, false),
            AndImm => alu(AluOp::And, true),
            Or => alu(AluOp::Or, false),
            OrImm => alu(AluOp::Or, true),
            Cmpeq => alu(AluOp::Cmpeq, false),
            CmpeqImm => alu(AluOp::Cmpeq, true),
            Cmpne => alu(AluOp::Cmpne, false),
            CmpneImm => alu(AluOp::Cmpne, true),
            Cmpult => alu(AluOp::Cmpult, false),
            CmpultImm => alu(AluOp::Cmpult, true),
            Cmpslt => alu(AluOp::Cmpslt, false),
            CmpsltImm => alu(AluOp::Cmpslt, true),
            MovM => Op::AluImm { op: AluOp::Or, d: mw(o[0]), a: o[1] as u8, imm: 0 },
            MovA => Op::MovA { d: o[0] as u8, s: ar(o[1]) },
            Atom => Op::Atom { d: mw(o[0]), s: ar(o[1]) },
            Nop | Fnop => Op::Nop,
            Br => Op::Br { s: o[0] as u8 },
            Bri => Op::Bri { t: o[0] as u32 },
            Brz => Op::Brz { s: o[0] as u8, t: o[1] as u32 },
            Brnz => Op::Brnz { s: o[0] as u8, t: o[1] as u32 },
            Brnzdec => Op::Brnzdec { s: o[0] as u8, w: mw(o[0]), t: o[1] as u32 },
            Call => Op::Call { w: mw(o[0]), t: o[1] as u32 },
            Rpt | RptImm => {
                let start = if bundle { pc + 8 } else { pc + 4 };
                if start % 8 != 0 {
                    return self.illegal(FaultKind::IllegalInstruction(
                        "rpt body is not 8-byte aligned".into(),
                    ));
                }
                if i.opcode == RptImm && o[0] as u32 > machine.rpt_count_max {
                    return self.illegal(FaultKind::IllegalOperand(format!(
                        "rpt count {} exceeds the repeat counter's maximum {}",
                        o[0], machine.rpt_count_max
                    )));
                }
                Op::Rpt {
                    count: o[0] as u16,
                    imm: i.opcode == RptImm,
                    start,
                    end: start + (o[1] as u32 + 1) * 8,
                }
            }
            Run => Op::Sys(SysOp::Run { entry: o[0] as u8, vbase: o[1] as u8, imm: o[2] as u32 }),
            Runall => Op::Sys(SysOp::Runall { entry: o[0] as u8, vbase: o[1] as u8, imm: o[2] as u32 }),
            Exitz => Op::Sys(SysOp::Exit { src: o[0] as u8, nz: false }),
            Exitnz => Op::Sys(SysOp::Exit { src: o[0] as u8, nz: true }),
            Sync => match o[0] {
                2 | 3 => Op::Sys(SysOp::Sync(o[0] as u8)),
                z => self.illegal(FaultKind::IllegalOperand(format!(
                    "sync zone {z} is external or reserved and not modelled (use 2 = local, 3 = internal)"
                ))),
            },
            Sans => {
                if o[0] != 3 {
                    return self.illegal(FaultKind::IllegalOperand(format!(
                        "sans zone {} is not modelled (use 3 = internal)",
                        o[0]
                    )));
                }
                Op::Sys(SysOp::Sans)
            }
            Put => Op::Sys(SysOp::Put { csr: o[0] as u8, src: o[1] as u8 }),
            Get => Op::Sys(SysOp::Get { dst: mw(o[0]), csr: o[1] as u8 }),
            Uput => {
                if o[0] as u8 != csr::TAS {
                    return self.illegal(FaultKind::IllegalOperand(format!(
                        "worker control register {} is not writable",
                        o[0]
                    )));
                }
                Op::Uput { s: ar(o[1]) }
            }
            Uget => {
                if o[1] as u8 != csr::TAS {
                    return self.illegal(FaultKind::IllegalOperand(format!(
                        "worker control register {} is not readable",
                        o[1]
                    )));
                }
                Op::Uget { d: o[0] as u8 }
            }
            F32v2Add | F32v2Sub | F32v2Mul | F32v2Axpy | F32v2Max | F32v2Min | F16v4Add
            | F16v4Mul | F16v4Max | F16v4Min => {
                let (d, x, y) = vec3(o[0], o[1], o[2]);
                let op = match i.opcode {
                    F32v2Add | F16v4Add => VecOp::Add,
                    F32v2Sub => VecOp::Sub,
                    F32v2Mul | F16v4Mul => VecOp::Mul,
                    F32v2Max | F16v4Max => VecOp::Max,
                    F32v2Min | F16v4Min => VecOp::Min,
                    _ => VecOp::Axpy,
                };
                if matches!(i.opcode, F16v4Add | F16v4Mul | F16v4Max | F16v4Min) {
                    Op::F16v4 { op, d, x, y }
                } else {
                    Op::F32v2 { op, d, x, y }
                }
            }
            F16v4Cmac => Op::F16v4Cmac { x: ap(o[0]), y: ap(o[1]) },
            F16v8Acc => Op::F16v8Acc { x0: ap(o[0]), x1: ap(o[0] + 2) },
            F32v4Acc => Op::F32v4Acc { x0: ap(o[0]), x1: ap(o[0] + 2) },
            F32v2Aop => Op::F32v2Aop { x: ap(o[0]), y: ap(o[1]) },
            F32v2Gina => Op::F32v2Gina { d: o[0] as u8, s: ap(o[1]), k: o[2] as u8 },
            F32v2ToF16 => Op::F32v2ToF16 { d: o[0] as u8, s: ap(o[1]) },
            F16v2ToF32 => Op::F16v2ToF32 { d: o[0] as u8, s: ar(o[1]) },
            F32ToF16 => Op::F32ToF16 { d: o[0] as u8, s: ar(o[1]) },
            F16ToF32 => Op::F16ToF32 { d: o[0] as u8, s: ar(o[1]) },
            Sort4x16LoA | Sort4x16HiA => Op::Sort4x16 {
                d: o[0] as u8,
                a: ar(o[1]),
                b: ar(o[2]),
                hi: matches!(i.opcode, Sort4x16HiA),
            },
            F16v4ToF8 | F8v4ToF16 => {
                let scale = o[2];
                if !(-31..=31).contains(&scale) {
                    return self.illegal(FaultKind::IllegalOperand(format!(
                        "FP8 scale {scale} is outside -31..=31"
                    )));
                }
                if i.opcode == F16v4ToF8 {
                    Op::F16v4ToF8 { d: o[0] as u8, s: ap(o[1]), scale: scale as i8 }
                } else {
                    Op::F8v4ToF16 { d: o[0] as u8, s: ar(o[1]), scale: scale as i8 }
                }
            }
            F32SisoV2Amp | F16V4HihoV4Amp | F16V4SisoAmp | F8V8HihoV4Amp => {
                if o[3] > 3 {
                    return self.illegal(FaultKind::IllegalOperand(format!(
                        "AMP phase flags {} (only phases 0..=3 are modelled)",
                        o[3]
                    )));
                }
                let kind = match i.opcode {
                    F32SisoV2Amp => AmpKind::F32SisoV2,
                    F16V4HihoV4Amp => AmpKind::F16HihoV4,
                    F16V4SisoAmp => AmpKind::F16Siso,
                    _ => AmpKind::F8HihoV4,
                };
                Op::Amp { kind, d: o[0] as u8, x: ap(o[1]), p: ap(o[2]), phase: o[3] as u8 }
            }
            F16v2Exp | F16v2Exp2 | F16v2Ln | F16v2Log2 | F16v2Tanh | F16v2Sigm | F32Exp | F32Ln
            | F32Oox | F32Oorx | F32Sqrt | F32Tanh | F32Sigm => {
                let f = match i.opcode {
                    F16v2Exp | F32Exp => TransFn::Exp,
                    F16v2Exp2 => TransFn::Exp2,
                    F16v2Ln | F32Ln => TransFn::Ln,
                    F16v2Log2 => TransFn::Log2,
                    F16v2Tanh | F32Tanh => TransFn::Tanh,
                    F16v2Sigm | F32Sigm => TransFn::Sigm,
                    F32Oox => TransFn::Recip,
                    F32Oorx => TransFn::Rsqrt,
                    _ => TransFn::Sqrt,
                };
                let (d, s) = (o[0] as u8, ar(o[1]));
                if i.opcode.desc().mnemonic.starts_with("f16v2") {
                    Op::F16v2Trans { f, d, s }
                } else {
                    Op::F32Trans { f, d, s }
                }
            }
            Send => Op::Sys(SysOp::Send { src: o[0] as u8, words: o[1] as u32 }),
            SendOutgoing => Op::Sys(SysOp::SendOutgoing { words: o[0] as u32 }),
        }
    }
}
