//! The issue rules of the machine model (`shared/ipu-machine.md`, "timing
//! rules") that code generators and the assembler need statically: which
//! registers an instruction reads and writes, when a straight run of
//! supervisor code issues, and how many cycles a compute-set launch takes.
//!
//! The supervisor issues in every cycle no worker holds; its pipeline has no
//! bypass, so a result is readable [`MachineModel::supervisor_result_latency`]
//! cycles after its instruction issued and an earlier reader stalls (poplibs
//! pads supervisor code with `nop // keep nop for 6 instructions pipeline`
//! and marks readers of the previous result `// 6 cycles`). A taken branch,
//! call or return delays the next issue of its context to
//! [`MachineModel::branch_refill_cycles`] after it (poplibs: `br $lr // 6
//! cycles`, "brnzdec loops mean 6-cycle stall for all but last iteration").
//! A worker issues once per barrel round, which hides both.
//!
//! The simulator applies the same rules with the masks of [`reg_use`]; a
//! test in `ipuc-runtime` holds [`supervisor_schedule`] and
//! [`launch_cycles`] to what it simulates.

use super::csr;
use super::encoding::Instr;
use super::isa::{Category, Opcode, OperandKind};
use super::machine::MachineModel;
use super::registers::MZERO;

/// The bit of [`RegUse`] standing for `$CCCSLOAD`: written by `put`, read by
/// `ld64putcs`/`ld128putcs`. Their own post-increment is not a hazard:
/// poplibs issues 32 `ld128putcs` back to back and counts 32 cycles for them.
pub const CCCSLOAD_BIT: u32 = 1 << 16;

/// Registers one instruction reads and writes: bit n is `$mn` (never
/// `$mzero`, which always reads zero), [`CCCSLOAD_BIT`] is `$CCCSLOAD`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RegUse {
    /// Registers read.
    pub reads: u32,
    /// Registers written.
    pub writes: u32,
}

/// The registers `i` reads and writes.
pub fn reg_use(i: &Instr) -> RegUse {
    let d = i.opcode.desc();
    // Loads and integer operations name their destination first; so do
    // `call` (the link register) and `get`.
    let dst_first = match d.category {
        Category::Load | Category::Alu => true,
        Category::Control => i.opcode == Opcode::Call,
        Category::System => i.opcode == Opcode::Get,
        _ => false,
    };
    let bit = |r: i32| -> u32 {
        if r as u8 == MZERO {
            0
        } else {
            1 << (r & 15)
        }
    };
    let mut u = RegUse::default();
    for (k, (kind, &v)) in d.operands.iter().zip(&i.ops).enumerate() {
        match kind {
            OperandKind::M if k == 0 && dst_first => u.writes |= bit(v),
            OperandKind::M => u.reads |= bit(v),
            OperandKind::MPair => u.writes |= bit(v) | bit(v + 1),
            OperandKind::MInc => {
                u.reads |= bit(v);
                u.writes |= bit(v);
            }
            OperandKind::MPairInc => {
                u.reads |= bit(v) | bit(v + 1);
                u.writes |= bit(v) | bit(v + 1);
            }
            _ => {}
        }
    }
    match i.opcode {
        Opcode::Brnzdec => u.writes |= bit(i.ops[0]),
        Opcode::Ld64Putcs | Opcode::Ld128Putcs => u.reads |= CCCSLOAD_BIT,
        Opcode::Put if i.ops[0] as u8 == csr::CCCSLOAD => u.writes |= CCCSLOAD_BIT,
        _ => {}
    }
    u
}

/// Whether `op` transfers control when it is taken (and then costs the
/// pipeline refill): branches, `call`, and `br $lr` returns.
pub fn is_branch(op: Opcode) -> bool {
    matches!(
        op,
        Opcode::Br | Opcode::Bri | Opcode::Brz | Opcode::Brnz | Opcode::Brnzdec | Opcode::Call
    )
}

/// Issue slots (barrel rounds) `op` holds its context for: 1, except the
/// transcendentals, which take [`MachineModel::transcendental_issues`]. A
/// bundle holds its context for the larger of its halves'.
pub fn issue_slots(op: Opcode, m: &MachineModel) -> u32 {
    let t = &m.transcendental_issues;
    match op {
        Opcode::F16v2Exp | Opcode::F16v2Exp2 => t.f16v2_exp,
        Opcode::F16v2Ln | Opcode::F16v2Log2 => t.f16v2_log,
        Opcode::F16v2Tanh => t.f16v2_tanh,
        Opcode::F16v2Sigm => t.f16v2_sigm,
        Opcode::F32Exp => t.f32_exp,
        Opcode::F32Ln => t.f32_ln,
        Opcode::F32Oox => t.f32_oox,
        Opcode::F32Oorx => t.f32_oorx,
        Opcode::F32Sqrt => t.f32_sqrt,
        Opcode::F32Tanh => t.f32_tanh,
        Opcode::F32Sigm => t.f32_sigm,
        _ => 1,
    }
    .max(1)
}

/// Whether control never falls through `op` (the next instruction in
/// address order is reached only by a jump).
fn ends_straight_line(op: Opcode) -> bool {
    matches!(
        op,
        Opcode::Br | Opcode::Bri | Opcode::Call | Opcode::Exitz | Opcode::Exitnz
    )
}

/// A supervisor instruction that waits for a register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stall {
    /// Index of the waiting instruction.
    pub index: usize,
    /// Cycles it waits.
    pub cycles: u64,
    /// The register: `$m` number, or 16 for `$CCCSLOAD`.
    pub register: u8,
    /// Index of the instruction that wrote it.
    pub writer: usize,
}

/// Issue cycles of supervisor code and the stalls in it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Schedule {
    /// Issue cycle of each instruction.
    pub issue: Vec<u64>,
    /// Register waits, in instruction order.
    pub stalls: Vec<Stall>,
}

/// Schedules supervisor code in address order, first instruction at cycle
/// 0 with every register ready and no worker holding a slot: one issue per
/// cycle, delayed by the result latency. Conditional branches fall through;
/// after an unconditional transfer (`br`, `bri`, `call`, `exitz`) the next
/// instruction is reached by a jump, costs the refill and starts with every
/// register ready (a jump cannot expose a hazard while the refill is at
/// least the result latency, as in every machine model).
pub fn supervisor_schedule(code: &[Instr], m: &MachineModel) -> Schedule {
    let latency = u64::from(m.supervisor_result_latency);
    let mut ready = [0u64; 17];
    let mut writer = [0usize; 17];
    let mut s = Schedule::default();
    let mut next = 0u64;
    for (k, i) in code.iter().enumerate() {
        let u = reg_use(i);
        let mut at = next;
        let mut cause = None;
        for r in bits(u.reads) {
            if ready[r] > at {
                at = ready[r];
                cause = Some(r);
            }
        }
        if let Some(r) = cause {
            s.stalls.push(Stall {
                index: k,
                cycles: at - next,
                register: r as u8,
                writer: writer[r],
            });
        }
        s.issue.push(at);
        for r in bits(u.writes) {
            ready[r] = at + latency;
            writer[r] = k;
        }
        next = at + 1;
        if ends_straight_line(i.opcode) {
            next = at + u64::from(m.branch_refill_cycles);
            ready = [0; 17];
        }
    }
    s
}

fn bits(mask: u32) -> impl Iterator<Item = usize> {
    (0..17).filter(move |r| mask & (1 << r) != 0)
}

/// Tile cycles of a compute-set launch: the supervisor issues `prologue`
/// (straight-line code ending with `runall`) from cycle 0; worker w, on
/// barrel slot w, starts [`MachineModel::worker_start_latency`] after the
/// `runall`, first issues in its slot and then once per round,
/// `worker_issues[w]` times in all (at least its `exitz`); the supervisor's
/// next instruction, `sync TEXCH_SYNCZONE_LOCAL`, issues in the first slot a
/// worker has left, completes in the cycle after the last worker's exit,
/// and the supervisor then issues `epilogue`. Returns the cycle after the
/// last issue, which is what the simulator reports for a tile whose whole
/// program this is.
pub fn launch_cycles(
    prologue: &[Instr],
    worker_issues: &[u64],
    epilogue: &[Instr],
    m: &MachineModel,
) -> u64 {
    let runall = supervisor_schedule(prologue, m)
        .issue
        .last()
        .copied()
        .unwrap_or(0);
    let tail = supervisor_schedule(epilogue, m)
        .issue
        .last()
        .map_or(0, |&c| c + 1);
    launch_cycles_after(runall, worker_issues, tail, m)
}

/// [`launch_cycles`] from the cycle `runall` issues in and the cycles the
/// supervisor's code after the `sync` takes (its last issue + 1 when
/// scheduled from 0).
pub fn launch_cycles_after(
    runall: u64,
    worker_issues: &[u64],
    epilogue_cycles: u64,
    m: &MachineModel,
) -> u64 {
    let period = u64::from(m.slot_period);
    let start = runall + u64::from(m.worker_start_latency);
    let mut last_exit = 0;
    let mut sync_issue = u64::MAX;
    for (w, &n) in worker_issues.iter().enumerate() {
        let slot = w as u64 % period;
        let first = start + (slot + period - start % period) % period;
        let exit = first + period * n.max(1).saturating_sub(1);
        last_exit = last_exit.max(exit);
        // The slot is free again one round after the worker's exit.
        sync_issue = sync_issue.min(exit + period);
    }
    if worker_issues.is_empty() {
        sync_issue = runall + 1;
    }
    let resume = sync_issue.max(last_exit) + 1;
    resume + epilogue_cycles + 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::ISA;

    fn i(op: Opcode, ops: &[i32]) -> Instr {
        Instr::new(op, ops)
    }

    #[test]
    fn destinations_sources_and_post_increments() {
        let u = reg_use(&i(Opcode::Ld32StepM, &[1, 15, 2, 1]));
        assert_eq!((u.reads, u.writes), (1 << 2, (1 << 1) | (1 << 2)));
        let u = reg_use(&i(Opcode::St32M, &[3, 4, 15, 0]));
        assert_eq!((u.reads, u.writes), ((1 << 3) | (1 << 4), 0));
        let u = reg_use(&i(Opcode::Brnzdec, &[5, 0x4c000]));
        assert_eq!((u.reads, u.writes), (1 << 5, 1 << 5));
        let u = reg_use(&i(Opcode::Call, &[6, 0x4c000]));
        assert_eq!((u.reads, u.writes), (0, 1 << 6));
        let u = reg_use(&i(Opcode::Tapack, &[4, 0, 1, 2]));
        assert_eq!((u.reads, u.writes), (0b111, 0b11_0000));
        let u = reg_use(&i(Opcode::Put, &[i32::from(csr::CCCSLOAD), 0]));
        assert_eq!((u.reads, u.writes), (1, CCCSLOAD_BIT));
        let u = reg_use(&i(Opcode::Ld128Putcs, &[0]));
        assert_eq!((u.reads, u.writes), (CCCSLOAD_BIT, 0));
        let u = reg_use(&i(Opcode::Runall, &[1, 2, 4]));
        assert_eq!((u.reads, u.writes), (0b110, 0));
        // `$mzero` is never a dependency.
        let u = reg_use(&i(Opcode::SetziM, &[15, 3]));
        assert_eq!(u, RegUse::default());
    }

    #[test]
    fn a_first_m_operand_is_written_exactly_when_documented_as_destination() {
        for d in ISA {
            if !matches!(d.operands.first(), Some(OperandKind::M)) {
                continue;
            }
            let documented =
                d.doc.contains("$mDst") || d.doc.contains("$mLink") || d.opcode == Opcode::Brnzdec;
            let u = reg_use(&Instr::new(d.opcode, &[1, 2, 3, 4, 0]));
            assert_eq!(u.writes & 2 != 0, documented, "{}: {}", d.mnemonic, d.doc);
        }
    }

    #[test]
    fn a_reader_waits_for_the_result_latency() {
        let m = MachineModel::c600();
        // setzi $m0 ; add $m1, $m0, 1 ; setzi $m2 ; add $m3, $m2, $m1
        let code = [
            i(Opcode::SetziM, &[0, 5]),
            i(Opcode::AddImm, &[1, 0, 1]),
            i(Opcode::SetziM, &[2, 5]),
            i(Opcode::Add, &[3, 2, 1]),
        ];
        let s = supervisor_schedule(&code, &m);
        // add waits for $m0 until 0 + 6; setzi issues at 7; the second add
        // reads $m2 (ready 13) and $m1 (ready 12).
        assert_eq!(s.issue, vec![0, 6, 7, 13]);
        assert_eq!(s.stalls.len(), 2);
        assert_eq!((s.stalls[0].cycles, s.stalls[0].register), (5, 0));
        assert_eq!(
            (s.stalls[1].cycles, s.stalls[1].register, s.stalls[1].writer),
            (5, 2, 2)
        );
    }

    #[test]
    fn a_jump_costs_the_refill_and_hides_hazards() {
        let m = MachineModel::c600();
        assert!(m.branch_refill_cycles >= m.supervisor_result_latency);
        let code = [
            i(Opcode::SetziM, &[0, 5]),
            i(Opcode::Bri, &[0x4c00c]),
            i(Opcode::AddImm, &[1, 0, 1]),
        ];
        assert_eq!(supervisor_schedule(&code, &m).issue, vec![0, 1, 7]);
    }

    #[test]
    fn transcendentals_hold_their_worker_for_poplibs_counts() {
        let m = MachineModel::c600();
        // poplibs' EXPONENT half loop: 2 bundles per 4 halves, 4 cycles.
        assert_eq!(issue_slots(Opcode::F16v2Exp, &m), 2);
        // SQRT half: 2 conversions in, 4 x f32sqrt, 1 conversion out = 23.
        assert_eq!(3 + 4 * issue_slots(Opcode::F32Sqrt, &m), 23);
        // RSQRT half = 19, INVERSE half = 15 (the same cast loop).
        assert_eq!(3 + 4 * issue_slots(Opcode::F32Oorx, &m), 19);
        assert_eq!(3 + 4 * issue_slots(Opcode::F32Oox, &m), 15);
        assert_eq!(issue_slots(Opcode::F32v2Add, &m), 1);
        // Every machine has a transcendental cost of at least one slot.
        for d in ISA {
            assert!(issue_slots(d.opcode, &m) >= 1);
        }
    }

    #[test]
    fn launch_of_equal_workers() {
        let m = MachineModel::c600();
        let prologue = [
            i(Opcode::SetziM, &[1, 0x4c100]),
            i(Opcode::SetziM, &[2, 0x50000]),
            i(Opcode::Runall, &[1, 2, 4]),
        ];
        // runall at 1 + 6 = 7 (it reads $m2); workers start at 13: slots
        // 1..5 at 13..17, slot 0 at 18. With 10 issues each, worker 0 exits
        // last at 18 + 54 = 72; worker 1 left at 67, so its slot comes back
        // at 73, where `sync` issues; it completes at 74; `exitz` at 75.
        let exitz = [i(Opcode::Exitz, &[15])];
        assert_eq!(launch_cycles(&prologue, &[10; 6], &exitz, &m), 76);
        // One more issue for worker 0: it exits at 78; `sync` issued at 73.
        assert_eq!(
            launch_cycles(&prologue, &[11, 10, 10, 10, 10, 10], &exitz, &m),
            81
        );
    }
}
