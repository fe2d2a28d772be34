//! Simulator faults: values naming tile, context, pc, instruction and cycle.

use std::fmt;

/// What went wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// An access not naturally aligned.
    MisalignedAccess {
        /// Address.
        address: u32,
        /// Access size in bytes.
        size: u32,
    },
    /// An access outside the tile's SRAM.
    OutOfRange {
        /// Address.
        address: u32,
        /// Access size in bytes.
        size: u32,
    },
    /// `ld128`/`ld128putcs` outside the interleaved region.
    NotInterleaved {
        /// Address.
        address: u32,
    },
    /// Two accesses of one instruction hit the same memory bank.
    BankConflict {
        /// First address.
        first: u32,
        /// Second address.
        second: u32,
    },
    /// An instruction that cannot execute here (undecodable word, wrong
    /// context, solo or control instruction in a `rpt` body, pc outside code).
    IllegalInstruction(String),
    /// An operand value the instruction rejects.
    IllegalOperand(String),
    /// `run`/`runall` while the needed worker contexts are busy.
    WorkerBusy(String),
    /// An exchange word that no tile's incoming mux selected on arrival.
    LostExchangeData {
        /// Cycle it was sent.
        sent_at: u64,
        /// Words lost (this one and the sender's later words this superstep).
        words: u32,
    },
    /// A word arrived after the sync that closes its superstep (or after
    /// its receiver finished): it would land while the receiver computes.
    LateExchangeData {
        /// Arrival cycle.
        arrived_at: u64,
        /// The closing sync's release (or the receiver's exit).
        closing: u64,
    },
    /// A word arrived after its receiver launched workers or read memory
    /// with no sync since the exchange (a fence): what read where it
    /// lands may have read it before it did.
    ExchangeDataAfterFence {
        /// Arrival cycle.
        arrived_at: u64,
        /// The fence's cycle (the launch's or the load's).
        fence: u64,
    },
    /// A word arrived before `$INCOMING_DCOUNT` armed the receive window
    /// this superstep.
    UnarmedExchangeWindow {
        /// Arrival cycle.
        arrived_at: u64,
    },
    /// A word arrived after the window had received all the words
    /// `$INCOMING_DCOUNT` announced.
    SurplusExchangeData {
        /// Words the window took.
        expected: u32,
        /// Arrival cycle of the first surplus word.
        arrived_at: u64,
    },
    /// A receiver got fewer words than `$INCOMING_DCOUNT` said.
    MissingExchangeData {
        /// Words expected.
        expected: u32,
        /// Words received.
        received: u32,
    },
    /// A sync that can never complete.
    Deadlock(String),
    /// A `$sp`-relative access below the context's stack region.
    StackOverflow {
        /// Address.
        address: u32,
        /// Lowest address of the stack region.
        limit: u32,
    },
    /// The cycle budget ran out.
    CycleBudgetExhausted(u64),
    /// The instruction budget ran out.
    InstructionBudgetExhausted(u64),
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultKind::MisalignedAccess { address, size } => write!(f, "misaligned {size}-byte access at 0x{address:x}"),
            FaultKind::OutOfRange { address, size } => write!(f, "{size}-byte access at 0x{address:x} is outside tile memory"),
            FaultKind::NotInterleaved { address } => write!(f, "128-bit load at 0x{address:x} is outside the interleaved region"),
            FaultKind::BankConflict { first, second } => write!(f, "bank conflict: accesses at 0x{first:x} and 0x{second:x} use the same memory bank"),
            FaultKind::IllegalInstruction(s) => write!(f, "illegal instruction: {s}"),
            FaultKind::IllegalOperand(s) => write!(f, "illegal operand: {s}"),
            FaultKind::WorkerBusy(s) => write!(f, "worker started while busy: {s}"),
            FaultKind::LostExchangeData { sent_at, words } => write!(f, "lost exchange data: {words} word(s) sent from cycle {sent_at} arrived when no incoming mux selected this tile"),
            FaultKind::LateExchangeData { arrived_at, closing } => write!(f, "late exchange data: a word arrived at cycle {arrived_at}, after the superstep closed at cycle {closing}"),
            FaultKind::ExchangeDataAfterFence { arrived_at, fence } => write!(f, "exchange data after a fence: a word arrived at cycle {arrived_at}, after the tile launched its workers or read memory at cycle {fence} with no sync since its exchange (wait for the last word before the `run`/`runall` or load, or sync)"),
            FaultKind::UnarmedExchangeWindow { arrived_at } => write!(f, "exchange word arrived at cycle {arrived_at} before $INCOMING_DCOUNT armed the receive window this superstep"),
            FaultKind::SurplusExchangeData { expected, arrived_at } => write!(f, "surplus exchange data: a word arrived at cycle {arrived_at} after the {expected} word(s) $INCOMING_DCOUNT announced"),
            FaultKind::MissingExchangeData { expected, received } => write!(f, "missing exchange data: expected {expected} word(s), received {received}"),
            FaultKind::Deadlock(s) => write!(f, "deadlock: {s}"),
            FaultKind::StackOverflow { address, limit } => write!(f, "stack overflow: access at 0x{address:x} below the stack limit 0x{limit:x}"),
            FaultKind::CycleBudgetExhausted(n) => write!(f, "cycle budget of {n} exhausted"),
            FaultKind::InstructionBudgetExhausted(n) => write!(f, "instruction budget of {n} exhausted"),
        }
    }
}

/// A fault with its location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    /// What.
    pub kind: FaultKind,
    /// Tile.
    pub tile: u32,
    /// Context: `supervisor` or `worker N`.
    pub context: String,
    /// Program counter.
    pub pc: u32,
    /// The instruction's text.
    pub instruction: String,
    /// Tile cycle.
    pub cycle: u64,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "tile {} {} pc 0x{:x} `{}` cycle {}: {}",
            self.tile, self.context, self.pc, self.instruction, self.cycle, self.kind
        )
    }
}

impl std::error::Error for Fault {}
