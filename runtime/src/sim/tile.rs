//! One simulated tile: memory, the supervisor and six worker contexts on
//! the barrel, the AMP weight store, exchange registers, and the
//! interpreter over pre-decoded instructions.

use ipuc_ipu_arch::csr;
use ipuc_ipu_arch::encoding::Instr;
use ipuc_ipu_arch::float8::{decode_scaled, encode_scaled};
use ipuc_ipu_arch::isa::ContextClass;
use ipuc_ipu_arch::printer::instr_text;
use ipuc_ipu_arch::registers::SP;
use ipuc_ipu_arch::{ContextKind, MachineModel, StackRegion, TileImage};

use super::amp::{AmpState, WeightStore, CCCS_ENTRIES, PIPELINE_LAG};
use super::decode::{
    AluOp, Am, Code, CodeSlot, Op, Pace, Step, SysOp, VecOp, A_REGS, CTX_SUPERVISOR, CTX_WORKER,
    M_REGS,
};
use super::f16;
use super::fault::{Fault, FaultKind};
use super::profile::{SuperstepCycles, TraceEntry};

/// Thread context 0 is the supervisor, 1..=6 the workers.
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

/// One hardware thread context's registers and state (named apart from
/// the IR's `ipuc_ir::Context`, which owns operations).
#[derive(Clone, Debug)]
pub struct ThreadContext {
    pub state: CtxState,
    pub pc: u32,
    /// `$m0..15` plus the write sink of `$m15` (see `decode`).
    pub m: [u32; M_REGS],
    /// `$a0..15` plus the always-zero pair (see `decode`).
    pub a: [u32; A_REGS],
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

impl Default for ThreadContext {
    fn default() -> Self {
        ThreadContext {
            state: CtxState::Idle,
            pc: 0,
            m: [0; M_REGS],
            a: [0; A_REGS],
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

/// Why a tile stopped running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TileStop {
    /// The supervisor is at the chip-wide barrier; arrival cycle.
    Sync(u64),
    /// The supervisor exited and all workers are idle.
    Done,
    /// The supervisor is about to launch workers or read memory after
    /// exchange activity with no sync between (a *fence*, see
    /// `sim/mod.rs`): the cycle it issues at, once this superstep's
    /// exchange so far is resolved.
    Fence(u64),
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
    /// The latest arrival delivered before the superstep's release was
    /// known (at a fence, to a tile waiting at the sync): checked against
    /// the release when it is.
    pub unchecked_arrival: Option<u64>,
}

impl ExchangeState {
    /// Whether the tile sent words or wrote exchange registers since its
    /// exchange was last resolved.
    pub fn active(&self) -> bool {
        !self.sent.is_empty() || !self.events.is_empty()
    }
}

/// No sender selected.
pub const MUX_NONE: u32 = u32::MAX;

/// Tile memory with the access checks real hardware makes: natural
/// alignment, the tile's address range, 128-bit loads only from interleaved
/// memory, and same-instruction bank conflicts. Each check is a mask or a
/// compare; errors are built off the hot path.
pub struct Memory {
    /// Bytes from `base`.
    pub bytes: Vec<u8>,
    /// First address.
    pub base: u32,
    interleaved_base: u32,
    /// log2 of the element size (elements are powers of two).
    element_shift: u32,
}

#[cold]
#[inline(never)]
fn access_fault(addr: u32, size: u32) -> FaultKind {
    if addr & (size - 1) != 0 {
        FaultKind::MisalignedAccess {
            address: addr,
            size,
        }
    } else {
        FaultKind::OutOfRange {
            address: addr,
            size,
        }
    }
}

impl Memory {
    /// The byte offset of a naturally aligned `size`-byte access.
    #[inline(always)]
    fn index(&self, addr: u32, size: u32) -> R<usize> {
        let off = addr.wrapping_sub(self.base) as usize;
        if addr & (size - 1) != 0 || off + size as usize > self.bytes.len() {
            return Err(access_fault(addr, size));
        }
        Ok(off)
    }

    #[inline(always)]
    fn ld32(&self, addr: u32) -> R<u32> {
        let i = self.index(addr, 4)?;
        Ok(u32::from_le_bytes(self.bytes[i..i + 4].try_into().unwrap()))
    }

    #[inline(always)]
    fn ld64(&self, addr: u32) -> R<u64> {
        let i = self.index(addr, 8)?;
        Ok(u64::from_le_bytes(self.bytes[i..i + 8].try_into().unwrap()))
    }

    #[inline(always)]
    fn ld16(&self, addr: u32) -> R<u16> {
        let i = self.index(addr, 2)?;
        Ok(u16::from_le_bytes([self.bytes[i], self.bytes[i + 1]]))
    }

    #[inline(always)]
    fn ld8(&self, addr: u32) -> R<u8> {
        let i = self.index(addr, 1)?;
        Ok(self.bytes[i])
    }

    #[inline(always)]
    fn st32(&mut self, addr: u32, v: u32) -> R<()> {
        let i = self.index(addr, 4)?;
        self.bytes[i..i + 4].copy_from_slice(&v.to_le_bytes());
        Ok(())
    }

    #[inline(always)]
    fn st64(&mut self, addr: u32, v: u64) -> R<()> {
        let i = self.index(addr, 8)?;
        self.bytes[i..i + 8].copy_from_slice(&v.to_le_bytes());
        Ok(())
    }

    #[inline(always)]
    fn ld128(&self, addr: u32) -> R<(u64, u64)> {
        let i = self.index(addr, 16)?;
        if addr < self.interleaved_base {
            return Err(FaultKind::NotInterleaved { address: addr });
        }
        Ok((
            u64::from_le_bytes(self.bytes[i..i + 8].try_into().unwrap()),
            u64::from_le_bytes(self.bytes[i + 8..i + 16].try_into().unwrap()),
        ))
    }

    /// The bank of an address, as [`MachineModel::bank_of`] (which the
    /// constructor checks this agrees with).
    #[inline(always)]
    fn bank(&self, addr: u32) -> u32 {
        if addr < self.interleaved_base {
            addr.wrapping_sub(self.base) >> self.element_shift
        } else {
            let off = addr - self.interleaved_base;
            0x1000 + ((off >> (self.element_shift + 1)) << 1) + ((off >> 3) & 1)
        }
    }

    /// The first conflict of three addresses (0-1, 0-2, 1-2), for
    /// [`Self::bank`]s found to clash.
    #[cold]
    #[inline(never)]
    fn conflict3(&self, a0: u32, a1: u32, a2: u32) -> FaultKind {
        let (first, second) = if self.bank(a0) == self.bank(a1) {
            (a0, a1)
        } else if self.bank(a0) == self.bank(a2) {
            (a0, a2)
        } else {
            (a1, a2)
        };
        FaultKind::BankConflict { first, second }
    }

    #[inline(always)]
    fn conflict(&self, a: u32, b: u32) -> R<()> {
        if self.bank(a) == self.bank(b) {
            return Err(FaultKind::BankConflict {
                first: a,
                second: b,
            });
        }
        Ok(())
    }
}

/// One tile.
pub struct Tile {
    pub id: u32,
    pub base: u32,
    pub end: u32,
    pub mem: Memory,
    code: Code,
    pub ctx: [ThreadContext; CONTEXTS],
    /// The AMP weight store (CCCS).
    weights: WeightStore,
    pub cccs_load: u32,
    pub cycle: u64,
    pub xch: ExchangeState,
    /// The supervisor's entry address.
    entry: u32,
    /// The image's stack regions.
    stacks: Vec<StackRegion>,
    pub instructions: u64,
    pub supervisor_issues: u64,
    pub worker_issues: u64,
    /// The cycle since which at least one worker has been running, if any.
    pub busy_since: Option<u64>,
    /// This superstep's closed intervals with a worker running.
    pub busy: Vec<(u64, u64)>,
    /// Incoming exchange words that arrived while a worker ran.
    pub incoming_during_compute: u64,
    pub supersteps: Vec<SuperstepCycles>,
    pub step_start: u64,
    pub step_exchange: u64,
    /// When this superstep's last exchange instruction ended (0: none).
    pub step_exchange_end: u64,
    pub trace: Option<Vec<TraceEntry>>,
    pub trace_limit: usize,
    /// The timeline recorder (`SimConfig::record`), `None` when off.
    pub(super) recorder: Option<Box<super::recorder::TileRecorder>>,
    /// The image's sections, for the recorder to name a launch's code and
    /// vertex state by.
    pub(super) sections: std::sync::Arc<super::recorder::Sections>,
    pub machine: MachineModel,
    pub done: bool,
    /// The `sans` cycle that announced arrival at the pending chip-wide sync.
    sync_arrival: Option<u64>,
    /// A launch or memory read met exchange activity: the tile stops at a
    /// fence.
    fence_hit: bool,
    /// This superstep's last fence, if it had one: words arriving after
    /// it at this tile come too late.
    pub fenced_at: Option<u64>,
    /// Where the tile waits at the chip-wide sync (its arrival) while
    /// other tiles run past their fences.
    pub parked: Option<u64>,
    /// Cycle from which the supervisor may read each register (`$m0..15`,
    /// then `$CCCSLOAD`): its pipeline has no bypass.
    sup_ready: [u64; 17],
}

type R<T> = Result<T, FaultKind>;

/// An auxiliary-half result not yet written: both halves of a bundle read
/// the registers as they were before the bundle, so the auxiliary write is
/// committed after the main half ran. `n` registers (0, 1 or 2) from `idx`.
#[derive(Clone, Copy)]
struct Pending {
    idx: u8,
    n: u8,
    v: u64,
}

const NO_WRITE: Pending = Pending { idx: 0, n: 0, v: 0 };

#[inline(always)]
fn w32(idx: u8, v: u32) -> Pending {
    Pending {
        idx,
        n: 1,
        v: u64::from(v),
    }
}

#[inline(always)]
fn w64(idx: u8, v: u64) -> Pending {
    Pending { idx, n: 2, v }
}

#[inline(always)]
fn a64(c: &ThreadContext, r: u8) -> u64 {
    u64::from(c.a[r as usize]) | (u64::from(c.a[r as usize + 1]) << 32)
}

#[inline(always)]
fn set_a64(c: &mut ThreadContext, r: u8, v: u64) {
    c.a[r as usize] = v as u32;
    c.a[r as usize + 1] = (v >> 32) as u32;
}

/// A loaded `bits`-wide value (8 or 16) as a 32-bit register holds it:
/// sign-extended for the signed loads, zero-extended for the others.
#[inline(always)]
fn widen(value: u32, bits: u32, signed: bool) -> u32 {
    let shift = 32 - bits;
    if signed {
        ((value << shift) as i32 >> shift) as u32
    } else {
        value
    }
}

#[inline(always)]
fn m64(c: &ThreadContext, r: u8) -> u64 {
    u64::from(c.m[r as usize]) | (u64::from(c.m[r as usize + 1]) << 32)
}

#[inline(always)]
fn f16v4_op(x: u64, y: u64, f: impl Fn(f32, f32) -> f32) -> u64 {
    let (a, b) = (f16::unpack4(x), f16::unpack4(y));
    f16::pack4(std::array::from_fn(|i| f(a[i], b[i])))
}

#[inline(always)]
fn f32v2_op(x: u64, y: u64, f: impl Fn(f32, f32) -> f32) -> u64 {
    let lo = f(f32::from_bits(x as u32), f32::from_bits(y as u32));
    let hi = f(
        f32::from_bits((x >> 32) as u32),
        f32::from_bits((y >> 32) as u32),
    );
    u64::from(lo.to_bits()) | (u64::from(hi.to_bits()) << 32)
}

/// Field `i` of a triple-packed address pair.
#[inline(always)]
fn packed_field(p: u64, i: u32) -> u32 {
    ((p >> (21 * i)) & 0x1f_ffff) as u32
}

#[inline(always)]
fn stride_step(sel: u32, stride: u32) -> i64 {
    let field = |v: u32| -> i64 { (((v & 0x3ff) << 22) as i32 >> 22) as i64 };
    match sel & 3 {
        0 => 1,
        1 => field(stride),
        2 => field(stride >> 10),
        _ => 0,
    }
}

#[inline(always)]
fn advance_packed(p: u64, i: u32, sel: u32, stride: u32) -> u64 {
    let f = i64::from(packed_field(p, i)) + stride_step(sel, stride) * 8;
    let f = (f as u64) & 0x1f_ffff;
    (p & !(0x1f_ffffu64 << (21 * i))) | (f << (21 * i))
}

#[inline(always)]
fn alu(op: AluOp, a: u32, b: u32) -> u32 {
    match op {
        AluOp::Add => a.wrapping_add(b),
        AluOp::Sub => a.wrapping_sub(b),
        AluOp::Mul => a.wrapping_mul(b),
        AluOp::Shl => a << (b & 31),
        AluOp::Shr => a >> (b & 31),
        AluOp::And => a & b,
        AluOp::Or => a | b,
        AluOp::Cmpeq => u32::from(a == b),
        AluOp::Cmpne => u32::from(a != b),
        AluOp::Cmpult => u32::from(a < b),
        AluOp::Cmpslt => u32::from((a as i32) < (b as i32)),
    }
}

impl ThreadContext {
    #[inline(always)]
    fn addr(&self, am: &Am) -> u32 {
        self.m[am.base as usize]
            .wrapping_add(self.m[am.delta as usize])
            .wrapping_add(self.m[am.off as usize] << am.shift)
            .wrapping_add(am.imm)
    }

    #[inline(always)]
    fn check_stack(&self, sp: bool, addr: u32) -> R<()> {
        if sp && self.stack_lo != 0 && addr < self.stack_lo {
            return Err(FaultKind::StackOverflow {
                address: addr,
                limit: self.stack_lo,
            });
        }
        Ok(())
    }

    /// `m[base] + m[delta]` of a step form, post-incrementing the delta.
    #[inline(always)]
    fn step(&mut self, s: &Step) -> u32 {
        let d = self.m[s.delta as usize];
        let addr = self.m[s.base as usize].wrapping_add(d);
        self.m[s.delta_w as usize] = d.wrapping_add(s.step);
        addr
    }

    /// Reads a packed address pair and writes it back advanced.
    #[inline(always)]
    fn pace(&mut self, p: &Pace, fields: &[u32]) -> u64 {
        let v = m64(self, p.p);
        let stride = self.m[p.stride as usize];
        let mut n = v;
        for (k, &f) in fields.iter().enumerate() {
            n = advance_packed(n, f, u32::from(p.sel) >> (2 * k), stride);
        }
        self.m[p.w0 as usize] = n as u32;
        self.m[p.w1 as usize] = (n >> 32) as u32;
        v
    }
}

/// Refuses a machine model whose constants the interpreter's structure
/// fixes differently, so that no constant here silently disagrees with the
/// machine description.
fn check_machine(m: &MachineModel) -> Result<(), String> {
    let workers = (CONTEXTS - 1) as u32;
    if m.worker_contexts != workers || m.slot_period != workers {
        return Err(format!(
            "machine `{}`: the simulator models {workers} worker contexts on {workers} barrel slots, the model says {} on {}",
            m.name, m.worker_contexts, m.slot_period
        ));
    }
    if m.cccs_entries != CCCS_ENTRIES || m.amp_pipeline_lag != PIPELINE_LAG {
        return Err(format!(
            "machine `{}`: the AMP instructions are modelled with {CCCS_ENTRIES} weight entries and a {PIPELINE_LAG}-instruction lag, the model says {} and {}",
            m.name, m.cccs_entries, m.amp_pipeline_lag
        ));
    }
    // Workers issue once per round, so these rules are applied to the
    // supervisor only; that is exact while they fit in one round.
    if m.supervisor_result_latency > m.slot_period || m.branch_refill_cycles > m.slot_period {
        return Err(format!(
            "machine `{}`: a result latency or branch refill longer than the barrel round ({} cycles) would stall workers, which the simulator does not model",
            m.name, m.slot_period
        ));
    }
    if m.exchange_bytes_per_cycle == 0 {
        return Err(format!("machine `{}`: no exchange bandwidth", m.name));
    }
    Ok(())
}

impl Tile {
    /// A tile loaded with an image.
    pub fn new(id: u32, image: &TileImage, machine: &MachineModel) -> Result<Tile, String> {
        let base = machine.sram_base;
        let end = machine.sram_end;
        if !machine.element_bytes.is_power_of_two() || machine.element_bytes < 16 {
            return Err(format!(
                "memory element size {} is not a power of two of at least 16 bytes",
                machine.element_bytes
            ));
        }
        let mut mem = vec![0u8; (end - base) as usize];
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
        }
        check_machine(machine)?;
        let code = Code::new(image, &mem, machine);
        Ok(Tile {
            id,
            base,
            end,
            mem: Memory {
                bytes: mem,
                base,
                interleaved_base: machine.interleaved_base,
                element_shift: machine.element_bytes.trailing_zeros(),
            },
            code,
            ctx: Default::default(),
            weights: WeightStore::default(),
            cccs_load: 0,
            cycle: 0,
            xch: ExchangeState {
                incoming_mux: MUX_NONE,
                mux_at_start: MUX_NONE,
                ..Default::default()
            },
            entry: image.entry,
            stacks: image.stacks.clone(),
            instructions: 0,
            supervisor_issues: 0,
            worker_issues: 0,
            busy_since: None,
            busy: Vec::new(),
            incoming_during_compute: 0,
            supersteps: Vec::new(),
            step_start: 0,
            step_exchange: 0,
            step_exchange_end: 0,
            trace: None,
            trace_limit: 0,
            recorder: None,
            sections: super::recorder::Sections::new(
                image
                    .sections
                    .iter()
                    .map(|s| (s.address, s.end()))
                    .collect(),
            ),
            machine: machine.clone(),
            done: false,
            sync_arrival: None,
            fence_hit: false,
            fenced_at: None,
            parked: None,
            sup_ready: [0; 17],
        })
    }

    /// Resets contexts and counters for a new run (memory is kept).
    pub fn reset(&mut self) {
        self.ctx = Default::default();
        self.weights = WeightStore::default();
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
        self.busy_since = None;
        self.busy.clear();
        self.incoming_during_compute = 0;
        self.supersteps.clear();
        self.step_start = 0;
        self.step_exchange = 0;
        self.step_exchange_end = 0;
        self.done = false;
        self.sup_ready = [0; 17];
        self.sync_arrival = None;
        self.fence_hit = false;
        self.fenced_at = None;
        self.parked = None;
        let sup = &mut self.ctx[0];
        sup.state = CtxState::Running;
        sup.pc = self.entry;
        for st in &self.stacks {
            if st.context == ContextKind::Supervisor {
                sup.m[SP as usize] = st.top;
                sup.stack_lo = st.top - st.size;
            }
        }
    }

    fn worker_stack(&self, w: usize) -> Option<(u32, u32)> {
        self.stacks
            .iter()
            .find(|s| s.context == ContextKind::Worker)
            .map(|s| {
                let top = s.top - (w as u32 - 1) * s.size;
                (top, top - s.size)
            })
    }

    fn raw(&self, pc: u32) -> Option<(Instr, bool)> {
        let off = pc.wrapping_sub(self.code.base);
        if !off.is_multiple_of(4) {
            return None;
        }
        self.code.raw.get((off / 4) as usize).copied().flatten()
    }

    fn slot(&self, pc: u32) -> Option<&CodeSlot> {
        let off = pc.wrapping_sub(self.code.base);
        if !off.is_multiple_of(4) {
            return None;
        }
        self.code.slots.get((off / 4) as usize)
    }

    /// Text of the instruction at `pc` (for faults and traces).
    pub fn instr_text_at(&self, pc: u32) -> String {
        let labels = Default::default();
        match self.raw(pc) {
            Some((main, true)) => match self.raw(pc + 4) {
                Some((aux, _)) => format!(
                    "{{ {} ; {} }}",
                    instr_text(&main, &labels),
                    instr_text(&aux, &labels)
                ),
                None => instr_text(&main, &labels),
            },
            Some((i, false)) => instr_text(&i, &labels),
            None => "<no instruction>".into(),
        }
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
        self.mem.bytes[o..o + bytes.len()].copy_from_slice(bytes);
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
        Ok(self.mem.bytes[o..o + len as usize].to_vec())
    }

    // ---------------------------------------------------------------- barrel

    /// Whether a worker was running at `cycle` of this superstep (its
    /// start to its exit, both included).
    pub fn worker_ran_at(&self, cycle: u64) -> bool {
        self.busy.iter().any(|&(s, e)| (s..=e).contains(&cycle))
            || self.busy_since.is_some_and(|s| cycle >= s)
    }

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
                // A started worker holds its slot before its first issue.
                if self.cycle >= self.ctx[w].ready_at {
                    self.issue(w, instr_budget)?;
                    true
                } else {
                    false
                }
            } else {
                match self.ctx[0].state {
                    CtxState::Running if self.cycle >= self.supervisor_ready() => {
                        self.issue(0, instr_budget)?;
                        if self.fence_hit {
                            self.fence_hit = false;
                            self.fenced_at = Some(self.cycle);
                            return Ok(TileStop::Fence(self.cycle));
                        }
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
                    // Arrival is the `sans` that announced it, else now (the
                    // `sync`, or the last worker's exit after it).
                    let arrival = self.sync_arrival.take().unwrap_or(self.cycle);
                    self.cycle += 1;
                    return Ok(TileStop::Sync(arrival));
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
            if !issued && self.ctx[0].state == CtxState::Running && self.workers_idle() {
                let ready = self.supervisor_ready();
                if ready > self.cycle {
                    // Nothing can issue until the supervisor's stall ends
                    // (or the budget runs out, which is reported at its cycle).
                    self.cycle = ready.min(cycle_budget);
                    slot = (self.cycle % period as u64) as usize;
                }
            }
        }
    }

    /// The first cycle the supervisor's next instruction may issue: after
    /// its own wait (a taken branch's refill, an exchange register write)
    /// and once every register it reads has left the pipeline.
    #[inline]
    fn supervisor_ready(&self) -> u64 {
        let c = &self.ctx[0];
        let mut at = c.ready_at;
        if let Some(s) = self.slot(c.pc) {
            let mut reads = s.reads;
            while reads != 0 {
                at = at.max(self.sup_ready[reads.trailing_zeros() as usize]);
                reads &= reads - 1;
            }
        }
        at
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
        let off = pc.wrapping_sub(self.code.base);
        let slot = match self.code.slots.get((off >> 2) as usize) {
            Some(s) if off & 3 == 0 => *s,
            _ => {
                return Err(self.fault(
                    c,
                    FaultKind::IllegalInstruction(format!("pc 0x{pc:x} is not in code")),
                ))
            }
        };
        if c == 0 && slot.fences && self.xch.active() {
            // A fence: it issues once the exchange so far is resolved.
            self.fence_hit = true;
            return Ok(());
        }
        let bit = if c == 0 { CTX_SUPERVISOR } else { CTX_WORKER };
        // One test covers every rare case: an undecodable word or wrong
        // context (mask), a `rpt`-body violation, the budget, tracing.
        if slot.ctx_mask & bit == 0
            || (self.ctx[c].in_rpt && !slot.rpt_ok)
            || *instr_budget == 0
            || self.trace.is_some()
        {
            self.slow_checks(c, pc, &slot, *instr_budget)?;
        }
        let n = u64::from(slot.size / 4);
        *instr_budget = instr_budget.saturating_sub(n);
        self.instructions += n;
        if c == 0 {
            self.supervisor_issues += 1;
        } else {
            self.worker_issues += u64::from(slot.issue_slots);
        }
        match self.exec_slot(c, &slot, pc) {
            Ok(taken) => {
                if c == 0 {
                    self.supervisor_pipeline(&slot, taken);
                } else if slot.issue_slots > 1 {
                    // A transcendental holds the worker's slot: it issues
                    // again `issue_slots` rounds after this one.
                    let period = u64::from(self.machine.slot_period);
                    self.ctx[c].ready_at =
                        self.cycle + period * u64::from(slot.issue_slots - 1) + 1;
                }
                Ok(())
            }
            Err(k) => {
                // Report at the faulting instruction.
                self.ctx[c].pc = pc;
                Err(self.fault(c, k))
            }
        }
    }

    /// Records when the registers a supervisor issue writes become readable
    /// and, for a taken branch, when the refilled pipeline issues again.
    #[inline]
    fn supervisor_pipeline(&mut self, slot: &CodeSlot, taken: bool) {
        let issued = self.cycle;
        let mut writes = slot.writes;
        let ready = issued + u64::from(self.machine.supervisor_result_latency);
        while writes != 0 {
            self.sup_ready[writes.trailing_zeros() as usize] = ready;
            writes &= writes - 1;
        }
        if taken {
            let sup = &mut self.ctx[0];
            sup.ready_at = sup
                .ready_at
                .max(issued + u64::from(self.machine.branch_refill_cycles));
        }
    }

    /// The checks of [`Tile::issue`] that rarely fire, with their reports,
    /// and tracing.
    #[cold]
    #[inline(never)]
    fn slow_checks(
        &mut self,
        c: usize,
        pc: u32,
        slot: &CodeSlot,
        budget: u64,
    ) -> Result<(), Fault> {
        if !slot.valid {
            return Err(self.fault(c, FaultKind::IllegalInstruction("undecodable word".into())));
        }
        if budget == 0 {
            return Err(self.fault(c, FaultKind::InstructionBudgetExhausted(self.instructions)));
        }
        if let Some(t) = &self.trace {
            if t.len() < self.trace_limit {
                let text = match self.raw(pc) {
                    Some((i, _)) => instr_text(&i, &Default::default()),
                    None => "<no instruction>".into(),
                };
                let cycle = self.cycle;
                if let Some(t) = &mut self.trace {
                    t.push(TraceEntry {
                        cycle,
                        context: c as u8,
                        pc,
                        text,
                    });
                }
            }
        }
        if self.ctx[c].in_rpt && !slot.rpt_ok {
            let what = if slot.size == 8 {
                "control or system instruction in a rpt body"
            } else {
                "solo instruction in a rpt body"
            };
            return Err(self.fault(c, FaultKind::IllegalInstruction(what.into())));
        }
        let bit = if c == 0 { CTX_SUPERVISOR } else { CTX_WORKER };
        if slot.ctx_mask & bit == 0 {
            let halves = [
                self.raw(pc),
                if slot.size == 8 {
                    self.raw(pc + 4)
                } else {
                    None
                },
            ];
            for (i, _) in halves.into_iter().flatten() {
                let d = i.opcode.desc();
                let msg = match (d.context, c) {
                    (ContextClass::Worker, 0) => {
                        format!("`{}` is a worker instruction", d.mnemonic)
                    }
                    (ContextClass::Supervisor, 1..) => {
                        format!("`{}` is a supervisor instruction", d.mnemonic)
                    }
                    _ => continue,
                };
                return Err(self.fault(c, FaultKind::IllegalInstruction(msg)));
            }
        }
        Ok(())
    }

    /// Executes a slot: the auxiliary half computes, the main half runs, the
    /// auxiliary result is written, the pc moves on. Returns whether a
    /// branch was taken.
    #[inline(always)]
    fn exec_slot(&mut self, c: usize, slot: &CodeSlot, pc: u32) -> R<bool> {
        let pending = self.exec_aux(c, &slot.aux)?;
        let next = self.exec_main(c, &slot.main, pc)?;
        let taken = slot.branch && next.is_some();
        let ctx = &mut self.ctx[c];
        if pending.n > 0 {
            ctx.a[pending.idx as usize] = pending.v as u32;
            if pending.n == 2 {
                ctx.a[pending.idx as usize + 1] = (pending.v >> 32) as u32;
            }
        }
        let fallthrough = pc + u32::from(slot.size);
        if ctx.state != CtxState::Running && ctx.state != CtxState::WaitInternal {
            return Ok(taken);
        }
        if next.is_none() && ctx.in_rpt && fallthrough == ctx.rpt_end {
            if ctx.rpt_left > 0 {
                ctx.rpt_left -= 1;
                ctx.pc = ctx.rpt_start;
                return Ok(taken);
            }
            ctx.in_rpt = false;
        }
        ctx.pc = next.unwrap_or(fallthrough);
        Ok(taken)
    }

    /// Executes an auxiliary-pipeline operation; its register result is returned, not written.
    #[inline(always)]
    fn exec_aux(&mut self, c: usize, op: &Op) -> R<Pending> {
        let ctx = &mut self.ctx[c];
        Ok(match *op {
            Op::Nop => NO_WRITE,
            Op::Amp {
                kind,
                d,
                x,
                p,
                phase,
            } => {
                let (x, p) = (a64(ctx, x), a64(ctx, p));
                let ph = phase as usize;
                w64(d, ctx.amp.exec(kind, &self.weights, ph, x, p))
            }
            Op::F32v2 { op, d, x, y } => {
                let (x, y) = (a64(ctx, x), a64(ctx, y));
                let r = match op {
                    VecOp::Add => f32v2_op(x, y, |a, b| a + b),
                    VecOp::Sub => f32v2_op(x, y, |a, b| a - b),
                    VecOp::Mul => f32v2_op(x, y, |a, b| a * b),
                    VecOp::Max => f32v2_op(x, y, f32::max),
                    VecOp::Min => f32v2_op(x, y, f32::min),
                    VecOp::Axpy => {
                        let tas = f32::from_bits(ctx.tas);
                        f32v2_op(x, y, |a, b| tas.mul_add(a, b))
                    }
                };
                w64(d, r)
            }
            Op::F16v4 { op, d, x, y } => {
                let (x, y) = (a64(ctx, x), a64(ctx, y));
                let r = match op {
                    VecOp::Add => f16v4_op(x, y, |a, b| a + b),
                    VecOp::Max => f16v4_op(x, y, f32::max),
                    VecOp::Min => f16v4_op(x, y, f32::min),
                    _ => f16v4_op(x, y, |a, b| a * b),
                };
                w64(d, r)
            }
            Op::SetA { d, v } => w32(d, v),
            Op::MovA { d, s } => w32(d, ctx.a[s as usize]),
            Op::Uput { s } => {
                ctx.tas = ctx.a[s as usize];
                NO_WRITE
            }
            Op::Uget { d } => w32(d, ctx.tas),
            Op::F16v4Cmac { x, y } => {
                let (x, y) = (a64(ctx, x), a64(ctx, y));
                let (a, b) = (f16::unpack4(x), f16::unpack4(y));
                for k in 0..4 {
                    ctx.aacc[k] += a[k] * b[k];
                }
                NO_WRITE
            }
            Op::F16v8Acc { x0, x1 } => {
                let (x, y) = (a64(ctx, x0), a64(ctx, x1));
                let (a, b) = (f16::unpack4(x), f16::unpack4(y));
                for k in 0..4 {
                    ctx.aacc[k] += a[k];
                    ctx.aacc[k + 4] += b[k];
                }
                NO_WRITE
            }
            Op::F32v4Acc { x0, x1 } => {
                let (x, y) = (a64(ctx, x0), a64(ctx, x1));
                ctx.aacc[0] += f32::from_bits(x as u32);
                ctx.aacc[1] += f32::from_bits((x >> 32) as u32);
                ctx.aacc[2] += f32::from_bits(y as u32);
                ctx.aacc[3] += f32::from_bits((y >> 32) as u32);
                NO_WRITE
            }
            Op::F32v2Aop { x, y } => {
                let (x, y) = (a64(ctx, x), a64(ctx, y));
                let xs = [f32::from_bits(x as u32), f32::from_bits((x >> 32) as u32)];
                let ys = [f32::from_bits(y as u32), f32::from_bits((y >> 32) as u32)];
                for (a, xa) in xs.iter().enumerate() {
                    for (b, yb) in ys.iter().enumerate() {
                        ctx.aacc[2 * a + b] += xa * yb;
                    }
                }
                NO_WRITE
            }
            Op::F32v2Gina { d, s, k } => {
                let k = 2 * k as usize;
                let src = a64(ctx, s);
                let out =
                    u64::from(ctx.aacc[k].to_bits()) | (u64::from(ctx.aacc[k + 1].to_bits()) << 32);
                ctx.aacc[k] = f32::from_bits(src as u32);
                ctx.aacc[k + 1] = f32::from_bits((src >> 32) as u32);
                w64(d, out)
            }
            Op::F32v2ToF16 { d, s } => {
                let x = a64(ctx, s);
                w32(
                    d,
                    f16::pack2(f32::from_bits(x as u32), f32::from_bits((x >> 32) as u32)),
                )
            }
            Op::F16v2ToF32 { d, s } => {
                let [lo, hi] = f16::unpack2(ctx.a[s as usize]);
                w64(d, u64::from(lo.to_bits()) | (u64::from(hi.to_bits()) << 32))
            }
            Op::F16v2Trans { f, d, s } => {
                let x = ctx.a[s as usize];
                let lane = |h: u32| {
                    let v = f.eval(f64::from(f16::to_f32(h as u16)));
                    u32::from(f16::from_f64(v))
                };
                w32(d, lane(x) | (lane(x >> 16) << 16))
            }
            Op::F32Trans { f, d, s } => {
                let x = f64::from(f32::from_bits(ctx.a[s as usize]));
                w32(d, (f.eval(x) as f32).to_bits())
            }
            Op::Sort4x16 { d, a, b, hi } => {
                let shift = if hi { 16 } else { 0 };
                let half = |r: u8| (ctx.a[r as usize] >> shift) & 0xffff;
                w32(d, half(a) | (half(b) << 16))
            }
            Op::F32ToF16 { d, s } => w32(
                d,
                u32::from(f16::from_f32(f32::from_bits(ctx.a[s as usize]))),
            ),
            Op::F16ToF32 { d, s } => w32(d, f16::to_f32(ctx.a[s as usize] as u16).to_bits()),
            Op::F16v4ToF8 { d, s, scale } => {
                let x = a64(ctx, s);
                let mut out = 0u32;
                for k in 0..4 {
                    let h = f64::from(f16::to_f32((x >> (16 * k)) as u16));
                    out |= u32::from(encode_scaled(h, i32::from(scale))) << (8 * k);
                }
                w32(d, out)
            }
            Op::F8v4ToF16 { d, s, scale } => {
                let x = ctx.a[s as usize];
                let mut out = 0u64;
                for k in 0..4 {
                    let v = decode_scaled((x >> (8 * k)) as u8, i32::from(scale));
                    out |= u64::from(f16::from_f64(v)) << (16 * k);
                }
                w64(d, out)
            }
            Op::Illegal(i) => return Err(self.code.illegal[i as usize].clone()),
            // Main-pipeline operations never reach the auxiliary slot.
            _ => NO_WRITE,
        })
    }

    /// Executes a main-pipeline operation; returns a new pc for taken branches.
    #[inline(always)]
    fn exec_main(&mut self, c: usize, op: &Op, pc: u32) -> R<Option<u32>> {
        let mem = &mut self.mem;
        let ctx = &mut self.ctx[c];
        match *op {
            Op::Nop => {}
            Op::Ld2xSt64Pace { d, s, pace } => {
                let p = m64(ctx, pace.p);
                let (a0, a1, a2) = (packed_field(p, 0), packed_field(p, 1), packed_field(p, 2));
                let (b0, b1, b2) = (mem.bank(a0), mem.bank(a1), mem.bank(a2));
                if b0 == b1 || b0 == b2 || b1 == b2 {
                    return Err(mem.conflict3(a0, a1, a2));
                }
                let v0 = mem.ld64(a0)?;
                let v1 = mem.ld64(a1)?;
                mem.st64(a2, a64(ctx, s))?;
                ctx.pace(&pace, &[0, 1, 2]);
                set_a64(ctx, d, v0);
                set_a64(ctx, d + 2, v1);
            }
            Op::Ld2x64Pace { d, pace } => {
                let p = m64(ctx, pace.p);
                let (a0, a1) = (packed_field(p, 0), packed_field(p, 1));
                mem.conflict(a0, a1)?;
                let v0 = mem.ld64(a0)?;
                let v1 = mem.ld64(a1)?;
                ctx.pace(&pace, &[0, 1]);
                set_a64(ctx, d, v0);
                set_a64(ctx, d + 2, v1);
            }
            Op::LdSt64Pace { d, s, pace } => {
                let p = m64(ctx, pace.p);
                let (a0, a2) = (packed_field(p, 0), packed_field(p, 2));
                mem.conflict(a0, a2)?;
                let v0 = mem.ld64(a0)?;
                mem.st64(a2, a64(ctx, s))?;
                ctx.pace(&pace, &[0, 2]);
                set_a64(ctx, d, v0);
            }
            Op::St64Pace { s, pace } => {
                let p = m64(ctx, pace.p);
                mem.st64(packed_field(p, 0), a64(ctx, s))?;
                ctx.pace(&pace, &[0]);
            }
            Op::Ld32A { d, am } => {
                let addr = ctx.addr(&am);
                ctx.check_stack(am.sp, addr)?;
                ctx.a[d as usize] = mem.ld32(addr)?;
            }
            Op::Ld32M { d, am } => {
                let addr = ctx.addr(&am);
                ctx.check_stack(am.sp, addr)?;
                ctx.m[d as usize] = mem.ld32(addr)?;
            }
            Op::Ld32StepA { d, s } => {
                let addr = ctx.m[s.base as usize].wrapping_add(ctx.m[s.delta as usize]);
                let v = mem.ld32(addr)?;
                ctx.step(&s);
                ctx.a[d as usize] = v;
            }
            Op::Ld32StepM { d, s } => {
                let addr = ctx.m[s.base as usize].wrapping_add(ctx.m[s.delta as usize]);
                let v = mem.ld32(addr)?;
                ctx.step(&s);
                ctx.m[d as usize] = v;
            }
            Op::Ld64 { d, am } => {
                let addr = ctx.addr(&am);
                ctx.check_stack(am.sp, addr)?;
                let v = mem.ld64(addr)?;
                set_a64(ctx, d, v);
            }
            Op::Ld64Step { d, s } => {
                let addr = ctx.m[s.base as usize].wrapping_add(ctx.m[s.delta as usize]);
                let v = mem.ld64(addr)?;
                ctx.step(&s);
                set_a64(ctx, d, v);
            }
            Op::Ld128 { d, am } => {
                let (lo, hi) = mem.ld128(ctx.addr(&am))?;
                set_a64(ctx, d, lo);
                set_a64(ctx, d + 2, hi);
            }
            Op::Ld128Step { d, s } => {
                let addr = ctx.m[s.base as usize].wrapping_add(ctx.m[s.delta as usize]);
                let (lo, hi) = mem.ld128(addr)?;
                ctx.step(&s);
                set_a64(ctx, d, lo);
                set_a64(ctx, d + 2, hi);
            }
            Op::Ld16 { d, am, signed } => {
                ctx.m[d as usize] = widen(u32::from(mem.ld16(ctx.addr(&am))?), 16, signed);
            }
            Op::Ldz16Step { d, s } => {
                let addr = ctx.m[s.base as usize].wrapping_add(ctx.m[s.delta as usize]);
                let v = mem.ld16(addr)?;
                ctx.step(&s);
                ctx.m[d as usize] = u32::from(v);
            }
            Op::Ld8 { d, am, signed } => {
                ctx.m[d as usize] = widen(u32::from(mem.ld8(ctx.addr(&am))?), 8, signed);
            }
            Op::Ldb16 { d, am } => {
                let v = u32::from(mem.ld16(ctx.addr(&am))?);
                ctx.a[d as usize] = v | (v << 16);
            }
            Op::Putcs { idx, wide } => {
                let addr = self.cccs_load;
                let idx = idx as usize;
                if wide {
                    let (lo, hi) = mem.ld128(addr)?;
                    self.weights.store(idx, lo);
                    self.weights.store(idx + 1, hi);
                    self.cccs_load = addr.wrapping_add(16);
                } else {
                    self.weights.store(idx, mem.ld64(addr)?);
                    self.cccs_load = addr.wrapping_add(8);
                }
            }
            Op::St32A { s, am } => {
                let addr = ctx.addr(&am);
                ctx.check_stack(am.sp, addr)?;
                mem.st32(addr, ctx.a[s as usize])?;
            }
            Op::St32M { s, am } => {
                let addr = ctx.addr(&am);
                ctx.check_stack(am.sp, addr)?;
                mem.st32(addr, ctx.m[s as usize])?;
            }
            Op::St32StepA { v, s } => {
                let addr = ctx.m[s.base as usize].wrapping_add(ctx.m[s.delta as usize]);
                ctx.check_stack(s.sp, addr)?;
                mem.st32(addr, ctx.a[v as usize])?;
                ctx.step(&s);
            }
            Op::St32StepM { v, s } => {
                let addr = ctx.m[s.base as usize].wrapping_add(ctx.m[s.delta as usize]);
                ctx.check_stack(s.sp, addr)?;
                mem.st32(addr, ctx.m[v as usize])?;
                ctx.step(&s);
            }
            Op::St64 { s, am } => {
                let addr = ctx.addr(&am);
                ctx.check_stack(am.sp, addr)?;
                mem.st64(addr, a64(ctx, s))?;
            }
            Op::St64Step { v, s } => {
                let addr = ctx.m[s.base as usize].wrapping_add(ctx.m[s.delta as usize]);
                ctx.check_stack(s.sp, addr)?;
                mem.st64(addr, a64(ctx, v))?;
                ctx.step(&s);
            }
            Op::Tapack { w0, w1, s } => {
                let f = |r: u8| u64::from(ctx.m[r as usize] & 0x1f_ffff);
                let p = f(s[0]) | (f(s[1]) << 21) | (f(s[2]) << 42);
                ctx.m[w0 as usize] = p as u32;
                ctx.m[w1 as usize] = (p >> 32) as u32;
            }
            Op::SetM { d, v } => ctx.m[d as usize] = v,
            Op::Alu { op, d, a, b } => {
                ctx.m[d as usize] = alu(op, ctx.m[a as usize], ctx.m[b as usize]);
            }
            Op::AluImm { op, d, a, imm } => ctx.m[d as usize] = alu(op, ctx.m[a as usize], imm),
            Op::Atom { d, s } => ctx.m[d as usize] = ctx.a[s as usize],
            Op::Br { s } => return Ok(Some(ctx.m[s as usize])),
            Op::Bri { t } => return Ok(Some(t)),
            Op::Brz { s, t } => return Ok((ctx.m[s as usize] == 0).then_some(t)),
            Op::Brnz { s, t } => return Ok((ctx.m[s as usize] != 0).then_some(t)),
            Op::Brnzdec { s, w, t } => {
                let v = ctx.m[s as usize];
                ctx.m[w as usize] = v.wrapping_sub(1);
                return Ok((v != 0).then_some(t));
            }
            Op::Call { w, t } => {
                ctx.m[w as usize] = pc + 4;
                return Ok(Some(t));
            }
            Op::Rpt {
                count,
                imm,
                start,
                end,
            } => {
                let count = if imm {
                    u32::from(count)
                } else {
                    ctx.m[count as usize]
                };
                if count > self.machine.rpt_count_max {
                    return Err(FaultKind::IllegalOperand(format!(
                        "rpt count {count} exceeds the repeat counter's maximum {}",
                        self.machine.rpt_count_max
                    )));
                }
                if count == 0 {
                    return Ok(Some(end));
                }
                ctx.in_rpt = true;
                ctx.rpt_start = start;
                ctx.rpt_end = end;
                ctx.rpt_left = count - 1;
                return Ok(Some(start));
            }
            Op::Sys(s) => return self.exec_system(c, s, pc),
            Op::Illegal(i) => return Err(self.code.illegal[i as usize].clone()),
            // Auxiliary operations never reach the main slot.
            _ => {}
        }
        Ok(None)
    }

    /// Context (`run`, `runall`, `exitz`), sync, control-register and exchange instructions.
    #[inline(never)]
    fn exec_system(&mut self, c: usize, op: SysOp, pc: u32) -> R<Option<u32>> {
        let m = |t: &Tile, r: u8| t.ctx[c].m[r as usize];
        match op {
            SysOp::Run { entry, vbase, imm } => {
                let Some(w) = (1..CONTEXTS).find(|&w| self.ctx[w].state == CtxState::Idle) else {
                    return Err(FaultKind::WorkerBusy(
                        "`run` with all six worker contexts active".into(),
                    ));
                };
                let vbase = m(self, vbase).wrapping_add(imm * 4);
                self.start_worker(w, m(self, entry), vbase)?;
            }
            SysOp::Runall { entry, vbase, imm } => {
                if let Some(w) = (1..CONTEXTS).find(|&w| self.ctx[w].state != CtxState::Idle) {
                    return Err(FaultKind::WorkerBusy(format!(
                        "`runall` while worker {} is still active",
                        w - 1
                    )));
                }
                let entry = m(self, entry);
                for w in 1..CONTEXTS {
                    let vb = m(self, vbase).wrapping_add((w as u32 - 1) * imm * 4);
                    self.start_worker(w, entry, vb)?;
                }
            }
            SysOp::Exit { src, nz } => {
                let v = m(self, src);
                let ctx = &mut self.ctx[c];
                ctx.exit_status = if nz { v != 0 } else { v == 0 };
                ctx.state = CtxState::Idle;
                ctx.in_rpt = false;
                if let (true, Some(r)) = (c != 0, self.recorder.as_deref_mut()) {
                    r.worker_exited(c, self.cycle);
                }
                if c != 0 && self.workers_idle() {
                    if let Some(since) = self.busy_since.take() {
                        self.busy.push((since, self.cycle));
                    }
                }
            }
            SysOp::Sync(2) => {
                self.ctx[c].state = CtxState::WaitLocal;
                // The pc moves on when the workers have exited.
                return Ok(Some(pc));
            }
            SysOp::Sync(_) => {
                self.ctx[c].state = CtxState::WaitInternal;
                self.sync_arrival = self.ctx[c].sans_arrival.take();
            }
            SysOp::Sans => {
                // A second `sans` before the `sync` does not move the arrival.
                let cycle = self.cycle;
                self.ctx[c].sans_arrival.get_or_insert(cycle);
            }
            SysOp::Put { csr, src } => self.put_csr(c, csr, m(self, src))?,
            SysOp::Get { dst, csr } => {
                let v = self.get_csr(c, csr)?;
                self.ctx[c].m[dst as usize] = v;
            }
            SysOp::Send { src, words } => self.send(c, m(self, src), words, pc, false)?,
            SysOp::SendOutgoing { words } => {
                self.send(c, self.xch.outgoing_base, words, pc, true)?
            }
        }
        Ok(None)
    }

    fn send(&mut self, c: usize, addr: u32, n: u32, pc: u32, outgoing: bool) -> R<()> {
        let start = self.xch.port_free.max(self.cycle + 1);
        // The port moves `exchange_bytes_per_cycle` bytes a cycle: word k
        // leaves at the cycle its first byte does.
        let bpc = u64::from(self.machine.exchange_bytes_per_cycle);
        for k in 0..n {
            let w = self.mem.ld32(addr.wrapping_add(4 * k))?;
            self.xch.sent.push(SentWord {
                cycle: start + 4 * u64::from(k) / bpc,
                word: w,
                pc,
            });
        }
        let cycles = (4 * u64::from(n)).div_ceil(bpc);
        self.xch.port_free = start + cycles;
        if outgoing {
            self.xch.outgoing_base = addr.wrapping_add(4 * n);
        }
        // The supervisor streams the words out: it issues again when the port is free.
        self.step_exchange += cycles;
        self.step_exchange_end = self.step_exchange_end.max(self.xch.port_free);
        self.ctx[c].ready_at = self.xch.port_free;
        Ok(())
    }

    fn start_worker(&mut self, w: usize, entry: u32, vbase: u32) -> R<()> {
        if !entry.is_multiple_of(4) || !vbase.is_multiple_of(4) {
            return Err(FaultKind::IllegalOperand(format!(
                "worker entry 0x{entry:x} or vertex base 0x{vbase:x} is not 4-byte aligned"
            )));
        }
        match self.slot(entry) {
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
        self.busy_since.get_or_insert(self.cycle);
        if let Some(r) = self.recorder.as_deref_mut() {
            r.worker_started(w, entry, vbase, self.cycle);
        }
        let ctx = &mut self.ctx[w];
        *ctx = ThreadContext::default();
        ctx.state = CtxState::Running;
        // The context is allocated now (it holds its barrel slot) and first
        // issues once the `run` has left the supervisor's pipeline.
        ctx.ready_at = self.cycle + u64::from(self.machine.worker_start_latency);
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
            self.step_exchange_end = self.step_exchange_end.max(effective);
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

    fn get_csr(&self, c: usize, n: u8) -> R<u32> {
        Ok(match n {
            // Context 0 is the supervisor; workers are 1..=6.
            csr::WSR if c > 0 => (c - 1) as u32 & csr::WSR_CTXTID_M1_MASK,
            csr::WSR => {
                return Err(FaultKind::IllegalOperand(
                    "$WSR is a worker's status register; the supervisor cannot read it".into(),
                ))
            }
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
