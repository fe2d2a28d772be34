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

/// Emits the arming of this tile's receive window: `words` words from
/// `sender`, written from `address` on (three `setzi`, three `put`s).
pub fn emit_arm(e: &mut Emitter, sender: u32, address: u32, words: u32) {
    e.solo(inst("setzi", [op::m(0), op::imm(i64::from(address))]));
    e.solo(inst("setzi", [op::m(1), op::imm(i64::from(words))]));
    e.solo(inst("setzi", [op::m(2), op::imm(i64::from(sender))]));
    e.solo(inst("put", [op::csr("INCOMING_BASE"), op::m(0)]));
    e.solo(inst("put", [op::csr("INCOMING_DCOUNT"), op::m(1)]));
    e.solo(inst("put", [op::csr("INCOMING_MUX"), op::m(2)]));
}

/// Emits the pointing of this tile's incoming mux at no tile (the id
/// `machine.tiles`, which no tile has), for a superstep in which it
/// receives nothing: a mux left on an earlier sender would take that
/// sender's words to its other receivers as well. Two instructions, a
/// prefix of the arming's shape, so the write completes within
/// [`Broadcast::armed_by`], before any sender of the superstep starts. The
/// id is a model convention: the simulator delivers to a mux only the words
/// of the tile it names.
pub fn emit_disarm(e: &mut Emitter, machine: &MachineModel) {
    e.solo(inst("setzi", [op::m(2), op::imm(i64::from(machine.tiles))]));
    e.solo(inst("put", [op::csr("INCOMING_MUX"), op::m(2)]));
}

/// Issues of [`emit_arm`].
pub const ARM_ISSUES: u64 = ARM_SETZI + ARM_PUTS;

/// Upper bound on the cycle (from the superstep's start) by which the
/// last word `sender` sends with [`emit_sends`]`(e, first, issued,
/// chunks)` has landed at `receiver`, given `chunk_words` (each chunk's
/// words) and the `issued` instructions before them ([`emit_arm`]'s,
/// bounded by [`Broadcast::armed_by`], or any others at most the result
/// latency and a register write's cost each). A `send` waits for its
/// address register (at most the result latency after its `setzi`) and
/// for the port (each word a cycle at four bytes a cycle); the `nop`s up
/// to `first` take a cycle each. What follows such a receive at a fence,
/// with no sync (see the simulator's module doc), waits this long.
pub fn sends_landed_by(
    machine: &MachineModel,
    (sender, receiver): (u32, u32),
    first: u64,
    issued: u64,
    chunk_words: &[u32],
) -> u64 {
    let latency = u64::from(machine.supervisor_result_latency.max(1));
    let put = u64::from(machine.exchange_csr_put_cycles);
    let bpc = u64::from(machine.exchange_bytes_per_cycle.max(1));
    let before = if issued == ARM_ISSUES {
        Broadcast::armed_by(machine)
    } else {
        issued * (latency + put)
    };
    // The `setzi` of the first address and the `nop`s, then the first
    // `send`'s wait for its register.
    let nops = first.saturating_sub(issued + 1);
    let mut issue = before + 1 + nops + latency;
    let mut last_leaves = 0;
    for &words in chunk_words {
        let mut left = words;
        while left > 0 {
            let n = left.min(MAX_SEND_WORDS);
            let start = issue + 1;
            let cycles = (4 * u64::from(n)).div_ceil(bpc);
            last_leaves = start + cycles - 1;
            // The next `send` after the port is free, a `setzi` and its
            // register's latency.
            issue = start + cycles + 1 + latency;
            left -= n;
        }
    }
    last_leaves + machine.exchange_latency(sender, receiver)
}

/// Cycles beyond one each that [`emit_sends`]' `send`s of `chunks`
/// (address, words) hold the supervisor at least: a `send`'s first word
/// leaves the cycle after it issues, and the supervisor issues again once
/// the port has moved its words, four bytes a cycle.
pub fn sends_hold(machine: &MachineModel, chunks: &[(u32, u32)]) -> u64 {
    let bpc = u64::from(machine.exchange_bytes_per_cycle.max(1));
    let mut hold = 0;
    for &(_, words) in chunks {
        let mut left = words;
        while left > 0 {
            let n = left.min(MAX_SEND_WORDS);
            hold += (4 * u64::from(n)).div_ceil(bpc);
            left -= n;
        }
    }
    hold
}

/// Cycles beyond one each that [`emit_arm`]'s `put`s hold the supervisor
/// at least: a write of an exchange register holds it until the write
/// takes effect.
pub fn arm_hold(machine: &MachineModel) -> u64 {
    ARM_PUTS * u64::from(machine.exchange_csr_put_cycles).saturating_sub(1)
}

/// Emits the delay and the `send`s of `chunks` (address, words): `nop`s
/// until `first` instructions have issued since the superstep began
/// (`issued` already have; one instruction issues per cycle at most, so
/// the first word leaves at cycle `first` or later), then the chunks in
/// `send`s of at most [`MAX_SEND_WORDS`] words.
pub fn emit_sends(e: &mut Emitter, first: u64, issued: u64, chunks: &[(u32, u32)]) {
    let mut issued = issued;
    let mut reg = 0;
    let Some(&(start, _)) = chunks.first() else {
        return;
    };
    e.solo(inst("setzi", [op::m(reg), op::imm(i64::from(start))]));
    issued += 1;
    while issued < first {
        e.solo(inst("nop", []));
        issued += 1;
    }
    let mut loaded = start;
    for &(address, words) in chunks {
        let (mut at, mut left) = (address, words);
        while left > 0 {
            let n = left.min(MAX_SEND_WORDS);
            if at != loaded {
                reg ^= 1;
                e.solo(inst("setzi", [op::m(reg), op::imm(i64::from(at))]));
                loaded = at;
            }
            e.solo(inst("send", [op::m(reg), op::imm(i64::from(n))]));
            at += 4 * n;
            left -= n;
        }
    }
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
