//! One simulated tile: memory, the supervisor and six worker contexts on
//! the barrel, the AMP weight store, exchange registers, and the
//! interpreter over pre-decoded instructions.

use half::f16;
use ipuc_backend_ipu::target::csr;
use ipuc_backend_ipu::target::encoding::{decode, Instr};
use ipuc_backend_ipu::target::float8::{decode_scaled, encode_scaled};
use ipuc_backend_ipu::target::isa::{ContextClass, Opcode};
use ipuc_backend_ipu::target::printer::instr_text;
use ipuc_backend_ipu::target::registers::SP;
use ipuc_backend_ipu::target::{ContextKind, MachineModel, TileImage};

use super::amp::AmpState;
use super::fault::{Fault, FaultKind};
use super::profile::{SuperstepCycles, TraceEntry};

/// Context 0 is the supervisor, 1..=6 the workers.
pub const CONTEXTS: usize = 7;

/// State of a context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CtxState {
    /// Not started or exited.
    Idle,
    /// Issuing.
    Running,
    /// Supervisor waiting for all workers (`sync` zone 2).
    WaitLocal,
    /// Supervisor waiting at the chip-wide barrier.
    WaitInternal,
}

/// One context's registers and state.
#[derive(Clone, Debug)]
pub struct Context {
    pub state: CtxState,
    pub pc: u32,
    pub m: [u32; 16],
    pub a: [u32; 16],
    /// Earliest cycle of the next issue (exchange register writes stall).
    pub ready_at: u64,
    pub rpt_start: u32,
    pub rpt_end: u32,
    pub rpt_left: u32,
    pub in_rpt: bool,
    pub aacc: [f32; 16],
    pub tas: u32,
    pub amp: AmpState,
    /// Lowest legal `$sp`-relative address (0: no stack region).
    pub stack_lo: u32,
    pub exit_status: bool,
    /// Arrival cycle posted by `sans`.
    pub sans_arrival: Option<u64>,
}

impl Default for Context {
    fn default() -> Self {
        Context {
            state: CtxState::Idle,
            pc: 0,
            m: [0; 16],
            a: [0; 16],
            ready_at: 0,
            rpt_start: 0,
            rpt_end: 0,
            rpt_left: 0,
            in_rpt: false,
            aacc: [0.0; 16],
            tas: 0,
            amp: AmpState::default(),
            stack_lo: 0,
            exit_status: true,
            sans_arrival: None,
        }
    }
}

/// A pre-decoded code word.
#[derive(Clone, Copy, Debug)]
pub struct Decoded {
    pub instr: Instr,
    pub bundle: bool,
    pub valid: bool,
    pub worker_code: bool,
}

/// Why a tile stopped running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TileStop {
    /// The supervisor is at the chip-wide barrier; arrival cycle.
    Sync(u64),
    /// The supervisor exited and all workers are idle.
    Done,
}

/// One word sent on the exchange.
#[derive(Clone, Copy, Debug)]
pub struct SentWord {
    pub cycle: u64,
    pub word: u32,
    pub pc: u32,
}

/// Exchange register state and this superstep's activity.
#[derive(Clone, Debug, Default)]
pub struct ExchangeState {
    pub incoming_mux: u32,
    pub incoming_base: u32,
    pub incoming_delta: u32,
    pub incoming_dcount: u32,
    pub outgoing_base: u32,
    pub ctl: u32,
    /// Writes of exchange registers this superstep: (effective cycle, register, value).
    pub events: Vec<(u64, u8, u32)>,
    /// Mux value at the start of the superstep.
    pub mux_at_start: u32,
    pub base_at_start: u32,
    pub delta_at_start: u32,
    pub sent: Vec<SentWord>,
    pub port_free: u64,
}

/// No sender selected.
pub const MUX_NONE: u32 = u32::MAX;

/// One tile.
pub struct Tile {
    pub id: u32,
    pub base: u32,
    pub end: u32,
    pub interleaved_base: u32,
    pub mem: Vec<u8>,
    pub code_base: u32,
    pub code: Vec<Decoded>,
    pub ctx: [Context; CONTEXTS],
    pub cccs: [u64; 64],
    pub cccs_load: u32,
    pub cycle: u64,
    pub xch: ExchangeState,
    pub image: TileImage,
    pub instructions: u64,
    pub supervisor_issues: u64,
    pub worker_issues: u64,
    pub supersteps: Vec<SuperstepCycles>,
    pub step_start: u64,
    pub step_exchange: u64,
    pub trace: Option<Vec<TraceEntry>>,
    pub trace_limit: usize,
    pub machine: MachineModel,
    pub done: bool,
    /// Arrival cycle at the pending chip-wide sync.
    pub sync_arrival: u64,
}

type R<T> = Result<T, FaultKind>;

#[inline(always)]
fn set_m(c: &mut Context, r: i32, v: u32) {
    if r != 15 {
        c.m[r as usize] = v;
    }
}

#[inline(always)]
fn set_a(c: &mut Context, r: i32, v: u32) {
    if r != 15 {
        c.a[r as usize] = v;
    }
}

#[inline(always)]
fn get_a64(c: &Context, r: i32) -> u64 {
    // `$a14:15` is `$azeros`.
    if r == 14 {
        0
    } else {
        u64::from(c.a[r as usize]) | (u64::from(c.a[r as usize + 1]) << 32)
    }
}

#[inline(always)]
fn set_a64(c: &mut Context, r: i32, v: u64) {
    set_a(c, r, v as u32);
    set_a(c, r + 1, (v >> 32) as u32);
}

fn f16x2(v: u32) -> [f32; 2] {
    [
        f16::from_bits(v as u16).to_f32(),
        f16::from_bits((v >> 16) as u16).to_f32(),
    ]
}

fn pack_f16x2(a: f32, b: f32) -> u32 {
    u32::from(f16::from_f32(a).to_bits()) | (u32::from(f16::from_f32(b).to_bits()) << 16)
}

fn f16v4_op(x: u64, y: u64, f: impl Fn(f32, f32) -> f32) -> u64 {
    let mut out = 0u64;
    for i in 0..4 {
        let a = f16::from_bits((x >> (16 * i)) as u16).to_f32();
        let b = f16::from_bits((y >> (16 * i)) as u16).to_f32();
        out |= u64::from(f16::from_f32(f(a, b)).to_bits()) << (16 * i);
    }
    out
}

fn f32v2_op(x: u64, y: u64, f: impl Fn(f32, f32) -> f32) -> u64 {
    let lo = f(f32::from_bits(x as u32), f32::from_bits(y as u32));
    let hi = f(
        f32::from_bits((x >> 32) as u32),
        f32::from_bits((y >> 32) as u32),
    );
    u64::from(lo.to_bits()) | (u64::from(hi.to_bits()) << 32)
}

/// Field `i` of a triple-packed address pair.
fn packed_field(p: u64, i: u32) -> u32 {
    ((p >> (21 * i)) & 0x1f_ffff) as u32
}

fn stride_step(sel: u32, stride: u32) -> i64 {
    let field = |v: u32| -> i64 { (((v & 0x3ff) << 22) as i32 >> 22) as i64 };
    match sel & 3 {
        0 => 1,
        1 => field(stride),
        2 => field(stride >> 10),
        _ => 0,
    }
}

fn advance_packed(p: u64, i: u32, sel: u32, stride: u32, unit: i64) -> u64 {
    let f = i64::from(packed_field(p, i)) + stride_step(sel, stride) * unit;
    let f = (f as u64) & 0x1f_ffff;
    (p & !(0x1f_ffffu64 << (21 * i))) | (f << (21 * i))
}

impl Tile {
    /// A tile loaded with an image.
    pub fn new(id: u32, image: TileImage, machine: &MachineModel) -> Result<Tile, String> {
        let base = machine.sram_base;
        let end = machine.sram_end;
        let mut mem = vec![0u8; (end - base) as usize];
        let mut code_lo = u32::MAX;
        let mut code_hi = 0;
        for s in &image.sections {
            if s.address < base || s.end() > end {
                return Err(format!(
                    "section `{}` at 0x{:x}..0x{:x} is outside tile memory",
                    s.name,
                    s.address,
                    s.end()
                ));
            }
            if s.is_code && s.end() > machine.interleaved_base {
                return Err(format!("code section `{}` is outside region 0", s.name));
            }
            let o = (s.address - base) as usize;
            mem[o..o + s.bytes.len()].copy_from_slice(&s.bytes);
            if s.is_code {
                code_lo = code_lo.min(s.address);
                code_hi = code_hi.max(s.end());
            }
        }
        if code_lo == u32::MAX {
            code_lo = base;
            code_hi = base;
        }
        let mut code = Vec::with_capacity(((code_hi - code_lo) / 4) as usize);
        let nop = Decoded {
            instr: Instr::new(Opcode::Nop, &[]),
            bundle: false,
            valid: false,
            worker_code: false,
        };
        let mut addr = code_lo;
        while addr < code_hi {
            let sec = image.section_at(addr);
            let d = match sec {
                Some(s) if s.is_code => {
                    let o = (addr - base) as usize;
                    let w = u32::from_le_bytes([mem[o], mem[o + 1], mem[o + 2], mem[o + 3]]);
                    match decode(w) {
                        Ok((instr, bundle)) => Decoded {
                            instr,
                            bundle,
                            valid: true,
                            worker_code: s.mode_at(addr - s.address) == ContextKind::Worker,
                        },
                        Err(_) => nop,
                    }
                }
                _ => nop,
            };
            code.push(d);
            addr += 4;
        }
        Ok(Tile {
            id,
            base,
            end,
            interleaved_base: machine.interleaved_base,
            mem,
            code_base: code_lo,
            code,
            ctx: Default::default(),
            cccs: [0; 64],
            cccs_load: 0,
            cycle: 0,
            xch: ExchangeState {
                incoming_mux: MUX_NONE,
                mux_at_start: MUX_NONE,
                ..Default::default()
            },
            image,
            instructions: 0,
            supervisor_issues: 0,
            worker_issues: 0,
            supersteps: Vec::new(),
            step_start: 0,
            step_exchange: 0,
            trace: None,
            trace_limit: 0,
            machine: machine.clone(),
            done: false,
            sync_arrival: 0,
        })
    }

    /// Resets contexts and counters for a new run (memory is kept).
    pub fn reset(&mut self) {
        self.ctx = Default::default();
        self.cccs = [0; 64];
        self.cccs_load = 0;
        self.cycle = 0;
        self.xch = ExchangeState {
            incoming_mux: MUX_NONE,
            mux_at_start: MUX_NONE,
            ..Default::default()
        };
        self.instructions = 0;
        self.supervisor_issues = 0;
        self.worker_issues = 0;
        self.supersteps.clear();
        self.step_start = 0;
        self.step_exchange = 0;
        self.done = false;
        let sup = &mut self.ctx[0];
        sup.state = CtxState::Running;
        sup.pc = self.image.entry;
        for st in &self.image.stacks {
            if st.context == ContextKind::Supervisor {
                sup.m[SP as usize] = st.top;
                sup.stack_lo = st.top - st.size;
            }
        }
    }

    fn worker_stack(&self, w: usize) -> Option<(u32, u32)> {
        self.image
            .stacks
            .iter()
            .find(|s| s.context == ContextKind::Worker)
            .map(|s| {
                let top = s.top - (w as u32 - 1) * s.size;
                (top, top - s.size)
            })
    }

    /// Text of the instruction at `pc` (for faults and traces).
    pub fn instr_text_at(&self, pc: u32) -> String {
        match self.decoded(pc) {
            Some(d) if d.valid => {
                let labels = Default::default();
                let main = instr_text(&d.instr, &labels);
                if d.bundle {
                    match self.decoded(pc + 4) {
                        Some(a) if a.valid => {
                            format!("{{ {main} ; {} }}", instr_text(&a.instr, &labels))
                        }
                        _ => main,
                    }
                } else {
                    main
                }
            }
            _ => "<no instruction>".into(),
        }
    }

    #[inline(always)]
    fn decoded(&self, pc: u32) -> Option<&Decoded> {
        let off = pc.wrapping_sub(self.code_base);
        if !off.is_multiple_of(4) {
            return None;
        }
        self.code.get((off / 4) as usize)
    }

    /// Builds a fault at the current state of context `c`.
    #[cold]
    pub fn fault(&self, c: usize, kind: FaultKind) -> Fault {
        Fault {
            kind,
            tile: self.id,
            context: if c == 0 {
                "supervisor".into()
            } else {
                format!("worker {}", c - 1)
            },
            pc: self.ctx[c].pc,
            instruction: self.instr_text_at(self.ctx[c].pc),
            cycle: self.cycle,
        }
    }

    // ---------------------------------------------------------------- memory

    #[inline(always)]
    fn index(&self, addr: u32, size: u32) -> R<usize> {
        if addr & (size - 1) != 0 {
            return Err(FaultKind::MisalignedAccess {
                address: addr,
                size,
            });
        }
        if addr < self.base
            || addr.wrapping_add(size) > self.end
            || addr.checked_add(size).is_none()
        {
            return Err(FaultKind::OutOfRange {
                address: addr,
                size,
            });
        }
        Ok((addr - self.base) as usize)
    }

    #[inline(always)]
    fn check_stack(&self, c: usize, base_reg: i32, addr: u32) -> R<()> {
        let lo = self.ctx[c].stack_lo;
        if base_reg == SP as i32 && lo != 0 && addr < lo {
            return Err(FaultKind::StackOverflow {
                address: addr,
                limit: lo,
            });
        }
        Ok(())
    }

    #[inline(always)]
    fn ld32(&self, addr: u32) -> R<u32> {
        let i = self.index(addr, 4)?;
        Ok(u32::from_le_bytes([
            self.mem[i],
            self.mem[i + 1],
            self.mem[i + 2],
            self.mem[i + 3],
        ]))
    }

    #[inline(always)]
    fn ld64(&self, addr: u32) -> R<u64> {
        let i = self.index(addr, 8)?;
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.mem[i..i + 8]);
        Ok(u64::from_le_bytes(b))
    }

    fn ld16(&self, addr: u32) -> R<u16> {
        let i = self.index(addr, 2)?;
        Ok(u16::from_le_bytes([self.mem[i], self.mem[i + 1]]))
    }

    fn ld8(&self, addr: u32) -> R<u8> {
        let i = self.index(addr, 1)?;
        Ok(self.mem[i])
    }

    #[inline(always)]
    fn st32(&mut self, addr: u32, v: u32) -> R<()> {
        let i = self.index(addr, 4)?;
        self.mem[i..i + 4].copy_from_slice(&v.to_le_bytes());
        Ok(())
    }

    #[inline(always)]
    fn st64(&mut self, addr: u32, v: u64) -> R<()> {
        let i = self.index(addr, 8)?;
        self.mem[i..i + 8].copy_from_slice(&v.to_le_bytes());
        Ok(())
    }

    fn ld128(&self, addr: u32) -> R<(u64, u64)> {
        self.index(addr, 16)?;
        if addr < self.interleaved_base {
            return Err(FaultKind::NotInterleaved { address: addr });
        }
        Ok((self.ld64(addr)?, self.ld64(addr + 8)?))
    }

    fn conflict(&self, a: u32, b: u32) -> R<()> {
        if self.machine.bank_of(a) == self.machine.bank_of(b) {
            return Err(FaultKind::BankConflict {
                first: a,
                second: b,
            });
        }
        Ok(())
    }

    /// Writes bytes at a tile address (host access).
    pub fn write_bytes(&mut self, addr: u32, bytes: &[u8]) -> Result<(), String> {
        let end = u64::from(addr) + bytes.len() as u64;
        if addr < self.base || end > u64::from(self.end) {
            return Err(format!(
                "0x{addr:x}..0x{end:x} is outside tile {} memory",
                self.id
            ));
        }
        let o = (addr - self.base) as usize;
        self.mem[o..o + bytes.len()].copy_from_slice(bytes);
        Ok(())
    }

    /// Reads bytes at a tile address (host access).
    pub fn read_bytes(&self, addr: u32, len: u32) -> Result<Vec<u8>, String> {
        let end = u64::from(addr) + u64::from(len);
        if addr < self.base || end > u64::from(self.end) {
            return Err(format!(
                "0x{addr:x}..0x{end:x} is outside tile {} memory",
                self.id
            ));
        }
        let o = (addr - self.base) as usize;
        Ok(self.mem[o..o + len as usize].to_vec())
    }

    // ---------------------------------------------------------------- barrel

    fn workers_idle(&self) -> bool {
        self.ctx[1..].iter().all(|c| c.state == CtxState::Idle)
    }

    /// Runs until the supervisor reaches the chip barrier or everything exits.
    pub fn run(&mut self, cycle_budget: u64, instr_budget: &mut u64) -> Result<TileStop, Fault> {
        let period = self.machine.slot_period as usize;
        // Slot of the current cycle, kept incrementally (no division per cycle).
        let mut slot = (self.cycle % period as u64) as usize;
        loop {
            if self.cycle >= cycle_budget {
                let c = self.busiest_context();
                return Err(self.fault(c, FaultKind::CycleBudgetExhausted(cycle_budget)));
            }
            let w = slot + 1;
            let issued = if self.ctx[w].state == CtxState::Running {
                self.issue(w, instr_budget)?;
                true
            } else {
                match self.ctx[0].state {
                    CtxState::Running if self.cycle >= self.ctx[0].ready_at => {
                        self.issue(0, instr_budget)?;
                        true
                    }
                    CtxState::WaitLocal if self.workers_idle() => {
                        self.ctx[0].state = CtxState::Running;
                        self.ctx[0].pc += 4;
                        false
                    }
                    _ => false,
                }
            };
            match self.ctx[0].state {
                CtxState::WaitInternal if self.workers_idle() => {
                    self.cycle += 1;
                    return Ok(TileStop::Sync(self.sync_arrival.max(self.cycle - 1)));
                }
                CtxState::Idle if self.workers_idle() => {
                    self.cycle += 1;
                    self.done = true;
                    return Ok(TileStop::Done);
                }
                _ => {}
            }
            self.cycle += 1;
            slot = if slot + 1 == period { 0 } else { slot + 1 };
            if !issued
                && self.workers_idle()
                && self.ctx[0].state == CtxState::Running
                && self.ctx[0].ready_at > self.cycle
            {
                // Nothing can issue until the supervisor's stall ends.
                self.cycle = self.ctx[0].ready_at;
                slot = (self.cycle % period as u64) as usize;
            }
        }
    }

    fn busiest_context(&self) -> usize {
        (1..CONTEXTS)
            .find(|&c| self.ctx[c].state == CtxState::Running)
            .unwrap_or(0)
    }

    /// Issues one instruction or bundle of context `c`.
    #[inline(always)]
    fn issue(&mut self, c: usize, instr_budget: &mut u64) -> Result<(), Fault> {
        let pc = self.ctx[c].pc;
        let Some(d) = self.decoded(pc).copied() else {
            return Err(self.fault(
                c,
                FaultKind::IllegalInstruction(format!("pc 0x{pc:x} is not in code")),
            ));
        };
        if !d.valid {
            return Err(self.fault(c, FaultKind::IllegalInstruction("undecodable word".into())));
        }
        if *instr_budget == 0 {
            return Err(self.fault(c, FaultKind::InstructionBudgetExhausted(self.instructions)));
        }
        if let Some(t) = &mut self.trace {
            if t.len() < self.trace_limit {
                let text = {
                    let labels = Default::default();
                    instr_text(&d.instr, &labels)
                };
                t.push(TraceEntry {
                    cycle: self.cycle,
                    context: c as u8,
                    pc,
                    text,
                });
            }
        }
        let result = if d.bundle {
            let aux = match self.decoded(pc + 4) {
                Some(a) if a.valid => a.instr,
                _ => {
                    return Err(self.fault(
                        c,
                        FaultKind::IllegalInstruction("bundle without an auxiliary half".into()),
                    ))
                }
            };
            *instr_budget = instr_budget.saturating_sub(2);
            self.instructions += 2;
            self.exec_bundle(c, &d.instr, &aux, pc)
        } else {
            if self.ctx[c].in_rpt {
                return Err(self.fault(
                    c,
                    FaultKind::IllegalInstruction("solo instruction in a rpt body".into()),
                ));
            }
            *instr_budget = instr_budget.saturating_sub(1);
            self.instructions += 1;
            self.exec(c, &d.instr, pc, 4)
        };
        if c == 0 {
            self.supervisor_issues += 1;
        } else {
            self.worker_issues += 1;
        }
        match result {
            Ok(()) => Ok(()),
            Err(k) => {
                // Report at the faulting instruction.
                self.ctx[c].pc = pc;
                Err(self.fault(c, k))
            }
        }
    }

    fn exec_bundle(&mut self, c: usize, main: &Instr, aux: &Instr, pc: u32) -> R<()> {
        if self.ctx[c].in_rpt
            && !(main.opcode.desc().allowed_in_rpt() && aux.opcode.desc().allowed_in_rpt())
        {
            return Err(FaultKind::IllegalInstruction(
                "control or system instruction in a rpt body".into(),
            ));
        }
        // Both halves read the registers as they were before the bundle.
        let pre = self.ctx[c].a;
        self.exec_op(c, aux, pc)?;
        let post_aux = self.ctx[c].a;
        self.ctx[c].a = pre;
        let next = self.exec_op(c, main, pc)?;
        for i in 0..16 {
            if post_aux[i] != pre[i] {
                self.ctx[c].a[i] = post_aux[i];
            }
        }
        self.advance(c, next.unwrap_or(pc + 8), pc + 8, next.is_some());
        Ok(())
    }

    fn exec(&mut self, c: usize, i: &Instr, pc: u32, size: u32) -> R<()> {
        let next = self.exec_op(c, i, pc)?;
        self.advance(c, next.unwrap_or(pc + size), pc + size, next.is_some());
        Ok(())
    }

    /// Moves the pc on, applying the `rpt` loop-back.
    #[inline(always)]
    fn advance(&mut self, c: usize, next: u32, fallthrough: u32, jumped: bool) {
        let ctx = &mut self.ctx[c];
        if ctx.state != CtxState::Running && ctx.state != CtxState::WaitInternal {
            return;
        }
        if !jumped && ctx.in_rpt && fallthrough == ctx.rpt_end {
            if ctx.rpt_left > 0 {
                ctx.rpt_left -= 1;
                ctx.pc = ctx.rpt_start;
                return;
            }
            ctx.in_rpt = false;
        }
        ctx.pc = next;
    }

    /// Executes one instruction; returns a new pc for taken branches.
    fn exec_op(&mut self, c: usize, i: &Instr, pc: u32) -> R<Option<u32>> {
        let o = i.ops;
        let desc = i.opcode.desc();
        match (desc.context, c) {
            (ContextClass::Worker, 0) => {
                return Err(FaultKind::IllegalInstruction(format!(
                    "`{}` is a worker instruction",
                    desc.mnemonic
                )))
            }
            (ContextClass::Supervisor, 1..) => {
                return Err(FaultKind::IllegalInstruction(format!(
                    "`{}` is a supervisor instruction",
                    desc.mnemonic
                )))
            }
            _ => {}
        }
        let mr = self.ctx[c].m;
        let m = |r: i32| mr[r as usize];
        use Opcode::*;
        match i.opcode {
            // ---- loads
            Ld32A | Ld32M => {
                let addr = m(o[1]).wrapping_add(m(o[2])).wrapping_add((o[3] as u32) * 4);
                self.check_stack(c, o[1], addr)?;
                let v = self.ld32(addr)?;
                if i.opcode == Ld32A { set_a(&mut self.ctx[c], o[0], v) } else { set_m(&mut self.ctx[c], o[0], v) }
            }
            Ld32AReg | Ld32MReg => {
                let addr = m(o[1]).wrapping_add(m(o[2])).wrapping_add(m(o[3]).wrapping_mul(4));
                self.check_stack(c, o[1], addr)?;
                let v = self.ld32(addr)?;
                if i.opcode == Ld32AReg { set_a(&mut self.ctx[c], o[0], v) } else { set_m(&mut self.ctx[c], o[0], v) }
            }
            Ld32StepA | Ld32StepM => {
                let addr = m(o[1]).wrapping_add(m(o[2]));
                let v = self.ld32(addr)?;
                let nd = m(o[2]).wrapping_add((o[3] * 4) as u32);
                set_m(&mut self.ctx[c], o[2], nd);
                if i.opcode == Ld32StepA { set_a(&mut self.ctx[c], o[0], v) } else { set_m(&mut self.ctx[c], o[0], v) }
            }
            Ld64 | Ld64Reg => {
                let off = if i.opcode == Ld64 { o[3] as u32 } else { m(o[3]) };
                let addr = m(o[1]).wrapping_add(m(o[2])).wrapping_add(off.wrapping_mul(8));
                self.check_stack(c, o[1], addr)?;
                let v = self.ld64(addr)?;
                set_a64(&mut self.ctx[c], o[0], v);
            }
            Ld64Step => {
                let addr = m(o[1]).wrapping_add(m(o[2]));
                let v = self.ld64(addr)?;
                let nd = m(o[2]).wrapping_add((o[3] * 8) as u32);
                set_m(&mut self.ctx[c], o[2], nd);
                set_a64(&mut self.ctx[c], o[0], v);
            }
            Ld128 | Ld128Reg | Ld128Step => {
                let addr = match i.opcode {
                    Ld128 => m(o[1]).wrapping_add(m(o[2])).wrapping_add((o[3] as u32) * 16),
                    Ld128Reg => m(o[1]).wrapping_add(m(o[2])).wrapping_add(m(o[3]).wrapping_mul(16)),
                    _ => m(o[1]).wrapping_add(m(o[2])),
                };
                let (lo, hi) = self.ld128(addr)?;
                if i.opcode == Ld128Step {
                    let nd = m(o[2]).wrapping_add((o[3] * 16) as u32);
                    set_m(&mut self.ctx[c], o[2], nd);
                }
                set_a64(&mut self.ctx[c], o[0], lo);
                set_a64(&mut self.ctx[c], o[0] + 2, hi);
            }
            Ldz16 | Lds16 | Ldz16Step => {
                let addr = if i.opcode == Ldz16Step { m(o[1]).wrapping_add(m(o[2])) } else { m(o[1]).wrapping_add(m(o[2])).wrapping_add((o[3] as u32) * 2) };
                let v = self.ld16(addr)?;
                let v = if i.opcode == Lds16 { v as i16 as i32 as u32 } else { u32::from(v) };
                if i.opcode == Ldz16Step {
                    let nd = m(o[2]).wrapping_add((o[3] * 2) as u32);
                    set_m(&mut self.ctx[c], o[2], nd);
                }
                set_m(&mut self.ctx[c], o[0], v);
            }
            Ldz8 | Lds8 => {
                let addr = m(o[1]).wrapping_add(m(o[2])).wrapping_add(o[3] as u32);
                let v = self.ld8(addr)?;
                let v = if i.opcode == Lds8 { v as i8 as i32 as u32 } else { u32::from(v) };
                set_m(&mut self.ctx[c], o[0], v);
            }
            Ldb16 => {
                let addr = m(o[1]).wrapping_add(m(o[2])).wrapping_add((o[3] as u32) * 2);
                let v = u32::from(self.ld16(addr)?);
                set_a(&mut self.ctx[c], o[0], v | (v << 16));
            }
            Ld2x64Pace => {
                let p = u64::from(m(o[1])) | (u64::from(m(o[1] + 1)) << 32);
                let (a0, a1) = (packed_field(p, 0), packed_field(p, 1));
                self.conflict(a0, a1)?;
                let v0 = self.ld64(a0)?;
                let v1 = self.ld64(a1)?;
                let stride = m(o[2]);
                let sel = o[3] as u32;
                let p = advance_packed(advance_packed(p, 0, sel, stride, 8), 1, sel >> 2, stride, 8);
                let ctx = &mut self.ctx[c];
                set_m(ctx, o[1], p as u32);
                set_m(ctx, o[1] + 1, (p >> 32) as u32);
                set_a64(ctx, o[0], v0);
                set_a64(ctx, o[0] + 2, v1);
            }
            Ld2xSt64Pace => {
                let p = u64::from(m(o[2])) | (u64::from(m(o[2] + 1)) << 32);
                let (a0, a1, a2) = (packed_field(p, 0), packed_field(p, 1), packed_field(p, 2));
                self.conflict(a0, a1)?;
                self.conflict(a0, a2)?;
                self.conflict(a1, a2)?;
                let v0 = self.ld64(a0)?;
                let v1 = self.ld64(a1)?;
                let sv = get_a64(&self.ctx[c], o[1]);
                self.st64(a2, sv)?;
                let stride = m(o[3]);
                let sel = o[4] as u32;
                let p = advance_packed(advance_packed(advance_packed(p, 0, sel, stride, 8), 1, sel >> 2, stride, 8), 2, sel >> 4, stride, 8);
                let ctx = &mut self.ctx[c];
                set_m(ctx, o[2], p as u32);
                set_m(ctx, o[2] + 1, (p >> 32) as u32);
                set_a64(ctx, o[0], v0);
                set_a64(ctx, o[0] + 2, v1);
            }
            LdSt64Pace => {
                let p = u64::from(m(o[2])) | (u64::from(m(o[2] + 1)) << 32);
                let (a0, a2) = (packed_field(p, 0), packed_field(p, 2));
                self.conflict(a0, a2)?;
                let v0 = self.ld64(a0)?;
                let sv = get_a64(&self.ctx[c], o[1]);
                self.st64(a2, sv)?;
                let stride = m(o[3]);
                let sel = o[4] as u32;
                let p = advance_packed(advance_packed(p, 0, sel, stride, 8), 2, sel >> 2, stride, 8);
                let ctx = &mut self.ctx[c];
                set_m(ctx, o[2], p as u32);
                set_m(ctx, o[2] + 1, (p >> 32) as u32);
                set_a64(ctx, o[0], v0);
            }
            Ld64Putcs | Ld128Putcs => {
                let idx = o[0] as usize;
                let wide = i.opcode == Ld128Putcs;
                if idx >= 64 || (wide && (!idx.is_multiple_of(2) || idx + 1 >= 64)) {
                    return Err(FaultKind::IllegalOperand(format!("weight entry {idx} is not a valid $CWEI index")));
                }
                let addr = self.cccs_load;
                if wide {
                    let (lo, hi) = self.ld128(addr)?;
                    self.cccs[idx] = lo;
                    self.cccs[idx + 1] = hi;
                    self.cccs_load = addr.wrapping_add(16);
                } else {
                    self.cccs[idx] = self.ld64(addr)?;
                    self.cccs_load = addr.wrapping_add(8);
                }
            }
            // ---- stores
            St32A | St32AReg | St32M | St32MReg => {
                let off = if matches!(i.opcode, St32A | St32M) { o[3] as u32 } else { m(o[3]) };
                let addr = m(o[1]).wrapping_add(m(o[2])).wrapping_add(off.wrapping_mul(4));
                self.check_stack(c, o[1], addr)?;
                let v = if matches!(i.opcode, St32A | St32AReg) { self.ctx[c].a[o[0] as usize] } else { m(o[0]) };
                self.st32(addr, v)?;
            }
            St32StepA | St32StepM => {
                let addr = m(o[1]).wrapping_add(m(o[2]));
                self.check_stack(c, o[1], addr)?;
                let v = if i.opcode == St32StepA { self.ctx[c].a[o[0] as usize] } else { m(o[0]) };
                self.st32(addr, v)?;
                let nd = m(o[2]).wrapping_add((o[3] * 4) as u32);
                set_m(&mut self.ctx[c], o[2], nd);
            }
            St64 | St64Reg => {
                let off = if i.opcode == St64 { o[3] as u32 } else { m(o[3]) };
                let addr = m(o[1]).wrapping_add(m(o[2])).wrapping_add(off.wrapping_mul(8));
                self.check_stack(c, o[1], addr)?;
                let v = get_a64(&self.ctx[c], o[0]);
                self.st64(addr, v)?;
            }
            St64Step => {
                let addr = m(o[1]).wrapping_add(m(o[2]));
                self.check_stack(c, o[1], addr)?;
                let v = get_a64(&self.ctx[c], o[0]);
                self.st64(addr, v)?;
                let nd = m(o[2]).wrapping_add((o[3] * 8) as u32);
                set_m(&mut self.ctx[c], o[2], nd);
            }
            St64Pace => {
                let p = u64::from(m(o[1])) | (u64::from(m(o[1] + 1)) << 32);
                let v = get_a64(&self.ctx[c], o[0]);
                self.st64(packed_field(p, 0), v)?;
                let p = advance_packed(p, 0, o[3] as u32, m(o[2]), 8);
                let ctx = &mut self.ctx[c];
                set_m(ctx, o[1], p as u32);
                set_m(ctx, o[1] + 1, (p >> 32) as u32);
            }
            // ---- integer
            Tapack => {
                let p = u64::from(m(o[1]) & 0x1f_ffff) | (u64::from(m(o[2]) & 0x1f_ffff) << 21) | (u64::from(m(o[3]) & 0x1f_ffff) << 42);
                let ctx = &mut self.ctx[c];
                set_m(ctx, o[0], p as u32);
                set_m(ctx, o[0] + 1, (p >> 32) as u32);
            }
            SetziM => set_m(&mut self.ctx[c], o[0], o[1] as u32),
            SetziA => set_a(&mut self.ctx[c], o[0], o[1] as u32),
            Add => set_m(&mut self.ctx[c], o[0], m(o[1]).wrapping_add(m(o[2]))),
            AddImm => set_m(&mut self.ctx[c], o[0], m(o[1]).wrapping_add(o[2] as u32)),
            Sub => set_m(&mut self.ctx[c], o[0], m(o[1]).wrapping_sub(m(o[2]))),
            SubImm => set_m(&mut self.ctx[c], o[0], m(o[1]).wrapping_sub(o[2] as u32)),
            Mul => set_m(&mut self.ctx[c], o[0], m(o[1]).wrapping_mul(m(o[2]))),
            MulImm => set_m(&mut self.ctx[c], o[0], m(o[1]).wrapping_mul(o[2] as u32)),
            Shl => set_m(&mut self.ctx[c], o[0], m(o[1]) << (m(o[2]) & 31)),
            ShlImm => set_m(&mut self.ctx[c], o[0], m(o[1]) << (o[2] & 31)),
            Shr => set_m(&mut self.ctx[c], o[0], m(o[1]) >> (m(o[2]) & 31)),
            ShrImm => set_m(&mut self.ctx[c], o[0], m(o[1]) >> (o[2] & 31)),
            And => set_m(&mut self.ctx[c], o[0], m(o[1]) & m(o[2])),
            AndImm => set_m(&mut self.ctx[c], o[0], m(o[1]) & o[2] as u32),
            Or => set_m(&mut self.ctx[c], o[0], m(o[1]) | m(o[2])),
            OrImm => set_m(&mut self.ctx[c], o[0], m(o[1]) | o[2] as u32),
            Cmpeq => set_m(&mut self.ctx[c], o[0], u32::from(m(o[1]) == m(o[2]))),
            CmpeqImm => set_m(&mut self.ctx[c], o[0], u32::from(m(o[1]) == o[2] as u32)),
            Cmpne => set_m(&mut self.ctx[c], o[0], u32::from(m(o[1]) != m(o[2]))),
            CmpneImm => set_m(&mut self.ctx[c], o[0], u32::from(m(o[1]) != o[2] as u32)),
            Cmpult => set_m(&mut self.ctx[c], o[0], u32::from(m(o[1]) < m(o[2]))),
            CmpultImm => set_m(&mut self.ctx[c], o[0], u32::from(m(o[1]) < o[2] as u32)),
            Cmpslt => set_m(&mut self.ctx[c], o[0], u32::from((m(o[1]) as i32) < (m(o[2]) as i32))),
            CmpsltImm => set_m(&mut self.ctx[c], o[0], u32::from((m(o[1]) as i32) < o[2])),
            MovM => set_m(&mut self.ctx[c], o[0], m(o[1])),
            MovA => {
                let v = self.ctx[c].a[o[1] as usize];
                set_a(&mut self.ctx[c], o[0], v);
            }
            Atom => {
                let v = self.ctx[c].a[o[1] as usize];
                set_m(&mut self.ctx[c], o[0], v);
            }
            Nop | Fnop => {}
            // ---- control
            Br => return Ok(Some(m(o[0]))),
            Bri => return Ok(Some(o[0] as u32)),
            Brz => return Ok((m(o[0]) == 0).then_some(o[1] as u32)),
            Brnz => return Ok((m(o[0]) != 0).then_some(o[1] as u32)),
            Brnzdec => {
                let v = m(o[0]);
                set_m(&mut self.ctx[c], o[0], v.wrapping_sub(1));
                return Ok((v != 0).then_some(o[1] as u32));
            }
            Call => {
                set_m(&mut self.ctx[c], o[0], pc + 4);
                return Ok(Some(o[1] as u32));
            }
            Rpt | RptImm => {
                let count = if i.opcode == Rpt { m(o[0]) } else { o[0] as u32 };
                let d = self.decoded(pc).copied();
                let start = if d.is_some_and(|d| d.bundle) { pc + 8 } else { pc + 4 };
                if start % 8 != 0 {
                    return Err(FaultKind::IllegalInstruction("rpt body is not 8-byte aligned".into()));
                }
                let end = start + (o[1] as u32 + 1) * 8;
                if count == 0 {
                    return Ok(Some(end));
                }
                let ctx = &mut self.ctx[c];
                ctx.in_rpt = true;
                ctx.rpt_start = start;
                ctx.rpt_end = end;
                ctx.rpt_left = count - 1;
                return Ok(Some(start));
            }
            // ---- contexts
            Run => {
                let Some(w) = (1..CONTEXTS).find(|&w| self.ctx[w].state == CtxState::Idle) else {
                    return Err(FaultKind::WorkerBusy("`run` with all six worker contexts active".into()));
                };
                let entry = m(o[0]);
                let vbase = m(o[1]).wrapping_add((o[2] as u32) * 4);
                self.start_worker(w, entry, vbase)?;
            }
            Runall => {
                if let Some(w) = (1..CONTEXTS).find(|&w| self.ctx[w].state != CtxState::Idle) {
                    return Err(FaultKind::WorkerBusy(format!("`runall` while worker {} is still active", w - 1)));
                }
                let entry = m(o[0]);
                for w in 1..CONTEXTS {
                    let vbase = m(o[1]).wrapping_add((w as u32 - 1) * (o[2] as u32) * 4);
                    self.start_worker(w, entry, vbase)?;
                }
            }
            Exitz | Exitnz => {
                let v = m(o[0]);
                let ctx = &mut self.ctx[c];
                ctx.exit_status = if i.opcode == Exitz { v == 0 } else { v != 0 };
                ctx.state = CtxState::Idle;
                ctx.in_rpt = false;
            }
            Sync => match o[0] {
                2 => {
                    self.ctx[c].state = CtxState::WaitLocal;
                    // The pc moves on when the workers have exited.
                    return Ok(Some(pc));
                }
                3 => {
                    self.ctx[c].state = CtxState::WaitInternal;
                    self.sync_arrival = self.ctx[c].sans_arrival.take().unwrap_or(self.cycle);
                }
                z => return Err(FaultKind::IllegalOperand(format!("sync zone {z} is external or reserved and not modelled (use 2 = local, 3 = internal)"))),
            },
            Sans => {
                if o[0] != 3 {
                    return Err(FaultKind::IllegalOperand(format!("sans zone {} is not modelled (use 3 = internal)", o[0])));
                }
                self.ctx[c].sans_arrival = Some(self.cycle);
            }
            // ---- control registers
            Put => self.put_csr(c, o[0] as u8, m(o[1]))?,
            Get => {
                let v = self.get_csr(o[1] as u8)?;
                set_m(&mut self.ctx[c], o[0], v);
            }
            Uput => {
                if o[0] as u8 != csr::TAS {
                    return Err(FaultKind::IllegalOperand(format!("worker control register {} is not writable", o[0])));
                }
                self.ctx[c].tas = self.ctx[c].a[o[1] as usize];
            }
            Uget => {
                if o[1] as u8 != csr::TAS {
                    return Err(FaultKind::IllegalOperand(format!("worker control register {} is not readable", o[1])));
                }
                let v = self.ctx[c].tas;
                set_a(&mut self.ctx[c], o[0], v);
            }
            // ---- float
            F32v2Add | F32v2Sub | F32v2Mul | F32v2Axpy | F16v4Add | F16v4Mul => {
                let ctx = &mut self.ctx[c];
                let (x, y) = (get_a64(ctx, o[1]), get_a64(ctx, o[2]));
                let tas = f32::from_bits(ctx.tas);
                let r = match i.opcode {
                    F32v2Add => f32v2_op(x, y, |a, b| a + b),
                    F32v2Sub => f32v2_op(x, y, |a, b| a - b),
                    F32v2Mul => f32v2_op(x, y, |a, b| a * b),
                    F32v2Axpy => f32v2_op(x, y, |a, b| tas.mul_add(a, b)),
                    F16v4Add => f16v4_op(x, y, |a, b| a + b),
                    _ => f16v4_op(x, y, |a, b| a * b),
                };
                set_a64(ctx, o[0], r);
            }
            F16v4Cmac => {
                let ctx = &mut self.ctx[c];
                let (x, y) = (get_a64(ctx, o[0]), get_a64(ctx, o[1]));
                for k in 0..4 {
                    let a = f16::from_bits((x >> (16 * k)) as u16).to_f32();
                    let b = f16::from_bits((y >> (16 * k)) as u16).to_f32();
                    ctx.aacc[k] += a * b;
                }
            }
            F16v8Acc => {
                let ctx = &mut self.ctx[c];
                let (x, y) = (get_a64(ctx, o[0]), get_a64(ctx, o[0] + 2));
                for k in 0..8 {
                    let v = if k < 4 { x >> (16 * k) } else { y >> (16 * (k - 4)) };
                    ctx.aacc[k] += f16::from_bits(v as u16).to_f32();
                }
            }
            F32v4Acc => {
                let ctx = &mut self.ctx[c];
                for k in 0..4 {
                    let v = if o[0] == 12 && k >= 2 { 0 } else { ctx.a[o[0] as usize + k] };
                    ctx.aacc[k] += f32::from_bits(v);
                }
            }
            F32v2Aop => {
                let ctx = &mut self.ctx[c];
                let (x, y) = (get_a64(ctx, o[0]), get_a64(ctx, o[1]));
                let xs = [f32::from_bits(x as u32), f32::from_bits((x >> 32) as u32)];
                let ys = [f32::from_bits(y as u32), f32::from_bits((y >> 32) as u32)];
                for (a, xa) in xs.iter().enumerate() {
                    for (b, yb) in ys.iter().enumerate() {
                        ctx.aacc[2 * a + b] += xa * yb;
                    }
                }
            }
            F32v2Gina => {
                let ctx = &mut self.ctx[c];
                let k = 2 * o[2] as usize;
                let src = get_a64(ctx, o[1]);
                let out = u64::from(ctx.aacc[k].to_bits()) | (u64::from(ctx.aacc[k + 1].to_bits()) << 32);
                ctx.aacc[k] = f32::from_bits(src as u32);
                ctx.aacc[k + 1] = f32::from_bits((src >> 32) as u32);
                set_a64(ctx, o[0], out);
            }
            F32v2ToF16 => {
                let ctx = &mut self.ctx[c];
                let x = get_a64(ctx, o[1]);
                set_a(ctx, o[0], pack_f16x2(f32::from_bits(x as u32), f32::from_bits((x >> 32) as u32)));
            }
            F16v2ToF32 => {
                let ctx = &mut self.ctx[c];
                let [lo, hi] = f16x2(ctx.a[o[1] as usize]);
                set_a64(ctx, o[0], u64::from(lo.to_bits()) | (u64::from(hi.to_bits()) << 32));
            }
            F32ToF16 => {
                let ctx = &mut self.ctx[c];
                let v = f16::from_f32(f32::from_bits(ctx.a[o[1] as usize])).to_bits();
                set_a(ctx, o[0], u32::from(v));
            }
            F16ToF32 => {
                let ctx = &mut self.ctx[c];
                let v = f16::from_bits(ctx.a[o[1] as usize] as u16).to_f32();
                set_a(ctx, o[0], v.to_bits());
            }
            F16v4ToF8 | F8v4ToF16 => {
                if !self.machine.has_fp8 {
                    return Err(FaultKind::IllegalInstruction(format!("`{}` needs FP8; machine `{}` has none", desc.mnemonic, self.machine.name)));
                }
                let scale = o[2];
                if !(-31..=31).contains(&scale) {
                    return Err(FaultKind::IllegalOperand(format!("FP8 scale {scale} is outside -31..=31")));
                }
                let ctx = &mut self.ctx[c];
                if i.opcode == F16v4ToF8 {
                    let x = get_a64(ctx, o[1]);
                    let mut out = 0u32;
                    for k in 0..4 {
                        let h = f16::from_bits((x >> (16 * k)) as u16).to_f64();
                        out |= u32::from(encode_scaled(h, scale)) << (8 * k);
                    }
                    set_a(ctx, o[0], out);
                } else {
                    let x = ctx.a[o[1] as usize];
                    let mut out = 0u64;
                    for k in 0..4 {
                        let v = decode_scaled((x >> (8 * k)) as u8, scale);
                        out |= u64::from(f16::from_f64(v).to_bits()) << (16 * k);
                    }
                    set_a64(ctx, o[0], out);
                }
            }
            F32SisoV2Amp | F16V4HihoV4Amp | F16V4SisoAmp | F8V8HihoV4Amp => {
                if i.opcode == F8V8HihoV4Amp && !self.machine.has_fp8 {
                    return Err(FaultKind::IllegalInstruction(format!("`f8v8hihov4amp` needs FP8; machine `{}` has none", self.machine.name)));
                }
                if o[3] > 3 {
                    return Err(FaultKind::IllegalOperand(format!("AMP phase flags {} (only phases 0..=3 are modelled)", o[3])));
                }
                let phase = o[3] as usize;
                let cccs = &self.cccs;
                let ctx = &mut self.ctx[c];
                let (x, p) = (get_a64(ctx, o[1]), get_a64(ctx, o[2]));
                let r = match i.opcode {
                    F32SisoV2Amp => ctx.amp.f32sisov2(cccs, phase, x, p),
                    F16V4HihoV4Amp => ctx.amp.f16v4hihov4(cccs, phase, x, p),
                    F16V4SisoAmp => ctx.amp.f16v4siso(cccs, phase, x, p),
                    _ => ctx.amp.f8v8hihov4(cccs, phase, x, p),
                };
                set_a64(ctx, o[0], r);
            }
            // ---- exchange
            Send | SendOutgoing => {
                let (addr, n) = if i.opcode == Send { (m(o[0]), o[1] as u32) } else { (self.xch.outgoing_base, o[0] as u32) };
                let start = self.xch.port_free.max(self.cycle + 1);
                for k in 0..n {
                    let w = self.ld32(addr.wrapping_add(4 * k))?;
                    self.xch.sent.push(SentWord { cycle: start + u64::from(k), word: w, pc });
                }
                self.xch.port_free = start + u64::from(n);
                if i.opcode == SendOutgoing {
                    self.xch.outgoing_base = addr.wrapping_add(4 * n);
                }
                // The supervisor streams the words out: it issues again when the port is free.
                self.step_exchange += u64::from(n);
                self.ctx[c].ready_at = self.xch.port_free;
            }
        }
        Ok(None)
    }

    fn start_worker(&mut self, w: usize, entry: u32, vbase: u32) -> R<()> {
        if !entry.is_multiple_of(4) || !vbase.is_multiple_of(4) {
            return Err(FaultKind::IllegalOperand(format!(
                "worker entry 0x{entry:x} or vertex base 0x{vbase:x} is not 4-byte aligned"
            )));
        }
        match self.decoded(entry) {
            Some(d) if d.valid && d.worker_code => {}
            Some(d) if d.valid => {
                return Err(FaultKind::IllegalOperand(format!(
                    "worker entry 0x{entry:x} is supervisor code"
                )))
            }
            _ => {
                return Err(FaultKind::IllegalOperand(format!(
                    "worker entry 0x{entry:x} is not executable code"
                )))
            }
        }
        let stack = self.worker_stack(w);
        let ctx = &mut self.ctx[w];
        *ctx = Context::default();
        ctx.state = CtxState::Running;
        ctx.pc = entry;
        ctx.m[13] = vbase;
        ctx.m[12] = (w - 1) as u32;
        if let Some((top, lo)) = stack {
            ctx.m[SP as usize] = top;
            ctx.stack_lo = lo;
        }
        Ok(())
    }

    fn put_csr(&mut self, c: usize, n: u8, v: u32) -> R<()> {
        if csr::is_exchange_csr(n) {
            if c != 0 {
                return Err(FaultKind::IllegalOperand(
                    "exchange registers are written by the supervisor".into(),
                ));
            }
            let cost = u64::from(self.machine.exchange_csr_put_cycles);
            let effective = self.cycle + cost;
            self.xch.events.push((effective, n, v));
            match n {
                csr::INCOMING_MUX => self.xch.incoming_mux = v,
                csr::INCOMING_BASE => self.xch.incoming_base = v,
                csr::INCOMING_DELTA => self.xch.incoming_delta = v,
                csr::INCOMING_DCOUNT => self.xch.incoming_dcount = v,
                csr::OUTGOING_BASE => self.xch.outgoing_base = v,
                csr::EXCHANGE_CTL => self.xch.ctl = v,
                _ => {
                    return Err(FaultKind::IllegalOperand(format!(
                        "control register 0x{n:x} is not writable"
                    )))
                }
            }
            self.ctx[c].ready_at = effective;
            self.step_exchange += cost;
            return Ok(());
        }
        match n {
            csr::CCCSLOAD => self.cccs_load = v,
            _ => {
                return Err(FaultKind::IllegalOperand(format!(
                    "control register 0x{n:x} is not writable"
                )))
            }
        }
        Ok(())
    }

    fn get_csr(&self, n: u8) -> R<u32> {
        Ok(match n {
            csr::CCCSLOAD => self.cccs_load,
            csr::TILE_ID => self.id,
            csr::COUNT_L => self.cycle as u32,
            csr::COUNT_U => (self.cycle >> 32) as u32,
            csr::INCOMING_MUX => self.xch.incoming_mux,
            csr::INCOMING_BASE => self.xch.incoming_base,
            csr::INCOMING_DELTA => self.xch.incoming_delta,
            csr::INCOMING_DCOUNT => self.xch.incoming_dcount,
            csr::OUTGOING_BASE => self.xch.outgoing_base,
            csr::EXCHANGE_CTL => self.xch.ctl,
            _ => {
                return Err(FaultKind::IllegalOperand(format!(
                    "control register 0x{n:x} is not readable"
                )))
            }
        })
    }
}
