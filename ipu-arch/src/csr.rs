//! Control and status registers reachable with `put`/`get` (the lower,
//! supervisor/tile space) and `uput`/`uget` (the upper, per-worker space).
//!
//! Numbers of the exchange registers `$INCOMING_MUX` (0xa0),
//! `$OUTGOING_BASE` (0xa7) and `$EXCHANGE_CTL` (0xa9) are as read by
//! reverse engineering (Saghetti0/graphcore-ipu-research `docs/csr.md`); the
//! others in the 0xa0..0xa9 block are placed in the order that document
//! lists them. The remaining numbers are our own (model assumption): the
//! encoding is ours, only the names are the ISA's.

/// Which instruction pair reaches a control register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CsrSpace {
    /// `put`/`get`: tile-wide registers (CCCS load pointer, exchange).
    Lower,
    /// `uput`/`uget`: per-worker registers (`$TAS`, FP8 scale).
    Upper,
}

/// One control register.
#[derive(Clone, Copy, Debug)]
pub struct CsrDesc {
    /// Name without `$`.
    pub name: &'static str,
    /// Number used in the encoding.
    pub number: u8,
    /// Access space.
    pub space: CsrSpace,
    /// What it does.
    pub doc: &'static str,
}

/// `$CCCSLOAD`: memory address `ld64putcs`/`ld128putcs` load from; post-incremented.
pub const CCCSLOAD: u8 = 0x80;
/// `$TILE_ID`: read-only tile number.
pub const TILE_ID: u8 = 0x40;
/// `$COUNT_L`: low 32 bits of the tile cycle counter (read-only).
pub const COUNT_L: u8 = 0x41;
/// `$COUNT_U`: high 32 bits of the tile cycle counter (read-only).
pub const COUNT_U: u8 = 0x42;
/// `$WSR`: the worker status register; bits 0..2 (`CTXTID_M1`) hold the
/// reading worker's context number minus one (0..5), the field poplibs'
/// workers read their partition index from (`get $WSR` and a mask, as
/// `conv_partial_1x1_half_float_8_and_half_half_h16.S` does). The number
/// and the other bits (read as 0) are a model assumption.
pub const WSR: u8 = 0x43;
/// Mask of the `CTXTID_M1` field of `$WSR`.
pub const WSR_CTXTID_M1_MASK: u32 = 0x7;
/// `$INCOMING_MUX`: the tile whose exchange words this tile receives.
pub const INCOMING_MUX: u8 = 0xa0;
/// `$INCOMING_DELTA`: added to `$INCOMING_BASE` after each received word, in words (0 means 1).
pub const INCOMING_DELTA: u8 = 0xa2;
/// `$INCOMING_BASE`: address the next received word is written to.
pub const INCOMING_BASE: u8 = 0xa4;
/// `$INCOMING_DCOUNT`: words this tile expects in the current superstep.
pub const INCOMING_DCOUNT: u8 = 0xa5;
/// `$OUTGOING_BASE`: address the pointer form of `send` reads from.
pub const OUTGOING_BASE: u8 = 0xa7;
/// `$EXCHANGE_CTL`: accepted and kept, no modelled effect.
pub const EXCHANGE_CTL: u8 = 0xa9;
/// `$TAS` (upper): the scalar of `f32v2axpy`.
pub const TAS: u8 = 0x10;

/// All control registers the assembler knows by name.
pub static CSRS: &[CsrDesc] = &[
    CsrDesc {
        name: "CCCSLOAD",
        number: CCCSLOAD,
        space: CsrSpace::Lower,
        doc: "AMP weight load pointer, post-incremented by ld64putcs (8) and ld128putcs (16)",
    },
    CsrDesc {
        name: "TILE_ID",
        number: TILE_ID,
        space: CsrSpace::Lower,
        doc: "tile number (read-only)",
    },
    CsrDesc {
        name: "COUNT_L",
        number: COUNT_L,
        space: CsrSpace::Lower,
        doc: "cycle counter, low word (read-only)",
    },
    CsrDesc {
        name: "COUNT_U",
        number: COUNT_U,
        space: CsrSpace::Lower,
        doc: "cycle counter, high word (read-only)",
    },
    CsrDesc {
        name: "WSR",
        number: WSR,
        space: CsrSpace::Lower,
        doc: "worker status: bits 0..2 = the worker's context number minus one (workers only, read-only)",
    },
    CsrDesc {
        name: "INCOMING_MUX",
        number: INCOMING_MUX,
        space: CsrSpace::Lower,
        doc: "sender tile selected by the incoming mux; 0xffffffff selects none",
    },
    CsrDesc {
        name: "INCOMING_DELTA",
        number: INCOMING_DELTA,
        space: CsrSpace::Lower,
        doc: "incoming pointer increment in words (0 = 1)",
    },
    CsrDesc {
        name: "INCOMING_BASE",
        number: INCOMING_BASE,
        space: CsrSpace::Lower,
        doc: "incoming pointer: where the next received word lands",
    },
    CsrDesc {
        name: "INCOMING_DCOUNT",
        number: INCOMING_DCOUNT,
        space: CsrSpace::Lower,
        doc: "words expected this superstep; fewer is a missing-data fault",
    },
    CsrDesc {
        name: "OUTGOING_BASE",
        number: OUTGOING_BASE,
        space: CsrSpace::Lower,
        doc: "outgoing pointer of `send zimm12`",
    },
    CsrDesc {
        name: "EXCHANGE_CTL",
        number: EXCHANGE_CTL,
        space: CsrSpace::Lower,
        doc: "exchange control (kept, not modelled)",
    },
    CsrDesc {
        name: "TAS",
        number: TAS,
        space: CsrSpace::Upper,
        doc: "scalar of f32v2axpy (f32 bits)",
    },
];

/// Looks a register up by name (without `$`) in a space.
pub fn csr_by_name(name: &str, space: CsrSpace) -> Option<&'static CsrDesc> {
    CSRS.iter().find(|c| c.name == name && c.space == space)
}

/// Looks a register up by number in a space.
pub fn csr_by_number(number: u8, space: CsrSpace) -> Option<&'static CsrDesc> {
    CSRS.iter().find(|c| c.number == number && c.space == space)
}

/// Whether a `put` to this register is an exchange pointer write (costs
/// `MachineModel::exchange_csr_put_cycles`).
pub fn is_exchange_csr(number: u8) -> bool {
    (INCOMING_MUX..=EXCHANGE_CTL).contains(&number)
}
