//! Exchange code for one superstep of broadcasts: each sender multicasts a
//! buffer to its receivers, which take it at the same address.
//!
//! The exchange is time-deterministic: a word a tile sends at cycle t lands
//! at a receiver at t + latency only if the receiver's incoming mux selects
//! the sender then. Receivers arm first (`$INCOMING_BASE`,
//! `$INCOMING_DCOUNT`, `$INCOMING_MUX`); a sender delays its first `send`
//! until its first word cannot arrive before the slowest receiver is armed.
//! [`Broadcast::first_send_cycle`] proves this from bounds, before any code
//! is emitted: the receiver's arming is bounded above (every supervisor
//! instruction at most the result latency, every exchange-register write
//! its documented cost) and the arrival below (one cycle per sender
//! instruction, the latency of the nearest receiver).
//!
//! A receiver takes one sender per superstep; `send` moves at most 4095
//! words, so a buffer goes out in chunks.

use ipuc_ipu_arch::MachineModel;

use crate::codelets::emitter::{inst, op, Emitter};

/// Words one `send` moves at most (its count is a 12-bit immediate).
pub const MAX_SEND_WORDS: u32 = 4095;

/// One multicast of `bytes` at `address` from `sender` to `receivers`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Broadcast {
    /// The sending tile.
    pub sender: u32,
    /// The receiving tiles (not the sender).
    pub receivers: Vec<u32>,
    /// Address of the buffer on every tile, 4-byte aligned.
    pub address: u32,
    /// Bytes, a multiple of 4.
    pub bytes: u32,
}

/// Supervisor instructions a receiver issues to arm: three `setzi`, three
/// `put`s.
const ARM_SETZI: u64 = 3;
const ARM_PUTS: u64 = 3;

impl Broadcast {
    /// Words sent.
    pub fn words(&self) -> u32 {
        self.bytes / 4
    }

    /// Upper bound on the cycle (from the superstep's start) by which every
    /// receiver's mux selects the sender.
    pub fn armed_by(machine: &MachineModel) -> u64 {
        // A supervisor instruction waits at most the result latency.
        let latency = u64::from(machine.supervisor_result_latency.max(1));
        ARM_SETZI * latency + ARM_PUTS * (latency + u64::from(machine.exchange_csr_put_cycles))
    }

    /// The sender's first `send` issue cycle ([`first_send_cycle`]).
    pub fn first_send_cycle(&self, machine: &MachineModel) -> u64 {
        first_send_cycle(machine, self.sender, &self.receivers)
    }

    /// Cycles the sender's port is busy (one word per cycle).
    pub fn send_cycles(&self) -> u64 {
        u64::from(self.words())
    }

    /// Emits the receiver's arming into the open supervisor section.
    pub fn emit_receive(&self, e: &mut Emitter) {
        emit_arm(e, self.sender, self.address, self.words());
    }

    /// Emits the sender's delay and `send`s into the open supervisor
    /// section: one instruction issues per cycle at most, so `nop`s up to
    /// [`Broadcast::first_send_cycle`] guarantee the delay.
    pub fn emit_send(&self, e: &mut Emitter, machine: &MachineModel) {
        emit_sends(
            e,
            self.first_send_cycle(machine),
            0,
            &[(self.address, self.words())],
        );
    }
}

/// The first `send` issue cycle of `sender` in a superstep whose
/// `receivers` arm first: the earliest at which its first word cannot
/// reach the nearest receiver before every receiver is armed (strictly
/// after).
pub fn first_send_cycle(machine: &MachineModel, sender: u32, receivers: &[u32]) -> u64 {
    let nearest = receivers
        .iter()
        .map(|&r| machine.exchange_latency(sender, r))
        .min()
        .unwrap_or(0);
    // A word issued at t lands at t + 1 + latency at the earliest.
    (Broadcast::armed_by(machine) + 1).saturating_sub(nearest + 1)
}

/// A supervisor instruction of the exchange code here, as emitted and as
/// timed ([`timing`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SupInst {
    /// `setzi $m{reg}, imm`.
    Setzi { reg: u8, imm: u32 },
    /// `put $csr, $m{reg}`: an exchange register write.
    Put { csr: &'static str, reg: u8 },
    /// `nop`.
    Nop,
    /// `send $m{reg}, words`.
    Send { reg: u8, words: u32 },
}

/// Emits `insts` into the open supervisor section.
pub fn emit_insts(e: &mut Emitter, insts: &[SupInst]) {
    for &i in insts {
        e.solo(match i {
            SupInst::Setzi { reg, imm } => inst("setzi", [op::m(reg), op::imm(i64::from(imm))]),
            SupInst::Put { csr, reg } => inst("put", [op::csr(csr), op::m(reg)]),
            SupInst::Nop => inst("nop", []),
            SupInst::Send { reg, words } => inst("send", [op::m(reg), op::imm(i64::from(words))]),
        });
    }
}

/// When code made of [`SupInst`]s, issued from a superstep's start (cycle
/// 0) with no worker running, ends and when its last word leaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    /// The cycle the supervisor may issue its next instruction.
    pub end: u64,
    /// The cycle its last sent word leaves the port, if it sends.
    pub last_word: Option<u64>,
}

/// The cycles of `insts` under the supervisor's issue rules
/// (`ipu-machine.md`, as the simulator applies them): one instruction a
/// cycle; an instruction reading a register written by a `setzi` waits
/// `supervisor_result_latency` cycles after it; a `put` to an exchange
/// register holds the supervisor `exchange_csr_put_cycles`; a `send`'s
/// words leave from the cycle after it issues (and the port is free),
/// `exchange_bytes_per_cycle` a cycle, and the supervisor issues again
/// once they have left.
pub fn timing(machine: &MachineModel, insts: &[SupInst]) -> Timing {
    let latency = u64::from(machine.supervisor_result_latency);
    let put = u64::from(machine.exchange_csr_put_cycles);
    let bpc = u64::from(machine.exchange_bytes_per_cycle.max(1));
    let mut ready = [0u64; 16];
    let (mut t, mut port_free, mut last_word) = (0u64, 0u64, None);
    for &i in insts {
        match i {
            SupInst::Setzi { reg, .. } => {
                ready[usize::from(reg)] = t + latency;
                t += 1;
            }
            SupInst::Put { reg, .. } => t = t.max(ready[usize::from(reg)]) + put,
            SupInst::Nop => t += 1,
            SupInst::Send { reg, words } => {
                let issue = t.max(ready[usize::from(reg)]);
                let start = port_free.max(issue + 1);
                let cycles = (4 * u64::from(words)).div_ceil(bpc);
                last_word = Some(start + (4 * u64::from(words.max(1) - 1)) / bpc);
                port_free = start + cycles;
                t = port_free;
            }
        }
    }
    Timing { end: t, last_word }
}

/// The arming of this tile's receive window: `words` words from
/// `sender`, written from `address` on (three `setzi`, three `put`s).
pub fn arm_insts(sender: u32, address: u32, words: u32) -> Vec<SupInst> {
    vec![
        SupInst::Setzi {
            reg: 0,
            imm: address,
        },
        SupInst::Setzi { reg: 1, imm: words },
        SupInst::Setzi {
            reg: 2,
            imm: sender,
        },
        SupInst::Put {
            csr: "INCOMING_BASE",
            reg: 0,
        },
        SupInst::Put {
            csr: "INCOMING_DCOUNT",
            reg: 1,
        },
        SupInst::Put {
            csr: "INCOMING_MUX",
            reg: 2,
        },
    ]
}

/// Emits [`arm_insts`].
pub fn emit_arm(e: &mut Emitter, sender: u32, address: u32, words: u32) {
    emit_insts(e, &arm_insts(sender, address, words));
}

/// The pointing of this tile's incoming mux at no tile (the id
/// `machine.tiles`, which no tile has), for a superstep in which it
/// receives nothing: a mux left on an earlier sender would take that
/// sender's words to its other receivers as well. Two instructions, a
/// prefix of the arming's shape, so the write completes within
/// [`Broadcast::armed_by`], before any sender of the superstep starts. The
/// id is a model convention: the simulator delivers to a mux only the words
/// of the tile it names.
pub fn disarm_insts(machine: &MachineModel) -> Vec<SupInst> {
    vec![
        SupInst::Setzi {
            reg: 2,
            imm: machine.tiles,
        },
        SupInst::Put {
            csr: "INCOMING_MUX",
            reg: 2,
        },
    ]
}

/// Issues of [`arm_insts`].
pub const ARM_ISSUES: u64 = ARM_SETZI + ARM_PUTS;

/// The delay and the `send`s of `chunks` (address, words): `nop`s until
/// `first` instructions have issued since the superstep began (`issued`
/// already have; one instruction issues per cycle at most, so the first
/// word leaves at cycle `first` or later), then the chunks in `send`s of
/// at most [`MAX_SEND_WORDS`] words, a `setzi` before each that does not
/// start where the last one ended.
pub fn send_insts(first: u64, issued: u64, chunks: &[(u32, u32)]) -> Vec<SupInst> {
    let mut out = Vec::new();
    let mut issued = issued;
    let mut reg = 0;
    let Some(&(start, _)) = chunks.first() else {
        return out;
    };
    out.push(SupInst::Setzi { reg, imm: start });
    issued += 1;
    while issued < first {
        out.push(SupInst::Nop);
        issued += 1;
    }
    let mut loaded = start;
    for &(address, words) in chunks {
        let (mut at, mut left) = (address, words);
        while left > 0 {
            let n = left.min(MAX_SEND_WORDS);
            if at != loaded {
                reg ^= 1;
                out.push(SupInst::Setzi { reg, imm: at });
                loaded = at;
            }
            out.push(SupInst::Send { reg, words: n });
            at += 4 * n;
            left -= n;
        }
    }
    out
}

/// The cycle (from the superstep's start) by which a tile whose exchange
/// code is `own` has issued it and taken the last word `theirs`, sent by
/// `sender`, lands at it (`receiver`): what a launch after such a receive
/// at a fence, with no sync (see the simulator's module doc), waits for.
pub fn received_by(
    machine: &MachineModel,
    own: &[SupInst],
    (sender, receiver): (u32, u32),
    theirs: &[SupInst],
) -> u64 {
    let end = timing(machine, own).end;
    timing(machine, theirs).last_word.map_or(end, |w| {
        end.max(w + machine.exchange_latency(sender, receiver))
    })
}

/// Emits [`send_insts`].
pub fn emit_sends(e: &mut Emitter, first: u64, issued: u64, chunks: &[(u32, u32)]) {
    emit_insts(e, &send_insts(first, issued, chunks));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_word_lands_after_the_receivers_are_armed() {
        let m = MachineModel::c600();
        let b = Broadcast {
            sender: 0,
            receivers: vec![1, 2, 1000],
            address: 0x80000,
            bytes: 64,
        };
        let t = b.first_send_cycle(&m);
        assert!(t + 1 + m.exchange_latency(0, 1) > Broadcast::armed_by(&m));
    }
}
